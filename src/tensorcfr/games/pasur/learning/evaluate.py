"""Exact quality of policy models on one deal (``tensorcfr pasur evaluate``).

A policy model's strategy depends on the paper's 58-column infoset row, which records *when*
each card was captured: it is a function of the history, not of the merged state. So its exact
best response is computed on the deal's full game tree (:func:`tensor_tree.build_tree_rounds`,
the paper's tree), where every node has its own feature row (:func:`features.level_features`):

1. the model predicts ``100 * sigma`` of every edge of the tree from the row of the node the
   edge leads to; predictions are clipped at 0 and renormalised over each node's legal plays
   (uniform when all are 0), exactly as the ``model`` player does in self-play;
2. backward induction over the whole game (:mod:`round_cfr`) gives, in points per game
   (Alex minus Bob):

   * ``self_play_value``: both sides follow the model;
   * ``best_response_to_alex`` / ``best_response_to_bob``: one side follows the model, the
     other best-responds; ``exploitability`` = ``best_response_to_bob -
     best_response_to_alex`` (what a best responder gains against each side, from the exact
     value, summed; 0 exactly for an optimal policy; the same definition as
     ``pasur exploitability`` for DCFR tables);
   * ``vs_exact_as_alex`` / ``vs_exact_as_bob``: the model against the ``exact`` player (ties
     broken uniformly among optimal plays, as in self-play); ``loss_vs_exact`` = the points
     the model loses per game against ``exact``, averaged over its two seats
     (``((exact - vs_exact_as_alex) + (vs_exact_as_bob - exact)) / 2``, never negative).

The uniform random policy is evaluated the same way as a baseline (``random``). A DCFR table
is a function of the merged state, so its exact exploitability on the (much smaller)
merged-state graph is the same number: ``pasur exploitability`` / the batch's
``dcfr_exploitability`` column.
"""

from __future__ import annotations

import os
import time
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor

from tensorcfr.errors import TensorCFRError

__all__ = ["evaluate_policies", "policy_report"]


def _normalize(parent: Tensor, weights: Tensor, num_nodes: int) -> Tensor:
    """Per-parent normalisation of non-negative edge weights; uniform where all are 0."""
    w = weights.to(torch.float64).clamp(min=0)
    w = torch.where(torch.isfinite(w), w, torch.zeros_like(w))
    total = torch.zeros(num_nodes, dtype=torch.float64).index_add_(0, parent, w)
    count = torch.zeros(num_nodes, dtype=torch.float64).index_add_(
        0, parent, torch.ones_like(w))
    t = total.index_select(0, parent)
    return torch.where(t > 0, w / torch.where(t > 0, t, 1.0),
                       1.0 / count.index_select(0, parent))


def _model_strategies(graphs: Sequence[Any], model: Any, chunk: int = 1 << 20
                      ) -> tuple[list[list[Tensor]], int, float]:
    """Per round, per level, the model's probabilities [E_l]; rows predicted; seconds."""
    from tensorcfr.games.pasur.solving.features import level_features

    out, rows, seconds = [], 0, 0.0
    for graph in graphs:
        levels = []
        for level in range(8):
            child = graph.edge_child[level]
            preds = []
            for lo in range(0, child.numel(), chunk):
                x = level_features(graph.node_state[level + 1], child[lo:lo + chunk])
                t0 = time.perf_counter()
                preds.append(torch.as_tensor(model.predict(x.cpu().numpy()),
                                             dtype=torch.float64))
                seconds += time.perf_counter() - t0
                rows += int(x.shape[0])
            pred = torch.cat(preds) if preds else torch.zeros(0, dtype=torch.float64)
            levels.append(_normalize(graph.edge_parent[level].cpu(), pred,
                                     graph.num_nodes[level]))
        out.append(levels)
    return out, rows, seconds


def _exact_strategies(graphs: Sequence[Any]) -> list[list[Tensor]]:
    """The exact player: uniform over each node's optimal plays (Alex max, Bob min)."""
    from tensorcfr.games.pasur.solving.round_cfr import _MAX, _MIN, _backward_game

    values = _backward_game(graphs, None, (_MAX, _MIN))
    out = []
    for position, graph in enumerate(graphs):
        levels = []
        for level in range(8):
            parent = graph.edge_parent[level]
            q = graph.edge_reward[level].double() + values[position][level + 1].double() \
                .index_select(0, graph.edge_child[level])
            if level % 2:
                q = -q
            best = torch.full((graph.num_nodes[level],), -float("inf"), dtype=torch.float64) \
                .scatter_reduce_(0, parent, q, reduce="amax")
            optimal = (q >= best.index_select(0, parent) - 1e-9).double()
            levels.append(_normalize(parent, optimal, graph.num_nodes[level]))
        out.append(levels)
    return out


