"""The level builder of the exact Pasur solver: the merged state graph, level by level.

:func:`build_levels` and :func:`backward_pass` are the two passes of
:mod:`~tensorcfr.games.pasur.solving.exact` (states are the packed keys of
:mod:`~tensorcfr.games.pasur.solving.exact_keys`; a *level* ``l`` holds the states before
play ``l``, 0..48):

1. **Forward pass** (:func:`build_levels`, one level at a time by :func:`expand_level`).
   Starting from one position, the unique states of each of the remaining plies (48 in a
   whole game) are generated at once. What a play does to the pool (captured set, points,
   Sur, clubs taken, the child's pool) depends only on the pool and the card, so it is
   computed once per *play* (distinct pool x hand slot x capture or lay); per edge only the
   hands, the clubs count and the last capturer remain. The children are merged (states
   reached by different orders of play become one node, so the tree becomes a DAG) by one
   value sort of ``child id << index bits | edge index`` (:func:`unique_inverse`).
2. **Backward pass** (:func:`backward_pass`). From the last level up, the value of each edge
   (``Q = reward + V[child]``) and of each node (max over its edges at Alex's levels, min at
   Bob's: a node's edges are contiguous, so one ``reduceat``) are computed for all states of a
   level at once.

Several starts of one play index (PIMC's determinizations of one observed position, through
:func:`~tensorcfr.games.pasur.solving.exact.action_values_many`) are solved in one pass
(:class:`BatchTables`): each start's index is written into key bits that no state uses (bit
62, and the pool bits of the cards captured before the start in all of them), so the
starts' states never merge and each keeps its own deal's hands.

Memory is checked before each level is allocated (:class:`MemoryGuard`, calibrated per edge)
and a ``deadline`` is checked between levels (:class:`DeadlineExceeded`). Nothing here knows
a solution's queries (values of a position, principal line): that is
:class:`~tensorcfr.games.pasur.solving.exact.ExactSolution`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from tensorcfr.errors import MemoryLimitError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import JACKS
from tensorcfr.games.pasur.solving.exact_keys import (
    ALEX_HAND_SHIFT,
    ALL_CARDS_MASK,
    BOB_HAND_SHIFT,
    CHOOSE4,
    CLUBS_BONUS_BY_COUNT,
    CLUBS_DONE,
    CLUBS_FIELD_BITS,
    CLUBS_MASK,
    CLUBS_SHIFT,
    LAST_SHIFT,
    MASK_OF_NP,
    NUM_LEVELS,
    NUMERIC_OR_JACK_MASK,
    POOL_SHIFT,
    RANK_OF_NP,
    SLOTS_U8,
    SUBSET_SLOTS,
    candidates_by_card,
    cards_mask,
    dealt_mask,
    exclusive_cumsum,
    hand_sizes,
    mask_cards,
    np_points,
    ragged_arange,
    state_key,
    unique_inverse,
)
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND
from tensorcfr.utils.resources import available_memory_bytes, format_bytes

__all__ = ["BatchTables", "DeadlineExceeded", "Level", "LevelGraph", "MemoryGuard",
           "backward_pass", "batch_capacity", "build_levels", "expand_level", "memory_guard",
           "terminal_rewards"]

# --------------------------------------------------------------------------- memory model

# Transient bytes per edge while a level is expanded (live int64 / int32 temporaries, the
# packed sort of the child ids and its inverse, allocator slack), calibrated on the largest
# benchmark deal (seed 13: estimate 371 MiB, measured peak RSS growth 366 MiB). The data kept
# between the passes is counted exactly (Level.stored_bytes).
_TRANSIENT_BYTES_PER_EDGE = 8 * 14
# Per edge in the backward pass: int64 child and parent indices, int32 Q-value, and per node
# the int32 value.
_BACKWARD_BYTES_PER_EDGE = 8 + 8 + 4 + 4
_CHUNK_CELLS = 1 << 21  # (pool, candidate set) cells of the capture test per row chunk
_FREE_CHECK_BYTES = 64 << 20  # estimates below this are not checked against free memory
_RAGGED_CELLS = 1 << 16  # several starts: above this many cells, one dense test per start




# --------------------------------------------------------------------------- level storage

@dataclass
class Level:
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
        return rules.Action(int(self.play_card[p]), tuple(mask_cards(int(self.play_captured[p]))))

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


class MemoryGuard:
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


class BatchTables:
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
        abs_masks = (np.left_shift(1, hands)[..., None, :] * SUBSET_SLOTS).sum(-1)  # [K,6,2,16]
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
                hit = np.array([dealt_mask(deal, level) & CLUBS_MASK for deal in self.deals],
                               dtype=np.int64)
            self._dealt_clubs[level] = hit
        return hit

    def hands_rel(self, keys: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Relative 4-bit hand masks (Alex, Bob) of keys of ``level`` (< 48): int64 [N]."""
        ka, kb = hand_sizes(level % PLIES_PER_ROUND)
        return (MASK_OF_NP[ka][(keys >> ALEX_HAND_SHIFT) & 7],
                MASK_OF_NP[kb][(keys >> BOB_HAND_SHIFT) & 7])

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
        dead &= cards_mask(s.piles[0]) | cards_mask(s.piles[1])
    return [62] + [POOL_SHIFT + c for c in mask_cards(dead)]


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
                        guard: MemoryGuard) -> tuple[np.ndarray, np.ndarray]:
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
                  cand_start: np.ndarray, level: int, guard: MemoryGuard
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
    bounds = exclusive_cumsum(per_pool)
    if bounds[-1] > _RAGGED_CELLS:  # large: one dense test per start
        by_start = np.argsort(udet, kind="stable")
        start_first = exclusive_cumsum(np.bincount(udet, minlength=cand_start.size - 1))
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
        pair_c = ragged_arange(cand_start[udet[lo:hi]], per_pool[lo:hi])
        sets = cand_mask[pair_c]
        ok = (upool[pair_u] & sets) == sets
        fits_u.append(pair_u[ok])
        fits_c.append(pair_c[ok])
        lo = hi
    return np.concatenate(fits_u), np.concatenate(fits_c)


