"""What a player sees with hidden hands (engine/observation.py) and the states consistent with
it (engine/determinize.py): no hidden card leaks, every draw replays the observed history."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.determinize import (
    determinize,
    determinize_with_hand,
    rebuild_deal,
    sample_states,
)
from tensorcfr.games.pasur.engine.observation import observe

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_game_states(seed: int) -> list[rules.GameState]:
    """Every state of one random game (random deal, random legal plays), start to end."""
    rng = random.Random(seed)
    state = rules.initial_state(rules.random_deal(seed))
    states = [state]
    while not state.is_terminal:
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))
        states.append(state)
    return states


def swap_hidden(state: rules.GameState, viewer: int, rng: random.Random) -> rules.GameState:
    """The same game with the cards ``viewer`` cannot see shuffled among the hidden places
    (the opponent's hand and the undealt rounds): the same plays, other hidden cards."""
    obs = observe(state, viewer)
    unseen = list(obs.unseen)
    rng.shuffle(unseen)
    hand, future = unseen[:obs.opponent_hand_size], unseen[obs.opponent_hand_size:]
    deal = rebuild_deal(obs, hand, future)
    other = rules.initial_state(deal)
    for action in state.history:
        other = rules.apply_action(other, action)
    return other


@pytest.mark.parametrize("seed", range(6))
def test_no_hidden_card_leaks(seed: int) -> None:
    """Two states that differ only in hidden cards give identical observations, and no
    observation names a card of the opponent's hand or of the rounds to come."""
    rng = random.Random(100 + seed)
    for state in random_game_states(seed):
        for viewer in (0, 1):
            obs = observe(state, viewer)
            other = swap_hidden(state, viewer, rng)
            assert observe(other, viewer) == obs
            hidden = set(state.hands[1 - viewer]) | set(
                state.deal[4 + 8 * (state.round + 1):] if state.round < 5 else ())
            if not state.is_terminal:
                visible = (set(obs.hand) | set(obs.pool) | set(obs.initial_pool)
                           | {c for a in obs.history for c in (a.card, *a.captured)}
                           | set(obs.piles[0]) | set(obs.piles[1]))
                assert not visible & hidden
                assert set(obs.unseen) >= hidden
            assert len(obs.unseen) == obs.opponent_hand_size + obs.undealt_count
            text = str(obs.as_dict())
            assert "unseen_count" in text and "'unseen'" not in text


def test_observation_changes_with_what_is_seen() -> None:
    """The viewer's own hand and every play are part of the observation."""
    states = random_game_states(7)
    keys = {observe(s, 0).key() for s in states}
    assert len(keys) == len(states)
    a, b = observe(states[0], 0), observe(states[0], 1)
    assert a.hand != b.hand and a.unseen != b.unseen


@SETTINGS
@given(seed=st.integers(0, 10_000), draw_seed=st.integers(0, 10_000), stop=st.integers(0, 48))
def test_determinizations_replay_the_observed_history(seed: int, draw_seed: int,
                                                      stop: int) -> None:
    """Every drawn state's deal, replayed from the start with the observed plays, is legal
    and reaches exactly the drawn state; the observer sees the same observation in it."""
    states = random_game_states(seed)
    state = states[min(stop, len(states) - 1)]
    for viewer in (0, 1):
        obs = observe(state, viewer)
        drawn = determinize(obs, random.Random(draw_seed))
        rules.validate_deal(drawn.deal)
        replay = rules.initial_state(drawn.deal)
        for action in obs.history:
            assert rules.illegal_reason(replay, action) is None
            replay = rules.apply_action(replay, action)
        assert (replay.hands, replay.pool, replay.piles, replay.surs, replay.last_capturer) == (
            drawn.hands, drawn.pool, drawn.piles, drawn.surs, drawn.last_capturer)
        assert observe(drawn, viewer) == obs
        assert drawn.hands[viewer] == state.hands[viewer]


def test_determinization_is_seeded_and_uniform_enough() -> None:
    """Same seed, same draws; the opponent's hand is drawn from every unseen card."""
    state = rules.initial_state(rules.random_deal(11))
    obs = observe(state, 0)
    a = sample_states(obs, 5, seed=3)
    b = sample_states(obs, 5, seed=3)
    assert [s.deal for s in a] == [s.deal for s in b]
    seen_in_hand: set[int] = set()
    for s in sample_states(obs, 200, seed=4):
        seen_in_hand |= set(s.hands[1])
    assert seen_in_hand == set(obs.unseen)


def test_determinize_with_the_true_hand_gives_the_true_position() -> None:
    """Given the opponent's real hand, the drawn state is the real position (future rounds
    aside)."""
    state = random_game_states(5)[13]
    obs = observe(state, 1)
    drawn = determinize_with_hand(obs, state.hands[0], random.Random(0))
    assert (drawn.hands, drawn.pool, drawn.piles, drawn.play_index) == (
        state.hands, state.pool, state.piles, state.play_index)


def test_bad_determinization_input() -> None:
    obs = observe(rules.initial_state(rules.random_deal(2)), 0)
    with pytest.raises(ValueError, match="holds 4 cards"):
        rebuild_deal(obs, obs.unseen[:3], obs.unseen[3:])
    with pytest.raises(ValueError, match="unseen cards"):
        rebuild_deal(obs, obs.hand, obs.unseen[4:])
    with pytest.raises(ValueError, match="at least 1"):
        sample_states(obs, 0, seed=0)
    with pytest.raises(ValueError, match="player must be"):
        observe(rules.initial_state(rules.random_deal(2)), 2)
