"""Exact minimax solution of a full-information Pasur deal by level-wise backward induction.

With the whole deal known, Pasur is a finite two-player zero-sum game of perfect information,
so every deal (and every position) has a minimax value: Alex's points minus Bob's points under
optimal play by both. This module computes it with whole-level array operations (numpy, on the
CPU; the shared-format graph of :func:`build_state_graph` is handed over as torch tensors):

1. **Forward pass** (:func:`_build_levels`). Starting from one position, the unique states of
   each of the remaining plies ("levels", 48 in a whole game) are generated at once. A state
   is packed into one int64 key (see *State key* below). What a play does to the pool
   (captured set, points, Sur, clubs taken, the child's pool) depends only on the pool and
   the card, so it is computed once per *play* (distinct pool x hand slot x capture or lay);
   per edge only the hands, the clubs count and the last capturer remain. The children are
   merged (states reached by different orders of play become one node, so the tree becomes a
   DAG) by one value sort of ``child id << index bits | edge index`` (:func:`_unique_inverse`).
2. **Backward pass** (:func:`_backward`). From the last level up, the value of each edge
   (``Q = reward + V[child]``) and of each node (max over its edges at Alex's levels, min at
   Bob's: a node's edges are contiguous, so one ``reduceat``) are computed for all states of a
   level at once.

:func:`action_values_many` solves many positions of the same play index in one pass (PIMC's
determinizations of one observed position): each start's index is written into key bits that
no state uses (bit 62, and the pool bits of the cards captured before the start in all of
them), so the starts' states never merge and each keeps its own deal's hands.

Points already scored are never part of a state: they are *edge rewards* that add up along a
path (points of the captured cards, Surs, the clubs bonus at the moment a player reaches 7
clubs, and after the 48th play the end-of-game cleanup as a *terminal reward*). The value of a
node is therefore the points still to come (Alex minus Bob); the value of a whole game is the
points already scored at the starting position plus the value of the root.

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

Example::

    >>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
    >>> sol = solve_exact(random_deal(1))          # doctest: +SKIP
    >>> sol.value, sol.num_states                  # doctest: +SKIP
    (-6, 318304)
    >>> sol.action_values(initial_state(random_deal(1)))[:2]   # doctest: +SKIP
    [(Action(card=2, captured=(37,)), -6), (Action(card=11, captured=()), -6)]
    >>> values = action_values_many(determinizations)   # doctest: +SKIP
    >>> values[0] == solve_exact(determinizations[0]).action_values(determinizations[0])  # doctest: +SKIP
    True

Nothing here knows about observations or agents: a determinized state is a full state.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import torch

from tensorcfr.errors import MemoryLimitError, TensorCFRError
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
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph
from tensorcfr.games.pasur.engine.sum11 import sum11_combos  # the paper's t_40x2764 template
from tensorcfr.utils.resources import available_memory_bytes, format_bytes, peak_rss_mb

__all__ = [
    "ExactSolution",
    "StateNotSolvedError",
    "action_values_many",
    "batch_capacity",
    "build_state_graph",
    "memoised_minimax",
    "solve_exact",
    "state_key",
    "sum11_combos",
]

# --------------------------------------------------------------------------- constants

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

# Transient bytes per edge while a level is expanded (live int64 / int32 temporaries, the
# packed sort of the child ids and its inverse, allocator slack), calibrated on the largest
# benchmark deal (seed 13: estimate 371 MiB, measured peak RSS growth 366 MiB). The data kept
# between the passes is counted exactly (_Level.stored_bytes).
_TRANSIENT_BYTES_PER_EDGE = 8 * 14
# Per edge in the backward pass: int64 child and parent indices, int32 Q-value, and per node
# the int32 value.
_BACKWARD_BYTES_PER_EDGE = 8 + 8 + 4 + 4
_CHUNK_CELLS = 1 << 21  # (pool, candidate set) cells of the capture test per row chunk
_EARLY_PLAYS = 24  # action_values_many: before this play, at most _EARLY_PASS_STARTS per pass
_EARLY_PASS_STARTS = 8
_FREE_CHECK_BYTES = 64 << 20  # estimates below this are not checked against free memory
_RAGGED_CELLS = 1 << 16  # several starts: above this many cells, one dense test per start


class StateNotSolvedError(TensorCFRError):
    """A position that is not part of a solution (another deal, or before its start)."""


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
        return tuple(tuple(_cards_mask(t) for t in sorted(sets)) for sets in by_card)
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


def _hand_sizes(ply: int) -> tuple[int, int]:
    """Cards (Alex, Bob) still hold before ply ``ply`` (0..8) of a round."""
    return 4 - (ply + 1) // 2, 4 - ply // 2


def _py_popcount(x: int) -> int:
    return bin(x).count("1")


def _mask_points(mask: int) -> int:
    """Points of a set of cards (Aces, Jacks, 10♦, 2♣; not clubs, not Surs)."""
    return (_py_popcount(mask & ONE_POINT_MASK) + 3 * ((mask >> TEN_OF_DIAMONDS) & 1)
            + 2 * ((mask >> TWO_OF_CLUBS) & 1))


def _cards_mask(cards: Sequence[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def _mask_cards(mask: int) -> list[int]:
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def _dealt_mask(deal: Sequence[int], level: int) -> int:
    """Cards dealt before play ``level``: the pool and the hands of rounds ``0..level//8``."""
    r = min(level // PLIES_PER_ROUND, rules.NUM_ROUNDS - 1)
    return _cards_mask(deal[:12 + 8 * r])


# --------------------------------------------------------------------------- python keys

def state_key(state: rules.GameState) -> int:
    """The packed merged-state key (module docstring) of a non-final position.

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
        if _py_popcount(rel) != _hand_sizes(ply)[p] or len(state.hands[p]) != _py_popcount(rel):
            raise ValueError(f"{rules.PLAYERS[p]}'s hand does not fit play {state.play_index}")
        ranks.append(_RANK_OF[rel])
    clubs_a = sum(1 for c in state.piles[0] if c % 4 == 0)
    clubs_b = sum(1 for c in state.piles[1] if c % 4 == 0)
    clubs = CLUBS_DONE if max(clubs_a, clubs_b) >= rules.CLUBS_FOR_BONUS else clubs_a
    last = 1 if state.last_capturer == rules.BOB else 0
    return (_cards_mask(state.pool) << POOL_SHIFT | ranks[0] << ALEX_HAND_SHIFT
            | ranks[1] << BOB_HAND_SHIFT
            | clubs << CLUBS_SHIFT | last << LAST_SHIFT)


def memoised_minimax(state: rules.GameState, memo: dict[tuple[int, int], int] | None = None
                     ) -> int:
    """Minimax value (final Alex-minus-Bob points) by plain recursion over :mod:`rules`.

    The baseline the tensor solver is benchmarked against: it memoises the points still to
    come on the same merged-state key (``(play_index, state_key)``), so it visits the same
    states, one Python call each. Slow; meant for tests and benchmarks.
    """
    memo = {} if memo is None else memo

    def to_go(s: rules.GameState, scored: int) -> int:
        if s.is_terminal:
            return 0
        k = (s.play_index, state_key(s))
        hit = memo.get(k)
        if hit is not None:
            return hit
        best: int | None = None
        maximise = s.player == rules.ALEX
        for action in rules.legal_actions(s):
            child = rules.apply_action(s, action)
            child_scored = rules.utility(child)
            v = child_scored - scored + to_go(child, child_scored)
            if best is None or (v > best if maximise else v < best):
                best = v
        assert best is not None
        memo[k] = best
        return best

    base = rules.utility(state)
    return base + to_go(state, base)


# --------------------------------------------------------------------------- array helpers

def _np_points(mask: np.ndarray) -> np.ndarray:
    """Points of each set of cards (int64 masks): Aces, Jacks, 10♦ (3), 2♣ (2); int64."""
    return (np.bitwise_count(mask & ONE_POINT_MASK).astype(np.int64)
            + 3 * ((mask >> TEN_OF_DIAMONDS) & 1) + 2 * ((mask >> TWO_OF_CLUBS) & 1))


def _exclusive_cumsum(counts: np.ndarray) -> np.ndarray:
    """``[0, c0, c0+c1, ...]``: int64 [len(counts) + 1]."""
    out = np.zeros(counts.size + 1, dtype=np.int64)
    np.add.accumulate(counts, out=out[1:])
    return out


def _ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for each (s, c): int64 [sum(counts)]."""
    total = int(counts.sum())
    offsets = _exclusive_cumsum(counts)[:-1]
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def _unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
        high_unique, high_inverse = _unique_inverse(values >> low_bits)
        low_mask = (1 << low_bits) - 1
        pair_unique, inverse = _unique_inverse((high_inverse.astype(np.int64) << low_bits)
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
def _candidates_by_card() -> tuple[np.ndarray, np.ndarray]:
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


_MASK_OF_NP = np.array(_MASK_OF, dtype=np.int64)  # [5, 6]
_RANK_OF_NP = np.array(_RANK_OF, dtype=np.int64)  # [16]
_CHOOSE4 = (1, 4, 6, 4, 1)
_SUBSET_SLOTS = (np.arange(16)[:, None] >> np.arange(4)) & 1  # [16, 4]: slot j in mask m
_SLOTS_U8 = np.arange(4, dtype=np.uint8)
# By the mover's club count after a play (64 + n once somebody has 7): the clubs bonus it pays
# (int32), and the bits it sets in the child's clubs field ([mover], int64: Alex's count or 7;
# for Bob, 7 if he reaches 7, else nothing: the field holds Alex's count)
_CLUB_COUNTS = np.arange(128)
_REACHES_7 = (_CLUB_COUNTS >= rules.CLUBS_FOR_BONUS) & (_CLUB_COUNTS < 64)
_CLUBS_BONUS_BY_COUNT = (rules.CLUBS_BONUS * _REACHES_7).astype(np.int32)
_CLUBS_FIELD_BITS = (np.minimum(_CLUB_COUNTS, CLUBS_DONE).astype(np.int64),
                     np.where(_REACHES_7, CLUBS_DONE, 0).astype(np.int64))


# --------------------------------------------------------------------------- level storage

@dataclass
class _Level:
    """One expanded level: its states and their plays (edges) to the next level.

    A node's edges are contiguous (``edge_start[i]:edge_start[i+1]``), ordered by card (in
    the order the hand was dealt), then captured set (the order of :func:`rules.captures`).
    An edge's card and captured set are those of its *play*, an index into the level's small
    table of plays (``play_card``, ``play_captured``), one row per (distinct pool, hand slot,
    capture or lay).
    """

    keys: np.ndarray  # int64 [N], sorted ascending
    edge_start: np.ndarray | None = None  # int64 [N + 1]
    edge_child: np.ndarray | None = None  # int32 [E], index into the next level's keys
    edge_reward: np.ndarray | None = None  # int32 [E], points (Alex minus Bob)
    edge_play: np.ndarray | None = None  # int32 [E], row of play_card / play_captured
    play_card: np.ndarray | None = None  # int8 [P]
    play_captured: np.ndarray | None = None  # int64 [P], captured-card mask, 0 = laid
    terminal_reward: np.ndarray | None = None  # int32 [N], level 48 only
    q_values: np.ndarray | None = None  # int32 [E], points to come after the edge's play
    values: np.ndarray | None = None  # int32 [N], points to come from the node

    @property
    def num_edges(self) -> int:
        return 0 if self.edge_start is None else int(self.edge_start[-1])

    def edge_parent(self) -> np.ndarray:
        """Parent node of each edge: int64 [E], ascending."""
        assert self.edge_start is not None
        return np.repeat(np.arange(self.keys.size, dtype=np.int64), np.diff(self.edge_start))

    def edge_action(self, e: int) -> rules.Action:
        """The play of edge ``e`` as a rules action."""
        assert self.edge_play is not None and self.play_card is not None
        assert self.play_captured is not None
        p = int(self.edge_play[e])
        return rules.Action(int(self.play_card[p]), tuple(_mask_cards(int(self.play_captured[p]))))

    def stored_bytes(self) -> int:
        total = 0
        for t in (self.keys, self.edge_start, self.edge_child, self.edge_reward, self.edge_play,
                  self.play_card, self.play_captured, self.terminal_reward, self.q_values,
                  self.values):
            if t is not None:
                total += t.nbytes
        return total


class DeadlineExceeded(Exception):
    """A solve given a ``deadline`` (:func:`action_values_many`) was still running when it
    passed: abandoned between two levels (the caller does without it)."""


class _MemoryGuard:
    """Refuses, before allocating, any level whose estimated memory exceeds the limit, and
    (with a ``deadline``, ``time.perf_counter()`` seconds) any level started after it.

    ``limit_bytes=None``: the memory available on the machine, read (a system call of about
    a millisecond) only once an estimate passes ``_FREE_CHECK_BYTES``, so that small solves
    do not pay for it.
    """

    def __init__(self, limit_bytes: int | None, deadline: float | None = None) -> None:
        self.limit = None if limit_bytes is None else int(limit_bytes)
        self.stored = 0
        self.deadline = deadline

    def check_time(self) -> None:
        """:class:`DeadlineExceeded` once the deadline has passed."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise DeadlineExceeded("the solve's deadline passed")

    def check(self, level: int, extra_bytes: int, what: str) -> None:
        self.check_time()
        estimate = self.stored + int(extra_bytes)
        if self.limit is None:
            if estimate <= _FREE_CHECK_BYTES:
                return
            self.limit = available_memory_bytes()
        if estimate > self.limit:
            raise MemoryLimitError(
                f"solving needs about {format_bytes(estimate)} at play {level + 1} ({what}), "
                f"more than the limit of {format_bytes(self.limit)}; raise --max-memory or "
                "free memory on this machine")


class _BatchTables:
    """Per-deal constants of the forward pass for ``K`` start positions solved together.

    The starts share their play index; each has its own deal. With ``K > 1`` the start's
    index ``d`` (its *determinization*) is written into the key at bit positions no state can
    use: bit 62 and the pool bits of cards in every start's piles (captured before the
    start, they never return to the pool). Children inherit these bits, so the states of
    different starts never merge, and the distinct pools of a level are per start.
    """

    def __init__(self, starts: Sequence[rules.GameState]) -> None:
        self.num = len(starts)
        self.deals = [tuple(s.deal) for s in starts]
        self.det_positions: list[int] = []  # key bit of bit j of the start index
        if self.num > 1:
            bits = (self.num - 1).bit_length()
            positions = _free_key_bits(starts)
            if len(positions) < bits:
                raise ValueError(f"{self.num} starts need {bits} free key bits, "
                                 f"{len(positions)} are free")
            self.det_positions = positions[:bits]
        det_pool_mask = sum(1 << (p - POOL_SHIFT) for p in self.det_positions)
        self.det_key_mask = det_pool_mask << POOL_SHIFT
        self.det_pool_mask = det_pool_mask
        self.real_pool_mask = ALL_CARDS_MASK & ~det_pool_mask
        # hand_cards[r][p]: int64 [K * 4], the 4 cards player p is dealt in round r (per start)
        # abs_hand[r][p]: int64 [K * 16], relative 4-bit hand mask -> 52-bit card mask
        self.hand_cards: list[list[np.ndarray]] = []
        self.abs_hand: list[list[np.ndarray]] = []
        # [K, round, player, slot]: each hand sorted, as rules.round_hands deals it
        hands = np.sort(np.array(self.deals, dtype=np.int64)[:, 4:].reshape(
            self.num, rules.NUM_ROUNDS, 2, 4), axis=-1)
        abs_masks = (np.left_shift(1, hands)[..., None, :] * _SUBSET_SLOTS).sum(-1)  # [K,6,2,16]
        for r in range(rules.NUM_ROUNDS):
            self.hand_cards.append([hands[:, r, p].reshape(-1) for p in (0, 1)])
            self.abs_hand.append([abs_masks[:, r, p].reshape(-1) for p in (0, 1)])
        self._dealt_clubs: dict[int, np.ndarray] = {}

    def start_key(self, state: rules.GameState, index: int) -> int:
        """The packed key of start ``index`` (its state key with the start's bits)."""
        key = state_key(state)
        for j, pos in enumerate(self.det_positions):
            key |= ((index >> j) & 1) << pos
        return key

    def det_of(self, keys: np.ndarray) -> np.ndarray | None:
        """Start index of each key (int64 [N]); ``None`` for a single start."""
        if self.num == 1:
            return None
        det = np.zeros(keys.size, dtype=np.int64)
        for j, pos in enumerate(self.det_positions):
            det |= ((keys >> pos) & 1) << j
        return det

    def dealt_clubs(self, level: int) -> np.ndarray:
        """Clubs dealt before play ``level`` per start: int64 [K]."""
        hit = self._dealt_clubs.get(level)
        if hit is None:
            if level >= NUM_LEVELS:
                hit = np.full(self.num, CLUBS_MASK, dtype=np.int64)
            else:
                hit = np.array([_dealt_mask(deal, level) & CLUBS_MASK for deal in self.deals],
                               dtype=np.int64)
            self._dealt_clubs[level] = hit
        return hit

    def hands_rel(self, keys: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Relative 4-bit hand masks (Alex, Bob) of keys of ``level`` (< 48): int64 [N]."""
        ka, kb = _hand_sizes(level % PLIES_PER_ROUND)
        return (_MASK_OF_NP[ka][(keys >> ALEX_HAND_SHIFT) & 7],
                _MASK_OF_NP[kb][(keys >> BOB_HAND_SHIFT) & 7])

    def hands_abs(self, rel: np.ndarray, level: int, player: int, det: np.ndarray | None
                  ) -> np.ndarray:
        """Card masks of ``player``'s hands given their relative masks: int64 [N]."""
        table = self.abs_hand[level // PLIES_PER_ROUND][player]
        return table[rel] if det is None else table[det * 16 + rel]

    def captured_clubs(self, keys: np.ndarray, level: int, det: np.ndarray | None
                       ) -> np.ndarray:
        """Clubs in both piles together (dealt clubs in neither the pool nor a hand): int64 [N]."""
        outside = (keys >> POOL_SHIFT) & self.real_pool_mask
        if level < NUM_LEVELS:
            rel_a, rel_b = self.hands_rel(keys, level)
            outside = (outside | self.hands_abs(rel_a, level, 0, det)
                       | self.hands_abs(rel_b, level, 1, det))
        dealt = self.dealt_clubs(level)
        dealt_per_key = dealt[0] if det is None else dealt[det]
        return np.bitwise_count(dealt_per_key & ~outside).astype(np.int64)


def _free_key_bits(starts: Sequence[rules.GameState]) -> list[int]:
    """Key bits no state reachable from any of ``starts`` sets: bit 62, then the pool bits of
    the cards in the piles of every start (ascending)."""
    dead = ALL_CARDS_MASK
    for s in starts:
        dead &= _cards_mask(s.piles[0]) | _cards_mask(s.piles[1])
    return [62] + [POOL_SHIFT + c for c in _mask_cards(dead)]


def batch_capacity(states: Sequence[rules.GameState]) -> int:
    """How many of ``states`` (same play index) one level-wise pass can hold: 2 to the
    number of free key bits (bit 62 and the cards captured before the start in all of them)."""
    return 1 << len(_free_key_bits(states))


# --------------------------------------------------------------------------- forward pass

def _distinct_pools(pool_full: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First index of each run of equal values of the sorted ``pool_full`` (int64 [U]) and
    the run of each element (int64 [N])."""
    new = np.empty(pool_full.size, dtype=bool)
    new[:1] = True
    np.not_equal(pool_full[1:], pool_full[:-1], out=new[1:])
    first = np.flatnonzero(new)
    pool_id = np.add.accumulate(new.view(np.int8), dtype=np.int64) - 1
    return first, pool_id


def _dense_capture_test(upool: np.ndarray, cand_mask: np.ndarray, level: int,
                        guard: _MemoryGuard) -> tuple[np.ndarray, np.ndarray]:
    """The (pool, candidate) pairs of ``upool`` int64 [U] x ``cand_mask`` int64 [C] whose set
    lies in the pool, pool-major: int64 [F] each."""
    num_pools, num_cands = upool.size, cand_mask.size
    if num_cands == 0 or num_pools == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = max(1, _CHUNK_CELLS // num_cands)
    guard.check(level, min(num_pools, rows) * num_cands * 10,
                f"capture test of {num_pools:,} pools x {num_cands} sets")
    fits_u, fits_c = [], []
    for lo in range(0, num_pools, rows):
        block = upool[lo:lo + rows, None] & cand_mask[None, :]
        flat = np.flatnonzero(block == cand_mask[None, :])
        fits_u.append(flat // num_cands + lo)
        fits_c.append(flat % num_cands)
    return np.concatenate(fits_u), np.concatenate(fits_c)


def _capture_test(upool: np.ndarray, udet: np.ndarray | None, cand_mask: np.ndarray,
                  cand_start: np.ndarray, level: int, guard: _MemoryGuard
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Which candidate sets lie in which distinct pool.

    Args:
        upool: int64 [U] distinct pools (real cards only).
        udet: int64 [U] start of each pool (``None``: one start).
        cand_mask: int64 [C] candidate sets, grouped by start (``cand_start`` int64 [K + 1]).

    Returns:
        ``(fit_pool, fit_cand)``: int64 [F] each, the (pool, candidate) pairs that fit,
        pool-major, then candidate order.
    """
    num_pools = upool.size
    if udet is None:
        return _dense_capture_test(upool, cand_mask, level, guard)
    per_pool = (cand_start[udet + 1] - cand_start[udet])
    bounds = _exclusive_cumsum(per_pool)
    if bounds[-1] > _RAGGED_CELLS:  # large: one dense test per start
        by_start = np.argsort(udet, kind="stable")
        start_first = _exclusive_cumsum(np.bincount(udet, minlength=cand_start.size - 1))
        fits_u, fits_c = [], []
        for d in range(cand_start.size - 1):
            pools = by_start[start_first[d]:start_first[d + 1]]
            if pools.size == 0 or cand_start[d + 1] == cand_start[d]:
                continue
            fu, fc = _dense_capture_test(upool[pools], cand_mask[cand_start[d]:cand_start[d + 1]],
                                         level, guard)
            fits_u.append(pools[fu])
            fits_c.append(fc + cand_start[d])
        if not fits_u:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        fit_u, fit_c = np.concatenate(fits_u), np.concatenate(fits_c)
        cand_bits = max(1, int(cand_mask.size).bit_length())
        packed = np.sort((fit_u << cand_bits) | fit_c)  # pool-major, then candidate
        return packed >> cand_bits, packed & ((1 << cand_bits) - 1)
    fits_u, fits_c = [], []
    lo = 0
    while lo < num_pools:
        hi = int(np.searchsorted(bounds, bounds[lo] + _CHUNK_CELLS, side="right")) - 1
        hi = min(num_pools, max(hi, lo + 1))
        cells = int(bounds[hi] - bounds[lo])
        guard.check(level, cells * 34, f"capture test of {num_pools:,} pools")
        pair_u = np.repeat(np.arange(lo, hi, dtype=np.int64), per_pool[lo:hi])
        pair_c = _ragged_arange(cand_start[udet[lo:hi]], per_pool[lo:hi])
        sets = cand_mask[pair_c]
        ok = (upool[pair_u] & sets) == sets
        fits_u.append(pair_u[ok])
        fits_c.append(pair_c[ok])
        lo = hi
    return np.concatenate(fits_u), np.concatenate(fits_c)


def _expand_level(level: int, keys: np.ndarray, tables: _BatchTables, guard: _MemoryGuard
                  ) -> tuple[_Level, np.ndarray]:
    """All legal plays of all states ``keys`` of ``level`` (< 48) and the sorted keys of
    level + 1.

    Everything a play does to the pool (captured set, points, Sur, clubs taken, the child's
    pool) depends only on the pool and the card, so it is computed once per *play*: a row
    per (distinct pool, hand slot, capture or lay); the capture test is a [distinct pools x
    candidate sets] subset test on bit masks. Per edge only the hands, the clubs count and
    the last capturer remain; a child is identified by a small integer (rank of its pool
    among the level's child pools, then its 10 low key fields packed tightly), merged
    without a sort when that id space is small (a marker array), else by ``np.unique``.
    """
    r, ply = divmod(level, PLIES_PER_ROUND)
    mover = ply % 2
    n = keys.size
    det = tables.det_of(keys)
    pool_full = keys >> POOL_SHIFT
    pool_first, pool_id = _distinct_pools(pool_full)
    upool_full = pool_full[pool_first]
    upool = upool_full & tables.real_pool_mask
    num_pools = upool.size
    udet = None if det is None else det[pool_first]
    rel_a, rel_b = tables.hands_rel(keys, level)
    rel_mover = rel_a if mover == 0 else rel_b
    slot_card = tables.hand_cards[r][mover]  # [K * 4]

    # --- candidate sets per (start, slot), kept if within the union of the level's pools
    all_masks, all_start = _candidates_by_card()
    ds_lo, ds_hi = all_start[slot_card], all_start[slot_card + 1]
    idx = _ragged_arange(ds_lo, ds_hi - ds_lo)
    ds_of = np.repeat(np.arange(slot_card.size, dtype=np.int64), ds_hi - ds_lo)
    masks = all_masks[idx]
    if udet is None:
        union: int | np.ndarray = int(np.bitwise_or.reduce(upool)) if num_pools else 0
    else:  # per start: the union of its own pools
        unions = np.zeros(tables.num, dtype=np.int64)
        np.bitwise_or.at(unions, udet, upool)
        union = unions[ds_of >> 2]
    keep = (masks & ~union) == 0
    cand_mask, cand_ds = masks[keep], ds_of[keep]
    cand_start = _exclusive_cumsum(np.bincount(cand_ds >> 2, minlength=tables.num))
    fit_u, fit_c = _capture_test(upool, udet, cand_mask, cand_start, level, guard)
    fit_g = fit_u * 4 + (cand_ds[fit_c] & 3)  # (pool, slot) group, non-decreasing

    # --- the table of plays: per (pool, slot), its captures or else one lay / Jack play
    fits_per_group = np.bincount(fit_g, minlength=num_pools * 4)
    plays_per_group = np.maximum(fits_per_group, 1)
    play_first = _exclusive_cumsum(plays_per_group)
    num_plays = int(play_first[-1])
    play_group = np.repeat(np.arange(num_pools * 4, dtype=np.int64), plays_per_group)
    play_u = play_group >> 2
    play_slot = play_group & 3
    play_card = slot_card[play_slot] if udet is None else slot_card[udet[play_u] * 4 + play_slot]
    play_pool = upool[play_u]
    captured = np.zeros(num_plays, dtype=np.int64)
    is_capture = np.zeros(num_plays, dtype=bool)
    fit_rank = np.arange(fit_g.size, dtype=np.int64) - _exclusive_cumsum(fits_per_group)[fit_g]
    fit_pos = play_first[fit_g] + fit_rank
    captured[fit_pos] = cand_mask[fit_c]
    is_capture[fit_pos] = True
    single = play_first[:-1][fits_per_group == 0]
    single_card = play_card[single]
    jack_take = play_pool[single] & NUMERIC_OR_JACK_MASK
    jack_captures = (single_card >= JACKS[0]) & (single_card <= JACKS[-1]) & (jack_take != 0)
    captured[single[jack_captures]] = jack_take[jack_captures]
    is_capture[single[jack_captures]] = True
    card_bit = np.left_shift(1, play_card)
    child_pool = (play_pool & ~captured) | np.where(is_capture, 0, card_bit)
    taken = np.where(is_capture, captured | card_bit, 0)
    play_points = _np_points(taken)
    if r < rules.NUM_ROUNDS - 1:  # Sur: a capture (not by a Jack) that empties the pool
        is_jack_card = (play_card >= JACKS[0]) & (play_card <= JACKS[-1])
        play_points += rules.SUR_POINTS * (is_capture & ~is_jack_card & (child_pool == 0))
    play_clubs = np.bitwise_count(taken & CLUBS_MASK).astype(np.int16)
    child_pool_full = child_pool | (upool_full[play_u] & tables.det_pool_mask)
    child_pools, play_child_pool = _unique_inverse(child_pool_full)

    # --- the child's low fields, packed: hands (rank_b * n_a + rank_a), clubs, last capturer
    ka, kb = _hand_sizes(ply + 1) if ply < PLIES_PER_ROUND - 1 else (0, 0)
    n_a = _CHOOSE4[ka]
    hand_bits = (_CHOOSE4[ka] * _CHOOSE4[kb] - 1).bit_length()
    clubs_at, last_at = hand_bits, hand_bits + 3
    low_bits = hand_bits + 4
    play_base = (play_child_pool.astype(np.int64) << low_bits)
    play_keep = np.full(num_plays, -1, dtype=np.int64)
    play_keep[is_capture] = ~(1 << last_at)  # a capture makes the mover the last capturer
    if mover == 1:
        play_base[is_capture] |= 1 << last_at

    # --- per (state, slot in hand): the plays of its card in its pool
    # (every state of the level holds the same number of cards, so each has hand_size groups)
    hand_size = _hand_sizes(ply)[mover]
    in_hand = ((rel_mover.astype(np.uint8)[:, None] >> _SLOTS_U8) & 1).view(bool)  # [N, 4]
    group = np.flatnonzero(in_hand)  # state-major, then slot
    group_state = group >> 2
    group_slot = group & 3
    group_pool_slot = pool_id[group_state] * 4 + group_slot
    group_plays = plays_per_group.astype(np.int32)[group_pool_slot]
    edges_per_state = group_plays.reshape(n, hand_size).sum(axis=1, dtype=np.int64)
    edge_start = _exclusive_cumsum(edges_per_state)
    num_edges = int(edge_start[-1])
    guard.check(level, num_edges * _TRANSIENT_BYTES_PER_EDGE + n * 8 * 16,
                f"{num_edges:,} plays from {n:,} states")
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    done = clubs_field == CLUBS_DONE
    if mover == 0:
        mover_clubs = clubs_field
    else:
        mover_clubs = tables.captured_clubs(keys, level, det) - clubs_field
    mover_clubs = np.where(done, 64, mover_clubs).astype(np.int16)  # 64: never pays again
    new_rank = _RANK_OF_NP[rel_mover[group_state] & ~(1 << group_slot)]
    if mover == 0:
        other_rank = (keys >> BOB_HAND_SHIFT) & 7
        hands = other_rank[group_state] * n_a + new_rank
        state_low = ((keys >> LAST_SHIFT) & 1) << last_at
    else:
        other_rank = (keys >> ALEX_HAND_SHIFT) & 7
        hands = new_rank * n_a + other_rank[group_state]
        state_low = (((keys >> LAST_SHIFT) & 1) << last_at) | (clubs_field << clubs_at)
    group_low = hands | state_low[group_state]
    group_play0 = play_first[:-1][group_pool_slot] - _exclusive_cumsum(group_plays)[:-1]

    # --- per edge
    index_type = np.int32 if num_edges < 1 << 31 else np.int64
    edge_group = np.repeat(np.arange(group.size, dtype=index_type), group_plays)
    edge_play = group_play0.astype(index_type)[edge_group] + np.arange(num_edges, dtype=index_type)
    child_id = play_base[edge_play] | (group_low[edge_group] & play_keep[edge_play])
    # the mover's clubs after the play (64 and more: somebody had 7 already) -> the child's
    # clubs field bits and the clubs bonus, by two small lookup tables
    clubs_after = mover_clubs[group_state][edge_group] + play_clubs[edge_play]
    child_id |= _CLUBS_FIELD_BITS[mover][clubs_after] << clubs_at
    sign = 1 if mover == 0 else -1
    reward = (sign * play_points).astype(np.int32)[edge_play]
    reward += (sign * _CLUBS_BONUS_BY_COUNT)[clubs_after]
    del edge_group, clubs_after

    # --- merge the children: ids ascending = keys ascending
    unique_ids, edge_child = _unique_inverse(child_id)
    low = unique_ids & ((1 << low_bits) - 1)
    hands_c = low & ((1 << hand_bits) - 1)
    next_keys = ((child_pools[unique_ids >> low_bits] << POOL_SHIFT)
                 | ((low >> last_at) << LAST_SHIFT) | (((low >> clubs_at) & 7) << CLUBS_SHIFT)
                 | ((hands_c // n_a) << BOB_HAND_SHIFT) | ((hands_c % n_a) << ALEX_HAND_SHIFT))
    out = _Level(keys=keys, edge_start=edge_start,
                 edge_child=edge_child.astype(np.int32, copy=False),
                 edge_reward=reward, edge_play=edge_play.astype(np.int32, copy=False),
                 play_card=play_card.astype(np.int8), play_captured=captured)
    return out, next_keys


def _terminal_rewards(keys: np.ndarray, tables: _BatchTables) -> np.ndarray:
    """End-of-game cleanup of level-48 states: the pool goes to the last capturer (if anyone
    captured), with its points and the clubs bonus if it brings them to 7. int32 [N]."""
    pool = (keys >> POOL_SHIFT) & tables.real_pool_mask
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    last = (keys >> LAST_SHIFT) & 1
    anyone_captured = pool != ALL_CARDS_MASK
    pool_clubs = np.bitwise_count(pool & CLUBS_MASK).astype(np.int64)
    bob_clubs = tables.captured_clubs(keys, NUM_LEVELS, tables.det_of(keys)) - clubs_field
    taker_clubs = np.where(last == 0, clubs_field, bob_clubs) + pool_clubs
    bonus = (clubs_field != CLUBS_DONE) & (taker_clubs >= rules.CLUBS_FOR_BONUS)
    points = _np_points(pool) + rules.CLUBS_BONUS * bonus
    return (anyone_captured * (1 - 2 * last) * points).astype(np.int32)


@dataclass
class _LevelGraph:
    """The merged state graph from the start positions: ``levels[i]`` is play ``start + i``;
    ``levels[0].keys[root_index[d]]`` is start ``d``."""

    start: rules.GameState
    start_level: int
    levels: list[_Level]
    root_index: list[int] = field(default_factory=lambda: [0])


def _check_limit(max_memory: int | None) -> _MemoryGuard:
    if max_memory is not None and int(max_memory) <= 0:
        raise MemoryLimitError(f"the memory limit must be positive, got {max_memory} bytes")
    return _MemoryGuard(max_memory)


def _build_levels(starts: Sequence[rules.GameState], guard: _MemoryGuard,
                  progress: Any = None) -> _LevelGraph:
    """Forward pass: the unique states and edges of every level from ``starts`` (same play
    index, one pass) to play 48."""
    start = starts[0]
    if start.is_terminal:
        raise ValueError("the game is already over")
    tables = _BatchTables(starts)
    root_keys = np.array([tables.start_key(s, d) for d, s in enumerate(starts)], dtype=np.int64)
    order = np.argsort(root_keys)
    keys = root_keys[order]
    root_index = [0] * len(starts)
    for pos, d in enumerate(order.tolist()):
        root_index[d] = pos
    levels: list[_Level] = []
    for level in range(start.play_index, NUM_LEVELS):
        expanded, keys = _expand_level(level, keys, tables, guard)
        levels.append(expanded)
        guard.stored += expanded.stored_bytes()
        if progress is not None:
            progress(level)
    guard.check(NUM_LEVELS - 1, keys.size * (8 + 4 + 4) * 4, "end of the game")
    last = _Level(keys=keys, terminal_reward=_terminal_rewards(keys, tables))
    levels.append(last)
    guard.stored += last.stored_bytes()
    return _LevelGraph(start=start, start_level=start.play_index, levels=levels,
                       root_index=root_index)


# --------------------------------------------------------------------------- backward pass

def _backward(graph: _LevelGraph, guard: _MemoryGuard) -> None:
    """Fill ``values`` and ``q_values`` of every level: max at Alex's plays, min at Bob's."""
    levels = graph.levels
    num_edges = sum(lv.num_edges for lv in levels)
    num_nodes = sum(lv.keys.size for lv in levels)
    largest = max((lv.num_edges for lv in levels), default=0)
    guard.check(graph.start_level, num_edges * 4 + num_nodes * 4
                + largest * _BACKWARD_BYTES_PER_EDGE, "values of all states and plays")
    levels[-1].values = levels[-1].terminal_reward
    for i in range(len(levels) - 2, -1, -1):
        guard.check_time()
        lv = levels[i]
        assert lv.edge_child is not None and lv.edge_reward is not None
        assert lv.edge_start is not None
        next_values = levels[i + 1].values
        assert next_values is not None
        q = lv.edge_reward + next_values[lv.edge_child]
        lv.q_values = q
        alex_moves = (graph.start_level + i) % 2 == 0
        reduce = np.maximum if alex_moves else np.minimum
        lv.values = reduce.reduceat(q, lv.edge_start[:-1]) if q.size else q[:0]
# --------------------------------------------------------------------------- solution

@dataclass
class ExactSolution:
    """The exact (minimax) solution of a full-information Pasur game from one position.

    Attributes:
        deal: the 52-card deal.
        start: the position solved from (the initial state for a whole deal).
        value: the final score difference (Alex's points minus Bob's, whole game including
            points scored before ``start``) when both play optimally from ``start``.
        states_per_level: number of unique merged states at each level from ``start``'s play
            to play 48 (``states_per_level[i]`` = states before play ``start.play_index + i``;
            the last entry counts the finished games, before the cleanup).
        states_per_round: 6 ints: for round ``r``, the unique states before its plays
            ``8r .. 8r+7`` (decision states: the round's roots and its 7 inner levels; the
            finished-game level 48 is not counted; 0 for rounds before ``start``).
        edges_per_level: number of legal plays (edges) at each level from ``start``.
        seconds: wall-clock time of the solve (forward + backward passes), s.
        peak_rss_mb: peak resident memory of this process after the solve, MiB.
        device: torch device named by the caller (the solver itself runs on the CPU).

    Computed on first use (and then kept):
        principal_line: game record ``{"deal": [...], "plays": [{"card", "captured"}...]}`` of
            an optimal game (plays before ``start``, from its history, then optimal plays; at
            each state the first optimal play in the order of :func:`rules.legal_actions`).
        principal_rows: one dict per optimal play from ``start``: ``play`` (1..48),
            ``player``, ``card``, ``captured``, ``points`` (the mover's points for the play),
            ``alex``, ``bob`` (running scores), plus a final ``cleanup`` row when the last
            pool goes to someone.
    """

    deal: tuple[int, ...]
    start: rules.GameState
    value: int
    states_per_level: list[int]
    states_per_round: list[int]
    edges_per_level: list[int]
    seconds: float
    peak_rss_mb: float
    device: str
    _graph: _LevelGraph = field(repr=False, default=None)  # type: ignore[assignment]
    _line: tuple[dict[str, Any], list[dict[str, Any]]] | None = field(repr=False, default=None)

    @property
    def principal_line(self) -> dict[str, Any]:
        """Game record of an optimal game (see the class docstring)."""
        return self._principal()[0]

    @property
    def principal_rows(self) -> list[dict[str, Any]]:
        """One row per optimal play from the start (see the class docstring)."""
        return self._principal()[1]

    def _principal(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        if self._line is None:
            record_prefix = [{"card": a.card, "captured": list(a.captured)}
                             for a in self.start.history]
            if self.start.is_terminal:
                self._line = {"deal": list(self.deal), "plays": record_prefix}, []
                return self._line
            actions = _principal_line(self._graph)
            final, rows = _replay_rows(self.start, actions)
            if rules.utility(final) != self.value:  # pragma: no cover - a solver bug
                raise AssertionError(
                    f"principal line scores {rules.utility(final)}, value is {self.value}")
            record: dict[str, Any] = {"deal": list(self.deal), "plays": record_prefix + [
                {"card": a.card, "captured": list(a.captured)} for a in actions]}
            if len(record_prefix) != self.start.play_index:
                record["start_play"] = self.start.play_index  # the history before is unknown
            self._line = record, rows
        return self._line

    @property
    def num_states(self) -> int:
        """Unique states over all levels (including the finished-game level)."""
        return int(sum(self.states_per_level))

    def _locate(self, state: rules.GameState) -> tuple[_Level, int]:
        if tuple(state.deal) != self.deal:
            raise StateNotSolvedError("the position is from another deal than the solution")
        offset = state.play_index - self._graph.start_level
        if state.is_terminal or offset < 0:
            raise StateNotSolvedError(
                f"play {state.play_index} is not part of the solution (it starts at play "
                f"{self._graph.start_level} and ends after play 47; plays count from 0)")
        lv = self._graph.levels[offset]
        try:
            packed = state_key(state)
        except ValueError as exc:
            raise StateNotSolvedError(f"not a position of this deal: {exc}") from None
        pos = int(np.searchsorted(lv.keys, packed))
        if pos >= lv.keys.size or int(lv.keys[pos]) != packed:
            raise StateNotSolvedError("the position cannot be reached from the solved start")
        return lv, pos

    def level_values(self, play: int) -> tuple[np.ndarray, np.ndarray]:
        """The merged states before play ``play`` (from the start's play to 48 = the
        finished games before the cleanup) as sorted packed keys (int64 [N], see
        :func:`state_key`) and their points still to come (int32 [N], Alex minus Bob)."""
        offset = play - self._graph.start_level
        if offset < 0 or offset >= len(self._graph.levels):
            raise StateNotSolvedError(f"play {play} is not part of the solution")
        level = self._graph.levels[offset]
        assert level.values is not None
        return level.keys, level.values

    def state_value(self, state: rules.GameState) -> int:
        """Final score difference (Alex minus Bob) from ``state`` under optimal play."""
        if state.is_terminal and tuple(state.deal) == self.deal:
            return rules.utility(state)
        lv, pos = self._locate(state)
        assert lv.values is not None
        return rules.utility(state) + int(lv.values[pos])

    def action_values(self, state: rules.GameState) -> list[tuple[rules.Action, int]]:
        """Every legal play at ``state`` with its value: the final score difference (Alex
        minus Bob, points so far included) if it is played and both play optimally after.

        Ties between optimal plays show as equal values. Order: card, then captured set
        (the order of :func:`rules.legal_actions`).
        """
        lv, pos = self._locate(state)
        return _node_action_values(lv, pos, rules.utility(state))

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (the ``--json`` output of ``tensorcfr pasur solve``)."""
        return {
            "deal": list(self.deal),
            "start_play": self.start.play_index,
            "value": self.value,
            "states_per_round": self.states_per_round,
            "states_per_level": self.states_per_level,
            "edges_per_level": self.edges_per_level,
            "num_states": self.num_states,
            "seconds": self.seconds,
            "peak_rss_mb": self.peak_rss_mb,
            "device": self.device,
            "principal_line": self.principal_line,
            "principal_rows": self.principal_rows,
        }


def _node_action_values(lv: _Level, pos: int, base: int) -> list[tuple[rules.Action, int]]:
    """Every play of node ``pos`` of ``lv`` with ``base`` + its Q-value, in the order of
    :func:`rules.legal_actions` (card, then captured set)."""
    assert lv.edge_start is not None and lv.q_values is not None
    lo, hi = int(lv.edge_start[pos]), int(lv.edge_start[pos + 1])
    q = lv.q_values[lo:hi].tolist()
    out = [(lv.edge_action(e), base + v) for e, v in zip(range(lo, hi), q)]
    out.sort(key=lambda av: (av[0].card, av[0].captured))
    return out


def _principal_line(graph: _LevelGraph) -> list[rules.Action]:
    """Optimal plays from the start (first optimal edge at each node)."""
    actions: list[rules.Action] = []
    node = 0
    for i, lv in enumerate(graph.levels[:-1]):
        assert lv.edge_start is not None and lv.q_values is not None
        assert lv.edge_child is not None
        lo, hi = int(lv.edge_start[node]), int(lv.edge_start[node + 1])
        q = lv.q_values[lo:hi]
        alex_moves = (graph.start_level + i) % 2 == 0
        best = int(np.argmax(q)) if alex_moves else int(np.argmin(q))
        e = lo + best
        actions.append(lv.edge_action(e))
        node = int(lv.edge_child[e])
    return actions


def _replay_rows(start: rules.GameState, actions: list[rules.Action]
                 ) -> tuple[rules.GameState, list[dict[str, Any]]]:
    """Replay ``actions`` through :mod:`rules` and tabulate the running score."""
    state = start
    rows: list[dict[str, Any]] = []
    a0, b0 = (s.total for s in rules.score(state))
    for action in actions:
        before_pool = state.pool
        mover = state.player
        nxt = rules.apply_action(state, action)
        a1, b1 = (s.total for s in rules.score(nxt))
        cleanup: dict[str, Any] | None = None
        if nxt.is_terminal and before_pool and nxt.last_capturer is not None:
            left = tuple(c for c in before_pool if c not in action.captured)
            if not action.captured:
                left = tuple(sorted(left + (action.card,)))
            if left:
                # split the last play's points from the cleanup's
                pre = rules.GameState(deal=state.deal, play_index=nxt.play_index,
                                      hands=nxt.hands, pool=(),
                                      piles=tuple(tuple(c for c in pile if c not in left)
                                                  for pile in nxt.piles),  # type: ignore[arg-type]
                                      surs=nxt.surs, last_capturer=nxt.last_capturer)
                pa, pb = (s.total for s in rules.score(pre))
                cleanup = {"play": None, "player": rules.PLAYERS[nxt.last_capturer],
                           "card": None, "captured": list(left),
                           "points": (a1 - pa) if nxt.last_capturer == 0 else (b1 - pb),
                           "alex": a1, "bob": b1}
                a1_play, b1_play = pa, pb
            else:
                a1_play, b1_play = a1, b1
        else:
            a1_play, b1_play = a1, b1
        rows.append({"play": state.play_index, "player": rules.PLAYERS[mover],
                     "card": action.card, "captured": list(action.captured),
                     "points": (a1_play - a0) if mover == 0 else (b1_play - b0),
                     "alex": a1_play, "bob": b1_play})
        if cleanup is not None:
            rows.append(cleanup)
        a0, b0 = a1, b1
        state = nxt
    return state, rows


def _as_start(deal_or_state: Sequence[int] | rules.GameState) -> rules.GameState:
    if isinstance(deal_or_state, rules.GameState):
        return deal_or_state
    return rules.initial_state(rules.validate_deal(deal_or_state))


def solve_exact(deal_or_state: Sequence[int] | rules.GameState, device: str | torch.device = "cpu",
                max_memory: int | None = None, progress: Any = None) -> ExactSolution:
    """Solve a full-information Pasur deal (or the rest of a game from a position) exactly.

    Args:
        deal_or_state: a deal (52 card indices, validated) or a :class:`rules.GameState` to
            solve from (e.g. after some plays).
        device: recorded in the result (the solver runs on the CPU, in numpy; the
            shared-format graph of :func:`build_state_graph` is moved to a device).
        max_memory: limit in bytes for the solver's estimated memory (stored levels plus the
            working set of the level being expanded); ``None`` = the memory available now.
            Checked before each level is allocated: :class:`MemoryLimitError` if exceeded.
        progress: optional callable ``progress(level)`` called after each expanded level.

    Returns:
        An :class:`ExactSolution` whose ``value`` is the final Alex-minus-Bob points of
        optimal play and whose principal line replays legally through :mod:`rules`.
    """
    t0 = time.perf_counter()
    start = _as_start(deal_or_state)
    dev = torch.device(device)
    deal = tuple(start.deal)
    if start.is_terminal:
        return ExactSolution(deal=deal, start=start, value=rules.utility(start),
                             states_per_level=[1], states_per_round=[0] * rules.NUM_ROUNDS,
                             edges_per_level=[], seconds=time.perf_counter() - t0,
                             peak_rss_mb=peak_rss_mb(), device=str(dev),
                             _graph=_LevelGraph(start, start.play_index, []))
    guard = _check_limit(max_memory)
    graph = _build_levels([start], guard, progress)
    _backward(graph, guard)
    root_values = graph.levels[0].values
    assert root_values is not None
    value = rules.utility(start) + int(root_values[0])
    states_per_level = [int(lv.keys.size) for lv in graph.levels]
    states_per_round = [0] * rules.NUM_ROUNDS
    for i, count in enumerate(states_per_level[:-1]):
        states_per_round[(start.play_index + i) // PLIES_PER_ROUND] += count
    edges = [lv.num_edges for lv in graph.levels[:-1]]
    return ExactSolution(deal=deal, start=start, value=value, states_per_level=states_per_level,
                         states_per_round=states_per_round, edges_per_level=edges,
                         seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb(),
                         device=str(dev), _graph=graph)


def action_values_many(states: Sequence[rules.GameState], max_memory: int | None = None,
                       *, deadline: float | None = None
                       ) -> list[list[tuple[rules.Action, int]]]:
    """Every legal play of each of ``states`` with its exact value, many states per pass.

    The values are those of :meth:`ExactSolution.action_values`: the final score difference
    (Alex minus Bob, points so far included) if the play is made and both then play
    optimally with the whole deal known. Meant for PIMC, which solves many determinizations
    of one observed position: states with the same play index are solved together in one
    level-wise pass (their states never merge: each start's index is written into key bits
    no state uses, see :class:`_BatchTables`), as many per pass as there are free bits for
    (:func:`batch_capacity`; 2 at the first play, 32 once 4 cards are captured), and at
    most 8 per pass before play 24, where each solve is large enough that smaller passes are
    faster (measured: 8 per pass beats 32 at play 11, ties at play 20, loses at play 27).

    Args:
        states: positions (any deals, any play indices; a finished game gets ``[]``).
        max_memory: limit in bytes per pass (``None``: the memory available now).
        deadline: a ``time.perf_counter()`` time: a pass still running then is abandoned
            between two levels with :class:`DeadlineExceeded` (PIMC's time budget).

    Returns:
        One list per state, in the order of :func:`rules.legal_actions` (card, then
        captured set): ``(action, value)`` pairs.
    """
    out: list[list[tuple[rules.Action, int]]] = [[] for _ in states]
    by_play: dict[int, list[int]] = {}
    for i, state in enumerate(states):
        if not state.is_terminal:
            by_play.setdefault(state.play_index, []).append(i)
    for play, indices in by_play.items():
        capacity = batch_capacity([states[i] for i in indices])
        if play < _EARLY_PLAYS:  # large solves: several smaller passes sort faster
            capacity = min(capacity, _EARLY_PASS_STARTS)
        for lo in range(0, len(indices), capacity):
            chunk = indices[lo:lo + capacity]
            guard = _check_limit(max_memory)
            guard.deadline = deadline
            graph = _build_levels([states[i] for i in chunk], guard)
            _backward(graph, guard)
            for d, i in enumerate(chunk):
                out[i] = _node_action_values(graph.levels[0], graph.root_index[d],
                                             rules.utility(states[i]))
    return out


# --------------------------------------------------------------------------- shared graph

def _node_state(keys: np.ndarray, level: int, tables: _BatchTables, round_end: bool,
                device: torch.device) -> dict[str, torch.Tensor]:
    """Decoded per-node state of ``keys`` at global ``level`` (hands empty if ``round_end``),
    as int64 tensors [N] on ``device``."""
    pool = keys >> POOL_SHIFT
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    done = clubs_field == CLUBS_DONE
    captured_clubs = tables.captured_clubs(keys, level, None)
    if round_end or level >= NUM_LEVELS:
        hand_a = np.zeros_like(keys)
        hand_b = np.zeros_like(keys)
    else:
        rel_a, rel_b = tables.hands_rel(keys, level)
        hand_a = tables.hands_abs(rel_a, level, 0, None)
        hand_b = tables.hands_abs(rel_b, level, 1, None)
    dealt = _dealt_mask(tables.deals[0], level) if level < NUM_LEVELS else ALL_CARDS_MASK
    if round_end and level < NUM_LEVELS:  # before the next round's hands are dealt
        dealt = _dealt_mask(tables.deals[0], level - 1)
    anyone = (dealt & ~pool & ~hand_a & ~hand_b) != 0
    columns = {
        "key": keys,
        "pool": pool,
        "alex_hand": hand_a,
        "bob_hand": hand_b,
        "alex_clubs": np.where(done, -1, clubs_field),
        "bob_clubs": np.where(done, -1, captured_clubs - clubs_field),
        "clubs_done": done.astype(np.int64),
        "last_capturer": np.where(anyone, (keys >> LAST_SHIFT) & 1, -1),
    }
    return {name: torch.from_numpy(np.ascontiguousarray(col, dtype=np.int64)).to(device)
            for name, col in columns.items()}


def build_state_graph(deal: Sequence[int], device: str | torch.device = "cpu",
                      max_memory: int | None = None) -> list[RoundGraph]:
    """The merged state graph of a whole deal in the shared format (dag mode of CFR).

    One :class:`RoundGraph` per round; level 8 of round ``r`` is level 0 of round ``r+1``
    (``next_root`` is the identity); round 5's ``terminal_reward`` is the cleanup. Each level's
    ``node_state`` holds int64 tensors [N]: ``key`` (packed state), ``pool``, ``alex_hand``,
    ``bob_hand`` (52-bit card masks), ``alex_clubs``, ``bob_clubs`` (club counts, -1 once
    somebody has 7), ``clubs_done`` (1 once somebody has 7), ``last_capturer`` (0 Alex,
    1 Bob, -1 nobody yet). Rewards are float64 points, Alex minus Bob. The graph is built on
    the CPU and its tensors are then moved to ``device``.
    """
    dev = torch.device(device)
    start = rules.initial_state(rules.validate_deal(deal))
    guard = _check_limit(max_memory)
    graph = _build_levels([start], guard)
    num_edges = sum(lv.num_edges for lv in graph.levels)
    num_nodes = sum(lv.keys.size for lv in graph.levels)
    # int64 parent/child/card and float64 reward per edge, 8 int64 node-state tensors per node
    guard.check(0, num_edges * 40 + num_nodes * 8 * 8, "the graph in the shared format")
    tables = _BatchTables([start])

    def as_tensor(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device=dev, dtype=dtype)

    rounds: list[RoundGraph] = []
    for r in range(rules.NUM_ROUNDS):
        lvs = graph.levels[8 * r:8 * r + 9]
        num_end = lvs[8].keys.size
        last_round = r == rules.NUM_ROUNDS - 1
        if last_round:
            assert lvs[8].terminal_reward is not None
            terminal = as_tensor(lvs[8].terminal_reward, torch.float64)
            next_root = torch.full((num_end,), -1, dtype=torch.int64, device=dev)
        else:
            terminal = torch.zeros(num_end, dtype=torch.float64, device=dev)
            next_root = torch.arange(num_end, dtype=torch.int64, device=dev)
        node_state = [_node_state(lvs[i].keys, 8 * r + i, tables, i == 8, dev) for i in range(9)]
        plays = [lv.edge_play for lv in lvs[:8]]
        rounds.append(RoundGraph(
            round_index=r,
            num_nodes=[int(lv.keys.size) for lv in lvs],
            edge_parent=[as_tensor(lv.edge_parent(), torch.int64) for lv in lvs[:8]],
            edge_child=[as_tensor(lv.edge_child, torch.int64) for lv in lvs[:8]],  # type: ignore[arg-type]
            edge_reward=[as_tensor(lv.edge_reward, torch.float64) for lv in lvs[:8]],  # type: ignore[arg-type]
            edge_card=[as_tensor(lv.play_card[p], torch.int64)  # type: ignore[index]
                       for lv, p in zip(lvs[:8], plays)],
            edge_captured=[as_tensor(lv.play_captured[p], torch.int64)  # type: ignore[index]
                           for lv, p in zip(lvs[:8], plays)],
            next_root=next_root,
            terminal_reward=terminal,
            node_state=node_state,
        ))
    return rounds
