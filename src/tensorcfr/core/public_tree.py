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

from tensorcfr.core.regret import CFRVariant, discount_scale, positive_regret_bound, \
    regret_tolerance, update_average, update_regrets
from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError

__all__ = [
    "RoundTemplate", "PublicTreeGame", "PublicTreeCFR", "regret_matching_dense",
    "normalize_dense", "estimate_solver_bytes", "public_best_response",
    "public_exploitability", "PublicExploitability", "public_pass", "BoardSample",
    "BoardSampling", "sample_boards", "enumerate_boards", "board_sample_from_choices",
    "round_hands", "root_total",
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

    Optional: ``hands_per_round`` (a list: round r's vectors then have ``H_r`` entries
    instead of ``H``, e.g. one per suit-isomorphic class) and ``root_weights()`` ([B_0, H_0]:
    how many concrete hands each root entry stands for; the root values are summed with these
    weights, default 1).
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

    # Sampled iterations (optional; needed only by ``sampling=``): ``chance_children(r)``
    # returns ``(parent_of [B_r] long, prob [B_r] float64)``: the board of round r-1 every
    # board of round r follows and the probability of that board given its parent (the
    # probabilities of a parent's children sum to 1).  ``chance_forward``,
    # ``chance_backward``, ``terminal_values`` and ``final_values`` then also accept a
    # keyword ``sample`` (a :class:`BoardSample`): the board axis is the sample's positions
    # (``sample.boards[r]``, repeats allowed) and the chance sum of round r is
    # ``sum_i sample.chance_weight[r][i] * (values of position i, averaged over the concrete
    # cards its board stands for)`` into position ``sample.parents[r][i]``.


def regret_matching_dense(regrets: Tensor, *, value_scale: Tensor | None = None,
                          tolerance: float | None = None,
                          out: Tensor | None = None) -> Tensor:
    """Regret matching over the leading action axis: ``regrets`` [A, ...] -> strategy [A, ...].

    The rule of :func:`tensorcfr.core.regret.regret_matching` for a dense action axis:
    regrets above :func:`~tensorcfr.core.regret.positive_regret_bound` (``tolerance`` times
    the infoset's sum of |regret| plus ``value_scale`` [...], the solver's cumulative value
    scale, broadcast over the action axis) normalised per infoset, uniform where there are
    none.  ``tolerance``: default :func:`~tensorcfr.core.regret.regret_tolerance` of the
    dtype.  ``out``: a tensor of ``regrets``' shape to write into (not ``regrets`` itself);
    the rule then allocates only per-infoset temporaries and one mask, which is what keeps
    large rounds cheap (a fresh array of a few hundred MB costs several times the
    arithmetic in page faults)."""
    if out is None:
        out = torch.empty_like(regrets)
    tol = regret_tolerance(regrets.dtype) if tolerance is None else tolerance
    torch.abs(regrets, out=out)
    bound = positive_regret_bound(out.sum(0, keepdim=True), value_scale, tol)
    torch.where(regrets > bound, regrets, regrets.new_zeros(()), out=out)
    total = out.sum(0, keepdim=True)
    positive = total > 0
    # where the sum is 0 every kept regret is 0: 0 / 1 + 1/A; elsewhere x / total + 0
    # (bitwise the quotient of the plain rule)
    divisor = torch.where(positive, total, torch.ones_like(total))
    uniform = (~positive).to(out.dtype).mul_(1.0 / regrets.shape[0])
    return torch.addcdiv(uniform, out, divisor, out=out)


def normalize_dense(cumulative: Tensor) -> Tensor:
    """Average policy from a cumulative strategy [A, ...] (uniform where the sum is 0)."""
    total = cumulative.sum(0, keepdim=True)
    uniform = torch.full_like(total, 1.0 / cumulative.shape[0])
    nonzero = total != 0
    return torch.where(nonzero, cumulative / torch.where(nonzero, total, torch.ones_like(total)),
                       uniform)


def round_hands(game: PublicTreeGame, r: int) -> int:
    """Entries of round r's hand axis: ``game.hands_per_round[r]`` when the game has it,
    else ``game.num_hands``."""
    per_round = getattr(game, "hands_per_round", None)
    return game.num_hands if per_round is None else int(per_round[r])


def root_total(game: PublicTreeGame, root_values: Tensor) -> float:
    """Sum of root values [1, B_0, H_0] over the root hands, weighted by the game's
    ``root_weights()`` when it has them (expected payoff units)."""
    weights = getattr(game, "root_weights", None)
    if weights is None:
        return float(root_values.sum())
    return float((root_values * weights()).sum())


def _prefix_counts(rounds: Sequence[RoundTemplate]) -> list[int]:
    counts = [1]
    for tmpl in rounds[:-1]:
        counts.append(counts[-1] * tmpl.num_exits)
    return counts


def estimate_solver_bytes(game: PublicTreeGame, dtype: torch.dtype,
                          sampling: "BoardSampling | int | None" = None) -> int:
    """Estimated peak memory of :class:`PublicTreeCFR` on ``game`` (bytes): regrets, average
    and current strategy per slot, reach vectors of every node of the largest round (both
    players), values in flight and the game's evaluator workspace.

    With ``sampling`` (K boards per parent) a sampled pass holds its vectors per *position*
    (``B_0 * K**r`` in round r, board indices and weights included), which for a large K
    is far more than the exact pass: the estimate is the larger of the two."""
    size = torch.empty((), dtype=dtype).element_size()
    prefixes = _prefix_counts(game.rounds)
    state = 0
    largest = 0
    per_parent = getattr(sampling, "per_parent", sampling)
    positions = game.num_boards[0]
    for r, (tmpl, p, b) in enumerate(zip(game.rounds, prefixes, game.num_boards)):
        cell = p * b * round_hands(game, r)
        state += 3 * tmpl.num_slots * cell
        largest = max(largest, (2 * tmpl.num_nodes + 3 * tmpl.num_exits + 8) * cell)
        if per_parent:  # K >= 1 boards drawn per parent position
            if r > 0:
                positions *= int(per_parent)
            sampled = (2 * tmpl.num_nodes + 3 * tmpl.num_exits + 8) * p * positions \
                * game.num_hands + positions * (32 // size + 1)
            largest = max(largest, sampled)
    return int((state + largest) * size + game.workspace_bytes(size) + 64 * 2**20)


@dataclass(frozen=True)
class BoardSample:
    """The public chance outcomes one sampled iteration visits (public chance sampling).

    Per round ``r`` the board axis of a sampled pass runs over *positions* ``i``:
    ``boards[r][i]`` is the (canonical) board of position i (repeats allowed),
    ``parents[r][i]`` its parent position in round r-1 (round 0: position i of the root
    batch), ``chance_weight[r][i]`` its weight in the parent's chance sum (``1 / K`` for K
    draws per parent; the chance probability itself when every child is enumerated) and
    ``importance[r][i]`` = ``importance[r-1][parent] * chance_weight / prob(board | parent)``:
    the factor that makes a position's regret / reach contribution an unbiased estimate of
    its board's exact one (1 for an enumeration).  All [n_r] tensors on the game's device.
    """

    boards: tuple[Tensor, ...]
    parents: tuple[Tensor, ...]
    chance_weight: tuple[Tensor, ...]
    importance: tuple[Tensor, ...]

    @property
    def sizes(self) -> list[int]:
        """Positions per round."""
        return [int(b.numel()) for b in self.boards]


def _children_tables(game: PublicTreeGame) -> list[tuple[Tensor, Tensor]]:
    """Per round r >= 1: ``(parent_of [B_r], prob [B_r] float64)`` from the game (checked)."""
    hook = getattr(game, "chance_children", None)
    if hook is None:
        raise TensorCFRError(f"{type(game).__name__} does not support sampled iterations "
                             "(no chance_children)")
    out = [(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.float64))]
    for r in range(1, len(game.rounds)):
        parent_of, prob = hook(r)
        out.append((parent_of.to("cpu", torch.long), prob.to("cpu", torch.float64)))
    return out


def board_sample_from_choices(game: PublicTreeGame, boards: Sequence[Tensor],
                              parents: Sequence[Tensor],
                              chance_weight: Sequence[Tensor]) -> BoardSample:
    """A :class:`BoardSample` from explicit positions (round 0 included: usually every root
    board with parent = itself and weight 1); importance weights are derived from the game's
    ``chance_children`` probabilities.  Used by the samplers and to enumerate samples in
    tests."""
    tables = _children_tables(game)
    dev = game.initial_reach().device
    importance = [torch.as_tensor(chance_weight[0], dtype=torch.float64)]
    for r in range(1, len(game.rounds)):
        b = torch.as_tensor(boards[r], dtype=torch.long)
        par = torch.as_tensor(parents[r], dtype=torch.long)
        parent_of, prob = tables[r]
        parent_boards = torch.as_tensor(boards[r - 1], dtype=torch.long)[par]
        if not torch.equal(parent_of[b], parent_boards):
            raise TensorCFRError(f"round {r}: a sampled board does not follow its parent")
        w = torch.as_tensor(chance_weight[r], dtype=torch.float64)
        importance.append(importance[r - 1][par] * w / prob[b])
    fdtype = game.initial_reach().dtype
    return BoardSample(
        tuple(torch.as_tensor(b, dtype=torch.long).to(dev) for b in boards),
        tuple(torch.as_tensor(p, dtype=torch.long).to(dev) for p in parents),
        tuple(torch.as_tensor(w, dtype=torch.float64).to(dev, fdtype) for w in chance_weight),
        tuple(w.to(dev, fdtype) for w in importance))


def sample_boards(game: PublicTreeGame, per_parent: int, generator: torch.Generator
                  ) -> BoardSample:
    """Public chance sampling: every position of round r-1 draws ``per_parent`` boards of
    round r (with replacement, in proportion to their chance probability), each with chance
    weight ``1 / per_parent``; the root batch is kept whole.  Deterministic given the
    (CPU) ``generator``'s state; private hands are never sampled (full vectors)."""
    if per_parent < 1:
        raise TensorCFRError(f"boards per parent must be >= 1, got {per_parent}")
    tables = _children_tables(game)
    b0 = game.num_boards[0]
    boards = [torch.arange(b0)]
    parents = [torch.arange(b0)]
    weights = [torch.ones(b0, dtype=torch.float64)]
    for r in range(1, len(game.rounds)):
        parent_of, prob = tables[r]
        nprev = game.num_boards[r - 1]
        # children of each previous board as a padded probability table
        counts = torch.bincount(parent_of, minlength=nprev)
        width = int(counts.max())
        order = torch.argsort(parent_of, stable=True)
        starts = torch.cumsum(counts, 0) - counts
        slot = torch.arange(len(parent_of)) - starts[parent_of[order]]
        child_table = torch.zeros((nprev, width), dtype=torch.long)
        prob_table = torch.zeros((nprev, width), dtype=torch.float64)
        child_table[parent_of[order], slot] = order
        prob_table[parent_of[order], slot] = prob[order]
        rows = prob_table[boards[-1]]
        draws = torch.multinomial(rows, per_parent, replacement=True, generator=generator)
        chosen = child_table[boards[-1]].gather(1, draws).reshape(-1)
        parents.append(torch.arange(len(boards[-1])).repeat_interleave(per_parent))
        boards.append(chosen)
        weights.append(torch.full((len(chosen),), 1.0 / per_parent, dtype=torch.float64))
    return board_sample_from_choices(game, boards, parents, weights)


def enumerate_boards(game: PublicTreeGame) -> BoardSample:
    """Every board of every round, each with its chance probability as chance weight
    (importance 1): a sampled pass over it is the exact pass (used by tests)."""
    tables = _children_tables(game)
    b0 = game.num_boards[0]
    boards = [torch.arange(b0)]
    parents = [torch.arange(b0)]
    weights = [torch.ones(b0, dtype=torch.float64)]
    for r in range(1, len(game.rounds)):
        parent_of, prob = tables[r]
        position_of = torch.full((game.num_boards[r - 1],), -1, dtype=torch.long)
        position_of[boards[-1]] = torch.arange(len(boards[-1]))
        keep = torch.nonzero(position_of[parent_of] >= 0).flatten()
        boards.append(keep)
        parents.append(position_of[parent_of[keep]])
        weights.append(prob[keep])
    return board_sample_from_choices(game, boards, parents, weights)


@dataclass(frozen=True)
class BoardSampling:
    """How a solver samples: ``per_parent`` boards drawn per parent position (``0`` = every
    board, the exact pass in sampled form) and the ``seed``; iteration t uses a generator
    seeded from ``(seed, t)``, so a run (and a resumed run) is reproducible bitwise."""

    per_parent: int = 1
    seed: int = 0

    def draw(self, game: PublicTreeGame, iteration: int) -> BoardSample:
        """The sample of iteration ``iteration`` (1, 2, ...)."""
        if self.per_parent == 0:
            return enumerate_boards(game)
        gen = torch.Generator(device="cpu")
        gen.manual_seed((int(self.seed) * 1_000_003 + int(iteration)) % (2**63 - 1))
        return sample_boards(game, self.per_parent, gen)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {"mode": "exhaustive" if self.per_parent == 0 else "public chance sampling",
                "boards_per_parent": self.per_parent, "seed": self.seed}


def parse_sampling(sampling: "BoardSampling | int | None") -> "BoardSampling | None":
    """``None`` (exact full sweeps), an int (boards per parent, seed 0) or a
    :class:`BoardSampling`."""
    if sampling is None or isinstance(sampling, BoardSampling):
        return sampling
    if isinstance(sampling, bool) or not isinstance(sampling, int) or sampling < 0:
        raise TensorCFRError(f"sampling must be a BoardSampling, a number of boards >= 0 or "
                             f"None, got {sampling!r}")
    return BoardSampling(int(sampling))


class _InstantBuffers:
    """Duck-typed solver for :func:`public_pass`: collects instantaneous regrets and
    reach-weighted strategies (vanilla-CFR update rules add them to zeroed buffers)."""

    def __init__(self, regrets: list[Tensor], average: list[Tensor], iteration: int,
                 regret_scale: list[Tensor] | None = None) -> None:
        self.regrets = regrets
        self.average = average
        self.iteration = iteration
        self.variant = CFRVariant("cfr")
        self.regret_scale = regret_scale


class PublicTreeCFR:
    """CFR / CFR+ / LCFR / DCFR with alternating updates over a :class:`PublicTreeGame`.

    ``algo``: a variant name of :mod:`tensorcfr.core.regret` (``pcfr+`` is not supported
    here); ``dtype``: float32 (default) or float64; ``max_memory_bytes``: refuse (with
    :class:`MemoryLimitError`) when :func:`estimate_solver_bytes` exceeds it.

    ``sampling``: ``None`` (default) = exact full sweeps; a :class:`BoardSampling` (or an int
    K = boards per parent, seed 0) = public chance sampling: each iteration draws K boards
    of every round per board of the round before (:func:`sample_boards`, both players'
    passes share the draw) and updates only the drawn boards' cells, their regret and
    average contributions multiplied by the sample's importance weights (unbiased).
    Sampling runs ``cfr`` and ``cfr+``; with it the cumulative strategy is stored
    unnormalised (``S += t^g w``: only the drawn cells change, so the normalised form's
    per-iteration decay of every cell is not applied).
    """

    def __init__(self, game: PublicTreeGame, algo: str | CFRVariant = "cfr+", *,
                 alpha: float | None = None, beta: float | None = None,
                 gamma: float | None = None, dtype: torch.dtype | str = torch.float32,
                 device: torch.device | str = "cpu",
                 max_memory_bytes: int | None = None,
                 sampling: "BoardSampling | int | None" = None) -> None:
        variant = algo if isinstance(algo, CFRVariant) else CFRVariant.parse(algo, alpha, beta,
                                                                            gamma)
        if variant.predictive:
            raise TensorCFRError("pcfr+ is not available in the public-tree solver; use cfr, "
                                 "cfr+, lcfr or dcfr")
        self.sampling = parse_sampling(sampling)
        if self.sampling is not None and variant.name not in ("cfr", "cfr+"):
            raise TensorCFRError(f"sampled iterations run cfr or cfr+, not {variant.name}")
        if isinstance(dtype, str):
            name = dtype.strip().lower().removeprefix("torch.")
            if name not in ("float32", "float64"):
                raise TensorCFRError(f"dtype must be float32 or float64, got {dtype!r}")
            dtype = getattr(torch, name)
        self.game = game
        self.variant = variant
        self.dtype = dtype
        self.device = torch.device(device)
        self.estimated_memory_bytes = estimate_solver_bytes(game, dtype, self.sampling)
        if max_memory_bytes is not None and self.estimated_memory_bytes > max_memory_bytes:
            raise MemoryLimitError(
                f"the solver needs about {self.estimated_memory_bytes / 2**30:.1f} GiB but only "
                f"{max_memory_bytes / 2**30:.1f} GiB are allowed; use a smaller variant, "
                "--dtype float32, or raise --max-memory")
        self.prefixes = _prefix_counts(game.rounds)
        self.iteration = 0
        shapes = [(t.num_slots, p, b, round_hands(game, r))
                  for r, (t, p, b) in enumerate(zip(game.rounds, self.prefixes,
                                                    game.num_boards))]
        self.regrets = [torch.zeros(s, dtype=dtype, device=self.device) for s in shapes]
        self.average = [torch.zeros(s, dtype=dtype, device=self.device) for s in shapes]
        self.strategy = [torch.zeros(s, dtype=dtype, device=self.device) for s in shapes]
        # the value scale of regret matching's rounding bound: one entry per decision node,
        # prefix and board (see public_pass)
        self.regret_scale = [torch.zeros((t.num_nodes,) + s[1:3] + (1,), dtype=dtype,
                                         device=self.device)
                             for t, s in zip(game.rounds, shapes)]
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
                    regret_matching_dense(self.regrets[r][sl],
                                          value_scale=self.regret_scale[r][j],
                                          out=self.strategy[r][sl])

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
            if self.sampling is not None:
                self._sampled_iteration(self.sampling.draw(self.game, self.iteration))
                continue
            for player in (0, 1):
                public_pass(self.game, self.strategy, player, "cfr", solver=self)
                self._refresh_strategy(player)

    def _sampled_iteration(self, sample: BoardSample) -> None:
        """One iteration on the drawn boards (see the class docstring)."""
        t = self.iteration
        weight_t = float(t) ** self.variant.average_exponent()
        uniques = [torch.unique(b, return_inverse=True) for b in sample.boards]
        for player in (0, 1):
            sub = [s.index_select(2, b) for s, b in zip(self.strategy, sample.boards)]
            inst_r = [torch.zeros_like(x) for x in sub]
            inst_w = [torch.zeros_like(x) for x in sub]
            inst_s = [x.new_zeros((tmpl.num_nodes,) + x.shape[1:3] + (1,))
                      for tmpl, x in zip(self.game.rounds, sub)]
            public_pass(self.game, sub, player, "cfr",
                        solver=_InstantBuffers(inst_r, inst_w, t,  # type: ignore[arg-type]
                                               inst_s), sample=sample)
            del sub
            for r, (uniq, inverse) in enumerate(uniques):
                w = sample.importance[r][:, None]
                shape = (inst_r[r].shape[0], inst_r[r].shape[1], len(uniq), inst_r[r].shape[3])
                acc_r = inst_r[r].new_zeros(shape).index_add_(2, inverse, inst_r[r].mul_(w))
                acc_w = inst_w[r].new_zeros(shape).index_add_(2, inverse, inst_w[r].mul_(w))
                acc_s = inst_s[r].new_zeros((inst_s[r].shape[0],) + shape[1:3] + (1,))
                acc_s.index_add_(2, inverse, inst_s[r].mul_(w))
                inst_r[r] = inst_w[r] = inst_s[r] = None  # type: ignore[call-overload]
                tmpl = self.game.rounds[r]
                for j, sl in enumerate(self._node_slices(r)):
                    if tmpl.players[j] != player:
                        continue
                    regrets = self.regrets[r][sl].index_select(2, uniq).add_(acc_r[sl])
                    if self.variant.floors_regrets:
                        regrets.clamp_min_(0)
                    self.regrets[r][sl].index_copy_(2, uniq, regrets)
                    scale = self.regret_scale[r][j].index_select(1, uniq).add_(acc_s[j])
                    self.regret_scale[r][j].index_copy_(1, uniq, scale)
                    average = self.average[r][sl].index_select(2, uniq)
                    self.average[r][sl].index_copy_(2, uniq, average.add_(acc_w[sl],
                                                                         alpha=weight_t))
                    self.strategy[r][sl].index_copy_(2, uniq, regret_matching_dense(
                        regrets, value_scale=scale))

    # ------------------------------------------------------------------ state
    def state_arrays(self) -> dict[str, np.ndarray]:
        """Arrays that determine the solver state (regrets and cumulative strategy)."""
        arrays = {}
        for r in range(len(self.regrets)):
            arrays[f"regrets_{r}"] = self.regrets[r].cpu().numpy()
            arrays[f"average_{r}"] = self.average[r].cpu().numpy()
            arrays[f"scale_{r}"] = self.regret_scale[r].cpu().numpy()
        return arrays

    def load_state_arrays(self, arrays: dict[str, np.ndarray], iteration: int) -> None:
        """Restore :meth:`state_arrays` (shapes and dtype checked: CorruptFileError).  A
        checkpoint written before the value scale existed (no ``scale_<r>``) resumes with
        a zero scale: the rounding bound then rests on the regrets alone."""
        for r in range(len(self.regrets)):
            self.regret_scale[r].zero_()
            for name, target in (("regrets", self.regrets[r]), ("average", self.average[r]),
                                 ("scale", self.regret_scale[r])):
                key = f"{name}_{r}"
                if key not in arrays and name == "scale":
                    continue
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


def public_pass(game: PublicTreeGame, strategy: Sequence[Tensor], player: int, mode: str,
                solver: Any = None, sample: BoardSample | None = None,
                best_response: Sequence[Tensor] | None = None) -> Tensor:
    """One forward + backward pass for ``player`` over the public tree.

    ``strategy``: per round [S_r, P_r, B_r, H] (both players' nodes; with ``sample``:
    [S_r, P_r, n_r, H] over the sample's positions).  ``mode``: ``"cfr"`` (values under the
    strategies; ``solver.regrets[r][node slots]`` and ``solver.average[r][...]`` receive
    ``player``'s updates by :func:`~tensorcfr.core.regret.update_regrets` /
    ``update_average`` with ``solver.variant`` at iteration ``solver.iteration``; tensors of
    the strategy's shape), ``"br"`` (best response of ``player`` to the other's strategy)
    or ``"eval"`` (values of the strategy profile).  A solver with ``regret_scale`` (per
    round [N_r, P_r, B_r, 1], one entry per decision node and public state) also accumulates
    there the value scale of ``player``'s public states, ``max_h sum_a |v(h, a)|`` over the
    hands (discounted as the variant's regrets), which regret matching's rounding bound uses.
    ``sample``: a :class:`BoardSample`
    (public chance sampling): only its positions are visited and each chance sum is the
    sample's weighted estimate; the root values are then an unbiased estimate of the exact
    ones.  ``best_response`` (mode ``"br"`` only): per round tensors of the strategy's shape
    whose ``player`` node slots receive the pure best response (one-hot per cell; ties go to
    the first best action).  Returns the root values [1, B_0, H] of ``player`` (expected
    payoff units).
    """
    if best_response is not None and mode != "br":
        raise TensorCFRError("best_response is only filled in mode 'br'")
    kw: dict[str, Any] = {} if sample is None else {"sample": sample}
    forward = _forward_reach(game, strategy, player, mode == "cfr", sample, kw)
    return _backward_values(game, strategy, player, mode, solver, forward, best_response, kw)


@dataclass
class _ForwardReach:
    """What :func:`public_pass`'s forward half leaves for its backward half: per round
    the reach ``[player 0's, player 1's]`` at each decision node (None for a reach not
    carried), and the opponent's reach at the last round's exits, stacked
    ``[E, P, B, H]``.  The backward half empties both as it goes (memory)."""

    node_reach: list[list[list[Tensor | None]]]
    final_exit_reach: Tensor | None = None


def _forward_reach(game: PublicTreeGame, strategy: Sequence[Tensor], player: int,
                   need_own: bool, sample: BoardSample | None,
                   kw: dict[str, Any]) -> _ForwardReach:
    """The forward half of :func:`public_pass`: reach vectors round by round (``player``'s
    own only when ``need_own``: the CFR update reads it), through the chance operators
    between rounds."""
    opp = 1 - player
    rounds = game.rounds
    last = len(rounds) - 1
    start = game.initial_reach()
    if sample is not None:
        start = start.index_select(0, sample.boards[0])
    start = start.unsqueeze(0)
    reach: list[Tensor | None] = [start, start]
    if not need_own:
        reach[player] = None
    forward = _ForwardReach([])
    for r, tmpl in enumerate(rounds):
        if r == last:
            # the showdowns need only the opponent's reach at the exits: written straight
            # into one stacked buffer (no stack copy; the player's own exit reach is unused)
            opp_at_root = reach[opp]
            assert opp_at_root is not None
            forward.final_exit_reach = opp_at_root.new_empty((tmpl.num_exits,)
                                                             + opp_at_root.shape)
        node_reach, exit_reach = _round_forward(tmpl, strategy[r], reach, opp,
                                                forward.final_exit_reach if r == last else None)
        forward.node_reach.append(node_reach)
        if r < last:
            reach = _next_round_reach(game, r + 1, exit_reach, kw)
        del exit_reach
    return forward


def _round_forward(tmpl: RoundTemplate, round_strategy: Tensor, reach: list[Tensor | None],
                   opp: int, final_exit_reach: Tensor | None
                   ) -> tuple[list[list[Tensor | None]], list[list[Tensor | None]]]:
    """Reach at every decision node and exit of one round from the reach at its root
    (``round_strategy`` [S_r, P_r, B_r, H]).  In the last round (``final_exit_reach``
    given) the opponent's exit reach goes straight into that buffer and the exits'
    entries stay None."""
    offsets = tmpl.slot_offsets
    node_reach: list[list[Tensor | None] | None] = [None] * tmpl.num_nodes
    exit_reach: list[list[Tensor | None] | None] = [None] * tmpl.num_exits
    node_reach[0] = reach
    for j in range(tmpl.num_nodes):
        here = node_reach[j]
        assert here is not None
        acting = tmpl.players[j]
        for a, (kind, idx) in enumerate(tmpl.children[j]):
            if kind == "terminal":
                continue
            if kind == "exit" and final_exit_reach is not None:
                assert here[opp] is not None
                if acting == opp:
                    torch.mul(here[opp], round_strategy[offsets[j] + a],
                              out=final_exit_reach[idx])
                else:
                    final_exit_reach[idx].copy_(here[opp])
                continue
            child = list(here)
            if child[acting] is not None:
                child[acting] = here[acting] * round_strategy[offsets[j] + a]
            if kind == "node":
                node_reach[idx] = child
            else:
                exit_reach[idx] = child
    return node_reach, exit_reach  # type: ignore[return-value]


def _next_round_reach(game: PublicTreeGame, r: int, exit_reach: list[list[Tensor | None]],
                      kw: dict[str, Any]) -> list[Tensor | None]:
    """Each player's reach at round ``r``'s roots: the previous round's exits stacked
    (prefix ``e * P + q``) and passed through the chance operator into round ``r``."""
    reach: list[Tensor | None] = []
    for who in (0, 1):
        if exit_reach[0][who] is None:
            reach.append(None)
            continue
        stacked = torch.stack([e[who] for e in exit_reach])  # type: ignore[misc]
        stacked = stacked.reshape((-1,) + tuple(stacked.shape[2:]))
        reach.append(game.chance_forward(r, stacked, **kw))
    return reach


def _backward_values(game: PublicTreeGame, strategy: Sequence[Tensor], player: int,
                     mode: str, solver: Any, forward: _ForwardReach,
                     best_response: Sequence[Tensor] | None, kw: dict[str, Any]) -> Tensor:
    """The backward half of :func:`public_pass`: ``player``'s values round by round from
    the final evaluation up, through the chance operators between rounds; the root
    values [1, B_0, H]."""
    rounds = game.rounds
    last = len(rounds) - 1
    next_values: Tensor | None = None
    for r in range(last, -1, -1):
        tmpl = rounds[r]
        if r == last:
            exit_values = game.final_values(player, forward.final_exit_reach, **kw)
            forward.final_exit_reach = None
        else:
            back = game.chance_backward(r + 1, next_values, **kw)
            exit_values = back.reshape((tmpl.num_exits, -1) + tuple(back.shape[1:]))
        next_values = _round_backward(
            game, r, strategy[r], player, mode, solver, forward.node_reach[r], exit_values,
            None if best_response is None else best_response[r], kw)
        forward.node_reach[r] = []  # free this round's reach vectors
    assert next_values is not None
    return next_values


def _round_backward(game: PublicTreeGame, r: int, round_strategy: Tensor, player: int,
                    mode: str, solver: Any, node_reach: list[list[Tensor | None]],
                    exit_values: Tensor, round_best_response: Tensor | None,
                    kw: dict[str, Any]) -> Tensor:
    """``player``'s values at round ``r``'s decision nodes, bottom-up from its exits'
    values (and its CFR update, or best response, at ``player``'s nodes); the values at
    the round's root."""
    tmpl = game.rounds[r]
    offsets = tmpl.slot_offsets
    node_values: list[Tensor | None] = [None] * tmpl.num_nodes
    for j in range(tmpl.num_nodes - 1, -1, -1):
        acting = tmpl.players[j]
        here = node_reach[j]
        sl = slice(offsets[j], offsets[j] + len(tmpl.children[j]))
        child_values = _child_values(game, r, j, round_strategy, player, here, node_values,
                                     exit_values, kw)
        if acting != player:
            # each child value is used once (exits and nodes appear once per template,
            # terminals are fresh): summing into the first one in place is safe
            value = child_values[0]
            for cv in child_values[1:]:
                value.add_(cv)
        elif mode == "br":
            value = _best_response_value(child_values, round_best_response, sl)
        else:
            sigma = round_strategy[sl]
            value = child_values[0] * sigma[0]
            for a in range(1, len(child_values)):
                value.addcmul_(child_values[a], sigma[a])
            if mode == "cfr" and solver is not None and not _fused_update(
                    solver, r, j, child_values, value, here[player]):
                _update_node(solver, r, j, sl, child_values, value, sigma, here[player])
        node_values[j] = value
        del child_values
    root = node_values[0]
    assert root is not None
    return root


def _child_values(game: PublicTreeGame, r: int, j: int, round_strategy: Tensor, player: int,
                  here: list[Tensor | None], node_values: list[Tensor | None],
                  exit_values: Tensor, kw: dict[str, Any]) -> list[Tensor]:
    """``player``'s values of node ``j``'s children in action order: a child node's
    (handed over: its entry is cleared), an exit's, or a terminal's evaluated with the
    opponent's reach (times its strategy when it acts at ``j``)."""
    tmpl = game.rounds[r]
    opp = 1 - player
    acting = tmpl.players[j]
    offset = tmpl.slot_offsets[j]
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
                opp_reach = opp_reach * round_strategy[offset + a]
            child_values.append(game.terminal_values(r, idx, player, opp_reach, **kw))
    return child_values  # type: ignore[return-value]


def _best_response_value(child_values: list[Tensor], round_best_response: Tensor | None,
                         sl: slice) -> Tensor:
    """The best child value per cell (in place in the first child's, used once); with
    ``round_best_response`` the node's slots ``sl`` there receive the one-hot choice
    (ties: the first best action)."""
    if round_best_response is None:
        value = child_values[0]  # used once (see _round_backward): the max runs in place
        for cv in child_values[1:]:
            torch.maximum(value, cv, out=value)
        return value
    stacked = torch.stack(child_values)
    best = stacked.max(0)
    onehot = torch.zeros_like(round_best_response[sl])
    onehot.scatter_(0, best.indices.unsqueeze(0), 1.0)
    round_best_response[sl] = onehot
    return best.values


def _update_node(solver: Any, r: int, j: int, sl: slice, child_values: list[Tensor],
                 value: Tensor, sigma: Tensor, own_reach: Tensor) -> None:
    """The torch CFR update of decision node ``j`` of round ``r`` (slots ``sl``): the value
    scale (a solver with ``regret_scale``), then per action slot the regrets from the
    child's value (turned into the instantaneous regret in place) and the average from
    the strategy times ``own_reach``."""
    t = solver.iteration
    scales = getattr(solver, "regret_scale", None)
    if scales is not None:
        # the value scale of the rounding bound: the largest sum_a |v_t(I, a)|
        # over the hands of the public state (see regret_matching_dense)
        magnitude = child_values[0].abs()
        for cv in child_values[1:]:
            magnitude.add_(cv.abs())
        scale = scales[r][j]
        scale.add_(magnitude.amax(-1, keepdim=True))
        discount_scale(scale, solver.variant, t)
    # the update rules are element-wise: one action slot at a time, each
    # child's values (used once) turned into its instantaneous regret in place
    for a, cv in enumerate(child_values):
        slot = sl.start + a
        regrets = solver.regrets[r][slot]
        update_regrets(regrets, cv.sub_(value), solver.variant, t, out=regrets)
        weighted = torch.mul(sigma[a], own_reach, out=cv)
        average = solver.average[r][slot]
        update_average(average, weighted, solver.variant, t, out=average)


_pass = public_pass  # former private name (kept for callers of the old name)


def _fused_update(solver: Any, r: int, j: int, child_values: list[Tensor], value: Tensor,
                  own_reach: Tensor) -> bool:
    """Let a solver with a ``fused_node_update`` hook update node j of round r itself (its
    regrets, value scale and average from the children's values [P, B, H] each, the node's
    value and the player's own reach, in one compiled pass); True when it did, False to
    run the torch rules below.  The hook must give the torch rules' numbers."""
    hook = getattr(solver, "fused_node_update", None)
    return hook is not None and bool(hook(r, j, child_values, value, own_reach))


@dataclass
class PublicExploitability:
    """Exact best-response values (chips per game) and exploitability of a profile.

    ``best_response_values[i]`` = b_i: what player i wins against the other's strategy when
    playing a best response; ``policy_values[i]``: player i's value of the profile;
    ``exploitability`` = (b0 + b1) / 2 (``nash_conv`` = b0 + b1).
    """

    best_response_values: list[float]
    policy_values: list[float] | None
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
    return root_total(game, public_pass(game, policy, player, "br"))


def public_exploitability(game: PublicTreeGame, policy: Sequence[Tensor], *,
                          with_policy_values: bool = True) -> PublicExploitability:
    """Best-response values of both players, the profile's values and the exploitability
    (b0 + b1) / 2 of ``policy`` (per round [S_r, P_r, B_r, H], both players' nodes).

    ``with_policy_values=False`` skips the profile's values (two of the four passes; the
    exploitability needs only the best responses): ``policy_values`` is then ``None``."""
    br = [public_best_response(game, policy, p) for p in (0, 1)]
    values = ([root_total(game, public_pass(game, policy, p, "eval")) for p in (0, 1)]
              if with_policy_values else None)
    nash_conv = br[0] + br[1]
    if not all(math.isfinite(v) for v in br + (values or [])):
        raise TensorCFRError("the policy gives non-finite values (NaN or inf probabilities?)")
    return PublicExploitability(br, values, nash_conv / 2, nash_conv)
