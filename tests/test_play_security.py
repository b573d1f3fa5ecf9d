"""The attack on a hidden-hand game: a player who wants to win tries every way to learn a card
they may not see yet, through the API (FastAPI's test client) and the terminal game (pexpect).

What it tries (docs/security.md maps each channel to its check here):

* **values that compute the deal**: every integer in every in-game answer (views, the answer
  to each play, hints, errors; the terminal's screen) is tried as a seed: ``random_deal(n)``
  against the cards the player sees (the pool and their hand). Game ids are tried too, read
  as integers.
* **the old default seed space** (``random_deal(s)``, ``s < 10**6``) searched against the
  visible cards of 150 new games (``test_new_hidden_games_are_not_in_the_old_seed_space``),
  of the two attacked games and of a terminal game. Computing all 10**6 deals takes about
  a minute and a half here, so the search uses a fixed sample: seeds 0-1,999 and 8,000 more
  drawn with ``random.Random(26)`` (10,000 seeds, about 1 s). With 150 games a server that
  still drew its deals from that space would be caught with probability
  ``1 - 0.99**150`` = 78% per run; the tests of the search itself (it finds a deal of the sample,
  and a seed planted in an answer) make sure it would.
* **undo probing**: after the AI's reply, undo must be refused (403) and change nothing; the
  terminal refuses it too.
* **questions before the end**: the analysis (403), the record (400), stepping (``?at=``),
  hints of a past position and play-on (400), the deal's solution state (``solution_ready``
  false), and hints at the player's turn, which may hold no hidden card.
* **error texts**: playing each card the player does not hold gets one message whatever the
  card is (the AI's, still to be dealt, or gone), so errors cannot tell where a card is.

It fails if any of these reveals a hidden card. After the end the record must carry the deal
(and the seed of a practice game), so games stay reproducible.
"""

from __future__ import annotations

import base64
import os
import random
import re
import sys
import warnings

import pexpect  # a test dependency (pyproject's "test" extra): this test never skips
import pytest

from tensorcfr.games.pasur.engine.cards import card_code
from tensorcfr.games.pasur.engine.rules import random_deal
from tensorcfr.play.server import create_app
from tensorcfr.play.caches import SolutionCache
from tensorcfr.play.opponents import DEFAULT_HIDDEN_AGENT
from tensorcfr.play.session import SEED_MAX

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

SAMPLE_SEEDS = sorted(set(range(2000)) | set(random.Random(26).sample(range(2000, 10**6), 8000)))
"""A fixed sample of the old default seed space (see the module docstring)."""
CARD_KEYS = {"pool", "hands", "piles", "card", "captured", "cleanup", "deal"}
LOCAL = "http://127.0.0.1:8000"  # a Host the server answers to (the DNS-rebinding guard)


# --------------------------------------------------------------------------- the attacker

def visible_key(pool, hand, seat: int) -> tuple[frozenset, frozenset, int]:
    """What a player sees of a fresh deal: the pool, their hand and their seat."""
    return frozenset(pool), frozenset(hand), seat


def deal_key(deal, seat: int) -> tuple[frozenset, frozenset, int]:
    """The visible key a player at ``seat`` would see of ``deal`` at its start."""
    return visible_key(deal[:4], deal[4 + 4 * seat:8 + 4 * seat], seat)


@pytest.fixture(scope="module")
def seed_index():
    """Visible key -> seed over :data:`SAMPLE_SEEDS`, both seats."""
    index = {}
    for seed in SAMPLE_SEEDS:
        deal = random_deal(seed)
        for seat in (0, 1):
            index[deal_key(deal, seat)] = seed
    return index


