"""HandEbdNet: the network that produces Embedding CFR's Phi for Numeral211 (PyTorch).

For every suit-isomorphic class of the flop and the turn (its canonical representative
cards) a network maps the cards to a point of the probability simplex over ``m`` advisors
(the class's column of Phi, [m]) and a linear head maps that point to the class's strength
target ([T]).  One network per round, trained on all classes of the round, each weighted by
the number of concrete infosets it stands for (:func:`~.abstractions.class_sizes`).  Two
networks (``net``):

* ``"mlp"`` (:class:`HandEbdNet`): input = three 0/1 vectors over the ``N`` cards (private
  cards, flop card, turn card) [3N] -> Linear-ReLU-Linear-ReLU (``hidden`` = 256) -> Linear to
  ``m`` logits -> softmax -> Linear(m, T);
* ``"conv"`` (:class:`HandEbdConvNet`, the paper's Appendix C): input = the hand as a
  [rounds, suits, ranks] 0/1 tensor (one plane per round of dealing up to the class's round,
  suits in the class representative's canonical order) -> one convolution whose kernel
  covers one suit's whole (ranks x rounds) plane, shared across the suits -> ReLU -> the
  ``hidden``-long vector (500: 125 filters x 4 suits) -> Linear to ``m`` logits -> softmax
  -> Linear(m, T).

Targets (``target``): ``"wtl"`` the (win, tie, lose) probabilities of the class at its own
round and every earlier round (3 (r + 1) numbers, the k-recall winrate features), ``"ehs"``
the equities only (r + 1 numbers), ``"hist"`` the class's equity histogram (its turn equity
over the remaining public cards in 10 equal-width bins, plus its own equity), ``"emd"`` the
features a *teacher* clustering ran on (:mod:`.phi_teacher`, PaEmd by default: the flop's
cumulative histogram over the turn clusters, whose weighted L1 distance is the exact EMD;
the turn's equity).

Objectives (``objective``, the fit term of the loss; Phi keeps the paper's form, a softmax
over m advisors, in all three):

* ``"mse"`` (the paper's): the squared error of the head's prediction ``W phi + b``;
* ``"distortion"``: the *expected* distance under Phi, ``sum_p phi_p d(y, c_p)``, with the
  head's columns ``c_p = W[:, p] + b`` as the advisors' centres (seeded by k-means++ on the
  targets) and ``d`` the target's own distance (weighted L1 = the EMD for ``"emd"``, squared
  Euclidean otherwise): soft k-means by gradient descent.  Unlike the MSE of the mixture it
  cannot be lowered by mixing advisors (by Jensen it is at least the MSE), so a class's
  column goes to the advisors whose centre is near its target;
* ``"distill"``: the Kullback-Leibler divergence ``KL(t || phi)`` of Phi's column from the
  teacher's soft assignment ``t`` (softmax of minus the distances to the teacher's centres
  at ``teacher_temperature``, :func:`~.phi_teacher.teacher_assignment`); advisors = the
  teacher's buckets, the head is not used.

Training (:func:`train_embedding`, one :class:`TrainingBudget` for every variant): Adam on
the weighted fit term (above; each class weighted by its infosets), plus optionally
``balance * (log m - entropy of the mean advisor usage)`` (keeps advisors in use) and
``sharpness * mean column entropy`` (pushes each column of Phi towards one-hot); a seeded
part of the classes (``holdout`` of the infosets) is held out, the learning rate is halved
when the held-out objective stops improving and training stops (restoring the best
network) when it has not improved for ``patience`` epochs or at ``max_epochs``.  Per round
the diagnostics (:class:`RoundDiagnostics`): final weighted loss over all classes, the
variance of the targets (the loss of predicting their weighted mean), advisors in use, the
mean largest entry of Phi's columns, epochs, and whether the training counts as *trained*
(loss <= :data:`TRAINED_RATIO` x variance); all in the objective's own terms (for
``"distortion"`` the variance is the distance to the targets' weighted mean, for
``"distill"`` the divergence from the teacher's mean column).  With a teacher the meta also
records each round's ``partition_distortion`` (Phi cut to its largest entry, measured in the
teacher's space by :func:`~.phi_teacher.partition_distortion`) next to the teacher's own.

Files (:func:`save_embedding` / :func:`load_embedding`): NPZ with ``phi_<r>`` float32
[m_r, C_r] for r = 1, 2 and ``meta`` (JSON: format ``tensorcfr-embedding``, game parameters,
advisors, target, net, training settings, per-round diagnostics keyed ``round_<r>``,
the torch device it trained on, seconds).  The preflop is not embedded (identity).
Nothing here knows CFR or the CLI.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
import zipfile
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable

import numpy as np
import torch

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.numeral211.abstraction.abstractions import (class_representatives, class_sizes,
                                                                 round_wtl)
from tensorcfr.games.numeral211.game.config import GameConfig, hand_cards
from tensorcfr.games.numeral211.game.isomorphism import isomorphism
from tensorcfr.games.numeral211.abstraction.phi_teacher import (Teacher, build_teacher,
                                                                partition_distortion,
                                                                teacher_assignment)
from tensorcfr.utils.io import atomic_path

__all__ = ["HandEbdNet", "HandEbdConvNet", "EmbeddingFile", "TrainingBudget",
           "RoundDiagnostics", "class_inputs", "class_planes", "class_targets",
           "train_embedding", "save_embedding", "load_embedding",
           "phi_diagnostics", "EMBEDDING_FORMAT", "TARGETS", "NETS", "OBJECTIVES",
           "TRAINED_RATIO", "DEFAULT_HIDDEN", "DEFAULT_TEACHER_TEMPERATURE"]

EMBEDDING_FORMAT = "tensorcfr-embedding"
TARGETS = ("wtl", "ehs", "hist", "emd")
OBJECTIVES = ("mse", "distortion", "distill")
"""Fit terms of the training loss (see the module docstring); ``"mse"`` is the paper's."""
DEFAULT_TEACHER_TEMPERATURE = 0.5
"""Temperature of the teacher's soft assignment that ``"distill"`` fits (unit: the teacher's
mean distance to the own centre, as in :mod:`.soft_clustering`)."""
CENTRE_WARMUP_EPOCHS = 20
DISTORTION_TEMPERATURE = 0.1
"""``"distortion"``: temperature of the mixture likelihood it trains on (unit: the mean
distance of a class to its nearest seed centre)."""
"""``"distortion"``: epochs during which the centres stay at their seeds (the encoder
learns the assignment first); the learning-rate schedule and early stopping start after."""
NETS = ("mlp", "conv")
DEFAULT_HIDDEN = {"mlp": 256, "conv": 500}
"""Hidden size per network when none is given (conv: the paper's 500-long vector)."""
HIST_BINS = 10
"""Bins of the ``hist`` target's equity histogram."""
TRAINED_RATIO = 0.5
"""A round counts as trained when its final loss is at most this fraction of its target
variance (a network that predicts a constant has loss = variance)."""


