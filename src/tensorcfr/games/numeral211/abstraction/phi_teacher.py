"""The clustering a HandEbdNet Phi is taught to keep: a *teacher* bucket map (PaEmd by default)
and the measures of how much of it a Phi keeps.

A teacher is a bucket map of :mod:`.abstractions` (``paemd``, ``krwemd`` or ``ehs``) with, per
clustered round r (1 = flop, 2 = turn), the features its k-means ran on and the per-dimension
weights of its distance (:func:`~.abstractions.cluster_features`: ``d(x, y) = sum_i w_i |x_i
- y_i|``, the exact EMD for PaEmd's flop histograms, |x - y| on the turn equity):
``features[r]`` [C_r, d_r], ``dim_weights[r]`` [d_r].  HandEbdNet uses it two ways
(:mod:`.embedding_net`): as a regression target (``target="emd"``: the teacher's features)
and as a distillation target (``objective="distill"``: the teacher's soft assignment,
:func:`teacher_assignment`, [C_r, m_r] rows on the simplex).

:func:`partition_distortion` measures any partition of the classes (e.g. Phi cut to its
largest entry per class) in the teacher's space: the infoset-weighted mean distance of a
class to its part's weighted mean centre, the cost k-means minimises.  The teacher's own
partition gives the reference value.  Nothing here knows networks, CFR or the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorcfr.abstraction.bucket_map import BucketMap
from tensorcfr.abstraction.clustering import soft_assignment
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.abstraction.abstractions import (build_abstraction,
                                                                 check_bucket_map, class_sizes,
                                                                 cluster_features)
from tensorcfr.games.numeral211.game.config import GameConfig

__all__ = ["Teacher", "build_teacher", "teacher_assignment", "partition_distortion",
           "TEACHER_METHODS"]

TEACHER_METHODS = ("paemd", "krwemd", "ehs")
"""Bucket-map methods that can teach (those with clustering features)."""


@dataclass(frozen=True)
class Teacher:
    """A teacher clustering: ``bmap`` (its bucket map), ``source`` (the file it was read from,
    or ``"built"``), per round r in (1, 2) its clustering ``features[r]`` [C_r, d_r] and
    distance weights ``dim_weights[r]`` [d_r], and its own ``distortion[r]`` (see
    :func:`partition_distortion`)."""

    bmap: BucketMap
    source: str
    features: dict[int, np.ndarray] = field(repr=False)
    dim_weights: dict[int, np.ndarray] = field(repr=False)
    distortion: dict[int, float]

    @property
    def buckets(self) -> dict[int, int]:
        """Buckets per clustered round."""
        return {r: int(self.bmap.labels[r].max()) + 1 for r in (1, 2)}

    def meta(self) -> dict[str, Any]:
        """JSON-ready description: method, params, source, buckets, own distortion."""
        return {"method": self.bmap.method, "params": self.bmap.params, "source": self.source,
                "buckets": {f"round_{r}": k for r, k in self.buckets.items()},
                "distortion": {f"round_{r}": v for r, v in self.distortion.items()}}


def build_teacher(config: GameConfig, flop: int, turn: int, *, bmap: BucketMap | None = None,
                  source: str | None = None, seed: int = 0) -> Teacher:
    """The teacher for ``config``'s deck: ``bmap`` when given (checked against the deck;
    ``source`` names its file), else PaEmd with ``flop`` / ``turn`` buckets and ``seed``
    (:func:`~.abstractions.build_abstraction`).  One-line :class:`TensorCFRError` for a map
    of another deck or a method without clustering features."""
    if bmap is None:
        bmap = build_abstraction(config, "paemd", flop, turn, seed=seed)
        source = "built"
    check_bucket_map(config, bmap)
    if bmap.method not in TEACHER_METHODS:
        raise TensorCFRError(f"a {bmap.method!r} bucket map cannot teach: use a "
                             f"{', '.join(TEACHER_METHODS)} map")
    features, dim_weights, distortion = {}, {}, {}
    for r in (1, 2):
        x, dw = cluster_features(config, bmap, r)
        features[r] = np.asarray(x, dtype=np.float64)
        dim_weights[r] = np.asarray(dw, dtype=np.float64)
        distortion[r] = partition_distortion(features[r], dim_weights[r], bmap.labels[r],
                                             class_sizes(config, r))
    return Teacher(bmap, source or "given", features, dim_weights, distortion)


def teacher_assignment(config: GameConfig, teacher: Teacher, r: int,
                       temperature: float) -> np.ndarray:
    """[C_r, m_r] float32: the teacher's soft assignment of round r's classes at
    ``temperature`` (:func:`~tensorcfr.abstraction.clustering.soft_assignment`: softmax of
    minus the distances to the buckets' centres over ``temperature`` x the mean distance to
    the own centre; 0 = the nearest centre, one-hot)."""
    soft = soft_assignment(teacher.features[r], teacher.bmap.labels[r], float(temperature),
                           dim_weights=teacher.dim_weights[r],
                           weights=class_sizes(config, r))
    return np.ascontiguousarray(soft.phi.T, dtype=np.float32)


def partition_distortion(features: np.ndarray, dim_weights: np.ndarray, labels: np.ndarray,
                         weights: np.ndarray) -> float:
    """The k-means cost of a partition: the ``weights``-weighted mean over items of
    ``sum_i dim_weights_i |x_i - c_i|`` between an item's ``features`` [n, d] and its part's
    weighted mean ``c`` (parts = ``labels`` [n], any ints).  In the teacher's units (for
    PaEmd's flop the EMD in equity units, for its turn the equity)."""
    x = np.asarray(features, dtype=np.float64).reshape(len(labels), -1)
    w = np.asarray(weights, dtype=np.float64)
    _, parts = np.unique(np.asarray(labels).reshape(-1), return_inverse=True)
    mass = np.bincount(parts, weights=w)
    centres = np.stack([np.bincount(parts, weights=w * x[:, j]) for j in range(x.shape[1])],
                       axis=1) / mass[:, None]
    dist = (np.abs(x - centres[parts]) * np.asarray(dim_weights, dtype=np.float64)).sum(1)
    return float((dist * w).sum() / w.sum())
