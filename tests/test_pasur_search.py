"""The ``round-search`` agent (issue 29 part 2): its compiled round search against a plain
Python minimax, its honesty (it never reads the hidden cards), seeds, the registry, the value
network's files and ``pasur train-round-value``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AGENTS, AgentOptions, agent_names, make_agent
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import observe
from tensorcfr.games.pasur.learning.round_value import features_dense
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.match import play_game
from tensorcfr.games.pasur.playing.round_search import (
    RoundSearchAgent,
    RoundSearcher,
    RoundValueNet,
)
from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES
from tensorcfr.games.pasur.solving.double_dummy import dd_action_values

runner = CliRunner()


def _random_net(seed: int) -> RoundValueNet:
    rng = np.random.default_rng(seed)
    return RoundValueNet.from_arrays({
        "w1": rng.normal(0, 0.5, (NUM_FEATURES, 6)), "b1": rng.normal(0, 0.5, 6),
        "w2": rng.normal(0, 0.5, (6, 5)), "b2": rng.normal(0, 0.5, 5),
        "w3": rng.normal(0, 2.0, 5), "b3": rng.normal(0, 1.0, 1)})


def _net_value(net: RoundValueNet, state: rules.GameState) -> float:
    """The network's value of the round end ``state`` in numpy, from rules objects."""
    k = state.play_index // rules.PLAYS_PER_ROUND
    clubs = [sum(1 for c in pile if c % 4 == 0) for pile in state.piles]
    done = max(clubs) >= rules.CLUBS_FOR_BONUS
    undealt = sum(1 << c for c in state.deal[4 + rules.PLAYS_PER_ROUND * k:])
    pool = sum(1 << c for c in state.pool)
    last = -1 if state.last_capturer is None else state.last_capturer
    x = features_dense(k, pool, undealt, 64 if done else clubs[0], 64 if done else clubs[1],
                       last).astype(np.float64)
    h1 = np.maximum(x @ net.w1 + net.b1, 0)
    h2 = np.maximum(h1 @ net.w2 + net.b2, 0)
    return float(h2 @ net.w3 + net.b3[0])


def _minimax(state: rules.GameState, net: RoundValueNet, first: bool = True) -> float:
    """Whole-game Alex-minus-Bob value searched to the round's end (plain Python)."""
    if state.is_terminal:
        return float(rules.utility(state))
    if not first and state.play_index % rules.PLAYS_PER_ROUND == 0:
        return rules.utility(state) + _net_value(net, state)
    values = [_minimax(rules.apply_legal_action(state, a), net, False)
              for a in rules.legal_actions(state)]
    return max(values) if state.player == rules.ALEX else min(values)


def _position(seed: int, play_index: int) -> rules.GameState:
    rng = random.Random(seed)
    state = rules.initial_state(rules.random_deal(seed))
    while state.play_index < play_index:
        state = rules.apply_legal_action(state, rng.choice(rules.legal_actions(state)))
    return state


@pytest.mark.parametrize("seed", range(6))
def test_round_search_matches_python_minimax(seed: int) -> None:
    net = _random_net(seed)
    searcher = RoundSearcher(net)
    for t in (8 * (seed % 5) + 4, 8 * (seed % 5) + 7, 8 * ((seed + 2) % 5) + 5):
        state = _position(100 + seed, t)
        got = searcher.action_values(state)
        assert [a for a, _ in got] == rules.legal_actions(state)
        for action, value in got:
            want = _minimax(rules.apply_legal_action(state, action), net, False)
            assert value == pytest.approx(want, abs=1e-9)


def test_round_search_is_exact_in_the_last_round() -> None:
    """No deal is left after round 6: the search reaches the game's end, the double-dummy
    values whatever the network."""
    searcher = RoundSearcher(_random_net(9))
    for seed in range(4):
        state = _position(seed, 40 + seed)
        got = searcher.action_values(state)
        assert [(a, float(v)) for a, v in dd_action_values(state)] == got


