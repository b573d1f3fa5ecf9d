"""One exact full-game CFR+ iteration of Numeral211 on one thread: a baseline commit against
this tree, side by side in one invocation, and this tree's iterates against the torch rules.

1. **Timing** (alternating): ``--rounds`` times, a child process with the baseline's
   ``src/`` (``--baseline-commit``, extracted with ``git archive``) and then one with this
   tree's each build the paper's 40-card game, allocate :func:`make_solver` (per-class
   storage, CFR+, float32, the CLI's defaults) and time ``--iterations`` iterations one by
   one (wall and process CPU seconds) after one untimed warm-up iteration (the first touch
   of every buffer).  Both run with the same threads (``--threads``, default 1) and the same
   environment; load averages are recorded before and after each child.
2. **Iterates** (``--check K``): in one process of this tree, K iterations with
   ``ClassStorageCFR.compiled = False`` (exactly the torch rules of the baseline) and K with
   the compiled node updates; every regret, average, strategy and value-scale entry is
   compared (bitwise flag and largest absolute difference).
3. **Profile** (``--profile K``): per-phase CPU seconds of K iterations in each tree
   (showdowns, folds, chance maps, torch updates and regret matching or the compiled node
   updates, the rest of the pass).

Writes a JSON record (default ``docs/benchmarks/numeral211_iteration.json``) and prints a
markdown table.  A full-game child peaks near 4.7 GiB; run it alone, niced::

    nice -n 10 .venv/bin/python benchmarks/bench_numeral211_iteration.py [--rounds 2]
        [--iterations 3] [--check 2] [--profile 2] [--baseline-commit 0abe304]
        [--ranks 23456789TA]
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


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _time_worker(iterations: int, ranks: str) -> dict[str, Any]:
    """Child: build, allocate, one warm-up iteration, then ``iterations`` timed ones."""
    import torch

    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.utils.resources import peak_rss_mb

    load_before = _load()
    game = n211.build_game(GameConfig(ranks=ranks), dtype=torch.float32)
    solver = n211.make_solver(game, "cfr+")
    started = time.perf_counter()
    solver.iterate(1)
    warm_up = time.perf_counter() - started
    wall, cpu = [], []
    for _ in range(iterations):
        t0, c0 = time.perf_counter(), time.process_time()
        solver.iterate(1)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"wall": wall, "cpu": cpu, "warm_up": warm_up, "threads": torch.get_num_threads(),
            "compiled": bool(getattr(solver, "compiled", False)),
            "peak_rss_gib": peak_rss_mb() / 1024, "load_before": load_before,
            "load_after": _load()}


def _check_worker(iterations: int, ranks: str) -> dict[str, Any]:
    """This tree: ``iterations`` with the torch rules, then with the kernels; differences."""
    import numpy as np
    import torch

    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.games.numeral211.solving import solver as n211

    game = n211.build_game(GameConfig(ranks=ranks), dtype=torch.float32)
    names = ("regrets", "average", "strategy", "regret_scale")
    states = []
    for compiled in (False, True):
        solver = n211.make_solver(game, "cfr+")
        solver.compiled = compiled
        solver.iterate(iterations)
        states.append({name: [t.numpy().copy() for t in getattr(solver, name)]
                       for name in names})
        del solver
    out: dict[str, Any] = {"iterations": iterations, "tables": {}}
    for name in names:
        pairs = list(zip(states[0][name], states[1][name]))
        out["tables"][name] = {
            "bitwise_equal": all(np.array_equal(a, b) for a, b in pairs),
            "max_abs_difference": max(float(np.abs(a - b).max()) for a, b in pairs),
            "max_abs_value": max(float(np.abs(a).max()) for a, _ in pairs)}
    out["bitwise_equal"] = all(t["bitwise_equal"] for t in out["tables"].values())
    out["max_abs_difference"] = max(t["max_abs_difference"] for t in out["tables"].values())
    return out


def _profile_worker(iterations: int, ranks: str) -> dict[str, Any]:
    """Child: CPU seconds (thread time) per iteration in each phase of a pass, by wrapping
    the class game's evaluators, the torch update rules, regret matching and (this tree)
    the fused node update; "rest" is the pass's own node arithmetic and dispatch."""
    import collections

    import torch

    import tensorcfr.core.public_tree as pt
    from tensorcfr.games.numeral211.game.class_game import Numeral211ClassGame
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.games.numeral211.solving import solver as n211

    spent: dict[str, float] = collections.defaultdict(float)

    def wrap(owner: Any, name: str, label: str) -> None:
        if not hasattr(owner, name):
            return
        inner = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.thread_time()
            try:
                return inner(*a, **k)
            finally:
                spent[label] += time.thread_time() - t0
        setattr(owner, name, timed)

    wrap(Numeral211ClassGame, "final_values", "showdowns")
    wrap(Numeral211ClassGame, "terminal_values", "folds")
    wrap(Numeral211ClassGame, "chance_forward", "chance maps")
    wrap(Numeral211ClassGame, "chance_backward", "chance maps")
    wrap(pt, "update_regrets", "regret and average updates (torch)")
    wrap(pt, "update_average", "regret and average updates (torch)")
    wrap(pt.PublicTreeCFR, "_refresh_strategy", "regret matching (torch)")
    wrap(n211.ClassStorageCFR, "fused_node_update", "fused node updates (compiled)")
    game = n211.build_game(GameConfig(ranks=ranks), dtype=torch.float32)
    solver = n211.make_solver(game, "cfr+")
    if type(solver)._refresh_strategy is not pt.PublicTreeCFR._refresh_strategy:
        wrap(type(solver), "_refresh_strategy", "regret matching (compiled)")
    solver.iterate(1)
    spent.clear()
    c0 = time.process_time()
    solver.iterate(iterations)
    cpu = (time.process_time() - c0) / iterations
    phases = {k: v / iterations for k, v in spent.items()}
    phases["rest: node arithmetic, reach products, dispatch"] = cpu - sum(phases.values())
    return {"cpu": cpu, "phases": phases, "load": _load()}


