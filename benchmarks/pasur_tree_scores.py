"""Check the tensor tree builder's inherited score states against the paper's scores.csv.

For each of the 198 decks listed in ``scores.csv`` (decks 0..199 of ``decks_10000.csv``) and
each round start 0..5, the set of (Alex clubs, Bob clubs, Win) states that
:func:`tensorcfr.games.pasur.solving.tensor_tree.inherited_score_sets` produces must equal the paper's.
Prints one JSON line per deck (with the tree's estimated size) and a summary line.

    .venv/bin/python benchmarks/pasur_tree_scores.py [--decks tests/data/decks_0_199.csv]
        [--scores tests/data/pasur_scores.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections import defaultdict

import torch

from tensorcfr.games.pasur.solving.tensor_tree import estimate_tree_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decks", default="tests/data/decks_0_199.csv")
    parser.add_argument("--scores", default="tests/data/pasur_scores.csv")
    args = parser.parse_args()
    torch.set_num_threads(1)
    decks = [[int(c) for c in line.split(",")] for line in open(args.decks).read().split()]
    expected: dict[int, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    with open(args.scores) as f:
        for r in csv.DictReader(f):
            expected[int(r["Deck"])][int(r["Hand"])].add(
                (int(r["Alex"]), int(r["Bob"]), int(r["Win"])))
    matched, fits, start = 0, 0, time.time()
    for index in sorted(expected):
        t0 = time.time()
        estimate = estimate_tree_size(decks[index])
        sets = estimate.inherited
        ok = all(sets[h] == expected[index][h] for h in range(6))
        matched += ok
        fits += estimate.peak_bytes < 24 * 2**30
        print(json.dumps({"deck": index, "match": ok, "states": [len(s) for s in sets],
                          "total_nodes": estimate.total_nodes,
                          "peak_gib": round(estimate.peak_bytes / 2**30, 3),
                          "seconds": round(time.time() - t0, 2)}), flush=True)
    print(json.dumps({"decks": len(expected), "matched": matched, "fit_24gib": fits,
                      "threads": 1,
                      "seconds": round(time.time() - start, 1)}))


if __name__ == "__main__":
    main()
