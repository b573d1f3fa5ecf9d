"""Round-by-round Discounted CFR over Pasur game graphs, with exact whole-game quality checks.

This follows section 2.10 of "Solving Pasur Using GPU-Accelerated Counterfactual Regret
Minimization" (Baghal 2025): the six rounds of a full-information deal are solved backwards.
Round 6 is solved first, with reach probability 1 at each of its roots; each root's value
under the round's *average* strategy becomes the leaf utility of the round-end nodes of round
5 that link to it (``RoundGraph.next_root``), round 5 is solved, and so on back to round 1.

Inside a round every node is its own information set (full information), so the CFR
"infoset-action slots" of level ``l`` are simply its edges and ``action_infoset`` is
``edge_parent[l]``. One iteration is whole-tensor work per level (all nodes of a level at
once, no Python loop over nodes):

* forward pass of reach probabilities (the paper's reach tensors): Alex's and Bob's reach
  are kept apart per node; an edge's reach is its parent's, multiplied by the mover's current
  strategy for the mover's own reach, and a child's reach is the sum over its incoming edges
  (``index_add_`` by ``edge_child``). In ``dag`` mode a merged node's reach is therefore the
  sum over its incoming paths, which is exactly the counterfactual reach CFR needs: the
  subgame below a merged node does not depend on the path, so its counterfactual regret is
  ``sum over paths of the opponent's reach product x (action value - node value)``;
* backward pass of values: edge value = edge reward + child value, node value = sum over its
  edges of strategy x edge value (points, Alex minus Bob);
* instantaneous regrets per edge: ``sign x opponent reach x (edge value - node value)`` with
  sign +1 at Alex's nodes (she maximizes Alex-minus-Bob) and -1 at Bob's;
* the average strategy accumulates ``own reach x current strategy``; the variant's
  discounting comes from :mod:`tensorcfr.core.regret`.

Beyond the paper, :func:`exploitability` measures the average strategy over the whole game
(all rounds at once) exactly, by best responses computed backward over the same graphs, and
:func:`minimax_value` gives the game's exact value on the graph.

Values are in points (Alex's points minus Bob's) from the node to the end of the game; points
scored before the node are not included (``RoundGraph`` attaches rewards to edges).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from tensorcfr.core import level_graph
from tensorcfr.core.regret import (
    CFRVariant,
    normalize_strategy,
    regret_matching_into,
    uniform_slot_probabilities,
)
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph
from tensorcfr.utils.io import atomic_path, write_json_atomic

__all__ = [
    "ALEX",
    "BOB",
    "DEFAULT_ITERATIONS",
    "DEFAULT_VARIANT",
    "CheckpointMismatchError",
    "DCFRSolution",
    "ExploitabilityReport",
    "RoundCheckpointStore",
    "RoundResult",
    "SolveInterrupted",
    "best_response_value",
    "exploitability",
    "keep_freed_memory",
    "leaf_values",
    "level_player",
    "minimax_root_values",
    "minimax_value",
    "node_values",
    "profile_root_values",
    "reach_probabilities",
    "solve_dcfr",
    "solve_round",
    "uniform_strategies",
]

ALEX, BOB = 0, 1
DEFAULT_ITERATIONS = 1000
DEFAULT_VARIANT = CFRVariant("dcfr", alpha=1.5, beta=0.0, gamma=2.0)

ProgressFn = Callable[[int, int], None]
"""``progress(round_index, iterations_done)``, called while a round is being solved."""


class CheckpointMismatchError(TensorCFRError):
    """An output folder holds the checkpoint of a different solve (other deal or options)."""


class SolveInterrupted(TensorCFRError):
    """A solve stopped on purpose after a round (used to simulate a killed run)."""


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse (process-wide; Linux only).

    Every CFR iteration allocates and frees dozens of temporaries the size of a round's
    edges. Above 32 MiB each one is, by default, a fresh ``mmap`` that the kernel must fault in
    and zero page by page: on rounds of millions of edges that system time was measured at
    2.5x the computation itself. With ``mmap`` disabled for allocations and the heap never
    trimmed, freed blocks are reused instead (the process keeps its peak memory until it
    exits). Meant for solver processes such as the CLI; returns whether it could be applied.
    """
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_max = -1, -4
    return bool(mallopt(m_mmap_max, 0)) and bool(mallopt(m_trim_threshold, 2**31 - 1))


