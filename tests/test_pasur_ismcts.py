"""The ismcts / ismcts-time hidden-hand agents (OpenSpiel's ISMCTS on python_pasur)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("pyspiel")

from tensorcfr.errors import TensorCFRError  # noqa: E402
from tensorcfr.games.pasur.agents import AGENT_NAMES, AgentOptions, make_agent  # noqa: E402
from tensorcfr.games.pasur.engine import rules  # noqa: E402
from tensorcfr.games.pasur.engine.observation import observe  # noqa: E402
from tensorcfr.games.pasur.playing.agent import HiddenAgent, RandomAgent  # noqa: E402
from tensorcfr.games.pasur.playing.ismcts_agent import ISMCTSAgent  # noqa: E402


def _play(state, agents, until=rules.NUM_PLAYS):
    """Play from ``state`` until play ``until``; every choice must be legal."""
    while not state.is_terminal and state.play_index < until:
        obs = observe(state, state.player)
        action = agents[state.player].choose(obs)
        assert action in rules.legal_actions(state)
        state = rules.apply_action(state, action)
    return state


def test_registered_and_a_hidden_agent():
    assert "ismcts" in AGENT_NAMES and "ismcts-time" in AGENT_NAMES
    agent = make_agent("ismcts", AgentOptions(simulations=7))
    assert isinstance(agent, HiddenAgent) and not agent.sees_everything
    assert agent.name == "ismcts" and agent.simulations == 7
    timed = make_agent("ismcts-time", AgentOptions(seconds_per_move=0.05))
    assert timed.name == "ismcts-time" and timed.seconds_per_move == 0.05
    with pytest.raises(TensorCFRError, match="time per move"):
        make_agent("ismcts-time", AgentOptions())


def test_one_simulation_plays_a_whole_game_legally():
    agents = [ISMCTSAgent(simulations=1), ISMCTSAgent(simulations=1)]
    for seed, agent in enumerate(agents):
        agent.reset(seed)
    final = _play(rules.initial_state(rules.random_deal(21)), agents)
    assert final.is_terminal and len(final.history) == rules.NUM_PLAYS


def test_same_seed_same_play():
    deal = rules.random_deal(8)
    runs = []
    for _ in range(2):
        agent = ISMCTSAgent(simulations=12)
        agent.reset(5)
        state, choices = rules.initial_state(deal), []
        for _ in range(6):
            action = agent.choose(observe(state, state.player))
            choices.append(action)
            state = rules.apply_action(state, action)
        runs.append(choices)
    assert runs[0] == runs[1]


def test_simulation_count_and_estimates():
    state = rules.initial_state(rules.random_deal(2))
    while len(rules.legal_actions(state)) < 3:
        state = rules.apply_action(state, rules.legal_actions(state)[0])
    obs = observe(state, state.player)
    agent = ISMCTSAgent(simulations=40)
    agent.reset(1)
    action = agent.choose(obs)
    assert agent.last_simulations == 40
    estimates = agent.estimates(obs)
    assert estimates is not None
    assert sum(e.samples for e in estimates) == 40
    assert {e.action for e in estimates} == set(rules.legal_actions(state))
    # The chosen play is the most visited one.
    assert action in [e.action for e in estimates
                      if e.samples == max(x.samples for x in estimates)]
    for e in estimates:
        assert abs(e.value) <= 120


def test_time_budget_is_spent_on_simulations():
    state = rules.initial_state(rules.random_deal(4))
    obs = observe(state, 0)
    agent = make_agent("ismcts-time", AgentOptions(seconds_per_move=0.3))
    agent.reset(0)
    assert agent.choose(obs) in rules.legal_actions(state)
    assert agent.last_simulations >= 1


def test_it_takes_a_sure_sur():
    """Pool Ac Ad 4c 4d: Alex's Ah sweeps it (a Sur, 5 points and three Aces); 9c only takes
    the two Aces, Qc and Kc are laid."""
    first = [0, 1, 12, 13] + [2, 32, 44, 48] + [18, 23, 45, 49]
    deal = rules.validate_deal(first + [c for c in range(52) if c not in first])
    state = rules.initial_state(deal)
    sweep = rules.Action(2, (0, 1, 12, 13))
    assert sweep in rules.legal_actions(state)
    agent = ISMCTSAgent(simulations=60)
    agent.reset(3)
    assert agent.choose(observe(state, 0)) == sweep


def test_beats_random_over_the_last_two_rounds():
    """From random positions at the start of round 5, ISMCTS (30 simulations) gains more
    points than a random player from the same positions, seats swapped (over 12 such
    positions in groups of 4, ISMCTS's margin was +26, +32, +42 points)."""
    margin = 0
    for seed in range(4):
        rng = random.Random(seed)
        start = rules.initial_state(rules.random_deal(100 + seed))
        while start.play_index < 32:
            start = rules.apply_action(start, rng.choice(rules.legal_actions(start)))
        for ismcts_seat in (0, 1):
            agents = [RandomAgent(), RandomAgent()]
            agents[ismcts_seat] = ISMCTSAgent(simulations=30)
            for i, agent in enumerate(agents):
                agent.reset(10 * seed + i)
            before = rules.utility(start)
            final = _play(start, agents)
            gained = rules.utility(final) - before
            margin += gained if ismcts_seat == 0 else -gained
    assert margin > 0
