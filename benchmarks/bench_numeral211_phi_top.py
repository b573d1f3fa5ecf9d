"""Sensitivity of Embedding CFR to the top-k truncation of Phi (Numeral211, exact iterations).

For each Phi (the soft clustering of the late-rounds KrwEmd map at ``--temperature``, and
HandEbdNet's Phi trained by ``train_embedding`` with its defaults or read from
``--embedding-file``), runs vanilla CFR with the paper's uniform averaging keeping each
column's k largest entries (renormalised) for every ``--ks`` and dense, and reports the
exact full-game exploitability (mb/g and b0 + b1 in milli-blinds) at iterations 1, 2, 4, ...
``--iterations``.  Budgets scaled as in ``bench_numeral211_figure5.py``.  Writes
``<out>.json`` and ``<out>.md``; every finished run is kept in ``<work>/phi_top`` (a rerun
skips it).
Run under ``heavy``, 1 thread::

    heavy .venv/bin/python benchmarks/bench_numeral211_phi_top.py --ranks 789TA \\
        --iterations 128 --out docs/benchmarks/numeral211_phi_top
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))

from bench_numeral211_figure5 import (Builder, evaluate, fail, load_text,  # noqa: E402
                                      scaled_budget, slug)

from tensorcfr.games.numeral211.solving import solver as n211  # noqa: E402
from tensorcfr.games.numeral211.game.config import GameConfig  # noqa: E402
from tensorcfr.utils.io import write_json_atomic, write_text_atomic  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="789TA")
    ap.add_argument("--suits", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=128)
    ap.add_argument("--ks", default="1,2,4,8", help="top-k values (dense is always run)")
    ap.add_argument("--temperature", type=float, default=0.5)
    ap.add_argument("--embedding-file", default=None, help="HandEbdNet NPZ (default: train)")
    ap.add_argument("--only", default="", help="run only the Phi whose name contains this")
    ap.add_argument("--work", default="runs/figure5_789TA",
                    help="shares the inputs (maps, HandEbdNet) of bench_numeral211_figure5")
    ap.add_argument("--out", default="docs/benchmarks/numeral211_phi_top")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver, phi_embeddings
    from tensorcfr.games.numeral211.game.isomorphism import isomorphism
    from tensorcfr.games.numeral211.abstraction.soft_clustering import soft_clustering
    from tensorcfr.utils.resources import set_threads

    threads = set_threads(args.threads)
    try:
        ks = [int(k) for k in args.ks.split(",")]
        config = GameConfig(ranks=args.ranks, suits=args.suits)
    except ValueError as exc:
        fail(str(exc))
    classes = isomorphism(config).isomorphic_classes()
    flop, turn = scaled_budget(classes)
    work = Path(args.work)
    builder = Builder(config, flop, turn, work)
    game = n211.build_game(config)
    bmap = builder.bucket_map({"method": "krwemd", "weights": "16,4,1;4,1"})
    phis = {f"soft clustering (KrwEmd late rounds, T = {args.temperature:g})":
            soft_clustering(config, bmap, args.temperature).phi}
    name = "HandEbdNet" + (f" ({args.embedding_file})" if args.embedding_file else
                           " (train_embedding defaults)")
    if args.only in name:
        emb = builder.embedding({"file": args.embedding_file} if args.embedding_file
                                else {"train": {}})
        phis[name] = {r: np.asarray(emb.phi[r], np.float64) for r in (1, 2)}
    runs: list[dict[str, Any]] = []
    for name, phi in phis.items():
        if args.only not in name:
            continue
        for k in ks + [None]:
            label = f"{name}, {'dense' if k is None else f'top {k}'}"
            path = work / "phi_top" / f"{slug(label)}_{args.iterations}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_file():
                runs.append(json.loads(path.read_text()))
                continue
            embeddings, used = phi_embeddings(game, phi, top_k=k)
            solver = abstract_solver(game, embeddings, algo="cfr", averaging="uniform")
            curve, solving = [], 0.0
            while solver.iteration < args.iterations:
                start = time.perf_counter()
                solver.iterate(1)
                solving += time.perf_counter() - start
                t = solver.iteration
                if t & (t - 1) == 0 or t == args.iterations:
                    curve.append({"iteration": t, **evaluate(solver, config),
                                  "seconds": solving, "load": load_text()})
            run = {"phi": name, "top_k": used, "label": label, "curve": curve,
                   "threads": threads, "advisors": [flop, turn]}
            write_json_atomic(path, run)
            print(f"{label}: {curve[-1]['mbg']:.1f} mb/g after {t} ({solving:.0f} s, load "
                  f"{curve[-1]['load']})", flush=True)
            runs.append(run)
    marks = [p["iteration"] for p in runs[0]["curve"]][-4:]
    lines = [f"# Numeral211: Embedding CFR against the top-k truncation of Phi, "
             f"{config.describe()}", "",
             f"Vanilla CFR, exact iterations, the paper's uniform averaging; {flop} flop and "
             f"{turn} turn advisors; exact full-game exploitability (b0 + b1) / 2 in mb/g "
             f"(b0 + b1 in milli-blinds is twice that).  {threads} thread(s); the load at "
             "each evaluation is in the JSON.", "",
             "| Phi | kept per column | mb/g at " + " / ".join(map(str, marks))
             + " | s / iteration |", "|---|---|---|---:|"]
    for run in runs:
        c = {p["iteration"]: p for p in run["curve"]}
        last = run["curve"][-1]
        lines.append(f"| {run['phi']} | {'dense' if run['top_k'] is None else run['top_k']}"
                     f" | " + " / ".join(f"{c[m]['mbg']:.1f}" for m in marks if m in c)
                     + f" | {last['seconds'] / last['iteration']:.2f} |")
    out = Path(args.out)
    write_json_atomic(out.with_name(out.name + ".json"), {"runs": runs}, indent=1)
    write_text_atomic(out.with_name(out.name + ".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