def level_player(level: int) -> int:
    """Who moves at level ``level`` (0..7) of a round: Alex (0) at even levels, Bob (1) at odd."""
    return level % 2


def _check_graphs(graphs: Sequence[RoundGraph]) -> None:
    if not graphs:
        raise ValueError("no round graphs to solve")
    for prev, nxt in zip(graphs[:-1], graphs[1:]):
        if nxt.round_index != prev.round_index + 1:
            raise ValueError("round graphs must be consecutive rounds")
        if prev.num_nodes[PLIES_PER_ROUND] and int(prev.next_root.max()) >= nxt.num_nodes[0]:
            raise ValueError(f"round {prev.round_index}: next_root points past the next roots")
    if bool((graphs[-1].next_root >= 0).any()):
        raise ValueError("the last round graph must end the game (next_root all -1)")


def leaf_values(graph: RoundGraph, next_root_values: Tensor | None) -> Tensor:
    """Values [N_8] of a round's round-end nodes: ``terminal_reward`` plus, when the game goes
    on, the value of the next round's root each one leads to (``next_root_values`` [N_0 of the
    next round]; ``None`` for the last round). Points, Alex minus Bob."""
    terminal = graph.terminal_reward
    if next_root_values is None:
        return terminal.clone()
    next_root_values = next_root_values.to(device=terminal.device, dtype=terminal.dtype)
    return terminal + next_root_values.index_select(0, graph.next_root)


# --------------------------------------------------------------------------- one round


@dataclass
class RoundResult:
    """A solved round.

    Attributes:
        round_index: 0..5.
        average_strategy: per level 0..7, Tensor [E_l]: probability of each edge under the
            normalized average strategy of the mover (sums to 1 over each node's edges).
        root_values: Tensor [N_0]: value of each root (points, Alex minus Bob, to the end of
            the game) when both players follow the average strategies from there on.
        iterations: CFR iterations run.
        seconds: wall time of the solve (not counting a convergence pass).
        convergence: optional list, per iteration t = 1..T, of the mean squared difference
            between the average strategy after t iterations and the final one (see
            :func:`strategy_mse`).
    """

    round_index: int
    average_strategy: list[Tensor]
    root_values: Tensor
    iterations: int
    seconds: float
    convergence: list[float] | None = None


