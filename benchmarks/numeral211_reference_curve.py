"""The exact full-game reference curve of Numeral211: exact CFR+ (or vanilla CFR) with
alternating updates, the exact exploitability of the average strategy at iterations 1, 2, 4,
..., ``--iterations``, checkpointed so that a later run continues it.

Writes ``--out-prefix`` + ``.json`` (the curve: iteration, exploitability in chips per game,
mb/g, b0 and b1 in chips and the sum b0 + b1 in milli-blinds as the Embedding CFR paper
reports it (thousandths of the ante), CPU and wall seconds of solving so far) after every
evaluation, and the solver checkpoint ``--out-prefix`` + ``.ck.npz`` (atomic,
:func:`~tensorcfr.games.numeral211.solving.solver.save_checkpoint`; about 1 GiB for the full game:
keep it out of the repository) after every evaluation and every
``--checkpoint-minutes``.  Running it again with the same prefix resumes from the checkpoint
(bitwise the same iterates) and keeps the curve.  ``--stop-at HH:MM`` (UTC) ends the run
cleanly (checkpoint written) at that time.  Run it under ``heavy``::

    heavy .venv/bin/python benchmarks/numeral211_reference_curve.py --algo cfr+ \\
        --iterations 1024 --out-prefix docs/benchmarks/numeral211_reference_cfrplus
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path
from typing import Any


def plot_curve(curve_path: Path, png_path: Path) -> None:
    """PNG of the curve in ``curve_path``: mb/g and b0 + b1 (milli-antes) against the
    iteration, both axes logarithmic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(curve_path.read_text(encoding="utf-8"))
    curve = data["curve"]
    fig, ax = plt.subplots(figsize=(6, 4))
    its = [p["iteration"] for p in curve]
    ax.plot(its, [p["mbg"] for p in curve], marker="o", label="exploitability (mb/g)")
    ax.plot(its, [p["b0_plus_b1_mb"] for p in curve], marker="s",
            label="b0 + b1 (milli-antes)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"exact {data['algo']} iteration (alternating updates)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title("Numeral211 full game: exact reference curve")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)


