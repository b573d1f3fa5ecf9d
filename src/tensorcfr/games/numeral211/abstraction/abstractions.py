"""Numeral211 information abstractions: features of the suit-isomorphic classes and the
bucket maps of EHS, PaEmd and KrwEmd (the baselines of the Embedding CFR paper).

Every round's infosets (own hand + public cards) are grouped in suit-isomorphic classes
(:meth:`~.isomorphism.Isomorphism.class_table`: 100 / 2,260 / 62,020 in the default game).
The preflop is never abstracted (one bucket per class); the flop and the turn get the
method's budget of buckets.  Features (all against a uniform opponent hand that shares no card
with ours or the board, later public cards uniform):

* ``wtl`` per round: the (win, tie, lose) probabilities at showdown; at the turn they are
  exact counts over opponent hands, at an earlier round the average over the next card
  (:func:`round_wtl`);
* ``ehs`` = win + tie / 2 (:func:`round_equity`);
* the flop's potential histogram over turn buckets (:func:`flop_turn_histograms`).

Methods (:func:`build_abstraction`):

* ``ehs``: 1-D k-means (scikit-learn) of the equity per round (or equal-width bins);
* ``paemd`` (Ganzfried & Sandholm 2014): turn = k-means on equity; flop = k-means with the
  exact earth mover's distance between the hands' histograms over the turn buckets they
  reach, ground distance = distance between the turn buckets' mean equities.  The ground
  metric lives on a line, so the exact EMD is the weighted L1 distance of cumulative
  histograms (:func:`tensorcfr.abstraction.clustering.emd_features`; POT's exact solver
  agrees, see the tests);
* ``krwemd`` (k-recall winrate): a turn hand's feature is its own (lose, tie, win) triple and
  those of its flop and preflop predecessors, a flop hand's its own and its preflop's; the
  distance is ``sum_j w_j EMD(triple_j, triple'_j)`` (EMD on 3 ordered bins = L1 of the
  cumulative sums); k-means++ under that distance with mean centres.

Clustering weights every class by the number of concrete infosets it stands for
(:func:`class_sizes`), so the result is that of clustering the raw infosets.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from tensorcfr.abstraction.bucket_map import BucketMap
from tensorcfr.abstraction.clustering import (emd_features, equal_width_bins, kmeans_1d,
                                              kmeans_l1)
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.game.isomorphism import isomorphism
from tensorcfr.games.numeral211.game.outcomes import turn_outcomes

__all__ = [
    "METHODS", "KRWEMD_WEIGHTS", "board_multiplicity", "class_sizes", "class_representatives",
    "round_wtl", "round_equity", "flop_turn_histograms", "build_abstraction",
    "lossless_bucket_map", "cell_buckets", "parse_weights", "check_bucket_map", "same_deck",
    "round_ehs2", "EHS_FEATURES", "cluster_features",
]

METHODS = ("ehs", "paemd", "krwemd")
"""Abstraction methods of :func:`build_abstraction`."""

KRWEMD_WEIGHTS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "16,4,1;4,1": ((16, 4, 1), (4, 1)),
    "7,5,3;5,3": ((7, 5, 3), (5, 3)),
    "1,1,1;1,1": ((1, 1, 1), (1, 1)),
    "3,5,7;5,7": ((3, 5, 7), (5, 7)),
}
"""The four KrwEmd weight settings of the papers (turn; flop), own round first; the first was
found best."""


def parse_weights(text: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``"16,4,1;4,1"`` -> ((16, 4, 1), (4, 1)) (turn weights: own, flop, preflop; flop
    weights: own, preflop).  Raises :class:`TensorCFRError` on anything else."""
    try:
        turn_text, flop_text = text.replace(" ", "").split(";")
        turn = tuple(float(x) for x in turn_text.split(","))
        flop = tuple(float(x) for x in flop_text.split(","))
    except ValueError:
        raise TensorCFRError(f"KrwEmd weights {text!r}: write 3 turn weights, ';', 2 flop "
                             "weights, e.g. '16,4,1;4,1'") from None
    if len(turn) != 3 or len(flop) != 2 or any(not np.isfinite(w) or w < 0
                                                for w in turn + flop) or not (
            sum(turn) > 0 and sum(flop) > 0):
        raise TensorCFRError(f"KrwEmd weights {text!r}: need 3 turn and 2 flop weights, "
                             "non-negative, not all zero (e.g. '16,4,1;4,1')")
    return turn, flop


