"""Figure 5 on the paper's FULL Numeral211 game (40 cards, 225 flop / 396 turn buckets) with
sampled iterations (public chance sampling), exact full-game exploitability at checkpoints.

Curves (vanilla CFR everywhere, as the paper):

* ``ehs``, ``paemd``, ``krwemd``: CFR on the bucket maps of ``tensorcfr numeral211 abstract
  --method ... --flop 225 --turn 396`` (reach-weighted average = CFR's average on the
  abstract game);
* ``embedding``: Embedding CFR on HandEbdNet's Phi (``tensorcfr numeral211 embed --flop 225
  --turn 396``, the paper's loss; ``--phi-top`` largest entries per column), the paper's
  uniform average; ``embedding_balanced``: the same with ``embed --balance 1`` (only when
  its file exists or ``--build`` trains it);
* ``full``: the full-game solver (no abstraction) with the same sampled iterations.

Every iteration draws ``--sample-boards`` K boards of each round per board of the round
before (:func:`tensorcfr.core.public_tree.sample_boards`; every private hand pair of a drawn
board is covered), seeded by ``(--seed, iteration)``.  At every ``--eval-at`` iteration the
exact full-game exploitability ``(b0 + b1) / 2`` of the average strategy is computed (four
full passes) and written with its timings.

Work goes round-robin: every method is brought to the next evaluation point before any
goes further, so a stopped run has comparable curves.  Solver state is checkpointed in
``--work`` after each evaluation and a rerun continues (the sampled iterations are
reproducible: iteration t's draw depends only on the seed and t).  ``--deadline HH:MM``
(UTC) skips a step whose projected end (measured seconds per iteration + evaluation) is
later.  Outputs ``<out>.csv``, ``.json``, ``.png``, ``.md`` after every evaluation.

    nice -n 5 python benchmarks/bench_numeral211_sampled.py --build --deadline 14:45 \\
        --out docs/benchmarks/numeral211_figure5_full
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from tensorcfr.abstraction.abstract_cfr import AbstractCFR, Embedding  # noqa: E402
from tensorcfr.abstraction.bucket_map import load_bucket_map  # noqa: E402
from tensorcfr.core.public_tree import BoardSampling, PublicTreeCFR  # noqa: E402
from tensorcfr.games.numeral211.solving import solver as n211  # noqa: E402
from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver, bucket_embeddings
from tensorcfr.games.numeral211.abstraction.embedding_net import load_embedding  # noqa: E402
from tensorcfr.games.numeral211.game.isomorphism import isomorphism  # noqa: E402
from tensorcfr.utils.io import write_json_atomic, write_text_atomic  # noqa: E402

LABELS = {"ehs": "EHS", "paemd": "PaEmd", "krwemd": "KrwEmd (16,4,1;4,1)",
          "embedding": "Embedding CFR (paper's loss)",
          "embedding_balanced": "Embedding CFR (balanced HandEbdNet)",
          "full": "full game (no abstraction)",
          # the other two parameter settings per clustering baseline (the paper shows the
          # best of three per method)
          "ehs_bins": "EHS, equal-width bins", "ehs2": "EHS, E[HS^2] k-means",
          "paemd_h100": "PaEmd, histograms over 100 turn clusters",
          "paemd_h200": "PaEmd, histograms over 200 turn clusters",
          "krwemd_753": "KrwEmd (7,5,3;5,3)", "krwemd_111": "KrwEmd (1,1,1;1,1)"}
VARIANT_OPTIONS = {"ehs_bins": ("ehs", ["--bins"]), "ehs2": ("ehs", ["--feature", "ehs2"]),
                   "paemd_h100": ("paemd", ["--hist-turn", "100"]),
                   "paemd_h200": ("paemd", ["--hist-turn", "200"]),
                   "krwemd_753": ("krwemd", ["--weights", "7,5,3;5,3"]),
                   "krwemd_111": ("krwemd", ["--weights", "1,1,1;1,1"])}
CLI = [sys.executable, "-m", "tensorcfr.cli.main"]


def machine() -> dict[str, Any]:
    """CPU count, load average, torch threads and version, time (UTC)."""
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "python": platform.python_version(), "processor": platform.processor(),
            "utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")}


def build_files(work: str, methods: list[str]) -> dict[str, float]:
    """Build the missing abstraction / embedding files with the CLI; build seconds."""
    seconds = {}
    jobs = {m: ["numeral211", "abstract", "--method", m, "--flop", "225", "--turn", "396"]
            for m in ("ehs", "paemd", "krwemd")}
    jobs["embedding"] = ["numeral211", "embed", "--flop", "225", "--turn", "396"]
    jobs["embedding_balanced"] = jobs["embedding"] + ["--balance", "1"]
    for name, (base, extra) in VARIANT_OPTIONS.items():
        jobs[name] = jobs[base] + extra
    for m in methods:
        if m == "full":
            continue
        path, meta = _file(work, m), os.path.join(work, f"{m}.build.json")
        if not os.path.exists(path):
            print(f"building {m} ...", flush=True)
            res = subprocess.run(CLI + jobs[m] + ["--out", path, "--json"], check=True,
                                 capture_output=True, text=True)
            write_text_atomic(meta, res.stdout)
        if os.path.exists(meta):
            seconds[m] = float(json.loads(open(meta).read())["seconds"])
    return seconds


def _file(work: str, method: str) -> str:
    return os.path.join(work, ("phi" if method == "embedding" else "phi_balanced"
                               if method == "embedding_balanced" else method) + ".npz")


def make_solver(game: Any, work: str, method: str, sampling: BoardSampling, phi_top: int
                ) -> AbstractCFR | PublicTreeCFR:
    """The method's solver with sampled iterations (vanilla CFR)."""
    if method == "full":
        return PublicTreeCFR(game, "cfr", dtype=game.dtype, sampling=sampling)
    if method.startswith("embedding"):
        phi = load_embedding(_file(work, method))
        counts = isomorphism(game.config).isomorphic_classes()
        embeddings = [Embedding.from_labels(np.arange(counts[0]))]
        embeddings += [Embedding.from_matrix(phi.phi[r], top_k=phi_top) for r in (1, 2)]
        return abstract_solver(game, embeddings, algo="cfr", averaging="uniform",
                               sampling=sampling)
    bmap = load_bucket_map(_file(work, method))
    return abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr",
                           averaging="reach", sampling=sampling)


