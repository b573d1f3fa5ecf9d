"""Figure 5 of the Embedding CFR paper redrawn on Numeral211: exact iterations, every family
with the paper's settings, best of the settings and their spread, the exact full-game curve
as the reference line.

Panels: vanilla CFR (the paper's) and CFR+.  Every curve is the **exact** full-game
exploitability of the abstract solver's average strategy after exact full-sweep iterations,
evaluated at iterations 1, 2, 4, ..., ``--iterations`` and reported both as
``(b0 + b1) / 2`` in mb/g (thousandths of the ante per game, this project's unit) and as
``b0 + b1`` in milli-blinds (the paper's).  Families and their settings:

* ``ehs``: k-means on the equity, three initial clusterings (``--seeds``, default 0,1,2);
* ``paemd``: flop k-means under the exact EMD over the turn buckets, three seeds;
* ``krwemd``: three weightings, late rounds (16,4,1;4,1), early rounds (3,5,7;5,7), equal
  (1,1,1;1,1), seed 0;
* ``soft``: the soft-clustering control
  (:mod:`tensorcfr.games.numeral211.abstraction.soft_clustering`) of the seed-0 PaEmd map and
  the late-rounds KrwEmd map at each ``--temperatures``;
* ``embedding``: Embedding CFR on HandEbdNet's Phi, trained here by
  :func:`~tensorcfr.games.numeral211.abstraction.embedding_net.train_embedding` with its
  defaults of the day, and every ``--embedding-file LABEL=PATH`` (an NPZ of ``numeral211 embed`` or
  ``benchmarks/bench_numeral211_embedding.py``).

Budgets: the paper's 100 / 225 / 396 (preflop lossless, flop, turn) on the 40-card deck; on a
smaller deck the flop and turn budgets keep the paper's fractions of the round's classes
(225 / 2,260 and 396 / 62,020), at least 2.  Phi (soft clustering, Embedding CFR) is dense
where it fits (:func:`~tensorcfr.games.numeral211.solving.abstract_solve.choose_phi_top`); bucket
maps use reach-weighted averaging (CFR's average on the abstract game) and Phi the paper's
uniform averaging, unless ``--averaging`` says otherwise.  Phi's regrets follow
``--regret-baseline`` (``advisor``, the paper's Eq. 9, by default; ``infoset``, the rule
before issue 28): a finished soft or Embedding CFR run of the other rule, or its checkpoint,
is run again from the start; the report marks the runs of the information-set rule.

Each run writes ``<work>/{cfr,cfrplus}/<run>.json`` (curve, diagnostics, load per point)
and checkpoints its solver to ``<work>/{cfr,cfrplus}/<run>.ck.npz`` after every evaluation
and every ``--checkpoint-minutes``; a rerun with the same ``--work`` resumes (bitwise) and
skips finished runs; ``--stop-at HH:MM`` (UTC, the next such time) ends cleanly.  ``--report-only`` redraws ``<out>.md``,
``<out>.json``, ``<out>.png`` (mb/g) and ``<out>_b0b1.png`` (b0 + b1) from the run files.
``--device cuda`` runs the solvers and the HandEbdNet training (``--train LABEL=JSON``:
``train_embedding`` keywords) on a GPU; ``--stop-after SECONDS`` stops cleanly like
``--stop-at``; ``<work>/floors/*.out.json`` (CFR-BR floors, see
``benchmarks/bench_numeral211_gpu.py``) join the report.
The full 40-card game is the default (``--ranks``): about 4.5 s per exact abstract iteration
there on one CPU core (about 0.05 s on an NVIDIA H200), so all families take days on one
core and minutes on a GPU; ``--ranks 789TA`` runs in hours on the CPU.  Run under
``heavy``, 1 thread by default::

    heavy .venv/bin/python benchmarks/bench_numeral211_figure5.py --ranks 789TA \\
        --iterations 1024 --work runs/figure5_789TA --out docs/benchmarks/numeral211_figure5 \\
        --reference docs/benchmarks/numeral211_reference_789TA_cfr.json \\
        --reference docs/benchmarks/numeral211_reference_789TA_cfrplus.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from tensorcfr.games.numeral211.solving import solver as n211  # noqa: E402
from tensorcfr.games.numeral211.game.config import GameConfig  # noqa: E402
from tensorcfr.utils.io import file_slug as slug  # noqa: E402
from tensorcfr.utils.io import write_json_atomic, write_text_atomic  # noqa: E402
from tensorcfr.utils.machine import load_averages as load_text  # noqa: E402

PAPER_CLASSES = (100, 2260, 62020)
PAPER_BUDGET = (100, 225, 396)
KRWEMD_SETTINGS = {"late rounds": "16,4,1;4,1", "early rounds": "3,5,7;5,7",
                   "equal": "1,1,1;1,1"}
FAMILIES = ("ehs", "paemd", "krwemd", "soft", "embedding")
COLOURS = {"ehs": "tab:blue", "paemd": "tab:orange", "krwemd": "tab:green",
           "soft": "tab:purple", "embedding": "tab:red"}
PANELS = {"cfr": "vanilla CFR", "cfr+": "CFR+"}
PANEL_FOLDERS = {"cfr": "cfr", "cfr+": "cfrplus"}


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def scaled_budget(classes: list[int]) -> tuple[int, int]:
    """(flop, turn) budget: the paper's 225 / 396 on its deck, else the same fractions of
    the round's classes (at least 2, at most the classes)."""
    if list(classes) == list(PAPER_CLASSES):
        return PAPER_BUDGET[1], PAPER_BUDGET[2]
    return tuple(int(min(c, max(2, round(c * b / p))))  # type: ignore[return-value]
                 for c, b, p in zip(classes[1:], PAPER_BUDGET[1:], PAPER_CLASSES[1:]))


