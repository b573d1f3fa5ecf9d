"""Training a Numeral211 embedding file as a library call: :func:`train_embedding_file` with
an :class:`EmbedSettings` (what ``tensorcfr numeral211 embed`` runs).

The run trains HandEbdNet on every flop and turn suit-isomorphic class, checks that Phi (the
Embedding CFR embedding, advisors x classes per round) is finite, and writes it (NPZ,
atomically) for ``numeral211 solve --embedding``.  Nothing here prints or parses command
lines: progress is a callback ``(round, epoch, loss)``, errors are one-line
:class:`~tensorcfr.errors.TensorCFRError` subclasses naming the CLI options.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.runs.run_common import ROUND_NAMES

__all__ = ["EmbedSettings", "EmbedResult", "train_embedding_file"]


@dataclass(frozen=True)
class EmbedSettings:
    """Everything an embedding training needs (the options of ``numeral211 embed``).

    ``out``: the Phi file (.npz); ``flop`` / ``turn``: advisors (rows of Phi) per round;
    ``net``: ``"mlp"`` or ``"conv"`` (the paper's HandEbdNet); ``target``: ``"wtl"`` (win,
    tie, lose at this and earlier rounds), ``"ehs"`` (equities) or ``"hist"`` (equity
    histogram over the remaining cards); ``hidden``: hidden units (None: 256 for the MLP,
    500 for the conv net); the training budget (:class:`~.embedding_net.TrainingBudget`):
    ``epochs`` (at most, per round), ``batch``, ``lr`` (Adam, halved on plateaus),
    ``holdout`` (fraction of the infosets held out for early stopping), ``patience``
    (epochs without a held-out improvement before stopping); ``balance``: weight of the
    advisor-usage entropy term (0: the paper's plain MSE); ``sharpness``: weight of the mean
    column entropy of Phi (0: none); ``temperature`` (< 1: standardised logits, softmax
    temperature annealed to it over ``anneal_epochs``); ``seed``: training seed;
    ``game``: the deck (None: the paper's game); ``threads``: torch CPU threads;
    ``device``: the torch device the networks train on (``"cpu"`` or ``"cuda"``);
    ``objective``: the fit term, ``"mse"`` (the paper's), ``"distortion"`` (expected
    distance of the target to the advisors' centres under Phi) or ``"distill"`` (KL from
    the teacher's soft assignment); ``teacher``: the bucket map (.npz of ``numeral211
    abstract``) that ``--target emd`` and ``--objective distill`` use (None: PaEmd built
    with ``flop`` / ``turn`` and ``seed``); ``teacher_temperature``: the temperature of the
    teacher's soft assignment ``distill`` fits.  Value checks run here; the device check
    when the run starts."""

    out: str
    flop: int = 225
    turn: int = 396
    net: str = "mlp"
    target: str = "wtl"
    hidden: Optional[int] = None
    epochs: int = 400
    batch: int = 128
    lr: float = 1e-3
    holdout: float = 0.1
    patience: int = 30
    seed: int = 0
    balance: float = 0.0
    sharpness: float = 0.0
    temperature: float = 1.0
    anneal_epochs: int = 100
    game: Optional[GameConfig] = None
    threads: int = 1
    device: str = "cpu"
    objective: str = "mse"
    teacher: Optional[str] = None
    teacher_temperature: float = 0.5

    def __post_init__(self) -> None:
        from tensorcfr.games.numeral211.abstraction.embedding_net import NETS, OBJECTIVES, TARGETS
        from tensorcfr.utils.checks import MAX_SEED, check_int_range

        if self.threads < 1:
            raise TensorCFRError(f"--threads must be >= 1, got {self.threads}")
        if self.net not in NETS:
            raise TensorCFRError(f"unknown --net {self.net!r}: choose one of {', '.join(NETS)}")
        if self.target not in TARGETS:
            raise TensorCFRError(f"unknown --target {self.target!r}: choose one of "
                                 f"{', '.join(TARGETS)}")
        if self.objective not in OBJECTIVES:
            raise TensorCFRError(f"unknown --objective {self.objective!r}: choose one of "
                                 f"{', '.join(OBJECTIVES)}")
        if not (math.isfinite(self.teacher_temperature) and self.teacher_temperature > 0):
            raise TensorCFRError(f"--teacher-temperature must be positive and finite, got "
                                 f"{self.teacher_temperature}")
        if self.teacher is not None and self.objective != "distill" and self.target != "emd":
            raise TensorCFRError("--teacher is used by --objective distill and --target emd; "
                                 "give one of them or leave out --teacher")
        check_int_range(self.seed, "--seed", 0, MAX_SEED)
        check_int_range(self.epochs, "--epochs", 1, 1_000_000)
        if self.hidden is not None:
            check_int_range(self.hidden, "--hidden", 1, 65_536)
        check_int_range(self.batch, "--batch", 1, 2**24)
        check_int_range(self.patience, "--patience", 1, 1_000_000)
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise TensorCFRError(f"--lr must be positive and finite, got {self.lr}")
        if not (math.isfinite(self.holdout) and 0 <= self.holdout < 1):
            raise TensorCFRError(f"--holdout must be in [0, 1), got {self.holdout}")
        for name in ("balance", "sharpness"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise TensorCFRError(f"--{name} must be finite and >= 0, got {value}")
        if not (math.isfinite(self.temperature) and 0 < self.temperature <= 1):
            raise TensorCFRError(f"--temperature must be in (0, 1], got {self.temperature}")
        if self.temperature != 1.0:
            check_int_range(self.anneal_epochs, "--anneal-epochs", 0, self.epochs - 1,
                            why="annealing must end before the last epoch")

    def budget(self) -> Any:
        """The :class:`~.embedding_net.TrainingBudget` of these settings."""
        from tensorcfr.games.numeral211.abstraction.embedding_net import TrainingBudget

        return TrainingBudget(max_epochs=self.epochs, batch=self.batch, lr=self.lr,
                              holdout=self.holdout, patience=self.patience)


PER_ROUND_KEYS = ("loss", "target_variance", "trained", "advisors_used", "top1_mean",
                  "heldout_loss", "epochs_run", "partition_distortion", "teacher_agreement")
"""Diagnostics ``numeral211 embed --json`` prints per trained round (keyed ``round_1`` /
``round_2``), from the embedding file's meta."""


@dataclass
class EmbedResult:
    """A trained embedding: ``embedding`` (the saved object, ``phi`` per round and
    ``meta``), ``settings``, ``config`` (its game), ``out`` (the absolute path written)."""

    embedding: Any
    settings: EmbedSettings
    config: GameConfig
    out: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``numeral211 embed --json`` prints: the settings, and per trained
        round (keyed ``round_<r>``) ``loss`` (final weighted MSE), ``target_variance`` (the
        loss of predicting the targets' weighted mean), ``trained`` (loss <= 0.5 x
        variance), ``advisors_used`` (advisors that are some class's largest entry),
        ``top1_mean`` (mean largest entry of Phi's columns), ``heldout_loss``,
        ``epochs_run``, with a teacher ``partition_distortion`` (Phi cut to its largest
        entry, in the teacher's distance) and with ``distill`` ``teacher_agreement``
        ({} without); ``objective``, ``teacher`` (method, params, source, its own
        distortion; null without), ``teacher_temperature``; ``seconds``: training time;
        ``device``: where it trained."""
        s, meta = self.settings, self.embedding.meta
        return {"game": self.config.to_dict(), "advisors": {"flop": s.flop, "turn": s.turn},
                "classes": dict(zip(ROUND_NAMES, meta.get("classes", []))),
                "target": meta.get("target", s.target), "net": s.net,
                "objective": s.objective, "teacher": meta.get("teacher"),
                "teacher_temperature": meta.get("teacher_temperature"),
                **{key: meta.get(key, {}) for key in PER_ROUND_KEYS},
                "balance": s.balance, "sharpness": s.sharpness,
                "temperature": s.temperature, "budget": meta.get("budget"),
                "seconds": round(meta.get("seconds", 0.0), 3), "threads": s.threads,
                "device": meta.get("device", str(s.device)), "out": self.out}


def train_embedding_file(settings: EmbedSettings,
                         progress: Optional[Callable[[int, int, float], None]] = None
                         ) -> EmbedResult:
    """Train HandEbdNet as ``settings`` describe and write Phi to ``settings.out``;
    ``progress(round, epoch, training objective)`` after each epoch.  NonFiniteResultError
    (nothing written) when Phi diverged; a one-line TensorCFRError naming ``--device``, before
    any work, when ``settings.device`` is not usable here (e.g. cuda without a GPU)."""
    import torch

    from tensorcfr.abstraction.bucket_map import load_bucket_map
    from tensorcfr.games.numeral211.abstraction.embedding_net import save_embedding, train_embedding
    from tensorcfr.utils.checks import check_finite_result
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.io import check_output_file

    s = settings
    torch.set_num_threads(s.threads)
    device = resolve_device(s.device, "--device")
    target_path = os.path.abspath(check_output_file(s.out, "--out"))
    config = s.game if s.game is not None else GameConfig()
    from tensorcfr.games.numeral211.game.isomorphism import isomorphism
    from tensorcfr.utils.checks import check_int_range

    classes = isomorphism(config).isomorphic_classes()
    for option, advisors, count in (("--flop", s.flop, classes[1]), ("--turn", s.turn,
                                                                      classes[2])):
        check_int_range(advisors, option, 1, count, why=f"advisors of a round with {count:,} "
                        "suit-isomorphic classes")
    teacher = load_bucket_map(s.teacher) if s.teacher is not None else None
    emb = train_embedding(config, s.flop, s.turn, target=s.target, hidden=s.hidden,
                          seed=s.seed, balance=s.balance, sharpness=s.sharpness, net=s.net,
                          budget=s.budget(), temperature=s.temperature,
                          anneal_epochs=s.anneal_epochs, objective=s.objective,
                          teacher=teacher,
                          teacher_source=None if s.teacher is None else os.path.abspath(
                              s.teacher),
                          teacher_temperature=s.teacher_temperature, progress=progress,
                          device=device)
    for r, phi in emb.phi.items():
        check_finite_result(phi, f"Phi of round {r} (HandEbdNet training)")
    save_embedding(target_path, emb)
    return EmbedResult(embedding=emb, settings=s, config=config, out=target_path)