def test_round_search_agent_is_honest_and_seeded() -> None:
    """Two true states that the agent cannot tell apart (the opponent's hand and the cards
    to come reshuffled) get the same play and estimates; the same seed gives the same game."""
    net = _random_net(3)
    rng = random.Random(7)
    for t in (0, 5, 13, 26):
        state = _position(40 + t, t)
        obs = observe(state, state.player)
        other = determinize(obs, rng)
        assert other.hands[1 - state.player] != state.hands[1 - state.player] or \
            other.deal != state.deal
        other_obs = observe(other, state.player)
        assert other_obs == obs
        answers = []
        for true_state, o in ((state, obs), (other, other_obs)):
            agent = RoundSearchAgent(determinizations=6, net=net)
            agent.reset(11)
            answers.append((agent.choose(o, true_state), agent.estimates(o)))
        assert answers[0] == answers[1]
        assert answers[0][0] in obs.legal_actions()
    games = []
    for _ in range(2):
        result = play_game(rules.random_deal(5), RoundSearchAgent(3, net=net), GreedyAgent(),
                           seed=2)
        games.append(result.state.history)
    assert games[0] == games[1] and len(games[0]) == rules.NUM_PLAYS


def test_round_search_in_the_registry_with_its_budget() -> None:
    assert "round-search" in agent_names()
    assert "cards to come" in AGENTS["round-search"].description
    assert not AGENTS["round-search"].sees_everything
    agent = make_agent("round-search", AgentOptions(determinizations=5, seconds_per_move=0.5,
                                                     max_reply_seconds=0.9))
    assert isinstance(agent, RoundSearchAgent)
    assert (agent.determinizations, agent.seconds_per_move, agent.max_reply_seconds) == \
        (5, 0.5, 0.9)
    agent.reset(0)
    obs = observe(rules.initial_state(rules.random_deal(4)), 0)
    estimates = agent.estimates(obs)
    assert [e.action for e in estimates] == obs.legal_actions()
    samples = {e.samples for e in estimates}  # the budget may stop it early on a busy machine
    assert len(samples) == 1 and 1 <= samples.pop() <= 5


def test_shipped_value_net_loads_and_bad_files_fail(tmp_path: Path) -> None:
    net = RoundValueNet.load()
    assert net.manifest["format"] == "tensorcfr-pasur-round-value"
    assert net.manifest["rmse"]["test"] < net.manifest["round_mean_rmse"]["test"]
    saved = _random_net(1)
    saved.save(tmp_path / "n")
    loaded = RoundValueNet.load(tmp_path / "n")
    assert all(np.array_equal(a, b) for a, b in zip(saved.arrays(), loaded.arrays()))
    with pytest.raises(TensorCFRError, match="train-round-value"):
        RoundValueNet.load(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "round_value.npz").write_bytes(b"not a zip")
    with pytest.raises(TensorCFRError, match=r"round value network .*round_value.npz is "
                       r"damaged"):
        RoundValueNet.load(tmp_path / "bad")
    # (every other damage: tests/test_readers_fuzz.py, "round-search value network")


def test_train_round_value_cli(tmp_path: Path) -> None:
    out = tmp_path / "rv"
    args = ["pasur", "train-round-value", "--games", "4", "--futures", "1", "--epochs", "2",
            "--out", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["rows"]["total"] == 20 and (out / "round_value.npz").exists()
    again = runner.invoke(app, args)  # resumes from rows.npz: the same rows
    assert again.exit_code == 0 and json.loads(again.output)["rows"] == report["rows"]
    net = RoundValueNet.load(out)
    assert net.manifest["games"] == 4
    other = runner.invoke(app, ["pasur", "train-round-value", "--games", "4", "--futures", "2",
                                "--out", str(out)])
    assert other.exit_code == 2 and "other settings" in other.output
    bad = runner.invoke(app, ["pasur", "train-round-value", "--games", "0", "--out", str(out)])
    assert bad.exit_code == 2


def test_hidden_model_distilled_from_round_search(tmp_path: Path) -> None:
    """Expert iteration's step: train-hidden with the round-search teacher."""
    from tensorcfr.games.pasur.learning.hidden_model import (
        HiddenModelAgent,
        TrainHiddenSettings,
        run_train_hidden,
    )

    manifest = run_train_hidden(TrainHiddenSettings(
        games=3, out=tmp_path / "m", rounds=5, seed=3, teacher="round-search",
        determinizations=2))
    assert manifest["teacher"] == "round-search" and manifest["determinizations"] == 2
    agent = HiddenModelAgent(tmp_path / "m")
    obs = observe(rules.initial_state(rules.random_deal(1)), 0)
    assert agent.choose(obs) in obs.legal_actions()


def test_distilled_agent_is_registered_and_plays() -> None:
    agent = make_agent("distilled")
    assert agent.name == "distilled" and not agent.sees_everything
    assert "round-search" in AGENTS["distilled"].description
    assert agent.model.manifest["teacher"] == "round-search"
    obs = observe(rules.initial_state(rules.random_deal(2)), 0)
    assert agent.choose(obs) in obs.legal_actions()
