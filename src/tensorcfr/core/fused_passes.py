"""One player's CFR update as a few compiled loops over one flat, level-ordered tree (numba).

The level passes of :mod:`tensorcfr.core.numba_passes` (and the torch passes they copy)
call a compiled loop per level and per step (values, counterfactual reach, regrets,
edges, reach) over per-level views with int64 indices, scatter the terminal utilities
into the values at every pass and copy every reach row down every level.  Here the whole
tree is one set of flat arrays in level order (node ``i`` of level ``d`` at
``level_start[d] + i``), built once, and a player's update is three calls:

1. :func:`_values_and_regrets`: bottom-up, level by level, the player's values (a node's
   value summed in a register over its children, which follow each other, instead of a
   read-modify-write per edge) and, right after each level while it is in cache, the
   player's regrets and own reach on its edges into that level;
2. :func:`_regret_matching`: infoset by infoset, the sums in registers (the solver's torch
   step floors / discounts the regrets and updates the average before it: two operations
   on the player's slots);
3. :func:`_forward`: top-down, the player's reach row under its new strategy (no edge
   probability is stored: the values step reads a decision edge's from the strategy).  A
   level where the player does not act keeps no copy of its parents' reach (``stored``):
   readers look one level up.

Arrays (``N`` nodes, ``P`` players; int32 indices): ``parent`` [N] the parent's global
index, ``slot`` [N] the internal slot of the edge into a decision node's child (-1 below
chance), ``actor`` [N] int8 the parent's kind (read on levels that mix actors),
``chance_prob`` (the chance edges' probabilities, up to the last level that has some;
decision edges read the strategy), ``values`` [P, N] (the terminals' utilities written
once: a terminal is never a parent, so they are never overwritten), ``reach`` [P, N less
the last level] (read at parents only), the chance reach (one number per level where it
is constant, else per node), ``infoset_start`` per player [I_p + 1].

**Exactly the torch passes' arithmetic**: a node's value is ``0 + v(c_0) w_0 + v(c_1) w_1
+ ...`` in action order; each regret is ``(v(ha) - v(h)) x cf(h)`` with ``cf`` multiplied
in OpenSpiel's order (the players before the updating one, times those after it and
chance; with two players that product is ``r_other x chance`` exactly, as ``1 x r = r``);
regrets and own reach are added into each slot in node order; regret matching is
:func:`tensorcfr.core.regret.regret_matching_into`'s arithmetic.  The one order that
changes is that of the levels in the regret step (bottom-up here, top-down in the torch
passes): it only matters for a slot whose histories lie on several levels, and
:func:`build_layout` returns None for such a tree (the solver then keeps the level
passes).  So regrets, strategies and the average are *bitwise* those of the torch passes
(tests/test_core_numba.py).

Measured and dropped on the way (docs/engine_profile.md): one depth-first walk per player
over the tree in preorder (reach down and values up on a stack, nothing stored per node)
was slower than even the level passes (9.0 against 8.1 ms an iteration on liars_dice): a
mispredicted branch or two per node on whether it is a leaf and how many ancestors it
completes.

Nothing here knows a game.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorcfr.core.jit import AVAILABLE, njit as _njit
from tensorcfr.core.tree import KIND_CHANCE

__all__ = ["AVAILABLE", "FusedLayout", "FusedPasses", "SolverState", "build_layout"]

MODE_NONE, MODE_ALL, MODE_MIXED = 0, 1, 2


@_njit
def _reach_at(reach: np.ndarray, q: int, h: int, parent: np.ndarray,
              stored: bool) -> float:  # pragma: no cover - compiled
    """Row ``q``'s reach at node ``h``: its own entry on a stored level, else its parent's
    (a level where ``q`` does not act keeps no copy of its parents' reach)."""
    return reach[q, h] if stored else reach[q, parent[h]]


@_njit
def _sum_children(parent: np.ndarray, value: np.ndarray, weight: np.ndarray,
                  slot: np.ndarray, strategy: np.ndarray, weight_mode: int, e0: int, e1: int,
                  zero: float) -> None:  # pragma: no cover - compiled
    """``value[h] = 0 + value[c_0] w_0 + value[c_1] w_1 + ...`` for the parents of edges
    ``e0`` to ``e1`` (children of a parent follow each other: the sum stays in a register
    and is stored at every edge).  The weights: ``weight[e]`` (``weight_mode`` 0),
    ``strategy[slot[e]]`` (1), or either by the sign of ``slot[e]`` (2)."""
    current = parent[e0]
    total = zero
    if weight_mode == 0:
        for e in range(e0, e1):
            h = parent[e]
            total = (total if h == current else zero) + value[e] * weight[e]
            current = h
            value[h] = total
    elif weight_mode == 1:
        for e in range(e0, e1):
            h = parent[e]
            total = (total if h == current else zero) + value[e] * strategy[slot[e]]
            current = h
            value[h] = total
    else:
        for e in range(e0, e1):
            h = parent[e]
            s = slot[e]
            w = strategy[s] if s >= 0 else weight[e]
            total = (total if h == current else zero) + value[e] * w
            current = h
            value[h] = total


@_njit
def _values_and_regrets(parent: np.ndarray, slot: np.ndarray, actor: np.ndarray,
                        chance_prob: np.ndarray, strategy: np.ndarray,
                        weight_mode: np.ndarray, values: np.ndarray, reach: np.ndarray,
                        stored: np.ndarray, chance_level: np.ndarray,
                        chance_reach: np.ndarray, has_chance: bool,
                        level_start: np.ndarray, mode: np.ndarray, lowest: int,
                        player: int, slot_start: int, regrets: np.ndarray,
                        own_sums: np.ndarray, instant: np.ndarray, has_instant: bool,
                        zero: float, one: float) -> None:  # pragma: no cover - compiled
    """``player``'s values (row ``values[player]``) bottom-up from level ``lowest``, and on
    each level where it acts (``mode[d]``: 1 every edge, 2 the edges with ``actor ==
    player``) its regrets into ``regrets[slot - slot_start]`` (and ``instant``) and its own
    reach into ``own_sums``, both zeroed first.  ``stored[q, d]``: does reach row ``q``
    hold level ``d`` itself (else read the parent's); the chance reach of level ``d`` is
    ``chance_level[d]`` where that is not NaN (the same at every node), else
    ``chance_reach``."""
    own_sums[:] = zero
    if has_instant:
        instant[:] = zero
    value = values[player]
    num_players = reach.shape[0]
    other = 1 - player
    depth = level_start.shape[0] - 1
    for d in range(depth - 1, lowest - 1, -1):
        e0 = level_start[d]
        e1 = level_start[d + 1]
        if e1 == e0:
            continue
        _sum_children(parent, value, chance_prob, slot, strategy, weight_mode[d], e0, e1,
                      zero)
        level_mode = mode[d]
        if level_mode == 0:
            continue
        own_stored = stored[player, d - 1]
        other_stored = stored[other, d - 1] if num_players == 2 else True
        level_chance = chance_level[d - 1] if has_chance else one
        chance_constant = not has_chance or level_chance == level_chance  # (NaN: per node)
        for e in range(e0, e1):
            if level_mode == 2 and actor[e] != player:
                continue
            h = parent[e]
            if has_chance:
                chance = level_chance if chance_constant else chance_reach[h]
            else:
                chance = one
            if num_players == 2:
                # (1 x r_1) x chance or (1 x r_0) x (1 x chance): r_other x chance exactly
                counterfactual = _reach_at(reach, other, h, parent, other_stored)
                if has_chance:
                    counterfactual = counterfactual * chance
            else:
                before = one
                for q in range(player):
                    before = before * _reach_at(reach, q, h, parent, stored[q, d - 1])
                after = one
                for q in range(player + 1, num_players):
                    after = after * _reach_at(reach, q, h, parent, stored[q, d - 1])
                if has_chance:
                    after = after * chance
                counterfactual = before * after
            regret = (value[e] - value[h]) * counterfactual
            s = slot[e] - slot_start
            if has_instant:
                instant[s] += regret
            regrets[s] += regret
            own_sums[s] += _reach_at(reach, player, h, parent, own_stored)


@_njit(inline="always")
def _match_infoset(regrets: np.ndarray, a0: int, a1: int, uniform: np.ndarray,
                   tolerance: float, zero: float,
                   strategy: np.ndarray) -> None:  # pragma: no cover - compiled
    """Regret matching of one infoset (slots ``a0`` to ``a1``, the sums in registers):
    a regret counts above ``tolerance x`` the infoset's sum of ``|R|``, positive parts
    normalised, ``uniform`` where none (:func:`tensorcfr.core.regret.regret_matching_into`'s
    arithmetic)."""
    abs_total = zero
    for s in range(a0, a1):
        abs_total = abs_total + abs(regrets[s])
    threshold = abs_total * tolerance
    total = zero
    for s in range(a0, a1):
        value = regrets[s]
        positive = value if value > threshold else zero
        strategy[s] = positive
        total = total + positive
    if total > zero:
        for s in range(a0, a1):
            strategy[s] = strategy[s] / total
    else:
        for s in range(a0, a1):
            strategy[s] = uniform[s]


@_njit
def _regret_matching(regrets: np.ndarray, infoset_start: np.ndarray, uniform: np.ndarray,
                     tolerance: float, zero: float,
                     strategy: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`_match_infoset` for every infoset (slots ``infoset_start[i]`` to
    ``infoset_start[i + 1]``)."""
    for i in range(infoset_start.shape[0] - 1):
        _match_infoset(regrets, infoset_start[i], infoset_start[i + 1], uniform, tolerance,
                       zero, strategy)


@_njit
def _forward(parent: np.ndarray, slot: np.ndarray, actor: np.ndarray, reach: np.ndarray,
             stored: np.ndarray, level_start: np.ndarray, mode: np.ndarray, highest: int,
             player: int, strategy: np.ndarray) -> None:  # pragma: no cover - compiled
    """Top-down from level ``highest``, the player's reach row: ``reach(parent) x
    strategy[slot]`` below its decisions (``strategy``: the solver's whole strategy,
    internal slots), the parent's reach elsewhere on a stored level (``stored[player,
    d]``), nothing on a level that is not stored."""
    row = reach[player]
    flags = stored[player]
    depth = level_start.shape[0] - 1
    for d in range(highest, depth - 1):  # (the last level is nobody's parent)
        e0 = level_start[d]
        e1 = level_start[d + 1]
        level_mode = mode[d]
        if level_mode == 0 and not flags[d]:
            continue
        above = flags[d - 1]
        if level_mode == 1 and above:
            for e in range(e0, e1):
                row[e] = row[parent[e]] * strategy[slot[e]]
        elif level_mode == 1:
            for e in range(e0, e1):
                row[e] = row[parent[parent[e]]] * strategy[slot[e]]
        else:
            for e in range(e0, e1):
                h = parent[e]
                source = row[h] if above else row[parent[h]]
                if level_mode == 2 and actor[e] == player:
                    row[e] = source * strategy[slot[e]]
                else:
                    row[e] = source


@dataclass
class FusedLayout:
    """The flat tree of :mod:`tensorcfr.core.fused_passes` (see the module docstring)."""

    level_start: np.ndarray  # int64 [D + 1]
    parent: np.ndarray  # int32 [N]
    slot: np.ndarray  # int32 [N]
    actor: np.ndarray  # int8 [N], or [0] when no level mixes actors
    chance_prob: np.ndarray  # [up to the last level with a chance edge]
    weight_mode: np.ndarray  # int8 [D]: edges into d weighted by chance_prob, strategy, both
    values: np.ndarray  # [P, N]
    reach: np.ndarray  # [P, N - the last level's nodes]
    chance_level: np.ndarray  # [D]: a level's chance reach where constant, else NaN
    chance_reach: np.ndarray  # [N], or [0] where every level's chance reach is constant
    mode: np.ndarray  # int8 [P, D]
    stored: np.ndarray  # bool [P, D]: reach row p holds level d itself
    first_level: list[int]
    infoset_start: list[np.ndarray]  # per player, int32 [I_p + 1]: its infosets' slot runs

    @property
    def nbytes(self) -> int:
        """Bytes held by the layout's arrays."""
        return sum(a.nbytes for a in (self.level_start, self.parent, self.slot, self.actor,
                                      self.chance_prob, self.weight_mode, self.values,
                                      self.reach, self.chance_level, self.chance_reach,
                                      self.mode, self.stored, *self.infoset_start))


