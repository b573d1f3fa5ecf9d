"""Tensor CFR solvers on a :class:`~tensorcfr.core.tree.LevelTree` (any flattened game).

The solvers here take a built tree and know no game library: the OpenSpiel adapter that
accepts game strings (:mod:`tensorcfr.games.openspiel.solvers`) flattens the game and
subclasses them.

One iteration is a handful of whole-tensor operations per tree level:

* forward pass: reach probabilities ``reach[q, n]`` of every player ``q`` (and chance, row
  ``n_players``) at every node ``n``, gathered top-down from the parents and multiplied by
  the edge probability of the player acting at the parent;
* backward pass: expected values ``values[n]`` of the updating player under the current
  strategy profile, accumulated bottom-up into the parents with a segment sum
  (``scatter_add_``: measured faster here than ``index_add_`` and than per-level sparse CSR
  mat-vecs, see docs/generic_engine.md);
* regrets: ``cf_reach(h) * (v(h a) - v(h))`` for every decision edge, summed per
  infoset-action slot with ``scatter_add_`` (the counterfactual regret of CFR).

Nodes of all levels are concatenated into flat arrays ordered by depth, level ``d``
occupying ``[level_start[d], level_start[d+1])``; the per-level loops only slice them.
Internally the solver numbers infosets and slots player by player (stable), so each
player's regrets and averages are contiguous views; every public tensor is returned in
the tree's slot order.

Small trees on CPU (float64, alternating updates, at most ``NUMPY_FAST_PATH_MAX_NODES``
nodes) run the same operations through numpy on views of the same buffers
(:class:`_NumpyPasses`): bitwise the same results, a fraction of the dispatch overhead.

Variants and updates follow :mod:`tensorcfr.core.regret`; with ``alternating=True``
(the default, like OpenSpiel's ``CFRSolver``) player 0 is updated first and player 1
then plays against player 0's new strategy, and so on.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.regret import (
    CFRVariant,
    average_decay,
    discount_factor,
    discount_regrets,
    normalize_strategy,
    regret_matching,
)
from tensorcfr.core.policy_io import read_checkpoint, save_checkpoint
from tensorcfr.core.tree import KIND_CHANCE, LevelTree, estimate_tree_bytes
from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.utils.resources import (
    DEFAULT_THREADS,
    format_bytes,
    release_free_memory,
    set_threads,
)

__all__ = [
    "TensorCFRSolver",
    "CFRSolver",
    "CFRPlusSolver",
    "LinearCFRSolver",
    "DCFRSolver",
    "PCFRPlusSolver",
    "policy_values",
    "load_checkpoint",
    "resolve_device",
    "resolve_dtype",
]

NUMPY_FAST_PATH_MAX_NODES = 5_000
"""Default largest tree (nodes) run through the numpy fast path on CPU (see
:class:`_NumpyPasses`; measured in benchmarks/bench_generic_micro.py)."""

AUTO_FLOAT32_MIN_NODES = 5_000_000
"""``dtype="auto"`` (the default) solves trees of more than this many nodes in float32 (half
the memory of every float array, 1.4-2.2x faster in docs/benchmarks/openspiel.md) and
smaller ones in float64, where parity with OpenSpiel is tested to 1e-9 and better."""

_DTYPES = {"float64": torch.float64, "double": torch.float64, "float32": torch.float32,
           "float": torch.float32}


def resolve_dtype(dtype: torch.dtype | str, num_nodes: int | None = None) -> torch.dtype:
    """``torch.float64``/``"float64"`` or ``torch.float32``/``"float32"``; ``"auto"``:
    float32 for trees of more than :data:`AUTO_FLOAT32_MIN_NODES` nodes (``num_nodes``),
    else float64.  Anything else is a one-line :class:`TensorCFRError`."""
    if isinstance(dtype, str) and dtype.strip().lower() == "auto":
        large = num_nodes is not None and num_nodes > AUTO_FLOAT32_MIN_NODES
        return torch.float32 if large else torch.float64
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float64, torch.float32):
            raise TensorCFRError(f"dtype must be float64 or float32, got {dtype}")
        return dtype
    key = str(dtype).strip().lower().removeprefix("torch.")
    if key not in _DTYPES:
        raise TensorCFRError(f"dtype must be float64, float32 or auto, got {dtype!r}")
    return _DTYPES[key]


def resolve_device(device: torch.device | str | None) -> torch.device:
    """A usable torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``...); one-line
    :class:`TensorCFRError` otherwise (see :func:`tensorcfr.utils.device.resolve_device`:
    ``meta`` and unavailable devices are refused)."""
    from tensorcfr.utils.device import resolve_device as _resolve

    return _resolve(device, "device")


class _FlatTree:
    """Flat, depth-ordered, solver-ready arrays precomputed once from a LevelTree."""

    def __init__(self, tree: LevelTree, device: torch.device, dtype: torch.dtype) -> None:
        n_players = tree.num_players
        self.num_players = n_players
        sizes = tree.level_sizes()
        starts = [0]
        for size in sizes:
            starts.append(starts[-1] + size)
        self.level_start = starts
        self.num_nodes = starts[-1]
        n_nodes = self.num_nodes

        # --- internal infoset / slot numbering: grouped by player, stable within a player.
        num_infosets = tree.num_infosets
        player = tree.infoset_player.cpu()
        num_actions = tree.infoset_num_actions.cpu()
        old_offset = tree.infoset_action_offset.cpu()
        order = torch.argsort(player * max(num_infosets, 1) + torch.arange(num_infosets),
                              stable=True)  # internal infoset -> tree infoset
        new_num_actions = num_actions[order]
        new_offset = torch.zeros(num_infosets, dtype=torch.long)
        if num_infosets:
            new_offset[1:] = torch.cumsum(new_num_actions, 0)[:-1]
        num_slots = int(num_actions.sum()) if num_infosets else 0
        self.num_slots = num_slots
        self.num_infosets = num_infosets
        internal_infoset = torch.repeat_interleave(torch.arange(num_infosets), new_num_actions)
        within = torch.arange(num_slots) - new_offset[internal_infoset]
        old_slot = old_offset[order][internal_infoset] + within  # internal slot -> tree slot
        new_of_old_slot = torch.empty(num_slots, dtype=torch.long)
        new_of_old_slot[old_slot] = torch.arange(num_slots)
        # Slot permutations, only gathered with (index_select): int32 where it fits.
        slot_index_dtype = torch.int32 if num_slots < 2**31 - 1 else torch.long
        self.tree_slot_of_internal = old_slot.to(device=device, dtype=slot_index_dtype)
        self.internal_slot_of_tree = new_of_old_slot.to(device=device, dtype=slot_index_dtype)
        sorted_player = player[order]
        self.infoset_range: list[tuple[int, int]] = []
        self.slot_range: list[tuple[int, int]] = []
        for p in range(n_players):
            i0 = int(torch.searchsorted(sorted_player, p, right=False))
            i1 = int(torch.searchsorted(sorted_player, p, right=True))
            a0 = int(new_offset[i0]) if i0 < num_infosets else num_slots
            a1 = int(new_offset[i1]) if i1 < num_infosets else num_slots
            self.infoset_range.append((i0, i1))
            self.slot_range.append((a0, a1))
        self.action_infoset = internal_infoset.to(device)

        # --- flat node arrays in depth order, filled level by level into preallocated
        # arrays of the smallest dtype that holds them (the peak memory of the build is
        # the tree plus these few temporaries).
        index_small = torch.int32 if n_nodes < 2**31 - 1 else torch.long
        parent_g = torch.zeros(n_nodes, dtype=index_small)  # global parent id (root: 0)
        kind = torch.empty(n_nodes, dtype=torch.int8)
        edge_slot = torch.empty(n_nodes, dtype=slot_index_dtype)  # internal slot, -1 none
        chance_factor = torch.ones(n_nodes, dtype=dtype)
        for d, level in enumerate(tree.levels):
            s, e = starts[d], starts[d + 1]
            if d > 0:
                torch.add(level.parent.cpu(), starts[d - 1], out=parent_g[s:e])
            kind[s:e] = level.kind.cpu()
            slot = level.parent_action_slot.cpu().long()
            edge_slot[s:e] = torch.where(slot >= 0, new_of_old_slot[slot.clamp_min(0)], slot)
            del slot

        # Local parent index inside the previous level, per level (scatter_add_ targets):
        # the tree's own parent arrays, shared rather than copied when already in place.
        self.parent_local: list[Tensor] = [torch.zeros(0, dtype=torch.long, device=device)]
        for d in range(1, len(sizes)):
            self.parent_local.append(tree.levels[d].parent.to(device=device, dtype=torch.long))
        parent_kind = kind[parent_g]
        del kind
        parent_kind[0] = KIND_CHANCE  # the root has no parent edge; treat it as chance (prob 1)
        # Utilities are not copied: the passes read the tree's per-level arrays (see
        # TensorCFRSolver._utility_levels).  Chance factor: the chance probability of the
        # edge into a node below a chance node, 1 elsewhere.
        for d, level in enumerate(tree.levels):
            s, e = starts[d], starts[d + 1]
            below_chance = parent_kind[s:e] == KIND_CHANCE
            chance_factor[s:e] = torch.where(below_chance, level.chance_prob.cpu().to(dtype),
                                             chance_factor[s:e])
        self.chance_factor = chance_factor.to(device)
        del chance_factor
        # Per-player index arrays over the *decision edges* (child of a decision node).
        # Indices only read by index_select are int32 (half the memory of int64; the
        # scatter/index_copy targets must stay int64).
        # scatter_add_ / index_add_ indices stay int64: int32 ones measured 3-5% slower.
        scatter_index = torch.long
        self.edge_child: list[Tensor] = []  # children of p's decision nodes (global ids)
        self.edge_reach_index: list[Tensor] = []  # [(P+1) * E] flat reach index, int32
        self.edge_slot_local: list[Tensor] = []  # edge slot, local to p's slot range
        self.local_action_infoset: list[Tensor] = []  # [A_p] infoset local to p's range
        self.uniform: list[Tensor] = []  # [A_p] 1 / (number of actions of the slot's infoset)
        self.first_level: list[int] = []  # first level holding a child of p's decision node
        self.edge_child_parent: list[Tensor] = []  # [2 * E] child ids then parent ids, int32
        counts = new_num_actions.to(torch.float64)
        # level_share[q][d]: do "all", "none" or some ("mixed") nodes of level d hang below
        # an actor of reach row q (player q, or chance for q = n_players)?
        self.level_share: list[list[str]] = []
        for q in range(n_players + 1):
            actor = KIND_CHANCE if q == n_players else q
            per_level = [0] + [int((parent_kind[starts[d]:starts[d + 1]] == actor).sum())
                               for d in range(1, len(sizes))]
            self.level_share.append(["none" if c == 0 else "all" if c == size else "mixed"
                                     for c, size in zip(per_level, sizes)])
        for p in range(n_players):
            children = torch.nonzero(parent_kind == p).squeeze(1)
            children = children[children > 0]
            i0, _ = self.infoset_range[p]
            a0, a1 = self.slot_range[p]
            parents = parent_g[children].long()
            self.edge_child.append(children.to(device))
            # Flat indices into reach [P+1, N] (rows 0..P) of the edges' parents: one
            # index_select along dim 0 (faster than along dim 1 of the 2-D buffer).
            reach_index = torch.arange(n_players + 1)[:, None] * n_nodes + parents[None, :]
            self.edge_reach_index.append(reach_index.reshape(-1).to(
                device=device, dtype=torch.int32 if (n_players + 1) * n_nodes < 2**31 - 1
                else torch.long))
            self.edge_slot_local.append((edge_slot[children].long() - a0).to(
                device=device, dtype=scatter_index))
            self.local_action_infoset.append((internal_infoset[a0:a1] - i0).to(
                device=device, dtype=scatter_index))
            self.uniform.append(counts[internal_infoset[a0:a1]].reciprocal().to(device=device,
                                                                                dtype=dtype))
            first = len(sizes)
            if children.numel():
                first = int(torch.searchsorted(torch.tensor(starts), int(children[0]),
                                               right=True)) - 1
            self.first_level.append(first)
            self.edge_child_parent.append(torch.cat((children, parents)).to(device=device,
                                                                            dtype=index_small))
        self.device = device
        self.dtype = dtype


def _regret_matching_uniform(regrets: Tensor, action_infoset: Tensor, totals: Tensor,
                             uniform: Tensor, zero: Tensor, out: Tensor) -> Tensor:
    """:func:`regret_matching` with preallocated buffers (``totals`` [I], ``zero`` a 0-dim
    tensor, the uniform strategy [A]), written into ``out``; bitwise the same result."""
    positive = regrets.clamp_min(0)
    totals.zero_()
    totals.index_add_(0, action_infoset, positive)
    slot_totals = totals.index_select(0, action_infoset)
    return torch.where(slot_totals > zero, positive.div_(slot_totals), uniform, out=out)


class _NumpyPasses:
    """CPU fast path of one alternating-update iteration for small trees.

    On a tree of a few dozen nodes each torch call costs a few microseconds of dispatch
    while the arithmetic takes nanoseconds; numpy dispatches the same work 2-4x faster.
    This class runs exactly the operations of the torch passes (same elementwise
    operations, same sequential summation order) on numpy views that share memory with
    the solver's tensors, so the results are bitwise identical to the torch path and
    every public method, checkpoint and resume of the solver is unchanged.  Segment sums
    into zeroed buffers use ``np.bincount`` (sequential, like ``scatter_add_``); the
    cumulative regrets use ``np.add.at`` (history by history into ``R``, like the torch
    path and OpenSpiel).
    """

    def __init__(self, solver: "TensorCFRSolver") -> None:
        flat = solver._flat
        n_players = flat.num_players
        self.num_players = n_players
        self.variant = solver.variant
        self.utility_rows = [solver._utility_row(p).numpy() for p in range(n_players)]
        self.value_rows = [row.numpy() for row in solver._value_rows]
        # (values_child, edge_prob, scratch, values_parent, parent_local, parent count)
        self.backward = [[(vc.numpy(), ep.numpy(), sc.numpy(), vp.numpy(),
                           index.numpy(), int(vp.shape[-1]))
                          for vc, ep, sc, vp, index, _ in views]
                         for views in solver._backward_player]

        def forward(views: list[tuple]) -> list[tuple]:
            return [(rp.numpy(), index.numpy(), ro.numpy(),
                     None if factor is None else factor.numpy())
                    for rp, index, ro, factor, _ in views]

        self.forward_player = [forward(views) for views in solver._forward_player]
        self.forward_chance = forward(solver._forward_chance)
        self.edge_prob = solver._edge_prob.numpy()
        self.factor_rows = [None if row is None else row.numpy() for row in solver._factor_rows]
        self.reach_flat = solver._reach_flat.numpy()
        self.edge_reach_index = [t.numpy().astype(np.intp) for t in flat.edge_reach_index]
        self.edge_child = [t.numpy() for t in flat.edge_child]
        self.edge_child_parent = [t.numpy().astype(np.intp) for t in flat.edge_child_parent]
        self.edge_slot = [t.numpy() for t in flat.edge_slot_local]
        self.action_infoset = [t.numpy() for t in flat.local_action_infoset]
        self.uniform = [t.numpy() for t in flat.uniform]
        self.regrets = [t.numpy() for t in solver._regret_views]
        self.predictions = [t.numpy() for t in solver._prediction_views]  # pcfr+ only
        self.average = [t.numpy() for t in solver._average_views]
        self.strategy = [t.numpy() for t in solver._strategy_views]
        self.num_infosets = [i1 - i0 for i0, i1 in flat.infoset_range]

    @staticmethod
    def _forward(views: list[tuple]) -> None:
        for reach_parent, parent_local, reach_out, factor in views:
            reach_out[...] = reach_parent[parent_local]
            if factor is not None:
                reach_out *= factor

    def refresh_all(self) -> None:
        """As :meth:`TensorCFRSolver._refresh_all`."""
        self._forward(self.forward_chance)
        for p in range(self.num_players):
            self._set_edges(p)
            self._forward(self.forward_player[p])

    def _set_edges(self, player: int) -> None:
        probs = self.strategy[player][self.edge_slot[player]]
        children = self.edge_child[player]
        self.edge_prob[children] = probs
        factor_row = self.factor_rows[player]
        if factor_row is not None:
            factor_row[children] = probs

    def _discount(self, regrets: np.ndarray, t: int) -> None:
        """In-place :func:`discount_regrets` (same elementwise operations)."""
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

    def iteration(self, t: int) -> None:
        """One alternating-update iteration ``t`` (as the torch path of
        :meth:`TensorCFRSolver.evaluate_and_update_policy`)."""
        n_players = self.num_players
        decay = average_decay(self.variant, t)
        for p in range(n_players):
            values = self.value_rows[p]
            values[...] = self.utility_rows[p]
            for values_child, edge_prob, scratch, values_parent, parent_local, count in \
                    self.backward[p]:
                np.multiply(values_child, edge_prob, out=scratch)
                values_parent += np.bincount(parent_local, scratch, count)
            if self.regrets[p].size:
                self._update_player(p, values, t, decay)
            self._set_edges(p)
            self._forward(self.forward_player[p])

    def _update_player(self, p: int, values: np.ndarray, t: int, decay: float) -> None:
        """Regret, average and regret-matching updates of player ``p`` from its values."""
        n_players = self.num_players
        regrets = self.regrets[p]
        slots = self.edge_slot[p]
        n_edges = slots.shape[0]
        # reach rows 0..P at the edges' parents, [P+1, E]
        reach = self.reach_flat[self.edge_reach_index[p]].reshape(n_players + 1, n_edges)
        edge_values = values[self.edge_child_parent[p]]
        edge_regret = edge_values[:n_edges] - edge_values[n_edges:]
        if n_players == 2:
            edge_regret *= reach[1 - p] * reach[2]
        else:
            counterfactual_reach = np.prod(reach[p + 1:], 0)
            if p > 0:
                counterfactual_reach = np.prod(reach[:p], 0) * counterfactual_reach
            edge_regret *= counterfactual_reach
        num_slots = regrets.shape[0]
        if self.variant.predictive:
            self.predictions[p][...] = np.bincount(slots, edge_regret, num_slots)  # pcfr+
        np.add.at(regrets, slots, edge_regret)
        self._discount(regrets, t)
        own_reach = np.bincount(slots, reach[p], num_slots)
        average = self.average[p]
        if decay != 1.0:
            average *= decay
        own_reach *= self.strategy[p]
        average += own_reach
        # Regret matching (PCFR+: on regrets + prediction), into the strategy buffer.
        if self.variant.predictive:
            regrets = regrets + self.predictions[p]
        positive = np.maximum(regrets, 0.0)
        action_infoset = self.action_infoset[p]
        slot_totals = np.bincount(action_infoset, positive, self.num_infosets[p])[
            action_infoset]
        has_total = slot_totals > 0.0
        np.divide(positive, slot_totals, out=positive, where=has_total)
        self.strategy[p][...] = np.where(has_total, positive, self.uniform[p])


class TensorCFRSolver:
    """Tensor CFR for any game flattened into a :class:`LevelTree`.

    Args:
        game: the game flattened into a :class:`LevelTree` (for an OpenSpiel game string
            or ``pyspiel.Game`` use :mod:`tensorcfr.games.openspiel.solvers`, whose solvers
            flatten it first and then run this class).
        algo: ``"cfr"``, ``"cfr+"``, ``"lcfr"``, ``"dcfr"`` or ``"pcfr+"`` (or a
            :class:`CFRVariant`).
        alternating: alternating updates (default, as OpenSpiel) or simultaneous updates.
        alpha, beta, gamma: Discounted-CFR parameters (``gamma`` also sets the averaging
            exponent of ``pcfr+``); ``None`` keeps the defaults 1.5, 0, 2.
        device: torch device (``"cpu"``, ``"cuda"``...).
        dtype: ``"auto"`` (default: float64, the precision of the parity tests, up to
            :data:`AUTO_FLOAT32_MIN_NODES` nodes, float32 above; :attr:`dtype_auto` says
            whether it was chosen so), ``torch.float64`` or ``torch.float32``.
        max_memory_bytes: refuse (``MemoryLimitError``) when the estimated memory of the tree
            plus solver exceeds this many bytes; ``None`` means no limit.
        threads: torch intra-op threads, set for the whole process with
            ``torch.set_num_threads`` when the solver is built (default 1, as the CLI's
            ``--threads``: on the 2-core reference machine torch's default thread count made
            ``CFRSolver("tiny_bridge_2p").iterate(100)`` 30x slower, 68-80 ms against
            2.3-2.6 ms per iteration; see docs/benchmarks/threads.md).  ``None`` leaves
            torch's setting as it is.

    The API mirrors OpenSpiel's ``CFRSolver``: :meth:`evaluate_and_update_policy` runs one
    iteration, :meth:`average_policy` / :meth:`current_policy` return the policies (here as
    tensors over the tree's action slots; the OpenSpiel subclasses add
    ``average_policy_tabular`` for an OpenSpiel ``TabularPolicy``).
    """

    numpy_fast_path_max_nodes: int = NUMPY_FAST_PATH_MAX_NODES
    """Trees up to this many nodes on CPU with alternating updates use :class:`_NumpyPasses`
    (the same operations dispatched through numpy: identical results, less overhead)."""

    def __init__(self, game: LevelTree, algo: str | CFRVariant = "cfr",
                 alternating: bool = True, alpha: float | None = None,
                 beta: float | None = None, gamma: float | None = None,
                 device: torch.device | str | None = "cpu",
                 dtype: torch.dtype | str = "auto",
                 max_memory_bytes: int | None = None,
                 threads: int | None = DEFAULT_THREADS) -> None:
        if threads is not None:
            set_threads(threads)
        self.threads = torch.get_num_threads()
        self.variant = algo if isinstance(algo, CFRVariant) else CFRVariant.parse(
            algo, alpha, beta, gamma)
        self.alternating = bool(alternating)
        self.device = resolve_device(device)
        resolve_dtype(dtype)  # a bad value fails before the (possibly long) walk
        tree = self._build_tree(game, max_memory_bytes)
        self.dtype = resolve_dtype(dtype, tree.num_nodes)
        self.dtype_auto = isinstance(dtype, str) and dtype.strip().lower() == "auto"
        estimate = estimate_tree_bytes(tree.num_nodes, tree.num_slots, tree.num_infosets,
                                       tree.num_players,
                                       torch.empty((), dtype=self.dtype).element_size())
        self.estimated_memory_bytes = estimate
        if max_memory_bytes is not None and estimate > max_memory_bytes:
            raise MemoryLimitError(
                f"{tree.game_string}: the solver needs about {format_bytes(estimate)} "
                f"({tree.num_nodes} nodes, {tree.num_slots} action slots), more than the "
                f"limit of {format_bytes(max_memory_bytes)}")
        started = time.perf_counter()
        self.tree = tree
        self._flat = _FlatTree(tree, self.device, self.dtype)
        self._build_utilities()
        self.setup_seconds = tree.setup_seconds + (time.perf_counter() - started)
        self.iteration = 0
        flat = self._flat
        slots = flat.num_slots
        n_players = flat.num_players
        kw = {"dtype": self.dtype, "device": self.device}
        # Internal slot order (grouped by player); per-player views are taken once.
        self._regrets = torch.zeros(slots, **kw)
        self._cumulative_strategy = torch.zeros(slots, **kw)
        # PCFR+ only: last instantaneous regrets (other variants keep an empty tensor and
        # report zeros).
        self._predictions = torch.zeros(slots if self.variant.predictive else 0, **kw)
        self._strategy = regret_matching(self._regrets, flat.action_infoset, flat.num_infosets)
        self._slot_views = [slice(a0, a1) for a0, a1 in flat.slot_range]
        # Persistent per-node buffers (in-place updates, so per-level views stay valid).
        n_nodes = flat.num_nodes
        self._edge_prob = flat.chance_factor.clone()  # probability of the edge into each node
        self._reach = torch.ones((n_players + 1, n_nodes), **kw)  # reach[q, n]
        self._reach_flat = self._reach.view(-1)
        # Expected values of the updating player(s) and the edge_prob x values scratch:
        # alternating updates handle one player at a time, so one row serves them all.
        value_rows = 1 if self.alternating else n_players
        self._values = torch.zeros((value_rows, n_nodes), **kw)
        self._scratch = torch.zeros((value_rows, n_nodes), **kw)
        starts = flat.level_start
        self._levels = [(starts[d], starts[d + 1]) for d in range(len(starts) - 1)]
        self._slot_state_views()
        self._build_pass_views()
        self._numpy_passes: _NumpyPasses | None = None
        if (self.alternating and self.device.type == "cpu" and self.dtype == torch.float64
                and flat.num_nodes <= self.numpy_fast_path_max_nodes):
            self._numpy_passes = _NumpyPasses(self)
        self._refresh_all()
        release_free_memory()  # the set-up's temporaries

    @property
    def uses_numpy_fast_path(self) -> bool:
        """True when iterations run through the numpy fast path (small trees on CPU)."""
        return self._numpy_passes is not None

    def _slot_state_views(self) -> None:
        """Per-player views of the slot-indexed state, and per-player slot/infoset buffers
        (the state tensors are only ever updated in place, so the views stay valid)."""
        views = self._slot_views
        self._regret_views = [self._regrets[v] for v in views]
        self._infoset_totals = [torch.zeros(i1 - i0, dtype=self.dtype, device=self.device)
                                for i0, i1 in self._flat.infoset_range]
        self._zero = torch.zeros((), dtype=self.dtype, device=self.device)
        # Own reach summed per slot: written after the backward pass, so it lives in the
        # (then unused) edge_prob x values scratch buffer (N > slots of any player).
        scratch = self._scratch.view(-1)
        self._own_reach_sums = [scratch[:v.stop - v.start] for v in views]
        self._average_views = [self._cumulative_strategy[v] for v in views]
        self._strategy_views = [self._strategy[v] for v in views]
        self._prediction_views = ([self._predictions[v] for v in views]
                                  if self.variant.predictive else [])

    def _build_pass_views(self) -> None:
        """Precompute, per level, the tensor views the forward/backward passes touch.

        The buffers are only ever updated in place, so these views stay valid; this removes
        all slicing from the per-iteration loops."""
        flat = self._flat
        levels = self._levels
        parent_local = flat.parent_local
        depth = len(levels)

        def backward_views(values: Tensor, scratch: Tensor, lowest: int) -> list[tuple]:
            out = []
            for d in range(depth - 1, max(lowest, 1) - 1, -1):
                ps, pe = levels[d - 1]
                s, e = levels[d]
                # scatter_add_ wants the index shaped like the source ([E] or [P, E]).
                index = parent_local[d].expand(values[..., s:e].shape)
                out.append((values[..., s:e], self._edge_prob[s:e], scratch[..., s:e],
                            values[..., ps:pe], index, values.dim() - 1))
            return out

        def forward_views(row: int, reach: Tensor, factor: Tensor | None,
                          first: int) -> list[tuple]:
            """Views of one reach row's forward pass.  A level whose nodes all hang below
            the row's actor multiplies by ``edge_prob`` directly, a level with none of them
            only gathers (factor 1), and only mixed levels read the ``factor`` row."""
            out = []
            for d in range(max(first, 1), depth):
                ps, pe = levels[d - 1]
                s, e = levels[d]
                share = flat.level_share[row][d]
                level_factor = (self._edge_prob[s:e] if share == "all" else
                                None if share == "none" else factor[s:e])  # type: ignore[index]
                out.append((reach[ps:pe], parent_local[d], reach[s:e], level_factor, 0))
            return out

        n_players = flat.num_players
        # Per-player edge buffers: gathered reach rows, child/parent values, edge regrets.
        self._edge_buffers: list[dict[str, Any]] = []
        kw = {"dtype": self.dtype, "device": self.device}
        # Players are updated one after the other, so they share one set of edge buffers
        # (sized for the player with the most decision edges).
        max_edges = max((int(t.numel()) for t in flat.edge_child), default=0)
        reach_storage = torch.zeros((n_players + 1) * max_edges, **kw)
        values_storage = torch.zeros(2 * max_edges, **kw)
        regret_storage = torch.zeros(max_edges, **kw)
        for p in range(n_players):
            n_edges = int(flat.edge_child[p].numel())
            # reach rows at the edge parents [P+1, E]; child values, parent values [2, E].
            reach = reach_storage[:(n_players + 1) * n_edges].view(n_players + 1, n_edges)
            values = values_storage[:2 * n_edges].view(2, n_edges)
            self._edge_buffers.append({
                "reach_flat": reach.view(-1),
                "reach_before": reach[:p] if p > 0 else None,  # players 0..p-1
                "reach_after": reach[p + 1:],  # players p+1..n-1, then chance
                "cf_factors": [reach[q] for q in range(n_players + 1) if q != p],
                "own_reach": reach[p],
                "values_flat": values.view(-1), "child_values": values[0],
                "parent_values": values[1],
                "regret": regret_storage[:n_edges]})
        first = flat.first_level
        lowest_all = min(first) if first else depth
        # A player's backward pass stops at the level of its shallowest decision node
        # (values above it are never read).
        self._value_rows = [self._values[0 if self.alternating else p]
                            for p in range(n_players)]
        scratch_rows = [self._scratch[0 if self.alternating else p] for p in range(n_players)]
        self._backward_player = [backward_views(self._value_rows[p], scratch_rows[p], first[p])
                                 for p in range(n_players)]
        self._backward_all = ([] if self.alternating else
                              backward_views(self._values, self._scratch, lowest_all))
        # Factor rows (edge probability where row q acts, 1 elsewhere) are only read on
        # "mixed" levels: kept only for the rows that have one (chance's row is constant).
        self._needs_factor_row = [any(share == "mixed" for share in flat.level_share[p])
                                  for p in range(n_players)]
        self._factor_rows: list[Tensor | None] = [
            torch.ones(flat.num_nodes, **kw) if self._needs_factor_row[p] else None
            for p in range(n_players)]
        self._forward_player = [forward_views(p, self._reach[p], self._factor_rows[p], first[p])
                                for p in range(n_players)]
        self._forward_chance = forward_views(n_players, self._reach[n_players],
                                             flat.chance_factor, 1)

    def _build_utilities(self) -> None:
        """Terminal utilities as one contiguous row per player [P, N] (built before the
        other buffers, so the moment both copies exist is not the set-up's peak)."""
        flat = self._flat
        n_players = flat.num_players
        kw = {"dtype": self.dtype, "device": self.device}
        # Terminal utilities, one contiguous row per player [P, N] (each iteration starts
        # with one contiguous copy of a row: a strided copy out of the tree's [N_d, P]
        # levels measured ~8% slower per iteration on liars_dice).  When the tree's
        # levels already have the solver's device and dtype, they are rebound to views
        # of these rows ([N_d, P], same values), so one copy of the utilities exists.
        tree = self.tree
        utility = torch.zeros((n_players, flat.num_nodes), **kw)
        share = all(level.utility.device == self.device and level.utility.dtype == self.dtype
                    for level in tree.levels)
        for d, level in enumerate(tree.levels):
            s, e = (flat.level_start[d], flat.level_start[d + 1])
            utility[:, s:e].copy_(level.utility.t())
            if share:
                level.utility = utility[:, s:e].t()
        self._utility_by_player = utility
        self._utility_rows = [utility[p] for p in range(n_players)]
        if share:
            release_free_memory()  # the tree's former per-level utility arrays

    def _load_utilities(self, values: Tensor, player: int | None) -> None:
        """Fill ``values`` [N] with ``player``'s utilities (``player`` None: ``values`` is
        [P, N], every player), zeros at non-terminal nodes (as the tree stores them)."""
        if player is None:
            values.copy_(self._utility_by_player)
        else:
            values.copy_(self._utility_rows[player])

    def _utility_row(self, player: int) -> Tensor:
        """``player``'s utilities [N] (read by the numpy fast path, small trees)."""
        return self._utility_rows[player]

    @classmethod
    def checkpoint_class(cls) -> "type[TensorCFRSolver]":
        """The class :func:`load_checkpoint` builds for this solver family (one that takes
        ``algo``): :class:`TensorCFRSolver` here."""
        return TensorCFRSolver

    def _build_tree(self, game: Any, max_memory_bytes: int | None) -> LevelTree:
        """The :class:`LevelTree` to solve for ``game``: ``game`` itself here; game adapters
        (e.g. the OpenSpiel solvers) override this to flatten a game string first."""
        if isinstance(game, LevelTree):
            return game
        raise TensorCFRError(
            f"{type(self).__name__} takes a LevelTree, not {type(game).__name__} {game!r:.80}; "
            "for an OpenSpiel game use tensorcfr.games.openspiel.CFRSolver (and the other "
            "solvers there), or flatten it first with tensorcfr.games.openspiel.flatten_game")

    # ------------------------------------------------------------------ properties
    @property
    def game_string(self) -> str:
        """Canonical game string of the solved game."""
        return self.tree.game_string

    @property
    def num_players(self) -> int:
        """Number of players."""
        return self.tree.num_players

    @property
    def algo(self) -> str:
        """Name of the CFR variant."""
        return self.variant.name

    # ------------------------------------------------------------------ passes
    def _refresh_all(self) -> None:
        """Recompute edge probabilities and every reach row from the current strategy."""
        if self._numpy_passes is not None:
            self._numpy_passes.refresh_all()
            return
        self._forward(self._forward_chance)
        for p in range(self._flat.num_players):
            self._set_edges(p)
            self._forward(self._forward_player[p])

    def _refresh_player(self, player: int) -> None:
        """After ``player``'s strategy changed: update its edges and its reach row."""
        self._set_edges(player)
        self._forward(self._forward_player[player])

    @staticmethod
    def _forward(views: list[tuple]) -> None:
        """Top-down pass over precomputed level views: ``reach[n] = reach[parent(n)] *
        factor[n]`` (levels above a player's first action keep reach 1)."""
        for reach_parent, parent_local, reach_out, factor, dim in views:
            torch.index_select(reach_parent, dim, parent_local, out=reach_out)
            if factor is not None:
                reach_out.mul_(factor)

    @staticmethod
    def _backward(views: list[tuple]) -> None:
        """Bottom-up pass: ``values[h] += sum_children edge_prob * values[child]`` (in place;
        the values buffer must hold the terminal utilities and zeros elsewhere)."""
        for values_child, edge_prob, scratch, values_parent, parent_local, dim in views:
            torch.mul(values_child, edge_prob, out=scratch)
            values_parent.scatter_add_(dim, parent_local, scratch)

    def _player_update(self, player: int, values: Tensor) -> None:
        """Regret and average updates of ``player`` from its expected values [N]."""
        flat = self._flat
        regrets = self._regret_views[player]
        if regrets.numel() == 0:
            return
        t = self.iteration
        # Reach rows at the parent of every decision edge of the player, gathered in one
        # go: [P+1, E], rows players 0..P-1 then chance.
        buffers = self._edge_buffers[player]
        torch.index_select(self._reach_flat, 0, flat.edge_reach_index[player],
                           out=buffers["reach_flat"])
        # Instantaneous counterfactual regret of each edge: cf_reach(h) (v(ha) - v(h)),
        # cf_reach multiplied in OpenSpiel's order (players before p) x (after p, chance).
        torch.index_select(values, 0, flat.edge_child_parent[player], out=buffers["values_flat"])
        edge_regret = buffers["regret"]
        torch.sub(buffers["child_values"], buffers["parent_values"], out=edge_regret)
        factors = buffers["cf_factors"]
        if len(factors) == 2:  # two players: one other player and chance
            edge_regret.mul_(factors[0] * factors[1])
        else:
            before, after = buffers["reach_before"], buffers["reach_after"]
            counterfactual_reach = torch.prod(after, 0)
            if before is not None:
                counterfactual_reach = torch.prod(before, 0) * counterfactual_reach
            edge_regret.mul_(counterfactual_reach)
        slot_index = flat.edge_slot_local[player]
        if self.variant.predictive:
            instant = self._prediction_views[player]
            instant.zero_()
            instant.scatter_add_(0, slot_index, edge_regret)
        # Regrets are added history by history straight into the cumulative regrets (as
        # OpenSpiel does: the same rounding, so regrets that cancel exactly stay exactly 0),
        # then floored / discounted.
        regrets.scatter_add_(0, slot_index, edge_regret)
        discount_regrets(regrets, self.variant, t, out=regrets)
        # Own reach summed over the infoset's histories (one edge per history and slot),
        # times the current strategy: this iteration's contribution to the average.
        # (update_average(average, own_reach x strategy); a separate multiply and add, not
        # addcmul_, measured to round differently from the numpy fast path's a + b * c.)
        own_reach = self._own_reach_sums[player]
        own_reach.zero_()
        own_reach.scatter_add_(0, slot_index, buffers["own_reach"])
        average = self._average_views[player]
        decay = average_decay(self.variant, t)
        if decay != 1.0:
            average.mul_(decay)
        average.add_(own_reach.mul_(self._strategy_views[player]))

    def _player_strategy(self, player: int) -> None:
        """Regret matching for ``player`` (PCFR+: on regrets + prediction)."""
        flat = self._flat
        regrets = self._regret_views[player]
        if regrets.numel() == 0:
            return
        if self.variant.predictive:
            regrets = regrets + self._prediction_views[player]
        _regret_matching_uniform(regrets, flat.local_action_infoset[player],
                                 self._infoset_totals[player], flat.uniform[player], self._zero,
                                 out=self._strategy_views[player])

    def _set_edges(self, player: int) -> None:
        """Copy player ``player``'s current strategy onto its edges (edge_prob and factor)."""
        flat = self._flat
        probs = self._strategy_views[player].index_select(0, flat.edge_slot_local[player])
        children = flat.edge_child[player]
        self._edge_prob.index_copy_(0, children, probs)
        factor_row = self._factor_rows[player]
        if factor_row is not None:
            factor_row.index_copy_(0, children, probs)

    # ------------------------------------------------------------------ public API
    def evaluate_and_update_policy(self) -> None:
        """Run one CFR iteration (all players; alternating or simultaneous updates)."""
        self.iteration += 1
        flat = self._flat
        n_players = flat.num_players
        if self._numpy_passes is not None:
            self._numpy_passes.iteration(self.iteration)
        elif self.alternating:
            for p in range(n_players):
                values = self._value_rows[p]
                self._load_utilities(values, p)
                self._backward(self._backward_player[p])
                self._player_update(p, values)
                self._player_strategy(p)
                self._refresh_player(p)
        else:
            self._load_utilities(self._values, None)
            self._backward(self._backward_all)
            for p in range(n_players):
                self._player_update(p, self._value_rows[p])
            for p in range(n_players):
                self._player_strategy(p)
                self._refresh_player(p)

    def iterate(self, num_iterations: int = 1,
                callback: Callable[["TensorCFRSolver"], None] | None = None) -> None:
        """Run ``num_iterations`` iterations; ``callback(self)`` after each one if given."""
        if num_iterations < 0:
            raise TensorCFRError(f"number of iterations must be >= 0, got {num_iterations}")
        for _ in range(num_iterations):
            self.evaluate_and_update_policy()
            if callback is not None:
                callback(self)

    def _to_tree_order(self, internal: Tensor) -> Tensor:
        return internal.index_select(0, self._flat.internal_slot_of_tree)

    def _from_tree_order(self, tree_order: Tensor) -> Tensor:
        return tree_order.to(device=self.device, dtype=self.dtype).index_select(
            0, self._flat.tree_slot_of_internal)

    def current_policy(self) -> Tensor:
        """Current strategy [A] over the tree's action slots (probabilities per infoset)."""
        return self._to_tree_order(self._strategy)

    def average_policy(self) -> Tensor:
        """Average strategy [A] over the tree's action slots (the Nash approximation)."""
        flat = self._flat
        avg = normalize_strategy(self._cumulative_strategy, flat.action_infoset,
                                 flat.num_infosets)
        return self._to_tree_order(avg)

    def cumulative_regrets(self) -> Tensor:
        """Cumulative regrets [A] in the tree's slot order (after discounting/flooring)."""
        return self._to_tree_order(self._regrets)

    def cumulative_strategy(self) -> Tensor:
        """Cumulative (weighted, normalised by ``t^g``) strategy [A] in tree slot order."""
        return self._to_tree_order(self._cumulative_strategy)

    def average_policy_values(self) -> Tensor:
        """Expected utility [P] of each player when all play the average policy."""
        return policy_values(self.tree, self.average_policy())

    def parameters(self) -> dict[str, Any]:
        """JSON-ready solver parameters (stored in checkpoints)."""
        return {"algo": self.variant.name, "alpha": self.variant.alpha,
                "beta": self.variant.beta, "gamma": self.variant.gamma,
                "alternating": self.alternating,
                "dtype": str(self.dtype).removeprefix("torch.")}

    # ------------------------------------------------------------------ state (checkpoints)
    def state_tensors(self) -> dict[str, Tensor]:
        """Solver state in the tree's slot order (CPU tensors): regrets, cumulative strategy,
        current strategy and predictions."""
        return {
            "regrets": self._to_tree_order(self._regrets).cpu(),
            "cumulative_strategy": self._to_tree_order(self._cumulative_strategy).cpu(),
            "strategy": self._to_tree_order(self._strategy).cpu(),
            "predictions": (self._to_tree_order(self._predictions).cpu()
                            if self.variant.predictive else
                            torch.zeros(self._flat.num_slots, dtype=self.dtype)),
        }

    def load_state_tensors(self, state: dict[str, Tensor], iteration: int) -> None:
        """Restore what :meth:`state_tensors` returned (and the iteration count)."""
        expected = self._flat.num_slots
        for name in ("regrets", "cumulative_strategy", "strategy", "predictions"):
            if name not in state or tuple(state[name].shape) != (expected,):
                raise TensorCFRError(f"solver state {name!r} missing or not of shape ({expected},)")
        self._regrets.copy_(self._from_tree_order(state["regrets"]))
        self._cumulative_strategy.copy_(self._from_tree_order(state["cumulative_strategy"]))
        self._strategy.copy_(self._from_tree_order(state["strategy"]))
        if self.variant.predictive:
            self._predictions.copy_(self._from_tree_order(state["predictions"]))
        self._reach.fill_(1.0)
        self.iteration = int(iteration)
        self._refresh_all()

    def save(self, path: str) -> None:
        """Write a checkpoint (see :func:`tensorcfr.core.policy_io.save_checkpoint`)."""
        save_checkpoint(self, path)

    @classmethod
    def load(cls, path: str, game: Any = None, device: torch.device | str | None = "cpu",
             max_memory_bytes: int | None = None) -> "TensorCFRSolver":
        """A solver of this class restored from a checkpoint (see :func:`load_checkpoint`;
        ``game`` is the :class:`LevelTree`, or whatever this class's ``_build_tree``
        accepts)."""
        return load_checkpoint(path, game, device=device, max_memory_bytes=max_memory_bytes,
                               solver_class=cls)


def load_checkpoint(path: str, game: Any, device: torch.device | str | None = "cpu",
                    max_memory_bytes: int | None = None,
                    solver_class: "type[TensorCFRSolver] | None" = None) -> TensorCFRSolver:
    """Rebuild a solver from a checkpoint and restore its state (bitwise resume).

    Args:
        path: a file written by :meth:`TensorCFRSolver.save`.
        game: the :class:`LevelTree` it was computed on (game adapters' solver classes
            also accept what their ``_build_tree`` takes, e.g. an OpenSpiel game string).
        device, max_memory_bytes: as for :class:`TensorCFRSolver`.
        solver_class: the solver family to build (default :class:`TensorCFRSolver`); its
            :meth:`~TensorCFRSolver.checkpoint_class` is built, since the checkpoint says
            which algorithm ran (``CFRSolver.load`` of a CFR+ checkpoint gives CFR+).

    Raises:
        CorruptFileError: unreadable or incomplete file, or a checkpoint of another game.
    """
    data = read_checkpoint(path)
    cls = (solver_class or TensorCFRSolver).checkpoint_class()
    params = data.parameters
    solver = cls(game, algo=params["algo"], alternating=params["alternating"],
                 alpha=params["alpha"], beta=params["beta"], gamma=params["gamma"],
                 device=device, dtype=params["dtype"], max_memory_bytes=max_memory_bytes)
    data.check_tree(solver.tree)
    solver.load_state_tensors(data.state, data.iteration)
    return solver


class CFRSolver(TensorCFRSolver):
    """Vanilla CFR with alternating updates (OpenSpiel ``CFRSolver``)."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="cfr", **kwargs)


class CFRPlusSolver(TensorCFRSolver):
    """CFR+: regret matching+, linear averaging, alternating updates (OpenSpiel ``CFRPlusSolver``)."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="cfr+", **kwargs)


class LinearCFRSolver(TensorCFRSolver):
    """Linear CFR (OpenSpiel ``LCFRSolver``)."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="lcfr", **kwargs)


class DCFRSolver(TensorCFRSolver):
    """Discounted CFR(alpha, beta, gamma) (OpenSpiel ``DCFRSolver``)."""

    def __init__(self, game: LevelTree, alpha: float = 1.5,
                 beta: float = 0.0, gamma: float = 2.0, **kwargs: Any) -> None:
        super().__init__(game, algo="dcfr", alpha=alpha, beta=beta, gamma=gamma, **kwargs)


class PCFRPlusSolver(TensorCFRSolver):
    """Predictive CFR+ (Farina, Kroer & Sandholm 2021), quadratic averaging by default."""

    def __init__(self, game: LevelTree, **kwargs: Any) -> None:
        super().__init__(game, algo="pcfr+", **kwargs)


def policy_values(tree: LevelTree, policy: Tensor) -> Tensor:
    """Expected utility [P] of every player when all follow ``policy`` [A] (tree slot order).

    One bottom-up pass over the tree (float64 on the tree's device).
    """
    if tuple(policy.shape) != (tree.num_slots,):
        raise TensorCFRError(f"policy must have shape ({tree.num_slots},), got "
                             f"{tuple(policy.shape)}")
    dtype = torch.float64
    policy = policy.to(device=tree.device, dtype=dtype)
    values = tree.levels[-1].utility.to(dtype).t().clone()
    for d in range(tree.depth - 1, 0, -1):
        level = tree.levels[d]
        edge = torch.where(level.parent_action_slot >= 0,
                           policy[level.parent_action_slot.clamp_min(0)],
                           level.chance_prob.to(dtype))
        parent_values = tree.levels[d - 1].utility.to(dtype).t().clone()
        parent_values.index_add_(1, level.parent, values * edge)
        values = parent_values
    result = values[:, 0]
    if not bool(torch.isfinite(result).all()):  # pragma: no cover - defensive
        raise TensorCFRError("non-finite policy value")
    return result
