"""HandEbdNet training benchmark (issue 18): both networks and a few sharpness settings,
trained under one
:class:`~tensorcfr.games.numeral211.abstraction.embedding_net.TrainingBudget`, with their
training diagnostics and the exact Embedding CFR curve of each.

Deck (default): ranks 789TA, 4 suits, at most 2 bets per round (the reduced variant of
Figure 5); budget 25 flop and 20 turn advisors.  For every variant:

1. train HandEbdNet (:func:`train_embedding`) and save the embedding file as
   ``<work>/<slug>.npz`` (reused on a rerun, and by other scripts);
2. report per round the final weighted loss, the target variance (the loss of predicting
   the weighted mean), whether it trained (loss <= 0.5 x variance), the advisors used (the
   argmax of at least one class), the mean largest entry of Phi's columns, epochs run /
   kept, training seconds;
3. only if both rounds trained: vanilla CFR on the advisors with exact full sweeps (the
   paper's uniform average, dense Phi, lossless preflop) for ``--iterations``, the full
   game's exact exploitability (b0 + b1) / 2 in mb/g every ``--eval-every`` iterations and at
   powers of two (cached as ``<work>/<slug>.json``).

A KrwEmd bucketing (weights 1,1,1;1,1, the best of Figure 5's clusterings on this deck) runs
beside them as the reference.  ``--full-game`` trains the variants on the 40-card game at the
paper's budget (225 / 396) and reports the diagnostics only.  Writes ``<out>.md`` (table),
``<out>.png`` (curves) and ``<out>.json``.  Threads = 1 unless ``--threads``; run it under
``heavy`` (CPU slots).

    heavy python benchmarks/bench_numeral211_embedding.py --iterations 1024 \\
        --out docs/benchmarks/numeral211_embedding
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from tensorcfr.abstraction.abstract_cfr import Embedding  # noqa: E402
from tensorcfr.games.numeral211.solving import solver as n211  # noqa: E402
from tensorcfr.games.numeral211.solving.abstract_solve import (abstract_solver, bucket_embeddings,
                                                               run_abstract)
from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction  # noqa: E402
from tensorcfr.games.numeral211.game.config import GameConfig  # noqa: E402
from tensorcfr.games.numeral211.abstraction.embedding_net import (TrainingBudget, load_embedding,
                                                                  save_embedding, train_embedding)
from tensorcfr.games.numeral211.game.isomorphism import isomorphism  # noqa: E402
from tensorcfr.utils.io import file_slug as slug  # noqa: E402
from tensorcfr.utils.io import write_json_atomic, write_text_atomic  # noqa: E402
from tensorcfr.utils.machine import run_conditions as machine  # noqa: E402

# (label, train_embedding keyword arguments); every variant trains under the same budget
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("mlp, paper's loss", {"net": "mlp"}),
    ("mlp, balanced", {"net": "mlp", "balance": 1.0}),
    ("mlp, balanced, sharpness 0.05", {"net": "mlp", "balance": 1.0, "sharpness": 0.05}),
    ("mlp, balanced, sharpness 0.2", {"net": "mlp", "balance": 1.0, "sharpness": 0.2}),
    ("mlp, balanced, sharpness 0.1", {"net": "mlp", "balance": 1.0, "sharpness": 0.1}),
    ("mlp, sharpness 0.05", {"net": "mlp", "sharpness": 0.05}),
    ("mlp, balanced, temperature 0.05", {"net": "mlp", "balance": 1.0, "temperature": 0.05}),
    ("conv, paper's loss", {"net": "conv"}),
    ("conv, balanced", {"net": "conv", "balance": 1.0}),
    ("conv, balanced, sharpness 0.05", {"net": "conv", "balance": 1.0, "sharpness": 0.05}),
    ("conv, balanced, sharpness 0.2", {"net": "conv", "balance": 1.0, "sharpness": 0.2}),
]
REFERENCE = "krwemd 1,1,1;1,1 (buckets)"
ROUNDS = ("round_1", "round_2")


def train_variant(config: GameConfig, flop: int, turn: int, label: str, kw: dict[str, Any],
                  budget: TrainingBudget, path: str) -> dict[str, Any]:
    """Train (or reuse ``path``) and return the embedding's meta."""
    if os.path.exists(path):
        meta = load_embedding(path).meta
        if meta.get("budget") == {**budget.__dict__} and all(
                meta.get(k, 0.0 if k in ("balance", "sharpness") else None) == v
                for k, v in kw.items()):
            return meta
    load_before = os.getloadavg()[0]
    emb = train_embedding(config, flop, turn, budget=budget, **kw)
    emb.meta["machine"] = machine()
    emb.meta["load_before"] = load_before
    save_embedding(path, emb)
    print(f"trained {label}: loss {emb.meta['loss']} variance {emb.meta['target_variance']} "
          f"top1 {emb.meta['top1_mean']} in {emb.meta['seconds']:.0f} s", flush=True)
    return emb.meta


