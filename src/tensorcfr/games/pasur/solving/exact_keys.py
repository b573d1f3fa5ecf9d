"""The packed state key of the exact Pasur solver, and the card tables behind it.

A merged state of :mod:`~tensorcfr.games.pasur.solving.exact` (everything that decides the
rest of a full-information game: the pool, both hands, the clubs count, the last capturer)
is one int64. This module holds that layout, the Python packing of a
:class:`~tensorcfr.games.pasur.engine.rules.GameState` (:func:`state_key`), the static
tables of what a card may capture (:func:`candidates_by_card`: in the order of
:func:`rules.captures <tensorcfr.games.pasur.engine.rules.captures>`), the 4-bit hand-subset
ranks, and the numpy array helpers of the level passes (a value-sort ``unique`` with its
inverse, ragged ranges). Nothing here builds levels or knows a solve.

State key (int64, bit 0 = least significant; the pool is on top, so sorted keys are grouped
by pool and the distinct pools of a level come out of one ``unique_consecutive``):

========  ============================================================================
bits       meaning
========  ============================================================================
0..2      Alex's hand: rank of the 4-bit subset of Alex's hand dealt this round among the
          subsets of its size (the size is fixed by the level: Alex has played
          ``ceil(t/2)`` cards at ply ``t`` of the round)
3..5      Bob's hand, likewise (Bob has played ``floor(t/2)`` cards)
6..8      clubs: Alex's club count 0..6 while nobody has 7 clubs; 7 once somebody has
          reached 7 (the bonus is then paid and clubs stop mattering). Bob's count is not
          stored: it is the number of captured clubs (dealt clubs neither in the pool nor in
          a hand) minus Alex's.
9         last capturer: 0 = Alex, 1 = Bob (0 too while nobody has captured anything,
          which the key already shows: no dealt card is missing from pool and hands)
10..61    pool, bit ``10 + c`` = card ``c`` is in the pool
========  ============================================================================

A level ``l`` (0..48) holds the states before play ``l``; the states of level ``8r`` are both
the ends of round ``r-1`` (hands empty) and the roots of round ``r`` (new hands dealt): the
hand fields are 0 in both readings. Level 48 holds the end-of-game states before the cleanup.

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> key = state_key(initial_state(random_deal(1)))
>>> (key >> CLUBS_SHIFT) & 7, bin(key >> POOL_SHIFT).count("1")   # no clubs yet, 4 in the pool
(0, 4)
"""

from __future__ import annotations

import gc
from functools import lru_cache
from typing import Sequence

import numpy as np

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import (
    ACES,
    CLUBS,
    JACKS,
    KINGS,
    NUM_CARDS,
    NUM_NUMERIC,
    QUEENS,
    TEN_OF_DIAMONDS,
    TWO_OF_CLUBS,
    is_jack,
    is_numeric,
    is_queen,
)
from tensorcfr.games.pasur.engine.sum11 import sum11_combos  # the paper's t_40x2764 template
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND

__all__ = [
    "ALEX_HAND_SHIFT", "ALL_CARDS_MASK", "BOB_HAND_SHIFT", "CHOOSE4", "CLUBS_BONUS_BY_COUNT",
    "CLUBS_DONE", "CLUBS_FIELD_BITS", "CLUBS_MASK", "CLUBS_SHIFT", "JACKS_MASK", "LAST_SHIFT",
    "MASK_OF_NP", "NUMERIC_MASK", "NUMERIC_OR_JACK_MASK", "NUM_LEVELS", "ONE_POINT_MASK",
    "POOL_SHIFT", "RANK_OF_NP", "SLOTS_U8", "SUBSET_SLOTS", "candidates_by_card",
    "cards_mask", "dealt_mask", "exclusive_cumsum", "hand_sizes", "mask_cards", "np_points",
    "ragged_arange", "state_key", "sum11_combos", "unique_inverse",
]

# --------------------------------------------------------------------------- key layout

ALEX_HAND_SHIFT = 0
BOB_HAND_SHIFT = 3
CLUBS_SHIFT = 6
LAST_SHIFT = 9
POOL_SHIFT = 10
CLUBS_DONE = 7
"""Value of the clubs field once a player has reached 7 clubs."""

NUM_LEVELS = rules.NUM_PLAYS  # 48 plies; level 48 = end of the game

ALL_CARDS_MASK = (1 << NUM_CARDS) - 1
CLUBS_MASK = sum(1 << c for c in CLUBS)
NUMERIC_MASK = (1 << NUM_NUMERIC) - 1
JACKS_MASK = sum(1 << c for c in JACKS)
NUMERIC_OR_JACK_MASK = NUMERIC_MASK | JACKS_MASK
ONE_POINT_MASK = sum(1 << c for c in ACES) | JACKS_MASK  # each Ace and Jack: 1 point


