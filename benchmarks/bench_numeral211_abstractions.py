"""Numeral211 abstractions benchmark: build times, Figure 5 (best of three settings per
baseline) and every abstraction's CFR-BR floor.

1. ``--build-default``: time ``build_abstraction`` (EHS, PaEmd, KrwEmd) on the paper's game
   with the paper's budget (225 flop / 396 turn buckets).
2. Figure 5 on a variant (default: ranks 789TA, 4 suits, max 2 bets per round), every curve
   measured by the exact full-game exploitability ``(b0 + b1) / 2`` every ``--eval-every``
   iterations:

   * each clustering baseline with three parameter settings (KrwEmd with the papers' four
     weight settings), solved with vanilla CFR on its buckets (reach-weighted average =
     CFR's average on the abstract game);
   * Embedding CFR (vanilla CFR on the advisors, the paper's uniform average, dense Phi) with
     HandEbdNet alternatives (training target, loss, number of advisors m);
   * the full game's own vanilla CFR;
   * each bucket map's floor: CFR-BR (:mod:`tensorcfr.abstraction.cfr_br`) for both seats,
     ``--floor-iterations`` iterations, reported as ``(b1(sigma_0) + b0(sigma_1)) / 2``.

Every run is cached as one JSON file in ``--cache`` (default ``runs/numeral211_figure5``), so
a stopped benchmark resumes where it stopped; ``--fresh`` ignores the cache.  Writes
``<out>.png`` (the best setting's curve per baseline, floors as dashed lines), ``<out>.csv``
(every curve), ``<out>.json`` and the markdown table ``<out>.md`` (every setting).  Run with
``nice -n 5``; threads = 1 unless ``--threads``.

    nice -n 5 python benchmarks/bench_numeral211_abstractions.py --iterations 200 \\
        --eval-every 10 --floor-iterations 200 --out docs/benchmarks/numeral211_figure5_max2bets
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
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
from tensorcfr.games.numeral211.abstraction.embedding_net import train_embedding  # noqa: E402
from tensorcfr.games.numeral211.game.isomorphism import isomorphism  # noqa: E402
from tensorcfr.utils.io import file_slug as slug  # noqa: E402
from tensorcfr.utils.machine import run_conditions as machine  # noqa: E402

# (baseline, setting label, build_abstraction keyword arguments)
CLUSTERINGS: list[tuple[str, str, dict[str, Any]]] = [
    ("ehs", "k-means on the equity", {"method": "ehs"}),
    ("ehs", "equal-width equity bins", {"method": "ehs", "ehs_bins": True}),
    ("ehs", "k-means on E[HS^2]", {"method": "ehs", "ehs_feature": "ehs2"}),
    ("paemd", "flop histograms over the turn buckets", {"method": "paemd"}),
    ("paemd", "flop histograms over 60 turn clusters", {"method": "paemd", "hist_turn": 60}),
    ("paemd", "flop histograms over 200 turn clusters", {"method": "paemd",
                                                          "hist_turn": 200}),
    ("krwemd", "weights 16,4,1;4,1", {"method": "krwemd", "weights": "16,4,1;4,1"}),
    ("krwemd", "weights 7,5,3;5,3", {"method": "krwemd", "weights": "7,5,3;5,3"}),
    ("krwemd", "weights 1,1,1;1,1", {"method": "krwemd", "weights": "1,1,1;1,1"}),
    ("krwemd", "weights 3,5,7;5,7", {"method": "krwemd", "weights": "3,5,7;5,7"}),
]
# (setting label, train_embedding keyword arguments; "scale" multiplies the budget m)
EMBEDDINGS: list[tuple[str, dict[str, Any]]] = [
    ("target wtl, balanced loss", {"target": "wtl", "balance": 1.0, "epochs": 150,
                                   "batch": 128}),
    ("target wtl, paper's loss", {"target": "wtl", "epochs": 60}),
    ("target ehs, balanced loss", {"target": "ehs", "balance": 1.0, "epochs": 150,
                                   "batch": 128}),
    ("target equity histogram, balanced loss", {"target": "hist", "balance": 1.0,
                                                "epochs": 150, "batch": 128}),
    ("target wtl, balanced loss, m = 2x budget", {"target": "wtl", "balance": 1.0,
                                                  "epochs": 150, "batch": 128, "scale": 2}),
]
LOSSLESS_FLOOR = "lossless: one bucket per class"
COLOURS = {"ehs": "tab:blue", "paemd": "tab:orange", "krwemd": "tab:green",
           "embedding cfr": "tab:red", "full game": "black"}


class Cache:
    """One JSON file per finished run, keyed by its label and the run's parameters."""

    def __init__(self, folder: str, key: dict[str, Any], fresh: bool) -> None:
        self.folder = folder
        self.key = key
        self.fresh = fresh
        os.makedirs(folder, exist_ok=True)

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, slug(name) + ".json")

    def get(self, name: str) -> dict | None:
        path = self._path(name)
        if self.fresh or not os.path.exists(path):
            return None
        with open(path) as fh:
            data = json.load(fh)
        return data["result"] if data.get("key") == self.key else None

    def put(self, name: str, result: dict) -> None:
        path = self._path(name)
        with open(path + ".tmp", "w") as fh:
            json.dump({"key": self.key, "result": result}, fh)
        os.replace(path + ".tmp", path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="789TA")
    ap.add_argument("--suits", type=int, default=4)
    ap.add_argument("--max-bets", type=int, default=2)
    ap.add_argument("--flop", type=int, default=25, help="flop buckets / advisors")
    ap.add_argument("--turn", type=int, default=20, help="turn buckets / advisors")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--floor-iterations", type=int, default=100,
                    help="CFR-BR iterations per seat (0: no floors)")
    ap.add_argument("--floor-eval-every", type=int, default=25)
    ap.add_argument("--floor-algo", default="cfr+", help="CFR-BR's regret minimiser: cfr+ "
                    "(default; converges faster against a best responder) or cfr")
    ap.add_argument("--cached-only", action="store_true",
                    help="run nothing: write the outputs from the cached runs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build-default", action="store_true",
                    help="also time the three abstractions on the paper's game (225/396)")
    ap.add_argument("--only", default="", help="run only labels containing this text")
    ap.add_argument("--no-curves", action="store_true", help="floors only")
    ap.add_argument("--cache", default="runs/numeral211_figure5")
    ap.add_argument("--fresh", action="store_true", help="ignore cached runs")
    ap.add_argument("--reuse", default=None, metavar="OLD.json",
                    help="take the curves of unchanged settings from an earlier report of "
                    "this benchmark (same code and game: the runs are deterministic)")
    ap.add_argument("--out", default="docs/benchmarks/numeral211_figure5_max2bets")
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
    elif os.path.exists(args.out + ".json"):  # keep the earlier default-game build times
        with open(args.out + ".json") as fh:
            old = json.load(fh)
        if old.get("default_builds"):
            report["default_builds"] = old["default_builds"]
    config = GameConfig(ranks=args.ranks, suits=args.suits, max_bets=args.max_bets)
    report["game"] = config.describe()
    report["classes"] = isomorphism(config).isomorphic_classes()
    game = n211.build_game(config)
    key = {"game": config.to_dict(), "flop": args.flop, "turn": args.turn,
           "iterations": args.iterations, "eval_every": args.eval_every}
    cache = Cache(args.cache, key, args.fresh)
    floor_cache = Cache(args.cache, {**key, "floor_iterations": args.floor_iterations,
                                     "floor_eval_every": args.floor_eval_every,
                                     "floor_algo": args.floor_algo}, args.fresh)
    if args.cached_only:
        args.no_curves = True
    if args.reuse:
        reuse_runs(args.reuse, cache, config)
    runs: dict[str, dict] = {}
    floors: dict[str, dict] = {}
    wanted = [(b, s, kw) for b, s, kw in CLUSTERINGS if args.only in f"{b}: {s}"]
    # curves first (cheaper, needed for the figure), then the floors
    for baseline, setting, kw in wanted:
        label = f"{baseline}: {setting}"
        run = cache.get(label)
        if run is None and not args.no_curves:
            bmap = build_abstraction(config, flop=args.flop, turn=args.turn, **kw)
            solver = abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr")
            start = time.perf_counter()
            curve = run_abstract(game, solver, args.iterations, eval_every=args.eval_every)
            run = {"baseline": baseline, "setting": setting, "curve": curve,
                   "wall_seconds": time.perf_counter() - start, "buckets": bmap.num_buckets,
                   "params": bmap.params, "build_seconds": bmap.seconds,
                   "machine": machine()}
            cache.put(label, run)
            print(f"{label}: {curve[-1]['mbg']:.1f} mb/g after {args.iterations} "
                  f"({curve[-1]['seconds']:.1f} s solving)", flush=True)
        if run is not None:
            runs[label] = run
    counts = report["classes"]
    for setting, kw in EMBEDDINGS:
        label = f"embedding cfr: {setting}"
        if args.only not in label:
            continue
        run = cache.get(label)
        if run is None and not args.no_curves:
            kw = dict(kw)
            scale = kw.pop("scale", 1)
            flop, turn = args.flop * scale, args.turn * scale
            emb = train_embedding(config, flop, turn, **kw)
            embeddings = [Embedding.from_labels(np.arange(counts[0]))] + [
                Embedding.from_matrix(emb.phi[r]) for r in (1, 2)]
            solver = abstract_solver(game, embeddings, algo="cfr", averaging="uniform")
            start = time.perf_counter()
            curve = run_abstract(game, solver, args.iterations, eval_every=args.eval_every)
            run = {"baseline": "embedding cfr", "setting": setting, "curve": curve,
                   "wall_seconds": time.perf_counter() - start,
                   "buckets": [counts[0], flop, turn], "params": kw,
                   "build_seconds": emb.meta["seconds"], "loss": emb.meta["loss"],
                   "advisors_used": emb.meta["advisors_used"], "machine": machine()}
            cache.put(label, run)
            print(f"{label}: {curve[-1]['mbg']:.1f} mb/g", flush=True)
        if run is not None:
            runs[label] = run
    if args.only in "full game: vanilla CFR":
        label = "full game: vanilla CFR"
        run = cache.get(label)
        if run is None and not args.no_curves:
            full = n211.make_solver(game, "cfr")
            start = time.perf_counter()
            progress = n211.run_solver(game, full, args.iterations, eval_every=args.eval_every)
            run = {"baseline": "full game", "setting": "vanilla CFR", "curve": progress.curve,
                   "wall_seconds": time.perf_counter() - start, "machine": machine()}
            cache.put(label, run)
            print(f"full game: {progress.curve[-1]['mbg']:.1f} mb/g", flush=True)
        if run is not None:
            runs[label] = run
    if args.floor_iterations > 0:
        from tensorcfr.games.numeral211.solving.floor import cfr_br_floor

        for baseline, setting, kw in wanted:
            label = f"{baseline}: {setting}"
            floor = floor_cache.get(label + " floor")
            if floor is None and args.cached_only:
                continue
            if floor is None:
                bmap = build_abstraction(config, flop=args.flop, turn=args.turn, **kw)
                start = time.perf_counter()
                result = cfr_br_floor(game, bucket_embeddings(game, bmap),
                                      args.floor_iterations, algo=args.floor_algo,
                                      eval_every=args.floor_eval_every)
                result.pop("cfr_br")
                floor = {**result, "wall_seconds": time.perf_counter() - start,
                         "machine": machine()}
                floor_cache.put(label + " floor", floor)
                print(f"{label}: CFR-BR floor {floor['floor_mbg']:.1f} mb/g", flush=True)
            floors[label] = floor
        label = LOSSLESS_FLOOR
        if args.only in label:  # calibration: the true floor is 0, the value is CFR-BR's error
            floor = floor_cache.get(label + " floor")
            if floor is None and not args.cached_only:
                from tensorcfr.games.numeral211.solving.abstract_solve import lossless_embeddings

                start = time.perf_counter()
                floor = cfr_br_floor(game, lossless_embeddings(game), args.floor_iterations,
                                     algo=args.floor_algo, eval_every=args.floor_eval_every)
                floor.pop("cfr_br")
                floor.update(wall_seconds=time.perf_counter() - start, machine=machine())
                floor_cache.put(label + " floor", floor)
                print(f"{label}: CFR-BR floor {floor['floor_mbg']:.1f} mb/g", flush=True)
            if floor is not None:
                floors[label] = floor
    report["runs"] = runs
    report["floors"] = floors
    report["machine_end"] = machine()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    write_outputs(report, args.out, args.extra_curve)