def build_layout(flat: Any, kinds: list[np.ndarray]) -> FusedLayout | None:
    """The layout of a solver's flat tree (``flat``: its ``_FlatTree``; ``kinds``: each
    level's node kinds), or None when it does not apply: more than 2**31 - 1 nodes or
    slots, or a slot whose histories lie on several levels (the regret step's level order
    would change the order of its additions)."""
    starts = flat.level_start
    depth = len(starts) - 1
    n_nodes = flat.num_nodes
    n_players = flat.num_players
    if n_nodes >= 2**31 - 1 or flat.num_slots >= 2**31 - 1 or depth == 0:
        return None
    # Each player's slots infoset by infoset (the solver numbers them so): offsets.
    infoset_start = []
    for local, (i0, i1) in zip(flat.local_action_infoset, flat.infoset_range):
        local = local.numpy()
        if local.size and np.any(local[1:] < local[:-1]):
            return None
        start = np.zeros(i1 - i0 + 1, dtype=np.int64)
        np.cumsum(np.bincount(local, minlength=i1 - i0), out=start[1:])
        infoset_start.append(start.astype(np.int32))
    codes = {"none": MODE_NONE, "all": MODE_ALL, "mixed": MODE_MIXED}
    mode = np.array([[codes[flat.level_share[p][d]] for d in range(depth)]
                     for p in range(n_players)], dtype=np.int8).reshape(n_players, depth)
    dtype = flat.edge_prob.numpy().dtype
    level_start = np.asarray(starts, dtype=np.int64)
    parent = np.zeros(n_nodes, dtype=np.int32)
    actor = np.zeros(n_nodes if np.any(mode == MODE_MIXED) else 0, dtype=np.int8)
    weight_mode = np.zeros(depth, dtype=np.int8)
    for d in range(1, depth):
        local = flat.parent_local[d].numpy()
        parent[starts[d]:starts[d + 1]] = local + starts[d - 1]
        above = kinds[d - 1][local]
        below_chance = int(np.count_nonzero(above == KIND_CHANCE))
        weight_mode[d] = 0 if below_chance == above.size else 1 if below_chance == 0 else 2
        if actor.size:
            actor[starts[d]:starts[d + 1]] = above
        del above
    slot = np.full(n_nodes, -1, dtype=np.int32)
    level_of_slot = np.full(flat.num_slots, -1, dtype=np.int32)
    for p in range(n_players):
        slot_start = flat.slot_range[p][0]
        for pl in flat.player_levels[p]:
            d = pl.depth
            child = (np.arange(starts[d], starts[d + 1]) if pl.child_index is None
                     else pl.child_index.numpy() + starts[d])
            slots = pl.slot.numpy() + slot_start
            seen = level_of_slot[slots]
            if np.any((seen != -1) & (seen != d)):
                return None  # an infoset on two levels
            level_of_slot[slots] = d
            slot[child] = slots
    del level_of_slot
    # Chance edges' probabilities up to the last level that has some (the top two levels
    # of liars_dice); decision edges read the strategy.
    chance_levels = [d for d in range(1, depth) if weight_mode[d] != 1]
    chance_end = starts[chance_levels[-1] + 1] if chance_levels else 0
    if chance_end > flat.edge_prob_end:
        return None  # (a level without stored edge probabilities is below one player)
    chance_prob = flat.edge_prob.numpy()[:chance_end].copy()
    values = np.zeros((n_players, n_nodes), dtype=dtype)
    for d in range(depth):
        utility = flat.utility_levels[d].numpy()
        if utility.shape[1] == 0:
            continue
        size = starts[d + 1] - starts[d]
        index = (np.arange(size) if utility.shape[1] == size
                 else flat.terminal_index[d].numpy())
        values[:, starts[d] + index] = utility
    # Reach is read at parents only: none for the last level.
    reach = np.ones((n_players, starts[depth - 1] if depth > 1 else n_nodes), dtype=dtype)
    # Chance reach: one number for a level where it is the same at every node (below
    # liars_dice's dice rolls), the nodes' own otherwise.
    chance_level = np.full(depth, np.nan, dtype=dtype)
    per_node = []
    if flat.has_chance:
        for d in range(depth):
            level = flat.chance_reach[d].numpy()
            if level.shape[0] and bool(np.all(level == level[0])):
                chance_level[d] = level[0]
            elif level.shape[0]:
                per_node.append(d)
    chance_reach = np.zeros(n_nodes if per_node else 0, dtype=dtype)
    for d in per_node:
        chance_reach[starts[d]:starts[d + 1]] = flat.chance_reach[d].numpy()
    # A level where a row's player does not act keeps no copy of its parents' reach
    # (readers look one level up), unless the level above keeps none either.
    first_level = [max(f, 1) for f in flat.first_level]
    stored = np.ones((n_players, depth), dtype=np.bool_)
    for p in range(n_players):
        for d in range(first_level[p], depth):
            stored[p, d] = mode[p, d] != MODE_NONE or not stored[p, d - 1]
    return FusedLayout(level_start, parent, slot, actor, chance_prob, weight_mode, values,
                       reach, chance_level, chance_reach, mode, stored, first_level,
                       infoset_start)


