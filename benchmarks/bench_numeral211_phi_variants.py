"""HandEbdNet Phi variants that keep what the clustering keeps (issue 28, part 3).

For each training variant of HandEbdNet (MLP, the paper's softmax Phi over m advisors,
``TrainingBudget()`` defaults) on a Numeral211 deck (default: ranks 789TA, 4 suits, the
default betting; 25 flop / 20 turn advisors), this script

1. trains the network (``embedding_net.train_embedding``) and records its diagnostics: the
   fit term against the constant predictor's ("target variance"), held-out loss, advisors
   used, top-1 mean, and the distortion of Phi's hard partition (each class's largest
   entry) in the teacher clustering's EMD next to the teacher's own;
2. runs exact vanilla CFR for ``--iterations`` on Phi's **hard partition** (``phi_top`` 1,
   reach-weighted average = bucketed CFR on that partition) and, with ``--soft``, Embedding
   CFR on the **soft** Phi (dense, the paper's uniform average), each measured by the exact
   full-game exploitability (mb/g);
3. runs the teacher (PaEmd, seed ``--teacher-seed``) as a bucket map under the same solver
   and budget: the k-means reference; and its own soft clustering at ``--teacher-soft``
   temperatures (what ``distill`` fits) as Embedding CFR.

Every finished run is cached as JSON under ``--work`` (a stopped benchmark resumes); the
result table goes to ``--out``.json / .md.  One thread; meant to run in the background:

    nice .venv/bin/python benchmarks/bench_numeral211_phi_variants.py --iterations 256 \\
        --work runs/phi_variants --out docs/benchmarks/numeral211_phi_variants
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import torch

from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.abstraction.embedding_net import (TrainingBudget, save_embedding,
                                                                  train_embedding)
from tensorcfr.games.numeral211.abstraction.phi_teacher import build_teacher
from tensorcfr.games.numeral211.runs.run_abstract_solve import AbstractSolveSettings, solve_abstract
from tensorcfr.utils.io import write_text_atomic, file_slug
from tensorcfr.utils.machine import load_averages, run_conditions

VARIANTS: dict[str, dict[str, Any]] = {
    "paper's loss (mse, wtl)": {},
    "balance 1 + sharpness 0.1 (mse, wtl)": {"balance": 1.0, "sharpness": 0.1},
    "distill PaEmd, T = 0.5": {"objective": "distill", "teacher_temperature": 0.5},
    "distill PaEmd, T = 0.1": {"objective": "distill", "teacher_temperature": 0.1},
    "distill PaEmd, T = 0.5, no holdout": {"objective": "distill", "teacher_temperature": 0.5,
                                           "budget": {"holdout": 0.0}},
    "distill PaEmd, T = 0.1, no holdout": {"objective": "distill", "teacher_temperature": 0.1,
                                           "budget": {"holdout": 0.0}},
    "distortion, emd target": {"objective": "distortion", "target": "emd"},
    "distortion, wtl target": {"objective": "distortion", "target": "wtl"},
    "mse, emd target": {"objective": "mse", "target": "emd"},
}
"""Label -> ``train_embedding`` keywords of each variant (``budget``: fields of the
:class:`TrainingBudget` that differ from its defaults; "no holdout": every class trains
and early stopping watches the training objective, since Phi is only ever asked about the
game's own classes)."""


def _load(path: str) -> dict[str, Any] | None:
    if os.path.isfile(path):
        with open(path) as fh:
            return json.load(fh)
    return None


def _solve(settings: AbstractSolveSettings, cache: str) -> dict[str, Any]:
    """One cached abstract solve: its summary's curve and final mb/g."""
    done = _load(cache)
    if done is not None:
        return done
    started = time.perf_counter()
    summary = solve_abstract(settings).summary
    out = {"mbg": summary["exploitability_mbg"],
           "curve": [{"iteration": p["iteration"], "mbg": p["mbg"]}
                     for p in summary["curve"]],
           "seconds": time.perf_counter() - started, "load": load_averages(),
           "phi_top": summary.get("phi_top"), "averaging": settings.averaging}
    write_text_atomic(cache, json.dumps(out, indent=1))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="789TA")
    parser.add_argument("--suits", type=int, default=4)
    parser.add_argument("--flop", type=int, default=25)
    parser.add_argument("--turn", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=256)
    parser.add_argument("--eval-every", type=int, default=64)
    parser.add_argument("--teacher-seed", type=int, default=2,
                        help="PaEmd seed of the teacher and the k-means reference (2: the "
                        "best PaEmd seed of Figure 5 on 789TA)")
    parser.add_argument("--variants", default=",".join(file_slug(v) for v in VARIANTS),
                        help="comma-separated slugs of the variants to run, in order")
    parser.add_argument("--soft", default="",
                        help="comma-separated slugs whose soft Phi also runs (all: 'all')")
    parser.add_argument("--teacher-soft", type=lambda text: [float(t) for t in text.split(",")
                                                             if t], default=[0.5],
                        help="temperatures of the teacher's own soft clustering run as "
                        "references (comma-separated; '' for none)")
    parser.add_argument("--regret-baseline", default=None,
                        help="the soft runs' regret rule (advisor | infoset; default: the "
                        "solver's own default, not passed)")
    parser.add_argument("--work", default="runs/phi_variants")
    parser.add_argument("--out", default="docs/benchmarks/numeral211_phi_variants")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    config = GameConfig(ranks=args.ranks, suits=args.suits)
    common = dict(algo="cfr", iterations=args.iterations, eval_every=args.eval_every,
                  threads=1)
    slugs = {file_slug(v): v for v in VARIANTS}
    chosen = [s for s in args.variants.split(",") if s]
    unknown = [s for s in chosen if s not in slugs]
    if unknown:
        print(f"error: unknown variants {unknown}; known: {', '.join(slugs)}", file=sys.stderr)
        return 2
    soft = set(slugs) if args.soft == "all" else {s for s in args.soft.split(",") if s}
    rule: dict[str, Any] = {}  # Embedding CFR's regret rule (soft runs) when named
    suffix = ""
    if args.regret_baseline is not None:
        rule = {"regret_baseline": args.regret_baseline}
        suffix = f"_{args.regret_baseline}"

    teacher_map = build_abstraction(config, "paemd", args.flop, args.turn,
                                    seed=args.teacher_seed)
    map_path = os.path.join(args.work, f"paemd_seed_{args.teacher_seed}.npz")
    teacher_map.save(map_path)
    teacher = build_teacher(config, args.flop, args.turn, bmap=teacher_map, source=map_path)
    rows: list[dict[str, Any]] = []
    print(f"reference: PaEmd seed {args.teacher_seed}", flush=True)
    ref = _solve(AbstractSolveSettings(abstraction=map_path, **common),
                 os.path.join(args.work, f"paemd_seed_{args.teacher_seed}_hard.json"))
    rows.append({"variant": f"PaEmd seed {args.teacher_seed} (k-means, the teacher)",
                 "hard": ref, "distortion": teacher.meta()["distortion"]})
    print(f"  {ref['mbg']:.1f} mb/g", flush=True)
    for t in args.teacher_soft:
        print(f"reference: soft PaEmd seed {args.teacher_seed}, T = {t:g}", flush=True)
        soft_ref = _solve(AbstractSolveSettings(abstraction=map_path, soft_temperature=t,
                                                averaging="uniform", **common, **rule),
                          os.path.join(args.work, f"paemd_seed_{args.teacher_seed}_soft_"
                                       f"{file_slug(format(t, 'g'))}{suffix}.json"))
        rows.append({"variant": f"soft PaEmd seed {args.teacher_seed}, T = {t:g} (the "
                     "teacher's soft assignment as Phi)", "hard": None, "soft": soft_ref,
                     "distortion": teacher.meta()["distortion"]})
        print(f"  {soft_ref['mbg']:.1f} mb/g", flush=True)
    for slug in chosen:
        label = slugs[slug]
        emb_path = os.path.join(args.work, f"{slug}.npz")
        meta_path = os.path.join(args.work, f"{slug}_meta.json")
        meta = _load(meta_path)
        if meta is None:
            print(f"training {label}", flush=True)
            kwargs = dict(VARIANTS[label])
            budget = TrainingBudget(**kwargs.pop("budget", {}))
            emb = train_embedding(config, args.flop, args.turn, budget=budget,
                                  teacher=teacher_map, teacher_source=map_path, **kwargs)
            save_embedding(emb_path, emb)
            meta = emb.meta
            meta["load"] = load_averages()
            write_text_atomic(meta_path, json.dumps(meta, indent=1))
        row: dict[str, Any] = {"variant": label, "slug": slug, "settings": VARIANTS[label],
                               "meta": {k: meta.get(k) for k in (
                                   "objective", "target", "loss", "target_variance",
                                   "heldout_loss", "trained", "advisors_used", "top1_mean",
                                   "partition_distortion", "teacher_agreement",
                                   "epochs_run", "teacher_temperature", "seconds", "load")}}
        print(f"  hard partition of {label}", flush=True)
        row["hard"] = _solve(AbstractSolveSettings(embedding=emb_path, phi_top=1,
                                                   averaging="reach", **common),
                             os.path.join(args.work, f"{slug}_hard.json"))
        print(f"  {row['hard']['mbg']:.1f} mb/g", flush=True)
        if slug in soft:
            print(f"  soft Phi of {label}", flush=True)
            row["soft"] = _solve(AbstractSolveSettings(embedding=emb_path,
                                                       averaging="uniform", **common, **rule),
                                 os.path.join(args.work, f"{slug}_soft{suffix}.json"))
            print(f"  {row['soft']['mbg']:.1f} mb/g", flush=True)
        rows.append(row)
        _write(args, config, rows)
    _write(args, config, rows)
    return 0


