"""Size and build time of the tensorized Pasur game tree (``--mode tree``) for a few deals.

For each deal: the estimate (card-state layers + inherited scores only) with its time, then,
when the estimated peak fits in ``--build-limit``, the full build with its time and the
process's peak RSS. One JSON object per line on stdout. Threads: 1 (torch.set_num_threads).

    .venv/bin/python benchmarks/bench_pasur_tree.py --decks 0-9 --seeds 1-10 --build-limit 6G
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import torch

from tensorcfr.games.pasur.engine.rules import random_deal
from tensorcfr.games.pasur.solving.tensor_tree import build_tree_rounds, estimate_tree_size
from tensorcfr.utils.resources import parse_memory, peak_rss_mb


def _range(text: str) -> list[int]:
    if not text:
        return []
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decks", default="0-9", help="line range of the decks file")
    parser.add_argument("--decks-file", default="tests/data/decks_0_199.csv")
    parser.add_argument("--seeds", default="1-10", help="range of random_deal seeds")
    parser.add_argument("--build-limit", default="6G",
                        help="build only when the estimated peak is below this")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    limit = parse_memory(args.build_limit)
    lines = open(args.decks_file).read().split()
    deals = [(f"deck{i}", [int(c) for c in lines[i].split(",")]) for i in _range(args.decks)]
    deals += [(f"seed{s}", list(random_deal(s))) for s in _range(args.seeds)]
    for name, deal in deals:
        t0 = time.perf_counter()
        estimate = estimate_tree_size(deal, device=args.device)
        record: dict[str, object] = {
            "deal": name, "threads": torch.get_num_threads(),
            "estimate_seconds": round(time.perf_counter() - t0, 2),
            "nodes_per_round": estimate.nodes_per_round, "total_nodes": estimate.total_nodes,
            "score_states": estimate.score_states, "root_pairs": estimate.root_pairs,
            "peak_gib": round(estimate.peak_bytes / 2**30, 3),
            "fits_24gib": estimate.peak_bytes < 24 * 2**30}
        if estimate.peak_bytes < limit:
            t0 = time.perf_counter()
            graphs = build_tree_rounds(deal, device=args.device, max_memory=limit)
            record["build_seconds"] = round(time.perf_counter() - t0, 2)
            record["built_nodes"] = sum(g.total_nodes for g in graphs)
            record["peak_rss_mib"] = round(peak_rss_mb(), 1)
            del graphs
            gc.collect()
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