def save_state(path: str, solver: AbstractCFR | PublicTreeCFR) -> None:
    """Regrets, cumulative strategy and the iteration (temp file, then rename)."""
    arrays = {"iteration": np.array(solver.iteration)}
    for r in range(len(solver.regrets)):
        arrays[f"regrets_{r}"] = solver.regrets[r].cpu().numpy()
        arrays[f"average_{r}"] = solver.average[r].cpu().numpy()
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def load_state(path: str, solver: AbstractCFR | PublicTreeCFR) -> None:
    """Restore :func:`save_state` (then the current strategies are refreshed)."""
    with np.load(path) as data:
        for r in range(len(solver.regrets)):
            solver.regrets[r].copy_(torch.from_numpy(data[f"regrets_{r}"]))
            solver.average[r].copy_(torch.from_numpy(data[f"average_{r}"]))
        solver.iteration = int(data["iteration"])
    for p in (0, 1):
        if isinstance(solver, PublicTreeCFR):
            solver._refresh_strategy(p)
        else:
            solver._refresh(p)


def write_outputs(out: str, state: dict[str, Any]) -> None:
    """CSV, JSON, PNG and markdown of the curves so far."""
    rows = []
    for m, st in state["methods"].items():
        for point in st["curve"]:
            rows.append({"method": m, **point})
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".csv.tmp", "w", newline="") as f:
        fields = ["method", "iteration", "exploitability", "mbg", "b0", "b1",
                  "solve_seconds", "eval_seconds"]
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(out + ".csv.tmp", out + ".csv")
    write_json_atomic(out + ".json", state)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    for m, st in state["methods"].items():
        if st["curve"]:
            xs = [p["iteration"] for p in st["curve"]]
            ys = [p["mbg"] for p in st["curve"]]
            ax.plot(xs, ys, marker="o", label=LABELS.get(m, m), **_style(m))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("iterations (sampled: %s board(s) per parent per round)"
                  % state["config"]["sample_boards"])
    ax.set_ylabel("exact full-game exploitability (b0+b1)/2, mb/g")
    ax.set_title("Numeral211 (40 cards), 225 flop / 396 turn buckets, vanilla CFR")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + ".png.tmp.png", dpi=110)
    plt.close(fig)
    os.replace(out + ".png.tmp.png", out + ".png")
    write_text_atomic(out + ".md", markdown(state))


