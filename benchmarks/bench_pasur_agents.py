"""Speed and strength of the hidden-hand agents (greedy, hidden-model, pimc, pimc-infer).

1. **Speed** of ``greedy``, ``hidden-model`` and ``distilled``: decisions per second of
   CPU time over every decision of ``--batch-games`` games (greedy vs random, the same for
   every agent), in one ``choose_many`` call (*batch*) and one ``choose`` call a decision
   (*one at a time*, as in a game), best of 3, 1 thread. The two learned agents are timed on
   both paths side by side: the compiled one they use (feature rows and trees in numba) and
   XGBoost's (``decision_rows`` + ``inplace_predict``, what they did before), after checking
   that both paths choose the same plays. ``--speed-only`` runs this part alone and prints its
   table (``--speed-json`` keeps the numbers).
2. **Strength** over ``--strength-deals`` deals, seats swapped (each deal played twice):
   mean points difference (row agent minus column agent) with its 95% interval.
3. **PIMC time per play**: ``pimc`` with K = ``--k`` (no time budget) plays
   ``--pimc-games`` whole games against ``greedy`` (seats alternate), 1 thread; seconds per
   play of PIMC: median, 90th percentile, mean, and the median by round; the same for
   ``pimc-infer`` over ``--infer-games`` games. Games are checkpointed one by one in
   ``--checkpoint`` (JSON) and a rerun resumes.

Writes ``docs/benchmarks/pasur_agents.md`` and ``.json``. Run it under ``heavy``::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_pasur_agents.py
    nice -n 10 .venv/bin/python benchmarks/bench_pasur_agents.py --speed-only --batch-games 100
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tensorcfr.games.pasur.agents import AgentOptions, make_agent  # noqa: E402
from tensorcfr.games.pasur.engine import rules  # noqa: E402
from tensorcfr.games.pasur.engine.observation import observe  # noqa: E402
from tensorcfr.games.pasur.playing.match import move_seconds_stats, play_game  # noqa: E402
from tensorcfr.utils.io import write_json_atomic  # noqa: E402


SPEED_AGENTS = ("greedy", "hidden-model", "distilled")
LEARNED = ("hidden-model", "distilled")


def speed_decisions(games: int) -> list[Any]:
    """The mover's observation at every play of ``games`` games, greedy (Alex) against
    random (Bob), deals ``random_deal(0..games-1)``."""
    greedy, random_agent = make_agent("greedy"), make_agent("random")
    observations = []
    for seed in range(games):
        state = rules.initial_state(rules.random_deal(seed))
        random_agent.reset(seed)
        while not state.is_terminal:
            obs = observe(state, state.player)
            observations.append(obs)
            agent = greedy if state.player == 0 else random_agent
            state = rules.apply_action(state, agent.choose(obs))
    return observations


def _best_rate(run: Any, decisions: int, repeats: int = 3) -> dict[str, float]:
    """Decisions per second of CPU time and of wall time, best of ``repeats`` runs."""
    cpu = wall = math.inf
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        run()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return {"cpu": decisions / cpu, "wall": decisions / wall}


def batch_speed(games: int, names: tuple[str, ...] = SPEED_AGENTS) -> dict[str, Any]:
    """Decisions per second of each agent over the same decisions: ``batch`` (one
    ``choose_many`` call) and ``single`` (one ``choose`` call a decision); for the learned
    agents also their XGBoost path (``<name> (xgboost)``), checked to choose the same plays."""
    observations = speed_decisions(games)
    n = len(observations)
    out: dict[str, Any] = {"decisions": n, "agents": {}}
    for name in names:
        agent: Any = make_agent(name)
        paths = [(name, agent)]
        if name in LEARNED:
            xgb: Any = make_agent(name)
            xgb.model = dataclasses.replace(xgb.model, forest=None)
            assert agent.model.forest is not None, f"{name}: the trees did not compile"
            plays = agent.choose_many(observations)
            assert plays == xgb.choose_many(observations), f"{name}: the paths differ"
            paths.append((f"{name} (xgboost)", xgb))
        for label, player in paths:
            batch = _best_rate(lambda: player.choose_many(observations), n)
            # XGBoost one decision a call costs ~1 ms: one pass is enough to time it
            single = _best_rate(lambda: [player.choose(o) for o in observations], n,
                                repeats=1 if label.endswith("(xgboost)") else 3)
            out["agents"][label] = {"batch": batch, "single": single}
            print(f"{label}: batch {batch['cpu']:,.0f}/s, one at a time {single['cpu']:,.0f}/s "
                  "(CPU)", flush=True)
    return out


def speed_table(speed: dict[str, Any]) -> list[str]:
    """The speed section's markdown table."""
    lines = ["| agent | path | batch, decisions / s CPU (wall) | one at a time, decisions / s "
             "CPU (wall) |", "|---|---|---:|---:|"]
    for label, rates in speed["agents"].items():
        name, _, path = label.partition(" (")
        path = "XGBoost (before)" if path else ("compiled" if name in LEARNED else "Python")
        b, s1 = rates["batch"], rates["single"]
        lines.append(f"| {name} | {path} | {b['cpu']:,.0f} ({b['wall']:,.0f}) | "
                     f"{s1['cpu']:,.0f} ({s1['wall']:,.0f}) |")
    return lines


