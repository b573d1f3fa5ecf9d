"""Exact minimax solution of a full-information Pasur deal by level-wise backward induction.

With the whole deal known, Pasur is a finite two-player zero-sum game of perfect information,
so every deal (and every position) has a minimax value: Alex's points minus Bob's points under
optimal play by both. This module computes it with whole-level tensor operations:

1. **Forward pass** (:func:`_build_levels`). Starting from one position, the unique states of
   each of the remaining plies ("levels", 48 in a whole game) are generated at once. A state
   is packed into one int64 key (see *State key* below); the children of all the states of a
   level are computed edge by edge as tensors and merged with ``torch.unique`` (states reached
   by different orders of play become one node, so the tree becomes a DAG).
2. **Backward pass** (:func:`_backward`). From the last level up, the value of each edge
   (``Q = reward + V[child]``) and of each node (max over its edges at Alex's levels, min at
   Bob's, a ``scatter_reduce`` over the edges) are computed for all states of a level at once.

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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence

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

# Transient bytes per edge while a level is expanded (live int64 temporaries, the sort of the
# child keys in torch.unique and its inverse, allocator slack), calibrated on the largest
# benchmark deal (seed 13: estimate 526 MiB, measured RSS growth 501 MiB). The data kept
# between the passes is counted exactly (_Level.stored_bytes).
_TRANSIENT_BYTES_PER_EDGE = 8 * 22
# Per edge in the backward pass: int64 child and parent indices, int32 Q-value, and per node
# the int32 value.
_BACKWARD_BYTES_PER_EDGE = 8 + 8 + 4 + 4
_CHUNK_CELLS = 1 << 21  # (pool, candidate set) cells of the capture test per row chunk


class StateNotSolvedError(TensorCFRError):
    """A position that is not part of a solution (another deal, or before its start)."""


# --------------------------------------------------------------------------- static tables

@lru_cache(maxsize=None)
def _capture_masks_by_card() -> tuple[tuple[int, ...], ...]:
    """For each numeric card ``c``: bit masks of the sets ``S`` it may capture (``S∪{c}`` sums to 11)."""
    by_card: list[list[int]] = [[] for _ in range(NUM_NUMERIC)]
    for combo in sum11_combos():
        mask = sum(1 << c for c in combo)
        for c in combo:
            by_card[c].append(mask & ~(1 << c))
    # in the order of rules.captures (sorted captured tuples), so edges follow legal_actions
    return tuple(tuple(sorted(m, key=_mask_cards)) for m in by_card)


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
    return [c for c in range(NUM_CARDS) if (mask >> c) & 1]


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


# --------------------------------------------------------------------------- tensor helpers

def _gather(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` along dim 0 (``index_select``: much faster than advanced indexing)."""
    return torch.index_select(table, 0, index)


def _popcount(x: torch.Tensor) -> torch.Tensor:
    """Number of set bits of each non-negative int64 (< 2**62), elementwise (SWAR)."""
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x = x + (x >> 8)
    x = x + (x >> 16)
    x = x + (x >> 32)
    return x & 0x7F


def _points(mask: torch.Tensor) -> torch.Tensor:
    """Points of each set of cards (int64 masks): Aces, Jacks, 10♦ (3), 2♣ (2)."""
    return (_popcount(mask & ONE_POINT_MASK) + 3 * ((mask >> TEN_OF_DIAMONDS) & 1)
            + 2 * ((mask >> TWO_OF_CLUBS) & 1))


def _or_reduce(x: torch.Tensor) -> int:
    """Bitwise OR of all int64 elements (halving folds, no per-element Python)."""
    if x.numel() == 0:
        return 0
    while x.numel() > 1:
        half = x.numel() // 2
        folded = x[:half] | x[half:2 * half]
        if x.numel() % 2:
            folded[0] |= x[-1]
        x = folded
    return int(x[0])


# --------------------------------------------------------------------------- level storage

