"""python_pasur, the OpenSpiel game of Pasur with hidden hands: OpenSpiel's own checks,
agreement with the reference engine, what each player sees and resampling."""

from __future__ import annotations

import random
from dataclasses import replace
from collections import Counter

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms import generate_playthrough  # noqa: E402

from tensorcfr.games.pasur.engine import rules  # noqa: E402
from tensorcfr.games.pasur.engine.cards import card_code, is_jack, is_king, is_queen  # noqa: E402
from tensorcfr.games.pasur.engine.determinize import determinize  # noqa: E402
from tensorcfr.games.pasur.engine.observation import observe  # noqa: E402
from tensorcfr.games.pasur.engine.sum11 import sum11_combos  # noqa: E402
from tensorcfr.games.pasur.playing import openspiel_game as og  # noqa: E402


@pytest.fixture(scope="module")
def game():
    return og.load_game()


def _deal_into(state, deal):
    """Apply the chance nodes of ``state`` from ``deal`` (in deal order)."""
    while state.is_chance_node():
        card = deal[len(state.rules_state.deal)]
        assert card in dict(state.chance_outcomes())
        state.apply_action(card)


def _play_random(game, seed, stop_at=None):
    """A state after ``stop_at`` random plays of the deal ``random_deal(seed)``."""
    rng = random.Random(seed)
    deal = rules.random_deal(seed)
    state = game.new_initial_state()
    _deal_into(state, deal)
    while not state.is_terminal() and (stop_at is None
                                       or state.rules_state.play_index < stop_at):
        state.apply_action(rng.choice(state.legal_actions()))
        _deal_into(state, deal)
    return state


def test_registered_on_import_with_its_type(game):
    assert og.GAME_NAME in pyspiel.registered_names()
    game_type = game.get_type()
    assert game_type.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert game_type.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert game_type.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert game.num_players() == 2 and game.max_game_length() == 48
    assert game.num_distinct_actions() == 52 * og.CAPTURES_PER_CARD


def test_openspiel_random_simulation_with_serialization(game):
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_openspiel_playthrough_runs_a_whole_game():
    text = generate_playthrough.playthrough(og.GAME_NAME, None, seed=7)
    assert "IsTerminal() = True" in text
    assert "InformationStateTensorSize() = 5432" in text


def test_captures_per_card_is_the_proven_bound():
    containing = Counter(card for combo in sum11_combos() for card in combo)
    assert og.CAPTURES_PER_CARD == max(containing.values())
    # A Queen or King captures one of the (at most 3) others of its rank; a Jack has one.
    assert og.CAPTURES_PER_CARD >= 3


def test_random_games_agree_with_the_reference_engine(game):
    """Random plays from the rules engine, replayed in python_pasur: same state, same
    legal plays in the same order, same score."""
    for seed in range(12):
        rng = random.Random(1000 + seed)
        deal = rules.random_deal(seed)
        reference = rules.initial_state(deal)
        state = game.new_initial_state()
        _deal_into(state, deal)
        while not reference.is_terminal:
            # Cards of later rounds are not dealt yet: the deal so far is a prefix.
            dealt = state.rules_state.deal
            assert dealt == deal[:len(dealt)] and len(dealt) == 12 + 8 * reference.round
            assert replace(state.rules_state, deal=deal) == reference
            assert state.current_player() == reference.player
            legal = rules.legal_actions(reference)
            ids = state.legal_actions()
            assert [state.rules_action(a) for a in ids] == legal
            assert ids == sorted(ids)
            play = rng.choice(legal)
            assert og.action_id(reference, play) in ids
            state.apply_action(og.action_id(reference, play))
            reference = rules.apply_action(reference, play)
            _deal_into(state, deal)
        assert state.is_terminal() and state.rules_state == reference
        assert state.rules_state.deal == deal
        u = rules.utility(reference)
        assert state.returns() == [u, -u]
        assert state.rules_state.history == reference.history


def test_chance_deals_the_pool_without_jacks_then_every_card(game):
    state = game.new_initial_state()
    outcomes = state.chance_outcomes()
    assert len(outcomes) == 48 and not any(is_jack(c) for c, _ in outcomes)
    assert sum(p for _, p in outcomes) == pytest.approx(1.0)
    for card in (0, 1, 2, 3):
        state.apply_action(card)
    outcomes = state.chance_outcomes()
    assert len(outcomes) == 48 and any(is_jack(c) for c, _ in outcomes)
    assert state.rules_state.pool == (0, 1, 2, 3)


def test_action_strings_read_the_play(game):
    # The paper's Figure 13 deal: Alex lays 7d, Bob's 3d captures Ac+7d or As+7d.
    rest = [c for c in range(52) if c not in (0, 3, 33, 49, 12, 13, 25, 44, 9, 10, 16, 51)]
    deal = rules.validate_deal([0, 3, 33, 49, 12, 13, 25, 44, 9, 10, 16, 51] + rest)
    state = game.new_initial_state()
    _deal_into(state, deal)
    assert [state.action_to_string(a) for a in state.legal_actions()] == \
        ["4c", "4d", "7d", "Qc"]
    state.apply_action(25 * og.CAPTURES_PER_CARD)  # 7d laid
    names = [state.action_to_string(a) for a in state.legal_actions()]
    assert "3d+Ac+7d" in names and "3d+As+7d" in names and "Ks+Kd" in names
    assert "Ks" not in names  # K♠ must capture K♦


def _two_worlds(game, seed, play_index):
    """Two states at the same point that differ only in the cards player 0 cannot see."""
    state = _play_random(game, seed, stop_at=play_index)
    obs = observe(state.rules_state, 0)
    rng = random.Random(seed)
    for _ in range(50):
        other = og.state_from_rules(game, determinize(obs, rng))
        if other.rules_state.hands[1] != state.rules_state.hands[1]:
            return state, other
    raise AssertionError("no other opponent hand drawn")


