"""Benchmark of the hidden-hand agents: duplicate tournaments, and the page of their results.

Two tournaments (``tensorcfr pasur tournament`` through its library call), each resumable in
its own folder (rerun the script to continue one that was stopped):

* ``cheap``: the fast agents (``greedy``, ``hidden-model``, ``random``) on 2,000 seeded deals
  (seeds from 100,000), in this process;
* ``strong``: the searching agents at equal time per move (``pimc`` and ``ismcts-time`` at
  ``--seconds-per-move``, default 0.3 s, PIMC with K = 32 at most) against ``hidden-model``
  and ``greedy``, on fewer deals (seeds from 200,000), on a local Ray instance.

Writes ``docs/benchmarks/pasur_tournament.md`` (tables of every pair, the price of hidden
information by seat, move times, machine and load) and copies both cross tables there as
PNG. ``--render-only`` rewrites the page from finished folders without playing.
``--tables DIR [DIR ...]`` prints the same tables of any finished (or interrupted) tournament
folders on stdout and plays nothing (the ``round-search`` runs of docs/pasur_tournament.md).

Usage::

    .venv/bin/python benchmarks/bench_pasur_tournament.py [--runs runs/tournaments]
        [--cheap-deals 2000] [--strong-deals 40] [--seconds-per-move 0.3] [--workers 2]
        [--render-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path
from typing import Any

from tensorcfr.utils.machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks" / "pasur_tournament.md"


def _settings(args: argparse.Namespace, which: str) -> Any:
    from tensorcfr.games.pasur.agents import AgentOptions
    from tensorcfr.games.pasur.tournament import TournamentSettings

    runs = Path(args.runs)
    if which == "cheap":
        return TournamentSettings(agents=("greedy", "hidden-model", "random"),
                                  out=runs / "cheap", deals=args.cheap_deals, seed=100_000,
                                  in_process=True)
    return TournamentSettings(agents=("pimc", "ismcts-time", "hidden-model", "greedy"),
                              out=runs / "strong", deals=args.strong_deals, seed=200_000,
                              workers=args.workers,
                              agent_options=AgentOptions(
                                  determinizations=32,
                                  seconds_per_move=args.seconds_per_move))


def _fmt(x: float | None, digits: int = 2, sign: bool = True) -> str:
    if x is None:
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _section(title: str, command: str, result: dict[str, Any], png: str) -> list[str]:
    lines = [f"## {title}", "", f"`{command}`", "",
             f"{result['deals']:,} deals, every pair plays each deal twice with the seats "
             "swapped" + (f"; {result['seconds']:,.0f} s ({result.get('mode', '?')})"
                          if "seconds" in result else "") + ".", "",
             "| A | B | deals | A minus B, points per deal | 95% interval | A wins | ties "
             "| B wins | significant |",
             "|---|---|---:|---:|---|---:|---:|---:|---|"]
    for p in result["pairs"]:
        lo, hi = p["ci95"] if p["ci95"] else (None, None)
        sig = "yes" if lo is not None and (lo > 0 or hi < 0) else "no"
        lines.append(f"| {p['a']} | {p['b']} | {p['deals']:,} | {_fmt(p['mean_diff'])} | "
                     f"[{_fmt(lo)}, {_fmt(hi)}] | {_fmt(p['a_win_rate'], 3, False)} | "
                     f"{_fmt(p['tie_rate'], 3, False)} | {_fmt(p['b_win_rate'], 3, False)} "
                     f"| {sig} |")
    lines += ["", "Price of hidden information (the deal's exact open-hands value minus the "
              "result, from the agent's seat; points per game), and the median seconds per "
              "move:", "", "| pair | agent | as Alex | as Bob | median s / move |",
              "|---|---|---:|---:|---:|"]
    for p in result["pairs"]:
        for agent in (p["a"], p["b"]):
            price = p["price_of_hidden_information"].get(agent, {})
            secs = p.get("move_seconds_median", {}).get(agent)
            lines.append(f"| {p['a']} vs {p['b']} | {agent} | {_fmt(price.get('as_alex'))} "
                         f"| {_fmt(price.get('as_bob'))} | "
                         f"{'-' if secs is None else f'{secs:.4f}'} |")
    lines += ["", f"![cross table]({png})", ""]
    return lines


def _load(folder: Path) -> dict[str, Any]:
    """The result of a finished tournament folder (``summary.parquet`` + settings)."""
    import json

    import pyarrow.parquet as pq

    rows = pq.read_table(folder / "summary.parquet").to_pylist()
    settings = json.loads((folder / "tournament.json").read_text())
    pairs = []
    for r in rows:
        pairs.append({**r, "ci95": [r["ci95_low"], r["ci95_high"]]
                      if r["ci95_low"] is not None else None,
                      "price_of_hidden_information": {
                          r[side]: {"mean": r[f"{side}_price"],
                                    "as_alex": r[f"{side}_price_as_alex"],
                                    "as_bob": r[f"{side}_price_as_bob"]} for side in "ab"},
                      "move_seconds_median": {r[side]: r[f"{side}_move_seconds_median"]
                                              for side in "ab"}})
    deals = max((p["deals"] for p in pairs), default=0)
    return {"pairs": pairs, "deals": deals, "settings": settings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=str(ROOT / "runs" / "tournaments"))
    parser.add_argument("--cheap-deals", type=int, default=2000)
    parser.add_argument("--strong-deals", type=int, default=40)
    parser.add_argument("--seconds-per-move", type=float, default=0.3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--out", default=str(PAGE))
    parser.add_argument("--tables", nargs="+", default=None, metavar="DIR",
                        help="print the tables of these tournament folders and stop")
    args = parser.parse_args()
    if args.tables:
        for folder in args.tables:
            result = _load(Path(folder))
            agents = ",".join(result["settings"]["agents"])
            print("\n".join(_section(f"{folder}", f"agents {agents}", result,
                                     "cross_table.png")[:-2]))
        return

    import torch

    torch.set_num_threads(1)
    from tensorcfr.games.pasur.tournament import run_tournament

    load_start = os.getloadavg()[0]
    results: dict[str, dict[str, Any]] = {}
    for which in ("cheap", "strong"):
        settings = _settings(args, which)
        if args.render_only:
            results[which] = _load(settings.out)
            continue
        started = time.perf_counter()
        results[which] = run_tournament(settings).as_dict()
        results[which]["seconds"] = time.perf_counter() - started
    load_end = os.getloadavg()[0]
    page = Path(args.out)
    page.parent.mkdir(parents=True, exist_ok=True)
    for which in ("cheap", "strong"):
        shutil.copyfile(Path(args.runs) / which / "cross_table.png",
                        page.parent / f"pasur_tournament_{which}.png")
    info = machine_info()
    lines = ["# Pasur with hidden hands: duplicate tournaments", "",
             "Generated by `benchmarks/bench_pasur_tournament.py` (rerun it to refresh this "
             "page; `--render-only` rebuilds it from the run folders).", "",
             f"- machine: {info.get('cpu', '?')}, {info.get('cores', '?')} cores; Python "
             f"{info.get('python', '?')}, torch {info.get('torch', '?')}; 1 torch thread per "
             "worker",
             "- load: rendered from finished run folders (the runs' load and times are noted in "
             "[docs/pasur_tournament.md](../pasur_tournament.md#results))" if args.render_only
             else f"- load average (1 min) at start / end: {load_start:.2f} / {load_end:.2f} "
             "(a 2-core machine shared with other jobs)", ""]
    lines += _section("Fast agents, 2,000 deals",
                      f"tensorcfr pasur tournament --agents greedy,hidden-model,random "
                      f"--deals {args.cheap_deals} --seed 100000 --in-process --out "
                      "runs/cheap", results["cheap"], "pasur_tournament_cheap.png")
    lines += _section("Searching agents at equal time per move",
                      f"tensorcfr pasur tournament --agents pimc,ismcts-time,hidden-model,"
                      f"greedy --deals {args.strong_deals} --seed 200000 --workers "
                      f"{args.workers} --seconds-per-move {args.seconds_per_move} "
                      "--determinizations 32 --out runs/strong", results["strong"],
                      "pasur_tournament_strong.png")
    page.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {page}")


if __name__ == "__main__":
    main()
