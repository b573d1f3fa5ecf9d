"""The hidden model's compiled decision: the same rows, numbers and plays as the reference.

The reference is what the agent did before the compiled path: ``decision_rows`` (Python),
XGBoost's ``inplace_predict`` and the first play of the highest prediction. The compiled
path (:mod:`learning.hidden_kernel` + :mod:`learning.compiled_forest`) must give the same
feature rows float for float, the same predictions bit for bit and the same plays, on every
decision of games played by several behaviours (seeded), for both shipped models.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from tensorcfr.games.pasur.agents import make_agent
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.observation import Observation, observe
from tensorcfr.games.pasur.learning import hidden_kernel
from tensorcfr.games.pasur.learning.compiled_forest import CompiledForest
from tensorcfr.games.pasur.learning.hidden_model import NUM_FEATURES, decision_rows

GAMES = 60


@pytest.fixture(scope="module")
def decisions() -> list[Observation]:
    """Every observation of the mover in ``GAMES`` seeded games: greedy against random,
    random against random and the distilled agent against random (all rounds, last plays
    included)."""
    greedy, distilled = make_agent("greedy"), make_agent("distilled")
    out = []
    for game in range(GAMES):
        rng = random.Random(f"compiled:{game}")
        alex = (greedy, None, distilled)[game % 3]
        state = rules.initial_state(rules.random_deal(5000 + game))
        while not state.is_terminal:
            obs = observe(state, state.player)
            out.append(obs)
            legal = obs.legal_actions()
            action = alex.choose(obs) if state.player == 0 and alex else rng.choice(legal)
            state = rules.apply_action(state, action)
    return out


def reference(model, observations: list[Observation]
              ) -> tuple[np.ndarray, np.ndarray, list[rules.Action]]:
    """The previous agent: ``decision_rows``, one XGBoost call, the first play of the
    highest prediction. Returns the rows, XGBoost's predictions and the plays."""
    legal_lists, rows = [], []
    for obs in observations:
        legal, r = decision_rows(obs)
        legal_lists.append(legal)
        rows.extend(r)
    x = np.asarray(rows, dtype=np.float32)
    pred = np.asarray(model.booster.inplace_predict(x), dtype=np.float32)
    plays, start = [], 0
    for legal in legal_lists:
        plays.append(legal[int(np.argmax(pred[start:start + len(legal)]))])
        start += len(legal)
    return x, pred, plays


def test_decisions_cover_the_rare_branches(decisions: list[Observation]) -> None:
    last = [o for o in decisions if o.play_index == rules.NUM_PLAYS - 1]
    assert len(last) == GAMES
    lays = [o for o in last if any(not a.captured for a in o.legal_actions())]
    assert any(o.last_capturer == o.player for o in lays)
    assert any(o.last_capturer == 1 - o.player for o in lays)
    assert any(len(o.legal_actions()) >= 6 for o in decisions)
    assert any(a.card >= 40 and a.captured for o in decisions for a in o.legal_actions())


def test_legal_actions_are_card_actions_of_each_card(decisions: list[Observation]) -> None:
    for obs in decisions[::3]:
        assert obs.legal_actions() == [a for card in obs.hand
                                       for a in rules.card_actions(card, obs.pool)]


def test_kernel_rows_equal_decision_rows(decisions: list[Observation]) -> None:
    assert hidden_kernel.NUM_FEATURES == NUM_FEATURES
    info = np.empty(hidden_kernel.INFO_SIZE, dtype=np.int64)
    for obs in decisions:
        legal, rows = decision_rows(obs)
        plays = np.empty((len(legal), 2), dtype=np.int64)
        got = np.full((len(legal), NUM_FEATURES), np.nan, dtype=np.float32)
        hidden_kernel.pack_decision(obs, legal, info, plays)
        hidden_kernel.decision_features(info, plays, got)
        np.testing.assert_array_equal(got, np.asarray(rows, dtype=np.float32),
                                      err_msg=obs.describe())


@pytest.mark.parametrize("name", ["distilled", "hidden-model"])
def test_compiled_agent_plays_as_xgboost(name: str, decisions: list[Observation]) -> None:
    agent = make_agent(name)
    model = agent.model  # type: ignore[attr-defined]
    assert model.forest is not None
    mine = [o for o in decisions if o.my_turn]
    rows, expected, plays = reference(model, mine)
    assert np.array_equal(model.predict(rows).view(np.int32), expected.view(np.int32))
    assert [agent.choose(o) for o in mine] == plays
    assert agent.choose_many(mine) == plays
    # without compiled trees the agent takes XGBoost's path, with the same plays
    agent.model = dataclasses.replace(model, forest=None)  # type: ignore[attr-defined]
    assert agent.choose_many(mine[:300]) == plays[:300]


def test_forest_reproduces_shallow_leaves_and_missing_values() -> None:
    """Trees of several depths (leaves above the forest's depth are padded) and rows with
    NaN (each node's default side), against XGBoost bit for bit; kinds the kernel does not
    reproduce are refused."""
    import xgboost

    rng = np.random.default_rng(7)
    x = rng.integers(0, 6, size=(400, 5)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    y = np.nan_to_num(x[:, 0]) * 2 - np.nan_to_num(x[:, 1]) + rng.normal(0, 0.5, 400)
    booster = xgboost.train({"max_depth": 4, "eta": 0.3, "nthread": 1, "min_child_weight": 30,
                             "base_score": 0.37}, xgboost.DMatrix(x, label=y),
                            num_boost_round=25)
    forest = CompiledForest.from_booster(booster)
    assert forest is not None and forest.depth == 4
    probe = rng.integers(-1, 7, size=(300, 5)).astype(np.float32)
    probe[rng.random(probe.shape) < 0.2] = np.nan
    expected = np.asarray(booster.inplace_predict(probe), dtype=np.float32)
    assert np.array_equal(forest.predict(probe).view(np.int32), expected.view(np.int32))
    logistic = xgboost.train({"objective": "binary:logistic", "nthread": 1, "max_depth": 2},
                             xgboost.DMatrix(x, label=(y > 2).astype(np.float32)),
                             num_boost_round=3)
    assert CompiledForest.from_booster(logistic) is None


def test_compiled_decision_reads_only_the_observation(decisions: list[Observation]) -> None:
    """States the mover cannot tell apart (the opponent's hand and the cards to come drawn
    again) give equal observations and the same play, whatever state is handed along."""
    from tensorcfr.games.pasur.engine.determinize import sample_states

    agent = make_agent("distilled")
    for obs in [o for o in decisions if o.my_turn][5:400:40]:
        states = sample_states(obs, 3, seed=obs.play_index)
        assert len({tuple(s.hands[1 - obs.player]) for s in states}) > 1 or \
            obs.opponent_hand_size <= 1
        choices = {agent.choose(observe(s, obs.player), state=s) for s in states}
        assert choices == {agent.choose(obs)}