_FAMILY_COLOURS = {"ehs": "tab:blue", "paemd": "tab:red", "krwemd": "tab:green",
                   "embedding": "tab:purple", "embedding_balanced": "tab:brown",
                   "full": "black"}


def _style(method: str) -> dict[str, Any]:
    """Colour by method family, line style by parameter setting (the base setting solid)."""
    base = VARIANT_OPTIONS[method][0] if method in VARIANT_OPTIONS else method
    variants = [v for v, (b, _) in VARIANT_OPTIONS.items() if b == base]
    styles = ["-", "-.", ":"]
    style = styles[1 + variants.index(method)] if method in variants else (
        "--" if method == "full" else "-")
    return {"color": _FAMILY_COLOURS.get(base, "gray"), "linestyle": style}


def markdown(state: dict[str, Any]) -> str:
    """The results table and how it was made."""
    cfg = state["config"]
    lines = [
        "# Numeral211 Figure 5 on the full game (40 cards), sampled iterations",
        "",
        "Exact full-game exploitability (b0 + b1) / 2 in mb/g (thousandths of the ante per "
        "game) of the average strategy after vanilla CFR with public chance sampling "
        f"({cfg['sample_boards']} board(s) of every round drawn per board of the round "
        f"before, seed {cfg['seed']}; every private hand of a drawn board is kept).  Budget: "
        "100 preflop classes (lossless), 225 flop and 396 turn buckets / advisors.  "
        "Explained in [../numeral211_abstractions.md](../numeral211_abstractions.md) "
        "(section \"Sampled iterations and Figure 5 on the full game\").",
        "",
        f"Rerun (continues from the checkpoints in `{cfg['work']}`): `{cfg['command']}`",
        "",
        "Sessions (machine at start: CPUs, load average, threads):",
        "",
    ]
    for s in state["sessions"]:
        lines.append(f"- {s['utc']} UTC: {s['cpus']} CPUs, load average "
                     f"{' / '.join(str(x) for x in s['load_average'])}, torch {s['torch']}, "
                     f"threads {s['threads']}")
    lines += ["", "| method | iterations done | final exploitability (mb/g) | b0, b1 "
              "(chips/game) | s / iteration (sampled) | s / exact evaluation (mean) | "
              "build (s) |", "|---|---:|---:|---|---:|---:|---:|"]
    for m, st in state["methods"].items():
        curve = st["curve"]
        if not curve:
            lines.append(f"| {LABELS.get(m, m)} | {st['iteration']} | not evaluated | | | | |")
            continue
        last = curve[-1]
        spi = st["solve_seconds"] / max(1, st["iteration"])
        ev = np.mean([p["eval_seconds"] for p in curve])
        build = state.get("build_seconds", {}).get(m)
        lines.append(f"| {LABELS.get(m, m)} | {last['iteration']} | {last['mbg']:.1f} | "
                     f"{last['b0']:.4f}, {last['b1']:.4f} | {spi:.2f} | {ev:.0f} | "
                     f"{'' if build is None else f'{build:.0f}'} |")
    lines += ["", "Curves (mb/g at each evaluated iteration):", "",
              "| method | " + " | ".join(str(i) for i in cfg["eval_at"]) + " |",
              "|---|" + "---:|" * len(cfg["eval_at"])]
    for m, st in state["methods"].items():
        at = {p["iteration"]: p["mbg"] for p in st["curve"]}
        lines.append(f"| {LABELS.get(m, m)} | " + " | ".join(
            f"{at[i]:.1f}" if i in at else "" for i in cfg["eval_at"]) + " |")
    lines += ["", "![Figure 5 on the full game](numeral211_figure5_full.png)", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/n211_figure5_full",
                    help="abstraction files, checkpoints and the run state")
    ap.add_argument("--out", default="docs/benchmarks/numeral211_figure5_full")
    ap.add_argument("--methods", default="ehs,paemd,krwemd,embedding,full")
    ap.add_argument("--iterations", type=int, default=1024)
    ap.add_argument("--eval-at", default="16,64,256,1024")
    ap.add_argument("--sample-boards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phi-top", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--deadline", default=None, help="HH:MM UTC: start no step that would "
                    "end later")
    ap.add_argument("--build", action="store_true", help="build missing abstraction files")
    ap.add_argument("--replot", action="store_true", help="only rewrite the outputs")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(methods) - set(LABELS)
    if unknown:
        sys.exit(f"unknown methods {sorted(unknown)}; choose from {sorted(LABELS)}")
    eval_at = sorted({int(x) for x in args.eval_at.split(",") if int(x) <= args.iterations}
                     | {args.iterations})
    os.makedirs(args.work, exist_ok=True)
    state_path = os.path.join(args.work, "state.json")
    state: dict[str, Any] = (json.load(open(state_path)) if os.path.exists(state_path)
                             else {"methods": {}, "sessions": []})
    config = {"sample_boards": args.sample_boards, "seed": args.seed, "phi_top": args.phi_top,
              "iterations": args.iterations, "eval_at": eval_at, "work": args.work,
              "algo": "cfr", "sampling": BoardSampling(args.sample_boards,
                                                       args.seed).to_dict(),
              "command": "nice -n 5 python " + " ".join(sys.argv)}
    old = state.get("config")
    if old and (old["sample_boards"], old["seed"]) != (args.sample_boards, args.seed):
        sys.exit("the work folder holds a run with other sampling settings; use another "
                 "--work")
    state["config"] = config
    for m in methods:
        state["methods"].setdefault(m, {"iteration": 0, "solve_seconds": 0.0, "curve": []})
    if args.replot:
        write_outputs(args.out, state)
        return
    state["sessions"].append(machine())
    if args.build:
        state["build_seconds"] = build_files(args.work, methods)
    deadline = None
    if args.deadline:
        hh, mm = (int(x) for x in args.deadline.split(":"))
        now = dt.datetime.now(dt.timezone.utc)
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()
    sampling = BoardSampling(args.sample_boards, args.seed)
    game = n211.build_game()
    cache: dict[str, AbstractCFR] = {}
    for target in eval_at:
        for m in methods:
            st = state["methods"][m]
            if st["iteration"] >= target:
                continue
            spi = st["solve_seconds"] / st["iteration"] if st["iteration"] else 1.5
            ev = np.mean([p["eval_seconds"] for p in st["curve"]]) if st["curve"] else 200.0
            need = (target - st["iteration"]) * spi + ev + (90 if m == "full" else 5)
            if deadline is not None and time.time() + need > deadline:
                print(f"{m}: skipping {st['iteration']} -> {target} (needs ~{need:.0f} s, past "
                      "the deadline)", flush=True)
                continue
            ck = os.path.join(args.work, f"{m}.state.npz")
            solver = cache.get(m)
            if solver is None:
                solver = make_solver(game, args.work, m, sampling, args.phi_top)
                if os.path.exists(ck):
                    load_state(ck, solver)
                if m != "full":
                    cache[m] = solver  # type: ignore[assignment]
            assert solver.iteration == st["iteration"], (m, solver.iteration, st["iteration"])
            start = time.perf_counter()
            while solver.iteration < target:
                solver.iterate(1)
            st["solve_seconds"] += time.perf_counter() - start
            st["iteration"] = solver.iteration
            start = time.perf_counter()
            # bucket / advisor policies are class-constant: no symmetrisation; the two
            # best responses only (the profile's values are not needed)
            ex = n211.exploitability(game, solver.average_policy(), symmetrize=m == "full",
                                     with_policy_values=False)
            seconds = time.perf_counter() - start
            point = {"iteration": solver.iteration, "exploitability": ex.exploitability,
                     "mbg": n211.to_mbg(ex.exploitability, game.config),
                     "b0": ex.best_response_values[0], "b1": ex.best_response_values[1],
                     "solve_seconds": st["solve_seconds"], "eval_seconds": seconds,
                     "load_average": list(os.getloadavg())}
            st["curve"].append(point)
            save_state(ck, solver)
            write_json_atomic(state_path, state)
            write_outputs(args.out, state)
            print(f"{m}: iteration {solver.iteration}, {point['mbg']:.1f} mb/g, "
                  f"{st['solve_seconds'] / solver.iteration:.2f} s/iteration, evaluation "
                  f"{seconds:.0f} s", flush=True)
            if m == "full":
                del solver
    write_outputs(args.out, state)


if __name__ == "__main__":
    main()
