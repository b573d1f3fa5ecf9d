"""Per-deck models, one model across decks, and DCFR tables, compared on the same decks.

Input: a ``tensorcfr pasur batch --method dcfr`` folder (its ``runs/deck_<i>`` DCFR run
folders, ``models/deck_<i>`` per-deck models and ``decks.parquet``).

1. Trains ONE XGBoost policy model across the decks ``--train`` (the paper's future work),
   on rows sampled from each deck's DCFR table (``--train-games`` games per deck), timing it.
2. For each deck of ``--eval`` (some the across-deck model saw, some it never saw):

   * sampled self-play (``--games`` games, the batch's seed rules): per-deck model, across-deck
     model and DCFR table against themselves (fair value, mean difference) and against the
     ``exact`` player on both seats (points lost per game against exact);
   * for decks whose full game tree fits in ``--max-memory``: the models' **exact**
     exploitability and exact loss against ``exact`` (``tensorcfr pasur evaluate``), next to
     the table's exact exploitability (the batch's ``dcfr_exploitability``).

Writes ``docs/benchmarks/pasur_models.md`` (and ``.json``). Usage::

    .venv/bin/python benchmarks/bench_pasur_models.py --batch runs/batch_dcfr_100 \\
        --train 0-79 --eval 0-9,80-99 [--exact-eval 6] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _timing import parse_seeds

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", required=True)
    parser.add_argument("--train", default="0-79")
    parser.add_argument("--eval", default="0-9,80-99")
    parser.add_argument("--train-games", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--exact-eval", type=int, default=6,
                        help="how many seen and how many unseen decks get the exact tree "
                             "evaluation (those whose tree fits)")
    parser.add_argument("--max-memory", default="1500M")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model-out", default=None, help="where to keep the across-deck "
                        "model (default: BATCH/models/across_<train>)")
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/pasur_models.md"))
    args = parser.parse_args(argv)

    import pyarrow.parquet as pq
    import torch

    torch.set_num_threads(args.threads)
    from tensorcfr.errors import TensorCFRError
    from tensorcfr.games.pasur.learning.evaluate import evaluate_policies
    from tensorcfr.games.pasur.agents import make_player
    from tensorcfr.games.pasur.learning.policy_model import train_policy_model
    from tensorcfr.games.pasur.playing.selfplay import play_games
    from tensorcfr.games.pasur.solving.tensor_tree import estimate_tree_size
    from tensorcfr.utils.machine import machine_info

    batch = Path(args.batch)
    rows = {r["deck"]: r for r in pq.read_table(str(batch / "decks.parquet")).to_pylist()
            if r.get("status") == "ok"}
    train = [d for d in parse_seeds(args.train) if d in rows]
    evals = [d for d in parse_seeds(args.eval) if d in rows]
    run = lambda d: batch / "runs" / f"deck_{d:05d}"  # noqa: E731
    results: dict[str, Any] = {"machine": machine_info(), "threads": args.threads,
                               "batch": str(batch), "train_decks": train, "eval_decks": evals,
                               "load_average_start": list(os.getloadavg())}
    model_out = Path(args.model_out or batch / "models" / f"across_{args.train}")
    if (model_out / "manifest.json").is_file():
        manifest = json.loads((model_out / "manifest.json").read_text())
    else:
        manifest = train_policy_model([run(d) for d in train], model_out,
                                      games=args.train_games, rounds=args.rounds,
                                      threads=args.threads)
    results["across_model"] = {k: manifest[k] for k in ("rows", "rmse", "rounds", "seconds",
                                                        "predict_rows_per_second")}
    results["across_model"]["path"] = str(model_out)
    print(json.dumps(results["across_model"]), flush=True)

    per_deck = []
    exact_budget = {"seen": args.exact_eval, "unseen": args.exact_eval}
    # per-deck results are kept in a journal beside the model, so a rerun resumes
    journal = model_out / "bench_decks.jsonl"
    done = {}
    if journal.is_file():
        for line in journal.read_text().splitlines():
            if line.strip():
                e = json.loads(line)
                if e.get("games") == args.games:
                    done[e["deck"]] = e
    for d in evals:
        if d in done:
            e = done[d]
            per_deck.append(e)
            if "tree_nodes" in e:
                exact_budget["seen" if e["seen"] else "unseen"] -= 1
            continue
        r = rows[d]
        deal = tuple(r["deal"])
        seen = d in train
        players = {"table": make_player("table", deal, table=run(d)),
                   "deck model": make_player("model", deal, model=batch / "models" /
                                             f"deck_{d:05d}", threads=args.threads),
                   "across model": make_player("model", deal, model=model_out,
                                               threads=args.threads)}
        exact = make_player("exact", deal)
        entry: dict[str, Any] = {"deck": d, "seen": seen, "games": args.games,
                                 "exact_value": r["exact_value"],
                                 "table_exploitability": r.get("dcfr_exploitability")}
        for name, p in players.items():
            s = play_games(deal, p, p, args.games, sample_seed=10 * d + 1).summary()
            a = play_games(deal, p, exact, args.games, sample_seed=10 * d + 2).summary()
            b = play_games(deal, exact, p, args.games, sample_seed=10 * d + 3).summary()
            v = r["exact_value"]
            entry[name] = {"fair_value": s["fair_value"], "mean_diff": s["mean_diff"],
                           "loss_vs_exact": ((v - a["mean_diff"]) + (b["mean_diff"] - v)) / 2}
        kind = "seen" if seen else "unseen"
        if exact_budget[kind] > 0:
            est = estimate_tree_size(deal)
            if est.peak_bytes < 0.8 * _bytes(args.max_memory):
                t0 = time.perf_counter()
                try:
                    ev = evaluate_policies(deal, {"deck model": batch / "models" /
                                                  f"deck_{d:05d}", "across model": model_out},
                                           max_memory=args.max_memory, threads=args.threads,
                                           include_random=True)
                except TensorCFRError as exc:
                    entry["exact_eval_error"] = str(exc)
                else:
                    exact_budget[kind] -= 1
                    entry["tree_nodes"] = ev["tree_nodes"]
                    entry["exact_eval_seconds"] = time.perf_counter() - t0
                    for name, rep in ev["policies"].items():
                        entry.setdefault(name, {}).update(
                            exact_exploitability=rep["exploitability"],
                            exact_loss_vs_exact=rep["loss_vs_exact"],
                            exact_self_play_value=rep["self_play_value"])
        per_deck.append(entry)
        with journal.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        print(json.dumps(entry), flush=True)
    results["decks"] = per_deck
    results["load_average_end"] = list(os.getloadavg())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    out.write_text(render(results, args))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _bytes(text: str) -> int:
    from tensorcfr.utils.resources import parse_memory

    return parse_memory(text)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def render(r: dict[str, Any], args: Any) -> str:
    m = r["machine"]
    am = r["across_model"]
    names = ("table", "deck model", "across model")
    lines = ["# Pasur: per-deck models, one model across decks, and DCFR tables", "",
             "Generated by `benchmarks/bench_pasur_models.py` (re-run it to refresh this page).",
             "",
             f"- machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']:.1f} GiB RAM; torch "
             f"{m['torch']}, Python {m['python']}; {m['date']}; {r['threads']} thread",
             f"- load average at start / end: {r['load_average_start'][0]:.2f} / "
             f"{r['load_average_end'][0]:.2f} (shared machine)",
             f"- batch `{r['batch']}` (DCFR tables and per-deck models, see "
             "[docs/pasur_selfplay.md](../pasur_selfplay.md)); command: `.venv/bin/python "
             f"benchmarks/bench_pasur_models.py --batch {r['batch']} --train {args.train} "
             f"--eval {args.eval} --games {args.games}`", "",
             "## The across-deck model", "",
             f"One XGBoost model (same parameters as the per-deck models) trained on "
             f"{len(r['train_decks'])} decks ({args.train}), {args.train_games} sampled games "
             f"per deck: {am['rows']['total']:,} rows ({am['rows']['test']:,} held out), "
             f"{am['rounds']} rounds, held-out RMSE of 100*sigma {am['rmse']['test']:.2f} "
             f"(train {am['rmse']['train']:.2f}); rows collected in "
             f"{am['seconds']['rows']:.0f} s, trained in {am['seconds']['train']:.0f} s; "
             f"prediction {am['predict_rows_per_second']:,.0f} rows/s.", "",
             "## Sampled self-play on the same decks", "",
             f"{args.games:,} games per matchup. *fair* = fair value in self-play; *loss* = "
             "points per game lost against the exact player (mean of both seats; 0 for an "
             "optimal policy). Seen = the across-deck model was trained on the deck.", "",
             "| deck | seen | exact value | " + " | ".join(
                 f"{n} fair | {n} loss" for n in names) + " |",
             "|---:|---|---:|" + "---:|---:|" * len(names)]
    for e in r["decks"]:
        lines.append(f"| {e['deck']} | {'yes' if e['seen'] else 'no'} | {e['exact_value']:+d} | "
                     + " | ".join(f"{e[n]['fair_value']:.3f} | {e[n]['loss_vs_exact']:.3f}"
                                  for n in names) + " |")
    lines += ["", "Means:", "", "| decks | " + " | ".join(f"{n} loss" for n in names) + " |",
              "|---|" + "---:|" * len(names)]
    for label, sel in (("seen", True), ("unseen", False)):
        ds = [e for e in r["decks"] if e["seen"] == sel]
        if ds:
            lines.append(f"| {label} ({len(ds)}) | " + " | ".join(
                f"{_mean([e[n]['loss_vs_exact'] for e in ds]):.3f}" for n in names) + " |")
    exact_rows = [e for e in r["decks"] if "tree_nodes" in e]
    if exact_rows:
        lines += ["", "## Exact exploitability (full game tree, `tensorcfr pasur evaluate`)", "",
                  "Points per game (best response against Alex plus against Bob, from the exact "
                  "value); the table's figure is exact on the merged-state graph (the same "
                  "number for a strategy of the merged state).", "",
                  "| deck | seen | tree nodes | table | deck model | across model | random | "
                  "deck model exact loss | across model exact loss |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for e in exact_rows:
            lines.append(
                f"| {e['deck']} | {'yes' if e['seen'] else 'no'} | {e['tree_nodes']:,} | "
                f"{e['table_exploitability']:.2e} | "
                f"{e['deck model']['exact_exploitability']:.2f} | "
                f"{e['across model']['exact_exploitability']:.2f} | "
                f"{e['random']['exact_exploitability']:.2f} | "
                f"{e['deck model']['exact_loss_vs_exact']:.3f} | "
                f"{e['across model']['exact_loss_vs_exact']:.3f} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
