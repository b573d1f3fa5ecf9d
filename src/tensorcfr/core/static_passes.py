"""The graph-ready CFR iteration in few operators (the CUDA-graph path of the tensor solver).

A CUDA graph replays a captured iteration without launch latency, but each kernel still
costs a few microseconds, so a replayed iteration costs about its number of kernels
(docs/engine_profile.md).  :class:`StaticPasses` runs the arithmetic of
:class:`~tensorcfr.core.solver.TensorCFRSolver`'s torch passes (the same elementwise
operations on the same values, every segment sum in the same sequential order, hence
bitwise the same results on the CPU, where ``scatter_add_``/``index_add_`` add in index
order) with fewer, larger operations and static shapes:

* one copy from a template row (terminal utilities, zeros elsewhere) resets a player's
  values, instead of a zeroing and a scatter per level;
* whole levels, not :data:`~tensorcfr.core.flat_tree.PASS_CHUNK` pieces (buffers are
  level-sized);
* a player's regret update covers all its levels at once: one gather from one *pool*
  tensor (values, reach rows, chance reach, counterfactual reach) brings each decision
  edge's child value, parent value, the others' reach and its own reach at the parent;
  then a subtraction, a product and two ``scatter_add_`` (the edges concatenated level by
  level, so each slot receives its histories in the torch passes' order, OpenSpiel's);
* its edge probabilities are set by one gather and one ``index_copy_``; the factors of its
  mixed levels by one ``where``;
* the forward pass gathers a run of levels where the row's player does not act, and the
  level after it, from their common ancestor level in one ``index_select``;
* regret matching as :func:`~tensorcfr.core.regret.regret_matching_into`, its two per-infoset
  totals zeroed together with the own-reach sums (one ``zero_``);
* with simultaneous updates the regret update, the floor/discount, the average and regret
  matching run once for all players.

The numbers that change with the iteration (average decay, DCFR/LCFR discounts) are read
from the solver's ``_static_scalars`` device tensor, so the same kernels on the same
addresses serve every iteration and nothing waits for the host.

Shapes: ``N`` nodes of all levels, flat by depth (level ``d`` at ``[level_start[d],
level_start[d+1])``); ``S`` stored nodes, the levels with inner nodes (a prefix of the
``N``); values ``[R, N]`` (``R`` = 1 with alternating updates, else one row per player),
reach ``[P, S]``, edge probabilities ``[N]``; ``A_p`` slots and ``I_p`` infosets of player
``p``, ``E_p`` its decision edges.  Nothing here knows a game: it reads the solver's
:class:`~tensorcfr.core.flat_tree.FlatTree` and writes the solver's state tensors (regrets,
cumulative strategy, strategy, predictions) in place.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from tensorcfr.core import level_graph
from tensorcfr.core.regret import regret_tolerance

__all__ = ["StaticPasses"]


class _Unit:
    """What one regret update touches: one player's (alternating updates) or every
    player's at once (simultaneous updates).  Built by :class:`StaticPasses`."""

    __slots__ = ("num_edges", "gather_index", "gathered", "slot", "regrets", "predictions",
                 "own", "average", "strategy", "infoset", "uniform", "totals", "abs_totals",
                 "positive_totals", "products", "predicted", "bound", "positive", "mask")

    num_edges: int
    gather_index: Tensor  # [K * E] positions in the pool: child, parent, (others), own
    gathered: Tensor  # [K, E] buffer
    slot: Tensor  # [E] int64, the scatter target of each edge (in ``regrets``)
    regrets: Tensor  # [A_u] view of the solver's regrets
    predictions: Tensor | None  # [A_u] view of the solver's predictions (pcfr+)
    own: Tensor  # [A_u] own reach summed per slot
    average: Tensor
    strategy: Tensor
    infoset: Tensor  # [A_u] infoset of each slot (local to the unit)
    uniform: Tensor
    totals: Tensor  # own, abs_totals and positive_totals: one buffer, zeroed at once
    abs_totals: Tensor
    positive_totals: Tensor
    products: list[tuple[list[Tensor], list[Tensor], Tensor, Tensor | None]]
    predicted: Tensor | None  # [A_u] regrets + predictions (pcfr+)
    bound: Tensor  # [A_u] scratch
    positive: Tensor  # [A_u] scratch
    mask: Tensor  # [A_u] bool scratch


