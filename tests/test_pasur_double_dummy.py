"""The double-dummy search gives the exact solver's numbers, play by play.

Positions come from seeded random deals, at random plays along random lines; each deal is
solved once by the exact solver from an early position, and every later position on the
random lines is checked against that one solution (values of all legal plays, in the same
order, and the position's value). Over 1,000 positions in all, a few seconds.
"""

from __future__ import annotations

import json
import random

import pytest

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.double_dummy import (
    DoubleDummySolver,
    dd_action_values,
    dd_action_values_many,
    dd_value,
    solve_double_dummy,
)
from tensorcfr.games.pasur.solving.exact import DeadlineExceeded, action_values_many, solve_exact

from _cli_helpers import cli


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


# ---------------------------------------------------------------- pasur solve --method double-dummy

@pytest.mark.parametrize("seed", [0, 3, 7])
def test_solve_gives_the_exact_solvers_value_and_principal_line(seed: int) -> None:
    """From a deal's start, from a position mid-game (its history kept) and from a position
    whose history is unknown (``start_play`` in the record): the same value, the same
    optimal game and the same score rows as the exact solver."""
    state = rules.initial_state(rules.random_deal(seed))
    mid = _random_line(state, 13, random.Random(seed))
    bare = rules.GameState(deal=mid.deal, play_index=mid.play_index, hands=mid.hands,
                           pool=mid.pool, piles=mid.piles, surs=mid.surs,
                           last_capturer=mid.last_capturer)
    for start in (state, mid, bare):
        exact = solve_exact(start)
        searched = solve_double_dummy(start)
        assert searched.value == exact.value
        assert searched.principal_line == exact.principal_line
        assert searched.principal_rows == exact.principal_rows
        assert searched.positions_searched > 0 and searched.searches > 0
    assert "start_play" in solve_double_dummy(bare).principal_line


def test_solve_of_a_finished_game_is_its_score() -> None:
    state = _random_line(rules.initial_state(rules.random_deal(2)), rules.NUM_PLAYS,
                         random.Random(2))
    assert state.is_terminal
    searched = solve_double_dummy(state)
    assert searched.value == rules.utility(state) == solve_exact(state).value
    assert searched.principal_rows == []
    assert searched.principal_line == solve_exact(state).principal_line
    bare = rules.GameState(deal=state.deal, play_index=state.play_index, hands=state.hands,
                           pool=state.pool, piles=state.piles, surs=state.surs,
                           last_capturer=state.last_capturer)  # its history unknown
    assert solve_double_dummy(bare).principal_line == solve_exact(bare).principal_line


def test_cli_solve_double_dummy(tmp_path) -> None:
    exact = json.loads(cli("pasur", "solve", "--seed", "3", "--json").stdout)
    done = cli("pasur", "solve", "--seed", "3", "--method", "double-dummy", "--json",
               "--out", tmp_path / "dd")
    assert done.returncode == 0, done.stderr
    searched = json.loads(done.stdout)
    assert searched["method"] == "double-dummy" and searched["device"] == "cpu"
    for key in ("deal", "start_play", "value", "principal_line", "principal_rows", "seed"):
        assert searched[key] == exact[key], key
    assert searched["positions_searched"] > 0 and searched["kernel_load_seconds"] >= 0
    assert not {"states_per_level", "num_states"} & set(searched)  # no merged states counted
    assert json.loads((tmp_path / "dd" / "double_dummy_solution.json").read_text()) == searched
    assert json.loads((tmp_path / "dd" / "principal_line.json").read_text()) == \
        exact["principal_line"]
    text = cli("pasur", "solve", "--seed", "3", "--method", "double-dummy")
    assert text.returncode == 0 and "value" in text.stdout
    assert "positions searched" in text.stdout and "-6" in text.stdout
    refused = cli("pasur", "solve", "--seed", "3", "--method", "double-dummy",
                  "--variant", "cfr")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--variant only applies to --method dcfr" in refused.stderr