# earlier report's run name -> (this benchmark's label, baseline, setting)
REUSABLE = {
    "ehs": ("ehs: k-means on the equity", "ehs", "k-means on the equity"),
    "paemd": ("paemd: flop histograms over the turn buckets", "paemd",
              "flop histograms over the turn buckets"),
    "krwemd": ("krwemd: weights 16,4,1;4,1", "krwemd", "weights 16,4,1;4,1"),
    "embedding cfr": ("embedding cfr: target wtl, paper's loss", "embedding cfr",
                      "target wtl, paper's loss"),
    "embedding cfr, balanced HandEbdNet": ("embedding cfr: target wtl, balanced loss",
                                           "embedding cfr", "target wtl, balanced loss"),
    "full game": ("full game: vanilla CFR", "full game", "vanilla CFR"),
}


def reuse_runs(path: str, cache: Cache, config: GameConfig) -> None:
    """Seed the cache with the runs of an earlier report whose settings are unchanged."""
    with open(path) as fh:
        old = json.load(fh)
    if old.get("game") != config.describe():
        raise SystemExit(f"--reuse {path}: another game ({old.get('game')})")
    a = old["args"]
    counts = old["classes"]
    for name, (label, baseline, setting) in REUSABLE.items():
        run = old["runs"].get(name)
        if run is None or cache.get(label) is not None:
            continue
        if run["curve"][-1]["iteration"] != cache.key["iterations"] or \
                a["eval_every"] != cache.key["eval_every"]:
            continue
        build = old.get("build_seconds", {}).get(
            "embedding (HandEbdNet)" if name == "embedding cfr" else name)
        cache.put(label, {"baseline": baseline, "setting": setting, "curve": run["curve"],
                          "wall_seconds": run.get("wall_seconds"),
                          "buckets": None if baseline == "full game" else
                          [counts[0], a["flop"], a["turn"]],
                          "build_seconds": build, "reused_from": f"{path} ({name})",
                          "machine": old.get("machine_start")})
        print(f"{label}: reused from {path}", flush=True)


