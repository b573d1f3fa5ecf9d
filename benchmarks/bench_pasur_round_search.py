"""Speed of the ``round-search`` agent's search beside ``pimc``'s double-dummy solves.

For ``--deals`` random deals played by ``greedy``, at the first play of each round (Alex to
move) and at the fifth (Alex again, mid-round): K uniform draws of the observation, each
searched by the round search (to the round's end, the shipped value network at the leaves)
and by the double-dummy search (to the game's end, pimc's solve). CPU seconds per draw
(``time.process_time``, 1 thread), positions searched per draw, and the round search's leaves
valued by the network. Prints a markdown table (the one in docs/pasur_agents.md).

    nice -n 10 .venv/bin/python benchmarks/bench_pasur_round_search.py --deals 10 --draws 16
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import observe
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.round_search import RoundSearcher, RoundValueNet
from tensorcfr.games.pasur.solving.double_dummy import DoubleDummySolver, compile_kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=10)
    parser.add_argument("--draws", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    compile_kernels()
    searcher = RoundSearcher(RoundValueNet.load())
    solver = DoubleDummySolver()
    greedy = GreedyAgent()
    warm = rules.initial_state(rules.random_deal(10**6))
    searcher.action_values(warm)  # compile / load the round kernel
    rows: dict[int, dict[str, list[float]]] = {}
    for d in range(args.deals):
        state = rules.initial_state(rules.random_deal(args.seed + d))
        rng = random.Random(d)
        while not state.is_terminal:
            t = state.play_index
            if t % 8 in (0, 4):
                obs = observe(state, state.player)
                draws = [determinize(obs, rng) for _ in range(args.draws)]
                row = rows.setdefault(t % 48, {"rs": [], "dd": [], "rs_nodes": [],
                                               "dd_nodes": [], "leaves": []})
                for s in draws:
                    c0 = time.process_time()
                    searcher.action_values(s)
                    row["rs"].append(time.process_time() - c0)
                    row["rs_nodes"].append(float(searcher.stats[0]))
                    row["leaves"].append(float(searcher.stats[3]))
                    c0 = time.process_time()
                    solver.action_values(s)
                    row["dd"].append(time.process_time() - c0)
                    row["dd_nodes"].append(float(solver.nodes))
            state = rules.apply_legal_action(state, greedy.choose(observe(state, state.player)))
    print(f"{args.deals} deals x {args.draws} draws per position, 1 thread, CPU seconds")
    print()
    print("| play | round-search ms/draw (median) | positions | leaves valued | "
          "pimc (double-dummy) ms/draw (median) | positions |")
    print("|---|---|---|---|---|---|")
    for t in sorted(rows):
        r = rows[t]
        print(f"| {t} | {1000 * statistics.median(r['rs']):.2f} | "
              f"{statistics.median(r['rs_nodes']):,.0f} | {statistics.median(r['leaves']):,.0f} | "
              f"{1000 * statistics.median(r['dd']):.2f} | {statistics.median(r['dd_nodes']):,.0f} |")


if __name__ == "__main__":
    main()
