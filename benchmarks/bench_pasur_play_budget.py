"""Do the searching hidden-hand agents keep the play server's time budget per move?

The page gives every hidden-hand agent ``PLAY_SECONDS_PER_MOVE`` (0.8 s) and promises a reply
under a second. For each agent (``--agents``, default ``ismcts,pimc``) and each seeded deal
(``--seeds``), one hidden-hand game is played through the API in-process (FastAPI's test
client: the page's requests without the network), the human (Alex) taking its first legal play,
and every ``POST /api/games/{id}/ai`` is timed (wall clock, the AI's search and the view).
Prints, per agent, the number of replies, median, p90, max and how many took 1 s or more, with
the load average; ``--json`` prints a JSON object instead.

To compare with an older version of the code, run it with that version's ``src`` first on
``PYTHONPATH`` (e.g. ``git archive COMMIT src | tar -x -C /tmp/before``)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_pasur_play_budget.py --seeds 1-3
    OMP_NUM_THREADS=1 PYTHONPATH=/tmp/before/src .venv/bin/python \\
        benchmarks/bench_pasur_play_budget.py --seeds 1-3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings


def parse_range(text: str) -> list[int]:
    """``"1-3"`` -> [1, 2, 3]; ``"4"`` -> [4]."""
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def time_game(client, agent: str, seed: int, max_replies: int) -> list[float]:
    """Seconds of each AI reply of one game (at most ``max_replies``)."""
    view = client.post("/api/games", json={"seed": seed, "ai": agent, "human": "alex",
                                           "ai_seed": seed}).json()
    gid = view["game_id"]
    times = []
    while not view["game_over"] and len(times) < max_replies:
        if view["ai_to_move"]:
            start = time.perf_counter()
            r = client.post(f"/api/games/{gid}/ai")
            times.append(time.perf_counter() - start)
        else:
            a = view["legal"][0]
            r = client.post(f"/api/games/{gid}/play", json={"card": a["card"],
                                                            "captured": a["captured"]})
        r.raise_for_status()
        view = r.json()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="ismcts,pimc")
    parser.add_argument("--seeds", default="1-3")
    parser.add_argument("--max-replies", type=int, default=24,
                        help="AI replies timed per game (24 = the whole game)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import os

    import torch

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from tensorcfr.play.server import create_app
    from tensorcfr.play.caches import SolutionCache

    app = create_app(solutions=SolutionCache(max_size=2), mode="hidden")
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    out = {"load_before": os.getloadavg(), "threads": torch.get_num_threads(), "agents": {}}
    for agent in args.agents.split(","):
        times, first = [], []
        for seed in parse_range(args.seeds):
            game = time_game(client, agent, seed, args.max_replies)
            times += game
            first += game[:1]
        ordered = sorted(times)
        out["agents"][agent] = {
            "replies": len(times),
            "median_s": round(statistics.median(ordered), 3),
            "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
            "max_s": round(ordered[-1], 3),
            "first_replies_s": [round(t, 3) for t in first],
            "at_least_1s": sum(t >= 1.0 for t in times),
        }
    out["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(out))
        return
    print(f"threads {out['threads']}, load average before "
          f"{' '.join(f'{x:.1f}' for x in out['load_before'])}, after "
          f"{' '.join(f'{x:.1f}' for x in out['load_after'])}")
    for agent, r in out["agents"].items():
        print(f"{agent}: {r['replies']} replies, median {r['median_s']} s, p90 {r['p90_s']} s, "
              f"max {r['max_s']} s, >= 1 s: {r['at_least_1s']}; first replies "
              f"{r['first_replies_s']}")


if __name__ == "__main__":
    main()