def bucket_meta(config: GameConfig, labels: list[np.ndarray]) -> dict[str, Any]:
    """The diagnostics a one-hot Phi with these buckets reaches at best: its loss is the
    weighted within-bucket variance of the ``wtl`` targets (each bucket predicts its mean)."""
    from tensorcfr.games.numeral211.abstraction.abstractions import class_sizes
    from tensorcfr.games.numeral211.abstraction.embedding_net import class_targets

    meta: dict[str, Any] = {k: {} for k in ("loss", "target_variance", "advisors_used",
                                            "top1_mean", "trained", "epochs_run",
                                            "best_epoch")}
    for r in (1, 2):
        y = class_targets(config, r).astype(np.float64)
        w = class_sizes(config, r)
        lab = np.asarray(labels[r])
        k = int(lab.max()) + 1
        mass = np.bincount(lab, weights=w, minlength=k)
        means = np.stack([np.bincount(lab, weights=w * y[:, j], minlength=k)
                          for j in range(y.shape[1])], axis=1) / np.maximum(mass, 1e-300)[:, None]
        key = f"round_{r}"
        meta["loss"][key] = float((w * ((y - means[lab]) ** 2).sum(1)).sum() / w.sum())
        mean = (w[:, None] * y).sum(0) / w.sum()
        meta["target_variance"][key] = float((w * ((y - mean) ** 2).sum(1)).sum() / w.sum())
        meta["advisors_used"][key] = int(len(np.unique(lab)))
        meta["top1_mean"][key] = 1.0
        meta["trained"][key] = meta["loss"][key] <= 0.5 * meta["target_variance"][key]
        meta["epochs_run"][key] = meta["best_epoch"][key] = 0
    meta["seconds"] = 0.0
    return meta


def eval_points(iterations: int, every: int) -> set[int]:
    """Iterations evaluated: every ``every`` and the powers of two."""
    points = {t for t in range(every, iterations + 1, every)} if every else set()
    points |= {2 ** k for k in range(20) if 2 ** k <= iterations}
    return points | {iterations}


def run_curve(game: Any, embeddings: list[Embedding], averaging: str, iterations: int,
              points: set[int], path: str) -> dict[str, Any]:
    """Vanilla CFR, exact sweeps, evaluated at ``points`` (cached in ``path``)."""
    key = {"iterations": iterations, "points": sorted(points), "averaging": averaging}
    if os.path.exists(path):
        with open(path) as fh:
            data = json.load(fh)
        if data.get("key") == key:
            return data
    solver = abstract_solver(game, embeddings, algo="cfr", averaging=averaging)
    curve: list[dict[str, float]] = []
    start = time.perf_counter()
    while solver.iteration < iterations:
        nxt = min(t for t in points if t > solver.iteration)
        curve = run_abstract(game, solver, nxt, eval_every=0, curve=curve)
    data = {"key": key, "curve": curve, "wall_seconds": time.perf_counter() - start,
            "machine": machine()}
    write_json_atomic(path, data)
    return data


