"""Speed of the exact Pasur solver, before and after, side by side in one process.

The baseline ("before") is the solver as of commit ``523fbf2`` (``git show`` of
``src/tensorcfr/games/pasur/solving/exact.py`` loaded as a module from a temporary file); the
current one ("after") is ``tensorcfr.games.pasur.solving.exact``. Both run in this process,
1 torch thread, alternating per measurement, and every value is compared (an assertion, not
a sample). Three parts:

1. whole deals (seeds, default 1-20): wall and CPU seconds of ``solve_exact(deal)``;
2. mid-round states: after plays 3, 11, 19, 27, 35, 43 of the principal line of each deal
   (the real state) and one determinization of it (``engine/determinize.py``, as PIMC draws
   them): ``solve_exact(state)`` before and after, and ``action_values_many([state])``;
3. K determinizations (default 32) of one observed position: the old solver once per state,
   the new one once per state, and ``action_values_many`` (one level-wise pass per batch);
   at plays 0 (start), 20 (mid-game), 36 (late) of a few deals, and at every position of
   whole games (the PIMC agent's cost per move: median over the game).

Writes ``docs/benchmarks/pasur_exact_speed.md`` (and ``.json``). Usage::

    heavy .venv/bin/python benchmarks/bench_pasur_exact_speed.py [--seeds 1-20] [--k 32]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _timing import ROOT, git_commit, machine_line, parse_seeds, timed
BASELINE_COMMIT = "523fbf2"
MID_PLAYS = (3, 11, 19, 27, 35, 43)
BATCH_PLAYS = (("start", 0), ("mid-game", 20), ("late", 36))


def load_baseline() -> Any:
    """The solver module as of BASELINE_COMMIT, imported from a temporary file."""
    text = subprocess.run(["git", "show", f"{BASELINE_COMMIT}:src/tensorcfr/games/pasur/solving/exact.py"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="exact_baseline_"))
    path = folder / "exact_baseline.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("exact_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["exact_baseline"] = module
    spec.loader.exec_module(module)
    return module


def _after_plays(deal: tuple[int, ...], plays: list[dict[str, Any]], count: int) -> Any:
    from tensorcfr.games.pasur.engine import rules

    state = rules.initial_state(deal)
    for play in plays[:count]:
        state = rules.apply_action(state, rules.Action(play["card"], tuple(play["captured"])))
    return state


def _determinizations(state: Any, count: int, seed: int) -> list[Any]:
    from tensorcfr.games.pasur.engine.determinize import sample_states
    from tensorcfr.games.pasur.engine.observation import observe

    return sample_states(observe(state, state.player), count, seed)


def bench_whole(old: Any, seeds: list[int]) -> tuple[list[dict[str, Any]], dict[int, list]]:
    from tensorcfr.games.pasur.engine import rules
    from tensorcfr.games.pasur.solving import exact

    rows, lines = [], {}
    for seed in seeds:
        deal = rules.random_deal(seed)
        a, a_wall, a_cpu = timed(lambda: old.solve_exact(deal))
        b, b_wall, b_cpu = timed(lambda: exact.solve_exact(deal))
        assert a.value == b.value and a.states_per_level == b.states_per_level, seed
        assert a.principal_line == b.principal_line, seed
        lines[seed] = a.principal_line["plays"]
        rows.append({"seed": seed, "value": b.value, "states": b.num_states,
                     "edges": sum(b.edges_per_level), "before_wall_s": a_wall,
                     "before_cpu_s": a_cpu, "after_wall_s": b_wall, "after_cpu_s": b_cpu})
        print(json.dumps({"part": "whole", **rows[-1]}), flush=True)
    return rows, lines


def bench_mid(old: Any, seeds: list[int], lines: dict[int, list]) -> list[dict[str, Any]]:
    from tensorcfr.games.pasur.engine import rules
    from tensorcfr.games.pasur.solving import exact

    rows = []
    for seed in seeds:
        deal = rules.random_deal(seed)
        for play in MID_PLAYS:
            real = _after_plays(deal, lines[seed], play)
            drawn = _determinizations(real, 1, seed * 100 + play)[0]
            for kind, state in (("real", real), ("determinized", drawn)):
                a, a_wall, a_cpu = timed(lambda: old.solve_exact(state))
                b, b_wall, b_cpu = timed(lambda: exact.solve_exact(state))
                c, c_wall, c_cpu = timed(lambda: exact.action_values_many([state]))
                assert a.action_values(state) == b.action_values(state) == c[0], (seed, play)
                rows.append({"seed": seed, "play": play, "kind": kind, "states": b.num_states,
                             "before_wall_s": a_wall, "before_cpu_s": a_cpu,
                             "after_wall_s": b_wall, "after_cpu_s": b_cpu,
                             "many_wall_s": c_wall, "many_cpu_s": c_cpu})
        print(json.dumps({"part": "mid", "seed": seed}), flush=True)
    return rows


def _batch_row(old: Any, states: list[Any], with_old: bool) -> dict[str, Any]:
    from tensorcfr.games.pasur.solving import exact

    many, m_wall, m_cpu = timed(lambda: exact.action_values_many(states))
    singles, s_wall, s_cpu = timed(lambda: [exact.solve_exact(s).action_values(s) for s in states])
    assert many == singles
    per_pass = min(exact.batch_capacity(states), len(states))
    if states[0].play_index < exact._EARLY_PLAYS:
        per_pass = min(per_pass, exact._EARLY_PASS_STARTS)
    row = {"k": len(states), "many_wall_s": m_wall, "many_cpu_s": m_cpu,
           "after_each_wall_s": s_wall, "after_each_cpu_s": s_cpu,
           "capacity": exact.batch_capacity(states), "per_pass": per_pass}
    if with_old:
        olds, o_wall, o_cpu = timed(lambda: [old.solve_exact(s).action_values(s) for s in states])
        assert olds == many
        row.update(before_each_wall_s=o_wall, before_each_cpu_s=o_cpu)
    return row


def bench_batches(old: Any, seeds: list[int], lines: dict[int, list], k: int
                  ) -> list[dict[str, Any]]:
    from tensorcfr.games.pasur.engine import rules

    rows = []
    for seed in seeds:
        deal = rules.random_deal(seed)
        for name, play in BATCH_PLAYS:
            state = _after_plays(deal, lines[seed], play)
            row = _batch_row(old, _determinizations(state, k, seed), with_old=True)
            rows.append({"seed": seed, "stage": name, "play": play, **row})
            print(json.dumps({"part": "batch", **rows[-1]}), flush=True)
    return rows


def bench_games(seeds: list[int], lines: dict[int, list], k: int) -> list[dict[str, Any]]:
    """action_values_many on K determinizations at every position of the principal line."""
    from tensorcfr.games.pasur.engine import rules
    from tensorcfr.games.pasur.solving import exact

    rows = []
    for seed in seeds:
        deal = rules.random_deal(seed)
        per_move = []
        for play in range(48):
            state = _after_plays(deal, lines[seed], play)
            states = _determinizations(state, k, seed * 1000 + play)
            _, wall, cpu = timed(lambda: exact.action_values_many(states))
            per_move.append({"play": play, "wall_s": wall, "cpu_s": cpu})
        rows.append({"seed": seed, "moves": per_move})
        walls = [m["wall_s"] for m in per_move]
        print(json.dumps({"part": "game", "seed": seed, "median_wall_s": statistics.median(walls),
                          "max_wall_s": max(walls)}), flush=True)
    return rows


def _ms(x: float) -> str:
    return f"{1000 * x:.1f}"


def _markdown(info: dict[str, Any], whole: list, mid: list, batches: list, games: list,
              k: int) -> str:
    med = statistics.median
    lines = [
        "# Exact Pasur solver: speed before and after",
        "",
        "Generated by `benchmarks/bench_pasur_exact_speed.py` (re-run it to refresh this page).",
        "",
        f"- machine: {info['machine']}; Python {info['python']}, numpy {info['numpy']}, "
        f"torch {info['torch']}; 1 torch thread, one process",
        f"- date: {info['date']}; load average (1 min) at start / end: {info['load'][0]:.2f} / "
        f"{info['load'][1]:.2f} on 2 cores shared with other jobs (wall times are inflated by "
        "the load; CPU times are the steadier measure)",
        f"- before: the solver of commit `{BASELINE_COMMIT}` (torch, loaded from `git show`); "
        f"after: `solving/exact.py` of the tree at commit `{info.get('commit', '?')}` (numpy; "
        "uncommitted changes, if any, included). Every value compared: whole-deal values, "
        "states per level and principal lines; every action value of every mid-round and "
        "batched state.",
        "- before's `solve_exact` also replays the principal line through the rules (about 5% "
        "of its time); after computes the line only when it is read.",
        "",
        "## Whole deals",
        "",
        "| seed | value | states | edges | before wall s | before CPU s | after wall s "
        "| after CPU s | speed-up (CPU) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in whole:
        lines.append(f"| {r['seed']} | {r['value']:+d} | {r['states']:,} | {r['edges']:,} | "
                     f"{r['before_wall_s']:.3f} | {r['before_cpu_s']:.3f} | {r['after_wall_s']:.3f} | "
                     f"{r['after_cpu_s']:.3f} | {r['before_cpu_s'] / r['after_cpu_s']:.1f}x |")
    bw, bc = med([r["before_wall_s"] for r in whole]), med([r["before_cpu_s"] for r in whole])
    aw, ac = med([r["after_wall_s"] for r in whole]), med([r["after_cpu_s"] for r in whole])
    lines += [f"| **median** | | | | {bw:.3f} | {bc:.3f} | {aw:.3f} | {ac:.3f} | {bc / ac:.1f}x |",
              "", f"Goal: median at most 0.1 s: wall {aw:.3f} s, CPU {ac:.3f} s.", ""]
    lines += ["## Mid-round states", "",
              "After play *p* of each deal's principal line: the real state, and one "
              "determinization of the mover's observation (the opponent's hand and the cards "
              "to come redrawn). Median over the seeds, milliseconds.", "",
              "| after play | kind | states (median) | before wall | before CPU | after wall "
              "| after CPU | `action_values_many([s])` wall | speed-up (CPU) |",
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for play in MID_PLAYS:
        for kind in ("real", "determinized"):
            rs = [r for r in mid if r["play"] == play and r["kind"] == kind]
            b, a = med([r["before_cpu_s"] for r in rs]), med([r["after_cpu_s"] for r in rs])
            lines.append(f"| {play} | {kind} | {med([r['states'] for r in rs]):,.0f} | "
                         f"{_ms(med([r['before_wall_s'] for r in rs]))} | {_ms(b)} | "
                         f"{_ms(med([r['after_wall_s'] for r in rs]))} | {_ms(a)} | "
                         f"{_ms(med([r['many_wall_s'] for r in rs]))} | {b / a:.1f}x |")
    for kind in ("real", "determinized"):
        rs = [r for r in mid if r["kind"] == kind]
        lines.append(f"| all | {kind} | | {_ms(med([r['before_wall_s'] for r in rs]))} | "
                     f"{_ms(med([r['before_cpu_s'] for r in rs]))} | "
                     f"{_ms(med([r['after_wall_s'] for r in rs]))} | "
                     f"{_ms(med([r['after_cpu_s'] for r in rs]))} | "
                     f"{_ms(med([r['many_wall_s'] for r in rs]))} | |")
    det = [r for r in mid if r["kind"] == "determinized"]
    lines += ["", f"Goal: median at most 10 ms: determinized states, after, wall "
              f"{_ms(med([r['after_wall_s'] for r in det]))} ms, CPU "
              f"{_ms(med([r['after_cpu_s'] for r in det]))} ms (the mid-round plays above, all seeds).",
              ""]
    lines += [f"## K = {k} determinizations of one position", "",
              "Seconds for all K states: before (old solver, one solve per state), after "
              "(new solver, one solve per state), and `action_values_many` (one pass per "
              "batch; `per pass` = states solved together: at most what the free key bits "
              "hold, and at most 8 before play 24).", "",
              "| seed | stage (play) | per pass | before, each: wall / CPU | after, each: wall / CPU "
              "| batched: wall / CPU | batched vs before (CPU) |",
              "|---:|---|---:|---:|---:|---:|---:|"]
    for r in batches:
        per_pass = r.get("per_pass", min(r["capacity"], k, 8 if r["play"] < 24 else k))
        lines.append(f"| {r['seed']} | {r['stage']} ({r['play']}) | {per_pass} | "
                     f"{r['before_each_wall_s']:.3f} / {r['before_each_cpu_s']:.3f} | "
                     f"{r['after_each_wall_s']:.3f} / {r['after_each_cpu_s']:.3f} | "
                     f"{r['many_wall_s']:.3f} / {r['many_cpu_s']:.3f} | "
                     f"{r['before_each_cpu_s'] / r['many_cpu_s']:.1f}x |")
    if games:
        lines += ["", f"## A PIMC move: K = {k} determinizations at every position of a game", "",
                  "`action_values_many` on K determinizations of the mover's observation at each "
                  "of the 48 positions of a deal's principal line (one agent's 24 moves are "
                  "every other position; both players' positions are listed).", "",
                  "| seed | median wall s | median CPU s | max wall s (play) | plays 0-7 median wall s "
                  "| plays 24-47 median wall s |", "|---:|---:|---:|---:|---:|---:|"]
        for g in games:
            ms = g["moves"]
            worst = max(ms, key=lambda m: m["wall_s"])
            lines.append(f"| {g['seed']} | {med([m['wall_s'] for m in ms]):.3f} | "
                         f"{med([m['cpu_s'] for m in ms]):.3f} | {worst['wall_s']:.2f} "
                         f"({worst['play']}) | {med([m['wall_s'] for m in ms[:8]]):.3f} | "
                         f"{med([m['wall_s'] for m in ms[24:]]):.3f} |")
        allm = [m["wall_s"] for g in games for m in g["moves"]]
        lines += ["", f"Goal: at most 1 s per move (median over a game): median over all "
                  f"positions {med(allm):.3f} s wall."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-20")
    parser.add_argument("--batch-seeds", default="1-5")
    parser.add_argument("--game-seeds", default="1-3")
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "pasur_exact_speed.md"))
    parser.add_argument("--render", metavar="JSON",
                        help="only rewrite the markdown from a saved .json of this benchmark")
    args = parser.parse_args()
    if args.render:
        from tensorcfr.utils.io import write_text_atomic

        saved = json.loads(Path(args.render).read_text())
        write_text_atomic(args.out, _markdown(saved["info"], saved["whole"], saved["mid"],
                                              saved["batches"], saved["games"], args.k))
        return

    import numpy
    import torch

    from tensorcfr.utils.io import write_json_atomic, write_text_atomic
    from tensorcfr.utils.machine import machine_info

    torch.set_num_threads(1)
    commit = git_commit()
    machine = machine_info()
    load_start = os.getloadavg()[0]
    old = load_baseline()
    from tensorcfr.games.pasur.engine import rules
    from tensorcfr.games.pasur.solving import exact

    warm = rules.initial_state(rules.random_deal(99))
    while warm.play_index < 40:
        warm = rules.apply_action(warm, rules.legal_actions(warm)[0])
    old.solve_exact(warm), exact.solve_exact(warm), exact.action_values_many([warm, warm])
    random.seed(0)
    seeds = parse_seeds(args.seeds)
    whole, lines = bench_whole(old, seeds)
    mid = bench_mid(old, seeds, lines)
    batch_seeds = [s for s in parse_seeds(args.batch_seeds) if s in lines]
    batches = bench_batches(old, batch_seeds, lines, args.k)
    game_seeds = [s for s in parse_seeds(args.game_seeds) if s in lines]
    games = bench_games(game_seeds, lines, args.k)
    info = {"machine": machine_line(machine),
            "commit": commit,
            "python": machine["python"], "torch": machine["torch"], "numpy": numpy.__version__,
            "date": machine["date"], "load": (load_start, os.getloadavg()[0]), "threads": 1}
    text = _markdown(info, whole, mid, batches, games, args.k)
    write_text_atomic(args.out, text)
    write_json_atomic(Path(args.out).with_suffix(".json"),
                      {"info": info, "whole": whole, "mid": mid, "batches": batches, "games": games})
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