def run_specs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every run of one panel: family, setting label and how to build its embeddings."""
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    bad = [f for f in families if f not in FAMILIES]
    if bad:
        fail(f"unknown families {bad}: choose from {', '.join(FAMILIES)}")
    seeds = [int(s) for s in args.seeds.split(",")]
    specs: list[dict[str, Any]] = []
    paemd0 = {"method": "paemd", "seed": seeds[0]}
    krw_late = {"method": "krwemd", "weights": KRWEMD_SETTINGS["late rounds"]}
    for fam in families:
        if fam in ("ehs", "paemd"):
            specs += [{"family": fam, "setting": f"seed {s}", "map": {"method": fam, "seed": s}}
                      for s in seeds]
        elif fam == "krwemd":
            specs += [{"family": fam, "setting": f"{name} ({w})",
                       "map": {"method": "krwemd", "weights": w}}
                      for name, w in KRWEMD_SETTINGS.items()]
        elif fam == "soft":
            for t in (float(x) for x in args.temperatures.split(",")):
                specs += [{"family": fam, "setting": f"PaEmd seed {seeds[0]} centres, T = {t:g}",
                           "map": paemd0, "temperature": t},
                          {"family": fam, "setting": f"KrwEmd late-rounds centres, T = {t:g}",
                           "map": krw_late, "temperature": t}]
        else:
            if not args.no_train:
                specs.append({"family": fam, "setting": "HandEbdNet, train_embedding defaults",
                              "train": {}})
            for item in args.train:
                label, _, settings = item.partition("=")
                try:
                    train = json.loads(settings)
                    assert isinstance(train, dict) and label
                except (ValueError, AssertionError):
                    fail(f"--train {item!r}: write LABEL={{JSON keywords of train_embedding}}")
                specs.append({"family": fam, "setting": label, "train": train})
            for item in args.embedding_file:
                label, _, path = item.partition("=")
                if not path:
                    fail(f"--embedding-file {item!r}: write LABEL=PATH")
                specs.append({"family": fam, "setting": label, "file": path})
    return specs


class Builder:
    """Builds (and caches under ``<work>/inputs``) the bucket maps and Phi of the runs."""

    def __init__(self, config: GameConfig, flop: int, turn: int, work: Path,
                 device: Any = "cpu") -> None:
        self.config, self.flop, self.turn, self.device = config, flop, turn, device
        self.folder = work / "inputs"
        self.folder.mkdir(parents=True, exist_ok=True)

    def bucket_map(self, kw: dict[str, Any]) -> Any:
        """The bucket map of ``build_abstraction(**kw)`` at the budget (cached NPZ)."""
        from tensorcfr.abstraction.bucket_map import load_bucket_map
        from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction

        path = self.folder / (slug(json.dumps(kw, sort_keys=True)) + ".npz")
        if path.is_file():
            return load_bucket_map(path)
        bmap = build_abstraction(self.config, flop=self.flop, turn=self.turn, **kw)
        bmap.save(path)
        return bmap

    def embedding(self, spec: dict[str, Any]) -> Any:
        """HandEbdNet's Phi: loaded from ``spec['file']`` or trained (cached NPZ)."""
        from tensorcfr.games.numeral211.abstraction.embedding_net import (load_embedding,
                                                                          save_embedding,
                                                                          train_embedding)

        if "file" in spec:
            return load_embedding(spec["file"])
        name = slug(json.dumps(spec["train"], sort_keys=True)) or "defaults"
        path = self.folder / f"embedding_{name}.npz"
        if path.is_file():
            return load_embedding(path)
        from tensorcfr.games.numeral211.abstraction.embedding_net import TrainingBudget

        kwargs = dict(spec["train"])
        if isinstance(kwargs.get("budget"), dict):  # e.g. {"holdout": 0}: TrainingBudget fields
            kwargs["budget"] = TrainingBudget(**kwargs["budget"])
        emb = train_embedding(self.config, self.flop, self.turn, device=self.device, **kwargs)
        save_embedding(path, emb)
        return emb


