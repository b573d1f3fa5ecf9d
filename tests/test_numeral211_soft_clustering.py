"""The controls of Embedding CFR on Numeral211: soft clustering (its zero-temperature limit is
the bucketed run), dense against truncated Phi, and the two averaging rules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tensorcfr.abstraction.clustering import soft_assignment
from tensorcfr.core.public_tree import public_pass
from tensorcfr.core.regret import CFRVariant
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.solving.abstract_solve import (abstract_solver, bucket_embeddings,
                                                               choose_phi_top, phi_embeddings)
from tensorcfr.games.numeral211.abstraction.abstractions import (board_multiplicity,
                                                                 build_abstraction,
                                                                 cluster_features)
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.game.isomorphism import isomorphism
from tensorcfr.games.numeral211.abstraction.soft_clustering import (soft_clustering,
                                                                    soft_clustering_embeddings)

TWO_SUITS = GameConfig(ranks="9TA", suits=2, max_bets=(2, 2, 2))
ONE_SUIT = GameConfig(ranks="234567", suits=1, max_bets=(2, 2, 2))


def test_soft_assignment_limits_and_columns() -> None:
    values = np.array([0.0, 0.1, 0.9, 1.0, 0.55])
    labels = np.array([0, 0, 1, 1, 1])
    hard = soft_assignment(values, labels, 0.0)
    # centres 0.05 and 0.816..; 0.55 is nearer the second
    assert np.array_equal(hard.phi, np.eye(2)[labels].T)
    assert hard.agreement == 1.0
    assert np.allclose(hard.centres[:, 0], [0.05, (0.9 + 1.0 + 0.55) / 3])
    warm = soft_assignment(values, labels, 1.0)
    assert np.allclose(warm.phi.sum(0), 1.0)
    assert (warm.phi[labels, np.arange(5)] > 0.5).all()
    hot = soft_assignment(values, labels, 1e6)
    assert np.allclose(hot.phi, 0.5, atol=1e-5)
    cold = soft_assignment(values, labels, 1e-6)
    assert np.array_equal(cold.phi, hard.phi)
    # a label that is not the nearest centre lowers the agreement, and the limit follows
    # the distances, not the label
    moved = soft_assignment(values, np.array([0, 0, 1, 0, 1]), 0.0, weights=np.ones(5))
    assert moved.agreement == pytest.approx(0.8)
    assert moved.phi[:, 3].tolist() == [0.0, 1.0]  # 1.0 is nearer the second centre
    with pytest.raises(ValueError):
        soft_assignment(values, labels, -1.0)


@pytest.mark.parametrize("method, seed", [("krwemd", 1), ("paemd", 0), ("ehs", 0)])
def test_cluster_features_reproduce_the_clustering(method: str, seed: int) -> None:
    """The rebuilt features with the clustering's distance put every class nearest its own
    centre (these maps converged: agreement 1)."""
    bmap = build_abstraction(TWO_SUITS, method, 3, 5, seed=seed)
    for r in (1, 2):
        features, dim_weights = cluster_features(TWO_SUITS, bmap, r)
        assert features.shape[0] == bmap.num_classes[r]
        assert len(dim_weights) == features.shape[1]
    soft = soft_clustering(TWO_SUITS, bmap, 1e-6)
    assert soft.agreement == {1: 1.0, 2: 1.0}
    for r in (1, 2):
        assert np.array_equal(soft.phi[r], np.eye(bmap.num_buckets[r])[bmap.labels[r]].T)
        assert soft.top1_mean[r] == pytest.approx(1.0)
    with pytest.raises(TensorCFRError):
        cluster_features(TWO_SUITS, bmap, 0)
    with pytest.raises(TensorCFRError):
        soft_clustering(TWO_SUITS, bmap, float("nan"))


@pytest.mark.parametrize("algo, averaging", [("cfr", "uniform"), ("cfr+", "reach"),
                                             ("cfr", "reach")])
@pytest.mark.parametrize("method, seed", [("krwemd", 1), ("paemd", 0)])
def test_cold_soft_clustering_equals_bucketed_run(method: str, seed: int, algo: str,
                                                  averaging: str) -> None:
    """At a very low temperature the soft Phi is the bucket map's one-hot Phi: kept as each
    column's largest entry it runs the bucket map's own kernels (bitwise the same run);
    dense, its matrix products sum in another order (equal to rounding; on this tiny game a
    regret of 1e-16 against 0 flips regret matching from the second iteration, so the dense
    run is compared after one)."""
    game = n211.build_game(TWO_SUITS, dtype=torch.float64)
    bmap = build_abstraction(TWO_SUITS, method, 3, 5, seed=seed)

    def run(embeddings, iterations):
        solver = abstract_solver(game, embeddings, algo=algo, averaging=averaging)
        solver.iterate(iterations)
        return solver

    bucketed = run(bucket_embeddings(game, bmap), 6)
    top1 = run(soft_clustering_embeddings(TWO_SUITS, bmap, 1e-6, top_k=1), 6)
    for r in range(3):
        assert torch.equal(bucketed.regrets[r], top1.regrets[r])
        assert torch.equal(bucketed.average[r], top1.average[r])
    assert top1.exploitability() == bucketed.exploitability()
    dense_emb = soft_clustering_embeddings(TWO_SUITS, bmap, 1e-6)
    assert all(e.is_dense for e in dense_emb[1:])
    bucketed_d = abstract_solver(game, bucket_embeddings(game, bmap), algo=algo,
                                 averaging=averaging)
    dense = abstract_solver(game, dense_emb, algo=algo, averaging=averaging)
    bucketed_d.iterate(1)  # later a regret of 1e-16 against 0 flips regret matching
    dense.iterate(1)
    for r in range(3):
        assert torch.allclose(bucketed_d.regrets[r], dense.regrets[r], rtol=0, atol=1e-12)
        assert torch.allclose(bucketed_d.average[r], dense.average[r], rtol=0, atol=1e-12)
    assert dense.exploitability() == pytest.approx(bucketed_d.exploitability(), rel=1e-12)
    # a warm Phi is another strategy space: the runs part
    warm = run(soft_clustering_embeddings(TWO_SUITS, bmap, 1.0), 6)
    assert abs(warm.exploitability() - bucketed.exploitability()) > 1e-6


def test_dense_and_truncated_phi_equal_when_k_is_m() -> None:
    game = n211.build_game(TWO_SUITS, dtype=torch.float64)
    counts = isomorphism(TWO_SUITS).isomorphic_classes()
    rng = np.random.default_rng(3)
    phi = {r: rng.dirichlet(np.ones(4), size=counts[r]).T for r in (1, 2)}
    dense, top = phi_embeddings(game, phi)
    assert top is None and all(e.is_dense for e in dense[1:])
    truncated, top = phi_embeddings(game, phi, top_k=4)  # k = m: stored full
    sparse = dense[:1] + [dataclasses.replace(e, prefer_dense=False) for e in truncated[1:]]
    assert not any(e.is_dense for e in sparse[1:])
    runs = []
    for embeddings in (dense, sparse, phi_embeddings(game, phi, top_k=2)[0]):
        solver = abstract_solver(game, embeddings, algo="cfr", averaging="uniform")
        solver.iterate(5)
        runs.append(solver)
    for r in range(3):
        assert torch.allclose(runs[0].regrets[r], runs[1].regrets[r], rtol=1e-12, atol=1e-12)
        assert torch.allclose(runs[0].average[r], runs[1].average[r], rtol=1e-12, atol=1e-12)
    assert runs[0].exploitability() == pytest.approx(runs[1].exploitability(), rel=1e-10)
    assert abs(runs[2].exploitability() - runs[0].exploitability()) > 1e-6  # k = 2 < m


def test_choose_phi_top_estimates_memory() -> None:
    shapes = [(225, 2260), (396, 62020)]
    top, need = choose_phi_top(shapes, 4)
    assert top is None  # the paper's game fits dense in 1 GiB
    assert need == sum(m * c * (8 + 4) + m * c * 4 for m, c in shapes)
    top, need = choose_phi_top(shapes, 4, dense_limit_bytes=100 << 20)
    assert top == 8 and need == sum(8 * c * 12 for _, c in shapes)
    assert choose_phi_top(shapes, 4, 500)[0] is None  # k >= every m: dense
    assert choose_phi_top(shapes, 4, 16)[0] == 16
    with pytest.raises(TensorCFRError):
        choose_phi_top(shapes, 4, 0)


def _own_reach(game, strategy, player: int) -> list[torch.Tensor]:
    """Per round [S, P, B, H]: ``player``'s own reach times their strategy at their slots
    (one full-sweep pass on ``strategy``)."""

    class Sink:
        def __init__(self) -> None:
            self.regrets = [torch.zeros_like(s) for s in strategy]
            self.average = [torch.zeros_like(s) for s in strategy]
            self.iteration = 1
            self.variant = CFRVariant("cfr")

    sink = Sink()
    public_pass(game, strategy, player, "cfr", solver=sink)
    return sink.average


@pytest.mark.parametrize("averaging", ["reach", "uniform"])
def test_averaging_rules_of_a_bucketed_abstraction(averaging: str) -> None:
    """Reach-weighted averaging of a one-hot abstraction is CFR's average on the abstract
    game: per (node, bucket), sum_t (the player's reach summed over the bucket's infosets)
    x sigma_t(bucket) / sum_t reach; uniform averaging is the mean of sigma_t."""
    game = n211.build_game(ONE_SUIT, dtype=torch.float64)
    bmap = build_abstraction(ONE_SUIT, "ehs", 3, 4)
    solver = abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr",
                             averaging=averaging, storage="cells")
    tables = [isomorphism(ONE_SUIT).class_table(r)[0] for r in range(3)]
    mult = board_multiplicity(ONE_SUIT)
    numerators = [torch.zeros_like(a) for a in solver.average]
    iterations = 7
    for _ in range(iterations):
        strategy = [s.clone() for s in solver.cell_strategy]
        sigma = [a.clone() for a in solver.advisor_strategy]
        for player in (0, 1):
            weighted = _own_reach(game, strategy, player)
            for r in range(3):
                cells_bucket = np.where(tables[r] >= 0, bmap.labels[r][np.maximum(tables[r], 0)],
                                        -1)
                for acting, sl in solver._node_slices(r):
                    if acting != player:
                        continue
                    reach_cells = weighted[r][sl].sum(0) * torch.as_tensor(mult[r])[:, None]
                    reach = torch.zeros((reach_cells.shape[0], bmap.num_buckets[r]),
                                        dtype=torch.float64)
                    ok = cells_bucket >= 0
                    for b, h in zip(*np.nonzero(ok)):
                        reach[:, cells_bucket[b, h]] += reach_cells[:, b, h]
                    weight = reach if averaging == "reach" else torch.ones_like(reach)
                    numerators[r][sl] += sigma[r][sl] * weight
        solver.iterate(1)
    average = solver.advisor_average()
    for r in range(3):
        for _, sl in solver._node_slices(r):
            num = numerators[r][sl]
            total = num.sum(0, keepdim=True)
            want = torch.where(total > 0, num / total.clamp_min(1e-300),
                               torch.full_like(num, 1.0 / num.shape[0]))
            assert torch.allclose(average[r][sl], want, rtol=1e-10, atol=1e-12)
    if averaging == "reach":  # the rules differ on this game
        uniform = abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr",
                                  averaging="uniform", storage="cells")
        uniform.iterate(iterations)
        assert not torch.allclose(uniform.advisor_average()[2], average[2], atol=1e-6)


def test_soft_clustering_file_roundtrip(tmp_path) -> None:
    from tensorcfr.games.numeral211.abstraction.embedding_net import load_embedding, save_embedding
    from tensorcfr.games.numeral211.abstraction.soft_clustering import soft_clustering_file

    bmap = build_abstraction(TWO_SUITS, "krwemd", 3, 5, seed=1)
    emb = soft_clustering_file(TWO_SUITS, bmap, 0.5)
    save_embedding(tmp_path / "soft.npz", emb)
    again = load_embedding(tmp_path / "soft.npz")
    soft = soft_clustering(TWO_SUITS, bmap, 0.5)
    for r in (1, 2):
        assert np.allclose(again.phi[r], soft.phi[r], atol=1e-7)
    assert again.meta["temperature"] == 0.5 and again.meta["source_method"] == "krwemd"


def _cli(*args: str):
    """``tensorcfr ARGS`` in-process (the same entry point as the console script)."""
    from _cli_helpers import cli

    return cli(*args)


def test_cli_soft_clustering_options(tmp_path) -> None:
    """`abstract --soft-temperature T --soft-out F` writes the soft Phi; `solve --embedding F`
    and `solve --abstraction MAP --soft-temperature T` run the same Embedding CFR (dense by
    default); at T ~ 0 with one entry per column it is the bucketed run; bad input is one
    line and exit code 2."""
    import json

    bmap, soft = tmp_path / "k.npz", tmp_path / "soft.npz"
    made = _cli("numeral211", "abstract", "--method", "krwemd", "--flop", "3", "--turn", "5",
                "--seed", "1", "--ranks", "9TA", "--suits", "2", "--out", str(bmap),
                "--soft-temperature", "0.5", "--soft-out", str(soft), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["soft"]["agreement"] == {"round_1": 1.0, "round_2": 1.0}
    runs = {}
    for name, extra in (("file", ["--embedding", str(soft)]),
                        ("map", ["--abstraction", str(bmap), "--soft-temperature", "0.5"]),
                        ("cold", ["--abstraction", str(bmap), "--soft-temperature", "1e-6",
                                  "--phi-top", "1"]),
                        ("buckets", ["--abstraction", str(bmap)])):
        proc = _cli("numeral211", "solve", *extra, "--algo", "cfr", "-n", "3", "--json")
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout)
    assert runs["file"]["phi_top"] == runs["map"]["phi_top"] == "dense"
    # the file stores Phi in float32: equal to that rounding
    assert runs["file"]["exploitability"] == pytest.approx(runs["map"]["exploitability"],
                                                           rel=1e-5)
    assert runs["cold"]["exploitability"] == runs["buckets"]["exploitability"]
    assert runs["buckets"]["phi_top"] is None
    for extra, message in ((["--abstraction", str(bmap), "--soft-temperature", "-1"],
                            "--soft-temperature must be"),
                           (["--embedding", str(soft), "--soft-temperature", "1"],
                            "applies to --abstraction"),
                           (["--embedding", str(soft), "--phi-top", "0"], "--phi-top")):
        proc = _cli("numeral211", "solve", *extra, "-n", "2")
        assert proc.returncode == 2 and message in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    proc = _cli("numeral211", "abstract", "--method", "ehs", "--flop", "3", "--turn", "5",
                "--ranks", "9TA", "--suits", "2", "--out", str(tmp_path / "e.npz"),
                "--soft-temperature", "1")
    assert proc.returncode == 2 and "--soft-out" in proc.stderr
