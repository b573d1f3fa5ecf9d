"""The generic engine on a GPU, with and without CUDA graphs, against one CPU thread and
OpenSpiel's C++ ``CFRSolver`` on the same machine (a few minutes; issue 30, item 3), and
the number of operators (kernels) a graph-ready iteration runs.

Per game, in one process, vanilla CFR with alternating updates in float64:

* ``cpu``: ``TensorCFRSolver(tree)`` on one CPU thread (the compiled loops from 100k nodes);
* ``gpu``: the same on CUDA, eager (a few hundred kernel launches per iteration);
* ``gpu_graph``: ``cuda_graph=True`` (the whole iteration captured at the second one and
  replayed: one launch per iteration) through :mod:`tensorcfr.core.static_passes`;
* ``gpu_graph_levels``: the same graph over the torch passes level by level
  (``fused_static_passes = False``: the first graph path, 2.3-2.7x the kernels);
* ``gpu_static_eager``: the static passes run eagerly on CUDA (no graph: their launches);
* ``gpu_graph_streams``: the graph with each player's forward pass on a side stream, beside
  the next player's backward pass (``static_streams = True``; its state is checked against
  the eager GPU solver's as the graph's is);
* ``cpp``: ``pyspiel.CFRSolver`` on one thread (skipped above ``--cpp-max-nodes``), timed after
  ``--cpp-warmup`` untimed iterations (30): OpenSpiel's CFR skips the histories no player
  reaches, so its first iterations are up to 4x slower than its steady ones (tic_tac_toe:
  1.37 s against 0.34 s), and timing them would flatter every ratio.

Operators per graph-ready iteration (``kernels``) are counted on the CPU with a
``TorchDispatchMode`` (every aten call that is not a view; the count does not depend on
the device) for the static passes and the level-by-level path, and on a GPU also with
torch's profiler (CUDA kernels of one eager static iteration, ``cuda_kernels``).

ms per iteration are medians over ``--reps`` repetitions of at least ``--min-rep-seconds``
(the GPU synchronised at the end of each).  The check: after ``--check-iterations`` the
graph's regrets, strategy and average equal the eager GPU solver's to rounding
(``scatter_add_`` adds with atomics on CUDA, in no fixed order) and the CPU solver's to
1e-9.  Writes JSON (``--out``) and prints a markdown table.

``--cpu-only`` (a machine without a GPU): the operator counts, and ms per iteration on
one CPU thread of the default path (``cpu``), the static passes (``cpu_static``), the
level-by-level static path (``cpu_static_levels``) and OpenSpiel's C++, with the check
that the static passes' state equals the default path's bitwise.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_engine_gpu.py --out engine_gpu.json
    OMP_NUM_THREADS=1 python benchmarks/bench_engine_gpu.py --cpu-only --out engine_ops.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tensorcfr.core.solver import TensorCFRSolver


class _StaticSolver(TensorCFRSolver):
    """The graph-ready iteration run eagerly (any device)."""

    static_iterations = True


class _LevelStaticSolver(_StaticSolver):
    fused_static_passes = False


class _LevelGraphSolver(TensorCFRSolver):
    fused_static_passes = False


class _StreamsGraphSolver(TensorCFRSolver):
    static_streams = True  # forward passes on a side stream (graph branches)


class _OperatorCounter(TorchDispatchMode):
    """aten calls that run a kernel (views run none), by name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        if not func.is_view:
            self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _run_static(solver: TensorCFRSolver) -> None:
    """The passes of one graph-ready iteration (what a CUDA graph captures)."""
    if solver._static_passes is not None:
        solver._static_passes.iteration()
    else:
        solver._torch_iteration()


def count_operators(solver: TensorCFRSolver) -> dict[str, Any]:
    """Operators of one graph-ready iteration of ``solver`` (built with
    ``static_iterations``; advanced by one iteration): total and by name."""
    solver.iteration += 1
    solver._load_step_scalars()
    with _OperatorCounter() as counter:
        _run_static(solver)
    return {"total": sum(counter.counts.values()), "by_op": dict(counter.counts.most_common())}


def count_cuda_kernels(solver: TensorCFRSolver) -> int | None:
    """CUDA kernels of one eager graph-ready iteration (torch's profiler), None when the
    profiler does not give them."""
    from torch.profiler import ProfilerActivity, profile

    solver.iteration += 1
    solver._load_step_scalars()
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            _run_static(solver)
            torch.cuda.synchronize()
        kernels = [e for e in prof.events()
                   if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
                   and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()]
        return len(kernels)
    except Exception:  # noqa: BLE001 - a figure, not a check
        return None


def _time(step: Callable[[], None], sync: Callable[[], None], min_seconds: float,
          reps: int) -> list[float]:
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


def _no_sync() -> None:
    return None


