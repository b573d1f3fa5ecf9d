"""One test (at least) per rule of docs/PASUR_RULES.md, against the reference engine rules.py.

Positions are either reached from a deal or built directly as a ``GameState`` with chosen
hands and pool (the state is a plain immutable record, so a position that is hard to reach by
play, e.g. "nobody captured all game", can still pin down what the rules do there).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Callable

import pytest

from tensorcfr.errors import InvalidDealError, TensorCFRError
from tensorcfr.games.pasur.engine.cards import cards_str, is_jack, parse_card
from tensorcfr.games.pasur.engine.rules import (
    ALEX,
    BOB,
    NUM_PLAYS,
    Action,
    GameState,
    apply_action,
    captures,
    card_actions,
    describe_deal,
    illegal_reason,
    initial_state,
    legal_actions,
    parse_deal,
    play_game,
    random_deal,
    round_hands,
    score,
    score_pile,
    utility,
    validate_deal,
)

DATA = Path(__file__).parent / "data"


def cs(text: str) -> tuple[int, ...]:
    """Card indices of space-separated codes, sorted: ``cs("5c Ah") == (2, 16)``."""
    return tuple(sorted(parse_card(t) for t in text.split()))


def act(text: str) -> Action:
    """An action from ``'5c+Ah+5d'`` (capture) or ``'7d'`` (lay)."""
    card, *captured = text.split("+")
    return Action(parse_card(card), tuple(sorted(parse_card(c) for c in captured)))


def reference_decks() -> list[tuple[int, ...]]:
    """Decks 0..199 of the paper's decks_10000.csv (copied to tests/data)."""
    with open(DATA / "decks_0_199.csv", newline="") as fh:
        return [tuple(int(x) for x in row) for row in csv.reader(fh) if row]


# Deck 9 of the reference data (the paper's Figure 13 deal), pool first.
FIGURE13_DEAL = (0, 3, 33, 49, 12, 13, 25, 44, 9, 10, 16, 51, 20, 21, 34, 40, 22, 24, 41, 50,
                 17, 32, 38, 48, 1, 23, 28, 31, 4, 8, 43, 47, 27, 29, 30, 46, 14, 15, 26, 42,
                 5, 18, 35, 39, 2, 11, 36, 45, 6, 7, 19, 37)


def position(pool: str = "", alex: str = "", bob: str = "", play_index: int = 0,
             last_capturer: int | None = None, deal: tuple[int, ...] = FIGURE13_DEAL) -> GameState:
    """A hand-built position; ``deal`` only matters when a round ends (next hands)."""
    return GameState(deal=deal, play_index=play_index, hands=(cs(alex), cs(bob)), pool=cs(pool),
                     last_capturer=last_capturer)


def actions_of(state: GameState, card: str | None = None) -> set[str]:
    """Notations of the legal actions (of one card if given)."""
    return {a.notation() for a in legal_actions(state)
            if card is None or a.card == parse_card(card)}


# --------------------------------------------------------------------------- deals

def test_reference_decks_are_valid_deals() -> None:
    decks = reference_decks()
    assert len(decks) == 200
    for deck in decks:
        assert validate_deal(deck) == deck
        assert not any(is_jack(c) for c in deck[:4])


def test_deal_layout_pool_then_alex_then_bob_each_round() -> None:
    deal = FIGURE13_DEAL
    state = initial_state(deal)
    assert state.pool == tuple(sorted(deal[0:4]))
    for h in range(6):
        alex, bob = round_hands(deal, h)
        assert alex == tuple(sorted(deal[4 + 8 * h: 8 + 8 * h]))
        assert bob == tuple(sorted(deal[8 + 8 * h: 12 + 8 * h]))
    assert state.hands == round_hands(deal, 0)
    assert describe_deal(deal)[0] == "pool     Ac As 9d Kd"
    assert describe_deal(deal)[1] == "round 1  Alex 4c 4d 7d Qc   Bob 3d 3h 5c Ks"
    assert len(describe_deal(deal)) == 7


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d[:51], "has 51"),
    (lambda d: d + [0], "has 53"),
    (lambda d: d[:51] + [d[0]], "appears twice"),
    (lambda d: d[:51] + [52], "out of range"),
    (lambda d: d[:51] + [-1], "out of range"),
    (lambda d: [40] + [c for c in d if c != 40], "holds a Jack"),
    (lambda d: d[:51] + ["x"], "card indices"),
    (lambda d: d[:51] + [51.5], "card indices"),
    (lambda d: d[:51] + [None], "card indices"),
    (lambda d: d[:51] + [True], "card indices"),
    (lambda d: [], "has 0"),
])
def test_validate_deal_rejects_bad_deals(mutate: Callable[[list], list], message: str) -> None:
    deal = [c for c in FIGURE13_DEAL if c != 51] + [51]
    with pytest.raises(InvalidDealError, match=message) as info:
        validate_deal(mutate(list(deal)))
    assert isinstance(info.value, TensorCFRError)
    assert "\n" not in str(info.value)


