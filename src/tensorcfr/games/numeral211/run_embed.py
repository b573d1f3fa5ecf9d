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
from tensorcfr.games.numeral211.config import GameConfig
from tensorcfr.games.numeral211.run_common import ROUND_NAMES

__all__ = ["EmbedSettings", "EmbedResult", "train_embedding_file"]


@dataclass(frozen=True)
class EmbedSettings:
    """Everything an embedding training needs (the options of ``numeral211 embed``).

    ``out``: the Phi file (.npz); ``flop`` / ``turn``: advisors (rows of Phi) per round;
    ``target``: ``"wtl"`` (win, tie, lose at this and earlier rounds), ``"ehs"`` (equities)
    or ``"hist"`` (equity histogram over the remaining cards); ``hidden``: encoder units;
    ``epochs``: training epochs per round; ``batch``: mini-batch size; ``lr``: Adam learning
    rate (cosine decay); ``seed``: training seed; ``balance``: weight of the advisor-usage
    entropy term (0: the paper's plain MSE); ``game``: the deck (None: the paper's game);
    ``threads``: torch CPU threads.  Value checks run here."""

    out: str
    flop: int = 225
    turn: int = 396
    target: str = "wtl"
    hidden: int = 256
    epochs: int = 60
    batch: int = 512
    lr: float = 3e-3
    seed: int = 0
    balance: float = 0.0
    game: Optional[GameConfig] = None
    threads: int = 1

    def __post_init__(self) -> None:
        from tensorcfr.utils.checks import MAX_SEED, check_int_range

        if self.threads < 1:
            raise TensorCFRError(f"--threads must be >= 1, got {self.threads}")
        check_int_range(self.seed, "--seed", 0, MAX_SEED)
        check_int_range(self.epochs, "--epochs", 1, 1_000_000)
        check_int_range(self.hidden, "--hidden", 1, 65_536)
        check_int_range(self.batch, "--batch", 1, 2**24)
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise TensorCFRError(f"--lr must be positive and finite, got {self.lr}")
        if not math.isfinite(self.balance):
            raise TensorCFRError(f"--balance must be finite, got {self.balance}")


@dataclass
class EmbedResult:
    """A trained embedding: ``embedding`` (the saved object, ``phi`` per round and
    ``meta``), ``settings``, ``config`` (its game), ``out`` (the absolute path written)."""

    embedding: Any
    settings: EmbedSettings
    config: GameConfig
    out: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``numeral211 embed --json`` prints (``seconds``: training time)."""
        s, meta = self.settings, self.embedding.meta
        return {"game": self.config.to_dict(), "advisors": {"flop": s.flop, "turn": s.turn},
                "classes": dict(zip(ROUND_NAMES, meta["classes"])), "target": s.target,
                "loss": meta["loss"], "advisors_used": meta["advisors_used"],
                "balance": s.balance, "seconds": round(meta["seconds"], 3),
                "threads": s.threads, "out": self.out}


def train_embedding_file(settings: EmbedSettings,
                         progress: Optional[Callable[[int, int, float], None]] = None
                         ) -> EmbedResult:
    """Train HandEbdNet as ``settings`` describe and write Phi to ``settings.out``;
    ``progress(round, epoch, loss)`` after each epoch.  NonFiniteResultError (nothing
    written) when Phi diverged."""
    import torch

    from tensorcfr.games.numeral211.embedding_net import save_embedding, train_embedding
    from tensorcfr.utils.checks import check_finite_result
    from tensorcfr.utils.io import check_output_file

    s = settings
    torch.set_num_threads(s.threads)
    target_path = os.path.abspath(check_output_file(s.out, "--out"))
    config = s.game if s.game is not None else GameConfig()
    emb = train_embedding(config, s.flop, s.turn, target=s.target, hidden=s.hidden,
                          epochs=s.epochs, batch=s.batch, lr=s.lr, seed=s.seed,
                          balance=s.balance, progress=progress)
    for r, phi in emb.phi.items():
        check_finite_result(phi, f"Phi of round {r} (HandEbdNet training)")
    save_embedding(target_path, emb)
    return EmbedResult(embedding=emb, settings=s, config=config, out=target_path)
