"""CFR and best response over a *public* tree with per-hand range vectors (game independent).

The games this module solves (two-player, zero-sum, poker-like) have a public state (betting
history + public cards) and private hands of the same hand set for both players: an infoset
is a (public state, own hand) pair.  Instead of walking histories, every pass carries one
vector per player over the ``H`` private hands:

* reach vectors ``[P, B, H]`` forward (own strategy probabilities, no chance),
* counterfactual values ``[P, B, H]`` backward (opponent reach and chance included),

batched over ``P`` betting *prefixes* (the exit sequences of earlier rounds) and ``B`` boards.
The game is described by :class:`PublicTreeGame`: per round a betting template
(:class:`RoundTemplate`, the same for every prefix and board), linear chance operators between
the board batches of consecutive rounds (card removal and any suit-isomorphism weighting live
there) and terminal evaluators (folds and the final showdown).  Nothing here knows cards.

Tensors of round ``r`` over the template's action slots have shape ``[S_r, P_r, B_r, H]``
(``S_r`` = slots of the template, node j owning ``slot_offsets[j] : +num_actions``).  The
regret / averaging rules are those of :mod:`tensorcfr.core.regret` (``update_regrets``,
``update_average``); regret matching runs over the leading action axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.regret import CFRVariant, update_average, update_regrets
from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError

__all__ = [
    "RoundTemplate", "PublicTreeGame", "PublicTreeCFR", "regret_matching_dense",
    "normalize_dense", "estimate_solver_bytes", "public_best_response",
    "public_exploitability", "PublicExploitability",
]


@dataclass(frozen=True)
class RoundTemplate:
    """Betting template of one round (identical for every prefix and board of the round).

    ``players[j]``: player acting at decision node j (nodes numbered parents first);
    ``children[j][a]``: ``("node", j')``, ``("terminal", k)`` (evaluated by
    :meth:`PublicTreeGame.terminal_values`) or ``("exit", e)`` (closes the round: the next
    round's prefix ``e * P_r + q``, or the final evaluation after the last round).
    """

    players: tuple[int, ...]
    children: tuple[tuple[tuple[str, int], ...], ...]
    num_exits: int

    @property
    def num_nodes(self) -> int:
        """Decision nodes."""
        return len(self.players)

    @property
    def num_actions(self) -> list[int]:
        """Actions per node."""
        return [len(c) for c in self.children]

    @property
    def slot_offsets(self) -> list[int]:
        """First slot of each node."""
        return [0] + list(np.cumsum(self.num_actions)[:-1].tolist())

    @property
    def num_slots(self) -> int:
        """Action slots."""
        return sum(self.num_actions)


class PublicTreeGame(Protocol):
    """What a game provides to :class:`PublicTreeCFR` (all tensors on ``device``/``dtype``).

    ``rounds``: one template per round; ``num_boards[r]``: board batch ``B_r``;
    ``num_hands``: ``H``.  Prefix counts follow: ``P_0 = 1``, ``P_{r+1} = P_r * E_r``.
    """

    rounds: Sequence[RoundTemplate]
    num_boards: Sequence[int]
    num_hands: int

    def initial_reach(self) -> Tensor:
        """[B_0, H]: reach of every hand at the root (1, or 0 for impossible hands)."""

    def chance_forward(self, r: int, reach: Tensor) -> Tensor:
        """Reach [X, B_{r-1}, H] -> [X, B_r, H] after round r's public cards."""

    def chance_backward(self, r: int, values: Tensor) -> Tensor:
        """Values [X, B_r, H] -> [X, B_{r-1}, H] (chance-weighted sum over new cards)."""

    def terminal_values(self, r: int, k: int, player: int, opp_reach: Tensor) -> Tensor:
        """Counterfactual values [P_r, B_r, H] of ``player`` at terminal k of round r."""

    def final_values(self, player: int, opp_reach: Tensor) -> Tensor:
        """Values [E, P, B, H] of ``player`` at the last round's exits (showdowns)."""

    def workspace_bytes(self, element_size: int) -> int:
        """Extra temporary memory the evaluators need, in bytes."""


def regret_matching_dense(regrets: Tensor) -> Tensor:
    """Regret matching over the leading action axis: ``regrets`` [A, ...] -> strategy [A, ...].

    Positive regrets normalised per infoset, uniform where they sum to 0 (the rule of
    :func:`tensorcfr.core.regret.regret_matching`, for a dense action axis)."""
    positive = regrets.clamp_min(0)
    total = positive.sum(0, keepdim=True)
    uniform = torch.full_like(total, 1.0 / regrets.shape[0])
    return torch.where(total > 0, positive / torch.where(total > 0, total,
                                                         torch.ones_like(total)), uniform)


def normalize_dense(cumulative: Tensor) -> Tensor:
    """Average policy from a cumulative strategy [A, ...] (uniform where the sum is 0)."""
    total = cumulative.sum(0, keepdim=True)
    uniform = torch.full_like(total, 1.0 / cumulative.shape[0])
    nonzero = total != 0
    return torch.where(nonzero, cumulative / torch.where(nonzero, total, torch.ones_like(total)),
                       uniform)


def _prefix_counts(rounds: Sequence[RoundTemplate]) -> list[int]:
    counts = [1]
    for tmpl in rounds[:-1]:
        counts.append(counts[-1] * tmpl.num_exits)
    return counts


def estimate_solver_bytes(game: PublicTreeGame, dtype: torch.dtype) -> int:
    """Estimated peak memory of :class:`PublicTreeCFR` on ``game`` (bytes): regrets, average
    and current strategy per slot, reach vectors of every node of the largest round (both
    players), values in flight and the game's evaluator workspace."""
    size = torch.empty((), dtype=dtype).element_size()
    prefixes = _prefix_counts(game.rounds)
    state = 0
    largest = 0
    for tmpl, p, b in zip(game.rounds, prefixes, game.num_boards):
        cell = p * b * game.num_hands
        state += 3 * tmpl.num_slots * cell
        largest = max(largest, (2 * tmpl.num_nodes + 3 * tmpl.num_exits + 8) * cell)
    return int((state + largest) * size + game.workspace_bytes(size) + 64 * 2**20)


class PublicTreeCFR:
    """CFR / CFR+ / LCFR / DCFR with alternating updates over a :class:`PublicTreeGame`.

    ``algo``: a variant name of :mod:`tensorcfr.core.regret` (``pcfr+`` is not supported
    here); ``dtype``: float32 (default) or float64; ``max_memory_bytes``: refuse (with
    :class:`MemoryLimitError`) when :func:`estimate_solver_bytes` exceeds it.
    """

    def __init__(self, game: PublicTreeGame, algo: str | CFRVariant = "cfr+", *,
                 alpha: float | None = None, beta: float | None = None,
                 gamma: float | None = None, dtype: torch.dtype | str = torch.float32,
                 device: torch.device | str = "cpu",
                 max_memory_bytes: int | None = None) -> None:
        variant = algo if isinstance(algo, CFRVariant) else CFRVariant.parse(algo, alpha, beta,
                                                                            gamma)
        if variant.predictive:
            raise TensorCFRError("pcfr+ is not available in the public-tree solver; use cfr, "
                                 "cfr+, lcfr or dcfr")
        if isinstance(dtype, str):
            name = dtype.strip().lower().removeprefix("torch.")
            if name not in ("float32", "float64"):
                raise TensorCFRError(f"dtype must be float32 or float64, got {dtype!r}")
            dtype = getattr(torch, name)
        self.game = game
        self.variant = variant
        self.dtype = dtype
        self.device = torch.device(device)
        self.estimated_memory_bytes = estimate_solver_bytes(game, dtype)
        if max_memory_bytes is not None and self.estimated_memory_bytes > max_memory_bytes:
            raise MemoryLimitError(
                f"the solver needs about {self.estimated_memory_bytes / 2**30:.1f} GiB but only "
                f"{max_memory_bytes / 2**30:.1f} GiB are allowed; use a smaller variant, "
                "--dtype float32, or raise --max-memory")
        self.prefixes = _prefix_counts(game.rounds)
        self.iteration = 0
        h = game.num_hands
        shapes = [(t.num_slots, p, b, h) for t, p, b in zip(game.rounds, self.prefixes,
                                                            game.num_boards)]
        self.regrets = [torch.zeros(s, dtype=dtype, device=self.device) for s in shapes]
        self.average = [torch.zeros(s, dtype=dtype, device=self.device) for s in shapes]
        self.strategy = [torch.zeros(s, dtype=dtype, device=self.device) for s in shapes]
        for p in (0, 1):
            self._refresh_strategy(p)

    # ------------------------------------------------------------------ helpers
    def _node_slices(self, r: int) -> list[slice]:
        tmpl = self.game.rounds[r]
        return [slice(o, o + a) for o, a in zip(tmpl.slot_offsets, tmpl.num_actions)]

    def _refresh_strategy(self, player: int) -> None:
        for r, tmpl in enumerate(self.game.rounds):
            for j, sl in enumerate(self._node_slices(r)):
                if tmpl.players[j] == player:
                    self.strategy[r][sl] = regret_matching_dense(self.regrets[r][sl])

    def average_policy(self) -> list[Tensor]:
        """Average strategy per round [S_r, P_r, B_r, H] (normalised per node and hand)."""
        out = []
        for r in range(len(self.game.rounds)):
            pol = torch.empty_like(self.average[r])
            for sl in self._node_slices(r):
                pol[sl] = normalize_dense(self.average[r][sl])
            out.append(pol)
        return out

    def current_policy(self) -> list[Tensor]:
        """Current (regret-matching) strategy per round [S_r, P_r, B_r, H]."""
        return [s.clone() for s in self.strategy]

    # ------------------------------------------------------------------ iterations
    def iterate(self, num_iterations: int = 1) -> None:
        """Run ``num_iterations`` iterations (player 0 then player 1 each time)."""
        for _ in range(num_iterations):
            self.iteration += 1
            for player in (0, 1):
                _pass(self.game, self.strategy, player, "cfr", solver=self)
                self._refresh_strategy(player)

    # ------------------------------------------------------------------ state
    def state_arrays(self) -> dict[str, np.ndarray]:
        """Arrays that determine the solver state (regrets and cumulative strategy)."""
        arrays = {}
        for r in range(len(self.regrets)):
            arrays[f"regrets_{r}"] = self.regrets[r].cpu().numpy()
            arrays[f"average_{r}"] = self.average[r].cpu().numpy()
        return arrays

    def load_state_arrays(self, arrays: dict[str, np.ndarray], iteration: int) -> None:
        """Restore :meth:`state_arrays` (shapes and dtype checked: CorruptFileError)."""
        for r in range(len(self.regrets)):
            for name, target in (("regrets", self.regrets[r]), ("average", self.average[r])):
                key = f"{name}_{r}"
                if key not in arrays:
                    raise CorruptFileError(f"checkpoint lacks {key}")
                arr = arrays[key]
                if tuple(arr.shape) != tuple(target.shape) or str(arr.dtype) != str(
                        target.dtype).removeprefix("torch."):
                    raise CorruptFileError(f"checkpoint array {key} has shape {arr.shape} "
                                           f"{arr.dtype}, expected {tuple(target.shape)} "
                                           f"{str(target.dtype).removeprefix('torch.')}")
                target.copy_(torch.from_numpy(np.ascontiguousarray(arr)))
        self.iteration = int(iteration)
        for p in (0, 1):
            self._refresh_strategy(p)


def _pass(game: PublicTreeGame, strategy: Sequence[Tensor], player: int, mode: str,
          solver: PublicTreeCFR | None = None) -> Tensor:
    """One forward + backward pass for ``player``.

    ``mode``: ``"cfr"`` (values under the strategies; regret and average updates of
    ``player`` at iteration ``solver.iteration``), ``"br"`` (best response of ``player`` to
    the other's strategy) or ``"eval"`` (values of the strategy profile).  Returns the root
    values [1, B_0, H] of ``player``.
    """
    opp = 1 - player
    rounds = game.rounds
    last = len(rounds) - 1
    need_own = mode == "cfr"
    start = game.initial_reach().unsqueeze(0)
    reach: list[Tensor | None] = [start, start]
    if not need_own:
        reach[player] = None
    # ---------------------------------------------------------------- forward
    stored: list[list[list[Tensor | None]]] = []
    final_exit_reach: Tensor | None = None
    for r, tmpl in enumerate(rounds):
        offsets = tmpl.slot_offsets
        node_reach: list[list[Tensor | None] | None] = [None] * tmpl.num_nodes
        exit_reach: list[list[Tensor | None] | None] = [None] * tmpl.num_exits
        node_reach[0] = reach
        for j in range(tmpl.num_nodes):
            here = node_reach[j]
            acting = tmpl.players[j]
            for a, (kind, idx) in enumerate(tmpl.children[j]):
                if kind == "terminal":
                    continue
                child = list(here)
                if child[acting] is not None:
                    child[acting] = here[acting] * strategy[r][offsets[j] + a]
                if kind == "node":
                    node_reach[idx] = child
                else:
                    exit_reach[idx] = child
        stored.append(node_reach)  # type: ignore[arg-type]
        if r < last:
            reach = []
            for who in (0, 1):
                if exit_reach[0][who] is None:  # type: ignore[index]
                    reach.append(None)
                    continue
                stacked = torch.stack([e[who] for e in exit_reach])  # type: ignore[index]
                stacked = stacked.reshape((-1,) + tuple(stacked.shape[2:]))
                reach.append(game.chance_forward(r + 1, stacked))
        else:
            final_exit_reach = torch.stack([e[opp] for e in exit_reach])  # type: ignore[index]
        del exit_reach
    # ---------------------------------------------------------------- backward
    next_values: Tensor | None = None
    for r in range(last, -1, -1):
        tmpl = rounds[r]
        offsets = tmpl.slot_offsets
        if r == last:
            exit_values = game.final_values(player, final_exit_reach)
            final_exit_reach = None
        else:
            back = game.chance_backward(r + 1, next_values)
            exit_values = back.reshape((tmpl.num_exits, -1) + tuple(back.shape[1:]))
        node_values: list[Tensor | None] = [None] * tmpl.num_nodes
        node_reach = stored[r]
        for j in range(tmpl.num_nodes - 1, -1, -1):
            acting = tmpl.players[j]
            here = node_reach[j]
            sl = slice(offsets[j], offsets[j] + len(tmpl.children[j]))
            child_values = []
            for a, (kind, idx) in enumerate(tmpl.children[j]):
                if kind == "node":
                    child_values.append(node_values[idx])
                    node_values[idx] = None
                elif kind == "exit":
                    child_values.append(exit_values[idx])
                else:
                    opp_reach = here[opp]
                    if acting == opp:
                        opp_reach = opp_reach * strategy[r][offsets[j] + a]
                    child_values.append(game.terminal_values(r, idx, player, opp_reach))
            if acting != player:
                value = child_values[0].clone()
                for cv in child_values[1:]:
                    value.add_(cv)
            else:
                stacked = torch.stack(child_values)
                if mode == "br":
                    value = stacked.max(0).values
                else:
                    sigma = strategy[r][sl]
                    value = (stacked * sigma).sum(0)
                    if mode == "cfr" and solver is not None:
                        t = solver.iteration
                        stacked.sub_(value)
                        regrets = solver.regrets[r][sl]
                        update_regrets(regrets, stacked, solver.variant, t, out=regrets)
                        average = solver.average[r][sl]
                        update_average(average, sigma * here[player], solver.variant, t,
                                       out=average)
                del stacked
            node_values[j] = value
            del child_values
        next_values = node_values[0]
        stored[r] = []  # free this round's reach vectors
    assert next_values is not None
    return next_values


@dataclass
class PublicExploitability:
    """Exact best-response values (chips per game) and exploitability of a profile.

    ``best_response_values[i]`` = b_i: what player i wins against the other's strategy when
    playing a best response; ``policy_values[i]``: player i's value of the profile;
    ``exploitability`` = (b0 + b1) / 2 (``nash_conv`` = b0 + b1).
    """

    best_response_values: list[float]
    policy_values: list[float]
    exploitability: float
    nash_conv: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"best_response_values": self.best_response_values,
                "policy_values": self.policy_values, "exploitability": self.exploitability,
                "nash_conv": self.nash_conv}


def public_best_response(game: PublicTreeGame, policy: Sequence[Tensor], player: int) -> float:
    """Value of a best response of ``player`` against ``policy`` (the other player's
    strategy is read from ``policy``: per round [S_r, P_r, B_r, H]), summed over the root
    hands: an expected payoff in the units of the game's terminal values."""
    return float(_pass(game, policy, player, "br").sum())


def public_exploitability(game: PublicTreeGame, policy: Sequence[Tensor]) -> PublicExploitability:
    """Best-response values of both players, the profile's values and the exploitability
    (b0 + b1) / 2 of ``policy`` (per round [S_r, P_r, B_r, H], both players' nodes)."""
    br = [public_best_response(game, policy, p) for p in (0, 1)]
    values = [float(_pass(game, policy, p, "eval").sum()) for p in (0, 1)]
    nash_conv = br[0] + br[1]
    if not all(math.isfinite(v) for v in br + values):
        raise TensorCFRError("the policy gives non-finite values (NaN or inf probabilities?)")
    return PublicExploitability(br, values, nash_conv / 2, nash_conv)
