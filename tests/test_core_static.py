"""The graph-ready iteration (``cuda_graph=True`` captures it as a CUDA graph) checked on
the CPU: the same results as the usual torch passes, the same operations on the same
shapes at every iteration, no host synchronisation inside an iteration, and few
operators (each is a kernel in the graph: core/static_passes.py)."""

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


class _LevelStaticSolver(_StaticSolver):
    fused_static_passes = False  # the first graph-ready path: the torch passes level by level


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

    @property
    def kernels(self) -> int:
        """Operators that run a kernel (views run none)."""
        return sum(1 for name, _ in self.calls
                   if not _op_overload(name).is_view)


def _op_overload(name: str) -> torch._ops.OpOverload:
    packet, _, overload = name.removeprefix("aten.").partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def _static_kernels(solver: TensorCFRSolver) -> int:
    """Operators of one graph-ready iteration (what a CUDA graph of it replays), after
    the iteration's numbers are loaded."""
    solver.iteration += 1
    solver._load_step_scalars()
    with _Recorder() as recorder:
        _run_static(solver)
    return recorder.kernels


def _run_static(solver: TensorCFRSolver) -> None:
    """The passes of one static iteration (without loading its numbers)."""
    if solver._static_passes is not None:
        solver._static_passes.iteration()
    else:
        solver._torch_iteration()


_GAMES = ("kuhn_poker(players=3)", "leduc_poker", "liars_dice(dice_sides=3)",
          "nim(pile_sizes=1;2;3)")


@pytest.fixture(scope="module")
def trees() -> dict[str, LevelTree]:
    return {g: flatten_game(g) for g in _GAMES}


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
@pytest.mark.parametrize("alternating", [True, False])
def test_static_iteration_is_bitwise_the_torch_path(trees: dict[str, LevelTree], algo: str,
                                                    alternating: bool) -> None:
    for game, iterations in (("kuhn_poker(players=3)", 9), ("leduc_poker", 4),
                             ("liars_dice(dice_sides=3)", 4), ("nim(pile_sizes=1;2;3)", 4)):
        static = _StaticSolver(trees[game], algo=algo, alternating=alternating)
        eager = _TorchSolver(trees[game], algo=algo, alternating=alternating)
        static.iterate(iterations)
        eager.iterate(iterations)
        for name, tensor in static.state_tensors().items():
            assert torch.equal(tensor, eager.state_tensors()[name]), (game, name)


@pytest.mark.parametrize("algo", ["cfr", "dcfr"])
def test_level_by_level_static_path_is_bitwise_the_torch_path(trees: dict[str, LevelTree],
                                                              algo: str) -> None:
    static = _LevelStaticSolver(trees["leduc_poker"], algo=algo)
    eager = _TorchSolver(trees["leduc_poker"], algo=algo)
    assert static._static_passes is None
    static.iterate(4)
    eager.iterate(4)
    for name, tensor in static.state_tensors().items():
        assert torch.equal(tensor, eager.state_tensors()[name]), name


@pytest.mark.parametrize("alternating", [True, False])
def test_static_restore_resumes_bitwise(trees: dict[str, LevelTree], alternating: bool) -> None:
    straight = _StaticSolver(trees["leduc_poker"], algo="dcfr", alternating=alternating)
    straight.iterate(5)
    restored = _StaticSolver(trees["leduc_poker"], algo="dcfr", alternating=alternating)
    restored.iterate(2)
    restored.load_state_tensors(straight.state_tensors(), straight.iteration)  # in place
    straight.iterate(3)
    restored.iterate(3)
    for name, tensor in straight.state_tensors().items():
        assert torch.equal(tensor, restored.state_tensors()[name]), name


# Operators (kernels in a CUDA graph) per graph-ready iteration, vanilla CFR, alternating
# updates: (at most, and at least this many times fewer than the level-by-level path).
# Measured: kuhn_poker(players=3) 106 against 155, leduc_poker 108 against 285,
# liars_dice(dice_sides=3) 85 against 162, nim 77 against 168; on the games
# (benchmarks/bench_engine_gpu.py --cpu-only) liars_dice 121 against 282, tic_tac_toe 95
# against 256.  Three players gain less: each has its own regret matching (11 operators).
_KERNEL_BOUNDS = {"kuhn_poker(players=3)": (110, 1.4), "leduc_poker": (112, 2.5),
                  "liars_dice(dice_sides=3)": (88, 1.8), "nim(pile_sizes=1;2;3)": (80, 2.0)}


@pytest.mark.parametrize("game", _GAMES)
def test_static_iteration_has_few_operators(trees: dict[str, LevelTree], game: str) -> None:
    fused, levels = _StaticSolver(trees[game]), _LevelStaticSolver(trees[game])
    fused.iterate(1)
    levels.iterate(1)
    kernels, level_kernels = _static_kernels(fused), _static_kernels(levels)
    bound, fewer = _KERNEL_BOUNDS[game]
    assert kernels <= bound, (kernels, level_kernels)
    assert kernels * fewer <= level_kernels, (kernels, level_kernels)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("algo", ["cfr", "dcfr", "pcfr+"])
def test_static_shapes_and_no_host_sync(trees: dict[str, LevelTree], algo: str,
                                        fused: bool) -> None:
    solver = (_StaticSolver if fused else _LevelStaticSolver)(trees["leduc_poker"], algo=algo)
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
                _run_static(solver)
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
