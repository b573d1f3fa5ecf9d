"""The fused passes, skipping every history that no player reaches (numba).

OpenSpiel's CFR (C++ and Python) stops at a history where every player's reach is zero:
nothing below it can change a regret or the average.  After a few iterations of vanilla
CFR that is most of a game (tic_tac_toe: 91 % of its 550k histories from iteration 10;
liars_dice: 80 %), so OpenSpiel's iterations get 3-4x faster while the level-by-level
passes of :mod:`tensorcfr.core.fused_passes` still sweep every node.  Here the top-down
pass lists, level by level, the histories some player reaches (the *live* ones: children
of live parents, with a non-zero reach for at least one player), and the bottom-up pass
and the regrets visit only those.

Why skipping them changes nothing (``e`` a dead child of a live parent ``h``; players'
reaches only change where they act):

* **values**: the player ``q`` acting at ``h`` has ``r_q(h) > 0`` (every other player's
  reach is already zero at ``h``), so ``r_q(e) = r_q(h) x s(e) = 0`` means ``s(e) = 0``:
  ``v(e)`` enters ``v(h)`` multiplied by zero;
* **regrets** of the updating player ``i`` at ``h``: every other player's reach at ``h``
  is zero, so the counterfactual reach is zero;
* **average**: ``i``'s own reach at ``h`` is added to the slot's sum, which the average
  multiplies by ``s(e) = 0``.

So the results are those of the fused passes (bitwise in the tests: the skipped terms
are products with an exact zero; a reach that underflows to zero while the strategy is
not would differ by less than the smallest normal number).

For vanilla CFR the per-slot work shrinks as well (:meth:`PrunedPasses.update_player`):
the regrets of an infoset with no live history do not change, so neither does its
strategy, and its own-reach sums are zero, so its average does not move; the floor,
average and regret matching run on the infosets the bottom-up pass touched only, with
the solver's arithmetic (``S + own x s``, then :func:`tensorcfr.core.regret.
regret_matching_into`'s rule).  Other variants discount every regret or the average at
every iteration: they keep the solver's whole-slot steps.

Keeping the list between updates.  Liveness only grows where an action's probability goes
from zero to positive.  Where none did, the top-down pass only recomputes the updated
player's reach down the list as it stands (histories that died stay listed: their terms
are products with zero, and a full rebuild drops them once they are a quarter of the
list).  Where some did, only the parts of the tree below them are listed again: the tree
is cut at a *split level* ``L`` (the first with at least :data:`SEGMENT_LEVEL_NODES`
nodes); the levels down to ``L`` form the top list and each node of level ``L`` roots a
*segment* with its own region of the compact rows (capacity: its subtree), listed level by
level.  An action revived below ``L`` relists the segments its histories lie in (on
liars_dice 6 of its 36 dice rolls); one at or above ``L`` relists everything.  The bottom-up pass
runs segment by segment, then the top list: a slot's histories all lie on one level (the
fused layout's condition), so its additions come in the same order as level by level.

Layout (``N`` nodes in level order, ``P`` players): from the fused layout, ``slot`` [N]
int32 and the chance probabilities; ``kind`` [N] int8 (each node's kind: a player, -1
chance, -2 terminal), ``first_child`` [N + 1] int32 (node ``h``'s children are
``first_child[h]`` to ``first_child[h + 1]``) and the terminals' ``utilities`` [N, P].
The compact rows, position ``n``: the node ``live`` [n], its parent's position ``up``
[n], its edge's weight, slot, actor and chance reach, every player's ``reach`` [n, P]
(node-major) and, per player, the ``values`` [P, n] the bottom-up pass fills; the top
list's levels start at ``top_start`` [L + 2], segment ``j``'s at ``segment_start[j]``
[R + 1] (``R = D - 1 - L`` levels below ``L``).  So the bottom-up pass reads only
compact rows in order; the regrets, own sums and strategy are the solver's buffers,
indexed by slot.  Per player, ``slot_infoset`` (each slot's infoset) and a touched list
serve the sparse update.

Nothing here knows a game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorcfr.core.fused_passes import FusedLayout, SolverState, _match_infoset
from tensorcfr.core.jit import njit as _njit
from tensorcfr.core.tree import KIND_TERMINAL

__all__ = ["SEGMENT_LEVEL_NODES", "PrunedPasses"]

SEGMENT_LEVEL_NODES = 32
"""The split level is the first level with at least this many nodes (see above)."""
DEAD_SHARE = 4
"""A full rebuild drops the dead histories once they are over 1 / DEAD_SHARE of the list."""
REVIVED_CAPACITY = 4096
"""Revived actions one update lists before it gives up and rebuilds everything."""

_TERMINAL = KIND_TERMINAL


@_njit(inline="always")  # (a call per segment: no argument passing)
def _expand(k0: int, k1: int, count: int, starts: np.ndarray, n_levels: int, tree: tuple,
            strategy: np.ndarray, rows: tuple,
            zero: float) -> int:  # pragma: no cover - compiled
    """List ``n_levels`` levels below the listed parents at positions ``k0`` to ``k1``,
    appending from position ``count`` (``starts[l]``: where the ``l``-th level below
    begins, ``starts[n_levels]`` the end, returned): each child ``c`` with a non-zero
    reach for some player (``r_q(c) = r_q(h) x strategy[slot[c]]`` for the player ``q``
    acting at ``h``, ``r_q(h)`` otherwise) gets ``live = c``, ``up`` = its parent's
    position, its edge's weight (chance probability or strategy), slot, actor and chance
    reach, every player's reach, and a terminal its utilities in ``values``.  A listed
    node none of whose children is live (every product underflowed) gets the value 0 in
    every row, as OpenSpiel's recursion returns for it."""
    slot, kind, first_child, chance_prob, chance_reach, utilities = tree
    live, up, weight, live_slot, live_actor, live_chance, reach, values = rows
    num_players = reach.shape[1]
    per_node_chance = chance_reach.shape[0] > 0
    for level in range(n_levels):
        starts[level] = count
        for k in range(k0, k1):
            h = live[k]
            c0 = first_child[h]
            c1 = first_child[h + 1]
            if c0 == c1:
                continue
            q = kind[h]
            before = count
            if num_players == 2:
                r0 = reach[k, 0]
                r1 = reach[k, 1]
                # Below chance every child is live (the players' reaches do not change);
                # below a player whose opponent reaches the node, every child too.
                every = q < 0 or (r1 != zero if q == 0 else r0 != zero)
                for c in range(c0, c1):
                    a = r0
                    b = r1
                    if q < 0:
                        w = chance_prob[c]
                    else:
                        w = strategy[slot[c]]
                        if q == 0:
                            a = r0 * w
                        else:
                            b = r1 * w
                    if every or a != zero or b != zero:
                        live[count] = c
                        up[count] = k
                        weight[count] = w
                        live_slot[count] = slot[c]
                        live_actor[count] = q
                        reach[count, 0] = a
                        reach[count, 1] = b
                        if per_node_chance:
                            live_chance[count] = chance_reach[c]
                        if kind[c] == _TERMINAL:
                            values[0, count] = utilities[c, 0]
                            values[1, count] = utilities[c, 1]
                        count += 1
            else:
                for c in range(c0, c1):
                    w = chance_prob[c] if q < 0 else strategy[slot[c]]
                    alive = False
                    for p in range(num_players):
                        r = reach[k, p]
                        if p == q:
                            r = r * w
                        reach[count, p] = r
                        if r != zero:
                            alive = True
                    if alive:
                        live[count] = c
                        up[count] = k
                        weight[count] = w
                        live_slot[count] = slot[c]
                        live_actor[count] = q
                        if per_node_chance:
                            live_chance[count] = chance_reach[c]
                        if kind[c] == _TERMINAL:
                            for p in range(num_players):
                                values[p, count] = utilities[c, p]
                        count += 1
            if count == before:
                for p in range(num_players):
                    values[p, k] = zero
        k0 = starts[level]
        k1 = count
    starts[n_levels] = count
    return count


