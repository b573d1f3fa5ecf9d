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

Layout (``N`` nodes in level order, ``P`` players): from the fused layout, ``slot`` [N]
int32 and the chance probabilities; ``kind`` [N] int8 (each node's kind: a player, -1
chance, -2 terminal), ``first_child`` [N + 1] int32 (node ``h``'s children are
``first_child[h]`` to ``first_child[h + 1]``) and the terminals' ``utilities`` [N, P].
Each top-down pass rebuilds the *live list* in compact rows (position ``n`` in level
order, ``live_start`` [D + 1] the levels' offsets): the node ``live`` [n], its parent's
position ``up`` [n], its edge's weight, slot, actor and chance reach, every player's
``reach`` [n, P] (node-major) and, per player, the ``values`` [P, n] the bottom-up pass
fills.  So the bottom-up pass reads only compact rows in order; the regrets, own sums
and strategy are the solver's buffers, indexed by slot.  Per player, ``slot_infoset``
(each slot's infoset) and a touched list serve the sparse update.

Nothing here knows a game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorcfr.core.fused_passes import FusedLayout
from tensorcfr.core.jit import njit as _njit
from tensorcfr.core.tree import KIND_TERMINAL

__all__ = ["PrunedPasses"]

_TERMINAL = KIND_TERMINAL


@_njit
def _forward(slot: np.ndarray, kind: np.ndarray, first_child: np.ndarray,
             chance_prob: np.ndarray, chance_reach: np.ndarray, utilities: np.ndarray,
             strategy: np.ndarray, live: np.ndarray, live_start: np.ndarray,
             up: np.ndarray, weight: np.ndarray, live_slot: np.ndarray,
             live_actor: np.ndarray, live_chance: np.ndarray, reach: np.ndarray,
             values: np.ndarray, zero: float) -> None:  # pragma: no cover - compiled
    """Top-down from the root, the live list and its compact rows: for each child ``c`` of
    a live node (position ``k``) with a non-zero reach for some player (``r_q(c) = r_q(h)
    x strategy[slot[c]]`` for the player ``q`` acting at ``h``, ``r_q(h)`` otherwise), at
    the next position ``n``: ``live[n] = c``, ``up[n] = k``, the edge's weight (its chance
    probability or strategy), slot, actor and chance reach, every player's reach, and a
    terminal's utilities in ``values``.  A live node none of whose children is live
    (every product underflowed) gets the value 0 in every row, as OpenSpiel's recursion
    returns for it."""
    num_players = reach.shape[1]
    depth = live_start.shape[0] - 1
    per_node_chance = chance_reach.shape[0] > 0
    live[0] = 0
    up[0] = -1
    for p in range(num_players):
        reach[0, p] = 1.0
    live_start[0] = 0
    live_start[1] = 1
    count = 1
    for d in range(depth - 1):
        for k in range(live_start[d], live_start[d + 1]):
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
                    if a != zero or b != zero:
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
        live_start[d + 2] = count


@_njit
def _values_and_regrets(up: np.ndarray, weight: np.ndarray, live_slot: np.ndarray,
                        live_actor: np.ndarray, live_chance: np.ndarray,
                        values: np.ndarray, reach: np.ndarray, chance_level: np.ndarray,
                        has_chance: bool, live_start: np.ndarray, player: int,
                        slot_start: int, regrets: np.ndarray, own_sums: np.ndarray,
                        instant: np.ndarray, has_instant: bool, slot_infoset: np.ndarray,
                        marked: np.ndarray, touched: np.ndarray, track: bool, zero: float,
                        one: float) -> int:  # pragma: no cover - compiled
    """``player``'s values over the live list, bottom-up (a node's value summed in a
    register over its live children, in action order; rows indexed by live position),
    and its regrets and own reach on the live edges it acts on (added into ``regrets``,
    ``instant``, ``own_sums``, indexed ``slot - slot_start``).  With ``track``, each
    infoset met is listed in ``touched`` once (``marked`` flags it); returns how many."""
    value = values[player]
    num_players = reach.shape[1]
    other = 1 - player
    depth = live_start.shape[0] - 1
    n_touched = 0
    for d in range(depth - 1, 0, -1):
        k0 = live_start[d]
        k1 = live_start[d + 1]
        if k0 == k1:
            continue
        current = -1
        total = zero
        for k in range(k0, k1):
            h = up[k]
            total = (total if h == current else zero) + value[k] * weight[k]
            current = h
            value[h] = total
        level_chance = chance_level[d - 1] if has_chance else one
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
def _sparse_finish(touched: np.ndarray, n_touched: int, marked: np.ndarray,
                   infoset_start: np.ndarray, regrets: np.ndarray, own_sums: np.ndarray,
                   average: np.ndarray, strategy: np.ndarray, uniform: np.ndarray,
                   floor: bool, tolerance: float,
                   zero: float) -> bool:  # pragma: no cover - compiled
    """Vanilla CFR (and CFR+ with a constant average weight) on the touched infosets only:
    the floor, ``average + own x strategy`` (then the own sums back to zero), and
    regret matching (:func:`tensorcfr.core.regret.regret_matching_into`'s arithmetic).
    Returns True when some action's probability went from zero to positive (histories
    below it may come to life: the live list must be rebuilt)."""
    grew = False
    for j in range(n_touched):
        i = touched[j]
        marked[i] = False
        a0 = infoset_start[i]
        a1 = infoset_start[i + 1]
        if floor:
            for s in range(a0, a1):
                if regrets[s] < zero:
                    regrets[s] = zero
        for s in range(a0, a1):
            average[s] = average[s] + own_sums[s] * strategy[s]
            own_sums[s] = zero
        abs_total = zero
        for s in range(a0, a1):
            abs_total = abs_total + abs(regrets[s])
        threshold = abs_total * tolerance
        total = zero
        had_zero = False  # (some action had probability zero)
        revived = False  # (... and now a positive regret)
        for s in range(a0, a1):
            value = regrets[s]
            positive = value if value > threshold else zero
            if strategy[s] == zero:
                had_zero = True
                if positive != zero:
                    revived = True
            strategy[s] = positive
            total = total + positive
        if total > zero:
            grew = grew or revived
            for s in range(a0, a1):
                strategy[s] = strategy[s] / total
        else:
            grew = grew or had_zero  # (uniform: every action positive)
            for s in range(a0, a1):
                strategy[s] = uniform[s]
    return grew


@_njit
def _refresh_reach(strategy: np.ndarray, live_start: np.ndarray, up: np.ndarray,
                   weight: np.ndarray, live_slot: np.ndarray, live_actor: np.ndarray,
                   reach: np.ndarray, player: int,
                   zero: float) -> int:  # pragma: no cover - compiled
    """After ``player``'s strategy changed without any action going from zero to
    positive, so that no history comes to life: ``player``'s reach (and its edges'
    weights) down the live list as it stands, the same products as :func:`_forward`.
    Returns how many listed histories nobody reaches any more (they stay listed: their
    terms are products with zero)."""
    num_players = reach.shape[1]
    dead = 0
    for n in range(1, live_start[live_start.shape[0] - 1]):
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


class PrunedPasses:
    """An alternating-update ``TensorCFRSolver`` iteration on CPU over the live histories
    only (see the module docstring), with the interface of
    :class:`tensorcfr.core.fused_passes.FusedPasses` (``values_and_regrets``,
    ``regret_matching``, ``refresh_player``, ``refresh_all``) plus
    :meth:`update_player` (the whole update of one player, where the variant allows the
    sparse per-slot steps; None otherwise)."""

    def __init__(self, solver: Any, layout: FusedLayout) -> None:
        from tensorcfr.core.regret import regret_tolerance

        flat = solver._flat
        n_nodes = layout.parent.shape[0]
        n_players = flat.num_players
        self.num_players = n_players
        self.slot = layout.slot
        self.chance_prob = layout.chance_prob
        # The terminals' utilities node by node ([N, P]: a terminal's row is one cache line).
        self.utilities = np.ascontiguousarray(layout.values.T)
        self.chance_level = layout.chance_level
        self.chance_reach = layout.chance_reach
        self.kind = np.concatenate([level.kind.cpu().numpy().astype(np.int8)
                                    for level in solver.tree.levels])
        self.first_child = _first_child(layout.parent, n_nodes)
        dtype = layout.values.dtype
        # The live list's compact rows (position n: node live[n], parent position up[n]).
        self.live = np.zeros(n_nodes, dtype=np.int32)
        self.up = np.zeros(n_nodes, dtype=np.int32)
        self.weight = np.zeros(n_nodes, dtype=dtype)
        self.live_slot = np.zeros(n_nodes, dtype=np.int32)
        self.live_actor = np.zeros(n_nodes, dtype=np.int8)
        self.live_chance = np.zeros(n_nodes if layout.chance_reach.shape[0] else 0,
                                    dtype=dtype)
        self.reach = np.ones((n_nodes, n_players), dtype=dtype)  # (node-major)
        self.values = np.zeros((n_players, n_nodes), dtype=dtype)
        self.live_start = np.zeros(len(layout.level_start), dtype=np.int64)
        self.zero = dtype.type(0.0)
        self.one = dtype.type(1.0)
        self.tolerance = dtype.type(regret_tolerance(solver.dtype))
        self.has_chance = bool(flat.has_chance)
        self.slot_start = [a0 for a0, _ in flat.slot_range]
        self.strategy_all = solver._strategy.numpy()
        self.strategy = [t.numpy() for t in solver._strategy_views]
        self.regrets = [t.numpy() for t in solver._regret_views]
        self.own_sums = [t.numpy() for t in solver._own_reach_sums]
        self.average = [t.numpy() for t in solver._average_views]
        empty = np.zeros(0, dtype=dtype)
        self.instant = ([t.numpy() for t in solver._prediction_views]
                        if solver.variant.predictive else [empty] * n_players)
        self.uniform = [t.numpy() for t in flat.uniform]
        self.infoset_start = layout.infoset_start
        variant = solver.variant
        self.sparse = (variant.name in ("cfr", "cfr+") and not variant.predictive
                       and variant.average_exponent() == 0.0)
        self.floor = variant.floors_regrets
        self.dead = 0  # listed histories nobody reaches (a rebuild drops them)
        self.rebuilds = 0  # live-list rebuilds by :meth:`update_player`
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

    @property
    def live_nodes(self) -> int:
        """How many histories the last top-down pass found live (some player reaches)."""
        return int(self.live_start[-1])

    def _values_and_regrets(self, player: int, track: bool) -> int:
        instant = self.instant[player]
        return _values_and_regrets(
            self.up, self.weight, self.live_slot, self.live_actor, self.live_chance,
            self.values, self.reach, self.chance_level, self.has_chance, self.live_start,
            player, self.slot_start[player], self.regrets[player], self.own_sums[player],
            instant, instant.shape[0] > 0, self.slot_infoset[player], self.marked[player],
            self.touched[player], track, self.zero, self.one)

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
        matching, reach) with the per-slot steps on the touched infosets only; False
        (nothing done) where the variant needs the solver's whole-slot steps."""
        if not self.sparse:
            return False
        grew = False
        if self.regrets[player].shape[0]:
            n_touched = self._values_and_regrets(player, True)
            grew = _sparse_finish(self.touched[player], n_touched, self.marked[player],
                                  self.infoset_start[player], self.regrets[player],
                                  self.own_sums[player], self.average[player],
                                  self.strategy[player], self.uniform[player], self.floor,
                                  self.tolerance, self.zero)
        if grew or 4 * self.dead > self.live_nodes:
            self.refresh_player(player)
            self.rebuilds += 1
        else:
            self.dead = _refresh_reach(self.strategy_all, self.live_start, self.up,
                                       self.weight, self.live_slot, self.live_actor,
                                       self.reach, player, self.zero)
        return True

    def regret_matching(self, player: int, regrets: np.ndarray) -> None:
        """The current strategy of ``player`` from ``regrets`` (its view, or PCFR+'s sum)."""
        from tensorcfr.core.fused_passes import _regret_matching

        _regret_matching(regrets, self.infoset_start[player], self.uniform[player],
                         self.tolerance, self.zero, self.strategy[player])

    def refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: every player's reach at the live nodes'
        children and the live list (which the change may grow or shrink)."""
        self.dead = 0
        _forward(self.slot, self.kind, self.first_child, self.chance_prob,
                 self.chance_reach, self.utilities, self.strategy_all, self.live,
                 self.live_start, self.up, self.weight, self.live_slot, self.live_actor,
                 self.live_chance, self.reach, self.values, self.zero)

    def refresh_all(self) -> None:
        """Every reach and the live list from the current strategy (a new solver, a
        restored checkpoint); the own-reach sums back to zero (the sparse update keeps
        them zero between updates)."""
        for sums in self.own_sums:
            sums[:] = self.zero
        self.refresh_player(0)
