"""The memory-lean passes (issue 30, item 2): ``passes="lean"`` keeps no per-node state
between iterations and gives the torch passes' results bit for bit (every variant, games
with chance, three and four players, imperfect recall, a last level of terminals), through
checkpoints both ways, from the command line too."""

from __future__ import annotations

import json
import tracemalloc

import pytest
import torch
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.core.solver import TensorCFRSolver
from tensorcfr.core.tree import LevelTree
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.openspiel import flatten_game

_GAMES = ("kuhn_poker", "leduc_poker", "kuhn_poker(players=3)", "kuhn_poker(players=4)",
          "liars_dice(dice_sides=3)", "goofspiel(num_cards=4,points_order=descending)",
          "battleship(board_width=2,board_height=2,ship_sizes=[2],ship_values=[1],"
          "num_shots=3)")


@pytest.fixture(scope="module")
def trees() -> dict[str, LevelTree]:
    return {g: flatten_game(g) for g in _GAMES}


class _FinePieces(TensorCFRSolver):
    lean_chunk = 5  # every long level cut in pieces (mixed levels across piece borders)


def _assert_same(a: TensorCFRSolver, b: TensorCFRSolver) -> None:
    for name, tensor in a.state_tensors().items():
        assert torch.equal(tensor, b.state_tensors()[name]), name
    assert torch.equal(a.average_policy(), b.average_policy())