class SolverState:
    """numpy views of the slot-sized state of a ``TensorCFRSolver`` that the compiled
    passes update in place (strategy, regrets, own-reach sums, predictions, the uniform
    strategy), the dtype's constants and the players' slot runs; shared by
    :class:`FusedPasses` and :class:`tensorcfr.core.pruned_passes.PrunedPasses`."""

    def __init__(self, solver: Any, layout: FusedLayout) -> None:
        from tensorcfr.core.regret import regret_tolerance

        flat = solver._flat
        n_players = flat.num_players
        self.num_players = n_players
        dtype = layout.values.dtype
        self.dtype = dtype
        self.zero = dtype.type(0.0)
        self.one = dtype.type(1.0)
        self.tolerance = dtype.type(regret_tolerance(solver.dtype))
        self.has_chance = bool(flat.has_chance)
        self.slot_start = [a0 for a0, _ in flat.slot_range]
        self.strategy_all = solver._strategy.numpy()
        self.strategy = [t.numpy() for t in solver._strategy_views]
        self.regrets = [t.numpy() for t in solver._regret_views]
        self.own_sums = [t.numpy() for t in solver._own_reach_sums]
        empty = np.zeros(0, dtype=dtype)
        self.instant = ([t.numpy() for t in solver._prediction_views]
                        if solver.variant.predictive else [empty] * n_players)
        self.uniform = [t.numpy() for t in flat.uniform]
        self.infoset_start = layout.infoset_start

    def regret_matching(self, player: int, regrets: np.ndarray) -> None:
        """The current strategy of ``player`` from ``regrets`` (its view, or PCFR+'s sum)."""
        _regret_matching(regrets, self.infoset_start[player], self.uniform[player],
                         self.tolerance, self.zero, self.strategy[player])


