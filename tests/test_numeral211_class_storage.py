"""Per-class storage (:class:`ClassStorageCFR` over :class:`Numeral211ClassGame`) against the
per-cell solver on variants where both fit: the same values, regrets and exploitabilities.

The solvers' iterates agree exactly only while no rounding-level tie occurs: a regret that is
0 in exact arithmetic comes out as +-1e-17 in either layout (the sums run in another order)
and regret matching turns that into different pure strategies (docs/numeral211.md,
cross-checks).  So the passes are compared on one common strategy, and whole iterations for
the first iteration only.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorcfr.core.public_tree import public_exploitability, public_pass
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.game.config import GameConfig

pytestmark = pytest.mark.usefixtures("one_thread")

FOUR_SUITS = GameConfig(ranks="9TA", suits=4, max_bets=(2, 2, 2))
TWO_SUITS = GameConfig(ranks="89TA", suits=2, max_bets=(2, 2, 2))


def _at_representatives(game, r: int, cells: torch.Tensor) -> torch.Tensor:
    """Cell tensor [S, P, B, H] -> [S, P, C] (each class's representative cell)."""
    s, p = cells.shape[:2]
    return cells.reshape(s, p, -1).index_select(2, n211.class_game(game)._rep_cell[r])


@pytest.fixture(scope="module", params=[FOUR_SUITS, TWO_SUITS], ids=["4suits", "2suits"])
def game(request):
    return n211.build_game(request.param, dtype=torch.float64)


def test_class_sizes_cover_the_deals(game) -> None:
    """The preflop classes' sizes sum to the hands; every class has a representative."""
    cls = n211.class_game(game)
    assert float(cls.root_weights().sum()) == game.num_hands
    for r in range(3):
        assert cls.hands_per_round[r] == game.iso.class_table(r)[1]
        table = game.iso.class_table(r)[0].reshape(-1)
        reps = cls._rep_cell[r].numpy()
        assert (table[reps] == np.arange(len(reps))).all()


def test_exploitability_equals_cell_evaluation(game) -> None:
    """A random suit-symmetric policy: best responses and policy values over the classes
    equal the cell game's (float64, 1e-12)."""
    policy = n211.random_symmetric_policy(game, seed=5)
    cells = public_exploitability(game, policy)
    classes = n211.exploitability(game, policy)
    assert classes.best_response_values == pytest.approx(cells.best_response_values, abs=1e-12)
    assert classes.policy_values == pytest.approx(cells.policy_values, abs=1e-12)
    assert classes.exploitability == pytest.approx(cells.exploitability, abs=1e-12)


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "dcfr"])
def test_pass_updates_equal_cell_updates(game, algo: str) -> None:
    """One CFR pass per player under a common random suit-symmetric strategy: root values,
    regrets and cumulative strategies at every class equal the cell solver's at the class's
    representative cell (1e-12)."""
    cell_solver = n211.make_solver(game, algo, storage="cells")
    class_solver = n211.make_solver(game, algo, storage="classes")
    assert isinstance(class_solver, n211.ClassStorageCFR)
    policy = n211.random_symmetric_policy(game, seed=11)
    for r in range(3):
        cell_solver.strategy[r].copy_(policy[r])
        class_solver.strategy[r].copy_(_at_representatives(game, r, policy[r]).unsqueeze(2))
    for solver in (cell_solver, class_solver):
        solver.iteration = 3
    for player in (0, 1):
        cell_root = public_pass(game, cell_solver.strategy, player, "cfr", solver=cell_solver)
        class_root = public_pass(class_solver.game, class_solver.strategy, player, "cfr",
                                 solver=class_solver)
        assert float((class_root * class_solver.game.root_weights()).sum()) == pytest.approx(
            float(cell_root.sum()), abs=1e-12)
    for r in range(3):
        for name in ("regrets", "average"):
            want = _at_representatives(game, r, getattr(cell_solver, name)[r])
            got = getattr(class_solver, name)[r][:, :, 0]
            assert torch.allclose(got, want, rtol=0, atol=1e-12), (name, r)


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "dcfr"])
def test_first_iteration_equals_cell_solver(game, algo: str) -> None:
    """A whole first iteration (uniform start): player 0's expanded regrets (player 1's pass
    already follows player 0's new strategy, where a rounding-level tie can tip) and the
    average policies' exploitabilities equal the cell solver's."""
    cell_solver = n211.make_solver(game, algo, storage="cells")
    class_solver = n211.make_solver(game, algo)
    cell_solver.iterate(1)
    class_solver.iterate(1)
    for r, (got, want) in enumerate(zip(n211.cell_regrets(class_solver),
                                        n211.cell_regrets(cell_solver))):
        valid = game.valid[r][None, None]
        tmpl = game.rounds[r]
        for j, (offset, actions) in enumerate(zip(tmpl.slot_offsets, tmpl.num_actions)):
            if tmpl.players[j] == 0:
                sl = slice(offset, offset + actions)
                assert torch.allclose(got[sl] * valid, want[sl] * valid, rtol=0,
                                      atol=1e-12), (r, j)
    a = n211.exploitability(game, cell_solver.average_policy()).exploitability
    b = n211.exploitability(game, class_solver.average_policy()).exploitability
    assert b == pytest.approx(a, abs=1e-12)
    c = n211.class_exploitability(class_solver.game, class_solver.average_class_policy())
    assert c.exploitability == pytest.approx(a, abs=1e-12)