class _RoundTensors:
    """A round's graph tensors on the solve's device/dtype, in a flat layout.

    The edges of levels 0..7 are concatenated into one array of ``E = sum E_l`` slots (level
    ``l`` at ``edge_offset[l] : edge_offset[l+1]``) and the nodes of levels 0..7 into one
    array of ``T = sum N_l`` nodes (``node_offset``), so regret matching and the regret and
    average updates run once per iteration over the whole round; only the reach and value
    passes go level by level, through the game-independent level-graph passes of
    :mod:`tensorcfr.core.level_graph` (views of the round's buffers, built once per solve by
    :meth:`reach_steps` / :meth:`value_steps`).
    """

    def __init__(self, graph: RoundGraph, device: torch.device, dtype: torch.dtype) -> None:
        self.round_index = graph.round_index
        self.num_nodes = [int(n) for n in graph.num_nodes]
        self.parent = [p.to(device) for p in graph.edge_parent]
        self.child = [c.to(device) for c in graph.edge_child]
        self.reward = [r.to(device=device, dtype=dtype) for r in graph.edge_reward]
        self.device, self.dtype = device, dtype
        edges = [int(p.numel()) for p in self.parent]
        self.edge_offset = [0]
        self.node_offset = [0]
        for level in range(PLIES_PER_ROUND):
            self.edge_offset.append(self.edge_offset[-1] + edges[level])
            self.node_offset.append(self.node_offset[-1] + self.num_nodes[level])
        self.total_edges = self.edge_offset[-1]
        self.total_nodes = self.node_offset[-1]  # decision nodes, levels 0..7
        # Flat infoset (= node) of every slot: the paper's per-level edge_parent, shifted.
        self.flat_parent = torch.cat([p + off for p, off in zip(self.parent, self.node_offset)])
        self.flat_reward = torch.cat(self.reward)
        mover = torch.cat([torch.full((e,), level_player(level), dtype=torch.long,
                                      device=device) for level, e in enumerate(edges)])
        # Index into reach [2 * T] (row p = player p's own reach) of the slot's node, for the
        # mover's own reach and for the opponent's (counterfactual) reach.
        self.own_index = mover * self.total_nodes + self.flat_parent
        self.opponent_index = (1 - mover) * self.total_nodes + self.flat_parent
        # +1 where Alex moves (she maximizes Alex-minus-Bob), -1 where Bob does.
        self.sign = (1 - 2 * mover).to(dtype)
        counts = torch.zeros(self.total_nodes, dtype=torch.long, device=device)
        counts.index_add_(0, self.flat_parent, torch.ones_like(self.flat_parent))
        # Slots of nodes with more than one action: the only ones that carry a decision.
        self.choice_mask = counts.index_select(0, self.flat_parent) > 1
        # Tree-shaped levels (child = arange) need no gather/merge: their child is None.
        self.level_child: list[Tensor | None] = [
            None if (c.numel() == self.num_nodes[level + 1]
                     and bool((c == torch.arange(c.numel(), device=device)).all())) else c
            for level, c in enumerate(self.child)]

    def edge_slice(self, level: int) -> slice:
        return slice(self.edge_offset[level], self.edge_offset[level + 1])

    def node_slice(self, level: int) -> slice:
        return slice(self.node_offset[level], self.node_offset[level + 1])

    def split(self, flat: Tensor) -> list[Tensor]:
        """A flat slot tensor [E] as per-level views [E_l]."""
        return [flat[self.edge_slice(level)] for level in range(PLIES_PER_ROUND)]

    def reach_steps(self, strategy: Tensor, out: Tensor) -> list[level_graph.ReachStep]:
        """Level views of the forward pass into ``out`` [2, T] under ``strategy`` [E]: per
        level and player (Alex, Bob: 1-D gathers, faster than one [2, E] op), the player's
        own reach, multiplied by the strategy on the levels where that player moves."""
        steps: list[level_graph.ReachStep] = []
        for level in range(PLIES_PER_ROUND - 1):
            mover = level_player(level)
            for player in (ALEX, BOB):
                factor = strategy[self.edge_slice(level)] if player == mover else None
                steps.append((out[player, self.node_slice(level)], self.parent[level],
                              out[player, self.node_slice(level + 1)], factor,
                              self.level_child[level]))
        return steps

    def reach(self, steps: list[level_graph.ReachStep], out: Tensor) -> Tensor:
        """Forward pass: ``out`` [2, T] gets each node's (Alex, Bob) own reach, 1 at roots.

        A child's reach is the sum over its incoming edges (dag mode: over its paths)."""
        out[:, : self.num_nodes[0]] = 1.0
        level_graph.forward_pass(steps)
        return out

    def value_steps(self, strategy: Tensor, leaf: Tensor, node_values: Tensor,
                    edge_values: Tensor, scratch: Tensor | None = None
                    ) -> list[level_graph.GraphValueStep]:
        """Level views of the backward pass (levels 7..0): ``edge_values`` [E] = reward +
        child value, ``node_values`` [T] = sum over the node's edges of strategy x edge value
        (points, Alex minus Bob); ``scratch`` [>= max E_l] holds the products (or None)."""
        steps: list[level_graph.GraphValueStep] = []
        below = leaf
        for level in reversed(range(PLIES_PER_ROUND)):
            edges = self.edge_slice(level)
            here = node_values[self.node_slice(level)]
            size = edges.stop - edges.start
            steps.append((below, self.level_child[level], self.reward[level],
                          edge_values[edges], strategy[edges],
                          None if scratch is None else scratch[:size], here,
                          self.parent[level]))
            below = here
        return steps

    def values(self, steps: list[level_graph.GraphValueStep], node_values: Tensor) -> None:
        """Backward pass over :meth:`value_steps` (``node_values`` is zeroed first)."""
        node_values.zero_()
        level_graph.backward_graph_pass(steps)

    def average(self, cumulative_strategy: Tensor) -> Tensor:
        return normalize_strategy(cumulative_strategy, self.flat_parent, self.total_nodes)

    def root_values(self, strategy: Tensor, leaf: Tensor) -> Tensor:
        node_values = torch.zeros(self.total_nodes, dtype=self.dtype, device=self.device)
        edge_values = torch.zeros(self.total_edges, dtype=self.dtype, device=self.device)
        self.values(self.value_steps(strategy, leaf, node_values, edge_values), node_values)
        return node_values[: self.num_nodes[0]].clone()