@dataclass
class _Pools:
    """The distinct pools of a level's states (sorted keys come grouped by pool)."""

    first: np.ndarray  # int64 [U], first state of each pool
    of_state: np.ndarray  # int64 [N], pool of each state
    full: np.ndarray  # int64 [U], the pool field with the start bits
    real: np.ndarray  # int64 [U], real cards only
    start: np.ndarray | None  # int64 [U], start of each pool (None: one start)


def _level_pools(keys: np.ndarray, det: np.ndarray | None, tables: BatchTables) -> _Pools:
    """The distinct pools of the sorted ``keys`` (start of each state: ``det``)."""
    pool_full = keys >> POOL_SHIFT
    first, of_state = _distinct_pools(pool_full)
    full = pool_full[first]
    return _Pools(first=first, of_state=of_state, full=full, real=full & tables.real_pool_mask,
                  start=None if det is None else det[first])


def _fitting_captures(level: int, pools: _Pools, slot_card: np.ndarray, tables: BatchTables,
                      guard: MemoryGuard) -> tuple[np.ndarray, np.ndarray]:
    """Every capture a hand card can make in a distinct pool: ``(group, captured)``, int64
    [F] each, where ``group = pool * 4 + slot`` (non-decreasing) and ``captured`` is the set's
    card mask. Candidate sets per (start, slot) are kept if they lie within the union of the
    level's pools (per start), then tested against each pool (:func:`_capture_test`)."""
    all_masks, all_start = candidates_by_card()
    ds_lo, ds_hi = all_start[slot_card], all_start[slot_card + 1]
    idx = ragged_arange(ds_lo, ds_hi - ds_lo)
    ds_of = np.repeat(np.arange(slot_card.size, dtype=np.int64), ds_hi - ds_lo)
    masks = all_masks[idx]
    if pools.start is None:
        union: int | np.ndarray = int(np.bitwise_or.reduce(pools.real)) if pools.real.size else 0
    else:  # per start: the union of its own pools
        unions = np.zeros(tables.num, dtype=np.int64)
        np.bitwise_or.at(unions, pools.start, pools.real)
        union = unions[ds_of >> 2]
    keep = (masks & ~union) == 0
    cand_mask, cand_ds = masks[keep], ds_of[keep]
    cand_start = exclusive_cumsum(np.bincount(cand_ds >> 2, minlength=tables.num))
    fit_u, fit_c = _capture_test(pools.real, pools.start, cand_mask, cand_start, level, guard)
    return fit_u * 4 + (cand_ds[fit_c] & 3), cand_mask[fit_c]