@_njit
def _rebuild(split: int, level_start: np.ndarray, top_start: np.ndarray,
             segment_offset: np.ndarray, segment_start: np.ndarray, root_position: np.ndarray,
             tree: tuple, strategy: np.ndarray, rows: tuple,
             zero: float) -> None:  # pragma: no cover - compiled
    """The whole live list from the current strategy: the top list (the root, then
    :func:`_expand` down to the split level), then every segment whose root is listed."""
    live, up, reach = rows[0], rows[1], rows[6]
    live[0] = 0
    up[0] = -1
    for p in range(reach.shape[1]):
        reach[0, p] = 1.0
    top_start[0] = 0
    _expand(0, 1, 1, top_start[1:], split, tree, strategy, rows, zero)
    root_position[:] = -1
    for k in range(top_start[split], top_start[split + 1]):
        root_position[live[k] - level_start[split]] = k
    n_levels = segment_start.shape[1] - 1
    for j in range(root_position.shape[0]):
        if root_position[j] < 0:
            segment_start[j, :] = segment_offset[j]
            continue
        k = root_position[j]
        _expand(k, k + 1, segment_offset[j], segment_start[j], n_levels, tree, strategy,
                rows, zero)


@_njit(inline="always")  # (a call per segment: no argument passing)
def _refresh_range(n0: int, n1: int, strategy: np.ndarray, rows: tuple, player: int,
                   zero: float) -> int:  # pragma: no cover - compiled
    """``player``'s reach (and its edges' weights) at listed positions ``n0`` to ``n1``
    from their parents', the same products as :func:`_expand`; returns how many of them
    nobody reaches any more."""
    up, weight, live_slot, live_actor, reach = rows[1], rows[2], rows[3], rows[4], rows[6]
    num_players = reach.shape[1]
    dead = 0
    for n in range(n0, n1):
        k = up[n]
        if live_actor[n] == player:
            w = strategy[live_slot[n]]
            weight[n] = w
            reach[n, player] = reach[k, player] * w
        else:
            reach[n, player] = reach[k, player]
        alive = False
        for p in range(num_players):
            if reach[n, p] != zero:
                alive = True
        if not alive:
            dead += 1
    return dead