def test_every_jack_position_in_the_pool_is_rejected() -> None:
    for jack in (40, 41, 42, 43):
        for pos in range(4):
            deal = [c for c in range(52) if c != jack]
            deal.insert(pos, jack)
            with pytest.raises(InvalidDealError, match="Jack"):
                validate_deal(deal)
            with pytest.raises(InvalidDealError):
                initial_state(deal)
        # a Jack right after the pool (Alex's hand) is fine
        deal = [c for c in range(52) if c != jack]
        deal.insert(4, jack)
        validate_deal(deal)


def test_parse_deal_codes_and_indices() -> None:
    text = cards_str(FIGURE13_DEAL)
    assert parse_deal(text) == FIGURE13_DEAL
    assert parse_deal(text.replace(" ", ", ")) == FIGURE13_DEAL
    assert parse_deal(" ".join(map(str, FIGURE13_DEAL))) == FIGURE13_DEAL
    assert parse_deal(text.replace("Td", "10d")) == FIGURE13_DEAL


@pytest.mark.parametrize("text,message", [
    ("Ac Ad", "has 2"),
    ("Ac Zz", "not a card"),
    ("", "has 0"),
])
def test_parse_deal_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidDealError, match=message):
        parse_deal(text)


def test_parse_deal_jack_in_pool_and_duplicates() -> None:
    codes = cards_str(FIGURE13_DEAL).split()
    with pytest.raises(InvalidDealError, match="Jack"):
        parse_deal(" ".join(["Jc"] + [c for c in codes if c != "Jc"]))
    with pytest.raises(InvalidDealError, match="twice"):
        parse_deal(" ".join(codes[:51] + [codes[0]]))


def test_random_deal_is_deterministic_per_seed() -> None:
    assert random_deal(7) == random_deal(7)
    assert random_deal(7) != random_deal(8)
    assert len({random_deal(s) for s in range(50)}) == 50
    validate_deal(random_deal(None))


def test_random_deals_are_valid_for_many_seeds() -> None:
    for seed in range(3000):
        deal = random_deal(seed)
        assert sorted(deal) == list(range(52))
        assert not any(is_jack(c) for c in deal[:4]), seed


def _first_shuffle(seed: int) -> list[int]:
    """The deck before the table rule is applied (random_deal shuffles with random.Random)."""
    deck = list(range(52))
    random.Random(seed).shuffle(deck)
    return deck


def test_random_deal_follows_the_jack_replacement_rule() -> None:
    replaced = reshuffled = untouched = 0
    for seed in range(600):
        deck = _first_shuffle(seed)
        deal = list(random_deal(seed))
        jack_positions = [i for i in range(4) if is_jack(deck[i])]
        if not jack_positions:
            assert deal == deck  # no Jack in the pool: the shuffle is the deal
            untouched += 1
        elif len(jack_positions) == 1 and not is_jack(deck[4]):
            # the Jack is replaced, in place, by the next card, and goes back into the deck
            pos = jack_positions[0]
            jack = deck[pos]
            expected_pool = deck[:4]
            expected_pool[pos] = deck[4]
            assert deal[:4] == expected_pool
            assert jack in deal[4:]
            rest = [c for c in deal[4:] if c != jack]
            assert rest == deck[5:]  # the other cards keep their order
            replaced += 1
        else:
            # two or more Jacks, or a Jack as the replacement: the whole deck is reshuffled
            kept = [i for i in range(4) if i not in jack_positions]
            assert deal[:4] != deck[:4]
            assert any(deal[i] != deck[i] for i in kept) or not kept
            reshuffled += 1
    assert untouched > 300 and replaced > 100 and reshuffled > 5


# --------------------------------------------------------------------------- turns