def test_class_solver_converges_and_saves(tmp_path) -> None:
    """CFR+ with per-class storage converges, its full-game policy round-trips through a
    policy file, it needs less memory than the cell solver, and a checkpointed run resumes
    bitwise."""
    game = n211.build_game(FOUR_SUITS)
    solver = n211.make_solver(game, "cfr+")
    assert solver.estimated_memory_bytes < n211.make_solver(
        game, "cfr+", storage="cells").estimated_memory_bytes
    first = None
    for _ in range(4):
        solver.iterate(5)
        ex = n211.exploitability(game, solver.average_policy()).exploitability
        first = ex if first is None else first
    assert ex < first / 2
    path = tmp_path / "p.npz"
    n211.save_policy(path, game, solver.average_policy())
    _, loaded, _ = n211.load_policy(path)
    assert n211.exploitability(game, loaded).exploitability == pytest.approx(ex, abs=1e-6)

    straight = n211.make_solver(game, "cfr+")
    straight.iterate(6)
    part = n211.make_solver(game, "cfr+")
    part.iterate(3)
    ck = tmp_path / "ck.npz"
    n211.save_checkpoint(ck, part, game.config)
    resumed = n211.make_solver(game, "cfr+")
    n211.load_checkpoint(ck, resumed, game.config)
    resumed.iterate(3)
    for a, b in zip(straight.state_arrays().values(), resumed.state_arrays().values()):
        assert np.array_equal(a, b)


def test_unknown_storage_is_refused() -> None:
    game = n211.build_game(TWO_SUITS)
    with pytest.raises(TensorCFRError, match="storage"):
        n211.make_solver(game, "cfr+", storage="boards")


@pytest.mark.parametrize("averaging", ["reach", "uniform"])
def test_abstract_solver_over_classes_equals_cells(averaging: str) -> None:
    """Bucketed CFR (lossless buckets and a coarse 3-bucket turn) over the per-class game:
    player 0's advisor regrets and the average after one iteration equal the cell solver's
    (float64, 1e-12), and the exploitabilities of the average strategies agree."""
    from tensorcfr.abstraction.abstract_cfr import Embedding
    from tensorcfr.games.numeral211.solving.abstract_solve import (ClassStorageAbstractCFR,
                                                                   abstract_solver,
                                                                   lossless_embeddings)

    game = n211.build_game(FOUR_SUITS, dtype=torch.float64)
    coarse = lossless_embeddings(game)[:2] + [Embedding.from_labels(
        np.arange(game.iso.class_table(2)[1]) % 3)]
    for embeddings in (lossless_embeddings(game), coarse):
        cells = abstract_solver(game, embeddings, algo="cfr", averaging=averaging,
                                storage="cells")
        classes = abstract_solver(game, embeddings, algo="cfr", averaging=averaging)
        assert isinstance(classes, ClassStorageAbstractCFR)
        cells.iterate(1)
        classes.iterate(1)
        for r in range(3):
            for acting, sl in cells._node_slices(r):
                if acting == 0:
                    assert torch.allclose(classes.regrets[r][sl], cells.regrets[r][sl],
                                          rtol=0, atol=1e-12), r
        a = n211.exploitability(game, cells.average_policy()).exploitability
        assert classes.exploitability() == pytest.approx(a, abs=1e-12)
        assert n211.exploitability(game, classes.average_policy()).exploitability == \
            pytest.approx(a, abs=1e-12)


def test_showdown_layouts_agree_and_share_symmetric_card_lists(game) -> None:
    """The board-major showdown (transposed blocks, one per-card list per symmetry orbit,
    CSR lookups) equals the row-major sweep on random class reach (float64, 1e-12); with
    four suits some boards keep fewer distinct per-card lists than cards."""
    cls = n211.class_game(game)
    count = cls.hands_per_round[-1]
    opp = torch.rand((37, count), generator=torch.Generator().manual_seed(3),
                     dtype=torch.float64)
    board_major = cls._showdown_by_boards(opp)
    row_major = cls._win_minus_lose(opp)
    assert torch.allclose(board_major, row_major, rtol=0, atol=1e-12)
    lists, list_of = cls._unique_card_lists()
    n = game.config.num_cards
    assert all(len(x) <= n for x in lists)
    assert (list_of < np.array([len(x) for x in lists])[:, None]).all()
    if game.config.suits == 4:
        assert min(len(x) for x in lists) < n


