"""Players and batched self-play of one Pasur deal: cross-checks against the reference rules
and the exact solver."""

from __future__ import annotations

import random

import pytest
import torch

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.features import reference_features
from tensorcfr.games.pasur.agents import PLAYER_NAMES, make_player
from tensorcfr.games.pasur.playing.players import Player
from tensorcfr.games.pasur.engine.records import parse_record, replay_record
from tensorcfr.games.pasur.playing.selfplay import matchup_summary, play_games

pytestmark = pytest.mark.usefixtures("one_thread")

DEAL = rules.random_deal(3)  # exact value -6, 0.1 M states


@pytest.fixture(scope="module")
def exact_player():
    return make_player("exact", DEAL)


def _walk(player, seed: int):
    """A random game; at every state check the player's answer against the rules."""
    rng = random.Random(seed)
    state = rules.initial_state(DEAL)
    while not state.is_terminal:
        (probs,) = player.action_probs([state])
        assert [a for a, _ in probs] == rules.legal_actions(state)
        assert abs(sum(p for _, p in probs) - 1) < 1e-9
        assert all(p >= 0 for _, p in probs)
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))


def test_names_and_protocol(exact_player):
    assert PLAYER_NAMES == ("random", "exact", "table", "model")
    assert isinstance(make_player("random", DEAL), Player)
    assert isinstance(exact_player, Player)


def test_random_and_exact_answer_every_state_legally(exact_player):
    _walk(make_player("random", DEAL), 0)
    _walk(exact_player, 1)


def test_exact_puts_weight_only_on_optimal_actions(exact_player):
    state = rules.initial_state(DEAL)
    rng = random.Random(5)
    for _ in range(20):
        values = dict(exact_player.solution.action_values(state))
        best = (max if state.player == rules.ALEX else min)(values.values())
        (probs,) = exact_player.action_probs([state])
        optimal = [a for a, v in values.items() if v == best]
        for action, p in probs:
            assert p == pytest.approx(1 / len(optimal) if action in optimal else 0.0)
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))


def test_many_states_at_once(exact_player):
    """Positions of different plays in one call keep their order."""
    rng = random.Random(2)
    states, state = [], rules.initial_state(DEAL)
    while not state.is_terminal:
        states.append(state)
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))
    batched = exact_player.action_probs(states[::-1])
    single = [exact_player.action_probs([s])[0] for s in states[::-1]]
    assert batched == single


def test_bad_names_and_missing_files():
    with pytest.raises(TensorCFRError, match="unknown player 'nash'"):
        make_player("nash", DEAL)
    with pytest.raises(TensorCFRError, match="needs --model"):
        make_player("model", DEAL)
    with pytest.raises(TensorCFRError, match="needs --table"):
        make_player("table", DEAL)
    with pytest.raises(TensorCFRError, match="does not exist"):
        make_player("table", DEAL, table="/nonexistent/run")


def test_exact_vs_exact_is_the_exact_value_in_every_game(exact_player):
    result = play_games(DEAL, exact_player, exact_player, 300, sample_seed=4)
    assert exact_player.value == -6
    assert bool((result.diffs == exact_player.value).all())


def test_exact_never_ends_below_its_value_against_random(exact_player):
    rnd = make_player("random", DEAL)
    as_alex = play_games(DEAL, exact_player, rnd, 400, sample_seed=1)
    as_bob = play_games(DEAL, rnd, exact_player, 400, sample_seed=2)
    assert int(as_alex.diffs.min()) >= exact_player.value
    assert int(as_bob.diffs.max()) <= exact_player.value
    assert float(as_alex.diffs.double().mean()) > exact_player.value


def test_sampled_games_replay_with_the_reference_engine():
    rnd = make_player("random", DEAL)
    result = play_games(DEAL, rnd, rnd, 64, sample_seed=7, records=True)
    for game in range(64):
        replay = replay_record(parse_record(result.record(game)))
        assert replay.legal
        assert replay.utility == int(result.diffs[game])


def test_self_play_is_seeded():
    rnd = make_player("random", DEAL)
    a = play_games(DEAL, rnd, rnd, 50, sample_seed=11, records=True)
    b = play_games(DEAL, rnd, rnd, 50, sample_seed=11, records=True)
    c = play_games(DEAL, rnd, rnd, 50, sample_seed=12, records=True)
    assert torch.equal(a.cards, b.cards) and torch.equal(a.diffs, b.diffs)
    assert not torch.equal(a.cards, c.cards)


class _Recorder:
    """Uniform player that keeps every batch's feature rows (to check the tracker)."""

    name = "recorder"
    needs_features = True

    def __init__(self) -> None:
        self.batches = []

    def edge_probs(self, batch):
        self.batches.append((batch, batch.child_features().clone()))
        return batch.normalize(torch.ones(batch.edge_card.numel(), dtype=torch.float64))


def test_tracked_feature_rows_match_the_reference_rows():
    rec = _Recorder()
    result = play_games(DEAL, rec, rec, 6, sample_seed=3, records=True)
    for game in range(6):
        state = rules.initial_state(DEAL)
        for level, (batch, rows) in enumerate(rec.batches):
            mine = (batch.edge_position == game).nonzero().flatten()
            for e in mine.tolist():
                mask = int(batch.edge_captured[e])
                action = rules.Action(int(batch.edge_card[e]),
                                      tuple(c for c in range(52) if (mask >> c) & 1))
                child = rules.apply_action(state, action)
                assert rows[e].tolist() == reference_features(child), (game, level, action)
            mask = int(result.captured[level, game])
            state = rules.apply_action(state, rules.Action(
                int(result.cards[level, game]), tuple(c for c in range(52) if (mask >> c) & 1)))


def test_summary_statistics():
    s = matchup_summary([2, 0, -1, 3])
    assert s["games"] == 4 and s["mean_diff"] == 1.0
    assert s["min_diff"] == -1 and s["max_diff"] == 3
    assert s["alex_win_rate"] == 0.5 and s["tie_rate"] == 0.25 and s["bob_win_rate"] == 0.25
    assert s["fair_value"] == 0.625
    assert s["ci95"][0] < 1.0 < s["ci95"][1]