@dataclass
class _Level:
    """One expanded level: its states and their edges to the next level (parents sorted)."""

    keys: torch.Tensor  # int64 [N], sorted ascending (torch.unique order)
    edge_parent: torch.Tensor | None = None  # int32 [E]
    edge_child: torch.Tensor | None = None  # int32 [E], index into the next level's keys
    edge_reward: torch.Tensor | None = None  # int32 [E], points (Alex minus Bob)
    edge_card: torch.Tensor | None = None  # int8 [E]
    edge_captured: torch.Tensor | None = None  # int64 [E], captured-card mask, 0 = laid
    terminal_reward: torch.Tensor | None = None  # int32 [N], level 48 only
    q_values: torch.Tensor | None = None  # int32 [E], points to come after the edge's play
    values: torch.Tensor | None = None  # int32 [N], points to come from the node

    def stored_bytes(self) -> int:
        total = 0
        for t in (self.keys, self.edge_parent, self.edge_child, self.edge_reward,
                  self.edge_card, self.edge_captured, self.terminal_reward, self.q_values,
                  self.values):
            if t is not None:
                total += t.numel() * t.element_size()
        return total


class _MemoryGuard:
    """Refuses, before allocating, any level whose estimated memory exceeds the limit."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit = int(limit_bytes)
        self.stored = 0

    def check(self, level: int, extra_bytes: int, what: str) -> None:
        estimate = self.stored + int(extra_bytes)
        if estimate > self.limit:
            raise MemoryLimitError(
                f"solving needs about {format_bytes(estimate)} at play {level + 1} ({what}), "
                f"more than the limit of {format_bytes(self.limit)}; raise --max-memory or "
                "free memory on this machine")


class _DealTables:
    """Per-deal constants of the forward pass, as tensors on ``device``."""

    def __init__(self, deal: tuple[int, ...], device: torch.device) -> None:
        self.deal = deal
        self.device = device
        self.rank_of = torch.tensor(_RANK_OF, dtype=torch.int64, device=device)
        self.mask_of = torch.tensor(_MASK_OF, dtype=torch.int64, device=device)  # [5, 6]
        # abs_hand[r][p]: int64 [16], relative 4-bit hand mask -> 52-bit card mask
        self.round_cards: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self.abs_hand: list[list[torch.Tensor]] = []
        for r in range(rules.NUM_ROUNDS):
            hands = rules.round_hands(deal, r)
            self.round_cards.append(hands)
            per_player = []
            for p in (0, 1):
                table = [sum(1 << hands[p][j] for j in range(4) if (m >> j) & 1)
                         for m in range(16)]
                per_player.append(torch.tensor(table, dtype=torch.int64, device=device))
            self.abs_hand.append(per_player)

    def hands_rel(self, keys: torch.Tensor, level: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Relative 4-bit hand masks (Alex, Bob) of keys of ``level`` (< 48)."""
        ka, kb = _hand_sizes(level % PLIES_PER_ROUND)
        rel_a = _gather(self.mask_of[ka], (keys >> ALEX_HAND_SHIFT) & 7)
        rel_b = _gather(self.mask_of[kb], (keys >> BOB_HAND_SHIFT) & 7)
        return rel_a, rel_b

    def captured_clubs(self, keys: torch.Tensor, level: int) -> torch.Tensor:
        """Clubs in both piles together (dealt clubs in neither the pool nor a hand)."""
        pool = keys >> POOL_SHIFT
        outside = pool
        if level < NUM_LEVELS:
            r = level // PLIES_PER_ROUND
            rel_a, rel_b = self.hands_rel(keys, level)
            outside = outside | _gather(self.abs_hand[r][0], rel_a) | _gather(self.abs_hand[r][1], rel_b)
        dealt_clubs = _dealt_mask(self.deal, level) & CLUBS_MASK
        return _popcount(dealt_clubs & ~outside)


# --------------------------------------------------------------------------- forward pass