def load_range(report: dict) -> str:
    """The 1-minute load averages noted at the end of the runs (cached runs keep theirs)."""
    loads = []
    for item in list(report["runs"].values()) + list(report.get("floors", {}).values()):
        m = re.search(r"load average ([0-9.]+)", str(item.get("machine", "")))
        if m:
            loads.append(float(m.group(1)))
    if not loads:
        return ""
    return (f"Load average (1 min) at the end of each run, noted per run in the JSON: "
            f"{min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} CPUs.")


def best_settings(runs: dict[str, dict]) -> dict[str, str]:
    """Baseline -> label of its setting with the lowest final exploitability."""
    best: dict[str, str] = {}
    for label, run in runs.items():
        b = run.get("baseline", label.split(":")[0])
        if b not in best or run["curve"][-1]["mbg"] < runs[best[b]]["curve"][-1]["mbg"]:
            best[b] = label
    return best


def write_outputs(report: dict, out: str, extra: list[str]) -> None:
    """Write <out>.json (the report, extra curves included), .csv, .png and .md."""
    runs = report["runs"]
    floors = report.get("floors", {})
    for item in extra:
        label, _, path = item.partition("=")
        with open(path) as fh:
            data = json.load(fh)
        runs[label] = {"baseline": label, "setting": "", "curve": data["curve"],
                       "source": path}
    args = report["args"]
    counts = report["classes"]
    best = best_settings(runs)
    report["best"] = best
    with open(out + ".json", "w") as fh:
        json.dump(report, fh, indent=1)
    with open(out + ".csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["baseline", "setting", "solver", "iteration", "exploitability_chips",
                    "exploitability_mbg", "solve_seconds"])
        for label, run in runs.items():
            for p in run["curve"]:
                w.writerow([run.get("baseline"), run.get("setting"), "cfr", p["iteration"],
                            f"{p['exploitability']:.6g}", f"{p['mbg']:.6g}",
                            f"{p['seconds']:.3f}"])
        for label, floor in floors.items():
            b, _, s = label.partition(": ")
            for p in floor["curve"]:
                for kind in ("average", "current"):
                    w.writerow([b, s, f"cfr-br {kind}", p["iteration"],
                                f"{p[kind]:.6g}", f"{p[kind + '_mbg']:.6g}",
                                f"{p['seconds']:.3f}"])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.2))
    for baseline, label in best.items():
        run = runs[label]
        colour = COLOURS.get(baseline)
        its = [p["iteration"] for p in run["curve"]]
        ax.plot(its, [p["mbg"] for p in run["curve"]], marker="o", ms=3, color=colour,
                label=label if baseline != "full game" else "full game (lossless)")
        if label in floors:
            ax.axhline(floors[label]["floor_mbg"], color=colour, ls="--", lw=1,
                       label=f"{baseline} floor (CFR-BR, "
                       f"{floors[label]['iterations']} iterations)")
    if LOSSLESS_FLOOR in floors:
        ax.axhline(floors[LOSSLESS_FLOOR]["floor_mbg"], color="grey", ls=":", lw=1,
                   label="CFR-BR on lossless buckets (true floor 0: CFR-BR's own error)")
    ax.set_yscale("log")
    ax.set_xlabel("iteration (vanilla CFR, full sweeps)")
    ax.set_ylabel("full-game exploitability (b0+b1)/2, mb/g")
    ax.set_title(f"{report['game']}\nflop {args['flop']} / turn {args['turn']} buckets or "
                 "advisors; best of the settings per method")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=120)
    lines = ["| method | setting | buckets / advisors (preflop, flop, turn) | final "
             "exploitability (mb/g) | best of its settings | CFR-BR floor (mb/g) | solve time "
             "(s) | build time (s) |", "|---|---|---|---|---|---|---|---|"]
    for label, run in runs.items():
        p = run["curve"][-1]
        b = run.get("baseline", label)
        size = ("lossless" if b == "full game" else
                ", ".join(map(str, run.get("buckets") or [counts[0], args["flop"],
                                                         args["turn"]])))
        build = run.get("build_seconds")
        floor = floors.get(label)
        lines.append(f"| {b} | {run.get('setting', '')} | {size} | {p['mbg']:.1f} | "
                     f"{'**yes**' if best.get(b) == label else ''} | "
                     f"{'' if floor is None else format(floor['floor_mbg'], '.1f')} | "
                     f"{p['seconds']:.1f} | {'' if build is None else f'{build:.1f}'} |")
    floor_lines: list[str] = []
    if floors:
        f0 = next(iter(floors.values()))
        floor_lines = [
            "", f"CFR-BR floors ({f0['iterations']} iterations per seat, full sweeps; "
            "b1(sigma_0) = what the unabstracted seat 1 wins by best-responding to seat 0's "
            "abstract strategy, b0(sigma_1) likewise; floor = (b1(sigma_0) + b0(sigma_1)) / 2 "
            "with each seat's least exploitable evaluated strategy, the average or the "
            "current one):", "",
            "| abstraction | floor (mb/g) | seat 0: b1, final average / best current "
            "(at iteration), mb/g | seat 1: b0, final average / best current (at iteration), "
            "mb/g | counted | CFR-BR time (s) |", "|---|---|---|---|---|---|"]
        for label, floor in floors.items():
            s0, s1 = floor["seats"]
            floor_lines.append(
                f"| {label} | {floor['floor_mbg']:.1f} | {s0['average_mbg']:.1f} / "
                f"{s0['best_current_mbg']:.1f} ({s0['best_iteration']}) | "
                f"{s1['average_mbg']:.1f} / {s1['best_current_mbg']:.1f} "
                f"({s1['best_iteration']}) | {s0['used']}, {s1['used']} | "
                f"{floor['seconds']:.1f} |")
    head = [f"# Numeral211 abstractions: Figure 5 on {report['game']}", "",
            "Exact full-game exploitability (b0 + b1) / 2 in mb/g (thousandths of the ante per "
            "game) of the average strategy after vanilla CFR with full sweeps; every setting "
            "of every baseline, the best one (lowest final value) is the plotted curve.  "
            "The plot, the CSV and the JSON beside this file hold the curves.  Explained in "
            "[../numeral211_abstractions.md](../numeral211_abstractions.md).", "",
            f"Machine at start: {report.get('machine_start')}; at end: "
            f"{report.get('machine_end')}.  {load_range(report)}", "",
            "Rerun: `nice -n 5 python benchmarks/bench_numeral211_abstractions.py "
            f"--iterations {args['iterations']} --eval-every {args['eval_every']} "
            f"--floor-iterations {args.get('floor_iterations', 0)} --out "
            "docs/benchmarks/numeral211_figure5_max2bets` (each run cached under `runs/`; "
            "`--build-default` also times the builds on the paper's game).", ""]
    if report.get("default_builds"):
        head += ["Build times on the paper's game (225 / 396 buckets), seconds: " + ", ".join(
            f"{k} {v['seconds']:.1f}" for k, v in report["default_builds"].items()) + ".", ""]
    with open(out + ".md", "w") as fh:
        fh.write("\n".join(head + lines + floor_lines) + "\n")
    print("\n".join(lines + floor_lines))


if __name__ == "__main__":
    main()
