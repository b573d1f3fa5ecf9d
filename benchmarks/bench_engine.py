"""The generic engine against its earlier code and OpenSpiel's C++ ``CFRSolver``, side by side.

One persistent worker process per solver and game, one thread each (torch, OMP, MKL);
the timed repetitions go round-robin over the workers in a rotating order, so the load of
a shared machine hits every solver alike: compare the ratios of one run.  Solvers:

* ``new``: ``TensorCFRSolver(game)`` of this checkout (CPU, trees from 100k nodes: the
  compiled passes, the pruned ones of ``tensorcfr.core.pruned_passes`` where they apply:
  the histories no player reaches skipped, as OpenSpiel's own CFR skips them);
* ``new_fused``: the same with ``compiled_passes = "fused"`` (every history, one flat
  layout: the default before the pruned passes);
* ``new_level``: the same with ``compiled_passes = "level"`` (the per-level loops: the
  compiled passes before the fused ones);
* ``new_torch``: the same with ``numba_min_nodes = None`` (the torch passes);
* ``new_lean``: ``TensorCFRSolver(game, passes="lean")`` (the memory-lean passes of
  ``tensorcfr.core.lean_passes``: no per-node state between iterations);
* ``numba_runtime``: memory only: the compiled passes forced on ``kuhn_poker`` (a few
  dozen nodes), so its growth above the baseline is numba's own (the import, LLVM, the
  cached compiled code of both engines), the fixed cost per process that ``new`` pays
  on top of its data;
* ``old``: ``TensorCFRSolver(game)`` of another copy of the code (``--old-src``, e.g. a
  ``git worktree add --detach /tmp/engine_old <commit>``'s ``src``);
* ``cpp``: OpenSpiel's C++ ``pyspiel.CFRSolver``.

Every solver runs vanilla CFR with alternating updates (float64 for ours), first
``--warmup`` iterations (30) untimed: OpenSpiel's solver and the pruned passes both skip
more histories once the strategies have settled (OpenSpiel's first iteration on
tic_tac_toe takes about 4x its 30th), so every solver is timed past that.  Per worker:
set-up seconds, ms per iteration (wall and process CPU, medians over repetitions; the
paired ratio to ``cpp`` is the median of the per-repetition ratios) and memory: the RSS
after importing the libraries and loading the game (the *baseline*), the peak RSS
(``VmHWM``) after the timed iterations, and the anonymous (data) part of the growth
(``RssAnon``: what the solver allocated, without the library code it touched).  The
baseline is taken before the solver is built, so numba's import and the loading of its
compiled code count against ``new``; ``numba_runtime`` says how much of it that is.

Usage::

    nice -n 10 .venv/bin/python benchmarks/bench_engine.py --games liars_dice,tic_tac_toe \\
        --old-src /tmp/engine_old/src --out docs/benchmarks/engine.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, os, sys, time
solver_name, game_string = sys.argv[1], sys.argv[2]  # (argv[3]: warm-up iterations)

from tensorcfr.bench._worker import read_memory_fields as memory  # (stdlib only)

import torch
torch.set_num_threads(1)
import pyspiel
if solver_name == "numba_runtime":
    game_string = "kuhn_poker"
game = pyspiel.load_game(game_string)
if solver_name != "cpp":
    from tensorcfr.games.openspiel.solvers import TensorCFRSolver
baseline = memory()
started = time.perf_counter()
if solver_name == "cpp":
    solver = pyspiel.CFRSolver(game)
else:
    cls = TensorCFRSolver
    if solver_name == "new_torch":
        cls = type("TorchPasses", (TensorCFRSolver,), {"numba_min_nodes": None})
    if solver_name == "numba_runtime":
        cls = type("Compiled", (TensorCFRSolver,),
                   {"numba_min_nodes": 0, "numpy_fast_path_max_nodes": -1})
    if solver_name in ("new_fused", "new_level"):
        cls = type("Compiled", (TensorCFRSolver,),
                   {"compiled_passes": solver_name.split("_")[1]})
    solver = cls(game, algo="cfr", dtype="float64",
                 **({"passes": "lean"} if solver_name == "new_lean" else {}))
    if solver_name == "numba_runtime":  # load the level passes' compiled code too
        from tensorcfr.core.numba_passes import LevelPasses
        level = LevelPasses(solver)
        level.values_and_regrets(0)
        level.regret_matching(0, solver._regret_views[0].numpy())
        level.refresh_player(0)
        solver._refresh_all()
setup = time.perf_counter() - started
info = {}
for name in ("uses_numba", "uses_numpy_fast_path"):
    if hasattr(solver, name):
        info[name] = bool(getattr(solver, name))
if getattr(solver, "_numba_passes", None) is not None:
    info["compiled_passes"] = solver._numba_passes.kind
for _ in range(int(sys.argv[3])):  # (warm-up: OpenSpiel and the pruned passes skip
    solver.evaluate_and_update_policy()  # more histories after the first iterations)
print(json.dumps({"setup_s": setup, "baseline": baseline, "info": info}), flush=True)
for line in sys.stdin:
    count = int(line)
    if count <= 0:
        break
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        solver.evaluate_and_update_policy()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"wall_ms": wall / count * 1e3, "cpu_ms": cpu / count * 1e3,
                      "memory": memory()}), flush=True)
"""


