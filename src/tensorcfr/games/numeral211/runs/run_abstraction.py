"""Building a Numeral211 abstraction file as a library call: :func:`build_abstraction_file`
with an :class:`AbstractionSettings` (what ``tensorcfr numeral211 abstract`` runs).

The run clusters the suit-isomorphic classes of the flop and the turn into buckets (EHS,
PaEmd or KrwEmd; the preflop stays lossless) and writes the bucket map (NPZ, atomically);
with a soft temperature it also writes the soft-clustering control's Phi as an embedding
file (:func:`~tensorcfr.games.numeral211.abstraction.soft_clustering.soft_clustering_file`)
for ``numeral211 solve --abstraction``.  Nothing here prints or parses command lines:
progress is a text callback, errors are one-line
:class:`~tensorcfr.errors.TensorCFRError` subclasses naming the CLI options.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.runs.run_common import ROUND_NAMES

__all__ = ["AbstractionSettings", "AbstractionResult", "build_abstraction_file"]


@dataclass(frozen=True)
class AbstractionSettings:
    """Everything an abstraction build needs (the options of ``numeral211 abstract``).

    ``method``: ehs, paemd or krwemd; ``flop`` / ``turn``: buckets per round; ``out``: the
    bucket-map file (.npz); ``seed``: clustering seed; ``bins``: EHS equal-width equity
    bins instead of k-means; ``feature``: EHS's clustered feature, ``"ehs"`` (equity) or
    ``"ehs2"`` (E[HS^2]); ``hist_turn``: PaEmd's turn equity clusters (None: ``turn``);
    ``weights``: KrwEmd's ``"turn own,flop,preflop;flop own,preflop"``; ``max_iter``: Lloyd
    iterations of the EMD k-means; ``game``: the deck (None: the paper's game); ``threads``:
    torch CPU threads; ``soft_temperature`` and ``soft_out`` (both or neither): also write
    the soft clustering of the map at that temperature (>= 0, unit: the mean distance to
    the own centre) as an embedding file for ``numeral211 solve --embedding``.  Value checks
    run here (the names normalised)."""

    method: str
    out: str
    flop: int = 225
    turn: int = 396
    seed: int = 0
    bins: bool = False
    feature: str = "ehs"
    hist_turn: Optional[int] = None
    weights: str = "16,4,1;4,1"
    max_iter: int = 100
    game: Optional[GameConfig] = None
    threads: int = 1
    soft_temperature: Optional[float] = None
    soft_out: Optional[str] = None

    def __post_init__(self) -> None:
        from tensorcfr.games.numeral211.abstraction.abstractions import METHODS, parse_weights
        from tensorcfr.utils.checks import MAX_SEED, check_int_range

        if self.threads < 1:
            raise TensorCFRError(f"--threads must be >= 1, got {self.threads}")
        name = self.method.strip().lower()
        if name not in METHODS:
            raise TensorCFRError(f"unknown --method {self.method!r}: choose one of "
                                 f"{', '.join(METHODS)}")
        object.__setattr__(self, "method", name)
        if self.bins and name != "ehs":
            raise TensorCFRError("--bins applies to --method ehs only")
        feature = self.feature.strip().lower()
        if feature not in ("ehs", "ehs2"):
            raise TensorCFRError(f"unknown --feature {self.feature!r}: choose ehs or ehs2")
        object.__setattr__(self, "feature", feature)
        if feature != "ehs" and name != "ehs":
            raise TensorCFRError("--feature applies to --method ehs only")
        if self.hist_turn is not None and name != "paemd":
            raise TensorCFRError("--hist-turn applies to --method paemd only")
        if self.max_iter < 1:
            raise TensorCFRError(f"--max-iter must be >= 1, got {self.max_iter}")
        parse_weights(self.weights)
        if (self.soft_temperature is None) != (self.soft_out is None):
            raise TensorCFRError("give --soft-temperature and --soft-out together")
        if self.soft_temperature is not None:
            import math

            if not (math.isfinite(self.soft_temperature) and self.soft_temperature >= 0):
                raise TensorCFRError(f"--soft-temperature must be a finite number >= 0, got "
                                     f"{self.soft_temperature}")
        check_int_range(self.seed, "--seed", 0, MAX_SEED)
        check_int_range(self.max_iter, "--max-iter", 1, 1_000_000)


@dataclass
class AbstractionResult:
    """A built abstraction: ``method``, ``bucket_map`` (the :class:`~tensorcfr.abstraction.
    bucket_map.BucketMap` written), ``config`` (its game), ``out`` (the absolute path
    written), ``threads`` and ``soft`` (with a soft temperature: ``out``, ``temperature``
    and the soft clustering's ``agreement`` / ``top1_mean`` per round, else None)."""

    method: str
    bucket_map: Any
    config: GameConfig
    out: str
    threads: int
    soft: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``numeral211 abstract --json`` prints (``seconds``: build time)."""
        bmap = self.bucket_map
        return {"method": self.method,
                "game": self.config.to_dict(),
                "buckets": dict(zip(ROUND_NAMES, bmap.num_buckets)),
                "classes": dict(zip(ROUND_NAMES, bmap.num_classes)),
                "params": bmap.params, "seconds": round(bmap.seconds, 3),
                "threads": self.threads, "out": self.out, "soft": self.soft}


def build_abstraction_file(settings: AbstractionSettings,
                           progress: Optional[Callable[[str], None]] = None
                           ) -> AbstractionResult:
    """Build the abstraction ``settings`` describe and write it to ``settings.out``;
    ``progress(text)`` hears the build's stages."""
    import torch

    from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction, parse_weights
    from tensorcfr.utils.io import check_distinct_outputs, check_output_file

    s = settings
    torch.set_num_threads(s.threads)
    target = os.path.abspath(check_output_file(s.out, "--out"))
    soft: Optional[dict[str, Any]] = None
    if s.soft_out is not None:
        soft_target = os.path.abspath(check_output_file(s.soft_out, "--soft-out"))
        check_distinct_outputs({"--out": s.out, "--soft-out": s.soft_out})
    config = s.game if s.game is not None else GameConfig()
    bmap = build_abstraction(config, s.method, s.flop, s.turn, seed=s.seed, ehs_bins=s.bins,
                             weights=parse_weights(s.weights), max_iter=s.max_iter,
                             ehs_feature=s.feature, hist_turn=s.hist_turn,
                             progress=progress)
    bmap.save(target)
    if s.soft_temperature is not None:
        from tensorcfr.games.numeral211.abstraction.embedding_net import save_embedding
        from tensorcfr.games.numeral211.abstraction.soft_clustering import soft_clustering_file

        if progress is not None:
            progress(f"soft clustering at temperature {s.soft_temperature:g}")
        soft_file = soft_clustering_file(config, bmap, float(s.soft_temperature))
        save_embedding(soft_target, soft_file)
        soft = {"out": soft_target, "temperature": soft_file.meta["temperature"],
                "agreement": soft_file.meta["agreement"],
                "top1_mean": soft_file.meta["top1_mean"]}
    return AbstractionResult(method=s.method, bucket_map=bmap, config=config, out=target,
                             threads=s.threads, soft=soft)
