"""Hypothesis property tests: random legal games (choices drawn by hypothesis) on random deals."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorcfr.games.pasur.engine.cards import is_club, is_jack
from tensorcfr.games.pasur.engine.records import (
    parse_record,
    record_from_state,
    record_to_json,
    replay_record,
)
from tensorcfr.games.pasur.engine.rules import (
    NUM_PLAYS,
    GameState,
    apply_action,
    illegal_reason,
    initial_state,
    legal_actions,
    score,
    utility,
    validate_deal,
)

# Deals: any permutation of the 52 cards whose pool holds no Jack.
deals = st.permutations(list(range(52))).filter(lambda d: not any(is_jack(c) for c in d[:4]))

PARTS = ("clubs_bonus", "aces", "jacks", "ten_of_diamonds", "two_of_clubs", "sur_points")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def play_random_game(deal: list[int], data: st.DataObject) -> GameState:
    """Play 48 plays, each chosen among the legal actions by hypothesis; checks each step."""
    state = initial_state(deal)
    while not state.is_terminal:
        actions = legal_actions(state)
        assert actions, "a player always has a legal action"
        assert len(set(actions)) == len(actions)
        for a in actions:
            assert illegal_reason(state, a) is None
        action = data.draw(st.sampled_from(actions))
        before_cards = len(state.pool) + sum(map(len, state.piles)) + sum(map(len, state.hands))
        state = apply_action(state, action)
        after_cards = len(state.pool) + sum(map(len, state.piles)) + sum(map(len, state.hands))
        dealt = 8 if state.play_index % 8 == 0 and not state.is_terminal else 0
        assert after_cards == before_cards + dealt  # cards are neither lost nor duplicated
    return state


@SETTINGS
@given(deal=deals, data=st.data())
def test_random_legal_games_end_with_all_cards_in_the_piles(deal: list[int],
                                                             data: st.DataObject) -> None:
    final = play_random_game(deal, data)
    assert final.play_index == NUM_PLAYS and len(final.history) == NUM_PLAYS
    assert final.hands == ((), ())
    assert final.last_capturer is not None  # a whole game always has a capture
    alex_pile, bob_pile = final.piles
    assert not set(alex_pile) & set(bob_pile)
    assert sorted(alex_pile + bob_pile) == list(range(52))
    assert final.pool == ()


@SETTINGS
@given(deal=deals, data=st.data())
def test_breakdown_adds_up_and_utility_is_alex_minus_bob(deal: list[int],
                                                          data: st.DataObject) -> None:
    final = play_random_game(deal, data)
    alex, bob = score(final)
    for b, pile in ((alex, final.piles[0]), (bob, final.piles[1])):
        d = b.as_dict()
        assert sum(d[k] for k in PARTS) == d["total"] == b.total
        assert b.clubs == sum(1 for c in pile if is_club(c))
    assert alex.clubs + bob.clubs == 13
    assert (alex.clubs_bonus > 0) + (bob.clubs_bonus > 0) == 1  # exactly one player
    # without Surs the card points are fixed: 7 + 4 aces + 4 jacks + 3 + 2 = 20
    assert alex.total + bob.total == 20 + 5 * (alex.surs + bob.surs)
    assert utility(final) == alex.total - bob.total
    assert final.surs == (alex.surs, bob.surs)


@SETTINGS
@given(deal=deals, data=st.data())
def test_records_of_random_games_replay_to_the_same_result(deal: list[int],
                                                          data: st.DataObject) -> None:
    final = play_random_game(deal, data)
    record = parse_record(record_to_json(record_from_state(final)))
    result = replay_record(record)
    assert result.legal and result.state == final
    assert result.utility == utility(final)
    assert result.as_dict()["alex_points"] == score(final)[0].total


@settings(max_examples=200, deadline=None)
@given(deal=deals)
def test_valid_deals_roundtrip(deal: list[int]) -> None:
    assert validate_deal(deal) == tuple(deal)
    state = initial_state(deal)
    assert len(state.pool) == 4 and all(len(h) == 4 for h in state.hands)