# --------------------------------------------------------------------------- static tables

@lru_cache(maxsize=None)
def _capture_masks_by_card() -> tuple[tuple[int, ...], ...]:
    """For each numeric card ``c``: bit masks of the sets ``S`` it may capture (``S∪{c}`` sums to 11)."""
    by_card: list[list[tuple[int, ...]]] = [[] for _ in range(NUM_NUMERIC)]
    # twelve thousand small tuples would trigger full garbage collections of the (large,
    # torch-filled) heap, which cost far more than building them: collection waits
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for combo in sum11_combos():
            cards = tuple(sorted(combo))
            for i, c in enumerate(cards):
                by_card[c].append(cards[:i] + cards[i + 1:])
        # in the order of rules.captures (sorted captured tuples), so edges follow legal_actions
        return tuple(tuple(cards_mask(t) for t in sorted(sets)) for sets in by_card)
    finally:
        if was_enabled:
            gc.enable()


def _subset_rank_tables() -> tuple[list[int], list[list[int]]]:
    """``rank_of[m]``: rank of 4-bit mask ``m`` among the masks of its popcount (ascending);
    ``mask_of[k][r]``: the mask of popcount ``k`` and rank ``r`` (0 where there is none)."""
    rank_of = [0] * 16
    mask_of = [[0] * 6 for _ in range(5)]
    for k in range(5):
        ms = [m for m in range(16) if bin(m).count("1") == k]
        for r, m in enumerate(ms):
            rank_of[m] = r
            mask_of[k][r] = m
    return rank_of, mask_of


_RANK_OF, _MASK_OF = _subset_rank_tables()


def hand_sizes(ply: int) -> tuple[int, int]:
    """Cards (Alex, Bob) still hold before ply ``ply`` (0..8) of a round."""
    return 4 - (ply + 1) // 2, 4 - ply // 2


def _py_popcount(x: int) -> int:
    return bin(x).count("1")


def _mask_points(mask: int) -> int:
    """Points of a set of cards (Aces, Jacks, 10♦, 2♣; not clubs, not Surs)."""
    return (_py_popcount(mask & ONE_POINT_MASK) + 3 * ((mask >> TEN_OF_DIAMONDS) & 1)
            + 2 * ((mask >> TWO_OF_CLUBS) & 1))


