"""The vocabularies of play: the mode is one type checked where it enters, and the agents'
descriptions come from the one registry (the page keeps no copy of its own)."""

from __future__ import annotations

import warnings

import pytest

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur import agents
from tensorcfr.games.pasur.agents import (
    AGENTS,
    OPEN_PLAYERS,
    AgentEntry,
    AgentOptions,
    check_agent_name,
    check_agent_names,
)
from tensorcfr.games.pasur.engine.rules import random_deal
from tensorcfr.games.pasur.vocab import GraphMode, Mode
from tensorcfr.play.caches import SharedLRU, SolutionCache
from tensorcfr.play.opponents import ai_names, check_ai
from tensorcfr.play.server import create_app
from tensorcfr.play.session import GameSession

LOCAL = "http://127.0.0.1:8000"  # a Host the server serves

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


@pytest.fixture(scope="module")
def client(one_thread):
    return TestClient(create_app(solutions=SolutionCache(max_size=2)), base_url=LOCAL)


def test_every_registered_agent_is_described_on_the_page(client):
    options = client.get("/api/options").json()
    offered = {m["name"]: {a["name"]: a for a in m["ais"]} for m in options["modes"]}
    assert set(offered) == {"hidden", "open"}
    assert list(offered["hidden"]) == list(AGENTS)  # ismcts-time included
    for name, entry in AGENTS.items():
        offer = offered["hidden"][name]
        assert offer["description"] == entry.description and entry.description.strip()
        assert offer["sees_your_hand"] is entry.sees_everything
    assert offered["hidden"]["exact"]["sees_your_hand"]  # the cheating reference says so
    assert list(offered["open"]) == list(OPEN_PLAYERS)
    for name, line in OPEN_PLAYERS.items():
        assert offered["open"][name]["description"].startswith(line) and line.strip()
        assert offered["open"][name]["sees_your_hand"]
    assert [m["note"] for m in options["modes"]] == [Mode.HIDDEN.note, Mode.OPEN.note]


def test_an_agent_registered_later_is_offered_with_its_line(monkeypatch):
    monkeypatch.setitem(AGENTS, "lazy", AgentEntry("always lays its lowest card",
                                                   lambda options: agents.RandomAgent()))
    assert "lazy" in ai_names(Mode.HIDDEN) and check_agent_name(" lazy ") == "lazy"
    app = create_app(solutions=SolutionCache(max_size=1))
    hidden = TestClient(app, base_url=LOCAL).get("/api/options").json()["ais"]
    assert {"name": "lazy", "available": True, "description": "always lays its lowest card",
            "sees_your_hand": False} in hidden
    with pytest.raises(ValueError, match="description"):
        AgentEntry("  ", lambda options: agents.RandomAgent())


def test_agent_names_are_stripped_and_checked_once():
    assert check_agent_names([" random", "", "greedy "], "--agents") == ("random", "greedy")
    with pytest.raises(TensorCFRError, match=r"^--agents: unknown agent 'nobody': choose one"):
        check_agent_names(["random", "nobody"], "--agents")
    with pytest.raises(TensorCFRError, match=r"^--ai must be one of .* with open hands, "
                                             r"got 'pimc'$"):
        check_ai(Mode.OPEN, "pimc", "--ai")


def test_agent_options_identity_is_json_ready(tmp_path):
    options = AgentOptions(determinizations=4, model=tmp_path, threads=3)
    assert options.identity() == {"determinizations": 4, "seconds_per_move": None,
                                  "simulations": 1000, "model": str(tmp_path.resolve())}


def test_the_mode_is_parsed_once_where_it_enters(client):
    assert Mode.parse("open") is Mode.OPEN and Mode.parse(Mode.HIDDEN) is Mode.HIDDEN
    assert f"{Mode.HIDDEN} hands" == "hidden hands" and Mode.OPEN == "open"
    for bad in ("closed", "HIDDEN", None, 1):
        with pytest.raises(TensorCFRError, match="the mode is hidden or open"):
            Mode.parse(bad, "--mode")
    with pytest.raises(TensorCFRError, match="the mode is hidden or open"):
        GameSession(random_deal(3), "alex", "random", mode="Hidden")
    with pytest.raises(TensorCFRError, match="the mode is hidden or open"):
        create_app(mode="double-dummy")
    for bad in ("closed", 1, ["open"], "Open"):
        r = client.post("/api/games", json={"mode": bad, "ai": "random"})
        assert r.status_code == 400 and r.json()["detail"].startswith("mode: input should be")
    view = client.post("/api/games", json={"mode": "open", "ai": "random", "seed": 3}).json()
    assert view["mode"] == "open" and view["visibility"] == "open"
    assert GraphMode.parse("tree") is GraphMode.TREE
    with pytest.raises(TensorCFRError, match="--mode must be one of dag, tree, got 'graph'"):
        GraphMode.parse("graph")


def test_shared_lru_shares_one_computation_and_forgets_failures():
    lru: SharedLRU[str, int] = SharedLRU(max_size=2)
    first, mine = lru.claim("a")
    again, theirs = lru.claim("a")
    assert mine and not theirs and again is first and not first.done()
    lru.discard("a", first)  # a failed computation is not kept
    assert "a" not in lru and lru.claim("a")[1]
    lru.put("b", 2)
    lru.put("c", 3)
    assert "a" not in lru and len(lru) == 2 and lru.peek("b").result() == 2