@dataclass
class _Plays:
    """The level's table of plays: per (distinct pool, hand slot) group, its captures or else
    one lay (or Jack play), and what each does to the pool."""

    first: np.ndarray  # int64 [U * 4 + 1], the group's plays are first[g]:first[g + 1]
    per_group: np.ndarray  # int64 [U * 4], plays per group (at least 1)
    card: np.ndarray  # int64 [P], the card played
    captured: np.ndarray  # int64 [P], captured-card mask, 0 = laid
    is_capture: np.ndarray  # bool [P]
    points: np.ndarray  # int64 [P], the mover's points (cards, Sur)
    clubs: np.ndarray  # int16 [P], clubs taken
    child_pools: np.ndarray  # int64 [C], distinct child pool fields, ascending
    child_pool: np.ndarray  # [P], index into child_pools


def _play_table(round_index: int, pools: _Pools, slot_card: np.ndarray, fit_group: np.ndarray,
                fit_captured: np.ndarray, tables: BatchTables) -> _Plays:
    """The plays of every (pool, slot) group from its fitting captures (in candidate order);
    a group without one plays its card as a lay, or as a Jack that takes the pool's numeric
    cards and Jacks. Points include a Sur (a capture, not by a Jack, that empties the pool;
    none in the last round)."""
    num_pools = pools.real.size
    fits_per_group = np.bincount(fit_group, minlength=num_pools * 4)
    plays_per_group = np.maximum(fits_per_group, 1)
    play_first = exclusive_cumsum(plays_per_group)
    num_plays = int(play_first[-1])
    play_group = np.repeat(np.arange(num_pools * 4, dtype=np.int64), plays_per_group)
    play_u = play_group >> 2
    play_slot = play_group & 3
    play_card = (slot_card[play_slot] if pools.start is None
                 else slot_card[pools.start[play_u] * 4 + play_slot])
    play_pool = pools.real[play_u]
    captured = np.zeros(num_plays, dtype=np.int64)
    is_capture = np.zeros(num_plays, dtype=bool)
    fit_rank = (np.arange(fit_group.size, dtype=np.int64)
                - exclusive_cumsum(fits_per_group)[fit_group])
    fit_pos = play_first[fit_group] + fit_rank
    captured[fit_pos] = fit_captured
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
    play_points = np_points(taken)
    if round_index < rules.NUM_ROUNDS - 1:  # Sur: a capture (not by a Jack) that empties the pool
        is_jack_card = (play_card >= JACKS[0]) & (play_card <= JACKS[-1])
        play_points += rules.SUR_POINTS * (is_capture & ~is_jack_card & (child_pool == 0))
    play_clubs = np.bitwise_count(taken & CLUBS_MASK).astype(np.int16)
    child_pool_full = child_pool | (pools.full[play_u] & tables.det_pool_mask)
    child_pools, play_child_pool = unique_inverse(child_pool_full)
    return _Plays(first=play_first, per_group=plays_per_group, card=play_card,
                  captured=captured, is_capture=is_capture, points=play_points,
                  clubs=play_clubs, child_pools=child_pools, child_pool=play_child_pool)


