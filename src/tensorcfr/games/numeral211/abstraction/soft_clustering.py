"""Soft clustering of Numeral211 classes: the control of Embedding CFR that keeps a
clustering's geometry and changes only its hardness.

Given a bucket map of EHS, PaEmd or KrwEmd (:mod:`.abstractions`), every flop and turn class
gets Phi's column ``softmax_p(-d(x_q, c_p) / (T * scale))``: ``x_q`` the class's features in
the space the clustering used and ``d`` its distance (:func:`.abstractions.cluster_features`:
the exact EMD for PaEmd's flop, KrwEmd's ``sum_j w_j EMD_j``, |x - c| on 1-D equities),
``c_p`` bucket p's centre (mean features of its classes, weighted by their concrete
infosets, as k-means computes them), ``scale`` the weighted mean distance of a class to its
own centre (so the temperature ``T`` is unit-free).  The preflop stays lossless (identity).
As ``T`` tends to 0 the columns become the nearest-centre one-hot vectors, i.e. the bucket
map itself wherever the clustering's labels are nearest-centre labels (``agreement`` 1),
so Embedding CFR on them reproduces bucketed CFR (a test).  :func:`soft_clustering_file`
packs Phi in HandEbdNet's file format, so ``numeral211 solve --embedding`` runs it.

Phi shapes: round r [m_r, C_r] with ``m_r`` = the map's buckets; returned as
:class:`~tensorcfr.abstraction.abstract_cfr.Embedding` per round.  Nothing here runs CFR or
knows the betting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorcfr.abstraction.abstract_cfr import Embedding
from tensorcfr.abstraction.bucket_map import BucketMap
from tensorcfr.abstraction.clustering import soft_assignment
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.abstraction.abstractions import class_sizes, cluster_features
from tensorcfr.games.numeral211.game.config import GameConfig

__all__ = ["SoftClustering", "soft_clustering", "soft_clustering_embeddings",
           "soft_clustering_file"]


@dataclass(frozen=True)
class SoftClustering:
    """Soft Phi of a bucket map: ``phi`` {round: [m_r, C_r] float64} for rounds 1 and 2,
    ``temperature`` (unit-free, see the module docstring), and per round the
    ``distance_scale`` (the clustering's mean distance to the own centre, in its feature
    units), ``agreement`` (weight fraction of classes whose nearest centre is their bucket)
    and ``top1_mean`` (mean largest entry of Phi's columns, weighted by the classes'
    infosets: 1 = hard buckets, 1/m = uniform)."""

    phi: dict[int, np.ndarray]
    temperature: float
    distance_scale: dict[int, float]
    agreement: dict[int, float]
    top1_mean: dict[int, float]

    def meta(self) -> dict[str, object]:
        """The diagnostics as a JSON-ready dict (rounds keyed ``round_1``, ``round_2``)."""
        return {"temperature": self.temperature,
                "distance_scale": {f"round_{r}": v for r, v in self.distance_scale.items()},
                "agreement": {f"round_{r}": v for r, v in self.agreement.items()},
                "top1_mean": {f"round_{r}": v for r, v in self.top1_mean.items()}}


def soft_clustering(config: GameConfig, bmap: BucketMap, temperature: float) -> SoftClustering:
    """Phi of the soft-clustering control for ``bmap`` (an ``ehs``, ``paemd`` or ``krwemd``
    map of ``config``'s deck) at ``temperature`` (>= 0; 0 = hard nearest-centre
    assignment).  Raises :class:`TensorCFRError` (one line) on a bad temperature or a map
    without clustering features."""
    if not isinstance(temperature, (int, float)) or not (np.isfinite(temperature)
                                                         and temperature >= 0):
        raise TensorCFRError(f"temperature must be a finite number >= 0, got {temperature!r}")
    phi: dict[int, np.ndarray] = {}
    scale: dict[int, float] = {}
    agreement: dict[int, float] = {}
    top1: dict[int, float] = {}
    for r in (1, 2):
        features, dim_weights = cluster_features(config, bmap, r)
        sizes = class_sizes(config, r)
        soft = soft_assignment(features, bmap.labels[r], float(temperature),
                               dim_weights=dim_weights, weights=sizes)
        phi[r] = soft.phi
        scale[r] = soft.distance_scale
        agreement[r] = soft.agreement
        top1[r] = float((soft.phi.max(0) * sizes).sum() / sizes.sum())
    return SoftClustering(phi, float(temperature), scale, agreement, top1)


def soft_clustering_embeddings(config: GameConfig, bmap: BucketMap, temperature: float, *,
                               top_k: int | None = None) -> list[Embedding]:
    """Per-round :class:`Embedding` of the soft clustering (preflop: one advisor per class;
    flop and turn: :func:`soft_clustering`'s Phi, dense unless ``top_k`` keeps each
    column's k largest entries)."""
    soft = soft_clustering(config, bmap, temperature)
    return [Embedding.from_labels(bmap.labels[0])] + [
        Embedding.from_matrix(soft.phi[r], top_k=top_k) for r in (1, 2)]


def soft_clustering_file(config: GameConfig, bmap: BucketMap, temperature: float) -> Any:
    """The soft clustering's Phi as an embedding file
    (:class:`~tensorcfr.games.numeral211.abstraction.embedding_net.EmbeddingFile`, saved by
    :func:`~tensorcfr.games.numeral211.abstraction.embedding_net.save_embedding` and run by
    ``numeral211 solve --embedding``); its meta names the source map's method and
    parameters, the temperature and the diagnostics of :class:`SoftClustering`."""
    import time

    from tensorcfr.games.numeral211.abstraction.embedding_net import EMBEDDING_FORMAT, EmbeddingFile
    from tensorcfr.games.numeral211.game.isomorphism import isomorphism

    start = time.perf_counter()
    soft = soft_clustering(config, bmap, temperature)
    meta = {"format": EMBEDDING_FORMAT, "version": 1, "game": config.to_dict(),
            "advisors": {"flop": int(soft.phi[1].shape[0]), "turn": int(soft.phi[2].shape[0])},
            "classes": isomorphism(config).isomorphic_classes(),
            "target": "soft clustering", "source_method": bmap.method,
            "source_params": bmap.params, **soft.meta(),
            "seconds": time.perf_counter() - start}
    return EmbeddingFile(config, {r: soft.phi[r].astype(np.float32) for r in (1, 2)}, meta)