def strength(pairs: list[tuple[str, str]], deals: int, seed: int) -> list[dict[str, Any]]:
    """Mean points difference of each (row, column) pair, seats swapped per deal."""
    rows = []
    for a, b in pairs:
        agent_a, agent_b = make_agent(a), make_agent(b)
        diffs = []
        for i in range(deals):
            deal = rules.random_deal(seed + i)
            diffs.append(play_game(deal, agent_a, agent_b, seed + i).utility)
            diffs.append(-play_game(deal, agent_b, agent_a, seed + i).utility)
        mean = statistics.fmean(diffs)
        half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
        wins = sum(d > 0 for d in diffs) / len(diffs)
        rows.append({"agent": a, "opponent": b, "games": len(diffs), "mean_diff": mean,
                     "ci95": half, "win_rate": wins})
        print(f"{a} vs {b}: {mean:+.2f} ± {half:.2f}", flush=True)
    return rows


def pimc_times(name: str, k: int, games: int, seed: int, checkpoint: Path) -> dict[str, Any]:
    """Seconds per play of ``name`` (K = ``k``) in whole games against greedy."""
    done: dict[str, Any] = {}
    if checkpoint.is_file():
        done = json.loads(checkpoint.read_text())
    key = f"{name}|k{k}|seed{seed}"
    played = done.setdefault(key, [])
    for g in range(len(played), games):
        agent, greedy = make_agent(name, AgentOptions(determinizations=k)), make_agent("greedy")
        seat = g % 2
        seats = (agent, greedy) if seat == 0 else (greedy, agent)
        result = play_game(rules.random_deal(seed + g), *seats, seed=seed + g)
        utility = result.utility if seat == 0 else -result.utility
        choice = []
        state = rules.initial_state(result.state.deal)
        for action in result.actions:
            if state.player == seat:
                choice.append(len(rules.legal_actions(state)) > 1)
            state = rules.apply_action(state, action)
        played.append({"seat": seat, "seconds": list(result.move_seconds[seat]),
                       "choice": choice, "diff": utility})
        write_json_atomic(checkpoint, done)
        print(f"{name} game {g}: {sum(played[-1]['seconds']):.0f} s, diff {utility:+d}",
              flush=True)
    seconds = [s for game in played[:games] for s in game["seconds"]]
    by_round = []
    for r in range(rules.NUM_ROUNDS):
        per = [game["seconds"][4 * r + i] for game in played[:games] for i in range(4)]
        by_round.append(statistics.median(per))
    with_choice = [s for game in played[:games]
                   for s, c in zip(game["seconds"], game["choice"]) if c]
    return {"agent": name, "k": k, "games": games, **move_seconds_stats(seconds),
            "with_choice": move_seconds_stats(with_choice),
            "median_by_round": by_round,
            "diffs_vs_greedy": [game["diff"] for game in played[:games]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-games", type=int, default=200)
    parser.add_argument("--strength-deals", type=int, default=200)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--pimc-games", type=int, default=4)
    parser.add_argument("--infer-games", type=int, default=2)
    parser.add_argument("--seed", type=int, default=30000)
    parser.add_argument("--checkpoint", default=str(ROOT / "runs/bench_pasur_agents.json"))
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/pasur_agents.md"))
    parser.add_argument("--speed-only", action="store_true",
                        help="time the agents' decisions only and print the table")
    parser.add_argument("--speed-json", default=None, help="with --speed-only: save the numbers")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    load_start = os.getloadavg()[0]
    started = time.perf_counter()
    speed = batch_speed(args.batch_games)
    if args.speed_only:
        speed.update(threads=1, load_start=load_start, load_end=os.getloadavg()[0],
                     seconds=time.perf_counter() - started,
                     date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        print("\n".join(speed_table(speed)))
        print(f"{speed['decisions']:,} decisions of {args.batch_games} games; 1 thread; load "
              f"average {load_start:.2f} at the start, {speed['load_end']:.2f} at the end")
        if args.speed_json:
            write_json_atomic(Path(args.speed_json), speed)
        return 0
    matchups = strength([("greedy", "random"), ("hidden-model", "random"),
                         ("hidden-model", "greedy")], args.strength_deals, args.seed)
    checkpoint = Path(args.checkpoint)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    timing = [pimc_times("pimc", args.k, args.pimc_games, args.seed, checkpoint)]
    if args.infer_games > 0:
        timing.append(pimc_times("pimc-infer", args.k, args.infer_games, args.seed,
                                 checkpoint))
    result = {"batch_speed": speed, "strength": matchups, "pimc": timing,
              "seconds": time.perf_counter() - started, "threads": 1,
              "load_start": load_start, "load_end": os.getloadavg()[0],
              "python": platform.python_version(), "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    write_json_atomic(out.with_suffix(".json"), result)
    lines = [
        "# Pasur: hidden-hand agents, speed and strength", "",
        "Generated by `benchmarks/bench_pasur_agents.py` (re-run it to refresh this page).",
        "",
        f"- {result['date']}; Python {result['python']}, torch {result['torch']}; 1 thread; "
        f"load average at start / end {load_start:.2f} / {result['load_end']:.2f} (shared "
        f"2-core machine); {result['seconds']:.0f} s in all (PIMC games already in the "
        f"checkpoint `{checkpoint.name}` are read back, not replayed: their timings are from "
        "the run that played them)", "",
        "## Decisions per second", "",
        f"The {speed['decisions']:,} decisions of {args.batch_games} games (greedy vs "
        "random): one `choose_many` call (*batch*) and one `choose` call a decision (*one at "
        "a time*), best of 3, 1 thread; the learned agents on their compiled path and on "
        "XGBoost's (the same plays, checked).", "",
        *speed_table(speed), "",
        "## Strength", "",
        f"{args.strength_deals} deals (`random_deal({args.seed} + i)`), each played twice with "
        "the seats swapped; points per game, agent minus opponent, 95% interval.", "",
        "| agent | opponent | games | mean diff | win rate |", "|---|---|---:|---:|---:|"]
    for m in matchups:
        lines.append(f"| {m['agent']} | {m['opponent']} | {m['games']} | "
                     f"{m['mean_diff']:+.2f} ± {m['ci95']:.2f} | {m['win_rate']:.3f} |")
    lines += ["", "## PIMC seconds per play", "",
              f"Whole games against greedy (seats alternate), K = {args.k} determinizations, "
              "no time budget, each draw solved to the end of the game by the double-dummy "
              "search on 1 thread (`solving/double_dummy.py`; before it, the exact solver "
              "took a median 1.10 s a play for pimc, 7.65 s in round 1). A play with a "
              "single legal play is answered at once (0 s); "
              "*with a choice* counts only the plays with two or more legal plays.", "",
              "| agent | games | plays | median s | p90 s | mean s | with a choice: plays, "
              "median s, p90 s | median s by round 1..6 |",
              "|---|---:|---:|---:|---:|---:|---|---|"]
    for t in timing:
        by_round = " / ".join(f"{s:.2f}" for s in t["median_by_round"])
        c = t["with_choice"]
        lines.append(f"| {t['agent']} K={t['k']} | {t['games']} | {t['plays']} | "
                     f"{t['median']:.2f} | {t['p90']:.2f} | {t['mean']:.2f} | "
                     f"{c['plays']}, {c['median']:.2f}, {c['p90']:.2f} | {by_round} |")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
