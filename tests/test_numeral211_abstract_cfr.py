"""Abstract CFR on Numeral211: bucketed CFR and Embedding CFR against the full-game solver."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorcfr.abstraction.abstract_cfr import Embedding
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.solving.abstract_solve import (abstract_solver, bucket_embeddings,
                                                               lossless_embeddings, run_abstract)
from tensorcfr.games.numeral211.abstraction.abstractions import (build_abstraction,
                                                                 lossless_bucket_map)
from tensorcfr.games.numeral211.game.config import GameConfig

# one suit: every class is a single cell, so class sums are bitwise the cell values
ONE_SUIT = GameConfig(ranks="234567", suits=1, max_bets=(2, 2, 2))
TWO_SUITS = GameConfig(ranks="9TA", suits=2, max_bets=(2, 2, 2))


def _valid_max_diff(game, a, b) -> float:
    return max(float((a[r] - b[r]).abs()[..., torch.as_tensor(game.iso.valid[r])].max())
               for r in range(3))


@pytest.mark.parametrize("algo", ["cfr", "cfr+"])
@pytest.mark.parametrize("kind", ["buckets", "identity-phi"])
def test_lossless_abstraction_reproduces_full_solver(algo: str, kind: str) -> None:
    game = n211.build_game(ONE_SUIT, dtype=torch.float64)
    full = n211.make_solver(game, algo)
    if kind == "buckets":
        embeddings = bucket_embeddings(game, lossless_bucket_map(ONE_SUIT))
    else:
        embeddings = [Embedding.from_matrix(np.eye(c))
                      for c in game.iso.isomorphic_classes()]
    abstract = abstract_solver(game, embeddings, algo=algo)
    full.iterate(8)
    abstract.iterate(8)
    assert _valid_max_diff(game, full.average_policy(), abstract.average_policy()) < 1e-12
    assert n211.exploitability(game, abstract.average_policy()).exploitability == \
        pytest.approx(n211.exploitability(game, full.average_policy()).exploitability,
                      rel=1e-12)


def test_lossless_classes_match_with_suit_isomorphism() -> None:
    """With suits, classes hold several cells: equal up to rounding for a few iterations."""
    game = n211.build_game(TWO_SUITS, dtype=torch.float64)
    full = n211.make_solver(game, "cfr")
    abstract = abstract_solver(game, lossless_embeddings(game))
    full.iterate(3)
    abstract.iterate(3)
    assert _valid_max_diff(game, full.average_policy(), abstract.average_policy()) < 1e-9


def test_coarse_abstraction_is_worse_than_full_game() -> None:
    game = n211.build_game(TWO_SUITS, dtype=torch.float64)
    bmap = build_abstraction(TWO_SUITS, "ehs", 2, 3)
    solver = abstract_solver(game, bucket_embeddings(game, bmap), algo="cfr+")
    curve = run_abstract(game, solver, 30, eval_every=10)
    assert [p["iteration"] for p in curve] == [10, 20, 30]
    full = n211.make_solver(game, "cfr+")
    full.iterate(30)
    full_ex = n211.exploitability(game, full.average_policy()).exploitability
    assert curve[-1]["exploitability"] > full_ex > 0
    assert curve[-1]["mbg"] == pytest.approx(curve[-1]["exploitability"] * 1000 / 5)


def test_embedding_columns_and_sparse_phi() -> None:
    rng = np.random.default_rng(0)
    phi = rng.random((5, 9))
    emb = Embedding.from_matrix(phi, top_k=2)
    assert emb.index.shape == (2, 9)
    assert torch.allclose(emb.weight.sum(0), torch.ones(9, dtype=torch.float64))
    x = torch.as_tensor(rng.random((3, 5)))
    dense = Embedding.from_matrix(phi)
    phi_n = torch.as_tensor(phi / phi.sum(0))
    assert torch.allclose(dense.down(x), x @ phi_n)
    assert torch.allclose(dense.up(x @ phi_n), x @ phi_n @ phi_n.T)
    with pytest.raises(TensorCFRError):
        Embedding.from_matrix(-phi)


def test_soft_embedding_cfr_runs_and_improves() -> None:
    game = n211.build_game(TWO_SUITS, dtype=torch.float64)
    counts = game.iso.isomorphic_classes()
    rng = np.random.default_rng(1)
    embeddings = [Embedding.from_labels(np.arange(counts[0]))]
    for c in counts[1:]:
        embeddings.append(Embedding.from_matrix(rng.dirichlet(np.ones(4), size=c).T))
    solver = abstract_solver(game, embeddings, averaging="uniform")
    curve = run_abstract(game, solver, 20, eval_every=5)
    assert curve[-1]["exploitability"] < curve[0]["exploitability"]


def test_embedding_file_roundtrip_and_corrupt(tmp_path) -> None:
    from tensorcfr.errors import CorruptFileError
    from tensorcfr.games.numeral211.abstraction.embedding_net import (load_embedding,
                                                                      save_embedding,
                                                                      train_embedding)

    emb = train_embedding(TWO_SUITS, 4, 6, epochs=3, hidden=16)
    counts = [9, 30, 90]
    assert emb.phi[1].shape == (4, counts[1]) and emb.phi[2].shape == (6, counts[2])
    assert np.allclose(emb.phi[2].sum(0), 1.0, atol=1e-5)
    assert set(emb.meta["advisors_used"]) == {"round_1", "round_2"}
    path = tmp_path / "phi.npz"
    save_embedding(path, emb)
    again = load_embedding(path)
    assert again.config == TWO_SUITS and np.array_equal(again.phi[1], emb.phi[1])
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(CorruptFileError):
        load_embedding(tmp_path / "bad.npz")


def _cli(*args: str):
    """``tensorcfr ARGS`` in-process (the same entry point as the console script)."""
    from _cli_helpers import cli

    return cli(*args)


def test_cli_solve_abstraction_and_errors(tmp_path) -> None:
    import json

    bmap = tmp_path / "ehs.npz"
    build_abstraction(TWO_SUITS, "ehs", 3, 5).save(bmap)
    proc = _cli("numeral211", "solve", "--abstraction", str(bmap), "--algo", "cfr", "-n", "4",
                "--eval-every", "2", "--json", "--out", str(tmp_path / "pol.npz"))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["method"] == "ehs" and [p["iteration"] for p in result["curve"]] == [2, 4]
    assert result["exploitability"] > 0
    ex = _cli("numeral211", "exploitability", str(tmp_path / "pol.npz"), "--json")
    assert json.loads(ex.stdout)["exploitability"] == pytest.approx(result["exploitability"],
                                                                    rel=1e-4)
    for args, message in (
            (["--abstraction", str(bmap), "--ranks", "TA"], "was built for"),
            (["--embedding", str(bmap)], "not a valid embedding"),
            (["--abstraction", str(tmp_path / "none.npz")], "does not exist"),
            (["--abstraction", str(bmap), "--algo", "dcfr"], "abstract solving")):
        proc = _cli("numeral211", "solve", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _advisor_regrets(baseline: str, iterations: int) -> dict[int, float]:
    """Embedding CFR (vanilla CFR, uniform averaging) on the tiny variant with a random soft
    Phi: max over advisors and actions of each advisor's own positive regret / T, measured
    here from the class regrets and the strategies the advisors played (independently of
    the solver's tables)."""
    config = GameConfig(ranks="TA", suits=3, max_bets=(1, 1, 1))
    game = n211.build_game(config, dtype=torch.float64)
    rng = np.random.default_rng(0)
    embeddings = [Embedding.from_matrix(rng.dirichlet(np.full(3, 0.5), size=c).T)
                  for c in game.iso.isomorphic_classes()]
    solver = abstract_solver(game, embeddings, algo="cfr", averaging="uniform",
                             regret_baseline=baseline)
    own = [torch.zeros_like(x) for x in solver.regrets]
    update = solver._update_node

    def record(r, sl, regret_c, weighted_c, emb, decay, scale_c=None):
        sigma = solver.advisor_strategy[r][sl].clone()  # what the advisors played
        phi = torch.zeros((emb.num_advisors, emb.num_classes), dtype=torch.float64)
        phi.scatter_(0, emb.index, emb.weight)
        # sum_q phi_pq r(q, a): the class baselines v(q) cancel against sigma(e_p)'s
        values = torch.einsum("pq,axq->axp", phi, regret_c)  # [A, prefixes, advisors]
        own[r][sl] += values - (values * sigma).sum(0, keepdim=True)
        update(r, sl, regret_c, weighted_c, emb, decay, scale_c)

    solver._update_node = record
    out = {}
    for t in range(1, iterations + 1):
        solver.iterate(1)
        if t in (10, iterations):
            out[t] = max(float(o.clamp_min(0).max()) for o in own) / t
    return out


def test_advisor_baseline_drives_each_advisors_own_regret_to_zero() -> None:
    """Issue 28 part 2, the property Proposition 1 of the Embedding CFR paper needs: with
    the advisor baseline (the default) every advisor's own average regret falls at least
    like 1/sqrt(T); with the information-set baseline it stays well above that."""
    advisor = _advisor_regrets("advisor", 160)
    infoset = _advisor_regrets("infoset", 160)
    assert advisor[160] * 160 ** 0.5 <= advisor[10] * 10 ** 0.5
    assert advisor[160] < 0.5 * infoset[160]
    assert advisor[160] < 0.15


def test_regret_baselines_agree_on_a_bucket_map_and_bad_name() -> None:
    game = n211.build_game(TWO_SUITS, dtype=torch.float64)
    counts = game.iso.isomorphic_classes()
    rng = np.random.default_rng(2)
    embeddings = [Embedding.from_labels(rng.integers(0, 3, size=c)) for c in counts]
    runs = []
    for baseline in ("advisor", "infoset"):
        solver = abstract_solver(game, embeddings, regret_baseline=baseline)
        solver.iterate(5)
        runs.append(solver.regrets)
    assert all(torch.equal(a, b) for a, b in zip(*runs))
    with pytest.raises(TensorCFRError, match="regret baseline"):
        abstract_solver(game, embeddings, regret_baseline="own")


def test_phi_entries_below_the_floor_are_dropped_so_float32_holds_no_subnormals() -> None:
    """A softmax Phi holds entries down to 1e-45: subnormal in float32, where products with
    them ran about 100x slower on the full game.  ``from_matrix`` drops entries below
    ``PHI_FLOOR`` times the column's sum and renormalises; the rest of Phi is kept."""
    from tensorcfr.abstraction.abstract_cfr import PHI_FLOOR

    assert 3e-13 < PHI_FLOOR < 1e-11  # the entries below straddle it
    phi = np.array([[1.0, 0.5, 1e-40], [1e-40, 0.5, 1.0], [3e-13, 1e-11, 0.0]])
    emb = Embedding.from_matrix(phi).to(torch.float32, torch.device("cpu"))
    dense = torch.zeros(3, 3).scatter_(0, emb.index, emb.weight)
    tiny = torch.finfo(torch.float32).tiny
    assert not bool(((dense != 0) & (dense.abs() < tiny)).any())
    assert dense[1, 0] == 0 and dense[2, 0] == 0 and dense[0, 2] == 0  # below the floor
    assert float(dense[2, 1]) == pytest.approx(1e-11, rel=1e-5)  # above it: kept
    assert torch.allclose(dense.sum(0), torch.ones(3))