def _capture_candidates(cards: Sequence[int], union_pool: int) -> list[list[int]]:
    """Per hand slot, the captured-set masks its card could take from some pool whose cards
    are within ``union_pool``: numeric cards the sets completing a sum-11 combination, Queens
    and Kings one card of their rank; none for a Jack (its capture depends on the whole pool)."""
    out: list[list[int]] = []
    for c in cards:
        if is_numeric(c):
            out.append([m for m in _capture_masks_by_card()[c] if m & ~union_pool == 0])
        elif is_jack(c):
            out.append([])
        else:
            same = QUEENS if is_queen(c) else KINGS
            out.append([1 << q for q in same if q != c and (union_pool >> q) & 1])
    return out


def _expand_level(level: int, keys: torch.Tensor, tables: _DealTables, guard: _MemoryGuard
                  ) -> tuple[_Level, torch.Tensor]:
    """All legal plays of all states ``keys`` of ``level`` (< 48) and the unique child keys.

    Captures depend on the pool only, so they are found once per distinct pool: a
    [distinct pools x candidate sets] subset test (the paper's matmul of the pool against the
    sum-11 template, here as bit masks), then spread to the states by index arithmetic.
    Every edge points into a small table of "plays" (each candidate capture, each card laid,
    each Jack capture) whose captured set, points and clubs are precomputed, so the per-edge
    work is a handful of gathers and bit operations. Returns the level with its edges
    (parents ascending, then card, then captured set) and the sorted unique keys of level+1.
    """
    device = keys.device
    r, ply = divmod(level, PLIES_PER_ROUND)
    mover = ply % 2
    cards = tables.round_cards[r][mover]
    n = keys.numel()
    pool = keys >> POOL_SHIFT  # non-decreasing: keys are sorted and the pool is on top
    rel_a, rel_b = tables.hands_rel(keys, level)
    rel_mover = rel_a if mover == 0 else rel_b

    # --- captures per distinct pool: fits[u, k] = candidate set k lies in pool u
    unique_pools, pool_id = torch.unique_consecutive(pool, return_inverse=True)
    num_pools = unique_pools.numel()
    slot_cands = _capture_candidates(cards, _or_reduce(unique_pools))
    cand_list = [m for cs in slot_cands for m in cs]
    num_cands = len(cand_list)
    cand = torch.tensor(cand_list, dtype=torch.int64, device=device)
    rows_per_chunk = max(1, _CHUNK_CELLS // max(1, num_cands))
    guard.check(level, num_pools * num_cands + min(num_pools, rows_per_chunk) * num_cands * 8
                + n * 8 * 16, f"capture test of {num_pools:,} pools x {num_cands} sets")
    fits = torch.empty((num_pools, num_cands), dtype=torch.bool, device=device)
    for start in range(0, num_pools, rows_per_chunk):
        stop = min(num_pools, start + rows_per_chunk)
        fits[start:stop] = (unique_pools[start:stop, None] & cand[None, :]) == cand[None, :]
    bounds = [0]
    for cs in slot_cands:
        bounds.append(bounds[-1] + len(cs))
    pool_counts = torch.stack(  # [U, 4]: captures of each slot's card in each pool
        [fits[:, bounds[j]:bounds[j + 1]].sum(dim=1) for j in range(4)], dim=1)
    fit_col = fits.nonzero(as_tuple=True)[1]  # pool-major, then slot, then candidate
    del fits
    flat = pool_counts.reshape(-1)
    pool_first = (torch.cumsum(flat, 0) - flat).reshape(num_pools, 4)
    del flat

    # --- the table of plays: candidates 0..K-1, then "lay slot j" K+j, "Jack of slot j takes"
    # K+4+j. Per play: captured set (Jacks: filled in per edge), lay bit, points, clubs.
    play_card = [cards[j] for j in range(4) for _ in slot_cands[j]] + list(cards) + list(cards)
    play_set = cand_list + [0] * 8
    play_is_capture = [True] * num_cands + [False] * 4 + [True] * 4
    play_lay_bit = [0] * num_cands + [1 << c for c in cards] + [0] * 4
    taken_static = [(m | (1 << c)) if cap else 0
                    for m, c, cap in zip(play_set, play_card, play_is_capture)]
    as_long = dict(dtype=torch.int64, device=device)
    t_set = torch.tensor(play_set, **as_long)
    t_is_capture = torch.tensor(play_is_capture, dtype=torch.bool, device=device)
    t_lay_bit = torch.tensor(play_lay_bit, **as_long)
    t_points = torch.tensor([_mask_points(m) for m in taken_static], **as_long)
    t_clubs = torch.tensor([_py_popcount(m & CLUBS_MASK) for m in taken_static], **as_long)
    t_sur = torch.tensor([cap and not is_jack(c) for c, cap in zip(play_card, play_is_capture)],
                         dtype=torch.bool, device=device)
    t_card = torch.tensor(play_card, dtype=torch.int8, device=device)
    jack_slots = [j for j, c in enumerate(cards) if is_jack(c)]

    # --- groups g = 4*state + slot: number of plays and where they are in the table
    in_hand = ((rel_mover.unsqueeze(1) >> torch.arange(4, device=device)) & 1).bool()
    counts = _gather(pool_counts, pool_id)  # [N, 4]
    first = _gather(pool_first, pool_id)  # [N, 4]
    slot_idx = torch.arange(4, device=device)
    base_play = (num_cands + slot_idx).expand(n, 4).clone()  # lay
    is_fixed = counts > 0
    for j in jack_slots:
        is_fixed[:, j] = False
        takes = (pool & NUMERIC_OR_JACK_MASK) != 0
        base_play[:, j] = torch.where(takes, num_cands + 4 + j, num_cands + j)
    plays = torch.where(in_hand, torch.where(is_fixed, counts, 1), 0).reshape(-1)
    num_edges = int(plays.sum())
    guard.check(level, num_edges * _TRANSIENT_BYTES_PER_EDGE + n * 8 * 16,
                f"{num_edges:,} plays from {n:,} states")
    # first fixed play of a group (index into fit_col) or its lay / Jack play, negative-coded
    group_code = torch.where(is_fixed, first, -1 - base_play).reshape(-1)
    del counts, first, base_play, is_fixed, in_hand
    group = torch.repeat_interleave(torch.arange(n * 4, device=device), plays)
    group_offset = torch.cumsum(plays, 0) - plays
    code = _gather(group_code, group)
    within = torch.arange(num_edges, device=device) - _gather(group_offset, group)
    del group_offset, plays, group_code
    if fit_col.numel():
        play = torch.where(code >= 0, _gather(fit_col, (code + within).clamp(min=0)), -1 - code)
    else:
        play = -1 - code
    del code, within
    parent = group >> 2
    slot_t = group & 3
    del group

    parent_pool = _gather(pool, parent)
    captured = _gather(t_set, play)
    points = _gather(t_points, play)
    clubs_taken = _gather(t_clubs, play)
    if jack_slots:
        jack_play = play >= num_cands + 4
        jack_take = parent_pool & NUMERIC_OR_JACK_MASK
        captured = torch.where(jack_play, jack_take, captured)
        points = torch.where(jack_play, points + _points(jack_take), points)
        clubs_taken = torch.where(jack_play, clubs_taken + _popcount(jack_take & CLUBS_MASK),
                                  clubs_taken)
        del jack_play, jack_take
    is_capture = _gather(t_is_capture, play)
    child_pool = (parent_pool & ~captured) | _gather(t_lay_bit, play)
    del parent_pool
    if r < rules.NUM_ROUNDS - 1:  # Sur: a capture (not by a Jack) that empties the pool
        points += rules.SUR_POINTS * (_gather(t_sur, play) & (child_pool == 0))

    # Clubs: the mover's count after the play; reaching 7 pays the bonus and ends tracking.
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    done = clubs_field == CLUBS_DONE
    if mover == 0:
        mover_before = clubs_field
    else:
        mover_before = tables.captured_clubs(keys, level) - clubs_field
    mover_before = torch.where(done, -100, mover_before)  # never reaches 7 again
    mover_clubs = _gather(mover_before, parent) + clubs_taken
    del clubs_taken
    reached = mover_clubs >= rules.CLUBS_FOR_BONUS
    points += rules.CLUBS_BONUS * reached
    if mover == 0:
        child_clubs = torch.where(reached | (mover_clubs < 0), CLUBS_DONE, mover_clubs)
    else:
        child_clubs = torch.where(reached, CLUBS_DONE, _gather(clubs_field, parent))
    del reached, mover_clubs

    # Child keys: the mover's hand loses the played card; the rest of the key is kept,
    # except the last capturer, which becomes the mover after a capture.
    mover_shift = ALEX_HAND_SHIFT if mover == 0 else BOB_HAND_SHIFT
    other_shift = BOB_HAND_SHIFT if mover == 0 else ALEX_HAND_SHIFT
    kept = _gather(keys & ((7 << other_shift) | (1 << LAST_SHIFT)), parent)
    child_rank = _gather(tables.rank_of, _gather(rel_mover, parent) & ~(1 << slot_t))
    del slot_t
    last_bits = torch.where(is_capture, mover << LAST_SHIFT, kept & (1 << LAST_SHIFT))
    child_keys = ((child_pool << POOL_SHIFT) | (child_rank << mover_shift) | (kept & (7 << other_shift))
                  | (child_clubs << CLUBS_SHIFT) | last_bits)
    del child_pool, child_rank, child_clubs, kept, last_bits, is_capture
    next_keys, child_index = torch.unique(child_keys, sorted=True, return_inverse=True)
    del child_keys
    sign = 1 if mover == 0 else -1
    out = _Level(
        keys=keys,
        edge_parent=parent.to(torch.int32),
        edge_child=child_index.to(torch.int32),
        edge_reward=(sign * points).to(torch.int32),
        edge_card=_gather(t_card, play),
        edge_captured=captured,
    )
    return out, next_keys


def _terminal_rewards(keys: torch.Tensor, tables: _DealTables) -> torch.Tensor:
    """End-of-game cleanup of level-48 states: the pool goes to the last capturer (if anyone
    captured), with its points and the clubs bonus if it brings them to 7. int32 [N]."""
    pool = keys >> POOL_SHIFT
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    last = (keys >> LAST_SHIFT) & 1
    anyone_captured = pool != ALL_CARDS_MASK
    pool_clubs = _popcount(pool & CLUBS_MASK)
    alex_clubs = clubs_field
    bob_clubs = tables.captured_clubs(keys, NUM_LEVELS) - clubs_field
    taker_clubs = torch.where(last == 0, alex_clubs, bob_clubs) + pool_clubs
    bonus = (clubs_field != CLUBS_DONE) & (taker_clubs >= rules.CLUBS_FOR_BONUS)
    points = _points(pool) + rules.CLUBS_BONUS * bonus.to(torch.int64)
    sign = 1 - 2 * last
    return (anyone_captured.to(torch.int64) * sign * points).to(torch.int32)


@dataclass
class _LevelGraph:
    """The merged state graph from a start position: ``levels[i]`` is play ``start + i``."""

    start: rules.GameState
    start_level: int
    levels: list[_Level]


def _build_levels(start: rules.GameState, device: torch.device, max_memory: int | None,
                  progress: Any = None) -> tuple[_LevelGraph, _MemoryGuard]:
    """Forward pass: the unique states and edges of every level from ``start`` to play 48."""
    if start.is_terminal:
        raise ValueError("the game is already over")
    limit = available_memory_bytes() if max_memory is None else int(max_memory)
    if limit <= 0:
        raise MemoryLimitError(f"the memory limit must be positive, got {limit} bytes")
    guard = _MemoryGuard(limit)
    tables = _DealTables(tuple(start.deal), device)
    keys = torch.tensor([state_key(start)], dtype=torch.int64, device=device)
    levels: list[_Level] = []
    for level in range(start.play_index, NUM_LEVELS):
        expanded, keys = _expand_level(level, keys, tables, guard)
        levels.append(expanded)
        guard.stored += expanded.stored_bytes()
        if progress is not None:
            progress(level)
    guard.check(NUM_LEVELS - 1, keys.numel() * (8 + 4 + 4) * 4, "end of the game")
    last = _Level(keys=keys, terminal_reward=_terminal_rewards(keys, tables))
    levels.append(last)
    guard.stored += last.stored_bytes()
    return _LevelGraph(start=start, start_level=start.play_index, levels=levels), guard


# --------------------------------------------------------------------------- backward pass

def _backward(graph: _LevelGraph, guard: _MemoryGuard) -> None:
    """Fill ``values`` and ``q_values`` of every level: max at Alex's plays, min at Bob's."""
    levels = graph.levels
    num_edges = sum(lv.edge_parent.numel() for lv in levels if lv.edge_parent is not None)
    num_nodes = sum(lv.keys.numel() for lv in levels)
    largest = max((lv.edge_parent.numel() for lv in levels if lv.edge_parent is not None),
                  default=0)
    guard.check(graph.start_level, num_edges * 4 + num_nodes * 4
                + largest * _BACKWARD_BYTES_PER_EDGE, "values of all states and plays")
    levels[-1].values = levels[-1].terminal_reward
    for i in range(len(levels) - 2, -1, -1):
        lv = levels[i]
        assert lv.edge_child is not None and lv.edge_reward is not None
        assert lv.edge_parent is not None
        next_values = levels[i + 1].values
        assert next_values is not None
        q = lv.edge_reward + _gather(next_values, lv.edge_child)
        lv.q_values = q
        alex_moves = (graph.start_level + i) % 2 == 0
        values = torch.empty(lv.keys.numel(), dtype=q.dtype, device=q.device)
        values.scatter_reduce_(0, lv.edge_parent.long(), q, reduce="amax" if alex_moves else "amin",
                               include_self=False)
        lv.values = values


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
        seconds: wall-clock time of the solve (forward + backward + principal line), s.
        peak_rss_mb: peak resident memory of this process after the solve, MiB.
        principal_line: game record ``{"deal": [...], "plays": [{"card", "captured"}...]}`` of
            an optimal game (plays before ``start``, from its history, then optimal plays; at
            each state the first optimal play in the order of :func:`rules.legal_actions`).
        principal_rows: one dict per optimal play from ``start``: ``play`` (1..48),
            ``player``, ``card``, ``captured``, ``points`` (the mover's points for the play),
            ``alex``, ``bob`` (running scores), plus a final ``cleanup`` row when the last
            pool goes to someone.
        device: torch device of the stored tensors.
    """

    deal: tuple[int, ...]
    start: rules.GameState
    value: int
    states_per_level: list[int]
    states_per_round: list[int]
    edges_per_level: list[int]
    seconds: float
    peak_rss_mb: float
    principal_line: dict[str, Any]
    principal_rows: list[dict[str, Any]]
    device: str
    _graph: _LevelGraph = field(repr=False, default=None)  # type: ignore[assignment]

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
        key = torch.tensor([packed], dtype=torch.int64, device=lv.keys.device)
        pos = int(torch.searchsorted(lv.keys, key)[0])
        if pos >= lv.keys.numel() or int(lv.keys[pos]) != int(key[0]):
            raise StateNotSolvedError("the position cannot be reached from the solved start")
        return lv, pos

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
        assert lv.edge_parent is not None and lv.q_values is not None
        assert lv.edge_card is not None and lv.edge_captured is not None
        target = torch.tensor([pos], dtype=torch.int32, device=lv.edge_parent.device)
        lo = int(torch.searchsorted(lv.edge_parent, target)[0])
        hi = int(torch.searchsorted(lv.edge_parent, target, right=True)[0])
        base = rules.utility(state)
        out = []
        for e in range(lo, hi):
            action = rules.Action(int(lv.edge_card[e]), tuple(_mask_cards(int(lv.edge_captured[e]))))
            out.append((action, base + int(lv.q_values[e])))
        out.sort(key=lambda av: (av[0].card, av[0].captured))
        return out

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


def _principal_line(graph: _LevelGraph) -> tuple[list[rules.Action], int]:
    """Optimal plays from the start (first optimal edge at each node) and the root value."""
    actions: list[rules.Action] = []
    node = 0
    for i, lv in enumerate(graph.levels[:-1]):
        assert lv.edge_parent is not None and lv.q_values is not None
        assert lv.edge_card is not None and lv.edge_captured is not None
        assert lv.edge_child is not None
        target = torch.tensor([node], dtype=torch.int32, device=lv.edge_parent.device)
        lo = int(torch.searchsorted(lv.edge_parent, target)[0])
        hi = int(torch.searchsorted(lv.edge_parent, target, right=True)[0])
        q = lv.q_values[lo:hi]
        alex_moves = (graph.start_level + i) % 2 == 0
        best = int(torch.argmax(q)) if alex_moves else int(torch.argmin(q))
        e = lo + best
        actions.append(rules.Action(int(lv.edge_card[e]),
                                    tuple(_mask_cards(int(lv.edge_captured[e])))))
        node = int(lv.edge_child[e])
    root_values = graph.levels[0].values
    assert root_values is not None
    return actions, int(root_values[0])


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
        device: torch device for all tensors.
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
    record_prefix = [{"card": a.card, "captured": list(a.captured)} for a in start.history]
    if start.is_terminal:
        value = rules.utility(start)
        return ExactSolution(deal=deal, start=start, value=value, states_per_level=[1],
                             states_per_round=[0] * rules.NUM_ROUNDS, edges_per_level=[],
                             seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb(),
                             principal_line={"deal": list(deal), "plays": record_prefix},
                             principal_rows=[], device=str(dev),
                             _graph=_LevelGraph(start, start.play_index, []))
    graph, guard = _build_levels(start, dev, max_memory, progress)
    _backward(graph, guard)
    actions, root_value = _principal_line(graph)
    final, rows = _replay_rows(start, actions)
    value = rules.utility(start) + root_value
    if rules.utility(final) != value:  # pragma: no cover - a solver bug, never a user error
        raise AssertionError(f"principal line scores {rules.utility(final)}, value is {value}")
    states_per_level = [int(lv.keys.numel()) for lv in graph.levels]
    states_per_round = [0] * rules.NUM_ROUNDS
    for i, count in enumerate(states_per_level[:-1]):
        states_per_round[(start.play_index + i) // PLIES_PER_ROUND] += count
    edges = [int(lv.edge_parent.numel()) for lv in graph.levels[:-1]
             if lv.edge_parent is not None]
    record: dict[str, Any] = {"deal": list(deal), "plays": record_prefix + [
        {"card": a.card, "captured": list(a.captured)} for a in actions]}
    if len(record_prefix) != start.play_index:
        record["start_play"] = start.play_index  # the history before the start is unknown
    return ExactSolution(deal=deal, start=start, value=value, states_per_level=states_per_level,
                         states_per_round=states_per_round, edges_per_level=edges,
                         seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb(),
                         principal_line=record, principal_rows=rows, device=str(dev),
                         _graph=graph)


# --------------------------------------------------------------------------- shared graph

def _node_state(keys: torch.Tensor, level: int, tables: _DealTables, round_end: bool
                ) -> dict[str, torch.Tensor]:
    """Decoded per-node state of ``keys`` at global ``level`` (hands empty if ``round_end``)."""
    pool = keys >> POOL_SHIFT
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    done = clubs_field == CLUBS_DONE
    captured_clubs = tables.captured_clubs(keys, level)
    if round_end or level >= NUM_LEVELS:
        hand_a = torch.zeros_like(keys)
        hand_b = torch.zeros_like(keys)
    else:
        r = level // PLIES_PER_ROUND
        rel_a, rel_b = tables.hands_rel(keys, level)
        hand_a = _gather(tables.abs_hand[r][0], rel_a)
        hand_b = _gather(tables.abs_hand[r][1], rel_b)
    dealt = _dealt_mask(tables.deal, level) if level < NUM_LEVELS else ALL_CARDS_MASK
    if round_end and level < NUM_LEVELS:  # before the next round's hands are dealt
        dealt = _dealt_mask(tables.deal, level - 1)
    anyone = (dealt & ~pool & ~hand_a & ~hand_b) != 0
    last = torch.where(anyone, (keys >> LAST_SHIFT) & 1, torch.full_like(keys, -1))
    minus_one = torch.full_like(keys, -1)
    return {
        "key": keys,
        "pool": pool,
        "alex_hand": hand_a,
        "bob_hand": hand_b,
        "alex_clubs": torch.where(done, minus_one, clubs_field),
        "bob_clubs": torch.where(done, minus_one, captured_clubs - clubs_field),
        "clubs_done": done.to(torch.int64),
        "last_capturer": last,
    }


def build_state_graph(deal: Sequence[int], device: str | torch.device = "cpu",
                      max_memory: int | None = None) -> list[RoundGraph]:
    """The merged state graph of a whole deal in the shared format (dag mode of CFR).

    One :class:`RoundGraph` per round; level 8 of round ``r`` is level 0 of round ``r+1``
    (``next_root`` is the identity); round 5's ``terminal_reward`` is the cleanup. Each level's
    ``node_state`` holds int64 tensors [N]: ``key`` (packed state), ``pool``, ``alex_hand``,
    ``bob_hand`` (52-bit card masks), ``alex_clubs``, ``bob_clubs`` (club counts, -1 once
    somebody has 7), ``clubs_done`` (1 once somebody has 7), ``last_capturer`` (0 Alex,
    1 Bob, -1 nobody yet). Rewards are float64 points, Alex minus Bob.
    """
    dev = torch.device(device)
    start = rules.initial_state(rules.validate_deal(deal))
    graph, guard = _build_levels(start, dev, max_memory)
    num_edges = sum(lv.edge_parent.numel() for lv in graph.levels if lv.edge_parent is not None)
    num_nodes = sum(lv.keys.numel() for lv in graph.levels)
    # int64 parent/child/card and float64 reward per edge, 8 int64 node-state tensors per node
    guard.check(0, num_edges * 32 + num_nodes * 8 * 8, "the graph in the shared format")
    tables = _DealTables(tuple(start.deal), dev)
    rounds: list[RoundGraph] = []
    for r in range(rules.NUM_ROUNDS):
        lvs = graph.levels[8 * r:8 * r + 9]
        end_keys = lvs[8].keys
        num_end = end_keys.numel()
        last_round = r == rules.NUM_ROUNDS - 1
        if last_round:
            assert lvs[8].terminal_reward is not None
            terminal = lvs[8].terminal_reward.to(torch.float64)
            next_root = torch.full((num_end,), -1, dtype=torch.int64, device=dev)
        else:
            terminal = torch.zeros(num_end, dtype=torch.float64, device=dev)
            next_root = torch.arange(num_end, dtype=torch.int64, device=dev)
        node_state = [_node_state(lvs[i].keys, 8 * r + i, tables, round_end=(i == 8))
                      for i in range(9)]
        rounds.append(RoundGraph(
            round_index=r,
            num_nodes=[int(lv.keys.numel()) for lv in lvs],
            edge_parent=[lv.edge_parent.long() for lv in lvs[:8]],  # type: ignore[union-attr]
            edge_child=[lv.edge_child.long() for lv in lvs[:8]],  # type: ignore[union-attr]
            edge_reward=[lv.edge_reward.to(torch.float64) for lv in lvs[:8]],  # type: ignore[union-attr]
            edge_card=[lv.edge_card.long() for lv in lvs[:8]],  # type: ignore[union-attr]
            edge_captured=[lv.edge_captured for lv in lvs[:8]],  # type: ignore[misc]
            next_root=next_root,
            terminal_reward=terminal,
            node_state=node_state,
        ))
    return rounds