def plot_curves(curve_paths: list[Path], png_path: Path) -> None:
    """One PNG with every curve in ``curve_paths`` (e.g. CFR+ and vanilla CFR): mb/g (solid)
    and b0 + b1 in milli-antes (dashed) against the iteration, both axes logarithmic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for path in curve_paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        curve = data["curve"]
        its = [p["iteration"] for p in curve]
        line, = ax.plot(its, [p["mbg"] for p in curve], marker="o",
                        label=f"exact {data['algo']}: exploitability (mb/g)")
        ax.plot(its, [p["b0_plus_b1_mb"] for p in curve], ls="--", color=line.get_color(),
                label=f"exact {data['algo']}: b0 + b1 (milli-antes)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("exact iteration (alternating updates)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Numeral211 full game: exact reference curves")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)


def markdown_table(curve_path: Path) -> str:
    """The curve in ``curve_path`` as a markdown table (chips per game, mb/g, b0, b1,
    b0 + b1 in milli-antes, CPU seconds of solving so far, load averages)."""
    data = json.loads(curve_path.read_text(encoding="utf-8"))
    lines = ["| iteration | exploitability (chips/game) | mb/g | b0 | b1 | b0 + b1 (milli-antes) "
             "| CPU s of solving so far | load |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in data["curve"]:
        lines.append(f"| {p['iteration']} | {p['exploitability']:.5f} | {p['mbg']:,.1f} | "
                     f"{p['b0']:.5f} | {p['b1']:.5f} | {p['b0_plus_b1_mb']:,.1f} | "
                     f"{p['cpu_seconds']:,.0f} | {p['load']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="cfr+", choices=["cfr+", "cfr"])
    parser.add_argument("--iterations", type=int, default=1024)
    parser.add_argument("--out-prefix", required=True)
    parser.add_argument("--checkpoint-minutes", type=float, default=10.0)
    parser.add_argument("--stop-at", default=None, help="UTC time HH:MM to stop cleanly")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ranks", default="23456789TA", help="deck ranks (smoke tests)")
    parser.add_argument("--plot-only", action="store_true",
                        help="only redraw PREFIX.png from PREFIX.json")
    parser.add_argument("--compare", nargs="*", default=None, metavar="PREFIX2",
                        help="with --plot-only: also draw these curves into PREFIX_both.png")
    parser.add_argument("--markdown", action="store_true",
                        help="only print PREFIX.json as a markdown table")
    args = parser.parse_args()
    prefix = Path(args.out_prefix)
    if args.markdown:
        print(markdown_table(prefix.with_name(prefix.name + ".json")))
        return
    if args.plot_only:
        plot_curve(prefix.with_name(prefix.name + ".json"), prefix.with_name(prefix.name + ".png"))
        if args.compare:
            paths = [prefix.with_name(prefix.name + ".json")] + [
                Path(p).with_name(Path(p).name + ".json") for p in args.compare]
            plot_curves(paths, prefix.with_name(prefix.name + "_both.png"))
        return

    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.utils.io import write_json_atomic
    from tensorcfr.utils.resources import set_threads

    threads = set_threads(args.threads)
    curve_path = prefix.with_name(prefix.name + ".json")
    ck_path = prefix.with_name(prefix.name + ".ck.npz")
    stop = None
    if args.stop_at:
        now = dt.datetime.now(dt.timezone.utc)
        hh, mm = (int(x) for x in args.stop_at.split(":"))
        stop = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    game = n211.build_game(GameConfig(ranks=args.ranks))
    solver = n211.make_solver(game, args.algo)
    curve: list[dict[str, Any]] = []
    solved_cpu = solved_wall = 0.0
    if ck_path.is_file():
        meta = n211.load_checkpoint(ck_path, solver, game.config)
        curve = list(meta.get("curve", []))
        if "solved_cpu_seconds" in meta:  # the time up to the checkpoint, not the last point
            solved_cpu = float(meta["solved_cpu_seconds"])
            solved_wall = float(meta["solved_wall_seconds"])
        elif curve:  # checkpoints written before the key: the last evaluation's (undercounts)
            solved_cpu, solved_wall = curve[-1]["cpu_seconds"], curve[-1]["wall_seconds"]
    ante = game.config.ante

    def save() -> None:
        n211.save_checkpoint(ck_path, solver, game.config, curve=curve,
                             solved_cpu_seconds=solved_cpu, solved_wall_seconds=solved_wall)
        write_json_atomic(curve_path, {"game": game.config.to_dict(), "algo": args.algo,
                                       "alternating_updates": True, "threads": threads,
                                       "storage": type(solver).__name__, "curve": curve})

    last_save = time.perf_counter()
    while solver.iteration < args.iterations:
        if stop is not None and dt.datetime.now(dt.timezone.utc) >= stop:
            break
        c0, w0 = time.process_time(), time.perf_counter()
        solver.iterate(1)
        solved_cpu += time.process_time() - c0
        solved_wall += time.perf_counter() - w0
        t = solver.iteration
        if t & (t - 1) == 0 or t == args.iterations:
            ex = n211.class_exploitability(solver.game, solver.average_class_policy(),
                                           with_policy_values=False)
            b0, b1 = ex.best_response_values
            curve.append({"iteration": t, "exploitability": ex.exploitability,
                          "mbg": n211.to_mbg(ex.exploitability, game.config),
                          "b0": b0, "b1": b1, "b0_plus_b1_mb": (b0 + b1) * 1000.0 / ante,
                          "cpu_seconds": solved_cpu, "wall_seconds": solved_wall,
                          "load": " ".join(f"{x:.2f}" for x in os.getloadavg())})
            print(json.dumps(curve[-1]), flush=True)
            save()
            last_save = time.perf_counter()
        elif time.perf_counter() - last_save >= 60 * args.checkpoint_minutes:
            save()
            last_save = time.perf_counter()
    save()
    print(json.dumps({"iteration": solver.iteration, "checkpoint": str(ck_path)}), flush=True)


if __name__ == "__main__":
    main()
