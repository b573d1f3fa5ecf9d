"""The memory-lean passes: one alternating-update CFR iteration with no per-node state kept.

The torch passes of :class:`~tensorcfr.core.solver.TensorCFRSolver` keep, between
iterations, a reach row per player and a values row over every node, each node's edge
probability, and int64 copies of the tree's parent and slot indices (about 50 bytes a
node); the compiled passes keep a layout of their own beside numba's runtime (about 120
MiB of it per process).  :class:`LeanPasses` keeps nothing per node: it reads the
:class:`~tensorcfr.core.tree.LevelTree`'s own arrays (int32 parents, int8 kinds, int32
slots, the compact chance probabilities and terminal utilities) and recomputes, for each
player's update,

1. a forward pass from the root: every player's reach and chance's, one level at a time
   (only the previous level's rows are alive), keeping the updating player's own reach
   and its counterfactual reach (the product of the other rows, in the torch passes'
   order) on the levels where that player acts;
2. a backward pass from the deepest level: the expected values of two adjacent levels at
   a time, and the regrets of the player's edges into a level as soon as the values of
   both levels are known.

Per iteration that is more arithmetic than the torch passes (every player's reach is
recomputed for each update, the edge probabilities twice), all of it numpy on the CPU.
Memory between iterations is the slot-sized state only; during a pass, a few rows of the
widest level (docs/benchmarks/engine_memory.md has the figures on liars_dice).

The operations are the torch passes' (the same products in the same order, the same
sequential sums into zeros, regrets added edge by edge into the cumulative regrets with
``np.add.at``), so the results are bitwise theirs where every infoset's histories lie at
one depth (the torch passes add a slot's regrets top-down, these bottom-up; elsewhere
they agree to rounding).  Alternating updates, float64, CPU only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorcfr.core.numpy_passes import SlotUpdates
from tensorcfr.core.regret import average_decay
from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, LevelTree
from tensorcfr.utils.resources import return_large_blocks

__all__ = ["CHUNK", "LeanPasses", "lean_pass_bytes"]

_ALL, _NONE, _MIXED = "all", "none", "mixed"


CHUNK = 8192
"""Most nodes one numpy operation of the lean passes touches: a long level is processed in
pieces of about this many nodes (cut where the parent changes, so each parent's children
stay in one piece and every sum runs in the same order), which keeps each temporary array
at 64 KiB."""


def lean_pass_bytes(tree: LevelTree, num_players: int | None = None) -> int:
    """Estimated peak bytes the lean passes allocate on ``tree`` besides the slot-sized
    state (an upper bound): the counterfactual reach kept for the backward pass (at most
    one float64 per node), and at the widest level the reach rows of two levels for every
    player and chance, two rows of values and the pieces' temporaries."""
    sizes = tree.level_sizes()
    players = tree.num_players if num_players is None else num_players
    widest = max(sizes, default=0)
    stored = 8 * sum(sizes)
    working = widest * 8 * (2 * (players + 1) + 2) + 16 * 8 * min(CHUNK, widest)
    return int(stored + working)


