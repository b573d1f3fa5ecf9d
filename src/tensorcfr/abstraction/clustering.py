"""Clustering for information abstraction (game independent, numpy/torch on CPU).

* :func:`kmeans_1d`: weighted k-means on scalars (e.g. expected hand strength) by
  scikit-learn, clusters numbered by increasing centre;
* :func:`equal_width_bins`: the scalar range cut into equal-width bins;
* :func:`kmeans_l1`: weighted k-means with k-means++ seeding under a per-dimension weighted
  L1 distance ``d(x, y) = sum_i w_i |x_i - y_i|`` and mean centres (scikit-learn's
  ``KMeans`` is Euclidean only, so this one runs on torch).  Earth mover's distances
  with a 1-D ground metric are of this form once histograms are replaced by their cumulative
  sums (:func:`emd_features`): the exact EMD between two histograms over atoms at positions
  ``p_0 <= ... <= p_{K-1}`` is ``sum_i (p_{i+1} - p_i) |F_i - G_i|`` (``F``, ``G`` the
  cumulative sums), so clustering in that space is clustering with the exact EMD;
* :func:`emd_exact`: the EMD of two histograms by POT's network-simplex solver (``ot.emd2``),
  used to check the closed form;
* :func:`soft_assignment`: a clustering made soft, each item's temperature softmax of its
  negative distances to the cluster centres (the soft-clustering control of Embedding CFR).

All functions return ``labels`` numbered ``0..k'-1`` (``k' <= k``; empty clusters are
dropped) and are reproducible for a given ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["kmeans_1d", "equal_width_bins", "kmeans_l1", "emd_features", "emd_exact",
           "compact_labels", "soft_assignment", "SoftAssignment"]


def compact_labels(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Renumber labels 0..k'-1 in order of first appearance; returns (labels, k')."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    return order[inverse.reshape(-1)].astype(np.int64), len(first)


def kmeans_1d(values: np.ndarray, k: int, weights: np.ndarray | None = None, *,
              seed: int = 0, n_init: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Weighted 1-D k-means of ``values`` [n] into at most ``k`` clusters (scikit-learn's
    ``KMeans`` with k-means++ seeding, best of ``n_init`` starts, on the distinct values
    weighted by their total weight).

    Returns ``(labels [n] int64, centres [k'] float64)`` with clusters numbered by increasing
    centre (``k' < k`` only when there are fewer than ``k`` distinct values).
    """
    from sklearn.cluster import KMeans

    x = np.asarray(values, dtype=np.float64).reshape(-1)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
    uniq, inverse = np.unique(x, return_inverse=True)
    inverse = inverse.reshape(-1)
    uw = np.bincount(inverse, weights=w, minlength=len(uniq))
    if len(uniq) <= k:
        return inverse.astype(np.int64), uniq
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed)
    lab = km.fit_predict(uniq[:, None], sample_weight=uw)
    # renumber by increasing centre; drop clusters left empty
    used = np.unique(lab)
    mass = np.bincount(lab, weights=uw, minlength=k)[used]
    means = np.bincount(lab, weights=uw * uniq, minlength=k)[used] / mass
    order = np.argsort(means, kind="stable")
    rank = np.empty(k, dtype=np.int64)
    rank[used[order]] = np.arange(len(used))
    return rank[lab][inverse], means[order]


