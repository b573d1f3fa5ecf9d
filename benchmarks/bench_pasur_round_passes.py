"""Benchmark: Pasur's round-by-round CFR (``solve_round``) on two source trees, side by side.

Written for the move of the reach / value / regret passes of
``games/pasur/solving/round_cfr.py`` into :mod:`tensorcfr.core.level_graph`: it times
``solve_round`` of chosen rounds of seeded random deals with the current checkout and with
an older copy of ``src/`` (``git archive <commit> src | tar -x -C /tmp/before``), each run in
a fresh process with ``torch.set_num_threads(1)``, interleaved (old, new, old, new, ...) so
both see the same machine load, and checks that both produce **bitwise** the same average
strategies and root values (SHA-256 of the tensors' bytes).

Reported per (deal, mode, round): edges, iterations, best wall and CPU time per iteration of
each source tree, the new/old ratio, peak RSS of each process, and whether the results are
bitwise equal.

Usage::

    git archive HEAD src | tar -x -C /tmp/before_pasur
    .venv/bin/python benchmarks/bench_pasur_round_passes.py --before-src /tmp/before_pasur/src \\
        --cases 3:dag:1,3:dag:4,0:dag:5,3:tree:5:30 --iterations 200 --repeats 3 \\
        --markdown docs/benchmarks/pasur_round_passes.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The child process: build the graphs of one deal, solve one round (leaf values from the
# exact values of the later rounds, so the round is solved as in a full solve), report.
_CHILD = r"""
import hashlib, json, resource, sys, time
import torch
torch.set_num_threads(1)
seed, mode, round_index, iterations, variant_name = sys.argv[1:6]
seed, round_index, iterations = int(seed), int(round_index), int(iterations)
from tensorcfr.core.regret import CFRVariant
from tensorcfr.games.pasur.engine.rules import random_deal
from tensorcfr.games.pasur.solving.dcfr_run import build_graphs
from tensorcfr.games.pasur.solving import round_cfr
graphs = build_graphs(random_deal(seed), mode)
later = graphs[round_index:]
# Leaf values of the round: the exact minimax values of the next round's roots.
values = round_cfr._backward_game(later, None, ("max", "min"))
next_roots = values[1][0] if len(later) > 1 else None
leaf = round_cfr.leaf_values(later[0], next_roots)
variant = CFRVariant.parse(variant_name)
round_cfr.keep_freed_memory()
cpu0 = time.process_time(); wall0 = time.perf_counter()
result = round_cfr.solve_round(later[0], leaf, variant, iterations)
wall = time.perf_counter() - wall0; cpu = time.process_time() - cpu0
digest = hashlib.sha256()
for tensor in list(result.average_strategy) + [result.root_values]:
    digest.update(tensor.contiguous().numpy().tobytes())
print(json.dumps({"wall": wall, "cpu": cpu, "edges": later[0].total_edges,
                  "nodes": later[0].total_nodes,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "sha256": digest.hexdigest()}))
"""


def run_child(src: Path, case: tuple[int, str, int, int], variant: str,
              timeout: float) -> dict[str, Any]:
    seed, mode, round_index, iterations = case
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(seed), mode, str(round_index),
                           str(iterations), variant], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(ROOT))
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({src}, {case}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def parse_cases(text: str, iterations: int) -> list[tuple[int, str, int, int]]:
    cases = []
    for part in text.split(","):
        fields = part.split(":")
        if len(fields) not in (3, 4) or fields[1] not in ("dag", "tree"):
            raise SystemExit(f"a case is seed:dag|tree:round[:iterations], got {part!r}")
        count = int(fields[3]) if len(fields) == 4 else iterations
        cases.append((int(fields[0]), fields[1], int(fields[2]), count))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-src", type=Path, required=True,
                        help="the older src/ folder (git archive <commit> src | tar -x)")
    parser.add_argument("--after-src", type=Path, default=ROOT / "src")
    parser.add_argument("--cases", default="3:dag:1,3:dag:4,0:dag:5,3:tree:5:30",
                        help="seed:mode:round[:iterations] (round 0-based), comma-separated")
    parser.add_argument("--iterations", type=int, default=200,
                        help="iterations of the cases that do not name theirs")
    parser.add_argument("--variant", default="dcfr")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for case in parse_cases(args.cases, args.iterations):
        iterations = case[3]
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(args.repeats):
            for label, src in (("before", args.before_src), ("after", args.after_src)):
                runs[label].append(run_child(src, case, args.variant, args.timeout))
        best = {label: {"wall": min(r["wall"] for r in rs), "cpu": min(r["cpu"] for r in rs),
                        "rss": max(r["peak_rss_mib"] for r in rs)}
                for label, rs in runs.items()}
        hashes = {r["sha256"] for rs in runs.values() for r in rs}
        row = {"seed": case[0], "mode": case[1], "round": case[2] + 1,
               "edges": runs["after"][0]["edges"], "nodes": runs["after"][0]["nodes"],
               "iterations": iterations, "variant": args.variant,
               "before_ms_per_iter": 1e3 * best["before"]["cpu"] / iterations,
               "after_ms_per_iter": 1e3 * best["after"]["cpu"] / iterations,
               "before_wall_ms_per_iter": 1e3 * best["before"]["wall"] / iterations,
               "after_wall_ms_per_iter": 1e3 * best["after"]["wall"] / iterations,
               "before_peak_rss_mib": best["before"]["rss"],
               "after_peak_rss_mib": best["after"]["rss"],
               "bitwise_equal": len(hashes) == 1}
        row["ratio_cpu"] = row["after_ms_per_iter"] / row["before_ms_per_iter"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "load_average": os.getloadavg(), "threads": 1, "repeats": args.repeats,
            "python": platform.python_version()}
    if args.json is not None:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    if args.markdown is not None:
        lines = [f"Run {meta['date']}; {meta['machine']}; load average at the end "
                 f"{', '.join(f'{x:.1f}' for x in meta['load_average'])}; 1 thread; "
                 f"best of {args.repeats} interleaved fresh processes per side; "
                 f"{args.variant}.", "",
                 "| seed | mode | round | nodes | edges | iterations | CPU ms/iter before | after | "
                 "after/before | wall ms/iter before | after | peak RSS MiB before | after "
                 "| bitwise equal |",
                 "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            lines.append(
                f"| {r['seed']} | {r['mode']} | {r['round']} | {r['nodes']:,} | "
                f"{r['edges']:,} | {r['iterations']} | {r['before_ms_per_iter']:.3f} | "
                f"{r['after_ms_per_iter']:.3f} | {r['ratio_cpu']:.2f} | "
                f"{r['before_wall_ms_per_iter']:.3f} | {r['after_wall_ms_per_iter']:.3f} | "
                f"{r['before_peak_rss_mib']:.0f} | {r['after_peak_rss_mib']:.0f} | "
                f"{'yes' if r['bitwise_equal'] else 'NO'} |")
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
