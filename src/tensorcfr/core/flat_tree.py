"""The solver's flat tree: a :class:`~tensorcfr.core.tree.LevelTree` laid out once for the passes.

:class:`FlatTree` holds what every pass of :class:`~tensorcfr.core.solver.TensorCFRSolver`
reads and never changes: nodes of all levels flat by depth (level ``d`` at
``[level_start[d], level_start[d+1])``), the edge probabilities ``edge_prob`` [N] (chance
probabilities, then the strategy below decision nodes), each level's local parent index
(int64), the terminal utilities ``[P, T_d]`` per level (stored once), the constant chance
reach per level, and the infosets and action slots renumbered player by player (each
player's slots contiguous; :attr:`FlatTree.tree_slot_of_internal` maps back to the tree's
order).  :class:`PlayerLevel` lists one player's decision edges into one level.

Long levels are cut into chunks of :data:`PASS_CHUNK` nodes (:func:`chunks`), so the
passes' scratch buffers are chunk-sized.  Nothing here iterates: the solver owns the
mutable state (regrets, strategy, reach, values) and the passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, LevelTree
from tensorcfr.utils.resources import release_free_memory

__all__ = ["PASS_CHUNK", "FlatTree", "PlayerLevel", "chunks", "terminal_utility_of",
           "uniform_strategy_of"]

PASS_CHUNK = 1 << 17
"""Largest number of nodes one tensor operation of the backward pass and the regret update
touches: longer levels are processed in chunks of this many nodes (the same additions in
the same order), so the scratch buffers are ``O(PASS_CHUNK)`` instead of ``O(nodes)``."""


def terminal_utility_of(level: Any) -> Tensor:
    """``[T_d, P]`` utilities of the level's terminal nodes in node order (the tree's
    compact array when it has one, else taken out of the dense ``utility``)."""
    compact = getattr(level, "terminal_utility", None)
    if compact is not None:
        return compact
    return level.utility[level.kind == KIND_TERMINAL]


def uniform_strategy_of(local_infoset: np.ndarray, num_infosets: int) -> np.ndarray:
    """float64 [A_p]: 1 / (the number of slots of each slot's infoset), from the slots'
    local infosets [A_p] (ints in ``range(num_infosets)``)."""
    counts = np.bincount(local_infoset, minlength=num_infosets).astype(np.float64)
    return np.reciprocal(counts[local_infoset])


def chunks(length: int, chunk: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(length)`` in pieces of at most ``chunk``."""
    return [(c, min(c + chunk, length)) for c in range(0, length, chunk)]


class PlayerLevel:
    """The decision edges of one player into one level ``d`` (children of its nodes).

    ``child_index`` is None when every node of the level hangs below the player (the usual
    case: one player acts per depth), else the int64 positions of those children in the
    level.  ``parent_index`` (int64) gives each edge's parent, local to level ``d - 1``;
    ``slot`` (int64) its action slot, local to the player's slot range.
    """

    __slots__ = ("depth", "child_index", "parent_index", "slot", "chunks")

    def __init__(self, depth: int, child_index: Tensor | None, parent_index: Tensor,
                 slot: Tensor, chunk: int) -> None:
        self.depth = depth
        self.child_index = child_index
        self.parent_index = parent_index
        self.slot = slot
        self.chunks = chunks(int(slot.shape[0]), chunk)


class FlatTree:
    """Flat, depth-ordered, solver-ready arrays built once from a LevelTree.

    Nodes keep the tree's order (level by level, children in action order), so values are
    summed over children and regrets over histories in OpenSpiel's order.  Per node the
    solver keeps the edge probability (solver dtype), the parent index (int64, the
    ``scatter_add_`` target of the backward pass; shared with the tree when it is
    int64) and, below decision nodes, the action slot (int64, the regret ``scatter_add_``
    target); the terminal utilities are stored once, for terminal nodes only
    (``utility`` [P, T], player by player, in node order), with each level's terminal
    positions (int64) where a level mixes terminal and inner nodes.
    """

    def __init__(self, tree: LevelTree, device: torch.device, dtype: torch.dtype,
                 chunk: int = PASS_CHUNK, node_arrays: bool = True) -> None:
        """``node_arrays=False`` numbers the slots only (the counts, level bounds and slot
        numbering) and leaves the per-node arrays to :meth:`restore_node_arrays`: what
        the lean passes (:mod:`tensorcfr.core.lean_passes`), which read the tree itself,
        need."""
        self.num_players = tree.num_players
        self.device = device
        self.dtype = dtype
        self.chunk = chunk
        sizes = tree.level_sizes()
        starts = [0]
        for size in sizes:
            starts.append(starts[-1] + size)
        self.level_start = starts
        self.num_nodes = starts[-1]
        self.num_terminals = tree.num_terminals
        new_of_old_slot = self._number_slots(tree)
        self.gathered_last = self._gathered_last_player(tree)
        self.max_level_nodes = max(sizes) if sizes else 0
        self.node_arrays_released = False
        if not node_arrays:
            self.node_arrays_released = True
            return
        self._lay_out_levels(tree, new_of_old_slot)
        del new_of_old_slot
        self._mark_stored_levels(sizes)

    def _number_slots(self, tree: LevelTree) -> Tensor:
        """Number infosets and slots internally, grouped by player and stable within a
        player: sets the counts, :attr:`tree_slot_of_internal`, each player's infoset and
        slot ranges, its slots' local infosets and uniform strategy; returns the internal
        slot of each tree slot (int32 where the count allows).

        In numpy (the results handed to torch without a copy): torch's sort, scatter and
        search kernels would map about 8 MiB of library code into a process that, with
        the lean passes, runs none of them again (docs/benchmarks/engine_memory.md)."""
        n_players = self.num_players
        device = self.device
        num_infosets = tree.num_infosets
        player = tree.infoset_player.cpu().numpy().astype(np.int64)
        num_actions = tree.infoset_num_actions.cpu().numpy().astype(np.int64)
        old_offset = tree.infoset_action_offset.cpu().numpy().astype(np.int64)
        # internal infoset -> tree infoset: by player, stable within a player
        order = np.argsort(player, kind="stable")
        new_num_actions = num_actions[order]
        new_offset = np.zeros(num_infosets, dtype=np.int64)
        if num_infosets:
            np.cumsum(new_num_actions[:-1], out=new_offset[1:])
        num_slots = int(num_actions.sum()) if num_infosets else 0
        self.num_slots = num_slots
        self.num_infosets = num_infosets
        # Slot-sized index arrays in int32 where the counts allow (the set-up's peak: a few
        # of them exist at once; slot permutations are only gathered with).
        slot_index_dtype = np.int32 if num_slots < 2**31 - 1 else np.int64
        internal_infoset = np.repeat(np.arange(num_infosets, dtype=slot_index_dtype),
                                     new_num_actions)
        # internal slot -> tree slot: the infoset's first tree slot + the action's position
        old_slot = (old_offset[order] - new_offset).astype(slot_index_dtype)[internal_infoset]
        old_slot += np.arange(num_slots, dtype=slot_index_dtype)
        new_of_old_slot = np.empty(num_slots, dtype=slot_index_dtype)
        new_of_old_slot[old_slot] = np.arange(num_slots, dtype=slot_index_dtype)
        self.tree_slot_of_internal = torch.from_numpy(old_slot).to(device=device)
        del old_slot
        sorted_player = player[order]
        self.infoset_range: list[tuple[int, int]] = []
        self.slot_range: list[tuple[int, int]] = []
        for p in range(n_players):
            i0 = int(np.searchsorted(sorted_player, p, side="left"))
            i1 = int(np.searchsorted(sorted_player, p, side="right"))
            a0 = int(new_offset[i0]) if i0 < num_infosets else num_slots
            a1 = int(new_offset[i1]) if i1 < num_infosets else num_slots
            self.infoset_range.append((i0, i1))
            self.slot_range.append((a0, a1))
        # [A_p] infoset local to p's range (int32 where it fits: index_add_ / index_select
        # indices, never scatter targets)
        self.local_action_infoset: list[Tensor] = []
        infoset_dtype = np.int32 if num_infosets < 2**31 - 1 else np.int64
        for p in range(n_players):
            i0, _ = self.infoset_range[p]
            a0, a1 = self.slot_range[p]
            local = (internal_infoset[a0:a1] - i0).astype(infoset_dtype)
            self.local_action_infoset.append(torch.from_numpy(local).to(device=device))
        self._uniform: list[Tensor] | None = None
        return torch.from_numpy(new_of_old_slot)

    @staticmethod
    def _gathered_last_player(tree: LevelTree) -> int | None:
        """The player whose strategy gives the last level's edge probabilities, or None.

        The last level, when it holds terminals only and they all hang below one
        player's decision nodes (battleship: 82% of the nodes), keeps no edge
        probabilities: the backward pass gathers them from that player's strategy."""
        sizes = tree.level_sizes()
        if len(sizes) > 1 and sizes[-1]:  # (numpy: no torch kernel mapped for this)
            last = tree.levels[-1]
            if bool((last.kind.cpu().numpy() == KIND_TERMINAL).all()):
                parent_kind = tree.levels[-2].kind.cpu().numpy()[last.parent.cpu().numpy()]
                actor = int(parent_kind[0])
                if actor >= 0 and bool((parent_kind == actor).all()):
                    return actor
        return None

    def _utility_buffer(self, tree: LevelTree) -> Tensor | None:
        """Where the terminal utilities go: None when every level's compact ``[T_d, P]``
        array already has the solver's dtype and device (used as it is, through
        transposed views: no copy, so no moment with two copies either), else one zeroed
        ``[P, T]`` buffer in the solver's dtype (sets :attr:`shares_utility`)."""
        self.shares_utility = all(
            getattr(level, "terminal_utility", None) is not None
            and level.terminal_utility.dtype == self.dtype
            and level.terminal_utility.device == self.device for level in tree.levels)
        if self.shares_utility:
            return None
        return torch.zeros((self.num_players, self.num_terminals), dtype=self.dtype,
                           device=self.device)

    def _lay_out_levels(self, tree: LevelTree, new_of_old_slot: Tensor) -> None:
        """Nodes, level by level (only per-level temporaries besides the kept arrays):
        terminal positions, edge probabilities, utilities, parents, each player's edges
        and the chance reach."""
        n_players = self.num_players
        device, dtype = self.device, self.dtype
        # edge_prob: probability of the edge into each node (the chance probability below
        # chance nodes; 1 below decision nodes until the solver writes the strategy there).
        starts = self.level_start
        self.edge_prob_end = starts[-2] if self.gathered_last is not None else self.num_nodes
        self.edge_prob = torch.ones(self.edge_prob_end, dtype=dtype, device=device)
        # Local parent index inside the previous level, per level (the int64 scatter_add_
        # targets of the backward pass; the tree's own arrays when already int64).
        self.parent_local: list[Tensor] = [torch.zeros(0, dtype=torch.long, device=device)]
        self.terminal_start = [0]  # level d's terminals: utility[:, ts[d]:ts[d+1]]
        # Positions of level d's terminal nodes (int64, the scatter_ index that writes the
        # utilities into the values), None when the level has none or only terminals.
        self.terminal_index: list[Tensor | None] = []
        self.player_levels: list[list[PlayerLevel]] = [[] for _ in range(n_players)]
        # share[q][d]: do "all", "none" or some ("mixed") nodes of level d hang below an
        # actor of reach row q (player q, or chance for q = n_players)?
        self.level_share: list[list[str]] = [["none"] for _ in range(n_players + 1)]
        self.mixed_mask: list[dict[int, Tensor]] = [{} for _ in range(n_players)]
        self.has_chance = any(bool((level.kind == KIND_CHANCE).any()) for level in tree.levels)
        # Chance reach per level (constant: chance probabilities only), computed here once;
        # a level where it is the same at every node (e.g. every node below the dice
        # rolls of liars_dice) keeps one number, expanded to the level's length.
        self.chance_reach: list[Tensor] = []
        # Terminal utilities per level, [P, T_d] (player rows).
        self.utility_levels: list[Tensor] = []
        utility = self._utility_buffer(tree)
        chance_prev: Tensor | None = None
        prev_kind: Tensor | None = None
        for d, level in enumerate(tree.levels):
            kind = level.kind.cpu()
            self._add_terminal_index(kind)
            self._add_chance_edges(d, level)
            self._add_utilities(level, utility)
            parent = None
            if d > 0:
                assert prev_kind is not None
                parent = self._add_parents(level)
                self._add_player_edges(d, level, parent, prev_kind, new_of_old_slot)
            if self.has_chance:
                chance_prev = self._add_chance_reach(d, parent, chance_prev)
            del parent
            prev_kind = kind
            if starts[d + 1] - starts[d] >= 1 << 16:
                release_free_memory()  # this level's temporaries and replaced arrays

    def _add_terminal_index(self, kind: Tensor) -> None:
        """Level positions of the terminal nodes (``kind``: the level's node kinds) where
        the level mixes terminal and inner nodes, else None."""
        terminal = kind == KIND_TERMINAL
        num_level_terminals = int(terminal.sum())
        self.terminal_index.append(
            torch.nonzero(terminal).squeeze(1).to(self.device)
            if 0 < num_level_terminals < kind.shape[0] else None)

    def _add_chance_edges(self, d: int, level: Any) -> None:
        """Level ``d``'s chance probabilities into :attr:`edge_prob` (a level that keeps
        edge probabilities)."""
        s, e = self.level_start[d], self.level_start[d + 1]
        if s >= self.edge_prob_end:
            return
        compact = getattr(level, "chance_edge_prob", None)
        if compact is None:
            self.edge_prob[s:e] = level.chance_prob.to(device=self.device, dtype=self.dtype)
        elif compact.numel():
            chance_child = torch.nonzero(level.parent_action_slot < 0).squeeze(1)
            self.edge_prob[s:e].index_copy_(0, chance_child.to(self.device),
                                            compact.to(device=self.device, dtype=self.dtype))

    def _add_utilities(self, level: Any, utility: Tensor | None) -> None:
        """The level's terminal utilities as a ``[P, T_d]`` view: of the tree's compact
        array (``utility`` None), else of ``utility`` after copying them there."""
        terminal_utility = terminal_utility_of(level)
        t0 = self.terminal_start[-1]
        t1 = t0 + int(terminal_utility.shape[0])
        self.terminal_start.append(t1)
        if utility is None:
            self.utility_levels.append(terminal_utility.t())
        else:
            utility[:, t0:t1].copy_(terminal_utility.t())  # (casts, no temporary)
            self.utility_levels.append(utility[:, t0:t1])

    def _add_parents(self, level: Any) -> Tensor:
        """The level's parent index (int64 on the device; the tree keeps that copy when
        its own array was on the device in another dtype), appended to
        :attr:`parent_local` and returned."""
        parent = level.parent.to(device=self.device, dtype=torch.long)
        if parent is not level.parent and level.parent.device == parent.device:
            level.parent = parent  # one int64 copy, shared with the tree
        self.parent_local.append(parent)
        return parent

    def _add_player_edges(self, d: int, level: Any, parent: Tensor, parent_level_kind: Tensor,
                          new_of_old_slot: Tensor) -> None:
        """For each reach row (players, then chance): whether all, none or some of level
        ``d``'s nodes hang below its actor, and each player's decision edges into the level
        (:class:`PlayerLevel`, slots local to the player's range)."""
        n_players = self.num_players
        device = self.device
        n = int(parent.shape[0])
        parent_kind = parent_level_kind.index_select(0, parent.cpu())
        slot = level.parent_action_slot.cpu()
        for q in range(n_players + 1):
            actor = KIND_CHANCE if q == n_players else q
            below = parent_kind == actor
            count = int(below.sum())
            self.level_share[q].append("none" if count == 0 else
                                       "all" if count == n else "mixed")
            if q == n_players or count == 0:
                continue
            a0 = self.slot_range[q][0]
            if count == n:
                local_slot = new_of_old_slot.index_select(0, slot).long().sub_(a0)
                self.player_levels[q].append(PlayerLevel(
                    d, None, parent, local_slot.to(device), self.chunk))
            else:
                self.mixed_mask[q][d] = below.to(device)
                child_index = torch.nonzero(below).squeeze(1)
                local_slot = new_of_old_slot.index_select(
                    0, slot.index_select(0, child_index)).long().sub_(a0)
                self.player_levels[q].append(PlayerLevel(
                    d, child_index.to(device), parent[child_index.to(device)],
                    local_slot.to(device), self.chunk))

    def _add_chance_reach(self, d: int, parent: Tensor | None,
                          chance_prev: Tensor | None) -> Tensor:
        """Chance's reach at level ``d`` (the parents' times the chance edge
        probabilities; ones at the root), kept in :attr:`chance_reach` (one number
        expanded when it is the same at every node) and returned for the next level."""
        s, e = self.level_start[d], self.level_start[d + 1]
        n = e - s
        if parent is None:
            chance = torch.ones(n, dtype=self.dtype, device=self.device)
        else:
            assert chance_prev is not None
            chance = chance_prev.index_select(0, parent)
            if self.level_share[self.num_players][d] != "none":
                chance.mul_(self.edge_prob[s:e])  # (never a gathered level)
        constant = n > 0 and bool((chance == chance[0]).all())
        self.chance_reach.append(chance[:1].clone().expand(n) if constant else chance)
        return chance

    def _mark_stored_levels(self, sizes: list[int]) -> None:
        """Levels of terminal nodes only (the last one, and most of the nodes of games like
        battleship) need no reach and no values buffer: their values are the utilities.
        The per-node buffers of the solver (values, reach) cover the other levels, level
        d at [stored_start[d], + N_d) (None for a terminal level)."""
        self.stored_start: list[int | None] = []
        stored = 0
        for d, size in enumerate(sizes):
            terminal_level = d > 0 and size == self.terminal_start[d + 1] - self.terminal_start[d]
            self.stored_start.append(None if terminal_level else stored)
            if terminal_level and self.has_chance:
                self.chance_reach[d] = self.chance_reach[d][:0]  # never read
            stored += 0 if terminal_level else size
        self.num_stored = stored
        # first level holding a child of p's decision node (depth when p never acts)
        self.first_level = [levels[0].depth if levels else len(sizes)
                            for levels in self.player_levels]


    _NODE_ARRAYS = ("edge_prob", "parent_local", "terminal_index", "player_levels",
                    "mixed_mask", "chance_reach", "utility_levels")

    def release_node_arrays(self, tree: LevelTree) -> None:
        """Drop the per-node arrays only the torch and level passes read (edge
        probabilities, int64 parents, terminal positions and slots, the chance reach, the
        utility views; the counts, level bounds and slot numbering stay), and give
        ``tree`` back its int32 parent index where :meth:`_add_parents` had shared an
        int64 copy with it.  :meth:`restore_node_arrays` builds them again."""
        for name in self._NODE_ARRAYS:
            self.__dict__.pop(name, None)
        for level in tree.levels:
            parent = level.parent
            if parent.dtype == torch.long and parent.device.type == "cpu" and (
                    parent.numel() == 0 or int(parent.max()) < 2**31 - 1):
                level.parent = parent.to(torch.int32)
            del parent
        self.node_arrays_released = True
        release_free_memory()

    def restore_node_arrays(self, tree: LevelTree) -> None:
        """Build what :meth:`release_node_arrays` dropped again, from ``tree`` (the same
        tree: the same values, the slot numbering unchanged)."""
        if not getattr(self, "node_arrays_released", False):
            return
        new_of_old_slot = torch.from_numpy(self.internal_slot_of_tree())
        self._lay_out_levels(tree, new_of_old_slot)
        del new_of_old_slot
        self._mark_stored_levels(tree.level_sizes())
        self.node_arrays_released = False

    @property
    def uniform(self) -> list[Tensor]:
        """[A_p] per player: 1 / (the number of actions of each slot's infoset), the
        strategy of regret matching without positive regrets (built on first use and
        kept; :meth:`uniform_strategy` builds one without keeping it)."""
        if self._uniform is None:
            self._uniform = [self.uniform_strategy(p) for p in range(self.num_players)]
        return self._uniform

    def uniform_strategy(self, player: int) -> Tensor:
        """[A_p] ``player``'s uniform strategy (a new tensor, see :attr:`uniform`)."""
        i0, i1 = self.infoset_range[player]
        uniform = uniform_strategy_of(self.local_action_infoset[player].cpu().numpy(), i1 - i0)
        return torch.from_numpy(uniform).to(device=self.device, dtype=self.dtype)

    def internal_slot_of_tree(self) -> np.ndarray:
        """[A] the internal slot of each tree slot (the inverse of
        :attr:`tree_slot_of_internal`; int32 where the count allows)."""
        order = self.tree_slot_of_internal.cpu().numpy()
        internal = np.empty_like(order)
        internal[order] = np.arange(self.num_slots, dtype=order.dtype)
        return internal

    @property
    def action_infoset(self) -> Tensor:
        """long [A]: internal infoset of each internal slot (built on demand)."""
        parts = [local.long() + i0 for local, (i0, _) in zip(self.local_action_infoset,
                                                             self.infoset_range)]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long,
                                                          device=self.device)

