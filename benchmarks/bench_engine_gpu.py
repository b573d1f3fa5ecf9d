"""The generic engine on a GPU, with and without CUDA graphs, against one CPU thread and
OpenSpiel's C++ ``CFRSolver`` on the same machine (a few minutes; issue 30, item 3).

Per game, in one process, vanilla CFR with alternating updates in float64:

* ``cpu``: ``TensorCFRSolver(tree)`` on one CPU thread (the compiled loops from 100k nodes);
* ``gpu``: the same on CUDA, eager (a few hundred kernel launches per iteration);
* ``gpu_graph``: ``cuda_graph=True`` (the whole iteration captured at the second one and
  replayed: one launch per iteration);
* ``cpp``: ``pyspiel.CFRSolver`` on one thread (skipped above ``--cpp-max-nodes``).

ms per iteration are medians over ``--reps`` repetitions of at least ``--min-rep-seconds``
(the GPU synchronised at the end of each).  The check: after ``--check-iterations`` the
graph's regrets, strategy and average equal the eager GPU solver's to rounding
(``scatter_add_`` adds with atomics on CUDA, in no fixed order) and the CPU solver's to
1e-9.  Writes JSON (``--out``) and prints a markdown table.

Usage (on the GPU machine)::

    OMP_NUM_THREADS=1 python benchmarks/bench_engine_gpu.py --out engine_gpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch


def _time(step, sync, min_seconds: float, reps: int) -> list[float]:  # noqa: ANN001
    """ms per iteration of ``reps`` repetitions of at least ``min_seconds`` each."""
    started = time.perf_counter()
    step()
    sync()
    one = max(time.perf_counter() - started, 1e-6)
    count = max(1, int(min_seconds / one))
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        for _ in range(count):
            step()
        sync()
        samples.append((time.perf_counter() - started) / count * 1e3)
    return samples


def bench_game(game: str, args: argparse.Namespace) -> dict:
    import pyspiel

    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.games.openspiel import flatten_game

    tree = flatten_game(game)
    entry: dict = {"game": game, "nodes": tree.num_nodes, "ms": {}}

    def no_sync() -> None:
        return None

    def cuda_sync() -> None:
        torch.cuda.synchronize()

    cpu = TensorCFRSolver(tree, threads=1)
    gpu = TensorCFRSolver(tree, device="cuda", threads=1)
    graph = TensorCFRSolver(tree, device="cuda", cuda_graph=True, threads=1)
    entry["cpu_uses_numba"] = cpu.uses_numba
    for solver in (cpu, gpu, graph):  # warm-up; the graph is captured at iteration 2
        solver.iterate(3)
    torch.cuda.synchronize()
    entry["ms"]["cpu"] = _time(cpu.evaluate_and_update_policy, no_sync,
                               args.min_rep_seconds, args.reps)
    entry["ms"]["gpu"] = _time(gpu.evaluate_and_update_policy, cuda_sync,
                               args.min_rep_seconds, args.reps)
    entry["ms"]["gpu_graph"] = _time(graph.evaluate_and_update_policy, cuda_sync,
                                     args.min_rep_seconds, args.reps)
    if tree.num_nodes <= args.cpp_max_nodes:
        cpp = pyspiel.CFRSolver(pyspiel.load_game(game))
        cpp.evaluate_and_update_policy()
        entry["ms"]["cpp"] = _time(cpp.evaluate_and_update_policy, no_sync,
                                   args.min_rep_seconds, max(3, args.reps // 2))
    # Same regrets with and without the graph (fresh solvers, the same iteration count).
    check = {}
    fresh = {name: TensorCFRSolver(tree, device=device, cuda_graph=graphed, threads=1)
             for name, device, graphed in (("cpu", "cpu", False), ("gpu", "cuda", False),
                                           ("gpu_graph", "cuda", True))}
    for solver in fresh.values():
        solver.iterate(args.check_iterations)
    states = {name: {k: v.cpu() for k, v in s.state_tensors().items()}
              for name, s in fresh.items()}
    for other in ("gpu", "cpu"):
        check[f"graph_vs_{other}_max_abs_diff"] = max(
            float((states["gpu_graph"][k] - states[other][k]).abs().max())
            for k in ("regrets", "cumulative_strategy", "strategy"))
    entry["check"] = check
    entry["median_ms"] = {k: statistics.median(v) for k, v in entry["ms"].items()}
    return entry


def render(results: list[dict]) -> str:
    lines = ["| game | nodes | CPU 1 thread ms | GPU ms | GPU graph ms | OpenSpiel C++ ms | "
             "graph vs GPU | graph vs CPU | graph x C++ | graph - eager max abs diff |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        m = r["median_ms"]
        cpp, graphed = m.get("cpp"), m["gpu_graph"]
        lines.append(
            f"| {r['game']} | {r['nodes']:,} | {m['cpu']:.3f} | {m['gpu']:.3f} | "
            f"{graphed:.3f} | {'—' if cpp is None else f'{cpp:.1f}'} | "
            f"{m['gpu'] / graphed:.1f}x | {m['cpu'] / graphed:.1f}x | "
            f"{'—' if cpp is None else f'{cpp / graphed:.0f}x'} | "
            f"{r['check']['graph_vs_gpu_max_abs_diff']:.1e} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", default="leduc_poker,liars_dice,tic_tac_toe")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--min-rep-seconds", type=float, default=0.3)
    parser.add_argument("--check-iterations", type=int, default=20)
    parser.add_argument("--cpp-max-nodes", type=int, default=1_000_000)
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA device", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cpu_count": os.cpu_count(), "load_start": os.getloadavg()[0],
              "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "games": []}
    for game in args.games.split(","):
        report["games"].append(bench_game(game, args))
        print(render(report["games"][-1:]), flush=True)
    report["load_end"] = os.getloadavg()[0]
    print(render(report["games"]))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
