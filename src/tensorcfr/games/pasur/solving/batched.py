"""Many Pasur deals solved as one problem: the disjoint union of their round graphs.

Round-by-round DCFR (:mod:`~tensorcfr.games.pasur.solving.round_cfr`) solves round ``r`` of
a deal with round ``r+1``'s root values as leaves. Here round ``r`` of ``K`` deals is one
:class:`~tensorcfr.games.pasur.solving.graph.RoundGraph` (:func:`merge_graphs`): level ``l``
of the merged round holds deal 0's nodes of that level, then deal 1's, and so on, every
index shifted by the deals before (parents and children by the nodes of their level,
``next_root`` by the next round's roots). No node, edge or information set (full information:
every node is one) is shared between deals, and one solver runs over the batch: one set of
tensors, one kernel per level and step for all ``K`` deals, which is what fills a GPU that a
single deal leaves idle. The exact evaluation (exploitability, game value) runs the same way,
once over the merged graphs (:func:`batch_quality`).

Every per-node and per-edge step of the solver reads only its own deal's entries, and the
per-node sums add in edge order on the CPU, so there each deal's average strategy and values
are those of a solve of the deal alone, bit for bit (``tests/test_pasur_batched.py``). On a
GPU the segment sums use atomics, whose order varies from run to run: float64 rounding
differences only, as between two single-deal GPU solves.

:class:`BatchLayout` says where each deal sits (``[K+1]`` offsets per round and level) and
cuts the merged results back into per-deal ones. :func:`batch_memory_need` is the DCFR run's
memory model (:data:`~.dcfr_run.SOLVER_BYTES_PER_EDGE` and friends) summed over the deals,
plus the merged copy of the graphs; :func:`check_batch_memory` refuses a batch that does not
fit before any of its tensors exist, naming a ``--batch-size`` that would.
:func:`run_dcfr_batch` is :func:`~.dcfr_run.run_dcfr` for many deals: per deal the same
result and the same run folder, from one solve.

Nothing here prints or knows cards: only graphs, offsets and bytes.

>>> BatchLayout(node_offsets=(((0, 1, 2),) * 9,), edge_offsets=(((0, 2, 5),) * 8,)).roots()
[0, 1]
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph

__all__ = [
    "MERGED_BYTES_PER_EDGE",
    "BatchLayout",
    "BatchSolution",
    "batch_memory_need",
    "batch_quality",
    "check_batch_memory",
    "memory_allowed",
    "merge_graphs",
    "run_dcfr_batch",
    "solve_graphs_batch",
]

MERGED_BYTES_PER_EDGE = 5 * 8
"""Bytes per edge of the merged graphs: parent, child, card, captured (int64) and reward
(float64)."""
MERGED_BYTES_PER_ROUND_END = 2 * 8
"""Bytes per round-end node of the merged graphs: ``next_root`` and ``terminal_reward``."""
QUALITY_BYTES_PER_NODE = 8
"""Bytes per node the exact evaluation keeps (every node's float64 value)."""

Offsets = tuple[int, ...]


def _offsets(sizes: Sequence[int]) -> Offsets:
    """``(0, s0, s0+s1, ...)``: where each of ``sizes`` starts, and the total last."""
    out = [0]
    for size in sizes:
        out.append(out[-1] + int(size))
    return tuple(out)


@dataclass(frozen=True)
class BatchLayout:
    """Where each of ``K`` deals sits in merged round graphs.

    Attributes:
        node_offsets: per round, per level 0..8, ``K+1`` offsets: deal ``k``'s nodes of that
            level are ``node_offsets[r][l][k] : node_offsets[r][l][k+1]``.
        edge_offsets: per round, per level 0..7, ``K+1`` offsets of the deals' edges.
    """

    node_offsets: tuple[tuple[Offsets, ...], ...]
    edge_offsets: tuple[tuple[Offsets, ...], ...]

    @property
    def num_deals(self) -> int:
        return len(self.node_offsets[0][0]) - 1

    def roots(self) -> list[int]:
        """Index of each deal's first root (its starting position) in the merged first
        round's level 0."""
        return list(self.node_offsets[0][0][:-1])

    def edges(self, position: int, level: int, deal: int) -> slice:
        """Deal ``deal``'s edges of ``level`` in the merged round at ``position``."""
        offsets = self.edge_offsets[position][level]
        return slice(offsets[deal], offsets[deal + 1])

    def nodes(self, position: int, level: int, deal: int) -> slice:
        """Deal ``deal``'s nodes of ``level`` in the merged round at ``position``."""
        offsets = self.node_offsets[position][level]
        return slice(offsets[deal], offsets[deal + 1])

    def deal_strategies(self, strategies: Sequence[Sequence[Tensor]], deal: int,
                        device: str | torch.device = "cpu") -> list[list[Tensor]]:
        """Deal ``deal``'s part of merged per-round, per-level edge tensors ([E_l] each), as
        its own tensors on ``device``."""
        return [[level_values[self.edges(position, level, deal)].to(device, copy=True)
                 for level, level_values in enumerate(rounds)]
                for position, rounds in enumerate(strategies)]


def merge_graphs(graphs_per_deal: Sequence[Sequence[RoundGraph]],
                 device: str | torch.device | None = None
                 ) -> tuple[list[RoundGraph], BatchLayout]:
    """The disjoint union of ``K`` deals' round graphs (same rounds, in the same order), one
    :class:`RoundGraph` per round on ``device`` (default: the first graph's), and the layout.
    ``node_state`` is not merged (None): the per-deal graphs keep it."""
    if not graphs_per_deal:
        raise ValueError("no deals to merge")
    rounds = [g.round_index for g in graphs_per_deal[0]]
    for graphs in graphs_per_deal[1:]:
        if [g.round_index for g in graphs] != rounds:
            raise ValueError("the deals of a batch must have the same rounds")
    dev = torch.device(device) if device is not None else graphs_per_deal[0][0].next_root.device
    node_offsets = tuple(
        tuple(_offsets([graphs[p].num_nodes[level] for graphs in graphs_per_deal])
              for level in range(PLIES_PER_ROUND + 1))
        for p in range(len(rounds)))
    edge_offsets = tuple(
        tuple(_offsets([graphs[p].edge_parent[level].numel() for graphs in graphs_per_deal])
              for level in range(PLIES_PER_ROUND))
        for p in range(len(rounds)))

    def cat(parts: list[Tensor]) -> Tensor:  # joined where the parts are, then one copy
        return torch.cat(parts).to(dev)

    merged: list[RoundGraph] = []
    for p, round_index in enumerate(rounds):
        deals = [graphs[p] for graphs in graphs_per_deal]
        nodes = node_offsets[p]
        next_roots = node_offsets[p + 1][0] if p + 1 < len(rounds) else None
        next_root = cat([
            g.next_root if next_roots is None
            else torch.where(g.next_root >= 0, g.next_root + next_roots[k], g.next_root)
            for k, g in enumerate(deals)])
        merged.append(RoundGraph(
            round_index=round_index,
            num_nodes=[offsets[-1] for offsets in nodes],
            edge_parent=[cat([g.edge_parent[level] + nodes[level][k]
                              for k, g in enumerate(deals)]) for level in range(PLIES_PER_ROUND)],
            edge_child=[cat([g.edge_child[level] + nodes[level + 1][k]
                             for k, g in enumerate(deals)]) for level in range(PLIES_PER_ROUND)],
            edge_reward=[cat([g.edge_reward[level] for g in deals])
                         for level in range(PLIES_PER_ROUND)],
            edge_card=[cat([g.edge_card[level] for g in deals])
                       for level in range(PLIES_PER_ROUND)],
            edge_captured=[cat([g.edge_captured[level] for g in deals])
                           for level in range(PLIES_PER_ROUND)],
            next_root=next_root,
            terminal_reward=cat([g.terminal_reward for g in deals]),
            node_state=None))
    return merged, BatchLayout(node_offsets=node_offsets, edge_offsets=edge_offsets)


# --------------------------------------------------------------------------- memory


def batch_memory_need(graphs_per_deal: Sequence[Sequence[RoundGraph]]) -> int:
    """Bytes a batched solve of these (already built) deals needs beyond the deals' own
    graphs: the round solver's working memory for the largest merged round (the per-deal
    model of :mod:`~.dcfr_run`, summed over the deals), the average strategies kept for every
    round, the merged copy of the graphs and the exact evaluation's node values."""
    from tensorcfr.games.pasur.solving.dcfr_run import (KEPT_BYTES_PER_EDGE,
                                                        SOLVER_BYTES_PER_EDGE,
                                                        SOLVER_BYTES_PER_NODE)

    rounds = len(graphs_per_deal[0]) if graphs_per_deal else 0
    solver = 0
    edges = nodes = round_ends = 0
    for p in range(rounds):
        round_edges = sum(graphs[p].total_edges for graphs in graphs_per_deal)
        round_nodes = sum(graphs[p].total_nodes for graphs in graphs_per_deal)
        solver = max(solver, round_edges * SOLVER_BYTES_PER_EDGE
                     + round_nodes * SOLVER_BYTES_PER_NODE)
        edges += round_edges
        nodes += round_nodes
        round_ends += sum(graphs[p].num_nodes[PLIES_PER_ROUND] for graphs in graphs_per_deal)
    return int(solver + edges * (KEPT_BYTES_PER_EDGE + MERGED_BYTES_PER_EDGE)
               + round_ends * MERGED_BYTES_PER_ROUND_END + nodes * QUALITY_BYTES_PER_NODE)


def memory_allowed(device: torch.device, max_memory: int | None) -> tuple[int, str]:
    """Bytes a batch may use on ``device`` and how to say so: ``max_memory`` when given,
    else what the device has free now (a CUDA device's free memory, the machine's available
    memory for the CPU)."""
    from tensorcfr.utils.resources import available_memory_bytes

    if max_memory is not None:
        return max_memory, "allowed (--max-memory)"
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0]), f"free on {device}"
    return available_memory_bytes(), "available"


