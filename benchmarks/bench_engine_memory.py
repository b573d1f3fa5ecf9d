"""Memory of the generic engine's solvers against OpenSpiel's C++ ``CFRSolver`` (issue 30, item 2).

Every configuration runs in its own fresh process, one thread (torch, OMP, MKL).  Each
process imports torch, pyspiel and ``tensorcfr.games.openspiel.solvers``, loads the game
and reads ``/proc/self/status``: that RSS is the **baseline**.  It then builds the solver
(for ours: the walk of the OpenSpiel tree, the solver's set-up and, for the compiled
passes, numba's import and the loading of its cached code all count), runs ``N``
iterations and reads the status again.  Reported, in MiB above the baseline:

* ``peak``: ``VmHWM`` (the process's peak resident set) minus the baseline ``VmRSS``: the
  issue's figure;
* ``anon``: the growth of ``RssAnon`` (data: the heap, tensors, numba's LLVM state), without
  the library code pages the run touched;
* ``file``: the growth of ``RssFile`` (library code and data pages touched for the first
  time: torch's kernels, libllvmlite);
* phases of ours: RSS after the walk (``tree``) and after the solver's set-up (``solver``).

Before each process the large libraries are read into the page cache (:func:`warm_page_cache`):
the *file* part otherwise drifts with what other processes evicted.

Configurations:

* ``cpp``: ``pyspiel.CFRSolver(game)``;
* ``lean``: ``TensorCFRSolver(game, passes="lean")``: the memory-lean passes
  (:mod:`tensorcfr.core.lean_passes`, no per-node state between iterations);
* ``torch``: ``TensorCFRSolver(game)`` with ``numba_min_nodes = None`` (the torch passes: what
  the GPU runs and what a memory-bound CPU user gets);
* ``fused``: ``TensorCFRSolver(game)`` as it is by default (from 100,000 nodes on CPU the
  compiled passes: ``info["compiled_passes"]`` says which kind);
* ``torch_f32``: the torch passes in float32 (half of every float array; not bitwise the
  float64 results: a user's trade, for reference);
* ``numba_import``: ``import numba`` and nothing else (no game walk): numba's import alone;
* ``numba_trivial``: numba with one trivial cached function called (:func:`trivial_compiled_call`):
  what running any compiled code costs, whatever the code;
* ``numba_fused``: numba with the default compiled passes' code loaded (forced on
  ``kuhn_poker``, a few dozen nodes, so the data is negligible);
* ``numba_both``: the same with the level passes' compiled code loaded as well (what
  ``bench_engine.py``'s *numba runtime only* row measures).

Usage (the figures of docs/benchmarks/engine_memory.md; ``--old-src``: the torch and
default configurations of earlier code in the same run, as ``before:`` rows)::

    git worktree add --detach /tmp/memory_old <commit>
    nice -n 10 .venv/bin/python benchmarks/bench_engine_memory.py --games liars_dice \\
        --reps 3 --old-src /tmp/memory_old/src --out docs/benchmarks/engine_memory.json

Linux only (reads /proc/self/status).
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

CONFIGS = ("cpp", "lean", "torch", "fused", "torch_f32", "numba_import", "numba_trivial", "numba_fused",
           "numba_both")

_WORKER = r"""
import json, sys, time
config, game_string, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
BENCHMARKS = sys.argv[4]

from tensorcfr.bench._worker import read_memory_fields as memory  # (stdlib only)

import torch
torch.set_num_threads(1)
import pyspiel
if config in ("numba_fused", "numba_both"):
    game_string = "kuhn_poker"
game = pyspiel.load_game(game_string)
from tensorcfr.games.openspiel.flatten import flatten_game
from tensorcfr.games.openspiel.solvers import TensorCFRSolver
baseline = memory()
phases = {}
info = {}
started = time.perf_counter()
if config == "cpp":
    solver = pyspiel.CFRSolver(game)
elif config == "numba_import":
    import numba
    solver = None
elif config == "numba_trivial":
    sys.path.insert(0, BENCHMARKS)
    import bench_engine_memory
    bench_engine_memory.trivial_compiled_call()
    solver = None
