"""Benchmark of the Numeral211 full-game solver (``tensorcfr.games.numeral211.solver``).

Two parts, written to one markdown report (default ``docs/benchmarks/numeral211.md``) plus
a JSON file beside it and a PNG of the exploitability curve:

1. **Full game** (the paper's 40-card game, no abstraction): CFR+ with alternating updates,
   float32, for ``--iterations`` iterations; per-iteration wall time, peak RSS against the
   solver's own estimate, the exact best response / exploitability of the average strategy at
   iterations ``--eval-at`` (time of each evaluation), and the projection to 1,024
   iterations.
2. **Side by side on a tiny variant** (ranks T A, 3 suits, 1 bet per round: OpenSpiel can
   walk it): ms per CFR iteration of this solver, the generic tensor engine on the flattened
   OpenSpiel game and OpenSpiel's own ``CFRSolver`` on the Python game, with ratios, and the
   exploitability each reaches after the same iterations.

Machine, load average and threads are recorded.  Usage::

    nice -n 5 .venv/bin/python benchmarks/bench_numeral211.py [--iterations 8]
        [--eval-at 1,2,4,8] [--threads 1] [--out docs/benchmarks/numeral211.md]
        [--skip-full] [--skip-tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_full(iterations: int, eval_at: list[int], dtype_name: str,
               device: str) -> dict[str, Any]:
    import torch

    from tensorcfr.games.numeral211 import solver as n211
    from tensorcfr.games.numeral211.config import GameConfig
    from tensorcfr.utils.resources import peak_rss_mb

    dtype = getattr(torch, dtype_name)
    started = time.perf_counter()
    game = n211.build_game(GameConfig(), dtype=dtype, device=device)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    solver = n211.make_solver(game, "cfr+")
    alloc_s = time.perf_counter() - started
    iter_s: list[float] = []
    curve: list[dict[str, float]] = []
    evals: list[float] = []
    for it in range(1, iterations + 1):
        t0 = time.perf_counter()
        solver.iterate(1)
        iter_s.append(time.perf_counter() - t0)
        print(json.dumps({"iteration": it, "seconds": iter_s[-1], "load": _load(),
                          "peak_rss_mb": peak_rss_mb()}), flush=True)
        if it in eval_at:
            t0 = time.perf_counter()
            ex = n211.exploitability(game, solver.average_policy())
            evals.append(time.perf_counter() - t0)
            curve.append({"iteration": it, "exploitability": ex.exploitability,
                          "mbg": n211.to_mbg(ex.exploitability, game.config),
                          "best_response_values": ex.best_response_values,
                          "seconds": evals[-1]})
            print(json.dumps(curve[-1]), flush=True)
    mean = sum(iter_s) / len(iter_s)
    return {"build_seconds": build_s, "alloc_seconds": alloc_s, "iteration_seconds": iter_s,
            "ms_per_iteration": 1000 * mean,
            "ms_per_iteration_min": 1000 * min(iter_s),
            "projected_1024_hours": 1024 * mean / 3600,
            "best_response_seconds": evals, "curve": curve,
            "peak_rss_bytes": int(peak_rss_mb() * 2**20),
            "memory_estimate_bytes": solver.estimated_memory_bytes,
            "dtype": dtype_name, "device": device, "load_after": _load()}


def bench_tiny(iterations: int) -> dict[str, Any]:
    import torch
    from open_spiel.python.algorithms import cfr, exploitability

    from tensorcfr.core.best_response import exploitability as generic_expl
    from tensorcfr.core.cfr import TensorCFRSolver
    from tensorcfr.games.numeral211 import openspiel_game as og
    from tensorcfr.games.numeral211 import solver as n211
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


def write_report(path: Path, result: dict[str, Any]) -> None:
    from tensorcfr.utils.resources import format_bytes

    lines = ["# Numeral211 full-game solver benchmark", "",
             f"Machine: {result['machine']}.  Threads: {result['threads']}.  "
             f"Load average at start: {result['load_before']}.", "",
             "Regenerate: `nice -n 5 .venv/bin/python benchmarks/bench_numeral211.py "
             + " ".join(result["argv"]) + "`", ""]
    for part, info in result.get("merged", {}).items():
        lines += [f"The {part} part comes from the run `bench_numeral211.py "
                  f"{' '.join(info['argv'])}` (load average at its start: "
                  f"{info['load_before']}).", ""]
    full = result.get("full")
    if full:
        lines += ["## Full game, CFR+ (alternating updates), no abstraction", "",
                  "| measure | value |", "|---|---|",
                  f"| game | numeral211 (40 cards; 888,310,800 turn infosets) |",
                  f"| dtype / device | {full['dtype']} / {full['device']} |",
                  f"| iterations run | {len(full['iteration_seconds'])} |",
                  f"| ms per iteration (mean / min) | {full['ms_per_iteration']:,.0f} / "
                  f"{full['ms_per_iteration_min']:,.0f} |",
                  f"| projected time for 1,024 iterations | "
                  f"{full['projected_1024_hours']:.2f} h (goal: under 1 h) |",
                  f"| peak RSS | {format_bytes(full['peak_rss_bytes'])} (goal: at most "
                  "16 GiB) |",
                  f"| solver memory estimate (checked before allocating) | "
                  f"{format_bytes(full['memory_estimate_bytes'])} |",
                  f"| exact best response + exploitability of the average strategy | "
                  + ", ".join(f"{s:.1f} s" for s in full["best_response_seconds"])
                  + " (goal: under 2 min) |",
                  f"| game build / solver allocation | {full['build_seconds']:.1f} s / "
                  f"{full['alloc_seconds']:.1f} s |",
                  f"| load average after | {full['load_after']} |", "",
                  "Exploitability of the average strategy (exact, full game; chips per game and "
                  "mb/g = thousandths of the ante of 5):", "",
                  "| iteration | exploitability (chips/game) | mb/g | b0 | b1 |",
                  "|---:|---:|---:|---:|---:|"]
        for p in full["curve"]:
            b0, b1 = p["best_response_values"]
            lines.append(f"| {p['iteration']} | {p['exploitability']:.5f} | {p['mbg']:,.1f} | "
                         f"{b0:.5f} | {b1:.5f} |")
        lines += ["", "![exploitability curve](numeral211_curve.png)", ""]
    tiny = result.get("tiny")
    if tiny:
        base = tiny["rows"][0]["ms_per_iteration"]
        lines += [f"## Side by side on a tiny variant ({tiny['game']}, 1 bet per round; "
                  f"vanilla CFR, {tiny['iterations']} iterations, float64)", "",
                  "| solver | ms / iteration | ratio to public tree | exploitability after |",
                  "|---|---:|---:|---:|"]
        for row in tiny["rows"]:
            lines.append(f"| {row['solver']} | {row['ms_per_iteration']:.2f} | "
                         f"{row['ms_per_iteration'] / base:.1f}x | "
                         f"{row['exploitability']:.6f} |")
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def plot_curve(path: Path, curve: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([p["iteration"] for p in curve], [p["mbg"] for p in curve], marker="o")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("CFR+ iteration")
    ax.set_ylabel("exploitability (mb/g)")
    ax.set_title("Numeral211 full game, CFR+ (exact best response)")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--eval-at", default="1,2,4,8")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tiny-iterations", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/numeral211.md"))
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument("--skip-tiny", action="store_true")
    parser.add_argument("--merge", action="append", default=[],
                        help="JSON of an earlier run whose full/tiny part fills a skipped one")
    args = parser.parse_args()
    from tensorcfr.utils.machine import machine_line
    from tensorcfr.utils.resources import set_threads

    threads = set_threads(args.threads)
    result: dict[str, Any] = {"machine": machine_line(), "threads": threads,
                              "load_before": _load(), "argv": sys.argv[1:]}
    if not args.skip_tiny:
        result["tiny"] = bench_tiny(args.tiny_iterations)
        print(json.dumps(result["tiny"]), flush=True)
    if not args.skip_full:
        eval_at = [int(x) for x in args.eval_at.split(",") if x]
        result["full"] = bench_full(args.iterations, eval_at, args.dtype, args.device)
    for earlier in args.merge:
        previous = json.loads(Path(earlier).read_text(encoding="utf-8"))
        for part in ("tiny", "full"):
            if part not in result and part in previous:
                result[part] = previous[part]
                result.setdefault("merged", {})[part] = {
                    k: previous.get(k) for k in ("machine", "threads", "load_before", "argv")}
    out = Path(args.out)
    if result.get("full", {}).get("curve"):
        plot_curve(out.parent / "numeral211_curve.png", result["full"]["curve"])
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    write_report(out, result)
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