def check_batch_memory(need: int, num_deals: int, device: torch.device,
                       max_memory: int | None) -> None:
    """Refuse (:class:`MemoryLimitError`, one line) a batch of ``num_deals`` deals that needs
    ``need`` bytes, more than :func:`memory_allowed`; the message names a ``--batch-size``
    that fits at the same bytes per deal."""
    from tensorcfr.utils.resources import format_bytes

    limit, what = memory_allowed(device, max_memory)
    if need <= limit:
        return
    head = (f"a batch of {num_deals} deals needs about {format_bytes(need)} to solve at once"
            if num_deals > 1 else f"this deal needs about {format_bytes(need)} to solve")
    fits = int(num_deals * limit / need)
    advice = (f"use --batch-size {max(1, min(fits, num_deals - 1))} or raise --max-memory"
              if num_deals > 1 and fits >= 1 else
              "raise --max-memory or use a machine with more memory")
    raise MemoryLimitError(f"{head}, more than the {format_bytes(limit)} {what}; {advice}")


# --------------------------------------------------------------------------- solving


@dataclass
class BatchSolution:
    """The result of :func:`solve_graphs_batch`, per deal and for the batch.

    Attributes:
        solutions: per deal, its :class:`~.round_cfr.DCFRSolution` (its own graphs, its
            strategies and root values as CPU tensors; round ``seconds`` are the batch's).
        quality: per deal, its :class:`~.round_cfr.ExploitabilityReport` (points per game).
        exact_values: per deal, the exact game value (points, Alex minus Bob).
        merge_seconds, solve_seconds, quality_seconds: wall times of the batch's steps.
        nodes_per_round: total nodes of each merged round.
    """

    solutions: list[Any]
    quality: list[Any]
    exact_values: list[float]
    merge_seconds: float
    solve_seconds: float
    quality_seconds: float
    nodes_per_round: list[int]