def solve_round(graph: RoundGraph, leaf: Tensor, variant: CFRVariant = DEFAULT_VARIANT,
                iterations: int = DEFAULT_ITERATIONS, *, device: str | torch.device | None = None,
                dtype: torch.dtype = torch.float64, progress: ProgressFn | None = None,
                reference_strategy: Sequence[Tensor] | None = None) -> RoundResult:
    """Solve one round by CFR with fixed leaf values.

    Args:
        graph: the round (``RoundGraph``).
        leaf: Tensor [N_8]: value of each round-end node (see :func:`leaf_values`).
        variant: CFR update rule (default DCFR alpha=1.5, beta=0, gamma=2).
        iterations: number of simultaneous-update CFR iterations (>= 1).
        device: where to compute (default: the graph's device).
        dtype: floating type of regrets, strategies and values.
        progress: optional ``progress(round_index, iterations_done)`` callback.
        reference_strategy: when given (the final average strategy of this same solve, per
            level), the result's ``convergence`` holds, for each iteration, the mean squared
            difference between that iteration's average strategy and the reference, over the
            edges of nodes with more than one action (the paper's Figure 15). CFR is
            deterministic, so a second run with the first run's result as reference measures
            the first run's convergence exactly.

    Returns:
        :class:`RoundResult` with the normalized average strategy and root values.
    """
    if iterations < 1:
        raise TensorCFRError(f"--iterations must be at least 1, got {iterations}")
    dev = torch.device(device) if device is not None else graph.next_root.device
    rt = _RoundTensors(graph, dev, dtype)
    leaf = leaf.to(device=dev, dtype=dtype)
    num_slots, num_nodes = rt.total_edges, rt.total_nodes
    kw: dict[str, Any] = {"dtype": dtype, "device": dev}
    # One slot per edge of levels 0..7 (each node is its own infoset):
    cum_regrets = torch.zeros(num_slots, **kw)   # R, cumulative regrets
    cum_strategy = torch.zeros(num_slots, **kw)  # S, weighted strategy sum
    strategy = torch.zeros(num_slots, **kw)      # sigma^t, current strategy
    reach = torch.zeros(2, num_nodes, **kw)      # own reach, Alex / Bob
    reach_flat = reach.view(-1)
    node_values = torch.zeros(num_nodes, **kw)
    edge_values = torch.zeros(num_slots, **kw)
    # Per-edge work buffers: instantaneous regrets (kept as the prediction of pcfr+), and
    # the opponent's / own reach per edge (also the value pass's products).
    instant = torch.zeros(num_slots, **kw)
    edge_reach = torch.zeros(num_slots, **kw)
    node_totals = torch.zeros(num_nodes, **kw)
    uniform = uniform_slot_probabilities(rt.flat_parent, num_nodes, dtype)
    zero = torch.zeros((), **kw)
    reach_steps = rt.reach_steps(strategy, reach)
    value_steps = rt.value_steps(strategy, leaf, node_values, edge_values, edge_reach)
    reference = (torch.cat([r.to(device=dev, dtype=dtype) for r in reference_strategy])
                 if reference_strategy is not None else None)
    convergence: list[float] | None = [] if reference is not None else None
    num_choice = int(rt.choice_mask.sum())
    report_every = max(1, iterations // 100)
    start = time.perf_counter()
    for t in range(1, iterations + 1):
        # Current strategy sigma^t by regret matching over all the round's nodes at once
        # (pcfr+: on R + the last instantaneous regrets).
        regrets = cum_regrets if not (variant.predictive and t > 1) else cum_regrets + instant
        regret_matching_into(regrets, rt.flat_parent, node_totals, uniform, zero, out=strategy)
        rt.reach(reach_steps, reach)
        rt.values(value_steps, node_values)
        # Instantaneous counterfactual regrets: (Q(a) - V) x opponent reach x sign.
        torch.index_select(reach_flat, 0, rt.opponent_index, out=edge_reach).mul_(rt.sign)
        level_graph.counterfactual_regrets(
            edge_values, torch.index_select(node_values, 0, rt.flat_parent, out=instant),
            edge_reach, out=instant)
        level_graph.accumulate_regrets(cum_regrets, instant, variant, t)
        torch.index_select(reach_flat, 0, rt.own_index, out=edge_reach)
        level_graph.accumulate_average(cum_strategy, edge_reach, strategy, variant, t)
        if reference is not None and convergence is not None:
            diff = (rt.average(cum_strategy) - reference)[rt.choice_mask]
            convergence.append(float((diff * diff).sum()) / num_choice if num_choice else 0.0)
        if progress is not None and (t % report_every == 0 or t == iterations):
            progress(graph.round_index, t)
    average = rt.average(cum_strategy)
    root_values = rt.root_values(average, leaf)
    seconds = time.perf_counter() - start
    return RoundResult(round_index=graph.round_index,
                       average_strategy=[s.clone() for s in rt.split(average)],
                       root_values=root_values, iterations=iterations, seconds=seconds,
                       convergence=convergence)


# --------------------------------------------------------------------------- checkpoints


class RoundCheckpointStore:
    """Per-round checkpoints of a solve in a folder, so a killed solve can resume.

    ``meta.json`` holds the solve's identity (deal, mode, variant, iterations, dtype, graph
    sizes); ``round_<r>.pt`` holds a finished round's average strategy, root values, timing
    and convergence data (CPU tensors). Every file is written atomically, so a file that
    exists is complete; resuming with other options raises :class:`CheckpointMismatchError`.
    """

    FORMAT = "tensorcfr-pasur-dcfr-checkpoint-1"

    def __init__(self, directory: str | Path, identity: dict[str, Any]) -> None:
        self.directory = Path(directory)
        self.identity = json.loads(json.dumps(identity))  # normalized JSON types
        meta_path = self.directory / "meta.json"
        if os.path.lexists(meta_path):  # a FIFO or device there is refused, not read
            from tensorcfr.utils.manifest import MAX_MANIFEST_BYTES, check_format
            from tensorcfr.utils.reading import load_json

            meta = check_format(load_json(meta_path, "checkpoint", MAX_MANIFEST_BYTES),
                                self.FORMAT, meta_path, "a tensorcfr DCFR checkpoint")
            if meta.get("identity") != self.identity:
                theirs = meta.get("identity") or {}
                from tensorcfr.utils.checks import option_differences

                diff = option_differences(theirs, self.identity, {
                    "deal": "the deal", "variant.name": "--variant",
                    "nodes_per_round": "the game tree", "edges_per_round": "the game tree",
                    "dtype": "the precision"})
                raise CheckpointMismatchError(
                    f"{self.directory} holds a checkpoint of a different solve: {diff}; give "
                    f"the same options, another --out folder, or delete {self.directory}")
        else:
            write_json_atomic(meta_path, {"format": self.FORMAT, "identity": self.identity})

    def _path(self, round_index: int) -> Path:
        return self.directory / f"round_{round_index}.pt"

    def save(self, result: RoundResult) -> None:
        """Write one finished round atomically."""
        payload = {
            "round_index": result.round_index,
            "average_strategy": [s.detach().cpu() for s in result.average_strategy],
            "root_values": result.root_values.detach().cpu(),
            "iterations": result.iterations,
            "seconds": result.seconds,
            "convergence": result.convergence,
        }
        with atomic_path(self._path(result.round_index)) as tmp:
            torch.save(payload, tmp)

    def load(self, round_index: int, graph: RoundGraph) -> RoundResult | None:
        """The finished round ``round_index`` (checked against ``graph``), or ``None``."""
        from tensorcfr.utils.reading import check_input_file

        path = self._path(round_index)
        if not os.path.lexists(path):
            return None
        check_input_file(path, "checkpoint")  # a FIFO or device: refused unopened
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
            strategy = list(payload["average_strategy"])
            root_values = payload["root_values"]
            ok = (payload["round_index"] == round_index and len(strategy) == PLIES_PER_ROUND
                  and all(s.numel() == p.numel() for s, p in zip(strategy, graph.edge_parent))
                  and root_values.numel() == graph.num_nodes[0])
            ok = ok and all(bool(torch.isfinite(s).all()) for s in strategy) \
                and bool(torch.isfinite(root_values).all())
        except Exception as exc:  # noqa: BLE001 - any unreadable payload is a corrupt file
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise CorruptFileError(f"checkpoint {path} is unreadable: {reason}") from None
        if not ok:
            raise CorruptFileError(f"checkpoint {path} does not match the round's graph or "
                                   "holds NaN/inf")
        device = graph.next_root.device
        return RoundResult(round_index=round_index,
                           average_strategy=[s.to(device) for s in strategy],
                           root_values=root_values.to(device),
                           iterations=int(payload["iterations"]),
                           seconds=float(payload["seconds"]),
                           convergence=payload.get("convergence"))


# --------------------------------------------------------------------------- whole solve


@dataclass
class DCFRSolution:
    """The result of :func:`solve_dcfr`: one :class:`RoundResult` per graph (same order)."""

    graphs: list[RoundGraph]
    rounds: list[RoundResult]
    variant: CFRVariant
    iterations: int
    resumed_rounds: list[int] = field(default_factory=list)

    @property
    def strategies(self) -> list[list[Tensor]]:
        """Average strategy per round per level, Tensor [E_l] each."""
        return [r.average_strategy for r in self.rounds]

    @property
    def value(self) -> float:
        """Value of the first round's root 0 under the average strategies (points)."""
        return float(self.rounds[0].root_values[0])

    @property
    def seconds(self) -> float:
        """Total CFR time over the rounds (including time spent before a resume)."""
        return float(sum(r.seconds for r in self.rounds))


def solve_dcfr(graphs: Sequence[RoundGraph], variant: CFRVariant = DEFAULT_VARIANT,
               iterations: int = DEFAULT_ITERATIONS, *, device: str | torch.device | None = None,
               dtype: torch.dtype = torch.float64, checkpoint: RoundCheckpointStore | None = None,
               convergence: bool = False, progress: ProgressFn | None = None,
               on_round_done: Callable[[RoundResult], None] | None = None) -> DCFRSolution:
    """Round-by-round CFR (paper section 2.10), last round first.

    Args:
        graphs: consecutive rounds ending with the game's last round (e.g. all six rounds of
            a deal, or the last one or two rounds of a position).
        variant, iterations, device, dtype: see :func:`solve_round` (iterations per round).
        checkpoint: when given, finished rounds found there are reused and newly finished
            rounds are saved, so an interrupted solve resumes from its last finished round
            with an identical result.
        convergence: also record each round's convergence curve (a second, identical CFR
            pass per round compares every iteration's average strategy with the final one).
        progress: ``progress(round_index, iterations_done)`` callback.
        on_round_done: called with each newly solved (and checkpointed) round, not with
            rounds taken from the checkpoint; raising there stops the solve (this is how
            tests simulate a killed run).

    Returns:
        :class:`DCFRSolution` with the rounds in the order of ``graphs``.
    """
    graphs = list(graphs)
    _check_graphs(graphs)
    results: list[RoundResult | None] = [None] * len(graphs)
    resumed: list[int] = []
    next_values: Tensor | None = None
    for position in reversed(range(len(graphs))):
        graph = graphs[position]
        leaf = leaf_values(graph, next_values).to(dtype=dtype)
        result = checkpoint.load(graph.round_index, graph) if checkpoint is not None else None
        if result is not None:
            resumed.append(graph.round_index)
            if convergence and result.convergence is None:
                again = solve_round(graph, leaf, variant, iterations, device=device,
                                    dtype=dtype, reference_strategy=result.average_strategy)
                result.convergence = again.convergence
                checkpoint.save(result)  # type: ignore[union-attr]
            if progress is not None:
                progress(graph.round_index, iterations)
        else:
            result = solve_round(graph, leaf, variant, iterations, device=device, dtype=dtype,
                                 progress=progress)
            if convergence:
                again = solve_round(graph, leaf, variant, iterations, device=device,
                                    dtype=dtype, reference_strategy=result.average_strategy)
                result.convergence = again.convergence
            if checkpoint is not None:
                checkpoint.save(result)
            if on_round_done is not None:
                on_round_done(result)
        results[position] = result
        next_values = result.root_values
    return DCFRSolution(graphs=graphs, rounds=[r for r in results if r is not None],
                        variant=variant, iterations=iterations, resumed_rounds=resumed)


# --------------------------------------------------------------------------- exact quality

_FOLLOW, _MAX, _MIN = "follow", "max", "min"


def _backward_game(graphs: Sequence[RoundGraph], strategies: Sequence[Sequence[Tensor]] | None,
                   rules: tuple[str, str], dtype: torch.dtype = torch.float64
                   ) -> list[list[Tensor]]:
    """Node values of every round and level (0..8), backward over the whole game.

    ``rules[p]`` says what player ``p`` does at her nodes: ``follow`` her strategy in
    ``strategies``, or take the ``max`` / ``min`` edge (best response / minimax).
    """
    _check_graphs(graphs)
    out: list[list[Tensor]] = [[] for _ in graphs]
    next_values: Tensor | None = None
    for position in reversed(range(len(graphs))):
        graph = graphs[position]
        v = leaf_values(graph, next_values).to(dtype=dtype)
        values = [v]
        for level in reversed(range(PLIES_PER_ROUND)):
            parent = graph.edge_parent[level]
            n = graph.num_nodes[level]
            edge_value = level_graph.gather_edge_values(
                v, graph.edge_child[level], graph.edge_reward[level].to(dtype))
            rule = rules[level_player(level)]
            if rule == _FOLLOW:
                assert strategies is not None
                v = level_graph.backup_values(
                    edge_value, strategies[position][level].to(device=v.device, dtype=dtype),
                    None, torch.zeros(n, dtype=dtype, device=v.device), parent)
            else:
                reduce = "amax" if rule == _MAX else "amin"
                v = torch.zeros(n, dtype=dtype, device=v.device).scatter_reduce_(
                    0, parent, edge_value, reduce=reduce, include_self=False)
            values.append(v)
        values.reverse()
        out[position] = values
        next_values = values[0]
    return out


def node_values(graphs: Sequence[RoundGraph], strategies: Sequence[Sequence[Tensor]]
                ) -> list[list[Tensor]]:
    """Value of every node (per round, per level 0..8) when both players follow
    ``strategies`` (per round, per level, probabilities [E_l]); points, Alex minus Bob."""
    return _backward_game(graphs, strategies, (_FOLLOW, _FOLLOW))


def minimax_value(graphs: Sequence[RoundGraph]) -> float:
    """The exact game value at the first round's root 0 (backward induction on the graph)."""
    return float(_backward_game(graphs, None, (_MAX, _MIN))[0][0][0])


def best_response_value(graphs: Sequence[RoundGraph], strategies: Sequence[Sequence[Tensor]],
                        responder: int) -> float:
    """Value at the first round's root 0 when ``responder`` best-responds to the other
    player's strategy in ``strategies`` (Alex maximizes, Bob minimizes Alex-minus-Bob)."""
    rules = (_MAX, _FOLLOW) if responder == ALEX else (_FOLLOW, _MIN)
    return float(_backward_game(graphs, strategies, rules)[0][0][0])


def profile_root_values(graphs: Sequence[RoundGraph], strategies: Sequence[Sequence[Tensor]],
                        responder: int | None = None) -> Tensor:
    """Values [N_0] of every root of the first round (points, Alex minus Bob): both players
    follow ``strategies`` (``responder`` None), or ``responder`` (:data:`ALEX` / :data:`BOB`)
    best-responds to the other's. With the merged graphs of many deals
    (:mod:`~tensorcfr.games.pasur.solving.batched`) each deal's root gets its own value."""
    if responder is None:
        rules = (_FOLLOW, _FOLLOW)
    else:
        rules = (_MAX, _FOLLOW) if responder == ALEX else (_FOLLOW, _MIN)
    return _backward_game(graphs, strategies, rules)[0][0]


def minimax_root_values(graphs: Sequence[RoundGraph]) -> Tensor:
    """The exact game value [N_0] of every root of the first round (backward induction)."""
    return _backward_game(graphs, None, (_MAX, _MIN))[0][0]


@dataclass(frozen=True)
class ExploitabilityReport:
    """Exact quality of a strategy profile over the whole game (points per game).

    Attributes:
        value: root value when both follow the profile.
        best_response_to_alex: root value when Alex follows her strategy and Bob
            best-responds (<= the game value).
        best_response_to_bob: root value when Bob follows his strategy and Alex
            best-responds (>= the game value).
        exploitability: ``best_response_to_bob - best_response_to_alex`` = (what a best
            responder gains against Bob) + (what one gains against Alex), each measured from
            the game value; 0 exactly at a Nash equilibrium.
    """

    value: float
    best_response_to_alex: float
    best_response_to_bob: float

    @property
    def exploitability(self) -> float:
        return self.best_response_to_bob - self.best_response_to_alex

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "best_response_to_alex": self.best_response_to_alex,
                "best_response_to_bob": self.best_response_to_bob,
                "exploitability": self.exploitability}


