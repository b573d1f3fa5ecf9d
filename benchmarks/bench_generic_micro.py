"""Micro-benchmark of the generic tensor CFR engine: per-iteration cost, setup, peak RSS.

Every measurement runs in a fresh subprocess (so ``ru_maxrss`` is that run's own peak) with
``torch.set_num_threads(1)``.  With ``--baseline-src DIR`` (a ``src`` directory holding
another copy of ``tensorcfr``, e.g. ``git archive HEAD src | tar -x -C /tmp/base``) each
game is measured with both versions, interleaved, and the ratios are printed: the machine
is shared, so only side-by-side ratios are meaningful.

Usage::

    .venv/bin/python benchmarks/bench_generic_micro.py --games kuhn_poker,leduc_poker \
        --baseline-src /tmp/base/src --seconds 3
    .venv/bin/python benchmarks/bench_generic_micro.py --games liars_dice,tic_tac_toe \
        --memory-only

Figures: ``cpu_ms`` / ``wall_ms`` per iteration (alternating vanilla CFR, float64; the best
of ``--reps`` repetitions), ``setup_s`` (walk + solver construction), ``peak_mb`` (process
peak RSS) and ``peak_above_import_mb`` (peak minus the RSS after importing torch, pyspiel
and tensorcfr).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_SRC = Path(__file__).resolve().parents[1] / "src"

_CHILD = r"""
import json, resource, sys, time
import torch
torch.set_num_threads(1)
import pyspiel
import tensorcfr
try:
    from tensorcfr.games.openspiel import TensorCFRSolver
except ImportError:  # a baseline from before the core stopped taking game strings
    from tensorcfr.core.solver import TensorCFRSolver
game, seconds, reps, memory_only = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
solver = TensorCFRSolver(game, algo="cfr", alternating=True, dtype=torch.float64)
setup_s = time.perf_counter() - t0
solver.evaluate_and_update_policy()
out = {"game": game, "setup_s": setup_s, "walk_s": solver.tree.setup_seconds,
       "nodes": solver.tree.num_nodes, "threads": torch.get_num_threads(),
       "tensorcfr": tensorcfr.__file__}
if not memory_only:
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < min(0.5, seconds / 4):
        solver.evaluate_and_update_policy(); n += 1
    per_iter = max((time.perf_counter() - t) / max(n, 1), 1e-6)
    iters = max(3, int(seconds / reps / per_iter))
    best_cpu = best_wall = float("inf")
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(iters):
            solver.evaluate_and_update_policy()
        best_cpu = min(best_cpu, (time.process_time() - c0) / iters * 1e3)
        best_wall = min(best_wall, (time.perf_counter() - w0) / iters * 1e3)
    out.update(cpu_ms=best_cpu, wall_ms=best_wall, iterations_per_rep=iters)
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out.update(import_mb=base_mb, peak_mb=peak_mb, peak_above_import_mb=peak_mb - base_mb)
print(json.dumps(out))
"""


def run_child(src: Path, game: str, seconds: float, reps: int, memory_only: bool) -> dict:
    """Measure ``game`` with the ``tensorcfr`` found in ``src`` in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD, game, str(seconds), str(reps),
                           "1" if memory_only else "0"], env=env, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{game}: child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="kuhn_poker,leduc_poker")
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per run")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds per game")
    parser.add_argument("--memory-only", action="store_true")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()
    versions = [("new", REPO_SRC)]
    if args.baseline_src is not None:
        versions.insert(0, ("base", args.baseline_src.resolve()))
    keys = ["setup_s", "walk_s", "peak_mb", "peak_above_import_mb"]
    if not args.memory_only:
        keys = ["cpu_ms", "wall_ms"] + keys
    for game in args.games.split(","):
        results: dict[str, dict] = {}
        for _ in range(args.rounds):
            for label, src in versions:
                r = run_child(src, game, args.seconds, args.reps, args.memory_only)
                prev = results.get(label)
                if prev is None:
                    results[label] = r
                else:  # keep the best (least disturbed) figure of each kind
                    for k in keys:
                        prev[k] = min(prev[k], r[k])
        row = {"game": game, "nodes": results["new"]["nodes"],
               "threads": results["new"]["threads"]}
        for label in results:
            for k in keys:
                row[f"{label}_{k}"] = round(results[label][k], 4)
        if "base" in results:
            for k in keys:
                if results["new"][k] > 0:
                    row[f"ratio_{k}"] = round(results["base"][k] / results["new"][k], 3)
        print(json.dumps(row) if args.json else
              "  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