def build_run(game: Any, builder: Builder, spec: dict[str, Any], averaging: str | None
              ) -> tuple[list, dict[str, Any], str]:
    """(embeddings, diagnostics, averaging) of one run."""
    from tensorcfr.games.numeral211.solving.abstract_solve import bucket_embeddings, phi_embeddings

    info: dict[str, Any] = {}
    start = time.perf_counter()
    if "map" in spec:
        bmap = builder.bucket_map(spec["map"])
        info.update(map_params=bmap.params, buckets=bmap.num_buckets,
                    map_build_seconds=bmap.seconds)
        if "temperature" in spec:
            from tensorcfr.games.numeral211.abstraction.soft_clustering import soft_clustering

            soft = soft_clustering(builder.config, bmap, spec["temperature"])
            embeddings, top = phi_embeddings(game, soft.phi)
            info.update(soft=soft.meta(), phi_top=top)
            rule = averaging or "uniform"
        else:
            embeddings = bucket_embeddings(game, bmap)
            rule = averaging or "reach"
    else:
        emb = builder.embedding(spec)
        if not (emb.config.ranks == builder.config.ranks
                and emb.config.suits == builder.config.suits):
            fail(f"embedding {spec.get('file')!r} is for ranks "
                             f"{emb.config.ranks!r} x {emb.config.suits} suits")
        embeddings, top = phi_embeddings(game, {r: np.asarray(emb.phi[r], np.float64)
                                                for r in (1, 2)})
        sizes = {}
        from tensorcfr.games.numeral211.abstraction.abstractions import class_sizes

        for r in (1, 2):
            w = class_sizes(builder.config, r)
            sizes[f"round_{r}"] = float((np.asarray(emb.phi[r]).max(0) * w).sum() / w.sum())
        keep = ("loss", "target_variance", "trained", "advisors_used", "top1_mean",
                "heldout_loss", "epochs_run", "best_epoch", "target", "epochs", "batch", "lr",
                "balance", "sharpness", "temperature", "net", "seconds", "network", "hidden",
                "early_stopping", "device", "objective", "teacher", "teacher_temperature",
                "partition_distortion", "teacher_agreement")
        meta = {k: emb.meta[k] for k in keep if k in emb.meta}
        if "target_variance" not in meta:  # the loss of predicting the weighted mean
            meta["target_variance"] = target_variance(builder.config,
                                                      str(emb.meta.get("target", "wtl")))
            meta["target_variance_source"] = "computed by this benchmark"
        info.update(embedding=meta,
                    top1_mean_measured=sizes, phi_top=top,
                    buckets=[embeddings[0].num_advisors] + [e.num_advisors
                                                           for e in embeddings[1:]])
        rule = averaging or "uniform"
    info["inputs_seconds"] = time.perf_counter() - start
    return embeddings, info, rule


def device_name(device: Any) -> str:
    """``cpu``, or the GPU's name (``cuda: NVIDIA H200``): curves are timed per device."""
    import torch

    if getattr(device, "type", str(device)) == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return str(device)


def target_variance(config: GameConfig, target: str) -> dict[str, float]:
    """Per round, HandEbdNet's weighted MSE of always predicting the weighted mean target
    (classes weighted by their infosets, normalised to mean 1, as its loss weights them): a
    trained network's loss must be clearly below it."""
    from tensorcfr.games.numeral211.abstraction.abstractions import class_sizes
    from tensorcfr.games.numeral211.abstraction.embedding_net import class_targets

    out = {}
    for r in (1, 2):
        y = np.asarray(class_targets(config, r, target), dtype=np.float64)
        w = class_sizes(config, r)
        w = w / w.mean()
        mean = (y * w[:, None]).sum(0) / w.sum()
        out[f"round_{r}"] = float((((y - mean) ** 2).sum(1) * w).mean())
    return out