@pytest.mark.parametrize("game", _GAMES)
@pytest.mark.parametrize("algo", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
def test_lean_passes_are_bitwise_the_torch_passes(trees: dict[str, LevelTree], game: str,
                                                  algo: str) -> None:
    tree = trees[game]
    lean = TensorCFRSolver(tree, algo=algo, passes="lean")
    torch_passes = TensorCFRSolver(tree, algo=algo, passes="torch")
    assert lean.passes_used == "lean" and torch_passes.passes_used == "torch"
    lean.iterate(4)
    torch_passes.iterate(4)
    _assert_same(lean, torch_passes)


@pytest.mark.parametrize("game", ["leduc_poker", "liars_dice(dice_sides=3)",
                                  "kuhn_poker(players=3)"])
def test_lean_pieces_do_not_change_the_sums(trees: dict[str, LevelTree], game: str) -> None:
    """Levels cut in pieces of 5 nodes (cut where the parent changes): the same sums in
    the same order as whole levels."""
    fine = _FinePieces(trees[game], algo="dcfr", passes="lean")
    assert any(len(level.pieces) > 1 for level in fine._lean_passes.levels)
    whole = TensorCFRSolver(trees[game], algo="dcfr", passes="lean")
    fine.iterate(3)
    whole.iterate(3)
    _assert_same(fine, whole)


def test_lean_solver_keeps_no_node_buffers(trees: dict[str, LevelTree]) -> None:
    """No reach, values or edge-probability buffer, no flat per-node array, no uniform
    strategy kept; what the torch passes read is built on demand and then agrees."""
    tree = trees["leduc_poker"]
    lean = TensorCFRSolver(tree, algo="cfr+", passes="lean")
    lean.iterate(3)
    for name in ("_reach", "_values", "_edge_prob", "_update_views", "_scratch",
                 "_own_reach_sums", "_infoset_totals"):
        assert name not in lean.__dict__, name
    for name in ("edge_prob", "parent_local", "player_levels", "terminal_index"):
        assert name not in lean._flat.__dict__, name
    assert lean._flat._uniform is None
    reference = TensorCFRSolver(tree, algo="cfr+", passes="torch")
    reference.iterate(3)
    assert torch.equal(lean._reach, reference._reach)  # rebuilt from the current strategy
    assert len(lean._own_reach_sums) == tree.num_players


def test_lean_iteration_working_set_is_small() -> None:
    """The lean passes' working set during an iteration (numpy's allocations, traced):
    below two float64 rows over the nodes plus six per action slot (regret matching's
    temporaries), where the torch passes keep five float64 rows per node throughout."""
    tree = flatten_game("liars_dice(dice_sides=4)")
    lean = TensorCFRSolver(tree, algo="cfr", passes="lean")
    lean.iterate(1)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        lean.iterate(2)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert 0 < peak < 2 * 8 * tree.num_nodes + 6 * 8 * tree.num_slots, (peak, tree.num_nodes)


def test_lean_checkpoints_resume_either_way(tmp_path, trees: dict[str, LevelTree]) -> None:
    tree = trees["liars_dice(dice_sides=3)"]
    lean = TensorCFRSolver(tree, algo="pcfr+", passes="lean")
    reference = TensorCFRSolver(tree, algo="pcfr+")
    lean.iterate(3)
    reference.iterate(3)
    lean.save(str(tmp_path / "lean.npz"))
    reference.save(str(tmp_path / "auto.npz"))
    from tensorcfr.core.solver import load_checkpoint

    from tensorcfr.games.openspiel.solvers import TensorCFRSolver as OpenSpielSolver

    from_lean = load_checkpoint(str(tmp_path / "lean.npz"), tree, passes="torch")
    to_lean = load_checkpoint(str(tmp_path / "auto.npz"), tree, passes="lean")
    lean_again = OpenSpielSolver.load(str(tmp_path / "lean.npz"), tree, passes="lean")
    assert to_lean.passes_used == "lean" and lean_again.passes_used == "lean"
    for solver in (from_lean, to_lean, lean_again, reference):
        solver.iterate(2)
    for solver in (from_lean, to_lean, lean_again):
        _assert_same(solver, reference)


@pytest.mark.parametrize("kwargs, message", [
    ({"passes": "fast"}, "passes must be one of auto, torch, lean"),
    ({"passes": "lean", "alternating": False}, "needs alternating updates"),
    ({"passes": "lean", "dtype": "float32"}, "computes in float64"),
    ({"passes": "lean", "device": "meta"}, "meta"),
])
def test_lean_refusals(trees: dict[str, LevelTree], kwargs: dict, message: str) -> None:
    with pytest.raises(TensorCFRError, match=message):
        TensorCFRSolver(trees["kuhn_poker"], **kwargs)


def test_lean_auto_dtype_is_float64(trees: dict[str, LevelTree]) -> None:
    solver = TensorCFRSolver(trees["kuhn_poker"], passes="lean", dtype="auto")
    assert solver.dtype == torch.float64


def test_cli_solve_with_lean_passes() -> None:
    runner = CliRunner()
    lean = runner.invoke(app, ["solve", "leduc_poker", "-n", "20", "--eval-every", "0",
                               "--passes", "lean", "--json"])
    assert lean.exit_code == 0, lean.output
    auto = runner.invoke(app, ["solve", "leduc_poker", "-n", "20", "--eval-every", "0",
                               "--json"])
    lean_summary, auto_summary = json.loads(lean.stdout), json.loads(auto.stdout)
    assert lean_summary["passes"] == "lean" and auto_summary["passes"] == "torch"
    assert lean_summary["exploitability"] == auto_summary["exploitability"]


@pytest.mark.parametrize("options, message", [
    (["--passes", "fast"], "--passes must be one of auto, torch, lean"),
    (["--passes", "lean", "--simultaneous"], "--passes lean needs alternating updates"),
    (["--passes", "lean", "--dtype", "float32"], "--passes lean computes in float64"),
    (["--passes", "lean", "--device", "cuda"], "--passes lean runs on the CPU"),
])
def test_cli_lean_refusals(options: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["solve", "kuhn_poker", *options])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_lean_passes_on_a_level_whose_parents_are_not_sorted() -> None:
    """A tree whose last level lists its nodes in reverse (parents not sorted: one piece,
    sums over the parents' whole range) and is kept on the tree's device as given: still
    the torch passes' results."""
    from tensorcfr.core.tree import Level

    tree = flatten_game("kuhn_poker")
    last = tree.levels[-1]
    assert bool((last.kind == -2).all()) and last.chance_edge_prob.numel() == 0
    order = torch.arange(last.num_nodes - 1, -1, -1)
    tree.levels[-1] = Level(last.parent[order], last.kind[order], last.infoset[order],
                            last.parent_action_slot[order],
                            chance_edge_prob=last.chance_edge_prob,
                            terminal_utility=last.terminal_utility[order])
    lean = _FinePieces(tree, algo="cfr+", passes="lean")
    assert not lean._lean_passes.levels[-1].sorted
    reference = TensorCFRSolver(tree, algo="cfr+", passes="torch")
    lean.iterate(5)
    reference.iterate(5)
    _assert_same(lean, reference)


def test_memory_refusal_names_the_lean_passes_when_they_fit(
        trees: dict[str, LevelTree]) -> None:
    from tensorcfr.errors import MemoryLimitError

    tree = trees["liars_dice(dice_sides=3)"]
    lean = TensorCFRSolver(tree, passes="lean").estimated_memory_bytes
    default = TensorCFRSolver(tree).estimated_memory_bytes
    assert lean < default
    with pytest.raises(MemoryLimitError, match="--passes lean"):
        TensorCFRSolver(tree, max_memory_bytes=(lean + default) // 2)
    with pytest.raises(MemoryLimitError) as refused:
        TensorCFRSolver(tree, max_memory_bytes=lean // 2)
    assert "lean" not in str(refused.value)  # (they would not fit either)
    assert TensorCFRSolver(tree, passes="lean",
                           max_memory_bytes=(lean + default) // 2).passes_used == "lean"


def test_lean_solver_runs_no_torch_kernel(trees: dict[str, LevelTree]) -> None:
    """The memory the lean passes save depends on running no torch computation (each
    kernel's first call maps its library code: 0.5-3 MiB, docs/benchmarks/engine_memory.md):
    building the solver only makes tensors over numpy arrays and views of them, and the
    iterations dispatch nothing to torch at all."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Dispatched(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.ops.add(str(func))
            return func(*args, **(kwargs or {}))

    no_compute = {"aten.detach.default", "aten.lift_fresh.default",
                  "aten.empty.memory_format", "aten.slice.Tensor", "aten.alias.default",
                  "aten.view.default"}
    for game in ("leduc_poker", "kuhn_poker(players=3)"):
        with Dispatched() as built:
            solver = TensorCFRSolver(trees[game], algo="pcfr+", passes="lean")
        assert built.ops <= no_compute, built.ops - no_compute
        with Dispatched() as iterated:
            solver.iterate(3)
        assert iterated.ops == set()
