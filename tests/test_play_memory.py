"""The play server's memory stays bounded under a flood of new games (issue: 312 MB grew to
1.1-1.4 GB after 200 new games and 5 hints, when each held game kept its deal's exact
solution alive through its AI).

The bound (docs/pasur_play.md): a held game is at most about 80 KiB (a finished game: 49
positions and the history; a new one about 8 KiB), so ``max_games`` = 256 games hold under
25 MiB; exact solutions live only in the :class:`SolutionCache` (``cache_size`` of them, 5-60
MiB each, plus the one solve under way). Here: 200 new games on a server holding at most 64
(so the store evicts for 136 of them), half hidden and half open hands over five deals that
take turns every eight games (so the cache of two keeps evicting: 25 solves), the open ones
each asking for a background solve, every 50th game played a little with an AI reply and a
hint. No more than ``cache_size`` + 1 solutions may be alive at the end (none held by a game),
and resident memory must grow by less than :data:`LIMIT_MIB` over the server's start.

Why 200 games and 25 solves are enough (the test took 500 games and 250 solves before): the
leak it targets is a game keeping its deal's solution alive, and the weak references catch
it exactly: with that leak, the 64 games still held at the end would keep the solutions of
their eight runs of deals alive (8 against a bound of 2), whatever the number of games. The store's cap is checked
by going past it (200 games, 64 held); the resident-memory bound is the backstop for any
other growth (a game is 8-80 KiB, so it catches leaks of solutions, not of game records).
"""

from __future__ import annotations

import gc
import time
import warnings
import weakref

import pytest

from tensorcfr.games.pasur.engine.rules import random_deal
from tensorcfr.play.server import create_app
from tensorcfr.play.caches import SolutionCache

psutil = pytest.importorskip("psutil")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

CACHE_SIZE = 2
MAX_GAMES = 64
GAMES = 200
DEAL_RUN = 8  # games in a row on one deal: four open ones, one solve and three cache hits
LIMIT_MIB = 300
"""Growth allowed: CACHE_SIZE solutions and one solve in progress (these deals' solves are
small; a hard random deal's solve can peak near 1 GiB, see docs/pasur_play.md), 64 held games
(< 6 MiB), torch's and the allocator's slack."""


def _deals() -> list[list[int]]:
    """Five deals that solve in a fraction of a second: seed 3's and four variants (a card of
    Alex's last hand swapped with one of Bob's)."""
    base = list(random_deal(3))
    out = [base]
    for i in range(4):
        deal = list(base)
        deal[44 + i], deal[48 + i] = deal[48 + i], deal[44 + i]
        out.append(deal)
    return out


def _rss_mib() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def test_new_games_keep_resident_memory_bounded(one_thread, capsys):
    from tensorcfr.games.pasur.solving.exact import solve_exact

    alive: list[weakref.ref] = []

    def solver(deal):
        solution = solve_exact(deal)
        alive.append(weakref.ref(solution))
        return solution

    deals = _deals()
    cache = SolutionCache(max_size=CACHE_SIZE, solver=solver)
    app = create_app(solutions=cache, max_games=MAX_GAMES)
    client = TestClient(app, base_url="http://127.0.0.1")  # a Host the server serves
    client.get("/api/options")
    start = _rss_mib()
    peak = start
    for i in range(GAMES):
        mode = "open" if i % 2 else "hidden"
        human = "bob" if i % 4 in (1, 2) else "alex"
        r = client.post("/api/games", json={"mode": mode, "human": human, "ai_seed": i,
                                            "deal": deals[(i // DEAL_RUN) % len(deals)]})
        assert r.status_code == 200, r.text
        view = r.json()
        if i % 50 in (0, 1):  # play a little: an AI reply, a hint, a play, a reply
            gid = view["game_id"]
            if view["ai_to_move"]:
                view = client.post(f"/api/games/{gid}/ai").json()
            assert client.get(f"/api/games/{gid}/hints").status_code == 200
            view = client.post(f"/api/games/{gid}/play", json=view["legal"][0]).json()
            assert client.post(f"/api/games/{gid}/ai").status_code == 200
            peak = max(peak, _rss_mib())
    deadline = time.monotonic() + 120
    while cache._prefetching and time.monotonic() < deadline:  # queued solves finish
        time.sleep(0.1)
    end = _rss_mib()
    assert len(app.state.store) == MAX_GAMES and len(cache) <= CACHE_SIZE
    assert cache.solves > CACHE_SIZE  # the cache kept evicting
    assert sum(ref() is not None for ref in alive) <= CACHE_SIZE  # no held game keeps one
    with capsys.disabled():
        print(f"\nplay server memory: start {start:.0f} MiB, peak {peak:.0f}, after {GAMES} new "
              f"games {end:.0f} (limit: start + {LIMIT_MIB}); {cache.solves} solves")
    assert max(peak, end) - start < LIMIT_MIB, (start, peak, end)