@_njit
def _refresh(player: int, relist: np.ndarray, split: int, top_start: np.ndarray,
             segment_offset: np.ndarray, segment_start: np.ndarray,
             root_position: np.ndarray, segment_dead: np.ndarray, tree: tuple,
             strategy: np.ndarray, rows: tuple,
             zero: float) -> int:  # pragma: no cover - compiled
    """After ``player``'s strategy changed with no action revived at or above the split
    level: the top list's numbers, then each segment's; a segment with ``relist[j]`` (the
    shallowest level of an action revived in it, reset to -1) keeps its levels above that
    one (their numbers refreshed) and is listed again from there.  Returns how many listed
    histories nobody reaches."""
    dead = _refresh_range(1, top_start[split + 1], strategy, rows, player, zero)
    n_levels = segment_start.shape[1] - 1
    for j in range(root_position.shape[0]):
        k = root_position[j]
        if k < 0:
            relist[j] = -1
            continue
        first = relist[j] - split - 1  # (the first relative level listed again)
        if first < 0:
            segment_dead[j] = _refresh_range(segment_offset[j], segment_start[j, n_levels],
                                             strategy, rows, player, zero)
        else:
            relist[j] = -1
            segment_dead[j] = _refresh_range(segment_offset[j], segment_start[j, first],
                                             strategy, rows, player, zero)
            k0 = k if first == 0 else segment_start[j, first - 1]
            k1 = k + 1 if first == 0 else segment_start[j, first]
            _expand(k0, k1, segment_start[j, first], segment_start[j, first:],
                    n_levels - first, tree, strategy, rows, zero)
        dead += segment_dead[j]
    return dead


