"""Benchmark of the Numeral211 full-game solver (``tensorcfr.games.numeral211.solving.solver``).

Written to one markdown report (default ``docs/benchmarks/numeral211.md``) plus a JSON file
beside it:

1. **Full game, before and after, side by side** (the paper's 40-card game, no abstraction):
   the same worker (:func:`bench_full`) runs in a child process once on a baseline checkout
   (``--baseline-commit``, default ``523fbf2``: per-cell storage, extracted with ``git
   archive`` into a temporary folder) and once on this tree, one after the other: CFR+
   with alternating updates, float32, ``--iterations`` exact iterations (both players'
   passes each), seconds per iteration and the projection to 1,024 iterations, the exact
   best response of both players to the average strategy (``exploitability(...,
   with_policy_values=False)``: what a full-game strategy costs to evaluate), peak RSS of the
   process against the solver's own estimate (checked before allocating), load averages.
   The baseline runs as it was filed: without transparent huge pages
   (``THP_MEM_ALLOC_ENABLE=0``; this tree's ``import tensorcfr`` turns them on).
   **Levers** (``--levers``): this tree again with one lever off at a time: huge pages off,
   and the sort sweeps instead of the dense per-board matrices (``--sweeps`` in the
   worker), so each lever's share is measured in the same invocation; and once with
   2 threads (the idle-machine option; CPU seconds then count both threads).
2. **Abstract iteration at the paper's budget** (this tree only): bucketed CFR (equal-width
   EHS bins, 225 flop / 396 turn buckets) over the full game's exact sweeps
   (``abstract_solver``): seconds per iteration next to the full-game iteration's.
3. **Side by side on a tiny variant** (ranks T A, 3 suits, 1 bet per round: OpenSpiel can
   walk it): ms per CFR iteration of this solver, the generic tensor engine on the flattened
   OpenSpiel game and OpenSpiel's own ``CFRSolver`` on the Python game, with ratios, and the
   exploitability each reaches after the same iterations.

Machine, load average and threads are recorded.  Run it alone (``heavy``): the baseline's
full game peaks near 7.6 GiB.  Usage::

    heavy .venv/bin/python benchmarks/bench_numeral211.py [--iterations 2]
        [--baseline-commit 523fbf2] [--threads 1] [--out docs/benchmarks/numeral211.md]
        [--skip-baseline] [--skip-full] [--skip-abstract] [--skip-tiny] [--levers]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 3.5
PAPER_BUDGET = (225, 396)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_full(iterations: int, dtype_name: str, device: str, ranks: str,
               sweeps: bool = False) -> dict[str, Any]:
    """Worker: build, allocate, iterate and evaluate the full game with the code on
    ``sys.path`` (only API calls that exist before and after the speed-up).  ``sweeps``:
    this tree's class game without its dense per-board matrices."""
    import torch

    if sweeps:
        from tensorcfr.games.numeral211.game.class_game import Numeral211ClassGame

        Numeral211ClassGame.dense = False

    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.utils.resources import peak_rss_mb

    load_before = _load()
    dtype = getattr(torch, dtype_name)
    started = time.perf_counter()
    game = n211.build_game(GameConfig(ranks=ranks), dtype=dtype, device=device)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    solver = n211.make_solver(game, "cfr+")
    alloc_s = time.perf_counter() - started
    iter_s: list[float] = []
    iter_cpu: list[float] = []
    for it in range(1, iterations + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        solver.iterate(1)
        iter_s.append(time.perf_counter() - t0)
        iter_cpu.append(time.process_time() - c0)
        print(json.dumps({"iteration": it, "seconds": iter_s[-1], "load": _load(),
                          "peak_rss_mb": peak_rss_mb()}), file=sys.stderr, flush=True)
    t0, c0 = time.perf_counter(), time.process_time()
    ex = n211.exploitability(game, solver.average_policy(), with_policy_values=False)
    br_s, br_cpu = time.perf_counter() - t0, time.process_time() - c0
    mean = sum(iter_s) / len(iter_s)
    return {"build_seconds": build_s, "alloc_seconds": alloc_s, "iteration_seconds": iter_s,
            "seconds_per_iteration": mean, "seconds_per_iteration_min": min(iter_s),
            "projected_1024_hours": 1024 * mean / 3600,
            "cpu_seconds_per_iteration": sum(iter_cpu) / len(iter_cpu),
            "projected_1024_cpu_hours": 1024 * sum(iter_cpu) / len(iter_cpu) / 3600,
            "best_response_seconds": br_s, "best_response_cpu_seconds": br_cpu,
            "exploitability": ex.exploitability,
            "best_response_values": ex.best_response_values,
            "mbg": n211.to_mbg(ex.exploitability, game.config),
            "peak_rss_bytes": int(peak_rss_mb() * 2**20),
            "memory_estimate_bytes": solver.estimated_memory_bytes,
            "storage": type(solver).__name__, "dtype": dtype_name, "device": device,
            "game": game.config.describe(), "sweeps": sweeps,
            "huge_pages": os.environ.get("THP_MEM_ALLOC_ENABLE", "0") == "1",
            "load_before": load_before, "load_after": _load()}


def bench_abstract(iterations: int, dtype_name: str, device: str, ranks: str
                   ) -> dict[str, Any]:
    """Worker: bucketed CFR at the paper's budget over exact full sweeps (this tree)."""
    import torch

    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver, bucket_embeddings
    from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.utils.resources import peak_rss_mb

    load_before = _load()
    config = GameConfig(ranks=ranks)
    game = n211.build_game(config, dtype=getattr(torch, dtype_name), device=device)
    t0 = time.perf_counter()
    bmap = build_abstraction(config, "ehs", *PAPER_BUDGET, ehs_bins=True)
    build_s = time.perf_counter() - t0
    solver = abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr")
    iter_s, iter_cpu = [], []
    for _ in range(iterations):
        t0, c0 = time.perf_counter(), time.process_time()
        solver.iterate(1)
        iter_s.append(time.perf_counter() - t0)
        iter_cpu.append(time.process_time() - c0)
    t0 = time.perf_counter()
    ex = n211.exploitability(game, solver.average_policy(), with_policy_values=False)
    eval_s = time.perf_counter() - t0
    return {"abstraction": "ehs equal-width bins", "buckets": list(bmap.num_buckets),
            "abstraction_seconds": build_s, "iteration_seconds": iter_s,
            "seconds_per_iteration": sum(iter_s) / len(iter_s),
            "cpu_seconds_per_iteration": sum(iter_cpu) / len(iter_cpu),
            "exploitability_seconds": eval_s, "exploitability": ex.exploitability,
            "storage": type(solver).__name__, "peak_rss_bytes": int(peak_rss_mb() * 2**20),
            "load_before": load_before, "load_after": _load()}


def _baseline_src(commit: str, folder: Path) -> Path:
    """``src/`` of ``commit`` extracted into ``folder`` (git archive)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src"],
                             check=True, capture_output=True).stdout
    tar_path = folder / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def _run_worker(src: Path, part: str, args: argparse.Namespace, *, huge_pages: bool = True,
                sweeps: bool = False, threads: int | None = None) -> dict[str, Any]:
    """Run ``part`` of this script in a child process with ``src`` first on the path
    (``huge_pages``: PyTorch's ``THP_MEM_ALLOC_ENABLE``; ``sweeps``: see :func:`bench_full`)."""
    env = dict(os.environ, PYTHONPATH=str(src), THP_MEM_ALLOC_ENABLE="1" if huge_pages else "0")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", part,
           "--iterations", str(args.iterations if part == "full" else args.abstract_iterations),
           "--threads", str(threads or args.threads), "--dtype", args.dtype,
           "--device", args.device, "--ranks", args.ranks] + (["--sweeps"] if sweeps else [])
    done = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_tiny(iterations: int) -> dict[str, Any]:
    import torch
    from open_spiel.python.algorithms import cfr, exploitability

    from tensorcfr.core.best_response import exploitability as generic_expl
    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.games.numeral211.game import openspiel_game as og
    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.games.openspiel.flatten import flatten_game

    config = og.config_of({"ranks": "TA", "suits": 3, "max_bets": 1})
    os_game = og.load(config)
    rows = []

    game = n211.build_game(config, dtype=torch.float64)
    ours = n211.make_solver(game, "cfr")
    t0 = time.perf_counter()
    ours.iterate(iterations)
    s = time.perf_counter() - t0
    rows.append({"solver": "public tree (this issue)", "ms_per_iteration":
                 1000 * s / iterations,
                 "exploitability": n211.exploitability(game, ours.average_policy()
                                                       ).exploitability})
    tree = flatten_game(os_game, dtype=torch.float64)
    generic = TensorCFRSolver(tree, "cfr")
    t0 = time.perf_counter()
    generic.iterate(iterations)
    s = time.perf_counter() - t0
    rows.append({"solver": "generic tensor engine (flattened tree)",
                 "ms_per_iteration": 1000 * s / iterations,
                 "exploitability": generic_expl(tree, generic.average_policy()).exploitability})
    theirs = cfr.CFRSolver(os_game)
    t0 = time.perf_counter()
    for _ in range(iterations):
        theirs.evaluate_and_update_policy()
    s = time.perf_counter() - t0
    rows.append({"solver": "OpenSpiel CFRSolver (Python game)",
                 "ms_per_iteration": 1000 * s / iterations,
                 "exploitability": exploitability.nash_conv(
                     os_game, theirs.average_policy()) / 2})
    return {"game": config.describe(), "iterations": iterations, "rows": rows}


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def write_report(path: Path, result: dict[str, Any]) -> None:
    """The markdown report (see the module docstring)."""
    lines = ["# Numeral211 full-game solver: before and after the speed-up", "",
             f"Machine: {result['machine']}.  Threads: {result['threads']} (torch intra-op).  "
             f"Load average at start: {result['load_before']} (a 2-core machine shared with "
             "other engineers' jobs: wall times are inflated by the load; both columns ran "
             "in the same invocation, one after the other).", "",
             "Regenerate: `heavy .venv/bin/python benchmarks/bench_numeral211.py "
             + " ".join(result["argv"]) + "`", ""]
    before, after = result.get("before"), result.get("after")
    if after:
        cols = [("before", before), ("after", after)] if before else [("after", after)]
        head = " | ".join(f"{name} ({info['storage']}, {result['baseline_commit'] if name == 'before' else 'this tree'})"
                          for name, info in cols)
        lines += ["## Full game, exact CFR+ (alternating updates), float32, no abstraction", "",
                  f"Game: {after['game']}.", "",
                  f"| measure | {head} |", "|---|" + "---:|" * len(cols)]

        def row(label: str, fmt: Any) -> None:
            lines.append(f"| {label} | " + " | ".join(fmt(info) for _, info in cols) + " |")

        row("exact iterations timed", lambda i: str(len(i["iteration_seconds"])))
        row("wall seconds per iteration (mean / min; both players' passes)",
            lambda i: f"{i['seconds_per_iteration']:.2f} / {i['seconds_per_iteration_min']:.2f}")
        row("CPU seconds per iteration (process time, 1 thread: the idle-core time)",
            lambda i: f"{i.get('cpu_seconds_per_iteration', float('nan')):.2f}")
        row(f"projected time for 1,024 iterations, wall / CPU (goal: under 1 h, i.e. "
            f"{GOAL_SECONDS} s per iteration)",
            lambda i: f"{i['projected_1024_hours']:.2f} h / "
            f"{i.get('projected_1024_cpu_hours', float('nan')):.2f} h")
        row("exact best response of both players to the average strategy, wall / CPU "
            "(goal: under 30 s)", lambda i: f"{i['best_response_seconds']:.1f} s / "
            f"{i.get('best_response_cpu_seconds', float('nan')):.1f} s")
        row("exploitability of the average strategy after these iterations (mb/g)",
            lambda i: f"{i['mbg']:,.1f}")
        row("peak RSS of the process (goal: at most 8 GiB)",
            lambda i: _gib(i["peak_rss_bytes"]))
        row("solver memory estimate (checked before allocating)",
            lambda i: _gib(i["memory_estimate_bytes"]))
        row("game build / solver allocation", lambda i: f"{i['build_seconds']:.1f} s / "
            f"{i['alloc_seconds']:.1f} s")
        row("load average before / after", lambda i: f"{i['load_before']} / {i['load_after']}")
        if before:
            ratio = before["seconds_per_iteration"] / after["seconds_per_iteration"]
            br = before["best_response_seconds"] / after["best_response_seconds"]
            lines += ["", f"Speed-up: {ratio:.1f}x per iteration, {br:.1f}x per exact best "
                      "response (same machine, same invocation)."]
        lines.append("")
    levers = result.get("levers")
    if levers and after:
        lines += ["## What each lever buys (this tree, one lever off at a time, same "
                  "invocation)", "", "With 2 threads the CPU seconds count both threads; "
                  "compare its wall seconds.", "",
                  "| run | CPU s / iteration | wall s / iteration | best response, CPU | "
                  "peak RSS | wall time against all levers on |", "|---|---:|---:|---:|---:|---:|"]
        for name, info in [("all levers on (the table above)", after)] + list(levers.items()):
            lines.append(f"| {name} | {info['cpu_seconds_per_iteration']:.2f} | "
                         f"{info['seconds_per_iteration']:.2f} | "
                         f"{info['best_response_cpu_seconds']:.1f} s | "
                         f"{_gib(info['peak_rss_bytes'])} | "
                         f"{info['seconds_per_iteration'] / after['seconds_per_iteration']:.2f}x |")
        lines.append("")
    abstract = result.get("abstract")
    if abstract:
        full_s = after["seconds_per_iteration"] if after else float("nan")
        full_cpu = after.get("cpu_seconds_per_iteration", float("nan")) if after else full_s
        lines += ["## Abstract iteration at the paper's budget (this tree)", "",
                  "| measure | value |", "|---|---:|",
                  f"| abstraction | {abstract['abstraction']}, buckets "
                  f"{'/'.join(str(b) for b in abstract['buckets'])} |",
                  f"| solver | {abstract['storage']} (bucketed CFR over exact full sweeps) |",
                  f"| wall / CPU seconds per abstract iteration (mean of "
                  f"{len(abstract['iteration_seconds'])}) | "
                  f"{abstract['seconds_per_iteration']:.2f} / "
                  f"{abstract.get('cpu_seconds_per_iteration', float('nan')):.2f} |",
                  f"| wall / CPU seconds per full-game iteration (table above) | {full_s:.2f} / "
                  f"{full_cpu:.2f} |",
                  f"| exact exploitability evaluation of its average strategy | "
                  f"{abstract['exploitability_seconds']:.1f} s |",
                  f"| abstraction build / peak RSS | {abstract['abstraction_seconds']:.1f} s / "
                  f"{_gib(abstract['peak_rss_bytes'])} |",
                  f"| load average before / after | {abstract['load_before']} / "
                  f"{abstract['load_after']} |", ""]
    tiny = result.get("tiny")
    if tiny:
        base = tiny["rows"][0]["ms_per_iteration"]
        lines += [f"## Side by side on a tiny variant ({tiny['game']}, 1 bet per round; "
                  f"vanilla CFR, {tiny['iterations']} iterations, float64)", "",
                  "| solver | ms / iteration | ratio to public tree | exploitability after |",
                  "|---|---:|---:|---:|"]
        for row_ in tiny["rows"]:
            lines.append(f"| {row_['solver']} | {row_['ms_per_iteration']:.2f} | "
                         f"{row_['ms_per_iteration'] / base:.1f}x | "
                         f"{row_['exploitability']:.6f} |")
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--abstract-iterations", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--ranks", default="23456789TA",
                        help="rank letters of the deck (a smaller deck for a smoke test)")
    parser.add_argument("--baseline-commit", default="523fbf2")
    parser.add_argument("--tiny-iterations", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/numeral211_speed.md"))
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument("--skip-abstract", action="store_true")
    parser.add_argument("--skip-tiny", action="store_true")
    parser.add_argument("--levers", action="store_true",
                        help="also time this tree with huge pages off, and with the sweeps")
    parser.add_argument("--sweeps", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=["full", "abstract"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    from tensorcfr.utils.resources import set_threads

    threads = set_threads(args.threads)
    if args.worker:
        if args.worker == "full":
            info = bench_full(args.iterations, args.dtype, args.device, args.ranks,
                              sweeps=args.sweeps)
        else:
            info = bench_abstract(args.iterations, args.dtype, args.device, args.ranks)
        info["threads"] = threads
        print(json.dumps(info), flush=True)
        return
    from tensorcfr.utils.machine import machine_line

    result: dict[str, Any] = {"machine": machine_line(), "threads": threads,
                              "load_before": _load(), "argv": sys.argv[1:],
                              "baseline_commit": args.baseline_commit}
    here = ROOT / "src"
    if not args.skip_full:
        if not args.skip_baseline:
            with tempfile.TemporaryDirectory() as tmp:
                old = _baseline_src(args.baseline_commit, Path(tmp))
                result["before"] = _run_worker(old, "full", args, huge_pages=False)
            print(json.dumps({"before": result["before"]}), flush=True)
        result["after"] = _run_worker(here, "full", args)
        print(json.dumps({"after": result["after"]}), flush=True)
        if args.levers:
            result["levers"] = {
                "huge pages off": _run_worker(here, "full", args, huge_pages=False),
                "sort sweeps instead of the dense per-board matrices":
                    _run_worker(here, "full", args, sweeps=True),
                "2 threads (an option for an idle machine, not the default)":
                    _run_worker(here, "full", args, threads=2)}
            print(json.dumps({"levers": result["levers"]}), flush=True)
    if not args.skip_abstract:
        result["abstract"] = _run_worker(here, "abstract", args)
        print(json.dumps({"abstract": result["abstract"]}), flush=True)
    if not args.skip_tiny:
        result["tiny"] = bench_tiny(args.tiny_iterations)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    write_report(out, result)
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