class StaticPasses:
    """One CFR iteration of a :class:`~tensorcfr.core.solver.TensorCFRSolver` in few
    operators, with static shapes (see the module docstring); the solver builds it for
    ``cuda_graph=True`` (and ``static_iterations``) and runs :meth:`iteration` eagerly or
    under CUDA-graph capture.

    Bitwise the torch passes' results on the CPU for every variant, alternating and
    simultaneous updates, any number of players (tests/test_core_static.py).  Memory
    besides the solver's: the pool (values ``R x N``, reach ``P x S``, chance and
    counterfactual reach rows ``S`` each where used), a template ``[P, N]`` of the terminal
    values, the edge probabilities ``[N]`` when the solver keeps fewer, the gather buffer
    ``[K, E_p]`` and the index arrays (about ``K x E_p + S`` integers a player).
    """

    def __init__(self, solver: Any) -> None:
        """``solver``: the :class:`~tensorcfr.core.solver.TensorCFRSolver` whose flat tree,
        state tensors and ``_static_scalars`` this reads and writes (its ``_flat``,
        ``_regrets``, ``_cumulative_strategy``, ``_strategy``, ``_predictions``)."""
        flat = solver._flat
        self.flat = flat
        self.alternating = bool(solver.alternating)
        self.variant = solver.variant
        self.scalars = solver._static_scalars.unbind(0)  # decay, positive, negative
        kw: dict[str, Any] = {"dtype": solver.dtype, "device": solver.device}
        self._kw = kw
        self._zero = torch.zeros((), **kw)
        self._one = torch.ones((), **kw)
        self.tolerance = regret_tolerance(solver.dtype)
        n_players = flat.num_players
        starts = flat.level_start
        n = flat.num_nodes
        stored = flat.num_stored
        self.stored_levels = sum(1 for s in flat.stored_start if s is not None)
        assert all(flat.stored_start[d] == starts[d] for d in range(self.stored_levels))
        rows = 1 if self.alternating else n_players
        self._build_pool(rows, n, stored, **kw)
        self.template = torch.zeros((n_players, n), **kw)
        self._fill_template()
        self._build_edges(solver, n)
        self.backward = ([self._backward_steps(self.values[0], max(f, 1))
                          for f in flat.first_level] if self.alternating else
                         self._backward_steps(self.values, max(min(flat.first_level,
                                                                   default=0), 1)))
        self.reset_start = [starts[max(f - 1, 0)] for f in flat.first_level]
        self.mixed = [self._mixed_factor(p) for p in range(n_players)]
        self.forward = [self._forward_steps(p) for p in range(n_players)]
        self._build_units(solver)
        self.side_stream = (torch.cuda.Stream(solver.device)
                            if getattr(solver, "static_streams", False)
                            and solver.device.type == "cuda" else None)

    # ------------------------------------------------------------------ set-up
    def _build_pool(self, rows: int, n: int, stored: int, **kw: Any) -> None:
        """One float buffer holding every tensor the regret update gathers from: values
        [R, N], reach [P, S] (ones: levels above a player's first action keep reach 1),
        the chance reach [S] (when chance acts) and counterfactual-reach rows [C, S]
        (when a player's is a product of several rows)."""
        flat = self.flat
        n_players = flat.num_players
        has_chance = flat.has_chance
        self.others = n_players - 1 + (1 if has_chance else 0)  # rows in cf reach
        cf_rows = (1 if self.alternating else n_players) if self.others > 1 else 0
        self.offset_reach = rows * n
        self.offset_chance = self.offset_reach + n_players * stored
        self.offset_cf = self.offset_chance + (stored if has_chance else 0)
        total = self.offset_cf + cf_rows * stored
        self.pool = torch.zeros(total, **kw)
        self.values = self.pool[:rows * n].view(rows, n)
        self.reach = self.pool[self.offset_reach:self.offset_chance].view(n_players, stored)
        self.reach.fill_(1.0)
        self.chance = self.pool[self.offset_chance:self.offset_cf]
        self.cf = self.pool[self.offset_cf:total].view(cf_rows, stored)
        if has_chance:
            for d in range(self.stored_levels):
                s, e = flat.level_start[d], flat.level_start[d + 1]
                self.chance[s:e].copy_(flat.chance_reach[d])
        self.index_dtype = torch.int32 if total < 2**31 - 1 else torch.long
        # [R, largest level] products edge_prob x values of the backward pass
        self.scratch = torch.zeros((rows, flat.max_level_nodes), **kw)

    def _fill_template(self) -> None:
        """Each player's values before a backward pass: terminal utilities, zeros at inner
        nodes (all levels, the levels of terminals only included)."""
        flat = self.flat
        for d in range(len(flat.level_start) - 1):
            s, e = flat.level_start[d], flat.level_start[d + 1]
            utility = flat.utility_levels[d]
            if utility.shape[-1] == 0:
                continue
            index = flat.terminal_index[d]
            if index is None:  # a level of terminals only
                self.template[:, s:e].copy_(utility)
            else:
                self.template[:, s:e].index_copy_(1, index, utility.to(self.template.dtype))

    def _build_edges(self, solver: Any, n: int) -> None:
        """Edge probabilities of all N nodes (the solver's own buffer when it covers them
        all; the strategy is written there by :meth:`_set_edges`), and each player's
        decision edges as global node positions (child, parent) and slots."""
        flat = self.flat
        if flat.edge_prob_end == n:
            self.edge = solver._edge_prob
        else:
            self.edge = torch.ones(n, **self._kw)
            self.edge[:flat.edge_prob_end].copy_(flat.edge_prob)
        starts = flat.level_start
        self.child: list[Tensor] = []  # [E_p] int64 global child position
        self.parent: list[Tensor] = []  # [E_p] int64 global parent position
        self.slot: list[Tensor] = []  # [E_p] int64 slot local to p's range
        device = self.edge.device
        for levels in flat.player_levels:
            child, parent, slot = [], [], []
            for pl in levels:
                d = pl.depth
                count = int(pl.slot.shape[0])
                local = (torch.arange(count, device=device) if pl.child_index is None
                         else pl.child_index.long())
                child.append(local + starts[d])
                parent.append(pl.parent_index.long() + starts[d - 1])
                slot.append(pl.slot.long())
            empty = torch.zeros(0, dtype=torch.long, device=device)
            self.child.append(torch.cat(child) if child else empty)
            self.parent.append(torch.cat(parent) if parent else empty)
            self.slot.append(torch.cat(slot) if slot else empty)
        # set_edges: (strategy [A_p], slots [E_p], child positions [E_p]) per player
        self.strategy_slot = [s.to(self.index_dtype) for s in self.slot]

    def _backward_steps(self, values: Tensor, lowest: int) -> list[tuple]:
        """:func:`~tensorcfr.core.level_graph.backward_pass` steps over whole levels, the
        deepest first, up to level ``lowest`` (``values``: [N] or [R, N])."""
        flat = self.flat
        starts = flat.level_start
        dim = values.dim() - 1
        steps = []
        for d in range(len(starts) - 2, lowest - 1, -1):
            s, e = starts[d], starts[d + 1]
            if e == s:
                continue
            child = values[..., s:e]
            index = flat.parent_local[d].expand(child.shape)
            scratch = self.scratch[0, :e - s] if dim == 0 else self.scratch[:, :e - s]
            steps.append((child, self.edge[s:e], scratch, values[..., starts[d - 1]:s],
                          index, dim))
        return steps

    def _below(self, p: int, d: int) -> Tensor:
        """bool [N_d]: which nodes of level ``d`` hang below player ``p``'s decisions."""
        share = self.flat.level_share[p][d]
        size = self.flat.level_start[d + 1] - self.flat.level_start[d]
        if share == "mixed":
            return self.flat.mixed_mask[p][d]
        return torch.full((size,), share == "all", dtype=torch.bool, device=self.edge.device)

    def _mixed_factor(self, p: int) -> tuple[Tensor, Tensor, Tensor, int] | None:
        """(mask, edge probabilities, factor buffer, first node) over the node range of
        ``p``'s mixed stored levels: the factor is the edge probability below ``p``, 1
        elsewhere (one ``where`` for all the levels)."""
        flat = self.flat
        mixed = [d for d in flat.mixed_mask[p] if d < self.stored_levels]
        if not mixed:
            return None
        first, last = min(mixed), max(mixed)
        s, e = flat.level_start[first], flat.level_start[last + 1]
        mask = torch.cat([self._below(p, d) for d in range(first, last + 1)])
        return mask, self.edge[s:e], torch.ones(e - s, **self._kw), s

    def _forward_steps(self, p: int) -> list[tuple]:
        """Reach row ``p``, top-down: (ancestor level's reach, ancestor of each node,
        reach of the run of levels, factor or None, reach of the run's last level).  A run
        is the levels where ``p`` does not act plus the next level where it does (whose
        factor multiplies), all gathered from the level above the run."""
        flat = self.flat
        starts = flat.level_start
        row = self.reach[p]
        mixed = self.mixed[p]
        steps = []
        base = max(flat.first_level[p], 1) - 1
        run: list[int] = []
        for d in range(base + 1, self.stored_levels):
            run.append(d)
            share = flat.level_share[p][d]
            if share != "none" or d == self.stored_levels - 1:
                ancestors = []
                for level in run:  # each node's ancestor in level `base`
                    index = flat.parent_local[level]
                    for up in range(level - 1, base, -1):
                        index = flat.parent_local[up].index_select(0, index)
                    ancestors.append(index)
                gather = torch.cat(ancestors).to(self.index_dtype)
                if share == "none":
                    factor = None
                elif share == "all":
                    factor = self.edge[starts[d]:starts[d + 1]]
                else:
                    assert mixed is not None
                    factor = mixed[2][starts[d] - mixed[3]:starts[d + 1] - mixed[3]]
                steps.append((row[starts[base]:starts[base + 1]], gather,
                              row[starts[run[0]]:starts[d + 1]], factor,
                              row[starts[d]:starts[d + 1]]))
                base, run = d, []
        return steps

    def _products(self, p: int, out: Tensor, spare: Tensor | None
                  ) -> list[tuple[list[Tensor], list[Tensor], Tensor, Tensor | None]]:
        """How player ``p``'s counterfactual reach is multiplied into ``out`` [S]: the rows
        of the players before ``p``, those after it then chance, each group left to right,
        then (before) x (after), as the torch passes do level by level."""
        if self.others <= 1:
            return []
        n_players = self.flat.num_players
        before = [self.reach[q] for q in range(p)]
        after = [self.reach[q] for q in range(p + 1, n_players)]
        if self.flat.has_chance:
            after.append(self.chance)
        return [(before, after, out, spare)]

    def _other_offset(self, p: int, cf_row: int) -> int | None:
        """Pool offset of player ``p``'s counterfactual reach row (None: nobody else)."""
        flat = self.flat
        stored = flat.num_stored
        if self.others == 0:
            return None
        if self.others > 1:
            return self.offset_cf + cf_row * stored
        if flat.has_chance:  # one player and chance
            return self.offset_chance
        return self.offset_reach + (1 - p) * stored  # two players, no chance

    def _build_units(self, solver: Any) -> None:
        """The regret-update units: one per player (alternating updates; None for a player
        without decisions) or one for all players (simultaneous)."""
        flat = self.flat
        n_players = flat.num_players
        stored = flat.num_stored
        n = flat.num_nodes
        spare = (torch.zeros(stored, **self._kw)
                 if self.others > 1 and n_players > 2 else None)
        views = solver._slot_views
        if self.alternating:
            members = [[p] for p in range(n_players)]
        else:
            members = [list(range(n_players))]
        units: list[_Unit | None] = []
        for unit_players in members:
            edges = sum(int(self.slot[p].shape[0]) for p in unit_players)
            if edges == 0:
                units.append(None)
                continue
            rows: list[list[Tensor]] = [[], [], [], []]
            slots, infosets, uniforms, products = [], [], [], []
            for p in unit_players:
                value_offset = 0 if self.alternating else p * n
                cf_row = 0 if self.alternating else p
                rows[0].append(self.child[p] + value_offset)
                rows[1].append(self.parent[p] + value_offset)
                other = self._other_offset(p, cf_row)
                if other is not None:
                    rows[2].append(self.parent[p] + other)
                rows[3].append(self.parent[p] + (self.offset_reach + p * stored))
                slot_offset = 0 if self.alternating else views[p].start
                slots.append(self.slot[p] + slot_offset)
                infoset_offset = 0 if self.alternating else flat.infoset_range[p][0]
                infosets.append(flat.local_action_infoset[p].long() + infoset_offset)
                uniforms.append(flat.uniform[p])
                if self.others > 1:
                    products += self._products(p, self.cf[cf_row], spare)
            unit = _Unit()
            unit.num_edges = edges
            index = torch.cat([torch.cat(r) for r in rows if r])
            unit.gather_index = index.to(self.index_dtype)
            rows_used = sum(1 for r in rows if r)
            unit.gathered = torch.zeros((rows_used, edges), **self._kw)
            unit.slot = torch.cat(slots)
            first, last = views[unit_players[0]].start, views[unit_players[-1]].stop
            unit.regrets = solver._regrets[first:last]
            unit.predictions = (solver._predictions[first:last]
                                if self.variant.predictive else None)
            unit.average = solver._cumulative_strategy[first:last]
            unit.strategy = solver._strategy[first:last]
            infoset = torch.cat(infosets)
            num_slots = last - first
            num_infosets = (flat.infoset_range[unit_players[-1]][1]
                            - flat.infoset_range[unit_players[0]][0])
            unit.infoset = infoset.to(torch.int32 if num_infosets < 2**31 - 1 else torch.long)
            unit.uniform = torch.cat(uniforms)
            unit.totals = torch.zeros(num_slots + 2 * num_infosets, **self._kw)
            unit.own = unit.totals[:num_slots]
            unit.abs_totals = unit.totals[num_slots:num_slots + num_infosets]
            unit.positive_totals = unit.totals[num_slots + num_infosets:]
            unit.products = products
            unit.predicted = (torch.zeros(num_slots, **self._kw)
                              if self.variant.predictive else None)
            unit.bound = torch.zeros(num_slots, **self._kw)
            unit.positive = torch.zeros(num_slots, **self._kw)
            unit.mask = torch.zeros(num_slots, dtype=torch.bool, device=self.edge.device)
            units.append(unit)
        self.units = units
        # simultaneous updates set every player's edges at once
        self.all_slot = torch.cat([s + v.start for s, v in zip(self.slot, views)]).to(
            self.index_dtype)
        self.all_child = torch.cat(self.child)
        self.edge_buffer = torch.zeros(max(int(self.all_slot.shape[0]), 1), **self._kw)
        self.solver_strategy = solver._strategy
        self.player_strategy = [solver._strategy[v] for v in views]

    # ------------------------------------------------------------------ passes
    def iteration(self) -> None:
        """One iteration (every player): no host synchronisation, static shapes."""
        if self.alternating:
            self._alternating_iteration()
        else:
            self._simultaneous_iteration()

    def _alternating_iteration(self) -> None:
        """Player by player: values, regret update and regret matching, edges and reach."""
        side = self.side_stream
        main = None if side is None else torch.cuda.current_stream(side.device)
        forking = False
        for p, unit in enumerate(self.units):
            if unit is None:
                continue  # a player without decisions: nothing of the state changes
            start = self.reset_start[p]
            self.values[0, start:].copy_(self.template[p, start:])
            level_graph.backward_pass(self.backward[p])
            if forking:  # the last player's reach row, before the update reads it
                main.wait_stream(side)  # type: ignore[union-attr]
            self._update(unit)
            self._set_edges(self.player_strategy[p], self.strategy_slot[p], self.child[p])
            if side is None:
                self._refresh(p)
                continue
            # The reach row is read only by the next update: its forward pass runs on
            # the side stream beside the next player's values reset and backward pass
            # (branches of the CUDA graph), which read the edges, not the reach.
            side.wait_stream(main)  # type: ignore[arg-type]
            with torch.cuda.stream(side):
                self._refresh(p)
            forking = True
        if forking:
            main.wait_stream(side)  # type: ignore[union-attr]

    def _simultaneous_iteration(self) -> None:
        """Every player's values at once, one regret update for all, then the reach rows."""
        start = min(self.reset_start, default=0)
        self.values[:, start:].copy_(self.template[:, start:])
        level_graph.backward_pass(self.backward)
        unit = self.units[0]
        if unit is None:
            return
        self._update(unit)
        self._set_edges(self.solver_strategy, self.all_slot, self.all_child)
        for p in range(self.flat.num_players):
            self._refresh(p)

    def refresh_all(self) -> None:
        """Edge probabilities and every reach row from the current strategy (after the
        solver is built or its state restored)."""
        for p in range(self.flat.num_players):
            self._set_edges(self.player_strategy[p], self.strategy_slot[p], self.child[p])
            self._refresh(p)

    def _set_edges(self, strategy: Tensor, slot: Tensor, child: Tensor) -> None:
        """Strategy onto the edges below the decision nodes: one gather, one copy."""
        if child.shape[0] == 0:
            return
        gathered = torch.index_select(strategy, 0, slot,
                                      out=self.edge_buffer[:child.shape[0]])
        self.edge.index_copy_(0, child, gathered)

    def _refresh(self, p: int) -> None:
        """Player ``p``'s mixed-level factors and reach row (its edges already set)."""
        mixed = self.mixed[p]
        if mixed is not None:
            mask, edge, factor, _ = mixed
            torch.where(mask, edge, self._one, out=factor)
        for source, ancestor, run, factor, last in self.forward[p]:
            torch.index_select(source, 0, ancestor, out=run)
            if factor is not None:
                last.mul_(factor)

    def _update(self, unit: _Unit) -> None:
        """Regret and average updates, then regret matching, of the unit's players."""
        unit.totals.zero_()  # own reach sums and regret matching's totals
        for before, after, out, spare in unit.products:
            _product(before, after, out, spare)
        gathered = unit.gathered
        torch.index_select(self.pool, 0, unit.gather_index, out=gathered.view(-1))
        # cf_reach(h) (v(ha) - v(h)) per edge, added history by history into the regrets
        regret = torch.sub(gathered[0], gathered[1], out=gathered[1])
        if gathered.shape[0] == 4:
            regret.mul_(gathered[2])
        if unit.predictions is not None:
            unit.predictions.zero_()
            unit.predictions.scatter_add_(0, unit.slot, regret)
        unit.regrets.scatter_add_(0, unit.slot, regret)
        unit.own.scatter_add_(0, unit.slot, gathered[-1])
        self._finish(unit)
        self._regret_matching(unit)

    def _finish(self, unit: _Unit) -> None:
        """Floor / discount the regrets, add own reach x strategy into the average (the
        iteration's numbers read from the solver's scalars tensor)."""
        decay, positive, negative = self.scalars
        variant = self.variant
        regrets = unit.regrets
        if variant.floors_regrets:
            regrets.clamp_min_(0)
        elif variant.name == "lcfr":
            regrets.mul_(positive)
        elif variant.name == "dcfr":
            torch.ge(regrets, 0, out=unit.mask)
            regrets.mul_(torch.where(unit.mask, positive, negative, out=unit.bound))
        if variant.average_exponent() != 0.0:
            unit.average.mul_(decay)
        unit.average.add_(unit.own.mul_(unit.strategy))

    def _regret_matching(self, unit: _Unit) -> None:
        """:func:`~tensorcfr.core.regret.regret_matching_into` into the strategy (on
        regrets + predictions for pcfr+), with the unit's zeroed totals."""
        regrets = unit.regrets
        if unit.predicted is not None:
            assert unit.predictions is not None
            regrets = torch.add(regrets, unit.predictions, out=unit.predicted)
        out, infoset = unit.strategy, unit.infoset
        magnitude = torch.abs(regrets, out=out)
        unit.abs_totals.index_add_(0, infoset, magnitude)
        unit.abs_totals.mul_(self.tolerance)
        bound = torch.index_select(unit.abs_totals, 0, infoset, out=unit.bound)
        positive = torch.where(torch.gt(regrets, bound, out=unit.mask), regrets, self._zero,
                               out=unit.positive)
        unit.positive_totals.index_add_(0, infoset, positive)
        slot_totals = torch.index_select(unit.positive_totals, 0, infoset, out=unit.bound)
        torch.where(torch.gt(slot_totals, self._zero, out=unit.mask),
                    positive.div_(slot_totals), unit.uniform, out=out)


def _product(before: list[Tensor], after: list[Tensor], out: Tensor,
             spare: Tensor | None) -> None:
    """``out = (prod before) * (prod after)``, each product left to right (a group of one
    row is the row itself), as the solver's ``_counterfactual_reach``."""
    def group(rows: list[Tensor], into: Tensor | None) -> Tensor | None:
        if not rows:
            return None
        if len(rows) == 1:
            return rows[0]
        assert into is not None
        torch.mul(rows[0], rows[1], out=into)
        for row in rows[2:]:
            into.mul_(row)
        return into

    after_product = group(after, out)
    before_product = group(before, spare if after_product is not None else out)
    if before_product is None or after_product is None:
        result = after_product if before_product is None else before_product
        if result is not out:
            assert result is not None
            out.copy_(result)
        return
    torch.mul(before_product, after_product, out=out)