def batch_quality(merged: Sequence[RoundGraph], layout: BatchLayout,
                  strategies: Sequence[Sequence[Tensor]]) -> tuple[list[Any], list[float]]:
    """Exact evaluation of every deal of a batch at once, over the merged graphs: per deal
    its :class:`~.round_cfr.ExploitabilityReport` of ``strategies`` (merged, per round, per
    level) and its exact game value, as :func:`~.round_cfr.exploitability` and
    :func:`~.round_cfr.minimax_value` give for the deal alone."""
    from tensorcfr.games.pasur.solving.round_cfr import (ALEX, BOB, ExploitabilityReport,
                                                         minimax_root_values,
                                                         profile_root_values)

    device = merged[0].next_root.device
    roots = torch.tensor(layout.roots(), dtype=torch.long, device=device)
    columns = [profile_root_values(merged, strategies),
               profile_root_values(merged, strategies, BOB),   # Bob responds to Alex
               profile_root_values(merged, strategies, ALEX),  # Alex responds to Bob
               minimax_root_values(merged)]
    rows = torch.stack([c.index_select(0, roots) for c in columns], dim=1).cpu().tolist()
    reports = [ExploitabilityReport(value=v, best_response_to_alex=to_alex,
                                    best_response_to_bob=to_bob)
               for v, to_alex, to_bob, _ in rows]
    return reports, [row[3] for row in rows]