def test_dense_board_matrices_equal_the_sweeps(game) -> None:
    """The per-board matrix products (showdowns: one [k, k] matrix per board; folds: the
    rank N + 1 factor pair) equal the sort sweep and the batched per-card fold sums on
    random class reach (float64, 1e-12), in every round; the memory they report is what
    they hold."""
    cls = n211.class_game(game)
    assert cls._use_dense()
    generator = torch.Generator().manual_seed(11)
    count = cls.hands_per_round[-1]
    opp = torch.rand((23, count), generator=generator, dtype=torch.float64)
    assert torch.allclose(cls._dense_showdown(opp), cls._win_minus_lose(opp),
                          rtol=0, atol=1e-12)
    for r in range(3):
        reach = torch.rand((7, 1, cls.hands_per_round[r]), generator=generator,
                           dtype=torch.float64)
        assert torch.allclose(cls._dense_compatible_sum(r, reach.reshape(7, -1)),
                              cls._compatible_sum(r, reach), rtol=0, atol=1e-12)
    held = sum(m.numel() for *_, m in cls._dense["showdowns"])
    held += sum(inc.numel() + pick.numel() for rnd in cls._dense["folds"]
                for *_, inc, pick in rnd)
    assert cls.dense_bytes(8) == held * 8


def test_batched_showdown_equals_the_sweep(game) -> None:
    """The GPU form (:attr:`batched`: every board's showdown matrix zero-padded into one
    ``bmm``) equals the sort sweep on random class reach (float64, 1e-12); it holds the
    padded blocks it reports; it is the default off the CPU only."""
    from tensorcfr.games.numeral211.game.class_game import Numeral211ClassGame

    cls = Numeral211ClassGame(game)
    assert not cls.batched  # the game is on the CPU
    cls.batched = True
    assert cls._use_dense() and set(cls._dense) == {"padded"}  # folds: the batched sums
    count = cls.hands_per_round[-1]
    opp = torch.rand((19, count), generator=torch.Generator().manual_seed(5),
                     dtype=torch.float64)
    assert torch.allclose(cls._batched_showdown(opp), cls._win_minus_lose(opp),
                          rtol=0, atol=1e-12)
    assert cls.dense_bytes(8) == cls._dense["padded"]["matrices"].numel() * 8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_class_solver_matches_cpu(game) -> None:  # pragma: no cover - no GPU in CI
    """On a GPU the class game runs the batched products by default; one CFR+ iteration
    there gives the CPU's player-0 regrets and the uniform profile's exploitability
    (float64; later iterations may break rounding-level regret ties differently)."""
    gpu_game = n211.build_game(game.config, dtype=torch.float64, device="cuda")
    assert n211.class_game(gpu_game).batched
    solvers = []
    for g in (game, gpu_game):
        solver = n211.ClassStorageCFR(g, "cfr+")
        solver.iterate(1)
        solvers.append(solver)
    cpu, gpu = solvers
    for r in range(3):
        for j, sl in enumerate(cpu._node_slices(r)):
            if game.rounds[r].players[j] == 0:
                assert torch.allclose(gpu.regrets[r][sl].cpu(), cpu.regrets[r][sl],
                                      rtol=1e-9, atol=1e-9), (r, j)
    values = [n211.class_exploitability(s.game, s.average_class_policy()).exploitability
              for s in solvers]
    assert values[1] == pytest.approx(values[0], rel=1e-9)


def test_dense_and_sweep_solvers_agree_and_large_matrices_fall_back(game) -> None:
    """One CFR+ iteration with the dense matrices (per board, and batched) equals one with
    the sweeps (player 0's
    regrets, float64, 1e-12: player 1's pass already plays player 0's new strategy, where
    rounding-level regrets break ties differently, see the module docstring); a memory cap
    below the matrices' size falls back to the sweeps."""
    from tensorcfr.games.numeral211.game.class_game import Numeral211ClassGame

    results = []
    for dense, cap, batched in ((True, None, False), (False, None, False), (True, 0, False),
                                (True, None, True)):
        cls = Numeral211ClassGame(game)
        cls.dense, cls.batched = dense, batched
        if cap is not None:
            cls.dense_max_bytes = cap
        solver = n211.ClassStorageCFR(game, "cfr+")
        solver.game = cls  # the per-class view under test (same tables as the cached one)
        solver.iterate(1)
        assert cls._use_dense() == (dense and cap is None)
        assert ("padded" in (cls._dense or {})) == (batched and dense and cap is None)
        results.append(solver)
    for other in results[1:]:
        for r in range(3):
            for j, sl in enumerate(other._node_slices(r)):
                if game.rounds[r].players[j] == 0:
                    assert torch.allclose(results[0].regrets[r][sl], other.regrets[r][sl],
                                          rtol=0, atol=1e-12), (r, j)