# ---------------------------------------------------------------------- classes and cells
@lru_cache(maxsize=8)
def board_multiplicity(config: GameConfig) -> tuple[np.ndarray, ...]:
    """Per round: [B_r] float64, how many concrete boards each canonical board stands for
    (1 preflop; ``S`` per flop board; ``S`` or ``S (S-1)`` per turn board)."""
    iso = isomorphism(config)
    weights = [np.ones(1)]
    for r in range(1, config.num_rounds):
        parent, child, _ = iso.transitions(r)
        weights.append(np.bincount(child, weights=weights[-1][parent],
                                   minlength=iso.num_boards(r)))
    return tuple(weights)


def class_sizes(config: GameConfig, r: int) -> np.ndarray:
    """[C_r] float64: concrete (board, hand) infosets in each class of round r."""
    iso = isomorphism(config)
    table, count = iso.class_table(r)
    w = np.broadcast_to(board_multiplicity(config)[r][:, None], table.shape)
    ok = table >= 0
    return np.bincount(table[ok], weights=w[ok], minlength=count)


def class_representatives(config: GameConfig, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(board index [C_r], hand index [C_r]): one canonical cell of every class of round r."""
    table, count = isomorphism(config).class_table(r)
    flat = table.reshape(-1)
    ok = np.flatnonzero(flat >= 0)
    _, first = np.unique(flat[ok], return_index=True)
    cells = ok[first]
    assert len(cells) == count
    return cells // table.shape[1], cells % table.shape[1]


def _roll_back(config: GameConfig, r: int, feature: np.ndarray) -> np.ndarray:
    """Average a per-cell feature of round r [B_r, H, d] over round r's new card:
    [B_{r-1}, H, d] (0 for hands clashing with the earlier board)."""
    iso = isomorphism(config)
    parent, child, perm = iso.transitions(r)
    gathered = feature[child[:, None], perm]  # [T, H, d]
    valid = iso.valid[r][child[:, None], perm]  # [T, H]
    out = np.zeros((iso.num_boards(r - 1),) + feature.shape[1:])
    np.add.at(out, parent, gathered * valid[..., None])
    counts = np.zeros((iso.num_boards(r - 1), feature.shape[1]))
    np.add.at(counts, parent, valid.astype(np.float64))
    return out / np.maximum(counts, 1)[..., None]


@lru_cache(maxsize=4)
def _cell_wtl(config: GameConfig) -> tuple[np.ndarray, ...]:
    counts = turn_outcomes(config).astype(np.float64)  # [B2, H, 3] win, tie, lose
    total = counts.sum(-1, keepdims=True)
    turn = counts / np.maximum(total, 1)
    per_round = [turn]
    for r in range(config.num_rounds - 1, 0, -1):
        per_round.append(_roll_back(config, r, per_round[-1]))
    return tuple(reversed(per_round))


def round_wtl(config: GameConfig, r: int, *, per_class: bool = True) -> np.ndarray:
    """(win, tie, lose) probabilities at showdown against a uniform opponent hand, later
    public cards uniform: per class [C_r, 3] (or per canonical cell [B_r, H, 3] with
    ``per_class=False``; zeros on clashing cells)."""
    cells = _cell_wtl(config)[r]
    if not per_class:
        return cells
    b, h = class_representatives(config, r)
    return cells[b, h]


def round_equity(config: GameConfig, r: int, *, per_class: bool = True) -> np.ndarray:
    """Expected hand strength P(win) + P(tie) / 2 per class [C_r] (or per cell [B_r, H])."""
    wtl = round_wtl(config, r, per_class=per_class)
    return wtl[..., 0] + 0.5 * wtl[..., 1]


def round_ehs2(config: GameConfig, r: int) -> np.ndarray:
    """E[HS^2] per class [C_r]: the mean over the remaining public cards of the squared
    turn equity (Johanson et al. 2013's feature: it rewards hands whose strength may still
    rise or fall, which EHS averages away).  At the turn it is the equity squared."""
    turn = round_equity(config, config.num_rounds - 1, per_class=False) ** 2
    cells = turn[..., None]
    for j in range(config.num_rounds - 1, r, -1):
        cells = _roll_back(config, j, cells)
    b, h = class_representatives(config, r)
    return cells[b, h, 0]


EHS_FEATURES = ("ehs", "ehs2")
"""Features clustered by the ``ehs`` method: the equity, or E[HS^2]."""


def cell_buckets(config: GameConfig, r: int, labels: np.ndarray) -> np.ndarray:
    """[B_r, H] int64 bucket of every canonical cell from class labels [C_r] (-1 on
    clashing cells)."""
    table, _ = isomorphism(config).class_table(r)
    labels = np.asarray(labels, dtype=np.int64)
    return np.where(table >= 0, labels[np.maximum(table, 0)], -1)


def flop_turn_histograms(config: GameConfig, turn_labels: np.ndarray,
                         num_turn_buckets: int) -> np.ndarray:
    """[C_1, K] float64: for every flop class, the probability of each turn bucket over the
    equally likely turn cards (``turn_labels`` [C_2] turn class -> bucket)."""
    iso = isomorphism(config)
    parent, child, perm = iso.transitions(2)
    cells = cell_buckets(config, 2, turn_labels)
    gathered = cells[child[:, None], perm]  # [T, H]
    hist = np.zeros((iso.num_boards(1), config.num_hands, num_turn_buckets))
    t_idx, h_idx = np.nonzero(gathered >= 0)
    np.add.at(hist, (parent[t_idx], h_idx, gathered[t_idx, h_idx]), 1.0)
    b, h = class_representatives(config, 1)
    rows = hist[b, h]
    return rows / np.maximum(rows.sum(1, keepdims=True), 1)


def cluster_features(config: GameConfig, bmap: BucketMap, r: int) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """The features round r's classes were clustered on by ``bmap``'s method, and the
    per-dimension weights of its distance (``sum_i w_i |x_i - y_i|``): ``(features [C_r, d],
    dim_weights [d])``, rebuilt from the map's stored parameters.

    * ``ehs``: the equity (or E[HS^2]) [C_r, 1], weight 1 (k-means in 1-D);
    * ``paemd``: turn = the equity [C_r, 1]; flop = the cumulative histograms over the turn
      clusters of :func:`~tensorcfr.abstraction.clustering.emd_features`, weights = the gaps
      between the clusters' mean equities (weighted L1 = the exact EMD);
    * ``krwemd``: the k-recall cumulative (lose, lose + tie) triples with the map's weights
      (weighted L1 = ``sum_j w_j EMD_j``).

    Raises :class:`TensorCFRError` for round 0 (never clustered) and for maps of another
    method (e.g. ``classes``)."""
    check_bucket_map(config, bmap)
    if r not in (1, 2):
        raise TensorCFRError(f"round {r} is not clustered (the preflop keeps its classes)")
    params = bmap.params
    if bmap.method == "ehs":
        values = (round_equity(config, r) if params.get("feature", "ehs") == "ehs"
                  else round_ehs2(config, r))
        return values[:, None], np.ones(1)
    if bmap.method == "paemd":
        equity = round_equity(config, 2)
        if r == 2:
            return equity[:, None], np.ones(1)
        turn_means = np.asarray(bmap.extra["turn_bucket_means"])
        hist_turn = int(params.get("hist_turn", len(turn_means)))
        if hist_turn == len(turn_means):
            hist_lab, hist_means = bmap.labels[2], turn_means
        else:  # the histogram's own turn clusters: rebuilt with the map's seed
            hist_lab, hist_means = kmeans_1d(equity, hist_turn, class_sizes(config, 2),
                                             seed=int(params.get("seed", 0)))
        hist = flop_turn_histograms(config, hist_lab, len(hist_means))
        return emd_features(hist, hist_means)
    if bmap.method == "krwemd":
        w = params["weights"]["flop" if r == 1 else "turn"]
        return _krw_features(config, r, tuple(float(x) for x in w))
    raise TensorCFRError(f"a {bmap.method!r} bucket map has no clustering features; "
                         f"use an {', '.join(METHODS)} map")


# ---------------------------------------------------------------------- building
def lossless_bucket_map(config: GameConfig) -> BucketMap:
    """One bucket per isomorphic class in every round (the full game's information)."""
    counts = isomorphism(config).isomorphic_classes()
    return BucketMap("numeral211", config.to_dict(), "classes",
                     [np.arange(c) for c in counts], {})


def same_deck(a: dict[str, Any] | GameConfig, b: GameConfig) -> bool:
    """True when two variants share the deck (ranks and suits): card classes, and so bucket
    maps and embeddings, do not depend on the ante or the betting."""
    ad = a.to_dict() if isinstance(a, GameConfig) else a
    return ad.get("ranks") == b.ranks and ad.get("suits") == b.suits


def check_bucket_map(config: GameConfig, bmap: BucketMap) -> None:
    """Raise :class:`~tensorcfr.abstraction.bucket_map.BucketMapMismatchError` (one line)
    unless ``bmap`` was built for the deck of ``config`` (the betting may differ)."""
    from tensorcfr.abstraction.bucket_map import BucketMapMismatchError

    counts = isomorphism(config).isomorphic_classes()
    if bmap.game != "numeral211" or not same_deck(bmap.variant, config) or \
            bmap.num_classes != counts:
        raise BucketMapMismatchError(
            f"the bucket map was built for {bmap.game} with ranks "
            f"{bmap.variant.get('ranks')!r} x {bmap.variant.get('suits')} suits (classes "
            f"{bmap.num_classes}), not for ranks {config.ranks!r} x {config.suits} suits "
            f"(classes {counts}); rebuild it with `numeral211 abstract` for this deck")


def _krw_features(config: GameConfig, r: int, weights: tuple[float, ...]) -> tuple[
        np.ndarray, np.ndarray]:
    """KrwEmd features of round r's classes: cumulative (lose, lose + tie) of the class's
    own triple and its predecessors' (own round first), and the per-dimension weights."""
    b, h = class_representatives(config, r)
    iso = isomorphism(config)
    boards = iso.boards[r][b]  # [C, r] cards; canonical earlier boards are prefixes
    parts = []
    for j in range(r, -1, -1):
        if j == r:
            bj = b
        elif j == 0:
            bj = np.zeros_like(b)
        else:  # the flop of a canonical turn board is canonical: rank in suit 0
            bj = boards[:, 0] // config.suits
        wtl = _cell_wtl(config)[j][bj, h]
        lose, tie = wtl[:, 2], wtl[:, 1]
        parts.append(np.stack([lose, lose + tie], axis=1))
    features = np.concatenate(parts, axis=1)
    dim_weights = np.repeat(np.asarray(weights[:r + 1], dtype=np.float64), 2)
    return features, dim_weights


def _check_budget(config: GameConfig, flop: int, turn: int) -> list[int]:
    counts = isomorphism(config).isomorphic_classes()
    for label, k, c in (("--flop", flop, counts[1]), ("--turn", turn, counts[2])):
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise TensorCFRError(f"{label} must be a positive number of buckets, got {k!r}")
        if k > c:
            raise TensorCFRError(f"{label} {k} is larger than the {c} isomorphic classes of "
                                 f"that round in {config.describe()}; use at most {c}")
    return counts


def build_abstraction(config: GameConfig, method: str, flop: int, turn: int, *,
                      seed: int = 0, ehs_bins: bool = False,
                      weights: str | tuple[tuple[float, ...], tuple[float, ...]] = "16,4,1;4,1",
                      max_iter: int = 100, ehs_feature: str = "ehs",
                      hist_turn: int | None = None,
                      progress: Callable[[str], None] | None = None) -> BucketMap:
    """Build the ``method`` abstraction (``ehs``, ``paemd``, ``krwemd``) with ``flop`` and
    ``turn`` buckets; the preflop keeps its isomorphic classes.

    ``seed``: clustering seed; ``ehs_bins``: equal-width equity bins instead of k-means
    (``ehs`` only); ``weights``: KrwEmd weights (``"16,4,1;4,1"`` or the parsed tuples);
    ``max_iter``: Lloyd iterations of the L1/EMD k-means; ``ehs_feature``: ``"ehs"`` (the
    equity) or ``"ehs2"`` (E[HS^2], :func:`round_ehs2`), ``ehs`` only; ``hist_turn``: PaEmd's
    number of turn equity clusters over which the flop histograms are taken (default: the
    turn budget, Ganzfried & Sandholm's choice; more gives the flop a finer view of its
    potential while the turn keeps ``turn`` buckets); ``progress``: called with a short
    text before each stage.  Returns a :class:`BucketMap` whose ``extra`` holds the per-class
    equities (``equity_<r>``) and, for PaEmd, the turn-bucket means.
    """
    method = str(method).strip().lower()
    if method not in METHODS:
        raise TensorCFRError(f"unknown abstraction method {method!r}: choose one of "
                             f"{', '.join(METHODS)}")
    counts = _check_budget(config, flop, turn)
    if ehs_feature not in EHS_FEATURES:
        raise TensorCFRError(f"unknown EHS feature {ehs_feature!r}: choose one of "
                             f"{', '.join(EHS_FEATURES)}")
    if ehs_feature != "ehs" and method != "ehs":
        raise TensorCFRError("the EHS feature option applies to the ehs method only")
    if hist_turn is not None:
        if method != "paemd":
            raise TensorCFRError("the histogram turn-cluster option applies to paemd only")
        if not isinstance(hist_turn, (int, np.integer)) or not 1 <= hist_turn <= counts[2]:
            raise TensorCFRError(f"histogram turn clusters must be between 1 and the "
                                 f"{counts[2]} turn classes, got {hist_turn!r}")
    say = progress or (lambda _text: None)
    start = time.perf_counter()
    say("win/tie/lose features")
    sizes = [class_sizes(config, r) for r in range(3)]
    equity = [round_equity(config, r) for r in range(3)]
    labels: list[np.ndarray] = [np.arange(counts[0])]
    params: dict[str, Any] = {"flop": int(flop), "turn": int(turn), "seed": int(seed)}
    extra: dict[str, np.ndarray] = {f"equity_{r}": equity[r] for r in range(3)}
    if method == "ehs":
        params["clustering"] = "equal-width" if ehs_bins else "kmeans"
        params["feature"] = ehs_feature
        for r, k in ((1, flop), (2, turn)):
            say(f"{'binning' if ehs_bins else 'k-means on'} round {r} {ehs_feature}")
            values = equity[r] if ehs_feature == "ehs" else round_ehs2(config, r)
            if ehs_bins:
                lab, _ = equal_width_bins(values, k)
            else:
                lab, _ = kmeans_1d(values, k, sizes[r], seed=seed)
            labels.append(lab)
    elif method == "paemd":
        say("k-means on turn equity")
        turn_lab, turn_means = kmeans_1d(equity[2], turn, sizes[2], seed=seed)
        hist_lab, hist_means = turn_lab, turn_means
        if hist_turn is not None and hist_turn != turn:
            say(f"k-means on turn equity into {hist_turn} histogram clusters")
            hist_lab, hist_means = kmeans_1d(equity[2], int(hist_turn), sizes[2], seed=seed)
        params["hist_turn"] = int(len(hist_means))
        say("flop histograms over turn buckets")
        hist = flop_turn_histograms(config, hist_lab, len(hist_means))
        feats, dim_w = emd_features(hist, hist_means)
        say("k-means with the exact EMD on the flop")
        flop_lab, _, _ = kmeans_l1(feats, flop, dim_weights=dim_w, weights=sizes[1],
                                   seed=seed, max_iter=max_iter)
        labels += [flop_lab, turn_lab]
        extra["turn_bucket_means"] = turn_means
        params["ground_distance"] = "turn-bucket mean equity"
    else:
        turn_w, flop_w = parse_weights(weights) if isinstance(weights, str) else weights
        params["weights"] = {"turn": list(turn_w), "flop": list(flop_w)}
        for r, k, w in ((1, flop, flop_w), (2, turn, turn_w)):
            say(f"k-means++ with the k-recall EMD on round {r}")
            feats, dim_w = _krw_features(config, r, w)
            lab, _, _ = kmeans_l1(feats, k, dim_weights=dim_w, weights=sizes[r], seed=seed,
                                  max_iter=max_iter)
            labels.append(lab)
    seconds = time.perf_counter() - start
    return BucketMap("numeral211", config.to_dict(), method, labels, params, seconds, extra)