def render(out: str, config: GameConfig, rows: list[dict[str, Any]], budget: TrainingBudget,
           args: argparse.Namespace, full_rows: list[dict[str, Any]]) -> None:
    """Write ``<out>.md``, ``<out>.json`` and ``<out>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    write_json_atomic(out + ".json", {"game": config.to_dict(), "budget": budget.__dict__,
                                      "rows": rows, "full_game": full_rows})
    fig, ax = plt.subplots(figsize=(8, 5.2))
    for row in rows:
        if row.get("curve"):
            its = [p["iteration"] for p in row["curve"]]
            ax.plot(its, [p["mbg"] for p in row["curve"]], marker=".",
                    label=row["label"], linestyle="--" if row["label"] == REFERENCE else "-",
                    color="black" if row["label"] == REFERENCE else None)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("vanilla CFR iterations (exact full sweeps)")
    ax.set_ylabel("exploitability in the full game (mb/g)")
    ax.set_title(f"Embedding CFR with trained HandEbdNets\n{config.describe()}, "
                 f"{args.flop} / {args.turn} advisors", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)
    plt.close(fig)
    write_text_atomic(out + ".md", markdown(config, rows, budget, args, full_rows))


def _diag_cells(meta: dict[str, Any]) -> list[str]:
    cells = []
    for key, fmt in (("loss", "{:.4f}"), ("target_variance", "{:.4f}"),
                     ("advisors_used", "{}"), ("top1_mean", "{:.2f}")):
        cells.append(" / ".join(fmt.format(meta[key][r]) for r in ROUNDS))
    cells.append(" / ".join("yes" if meta["trained"][r] else "**no**" for r in ROUNDS))
    cells.append(" / ".join(f"{meta['epochs_run'][r]} ({meta['best_epoch'][r]})"
                            for r in ROUNDS))
    cells.append(f"{meta['seconds']:.0f}")
    return cells


def _at(curve: list[dict[str, float]], t: int) -> str:
    hits = [p["mbg"] for p in curve if p["iteration"] == t]
    return f"{hits[0]:.1f}" if hits else ""


def markdown(config: GameConfig, rows: list[dict[str, Any]], budget: TrainingBudget,
             args: argparse.Namespace, full_rows: list[dict[str, Any]]) -> str:
    """The benchmark page."""
    lines = [
        "# HandEbdNet training and Embedding CFR (issue 18)", "",
        f"Deck {config.describe()}; {args.flop} flop / {args.turn} turn advisors; one "
        f"training budget for every variant: `{budget}`.  Loss = weighted MSE over all "
        "classes (summed over the target's entries), variance = the loss of predicting the "
        "targets' weighted mean; trained = loss <= 0.5 x variance; advisors used = advisors "
        "that are some class's largest entry; top1 = mean over classes of the largest entry "
        "of Phi's column; epochs = run (kept).  Pairs are flop / turn.  CFR: vanilla, exact "
        "full sweeps, the paper's uniform average, dense Phi; exploitability = (b0 + b1) / 2 "
        "in the full game, mb/g.  Only variants whose both rounds trained are solved.  "
        f"Generated by `benchmarks/bench_numeral211_embedding.py`; {args.threads} thread(s).",
        "",
        "| variant | loss | target variance | advisors used | top1 mean | trained | epochs "
        "(kept) | training s | mb/g at 64 | at 256 | final | iterations | solving s |",
        "|---|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        curve = row.get("curve") or []
        diag = _diag_cells(row["meta"]) if row.get("meta") else [""] * 7
        failed = row.get("meta") and not all(row["meta"]["trained"].values())
        final = f"**{curve[-1]['mbg']:.1f}**" if curve else (
            "not run (training failed)" if failed else "not run")
        lines.append("| " + " | ".join([row["label"], *diag, _at(curve, 64), _at(curve, 256),
                                        final, str(curve[-1]["iteration"]) if curve else "",
                                        f"{curve[-1]['seconds']:.0f}" if curve else ""])
                     + " |")
    lines += ["", "![curves](numeral211_embedding.png)", ""]
    if full_rows:
        lines += ["## The 40-card game, paper's budget (225 / 396), diagnostics only", "",
                  "| variant | loss | target variance | advisors used | top1 mean | trained | "
                  "epochs (kept) | training s |", "|---|---|---|---|---|---|---|---|"]
        for row in full_rows:
            lines.append("| " + " | ".join([row["label"], *_diag_cells(row["meta"])]) + " |")
        lines.append("")
    machines = sorted(({r["meta"].get("machine", "") for r in rows + full_rows
                        if r.get("meta")} | {r.get("machine", "") for r in rows}) - {""})
    lines += ["Machines and load at the end of each step:", ""]
    lines += [f"- {m}" for m in machines]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="789TA")
    parser.add_argument("--suits", type=int, default=4)
    parser.add_argument("--max-bets", type=int, default=2)
    parser.add_argument("--flop", type=int, default=25)
    parser.add_argument("--turn", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=1024)
    parser.add_argument("--eval-every", type=int, default=128)
    parser.add_argument("--work", default="runs/numeral211_embedding")
    parser.add_argument("--out", default="docs/benchmarks/numeral211_embedding")
    parser.add_argument("--only", default="", help="run the variants whose label contains this")
    parser.add_argument("--train-only", action="store_true", help="no CFR curves")
    parser.add_argument("--render-only", action="store_true", help="only what is cached")
    parser.add_argument("--full-game", action="store_true",
                        help="also train on the 40-card game at 225 / 396 (diagnostics)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.work, exist_ok=True)
    config = GameConfig(ranks=args.ranks, suits=args.suits, max_bets=(args.max_bets,) * 3)
    budget = TrainingBudget()
    game = n211.build_game(config)
    counts = isomorphism(config).isomorphic_classes()
    points = eval_points(args.iterations, args.eval_every)
    rows: list[dict[str, Any]] = []
    for label, kw in VARIANTS:
        if args.only not in label:
            continue
        path = os.path.join(args.work, slug(label))
        row: dict[str, Any] = {"label": label, "settings": kw}
        if args.render_only:
            if not os.path.exists(path + ".npz"):
                continue
            emb = load_embedding(path + ".npz")
            row["meta"] = emb.meta
        else:
            row["meta"] = train_variant(config, args.flop, args.turn, label, kw, budget,
                                        path + ".npz")
            emb = load_embedding(path + ".npz")
        trained = all(row["meta"]["trained"].values())
        if trained and not args.train_only and (not args.render_only or
                                                os.path.exists(path + ".json")):
            embeddings = [Embedding.from_labels(np.arange(counts[0]))] + [
                Embedding.from_matrix(emb.phi[r]) for r in (1, 2)]
            data = run_curve(game, embeddings, "uniform", args.iterations, points,
                             path + ".json")
            row["curve"], row["machine"] = data["curve"], data["machine"]
            print(f"{label}: {data['curve'][-1]['mbg']:.1f} mb/g", flush=True)
        rows.append(row)
    if not args.train_only and args.only in REFERENCE:
        path = os.path.join(args.work, slug(REFERENCE))
        if not args.render_only or os.path.exists(path + ".json"):
            bmap = build_abstraction(config, "krwemd", args.flop, args.turn,
                                     weights="1,1,1;1,1")
            data = run_curve(game, bucket_embeddings(game, bmap), "reach", args.iterations,
                             points, path + ".json")
            rows.append({"label": REFERENCE, "curve": data["curve"],
                         "machine": data["machine"], "meta": bucket_meta(config, bmap.labels)})
    full_rows: list[dict[str, Any]] = []
    full_config = GameConfig()
    for label, kw in VARIANTS:
        path = os.path.join(args.work, "full_" + slug(label) + ".npz")
        if args.full_game and args.only in label and not args.render_only:
            meta = train_variant(full_config, 225, 396, label, kw, budget, path)
            full_rows.append({"label": label, "meta": meta})
        elif os.path.exists(path):
            full_rows.append({"label": label, "meta": load_embedding(path).meta})
    render(args.out, config, rows, budget, args, full_rows)
    print(f"wrote {args.out}.md", flush=True)


if __name__ == "__main__":
    main()