else:
    tree = flatten_game(game)
    phases["tree"] = memory()
    attributes = {}
    kwargs = {"passes": "lean"} if config == "lean" else {}
    if config in ("torch", "torch_f32"):
        attributes = {"numba_min_nodes": None}
    elif config in ("numba_fused", "numba_both"):
        attributes = {"numba_min_nodes": 0, "numpy_fast_path_max_nodes": -1}
    cls = type("Configured", (TensorCFRSolver,), attributes)
    solver = cls(tree, algo="cfr", dtype="float32" if config == "torch_f32" else "float64",
                 **kwargs)
    del tree
    if config == "numba_both":  # load the level passes' compiled code too
        from tensorcfr.core.numba_passes import LevelPasses
        level = LevelPasses(solver)
        level.values_and_regrets(0)
        level.regret_matching(0, solver._regret_views[0].numpy())
        level.refresh_player(0)
        del level
    phases["solver"] = memory()
    info = {"nodes": solver.tree.num_nodes, "uses_numba": solver.uses_numba,
            "compiled_passes": (solver._numba_passes.kind if solver.uses_numba else None),
            "passes": getattr(solver, "passes", "auto"),
            "dtype": str(solver.dtype).removeprefix("torch.")}
setup = time.perf_counter() - started
started = time.perf_counter()
if solver is not None:
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
seconds = time.perf_counter() - started
print(json.dumps({"baseline": baseline, "phases": phases, "end": memory(), "info": info,
                  "setup_s": setup, "iterate_s": seconds}))
