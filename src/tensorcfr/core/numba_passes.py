"""Compiled CPU passes of one alternating-update CFR iteration (numba), for trees of any size.

The torch passes of :class:`tensorcfr.core.cfr.TensorCFRSolver` spend one iteration in a few
hundred whole-level operations, each a separate sweep over memory: gather the parents'
values (``index_select``), subtract, gather the counterfactual reach, multiply, add into the
regret slots (``scatter_add_``), gather the own reach, add it, ... (on liars_dice, 295k
nodes, 70% of an iteration was ``scatter_add_``/``index_select``/``scatter_`` and a fifth
the elementwise arithmetic between them; docs/engine_profile.md).  Here each of those chains
is one loop over the level's edges, compiled once by numba (cached on disk): the same
additions and multiplications, in the same order, on the same buffers (numpy views of the
solver's tensors), so the results are *bitwise* those of the torch path and every public
method, checkpoint and resume is unchanged; no scratch buffer of a level's size is needed.

Shapes (1-D, one level or one chunk of a level): ``values_child`` [E], ``weight`` [E] edge
probabilities, ``parent`` [E] int64 index into the previous level, ``slot`` [E] the edge's
action slot local to the acting player's slot range, regrets / strategies [A_p] of one
player.  Nothing here knows a game.

What stays in torch (a few operations per player, not per edge): the floor / discount of the
regrets, the average update, the counterfactual reach products (one multiply per level), the
mixed-level factors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # numba is a dependency; a broken install falls back to the torch passes
    import numba

    def _njit(function: Any = None, **options: Any) -> Any:
        """``numba.njit`` with the module's settings (cached on disk, no fast-math: the
        additions and multiplications stay those of the torch path)."""
        jit = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False, **options)
        return jit if function is None else jit(function)
    AVAILABLE = True
except Exception:  # pragma: no cover - numba missing or broken
    numba = None
    AVAILABLE = False

    def _njit(function: Any = None, **options: Any) -> Any:
        return (lambda f: f) if function is None else function

__all__ = ["AVAILABLE", "NumbaPasses"]

_EMPTY_INDEX = np.zeros(0, dtype=np.int64)


@_njit
def _level_values(child_start: np.ndarray, values_parent: np.ndarray,
                  utility_parent: np.ndarray, values_child: np.ndarray, weight: np.ndarray,
                  gather_strategy: np.ndarray, gather_slot: np.ndarray,
                  gathered: bool, zero: float) -> None:  # pragma: no cover - compiled
    """Values of one level's nodes from the next level's: a terminal (no children) gets
    its utility (``utility_parent``, the level's terminals in node order), an inner node
    ``0 + sum_children weight x value`` added child by child in action order (the torch
    path's ``scatter_add_`` into zeros, without its store per edge).  ``weight`` is the
    children's edge probabilities, or with ``gathered`` ``gather_strategy[gather_slot]``."""
    terminal = 0
    for h in range(child_start.shape[0] - 1):
        c0 = child_start[h]
        c1 = child_start[h + 1]
        if c0 == c1:
            values_parent[h] = utility_parent[terminal]
            terminal += 1
            continue
        value = zero  # (the dtype's 0: float32 sums stay float32)
        if gathered:
            for c in range(c0, c1):
                value += values_child[c] * gather_strategy[gather_slot[c]]
        else:
            for c in range(c0, c1):
                value += values_child[c] * weight[c]
        values_parent[h] = value


@_njit
def _level_regrets(child_start: np.ndarray, values_parent: np.ndarray,
                   values_child: np.ndarray, slot: np.ndarray, all_below: bool,
                   reach: np.ndarray, offset: int, player: int, chance: np.ndarray,
                   has_chance: bool, regrets: np.ndarray, action_infoset: np.ndarray,
                   own_infoset: np.ndarray, instant: np.ndarray, has_instant: bool,
                   one: float) -> None:  # pragma: no cover - compiled
    """The regret update of ``player`` on the edges into one level: for every decision
    node ``h`` of the player (children with ``slot >= 0``; every node with ``all_below``),
    ``r = (v(ha) - v(h)) x cf_reach(h)`` added into ``regrets[slot]`` (and ``instant``)
    child by child, and ``h``'s own reach into ``own_infoset`` at its infoset (one edge per
    history and action: the sum of every slot of the infoset, added in the same order).  ``cf_reach(h)`` is
    multiplied in OpenSpiel's order: the players before ``player`` left to right, times
    (the players after it, then chance) left to right; ``reach`` [P, stored nodes], the
    level's nodes at ``offset``."""
    for h in range(child_start.shape[0] - 1):
        c0 = child_start[h]
        c1 = child_start[h + 1]
        if c0 == c1 or (not all_below and slot[c0] < 0):
            continue
        value = values_parent[h]
        before = one
        for q in range(player):
            before = before * reach[q, offset + h]
        after = one
        for q in range(player + 1, reach.shape[0]):
            after = after * reach[q, offset + h]
        if has_chance:
            after = after * chance[h]
        counterfactual = before * after
        own_infoset[action_infoset[slot[c0]]] += reach[player, offset + h]
        for c in range(c0, c1):
            s = slot[c]
            regret = (values_child[c] - value) * counterfactual
            if has_instant:
                instant[s] += regret
            regrets[s] += regret


@_njit
def _expand(out: np.ndarray, per_infoset: np.ndarray,
            action_infoset: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[s] = per_infoset[action_infoset[s]]``."""
    for s in range(out.shape[0]):
        out[s] = per_infoset[action_infoset[s]]


@_njit
def _level_forward(child_start: np.ndarray, reach_parent: np.ndarray, reach_child: np.ndarray,
                   store_reach: bool, edge_prob: np.ndarray, store_edges: bool,
                   slot: np.ndarray, has_slot: bool, all_below: bool,
                   strategy: np.ndarray) -> None:  # pragma: no cover - compiled
    """One level down after a strategy change: the children of the player's decision
    nodes get their edge probability ``strategy[slot]`` (``store_edges``) and, stored
    levels (``store_reach``), reach ``reach(parent) x edge probability``; the other children
    the parent's reach."""
    for h in range(child_start.shape[0] - 1):
        c0 = child_start[h]
        c1 = child_start[h + 1]
        if c0 == c1:
            continue
        reach = reach_parent[h]
        below = has_slot and (all_below or slot[c0] >= 0)
        if below:
            for c in range(c0, c1):
                probability = strategy[slot[c]]
                if store_edges:
                    edge_prob[c] = probability
                if store_reach:
                    reach_child[c] = reach * probability
        elif store_reach:
            for c in range(c0, c1):
                reach_child[c] = reach


@_njit
def _regret_matching(regrets: np.ndarray, action_infoset: np.ndarray, abs_totals: np.ndarray,
                     totals: np.ndarray, uniform: np.ndarray, tolerance: float, zero: float,
                     out: np.ndarray) -> None:  # pragma: no cover - compiled
    """:func:`tensorcfr.core.regret.regret_matching_into`, loop by loop: a regret counts when
    above ``tolerance x`` its infoset's sum of ``|R|``; positive parts normalised per
    infoset, ``uniform`` where an infoset has none."""
    abs_totals[:] = 0.0
    for s in range(regrets.shape[0]):
        abs_totals[action_infoset[s]] += abs(regrets[s])
    for i in range(abs_totals.shape[0]):
        abs_totals[i] = abs_totals[i] * tolerance
    totals[:] = 0.0
    for s in range(regrets.shape[0]):
        value = regrets[s]
        positive = value if value > abs_totals[action_infoset[s]] else zero
        out[s] = positive
        totals[action_infoset[s]] += positive
    for s in range(regrets.shape[0]):
        total = totals[action_infoset[s]]
        out[s] = out[s] / total if total > zero else uniform[s]


class NumbaPasses:
    """One alternating-update iteration of a ``TensorCFRSolver`` on CPU through the
    compiled loops above, on numpy views of the solver's own buffers (built once).

    Levels are walked parent by parent: each level keeps ``child_start`` (int32 [N + 1],
    the CSR offsets of its nodes' children in the next level, built once from the
    parent indices, whose children are contiguous and in action order), so a node's value
    is summed in a register and its children's reach written in one sweep.
    """

    def __init__(self, solver: Any) -> None:
        """``solver``: the :class:`~tensorcfr.core.cfr.TensorCFRSolver` whose buffers and
        per-level views the loops use (it imports this module, not the reverse)."""
        from tensorcfr.core.regret import regret_tolerance

        self.solver = solver
        flat = solver._flat
        n_players = flat.num_players
        self.num_players = n_players
        values = solver._values[0].numpy()
        dtype = values.dtype
        self.zero = dtype.type(0.0)
        self.one = dtype.type(1.0)
        # In the dtype, as torch multiplies a float32 tensor by a Python scalar.
        self.tolerance = dtype.type(regret_tolerance(solver.dtype))
        empty = np.zeros(0, dtype=dtype)
        starts = flat.level_start
        stored = flat.stored_start
        depth = len(starts) - 1
        self.depth = depth
        sizes = [starts[d + 1] - starts[d] for d in range(depth)]
        self.child_start: list[np.ndarray] = [_EMPTY_INDEX]
        for d in range(1, depth):
            parent = flat.parent_local[d].numpy()
            if parent.shape[0] > 1 and bool((parent[1:] < parent[:-1]).any()):
                raise ValueError("children must be grouped by parent")  # tree order
            counts = np.bincount(parent, minlength=sizes[d - 1])
            index_dtype = np.int32 if sizes[d] < 2**31 - 1 else np.int64
            offsets = np.zeros(sizes[d - 1] + 1, dtype=index_dtype)
            np.cumsum(counts, out=offsets[1:])
            self.child_start.append(offsets)
        edge_prob = flat.edge_prob.numpy()
        reach = solver._reach.numpy()
        self.reach = reach
        strategy = [t.numpy() for t in solver._strategy_views]
        self.strategy = strategy

        def level_values(d: int, player: int) -> np.ndarray:
            """Level ``d``'s values of ``player`` (its utilities on a level of terminals)."""
            if stored[d] is None:
                return flat.utility_levels[d][player].numpy()
            return values[stored[d]:stored[d] + sizes[d]]

        def level_reach(d: int, player: int) -> np.ndarray:
            o = stored[d]
            return empty if o is None else reach[player, o:o + sizes[d]]

        # Slots of each player's children per level: (slot [N_d], all children below it).
        slots: list[dict[int, tuple[np.ndarray, bool]]] = [{} for _ in range(n_players)]
        for p in range(n_players):
            for pl in flat.player_levels[p]:
                slot = pl.slot.numpy()
                if slot.shape[0] < 2**31 - 1:
                    slot = slot.astype(np.int32)  # half the bytes read per edge
                if pl.child_index is None:
                    slots[p][pl.depth] = (slot, True)
                else:
                    full = np.full(sizes[pl.depth], -1, dtype=slot.dtype)
                    full[pl.child_index.numpy()] = slot
                    slots[p][pl.depth] = (full, False)
        gathered = flat.gathered_last
        first = flat.first_level
        # Per player, bottom-up: (child_start, values of the parents, their terminals'
        # utilities, values of the children, weights, gathered strategy and slots, gathered).
        self.values_steps: list[list[tuple]] = []
        self.regret_steps: list[list[tuple]] = []
        self.forward_steps: list[list[tuple]] = []
        for p in range(n_players):
            regret_steps = {}
            for pl in flat.player_levels[p]:
                d = pl.depth
                slot, all_below = slots[p][d]
                chance = flat.chance_reach[d - 1].numpy() if flat.has_chance else empty
                regret_steps[d] = (slot, all_below, reach, stored[d - 1], p, chance,
                                   flat.has_chance)
            steps = []
            for d in range(depth - 1, max(first[p], 1) - 1, -1):
                if stored[d - 1] is None:
                    continue  # parents all terminal: their values are the utilities
                if gathered is not None and d == depth - 1:
                    weight = (empty, strategy[gathered], slots[gathered][d][0], True)
                else:
                    weight = (edge_prob[starts[d]:starts[d + 1]], empty, _EMPTY_INDEX, False)
                steps.append((self.child_start[d], level_values(d - 1, p),
                              flat.utility_levels[d - 1][p].numpy(), level_values(d, p))
                             + weight)
            self.values_steps.append(steps)
            self.regret_steps.append([
                (self.child_start[d], level_values(d - 1, p), level_values(d, p))
                + regret_steps[d] for d in sorted(regret_steps)])
            steps = []
            for d in range(max(first[p], 1), depth):
                store_reach = stored[d] is not None
                store_edges = starts[d] < flat.edge_prob_end and d in slots[p]
                if not (store_reach or store_edges):
                    continue
                slot, all_below = slots[p].get(d, (_EMPTY_INDEX, False))
                steps.append((self.child_start[d], level_reach(d - 1, p), level_reach(d, p),
                              store_reach,
                              edge_prob[starts[d]:starts[d + 1]] if store_edges else empty,
                              store_edges, slot, d in slots[p], all_below))
            self.forward_steps.append(steps)
        self.regrets = [t.numpy() for t in solver._regret_views]
        self.own_sums = [t.numpy() for t in solver._own_reach_sums]
        self.own_infoset = [np.zeros(t.shape[0], dtype=dtype) for t in solver._infoset_totals]
        self.instant = ([t.numpy() for t in solver._prediction_views]
                        if solver.variant.predictive else [empty] * n_players)
        self.action_infoset = [t.numpy() for t in flat.local_action_infoset]
        self.uniform = [t.numpy() for t in flat.uniform]
        self.abs_totals = [np.zeros(t.shape[0], dtype=dtype) for t in solver._infoset_totals]
        self.totals = [t.numpy() for t in solver._infoset_totals]

    def values_and_regrets(self, player: int) -> None:
        """The updating player's expected values, bottom-up (utilities at terminals), and
        its instantaneous regrets added into its cumulative regrets (level by level,
        top-down, as the torch path),
        its own reach per slot into the solver's own-reach buffer (zeroed first)."""
        own_infoset = self.own_infoset[player]
        own_infoset[:] = 0.0
        action_infoset = self.action_infoset[player]
        instant = self.instant[player]
        has_instant = instant.shape[0] > 0
        if has_instant:
            instant[:] = 0.0
        regrets = self.regrets[player]
        zero, one = self.zero, self.one
        for step in self.values_steps[player]:
            _level_values(*step, zero)
        for step in self.regret_steps[player]:
            _level_regrets(*step, regrets, action_infoset, own_infoset, instant, has_instant,
                           one)
        _expand(self.own_sums[player], own_infoset, action_infoset)

    def regret_matching(self, player: int, regrets: np.ndarray) -> None:
        """The current strategy of ``player`` from ``regrets`` (its view, or PCFR+'s sum)."""
        _regret_matching(regrets, self.action_infoset[player], self.abs_totals[player],
                         self.totals[player], self.uniform[player], self.tolerance,
                         self.zero, self.strategy[player])

    def refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: its edge probabilities and its reach row,
        top-down."""
        strategy = self.strategy[player]
        for child_start, reach_parent, reach_child, store_reach, edge_prob, store_edges, \
                slot, has_slot, all_below in self.forward_steps[player]:
            _level_forward(child_start, reach_parent, reach_child, store_reach, edge_prob,
                           store_edges, slot, has_slot, all_below, strategy)
        self.solver._refresh_mixed_factors(player)

    def refresh_all(self) -> None:
        """As :meth:`TensorCFRSolver._refresh_all`."""
        for p in range(self.num_players):
            self.refresh_player(p)
