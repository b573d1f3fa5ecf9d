"""Benchmark of Pasur batched self-play and of the XGBoost policy model.

For one deal (a seeded random deal, or a row of a deck file) it:

1. solves the deal by round-by-round DCFR (dag mode, ``--iterations`` per round) into a run
   folder, and trains a per-deal policy model on it (``tensorcfr pasur train`` defaults:
   max_depth 12, eta 0.3, gamma 1, up to 1000 rounds with early stopping after 50, 2000
   sampled games), timing the training and reporting rows and held-out RMSE;
2. times the prediction of the model (rows per second) on batches of feature rows;
3. times ``--games`` self-play games (all at once, one process, ``--threads`` threads) for
   each player type against itself (random, exact, table, model) and model vs exact, taking
   the median of ``--repeats`` runs after one warm-up, and reports games per second.

Writes a markdown table (default ``docs/benchmarks/pasur_selfplay.md``) and the raw figures as
JSON next to it. Usage::

    .venv/bin/python benchmarks/bench_pasur_selfplay.py [--seed 3 | --deck-file F --deck 9]
        [--games 5000] [--repeats 3] [--threads 1] [--out docs/benchmarks/pasur_selfplay.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--deck-file", default=None)
    parser.add_argument("--deck", type=int, default=9)
    parser.add_argument("--games", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/pasur_selfplay.md"))
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, run_dcfr
    from tensorcfr.games.pasur.batch import read_decks
    from tensorcfr.games.pasur.agents import make_player
    from tensorcfr.games.pasur.learning.policy_model import (
        load_policy_model,
        table_training_rows,
        train_policy_model,
    )
    from tensorcfr.games.pasur.engine.rules import random_deal
    from tensorcfr.games.pasur.playing.selfplay import play_games
    from tensorcfr.utils.machine import machine_info

    if args.deck_file:
        ((_, deal),), _ = read_decks(args.deck_file, args.deck, args.deck)
        source = f"row {args.deck} of {Path(args.deck_file).name}"
    else:
        deal = random_deal(args.seed)
        source = f"seed {args.seed}"
    info = machine_info()
    load_start = os.getloadavg()
    results: dict[str, Any] = {"machine": info, "deal": list(deal), "source": source,
                               "threads": args.threads, "games": args.games,
                               "load_average_start": list(load_start)}
    with tempfile.TemporaryDirectory() as tmp:
        run, model_dir = Path(tmp) / "run", Path(tmp) / "model"
        t0 = time.perf_counter()
        run_dcfr(DcfrSettings(deal=deal, iterations=args.iterations, out=run))
        results["dcfr_seconds"] = time.perf_counter() - t0
        manifest = train_policy_model([run], model_dir, threads=args.threads)
        results["model"] = {k: manifest[k] for k in ("rows", "rmse", "rounds", "seconds",
                                                     "predict_rows_per_second", "params")}
        print(json.dumps({"model": results["model"]}), flush=True)
        model = load_policy_model(model_dir, threads=args.threads)
        rng = np.random.default_rng(0)
        x, _, _ = table_training_rows(run, games=500, seed=1)
        predict = []
        for size in (1_000, 10_000, 100_000):
            rows = x[rng.integers(0, len(x), size)]
            model.predict(rows)  # warm-up
            t0 = time.perf_counter()
            model.predict(rows)
            dt = time.perf_counter() - t0
            predict.append({"rows": size, "seconds": dt, "rows_per_second": size / dt})
        results["predict"] = predict
        print(json.dumps({"predict": predict}), flush=True)
        players = {name: make_player(name, deal, table=run, model=model_dir,
                                     threads=args.threads)
                   for name in ("random", "exact", "table", "model")}
        matchups = [("random", "random"), ("exact", "exact"), ("table", "table"),
                    ("model", "model"), ("model", "exact")]
        rows_out = []
        for alex, bob in matchups:
            play_games(deal, players[alex], players[bob], min(args.games, 200), sample_seed=99)
            times = []
            summary = None
            for r in range(args.repeats):
                res = play_games(deal, players[alex], players[bob], args.games, sample_seed=r)
                times.append(res.seconds)
                summary = res.summary()
            med = statistics.median(times)
            row = {"alex": alex, "bob": bob, "games": args.games, "seconds_median": med,
                   "seconds_all": times, "games_per_second": args.games / med,
                   "mean_diff": summary["mean_diff"], "fair_value": summary["fair_value"]}
            rows_out.append(row)
            print(json.dumps(row), flush=True)
        results["selfplay"] = rows_out
    results["load_average_end"] = list(os.getloadavg())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    out.write_text(render(results))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def render(r: dict[str, Any]) -> str:
    m = r["machine"]
    model = r["model"]
    lines = [
        "# Pasur: batched self-play and policy model benchmark", "",
        "Generated by `benchmarks/bench_pasur_selfplay.py` (re-run it to refresh this page).", "",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']:.1f} GiB RAM; torch "
        f"{m['torch']}, Python {m['python']}; {m['date']}",
        f"- threads: {r['threads']} (torch and XGBoost)",
        f"- load average (1, 5, 15 min) at start: "
        f"{', '.join(f'{v:.2f}' for v in r['load_average_start'])}; at end: "
        f"{', '.join(f'{v:.2f}' for v in r['load_average_end'])} (the 2 cores are shared "
        "with other jobs)",
        f"- deal: {r['source']}; DCFR table: dag mode, solved in {r['dcfr_seconds']:.1f} s",
        "", "## Self-play", "",
        f"{r['games']:,} games per matchup, all advanced together as tensors in one process; "
        "median of the timed runs after a warm-up run. The time includes the players' work "
        "(model predictions, table look-ups, exact look-ups).", "",
        "| Alex | Bob | games | seconds (median) | games / s | mean diff | fair value |",
        "|---|---|---:|---:|---:|---:|---:|"]
    for s in r["selfplay"]:
        lines.append(f"| {s['alex']} | {s['bob']} | {s['games']:,} | {s['seconds_median']:.2f} | "
                     f"{s['games_per_second']:,.0f} | {s['mean_diff']:+.3f} | "
                     f"{s['fair_value']:.3f} |")
    mm = next((s for s in r["selfplay"] if s["alex"] == s["bob"] == "model"), None)
    if mm is not None:
        ok = "met" if mm["seconds_median"] <= 10 else "NOT met"
        lines += ["", f"Target: 5,000 model-vs-model games in at most 10 s: "
                      f"{mm['seconds_median']:.2f} s for {mm['games']:,} games ({ok})."]
    rows = model["rows"]
    lines += ["", "## Policy model", "",
              f"Per-deal XGBoost model (`tensorcfr pasur train` defaults: "
              f"max_depth {model['params']['max_depth']}, eta {model['params']['eta']}, gamma "
              f"{model['params']['gamma']}, early stopping after 50 rounds), trained on "
              f"{rows['total']:,} rows ({rows['train']:,} train, {rows['validation']:,} "
              f"validation, {rows['test']:,} held-out test), {model['rounds']} rounds kept.", "",
              "| measure | value |", "|---|---:|",
              f"| collecting rows (sampled self-play of the table), s | "
              f"{model['seconds']['rows']:.2f} |",
              f"| training, s | {model['seconds']['train']:.2f} |",
              f"| held-out RMSE of 100*sigma | {model['rmse']['test']:.3f} |",
              f"| train RMSE of 100*sigma | {model['rmse']['train']:.3f} |"]
    for p in r["predict"]:
        lines.append(f"| prediction, batch of {p['rows']:,} rows: rows / s | "
                     f"{p['rows_per_second']:,.0f} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
