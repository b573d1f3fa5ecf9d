"""Benchmark: round-by-round DCFR on seeded random Pasur deals, dag and tree modes.

For each deal (seeds 0..9 by default) and mode, one fresh process runs
``tensorcfr pasur solve --seed S --method dcfr --mode M --iterations N --threads 1 --json``
(a fresh process per run, so peak RSS is that run's own). Reported per run: graph build time,
solve time (wall) and the process's CPU time (user+sys; the machine is shared, so wall
times are noisy and CPU time is the steadier figure), nodes per round, peak RSS, the gap
between the CFR value and the exact game value, and the exact exploitability.

Tree mode runs only where the tree builder's estimate plus the solver's working memory fit in
``--memory`` (default 24 GiB; otherwise "does not fit: estimate X"), and only where the tree
has at most ``--tree-max-edges`` edges (a time budget: the solver costs about 0.1 us per
edge and iteration; otherwise "not run: N edges over the time budget").

Usage::

    .venv/bin/python benchmarks/bench_pasur_dcfr.py --seeds 0-9 --iterations 1000 \\
        --jsonl /tmp/pasur_dcfr.jsonl --markdown docs/benchmarks/pasur_dcfr.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import torch

from _timing import parse_seeds

torch.set_num_threads(1)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(seed: int, mode: str, iterations: int, timeout: float) -> dict[str, Any]:
    """One solve in a fresh process; the CLI's JSON plus the process's CPU seconds."""
    cmd = [sys.executable, "-m", "tensorcfr.cli.main", "pasur", "solve", "--seed", str(seed),
           "--method", "dcfr", "--mode", mode, "--iterations", str(iterations),
           "--threads", "1", "--json"]
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seed": seed, "mode": mode, "status": f"timeout after {timeout:.0f} s"}
    record: dict[str, Any] = {"seed": seed, "mode": mode,
                              "process_cpu_seconds": _children_cpu() - cpu0,
                              "process_wall_seconds": time.perf_counter() - wall0}
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        record["status"] = ("error: " + lines[-1] if lines else
                            f"error: the solver process ended with code {proc.returncode} "
                            "and no message (killed, e.g. by the out-of-memory killer?)")
        return record
    record.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    record["status"] = "ok"
    return record


def tree_plan(seed: int, memory: int, max_edges: int) -> tuple[bool, str, dict[str, Any]]:
    """Whether to run tree mode for ``seed``, and why not."""
    from tensorcfr.games.pasur.engine.rules import random_deal
    from tensorcfr.games.pasur.solving.dcfr_run import tree_memory_estimate
    from tensorcfr.utils.resources import format_bytes

    estimate, edges, need = tree_memory_estimate(random_deal(seed))
    info = {"tree_nodes_per_round": estimate.nodes_per_round, "tree_estimate_bytes": need,
            "tree_edges": edges}
    if need > memory:
        return False, f"does not fit: estimate {format_bytes(need)}", info
    if edges > max_edges:
        return False, (f"not run: {edges:,} edges over the time budget "
                       f"(estimate {format_bytes(need)})"), info
    return True, "", info


def _fmt(x: Any, spec: str) -> str:
    return format(x, spec) if isinstance(x, (int, float)) else "-"


def markdown(records: list[dict[str, Any]], args: argparse.Namespace) -> str:
    cpu = platform.processor() or platform.machine()
    reproduce = " ".join([".venv/bin/python", "benchmarks/bench_pasur_dcfr.py", *args.argv])
    lines = [
        "# Pasur: round-by-round DCFR benchmark",
        "",
        f"Date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}. Machine: "
        f"{os.cpu_count()} CPU cores ({cpu}), "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB RAM, no GPU, shared with other jobs "
        f"(wall times are noisy; CPU time is the process's user+sys). torch "
        f"{torch.__version__}, 1 thread (`--threads 1`), float64.",
        "",
        f"Command per run: `tensorcfr pasur solve --seed S --method dcfr --mode M "
        f"--iterations {args.iterations} --threads 1 --json` (DCFR alpha=1.5, beta=0, "
        f"gamma=2; {args.iterations} iterations per round), one fresh process each. "
        f"Reproduce with `{reproduce}`.",
        "",
        "Columns: build = graph build (s), solve = the six rounds' CFR (wall s), CPU = the "
        "whole process's CPU time (s), nodes = total graph nodes (per round in the JSONL), "
        "RSS = peak resident memory (MiB), gap = CFR value - exact value (points), "
        "exploitability = exact, over the whole game (points per game).",
        "",
        "| seed | mode | build s | solve s | CPU s | nodes | peak RSS MiB | value | exact | gap "
        "| exploitability | status |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        nodes = r.get("nodes_per_round")
        if nodes:
            cells = [_fmt(r.get("build_seconds"), ".1f"), _fmt(r.get("solve_seconds"), ".1f"),
                     _fmt(r.get("process_cpu_seconds"), ".1f"), f"{sum(nodes):,}",
                     _fmt(r.get("peak_rss_mb"), ".0f"), _fmt(r.get("value"), "+.6f"),
                     _fmt(r.get("exact_value"), "+.0f"), _fmt(r.get("value_gap"), "+.1e"),
                     _fmt(r.get("exploitability"), ".1e")]
        else:
            estimated = r.get("tree_nodes_per_round")
            cells = ["-", "-", "-", f"{sum(estimated):,} (est.)" if estimated else "-",
                     "-", "-", "-", "-", "-"]
        lines.append(f"| {r['seed']} | {r['mode']} | " + " | ".join(cells)
                     + f" | {r['status']} |")
    ok = [r for r in records if r.get("status") == "ok"]
    for mode in ("dag", "tree"):
        runs = [r for r in ok if r["mode"] == mode]
        if runs:
            lines += ["", f"**{mode}**: {len(runs)} runs; solve wall time max "
                      f"{max(r['solve_seconds'] for r in runs):.1f} s, median "
                      f"{sorted(r['solve_seconds'] for r in runs)[len(runs) // 2]:.1f} s; "
                      f"max |gap| {max(abs(r['value_gap']) for r in runs):.1e}; "
                      f"max exploitability {max(r['exploitability'] for r in runs):.1e}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--modes", default="dag,tree")
    parser.add_argument("--memory", type=float, default=24.0, help="GiB for tree mode")
    parser.add_argument("--tree-max-edges", type=int, default=8_000_000)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--jsonl", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--render", type=Path, nargs="+", default=None,
                        help="Only write --markdown from these JSONL files of earlier runs.")
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    if args.render:
        from tensorcfr.utils.io import write_text_atomic

        records = [json.loads(line) for path in args.render
                   for line in path.read_text().splitlines() if line.strip()]
        text = markdown(records, args)
        if args.markdown is not None:
            write_text_atomic(args.markdown, text)
        else:
            print(text, end="")
        return
    modes = [m for m in args.modes.split(",") if m]
    records: list[dict[str, Any]] = []
    for mode in modes:  # every deal in dag mode first, then tree mode (the slow one)
        for seed in parse_seeds(args.seeds):
            if mode == "tree":
                go, why, info = tree_plan(seed, int(args.memory * 2**30), args.tree_max_edges)
                if not go:
                    record = {"seed": seed, "mode": mode, "status": why, **info}
                else:
                    record = {**run_one(seed, mode, args.iterations, args.timeout), **info}
            else:
                record = run_one(seed, mode, args.iterations, args.timeout)
            records.append(record)
            print(json.dumps({k: v for k, v in record.items() if k != "deal"}), flush=True)
            if args.jsonl is not None:
                with args.jsonl.open("a") as fh:
                    fh.write(json.dumps(record) + "\n")
            if args.markdown is not None:
                from tensorcfr.utils.io import write_text_atomic

                write_text_atomic(args.markdown, markdown(records, args))


if __name__ == "__main__":
    main()
