"""The numpy fast path of one alternating-update CFR iteration, for small trees on CPU.

:class:`NumpyPasses` runs the operations of the torch passes of
:class:`~tensorcfr.core.solver.TensorCFRSolver` (same elementwise operations, same
sequential summation order) through numpy on views that share memory with the solver's
tensors: bitwise the same results, a fraction of the dispatch overhead.  The solver builds
it for float64 trees of at most ``TensorCFRSolver.numpy_fast_path_max_nodes`` nodes
(:data:`~tensorcfr.core.solver.NUMPY_FAST_PATH_MAX_NODES`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorcfr.core.flat_tree import uniform_strategy_of
from tensorcfr.core.regret import average_decay, discount_factor, regret_tolerance

__all__ = ["NumpyPasses", "SlotUpdates"]


class NumpyPasses:
    """CPU fast path of one alternating-update iteration for small trees.

    On a tree of a few dozen nodes each torch call costs a few microseconds of dispatch
    while the arithmetic takes nanoseconds; numpy dispatches the same work 2-4x faster.
    This class runs exactly the operations of the torch passes (same elementwise
    operations, same sequential summation order) on numpy views that share memory with
    the solver's tensors, so the results are bitwise identical to the torch path and
    every public method, checkpoint and resume of the solver is unchanged.  Segment sums
    into zeroed buffers use ``np.bincount`` (sequential, like ``scatter_add_``); sums into
    buffers that already hold values use ``np.add.at`` (element by element, like
    ``scatter_add_``).  Small trees never reach :data:`PASS_CHUNK`, so each level is one
    piece here as in the torch passes.
    """

    def __init__(self, solver: Any) -> None:
        """``solver``: the :class:`~tensorcfr.core.solver.TensorCFRSolver` whose buffers and
        per-level views the fast path reads and writes (it imports this module, not the
        reverse)."""
        flat = solver._flat
        n_players = flat.num_players
        self.num_players = n_players
        self.variant = solver.variant
        self.load = [[(values.numpy(), None if index is None else index.numpy(), util.numpy())
                      for values, index, util in views] for views in solver._load_player]
        self.value_rows = [row.numpy() for row in solver._value_rows]
        # (values_child, edge_prob, scratch, values_parent, parent_local, parent count)
        self.backward = [[(vc.numpy(), ep.numpy(), sc.numpy(), vp.numpy(),
                           index.numpy(), int(vp.shape[-1]))
                          for vc, ep, sc, vp, index, _ in views]
                         for views in solver._backward_player]
        # (strategy, slots, values_child, scratch, values_parent, parent_local, count)
        self.gathered = [[(st.numpy(), slot.numpy(), vc.numpy(), sc.numpy(), vp.numpy(),
                           index.numpy(), int(vp.shape[-1]))
                          for st, slot, _, vc, sc, vp, index, _ in views]
                         for views in solver._gathered_player]
        self.forward_player = [[(rp.numpy(), index.numpy(), ro.numpy(),
                                 None if factor is None else factor.numpy())
                                for rp, index, ro, factor, _ in views]
                               for views in solver._forward_player]
        self.set_edges = [[(ep.numpy(), None if child is None else child.numpy(), slot.numpy())
                           for ep, child, slot in views] for views in solver._edge_views]
        self.mixed_factors = [[(mask.numpy(), ep.numpy(), factor.numpy())
                               for mask, ep, factor in views]
                              for views in solver._mixed_factor_views]

        def update(views: list[tuple]) -> list[tuple]:
            out = []
            for before, after, own, values_parent, values_level, pieces in views:
                assert len(pieces) == 1  # small trees: one piece per level
                _, child_index, parent_index, slot = pieces[0]
                out.append(([r.numpy() for r in before], [r.numpy() for r in after],
                            own.numpy(), values_parent.numpy(), values_level.numpy(),
                            None if child_index is None else child_index.numpy(),
                            parent_index.numpy(), slot.numpy()))
            return out

        self.update = [update(views) for views in solver._update_views]
        self.slots = SlotUpdates(solver)
        self.regrets = self.slots.regrets
        self.predictions = self.slots.predictions
        self.strategy = self.slots.strategy

    @staticmethod
    def _forward(views: list[tuple]) -> None:
        for reach_parent, parent_local, reach_out, factor in views:
            reach_out[...] = reach_parent[parent_local]
            if factor is not None:
                reach_out *= factor

    def refresh_all(self) -> None:
        """As :meth:`TensorCFRSolver._refresh_all`."""
        for p in range(self.num_players):
            self._set_edges(p)
            self._forward(self.forward_player[p])

    def _set_edges(self, player: int) -> None:
        strategy = self.strategy[player]
        for edge_prob, child_index, slot in self.set_edges[player]:
            if child_index is None:
                edge_prob[...] = strategy[slot]
            else:
                edge_prob[child_index] = strategy[slot]
        for mask, edge_prob, factor in self.mixed_factors[player]:
            factor[...] = np.where(mask, edge_prob, 1.0)

    def iteration(self, t: int) -> None:
        """One alternating-update iteration ``t`` (as the torch path of
        :meth:`TensorCFRSolver.evaluate_and_update_policy`)."""
        n_players = self.num_players
        decay = average_decay(self.variant, t)
        for p in range(n_players):
            values = self.value_rows[p]
            for level_values, terminal_index, utility in self.load[p]:
                if terminal_index is not None:
                    level_values[...] = 0.0
                    level_values[terminal_index] = utility
                elif utility.shape[-1]:
                    level_values[...] = utility
                else:
                    level_values[...] = 0.0
            for strategy, slot, values_child, scratch, values_parent, parent_local, count in \
                    self.gathered[p]:
                np.multiply(values_child, strategy[slot], out=scratch)
                values_parent += np.bincount(parent_local, scratch, count)
            for values_child, edge_prob, scratch, values_parent, parent_local, count in \
                    self.backward[p]:
                np.multiply(values_child, edge_prob, out=scratch)
                values_parent += np.bincount(parent_local, scratch, count)
            if self.regrets[p].size:
                self._update_player(p, values, t, decay)
            self._set_edges(p)
            self._forward(self.forward_player[p])

    @staticmethod
    def _product(rows: list[np.ndarray]) -> np.ndarray | None:
        """Elementwise product of ``rows`` left to right (None for no rows)."""
        if not rows:
            return None
        product = rows[0]
        for row in rows[1:]:
            product = product * row
        return product

    def _update_player(self, p: int, values: np.ndarray, t: int, decay: float) -> None:
        """Regret, average and regret-matching updates of player ``p`` from its values."""
        regrets = self.regrets[p]
        num_slots = regrets.shape[0]
        own_reach = np.zeros(num_slots)
        if self.variant.predictive:
            instant = self.predictions[p]
            instant[...] = 0.0
        for before, after, own, values_parent, values_level, child_index, parent_index, \
                slot in self.update[p]:
            after_product = self._product(after)
            before_product = self._product(before)
            counterfactual = (after_product if before_product is None else before_product
                              if after_product is None else before_product * after_product)
            child = values_level if child_index is None else values_level[child_index]
            edge_regret = child - values_parent[parent_index]
            if counterfactual is not None:
                edge_regret *= counterfactual[parent_index]
            if self.variant.predictive:
                np.add.at(instant, slot, edge_regret)  # pcfr+
            np.add.at(regrets, slot, edge_regret)
            np.add.at(own_reach, slot, own[parent_index])
        self.slots.finish(p, own_reach, t, decay)


class SlotUpdates:
    """What follows a player's regret update in the numpy passes, on numpy views of the
    solver's slot-sized state (shared memory): discounting or flooring the regrets, the
    average strategy's update and regret matching, with the torch passes' elementwise
    operations (bitwise their results).  :class:`NumpyPasses` and
    :class:`~tensorcfr.core.lean_passes.LeanPasses` both finish each player's update here.
    """

    def __init__(self, solver: Any, keep_uniform: bool = True) -> None:
        """``solver``: the :class:`~tensorcfr.core.solver.TensorCFRSolver` whose per-player
        slot views (``_regret_views``, ``_average_views``...) this reads and writes;
        ``keep_uniform=False`` makes each player's uniform strategy when regret matching
        needs it instead of keeping one (the lean passes: 8 bytes a slot less)."""
        flat = solver._flat
        self.variant = solver.variant
        self.regrets = [t.numpy() for t in solver._regret_views]
        self.predictions = [t.numpy() for t in solver._prediction_views]  # pcfr+ only
        self.average = [t.numpy() for t in solver._average_views]
        self.strategy = [t.numpy() for t in solver._strategy_views]
        self.action_infoset = [t.numpy() for t in flat.local_action_infoset]
        self.uniform = [t.numpy() for t in flat.uniform] if keep_uniform else None
        self.num_infosets = [i1 - i0 for i0, i1 in flat.infoset_range]
        self.tolerance = regret_tolerance(solver.dtype)

    def discount(self, regrets: np.ndarray, t: int) -> None:
        """In-place :func:`~tensorcfr.core.regret.discount_regrets` (same elementwise
        operations) of ``regrets`` [A_p] at iteration ``t``."""
        name = self.variant.name
        if name == "cfr":
            return
        if self.variant.floors_regrets:
            np.maximum(regrets, 0.0, out=regrets)
        elif name == "lcfr":
            regrets *= discount_factor(t, 1.0)
        else:
            regrets *= np.where(regrets >= 0, discount_factor(t, self.variant.alpha),
                                discount_factor(t, self.variant.beta))

    def finish(self, p: int, own_reach: np.ndarray, t: int, decay: float) -> None:
        """After player ``p``'s instantaneous regrets were added to its regrets: discount
        them, add ``own_reach`` [A_p] (its own reach summed per slot; overwritten) times
        its strategy into the average (decayed by ``decay`` first), and set its strategy
        by regret matching (PCFR+: on regrets + prediction)."""
        regrets = self.regrets[p]
        self.discount(regrets, t)
        average = self.average[p]
        if decay != 1.0:
            average *= decay
        own_reach *= self.strategy[p]
        average += own_reach
        if self.variant.predictive:
            regrets = regrets + self.predictions[p]
        # (the rule of tensorcfr.core.regret.regret_matching: regrets within the rounding
        # bound of the infoset's sum of |regret| count as 0)
        action_infoset = self.action_infoset[p]
        bound = np.bincount(action_infoset, np.abs(regrets), self.num_infosets[p])
        bound *= self.tolerance
        positive = np.where(regrets > bound[action_infoset], regrets, 0.0)
        slot_totals = np.bincount(action_infoset, positive, self.num_infosets[p])[
            action_infoset]
        has_total = slot_totals > 0.0
        np.divide(positive, slot_totals, out=positive, where=has_total)
        uniform = (uniform_strategy_of(action_infoset, self.num_infosets[p])
                   if self.uniform is None else self.uniform[p])
        self.strategy[p][...] = np.where(has_total, positive, uniform)
