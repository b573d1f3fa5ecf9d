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
over the remaining public cards in 10 equal-width bins, plus its own equity).

Training (:func:`train_embedding`, one :class:`TrainingBudget` for every variant): Adam on
the weighted mean squared error (summed over the target's entries), plus optionally
``balance * (log m - entropy of the mean advisor usage)`` (keeps advisors in use) and
``sharpness * mean column entropy`` (pushes each column of Phi towards one-hot); a seeded
part of the classes (``holdout`` of the infosets) is held out, the learning rate is halved
when the held-out objective stops improving and training stops (restoring the best
network) when it has not improved for ``patience`` epochs or at ``max_epochs``.  Per round
the diagnostics (:class:`RoundDiagnostics`): final weighted loss over all classes, the
variance of the targets (the loss of predicting their weighted mean), advisors in use, the
mean largest entry of Phi's columns, epochs, and whether the training counts as *trained*
(loss <= :data:`TRAINED_RATIO` x variance).

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
from tensorcfr.games.numeral211.abstractions import (class_representatives, class_sizes,
                                                      round_wtl)
from tensorcfr.games.numeral211.config import GameConfig, hand_cards
from tensorcfr.games.numeral211.isomorphism import isomorphism
from tensorcfr.utils.io import atomic_path

__all__ = ["HandEbdNet", "HandEbdConvNet", "EmbeddingFile", "TrainingBudget",
           "RoundDiagnostics", "class_inputs", "class_planes", "class_targets",
           "train_embedding", "save_embedding", "load_embedding",
           "phi_diagnostics", "EMBEDDING_FORMAT", "TARGETS", "NETS", "TRAINED_RATIO",
           "DEFAULT_HIDDEN"]

EMBEDDING_FORMAT = "tensorcfr-embedding"
TARGETS = ("wtl", "ehs", "hist")
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


def class_targets(config: GameConfig, r: int, target: str = "wtl") -> np.ndarray:
    """[C_r, T] float32: the strength target of each class (own round first)."""
    if target not in TARGETS:
        raise TensorCFRError(f"unknown --target {target!r}: choose one of {', '.join(TARGETS)}")
    b, h = class_representatives(config, r)
    if target == "hist":
        from tensorcfr.games.numeral211.abstractions import _roll_back, round_equity

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


def _weighted_mse(pred: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Weighted mean over rows of the squared error summed over columns."""
    return (((pred - y) ** 2).sum(1) * w).sum() / w.sum()


def _objective(net: HandEbdNet, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor,
               balance: float, sharpness: float) -> torch.Tensor:
    """The training objective on a set of classes: weighted MSE + the optional usage balance
    and column-entropy terms."""
    phi = net.embed(x)
    loss = _weighted_mse(net.head(phi), y, w)
    if balance > 0:
        usage = (phi * w[:, None]).sum(0) / w.sum()
        entropy = -(usage * usage.clamp_min(1e-12).log()).sum()
        loss = loss + balance * (math.log(phi.shape[1]) - entropy)
    if sharpness > 0:
        column_entropy = -(phi * phi.clamp_min(1e-12).log()).sum(1)
        loss = loss + sharpness * (column_entropy * w).sum() / w.sum()
    return loss


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
                 anneal_epochs: int = 0) -> RoundDiagnostics:
    """Train ``net`` on one round's classes (inputs ``x`` [C, ...], targets ``y`` [C, T],
    multiplicities ``w`` [C]) under ``budget``; returns its diagnostics.  With
    ``temperature`` < 1 the softmax temperature falls geometrically from 1 to it over the
    first ``anneal_epochs`` epochs; the learning-rate schedule and early stopping start
    once it is reached.

    Runs on the device of ``x`` / ``y`` / ``w`` and ``net`` (all on the same one): the index
    tensors live there, the shuffles are drawn by a seeded CPU generator and moved there (so
    a CPU run is bitwise the same as before devices), and the epoch's training objective is
    summed on the device and read once per epoch (no sync per mini-batch)."""
    anneal = anneal_epochs if temperature != 1.0 else 0
    device = x.device
    held = torch.as_tensor(_holdout_mask(w.cpu().numpy(), budget.holdout, seed),
                           device=device)
    train_idx = torch.nonzero(~held).reshape(-1)
    held_idx = torch.nonzero(held).reshape(-1)
    watch = held_idx if len(held_idx) else train_idx
    with torch.no_grad():  # start at the mean: the softmax then only has to explain variation
        net.head.bias.copy_((y[train_idx] * w[train_idx, None]).sum(0) / w[train_idx].sum())
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=budget.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode="min", factor=budget.lr_factor, patience=budget.lr_patience,
        threshold=budget.min_delta, min_lr=budget.min_lr)
    best, best_state, best_epoch, waited, epoch = math.inf, None, 0, 0, 0
    for epoch in range(1, budget.max_epochs + 1):
        if temperature != 1.0:
            net.temperature = temperature ** min(1.0, epoch / anneal) if anneal else temperature
        net.train()
        order = train_idx[torch.randperm(len(train_idx), generator=gen).to(device)]
        # float64 as the former Python float sum (MPS has no float64: float32 there)
        total = torch.zeros((), dtype=torch.float32 if device.type == "mps" else torch.float64,
                            device=device)
        for s in range(0, len(order), budget.batch):
            idx = order[s:s + budget.batch]
            loss = _objective(net, x[idx], y[idx], w[idx], balance, sharpness)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach().to(total.dtype) * len(idx)
        progress(epoch, float(total) / max(1, len(order)))
        net.eval()
        with torch.no_grad():
            watched = float(_objective(net, x[watch], y[watch], w[watch], balance, sharpness))
        if epoch < anneal:
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
        pred = net.head(phi)
        loss = float(_weighted_mse(pred, y, w))
        mean = (y * w[:, None]).sum(0) / w.sum()
        variance = float(_weighted_mse(mean.expand_as(y), y, w))
        heldout = float(_weighted_mse(pred[held_idx], y[held_idx], w[held_idx])) \
            if len(held_idx) else None
    used, top1 = phi_diagnostics(phi.T.cpu().numpy())
    return RoundDiagnostics(loss=loss, target_variance=variance,
                            trained=bool(loss <= TRAINED_RATIO * variance),
                            advisors_used=used, top1_mean=top1, heldout_loss=heldout,
                            epochs=epoch, best_epoch=best_epoch)


def train_embedding(config: GameConfig, flop: int, turn: int, *, target: str = "wtl",
                    hidden: int | None = None, epochs: int | None = None,
                    batch: int | None = None, lr: float | None = None, seed: int = 0,
                    balance: float = 0.0, sharpness: float = 0.0, net: str = "mlp",
                    budget: TrainingBudget | None = None, temperature: float = 1.0,
                    anneal_epochs: int = 100,
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

    ``meta`` holds, keyed ``round_1`` / ``round_2``: ``loss``, ``target_variance``,
    ``trained``, ``advisors_used``, ``top1_mean``, ``heldout_loss``, ``epochs_run``,
    ``best_epoch`` (see :class:`RoundDiagnostics`), plus the settings, ``device`` (where it
    trained) and ``seconds``."""
    from tensorcfr.utils.device import resolve_device

    counts = isomorphism(config).isomorphic_classes()
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
    dev = resolve_device(device, "device")
    started = time.perf_counter()
    phi: dict[int, np.ndarray] = {}
    diagnostics: dict[int, RoundDiagnostics] = {}
    for r, m in ((1, flop), (2, turn)):
        torch.manual_seed(seed + r)  # the weights are initialised on the CPU, then moved
        y = torch.as_tensor(class_targets(config, r, target), device=dev)
        w = torch.as_tensor(class_sizes(config, r), dtype=torch.float32, device=dev)
        if net == "conv":
            x = torch.as_tensor(class_planes(config, r), device=dev)
            model: HandEbdNet = HandEbdConvNet(r + 1, config.suits, len(config.ranks), m,
                                               y.shape[1], hidden)
        else:
            x = torch.as_tensor(class_inputs(config, r), device=dev)
            model = HandEbdNet(x.shape[1], m, y.shape[1], hidden)
        model.to(dev)

        def round_progress(epoch: int, loss: float, r: int = r) -> None:
            if progress is not None:
                progress(r, epoch, loss)

        diagnostics[r] = _train_round(model, x, y, w, budget, balance=balance,
                                      sharpness=sharpness, seed=seed + r,
                                      progress=round_progress, temperature=temperature,
                                      anneal_epochs=anneal_epochs)
        with torch.no_grad():
            phi[r] = model.embed(x).T.cpu().numpy().astype(np.float32)

    def per_round(key: str) -> dict[str, Any]:
        return {f"round_{r}": getattr(d, key) for r, d in diagnostics.items()}

    meta = {"format": EMBEDDING_FORMAT, "version": 2, "game": config.to_dict(),
            "advisors": {"flop": flop, "turn": turn}, "classes": counts,
            "target": target, "net": net, "hidden": hidden, "budget": asdict(budget),
            "epochs": budget.max_epochs, "batch": budget.batch, "lr": budget.lr,
            "seed": seed, "balance": balance, "sharpness": sharpness,
            "temperature": temperature, "anneal_epochs": anneal_epochs,
            "loss": per_round("loss"), "target_variance": per_round("target_variance"),
            "trained": per_round("trained"), "trained_ratio": TRAINED_RATIO,
            "advisors_used": per_round("advisors_used"), "top1_mean": per_round("top1_mean"),
            "heldout_loss": per_round("heldout_loss"), "epochs_run": per_round("epochs"),
            "best_epoch": per_round("best_epoch"), "device": str(dev),
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
    if not os.path.isfile(path):
        raise CorruptFileError(f"embedding file {os.fspath(path)!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as data:
            files = {k: data[k] for k in data.files}
        meta = json.loads(str(files["meta"]))
        if meta.get("format") != EMBEDDING_FORMAT:
            raise ValueError("not an embedding file")
        config = GameConfig.from_dict(meta["game"])
        counts = isomorphism(config).isomorphic_classes()
        phi = {}
        for r in (1, 2):
            p = files[f"phi_{r}"]
            if p.ndim != 2 or p.shape[1] != counts[r] or not np.isfinite(p).all() or (
                    p < 0).any():
                raise ValueError(f"phi_{r} has shape {p.shape}, expected [m, {counts[r]}]")
            phi[r] = p
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError,
            json.JSONDecodeError, TensorCFRError) as exc:
        raise CorruptFileError(f"{os.fspath(path)!r} is not a valid embedding file: "
                               f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                               ) from None
    return EmbeddingFile(config, phi, meta)
