"""The graph-ready iteration (``cuda_graph=True`` captures it as a CUDA graph) checked on
the CPU: the same results as the usual torch passes, the same operations on the same
shapes at every iteration, and no host synchronisation inside an iteration."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from _cli_helpers import run_cli
from tensorcfr.core.solver import TensorCFRSolver
from tensorcfr.core.tree import LevelTree
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.openspiel import flatten_game


class _StaticSolver(TensorCFRSolver):
    static_iterations = True


class _TorchSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = None


# Operations that read a tensor's values on the host (a device synchronisation) or whose
# output shape depends on the values: neither may run inside a captured iteration.
_SYNCING_OPS = {"_local_scalar_dense", "item", "nonzero", "nonzero_static", "masked_select",
                "unique", "_unique", "_unique2", "unique_consecutive", "unique_dim",
                "repeat_interleave", "argwhere", "is_nonzero", "equal", "allclose"}


class _Recorder(TorchDispatchMode):
    """Every aten call with its output shapes; fails on host-synchronising calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        name = func.overloadpacket.__name__
        if name in _SYNCING_OPS:
            raise AssertionError(f"host synchronisation inside an iteration: aten.{name}")
        out = func(*args, **(kwargs or {}))
        outputs = out if isinstance(out, (tuple, list)) else (out,)
        self.calls.append((str(func), tuple(tuple(o.shape) for o in outputs
                                            if isinstance(o, torch.Tensor))))
        return out


@pytest.fixture(scope="module")
def trees() -> dict[str, LevelTree]:
    return {g: flatten_game(g) for g in ("kuhn_poker(players=3)", "leduc_poker")}


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
@pytest.mark.parametrize("alternating", [True, False])
def test_static_iteration_is_bitwise_the_torch_path(trees: dict[str, LevelTree], algo: str,
                                                    alternating: bool) -> None:
    for game, iterations in (("kuhn_poker(players=3)", 9), ("leduc_poker", 4)):
        static = _StaticSolver(trees[game], algo=algo, alternating=alternating)
        eager = _TorchSolver(trees[game], algo=algo, alternating=alternating)
        static.iterate(iterations)
        eager.iterate(iterations)
        for name, tensor in static.state_tensors().items():
            assert torch.equal(tensor, eager.state_tensors()[name]), (game, name)


@pytest.mark.parametrize("algo", ["cfr", "dcfr", "pcfr+"])
def test_static_shapes_and_no_host_sync(trees: dict[str, LevelTree], algo: str) -> None:
    solver = _StaticSolver(trees["leduc_poker"], algo=algo)
    solver.iterate(1)
    runs = []
    real_numpy = torch.Tensor.numpy

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("tensor read on the host inside an iteration")

    for _ in range(3):
        with pytest.MonkeyPatch.context() as patch:
            for method in ("numpy", "tolist", "cpu", "item", "__bool__", "__float__",
                           "__int__", "__index__"):
                patch.setattr(torch.Tensor, method, refuse)
            # The iteration's numbers go to the device before the iteration (the one
            # host-to-device copy, outside what the graph captures), then the passes run.
            solver.iteration += 1
            solver._load_step_scalars()
            with _Recorder() as recorder:
                solver._torch_iteration()
        runs.append(recorder.calls)
    assert torch.Tensor.numpy is real_numpy
    assert runs[0], "nothing recorded"
    assert runs[0] == runs[1] == runs[2]  # the same kernels on the same shapes


def test_cuda_graph_needs_cuda(trees: dict[str, LevelTree]) -> None:
    with pytest.raises(TensorCFRError, match="cuda_graph needs a CUDA device"):
        TensorCFRSolver(trees["leduc_poker"], cuda_graph=True)


def test_cli_cuda_graph_refused_off_cuda(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_cli(["solve", "kuhn_poker", "--iterations", "2", "--cuda-graph"],
                             capsys, monkeypatch)
    assert code == 2 and out == ""
    assert "error: --cuda-graph needs a CUDA --device, not 'cpu'" in " ".join(err.split())
    assert "Traceback" not in err