class _Level:
    """What the lean passes read of one tree level (numpy views of the tree's tensors, no
    copies) and the per-level facts computed once: which reach rows the level's edges
    multiply (all, none or some of its nodes below each player and chance) and the
    pieces the level is processed in."""

    __slots__ = ("size", "parent", "kind", "slot", "chance_prob", "utility", "sorted",
                 "terminal", "inner", "chance_before", "share", "chance_share", "decision_edges", "actors", "pieces")

    def __init__(self, level: Any, parent_kind: np.ndarray | None, num_players: int,
                 chunk: int) -> None:
        self.size = level.num_nodes
        # (.cpu(): no copy for a tree on the CPU, one for a tree kept on a GPU)
        self.parent = level.parent.cpu().numpy()
        self.kind = level.kind.cpu().numpy()
        self.slot = level.parent_action_slot.cpu().numpy()  # tree slot, -1 below chance
        self.chance_prob = level.chance_edge_prob.cpu().numpy().astype(np.float64, copy=False)
        self.utility = level.terminal_utility.cpu().numpy().astype(  # [T, P]
            np.float64, copy=False)
        self.sorted = self.parent.shape[0] < 2 or not bool((np.diff(self.parent) < 0).any())
        terminals = int(self.utility.shape[0])
        self.terminal = (_NONE if terminals == 0 else _ALL if terminals == self.size
                         else _MIXED)
        self.inner = self.size - terminals  # nodes with children: where reach is kept
        self.actors = {int(k) for k in np.unique(self.kind) if k >= 0}
        self.pieces = self._pieces(chunk)
        # chance children before each piece (the compact chance probabilities' offset)
        chance_child = self.slot < 0
        self.chance_before = {c0: int(np.count_nonzero(chance_child[:c0]))
                              for c0, _ in self.pieces}
        del chance_child
        self.share: list[str] = []
        if parent_kind is None:  # the root's level
            self.share = [_NONE] * num_players
            self.chance_share = _NONE
            self.decision_edges = _NONE
            return
        for actor in [*range(num_players), KIND_CHANCE]:
            below = int(np.count_nonzero(parent_kind == actor))
            share = _NONE if below == 0 else _ALL if below == self.size else _MIXED
            if actor == KIND_CHANCE:
                self.chance_share = share
            else:
                self.share.append(share)
        below_decision = int(np.count_nonzero(self.slot >= 0))
        self.decision_edges = (_NONE if below_decision == 0 else _ALL
                               if below_decision == self.size else _MIXED)

    def _pieces(self, chunk: int) -> list[tuple[int, int]]:
        """``[(start, stop), ...]`` covering the level in pieces of about ``chunk`` nodes,
        each cut where the parent changes (one piece when the parents are not sorted)."""
        size = self.size
        if size <= chunk or self.parent.shape[0] != size or not self.sorted:
            return [(0, size)]
        cuts = [0]
        for start in range(chunk, size, chunk):
            cut = int(np.searchsorted(self.parent, self.parent[start], side="left"))
            if cut > cuts[-1]:
                cuts.append(cut)
        cuts.append(size)
        return list(zip(cuts[:-1], cuts[1:]))


