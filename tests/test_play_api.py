"""The game-session layer and the JSON API of ``tensorcfr pasur serve`` (FastAPI TestClient)."""

from __future__ import annotations

import random
import re
import threading
import time
import warnings

import pytest

from tensorcfr.games.pasur.engine.records import parse_record, replay_record
from tensorcfr.games.pasur.engine.rules import (
    Action,
    apply_action,
    illegal_reason,
    initial_state,
    legal_actions,
    random_deal,
)
from tensorcfr.play.server import MAX_BODY_BYTES, create_app, load_static
from tensorcfr.play.caches import SolutionCache
from tensorcfr.errors import HiddenCardsError, IllegalMoveError
from tensorcfr.play.session import GameSession

SEED = 3  # quick exact solve (about 0.1 s)
LOCAL = "http://127.0.0.1:8000"  # a Host the server serves (others get 400: DNS rebinding)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


@pytest.fixture(scope="module")
def solutions(one_thread):
    return SolutionCache(max_size=4)


@pytest.fixture()
def client(solutions):
    return TestClient(create_app(solutions=solutions, mode="open"), base_url=LOCAL)


def _new(client, **body):
    r = client.post("/api/games", json={"seed": SEED, "ai_seed": 1, **body})
    assert r.status_code == 200, r.text
    return r.json()


def _play_out(client, view, rng):
    """Play the human's side at random (and let the AI answer) until the end."""
    gid = view["game_id"]
    while not view["game_over"]:
        if view["ai_to_move"]:
            r = client.post(f"/api/games/{gid}/ai")
        else:
            assert view["your_turn"] and view["legal"]
            a = rng.choice(view["legal"])
            r = client.post(f"/api/games/{gid}/play",
                            json={"card": a["card"], "captured": a["captured"]})
        assert r.status_code == 200, r.text
        view = r.json()
    return view


# --------------------------------------------------------------------------- the page