class HandEbdNet(torch.nn.Module):
    """MLP encoder -> softmax over ``advisors`` (a column of Phi) -> linear strength head.

    ``embed`` [n, inputs] -> [n, advisors]; ``forward`` -> [n, targets]."""

    def __init__(self, inputs: int, advisors: int, targets: int, hidden: int = 256) -> None:
        super().__init__()
        self.encoder = torch.nn.Sequential(
            torch.nn.Linear(inputs, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, advisors))
        self.head = torch.nn.Linear(advisors, targets)
        self.temperature: float | None = None
        """None: Phi's column = softmax(logits); a number t: softmax(standardised logits /
        t) (logits scaled to mean 0 and standard deviation 1 over the advisors, so that t,
        not the network, sets how sharp the columns are)."""

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """[n, inputs] -> advisor logits [n, advisors]."""
        return self.encoder(x)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """[n, inputs] -> [n, advisors] (rows on the simplex)."""
        z = self.logits(x)
        if self.temperature is not None:
            z = (z - z.mean(-1, keepdim=True)) / (z.std(-1, keepdim=True) + 1e-6)
            z = z / self.temperature
        return torch.softmax(z, dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[n, inputs] -> predicted targets [n, targets]."""
        return self.head(self.embed(x))


class HandEbdConvNet(HandEbdNet):
    """The paper's HandEbdNet (its Appendix C): input [n, rounds, suits, ranks] (0/1; the
    rounds are the convolution's input channels), a convolution with kernel (1, ranks), i.e.
    one suit's whole (ranks x rounds) plane, with ``ceil(hidden / suits)`` filters shared
    across the suits, ReLU, the flattened [filters x suits] hidden vector, a fully connected
    layer to ``advisors`` logits, softmax = Phi's column, a linear head to ``targets``.

    Our choices where the paper is silent: the kernel is shared across suits (a convolution
    slides it over the suit axis), the filter count makes the hidden vector ``hidden`` long
    (500 = 125 x 4), no padding, bias everywhere, PyTorch's default initialisation."""

    def __init__(self, rounds: int, suits: int, ranks: int, advisors: int, targets: int,
                 hidden: int = 500) -> None:
        torch.nn.Module.__init__(self)
        filters = -(-hidden // suits)
        self.encoder = torch.nn.Sequential(
            torch.nn.Conv2d(rounds, filters, kernel_size=(1, ranks)), torch.nn.ReLU(),
            torch.nn.Flatten(), torch.nn.Linear(filters * suits, advisors))
        self.head = torch.nn.Linear(advisors, targets)
        self.temperature = None


def class_inputs(config: GameConfig, r: int) -> np.ndarray:
    """[C_r, 3N] float32: round-wise card presence of each class's representative (private
    cards, flop card, turn card; card = rank * suits + suit)."""
    n = config.num_cards
    b, h = class_representatives(config, r)
    hands = hand_cards(config)[h]
    x = np.zeros((len(b), 3 * n), dtype=np.float32)
    rows = np.arange(len(b))
    x[rows, hands[:, 0]] = 1
    x[rows, hands[:, 1]] = 1
    boards = isomorphism(config).boards[r][b]
    for j in range(boards.shape[1]):
        x[rows, (j + 1) * n + boards[:, j]] = 1
    return x


def class_planes(config: GameConfig, r: int) -> np.ndarray:
    """[C_r, r + 1, suits, ranks] float32: the conv net's input, the class representative's
    cards per round of dealing (private, flop, turn) as suit x rank planes; the
    representative is canonical, so its suits are in canonical order."""
    x = class_inputs(config, r).reshape(-1, 3, len(config.ranks), config.suits)
    return np.ascontiguousarray(x[:, :r + 1].transpose(0, 1, 3, 2))


def class_targets(config: GameConfig, r: int, target: str = "wtl",
                  teacher: Teacher | None = None) -> np.ndarray:
    """[C_r, T] float32: the strength target of each class (own round first); ``"emd"``
    needs the ``teacher`` whose clustering features it is."""
    if target not in TARGETS:
        raise TensorCFRError(f"unknown --target {target!r}: choose one of {', '.join(TARGETS)}")
    if target == "emd":
        if teacher is None:
            raise TensorCFRError("the emd target is a teacher clustering's features: give a "
                                 "teacher")
        return teacher.features[r].astype(np.float32)
    b, h = class_representatives(config, r)
    if target == "hist":
        from tensorcfr.games.numeral211.abstraction.abstractions import _roll_back, round_equity

        last = config.num_rounds - 1
        turn_eq = round_equity(config, last, per_class=False)
        bins = np.minimum((turn_eq * HIST_BINS).astype(np.int64), HIST_BINS - 1)
        cells = np.eye(HIST_BINS)[bins]  # [B, H, bins]
        for j in range(last, r, -1):
            cells = _roll_back(config, j, cells)
        own = round_equity(config, r, per_class=False)[b, h]
        return np.concatenate([cells[b, h], own[:, None]], axis=1).astype(np.float32)
    boards = isomorphism(config).boards[r][b]
    parts = []
    for j in range(r, -1, -1):
        cells = round_wtl(config, j, per_class=False)
        if j == r:
            bj = b
        elif j == 0:
            bj = np.zeros_like(b)
        else:
            bj = boards[:, 0] // config.suits
        wtl = cells[bj, h]
        parts.append(wtl if target == "wtl" else wtl[:, :1] + 0.5 * wtl[:, 1:2])
    return np.concatenate(parts, axis=1).astype(np.float32)


@dataclass
class EmbeddingFile:
    """Phi per embedded round (``phi[r]`` [m_r, C_r]) and metadata."""

    config: GameConfig
    phi: dict[int, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def advisors(self) -> dict[int, int]:
        """Advisors m_r per embedded round."""
        return {r: int(p.shape[0]) for r, p in self.phi.items()}


@dataclass(frozen=True)
class TrainingBudget:
    """How long and how HandEbdNet trains; one object shared by every compared variant.

    ``max_epochs``: upper bound of passes over the training classes; ``batch``: classes per
    Adam step; ``lr``: initial learning rate, multiplied by ``lr_factor`` when the held-out
    objective has not improved (by a relative ``min_delta``) for ``lr_patience`` epochs,
    never below ``min_lr``; training stops after ``patience`` epochs without improvement
    and restores the best network; ``holdout``: fraction of the infosets (classes drawn in
    a seeded order until their multiplicity reaches it) held out for that."""

    max_epochs: int = 400
    batch: int = 128
    lr: float = 1e-3
    holdout: float = 0.1
    patience: int = 30
    lr_patience: int = 10
    lr_factor: float = 0.5
    min_lr: float = 1e-5
    min_delta: float = 1e-3

    def __post_init__(self) -> None:
        for name in ("max_epochs", "batch", "patience", "lr_patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TensorCFRError(f"training budget: {name} must be a positive integer, "
                                     f"got {value!r}")
        for name in ("lr", "min_lr"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise TensorCFRError(f"training budget: {name} must be positive and finite, "
                                     f"got {getattr(self, name)!r}")
        if not 0 <= self.holdout < 1:
            raise TensorCFRError(f"training budget: holdout must be in [0, 1), got "
                                 f"{self.holdout!r}")
        if not 0 < self.lr_factor < 1:
            raise TensorCFRError(f"training budget: lr_factor must be in (0, 1), got "
                                 f"{self.lr_factor!r}")
        if not (math.isfinite(self.min_delta) and self.min_delta >= 0):
            raise TensorCFRError(f"training budget: min_delta must be >= 0, got "
                                 f"{self.min_delta!r}")


@dataclass(frozen=True)
class RoundDiagnostics:
    """What one round's training reached.

    ``loss``: weighted MSE (summed over the target's entries) over all classes;
    ``target_variance``: the same loss of predicting the targets' weighted mean;
    ``trained``: ``loss <= TRAINED_RATIO * target_variance``; ``advisors_used``: advisors
    that are the largest entry of at least one class's column; ``top1_mean``: mean over
    classes (unweighted) of the largest entry of the column (1 = one-hot, 1/m = uniform);
    ``heldout_loss``: the weighted MSE over the held-out classes (None without holdout);
    ``epochs``: epochs run; ``best_epoch``: the epoch whose network was kept."""

    loss: float
    target_variance: float
    trained: bool
    advisors_used: int
    top1_mean: float
    heldout_loss: float | None
    epochs: int
    best_epoch: int


def phi_diagnostics(phi: np.ndarray) -> tuple[int, float]:
    """(advisors that are the argmax of at least one column, mean largest column entry) of a
    Phi [m, C]."""
    return int(len(np.unique(phi.argmax(0)))), float(phi.max(0).mean())


@dataclass(frozen=True)
class FitTerm:
    """The fit term of the training loss: ``objective`` (one of :data:`OBJECTIVES`) and the
    per-entry weights ``dim_weights`` [T] of the target's distance (ones except for the
    ``"emd"`` target, whose weighted L1 is the EMD); ``l1``: the distance is the weighted L1
    (``"emd"``), else the weighted squared Euclidean."""

    objective: str = "mse"
    dim_weights: torch.Tensor | None = None
    l1: bool = False
    scale: float = 1.0
    """``"distortion"``: the unit of its training temperature (set by :func:`_train_round`
    to the mean distance of a class to its nearest seed centre)."""

    def loss(self, net: HandEbdNet, phi: torch.Tensor, y: torch.Tensor,
             w: torch.Tensor, *, training: bool = False) -> torch.Tensor:
        """The ``w``-weighted mean over rows of the fit term of columns ``phi`` [n, m] against
        targets ``y`` [n, T] (for ``"distill"``, the teacher's columns [n, m]).

        ``"distortion"`` reports the expected distance ``sum_p phi_p d(y, c_p)`` and, with
        ``training``, trains on its smooth version ``-t log sum_p phi_p exp(-d(y, c_p) /
        t)`` (t = :data:`DISTORTION_TEMPERATURE` x ``scale``): the negative log-likelihood
        of a mixture with weights phi and components ``exp(-d / t)`` around the centres,
        whose gradient in the logits (phi minus the posterior) does not vanish when a
        column has saturated on a far advisor, as the expected distance's does; as t -> 0
        it tends to the distance of the nearest advisor in use."""
        if self.objective == "distill":
            return self._weighted(_kl_rows(y, phi), w)
        if self.objective == "distortion":
            centres = net.head.weight.T + net.head.bias  # [m, T]
            d = self.distances(y, centres)
            if training:
                t = DISTORTION_TEMPERATURE * self.scale
                return self._weighted(-t * torch.logsumexp(
                    phi.clamp_min(1e-30).log() - d / t, dim=1), w)
            return self._weighted((phi * d).sum(1), w)
        return self._weighted(self.distances(y, net.head(phi), pairwise=False), w)

    def constant_loss(self, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """The fit term of the best-known constant: the targets' weighted mean (for
        ``"distill"`` the teacher's mean column), i.e. the loss of a Phi that ignores the
        cards ("target variance")."""
        mean = (y * w[:, None]).sum(0) / w.sum()
        if self.objective == "distill":
            return self._weighted(_kl_rows(y, mean.expand_as(y)), w)
        return self._weighted(self.distances(y, mean.expand_as(y), pairwise=False), w)

    def distances(self, y: torch.Tensor, c: torch.Tensor, *,
                  pairwise: bool = True) -> torch.Tensor:
        """Distances between targets ``y`` [n, T] and ``c``: pairwise to centres [m, T] ->
        [n, m], or row by row to [n, T] -> [n]."""
        dw = self.dim_weights if self.dim_weights is not None else torch.ones(
            y.shape[1], dtype=y.dtype, device=y.device)
        if not pairwise:
            diff = (y - c).abs() if self.l1 else (y - c) ** 2
            return (diff * dw).sum(1)
        if self.l1:  # sum_i dw_i |y_i - c_i| = || dw y - dw c ||_1
            return torch.cdist(y * dw, c * dw, p=1.0)
        root = dw.sqrt()
        a, b = y * root, c * root
        return ((a * a).sum(1, keepdim=True) - 2 * a @ b.T + (b * b).sum(1)).clamp_min(0)

    @staticmethod
    def _weighted(values: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (values * w).sum() / w.sum()


def _kl_rows(t: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[n]: KL(t_j || q_j) per row of two row-stochastic [n, m] tensors (0 log 0 = 0)."""
    return (t * (t.clamp_min(1e-30).log() - q.clamp_min(1e-30).log())).sum(1)


def _weighted_mse(pred: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Weighted mean over rows of the squared error summed over columns."""
    return (((pred - y) ** 2).sum(1) * w).sum() / w.sum()


def _objective(net: HandEbdNet, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor,
               balance: float, sharpness: float, fit: FitTerm | None = None) -> torch.Tensor:
    """The training objective on a set of classes: the fit term (default: weighted MSE) +
    the optional usage balance and column-entropy terms."""
    phi = net.embed(x)
    loss = (fit or FitTerm()).loss(net, phi, y, w, training=True)
    if balance > 0:
        usage = (phi * w[:, None]).sum(0) / w.sum()
        entropy = -(usage * usage.clamp_min(1e-12).log()).sum()
        loss = loss + balance * (math.log(phi.shape[1]) - entropy)
    if sharpness > 0:
        column_entropy = -(phi * phi.clamp_min(1e-12).log()).sum(1)
        loss = loss + sharpness * (column_entropy * w).sum() / w.sum()
    return loss


def _seed_centres(fit: FitTerm, y: torch.Tensor, w: torch.Tensor, m: int,
                  gen: torch.Generator) -> torch.Tensor:
    """[m, T]: k-means++ seeding on the targets ``y`` [n, T] (weights ``w``, the fit term's
    distance), the ``"distortion"`` objective's initial centres; draws from ``gen``."""
    y_cpu, w_cpu = y.detach().cpu().double(), w.detach().cpu().double()
    fit_cpu = FitTerm(fit.objective, None if fit.dim_weights is None
                      else fit.dim_weights.detach().cpu().double(), fit.l1)
    first = int(torch.multinomial(w_cpu / w_cpu.sum(), 1, generator=gen))
    chosen = [first]
    nearest = fit_cpu.distances(y_cpu, y_cpu[first:first + 1])[:, 0]
    for _ in range(1, m):
        mass = nearest * w_cpu
        if not float(mass.sum()) > 0:  # every target is already a centre: repeat one
            chosen.append(chosen[-1])
            continue
        nxt = int(torch.multinomial(mass / mass.sum(), 1, generator=gen))
        chosen.append(nxt)
        nearest = torch.minimum(nearest, fit_cpu.distances(y_cpu, y_cpu[nxt:nxt + 1])[:, 0])
    return y[torch.as_tensor(chosen, device=y.device)]


def _holdout_mask(weights: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """[C] bool: classes held out, drawn in a seeded random order until their multiplicity
    reaches ``fraction`` of the total (none when fewer than 5 classes or fraction 0; never
    all)."""
    held = np.zeros(len(weights), dtype=bool)
    if fraction <= 0 or len(weights) < 5:
        return held
    order = np.random.default_rng(seed).permutation(len(weights))
    reached = np.cumsum(weights[order]) / weights.sum()
    count = min(int(np.searchsorted(reached, fraction)) + 1, len(weights) - 1)
    held[order[:count]] = True
    return held


def _train_round(net: HandEbdNet, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor,
                 budget: TrainingBudget, *, balance: float, sharpness: float, seed: int,
                 progress: Callable[[int, float], None], temperature: float = 1.0,
                 anneal_epochs: int = 0, fit: FitTerm | None = None) -> RoundDiagnostics:
    """Train ``net`` on one round's classes (inputs ``x`` [C, ...], targets ``y`` [C, T],
    multiplicities ``w`` [C]) under ``budget`` with the fit term ``fit`` (default: the
    paper's MSE); returns its diagnostics.  With
    ``temperature`` < 1 the softmax temperature falls geometrically from 1 to it over the
    first ``anneal_epochs`` epochs; the learning-rate schedule and early stopping start
    once it is reached.

    Runs on the device of ``x`` / ``y`` / ``w`` and ``net`` (all on the same one): the index
    tensors live there, the shuffles are drawn by a seeded CPU generator and moved there (so
    a CPU run is bitwise the same as before devices), and the epoch's training objective is
    summed on the device and read once per epoch (no sync per mini-batch)."""
    fit = fit or FitTerm()
    anneal = anneal_epochs if temperature != 1.0 else 0
    # "distortion": the centres stay at their k-means++ seeds while the encoder learns the
    # assignment (trained together from the start, every centre is pulled to the mean of
    # the near-uniform first columns and they collapse onto one); then both train
    frozen = min(CENTRE_WARMUP_EPOCHS, budget.max_epochs - 1) \
        if fit.objective == "distortion" else 0
    device = x.device
    held = torch.as_tensor(_holdout_mask(w.cpu().numpy(), budget.holdout, seed),
                           device=device)
    train_idx = torch.nonzero(~held).reshape(-1)
    held_idx = torch.nonzero(held).reshape(-1)
    watch = held_idx if len(held_idx) else train_idx
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if fit.objective == "distortion":  # the head's columns are the centres: k-means++
            net.head.bias.zero_()
            seeds = _seed_centres(fit, y[train_idx], w[train_idx], net.head.weight.shape[1],
                                  gen)
            net.head.weight.copy_(seeds.T)
            nearest = fit.distances(y[train_idx], seeds).min(1).values
            scale = float((nearest * w[train_idx]).sum() / w[train_idx].sum())
            fit = replace(fit, scale=scale if scale > 0 else 1.0)
        elif fit.objective == "mse":
            # start at the mean: the softmax then only has to explain variation
            net.head.bias.copy_((y[train_idx] * w[train_idx, None]).sum(0)
                                / w[train_idx].sum())
    opt = torch.optim.Adam(net.parameters(), lr=budget.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode="min", factor=budget.lr_factor, patience=budget.lr_patience,
        threshold=budget.min_delta, min_lr=budget.min_lr)
    best, best_state, best_epoch, waited, epoch = math.inf, None, 0, 0, 0
    for epoch in range(1, budget.max_epochs + 1):
        net.head.requires_grad_(epoch > frozen)
        if temperature != 1.0:
            net.temperature = temperature ** min(1.0, epoch / anneal) if anneal else temperature
        net.train()
        order = train_idx[torch.randperm(len(train_idx), generator=gen).to(device)]
        # float64 as the former Python float sum (MPS has no float64: float32 there)
        total = torch.zeros((), dtype=torch.float32 if device.type == "mps" else torch.float64,
                            device=device)
        for s in range(0, len(order), budget.batch):
            idx = order[s:s + budget.batch]
            loss = _objective(net, x[idx], y[idx], w[idx], balance, sharpness, fit)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach().to(total.dtype) * len(idx)
        progress(epoch, float(total) / max(1, len(order)))
        net.eval()
        with torch.no_grad():
            watched = float(_objective(net, x[watch], y[watch], w[watch], balance, sharpness,
                                       fit))
        if epoch < max(anneal, frozen + 1):
            continue
        sched.step(watched)
        if watched < best * (1 - budget.min_delta) or best_state is None:
            best, best_epoch, waited = watched, epoch, 0
            best_state = copy.deepcopy(net.state_dict())
        else:
            waited += 1
            if waited >= budget.patience:
                break
    assert best_state is not None
    net.load_state_dict(best_state)
    net.eval()
    with torch.no_grad():
        phi = net.embed(x)
        loss = float(fit.loss(net, phi, y, w))
        variance = float(fit.constant_loss(y, w))
        heldout = float(fit.loss(net, phi[held_idx], y[held_idx], w[held_idx])) \
            if len(held_idx) else None
    used, top1 = phi_diagnostics(phi.T.cpu().numpy())
    return RoundDiagnostics(loss=loss, target_variance=variance,
                            trained=bool(loss <= TRAINED_RATIO * variance),
                            advisors_used=used, top1_mean=top1, heldout_loss=heldout,
                            epochs=epoch, best_epoch=best_epoch)


def _checked_options(flop: int, turn: int, target: str, net: str, hidden: int | None,
                     budget: TrainingBudget | None, epochs: int | None, batch: int | None,
                     lr: float | None, balance: float, sharpness: float, temperature: float,
                     anneal_epochs: int, objective: str, teacher_temperature: float
                     ) -> tuple[TrainingBudget, int]:
    """:func:`train_embedding`'s options checked (one-line TensorCFRErrors naming the CLI
    options); the training budget with the older keywords applied, and the hidden size."""
    for label, k in (("--flop", flop), ("--turn", turn)):
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise TensorCFRError(f"{label} must be a positive number of advisors, got {k!r}")
    if target not in TARGETS:
        raise TensorCFRError(f"unknown --target {target!r}: choose one of {', '.join(TARGETS)}")
    if net not in NETS:
        raise TensorCFRError(f"unknown --net {net!r}: choose one of {', '.join(NETS)}")
    budget = budget or TrainingBudget()
    overrides = {k: v for k, v in (("max_epochs", epochs), ("batch", batch), ("lr", lr))
                 if v is not None}
    budget = replace(budget, **overrides)
    hidden = DEFAULT_HIDDEN[net] if hidden is None else hidden
    if hidden < 1 or not (math.isfinite(balance) and balance >= 0) or not (
            math.isfinite(sharpness) and sharpness >= 0):
        raise TensorCFRError("hidden must be positive, balance and sharpness finite and >= 0")
    if not (math.isfinite(temperature) and 0 < temperature <= 1):
        raise TensorCFRError(f"--temperature must be in (0, 1], got {temperature!r}")
    if temperature != 1.0 and (isinstance(anneal_epochs, bool) or not isinstance(
            anneal_epochs, int) or not 0 <= anneal_epochs < budget.max_epochs):
        raise TensorCFRError(f"--anneal-epochs must be an integer in [0, max epochs "
                             f"{budget.max_epochs}), got {anneal_epochs!r}")
    if objective not in OBJECTIVES:
        raise TensorCFRError(f"unknown --objective {objective!r}: choose one of "
                             f"{', '.join(OBJECTIVES)}")
    if not (isinstance(teacher_temperature, (int, float)) and math.isfinite(
            teacher_temperature) and teacher_temperature > 0):
        raise TensorCFRError(f"--teacher-temperature must be positive and finite, got "
                             f"{teacher_temperature!r}")
    return budget, hidden


def _round_setup(config: GameConfig, r: int, m: int, target: str, objective: str,
                 tutor: Teacher | None, teacher_temperature: float, net: str, hidden: int,
                 seed: int, dev: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, HandEbdNet, FitTerm]:
    """Round ``r``'s training data and network for :func:`train_embedding`: inputs ``x``,
    targets ``y`` (the teacher's soft assignment for ``"distill"``), class weights ``w``
    (concrete infosets per class), the network with ``m`` advisors (initialised from seed
    ``seed + r`` on the CPU, then moved to ``dev``) and the fit term."""
    torch.manual_seed(seed + r)  # the weights are initialised on the CPU, then moved
    sizes = class_sizes(config, r)
    if objective == "distill":
        assert tutor is not None
        y = torch.as_tensor(teacher_assignment(config, tutor, r, teacher_temperature),
                            device=dev)
    else:
        y = torch.as_tensor(class_targets(config, r, target, tutor), device=dev)
    fit = FitTerm(objective)
    if target == "emd" and objective != "distill":
        assert tutor is not None
        fit = FitTerm(objective, torch.as_tensor(tutor.dim_weights[r], dtype=y.dtype,
                                                 device=dev), l1=True)
    w = torch.as_tensor(sizes, dtype=torch.float32, device=dev)
    if net == "conv":
        x = torch.as_tensor(class_planes(config, r), device=dev)
        model: HandEbdNet = HandEbdConvNet(r + 1, config.suits, len(config.ranks), m,
                                           y.shape[1], hidden)
    else:
        x = torch.as_tensor(class_inputs(config, r), device=dev)
        model = HandEbdNet(x.shape[1], m, y.shape[1], hidden)
    model.to(dev)
    return x, y, w, model, fit


def train_embedding(config: GameConfig, flop: int, turn: int, *, target: str = "wtl",
                    hidden: int | None = None, epochs: int | None = None,
                    batch: int | None = None, lr: float | None = None, seed: int = 0,
                    balance: float = 0.0, sharpness: float = 0.0, net: str = "mlp",
                    budget: TrainingBudget | None = None, temperature: float = 1.0,
                    anneal_epochs: int = 100, objective: str = "mse",
                    teacher: Any = None, teacher_source: str | None = None,
                    teacher_temperature: float = DEFAULT_TEACHER_TEMPERATURE,
                    progress: Callable[[int, int, float], None] | None = None,
                    device: torch.device | str = "cpu") -> EmbeddingFile:
    """Train one HandEbdNet per round (flop with ``flop`` advisors, turn with ``turn``) and
    return the frozen Phi matrices with the per-round diagnostics in ``meta``.

    ``net``: ``"mlp"`` or ``"conv"`` (the paper's); ``hidden``: hidden size (default
    :data:`DEFAULT_HIDDEN`); ``budget``: the :class:`TrainingBudget` (default
    ``TrainingBudget()``), whose ``max_epochs`` / ``batch`` / ``lr`` the older keywords
    ``epochs`` / ``batch`` / ``lr`` override when given; ``balance`` > 0 adds ``balance *
    (log m - entropy of the mean advisor usage)`` (keeps advisors in use), ``sharpness`` > 0
    adds ``sharpness * mean entropy of Phi's columns`` (nats; pushes columns towards
    one-hot); ``temperature`` < 1: the logits are standardised over the advisors and the
    softmax temperature is annealed from 1 to ``temperature`` over the first
    ``anneal_epochs`` epochs (the schedule and early stopping start after), Phi being the
    softmax at that temperature (without the standardisation the network would simply
    scale its logits back up); ``progress(round, epoch, training objective)``
    after each epoch; ``device``: the torch device the networks train on (``"cpu"``,
    ``"cuda"``, ``"cuda:1"`` ...; checked by :func:`~tensorcfr.utils.device.resolve_device`,
    a one-line :class:`TensorCFRError` when it is not usable here, e.g. cuda without a GPU);
    the initialisation and the shuffles are drawn on the CPU, so a CPU run is reproducible
    bitwise, a GPU run follows the same draws up to the GPU's floating-point rounding.

    ``objective``: the fit term, one of :data:`OBJECTIVES` (module docstring); ``teacher``:
    the clustering (a :class:`~tensorcfr.abstraction.bucket_map.BucketMap` of this deck,
    ``teacher_source`` naming its file) that ``target="emd"`` and ``objective="distill"``
    use, built as PaEmd with ``flop`` / ``turn`` buckets and ``seed`` when they need one and
    none is given (its buckets must equal ``flop`` / ``turn`` for ``"distill"``);
    ``teacher_temperature``: the temperature of the soft assignment ``"distill"`` fits
    (> 0).  With a teacher, ``meta`` adds ``teacher`` (method, params, source, own
    distortion), ``partition_distortion`` (Phi's largest entry per class as a partition,
    in the teacher's distance) and for ``"distill"`` ``teacher_agreement`` (infoset
    fraction whose largest entry is the teacher's bucket).

    ``meta`` holds, keyed ``round_1`` / ``round_2``: ``loss``, ``target_variance``,
    ``trained``, ``advisors_used``, ``top1_mean``, ``heldout_loss``, ``epochs_run``,
    ``best_epoch`` (see :class:`RoundDiagnostics`), plus the settings, ``device`` (where it
    trained) and ``seconds``."""
    from tensorcfr.utils.device import resolve_device

    counts = isomorphism(config).isomorphic_classes()
    budget, hidden = _checked_options(flop, turn, target, net, hidden, budget, epochs, batch,
                                      lr, balance, sharpness, temperature, anneal_epochs,
                                      objective, teacher_temperature)
    dev = resolve_device(device, "device")
    started = time.perf_counter()
    tutor: Teacher | None = None
    if teacher is not None or objective == "distill" or target == "emd":
        tutor = build_teacher(config, flop, turn, bmap=teacher, source=teacher_source,
                              seed=seed)
        if objective == "distill" and tutor.buckets != {1: flop, 2: turn}:
            raise TensorCFRError(
                f"--objective distill: the teacher has {tutor.buckets[1]} flop and "
                f"{tutor.buckets[2]} turn buckets; give --flop {tutor.buckets[1]} --turn "
                f"{tutor.buckets[2]}")
    phi: dict[int, np.ndarray] = {}
    diagnostics: dict[int, RoundDiagnostics] = {}
    teacher_stats: dict[str, dict[str, float]] = {"partition_distortion": {},
                                                  "teacher_agreement": {}}
    for r, m in ((1, flop), (2, turn)):
        x, y, w, model, fit = _round_setup(config, r, m, target, objective, tutor,
                                           teacher_temperature, net, hidden, seed, dev)
        sizes = class_sizes(config, r)  # (no random draw)

        def round_progress(epoch: int, loss: float, r: int = r) -> None:
            if progress is not None:
                progress(r, epoch, loss)

        diagnostics[r] = _train_round(model, x, y, w, budget, balance=balance,
                                      sharpness=sharpness, seed=seed + r,
                                      progress=round_progress, temperature=temperature,
                                      anneal_epochs=anneal_epochs, fit=fit)
        with torch.no_grad():
            phi[r] = model.embed(x).T.cpu().numpy().astype(np.float32)
        if tutor is not None:
            top = phi[r].argmax(0)
            teacher_stats["partition_distortion"][f"round_{r}"] = partition_distortion(
                tutor.features[r], tutor.dim_weights[r], top, sizes)
            if objective == "distill":
                same = top == tutor.bmap.labels[r]
                teacher_stats["teacher_agreement"][f"round_{r}"] = float(
                    sizes[same].sum() / sizes.sum())

    def per_round(key: str) -> dict[str, Any]:
        return {f"round_{r}": getattr(d, key) for r, d in diagnostics.items()}

    meta = {"format": EMBEDDING_FORMAT, "version": 2, "game": config.to_dict(),
            "advisors": {"flop": flop, "turn": turn}, "classes": counts,
            "target": "teacher assignment" if objective == "distill" else target,
            "net": net, "hidden": hidden, "budget": asdict(budget),
            "epochs": budget.max_epochs, "batch": budget.batch, "lr": budget.lr,
            "seed": seed, "balance": balance, "sharpness": sharpness,
            "temperature": temperature, "anneal_epochs": anneal_epochs,
            "loss": per_round("loss"), "target_variance": per_round("target_variance"),
            "trained": per_round("trained"), "trained_ratio": TRAINED_RATIO,
            "advisors_used": per_round("advisors_used"), "top1_mean": per_round("top1_mean"),
            "heldout_loss": per_round("heldout_loss"), "epochs_run": per_round("epochs"),
            "best_epoch": per_round("best_epoch"), "device": str(dev),
            "objective": objective,
            "teacher": None if tutor is None else tutor.meta(),
            "teacher_temperature": teacher_temperature if objective == "distill" else None,
            **{k: v for k, v in teacher_stats.items() if v},
            "seconds": time.perf_counter() - started}
    return EmbeddingFile(config, phi, meta)


def save_embedding(path: str | os.PathLike[str], emb: EmbeddingFile) -> None:
    """Write the NPZ atomically."""
    arrays = {f"phi_{r}": p.astype(np.float32) for r, p in emb.phi.items()}
    arrays["meta"] = np.array(json.dumps(emb.meta))
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)


def load_embedding(path: str | os.PathLike[str]) -> EmbeddingFile:
    """Read an embedding NPZ (:class:`CorruptFileError` on anything else)."""
    from tensorcfr.utils.manifest import check_format
    from tensorcfr.utils.reading import check_input_file, strict_json_loads

    if not os.path.lexists(path):
        raise CorruptFileError(f"embedding file {os.fspath(path)!r} does not exist")
    check_input_file(path, "embedding file")  # a folder, FIFO or device: refused unopened
    try:
        with np.load(path, allow_pickle=False) as data:
            files = {k: data[k] for k in data.files}
        meta = check_format(strict_json_loads(str(files["meta"])), EMBEDDING_FORMAT, "meta",
                            "an embedding file")
        config = GameConfig.from_dict(meta["game"])
        counts = isomorphism(config).isomorphic_classes()
        phi = {}
        for r in (1, 2):
            p = files[f"phi_{r}"]
            if p.ndim != 2 or p.shape[1] != counts[r] or not np.isfinite(p).all() or (
                    p < 0).any():
                raise ValueError(f"phi_{r} has shape {p.shape}, expected [m, {counts[r]}]")
            phi[r] = p
    except (OSError, ValueError, KeyError, TypeError, AttributeError, zipfile.BadZipFile,
            EOFError, RecursionError, NotImplementedError, json.JSONDecodeError,
            TensorCFRError) as exc:
        raise CorruptFileError(f"{os.fspath(path)!r} is not a valid embedding file: "
                               f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                               ) from None
    return EmbeddingFile(config, phi, meta)
