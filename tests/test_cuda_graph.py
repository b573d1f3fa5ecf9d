"""``cuda_graph=True`` on a CUDA device: the captured iteration gives the regrets and
policies of the same solver without the graph (skipped without CUDA; the CPU checks of
the graph-ready iteration are in tests/test_core_static.py)."""

from __future__ import annotations

import pytest
import torch

from tensorcfr.core.solver import TensorCFRSolver
from tensorcfr.games.openspiel import flatten_game

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "dcfr", "pcfr+"])
@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "leduc_poker"])
def test_cuda_graph_gives_the_eager_regrets(game: str, algo: str) -> None:
    tree = flatten_game(game)
    graphed = TensorCFRSolver(tree, algo=algo, device="cuda", cuda_graph=True)
    eager = TensorCFRSolver(tree, algo=algo, device="cuda")
    graphed.iterate(12)
    eager.iterate(12)
    assert graphed._graph is not None  # captured at iteration 2, replayed since
    for name, tensor in graphed.state_tensors().items():
        # scatter_add_ on CUDA adds with atomics, in no fixed order: equal to rounding
        torch.testing.assert_close(tensor, eager.state_tensors()[name], rtol=1e-9,
                                   atol=1e-12, msg=name)
    torch.testing.assert_close(graphed.average_policy(), eager.average_policy(), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("algo", ["cfr", "dcfr", "pcfr+"])
@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "liars_dice(dice_sides=3)",
                                  "nim(pile_sizes=1;2;3)"])
def test_cuda_graph_simultaneous_and_other_shapes(game: str, algo: str) -> None:
    # simultaneous updates (one regret update for all players), no chance (nim), a
    # gathered last level (liars_dice): the graph against the eager solver
    tree = flatten_game(game)
    for alternating in (True, False):
        graphed = TensorCFRSolver(tree, algo=algo, alternating=alternating, device="cuda",
                                  cuda_graph=True)
        eager = TensorCFRSolver(tree, algo=algo, alternating=alternating, device="cuda")
        graphed.iterate(10)
        eager.iterate(10)
        for name, tensor in graphed.state_tensors().items():
            torch.testing.assert_close(tensor, eager.state_tensors()[name], rtol=1e-9,
                                       atol=1e-12, msg=f"{name} alternating={alternating}")


class _LevelGraphSolver(TensorCFRSolver):
    fused_static_passes = False


def test_cuda_graph_fused_passes_equal_the_level_by_level_graph() -> None:
    tree = flatten_game("leduc_poker")
    fused = TensorCFRSolver(tree, device="cuda", cuda_graph=True)
    levels = _LevelGraphSolver(tree, device="cuda", cuda_graph=True)
    assert fused._static_passes is not None and levels._static_passes is None
    fused.iterate(12)
    levels.iterate(12)
    for name, tensor in fused.state_tensors().items():
        torch.testing.assert_close(tensor, levels.state_tensors()[name], rtol=1e-9,
                                   atol=1e-12, msg=name)


class _StreamsGraphSolver(TensorCFRSolver):
    static_streams = True


@pytest.mark.parametrize("game", ["leduc_poker", "kuhn_poker(players=3)"])
def test_cuda_graph_with_a_side_stream_gives_the_eager_regrets(game: str) -> None:
    # each player's forward pass on a second stream, beside the next backward pass
    tree = flatten_game(game)
    graphed = _StreamsGraphSolver(tree, algo="dcfr", device="cuda", cuda_graph=True)
    eager = TensorCFRSolver(tree, algo="dcfr", device="cuda")
    assert graphed._static_passes.side_stream is not None
    graphed.iterate(12)
    eager.iterate(12)
    for name, tensor in graphed.state_tensors().items():
        torch.testing.assert_close(tensor, eager.state_tensors()[name], rtol=1e-9,
                                   atol=1e-12, msg=name)


def test_cuda_graph_resume_and_checkpoint_state() -> None:
    tree = flatten_game("leduc_poker")
    straight = TensorCFRSolver(tree, algo="cfr+", device="cuda", cuda_graph=True)
    straight.iterate(8)
    first = TensorCFRSolver(tree, algo="cfr+", device="cuda", cuda_graph=True)
    first.iterate(5)
    first.load_state_tensors(straight.state_tensors(), straight.iteration)  # in place
    first.iterate(3)
    straight.iterate(3)
    for name, tensor in straight.state_tensors().items():
        torch.testing.assert_close(tensor, first.state_tensors()[name], rtol=1e-9,
                                   atol=1e-12, msg=name)