def exploitability(graphs: Sequence[RoundGraph], strategies: Sequence[Sequence[Tensor]]
                   ) -> ExploitabilityReport:
    """Exact exploitability of ``strategies`` over the whole game (all rounds at once)."""
    value = float(node_values(graphs, strategies)[0][0][0])
    return ExploitabilityReport(
        value=value,
        best_response_to_alex=best_response_value(graphs, strategies, BOB),
        best_response_to_bob=best_response_value(graphs, strategies, ALEX))


def reach_probabilities(graphs: Sequence[RoundGraph], strategies: Sequence[Sequence[Tensor]],
                        dtype: torch.dtype = torch.float64) -> list[list[tuple[Tensor, Tensor]]]:
    """Whole-game forward pass: per round, per level 0..8, (Alex's own reach, Bob's own
    reach) [N_l] of each node, starting with 1 at the first round's roots; a merged node's
    reach sums its incoming paths, and a next round's root sums the round-end nodes leading
    to it. A node whose mover has own reach 0 is never reached when that player follows
    ``strategies``, whatever the opponent does."""
    _check_graphs(graphs)
    out: list[list[tuple[Tensor, Tensor]]] = []
    device = graphs[0].next_root.device
    start = (torch.ones(graphs[0].num_nodes[0], dtype=dtype, device=device),) * 2
    for position, graph in enumerate(graphs):
        levels: list[tuple[Tensor, Tensor]] = [start]
        for level in range(PLIES_PER_ROUND):
            parent, child = graph.edge_parent[level], graph.edge_child[level]
            mover = level_player(level)
            factor = strategies[position][level].to(device=device, dtype=dtype)
            n = graph.num_nodes[level + 1]
            levels.append(tuple(level_graph.propagate_reach(
                levels[-1][p], parent, torch.empty(n, dtype=dtype, device=device),
                factor if p == mover else None, child)
                for p in (ALEX, BOB)))  # type: ignore[misc]
        out.append(levels)
        if position + 1 < len(graphs):
            n_next = graphs[position + 1].num_nodes[0]
            start = tuple(torch.zeros(n_next, dtype=dtype, device=device).index_add_(
                0, graph.next_root, r) for r in levels[-1])  # type: ignore[assignment]
    return out


def uniform_strategies(graphs: Sequence[RoundGraph], dtype: torch.dtype = torch.float64
                       ) -> list[list[Tensor]]:
    """The uniform random strategy (per round, per level, [E_l])."""
    out = []
    for graph in graphs:
        levels = []
        for level, parent in enumerate(graph.edge_parent):
            counts = torch.zeros(graph.num_nodes[level], dtype=dtype, device=parent.device)
            counts.index_add_(0, parent, torch.ones(parent.numel(), dtype=dtype,
                                                   device=parent.device))
            levels.append(counts.reciprocal().index_select(0, parent))
        out.append(levels)
    return out
