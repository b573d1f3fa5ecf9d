"""The lean generic engine: depth-first walk == breadth-first levels, numpy fast path ==
torch passes bitwise, compact solver buffers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tensorcfr.core.solver import TensorCFRSolver
from tensorcfr.core.tree import KIND_TERMINAL, LevelTree
from tensorcfr.errors import MemoryLimitError
from tensorcfr.games.openspiel import flatten_game

DATA = Path(__file__).parent / "data"

# Levels written by the previous breadth-first walk (generated once with it; int32 indices).
BFS_REFERENCES = [("kuhn_poker", "generic_bfs_levels_kuhn_poker.pt"),
                  ("kuhn_poker(players=3)", "generic_bfs_levels_kuhn3.pt"),
                  ("leduc_poker", "generic_bfs_levels_leduc_poker.pt")]


@pytest.mark.parametrize("game,filename", BFS_REFERENCES)
def test_depth_first_walk_equals_breadth_first_levels(game: str, filename: str) -> None:
    reference = torch.load(DATA / filename)
    tree = flatten_game(game)
    state = tree.state_dict()
    for key in ("num_players", "num_infosets", "infoset_keys", "game_string"):
        assert state[key] == reference[key], key
    for key in ("infoset_player", "infoset_num_actions", "infoset_action_offset",
                "action_infoset", "action_id"):
        assert torch.equal(state[key], reference[key]), key
    assert len(tree.levels) == len(reference["levels"])
    for d, (level, expected) in enumerate(zip(tree.levels, reference["levels"])):
        # The compact layout: int32 indices, terminal payoffs and chance-edge
        # probabilities only; its dense views equal the reference's arrays.
        for key in ("parent", "infoset", "parent_action_slot"):
            assert getattr(level, key).dtype == torch.int32, (d, key)
        dense = level.dense_dict()
        assert set(dense) == set(expected), d
        for key, wanted in expected.items():
            tensor = dense[key]
            if key in ("parent", "infoset", "parent_action_slot"):
                assert tensor.dtype == torch.long
                wanted = wanted.long()
            assert tensor.dtype == wanted.dtype and torch.equal(tensor, wanted), (d, key)
        assert torch.equal(level.terminal_utility, expected["utility"][
            expected["kind"] == KIND_TERMINAL]), d


def test_depth_first_walk_limits() -> None:
    with pytest.raises(MemoryLimitError, match="more than 100 nodes"):
        flatten_game("kuhn_poker(players=3)", max_nodes=100)
    # Exactly the node count is allowed, one less is not.
    assert flatten_game("kuhn_poker", max_nodes=58).num_nodes == 58
    with pytest.raises(MemoryLimitError):
        flatten_game("kuhn_poker", max_nodes=57)
    with pytest.raises(MemoryLimitError, match="limit"):
        flatten_game("kuhn_poker", max_memory_bytes=1_000)


class _TorchOnlySolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1


class _NumpySolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = 10**6


@pytest.fixture(scope="module")
def trees() -> dict[str, LevelTree]:
    return {g: flatten_game(g) for g in ("kuhn_poker", "kuhn_poker(players=3)", "leduc_poker")}


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
@pytest.mark.parametrize("game", ["kuhn_poker", "kuhn_poker(players=3)", "leduc_poker"])
def test_numpy_fast_path_is_bitwise_the_torch_path(trees: dict[str, LevelTree], game: str,
                                                   algo: str) -> None:
    iterations = 6 if game == "leduc_poker" else 25
    fast = _NumpySolver(trees[game], algo=algo)
    slow = _TorchOnlySolver(trees[game], algo=algo)
    assert fast.uses_numpy_fast_path and not slow.uses_numpy_fast_path
    fast.iterate(iterations)
    slow.iterate(iterations)
    for name, tensor in fast.state_tensors().items():
        expected = slow.state_tensors()[name]
        assert torch.equal(tensor, expected), name
    assert torch.equal(fast.average_policy(), slow.average_policy())


def test_fast_path_only_where_it_applies(trees: dict[str, LevelTree]) -> None:
    kuhn = trees["kuhn_poker"]
    assert TensorCFRSolver(kuhn).uses_numpy_fast_path
    assert not TensorCFRSolver(trees["leduc_poker"]).uses_numpy_fast_path  # 9,457 nodes
    assert not TensorCFRSolver(kuhn, alternating=False).uses_numpy_fast_path
    assert not TensorCFRSolver(kuhn, dtype="float32").uses_numpy_fast_path


def test_fast_path_resume_is_bitwise(trees: dict[str, LevelTree]) -> None:
    tree = trees["kuhn_poker(players=3)"]
    straight = TensorCFRSolver(tree, algo="dcfr")
    straight.iterate(20)
    first = TensorCFRSolver(tree, algo="dcfr")
    first.iterate(8)
    resumed = TensorCFRSolver(tree, algo="dcfr")
    resumed.load_state_tensors(first.state_tensors(), first.iteration)
    resumed.iterate(12)
    for name, tensor in straight.state_tensors().items():
        assert torch.equal(tensor, resumed.state_tensors()[name]), name


def test_alternating_solver_keeps_one_value_row(trees: dict[str, LevelTree]) -> None:
    tree = trees["leduc_poker"]
    alternating = TensorCFRSolver(tree)
    simultaneous = TensorCFRSolver(tree, alternating=False)
    # Values (and reach) are kept for the levels that hold inner nodes; the last level of
    # leduc_poker holds terminals only, whose values are the utilities.
    stored = alternating._flat.num_stored
    assert stored == tree.num_nodes - tree.levels[-1].num_nodes
    assert alternating._values.shape == (1, stored)
    assert simultaneous._values.shape == (2, stored)
    # Utilities for terminal nodes only; no per-edge buffers the size of the tree (the
    # regret update goes level by level through chunk-sized scratch buffers).
    assert sum(u.shape[1] for u in alternating._utility_levels) == tree.num_terminals
    assert alternating._edge_a.numel() <= min(alternating._flat.chunk,
                                              alternating._flat.max_level_nodes)
    assert alternating._scratch.shape == (1, alternating._flat.max_level_nodes)


def test_micro_benchmark_script_runs(capsys, monkeypatch) -> None:
    """benchmarks/bench_generic_micro.py (a fresh subprocess per measurement: the script's
    own, which is what measures) on kuhn; its ``main()`` runs in this process."""
    import importlib.util
    import json
    import sys

    import torch

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_generic_micro.py"
    spec = importlib.util.spec_from_file_location("bench_generic_micro", script)
    bench = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    threads = torch.get_num_threads()
    try:
        spec.loader.exec_module(bench)  # (sets one torch thread, as the script does)
        monkeypatch.setattr(sys, "argv", [str(script), "--games", "kuhn_poker", "--seconds",
                                          "0.2", "--reps", "2", "--json"])
        bench.main()
    finally:
        torch.set_num_threads(threads)
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["game"] == "kuhn_poker" and row["nodes"] == 58 and row["threads"] == 1
    assert row["new_cpu_ms"] > 0 and row["new_peak_mb"] > 0