@pytest.mark.parametrize("play_index", [0, 5, 19])
def test_information_state_ignores_only_hidden_cards(game, play_index):
    state, other = _two_worlds(game, seed=play_index, play_index=play_index)
    assert state.information_state_string(0) == other.information_state_string(0)
    assert state.information_state_tensor(0) == other.information_state_tensor(0)
    assert state.observation_string(0) == other.observation_string(0)
    assert state.observation_tensor(0) == other.observation_tensor(0)
    # Bob's hand differs, so Bob can tell them apart.
    assert state.information_state_string(1) != other.information_state_string(1)
    assert state.information_state_tensor(1) != other.information_state_tensor(1)
    # A different play, same cards everywhere: Alex can tell them apart too.
    legal = state.legal_actions()
    first, second = state.clone(), state.clone()
    first.apply_action(legal[0])
    second.apply_action(legal[-1])
    assert first.information_state_string(0) != second.information_state_string(0)
    assert first.information_state_tensor(0) != second.information_state_tensor(0)


def test_no_hidden_card_shows_in_what_a_player_sees(game):
    for seed, play_index in ((1, 0), (2, 9), (3, 30), (4, 48)):
        state = _play_random(game, seed, stop_at=play_index)
        full = state.rules_state
        for player in (0, 1):
            seen = set(full.deal[:4]) | {a.card for a in full.history} | set(full.hands[player])
            hidden = [c for c in range(52) if c not in seen]
            for text in (state.information_state_string(player),
                         state.observation_string(player)):
                words = text.replace("[", " ").replace("]", " ").replace("+", " ").replace(
                    "|", " ").split()
                assert not {card_code(c) for c in hidden} & set(words)
            hand = np.asarray(state.observation_tensor(player))[2:54]
            assert set(np.flatnonzero(hand)) == set(full.hands[player])


def test_resample_keeps_the_information_state_and_has_a_legal_history(game):
    sampler = pyspiel.UniformProbabilitySampler(11, 0.0, 1.0)
    for seed, play_index in ((5, 0), (6, 3), (7, 8), (8, 26), (9, 47)):
        state = _play_random(game, seed, stop_at=play_index)
        for player in (0, 1):
            drawn = state.resample_from_infostate(player, sampler)
            assert drawn.information_state_string(player) == \
                state.information_state_string(player)
            assert drawn.information_state_tensor(player) == \
                state.information_state_tensor(player)
            assert drawn.current_player() == state.current_player()
            replay = game.new_initial_state()
            for action in drawn.history():
                replay.apply_action_with_legality_check(action)
            assert str(replay) == str(drawn)
            assert replay.rules_state == drawn.rules_state
            # The rules engine agrees with the drawn deal's history.
            full = drawn.rules_state
            again = rules.initial_state(_complete(full.deal))
            for play in full.history:
                again = rules.apply_action(again, play)
            assert again.piles == full.piles and again.pool == full.pool


def test_resample_without_replay_is_the_same_draw(game):
    for seed, play_index in ((13, 0), (14, 17), (15, 46)):
        state = _play_random(game, seed, stop_at=play_index)
        replayed = state.resample_from_infostate(
            1, pyspiel.UniformProbabilitySampler(seed, 0.0, 1.0))
        direct = state.resample_from_infostate(
            1, pyspiel.UniformProbabilitySampler(seed, 0.0, 1.0), replay=False)
        assert direct.rules_state == replayed.rules_state
        assert direct.history() == []
        for player in (0, 1):
            assert direct.information_state_string(player) == \
                replayed.information_state_string(player)
        assert direct.legal_actions() == replayed.legal_actions()
        rng = random.Random(seed)
        while not direct.is_terminal():  # both play on identically
            if direct.is_chance_node():
                action = rng.choice([c for c, _ in direct.chance_outcomes()])
            else:
                action = rng.choice(direct.legal_actions())
            direct.apply_action(action)
            replayed.apply_action(action)
            assert str(direct) == str(replayed)
        assert direct.returns() == replayed.returns()


def _complete(partial_deal):
    """A full deal starting with ``partial_deal`` (the other cards after it)."""
    return tuple(partial_deal) + tuple(c for c in range(52) if c not in partial_deal)


def test_resample_draws_different_opponent_hands(game):
    state = _play_random(game, 12, stop_at=2)
    sampler = pyspiel.UniformProbabilitySampler(3, 0.0, 1.0)
    hands = {state.resample_from_infostate(0, sampler).rules_state.hands[1] for _ in range(8)}
    assert len(hands) > 1


def test_resample_mid_deal_keeps_the_dealt_count(game):
    state = game.new_initial_state()
    deal = rules.random_deal(4)
    for card in deal[:10]:  # the pool and 6 of round 1's 8 cards
        state.apply_action(card)
    drawn = state.resample_from_infostate(1, pyspiel.UniformProbabilitySampler(1, 0.0, 1.0))
    assert drawn.is_chance_node()
    assert len(drawn.rules_state.deal) == 10
    assert drawn.information_state_string(1) == state.information_state_string(1)


def test_action_ids_round_trip(game):
    """Every legal id decodes to a rules play and back (Queens, Kings, Jacks included)."""
    for seed in range(6):
        for stop_at in (10, 30):
            state = _play_random(game, seed, stop_at=stop_at)
            for a in state.legal_actions():
                play = state.rules_action(a)
                assert og.action_id(state.rules_state, play) == a
                assert a // og.CAPTURES_PER_CARD == play.card
                if play.captured and (is_queen(play.card) or is_king(play.card)):
                    assert len(play.captured) == 1
    with pytest.raises(ValueError):
        state.rules_action(-1)
