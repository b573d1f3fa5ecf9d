"""HandEbdNet: the network that produces Embedding CFR's Phi for Numeral211 (PyTorch).

For every suit-isomorphic class of the flop and the turn (its canonical representative
cards), the input is the round-wise presence of the cards: three 0/1 vectors over the ``N``
cards (private cards, flop card, turn card).  The network (our choices where the paper leaves
details open):

    input [3N] -> Linear(3N, hidden) -> ReLU -> Linear(hidden, hidden) -> ReLU
               -> Linear(hidden, m) -> softmax = the class's column of Phi  [m]
               -> Linear(m, T) = predicted strength target  [T]

with ``m`` advisors (225 on the flop, 396 on the turn in the paper's budget) and the target
(``target="wtl"``) the (win, tie, lose) probabilities of the class at its own round and at
every earlier round (3 (r + 1) numbers, the k-recall winrate features), (``"ehs"``) the
equities only (r + 1 numbers), or (``"hist"``) the class's equity histogram: the
distribution of its turn equity over the remaining public cards in 10 equal-width bins, plus
its own equity (11 numbers; at the turn the histogram is one bin).  Trained supervised on all classes (weighted by how many
concrete infosets each stands for) with Adam and the weighted mean squared error, then frozen;
Phi's columns are the softmax outputs.  The preflop is not embedded (identity).

Files (:func:`save_embedding` / :func:`load_embedding`): NPZ with ``phi_<r>`` float32
[m_r, C_r] for r = 1, 2 and ``meta`` (JSON: format ``tensorcfr-embedding``, game parameters,
advisors, target, training settings, final losses, seconds).
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.numeral211.abstractions import (class_representatives, class_sizes,
                                                      round_wtl)
from tensorcfr.games.numeral211.config import GameConfig
from tensorcfr.games.numeral211.isomorphism import isomorphism
from tensorcfr.utils.io import atomic_path

__all__ = ["HandEbdNet", "EmbeddingFile", "class_inputs", "class_targets", "train_embedding",
           "save_embedding", "load_embedding", "EMBEDDING_FORMAT", "TARGETS"]

EMBEDDING_FORMAT = "tensorcfr-embedding"
TARGETS = ("wtl", "ehs", "hist")
HIST_BINS = 10
"""Bins of the ``hist`` target's equity histogram."""


class HandEbdNet(torch.nn.Module):
    """Encoder -> softmax over ``advisors`` (a column of Phi) -> linear strength head."""

    def __init__(self, inputs: int, advisors: int, targets: int, hidden: int = 256) -> None:
        super().__init__()
        self.encoder = torch.nn.Sequential(
            torch.nn.Linear(inputs, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, advisors))
        self.head = torch.nn.Linear(advisors, targets)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """[n, inputs] -> [n, advisors] (rows on the simplex)."""
        return torch.softmax(self.encoder(x), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[n, inputs] -> predicted targets [n, targets]."""
        return self.head(self.embed(x))


def class_inputs(config: GameConfig, r: int) -> np.ndarray:
    """[C_r, 3N] float32: round-wise card presence of each class's representative."""
    n = config.num_cards
    from tensorcfr.games.numeral211.config import hand_cards

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


def train_embedding(config: GameConfig, flop: int, turn: int, *, target: str = "wtl",
                    hidden: int = 256, epochs: int = 60, batch: int = 512, lr: float = 3e-3,
                    seed: int = 0, balance: float = 0.0,
                    progress: Callable[[int, int, float], None] | None = None
                    ) -> EmbeddingFile:
    """Train one HandEbdNet per round (flop with ``flop`` advisors, turn with ``turn``);
    ``progress(round, epoch, loss)`` after each epoch.  ``balance`` > 0 adds
    ``balance * (log m - entropy of the batch's mean advisor usage)`` to the loss, which keeps
    the softmax from collapsing onto a few advisors (without it HandEbdNet used 2 of 20).  Returns the frozen Phi matrices."""
    counts = isomorphism(config).isomorphic_classes()
    for label, k in (("--flop", flop), ("--turn", turn)):
        if not isinstance(k, int) or k < 1:
            raise TensorCFRError(f"{label} must be a positive number of advisors, got {k!r}")
    if target not in TARGETS:
        raise TensorCFRError(f"unknown --target {target!r}: choose one of {', '.join(TARGETS)}")
    if epochs < 1 or hidden < 1 or batch < 1 or not lr > 0 or not balance >= 0:
        raise TensorCFRError("epochs, hidden, batch and lr must be positive, balance >= 0")
    started = time.perf_counter()
    phi: dict[int, np.ndarray] = {}
    losses: dict[str, float] = {}
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    for r, m in ((1, flop), (2, turn)):
        x = torch.as_tensor(class_inputs(config, r))
        y = torch.as_tensor(class_targets(config, r, target))
        w = torch.as_tensor(class_sizes(config, r), dtype=torch.float32)
        w = w / w.mean()
        net = HandEbdNet(x.shape[1], m, y.shape[1], hidden)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
        n = len(x)
        loss_value = float("nan")
        for epoch in range(epochs):
            order = torch.randperm(n, generator=gen)
            total = 0.0
            for s in range(0, n, batch):
                idx = order[s:s + batch]
                pred = net(x[idx])
                loss = ((pred - y[idx]) ** 2).sum(1).mul(w[idx]).mean()
                if balance > 0:
                    usage = (net.embed(x[idx]) * w[idx, None]).sum(0) / w[idx].sum()
                    entropy = -(usage * usage.clamp_min(1e-12).log()).sum()
                    loss = loss + balance * (float(np.log(m)) - entropy)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            sched.step()
            loss_value = total / n
            if progress is not None:
                progress(r, epoch + 1, loss_value)
        with torch.no_grad():
            net.eval()
            emb = net.embed(x).double()
            final = float((((net.head(emb.float()) - y) ** 2).sum(1) * w).mean())
        phi[r] = emb.T.numpy().astype(np.float32)
        losses[f"round_{r}"] = final
    meta = {"format": EMBEDDING_FORMAT, "version": 1, "game": config.to_dict(),
            "advisors": {"flop": flop, "turn": turn}, "classes": counts,
            "target": target, "hidden": hidden, "epochs": epochs, "batch": batch, "lr": lr,
            "seed": seed, "balance": balance, "loss": losses,
            "advisors_used": {f"round_{r}": int(len(np.unique(p.argmax(0))))
                              for r, p in phi.items()}, "seconds": time.perf_counter() - started}
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
