"""The double-dummy search gives the exact solver's numbers, play by play.

Positions come from seeded random deals, at random plays along random lines; each deal is
solved once by the exact solver from an early position, and every later position on the
random lines is checked against that one solution (values of all legal plays, in the same
order, and the position's value). Over 1,000 positions in all, a few seconds.
"""

from __future__ import annotations

import random

import pytest

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.double_dummy import (
    DoubleDummySolver,
    dd_action_values,
    dd_action_values_many,
    dd_value,
)
from tensorcfr.games.pasur.solving.exact import DeadlineExceeded, action_values_many, solve_exact


def _random_line(state: rules.GameState, plays: int, rng: random.Random) -> rules.GameState:
    for _ in range(plays):
        state = rules.apply_legal_action(state, rng.choice(rules.legal_actions(state)))
    return state


def _check_line(solver: DoubleDummySolver, solution, state: rules.GameState,
                rng: random.Random) -> int:
    """Compare every position from ``state`` to the end of a random line; the count."""
    checked = 0
    while not state.is_terminal:
        assert solver.action_values(state) == solution.action_values(state), state.play_index
        assert solver.value(state) == solution.state_value(state)
        checked += 1
        state = rules.apply_legal_action(state, rng.choice(rules.legal_actions(state)))
    assert solver.action_values(state) == []
    assert solver.value(state) == rules.utility(state)
    return checked


def test_equal_to_exact_solver_on_over_a_thousand_positions() -> None:
    solver = DoubleDummySolver(table_bits=16)
    checked = 0
    for seed in range(50):
        rng = random.Random(f"dd-test:{seed}")
        start = _random_line(rules.initial_state(rules.random_deal(seed)),
                             rng.randrange(32, 40), rng)
        solution = solve_exact(start)
        for _ in range(2):
            checked += _check_line(solver, solution, start, rng)
    assert checked >= 1000, checked


@pytest.mark.parametrize("seed", [0, 5])
def test_equal_from_play_zero_and_on_determinizations(seed: int) -> None:
    """From a deal's first play (the largest search), and as PIMC calls it (many states)."""
    state = rules.initial_state(rules.random_deal(seed))
    solution = solve_exact(state)
    assert dd_value(state) == solution.value
    assert dd_action_values(state) == solution.action_values(state)
    rng = random.Random(seed)
    mid = [_random_line(state, 12, rng) for _ in range(2)]
    assert dd_action_values_many(mid) == action_values_many(mid)


def test_deadline_is_checked_before_each_state() -> None:
    states = [rules.initial_state(rules.random_deal(s)) for s in (1, 2)]
    with pytest.raises(DeadlineExceeded):
        dd_action_values_many(states, deadline=0.0)  # passed already
    assert len(dd_action_values_many(states, deadline=None)) == 2


def test_rejects_a_hand_not_dealt_in_the_round() -> None:
    state = rules.initial_state(rules.random_deal(3))
    bad = rules.GameState(deal=state.deal, play_index=0, hands=(state.hands[1], state.hands[0]),
                          pool=state.pool)
    with pytest.raises(ValueError, match="was not dealt"):
        dd_action_values(bad)
    with pytest.raises(ValueError, match="table_bits"):
        DoubleDummySolver(table_bits=8)
