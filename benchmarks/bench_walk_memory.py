"""Walk of OpenSpiel games into a LevelTree: time, peak RSS and the memory the tree holds,
side by side with another copy of the code (``--baseline-src``).

Each measurement runs in a fresh subprocess (1 torch thread): pyspiel and torch are
imported, the game is loaded and kuhn_poker is flattened once (warm-up), then the
resident-set high-water mark is reset (``/proc/self/clear_refs``) and
``flatten_game(game)`` runs.  Reported, above that baseline:

* ``walk_s``: wall seconds of ``flatten_game`` (walk, conversion, perfect-recall check);
* ``peak_mib``: VmHWM during it (the walk's peak);
* ``held_mib``: VmRSS after it, with the tree alive;
* ``tensor_bytes_per_node``: ``tree.memory_bytes() / num_nodes`` (the tree's tensors).

Repetitions alternate baseline and current code; the median is reported.  Linux only
(reads /proc/self/status).

Example (the figures in docs/generic_engine.md)::

    git archive <old commit> src | tar -x -C /tmp/before_walk
    .venv/bin/python benchmarks/bench_walk_memory.py --baseline-src /tmp/before_walk/src \\
        --games "liars_dice;tic_tac_toe;battleship(board_height=3,board_width=2,ship_sizes=[2],ship_values=[1],num_shots=3)"
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
def status():
    rss = hwm = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return rss, hwm
import torch
torch.set_num_threads(1)
import gc, pyspiel
from tensorcfr.games.openspiel import flatten_game
from tensorcfr.utils.resources import release_free_memory
game = pyspiel.load_game(sys.argv[1])
flatten_game("kuhn_poker")
gc.collect()
release_free_memory()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = status()[0]
started = time.perf_counter()
tree = flatten_game(game)
seconds = time.perf_counter() - started
rss, hwm = status()
print(json.dumps({"nodes": tree.num_nodes, "infosets": tree.num_infosets,
                  "terminals": tree.num_terminals, "walk_s": seconds,
                  "peak_bytes": hwm - base, "held_bytes": rss - base,
                  "tensor_bytes": tree.memory_bytes()}))
"""

MIB = 2**20


def measure(game: str, src: str) -> dict:
    """One fresh-process measurement of ``flatten_game(game)`` with ``src`` on the path."""
    env = dict(os.environ, PYTHONPATH=src)
    proc = subprocess.run([sys.executable, "-c", CHILD, game], env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{game} with {src} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="liars_dice;tic_tac_toe",
                        help="game strings separated by ';'")
    parser.add_argument("--baseline-src", default=None,
                        help="src folder of the code to compare with (omit: current only)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per code version")
    parser.add_argument("--json", action="store_true", help="one JSON object per game")
    args = parser.parse_args()
    current = str(Path(__file__).resolve().parents[1] / "src")
    versions = [("after", current)]
    if args.baseline_src:
        versions.insert(0, ("before", args.baseline_src))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {load:.1f}, 1 torch thread, {args.reps} reps (median)", file=sys.stderr)
    rows = []
    for game in [g.strip() for g in args.games.split(";") if g.strip()]:
        runs: dict[str, list[dict]] = {label: [] for label, _ in versions}
        for _ in range(args.reps):
            for label, src in versions:
                runs[label].append(measure(game, src))
        row: dict[str, object] = {"game": game, "nodes": runs["after"][0]["nodes"],
                                  "infosets": runs["after"][0]["infosets"],
                                  "terminals": runs["after"][0]["terminals"], "threads": 1}
        for label, samples in runs.items():
            nodes = samples[0]["nodes"]
            row[f"{label}_walk_s"] = statistics.median(s["walk_s"] for s in samples)
            row[f"{label}_peak_mib"] = statistics.median(s["peak_bytes"] for s in samples) / MIB
            row[f"{label}_held_mib"] = statistics.median(s["held_bytes"] for s in samples) / MIB
            row[f"{label}_tensor_bytes_per_node"] = samples[0]["tensor_bytes"] / nodes
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
    if args.json:
        return
    labels = [label for label, _ in versions]
    print("| game (nodes, infosets) | " + " | ".join(
        f"{what} ({' -> '.join(labels)})" for what in
        ("walk s", "walk peak MiB", "held MiB", "tensor B/node")) + " |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        cells = []
        for key, fmt in (("walk_s", "{:.2f}"), ("peak_mib", "{:.1f}"), ("held_mib", "{:.1f}"),
                         ("tensor_bytes_per_node", "{:.1f}")):
            cells.append(" -> ".join(fmt.format(row[f"{label}_{key}"]) for label in labels))
        print(f"| {row['game']} ({row['nodes']:,}, {row['infosets']:,}) | " + " | ".join(cells)
              + " |")


if __name__ == "__main__":
    main()
