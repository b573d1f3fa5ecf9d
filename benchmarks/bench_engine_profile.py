"""Where one CFR iteration of the generic engine spends its time, one thread (CPU).

For the torch passes (``numba_min_nodes = None``): ``torch.profiler`` over a few iterations,
the operators' own time grouped as *index arithmetic* (gathers and scatters:
``index_select``, ``scatter_add_``, ``scatter_``, ``index_add_``, ``index_copy_``,
``gather``), *arithmetic* (``mul``, ``sub``, ``add``, ``where``, ``abs``, ``div``,
comparisons, ``clamp``), *allocation and fills* (``empty``, ``zero_``, ``fill_``, ``copy_``)
and *views* (``slice``, ``as_strided``, ``expand``, ...), and the rest of the wall time
as *Python and dispatch* (the interpreter and torch's per-call overhead outside the
kernels); wall time, so a loaded machine inflates every group alike.  For the compiled
passes (``TensorCFRSolver.compiled_passes``: ``level``, ``fused`` and ``pruned``, the
default on CPU from 100k nodes), in the same process, after 30 iterations: for the level
and fused passes the process CPU time of each pass (values and regrets, the torch discount
and average, regret matching, edges and reach), best of ``--reps``; for the pruned passes
(:mod:`tensorcfr.core.pruned_passes`) the CPU time of each compiled step summed over ``10 x
--iterations`` real iterations (their steps depend on what the previous one revived), per
iteration; and what the iteration spends outside them.

Usage::

    nice -n 10 .venv/bin/python benchmarks/bench_engine_profile.py --games liars_dice,tic_tac_toe
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import torch

GROUPS = {
    "index": ("index_select", "scatter_add_", "scatter_", "index_add_", "index_copy_", "gather",
              "index_put_", "scatter_add", "index"),
    "arithmetic": ("mul", "mul_", "sub", "sub_", "add", "add_", "where", "abs", "div", "div_",
                   "gt", "ge", "lt", "clamp_min_", "clamp_min", "maximum", "reciprocal"),
    "allocation": ("empty", "empty_like", "zero_", "fill_", "copy_", "zeros", "clone", "to",
                   "_to_copy", "empty_strided", "resize_"),
    "views": ("slice", "as_strided", "expand", "select", "view", "narrow", "t", "transpose",
              "unsqueeze", "squeeze", "reshape", "alias", "detach", "lift_fresh"),
}


def _group(name: str) -> str:
    short = name.removeprefix("aten::")
    for group, names in GROUPS.items():
        if short in names:
            return group
    return "other ops"


def profile_torch(solver: object, iterations: int) -> dict:
    """Operator self-CPU time per group and the wall time of ``iterations`` iterations."""
    from torch.profiler import ProfilerActivity, profile

    step = solver.evaluate_and_update_policy  # type: ignore[attr-defined]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        started = time.perf_counter()
        for _ in range(iterations):
            step()
        wall = time.perf_counter() - started
    groups: dict[str, float] = defaultdict(float)
    calls = 0
    for event in prof.key_averages():
        groups[_group(event.key)] += event.self_cpu_time_total / 1e3
        calls += event.count
    per_iteration = {k: v / iterations for k, v in groups.items()}
    total_ops = sum(per_iteration.values())
    wall_ms = wall * 1e3 / iterations
    per_iteration["python and dispatch"] = max(wall_ms - total_ops, 0.0)
    return {"wall_ms_profiled": wall_ms, "ops_per_iteration": calls / iterations,
            "groups_ms": dict(sorted(per_iteration.items(), key=lambda kv: -kv[1]))}


def profile_numba(solver: object, reps: int) -> dict:
    """Best-of-``reps`` process CPU time of each pass of the compiled path, per iteration
    (both players), the whole iteration, and what is left of it outside the passes
    (Python, the calls' argument checks)."""
    passes = solver._numba_passes  # type: ignore[attr-defined]
    players = range(solver._flat.num_players)  # type: ignore[attr-defined]

    def best(function: object) -> float:
        times = []
        for _ in range(reps):
            started = time.process_time()
            function()  # type: ignore[operator]
            times.append(time.process_time() - started)
        return min(times) * 1e3

    fused = passes.kind == "fused"
    parts = {
        ("values and regrets, bottom-up" if fused else "values and regrets"):
            lambda: [passes.values_and_regrets(p) for p in players],
        "discount and average (torch)": lambda: [solver._finish_update(p)  # type: ignore
                                                 for p in players],
        "regret matching": lambda: [
            passes.regret_matching(p, solver._regret_views[p].numpy())  # type: ignore
            for p in players],
        ("reach, top-down" if fused else "edges and reach"):
            lambda: [passes.refresh_player(p) for p in players],
    }
    out = {name: best(function) for name, function in parts.items()}
    out["whole iteration"] = best(solver.evaluate_and_update_policy)  # type: ignore
    out["outside the passes"] = max(out["whole iteration"]
                                    - sum(v for k, v in out.items() if k != "whole iteration"),
                                    0.0)
    return out


def profile_pruned(solver: object, iterations: int) -> dict[str, float]:
    """CPU ms per iteration of each compiled step of the pruned passes over ``iterations``
    real iterations (each step's module function wrapped with a process-time counter)."""
    from tensorcfr.core import pruned_passes

    steps = {"_values_and_regrets": "values and regrets over the live list",
             "_sparse_finish": "sparse average, floor, regret matching",
             "_refresh": "top-down: reach refreshed, segments relisted",
             "_rebuild": "top-down: whole list rebuilt",
             "_mark_segments": "revived actions to segments"}
    spent = dict.fromkeys(steps, 0.0)
    originals = {name: getattr(pruned_passes, name) for name in steps}

    def timed(name: str):  # type: ignore[no-untyped-def]
        def call(*args):  # type: ignore[no-untyped-def]
            started = time.process_time()
            result = originals[name](*args)
            spent[name] += time.process_time() - started
            return result
        return call

    for name in steps:
        setattr(pruned_passes, name, timed(name))
    try:
        started = time.process_time()
        solver.iterate(iterations)  # type: ignore[attr-defined]
        whole = time.process_time() - started
    finally:
        for name, function in originals.items():
            setattr(pruned_passes, name, function)
    out = {label: spent[name] / iterations * 1e3 for name, label in steps.items()}
    out["whole iteration"] = whole / iterations * 1e3
    out["outside the steps"] = max(out["whole iteration"] - sum(
        spent.values()) / iterations * 1e3, 0.0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", default="liars_dice,tic_tac_toe")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.games.openspiel import flatten_game

    class TorchPasses(TensorCFRSolver):
        numba_min_nodes = None

    report = {}
    for game in args.games.split(","):
        tree = flatten_game(game)
        torch_solver = TorchPasses(tree)
        torch_solver.iterate(2)
        report[game] = {"torch passes": profile_torch(torch_solver, args.iterations)}
        del torch_solver
        for kind in ("level", "fused", "pruned"):
            cls = type("Compiled", (TensorCFRSolver,), {"compiled_passes": kind})
            compiled = cls(tree)
            if not compiled.uses_numba or compiled._numba_passes.kind != kind:
                continue
            compiled.iterate(30)  # (past the first, unpruned iterations)
            report[game][f"compiled passes ({kind})"] = (
                profile_pruned(compiled, 10 * args.iterations) if kind == "pruned"
                else profile_numba(compiled, args.reps))
            del compiled
        if not args.json:
            entry = report[game]["torch passes"]
            print(f"{game}: torch passes, {entry['wall_ms_profiled']:.2f} wall ms/iteration "
                  f"under the profiler, {entry['ops_per_iteration']:.0f} operator calls")
            for name, ms in entry["groups_ms"].items():
                share = 100 * ms / entry["wall_ms_profiled"]
                print(f"  {name:24s} {ms:7.2f} ms {share:5.1f} %")
            for kind in ("level", "fused", "pruned"):
                entry = report[game].get(f"compiled passes ({kind})")
                if entry:
                    how = (f"over {10 * args.iterations} iterations" if kind == "pruned"
                           else f"best of {args.reps}")
                    print(f"{game}: compiled passes, {kind} ({how}, CPU ms per iteration)")
                    for name, ms in entry.items():
                        print(f"  {name:46s} {ms:7.2f} ms")
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
