"""Sampled iterations (public chance sampling) of the public-tree solvers, on small decks.

* the sampled pass with every board enumerated is the exact pass;
* the sampled estimator is unbiased: the probability-weighted sum over every possible draw
  (one board per parent) of the root values, of the full solver's regret increments and of
  Embedding / bucketed CFR's advisor regret increments equals the exact ones;
* a seed reproduces a run bitwise (and a resumed run), sampling every board equals exact;
* the CLI runs it and says so in its JSON.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tensorcfr.abstraction.abstract_cfr import Embedding
from tensorcfr.core.public_tree import (BoardSampling, PublicTreeCFR, board_sample_from_choices,
                                        enumerate_boards, public_pass, sample_boards)
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver, lossless_embeddings
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.game.isomorphism import isomorphism

from _cli_helpers import run_cli

pytestmark = pytest.mark.usefixtures("one_thread")  # 2 threads on a loaded machine: 20x slower

ONE_SUIT = GameConfig(ranks="234567", suits=1, max_bets=(2, 2, 2))
TWO_SUITS = GameConfig(ranks="9TA", suits=2, max_bets=(2, 2, 2))


@pytest.fixture(scope="module")
def game() -> n211.Numeral211PublicGame:
    return n211.build_game(TWO_SUITS, dtype=torch.float64)


def _paths(game: n211.Numeral211PublicGame) -> list[tuple[object, float]]:
    """Every one-board-per-parent draw with its probability."""
    parent1, prob1 = game.chance_children(1)
    parent2, prob2 = game.chance_children(2)
    one = torch.ones(1, dtype=torch.float64)
    zero = torch.zeros(1, dtype=torch.long)
    out = []
    for k1 in range(game.num_boards[1]):
        for k2 in torch.nonzero(parent2 == k1).flatten().tolist():
            sample = board_sample_from_choices(
                game, [zero, torch.tensor([k1]), torch.tensor([k2])], [zero, zero, zero],
                [one, one, one])
            out.append((sample, float(prob1[k1] * prob2[k2])))
    assert abs(sum(p for _, p in out) - 1.0) < 1e-12
    return out


def _player_slots(game: n211.Numeral211PublicGame, r: int, player: int) -> list[int]:
    tmpl = game.rounds[r]
    return [s for j, (o, a) in enumerate(zip(tmpl.slot_offsets, tmpl.num_actions))
            if tmpl.players[j] == player for s in range(o, o + a)]


def test_chance_children_are_distributions(game: n211.Numeral211PublicGame) -> None:
    for r in (1, 2):
        parent, prob = game.chance_children(r)
        sums = torch.zeros(game.num_boards[r - 1], dtype=torch.float64).index_add_(0, parent,
                                                                                   prob)
        assert torch.allclose(sums, torch.ones_like(sums), atol=1e-12)


@pytest.mark.parametrize("mode", ["eval", "br"])
def test_enumerated_boards_give_the_exact_pass(game: n211.Numeral211PublicGame,
                                               mode: str) -> None:
    policy = n211.random_symmetric_policy(game, seed=3)
    sample = enumerate_boards(game)
    sub = [p.index_select(2, b) for p, b in zip(policy, sample.boards)]
    for player in (0, 1):
        exact = public_pass(game, policy, player, mode)
        sampled = public_pass(game, sub, player, mode, sample=sample)
        assert torch.allclose(exact, sampled, atol=1e-13, rtol=0)


def test_sampled_root_values_are_unbiased(game: n211.Numeral211PublicGame) -> None:
    policy = n211.random_symmetric_policy(game, seed=4)
    for player in (0, 1):
        exact = public_pass(game, policy, player, "eval")
        expected = torch.zeros_like(exact)
        for sample, prob in _paths(game):
            sub = [p.index_select(2, b) for p, b in zip(policy, sample.boards)]
            expected += prob * public_pass(game, sub, player, "eval", sample=sample)
        assert torch.allclose(expected, exact, atol=1e-13, rtol=0)
        # one draw is not the exact value (the test is not vacuous)
        sample, _ = _paths(game)[0]
        sub = [p.index_select(2, b) for p, b in zip(policy, sample.boards)]
        assert not torch.allclose(public_pass(game, sub, player, "eval", sample=sample), exact)


def test_full_solver_regret_increments_are_unbiased(game: n211.Numeral211PublicGame) -> None:
    exact = PublicTreeCFR(game, "cfr", dtype=torch.float64)
    exact.iterate(1)
    expected = [torch.zeros_like(r) for r in exact.regrets]
    for sample, prob in _paths(game):
        solver = PublicTreeCFR(game, "cfr", dtype=torch.float64, sampling=1)
        solver.iteration = 1
        solver._sampled_iteration(sample)
        for r in range(3):
            expected[r] += prob * solver.regrets[r]
    for r in range(3):  # player 0 moves first: its update sees the same strategies
        slots = _player_slots(game, r, 0)
        assert torch.allclose(expected[r][slots], exact.regrets[r][slots], atol=1e-13, rtol=0)


@pytest.mark.parametrize("averaging", ["reach", "uniform"])
def test_abstract_regret_increments_are_unbiased(game: n211.Numeral211PublicGame,
                                                 averaging: str) -> None:
    counts = isomorphism(TWO_SUITS).isomorphic_classes()
    rng = np.random.default_rng(0)
    phis = [rng.random((3, c)) for c in counts]
    embeddings = [Embedding.from_matrix(p) for p in phis]  # dense, 3 advisors
    exact = abstract_solver(game, embeddings, averaging=averaging)
    exact.iterate(1)
    expected = [torch.zeros_like(r) for r in exact.regrets]
    expected_avg = [torch.zeros_like(r) for r in exact.average]
    for sample, prob in _paths(game):
        solver = abstract_solver(game, embeddings, averaging=averaging, sampling=1)
        solver.iteration = 1
        solver._sampled_iteration(sample)
        for r in range(3):
            expected[r] += prob * solver.regrets[r]
            expected_avg[r] += prob * solver.average[r]
    for r in range(3):
        slots = _player_slots(game, r, 0)
        assert torch.allclose(expected[r][slots], exact.regrets[r][slots], atol=1e-13, rtol=0)
        assert torch.allclose(expected_avg[r][slots], exact.average[r][slots], atol=1e-13,
                              rtol=0)


def test_sampling_every_board_equals_exact() -> None:
    game = n211.build_game(ONE_SUIT, dtype=torch.float64)
    for algo in ("cfr", "cfr+"):
        exact = PublicTreeCFR(game, algo, dtype=torch.float64)
        every = PublicTreeCFR(game, algo, dtype=torch.float64, sampling=0)
        exact.iterate(3)
        every.iterate(3)
        for a, b in zip(exact.average_policy(), every.average_policy()):
            assert torch.allclose(a, b, atol=1e-12, rtol=0)
        for a, b in zip(exact.regrets, every.regrets):
            assert torch.allclose(a, b, atol=1e-12, rtol=0)
        # the sampled path runs on cells: compare it with the exact sweep over cells (the
        # per-class sweep differs by rounding, and ties tip, see test_numeral211_class_storage)
        abstract_exact = abstract_solver(game, lossless_embeddings(game), algo=algo,
                                         storage="cells")
        abstract_every = abstract_solver(game, lossless_embeddings(game), algo=algo, sampling=0)
        abstract_exact.iterate(3)
        abstract_every.iterate(3)
        for a, b in zip(abstract_exact.average_policy(), abstract_every.average_policy()):
            assert torch.allclose(a, b, atol=1e-12, rtol=0)


def test_seeds_reproduce_bitwise(game: n211.Numeral211PublicGame) -> None:
    def run(cls: str, seed: int, iterations: int = 6) -> list[torch.Tensor]:
        sampling = BoardSampling(1, seed)
        if cls == "full":
            solver = PublicTreeCFR(game, "cfr", dtype=torch.float64, sampling=sampling)
        else:
            solver = abstract_solver(game, lossless_embeddings(game), sampling=sampling)
        solver.iterate(iterations)
        return solver.regrets + solver.average

    for cls in ("full", "abstract"):
        a, b, c = run(cls, 5), run(cls, 5), run(cls, 6)
        assert all(torch.equal(x, y) for x, y in zip(a, b))
        assert not all(torch.equal(x, y) for x, y in zip(a, c))
    g1, g2 = torch.Generator(), torch.Generator()
    g1.manual_seed(9)
    g2.manual_seed(9)
    s1, s2 = sample_boards(game, 3, g1), sample_boards(game, 3, g2)
    assert all(torch.equal(x, y) for x, y in zip(s1.boards, s2.boards))
    assert s1.sizes == [1, 3, 9]


def test_sampled_cfr_converges(game: n211.Numeral211PublicGame) -> None:
    solver = PublicTreeCFR(game, "cfr", dtype=torch.float64, sampling=BoardSampling(1, 0))
    solver.iterate(10)
    early = n211.exploitability(game, solver.average_policy()).exploitability
    solver.iterate(190)
    late = n211.exploitability(game, solver.average_policy()).exploitability
    assert late < 0.5 * early


def test_bad_sampling_settings(game: n211.Numeral211PublicGame) -> None:
    with pytest.raises(TensorCFRError):
        PublicTreeCFR(game, "dcfr", sampling=1)
    with pytest.raises(TensorCFRError):
        PublicTreeCFR(game, "cfr", sampling=-1)
    with pytest.raises(TensorCFRError):
        sample_boards(game, 0, torch.Generator())


def test_cli_sampled_solve(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def cli(a: list[str]) -> tuple[int, str, str]:
        return run_cli(a, capsys, monkeypatch)

    args = ["numeral211", "solve", "--ranks", "9TA", "--suits", "2", "--max-bets", "2,2,2",
            "--algo", "cfr", "-n", "6", "--sample-boards", "1", "--seed", "3", "--json"]
    code, out, _ = cli(args + ["--save", str(tmp_path / "ck.npz")])
    assert code == 0, out
    data = json.loads(out)
    assert data["sampling"] == {"mode": "public chance sampling", "boards_per_parent": 1,
                                "seed": 3}
    again = json.loads(cli(args)[1])
    assert again["exploitability"] == data["exploitability"]
    # a checkpoint made with sampling refuses an exact resume
    code, _, err = cli(["numeral211", "solve", "--ranks", "9TA", "--suits", "2",
                            "--max-bets", "2,2,2", "--algo", "cfr", "-n", "8",
                            "--resume", str(tmp_path / "ck.npz")])
    assert code == 2 and "sampling" in err
    exact = json.loads(cli(args[:-5] + ["--json"])[1])
    assert exact["sampling"] == {"mode": "exact full sweeps"}
    code, _, err = cli(args[:-1] + ["--sample-boards", "-1"])
    assert code == 2