@dataclass(frozen=True)
class _ChildFields:
    """How a child's id packs its key fields below the rank of its pool: hands
    (``rank_b * n_a + rank_a`` in ``hand_bits``), then the clubs field (3 bits at
    ``clubs_at``) and the last capturer (1 bit at ``last_at``); ``low_bits`` in all."""

    n_a: int
    hand_bits: int
    clubs_at: int
    last_at: int
    low_bits: int

    @classmethod
    def after(cls, ply: int) -> _ChildFields:
        """The layout of the children of ply ``ply`` (0..7) of a round (hands empty after
        the round's last ply)."""
        ka, kb = hand_sizes(ply + 1) if ply < PLIES_PER_ROUND - 1 else (0, 0)
        hand_bits = (CHOOSE4[ka] * CHOOSE4[kb] - 1).bit_length()
        return cls(n_a=CHOOSE4[ka], hand_bits=hand_bits, clubs_at=hand_bits,
                   last_at=hand_bits + 3, low_bits=hand_bits + 4)


@dataclass
class _Groups:
    """Per (state, card in the mover's hand), state-major then slot: the plays of that card
    in the state's pool are the edges of the group (a state's edges are contiguous)."""

    state: np.ndarray  # int64 [G]
    slot: np.ndarray  # int64 [G]
    plays: np.ndarray  # int32 [G], edges of the group
    play0: np.ndarray  # int64 [G], first play of the group minus its first edge
    edge_start: np.ndarray  # int64 [N + 1]


def _hand_groups(level: int, rel_mover: np.ndarray, pools: _Pools, plays: _Plays,
                 guard: MemoryGuard) -> _Groups:
    """The groups of every state (every state of a level holds the same number of cards,
    so each has ``hand_size`` groups) and the edges they make; refuses a level whose edges
    would not fit in memory."""
    n = rel_mover.size
    hand_size = hand_sizes(level % PLIES_PER_ROUND)[level % 2]
    in_hand = ((rel_mover.astype(np.uint8)[:, None] >> SLOTS_U8) & 1).view(bool)  # [N, 4]
    group = np.flatnonzero(in_hand)  # state-major, then slot
    group_state = group >> 2
    group_slot = group & 3
    group_pool_slot = pools.of_state[group_state] * 4 + group_slot
    group_plays = plays.per_group.astype(np.int32)[group_pool_slot]
    edges_per_state = group_plays.reshape(n, hand_size).sum(axis=1, dtype=np.int64)
    edge_start = exclusive_cumsum(edges_per_state)
    num_edges = int(edge_start[-1])
    guard.check(level, num_edges * _TRANSIENT_BYTES_PER_EDGE + n * 8 * 16,
                f"{num_edges:,} plays from {n:,} states")
    group_play0 = plays.first[:-1][group_pool_slot] - exclusive_cumsum(group_plays)[:-1]
    return _Groups(state=group_state, slot=group_slot, plays=group_plays, play0=group_play0,
                   edge_start=edge_start)


def _mover_clubs(keys: np.ndarray, level: int, det: np.ndarray | None,
                 tables: BatchTables) -> np.ndarray:
    """The mover's club count at each state: int16 [N], 64 once somebody has 7 (the bonus
    is never paid again). Alex's count is the key's clubs field; Bob's is the captured clubs
    minus Alex's."""
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    done = clubs_field == CLUBS_DONE
    if level % 2 == 0:
        mover_clubs = clubs_field
    else:
        mover_clubs = tables.captured_clubs(keys, level, det) - clubs_field
    return np.where(done, 64, mover_clubs).astype(np.int16)  # 64: never pays again