@_njit(inline="always")  # (a call per segment: no argument passing)
def _level_values(k0: int, k1: int, level: int, up: np.ndarray, weight: np.ndarray,
                  live_slot: np.ndarray, live_actor: np.ndarray, live_chance: np.ndarray,
                  value: np.ndarray, reach: np.ndarray, chance_level: np.ndarray,
                  has_chance: bool, player: int, slot_start: int, regrets: np.ndarray,
                  own_sums: np.ndarray, instant: np.ndarray, has_instant: bool,
                  slot_infoset: np.ndarray, marked: np.ndarray, touched: np.ndarray,
                  n_touched: int, track: bool, zero: float,
                  one: float) -> int:  # pragma: no cover - compiled
    """One listed level (positions ``k0`` to ``k1``, tree level ``level``): its parents'
    values (a node's value summed in a register over its listed children, in action
    order), then ``player``'s regrets and own reach on the edges it acts on (added into
    ``regrets``, ``instant``, ``own_sums`` at ``slot - slot_start``); with ``track``, each
    infoset met is listed in ``touched`` once.  Returns the touched count."""
    num_players = reach.shape[1]
    other = 1 - player
    current = -1
    total = zero
    for k in range(k0, k1):
        h = up[k]
        total = (total if h == current else zero) + value[k] * weight[k]
        current = h
        value[h] = total
    level_chance = chance_level[level - 1] if has_chance else one
    chance_constant = not has_chance or level_chance == level_chance  # (NaN: per node)
    for k in range(k0, k1):
        if live_actor[k] != player:
            continue
        h = up[k]
        if has_chance:
            chance = level_chance if chance_constant else live_chance[h]
        else:
            chance = one
        if num_players == 2:
            counterfactual = reach[h, other]
            if has_chance:
                counterfactual = counterfactual * chance
        else:
            before = one
            for q in range(player):
                before = before * reach[h, q]
            after = one
            for q in range(player + 1, num_players):
                after = after * reach[h, q]
            if has_chance:
                after = after * chance
            counterfactual = before * after
        regret = (value[k] - value[h]) * counterfactual
        s = live_slot[k] - slot_start
        if has_instant:
            instant[s] += regret
        regrets[s] += regret
        own_sums[s] += reach[h, player]
        if track:
            i = slot_infoset[s]
            if not marked[i]:
                marked[i] = True
                touched[n_touched] = i
                n_touched += 1
    return n_touched


@_njit
def _values_and_regrets(split: int, top_start: np.ndarray, segment_start: np.ndarray,
                        root_position: np.ndarray, up: np.ndarray, weight: np.ndarray,
                        live_slot: np.ndarray, live_actor: np.ndarray,
                        live_chance: np.ndarray, values: np.ndarray, reach: np.ndarray,
                        chance_level: np.ndarray, has_chance: bool, player: int,
                        slot_start: int, regrets: np.ndarray, own_sums: np.ndarray,
                        instant: np.ndarray, has_instant: bool, slot_infoset: np.ndarray,
                        marked: np.ndarray, touched: np.ndarray, track: bool, zero: float,
                        one: float) -> int:  # pragma: no cover - compiled
    """``player``'s values, regrets and own reach over the live list, bottom-up: every
    segment (its levels deepest first), then the top list's levels.  Returns how many
    infosets were touched (listed in ``touched`` with ``track``)."""
    value = values[player]
    n_touched = 0
    n_levels = segment_start.shape[1] - 1
    for j in range(root_position.shape[0]):
        if root_position[j] < 0:
            continue
        for r in range(n_levels - 1, -1, -1):
            k0 = segment_start[j, r]
            k1 = segment_start[j, r + 1]
            if k0 < k1:
                n_touched = _level_values(
                    k0, k1, split + 1 + r, up, weight, live_slot, live_actor, live_chance,
                    value, reach, chance_level, has_chance, player, slot_start, regrets,
                    own_sums, instant, has_instant, slot_infoset, marked, touched,
                    n_touched, track, zero, one)
    for d in range(split, 0, -1):
        k0 = top_start[d]
        k1 = top_start[d + 1]
        if k0 < k1:
            n_touched = _level_values(
                k0, k1, d, up, weight, live_slot, live_actor, live_chance, value, reach,
                chance_level, has_chance, player, slot_start, regrets, own_sums, instant,
                has_instant, slot_infoset, marked, touched, n_touched, track, zero, one)
    return n_touched