def cards_mask(cards: Sequence[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def mask_cards(mask: int) -> list[int]:
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def dealt_mask(deal: Sequence[int], level: int) -> int:
    """Cards dealt before play ``level``: the pool and the hands of rounds ``0..level//8``."""
    r = min(level // PLIES_PER_ROUND, rules.NUM_ROUNDS - 1)
    return cards_mask(deal[:12 + 8 * r])


# --------------------------------------------------------------------------- python keys

def state_key(state: rules.GameState) -> int:
    """The packed merged-state key (see the module docstring) of a non-final position.

    Two positions of the same deal and level with the same key have the same future: the same
    legal plays and the same points still to come.
    """
    if state.is_terminal:
        raise ValueError("a finished game has no state key")
    r, ply = divmod(state.play_index, PLIES_PER_ROUND)
    ranks = []
    for p in (rules.ALEX, rules.BOB):
        dealt = rules.round_hands(state.deal, r)[p]
        rel = sum(1 << j for j, c in enumerate(dealt) if c in state.hands[p])
        if _py_popcount(rel) != hand_sizes(ply)[p] or len(state.hands[p]) != _py_popcount(rel):
            raise ValueError(f"{rules.PLAYERS[p]}'s hand does not fit play {state.play_index}")
        ranks.append(_RANK_OF[rel])
    clubs_a = sum(1 for c in state.piles[0] if c % 4 == 0)
    clubs_b = sum(1 for c in state.piles[1] if c % 4 == 0)
    clubs = CLUBS_DONE if max(clubs_a, clubs_b) >= rules.CLUBS_FOR_BONUS else clubs_a
    last = 1 if state.last_capturer == rules.BOB else 0
    return (cards_mask(state.pool) << POOL_SHIFT | ranks[0] << ALEX_HAND_SHIFT
            | ranks[1] << BOB_HAND_SHIFT
            | clubs << CLUBS_SHIFT | last << LAST_SHIFT)


# --------------------------------------------------------------------------- array helpers

def np_points(mask: np.ndarray) -> np.ndarray:
    """Points of each set of cards (int64 masks): Aces, Jacks, 10♦ (3), 2♣ (2); int64."""
    return (np.bitwise_count(mask & ONE_POINT_MASK).astype(np.int64)
            + 3 * ((mask >> TEN_OF_DIAMONDS) & 1) + 2 * ((mask >> TWO_OF_CLUBS) & 1))


def exclusive_cumsum(counts: np.ndarray) -> np.ndarray:
    """``[0, c0, c0+c1, ...]``: int64 [len(counts) + 1]."""
    out = np.zeros(counts.size + 1, dtype=np.int64)
    np.add.accumulate(counts, out=out[1:])
    return out


def ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for each (s, c): int64 [sum(counts)]."""
    total = int(counts.sum())
    offsets = exclusive_cumsum(counts)[:-1]
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for non-negative int64 values, by value
    sorts (several times faster than the argsort ``np.unique`` does): each value is packed
    with its index into one int64 and sorted; values too wide for that are ranked in two
    steps (their high bits, then the high bits' rank with the low bits).

    Returns:
        ``(unique, inverse)``: the sorted distinct values (int64 [U]) and the position of
        each value among them ([N], int32 below 2**31 values, else int64).
    """
    n = values.size
    if n == 0:
        return values[:0].copy(), np.zeros(0, dtype=np.int64)
    index_bits = max(1, (n - 1).bit_length())
    value_bits = int(values.max()).bit_length()
    if value_bits + index_bits > 63:
        low_bits = 63 - 2 * index_bits
        high_unique, high_inverse = unique_inverse(values >> low_bits)
        low_mask = (1 << low_bits) - 1
        pair_unique, inverse = unique_inverse((high_inverse.astype(np.int64) << low_bits)
                                               | (values & low_mask))
        return (high_unique[pair_unique >> low_bits] << low_bits) | (pair_unique & low_mask), inverse
    packed = np.sort((values << index_bits) | np.arange(n, dtype=np.int64))
    sorted_values = packed >> index_bits
    order = packed & ((1 << index_bits) - 1)
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=new[1:])
    inverse = np.empty(n, dtype=np.int64 if n >= 1 << 31 else np.int32)
    inverse[order] = np.add.accumulate(new.view(np.int8), dtype=inverse.dtype) - 1
    return sorted_values[new], inverse


@lru_cache(maxsize=None)
def candidates_by_card() -> tuple[np.ndarray, np.ndarray]:
    """Every capture a card may make from some pool, grouped by card (in the order of
    :func:`rules.captures`): ``masks`` int64 [M] (the captured set), ``start`` int64 [53]
    (card ``c``'s sets are ``masks[start[c]:start[c+1]]``). A numeric card: the sets completing
    a sum-11 combination; a Queen or King: one other card of its rank; a Jack: none (its
    capture depends on the whole pool)."""
    masks: list[int] = []
    start = [0]
    for c in range(NUM_CARDS):
        if is_numeric(c):
            masks.extend(_capture_masks_by_card()[c])
        elif not is_jack(c):
            same = QUEENS if is_queen(c) else KINGS
            masks.extend(1 << q for q in same if q != c)
        start.append(len(masks))
    return np.array(masks, dtype=np.int64), np.array(start, dtype=np.int64)


MASK_OF_NP = np.array(_MASK_OF, dtype=np.int64)  # [5, 6]
RANK_OF_NP = np.array(_RANK_OF, dtype=np.int64)  # [16]
CHOOSE4 = (1, 4, 6, 4, 1)
SUBSET_SLOTS = (np.arange(16)[:, None] >> np.arange(4)) & 1  # [16, 4]: slot j in mask m
SLOTS_U8 = np.arange(4, dtype=np.uint8)
# By the mover's club count after a play (64 + n once somebody has 7): the clubs bonus it pays
# (int32), and the bits it sets in the child's clubs field ([mover], int64: Alex's count or 7;
# for Bob, 7 if he reaches 7, else nothing: the field holds Alex's count)
_CLUB_COUNTS = np.arange(128)
_REACHES_7 = (_CLUB_COUNTS >= rules.CLUBS_FOR_BONUS) & (_CLUB_COUNTS < 64)
CLUBS_BONUS_BY_COUNT = (rules.CLUBS_BONUS * _REACHES_7).astype(np.int32)
CLUBS_FIELD_BITS = (np.minimum(_CLUB_COUNTS, CLUBS_DONE).astype(np.int64),
                     np.where(_REACHES_7, CLUBS_DONE, 0).astype(np.int64))