def _mix(alex: Sequence[Sequence[Tensor]], bob: Sequence[Sequence[Tensor]]
         ) -> list[list[Tensor]]:
    """Alex's levels (even plies) from ``alex``, Bob's (odd) from ``bob``."""
    return [[(a if level % 2 == 0 else b)[level] for level in range(8)]
            for a, b in zip(alex, bob)]


def policy_report(graphs: Sequence[Any], strategies: Sequence[Sequence[Tensor]],
                  exact: Sequence[Sequence[Tensor]], exact_value: float) -> dict[str, float]:
    """The measures of the module docstring for one strategy profile on ``graphs``."""
    from tensorcfr.games.pasur.solving.round_cfr import exploitability, node_values

    report = exploitability(graphs, strategies)
    as_alex = float(node_values(graphs, _mix(strategies, exact))[0][0][0])
    as_bob = float(node_values(graphs, _mix(exact, strategies))[0][0][0])
    return {"self_play_value": report.value,
            "best_response_to_alex": report.best_response_to_alex,
            "best_response_to_bob": report.best_response_to_bob,
            "exploitability": report.exploitability,
            "vs_exact_as_alex": as_alex, "vs_exact_as_bob": as_bob,
            "loss_vs_exact": ((exact_value - as_alex) + (as_bob - exact_value)) / 2}


def evaluate_policies(deal: Sequence[int], models: Mapping[str, str | os.PathLike[str]], *,
                      max_memory: int | str | None = "4G", threads: int = 1,
                      include_random: bool = True) -> dict[str, Any]:
    """Exact exploitability and loss against ``exact`` of each model on ``deal``.

    Args:
        deal: 52 card indices.
        models: name -> policy model folder (``pasur train --out``).
        max_memory: bytes or a size such as ``"4G"`` that the game tree may take; a bigger
            tree is refused (:class:`MemoryLimitError`, one line) before it is built.
        threads: XGBoost threads.
        include_random: also evaluate the uniform random policy.

    Returns:
        ``{"deal", "exact_value", "tree_nodes", "seconds", "policies": {name: {...}}}``; each
        policy's measures are in points per game (module docstring), plus for models the
        rows predicted and prediction rows per second.
    """
    from tensorcfr.games.pasur.learning.policy_model import load_policy_model
    from tensorcfr.games.pasur.solving.round_cfr import minimax_value, uniform_strategies
    from tensorcfr.games.pasur.engine.rules import validate_deal
    from tensorcfr.games.pasur.solving.tensor_tree import build_tree_rounds

    deal = validate_deal(deal)
    if not models and not include_random:
        raise TensorCFRError("nothing to evaluate: give at least one --model")
    loaded = {name: load_policy_model(path, threads=threads) for name, path in models.items()}
    t0 = time.perf_counter()
    from tensorcfr.errors import MemoryLimitError

    try:
        graphs = build_tree_rounds(deal, max_memory=max_memory)
    except MemoryLimitError as exc:
        raise MemoryLimitError(str(exc).split("; use --mode dag")[0] + "; the exact "
                               "evaluation of a model needs the deal's full game tree: raise "
                               "--max-memory or pick a smaller deal") from None
    build_seconds = time.perf_counter() - t0
    exact_value = minimax_value(graphs)
    exact = _exact_strategies(graphs)
    policies: dict[str, Any] = {}
    if include_random:
        policies["random"] = policy_report(graphs, uniform_strategies(graphs), exact,
                                           exact_value)
    for name, model in loaded.items():
        strategies, rows, seconds = _model_strategies(graphs, model)
        report = policy_report(graphs, strategies, exact, exact_value)
        report.update(model=str(models[name]), rows_predicted=rows,
                      predict_rows_per_second=rows / seconds if seconds > 0 else None,
                      model_deals=len(model.manifest.get("deals", [])),
                      trained_on_this_deal=list(deal) in [list(d) for d in
                                                          model.manifest.get("deals", [])])
        policies[name] = report
    nodes = sum(sum(g.num_nodes) for g in graphs)
    return {"deal": list(deal), "exact_value": exact_value, "tree_nodes": int(nodes),
            "build_seconds": build_seconds, "seconds": time.perf_counter() - t0,
            "threads": threads, "policies": policies}