def evaluate(solver: Any, config: GameConfig) -> dict[str, float]:
    """Exact full-game exploitability of the average strategy: chips, mb/g, b0, b1 and
    b0 + b1 in milli-blinds (thousandths of the ante)."""
    from tensorcfr.games.numeral211.solving.abstract_solve import ClassStorageAbstractCFR

    if isinstance(solver, ClassStorageAbstractCFR):
        ex = n211.class_exploitability(solver.game, solver.pass_policy(
            solver.average_class_policy()), with_policy_values=False)
    else:
        ex = n211.exploitability(solver.game, solver.average_policy(), with_policy_values=False)
    b0, b1 = ex.best_response_values
    return {"exploitability": ex.exploitability, "mbg": n211.to_mbg(ex.exploitability, config),
            "b0": b0, "b1": b1, "b0_plus_b1_mb": (b0 + b1) * 1000.0 / config.ante}


def run_one(game: Any, builder: Builder, spec: dict[str, Any], algo: str,
            args: argparse.Namespace, stop: dt.datetime | None) -> dict[str, Any] | None:
    """Run (or resume, or read back) one curve; returns its result, None when stopped
    before the first evaluation."""
    from tensorcfr.games.numeral211.solving.abstract_checkpoint import (
        embedding_fingerprint, load_abstract_checkpoint, read_abstract_checkpoint_meta,
        save_abstract_checkpoint)
    from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver

    setting = spec["setting"]
    own_rule = "uniform" if spec["family"] in ("soft", "embedding") else "reach"
    if args.averaging and args.averaging != own_rule:  # the label says so: both can be compared
        setting += f", {args.averaging} average"
    label = f"{spec['family']}: {setting}"
    folder = Path(args.work) / PANEL_FOLDERS[algo]
    folder.mkdir(parents=True, exist_ok=True)
    result_path, ck_path = folder / f"{slug(label)}.json", folder / f"{slug(label)}.ck.npz"
    if result_path.is_file():
        old = json.loads(result_path.read_text())
        same_rule = (old.get("regret_baseline", "infoset") == args.regret_baseline
                     or spec["family"] not in ("soft", "embedding"))  # one-hot maps: same
        if old.get("done") and old.get("iterations") == args.iterations and same_rule:
            return old
    embeddings, info, rule = build_run(game, builder, spec, args.averaging)
    baseline, resume = args.regret_baseline, ck_path.is_file()
    if resume:  # checkpoints before issue 28 hold the information-set rule
        made = read_abstract_checkpoint_meta(ck_path).get("regret_baseline", "infoset")
        if spec["family"] not in ("soft", "embedding"):
            baseline = made  # a bucket map: both rules are the same arithmetic
        elif made != baseline:
            print(f"{algo} {label}: its checkpoint holds the {made} regret rule; starting "
                  f"over with {baseline}", flush=True)
            resume = False
    solver = abstract_solver(game, embeddings, algo=algo, averaging=rule,
                             regret_baseline=baseline)
    fingerprint = embedding_fingerprint(embeddings)
    curve: list[dict[str, Any]] = []
    if resume:
        meta = load_abstract_checkpoint(ck_path, solver, game.config, fingerprint=fingerprint)
        curve = list(meta.get("curve", []))
    solving = curve[-1]["seconds"] if curve else 0.0
    result = {"label": label, "family": spec["family"], "setting": setting,
              "algo": algo, "averaging": rule, "regret_baseline": baseline,
              "iterations": args.iterations,
              "game": game.config.to_dict(), "threads": args.threads,
              "device": device_name(game.device), **info}

    def save(done: bool) -> None:
        save_abstract_checkpoint(ck_path, solver, game.config, fingerprint=fingerprint,
                                 method=spec["family"], source=label, curve=curve,
                                 phi_top=info.get("phi_top"))
        write_json_atomic(result_path, {**result, "curve": curve, "done": done,
                                        "iterations_run": solver.iteration})

    last_save = time.perf_counter()
    while solver.iteration < args.iterations:
        if stop is not None and dt.datetime.now(dt.timezone.utc) >= stop:
            save(False)
            print(f"{algo} {label}: stopped at iteration {solver.iteration}", flush=True)
            return {**result, "curve": curve, "done": False} if curve else None
        start = time.perf_counter()
        solver.iterate(1)
        solving += time.perf_counter() - start
        t = solver.iteration
        if t & (t - 1) == 0 or t == args.iterations:
            start = time.perf_counter()
            point = {"iteration": t, **evaluate(solver, game.config), "seconds": solving,
                     "eval_seconds": time.perf_counter() - start, "load": load_text()}
            curve.append(point)
            save(False)
            last_save = time.perf_counter()
            print(f"{algo} {label}: {t} iterations {point['mbg']:.1f} mb/g "
                  f"(b0+b1 {point['b0_plus_b1_mb']:.1f} mb), {solving:.0f} s, load "
                  f"{point['load']}", flush=True)
        elif time.perf_counter() - last_save >= 60 * args.checkpoint_minutes:
            save(False)
            last_save = time.perf_counter()
    save(True)
    return {**result, "curve": curve, "done": True}


