"""Numeral211 tiny variant: the public-tree solver's iterates against OpenSpiel's Python
``CFRSolver`` / ``CFRPlusSolver`` for many iterations (issue 28 part 1).

The tiny variant (ranks T, A in 3 suits, 1 bet a round; float64) is the one of
``tests/test_numeral211_solver.py``.  OpenSpiel's Python solvers walk histories and take
several seconds an iteration here, too slow for the test suite past a few iterations (the
suite compares with the project's generic engine, which equals OpenSpiel, for 100
iterations instead); this script runs OpenSpiel itself.  At each checkpoint it records
OpenSpiel's average policy (as a TabularPolicy array) and ``nash_conv / 2``; OpenSpiel's
side is cached in ``--cache`` (npz) and reused by later runs with the same algorithm and
iteration count, so only the project's side reruns.  Then ``numeral211``'s solver (the
default class storage and, with ``--cells``, the per-cell storage) runs the same
iterations and the script prints, per checkpoint, the largest difference of any average
policy entry and the two exploitabilities.

    python benchmarks/bench_numeral211_openspiel_parity.py --algo cfr --iterations 100 \\
        --cache /tmp/openspiel_cfr_100.npz
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from tensorcfr.games.numeral211.game import openspiel_game as og
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.utils.machine import run_conditions

TINY = {"ranks": "TA", "suits": 3, "max_bets": 1}


def checkpoints(iterations: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, 100, 200, ... up to ``iterations`` (always included)."""
    out, base = [], 1
    while base <= iterations:
        out += [c for c in (base, 2 * base, 5 * base) if c <= iterations]
        base *= 10
    return sorted(set(out + [iterations]))


def openspiel_run(os_game, algo: str, iterations: int, cache: Path | None) -> dict:
    """OpenSpiel's average policies and exploitabilities at :func:`checkpoints`."""
    if cache is not None and cache.exists():
        data = np.load(cache)
        meta = json.loads(str(data["meta"]))
        if meta["algo"] == algo and meta["iterations"] == iterations:
            return {"meta": meta, **{k: data[k] for k in data.files if k != "meta"}}
    from open_spiel.python.algorithms import cfr
    from open_spiel.python.algorithms import exploitability as os_expl

    solver = cfr.CFRSolver(os_game) if algo == "cfr" else cfr.CFRPlusSolver(os_game)
    out: dict = {}
    marks = checkpoints(iterations)
    start = time.perf_counter()
    exploit = []
    for t in range(1, iterations + 1):
        solver.evaluate_and_update_policy()
        if t in marks:
            avg = solver.average_policy()
            out[f"policy_{t}"] = avg.action_probability_array.copy()
            exploit.append(os_expl.nash_conv(os_game, avg) / 2)
            print(f"openspiel {algo} t={t} exploitability {exploit[-1]!r} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    meta = {"algo": algo, "iterations": iterations, "checkpoints": marks,
            "exploitability": exploit, "seconds": time.perf_counter() - start}
    out["meta"] = meta
    if cache is not None:
        np.savez(cache, meta=json.dumps(meta), **{k: v for k, v in out.items() if k != "meta"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=["cfr", "cfr+"], default="cfr")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=None,
                        help="npz keeping OpenSpiel's side (reused when it matches)")
    parser.add_argument("--cells", action="store_true",
                        help="also run the per-cell storage (PublicTreeCFR)")
    parser.add_argument("--openspiel-only", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = og.config_of(TINY)
    os_game = og.load(config)
    theirs = openspiel_run(os_game, args.algo, args.iterations, args.cache)
    if args.openspiel_only:
        return
    from open_spiel.python import policy as os_policy

    template = os_policy.TabularPolicy(os_game)
    game = n211.build_game(config, dtype=torch.float64)
    marks = theirs["meta"]["checkpoints"]
    print(f"# {args.algo}, {args.iterations} iterations, float64; {run_conditions()}")
    print("| storage | iteration | max policy diff | OpenSpiel exploitability | ours | diff |")
    print("|---|---:|---:|---:|---:|---:|")
    worst = 0.0
    for storage in ["classes"] + (["cells"] if args.cells else []):
        ours = n211.make_solver(game, args.algo, storage=storage)
        for t in range(1, args.iterations + 1):
            ours.iterate(1)
            if t not in marks:
                continue
            k = marks.index(t)
            policy = ours.average_policy()
            tab = og.policy_to_tabular(game, policy, os_game, template)
            diff = float(np.abs(tab.action_probability_array - theirs[f"policy_{t}"]).max())
            mine = n211.exploitability(game, policy).exploitability
            ref = theirs["meta"]["exploitability"][k]
            worst = max(worst, diff, abs(mine - ref))
            print(f"| {storage} | {t} | {diff:.2e} | {ref:.15f} | {mine:.15f} | "
                  f"{abs(mine - ref):.1e} |", flush=True)
    print(f"largest difference: {worst:.2e} (OpenSpiel's side took "
          f"{theirs['meta']['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