def equal_width_bins(values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``k`` equal-width bins over [min, max] of ``values``; empty bins dropped.  Returns
    ``(labels [n] int64, bin means [k'])`` (bins numbered low to high)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    lo, hi = float(x.min()), float(x.max())
    if hi <= lo:
        return np.zeros(len(x), dtype=np.int64), np.array([lo])
    raw = np.minimum(((x - lo) / (hi - lo) * k).astype(np.int64), k - 1)
    used, lab = np.unique(raw, return_inverse=True)
    means = np.bincount(lab, weights=x) / np.bincount(lab)
    return lab.astype(np.int64), means


def emd_features(histograms: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """Map histograms [n, K] over atoms at ``positions`` [K] to (cumulative sums [n, K-1],
    dimension weights [K-1]) so that the weighted L1 distance of the result is the exact EMD
    with ground distance ``|p_i - p_j|`` (histograms are normalised to sum 1 first)."""
    h = np.asarray(histograms, dtype=np.float64)
    h = h / np.maximum(h.sum(1, keepdims=True), 1e-300)
    order = np.argsort(positions, kind="stable")
    p = np.asarray(positions, dtype=np.float64)[order]
    cdf = np.cumsum(h[:, order], axis=1)[:, :-1]
    return cdf, np.diff(p)


def emd_exact(a: np.ndarray, b: np.ndarray, positions: np.ndarray) -> float:
    """Exact EMD between histograms ``a`` and ``b`` [K] (normalised) with ground distance
    ``|p_i - p_j|``, by POT's network simplex (``ot.emd2``)."""
    import ot

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a, b = a / a.sum(), b / b.sum()
    p = np.asarray(positions, dtype=np.float64)
    ground = np.abs(p[:, None] - p[None, :])
    return float(ot.emd2(a, b, ground))


def _l1_to(x: torch.Tensor, centres: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """[n, k] L1 distances (rows chunked to bound memory)."""
    out = torch.empty((x.shape[0], centres.shape[0]), dtype=x.dtype)
    for s in range(0, x.shape[0], chunk):
        out[s:s + chunk] = torch.cdist(x[s:s + chunk], centres, p=1)
    return out


def kmeans_l1(features: np.ndarray, k: int, *, dim_weights: np.ndarray | None = None,
              weights: np.ndarray | None = None, seed: int = 0, max_iter: int = 100,
              tol: float = 0.0) -> tuple[np.ndarray, np.ndarray, float]:
    """Weighted k-means++ / Lloyd under ``d(x, y) = sum_i dim_weights_i |x_i - y_i|``.

    ``features`` [n, d]; ``weights`` [n] (how many items each row stands for, e.g. the number
    of concrete infosets of an isomorphic class).  Seeding: k-means++ (each next centre drawn
    with probability proportional to weight x squared distance to the nearest chosen centre);
    then Lloyd steps (nearest centre by the distance, centre = weighted mean) until no label
    changes, the relative improvement drops to ``tol``, or ``max_iter``.  Identical rows are
    merged first.  Returns ``(labels [n] int64, centres [k', d] in the original feature
    space, weighted mean distance to the centre)``.
    """
    x_all = np.asarray(features, dtype=np.float64)
    n, d = x_all.shape
    w_all = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    dw = np.ones(d) if dim_weights is None else np.asarray(dim_weights, dtype=np.float64)
    uniq, inverse = np.unique(x_all, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    wu = np.bincount(inverse, weights=w_all, minlength=len(uniq))
    if len(uniq) <= k:
        labels, _ = compact_labels(inverse)
        centres = np.zeros((labels.max() + 1, d))
        centres[labels] = x_all
        return labels, centres, 0.0
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(uniq * dw[None, :])
    wt = torch.as_tensor(wu)
    m = len(uniq)
    # k-means++ seeding
    first = int(rng.choice(m, p=wu / wu.sum()))
    chosen = [first]
    nearest = torch.cdist(x, x[first:first + 1], p=1)[:, 0]
    for _ in range(1, k):
        p = (wt * nearest ** 2).numpy()
        total = p.sum()
        if total <= 0:
            break
        c = int(rng.choice(m, p=p / total))
        chosen.append(c)
        nearest = torch.minimum(nearest, torch.cdist(x, x[c:c + 1], p=1)[:, 0])
    centres = x[chosen].clone()
    labels = None
    prev_cost = np.inf
    cost = 0.0
    for _ in range(max_iter):
        dist = _l1_to(x, centres)
        best, new_labels = dist.min(1)
        cost = float((best * wt).sum() / wt.sum())
        if labels is not None and torch.equal(new_labels, labels):
            break
        labels = new_labels
        mass = torch.zeros(len(centres), dtype=x.dtype).index_add_(0, labels, wt)
        sums = torch.zeros_like(centres).index_add_(0, labels, x * wt[:, None])
        empty = mass <= 0
        centres = torch.where(empty[:, None], centres, sums / mass.clamp_min(1e-300)[:, None])
        if empty.any():  # re-seed empty clusters at the points farthest from their centre
            far = torch.argsort(best * wt, descending=True)
            for slot, pt in zip(torch.flatnonzero(empty).tolist(), far.tolist()):
                centres[slot] = x[pt]
        if prev_cost - cost <= tol * max(cost, 1e-300) and not empty.any():
            break
        prev_cost = cost
    dist = _l1_to(x, centres)
    best, final = dist.min(1)
    cost = float((best * wt).sum() / wt.sum())
    lab_u, k_used = compact_labels(final.numpy())
    labels_all = lab_u[inverse]
    centres_out = np.zeros((k_used, d))
    mass = np.bincount(labels_all, weights=w_all, minlength=k_used)
    for j in range(d):
        centres_out[:, j] = np.bincount(labels_all, weights=w_all * x_all[:, j],
                                        minlength=k_used) / mass
    return labels_all, centres_out, cost


@dataclass(frozen=True)
class SoftAssignment:
    """A clustering made soft (:func:`soft_assignment`).

    ``phi`` [k, n] float64: column j is item j's distribution over the k clusters;
    ``centres`` [k, d]: the clusters' weighted mean features (the k-means centres);
    ``distance_scale``: the weighted mean distance of an item to its own cluster's centre
    (the unit of the temperature); ``agreement``: the weight fraction of items whose
    nearest centre is their own cluster (1.0 when the clustering's last assignment step
    agrees with its centres: then the zero-temperature limit is the clustering itself)."""

    phi: np.ndarray
    centres: np.ndarray
    distance_scale: float
    agreement: float


def soft_assignment(features: np.ndarray, labels: np.ndarray, temperature: float, *,
                    dim_weights: np.ndarray | None = None,
                    weights: np.ndarray | None = None) -> SoftAssignment:
    """Soft version of a clustering of ``features`` [n, d] into ``labels`` [n] (0..k-1).

    Distances are the clustering's: ``d(x, c) = sum_i dim_weights_i |x_i - c_i|`` (the
    weighted L1 of :func:`kmeans_l1`; the exact EMD on :func:`emd_features`; |x - c| in
    1-D), centres the ``weights``-weighted means of each cluster.  Item j's column is
    ``softmax_p(-d(x_j, c_p) / (temperature * scale))`` with ``scale`` the weighted mean
    distance of the items to their own centre, so ``temperature`` is unit-free (about 1:
    a typical item spreads over its own and the neighbouring clusters).  ``temperature``
    0 gives the hard nearest-centre assignment (ties split evenly); as it tends to 0 the
    softmax tends to that, which is the clustering wherever ``agreement`` is 1.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    lab = np.asarray(labels, dtype=np.int64).reshape(-1)
    n, d = x.shape
    if len(lab) != n or n == 0 or lab.min() < 0:
        raise ValueError(f"labels must be {n} cluster ids >= 0")
    if not (np.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    dw = np.ones(d) if dim_weights is None else np.asarray(dim_weights, dtype=np.float64)
    k = int(lab.max()) + 1
    mass = np.bincount(lab, weights=w, minlength=k)
    centres = np.stack([np.bincount(lab, weights=w * x[:, j], minlength=k)
                        for j in range(d)], axis=1) / np.maximum(mass, 1e-300)[:, None]
    scaled = torch.as_tensor(x * dw)
    dist = _l1_to(scaled, torch.as_tensor(centres * dw)).numpy()  # [n, k]
    own = dist[np.arange(n), lab]
    scale = float((own * w).sum() / w.sum())
    if not scale > 0:  # every item on its centre: any positive unit will do
        scale = 1.0
    nearest = dist.min(1, keepdims=True)
    agreement = float(w[own <= nearest[:, 0]].sum() / w.sum())
    if temperature == 0:
        phi = (dist <= nearest).astype(np.float64)
    else:
        # shift by the row minimum: exp(0) = 1 for the nearest centre, no overflow
        phi = np.exp(-(dist - nearest) / (temperature * scale))
    phi /= phi.sum(1, keepdims=True)
    return SoftAssignment(np.ascontiguousarray(phi.T), centres, scale, agreement)