def solve_graphs_batch(graphs_per_deal: Sequence[Sequence[RoundGraph]], variant: Any,
                       iterations: int, *, device: str | torch.device = "cpu",
                       dtype: torch.dtype = torch.float64,
                       progress: Callable[[int, int], None] | None = None,
                       on_merged: Callable[[list[RoundGraph]], None] | None = None
                       ) -> BatchSolution:
    """Round-by-round CFR (``variant``, ``iterations`` per round) of the built graphs of
    ``K`` deals as one problem on ``device``, then their exact evaluation; see the module
    docstring. Does not check memory (:func:`check_batch_memory` does);
    ``on_merged(merged_graphs)`` is called once they exist, ``progress(round_index, done)``
    as in :func:`~.round_cfr.solve_dcfr`."""
    from tensorcfr.games.pasur.solving.round_cfr import DCFRSolution, RoundResult, solve_dcfr

    t0 = time.perf_counter()
    merged, layout = merge_graphs(graphs_per_deal, device=device)
    merge_seconds = time.perf_counter() - t0
    if on_merged is not None:
        on_merged(merged)
    t0 = time.perf_counter()
    solution = solve_dcfr(merged, variant, iterations, device=device, dtype=dtype,
                          progress=progress)
    solve_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    quality, exact_values = batch_quality(merged, layout, solution.strategies)
    quality_seconds = time.perf_counter() - t0
    nodes_per_round = [int(g.total_nodes) for g in merged]
    del merged
    solutions = []
    for k, graphs in enumerate(graphs_per_deal):
        strategies = layout.deal_strategies(solution.strategies, k)
        rounds = [RoundResult(round_index=r.round_index, average_strategy=strategies[p],
                              root_values=r.root_values[layout.nodes(p, 0, k)].to(
                                  "cpu", copy=True),
                              iterations=r.iterations, seconds=r.seconds)
                  for p, r in enumerate(solution.rounds)]
        solutions.append(DCFRSolution(graphs=list(graphs), rounds=rounds, variant=variant,
                                      iterations=iterations))
    return BatchSolution(solutions=solutions, quality=quality, exact_values=exact_values,
                         merge_seconds=merge_seconds, solve_seconds=solve_seconds,
                         quality_seconds=quality_seconds, nodes_per_round=nodes_per_round)


# --------------------------------------------------------------------------- the run

_SHARED = ("mode", "iterations", "variant", "alpha", "beta", "gamma", "max_memory", "threads",
           "device")
"""The :class:`~.dcfr_run.DcfrSettings` fields every deal of one batch must share."""


def _check_batch_settings(settings: Sequence[Any]) -> None:
    """One-line refusals of settings a batched solve cannot honour."""
    if not settings:
        raise TensorCFRError("no deals to solve")
    first = settings[0]
    for s in settings[1:]:
        for name in _SHARED:
            if getattr(s, name) != getattr(first, name):
                raise TensorCFRError(f"the deals of one batch must share their {name} "
                                     f"({getattr(first, name)!r} and {getattr(s, name)!r})")
    if any(s.convergence for s in settings):
        raise TensorCFRError("--convergence is not available for a batched solve; solve the "
                             "deal alone (`pasur solve --method dcfr --convergence`)")
    if any(s.out is not None and s.checkpoint for s in settings):
        raise TensorCFRError("a batched solve keeps no per-round checkpoint (a batch resumes "
                             "deal by deal): give checkpoint=False")
    if any(s.stop_after_rounds is not None for s in settings):
        raise TensorCFRError("stop_after_rounds simulates a killed single-deal solve; a "
                             "batched solve has no per-round checkpoint to resume from")
    outs = [s.out.resolve() for s in settings if s.out is not None]
    if len(set(outs)) != len(outs):
        raise TensorCFRError("two deals of one batch have the same --out folder")