def _cuda_sync() -> None:
    torch.cuda.synchronize()


def _states(solvers: dict[str, TensorCFRSolver]) -> dict[str, dict[str, torch.Tensor]]:
    return {name: {k: v.cpu() for k, v in s.state_tensors().items()}
            for name, s in solvers.items()}


def _max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max())
               for k in ("regrets", "cumulative_strategy", "strategy"))


def bench_game(game: str, args: argparse.Namespace) -> dict:
    import pyspiel

    from tensorcfr.games.openspiel import flatten_game

    started = time.perf_counter()
    tree = flatten_game(game)
    entry: dict = {"game": game, "nodes": tree.num_nodes,
                   "flatten_seconds": round(time.perf_counter() - started, 2), "ms": {}}
    entry["kernels"] = {"static": count_operators(_iterated(_StaticSolver(tree), 2)),
                        "static_levels": count_operators(_iterated(_LevelStaticSolver(tree),
                                                                   2))}
    solvers: dict[str, tuple[TensorCFRSolver, Callable[[], None]]] = {
        "cpu": (TensorCFRSolver(tree, threads=1), _no_sync)}
    if args.cpu_only:
        solvers["cpu_static"] = (_StaticSolver(tree, threads=1), _no_sync)
        solvers["cpu_static_levels"] = (_LevelStaticSolver(tree, threads=1), _no_sync)
    else:
        solvers["gpu"] = (TensorCFRSolver(tree, device="cuda", threads=1), _cuda_sync)
        solvers["gpu_graph"] = (TensorCFRSolver(tree, device="cuda", cuda_graph=True,
                                                threads=1), _cuda_sync)
        solvers["gpu_graph_levels"] = (_LevelGraphSolver(tree, device="cuda", cuda_graph=True,
                                                         threads=1), _cuda_sync)
        solvers["gpu_static_eager"] = (_StaticSolver(tree, device="cuda", threads=1),
                                       _cuda_sync)
        solvers["gpu_graph_streams"] = (_StreamsGraphSolver(tree, device="cuda",
                                                            cuda_graph=True, threads=1),
                                        _cuda_sync)
        entry["cuda_kernels"] = {
            "static": count_cuda_kernels(_iterated(_StaticSolver(tree, device="cuda"), 2)),
            "static_levels": count_cuda_kernels(
                _iterated(_LevelStaticSolver(tree, device="cuda"), 2))}
    entry["cpu_uses_numba"] = solvers["cpu"][0].uses_numba
    for name, (solver, sync) in solvers.items():
        try:  # warm-up (a graph is captured at iteration 2), then the timing
            solver.iterate(3)
            sync()
            entry["ms"][name] = _time(solver.evaluate_and_update_policy, sync,
                                      args.min_rep_seconds, args.reps)
        except Exception as error:  # noqa: BLE001 - keep the other figures
            if name != "gpu_graph_streams":
                raise
            entry.setdefault("errors", {})[name] = repr(error)[:400]
    if tree.num_nodes <= args.cpp_max_nodes:
        cpp = pyspiel.CFRSolver(pyspiel.load_game(game))
        for _ in range(max(1, args.cpp_warmup)):
            cpp.evaluate_and_update_policy()
        entry["cpp_warmup"] = max(1, args.cpp_warmup)
        entry["ms"]["cpp"] = _time(cpp.evaluate_and_update_policy, _no_sync,
                                   args.min_rep_seconds, max(3, args.reps // 2))
    entry["check"] = _check(tree, args)
    entry["median_ms"] = {k: statistics.median(v) for k, v in entry["ms"].items()}
    return entry


def _iterated(solver: TensorCFRSolver, iterations: int) -> TensorCFRSolver:
    solver.iterate(iterations)
    return solver


def _check(tree: Any, args: argparse.Namespace) -> dict[str, float | bool]:
    """The same state with and without the graph / the static passes (fresh solvers,
    ``--check-iterations`` iterations)."""
    if args.cpu_only:
        fresh = {"cpu": TensorCFRSolver(tree, threads=1),
                 "cpu_static": _StaticSolver(tree, threads=1)}
    else:
        fresh = {name: TensorCFRSolver(tree, device=device, cuda_graph=graphed, threads=1)
                 for name, device, graphed in (("cpu", "cpu", False), ("gpu", "cuda", False),
                                               ("gpu_graph", "cuda", True))}
        fresh["gpu_graph_levels"] = _LevelGraphSolver(tree, device="cuda", cuda_graph=True,
                                                      threads=1)
        fresh["gpu_graph_streams"] = _StreamsGraphSolver(tree, device="cuda", cuda_graph=True,
                                                         threads=1)
    for name, solver in list(fresh.items()):
        try:
            solver.iterate(args.check_iterations)
        except Exception:  # noqa: BLE001 - the side-stream variant is optional
            if name != "gpu_graph_streams":
                raise
            del fresh[name]
    states = _states(fresh)
    if args.cpu_only:
        return {"static_equals_cpu_bitwise": all(
            torch.equal(states["cpu_static"][k], states["cpu"][k]) for k in states["cpu"]),
            "static_vs_cpu_max_abs_diff": _max_abs_diff(states["cpu_static"], states["cpu"])}
    return {"graph_vs_gpu_max_abs_diff": _max_abs_diff(states["gpu_graph"], states["gpu"]),
            "graph_vs_cpu_max_abs_diff": _max_abs_diff(states["gpu_graph"], states["cpu"]),
            "graph_levels_vs_gpu_max_abs_diff": _max_abs_diff(states["gpu_graph_levels"],
                                                              states["gpu"]),
            "graph_streams_vs_gpu_max_abs_diff": (
                _max_abs_diff(states["gpu_graph_streams"], states["gpu"])
                if "gpu_graph_streams" in states else float("nan"))}


def _ms(m: dict[str, float], key: str) -> str:
    return "—" if key not in m else f"{m[key]:.3f}"


def render(results: list[dict], cpu_only: bool) -> str:
    if cpu_only:
        lines = ["| game | nodes | kernels static (levels) | CPU default ms | CPU static ms | "
                 "CPU static levels ms | OpenSpiel C++ ms | static = default bitwise |",
                 "|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in results:
            m, k = r["median_ms"], r["kernels"]
            lines.append(
                f"| {r['game']} | {r['nodes']:,} | {k['static']['total']} "
                f"({k['static_levels']['total']}) | {_ms(m, 'cpu')} | {_ms(m, 'cpu_static')} | "
                f"{_ms(m, 'cpu_static_levels')} | {_ms(m, 'cpp')} | "
                f"{r['check']['static_equals_cpu_bitwise']} |")
        return "\n".join(lines) + "\n"
    lines = ["| game | nodes | kernels (levels) | CPU 1 thread ms | GPU ms | GPU static eager ms "
             "| GPU graph levels ms | GPU graph ms | GPU graph streams ms | OpenSpiel C++ ms "
             "| graph vs levels graph | graph vs CPU | graph x C++ | graph - eager max abs diff "
             "| streams - eager |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        m, k = r["median_ms"], r["kernels"]
        cpp, graphed = m.get("cpp"), m["gpu_graph"]
        lines.append(
            f"| {r['game']} | {r['nodes']:,} | {k['static']['total']} "
            f"({k['static_levels']['total']}) | {m['cpu']:.3f} | {m['gpu']:.3f} | "
            f"{m['gpu_static_eager']:.3f} | {m['gpu_graph_levels']:.3f} | "
            f"**{graphed:.3f}** | {_ms(m, 'gpu_graph_streams')} | "
            f"{'—' if cpp is None else f'{cpp:.1f}'} | "
            f"{m['gpu_graph_levels'] / graphed:.2f}x | {m['cpu'] / graphed:.1f}x | "
            f"{'—' if cpp is None else f'{cpp / graphed:.0f}x'} | "
            f"{r['check']['graph_vs_gpu_max_abs_diff']:.1e} | "
            f"{r['check'].get('graph_streams_vs_gpu_max_abs_diff', float('nan')):.1e} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", default="leduc_poker,liars_dice,tic_tac_toe")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--min-rep-seconds", type=float, default=0.3)
    parser.add_argument("--check-iterations", type=int, default=20)
    parser.add_argument("--cpp-max-nodes", type=int, default=1_000_000)
    parser.add_argument("--cpp-warmup", type=int, default=30,
                        help="untimed OpenSpiel C++ iterations before its timing (steady state)")
    parser.add_argument("--cpu-only", action="store_true",
                        help="no GPU: operator counts and CPU timings only")
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args(argv)
    if not args.cpu_only and not torch.cuda.is_available():
        print("error: no CUDA device (--cpu-only measures the CPU side)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    report = {"device": "cpu" if args.cpu_only else torch.cuda.get_device_name(),
              "torch": torch.__version__, "cpu_count": os.cpu_count(),
              "threads": torch.get_num_threads(), "load_start": os.getloadavg()[0],
              "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "games": []}
    for game in args.games.split(","):
        report["games"].append(bench_game(game, args))
        print(render(report["games"][-1:], args.cpu_only), flush=True)
        report["load_end"] = os.getloadavg()[0]
        if args.out:  # after each game: a run cut short keeps what it measured
            _write_json(report, args.out)
    print(render(report["games"], args.cpu_only))
    return 0


def _write_json(report: dict, path: str) -> None:
    """Write ``report`` atomically (a temporary file, then a rename)."""
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=1)
    os.replace(temporary, path)


if __name__ == "__main__":
    raise SystemExit(main())
