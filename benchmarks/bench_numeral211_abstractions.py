"""Numeral211 abstractions benchmark: build times and the Figure 5 comparison.

1. ``--build-default``: time ``build_abstraction`` (EHS, PaEmd, KrwEmd) on the paper's game
   with the paper's budget (225 flop / 396 turn buckets).
2. Figure 5 on a variant (default: ranks 789TA, 4 suits, max 2 bets per round): EHS, PaEmd,
   KrwEmd (each solved with vanilla CFR), Embedding CFR (HandEbdNet Phi, vanilla CFR on the
   advisors, the paper's uniform average) and the full game's own vanilla CFR, all measured by
   the exact full-game exploitability ``(b0 + b1) / 2`` every ``--eval-every`` iterations.

Writes ``<out>.png`` (curves), ``<out>.csv`` (method, iteration, exploitability chips, mb/g,
solve seconds), ``<out>.json`` and a markdown table ``<out>.md``.  Run with ``nice -n 5``;
threads = 1 unless ``--threads``.

    python benchmarks/bench_numeral211_abstractions.py --iterations 100 --eval-every 10 \\
        --out docs/benchmarks/numeral211_figure5 --build-default
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from tensorcfr.abstraction.abstract_cfr import Embedding  # noqa: E402
from tensorcfr.games.numeral211 import solver as n211  # noqa: E402
from tensorcfr.games.numeral211.abstract_solve import (abstract_solver,  # noqa: E402
                                                       bucket_embeddings, run_abstract)
from tensorcfr.games.numeral211.abstractions import build_abstraction  # noqa: E402
from tensorcfr.games.numeral211.config import GameConfig  # noqa: E402
from tensorcfr.games.numeral211.embedding_net import train_embedding  # noqa: E402
from tensorcfr.games.numeral211.isomorphism import isomorphism  # noqa: E402


def machine() -> str:
    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
            f", torch {torch.__version__}, threads {torch.get_num_threads()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="789TA")
    ap.add_argument("--suits", type=int, default=4)
    ap.add_argument("--max-bets", type=int, default=2)
    ap.add_argument("--flop", type=int, default=25, help="flop buckets / advisors")
    ap.add_argument("--turn", type=int, default=20, help="turn buckets / advisors")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build-default", action="store_true",
                    help="also time the three abstractions on the paper's game (225/396)")
    ap.add_argument("--balance", type=float, default=0.0,
                    help="HandEbdNet advisor-usage entropy weight (0: plain MSE)")
    ap.add_argument("--out", default="docs/benchmarks/numeral211_figure5")
    ap.add_argument("--extra-curve", action="append", default=[], metavar="LABEL=FILE",
                    help="add a curve JSON of `numeral211 solve --curve` to the outputs")
    ap.add_argument("--replot", action="store_true",
                    help="no runs: rewrite the outputs from <out>.json plus --extra-curve")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.replot:
        with open(args.out + ".json") as fh:
            report = json.load(fh)
        write_outputs(report, args.out, args.extra_curve)
        return
    report: dict = {"machine_start": machine(), "args": vars(args)}
    if args.build_default:
        builds = {}
        for method in ("ehs", "paemd", "krwemd"):
            bmap = build_abstraction(GameConfig(), method, 225, 396)
            builds[method] = {"seconds": bmap.seconds, "buckets": bmap.num_buckets}
            print(f"default game {method}: {bmap.num_buckets} in {bmap.seconds:.1f} s",
                  flush=True)
        report["default_builds"] = builds
    config = GameConfig(ranks=args.ranks, suits=args.suits, max_bets=args.max_bets)
    report["game"] = config.describe()
    report["classes"] = isomorphism(config).isomorphic_classes()
    game = n211.build_game(config)
    runs: dict[str, dict] = {}
    builds_small = {}
    for method in ("ehs", "paemd", "krwemd"):
        bmap = build_abstraction(config, method, args.flop, args.turn)
        builds_small[method] = bmap.seconds
        solver = abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr")
        start = time.perf_counter()
        curve = run_abstract(game, solver, args.iterations, eval_every=args.eval_every)
        runs[method] = {"curve": curve, "wall_seconds": time.perf_counter() - start,
                        "buckets": bmap.num_buckets}
        print(f"{method}: {curve[-1]['mbg']:.1f} mb/g after {args.iterations} "
              f"({curve[-1]['seconds']:.1f} s solving)", flush=True)
    emb = train_embedding(config, args.flop, args.turn, epochs=args.epochs,
                          balance=args.balance)
    builds_small["embedding (HandEbdNet)"] = emb.meta["seconds"]
    counts = report["classes"]
    embeddings = [Embedding.from_labels(np.arange(counts[0]))] + [
        Embedding.from_matrix(emb.phi[r]) for r in (1, 2)]
    solver = abstract_solver(game, embeddings, algo="cfr", averaging="uniform")
    start = time.perf_counter()
    curve = run_abstract(game, solver, args.iterations, eval_every=args.eval_every)
    runs["embedding cfr"] = {"curve": curve, "wall_seconds": time.perf_counter() - start,
                             "loss": emb.meta["loss"]}
    print(f"embedding cfr: {curve[-1]['mbg']:.1f} mb/g", flush=True)
    full = n211.make_solver(game, "cfr")
    start = time.perf_counter()
    progress = n211.run_solver(game, full, args.iterations, eval_every=args.eval_every)
    runs["full game"] = {"curve": progress.curve, "wall_seconds": time.perf_counter() - start}
    print(f"full game: {progress.curve[-1]['mbg']:.1f} mb/g", flush=True)
    report["build_seconds"] = builds_small
    report["runs"] = runs
    report["machine_end"] = machine()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    write_outputs(report, args.out, args.extra_curve)


def write_outputs(report: dict, out: str, extra: list[str]) -> None:
    """Write <out>.json (the report, extra curves included), .csv, .png and .md."""
    runs = report["runs"]
    for item in extra:
        label, _, path = item.partition("=")
        with open(path) as fh:
            data = json.load(fh)
        runs[label] = {"curve": data["curve"], "source": path}
    args = report["args"]
    counts = report["classes"]
    builds_small = report["build_seconds"]
    with open(out + ".json", "w") as fh:
        json.dump(report, fh, indent=1)
    with open(out + ".csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "iteration", "exploitability_chips", "exploitability_mbg",
                    "solve_seconds"])
        for name, run in runs.items():
            for p in run["curve"]:
                w.writerow([name, p["iteration"], f"{p['exploitability']:.6g}",
                            f"{p['mbg']:.6g}", f"{p['seconds']:.3f}"])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, run in runs.items():
        its = [p["iteration"] for p in run["curve"]]
        ax.plot(its, [p["mbg"] for p in run["curve"]], marker="o", ms=3, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("iteration (vanilla CFR, full sweeps)")
    ax.set_ylabel("full-game exploitability (b0+b1)/2, mb/g")
    ax.set_title(f"{report['game']}\nflop {args['flop']} / turn {args['turn']} buckets or "
                 "advisors")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=120)
    lines = ["| method | buckets / advisors (preflop, flop, turn) | final exploitability "
             "(mb/g) | at iteration | solve time (s) | build time (s) |",
             "|---|---|---|---|---|---|"]
    for name, run in runs.items():
        p = run["curve"][-1]
        size = ("lossless" if name == "full game" else
                f"{counts[0]}, {args['flop']}, {args['turn']}")
        build = builds_small.get(name if name != "embedding cfr" else
                                 "embedding (HandEbdNet)")
        lines.append(f"| {name} | {size} | {p['mbg']:.1f} | {p['iteration']} | "
                     f"{p['seconds']:.1f} | {'' if build is None else f'{build:.1f}'} |")
    head = [f"# Numeral211 abstractions: Figure 5 on {report['game']}", "",
            "Exact full-game exploitability (b0 + b1) / 2 in mb/g (thousandths of the ante per "
            "game) of the average strategy after vanilla CFR with full sweeps; the plot, "
            "the CSV and the JSON beside this file hold the curves.  Explained in "
            "[../numeral211_abstractions.md](../numeral211_abstractions.md).", "",
            f"Machine at start: {report.get('machine_start')}; at end: "
            f"{report.get('machine_end')}.", "",
            "Rerun: `nice -n 5 python benchmarks/bench_numeral211_abstractions.py "
            "--iterations 200 --eval-every 10 --build-default --out "
            "docs/benchmarks/numeral211_figure5` (extra curves: `--replot --extra-curve "
            "LABEL=FILE`).", ""]
    if report.get("default_builds"):
        head += ["Build times on the paper's game (225 / 396 buckets), seconds: " + ", ".join(
            f"{k} {v['seconds']:.1f}" for k, v in report["default_builds"].items()) + ".", ""]
    with open(out + ".md", "w") as fh:
        fh.write("\n".join(head + lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