def run_dcfr_batch(settings: Sequence[Any], *,
                   on_progress: Callable[[Any], None] | None = None) -> list[dict[str, Any]]:
    """Solve the deals of ``settings`` (:class:`~.dcfr_run.DcfrSettings`, one per deal) as
    one problem; per deal the result :func:`~.dcfr_run.run_dcfr` gives for it alone (and
    with ``out`` its run folder, same format), plus ``batch_size``.

    The deals must share mode, iterations, variant, memory limit, threads and device; no
    convergence curves, no per-round checkpoints. Timings: ``build_seconds`` is the deal's
    own, ``solve_seconds`` and ``quality_seconds`` (and ``round_seconds``) are the whole
    batch's, ``seconds`` is the batch's wall time up to this deal's result.

    Raises:
        TensorCFRError (one line): settings a batch cannot share, a bad device or folder;
        :class:`MemoryLimitError` when the batch does not fit (:func:`check_batch_memory`),
        before the merged graphs or the solver's tensors exist.
    """
    from tensorcfr.games.pasur.solving.dcfr_run import (DcfrProgress, build_graphs,
                                                        finish_run, run_result,
                                                        tree_memory_estimate)
    from tensorcfr.games.pasur.solving.round_cfr import keep_freed_memory
    from tensorcfr.games.pasur.vocab import GraphMode
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import set_threads

    started = time.perf_counter()
    settings = list(settings)
    _check_batch_settings(settings)
    first = settings[0]
    torch_device = resolve_device(first.device, "--device")
    used_threads = set_threads(first.threads)
    if first.reuse_freed_memory:
        keep_freed_memory()
    for s in settings:
        if s.out is not None:
            from tensorcfr.utils.io import check_output_dir

            check_output_dir(s.out, "--out")
    if first.mode is GraphMode.TREE:  # the tree model knows the sizes before building
        need = sum(tree_memory_estimate(s.deal)[2] for s in settings)
        check_batch_memory(need, len(settings), torch.device("cpu"), first.max_memory)
    graphs_per_deal, build_seconds = [], []
    for s in settings:  # built on the CPU; the merged copy goes to the device
        t0 = time.perf_counter()
        graphs_per_deal.append(build_graphs(s.deal, s.mode, device="cpu",
                                            max_memory=first.max_memory))
        build_seconds.append(time.perf_counter() - t0)
    check_batch_memory(batch_memory_need(graphs_per_deal), len(settings), torch_device,
                       first.max_memory)

    nodes: tuple[int, ...] = ()  # of the merged rounds, known once they exist

    def merged_ready(merged: list[RoundGraph]) -> None:
        nonlocal nodes
        nodes = tuple(int(g.total_nodes) for g in merged)
        if on_progress is not None:
            on_progress(DcfrProgress("built", nodes, first.iterations))

    def progress(round_index: int, done: int) -> None:
        if on_progress is not None:
            on_progress(DcfrProgress("iteration", nodes, first.iterations, round_index, done))

    batch = solve_graphs_batch(graphs_per_deal, first.cfr_variant, first.iterations,
                               device=torch_device,
                               progress=progress if on_progress is not None else None,
                               on_merged=merged_ready)
    results = []
    for k, s in enumerate(settings):
        solution = batch.solutions[k]
        result = run_result(s, str(torch_device), used_threads, graphs_per_deal[k], solution,
                            batch.quality[k], batch.exact_values[k],
                            build_seconds=build_seconds[k], solve_seconds=batch.solve_seconds,
                            quality_seconds=batch.quality_seconds)
        result["batch_size"] = len(settings)
        finish_run(s, graphs_per_deal[k], solution, result, started)
        results.append(result)
    return results