def integers_in(obj) -> set[int]:
    """Every whole number an answer holds: ints, integral floats, digit runs in strings, and
    long strings (game ids) read as base64 integers."""
    out: set[int] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out |= integers_in(k) | integers_in(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out |= integers_in(v)
    elif isinstance(obj, bool):
        pass
    elif isinstance(obj, int):
        out.add(obj)
    elif isinstance(obj, float) and obj.is_integer():
        out.add(int(obj))
    elif isinstance(obj, str):
        out |= {int(d) for d in re.findall(r"\d+", obj)}
        if len(obj) >= 16 and len(obj) % 4 != 1 and re.fullmatch(r"[A-Za-z0-9_-]+", obj):
            raw = int.from_bytes(base64.urlsafe_b64decode(obj + "=" * (-len(obj) % 4)), "big")
            out |= {raw % (SEED_MAX + 1), raw % 10**6}
    return out


class SeedAttack:
    """Tries integers as seeds of the deal against what the player sees; remembers each try."""

    def __init__(self, visible: tuple[frozenset, frozenset, int]) -> None:
        self.visible = visible
        self.tried: dict[int, bool] = {}

    def hits(self, answer) -> list[int]:
        """The integers of ``answer`` whose seeded deal matches the visible cards."""
        found = []
        for n in integers_in(answer):
            if not 0 <= n <= SEED_MAX:
                continue
            if n not in self.tried:
                self.tried[n] = deal_key(random_deal(n), self.visible[2]) == self.visible
            if self.tried[n]:
                found.append(n)
        return found


def cards_in(obj, under_card_key: bool = False) -> set[int]:
    """Every card index in a JSON answer: ints under card-bearing keys, at any depth."""
    if isinstance(obj, dict):
        out: set[int] = set()
        for k, v in obj.items():
            out |= cards_in(v, k in CARD_KEYS or (under_card_key and k in ("Alex", "Bob")))
        return out
    if isinstance(obj, list):
        return set().union(*(cards_in(v, under_card_key) for v in obj)) if obj else set()
    if isinstance(obj, int) and not isinstance(obj, bool) and under_card_key:
        return {obj}
    return set()


def test_the_attack_finds_a_leak_when_there_is_one(seed_index):
    """The searches work: a deal of the sample is found from its visible cards, and a seed
    planted in an answer is found among its integers (so a leak would fail the tests)."""
    seed = SAMPLE_SEEDS[-1]
    deal = random_deal(seed)
    assert seed_index[deal_key(deal, 1)] == seed
    attack = SeedAttack(deal_key(deal, 0))
    assert attack.hits({"game_id": "x", "deal info": f"deal seed {seed}", "n": 3}) == [seed]
    assert attack.hits({"play_index": 7, "score": [1.0, 2.5]}) == []


# --------------------------------------------------------------------------- the API

@pytest.fixture(scope="module")
def app(one_thread):
    return create_app(solutions=SolutionCache(max_size=2), mode="hidden")


def _truth(app, gid):
    return app.state.context.store.get(gid).session


def _unseen(session, seat: int) -> set[int]:
    """The cards the player at ``seat`` may not see now: the other hand and the undealt."""
    state = session.state
    dealt = 4 + 8 * min(state.round + 1, 6)
    return set(state.hands[1 - seat]) | set(session.deal[dealt:])


def _probe_before_the_end(client, gid, view, attack, unseen, answers):
    """Every question a player may ask mid-game; none may reveal a hidden card."""
    r = client.get(f"/api/games/{gid}/analysis")
    assert r.status_code == 403, r.text
    answers.append(r.json())
    r = client.get(f"/api/games/{gid}/record")
    assert r.status_code == 400 and "not finished" in r.json()["detail"]
    answers.append(r.json())
    for path, params in ((f"/api/games/{gid}", {"at": 0}), (f"/api/games/{gid}/hints",
                                                           {"at": 0})):
        r = client.get(path, params=params)
        assert r.status_code == 400, r.text
        answers.append(r.json())
    r = client.post(f"/api/games/{gid}/play-on", params={"at": 0})
    assert r.status_code == 400 and "finished" in r.json()["detail"]
    hint = client.get(f"/api/games/{gid}/hints")
    if view["your_turn"]:
        assert hint.status_code == 200, hint.text
        report = hint.json()
        assert not cards_in(report) & unseen
        answers.append(report)
    else:
        assert hint.status_code == 400
    assert view["seed"] is None and "deal" not in view and not view["solution_ready"]
    assert not view["can_undo"] and not cards_in(view) & unseen


def _error_texts_are_alike(client, gid, view, me):
    """Playing any card the player does not hold: one message, whatever the card is."""
    hand = set(view["hands"][me])
    texts = set()
    for card in range(52):
        if card in hand:
            continue
        r = client.post(f"/api/games/{gid}/play", json={"card": card, "captured": []})
        assert r.status_code == 400
        texts.add(r.json()["detail"].replace(card_code(card), "XX"))
    assert len(texts) == 1, texts


@pytest.mark.parametrize("human", ["alex", "bob"])
def test_api_attack_on_a_hidden_game(app, seed_index, human):
    client = TestClient(app, base_url=LOCAL)
    me, seat = ("Alex", 0) if human == "alex" else ("Bob", 1)
    view = client.post("/api/games", json={"human": human}).json()  # the default agent
    gid = view["game_id"]
    session = _truth(app, gid)
    visible = visible_key(view["pool"], view["hands"][me], seat)
    assert deal_key(session.deal, seat) == visible  # the attacker sees what the deal shows
    attack = SeedAttack(visible)
    assert attack.hits(view) == [], "the first view holds the deal's seed"
    assert visible not in seed_index, "the deal is one of the old seed space"
    assert view["ai"] == DEFAULT_HIDDEN_AGENT and not view["practice"] and session.seed is None
    answers = [view]
    rng = random.Random(11)
    hinted = 0
    _error_texts_are_alike(client, gid, view, me)
    while not view["game_over"]:
        _probe_before_the_end(client, gid, view, attack, _unseen(session, seat), answers)
        if view["ai_to_move"]:
            before = view["play_index"]
            view = client.post(f"/api/games/{gid}/ai").json()
            answers.append(view)
            if not view["game_over"] and before > 0:  # undo after the AI's reply: refused
                r = client.post(f"/api/games/{gid}/undo")
                assert r.status_code == 403 and "no undo" in r.json()["detail"]
                answers.append(r.json())
                again = client.get(f"/api/games/{gid}").json()
                assert again["play_index"] == view["play_index"]
                assert again["history"] == view["history"]
            continue
        hint = client.get(f"/api/games/{gid}/hints").json()
        # the default agent's hint: its own score of each legal play, the best its choice
        assert hint["kind"] == "estimate" and hint["measure"] == "advantage"
        assert {h["notation"] for h in hint["hints"]} == {a["notation"] for a in view["legal"]}
        hinted += 1
        a = rng.choice(view["legal"])
        r = client.post(f"/api/games/{gid}/play", json={"card": a["card"],
                                                        "captured": a["captured"]})
        assert r.status_code == 200, r.text
        view = r.json()
        answers.append(view)
    assert hinted == 24
    for answer in answers:
        assert attack.hits(answer) == [], answer
    # after the end: everything shown, and the record replays the game
    assert view["deal"] == list(session.deal) and view["seed"] is None
    record = client.get(f"/api/games/{gid}/record").json()
    assert record["deal"] == list(session.deal) and "seed" not in record
    assert record["ai_seed"] == session.ai_seed
    assert client.get(f"/api/games/{gid}/analysis").status_code == 200


def test_new_hidden_games_are_not_in_the_old_seed_space(app, seed_index):
    client = TestClient(app, base_url=LOCAL)
    seen = set()
    for i in range(150):
        human, me, seat = (("alex", "Alex", 0), ("bob", "Bob", 1))[i % 2]
        view = client.post("/api/games", json={"human": human, "ai": "random"}).json()
        visible = visible_key(view["pool"], view["hands"][me], seat)
        assert visible not in seed_index, f"game {i}: the deal of seed {seed_index[visible]}"
        assert not SeedAttack(visible).hits(view)
        seen.add(tuple(_truth(app, view["game_id"]).deal))
    assert len(seen) == 150


def test_a_practice_game_says_so_and_its_record_keeps_the_seed(app):
    client = TestClient(app, base_url=LOCAL)
    view = client.post("/api/games", json={"seed": 3, "ai": "random", "ai_seed": 5}).json()
    assert view["practice"] and view["seed"] is None  # the player knows it; still not sent
    gid = view["game_id"]
    rng = random.Random(2)
    while not view["game_over"]:
        if view["ai_to_move"]:
            view = client.post(f"/api/games/{gid}/ai").json()
        else:
            a = rng.choice(view["legal"])
            view = client.post(f"/api/games/{gid}/play",
                               json={"card": a["card"], "captured": a["captured"]}).json()
    assert view["seed"] == 3
    record = client.get(f"/api/games/{gid}/record").json()
    assert record["seed"] == 3 and record["deal"] == list(random_deal(3))
    assert record["ai_seed"] == 5
    branch = client.post(f"/api/games/{gid}/play-on", params={"at": 10}).json()
    assert branch["practice"] and branch["seed"] is None and branch["visibility"] == "hidden"
    assert client.post(f"/api/games/{branch['game_id']}/undo").status_code == 403


# --------------------------------------------------------------------------- the terminal

RANK_LABELS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
CARD_RE = re.compile(r"(10|[A2-9JQK])([♣♦♥♠])")
PROMPT = re.compile(r"your play \[1-(\d+), hint(, undo)?, quit\]: ")


def _screen_cards(line: str) -> list[int]:
    return [RANK_LABELS.index(r) * 4 + "♣♦♥♠".index(s) for r, s in CARD_RE.findall(line)]


def test_terminal_attack_on_a_hidden_game(seed_index):
    """``pasur play`` (hidden hands, no seed): the screens of the first two rounds, a hint,
    undo refused twice, then quit (the record of a whole game is checked in
    tests/test_play_terminal.py; the API tests check the record of a secret deal)."""
    env = dict(os.environ, COLUMNS="120", LINES="50", NO_COLOR="1", TERM="dumb")
    child = pexpect.spawn(sys.executable, ["-m", "tensorcfr.cli.main", "pasur", "play"],
                          env=env, encoding="utf-8", timeout=60, dimensions=(50, 120))
    child.expect(PROMPT)
    first = child.before
    lines = first.splitlines()
    pool = _screen_cards(next(ln for ln in lines if ln.strip().startswith("pool")))
    hand = _screen_cards(next(ln for ln in lines if "Alex you" in ln))
    visible = visible_key(pool, hand, 0)
    attack = SeedAttack(visible)
    assert attack.hits(first) == [], "the first screen holds the deal's seed"
    assert len(pool) == 4 and len(hand) == 4 and visible not in seed_index
    assert child.match.group(2) is None  # undo is not offered
    assert "secure random source" in first and "practice" not in first
    assert "deal seed" not in first
    # the first screen shows no card but the pool and the hand (Bob has not played yet)
    assert set(_screen_cards(first)) == set(pool) | set(hand)
    screens = [first]
    child.sendline("hint")
    child.expect(PROMPT)
    assert f"{DEFAULT_HIDDEN_AGENT} agent's own score" in child.before.replace("\r\n", " ")
    screens.append(child.before)
    for turn in range(12):  # round 1 and half of round 2
        if turn in (1, 7):  # after the AI's reply, and in the next round
            child.sendline("undo")
            child.expect(PROMPT)
            refusal = child.before
            assert "no undo in a hidden-hand game" in refusal and "took back" not in refusal
            after = refusal.split("no undo in a hidden-hand game")[1].split(" 1) ")[0]
            assert not CARD_RE.search(after)  # the refusal, then the same plays again
            screens.append(refusal)
        child.sendline("1")
        child.expect(PROMPT)
        screens.append(child.before)
    child.sendline("quit")
    child.expect("game abandoned")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    for screen in screens:
        assert attack.hits(screen) == [], screen