class FusedPasses(SolverState):
    """An alternating-update ``TensorCFRSolver`` iteration on CPU through the three
    compiled loops above over a :class:`FusedLayout`, with the interface of
    :class:`tensorcfr.core.numba_passes.LevelPasses` (``values_and_regrets``,
    ``regret_matching``, ``refresh_player``, ``refresh_all``); the solver's own torch
    step floors / discounts the regrets and updates the average in between (two
    operations on the player's slots)."""

    def __init__(self, solver: Any, layout: FusedLayout) -> None:
        super().__init__(solver, layout)
        self.layout = layout

    def values_and_regrets(self, player: int) -> None:
        """``player``'s values, its regrets added into its cumulative regrets and its own
        reach per slot into the solver's own-reach buffer (zeroed first)."""
        regrets = self.regrets[player]
        if regrets.shape[0] == 0:
            return
        layout = self.layout
        instant = self.instant[player]
        _values_and_regrets(layout.parent, layout.slot, layout.actor, layout.chance_prob,
                            self.strategy_all, layout.weight_mode, layout.values,
                            layout.reach, layout.stored, layout.chance_level,
                            layout.chance_reach, self.has_chance, layout.level_start,
                            layout.mode[player], layout.first_level[player], player,
                            self.slot_start[player],
                            regrets, self.own_sums[player], instant, instant.shape[0] > 0,
                            self.zero, self.one)

    def refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: its reach row (the values step reads the
        edge probabilities from the strategy itself)."""
        layout = self.layout
        _forward(layout.parent, layout.slot, layout.actor, layout.reach, layout.stored,
                 layout.level_start, layout.mode[player], layout.first_level[player],
                 player, self.strategy_all)

    def refresh_all(self) -> None:
        """Every player's reach row from the current strategy (a new solver, a restored
        checkpoint)."""
        for p in range(self.num_players):
            self.refresh_player(p)
