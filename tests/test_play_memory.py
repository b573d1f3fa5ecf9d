"""The play server's memory stays bounded under a flood of new games (issue: 312 MB grew to
1.1-1.4 GB after 200 new games and 5 hints, when each held game kept its deal's exact
solution alive through its AI).

The bound (docs/pasur_play.md): a held game is at most about 80 KiB (a finished game: 49
positions and the history; a new one about 8 KiB), so ``max_games`` = 256 games hold under
25 MiB; exact solutions live only in the :class:`SolutionCache` (``cache_size`` of them, 5-60
MiB each) and one solve at a time. Here: 500 new games, half hidden and half open hands, the
open ones each starting a background solve (most are dropped: at most 4 queue), every 50th
game played a little with an AI reply and a hint; resident memory must grow by less than
:data:`LIMIT_MIB` over the server's start.
"""

from __future__ import annotations

import gc
import time
import warnings

import pytest

from tensorcfr.play.server import create_app

psutil = pytest.importorskip("psutil")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

CACHE_SIZE = 2
MAX_GAMES = 256
LIMIT_MIB = 400
"""Growth allowed: CACHE_SIZE solutions and one solve in progress (each at most ~60 MiB, a
solve's peak about twice that), 256 held games (< 25 MiB), the allocator's slack."""


def _rss_mib() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def test_500_new_games_keep_resident_memory_bounded(one_thread):
    app = create_app(cache_size=CACHE_SIZE, max_games=MAX_GAMES)
    client = TestClient(app)
    client.get("/api/options")
    start = _rss_mib()
    peak = start
    for i in range(500):
        mode = "open" if i % 2 else "hidden"
        human = "bob" if i % 4 in (1, 2) else "alex"
        r = client.post("/api/games", json={"mode": mode, "human": human, "ai_seed": i})
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
    cache = app.state.solutions
    deadline = time.monotonic() + 120
    while cache._prefetching and time.monotonic() < deadline:  # queued solves finish
        time.sleep(0.1)
    end = _rss_mib()
    assert len(app.state.store) == MAX_GAMES and len(cache) <= CACHE_SIZE
    assert max(peak, end) - start < LIMIT_MIB, (start, peak, end)