@_njit
def _sparse_finish(touched: np.ndarray, n_touched: int, marked: np.ndarray,
                   infoset_start: np.ndarray, regrets: np.ndarray, own_sums: np.ndarray,
                   average: np.ndarray, strategy: np.ndarray, uniform: np.ndarray,
                   floor: bool, tolerance: float, zero: float, slot_start: int,
                   revived: np.ndarray, was_zero: np.ndarray) -> int:  # pragma: no cover
    """Vanilla CFR (and CFR+ with a constant average weight) on the touched infosets only:
    the floor, ``average + own x strategy`` (then the own sums back to zero), and regret
    matching (:func:`tensorcfr.core.fused_passes._match_infoset`).  The actions whose
    probability went from zero to positive are listed in ``revived`` (global slots;
    ``was_zero``: scratch of the largest infoset's size); returns how many, or -1 when
    they do not fit."""
    n_revived = 0
    for j in range(n_touched):
        i = touched[j]
        marked[i] = False
        a0 = infoset_start[i]
        a1 = infoset_start[i + 1]
        for s in range(a0, a1):
            if floor and regrets[s] < zero:
                regrets[s] = zero
            average[s] = average[s] + own_sums[s] * strategy[s]
            own_sums[s] = zero
            was_zero[s - a0] = strategy[s] == zero
        _match_infoset(regrets, a0, a1, uniform, tolerance, zero, strategy)
        for s in range(a0, a1):
            if was_zero[s - a0] and strategy[s] != zero and n_revived >= 0:
                if n_revived < revived.shape[0]:
                    revived[n_revived] = slot_start + s
                    n_revived += 1
                else:
                    n_revived = -1
    return n_revived