def _fmt(x: Any, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


def _pair(d: dict[str, Any] | None, spec: str = ".4f") -> str:
    if not d:
        return "-"
    return " / ".join(_fmt(d.get(f"round_{r}"), spec) for r in (1, 2))


def _write(args: argparse.Namespace, config: GameConfig, rows: list[dict[str, Any]]) -> None:
    """The JSON of every row and a Markdown table."""
    doc = {"game": config.to_dict(), "advisors": {"flop": args.flop, "turn": args.turn},
           "regret_baseline": args.regret_baseline or "the solver's default",
           "iterations": args.iterations, "algo": "cfr (vanilla), exact full sweeps",
           "threads": 1, "conditions": run_conditions(), "rows": rows}
    write_text_atomic(args.out + ".json", json.dumps(doc, indent=1))
    lines = ["| variant | fit loss / target variance (flop, turn) | held-out loss | advisors "
             "used | top-1 mean | hard partition's EMD distortion (flop / turn) | hard "
             "partition mb/g | soft Phi (Embedding CFR) mb/g |",
             "|---|---|---|---|---|---|---:|---:|"]
    for row in rows:
        m = row.get("meta") or {}
        fit = "-" if not m else ", ".join(
            f"{m['loss'][f'round_{r}']:.4f} / {m['target_variance'][f'round_{r}']:.4f}"
            for r in (1, 2))
        distortion = _pair(m.get("partition_distortion") if m else row.get("distortion"))
        soft = row.get("soft")
        lines.append(f"| {row['variant']} | {fit} | {_pair(m.get('heldout_loss'))} | "
                     f"{_pair(m.get('advisors_used'), 'd')} | {_pair(m.get('top1_mean'), '.2f')}"
                     f" | {distortion} | "
                     f"{'-' if row['hard'] is None else format(row['hard']['mbg'], ',.1f')} | "
                     f"{'-' if soft is None else format(soft['mbg'], ',.1f')} |")
    write_text_atomic(args.out + ".md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