def test_turn_order_and_dealing_each_round() -> None:
    deal = FIGURE13_DEAL
    state = initial_state(deal)
    for n in range(NUM_PLAYS):
        assert state.play_index == n
        assert state.round == n // 8
        assert state.player == (ALEX if n % 2 == 0 else BOB)
        if n % 8 == 0:  # fresh hands at each round start, Alex first
            assert state.hands == round_hands(deal, n // 8)
            assert len(state.hands[0]) == len(state.hands[1]) == 4
        pool_before = state.pool
        action = legal_actions(state)[-1]
        state = apply_action(state, action)
        if n % 8 == 7 and n < NUM_PLAYS - 1:
            # the pool carries over to the next round unchanged by the deal
            expected = tuple(sorted(set(pool_before) - set(action.captured)
                                    | (set() if action.captured else {action.card})))
            assert state.pool == expected
    assert state.is_terminal and state.round == 6
    assert state.hands == ((), ())
    assert legal_actions(state) == []
    assert illegal_reason(state, Action(0, ())) == "the game is already over"
    assert len(state.history) == NUM_PLAYS


# --------------------------------------------------------------------------- worked example

def test_worked_example_figure13() -> None:
    state = initial_state(FIGURE13_DEAL)
    assert state.pool == cs("Ac As 9d Kd")
    assert state.hands == (cs("4c 4d 7d Qc"), cs("3d 3h 5c Ks"))
    # Alex's 7d: 7+A+A = 9, 7+9 = 16: no capture, so it is laid
    assert actions_of(state, "7d") == {"7d"}
    state = apply_action(state, act("7d"))
    assert state.pool == cs("Ac As 9d Kd 7d")
    # Bob's 3d captures Ac+7d or As+7d
    assert actions_of(state, "3d") == {"3d+Ac+7d", "3d+As+7d"}
    # Bob's Ks can only capture Kd, so it cannot be laid
    assert actions_of(state, "Ks") == {"Ks+Kd"}
    assert illegal_reason(state, act("Ks")) == "Ks can capture Kd, so it cannot be laid"
    after = apply_action(state, act("3d+Ac+7d"))
    assert after.piles[BOB] == cs("3d Ac 7d")
    bob = score(after)[BOB]
    assert (bob.clubs, bob.aces, bob.total) == (1, 1, 1)


# --------------------------------------------------------------------------- numeric cards

def test_numeric_captures_every_set_summing_to_eleven_each_a_separate_action() -> None:
    # 5c needs 6 from the pool: Ah+5d and 2d+4c; Kd/Qh/Jc are not numbers
    pool = cs("Ah 5d 2d 4c Kd Qh Jc")
    assert set(captures(parse_card("5c"), pool)) == {cs("Ah 5d"), cs("2d 4c")}
    state = position(pool="Ah 5d 2d 4c Kd Qh Jc", alex="5c")
    assert actions_of(state) == {"5c+Ah+5d", "5c+2d+4c"}


def test_numeric_single_and_many_card_captures() -> None:
    assert captures(parse_card("Ts"), cs("Ac Kd")) == [cs("Ac")]
    assert captures(parse_card("Ac"), cs("Ad Ah As 2c 5c")) == [cs("Ad Ah As 2c 5c")]
    # the played card's own value counts: 6 + 5 = 11, 6 + 6 != 11
    assert captures(parse_card("6c"), cs("6d 5h")) == [cs("5h")]


def test_numeric_never_captures_face_cards() -> None:
    for face in ("Jd", "Qd", "Kd"):
        for card in ("Ac", "5c", "Tc"):
            assert captures(parse_card(card), cs(face)) == []
    state = position(pool="Jd Qd Kd", alex="Tc")
    assert actions_of(state) == {"Tc"}  # laid


def test_forced_capture_is_per_card_numeric() -> None:
    state = position(pool="Ah 5d", alex="5c 9h")
    # 5c can capture, so it cannot be laid; 9h (needs 2) has no capture and is laid
    assert actions_of(state) == {"5c+Ah+5d", "9h"}
    assert illegal_reason(state, act("5c")) == "5c can capture Ah+5d, so it cannot be laid"
    assert illegal_reason(state, act("9h")) is None


def test_a_hand_where_every_card_captures_has_no_lay() -> None:
    state = position(pool="Ah 5d Kd", alex="5c Ks")
    assert all(not a.is_lay for a in legal_actions(state))
    assert actions_of(state) == {"5c+Ah+5d", "Ks+Kd"}


def test_wrong_numeric_capture_reasons() -> None:
    state = position(pool="Ah 5d 3c", alex="5c 9h")
    assert "sum with it to 11" in illegal_reason(state, act("5c+Ah+3c"))
    assert illegal_reason(state, act("9h+Ah")) == "9h can capture nothing here, it can only be laid"
    assert illegal_reason(state, act("Ts")) == "Ts is not in Alex's hand (5c 9h)"
    assert illegal_reason(state, act("5c+Ah+6d")).startswith("6d is not in the pool")
    assert illegal_reason(state, Action(parse_card("5c"), cs("Ah") + cs("Ah"))) == \
        "the captured set names a card twice"
    with pytest.raises(ValueError, match="illegal action"):
        apply_action(state, act("5c"))


# --------------------------------------------------------------------------- Jacks

def test_jack_takes_every_numeric_and_jack_but_never_kings_or_queens() -> None:
    state = position(pool="3c 5d Jh Qs Kd", alex="Jc")
    assert actions_of(state) == {"Jc+3c+5d+Jh"}  # one action
    after = apply_action(state, act("Jc+3c+5d+Jh"))
    assert after.pool == cs("Qs Kd")
    assert after.piles[ALEX] == cs("Jc 3c 5d Jh")


def test_jack_facing_only_kings_and_queens_is_laid() -> None:
    state = position(pool="Qs Kd", alex="Jc")
    assert actions_of(state) == {"Jc"}
    after = apply_action(state, act("Jc"))
    assert after.pool == cs("Jc Qs Kd")
    assert position(pool="", alex="Jc").hands[0] == cs("Jc")
    assert actions_of(position(pool="", alex="Jc")) == {"Jc"}  # empty pool: laid


def test_jack_takes_a_lone_jack_and_cannot_be_laid_over_numbers() -> None:
    assert actions_of(position(pool="Jh Kd", alex="Jc")) == {"Jc+Jh"}
    state = position(pool="9d Kd", alex="Jc 8c")
    assert actions_of(state) == {"Jc+9d", "8c"}
    assert illegal_reason(state, act("Jc")) == "Jc can capture 9d, so it cannot be laid"
    reason = illegal_reason(position(pool="9d 2c Kd", alex="Jc"), act("Jc+9d"))
    assert reason is not None and "every numeric card and Jack" in reason
    assert illegal_reason(position(pool="9d Kd", alex="Jc"), act("Jc+9d+Kd")) is not None


# --------------------------------------------------------------------------- Kings and Queens

@pytest.mark.parametrize("rank,other", [("K", "Q"), ("Q", "K")])
def test_king_queen_one_action_per_same_rank_card(rank: str, other: str) -> None:
    state = position(pool=f"{rank}d {rank}h {other}s 5c Jd", alex=f"{rank}c 9h")
    # forced capture is per card: the King/Queen must capture, 9h (no capture) may be laid
    assert actions_of(state) == {f"{rank}c+{rank}d", f"{rank}c+{rank}h", "9h"}
    assert illegal_reason(state, act(f"{rank}c")) == \
        f"{rank}c can capture {rank}d, so it cannot be laid"
    assert illegal_reason(state, act(f"{rank}c+{rank}d+{rank}h")) == \
        f"{rank}c captures exactly one card of its own rank"
    assert illegal_reason(state, act(f"{rank}c+{other}s")) is not None
    after = apply_action(state, act(f"{rank}c+{rank}h"))
    assert after.pool == cs(f"{rank}d {other}s 5c Jd")
    assert after.piles[ALEX] == cs(f"{rank}c {rank}h")


@pytest.mark.parametrize("card,pool", [("Kc", "Qd 5c Jd"), ("Qc", "Kd 5c Jd"), ("Kc", "")])
def test_king_queen_without_same_rank_is_laid(card: str, pool: str) -> None:
    assert actions_of(position(pool=pool, alex=card)) == {card}


def test_card_actions_lay_when_no_capture() -> None:
    assert card_actions(parse_card("Qc"), cs("Kd")) == [Action(parse_card("Qc"), ())]
    assert Action(5, ()).is_lay and not Action(5, (1,)).is_lay
    assert Action(parse_card("3d"), cs("Ac 7d")).notation() == "3d+Ac+7d"


# --------------------------------------------------------------------------- Surs

@pytest.mark.parametrize("played,pool", [
    ("6c", "5d"),          # numeric
    ("2c", "Ad 8h"),       # numeric, several cards
    ("Ks", "Kd"),          # King
    ("Qs", "Qd"),          # Queen
])
def test_sur_when_a_capture_empties_the_pool(played: str, pool: str) -> None:
    state = position(pool=pool, alex=played + " 9c", bob="9d")
    (action,) = [a for a in legal_actions(state) if a.card == parse_card(played)]
    after = apply_action(state, action)
    assert after.pool == () and after.surs == (1, 0)
    assert score(after)[ALEX].sur_points == 5
    # Bob too (play 1 of the round)
    state = position(pool=pool, alex="9c", bob=played + " 9d", play_index=1)
    after = apply_action(state, action)
    assert after.surs == (0, 1)


def test_no_sur_when_the_pool_is_not_emptied() -> None:
    after = apply_action(position(pool="Kd 5h", alex="Ks"), act("Ks+Kd"))
    assert after.pool == cs("5h") and after.surs == (0, 0)


def test_no_sur_by_a_jack() -> None:
    after = apply_action(position(pool="5d Jh 2c", alex="Jc"), act("Jc+2c+5d+Jh"))
    assert after.pool == () and after.surs == (0, 0)
    assert after.last_capturer == ALEX


def test_no_sur_in_the_last_round_but_yes_in_the_fifth() -> None:
    # play 39 is Bob's last play of round 5 (index 4): a Sur
    state = position(pool="5d", alex="", bob="6c", play_index=39)
    assert apply_action(state, act("6c+5d")).surs == (0, 1)
    # plays 40..47 are the sixth round: no Sur, for either player
    for play_index in (40, 41, 46):
        player_hand = "6c 9c"
        state = position(pool="5d", alex=player_hand if play_index % 2 == 0 else "9h",
                         bob=player_hand if play_index % 2 else "9h", play_index=play_index)
        after = apply_action(state, act("6c+5d"))
        assert after.pool == () and after.surs == (0, 0)


def test_sur_counters_match_the_rule_in_random_games() -> None:
    # random legal play on reference decks: the state's Sur counters follow the Sur rule
    rng = random.Random(5)
    total_surs = 0
    for deck in reference_decks()[:40]:
        state = initial_state(deck)
        surs_seen = [0, 0]
        while not state.is_terminal:
            before = state
            action = rng.choice(legal_actions(state))
            state = apply_action(state, action)
            emptied = bool(action.captured) and not before.pool == () and not (
                set(before.pool) - set(action.captured))
            if emptied and not is_jack(action.card) and before.round < 5:
                surs_seen[before.player] += 1
        assert tuple(surs_seen) == state.surs
        total_surs += sum(surs_seen)
    assert total_surs > 0


# --------------------------------------------------------------------------- end of game

def test_pool_goes_to_the_last_capturer_at_the_end() -> None:
    state = position(pool="9c 9d", alex="", bob="Td", play_index=47, last_capturer=ALEX)
    final = apply_action(state, act("Td"))
    assert final.is_terminal and final.pool == ()
    assert final.piles == (cs("9c 9d Td"), ())
    # and to Bob if he captured last
    state = position(pool="9c 9d", alex="", bob="Td", play_index=47, last_capturer=BOB)
    assert apply_action(state, act("Td")).piles == ((), cs("9c 9d Td"))


def _deal_ending_with(last_eight: str) -> tuple[int, ...]:
    """A valid deal whose last 8 cards (round 6: Alex 4, Bob 4) are ``last_eight``."""
    tail = [parse_card(t) for t in last_eight.split()]
    head = [c for c in range(52) if c not in tail]
    return validate_deal(head + tail)


def test_last_capture_in_an_earlier_round_takes_the_final_pool() -> None:
    # Round 6 (plays 40..47) holds only 6..9s over a 10: nobody can capture in it.
    deal = _deal_ending_with("6c 7c 8c 9c 6d 7d 8d 9d")
    # play 39: Bob's last card of round 5 captures 6h (5h+6h = 11), leaving Td: not a Sur
    state = position(pool="6h Td", alex="", bob="5h", play_index=39, deal=deal)
    state = apply_action(state, act("5h+6h"))
    assert state.round == 5 and state.last_capturer == BOB and state.surs == (0, 0)
    assert state.hands == (cs("6c 7c 8c 9c"), cs("6d 7d 8d 9d"))
    while not state.is_terminal:
        actions = legal_actions(state)
        assert all(a.is_lay for a in actions)  # no capture is possible in the last round here
        action = actions[0]
        state = apply_action(state, action)
    # the fix of the rules page: the capture of round 5 still wins the final pool
    assert state.pool == ()
    assert state.piles[BOB] == cs("5h 6h Td 6c 7c 8c 9c 6d 7d 8d 9d")
    assert state.piles[ALEX] == ()


def test_nobody_captured_all_game_pool_goes_to_nobody() -> None:
    # A whole game without any capture cannot happen (too many cards), so build the position:
    # round 6 starts, nobody has captured, and round 6 has no capture either.
    deal = _deal_ending_with("6c 7c 8c 9c 6d 7d 8d 9d")
    state = GameState(deal=deal, play_index=40, hands=round_hands(deal, 5), pool=cs("Td Ts"),
                      last_capturer=None)
    while not state.is_terminal:
        state = apply_action(state, legal_actions(state)[0])
    assert state.piles == ((), ())
    assert len(state.pool) == 10  # left on the table, to nobody
    alex, bob = score(state)
    assert alex.total == bob.total == 0 and utility(state) == 0


# --------------------------------------------------------------------------- scoring

def test_each_scoring_item() -> None:
    assert score_pile(cs("Ac"), 0).aces == 1
    assert score_pile(cs("Ac Ad Ah As"), 0).total == 4
    assert score_pile(cs("Jc Jd"), 0).jacks == 2
    assert score_pile(cs("Jc Jd Jh Js"), 0).total == 4
    assert score_pile(cs("Td"), 0).ten_of_diamonds == 3 and score_pile(cs("Td"), 0).total == 3
    assert score_pile(cs("Tc Th Ts"), 0).total == 0  # only the 10 of diamonds scores
    assert score_pile(cs("2c"), 0).two_of_clubs == 2 and score_pile(cs("2c"), 0).total == 2
    assert score_pile(cs("2d 2h 2s"), 0).total == 0
    assert score_pile((), 3).sur_points == 15 and score_pile((), 3).total == 15
    assert score_pile(cs("Kc Qd 5h 9s"), 0).total == 0


def test_clubs_bonus_at_seven_clubs() -> None:
    six = cs("3c 4c 5c 6c 7c 8c")
    assert score_pile(six, 0).clubs == 6 and score_pile(six, 0).clubs_bonus == 0
    seven = six + cs("Kc")  # face clubs count as clubs
    assert score_pile(seven, 0).clubs == 7 and score_pile(seven, 0).total == 7
    all_clubs = tuple(range(0, 52, 4))
    b = score_pile(all_clubs, 0)
    # 13 clubs: bonus 7 + Ac 1 + 2c 2 + Jc 1
    assert (b.clubs, b.clubs_bonus, b.aces, b.two_of_clubs, b.jacks, b.total) == \
        (13, 7, 1, 2, 1, 11)


def test_clubs_bonus_goes_to_exactly_one_player_when_reached() -> None:
    # 13 clubs: whoever holds 7 or more, the other holds at most 6
    for split in range(14):
        clubs = list(range(0, 52, 4))
        a, b = score_pile(clubs[:split], 0), score_pile(clubs[split:], 0)
        assert (a.clubs_bonus > 0) + (b.clubs_bonus > 0) == 1


def test_breakdown_total_and_dict() -> None:
    b = score_pile(cs("Ac 2c Td Jh 3c 4c 5c 6c 7c"), 2)
    d = b.as_dict()
    assert d["total"] == b.total == 7 + 1 + 2 + 3 + 1 + 10
    assert d["clubs"] == 7 and d["surs"] == 2 and d["sur_points"] == 10
    parts = ("clubs_bonus", "aces", "jacks", "ten_of_diamonds", "two_of_clubs", "sur_points")
    assert sum(d[k] for k in parts) == d["total"]


def test_play_game_reaches_the_end_with_utility_alex_minus_bob() -> None:
    for deck in reference_decks()[:20]:
        final = play_game(deck, lambda s, acts: acts[0])
        alex, bob = score(final)
        assert utility(final) == alex.total - bob.total
        assert sorted(final.piles[0] + final.piles[1]) == list(range(52))