class LeanPasses:
    """Alternating-update CFR iterations that keep no per-node state (module docstring).

    Built by :class:`~tensorcfr.core.solver.TensorCFRSolver` with ``passes="lean"``; it
    reads and writes the solver's slot-sized state (regrets, cumulative strategy, current
    strategy, PCFR+'s predictions) through numpy views, so checkpoints, policies and
    exploitability are the solver's own.
    """

    kind = "lean"

    def __init__(self, solver: Any, chunk: int = CHUNK) -> None:
        """``solver``: the :class:`~tensorcfr.core.solver.TensorCFRSolver` (float64, CPU,
        alternating updates) whose tree and slot state the passes use; ``chunk``: the
        pieces' size (:data:`CHUNK`)."""
        tree: LevelTree = solver.tree
        flat = solver._flat
        return_large_blocks()  # (level-sized arrays go back to the system when dropped)
        self.num_players = tree.num_players
        self.variant = solver.variant
        self.slots = SlotUpdates(solver, keep_uniform=False)
        # internal slot of each tree slot (the solver groups slots by player)
        self.internal_slot = flat.internal_slot_of_tree()
        self.slot_start = [a0 for a0, _ in flat.slot_range]
        self.strategy = solver._strategy.numpy()  # [A], every player's, internal order
        self.levels: list[_Level] = []
        previous: np.ndarray | None = None
        for level in tree.levels:
            parent_kind = None if previous is None else previous[level.parent.cpu().numpy()]
            self.levels.append(_Level(level, parent_kind, self.num_players, chunk))
            previous = self.levels[-1].kind
        del previous, parent_kind
        self.has_chance = any(lv.chance_share != _NONE for lv in self.levels)
        # the first level holding a child of p's decision node, and the deepest one
        self.first = [next((d for d, lv in enumerate(self.levels) if lv.share[p] != _NONE),
                           len(self.levels)) for p in range(self.num_players)]
        self.last = [max((d for d, lv in enumerate(self.levels) if lv.share[p] != _NONE),
                         default=-1) for p in range(self.num_players)]

    # ------------------------------------------------------------------ pieces of a level
    def _edge_prob(self, lv: _Level, c0: int, c1: int) -> np.ndarray:
        """[c1 - c0] probability of the edge into nodes ``c0:c1`` of level ``lv``: the
        acting player's current strategy below decision nodes, the chance probability
        below chance nodes (1 at the root).  A new array (the caller may overwrite it)."""
        if lv.decision_edges == _ALL:
            return self.strategy[self.internal_slot[lv.slot[c0:c1]]]
        if lv.decision_edges == _NONE:
            return lv.chance_prob[c0:c1].copy()
        slot = lv.slot[c0:c1]
        decision = slot >= 0
        edge = np.empty(c1 - c0)
        edge[decision] = self.strategy[self.internal_slot[slot[decision]]]
        # the chance probabilities are stored for the level's chance children in order
        chance_before = lv.chance_before[c0]
        chance = ~decision
        edge[chance] = lv.chance_prob[chance_before:chance_before + int(chance.sum())]
        return edge

    def _local_slot(self, lv: _Level, p: int, index: Any) -> np.ndarray:
        """Player ``p``'s local slots of the edges ``index`` (a slice or positions) into
        level ``lv``."""
        local = self.internal_slot[lv.slot[index]]
        local -= self.slot_start[p]
        return local

    def _product(self, rows: list[Any], size: int) -> np.ndarray | None:
        """Elementwise product of ``rows`` left to right (floats stand for constant rows;
        None for no rows), as a new [size] array."""
        if not rows:
            return None
        first = rows[0]
        out = np.full(size, first) if isinstance(first, float) else first
        for row in rows[1:]:
            out = out * row
        return out if out is not first else first.copy()

    def _counterfactual(self, rows: list[Any], p: int, size: int) -> np.ndarray | None:
        """The product of the other rows at one level: (players before ``p``) x (players
        after ``p``, then chance), each group multiplied left to right, as the torch
        passes do; None when there is no other row."""
        n_players = self.num_players
        before = self._product(rows[:p], size)
        after = self._product(rows[p + 1:n_players]
                              + ([rows[n_players]] if self.has_chance else []), size)
        if before is None:
            return after
        if after is None:
            return before
        before *= after
        return before

    # ------------------------------------------------------------------ passes
    @staticmethod
    def _rank(lv: _Level) -> np.ndarray | None:
        """int32 [N_d]: each node's position among level ``lv``'s inner (non-terminal)
        nodes, where reach rows are kept (meaningless at terminals); None when the level
        has no terminal (the positions are the nodes')."""
        if lv.terminal == _NONE:
            return None
        rank = np.cumsum(lv.kind != KIND_TERMINAL, dtype=np.int32)
        rank -= 1
        return rank

    def _forward(self, p: int, own_reach: np.ndarray) -> dict[int, np.ndarray | None]:
        """Every row's reach from the root down to the level above player ``p``'s deepest
        edges, at inner nodes only (terminals have no children), adding ``p``'s own reach
        at the parents of its edges into ``own_reach`` [A_p] (per slot, edge by edge in
        node order, as the torch passes); returns ``p``'s counterfactual reach at the inner
        nodes of each level ``d`` where ``p`` acts (or None when there is no other row)."""
        n_players = self.num_players
        levels = self.levels
        counterfactual: dict[int, np.ndarray | None] = {}
        rows: list[Any] = [1.0] * (n_players + 1)  # players, then chance (floats: constant)
        for d in range(1, self.last[p] + 1):
            lv, above = levels[d], levels[d - 1]
            rank = self._rank(above)
            if lv.share[p] != _NONE:  # p acts at d - 1
                own = rows[p]
                counterfactual[d - 1] = self._counterfactual(rows, p, above.inner)
                for c0, c1 in lv.pieces:
                    parent = lv.parent[c0:c1]
                    if lv.share[p] == _ALL:
                        edges, slot = parent, self._local_slot(lv, p, slice(c0, c1))
                    else:
                        below = np.flatnonzero(above.kind[parent] == p)
                        edges = parent[below]
                        slot = self._local_slot(lv, p, below + c0)
                    np.add.at(own_reach, slot, np.full(edges.shape[0], own)
                              if isinstance(own, float) else
                              own[edges if rank is None else rank[edges]])
                del own
            if d < self.last[p]:
                rows = self._next_rows(rows, lv, above, rank)
            del rank
        return counterfactual

    def _next_rows(self, rows: list[Any], lv: _Level, above: _Level,
                   rank: np.ndarray | None) -> list[Any]:
        """Every row's reach at the inner nodes of level ``lv`` from ``rows`` at the inner
        nodes of the level above (``rank``: their positions there, :meth:`_rank`): the
        parent's reach times the edge probability below the row's actor (the torch passes'
        ``reach[parent] * factor``)."""
        n_players = self.num_players
        shares = [*lv.share, lv.chance_share]
        new_rows: list[Any] = []
        for q in range(n_players + 1):
            new_rows.append(rows[q] if isinstance(rows[q], float) and shares[q] == _NONE
                            else np.empty(lv.inner))
        start = 0
        for c0, c1 in lv.pieces:
            parent = lv.parent[c0:c1]
            inner = None if lv.terminal == _NONE else lv.kind[c0:c1] != KIND_TERMINAL
            if inner is not None:
                parent = parent[inner]
            stop = start + parent.shape[0]
            compact_parent = parent if rank is None else rank[parent]
            edge = None
            parent_kind = None
            for q in range(n_players + 1):
                out = new_rows[q]
                if isinstance(out, float):
                    continue
                out = out[start:stop]
                row = rows[q]
                if isinstance(row, float):
                    out[...] = row
                else:
                    np.take(row, compact_parent, out=out)
                share = shares[q]
                if share == _NONE:
                    continue
                if edge is None:
                    edge = self._edge_prob(lv, c0, c1)
                    if inner is not None:
                        edge = edge[inner]
                if share == _ALL:
                    out *= edge
                else:
                    if parent_kind is None:
                        parent_kind = above.kind[parent]
                    actor = KIND_CHANCE if q == n_players else q
                    out *= np.where(parent_kind == actor, edge, 1.0)
            start = stop
        chance = new_rows[n_players]
        if not isinstance(chance, float) and chance.size and bool((chance == chance[0]).all()):
            new_rows[n_players] = float(chance[0])  # (the same at every node)
        return new_rows

    def iteration(self, t: int) -> None:
        """One alternating-update iteration ``t``: for each player in turn, its regrets,
        average and strategy (the others see its new strategy)."""
        decay = average_decay(self.variant, t)
        for p in range(self.num_players):
            if self.slots.regrets[p].size:
                self._update_player(p, t, decay)

    def _update_player(self, p: int, t: int, decay: float) -> None:
        """Forward pass, backward pass with player ``p``'s regrets, then its average and
        strategy (:meth:`SlotUpdates.finish`)."""
        levels = self.levels
        regrets = self.slots.regrets[p]
        own_reach = np.zeros(regrets.shape[0])
        counterfactual = self._forward(p, own_reach)
        instant = None
        if self.variant.predictive:
            instant = self.slots.predictions[p]
            instant[...] = 0.0
        deepest = len(levels) - 1
        values = self._load_values(levels[deepest], p)
        for d in range(deepest, max(self.first[p], 1) - 1, -1):
            lv, above = levels[d], levels[d - 1]
            values_parent = self._load_values(above, p)
            for c0, c1 in lv.pieces:
                parent = lv.parent[c0:c1]
                p0, p1 = ((int(parent[0]), int(parent[-1]) + 1) if lv.sorted else
                          (int(parent.min()), int(parent.max()) + 1))
                weighted = self._edge_prob(lv, c0, c1)
                weighted *= values[c0:c1]
                values_parent[p0:p1] += np.bincount(parent - p0, weighted, p1 - p0)
            if lv.share[p] != _NONE:
                reach = counterfactual.pop(d - 1)
                rank = None if reach is None else self._rank(above)
                for c0, c1 in lv.pieces:
                    parent = lv.parent[c0:c1]
                    if lv.share[p] == _ALL:
                        child, edges = values[c0:c1], parent
                        slot = self._local_slot(lv, p, slice(c0, c1))
                    else:
                        below = np.flatnonzero(above.kind[parent] == p)
                        child, edges = values[c0:c1][below], parent[below]
                        slot = self._local_slot(lv, p, below + c0)
                    regret = child - values_parent[edges]
                    if reach is not None:
                        regret *= reach[edges if rank is None else rank[edges]]
                    if instant is not None:
                        np.add.at(instant, slot, regret)  # pcfr+
                    np.add.at(regrets, slot, regret)
                del reach, rank
            values = values_parent
        self.slots.finish(p, own_reach, t, decay)

    @staticmethod
    def _load_values(lv: _Level, p: int) -> np.ndarray:
        """Level ``lv``'s values before its children are added: player ``p``'s terminal
        utilities, zeros at inner nodes."""
        if lv.terminal == _ALL:
            return lv.utility[:, p].copy()
        values = np.zeros(lv.size)
        if lv.terminal == _MIXED:
            values[lv.kind == KIND_TERMINAL] = lv.utility[:, p]
        return values
