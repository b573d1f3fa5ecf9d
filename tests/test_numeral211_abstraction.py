"""Numeral211 abstractions: clustering helpers, features, bucket-map files, the CLI."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest
from _cli_helpers import cli

from tensorcfr.abstraction.bucket_map import (BucketMap, BucketMapMismatchError,
                                              load_bucket_map)
from tensorcfr.abstraction.clustering import (emd_exact, emd_features, equal_width_bins,
                                              kmeans_1d, kmeans_l1)
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.numeral211.abstraction.abstractions import (build_abstraction,
                                                                 check_bucket_map, class_sizes,
                                                                 flop_turn_histograms,
                                                                 lossless_bucket_map, parse_weights,
                                                                 round_equity, round_wtl)
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.game.isomorphism import isomorphism

SMALL = GameConfig(ranks="2345", suits=4)  # 16 cards: classes 16 / 124 / 1180


def test_emd_closed_form_matches_pot() -> None:
    rng = np.random.default_rng(3)
    positions = np.sort(rng.random(7))
    hists = rng.random((6, 7)) * (rng.random((6, 7)) < 0.6) + 1e-9
    feats, weights = emd_features(hists, positions)
    for i in range(6):
        for j in range(6):
            closed = float((weights * np.abs(feats[i] - feats[j])).sum())
            assert closed == pytest.approx(emd_exact(hists[i], hists[j], positions), abs=1e-9)


def test_kmeans_1d_orders_buckets_and_bins() -> None:
    x = np.array([0.1, 0.12, 0.5, 0.52, 0.9, 0.91, 0.95])
    labels, centres = kmeans_1d(x, 3, seed=1)
    assert labels.tolist() == [0, 0, 1, 1, 2, 2, 2]
    assert np.all(np.diff(centres) > 0)
    labels, _ = kmeans_1d(x, 10)  # fewer distinct values than k: one bucket each
    assert len(set(labels.tolist())) == 7
    labels, means = equal_width_bins(x, 4)
    assert labels.tolist() == [0, 0, 1, 1, 2, 2, 2] and len(means) == 3


def test_kmeans_l1_separates_clear_groups() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 9.0]])
    x = np.concatenate([c + 0.1 * rng.standard_normal((30, 2)) for c in centres])
    labels, found, cost = kmeans_l1(x, 3, seed=2)
    assert len(set(labels.tolist())) == 3
    for g in range(3):
        assert len(set(labels[30 * g:30 * (g + 1)].tolist())) == 1
    assert cost < 0.5 and found.shape == (3, 2)


def test_features_are_probabilities_and_symmetric() -> None:
    sizes = [class_sizes(SMALL, r) for r in range(3)]
    n, h = SMALL.num_cards, SMALL.num_hands
    assert sizes[0].sum() == h
    assert sizes[1].sum() == h * (n - 2)
    assert sizes[2].sum() == h * (n - 2) * (n - 3)
    for r in range(3):
        wtl = round_wtl(SMALL, r)
        assert np.allclose(wtl.sum(1), 1.0)
        # zero-sum symmetry: the average equity over all infosets is 1/2
        assert float((round_equity(SMALL, r) * sizes[r]).sum() / sizes[r].sum()) == \
            pytest.approx(0.5, abs=1e-12)
    # pocket aces beat everything preflop more often than 2-3 offsuit
    eq = round_equity(SMALL, 0)
    assert eq.max() > 0.6 and eq.min() < 0.4


def test_flop_histograms_are_distributions() -> None:
    counts = isomorphism(SMALL).isomorphic_classes()
    hist = flop_turn_histograms(SMALL, np.arange(counts[2]) % 7, 7)
    assert hist.shape == (counts[1], 7)
    assert np.allclose(hist.sum(1), 1.0)
    # each flop hand reaches N - 3 equally likely turn cards
    assert np.allclose(hist * (SMALL.num_cards - 3), np.round(hist * (SMALL.num_cards - 3)))


@pytest.mark.parametrize("method", ["ehs", "paemd", "krwemd"])
def test_build_abstraction_meets_budget(method: str, tmp_path) -> None:
    bmap = build_abstraction(SMALL, method, 12, 40, seed=1)
    counts = isomorphism(SMALL).isomorphic_classes()
    assert bmap.num_classes == counts
    assert bmap.num_buckets == [counts[0], 12, 40]
    assert bmap.labels[0].tolist() == list(range(counts[0]))  # preflop lossless
    path = tmp_path / f"{method}.npz"
    bmap.save(path)
    again = load_bucket_map(path)
    assert again.method == method and again.params == json.loads(json.dumps(bmap.params))
    for a, b in zip(again.labels, bmap.labels):
        assert np.array_equal(a, b)
    check_bucket_map(SMALL, again)
    with pytest.raises(BucketMapMismatchError):
        check_bucket_map(GameConfig(ranks="2345", suits=3), again)
    check_bucket_map(GameConfig(ranks="2345", suits=4, max_bets=2), again)  # betting may differ
    # deterministic for a seed
    assert all(np.array_equal(a, b) for a, b in zip(
        build_abstraction(SMALL, method, 12, 40, seed=1).labels, bmap.labels))


def test_ehs_buckets_are_equity_intervals() -> None:
    bmap = build_abstraction(SMALL, "ehs", 10, 30, ehs_bins=True)
    eq = round_equity(SMALL, 2)
    lab = bmap.labels[2]
    highs = [eq[lab == b].max() for b in range(bmap.num_buckets[2])]
    lows = [eq[lab == b].min() for b in range(bmap.num_buckets[2])]
    assert all(h <= lo for h, lo in zip(highs[:-1], lows[1:]))


def test_bad_inputs() -> None:
    with pytest.raises(TensorCFRError, match="unknown abstraction method"):
        build_abstraction(SMALL, "kmeans", 5, 5)
    with pytest.raises(TensorCFRError, match="larger than the 124"):
        build_abstraction(SMALL, "ehs", 125, 5)
    with pytest.raises(TensorCFRError):
        parse_weights("16,4;4,1")
    assert parse_weights("7,5,3;5,3") == ((7.0, 5.0, 3.0), (5.0, 3.0))


def test_corrupt_bucket_map(tmp_path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(CorruptFileError):
        load_bucket_map(bad)
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(CorruptFileError):
        load_bucket_map(tmp_path / "other.npz")
    with pytest.raises(CorruptFileError):
        load_bucket_map(tmp_path / "missing.npz")
    lossless = lossless_bucket_map(SMALL)
    assert lossless.num_buckets == isomorphism(SMALL).isomorphic_classes()
    assert isinstance(lossless, BucketMap)


def _cli(*args: str) -> subprocess.CompletedProcess:
    """``tensorcfr ARGS`` in-process (the same entry point as the console script)."""
    return cli(*args)


def test_cli_abstract_json(tmp_path) -> None:
    out = tmp_path / "k.npz"
    proc = _cli("numeral211", "abstract", "--method", "krwemd", "--flop", "10", "--turn", "30",
                "--ranks", "2345", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["buckets"] == {"preflop": 16, "flop": 10, "turn": 30}
    assert result["seconds"] >= 0 and not math.isnan(result["seconds"])
    assert load_bucket_map(out).num_buckets == [16, 10, 30]


@pytest.mark.parametrize("args, message", [
    (["--method", "kmeans"], "unknown --method"),
    (["--method", "ehs", "--flop", "500"], "larger than"),
    (["--method", "krwemd", "--weights", "1,2"], "KrwEmd weights"),
])
def test_cli_abstract_errors(tmp_path, args: list[str], message: str) -> None:
    proc = _cli("numeral211", "abstract", "--ranks", "2345", "--out",
                str(tmp_path / "x.npz"), *args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
