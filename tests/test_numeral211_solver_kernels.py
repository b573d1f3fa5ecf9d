"""The compiled node updates of :class:`ClassStorageCFR` (``regret_kernel``) against the torch
rules they replace: bitwise the same regrets, averages, value scales and strategies.

``ClassStorageCFR.compiled`` (default on, CPU, numba) runs the fused kernel; with it off the
solver runs exactly the torch code of ``public_pass`` / ``regret_matching_dense``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorcfr.core.public_tree import regret_matching_dense
from tensorcfr.core.regret import regret_tolerance
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.solving import regret_kernel
from tensorcfr.games.numeral211.solving import solver as n211

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not regret_kernel.AVAILABLE, reason="numba not importable")]

SMALL = GameConfig(ranks="9TA", suits=4, max_bets=(2, 2, 2))


def _tables(solver: n211.ClassStorageCFR) -> list[torch.Tensor]:
    return [*solver.regrets, *solver.average, *solver.strategy, *solver.regret_scale]


@pytest.mark.parametrize("algo,dtype", [("cfr+", torch.float32), ("cfr", torch.float64),
                                        ("cfr+", torch.float64), ("dcfr", torch.float32)])
def test_compiled_iterations_equal_the_torch_rules_bitwise(algo: str, dtype) -> None:
    """Three iterations with the kernels equal three with the torch rules bit for bit
    (float32 and float64; dcfr runs the torch rules either way: the hook declines)."""
    game = n211.build_game(SMALL, dtype=dtype)
    torch_rules = n211.ClassStorageCFR(game, algo)
    torch_rules.compiled = False
    compiled = n211.ClassStorageCFR(game, algo)
    for _ in range(3):
        torch_rules.iterate(1)
        compiled.iterate(1)
        for x, y in zip(_tables(torch_rules), _tables(compiled)):
            assert torch.equal(x, y)
    ex = [n211.class_exploitability(s.game, s.average_class_policy()).exploitability
          for s in (torch_rules, compiled)]
    assert ex[0] == ex[1]


def test_hook_declines_off_the_kernel_path() -> None:
    """The pass keeps the torch rules for dcfr / lcfr and when ``compiled`` is off."""
    game = n211.build_game(SMALL)
    for algo, compiled, expected in (("dcfr", True, False), ("lcfr", True, False),
                                     ("cfr+", False, False)):
        solver = n211.ClassStorageCFR(game, algo)
        solver.compiled = compiled
        assert solver.fused_node_update(0, 0, [], game, game) is expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_regret_matching_kernel_equals_the_dense_rule(dtype) -> None:
    """Regret matching on regrets with zeros, rounding-level values, ties and floored rows,
    2 and 3 actions: bitwise the strategy of ``regret_matching_dense``."""
    generator = torch.Generator().manual_seed(7)
    for actions in (2, 3):
        regrets = torch.randn((actions, 5, 1, 1100), generator=generator, dtype=dtype)
        regrets[..., :200] = 0
        regrets[..., 200:400] *= 1e-7
        regrets[0, ..., 400:500] = regrets[1, ..., 400:500]
        regrets[..., 500:700] = regrets[..., 500:700].clamp_min(0)
        scale = torch.rand((5, 1, 1), generator=generator, dtype=dtype) * 3
        expected = regret_matching_dense(regrets, value_scale=scale)
        out = torch.empty_like(regrets)
        kind = regrets.numpy().dtype.type
        regret_kernel.regret_matching(regrets.numpy().reshape(actions, 5, -1),
                                      scale.numpy().reshape(-1),
                                      kind(regret_tolerance(dtype)), kind(1.0 / actions),
                                      out.numpy().reshape(actions, 5, -1))
        assert torch.equal(out, expected)
        assert np.allclose(out.sum(0).numpy(), 1.0)


def test_a_pass_on_its_own_leaves_the_strategy_to_the_caller() -> None:
    """``public_pass`` called directly (not through ``iterate``) updates regrets, averages
    and value scales as the torch rules do and leaves the strategy unchanged, as they do."""
    from tensorcfr.core.public_tree import public_pass

    game = n211.build_game(SMALL, dtype=torch.float64)
    solvers = [n211.ClassStorageCFR(game, "cfr+") for _ in range(2)]
    solvers[0].compiled = False
    before = [s.clone() for s in solvers[1].strategy]
    for solver in solvers:
        solver.iteration = 1
        public_pass(solver.game, solver.strategy, 0, "cfr", solver=solver)
    for x, y in zip(_tables(solvers[0]), _tables(solvers[1])):
        assert torch.equal(x, y)
    assert all(torch.equal(x, y) for x, y in zip(before, solvers[1].strategy))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_solver_keeps_the_torch_rules() -> None:  # pragma: no cover - no GPU in CI
    """On a GPU the hook declines (the kernels are CPU-only) and one iteration gives the
    CPU's player-0 regrets (float64; player 1's pass already plays player 0's new strategy,
    where rounding-level regrets may break ties differently)."""
    cpu_game = n211.build_game(SMALL, dtype=torch.float64)
    gpu_game = n211.build_game(SMALL, dtype=torch.float64, device="cuda")
    gpu = n211.ClassStorageCFR(gpu_game, "cfr+")
    assert gpu.fused_node_update(0, 0, [], gpu_game, gpu_game) is False
    cpu = n211.ClassStorageCFR(cpu_game, "cfr+")
    for solver in (cpu, gpu):
        solver.iterate(1)
    for r in range(3):
        for j, sl in enumerate(cpu._node_slices(r)):
            if cpu_game.rounds[r].players[j] == 0:
                assert torch.allclose(gpu.regrets[r][sl].cpu(), cpu.regrets[r][sl],
                                      rtol=1e-9, atol=1e-9), (r, j)
