"""Numeral211: config validation, reference engine, evaluator vs brute force, isomorphism."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.betting import round_betting
from tensorcfr.games.numeral211.game.config import GameConfig, card_to_str, hand_cards, parse_cards
from tensorcfr.games.numeral211.game.engine import IllegalActionError, new_game, random_deal
from tensorcfr.games.numeral211.game.evaluator import best_of_four, board_hand_values
from tensorcfr.games.numeral211.game.isomorphism import isomorphism

DEFAULT = GameConfig()


def brute_key(config: GameConfig, cards: tuple[int, ...]) -> tuple:
    """Independent, readable 3-card (or best of 4) evaluator: a comparable tuple."""
    if len(cards) == 4:
        return max(brute_key(config, c) for c in itertools.combinations(cards, 3))
    ranks = sorted((c // config.suits for c in cards), reverse=True)
    suits = {c % config.suits for c in cards}
    counts = Counter(ranks)
    is_flush = len(suits) == 1
    is_straight = len(counts) == 3 and ranks[0] - ranks[2] == 2
    if is_straight and is_flush:
        return (5, ranks[0])
    if len(counts) == 1:
        return (4, ranks[0])
    if is_straight:
        return (3, ranks[0])
    if is_flush:
        return (2, *ranks)
    if len(counts) == 2:
        pair = max(counts, key=lambda r: counts[r])
        kicker = min(counts, key=lambda r: counts[r])
        return (1, pair, kicker)
    return (0, *ranks)


@pytest.mark.parametrize("size", [3, 4])
def test_evaluator_matches_brute_force_on_every_set(size: int) -> None:
    config = DEFAULT
    sets = np.array(list(itertools.combinations(range(config.num_cards), size)))
    if size == 3:
        from tensorcfr.games.numeral211.game.evaluator import three_card_values
        fast = three_card_values(config, sets)
    else:
        fast = best_of_four(config, sets)
    keys = [brute_key(config, tuple(s)) for s in sets]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    for a, b in zip(order, order[1:]):
        if keys[a] == keys[b]:
            assert fast[a] == fast[b]
        else:
            assert fast[a] < fast[b], (keys[a], keys[b])


def test_named_hands() -> None:
    c = DEFAULT

    def val(text: str) -> int:
        return int(best_of_four(c, np.array(parse_cards(c, text))))

    assert val("9sTsAs2h") > val("2s2h2d3c")  # straight flush beats trips
    assert val("9sThAd2c") > val("2s5s7s3c")  # 9-T-A is a straight, beats a flush
    assert val("As2h3d5c") < val("2s3h4d6c")  # A-2-3 is no straight; 2-3-4 is
    assert val("AsAh2d3c") > val("TsTh9d5c")  # pair of aces beats pair of tens
    assert val("TsTh9d8c") > val("AsAh2d3c")  # 8-9-T straight beats a pair
    assert val("5s5h9d2c") == val("5d5c9s3h")  # pair + kicker, 4th card irrelevant
    assert val("2s2h9d3c") > val("AsTh8d3c")  # any pair beats high card


def test_board_values_match_scalar() -> None:
    c = GameConfig(ranks="89TA", suits=2)
    boards = np.array([[0, 3], [5, 7]])
    values = board_hand_values(c, boards)
    hands = hand_cards(c)
    for b, board in enumerate(boards):
        for h, hand in enumerate(hands):
            if set(hand) & set(board):
                assert values[b, h] == -1
            else:
                assert values[b, h] == best_of_four(c, np.array(list(hand) + list(board)))


@pytest.mark.parametrize("kwargs,fragment", [
    ({"ranks": "9TA", "suits": 1}, "too small to deal"),
    ({"bets": (10, 0, 20)}, "positive"),
    ({"suits": 5}, "suits"),
    ({"ranks": "AT9"}, "low to high"),
    ({"first_to_act": (0, 2, 1)}, "first_to_act"),
    ({"max_bets": (4, 4)}, "one value per round"),
])
def test_bad_configs_raise_one_line_errors(kwargs: dict, fragment: str) -> None:
    with pytest.raises(TensorCFRError) as info:
        GameConfig(**kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_round_betting_sizes() -> None:
    total_nodes, folds, prefixes = [], 0, 1
    for r in range(3):
        b = round_betting(DEFAULT, r)
        assert b.num_nodes == 10 and len(b.exit_histories) == 9 and len(b.fold_histories) == 8
        total_nodes.append(prefixes * b.num_nodes)
        folds += prefixes * len(b.fold_histories)
        prefixes *= len(b.exit_histories)
    assert total_nodes == [10, 90, 810] and folds == 728 and prefixes == 729


def test_engine_random_games_are_zero_sum_and_consistent() -> None:
    rng = random.Random(3)
    for _ in range(300):
        state = new_game(DEFAULT, random_deal(DEFAULT, rng))
        while not state.is_terminal:
            legal = state.legal_actions()
            assert ("f" in legal) == state.facing_bet()
            state.apply(rng.choice(legal))
        ret = state.returns()
        assert ret[0] == -ret[1]
        assert abs(ret[0]) <= state.pot / 2
    state = new_game(DEFAULT, [0, 1, 2, 3, 4, 5])
    with pytest.raises(IllegalActionError):
        state.apply("f")
    state.apply("r").apply("r").apply("c")  # preflop: bet, raise, call = 25 each
    assert state.contributions() == [25, 25] and state.round == 1
    assert state.current_player == 1 and card_to_str(DEFAULT, state.board[0]) == "3s"


def test_isomorphism_counts_match_brute_force_orbits() -> None:
    config = GameConfig(ranks="9TA", suits=3)
    iso = isomorphism(config)
    n = config.num_cards
    perms = list(itertools.permutations(range(config.suits)))

    def canon(private, board):
        best = None
        for p in perms:
            m = [(c // config.suits) * config.suits + p[c % config.suits] for c in
                 list(private) + list(board)]
            key = (tuple(sorted(m[:2])), tuple(m[2:]))
            best = key if best is None or key < best else best
        return best

    for r, k in ((0, 0), (1, 1), (2, 2)):
        orbits = set()
        for private in itertools.combinations(range(n), 2):
            for board in itertools.permutations([c for c in range(n) if c not in private], k):
                orbits.add(canon(private, board))
        assert iso.isomorphic_classes()[r] == len(orbits)
        # class_of agrees with the brute-force orbit partition on a sample
        seen: dict = {}
        for private in itertools.combinations(range(n), 2):
            for board in itertools.permutations([c for c in range(n) if c not in private], k):
                cls = iso.class_of(r, list(private), list(board))
                assert seen.setdefault(canon(private, board), cls) == cls


def test_default_isomorphic_counts() -> None:
    iso = isomorphism(DEFAULT)
    assert [iso.num_boards(r) for r in range(3)] == [1, 10, 190]
    assert iso.isomorphic_classes()[0] == 100
    # class sizes add up to every concrete (hand, board) combination
    table, count = iso.class_table(1)
    assert count == iso.isomorphic_classes()[1]
    assert math.comb(40, 2) * 38 == 780 * 38
