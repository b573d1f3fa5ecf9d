"""Compiled CPU passes of one alternating-update CFR iteration (numba), for trees of any size.

The torch passes of :class:`tensorcfr.core.solver.TensorCFRSolver` spend one iteration in a few
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

:class:`NumbaPasses`, what the solver builds, runs the faster fused passes of
:mod:`tensorcfr.core.fused_passes` (one flat int32 layout, three compiled calls per player)
wherever their layout applies, and the :class:`LevelPasses` here otherwise (a tree with an
infoset on several depths).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorcfr.core.jit import AVAILABLE, njit as _njit

__all__ = ["AVAILABLE", "LevelPasses", "NumbaPasses"]

_EMPTY_INDEX = np.zeros(0, dtype=np.int64)


@_njit
def _level_values(parent: np.ndarray, terminal_index: np.ndarray, values_parent: np.ndarray,
                  utility_parent: np.ndarray, values_child: np.ndarray, weight: np.ndarray,
                  gather_strategy: np.ndarray, gather_slot: np.ndarray,
                  gathered: bool, zero: float) -> None:  # pragma: no cover - compiled
    """Values of one level's nodes from the next level's: zeros, the utilities at the
    level's terminals (``terminal_index``, in node order), then ``values_parent[parent[e]]
    += values_child[e] x weight[e]`` edge by edge (children of a node in action order, as
    the torch path's ``scatter_add_``; edge by edge rather than node by node: no branch on
    each node's number of children).  ``weight``: the children's edge probabilities, or
    with ``gathered`` ``gather_strategy[gather_slot]``."""
    values_parent[:] = zero
    for k in range(terminal_index.shape[0]):
        values_parent[terminal_index[k]] = utility_parent[k]
    if gathered:
        for e in range(parent.shape[0]):
            values_parent[parent[e]] += values_child[e] * gather_strategy[gather_slot[e]]
    else:
        for e in range(parent.shape[0]):
            values_parent[parent[e]] += values_child[e] * weight[e]


@_njit
def _counterfactual_reach(reach: np.ndarray, offset: int, player: int, chance: np.ndarray,
                          has_chance: bool, one: float,
                          out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[h]`` = the reach of everyone but ``player`` at the level's nodes (``reach``
    [P, stored nodes], the level at ``offset``), multiplied in OpenSpiel's order: the
    players before ``player`` left to right, times (the players after it, then chance)
    left to right (a product of one row is that row: ``1 x r`` is ``r``)."""
    for h in range(out.shape[0]):
        before = one
        for q in range(player):
            before = before * reach[q, offset + h]
        after = one
        for q in range(player + 1, reach.shape[0]):
            after = after * reach[q, offset + h]
        if has_chance:
            after = after * chance[h]
        out[h] = before * after


@_njit
def _level_regrets(values_parent: np.ndarray, values_child: np.ndarray,
                   child_index: np.ndarray, parent_index: np.ndarray, slot: np.ndarray,
                   counterfactual: np.ndarray, has_counterfactual: bool, own: np.ndarray,
                   regrets: np.ndarray, own_sums: np.ndarray, instant: np.ndarray,
                   has_instant: bool) -> None:  # pragma: no cover - compiled
    """The regret update of a player on its edges into one level, edge by edge: for edge
    ``e`` (parent ``h = parent_index[e]``, child ``values_child[e]``, or
    ``values_child[child_index[e]]`` where only some children hang below the player)
    ``r = (v(ha) - v(h)) x cf_reach(h)`` added into ``regrets[slot[e]]`` (and ``instant``),
    ``h``'s own reach into ``own_sums[slot[e]]``."""
    gathered_child = child_index.shape[0] > 0
    for e in range(parent_index.shape[0]):
        h = parent_index[e]
        if gathered_child:
            child = values_child[child_index[e]]
        else:
            child = values_child[e]
        regret = child - values_parent[h]
        if has_counterfactual:
            regret = regret * counterfactual[h]
        s = slot[e]
        if has_instant:
            instant[s] += regret
        regrets[s] += regret
        own_sums[s] += own[h]


@_njit
def _level_forward(parent: np.ndarray, reach_parent: np.ndarray, reach_child: np.ndarray,
                   store_reach: bool, edge_prob: np.ndarray, store_edges: bool,
                   slot: np.ndarray, has_slot: bool, all_below: bool,
                   strategy: np.ndarray) -> None:  # pragma: no cover - compiled
    """One level down after a strategy change, child by child: the children of the
    player's decision nodes (``slot >= 0``; all with ``all_below``) get their edge
    probability ``strategy[slot]`` (``store_edges``) and, on stored levels
    (``store_reach``), reach ``reach(parent) x edge probability``; the other children the
    parent's reach."""
    if has_slot and all_below:
        for c in range(parent.shape[0]):
            probability = strategy[slot[c]]
            if store_edges:
                edge_prob[c] = probability
            if store_reach:
                reach_child[c] = reach_parent[parent[c]] * probability
    elif has_slot:
        for c in range(parent.shape[0]):
            s = slot[c]
            if s >= 0:
                probability = strategy[s]
                if store_edges:
                    edge_prob[c] = probability
                if store_reach:
                    reach_child[c] = reach_parent[parent[c]] * probability
            elif store_reach:
                reach_child[c] = reach_parent[parent[c]]
    elif store_reach:
        for c in range(parent.shape[0]):
            reach_child[c] = reach_parent[parent[c]]


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
    """The compiled CPU passes of a ``TensorCFRSolver`` (alternating updates): the pruned
    passes of :mod:`tensorcfr.core.pruned_passes` (the fused passes of
    :mod:`tensorcfr.core.fused_passes` over the histories some player reaches) where the
    fused layout applies, else :class:`LevelPasses`.  All give the torch passes' results
    (bitwise in the tests); :attr:`kind` says which one runs."""

    def __init__(self, solver: Any, fused: bool = True, pruned: bool = True) -> None:
        """``solver``: the :class:`~tensorcfr.core.solver.TensorCFRSolver` whose state the
        passes update; ``fused=False`` keeps the level passes and ``pruned=False`` the
        fused passes without skipping unreached histories (the benchmarks compare them)."""
        engine: Any = None
        kind = "level"
        if fused:
            from tensorcfr.core import fused_passes

            kinds = [level.kind.cpu().numpy() for level in solver.tree.levels]
            layout = fused_passes.build_layout(solver._flat, kinds)
            if layout is not None and pruned and bool(np.all(np.diff(layout.parent[1:]) >= 0)):
                from tensorcfr.core.pruned_passes import PrunedPasses

                engine, kind = PrunedPasses(solver, layout, kinds), "pruned"
            elif layout is not None:
                engine, kind = fused_passes.FusedPasses(solver, layout), "fused"
        self.kind = kind
        self.engine = engine if engine is not None else LevelPasses(solver)
        self.update_player = getattr(self.engine, "update_player", None)
        self.values_and_regrets = self.engine.values_and_regrets
        self.regret_matching = self.engine.regret_matching
        self.refresh_player = self.engine.refresh_player
        self.refresh_all = self.engine.refresh_all


class LevelPasses:
    """One alternating-update iteration of a ``TensorCFRSolver`` on CPU through the
    compiled loops above, on numpy views of the solver's own buffers (built once).

    Every loop runs edge by edge over a level's children with the tree's parent index
    (children in action order), as the torch passes do: a loop node by node over each
    node's children measured 1.2-1.5x slower (a mispredicted branch per node on its number
    of children).
    """

    def __init__(self, solver: Any) -> None:
        """``solver``: the :class:`~tensorcfr.core.solver.TensorCFRSolver` whose buffers and
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
        edge_prob = flat.edge_prob.numpy()
        reach = solver._reach.numpy()
        self.reach = reach
        strategy = [t.numpy() for t in solver._strategy_views]
        self.cf_buffer = np.zeros(max(sizes) if sizes else 0, dtype=dtype)
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
                slot = pl.slot.numpy()  # the torch passes' own array (no copy)
                if pl.child_index is None:
                    slots[p][pl.depth] = (slot, True)
                else:
                    full = np.full(sizes[pl.depth], -1,
                                   dtype=np.int32 if sizes[pl.depth] < 2**31 - 1 else np.int64)
                    full[pl.child_index.numpy()] = slot
                    slots[p][pl.depth] = (full, False)
        gathered = flat.gathered_last
        first = flat.first_level
        # Per player, bottom-up: (parent index, the parents' terminal positions, values of
        # the parents, their terminals' utilities, values of the children, weights,
        # gathered strategy and slots, gathered).
        self.values_steps: list[list[tuple]] = []
        self.regret_steps: list[list[tuple]] = []
        self.forward_steps: list[list[tuple]] = []
        for p in range(n_players):
            regret_steps = {}
            other_rows = n_players - 1 + (1 if flat.has_chance else 0)
            for pl in flat.player_levels[p]:
                d = pl.depth
                o = stored[d - 1]
                n = sizes[d - 1]
                if other_rows == 0:
                    cf = None  # nobody else: cf_reach is 1
                elif other_rows == 1 and not flat.has_chance:
                    cf = reach[1 - p, o:o + n]  # the one other player's row itself
                elif other_rows == 1:
                    cf = flat.chance_reach[d - 1].numpy()  # one player and chance
                else:
                    cf = (reach, o, p, flat.chance_reach[d - 1].numpy() if flat.has_chance
                          else empty, flat.has_chance, self.cf_buffer[:n])
                child_index = _EMPTY_INDEX if pl.child_index is None else pl.child_index.numpy()
                slot = pl.slot.numpy()
                regret_steps[d] = (level_values(d - 1, p), level_values(d, p), child_index,
                                   pl.parent_index.numpy(), slot, cf, reach[p, o:o + n])
            steps = []
            for d in range(depth - 1, max(first[p], 1) - 1, -1):
                if stored[d - 1] is None:
                    continue  # parents all terminal: their values are the utilities
                if gathered is not None and d == depth - 1:
                    weight = (empty, strategy[gathered], slots[gathered][d][0], True)
                else:
                    weight = (edge_prob[starts[d]:starts[d + 1]], empty, _EMPTY_INDEX, False)
                terminals = flat.terminal_index[d - 1]
                steps.append((flat.parent_local[d].numpy(),
                              _EMPTY_INDEX if terminals is None else terminals.numpy(),
                              level_values(d - 1, p), flat.utility_levels[d - 1][p].numpy(),
                              level_values(d, p)) + weight)
            self.values_steps.append(steps)
            self.regret_steps.append([regret_steps[d] for d in sorted(regret_steps)])
            steps = []
            for d in range(max(first[p], 1), depth):
                store_reach = stored[d] is not None
                store_edges = starts[d] < flat.edge_prob_end and d in slots[p]
                if not (store_reach or store_edges):
                    continue
                slot, all_below = slots[p].get(d, (_EMPTY_INDEX, False))
                steps.append((flat.parent_local[d].numpy(), level_reach(d - 1, p),
                              level_reach(d, p),
                              store_reach,
                              edge_prob[starts[d]:starts[d + 1]] if store_edges else empty,
                              store_edges, slot, d in slots[p], all_below))
            self.forward_steps.append(steps)
        self.regrets = [t.numpy() for t in solver._regret_views]
        self.own_sums = [t.numpy() for t in solver._own_reach_sums]
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
        own_sums = self.own_sums[player]
        own_sums[:] = 0.0
        instant = self.instant[player]
        has_instant = instant.shape[0] > 0
        if has_instant:
            instant[:] = 0.0
        regrets = self.regrets[player]
        zero, one = self.zero, self.one
        for step in self.values_steps[player]:
            _level_values(*step, zero)
        empty = self.cf_buffer[:0]
        for values_parent, values_child, child_index, parent_index, slot, cf, own in \
                self.regret_steps[player]:
            if isinstance(cf, tuple):
                _counterfactual_reach(*cf[:5], one, cf[5])
                cf = cf[5]
            _level_regrets(values_parent, values_child, child_index, parent_index, slot,
                           empty if cf is None else cf, cf is not None, own, regrets,
                           own_sums, instant, has_instant)

    def regret_matching(self, player: int, regrets: np.ndarray) -> None:
        """The current strategy of ``player`` from ``regrets`` (its view, or PCFR+'s sum)."""
        _regret_matching(regrets, self.action_infoset[player], self.abs_totals[player],
                         self.totals[player], self.uniform[player], self.tolerance,
                         self.zero, self.strategy[player])

    def refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: its edge probabilities and its reach row,
        top-down."""
        strategy = self.strategy[player]
        for parent, reach_parent, reach_child, store_reach, edge_prob, store_edges, \
                slot, has_slot, all_below in self.forward_steps[player]:
            _level_forward(parent, reach_parent, reach_child, store_reach, edge_prob,
                           store_edges, slot, has_slot, all_below, strategy)
        self.solver._refresh_mixed_factors(player)

    def refresh_all(self) -> None:
        """As :meth:`TensorCFRSolver._refresh_all`."""
        for p in range(self.num_players):
            self.refresh_player(p)
