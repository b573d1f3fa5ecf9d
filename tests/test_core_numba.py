"""The compiled CPU passes (tensorcfr.core.numba_passes) give bitwise the torch passes'
results: every variant, float64 and float32, two and three players, a mixed level."""

from __future__ import annotations

import pytest
import torch

from tensorcfr.core import numba_passes
from tensorcfr.core.cfr import TensorCFRSolver
from tensorcfr.core.tree import LevelTree
from tensorcfr.games.openspiel import flatten_game

pytestmark = pytest.mark.skipif(not numba_passes.AVAILABLE, reason="numba not importable")


class _NumbaSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = 0


class _TorchSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = None


@pytest.fixture(scope="module")
def trees() -> dict[str, LevelTree]:
    games = ("kuhn_poker(players=3)", "leduc_poker", "goofspiel(num_cards=3,imp_info=True)")
    return {g: flatten_game(g) for g in games}


def _assert_same(fast: TensorCFRSolver, slow: TensorCFRSolver) -> None:
    for name, tensor in fast.state_tensors().items():
        assert torch.equal(tensor, slow.state_tensors()[name]), name
    assert torch.equal(fast.average_policy(), slow.average_policy())


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "leduc_poker",
                                  "goofspiel(num_cards=3,imp_info=True)"])
def test_numba_passes_are_bitwise_the_torch_passes(trees: dict[str, LevelTree], game: str,
                                                   algo: str) -> None:
    iterations = 5 if game == "leduc_poker" else 12
    fast = _NumbaSolver(trees[game], algo=algo)
    slow = _TorchSolver(trees[game], algo=algo)
    assert fast.uses_numba and not slow.uses_numba
    fast.iterate(iterations)
    slow.iterate(iterations)
    _assert_same(fast, slow)


def test_numba_passes_float32_and_resume(trees: dict[str, LevelTree]) -> None:
    tree = trees["leduc_poker"]
    fast = _NumbaSolver(tree, algo="dcfr", dtype="float32")
    slow = _TorchSolver(tree, algo="dcfr", dtype="float32")
    fast.iterate(4)
    slow.iterate(4)
    _assert_same(fast, slow)
    resumed = _NumbaSolver(tree, algo="dcfr", dtype="float32")
    resumed.load_state_tensors(fast.state_tensors(), fast.iteration)
    resumed.iterate(3)
    slow.iterate(3)
    _assert_same(resumed, slow)


def test_numba_only_where_it_applies(trees: dict[str, LevelTree]) -> None:
    tree = trees["leduc_poker"]
    assert not TensorCFRSolver(tree).uses_numba  # 9,457 nodes: below NUMBA_MIN_NODES
    assert not _NumbaSolver(tree, alternating=False).uses_numba
    assert _NumbaSolver(tree).uses_numba