def _group_low_fields(keys: np.ndarray, mover: int, rel_mover: np.ndarray, groups: _Groups,
                      fields: _ChildFields) -> np.ndarray:
    """The child's low fields each group's plays share before the play's own effect: both
    hands (the mover's without the group's card) and the last capturer; for Bob's plays
    also the clubs field (Alex's count does not change): int64 [G]."""
    new_rank = RANK_OF_NP[rel_mover[groups.state] & ~(1 << groups.slot)]
    if mover == 0:
        other_rank = (keys >> BOB_HAND_SHIFT) & 7
        hands = other_rank[groups.state] * fields.n_a + new_rank
        state_low = ((keys >> LAST_SHIFT) & 1) << fields.last_at
    else:
        clubs_field = (keys >> CLUBS_SHIFT) & 7
        other_rank = (keys >> ALEX_HAND_SHIFT) & 7
        hands = new_rank * fields.n_a + other_rank[groups.state]
        state_low = (((keys >> LAST_SHIFT) & 1) << fields.last_at) | (clubs_field
                                                                       << fields.clubs_at)
    return hands | state_low[groups.state]


def _edges(mover: int, plays: _Plays, groups: _Groups, group_low: np.ndarray,
           mover_clubs: np.ndarray, fields: _ChildFields
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per edge: its play (int32/int64 [E], row of the play table), its child's id (int64
    [E]: pool rank, then the low fields) and its reward (int32 [E], Alex minus Bob: the
    play's points and the clubs bonus when the mover reaches 7)."""
    num_edges = int(groups.edge_start[-1])
    play_base = (plays.child_pool.astype(np.int64) << fields.low_bits)
    play_keep = np.full(plays.card.size, -1, dtype=np.int64)
    # a capture makes the mover the last capturer
    play_keep[plays.is_capture] = ~(1 << fields.last_at)
    if mover == 1:
        play_base[plays.is_capture] |= 1 << fields.last_at
    index_type = np.int32 if num_edges < 1 << 31 else np.int64
    edge_group = np.repeat(np.arange(groups.state.size, dtype=index_type), groups.plays)
    edge_play = (groups.play0.astype(index_type)[edge_group]
                 + np.arange(num_edges, dtype=index_type))
    child_id = play_base[edge_play] | (group_low[edge_group] & play_keep[edge_play])
    # the mover's clubs after the play (64 and more: somebody had 7 already) -> the child's
    # clubs field bits and the clubs bonus, by two small lookup tables
    clubs_after = mover_clubs[groups.state][edge_group] + plays.clubs[edge_play]
    child_id |= CLUBS_FIELD_BITS[mover][clubs_after] << fields.clubs_at
    sign = 1 if mover == 0 else -1
    reward = (sign * plays.points).astype(np.int32)[edge_play]
    reward += (sign * CLUBS_BONUS_BY_COUNT)[clubs_after]
    return edge_play, child_id, reward


def _merge_children(child_id: np.ndarray, plays: _Plays, fields: _ChildFields
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Merge the edges' children: ``(edge_child, next_keys)``, the index of each edge's
    child ([E]) among the next level's keys (int64, ascending: ids ascending = keys
    ascending)."""
    unique_ids, edge_child = unique_inverse(child_id)
    low = unique_ids & ((1 << fields.low_bits) - 1)
    hands_c = low & ((1 << fields.hand_bits) - 1)
    next_keys = ((plays.child_pools[unique_ids >> fields.low_bits] << POOL_SHIFT)
                 | ((low >> fields.last_at) << LAST_SHIFT)
                 | (((low >> fields.clubs_at) & 7) << CLUBS_SHIFT)
                 | ((hands_c // fields.n_a) << BOB_HAND_SHIFT)
                 | ((hands_c % fields.n_a) << ALEX_HAND_SHIFT))
    return edge_child, next_keys


def expand_level(level: int, keys: np.ndarray, tables: BatchTables, guard: MemoryGuard
                 ) -> tuple[Level, np.ndarray]:
    """All legal plays of all states ``keys`` of ``level`` (< 48) and the sorted keys of
    level + 1.

    Everything a play does to the pool (captured set, points, Sur, clubs taken, the child's
    pool) depends only on the pool and the card, so it is computed once per *play*: a row
    per (distinct pool, hand slot, capture or lay); the capture test is a [distinct pools x
    candidate sets] subset test on bit masks. Per edge only the hands, the clubs count and
    the last capturer remain; a child is identified by a small integer (rank of its pool
    among the level's child pools, then its low key fields packed tightly) and the children
    are merged by :func:`unique_inverse`.
    """
    r, ply = divmod(level, PLIES_PER_ROUND)
    mover = ply % 2
    det = tables.det_of(keys)
    pools = _level_pools(keys, det, tables)
    rel_a, rel_b = tables.hands_rel(keys, level)
    rel_mover = rel_a if mover == 0 else rel_b
    slot_card = tables.hand_cards[r][mover]  # [K * 4]
    fit_group, fit_captured = _fitting_captures(level, pools, slot_card, tables, guard)
    plays = _play_table(r, pools, slot_card, fit_group, fit_captured, tables)
    fields = _ChildFields.after(ply)
    groups = _hand_groups(level, rel_mover, pools, plays, guard)
    mover_clubs = _mover_clubs(keys, level, det, tables)
    group_low = _group_low_fields(keys, mover, rel_mover, groups, fields)
    edge_play, child_id, reward = _edges(mover, plays, groups, group_low, mover_clubs, fields)
    edge_child, next_keys = _merge_children(child_id, plays, fields)
    out = Level(keys=keys, edge_start=groups.edge_start,
                edge_child=edge_child.astype(np.int32, copy=False),
                edge_reward=reward, edge_play=edge_play.astype(np.int32, copy=False),
                play_card=plays.card.astype(np.int8), play_captured=plays.captured)
    return out, next_keys


def terminal_rewards(keys: np.ndarray, tables: BatchTables) -> np.ndarray:
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
    points = np_points(pool) + rules.CLUBS_BONUS * bonus
    return (anyone_captured * (1 - 2 * last) * points).astype(np.int32)


@dataclass
class LevelGraph:
    """The merged state graph from the start positions: ``levels[i]`` is play ``start + i``;
    ``levels[0].keys[root_index[d]]`` is start ``d``."""

    start: rules.GameState
    start_level: int
    levels: list[Level]
    root_index: list[int] = field(default_factory=lambda: [0])


def memory_guard(max_memory: int | None) -> MemoryGuard:
    if max_memory is not None and int(max_memory) <= 0:
        raise MemoryLimitError(f"the memory limit must be positive, got {max_memory} bytes")
    return MemoryGuard(max_memory)


def build_levels(starts: Sequence[rules.GameState], guard: MemoryGuard,
                  progress: Any = None) -> LevelGraph:
    """Forward pass: the unique states and edges of every level from ``starts`` (same play
    index, one pass) to play 48."""
    start = starts[0]
    if start.is_terminal:
        raise ValueError("the game is already over")
    tables = BatchTables(starts)
    root_keys = np.array([tables.start_key(s, d) for d, s in enumerate(starts)], dtype=np.int64)
    order = np.argsort(root_keys)
    keys = root_keys[order]
    root_index = [0] * len(starts)
    for pos, d in enumerate(order.tolist()):
        root_index[d] = pos
    levels: list[Level] = []
    for level in range(start.play_index, NUM_LEVELS):
        expanded, keys = expand_level(level, keys, tables, guard)
        levels.append(expanded)
        guard.stored += expanded.stored_bytes()
        if progress is not None:
            progress(level)
    guard.check(NUM_LEVELS - 1, keys.size * (8 + 4 + 4) * 4, "end of the game")
    last = Level(keys=keys, terminal_reward=terminal_rewards(keys, tables))
    levels.append(last)
    guard.stored += last.stored_bytes()
    return LevelGraph(start=start, start_level=start.play_index, levels=levels,
                       root_index=root_index)


# --------------------------------------------------------------------------- backward pass

def backward_pass(graph: LevelGraph, guard: MemoryGuard) -> None:
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