"""


def trivial_compiled_call() -> int:
    """Call a one-line function compiled by numba with the compiled passes' settings
    (``tensorcfr.core.jit.njit``, cached on disk): what numba costs a process that runs
    any compiled code at all, whatever the code."""
    from tensorcfr.core.jit import njit

    @njit
    def add_one(x: int) -> int:  # pragma: no cover - compiled
        return x + 1

    return int(add_one(1))


_LIBRARIES = ("torch/lib/libtorch_cpu.so", "torch/lib/libtorch_python.so",
              "llvmlite/binding/libllvmlite.so", "pyspiel.so")


def warm_page_cache() -> None:
    """Read the large libraries the workers map (torch, llvmlite, pyspiel) into the page
    cache.  A fault in a file mapping also maps the neighbouring pages that are already
    cached (the kernel's fault-around), so on a machine whose other processes evict the
    cache the *file* figure of the same run drifts by +-20 MiB; with the files cached it
    is steady, as on a machine where they stay hot."""
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    buffer = bytearray(1 << 20)
    for name in _LIBRARIES:
        try:
            with open(site / name, "rb", buffering=0) as library:
                while library.readinto(buffer):
                    pass
        except OSError:
            continue


def run_config(config: str, game: str, iterations: int, src: Path = REPO / "src") -> dict:
    """One configuration in a fresh process (the code of ``src``); its JSON line as a dict."""
    warm_page_cache()
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(src))
    done = subprocess.run([sys.executable, "-c", _WORKER, config, game, str(iterations),
                           str(Path(__file__).resolve().parent)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{config} on {game} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarize(raw: dict) -> dict:
    """MiB above the baseline: peak (VmHWM), anon and file growth, and the phases."""
    base, end = raw["baseline"], raw["end"]
    out = {"peak_mb": end["VmHWM"] - base["VmRSS"],
           "anon_mb": end["RssAnon"] - base["RssAnon"],
           "file_mb": end["RssFile"] - base["RssFile"],
           "baseline_rss_mb": base["VmRSS"], "setup_s": raw["setup_s"],
           "iterate_s": raw["iterate_s"], "info": raw["info"]}
    for phase, status in raw["phases"].items():
        out[f"{phase}_rss_mb"] = status["VmRSS"] - base["VmRSS"]
    return out


def bench_game(game: str, configs: list[str], iterations: int, reps: int,
               old_src: Path | None = None, old_configs: tuple[str, ...] = ()) -> dict:
    """``reps`` processes per configuration, round-robin; the median of each figure.
    ``old_configs`` run a second time with the code of ``old_src`` (as ``old:<config>``)."""
    runs: dict[str, list[dict]] = {c: [] for c in configs}
    runs.update({f"old:{c}": [] for c in old_configs})
    for _ in range(reps):
        for name in runs:
            config = name.removeprefix("old:")
            src = old_src if name.startswith("old:") and old_src else REPO / "src"
            runs[name].append(summarize(run_config(config, game, iterations, src)))
    result: dict = {"game": game, "configs": {}}
    for config, entries in runs.items():
        merged = {key: statistics.median(e[key] for e in entries)
                  for key, value in entries[0].items() if isinstance(value, (int, float))}
        merged["info"] = entries[0]["info"]
        merged["peak_mb_reps"] = [e["peak_mb"] for e in entries]
        result["configs"][config] = merged
    cpp = result["configs"].get("cpp")
    if cpp and cpp["peak_mb"] > 0:
        for entry in result["configs"].values():
            entry["peak_vs_cpp"] = entry["peak_mb"] / cpp["peak_mb"]
    return result


_NAMES = {"cpp": "OpenSpiel C++ `CFRSolver`", "lean": "lean passes (`passes=\"lean\"`)",
          "torch": "torch passes (`numba_min_nodes = None`)",
          "fused": "default: compiled passes", "torch_f32": "torch passes, float32",
          "numba_import": "`import numba` alone",
          "numba_trivial": "numba + one trivial cached function called",
          "numba_fused": "numba + the default compiled passes' code (kuhn)",
          "numba_both": "numba + the level passes' code as well (kuhn)"}


def render(report: dict) -> str:
    """The markdown table of a report."""
    lines = ["| game | configuration | peak above baseline MiB | x C++ | anon MiB | file MiB | "
             "after walk MiB | after set-up MiB |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for game in report["games"]:
        for name, e in game["configs"].items():
            ratio = e.get("peak_vs_cpp")
            tree = e.get("tree_rss_mb")
            built = e.get("solver_rss_mb")
            label = (f"before: {_NAMES[name[4:]]}" if name.startswith("old:")
                     else _NAMES.get(name, name))
            lines.append(
                f"| {game['game']} | {label} | {e['peak_mb']:.1f} | "
                f"{'—' if ratio is None else f'{ratio:.1f}x'} | {e['anon_mb']:.1f} | "
                f"{e['file_mb']:.1f} | {'—' if tree is None else f'{tree:.1f}'} | "
                f"{'—' if built is None else f'{built:.1f}'} |")
    return "\n".join(lines) + "\n"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", default="liars_dice")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--reps", type=int, default=1, help="processes per configuration")
    parser.add_argument("--old-src", type=Path, default=None,
                        help="src folder of earlier code (e.g. a `git worktree add --detach "
                             "/tmp/old <commit>`'s src): --old-configs run with it too")
    parser.add_argument("--old-configs", default="torch,fused")
    parser.add_argument("--out", type=Path, default=None, help="write the report (JSON) here")
    args = parser.parse_args(argv)
    old_configs = tuple(c for c in args.old_configs.split(",") if c) if args.old_src else ()
    configs = [c for c in args.configs.split(",") if c]
    unknown = sorted((set(configs) | set(old_configs)) - set(CONFIGS))
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(CONFIGS)}")
    started = time.time()
    report: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "load_start": os.getloadavg()[0], "machine": platform.platform(),
        "cpus": os.cpu_count(), "commit": _git("rev-parse", "--short", "HEAD"),
        "iterations": args.iterations, "reps": args.reps, "threads": 1,
        "old_src": None if args.old_src is None else str(args.old_src),
        "games": [bench_game(g, configs, args.iterations, args.reps, args.old_src, old_configs)
                  for g in args.games.split(",") if g],
    }
    report["load_end"] = os.getloadavg()[0]
    report["seconds"] = time.time() - started
    print(render(report), end="")
    print(f"load {report['load_start']:.1f} -> {report['load_end']:.1f}, "
          f"{report['seconds']:.0f} s, commit {report['commit']}")
    if args.out is not None:
        from tensorcfr.utils.io import write_text_atomic

        write_text_atomic(args.out, json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
