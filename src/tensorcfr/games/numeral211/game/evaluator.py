"""Vectorized Numeral211 hand evaluator: the best 3 of 4 cards, all hands of a board at once.

Categories, high to low: straight flush (5) > three of a kind (4) > straight (3) > flush (2)
> pair (1) > high card (0).  A straight is three consecutive ranks in the deck's rank order
(``2 < 3 < ... < 9 < T < A`` by default: 9-T-A is a straight, A-2-3 is not; no wrap-around).
Ties: straight (flush) by its high card, trips by rank, flush and high card by the 1st, 2nd,
then 3rd card, pair by the pair's rank then the third card; equal values split the pot.

A 3-card hand's value is the integer ``category * R**3 + tiebreak`` (``R`` ranks,
``tiebreak < R**3``), so a larger integer is a stronger hand and equal integers tie.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import numpy as np

from tensorcfr.games.numeral211.game.config import GameConfig, hand_cards

__all__ = [
    "CATEGORY_NAMES", "three_card_values", "three_card_table", "best_of_four",
    "hand_value", "board_hand_values", "category_of",
]

CATEGORY_NAMES = ("high card", "pair", "flush", "straight", "three of a kind",
                  "straight flush")
"""Category names indexed by category number (0 = high card ... 5 = straight flush)."""


def three_card_values(config: GameConfig, cards: np.ndarray) -> np.ndarray:
    """Values of 3-card hands: ``cards`` [..., 3] int card numbers -> [...] int64.

    The three cards must be distinct; the value orders hands as the rules say.
    """
    cards = np.asarray(cards, dtype=np.int64)
    ranks = np.sort(cards // config.suits, axis=-1)[..., ::-1]  # high to low
    suits = cards % config.suits
    r1, r2, r3 = ranks[..., 0], ranks[..., 1], ranks[..., 2]
    base = config.num_ranks
    flush = (suits[..., 0] == suits[..., 1]) & (suits[..., 1] == suits[..., 2])
    straight = (r1 == r2 + 1) & (r2 == r3 + 1)
    trips = (r1 == r3)
    pair = ~trips & ((r1 == r2) | (r2 == r3))
    high_order = (r1 * base + r2) * base + r3
    # pair: (pair rank, kicker); the middle card is always of the pair.
    kicker = np.where(r1 == r2, r3, r1)
    pair_order = r2 * base + kicker
    category = np.select([straight & flush, trips, straight, flush, pair],
                         [5, 4, 3, 2, 1], default=0)
    tiebreak = np.select([straight, trips, pair], [r1, r1, pair_order], default=high_order)
    return category.astype(np.int64) * base ** 3 + tiebreak.astype(np.int64)


def category_of(config: GameConfig, value: np.ndarray | int) -> np.ndarray:
    """Category number (0 = high card .. 5 = straight flush) of hand values."""
    return np.asarray(value) // config.num_ranks ** 3


@lru_cache(maxsize=8)
def _table(config: GameConfig) -> np.ndarray:
    n = config.num_cards
    triples = np.array(list(combinations(range(n), 3)), dtype=np.int64)
    values = three_card_values(config, triples)
    table = np.full((n, n, n), -1, dtype=np.int64)
    for perm in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
        table[triples[:, perm[0]], triples[:, perm[1]], triples[:, perm[2]]] = values
    table.setflags(write=False)
    return table


def three_card_table(config: GameConfig) -> np.ndarray:
    """[N, N, N] int64 value of every ordered triple of distinct cards (-1 where two are
    equal); cached per config."""
    return _table(config)


def best_of_four(config: GameConfig, cards: np.ndarray) -> np.ndarray:
    """Value of the best 3 of 4 distinct cards: ``cards`` [..., 4] -> [...] int64."""
    cards = np.asarray(cards, dtype=np.int64)
    table = _table(config)
    a, b, c, d = (cards[..., i] for i in range(4))
    return np.maximum(np.maximum(table[a, b, c], table[a, b, d]),
                      np.maximum(table[a, c, d], table[b, c, d]))


def hand_value(config: GameConfig, private: list[int], board: list[int]) -> int:
    """Showdown value of one player (2 private + 2 public cards)."""
    return int(best_of_four(config, np.array(list(private) + list(board))))


def board_hand_values(config: GameConfig, boards: np.ndarray) -> np.ndarray:
    """Showdown values of every private hand on every board, all at once.

    ``boards`` [B, 2] int (the two public cards).  Returns [B, H] int64 (``H = C(N, 2)`` in
    :func:`~tensorcfr.games.numeral211.game.config.hand_cards` order); -1 where the hand shares
    a card with the board.
    """
    boards = np.asarray(boards, dtype=np.int64).reshape(-1, 2)
    hands = hand_cards(config)
    cards = np.concatenate([np.broadcast_to(hands[None], (len(boards),) + hands.shape),
                            np.broadcast_to(boards[:, None, :], (len(boards), len(hands), 2))],
                           axis=-1)
    values = best_of_four(config, cards)
    clash = ((hands[None, :, :, None] == boards[:, None, None, :]).any(axis=(-1, -2)))
    values[clash] = -1
    return values
