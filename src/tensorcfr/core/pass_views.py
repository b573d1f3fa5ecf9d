"""The tensor views each pass of the tensor CFR solver touches, built once per solver.

The solver's per-node buffers (values ``[R, N_s]``, reach ``[P, N_s]`` over the ``N_s``
stored nodes, the edge probabilities ``[N]``) are only ever updated in place, so views of
them taken once stay valid: the passes then loop over ready-made tuples, one per level (and
per chunk of :data:`~tensorcfr.core.flat_tree.PASS_CHUNK` nodes of a long level), with no
slicing per iteration.  :class:`LevelViews` makes those tuples from a
:class:`~tensorcfr.core.flat_tree.FlatTree` and the buffers it is given; the tuple of each
pass is the argument list of the shared step in :mod:`tensorcfr.core.level_graph` (or of
the solver's own loop, documented per method).  Nothing here allocates a per-node buffer
except the mixed levels' forward factors (:meth:`LevelViews.mixed_factors`), and nothing
runs a pass.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tensorcfr.core.flat_tree import FlatTree, chunks

__all__ = ["LevelViews"]


class LevelViews:
    """Views of per-node buffers, level by level, for one :class:`FlatTree`.

    ``edge_prob`` is the solver's edge-probability buffer [N] (the flat tree's own).
    A ``row`` argument names the player whose values a view reads (``None``: every player,
    a ``[P, ...]`` buffer); ``lowest``/``first`` the shallowest level a pass reaches (a
    player's pass stops at the level of its shallowest decision node).
    """

    def __init__(self, flat: FlatTree, edge_prob: Tensor) -> None:
        self.flat = flat
        self.edge_prob = edge_prob
        starts = flat.level_start
        self.levels = [(starts[d], starts[d + 1]) for d in range(len(starts) - 1)]
        self.depth = len(self.levels)

    def utility(self, d: int, row: int | None) -> Tensor:
        """Level ``d``'s terminal utilities: [P, T_d], or player ``row``'s [T_d]."""
        level_utility = self.flat.utility_levels[d]
        return level_utility if row is None else level_utility[row]

    def node_view(self, buffer: Tensor, d: int, row: int | None | bool = False) -> Tensor:
        """Level ``d``'s part of a per-node buffer [..., stored nodes] (values of a
        level of terminals: the utilities of player ``row``, all players for None)."""
        o = self.flat.stored_start[d]
        if o is None:
            assert row is not False
            return self.utility(d, row)  # type: ignore[arg-type]
        s, e = self.levels[d]
        return buffer[..., o:o + e - s]

    def load(self, values: Tensor, row: int | None, lowest: int) -> list[tuple]:
        """(level values, terminal positions or None, terminal utilities) per level
        from ``lowest`` down: zeros at inner nodes and the payoffs at terminals before
        each backward pass."""
        flat = self.flat
        out = []
        for d in range(max(lowest, 0), self.depth):
            if flat.stored_start[d] is None:
                continue
            index = flat.terminal_index[d]
            if index is not None and values.dim() == 2:
                index = index.expand(values.shape[0], -1)
            out.append((self.node_view(values, d), index, self.utility(d, row)))
        return out

    def backward(self, values: Tensor, row: int | None, scratch: Tensor,
                 lowest: int) -> list[tuple]:
        """(child values, edge probabilities, scratch, parent values, parent index, dim)
        per chunk, bottom-up to level ``lowest`` (the arguments of
        :func:`tensorcfr.core.level_graph.backup_values`); a gathered last level is left
        to :meth:`gathered`."""
        flat = self.flat
        depth = self.depth
        out = []
        for d in range(depth - 1, max(lowest, 1) - 1, -1):
            if flat.gathered_last is not None and d == depth - 1:
                continue  # see gathered
            s, e = self.levels[d]
            values_level = self.node_view(values, d, row)
            values_parent = self.node_view(values, d - 1)
            for c0, c1 in chunks(e - s, flat.chunk):
                values_child = values_level[..., c0:c1]
                # scatter_add_ wants the index shaped like the source ([E] or [P, E]).
                index = flat.parent_local[d][c0:c1].expand(values_child.shape)
                out.append((values_child, self.edge_prob[s + c0:s + c1],
                            scratch[..., :c1 - c0], values_parent, index,
                            values.dim() - 1))
        return out

    def gathered(self, values: Tensor, row: int | None, scratch: Tensor, lowest: int,
                 strategy: list[Tensor], gathered_buffer: Tensor) -> list[tuple]:
        """The backward step of a last level whose edge probabilities are gathered
        from its player's strategy (``strategy``: the per-player strategy views):
        (strategy, slots, gathered buffer, then what :meth:`backward` gives) per chunk."""
        flat = self.flat
        gathered = flat.gathered_last
        d = self.depth - 1
        if gathered is None or d < max(lowest, 1):
            return []
        level = flat.player_levels[gathered][-1]
        assert level.depth == d and level.child_index is None
        values_level = self.node_view(values, d, row)
        values_parent = self.node_view(values, d - 1)
        out = []
        for c0, c1 in level.chunks:
            values_child = values_level[..., c0:c1]
            index = flat.parent_local[d][c0:c1].expand(values_child.shape)
            out.append((strategy[gathered], level.slot[c0:c1],
                        gathered_buffer[:c1 - c0], values_child, scratch[..., :c1 - c0],
                        values_parent, index, values.dim() - 1))
        return out

    def mixed_factors(self, player: int, **kw: object) -> dict[int, Tensor]:
        """Forward factors of ``player``'s mixed levels (its edge probability below it, 1
        elsewhere), a ones buffer [N_d] per stored level that has some (``kw``: dtype,
        device)."""
        flat = self.flat
        return {d: torch.ones(self.levels[d][1] - self.levels[d][0], **kw)  # type: ignore[arg-type]
                for d in flat.mixed_mask[player] if flat.stored_start[d] is not None}

    def mixed_factor_views(self, player: int, factors: dict[int, Tensor]) -> list[tuple]:
        """(mask of the nodes below ``player``, the level's edge probabilities, factor
        buffer) per mixed level."""
        mask = self.flat.mixed_mask[player]
        return [(mask[d], self.edge_prob[self.levels[d][0]:self.levels[d][1]], factor)
                for d, factor in factors.items()]

    def forward(self, reach: Tensor, row: int, first: int,
                mixed_factor: dict[int, Tensor]) -> list[tuple]:
        """Views of one reach row's forward pass ((parent reach, parent index, reach,
        factor or None, None) per level: the arguments of
        :func:`tensorcfr.core.level_graph.forward_pass`).  A level whose nodes all hang
        below the row's actor multiplies by ``edge_prob`` directly, a level with none of
        them only gathers (factor 1), and mixed levels read the row's factor buffer."""
        flat = self.flat
        out = []
        for d in range(max(first, 1), self.depth):
            if flat.stored_start[d] is None:
                continue  # reach at terminals is never read
            s, e = self.levels[d]
            share = flat.level_share[row][d]
            factor = (None if share == "none" else mixed_factor[d]
                      if share == "mixed" else self.edge_prob[s:e])
            out.append((self.node_view(reach, d - 1), flat.parent_local[d],
                        self.node_view(reach, d), factor, None))  # tree level: child None
        return out

    def edges(self, player: int) -> list[tuple]:
        """(the level's edge probabilities, child positions or None, slots) per level of
        ``player``'s decision edges that keeps edge probabilities: where its strategy is
        copied after each update."""
        flat = self.flat
        levels = self.levels
        return [(self.edge_prob[levels[pl.depth][0]:levels[pl.depth][1]],
                 pl.child_index, pl.slot) for pl in flat.player_levels[player]
                if levels[pl.depth][0] < flat.edge_prob_end]

    def updates(self, reach: Tensor, values: Tensor, player: int) -> list[tuple]:
        """``player``'s regret update, level by level: (the other reach rows at the
        parents before ``player``, those after it then chance (OpenSpiel's order), its
        own reach there, the parents' values, the level's values, and the edges as
        (count, child positions or None, parent index, slots) per chunk)."""
        flat = self.flat
        n_players = flat.num_players
        node_view = self.node_view
        out = []
        for pl in flat.player_levels[player]:
            d = pl.depth
            pieces = []
            for c0, c1 in pl.chunks:
                pieces.append((c1 - c0,
                               None if pl.child_index is None else pl.child_index[c0:c1],
                               pl.parent_index[c0:c1], pl.slot[c0:c1]))
            out.append(([node_view(reach[q], d - 1) for q in range(player)],
                        [node_view(reach[q], d - 1) for q in range(player + 1, n_players)]
                        + ([flat.chance_reach[d - 1]] if flat.has_chance else []),
                        node_view(reach[player], d - 1), node_view(values, d - 1),
                        node_view(values, d, player), pieces))
        return out