def _baseline_src(commit: str, folder: Path) -> Path:
    """``src/`` of ``commit`` extracted into ``folder`` (git archive)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src"],
                             check=True, capture_output=True).stdout
    tar_path = folder / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def _child(src: Path, part: str, args: argparse.Namespace, count: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", part, "--count",
           str(count), "--threads", str(args.threads), "--ranks", args.ranks]
    done = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _table(result: dict[str, Any]) -> str:
    lines = ["| run | tree | wall s / iteration (each) | CPU s / iteration (mean) | "
             "load before / after |", "|---|---|---|---:|---|"]
    for i, run in enumerate(result["runs"]):
        lines.append(f"| {i + 1} | {run['tree']} | "
                     + ", ".join(f"{w:.2f}" for w in run["wall"])
                     + f" | {_mean(run['cpu']):.2f} | {run['load_before']} / "
                     f"{run['load_after']} |")
    for tree in ("baseline", "this tree"):
        runs = [r for r in result["runs"] if r["tree"] == tree]
        wall = [w for r in runs for w in r["wall"]]
        cpu = [c for r in runs for c in r["cpu"]]
        lines.append(f"| all | **{tree}** | mean {_mean(wall):.2f}, min {min(wall):.2f} | "
                     f"**{_mean(cpu):.2f}** (min {min(cpu):.2f}) | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--check", type=int, default=2,
                        help="iterations of the iterate comparison (0: skip it)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ranks", default="23456789TA",
                        help="rank letters of the deck (a smaller deck for a smoke test)")
    parser.add_argument("--baseline-commit", default="0abe304")
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/numeral211_iteration.json"))
    parser.add_argument("--profile", type=int, default=0,
                        help="also time each phase over this many iterations, both trees")
    parser.add_argument("--worker", choices=["time", "check", "profile"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from tensorcfr.utils.resources import set_threads

    set_threads(args.threads)
    if args.worker:
        work = {"time": _time_worker, "check": _check_worker,
                "profile": _profile_worker}[args.worker]
        print(json.dumps(work(args.count, args.ranks)), flush=True)
        return
    from tensorcfr.utils.machine import machine_line

    result: dict[str, Any] = {"machine": machine_line(), "threads": args.threads,
                              "ranks": args.ranks, "baseline_commit": args.baseline_commit,
                              "argv": sys.argv[1:], "load_before": _load(), "runs": []}
    here = ROOT / "src"
    with tempfile.TemporaryDirectory() as tmp:
        old = _baseline_src(args.baseline_commit, Path(tmp))
        for _ in range(args.rounds):
            for tree, src in (("baseline", old), ("this tree", here)):
                run = _child(src, "time", args, args.iterations)
                run["tree"] = tree
                result["runs"].append(run)
                print(json.dumps(run), flush=True)
        if args.profile:
            result["profile"] = {tree: _child(src, "profile", args, args.profile)
                                 for tree, src in (("baseline", old), ("this tree", here))}
            print(json.dumps(result["profile"]), flush=True)
    if args.check:
        result["check"] = _child(here, "check", args, args.check)
        print(json.dumps(result["check"]), flush=True)
    result["load_after"] = _load()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(_table(result))
    for tree, info in result.get("profile", {}).items():
        print(f"{tree}: CPU {info['cpu']:.2f} s/iteration: " + ", ".join(
            f"{k} {v:.2f}" for k, v in sorted(info["phases"].items(), key=lambda kv: -kv[1])))
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
