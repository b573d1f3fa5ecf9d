"""One round of expert iteration, measured: a hidden model distilled from ``round-search``
against the shipped hidden model and against ``greedy``, duplicate play.

The model is trained first with the command line (its folder is an argument here)::

    tensorcfr pasur train-hidden --teacher round-search -k 32 --games 500 --seed 1000 \\
        --out runs/round_search/hm_rs

Then this script plays, on ``--deals`` seeded deals (``rules.random_deal(seed + i)``), each
pair of (new model, shipped model, greedy) twice per deal with the seats swapped, in this
process (all three answer in about a millisecond, so no exact solve or Ray is needed), and
prints per pair the mean points difference per deal with its 95% interval (normal
approximation over deals) and the rates of games won and tied.

    nice -n 10 .venv/bin/python benchmarks/bench_pasur_expert_iteration.py \\
        runs/round_search/hm_rs --deals 2000 --seed 100000

A later round names its model and the earlier rounds' models (``--rival NAME=DIR``, or the
shipped ``distilled`` by name); the new model then meets each rival, hidden-model and greedy
(in that order, each pair's result written to ``--json`` as soon as it is known)::

    nice -n 10 .venv/bin/python benchmarks/bench_pasur_expert_iteration.py runs/exit2 \\
        --name round-2 --rival distilled --deals 2000 --seed 100000
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.learning.hidden_model import DISTILLED_MODEL_DIR, HiddenModelAgent
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.match import play_game


def _pair(make_a, make_b, deals: int, seed: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    diffs = []
    wins = ties = 0
    for i in range(deals):
        deal = rules.random_deal(seed + i)
        u1 = play_game(deal, make_a(), make_b(), seed=seed + i).utility
        u2 = play_game(deal, make_b(), make_a(), seed=seed + i).utility
        for d in (u1, -u2):
            wins += d > 0
            ties += d == 0
        diffs.append((u1 - u2) / 2)
    mean = statistics.mean(diffs)
    half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan
    return {"deals": deals, "mean_diff": mean, "ci95": [mean - half, mean + half],
            "a_win_rate": wins / (2 * deals), "tie_rate": ties / (2 * deals)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="folder of the distilled hidden model")
    parser.add_argument("--deals", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=100_000)
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument("--name", default="distilled", help="the new model's name in the table")
    parser.add_argument("--rival", action="append", default=[],
                        help="NAME=DIR of an earlier model (or `distilled`: the shipped one); "
                        "repeatable; then only the new model's pairs are played")
    args = parser.parse_args()
    new = HiddenModelAgent(Path(args.model))
    old = HiddenModelAgent(None)
    greedy = GreedyAgent()
    agents = {args.name: lambda: new}
    for rival in args.rival:
        name, _, folder = rival.partition("=")
        path = DISTILLED_MODEL_DIR if rival == "distilled" else Path(folder)
        agent = HiddenModelAgent(path)
        agents[name] = lambda agent=agent: agent
    agents.update({"hidden-model": lambda: old, "greedy": lambda: greedy})
    pairs = [(args.name, b) for b in agents if b != args.name]
    if not args.rival:
        pairs.append(("hidden-model", "greedy"))
    results = {}
    for a, b in pairs:
        started = time.perf_counter()
        results[f"{a} vs {b}"] = _pair(agents[a], agents[b], args.deals, args.seed)
        results[f"{a} vs {b}"]["seconds"] = time.perf_counter() - started
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print("| A | B | deals | A minus B, points per deal | 95% interval | A wins | ties |")
    print("|---|---|---:|---:|---|---:|---:|")
    for key, r in results.items():
        a, b = key.split(" vs ")
        lo, hi = r["ci95"]
        print(f"| {a} | {b} | {r['deals']:,} | {r['mean_diff']:+.2f} | [{lo:+.2f}, {hi:+.2f}] "
              f"| {r['a_win_rate']:.3f} | {r['tie_rate']:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