@_njit
def _mark_segments(revived: np.ndarray, n_revived: int, slot_level: np.ndarray, split: int,
                   segment_ptr: np.ndarray, segment_list: np.ndarray,
                   relist: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Set ``relist[j]`` to the shallowest level of a revived slot with histories in
    segment ``j``; False (nothing set) when one lies at or above the split level."""
    for j in range(n_revived):
        if slot_level[revived[j]] <= split:
            relist[:] = -1
            return False
    for j in range(n_revived):
        g = revived[j]
        level = slot_level[g]
        for t in range(segment_ptr[g], segment_ptr[g + 1]):
            segment = segment_list[t]
            if relist[segment] < 0 or level < relist[segment]:
                relist[segment] = level
    return True


def _first_child(parent: np.ndarray, n_nodes: int) -> np.ndarray:
    """``first_child`` [N + 1]: node ``h``'s children are ``first_child[h]`` to
    ``first_child[h + 1]`` (parents come in level order and children follow their parents'
    order, so the counts' running sum is the offsets)."""
    counts = np.bincount(parent[1:], minlength=n_nodes) if n_nodes > 1 else np.zeros(1)
    first = np.empty(n_nodes + 1, dtype=np.int64)
    first[0] = 1
    np.cumsum(counts, out=first[1:])
    first[1:] += 1
    return first.astype(np.int32)


class PrunedPasses(SolverState):
    """An alternating-update ``TensorCFRSolver`` iteration on CPU over the live histories
    only (see the module docstring), with the interface of
    :class:`tensorcfr.core.fused_passes.FusedPasses` (``values_and_regrets``,
    ``regret_matching``, ``refresh_player``, ``refresh_all``) plus
    :meth:`update_player` (the whole update of one player, where the variant allows the
    sparse per-slot steps; False otherwise)."""

    def __init__(self, solver: Any, layout: FusedLayout, kinds: list[np.ndarray]) -> None:
        """``kinds``: each level's node kinds (what :func:`~tensorcfr.core.fused_passes.
        build_layout` read)."""
        super().__init__(solver, layout)
        flat = solver._flat
        n_nodes = layout.parent.shape[0]
        n_players = flat.num_players
        self.slot = layout.slot
        self.chance_prob = layout.chance_prob
        # The terminals' utilities node by node ([N, P]: a terminal's row is one cache line).
        self.utilities = np.ascontiguousarray(layout.values.T)
        self.chance_level = layout.chance_level
        self.chance_reach = layout.chance_reach
        self.kind = np.concatenate(kinds).astype(np.int8)
        self.first_child = _first_child(layout.parent, n_nodes)
        dtype = layout.values.dtype
        # The compact rows (position n: node live[n], its parent's position up[n]).
        self.live = np.zeros(n_nodes, dtype=np.int32)
        self.up = np.zeros(n_nodes, dtype=np.int32)
        self.weight = np.zeros(n_nodes, dtype=dtype)
        self.live_slot = np.zeros(n_nodes, dtype=np.int32)
        self.live_actor = np.zeros(n_nodes, dtype=np.int8)
        self.live_chance = np.zeros(n_nodes if layout.chance_reach.shape[0] else 0,
                                    dtype=dtype)
        self.reach = np.ones((n_nodes, n_players), dtype=dtype)  # (node-major)
        self.values = np.zeros((n_players, n_nodes), dtype=dtype)
        self._segments(layout, flat.num_slots)
        self.tree = (self.slot, self.kind, self.first_child, self.chance_prob,
                     self.chance_reach, self.utilities)
        self.rows = (self.live, self.up, self.weight, self.live_slot, self.live_actor,
                     self.live_chance, self.reach, self.values)
        self.average = [t.numpy() for t in solver._average_views]
        variant = solver.variant
        self.sparse = (variant.name in ("cfr", "cfr+") and not variant.predictive
                       and variant.average_exponent() == 0.0)
        self.floor = variant.floors_regrets
        self.slot_infoset = []
        self.marked = []
        self.touched = []
        for start in layout.infoset_start:
            n_infosets = start.shape[0] - 1
            counts = np.diff(start)
            self.slot_infoset.append(
                np.repeat(np.arange(n_infosets, dtype=np.int32), counts))
            self.marked.append(np.zeros(n_infosets if self.sparse else 0, dtype=np.bool_))
            self.touched.append(np.zeros(n_infosets if self.sparse else 0, dtype=np.int32))

    def _segments(self, layout: FusedLayout, num_slots: int) -> None:
        """The split level, each segment's region of the compact rows, and for each slot
        its level and the segments its histories lie in (see the module docstring)."""
        starts = np.asarray(layout.level_start, dtype=np.int64)
        parent = layout.parent
        depth = len(starts) - 1
        sizes = np.diff(starts)
        split = next((d for d in range(1, depth - 1) if sizes[d] >= SEGMENT_LEVEL_NODES),
                     max(depth - 1, 0))
        self.split = split
        self.level_start = starts
        n_segments = int(sizes[split])
        # Subtree sizes of the split level's nodes, bottom-up.
        subtree = np.ones(starts[-1], dtype=np.int64)
        for d in range(depth - 1, split, -1):
            a, b = starts[d], starts[d + 1]
            subtree[starts[d - 1]:a] += np.bincount(
                parent[a:b] - starts[d - 1], weights=subtree[a:b],
                minlength=a - starts[d - 1]).astype(np.int64)
        below = subtree[starts[split]:starts[split + 1]] - 1
        self.segment_offset = np.empty(n_segments + 1, dtype=np.int64)
        self.segment_offset[0] = starts[split + 1]
        np.cumsum(below, out=self.segment_offset[1:])
        self.segment_offset[1:] += starts[split + 1]
        del subtree, below
        self.segment_start = np.zeros((n_segments, depth - split), dtype=np.int64)
        self.root_position = np.full(n_segments, -1, dtype=np.int64)
        self.segment_dead = np.zeros(n_segments, dtype=np.int64)
        self.relist = np.full(n_segments, -1, dtype=np.int64)  # (shallowest revived level)
        self.top_start = np.zeros(split + 2, dtype=np.int64)
        # Each slot's level and segments (pairs from the nodes below the split level).
        node_level = np.repeat(np.arange(depth, dtype=np.int16), sizes)
        self.slot_level = np.full(num_slots, -1, dtype=np.int16)
        with_slot = layout.slot >= 0
        self.slot_level[layout.slot[with_slot]] = node_level[with_slot]
        del node_level
        segment = np.full(starts[-1], -1, dtype=np.int64)
        segment[starts[split]:starts[split + 1]] = np.arange(n_segments)
        for d in range(split + 1, depth):
            segment[starts[d]:starts[d + 1]] = segment[parent[starts[d]:starts[d + 1]]]
        pairs = np.unique(layout.slot[starts[split + 1]:].astype(np.int64) * n_segments
                          + segment[starts[split + 1]:])
        pairs = pairs[pairs >= 0]
        del segment
        self.segment_ptr = np.zeros(num_slots + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs // n_segments, minlength=num_slots),
                  out=self.segment_ptr[1:])
        self.segment_list = (pairs % n_segments).astype(np.int32)
        self.revived = np.zeros(REVIVED_CAPACITY, dtype=np.int32)
        self.was_zero = np.zeros(max([int(np.diff(start).max(initial=0))
                                      for start in layout.infoset_start], default=0),
                                 dtype=np.bool_)
        self.dead = 0  # listed histories nobody reaches (a rebuild drops them)
        self.rebuilds = 0  # full rebuilds of the live list by :meth:`update_player`
        self.relists = 0  # partial ones (revived actions below the split level)

    @property
    def live_nodes(self) -> int:
        """How many histories the live list holds (the live ones, and the dead ones a
        rebuild has not dropped yet)."""
        listed = self.segment_start[:, -1] - self.segment_offset[:-1]
        return int(self.top_start[self.split + 1] + listed[self.root_position >= 0].sum())

    def _values_and_regrets(self, player: int, track: bool) -> int:
        instant = self.instant[player]
        return _values_and_regrets(
            self.split, self.top_start, self.segment_start, self.root_position, self.up,
            self.weight, self.live_slot, self.live_actor, self.live_chance, self.values,
            self.reach, self.chance_level, self.has_chance, player, self.slot_start[player],
            self.regrets[player], self.own_sums[player], instant, instant.shape[0] > 0,
            self.slot_infoset[player], self.marked[player], self.touched[player], track,
            self.zero, self.one)

    def values_and_regrets(self, player: int) -> None:
        """``player``'s values, regrets (added into its cumulative regrets) and own reach
        per slot (the solver's own-reach buffer, zeroed first), over the live histories."""
        if self.regrets[player].shape[0] == 0:
            return
        self.own_sums[player][:] = self.zero
        if self.instant[player].shape[0]:
            self.instant[player][:] = self.zero
        self._values_and_regrets(player, False)

    def update_player(self, player: int) -> bool:
        """The whole update of ``player`` (values and regrets, floor, average, regret
        matching, reach) with the per-slot steps on the touched infosets only, and the
        live list kept where no action came to life (relisted below those that did);
        False (nothing done) where the variant needs the solver's whole-slot steps."""
        if not self.sparse:
            return False
        n_revived = 0
        if self.regrets[player].shape[0]:
            n_touched = self._values_and_regrets(player, True)
            n_revived = _sparse_finish(
                self.touched[player], n_touched, self.marked[player],
                self.infoset_start[player], self.regrets[player], self.own_sums[player],
                self.average[player], self.strategy[player], self.uniform[player],
                self.floor, self.tolerance, self.zero, self.slot_start[player],
                self.revived, self.was_zero)
        if (self.dead and DEAD_SHARE * self.dead > self.live_nodes) or n_revived < 0 or (
                n_revived > 0 and not _mark_segments(
                    self.revived, n_revived, self.slot_level, self.split,
                    self.segment_ptr, self.segment_list, self.relist)):
            self.refresh_player(player)
            self.rebuilds += 1
            return True
        self.relists += int(n_revived > 0)
        self.dead = _refresh(
            player, self.relist, self.split, self.top_start, self.segment_offset,
            self.segment_start, self.root_position, self.segment_dead, self.tree,
            self.strategy_all, self.rows, self.zero)
        return True

    def refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: the whole live list again (every player's
        reach and the compact rows)."""
        self.dead = 0
        self.segment_dead[:] = 0
        self.relist[:] = -1
        _rebuild(self.split, self.level_start, self.top_start, self.segment_offset,
                 self.segment_start, self.root_position, self.tree, self.strategy_all,
                 self.rows, self.zero)

    def refresh_all(self) -> None:
        """Every reach and the live list from the current strategy (a new solver, a
        restored checkpoint); the own-reach sums back to zero (the sparse update keeps
        them zero between updates)."""
        for sums in self.own_sums:
            sums[:] = self.zero
        self.refresh_player(0)