def test_page_openapi_and_static_files(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "Open hands" in r.text and "double-dummy" in r.text
    assert "default-src 'self'" in r.headers["content-security-policy"]
    api = client.get("/openapi.json")
    assert api.status_code == 200
    paths = api.json()["paths"]
    assert '"422"' not in api.text  # malformed requests are answered 400, and described so
    assert "400" in paths["/api/games/{game_id}/play"]["post"]["responses"]
    for path in ("/api/games", "/api/games/{game_id}/play", "/api/games/{game_id}/hints",
                 "/api/games/{game_id}/analysis", "/api/records"):
        assert path in paths
    docs = client.get("/docs")  # the API page, built from the OpenAPI description
    assert docs.status_code == 200 and "/api/games/{game_id}/play" in docs.text
    assert "<script" not in docs.text and not re.search(r"https?://", docs.text)
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../server.py").status_code == 404
    assert client.get("/static/nope.js").status_code == 404
    # nothing is fetched from the internet: no absolute URLs in the page's files (the SVG
    # namespace of the inline icon is a name, never fetched)
    for name, data in load_static().items():
        assert not re.search(rb"https?://", data.replace(b"http://www.w3.org/2000/svg", b"")), name


def test_options_offer_the_available_ais(client):
    opts = client.get("/api/options").json()
    avail = {a["name"]: a["available"] for a in opts["ais"]}
    assert avail == {"exact": True, "random": True, "table": False, "model": False}
    assert opts["mode"] == "open"
    r = client.post("/api/games", json={"seed": 1, "ai": "table"})
    assert r.status_code == 400 and "--table DIR" in r.json()["detail"]


@pytest.fixture(scope="module")
def table_and_model(tmp_path_factory, one_thread):
    """A small DCFR strategy table of the test deal and a small model trained on it."""
    from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, run_dcfr
    from tensorcfr.games.pasur.learning.policy_model import train_policy_model

    run = tmp_path_factory.mktemp("play-run") / "dcfr"
    run_dcfr(DcfrSettings(deal=random_deal(SEED), iterations=20, out=run))
    model = tmp_path_factory.mktemp("play-model") / "m"
    train_policy_model([run], model, games=100, rounds=10, early_stopping=5)
    return str(run), str(model)


def test_table_and_model_ais_play_whole_games(solutions, table_and_model):
    run, model = table_and_model
    client = TestClient(create_app(solutions=solutions, table=run, model=model, mode="open"),
                        base_url=LOCAL)
    opts = client.get("/api/options").json()
    assert all(a["available"] for a in opts["ais"])
    assert opts["table_deal"] == list(random_deal(SEED))  # the page offers the table's deal
    r = client.post("/api/games", json={"seed": SEED + 1, "ai": "table"})
    assert r.status_code == 400 and "another deal" in r.json()["detail"]
    for ai, human in (("table", "alex"), ("model", "bob")):
        view = _play_out(client, _new(client, ai=ai, human=human), random.Random(2))
        assert view["ai"] == ai and view["over"]
        record = client.get(f"/api/games/{view['game_id']}/record").json()
        assert record["ai"] == ai and replay_record(parse_record(record)).legal


# --------------------------------------------------------------------------- a whole game

def test_whole_game_through_the_api(client):
    view = _new(client, human="bob", ai="exact")
    gid = view["game_id"]
    assert len(gid) >= 20 and view["human"] == "Bob" and view["ai_to_move"]
    assert view["mode"] == "open" and view["hands"]["Alex"] and view["hands"]["Bob"]
    r = client.post(f"/api/games/{gid}/ai")
    view = r.json()
    assert view["last_play"]["by"] == "ai" and view["your_turn"]
    hints = client.get(f"/api/games/{gid}/hints").json()
    assert hints["player"] == "Bob"
    assert [(h["card"], h["captured"]) for h in hints["hints"]] == \
        [(a["card"], a["captured"]) for a in view["legal"]]
    assert min(h["loss"] for h in hints["hints"]) == 0
    assert all(h["loss"] >= 0 for h in hints["hints"])
    assert client.get(f"/api/games/{gid}/record").status_code == 400  # not finished
    view = _play_out(client, view, random.Random(5))
    assert view["over"] and view["play_index"] == 48 and not view["legal"]
    record = client.get(f"/api/games/{gid}/record")
    assert record.status_code == 200
    assert "attachment" in record.headers["content-disposition"]
    result = replay_record(parse_record(record.json()))
    assert result.legal
    assert view["score"]["Alex"]["total"] == result.alex_points
    assert view["score"]["Bob"]["total"] == result.bob_points
    assert view["score"]["Alex"] == result.alex.as_dict()
    analysis = client.get(f"/api/games/{gid}/analysis").json()
    assert analysis["final"]["utility"] == result.utility
    assert analysis["exact_value"] == -6  # seed 3's value (tensorcfr pasur solve --seed 3)
    # the points given away add up: result = exact value - Alex's cost + Bob's cost
    assert result.utility == (analysis["exact_value"] - analysis["cost"]["Alex"]
                              + analysis["cost"]["Bob"])
    assert len(analysis["plays"]) == 48
    assert {p["by"] for p in analysis["plays"][1::2]} == {"human"}
    assert analysis["human_cost"] == sum(p["cost"] for p in analysis["plays"][1::2])
    # step through the finished game
    before = client.get(f"/api/games/{gid}", params={"at": 10}).json()
    assert before["play_index"] == 10 and len(before["history"]) == 10 and not before["your_turn"]
    assert client.get(f"/api/games/{gid}/hints", params={"at": 10}).json()["player"] == "Alex"


def test_undo_takes_back_the_human_play_and_the_ai_reply(client):
    view = _new(client, human="alex", ai="random")
    gid = view["game_id"]
    assert not view["can_undo"]
    assert client.post(f"/api/games/{gid}/undo").status_code == 400
    first = view["legal"][0]
    view = client.post(f"/api/games/{gid}/play", json=first).json()
    view = client.post(f"/api/games/{gid}/ai").json()
    assert view["play_index"] == 2 and view["can_undo"]
    view = client.post(f"/api/games/{gid}/undo").json()
    assert view["play_index"] == 0 and view["your_turn"] and not view["can_undo"]


# --------------------------------------------------------------------------- bad input

def test_illegal_play_is_400_with_the_rules_reason(client):
    view = _new(client, human="alex", ai="exact")
    gid = view["game_id"]
    state = initial_state(random_deal(SEED))
    hand = state.hands[0]
    cases = [Action(state.hands[1][0], ()),                 # not in Alex's hand
             Action(hand[0], (state.hands[1][0],)),          # captures a card not in the pool
             ]
    # a card that can capture, laid
    capturing = [a for a in legal_actions(state) if a.captured]
    cases.append(Action(capturing[0].card, ()))
    for action in cases:
        r = client.post(f"/api/games/{gid}/play",
                        json={"card": action.card, "captured": list(action.captured)})
        assert r.status_code == 400
        assert r.json()["detail"] == illegal_reason(state, action)
    # the AI may not be asked at the human's turn, nor the human play at the AI's
    assert client.post(f"/api/games/{gid}/ai").status_code == 400
    legal = legal_actions(state)[0]
    client.post(f"/api/games/{gid}/play", json={"card": legal.card,
                                                  "captured": list(legal.captured)})
    after = apply_action(state, legal)
    other = legal_actions(after)[0]
    r = client.post(f"/api/games/{gid}/play", json={"card": other.card,
                                                      "captured": list(other.captured)})
    assert r.status_code == 400 and "turn" in r.json()["detail"]
    # malformed requests: 400 with one line naming the field
    r = client.post(f"/api/games/{gid}/play", json={"card": 60, "captured": []})
    assert r.status_code == 400 and r.json()["detail"].startswith("card:")
    r = client.post(f"/api/games/{gid}/play", json={"card": 1, "captured": [1], "x": 1})
    assert r.status_code == 400


@pytest.mark.parametrize("body, message", [
    ({"deal": "Ac As 9d"}, "a deal has 52 cards, this one has 3"),
    ({"deal": "Ac As 9d Xx"}, "'Xx' is not a card"),
    ({"deal": list(range(51)) + [50]}, "appears twice"),
    ({"deal": [40] + [c for c in range(52) if c != 40]}, "the initial pool holds a Jack"),
    ({"seed": 1, "deal": "Ac"}, "give a seed or a deal, not both"),
    ({"seed": -1}, "seed:"),
    ({"human": "carol"}, "human:"),
    ({"ai": "deep-blue"}, "ai:"),
])
def test_bad_new_game_is_400_with_one_line(client, body, message):
    r = client.post("/api/games", json=body)
    assert r.status_code == 400
    detail = r.json()["detail"]
    assert message in detail and "\n" not in detail


def test_unknown_game_is_404(client):
    for method, path in (("get", ""), ("post", "/play"), ("post", "/ai"), ("post", "/undo"),
                         ("get", "/hints"), ("get", "/analysis"), ("get", "/record")):
        kwargs = {"json": {"card": 0, "captured": []}} if path == "/play" else {}
        r = getattr(client, method)(f"/api/games/not-a-game{path}", **kwargs)
        assert r.status_code == 404, path
        assert "no such game" in r.json()["detail"]
    assert client.get("/api/games/" + "x" * 200).status_code == 404


def test_request_body_is_bounded(client):
    r = client.post("/api/records", content=b"[" + b"0," * MAX_BODY_BYTES + b"0]",
                    headers={"content-type": "application/json"})
    assert r.status_code == 413


# --------------------------------------------------------------------------- records

def test_upload_record_to_step_through(client):
    view = _play_out(client, _new(client, human="alex", ai="exact"), random.Random(2))
    rec = client.get(f"/api/games/{view['game_id']}/record").json()
    r = client.post("/api/records", json=rec)
    assert r.status_code == 200, r.text
    review = r.json()
    assert review["imported"] and review["game_over"] and review["human"] == "Alex"
    assert review["score"] == view["score"] and review["seed"] == SEED
    wrong_seed = client.post("/api/records", json={**rec, "seed": SEED + 1}).json()
    assert wrong_seed["seed"] is None  # a seed that does not deal this deal is not shown
    gid = review["game_id"]
    assert client.post(f"/api/games/{gid}/play", json={"card": 0, "captured": []}
                       ).status_code == 400
    analysis = client.get(f"/api/games/{gid}/analysis").json()
    original = client.get(f"/api/games/{view['game_id']}/analysis").json()
    assert [p["cost"] for p in analysis["plays"]] == [p["cost"] for p in original["plays"]]
    assert client.get(f"/api/games/{gid}", params={"at": 0}).json()["play_index"] == 0
    # an illegal record: 400 naming the play; a malformed one: the format's one-line message
    bad = dict(rec)
    bad["plays"] = [dict(p) for p in rec["plays"]]
    bad["plays"][1] = dict(bad["plays"][1], captured=[bad["deal"][0]] * 2)
    r = client.post("/api/records", json=bad)
    assert r.status_code == 400 and r.json()["detail"].startswith("illegal record: play 1 (Bob)")
    r = client.post("/api/records", json={"deal": [1, 2]})
    assert r.status_code == 400 and "plays" in r.json()["detail"]
    r = client.post("/api/records", json=[1, 2, 3])
    assert r.status_code == 400


# --------------------------------------------------------------------------- bounded memory

def test_cap_on_games_held(solutions):
    client = TestClient(create_app(max_games=2, solutions=solutions), base_url=LOCAL)
    ids = [_new(client, ai="random")["game_id"] for _ in range(3)]
    assert client.get(f"/api/games/{ids[0]}").status_code == 404  # the oldest went first
    assert client.get(f"/api/games/{ids[1]}").status_code == 200
    assert client.get(f"/api/games/{ids[2]}").status_code == 200
    assert len(client.app.state.store) == 2


def test_idle_games_expire(solutions):
    now = [1000.0]
    client = TestClient(create_app(ttl_seconds=60, clock=lambda: now[0], solutions=solutions),
                        base_url=LOCAL)
    old = _new(client, ai="random")["game_id"]
    now[0] += 50
    fresh = _new(client, ai="random")["game_id"]
    assert client.get(f"/api/games/{old}").status_code == 200  # used: idle time restarts
    now[0] += 59
    assert client.get(f"/api/games/{fresh}").status_code == 200
    now[0] += 61
    assert client.get(f"/api/games/{old}").status_code == 404
    assert client.get(f"/api/games/{fresh}").status_code == 404
    assert len(client.app.state.store) == 0


# --------------------------------------------------------------------------- session layer

def test_solution_cache_solves_once_and_is_bounded():
    calls = []

    def fake_solver(deal):
        calls.append(deal)
        return ("solution", deal)

    cache = SolutionCache(max_size=2, solver=fake_solver)
    deals = [random_deal(s) for s in range(3)]
    threads = [threading.Thread(target=cache.get, args=(deals[0],)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and cache.is_ready(deals[0])
    cache.get(deals[1])
    cache.get(deals[2])
    assert len(cache) == 2 and not cache.is_ready(deals[0])  # least recently used dropped


def test_solution_cache_bounds_concurrent_and_queued_solves():
    """A flood of new deals never runs two solves at once nor queues more than max_prefetch."""
    running = []
    peak = [0]
    gate = threading.Event()
    lock = threading.Lock()

    def slow_solver(deal):
        with lock:
            running.append(deal)
            peak[0] = max(peak[0], len(running))
        gate.wait(5)
        with lock:
            running.remove(deal)
        return ("solution", deal)

    cache = SolutionCache(max_size=2, solver=slow_solver, max_concurrent=1, max_prefetch=3)
    deals = [random_deal(s) for s in range(10)]
    started = [cache.prefetch(d) for d in deals]
    assert started == [True] * 3 + [False] * 7  # the rest are solved when first asked for
    gate.set()
    assert cache.get(deals[9]) == ("solution", deals[9])  # on demand, after waiting its turn
    for d in deals[:3]:  # queued ones answer too (those evicted while queued: solved afresh)
        assert cache.get(d) == ("solution", d)
    deadline = time.monotonic() + 10
    while cache._prefetching and time.monotonic() < deadline:
        time.sleep(0.01)
    assert peak[0] == 1 and cache._prefetching == 0 and len(cache) <= 2


def test_hidden_view_never_shows_the_other_hand(solutions):
    session = GameSession(random_deal(SEED), "alex", "random", solutions=solutions)
    assert session.mode == "hidden"  # the default: the real game
    hidden = session.view()
    assert hidden["visibility"] == "hidden" and hidden["mode"] == "hidden"
    assert hidden["hands"]["Bob"] is None and hidden["hands"]["Alex"]
    assert hidden["hand_counts"]["Bob"] == 4 and "deal" not in hidden
    assert "rounds_to_come" not in hidden and hidden["undealt_count"] == 40
    assert hidden["hint_kind"] == "estimate" and not hidden["ai_sees_your_hand"]
    bob_cards = set(session.state.hands[1]) | set(random_deal(SEED)[12:])
    shown = set(hidden["pool"]) | set(hidden["hands"]["Alex"])
    assert not bob_cards & shown
    opened = session.view("alex", visibility="open")
    assert opened["hands"]["Bob"] == list(session.state.hands[1]) and opened["deal"]
    with pytest.raises(HiddenCardsError):  # exact values reveal hidden cards
        session.hints()
    with pytest.raises(HiddenCardsError):
        session.analysis()


def test_open_view_shows_the_rounds_to_come(solutions):
    deal = random_deal(SEED)
    session = GameSession(deal, "alex", "random", mode="open", solutions=solutions)
    view = session.view()
    assert view["visibility"] == "open" and view["hint_kind"] == "exact"
    assert [r["round"] for r in view["rounds_to_come"]] == [2, 3, 4, 5, 6]
    assert view["rounds_to_come"][0] == {"round": 2, "Alex": sorted(deal[12:16]),
                                         "Bob": sorted(deal[16:20])}
    for _ in range(8):  # a whole round: round 2's hands are now in play
        session.ai_play() if session.ai_to_move else session.play(session.legal()[0])
    view = session.view()
    assert [r["round"] for r in view["rounds_to_come"]] == [3, 4, 5, 6]
    assert view["hands"]["Alex"] == sorted(deal[12:16])


CARD_KEYS = {"pool", "hands", "piles", "card", "captured", "cleanup", "deal"}


def _cards_in(obj, under_card_key=False):
    """Every card index anywhere in a JSON view: ints under card-bearing keys, at any depth
    (plays in ``history``, ``last_play``, ``legal`` are objects with ``card``/``captured``)."""
    if isinstance(obj, dict):
        out = set()
        for k, v in obj.items():
            out |= _cards_in(v, k in CARD_KEYS or (under_card_key and k in ("Alex", "Bob")))
        return out
    if isinstance(obj, list):
        return set().union(*(_cards_in(v, under_card_key) for v in obj)) if obj else set()
    if isinstance(obj, int) and not isinstance(obj, bool) and under_card_key:
        return {obj}
    return set()


@pytest.mark.parametrize("human", ["alex", "bob"])
def test_hidden_mode_api_never_sends_unseen_cards(solutions, human):
    """The server in hidden-hand mode: every response is built for the human's seat; no card
    of the other hand or of the undealt deck is ever sent before the game is over."""
    client = TestClient(create_app(solutions=solutions, mode="hidden"), base_url=LOCAL)
    assert client.get("/api/options").json()["mode"] == "hidden"
    deal = random_deal(SEED)
    me = 0 if human == "alex" else 1
    view = _new(client, human=human, ai="random")
    gid = view["game_id"]
    rng = random.Random(5)
    checked = 0
    while True:
        state = initial_state(deal)  # the reference engine's position, from the history
        for p in view["history"]:
            state = apply_action(state, Action(p["card"], tuple(p["captured"])))
        dealt = 4 + 8 * min(view["round"], 6)
        unseen = set(state.hands[1 - me]) | set(deal[dealt:])
        if not view["game_over"]:
            assert view["hands"][("Alex", "Bob")[1 - me]] is None and "deal" not in view
            assert view["visibility"] == "hidden"
            assert not _cards_in(view) & unseen, view["play_index"]
            r = client.get(f"/api/games/{gid}/analysis")
            assert r.status_code == 403 and "hidden" in r.json()["detail"]
            hint = client.get(f"/api/games/{gid}/hints")
            if view["your_turn"]:  # the agent's estimates (the random agent has none)
                assert hint.status_code == 200 and hint.json()["kind"] == "none"
                assert "gives no estimates" in hint.json()["message"]
                assert not _cards_in(hint.json()) & unseen
            else:  # at the AI's turn its plays would show its hand
                assert hint.status_code == 400
            assert client.get(f"/api/games/{gid}/hints", params={"at": 0}).status_code == 400
            checked += 1
        else:
            break
        if view["ai_to_move"]:
            r = client.post(f"/api/games/{gid}/ai")
        else:
            a = rng.choice(view["legal"])
            r = client.post(f"/api/games/{gid}/play",
                            json={"card": a["card"], "captured": a["captured"]})
        assert r.status_code == 200, r.text
        view = r.json()
    assert checked == 48
    # after the game everything is revealed: the deal, its seed, the exact analysis; no undo
    assert view["visibility"] == "open" and view["deal"] == list(deal) and view["seed"] == SEED
    assert not view["can_undo"] and client.post(f"/api/games/{gid}/undo").status_code == 403
    analysis = client.get(f"/api/games/{gid}/analysis").json()
    assert analysis["mode"] == "hidden" and analysis["estimate"]["available"] is False
    record = client.get(f"/api/games/{gid}/record").json()
    assert record["mode"] == "hidden" and record["ai"] == "random"
    assert record["seed"] == SEED and record["ai_seed"] == 1  # the game can be replayed
    review = client.post("/api/records", json=record).json()
    assert review["mode"] == "hidden" and review["visibility"] == "open"


def test_session_undo_and_errors(solutions):
    hidden = GameSession(random_deal(SEED), "bob", "exact", solutions=solutions, ai_seed=3)
    hidden.advance()
    hidden.play(hidden.legal()[0])
    hidden.advance()
    with pytest.raises(HiddenCardsError, match="no undo in a hidden-hand game"):
        hidden.undo()  # it would show the AI's answer to another play: its cards
    assert hidden.state.play_index == 3 and not hidden.can_undo
    session = GameSession(random_deal(SEED), "bob", "exact", mode="open", solutions=solutions,
                          ai_seed=3)
    with pytest.raises(IllegalMoveError, match="AI"):
        session.play(legal_actions(session.state)[0])
    assert len(session.advance()) == 1
    with pytest.raises(IllegalMoveError):
        session.undo()
    session.play(session.legal()[0])
    session.advance()
    assert session.state.play_index == 3
    assert session.undo() == 2 and session.state.play_index == 1
    with pytest.raises(IllegalMoveError, match="not finished"):
        session.record()


# --------------------------------------------------------------------------- the serve command

def test_serve_refuses_bad_options_in_one_line(capsys, monkeypatch):
    import socket

    from _cli_helpers import run_cli

    from typer.testing import CliRunner

    from tensorcfr.cli.main import app

    runner = CliRunner()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = runner.invoke(app, ["pasur", "serve", "--port", str(port)])
        assert r.exit_code == 2 and "cannot listen on 127.0.0.1" in r.output
        assert "Traceback" not in r.output
    for args, message in ((["--port", "0"], "--port must be between 1 and 65,535"),
                          (["--table", "/no/such/folder"], "/no/such/folder does not exist"),
                          (["--max-games", "0"], "--max-games must be between 1 and 10,000")):
        code, out, err = run_cli(["pasur", "serve", *args], capsys, monkeypatch)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


# --------------------------------------------------------------------------- strict input

@pytest.mark.parametrize("body, message", [
    ({"seed": True}, "seed: input should be a valid integer, got true"),
    ({"seed": "3"}, "seed: input should be a valid integer, got \"3\""),
    ({"seed": 2**63}, "seed: input should be less than or equal to"),
    ({"seed": 3.0}, "seed: input should be a valid integer"),
    ({"mode": "closed"}, "mode:"),
    ({"colour": "red"}, "colour: not a field of this request"),
])
def test_new_game_input_is_strict(client, body, message):
    r = client.post("/api/games", json=body)
    assert r.status_code == 400 and message in r.json()["detail"], r.text


def test_play_input_is_strict_and_readable(client):
    view = _new(client, human="alex", ai="random")
    gid = view["game_id"]
    legal = view["legal"][0]
    for body, message in (({"card": legal["card"]}, "captured: required"),
                          ({"card": float(legal["card"]), "captured": []}, "card: input should "
                           "be a valid integer"),
                          ({"card": str(legal["card"]), "captured": []}, "card:"),
                          ({"card": legal["card"], "captured": [1.0]}, "captured: input")):
        r = client.post(f"/api/games/{gid}/play", json=body)
        assert r.status_code == 400 and r.json()["detail"].startswith(message), r.text
    r = client.post(f"/api/games/{gid}/play", content=b'{"card": 1,',
                    headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["detail"].startswith("the request body is not valid JSON"), r.text
    assert client.post(f"/api/games/{gid}/play", json=legal).status_code == 200


def test_head_of_the_page_and_chunked_bodies(client):
    assert client.head("/").status_code == 200

    def chunks():
        for _ in range(64):
            yield b" " * 16384  # 1 MiB in all, no Content-Length (chunked)

    r = client.post("/api/records", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "over" in r.json()["detail"]
    small = iter([b'{"deal": ', b'[1, 2]}'])
    r = client.post("/api/records", content=small, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "plays" in r.json()["detail"]  # a small chunked body is read


# --------------------------------------------------------------------------- estimating agents

class _OnePlyAgent:
    """A test agent with estimates: a play's value is the points it scores now."""

    name = "one-ply"
    sees_everything = False

    def reset(self, seed):
        self.seed = seed

    def estimates(self, obs):
        from tensorcfr.games.pasur.engine.rules import score_pile
        from tensorcfr.games.pasur.playing.agent import PlayEstimate

        return [PlayEstimate(a, score_pile((a.card, *a.captured) if a.captured else (), 0).total
                             + 0.25, samples=3) for a in obs.legal_actions()]

    def choose(self, obs, state=None):
        estimates = self.estimates(obs)
        return max(estimates, key=lambda e: e.value).action


@pytest.fixture()
def one_ply_agent(monkeypatch):
    from tensorcfr.games.pasur import agents

    monkeypatch.setitem(agents.AGENTS, "one-ply", agents.AgentEntry(
        "plays the play that scores most now", lambda options: _OnePlyAgent()))
    return "one-ply"


def test_hidden_hints_and_analysis_use_the_agents_estimates(solutions, one_ply_agent):
    client = TestClient(create_app(solutions=solutions),  # hidden hands: the default
                        base_url=LOCAL)
    opts = client.get("/api/options").json()
    assert opts["mode"] == "hidden" and "one-ply" in [a["name"] for a in opts["ais"]]
    view = _new(client, human="alex", ai="one-ply")
    gid = view["game_id"]
    assert view["ai"] == "one-ply" and not view["ai_sees_your_hand"]
    hint = client.get(f"/api/games/{gid}/hints").json()
    assert hint["kind"] == "estimate" and hint["samples"] == 3 and hint["agent"] == "one-ply"
    assert {(h["card"], tuple(h["captured"])) for h in hint["hints"]} == \
        {(a["card"], tuple(a["captured"])) for a in view["legal"]}
    assert min(h["loss"] for h in hint["hints"]) == 0 and all(h["value"] % 1 == 0.25
                                                               for h in hint["hints"])
    view = _play_out(client, view, random.Random(4))
    analysis = client.get(f"/api/games/{gid}/analysis").json()
    est = analysis["estimate"]
    assert est["available"] and est["agent"] == "one-ply"
    human_rows = [p for p in analysis["plays"] if p["by"] == "human"]
    assert len(human_rows) == 24 and all("estimate_cost" in p for p in human_rows)
    assert all("estimate_cost" not in p for p in analysis["plays"] if p["by"] == "ai")
    assert est["human_cost"] == pytest.approx(sum(p["estimate_cost"] for p in human_rows))
    assert all(p["samples"] == 3 and p["estimate_cost"] >= 0 for p in human_rows)
    # the exact cost is there beside it, as in open mode
    assert analysis["human_cost"] == sum(p["cost"] for p in human_rows)


def test_play_on_from_a_position_of_the_analysis(solutions):
    client = TestClient(create_app(solutions=solutions), base_url=LOCAL)
    view = _play_out(client, _new(client, human="bob", ai="random"), random.Random(3))
    gid = view["game_id"]
    assert client.post(f"/api/games/{gid}/play-on", params={"at": 48}).status_code == 400
    r = client.post(f"/api/games/{gid}/play-on", params={"at": 9})
    assert r.status_code == 200, r.text
    branch = r.json()
    assert branch["game_id"] != gid and branch["play_index"] == 9 and not branch["game_over"]
    assert branch["mode"] == "hidden" and branch["visibility"] == "hidden"
    assert branch["history"] == view["history"][:9] and branch["your_turn"]  # Bob's turn
    assert branch["hands"]["Alex"] is None
    end = _play_out(client, branch, random.Random(8))
    assert end["over"] and end["history"][:9] == view["history"][:9]
    fresh = _new(client, ai="random")
    r = client.post(f"/api/games/{fresh['game_id']}/play-on", params={"at": 0})
    assert r.status_code == 400 and "finished" in r.json()["detail"]


def test_serve_warns_before_the_url_on_one_line(monkeypatch):
    import socket

    import uvicorn
    from typer.testing import CliRunner

    from tensorcfr.cli.main import app

    def no_run(self):  # do not listen: the test only reads what is printed first
        self.started = True

    monkeypatch.setattr(uvicorn.Server, "run", no_run)
    # uvicorn.Config sets up logging handlers on the stream sys.stderr is at that moment: under
    # CliRunner a stream closed after the call, which later log records would write to
    monkeypatch.setattr(uvicorn.Config, "configure_logging", lambda self: None)
    monkeypatch.setenv("COLUMNS", "60")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    r = CliRunner().invoke(app, ["pasur", "serve", "--host", "0.0.0.0", "--port", str(port),
                                 "--mode", "open"])
    out = r.output
    assert r.exit_code == 0, out
    warning = out.index("warning: listening on 0.0.0.0: anyone who can reach this machine can "
                        "use the server")
    assert warning < out.index(f"Pasur: open http://0.0.0.0:{port}/") and "open hands" in out


def test_play_budgets_bound_the_searching_agents():
    """The page's time budget reaches every searching agent: ``ismcts`` stops at its
    simulations or the budget (it was given neither before: 3 s replies), and an exact solve
    PIMC starts is abandoned once its deadline has passed."""
    import time as _time

    from tensorcfr.games.pasur.agents import AgentOptions, make_agent
    from tensorcfr.games.pasur.engine.observation import observe
    from tensorcfr.games.pasur.solving.exact import DeadlineExceeded, action_values_many
    from tensorcfr.play.opponents import PLAY_SECONDS_PER_MOVE, make_hidden_agent

    agent = make_hidden_agent("ismcts")
    assert agent.max_seconds == PLAY_SECONDS_PER_MOVE and agent.simulations == 1000
    capped = make_agent("ismcts", AgentOptions(simulations=10**7, seconds_per_move=0.05))
    capped.reset(2**40)  # seeds beyond 2^32 are taken too
    state = initial_state(random_deal(SEED))
    capped.choose(observe(state, 0))
    assert 1 <= capped.last_simulations < 10**7  # the time cap ended the search
    with pytest.raises(DeadlineExceeded):
        action_values_many([state], deadline=_time.perf_counter() - 1)
    assert action_values_many([state], deadline=None)[0]  # no deadline: solved


def test_pimc_in_play_has_a_hard_reply_limit():
    """A PIMC play in the page never waits for a long first solve: past the reply limit the
    agent plays greedy; its hints still solve at least one draw."""
    from tensorcfr.games.pasur.engine.observation import observe
    from tensorcfr.games.pasur.playing.greedy import GreedyAgent
    from tensorcfr.play.opponents import PLAY_REPLY_LIMIT_SECONDS, make_hidden_agent

    agent = make_hidden_agent("pimc")
    assert agent.max_reply_seconds == PLAY_REPLY_LIMIT_SECONDS
    agent.max_reply_seconds = 1e-9  # nothing can be solved in time
    agent.reset(0)
    obs = observe(initial_state(random_deal(SEED)), 0)
    assert agent.choose(obs) == GreedyAgent().choose(obs)
    estimates = agent.estimates(obs)
    assert estimates and all(e.samples >= 1 for e in estimates)


def test_the_default_agent_hints_with_its_own_scores(solutions):
    """The default (``distilled``, a hidden model) has no mean estimates; its hint is its model's score of
    each legal play from the human's observation, and its best play is the one it would make."""
    from tensorcfr.games.pasur.engine.observation import observe
    from tensorcfr.play.opponents import DEFAULT_HIDDEN_AGENT, make_hidden_agent

    session = GameSession(random_deal(SEED), "alex", solutions=solutions)
    assert session.ai_name == DEFAULT_HIDDEN_AGENT == "distilled"
    report = session.hint_report()
    assert report["kind"] == "estimate" and report["measure"] == "advantage"
    assert "own score" in report["what"] and report["samples"] == 1
    assert {h["notation"] for h in report["hints"]} == {a.notation() for a in session.legal()}
    best = [h["notation"] for h in report["hints"] if h["best"]]
    choice = make_hidden_agent(DEFAULT_HIDDEN_AGENT).choose(observe(session.state, 0))
    assert choice.notation() in best and min(h["loss"] for h in report["hints"]) == 0