class Worker:
    """One solver on one game in its own process (stdin: iteration counts, stdout: JSON)."""

    def __init__(self, solver: str, game: str, src: Path, warmup: int) -> None:
        # src first; the caller's PYTHONPATH after it (wheels installed with --target)
        path = os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=path)
        self.solver = solver
        self.process = subprocess.Popen([sys.executable, "-c", _WORKER, solver, game, str(warmup)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)
        self.ready = self._read()

    def _read(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.solver} ended (exit {self.process.wait()})")
        return json.loads(line)

    def run(self, count: int) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.write("0\n")
            self.process.stdin.close()
        self.process.wait(timeout=60)


def bench_game(game: str, solvers: list[str], sources: dict[str, Path], reps: int,
               min_rep_seconds: float, warmup: int = 30) -> dict:
    """Round-robin repetitions of every solver on ``game``; medians, paired ratios, memory."""
    workers = {}
    for name in solvers:  # set-up one at a time (the walk is memory-hungry)
        workers[name] = Worker(name, game, sources[name], warmup)
    counts = {}
    for name, worker in workers.items():  # iterations per repetition
        first = worker.run(1)
        counts[name] = (1 if name == "numba_runtime" else  # (memory only)
                        max(1, int(min_rep_seconds * 1e3 / max(first["wall_ms"], 1e-3))))
    samples: dict[str, list[dict]] = {name: [] for name in workers}
    order = list(workers)
    for rep in range(reps):
        rotated = order[rep % len(order):] + order[:rep % len(order)]
        for name in rotated:
            samples[name].append(workers[name].run(counts[name]))
    for worker in workers.values():
        worker.close()
    result: dict = {"game": game, "solvers": {}}
    for name, runs in samples.items():
        ready = workers[name].ready
        last = runs[-1]["memory"]
        base = ready["baseline"]
        result["solvers"][name] = {
            "setup_s": ready["setup_s"], "info": ready["info"],
            "iterations_per_rep": counts[name],
            "wall_ms": statistics.median(r["wall_ms"] for r in runs),
            "cpu_ms": statistics.median(r["cpu_ms"] for r in runs),
            "wall_ms_reps": [r["wall_ms"] for r in runs],
            "cpu_ms_reps": [r["cpu_ms"] for r in runs],
            "baseline_rss_mb": base["VmRSS"], "peak_rss_mb": last["VmHWM"],
            "peak_above_baseline_mb": last["VmHWM"] - base["VmRSS"],
            "anon_above_baseline_mb": last["RssAnon"] - base["RssAnon"],
            "file_above_baseline_mb": last["RssFile"] - base["RssFile"],
        }
    if "cpp" in samples:
        cpp = result["solvers"]["cpp"]
        for name, entry in result["solvers"].items():
            if name == "numba_runtime":
                entry["peak_above_baseline_mb_vs_cpp"] = None
                continue
            for kind in ("wall", "cpu"):
                ratios = [c / o for c, o in zip(cpp[f"{kind}_ms_reps"], entry[f"{kind}_ms_reps"])]
                entry[f"{kind}_speedup_vs_cpp"] = statistics.median(ratios)
            for kind in ("peak_above_baseline_mb", "anon_above_baseline_mb"):
                entry[f"{kind}_vs_cpp"] = (entry[kind] / cpp[kind] if cpp[kind] > 0 else None)
    return result


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def render(report: dict) -> str:
    """The markdown table of a report."""
    names = {"new": "new (pruned compiled passes)", "new_fused": "fused compiled passes",
             "new_level": "level compiled passes",
             "new_torch": "torch passes", "new_lean": "lean passes", "old": "old",
             "cpp": "OpenSpiel C++",
             "numba_runtime": "numba runtime only (kuhn_poker)"}
    lines = ["| game | solver | set-up s | ms/iter | CPU ms/iter | x C++ (wall) | "
             "x C++ (CPU) | above baseline MiB | anon above baseline MiB | mem / C++ |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for game in report["games"]:
        for name, entry in game["solvers"].items():
            ratio = entry.get("peak_above_baseline_mb_vs_cpp")
            if name == "numba_runtime":
                lines.append(
                    f"| {game['game']} | {names[name]} | {entry['setup_s']:.2f} | — | — | — | "
                    f"— | {entry['peak_above_baseline_mb']:.1f} | "
                    f"{entry['anon_above_baseline_mb']:.1f} | — |")
                continue
            lines.append(
                f"| {game['game']} | {names.get(name, name)} | {entry['setup_s']:.2f} | "
                f"{entry['wall_ms']:.2f} | {entry['cpu_ms']:.2f} | "
                f"{entry.get('wall_speedup_vs_cpp', float('nan')):.1f}x | "
                f"{entry.get('cpu_speedup_vs_cpp', float('nan')):.1f}x | "
                f"{entry['peak_above_baseline_mb']:.1f} | {entry['anon_above_baseline_mb']:.1f} | "
                f"{'—' if ratio is None else f'{ratio:.1f}x'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", default="liars_dice,tic_tac_toe")
    parser.add_argument("--solvers",
                        default="new,new_fused,new_level,new_torch,cpp,numba_runtime")
    parser.add_argument("--warmup", type=int, default=30,
                        help="iterations every solver runs before the timed ones")
    parser.add_argument("--old-src", type=Path, default=None,
                        help="src folder of the code to compare with (solver 'old')")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--min-rep-seconds", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=None, help="write the report (JSON) here")
    args = parser.parse_args()
    solvers = [s for s in args.solvers.split(",") if s]
    if "old" in solvers and args.old_src is None:
        parser.error("solver 'old' needs --old-src")
    sources = {name: REPO / "src" for name in solvers}
    if args.old_src is not None:
        sources["old"] = args.old_src.resolve()
    report: dict = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{_cpu_model()}, {os.cpu_count()} cores",
        "threads": 1, "load_start": os.getloadavg()[0],
        "git": _git("rev-parse", "--short", "HEAD"),
        "old_git": (subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                   cwd=args.old_src, capture_output=True, text=True).stdout.strip()
                    if args.old_src else None),
        "reps": args.reps, "warmup": args.warmup, "games": []}
    started = time.perf_counter()
    for game in [g for g in args.games.split(",") if g]:
        report["games"].append(bench_game(game, solvers, sources, args.reps,
                                          args.min_rep_seconds, args.warmup))
        print(render({"games": report["games"][-1:]}), flush=True)
    report["load_end"] = os.getloadavg()[0]
    report["run_s"] = time.perf_counter() - started
    print(f"load {report['load_start']:.2f} -> {report['load_end']:.2f}, "
          f"{report['run_s'] / 60:.1f} min")
    if args.out is not None:
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(json.dumps(report, indent=1) + "\n")
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