# ---------------------------------------------------------------------- report
TRAINED_LOSS_RATIO = 0.5
"""A HandEbdNet counts as trained when its final loss is at most this fraction of its
target variance (the loss of predicting the mean) in every round; a network that is not is a
failed training: listed, not plotted as Embedding CFR."""


def failed_training(run: dict[str, Any]) -> bool:
    """True for an Embedding CFR run whose network's loss is not clearly below its target
    variance (or does not report both)."""
    if run["family"] != "embedding":
        return False
    emb = run.get("embedding", {})
    loss, variance = emb.get("loss") or {}, emb.get("target_variance") or {}
    try:
        return not all(float(loss[k]) <= TRAINED_LOSS_RATIO * float(variance[k])
                       for k in ("round_1", "round_2"))
    except (KeyError, TypeError, ValueError):
        return True


def best_and_spread(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per family: the best run (lowest final mb/g among those that reached the family's
    largest iteration; failed trainings left out) and the spread of its settings' curves at
    each iteration."""
    out: dict[str, dict[str, Any]] = {}
    for fam in FAMILIES:
        mine = [r for r in runs if r["family"] == fam and r["curve"] and not failed_training(r)]
        if not mine:
            continue
        last = max(r["curve"][-1]["iteration"] for r in mine)
        finished = [r for r in mine if r["curve"][-1]["iteration"] == last]
        best = min(finished, key=lambda r: r["curve"][-1]["mbg"])
        its = sorted({p["iteration"] for r in mine for p in r["curve"]})
        spread = []
        for it in its:
            vals = [p["mbg"] for r in mine for p in r["curve"] if p["iteration"] == it]
            if len(vals) == len(mine):
                spread.append({"iteration": it, "min": min(vals), "max": max(vals)})
        out[fam] = {"best": best["label"], "spread": spread, "settings": len(mine)}
    return out


def read_runs(work: Path, algo: str) -> list[dict[str, Any]]:
    """Every run file of a panel."""
    folder = work / PANEL_FOLDERS[algo]
    if not folder.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def read_floors(work: Path) -> list[dict[str, Any]]:
    """CFR-BR floors of the clusterings: the ``--json`` results of ``tensorcfr numeral211
    solve --cfr-br`` saved as ``<work>/floors/*.out.json`` (benchmarks/bench_numeral211_gpu.py
    writes them), each as family, source file, floor and average floor (mb/g), iterations,
    algorithm, device."""
    out = []
    for path in sorted((work / "floors").glob("*.out.json")):
        data = json.loads(path.read_text())
        out.append({"family": data["method"], "source": Path(data["source"]).name,
                    "floor_mbg": data["floor_mbg"], "average_mbg": data["average_mbg"],
                    "iterations": data["iterations"], "algo": data["algo"],
                    "seconds": data["seconds"], "device": data.get("device", "cpu"),
                    "seats": data.get("seats")})
    return out


def read_references(paths: list[str], config: GameConfig) -> dict[str, dict[str, Any]]:
    """Reference curves by algorithm (``numeral211_reference_curve.py`` JSON files of
    ``config``'s game)."""
    refs = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        if data.get("game") != config.to_dict():
            fail(f"--reference {path!r} is a curve of {data.get('game')}, "
                             f"not of {config.describe()}")
        refs[data.get("algo", "cfr+")] = {"path": path, **data}
    return refs


def plot(report: dict[str, Any], out: Path, key: str, ylabel: str) -> None:
    """Two panels (vanilla CFR, CFR+): best run per family, the spread of its settings as a
    band, the reference curve as a dashed black line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [a for a in PANELS if report["panels"].get(a, {}).get("runs")]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
    for ax, algo in zip(axes[0], panels):
        panel = report["panels"][algo]
        runs = {r["label"]: r for r in panel["runs"]}
        for fam, summary in panel["families"].items():
            best = runs[summary["best"]]
            its = [p["iteration"] for p in best["curve"]]
            ax.plot(its, [p[key] for p in best["curve"]], marker="o", ms=3,
                    color=COLOURS[fam], label=f"{best['label']} (best of {summary['settings']})")
            if summary["settings"] > 1 and key == "mbg":
                band = summary["spread"]
                ax.fill_between([b["iteration"] for b in band], [b["min"] for b in band],
                                [b["max"] for b in band], color=COLOURS[fam], alpha=0.15)
            elif summary["settings"] > 1:
                mine = [r for r in panel["runs"] if r["family"] == fam
                        and not failed_training(r)]
                for r in mine:
                    if r is not best:
                        ax.plot([p["iteration"] for p in r["curve"]],
                                [p[key] for p in r["curve"]], color=COLOURS[fam], lw=0.6,
                                alpha=0.4)
        for floor in report.get("floors", []):
            ax.axhline(floor["floor_mbg"] * (2 if key == "b0_plus_b1_mb" else 1),
                       color=COLOURS.get(floor["family"], "grey"), ls=":", lw=1,
                       label=f"{floor['family']} floor ({floor['source']}, CFR-BR "
                             f"{floor['iterations']})")
        ref = report["references"].get(algo)
        if ref:
            its = [p["iteration"] for p in ref["curve"]]
            ax.plot(its, [p[key] for p in ref["curve"]], color="black", ls="--",
                    label=f"full game, exact {PANELS[algo]} (reference)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"exact {PANELS[algo]} iteration (full sweeps)")
        ax.set_ylabel(ylabel)
        ax.set_title(PANELS[algo])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6.5)
    fig.suptitle(f"{report['game']}\nbudget {report['budget']} (preflop, flop, turn); "
                 "bands: spread of each family's settings", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def at(curve: list[dict[str, Any]], it: int, key: str) -> str:
    """The curve's value at iteration ``it`` (blank when not reached)."""
    for p in curve:
        if p["iteration"] == it:
            return f"{p[key]:,.1f}"
    return ""


def pair(per_round: Any, fmt: str = ".3f") -> str:
    """``{"round_1": a, "round_2": b}`` as ``a / b`` (``?`` where missing)."""
    if not isinstance(per_round, dict):
        return "?"
    return " / ".join(format(per_round[k], fmt) if k in per_round else "?"
                      for k in ("round_1", "round_2"))


def markdown(report: dict[str, Any]) -> str:
    """The results page: per panel every run, the best of each family in bold."""
    marks = [16, 64, 128, 256, 1024]
    lines = [f"# Numeral211 Figure 5, redrawn: {report['game']}", "",
             "Exact full-game exploitability of the average strategy after exact full-sweep "
             "iterations: `mb/g` = (b0 + b1) / 2 in thousandths of the ante per game, `b0+b1` "
             "in milli-blinds (the paper's unit, twice the first).  Best of each family's "
             "settings in bold.  Budget (preflop, flop, turn): "
             f"{report['budget']}.  Explained in "
             "[../numeral211_abstractions.md](../numeral211_abstractions.md).", "",
             f"Threads: {report['threads']}.  Devices of the runs: "
             f"{', '.join(report.get('devices', [])) or 'cpu'}.  Report written on: "
             f"{report['machine']}; the load at every evaluation is in the run files "
             "(`<work>/cfr/*.json`, `<work>/cfrplus/*.json`).", ""]
    for algo, panel in report["panels"].items():
        if not panel["runs"]:
            continue
        best = {s["best"] for s in panel["families"].values()}
        lines += [f"## {PANELS[algo]}", "",
                  "| family | setting | iterations | mb/g | b0+b1 (mb) | mb/g at "
                  + " / ".join(map(str, marks)) + " | s / iteration | load (1 min) "
                  "at the end | notes |", "|---|---|---:|---:|---:|---|---:|---|---|"]
        ref = report["references"].get(algo)
        rows = sorted(panel["runs"], key=lambda r: (FAMILIES.index(r["family"]),
                                                    r["setting"]))
        for r in rows:
            p = r["curve"][-1]
            name = f"**{r['setting']}**" if r["label"] in best else r["setting"]
            notes = []
            if "soft" in r:
                notes.append("top-1 mean " + ", ".join(
                    f"{v:.2f}" for v in r["soft"]["top1_mean"].values()) + "; agreement "
                    + ", ".join(f"{v:.3f}" for v in r["soft"]["agreement"].values()))
            if "embedding" in r:
                e = r["embedding"]
                notes.append(f"loss {pair(e.get('loss'))}, target variance "
                             f"{pair(e.get('target_variance'))} (flop / turn); advisors used "
                             f"{pair(e.get('advisors_used'), 'd')}; top-1 mean weighted by hands "
                             + ", ".join(f"{v:.2f}" for v in r["top1_mean_measured"].values()))
            if len(report.get("devices", [])) > 1:
                notes.append(f"on {r.get('device', 'cpu')}")
            if r["family"] in ("soft", "embedding") and \
                    r.get("regret_baseline", "infoset") == "infoset":
                notes.append("information-set regret baseline")
            if r.get("averaging") and r["family"] in ("soft", "embedding") and \
                    r["averaging"] != "uniform":
                notes.append(f"{r['averaging']}-weighted average")
            if failed_training(r):
                notes.append(f"**failed training** (loss above {TRAINED_LOSS_RATIO:g} x the "
                             "target variance in some round): not plotted")
            if not r.get("done"):
                notes.append("not finished")
            lines.append(
                f"| {r['family']} | {name} | {p['iteration']} | {p['mbg']:,.1f} | "
                f"{p['b0_plus_b1_mb']:,.1f} | "
                + " / ".join(at(r["curve"], m, "mbg") or "-" for m in marks)
                + f" | {p['seconds'] / p['iteration']:.2f} | {p['load'].split()[0]} | "
                + "; ".join(notes) + " |")
        if ref:
            p = ref["curve"][-1]
            lines.append(f"| full game (reference) | exact {PANELS[algo]}, no abstraction | "
                         f"{p['iteration']} | {p['mbg']:,.1f} | {p['b0_plus_b1_mb']:,.1f} | "
                         + " / ".join(at(ref["curve"], m, "mbg") or "-" for m in marks)
                         + f" | {p['cpu_seconds'] / p['iteration']:.2f} (CPU) | "
                         f"{p.get('load', '').split()[0] if p.get('load') else ''} | "
                         f"`{ref['path']}` |")
        lines.append("")
    if report.get("floors"):
        lines += ["## CFR-BR floors", "",
                  "The least exploitable strategy each clustering can express, found by CFR-BR "
                  "(an upper bound of the true floor: finite runs).  `floor`: per seat the "
                  "less exploitable of the average and the best current strategy; `average`: "
                  "the average strategies'.  Dotted lines in the figures.", "",
                  "| family | map | CFR-BR iterations | floor (mb/g) | b0+b1 (mb) | "
                  "average (mb/g) | seconds | device |", "|---|---|---:|---:|---:|---:|---:|---|"]
        for f in report["floors"]:
            lines.append(f"| {f['family']} | `{f['source']}` | {f['iterations']} "
                         f"({f['algo']}) | {f['floor_mbg']:,.1f} | {2 * f['floor_mbg']:,.1f} | "
                         f"{f['average_mbg']:,.1f} | {f['seconds']:.0f} | {f['device']} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def report_outputs(args: argparse.Namespace, config: GameConfig, budget: list[int]) -> None:
    """Write ``<out>.json``, ``<out>.md``, ``<out>.png`` and ``<out>_b0b1.png``."""
    work = Path(args.work)
    algos = [a.strip() for a in args.algos.split(",")]
    report: dict[str, Any] = {
        "game": config.describe(), "budget": budget, "threads": args.threads,
        "machine": f"{os.cpu_count()} CPUs, load average {load_text()} when the report "
                   "was written", "references": read_references(args.reference, config),
        "panels": {}}
    for algo in algos:
        runs = [r for r in read_runs(work, algo) if r.get("curve")]
        report["panels"][algo] = {"runs": runs, "families": best_and_spread(runs)}
    report["devices"] = sorted({r.get("device", "cpu") for panel in report["panels"].values()
                                for r in panel["runs"]})
    report["floors"] = read_floors(work)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out.with_name(out.name + ".json"), report, indent=1)
    write_text_atomic(out.with_name(out.name + ".md"), markdown(report))
    plot(report, out.with_name(out.name + ".png"), "mbg",
         "full-game exploitability (b0+b1)/2, mb/g")
    plot(report, out.with_name(out.name + "_b0b1.png"), "b0_plus_b1_mb",
         "full-game b0 + b1, milli-blinds (the paper's unit)")
    print(f"wrote {out}.md / .json / .png / _b0b1.png", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="23456789TA", help="deck ranks (default: the full "
                    "40-card game, ~7 s per exact abstract iteration; 789TA runs in hours)")
    ap.add_argument("--suits", type=int, default=4)
    ap.add_argument("--flop", type=int, default=None, help="flop budget (default: scaled)")
    ap.add_argument("--turn", type=int, default=None, help="turn budget (default: scaled)")
    ap.add_argument("--iterations", type=int, default=1024)
    ap.add_argument("--algos", default="cfr,cfr+", help="panels, in the order run")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--only", default="", help="run only labels containing this text")
    ap.add_argument("--seeds", default="0,1,2", help="initial clusterings of EHS and PaEmd")
    ap.add_argument("--temperatures", default="0.5",
                    help="soft clustering temperatures (unit: the mean distance to the own "
                    "centre)")
    ap.add_argument("--embedding-file", action="append", default=[], metavar="LABEL=PATH")
    ap.add_argument("--no-train", action="store_true",
                    help="no HandEbdNet training with the defaults here")
    ap.add_argument("--train", action="append", default=[], metavar="LABEL=JSON",
                    help="train HandEbdNet with these train_embedding keywords, e.g. "
                    "'conv={\"net\": \"conv\", \"balance\": 1}' or 'distill={\"objective\": "
                    "\"distill\", \"budget\": {\"holdout\": 0}}' (budget: TrainingBudget "
                    "fields; repeatable)")
    ap.add_argument("--averaging", choices=["reach", "uniform"], default=None,
                    help="for every run (default: reach for bucket maps, uniform for Phi)")
    ap.add_argument("--reference", action="append", default=[], metavar="JSON",
                    help="exact full-game curve of benchmarks/numeral211_reference_curve.py "
                    "(its algo picks the panel); repeat for both panels")
    ap.add_argument("--work", default="runs/numeral211_figure5_exact")
    ap.add_argument("--out", default="docs/benchmarks/numeral211_figure5")
    ap.add_argument("--regret-baseline", choices=["advisor", "infoset"], default="advisor",
                    help="Embedding CFR's and the soft control's regret rule: advisor (the "
                    "paper's Eq. 9, each advisor against its own strategy) or infoset (the "
                    "rule before issue 28); a finished run of the other rule is run again")
    ap.add_argument("--checkpoint-minutes", type=float, default=5.0)
    ap.add_argument("--stop-at", default=None, help="UTC HH:MM: stop cleanly then")
    ap.add_argument("--stop-after", type=float, default=None,
                    help="seconds from now: stop cleanly then (with --stop-at: the earlier)")
    ap.add_argument("--device", default="cpu", help="torch device of the solvers and the "
                    "HandEbdNet training (cpu, cuda)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    from tensorcfr.games.numeral211.game.isomorphism import isomorphism
    from tensorcfr.utils.resources import set_threads

    args.threads = set_threads(args.threads)
    try:
        config = GameConfig(ranks=args.ranks, suits=args.suits)
    except Exception as exc:  # the game's own one-line message
        fail(str(exc))
    classes = isomorphism(config).isomorphic_classes()
    flop, turn = scaled_budget(classes)
    flop, turn = args.flop or flop, args.turn or turn
    budget = [classes[0], flop, turn]
    for path in args.reference:
        if not Path(path).is_file():
            fail(f"--reference {path!r} does not exist")
    read_references(args.reference, config)  # refuse another game's curve before running
    if not args.report_only:
        stop = None
        if args.stop_at:
            try:
                hh, mm = (int(x) for x in args.stop_at.split(":"))
                now = dt.datetime.now(dt.timezone.utc)
                stop = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
                if stop <= now:  # a time already past today means tomorrow's
                    stop += dt.timedelta(days=1)
            except ValueError:
                fail(f"--stop-at {args.stop_at!r}: write HH:MM (UTC)")
        if args.stop_after is not None:
            if not args.stop_after > 0:
                fail(f"--stop-after must be a positive number of seconds, got "
                     f"{args.stop_after!r}")
            until = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=args.stop_after)
            stop = until if stop is None else min(stop, until)
        for algo in (a.strip() for a in args.algos.split(",")):
            if algo not in PANELS:
                fail(f"--algos: {algo!r} is not cfr or cfr+")
        from tensorcfr.errors import TensorCFRError
        from tensorcfr.utils.device import resolve_device

        try:
            device = resolve_device(args.device, "--device")
        except TensorCFRError as exc:
            fail(str(exc))
        game = n211.build_game(config, device=device)
        builder = Builder(config, flop, turn, Path(args.work), device)
        specs = [s for s in run_specs(args) if args.only in f"{s['family']}: {s['setting']}"]
        for algo in (a.strip() for a in args.algos.split(",")):
            for spec in specs:
                if stop is not None and dt.datetime.now(dt.timezone.utc) >= stop:
                    break
                run_one(game, builder, spec, algo, args, stop)
    report_outputs(args, config, budget)


if __name__ == "__main__":
    main()
