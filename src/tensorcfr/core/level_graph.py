"""Passes over a level graph, shared by the tensor CFR solvers (game independent).

A *level graph* holds its nodes in levels ``0..L``; the edges of level ``l`` go from a node
of level ``l`` (``parent[e]``, an index local to level ``l``) to a node of level ``l+1``.
Two shapes of level occur:

* a **tree level** has exactly one edge per node of level ``l+1``, edge ``e`` leading to
  node ``e`` (``child`` is the identity and is passed as ``None``): the flattened games of
  :class:`~tensorcfr.core.tree.LevelTree` and Pasur's tree mode;
* a **dag level** names the child of each edge (``child[e]``, local to level ``l+1``) and
  several edges may lead to one node (states merged: Pasur's dag mode).

Both tensor CFR solvers of the package run the same whole-tensor steps over such graphs,
implemented once here:

* **reach, top-down** (:func:`propagate_reach`, :func:`forward_pass`): the reach of an edge
  is its parent's reach times an optional factor (the acting player's current strategy or
  a chance probability, ``None`` = 1); a node's reach is the sum over its incoming edges
  (on a tree level, the one edge's). On a dag level a merged node's reach is therefore the
  sum over its incoming paths, the counterfactual reach CFR needs there.
* **values, bottom-up** (:func:`gather_edge_values`, :func:`backup_values`,
  :func:`backward_pass`, :func:`backward_graph_pass`): an edge's value is its reward plus its
  child's value; the parent accumulates weight x edge value (weight = the mover's strategy
  or the chance probability).
* **regrets and averages per infoset-action slot** (:func:`counterfactual_regrets`,
  :func:`accumulate_regrets`, :func:`accumulate_average`): the instantaneous counterfactual
  regret ``cf_reach x (q - v)`` of each edge, added history by history into the cumulative
  regret of its slot and floored / discounted by the variant's rule
  (:mod:`tensorcfr.core.regret`), and own reach x current strategy accumulated into the
  (normalised) average strategy. Where every slot has a single edge (Pasur: each node is
  its own infoset) the slot index is ``None`` and the sums are plain elementwise adds.

Every helper writes into caller-owned buffers where it can (``out=`` / in place), so a
solver can precompute its per-level views once and run an iteration without allocating;
and each does exactly one fixed sequence of operations, so the results are bitwise
reproducible: segment sums are ``scatter_add_`` (sequential in edge order on CPU, hence
bitwise the same sums as ``index_add_`` and measured faster, see docs/generic_engine.md),
a product is computed once per edge, and nothing is reassociated.

Shapes: ``[N_l]`` nodes of level ``l``, ``[E_l]`` edges of level ``l``; index tensors are
integer (``scatter_add_`` targets need int64), floats are the solver's dtype.
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

import torch
from torch import Tensor

from tensorcfr.core.regret import CFRVariant, average_decay, discount_regrets

__all__ = [
    "ReachStep",
    "ValueStep",
    "GraphValueStep",
    "propagate_reach",
    "forward_pass",
    "gather_edge_values",
    "backup_values",
    "backward_pass",
    "backward_graph_pass",
    "counterfactual_regrets",
    "accumulate_regrets",
    "accumulate_average",
]

ReachStep = Tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor]]
"""One level of a forward pass: ``(reach_parent [N_l], parent [E_l], reach_child [N_{l+1}],
factor [E_l] or None, child [E_l] or None)``, see :func:`propagate_reach`."""

ValueStep = Tuple[Tensor, Optional[Tensor], Optional[Tensor], Tensor, Tensor, int]
"""One level of a tree-shaped backward pass: ``(edge_values, weight, scratch,
values_parent, parent, dim)``, see :func:`backup_values`."""

GraphValueStep = Tuple[Tensor, Optional[Tensor], Optional[Tensor], Tensor, Optional[Tensor],
                       Optional[Tensor], Tensor, Tensor]
"""One level of a graph backward pass: ``(values_child [N_{l+1}], child [E_l] or None,
reward [E_l] or None, edge_values [E_l] (written), weight [E_l] or None, scratch [E_l] or
None, values_parent [N_l], parent [E_l])``, see :func:`backward_graph_pass`."""


# --------------------------------------------------------------------------- reach


def propagate_reach(reach_parent: Tensor, parent: Tensor, reach_child: Tensor,
                    factor: Tensor | None = None, child: Tensor | None = None) -> Tensor:
    """One level down: ``reach_child[child[e]] += reach_parent[parent[e]] * factor[e]``.

    Args:
        reach_parent: [N_l] reach probabilities of the level's nodes.
        parent: [E_l] integer, the parent (in level ``l``) of each edge.
        reach_child: [N_{l+1}] written: on a tree level (``child`` None) each node gets its
            edge's reach; on a dag level it is zeroed, then each node gets the sum over its
            incoming edges, added in edge order.
        factor: [E_l] or None: multiplies each edge's reach (the acting player's strategy
            for that player's own reach, chance probabilities; None = 1).
        child: [E_l] int64, the child (in level ``l+1``) of each edge; None on a tree level.

    Returns:
        ``reach_child``.
    """
    if child is None:
        torch.index_select(reach_parent, 0, parent, out=reach_child)
        if factor is not None:
            reach_child.mul_(factor)
        return reach_child
    edge_reach = reach_parent.index_select(0, parent)
    if factor is not None:
        edge_reach.mul_(factor)
    reach_child.zero_()
    return reach_child.scatter_add_(0, child, edge_reach)


def forward_pass(steps: Iterable[ReachStep]) -> None:
    """Run :func:`propagate_reach` over precomputed level views, top-down.

    ``steps``: ``(reach_parent, parent, reach_child, factor, child)`` tuples in level order
    (a level's ``reach_child`` is usually the next step's ``reach_parent``); the reach of
    the first level's nodes must already be set (1 at the roots).
    """
    for reach_parent, parent, reach_child, factor, child in steps:
        if child is None:  # the common tree level, inline (no call per level)
            torch.index_select(reach_parent, 0, parent, out=reach_child)
            if factor is not None:
                reach_child.mul_(factor)
        else:
            propagate_reach(reach_parent, parent, reach_child, factor, child)


# --------------------------------------------------------------------------- values


def gather_edge_values(values_child: Tensor, child: Tensor | None = None,
                       reward: Tensor | None = None, out: Tensor | None = None) -> Tensor:
    """Each edge's value ``q[e] = values_child[child[e]] + reward[e]``.

    Args:
        values_child: [N_{l+1}] values of the next level's nodes.
        child: [E_l] integer or None (tree level: edge ``e`` leads to node ``e``).
        reward: [E_l] or None: what the edge itself scores.
        out: [E_l] buffer for the result (a new tensor when None).

    Returns:
        [E_l] edge values (``out`` when given).
    """
    if child is not None:
        if out is None:
            edge = values_child.index_select(0, child)
        else:
            edge = torch.index_select(values_child, 0, child, out=out)
        if reward is not None:
            edge.add_(reward)
        return edge
    if reward is not None:
        return torch.add(values_child, reward, out=out) if out is not None else \
            values_child + reward
    if out is None:
        return values_child.clone()
    return out.copy_(values_child)


def backup_values(edge_values: Tensor, weight: Tensor | None, scratch: Tensor | None,
                  values_parent: Tensor, parent: Tensor, dim: int = 0) -> Tensor:
    """One level up: ``values_parent[parent[e]] += weight[e] * edge_values[e]``.

    Args:
        edge_values: [E_l] (or [P, E_l] for one row per player) value of each edge.
        weight: [E_l] or None: the edge's probability under the profile being evaluated
            (strategy of the mover, chance probability); None = 1.
        scratch: [E_l] (shaped like ``edge_values``) buffer for the products, or None
            (a temporary is allocated).
        values_parent: [N_l] (or [P, N_l]) accumulated into, in place: it must already
            hold what the nodes are worth on their own (zeros, or terminal utilities).
        parent: int64 index shaped like ``edge_values`` (for 2-D values, the [E_l] parent
            index expanded to [P, E_l]).
        dim: the node dimension (the last one).

    Returns:
        ``values_parent``. Each parent's edges are added in edge order (the sums are
        sequential, so a node's value is bitwise reproducible).
    """
    if weight is None:
        weighted = edge_values
    elif scratch is None:
        weighted = edge_values * weight
    else:
        weighted = torch.mul(edge_values, weight, out=scratch)
    return values_parent.scatter_add_(dim, parent, weighted)


def backward_pass(steps: Iterable[ValueStep]) -> None:
    """Run :func:`backup_values` over precomputed views of a tree-shaped graph, bottom-up.

    ``steps``: ``(edge_values, weight, scratch, values_parent, parent, dim)`` tuples from
    the deepest level up, where ``edge_values`` is the next level's node values themselves
    (one edge per node, no reward on the edge). The values buffer must hold the terminal
    utilities and zeros elsewhere before the pass.
    """
    for edge_values, weight, scratch, values_parent, parent, dim in steps:
        if weight is None:
            values_parent.scatter_add_(dim, parent, edge_values)
        elif scratch is None:
            values_parent.scatter_add_(dim, parent, edge_values * weight)
        else:
            torch.mul(edge_values, weight, out=scratch)
            values_parent.scatter_add_(dim, parent, scratch)


def backward_graph_pass(steps: Iterable[GraphValueStep]) -> None:
    """Values up a level graph with edge rewards (tree or dag levels), bottom-up.

    ``steps``: ``(values_child, child, reward, edge_values, weight, scratch, values_parent,
    parent)`` tuples from the deepest level up. Each step fills ``edge_values`` [E_l] with
    ``values_child[child] + reward`` (:func:`gather_edge_values`; they stay there, e.g. for
    the regrets) and adds ``weight x edge value`` into ``values_parent``
    (:func:`backup_values`), which must hold zeros (or the nodes' own values) beforehand.
    """
    for values_child, child, reward, edge_values, weight, scratch, values_parent, parent \
            in steps:
        gather_edge_values(values_child, child, reward, out=edge_values)
        backup_values(edge_values, weight, scratch, values_parent, parent)


# --------------------------------------------------------------------------- regrets


def counterfactual_regrets(action_values: Tensor, node_values: Tensor,
                           counterfactual_reach: Tensor | float | None,
                           out: Tensor | None = None) -> Tensor:
    """Instantaneous counterfactual regret of each edge:
    ``(action_values - node_values) * counterfactual_reach``.

    Args:
        action_values: [E] value of taking the edge (``q(h, a)``), for the player who acts.
        node_values: [E] value of the edge's parent node ``v(h)``, gathered per edge.
        counterfactual_reach: [E] (or a number) the reach of ``h`` by everyone but the
            acting player (chance included); a sign may be folded in (e.g. -1 where the
            actor minimizes the stored values). None: no one else acts (factor 1, no
            multiply).
        out: [E] buffer for the result (may be ``action_values`` or ``node_values``).

    Returns:
        [E] regrets (``out`` when given).
    """
    if out is None:
        regrets = action_values - node_values
    else:
        regrets = torch.sub(action_values, node_values, out=out)
    if counterfactual_reach is None:
        return regrets
    return regrets.mul_(counterfactual_reach)


def accumulate_regrets(regrets: Tensor, instant_regrets: Tensor, variant: CFRVariant,
                       iteration: int, slot_index: Tensor | None = None) -> Tensor:
    """Add this iteration's instantaneous regrets to the cumulative ones, then apply the
    variant's floor / discount (:func:`~tensorcfr.core.regret.discount_regrets`), in place.

    Args:
        regrets: [A] cumulative regrets per slot (updated in place).
        instant_regrets: [E] regret of each edge (history-action pair).
        variant: the CFR update rule; ``iteration`` is ``t = 1, 2, ...``.
        slot_index: [E] int64, the slot of each edge; several histories of one infoset
            add into one slot one by one, in edge order (as OpenSpiel does, so regrets that
            cancel exactly stay exactly 0). None when edges and slots coincide (``E = A``).

    Returns:
        ``regrets``.
    """
    if slot_index is None:
        regrets.add_(instant_regrets)
    else:
        regrets.scatter_add_(0, slot_index, instant_regrets)
    return discount_regrets(regrets, variant, iteration, out=regrets)


def accumulate_average(average: Tensor, own_reach: Tensor, strategy: Tensor,
                       variant: CFRVariant, iteration: int, slot_index: Tensor | None = None,
                       slot_sums: Tensor | None = None) -> Tensor:
    """Accumulate ``own reach x current strategy`` into the normalised cumulative strategy,
    ``S = S * ((t-1)/t)^g + own_reach * strategy`` (:func:`~tensorcfr.core.regret.average_decay`;
    the multiply and the add are separate operations, not a fused ``addcmul_``).

    Args:
        average: [A] cumulative (normalised) strategy, updated in place.
        own_reach: [E] the acting player's own reach of each edge's parent. Overwritten
            (multiplied by the strategy) when ``slot_index`` is None.
        strategy: [A] the current strategy.
        variant, iteration: the averaging rule and ``t = 1, 2, ...``.
        slot_index: [E] int64 slot of each edge, or None when edges and slots coincide.
        slot_sums: [A] buffer for the own reach summed per slot (required with
            ``slot_index``); overwritten.

    Returns:
        ``average``.
    """
    if slot_index is None:
        weighted = own_reach
    else:
        if slot_sums is None:
            raise ValueError("accumulate_average: slot_sums is required with slot_index")
        slot_sums.zero_()
        weighted = slot_sums.scatter_add_(0, slot_index, own_reach)
    decay = average_decay(variant, iteration)
    if decay != 1.0:
        average.mul_(decay)
    return average.add_(weighted.mul_(strategy))
