"""What the solver keeps (issue 30, item 2): the compiled passes run without the torch passes'
per-node buffers (released once their own layout exists, rebuilt on demand, the results
bitwise unchanged), and the walk's perfect-recall check (numpy) finds what a history-by-
history check finds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tensorcfr.core import numba_passes
from tensorcfr.core.solver import TensorCFRSolver
from tensorcfr.core.tree import LevelTree
from tensorcfr.games.openspiel import flatten_game
from tensorcfr.games.openspiel.flatten import perfect_recall_violations

REPO = Path(__file__).resolve().parents[1]
needs_numba = pytest.mark.skipif(not numba_passes.AVAILABLE, reason="numba not importable")


class _CompiledSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = 0


class _TorchSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = None


@pytest.fixture(scope="module")
def leduc() -> LevelTree:
    return flatten_game("leduc_poker")


def _assert_same(a: TensorCFRSolver, b: TensorCFRSolver) -> None:
    for name, tensor in a.state_tensors().items():
        assert torch.equal(tensor, b.state_tensors()[name]), name
    assert torch.equal(a.average_policy(), b.average_policy())


@needs_numba
@pytest.mark.parametrize("algo", ["cfr", "pcfr+"])
def test_compiled_solver_keeps_no_node_buffers(leduc: LevelTree, algo: str) -> None:
    """The fused passes' solver holds no reach, values or edge-probability buffer, nor the
    flat tree's int64 copies; the tree keeps its int32 parents; the results are bitwise
    the torch passes', also after a checkpoint restore."""
    fast = _CompiledSolver(leduc, algo=algo)
    assert fast._numba_passes.kind != "level"
    for name in ("_reach", "_values", "_edge_prob", "_update_views", "_scratch"):
        assert name not in fast.__dict__, name
    for name in ("edge_prob", "parent_local", "player_levels", "terminal_index"):
        assert name not in fast._flat.__dict__, name
    assert all(level.parent.dtype == torch.int32 for level in leduc.levels)
    slow = _TorchSolver(leduc, algo=algo)
    fast.iterate(4)
    slow.iterate(4)
    _assert_same(fast, slow)
    resumed = _CompiledSolver(leduc, algo=algo)
    resumed.load_state_tensors(fast.state_tensors(), fast.iteration)
    assert "_reach" not in resumed.__dict__  # the restore did not rebuild them
    resumed.iterate(3)
    slow.iterate(3)
    _assert_same(resumed, slow)
    assert abs(float(resumed.average_policy_values().sum())) < 1e-9  # zero-sum, tree intact


@needs_numba
def test_released_buffers_rebuild_on_demand(leduc: LevelTree) -> None:
    """Reading a released buffer mid-run rebuilds the flat tree and the torch passes'
    buffers from the current strategy: the level passes (or the torch passes) then carry
    on bitwise where the fused passes stopped."""
    fast = _CompiledSolver(leduc, algo="dcfr")
    slow = _TorchSolver(leduc, algo="dcfr")
    fast.iterate(3)
    slow.iterate(3)
    fast._numba_passes = numba_passes.NumbaPasses(fast, fused=False)  # reads _values
    assert fast._numba_passes.kind == "level" and "_reach" in fast.__dict__
    assert torch.equal(fast._reach, slow._reach)  # refreshed from the current strategy
    assert torch.equal(fast._edge_prob, slow._edge_prob)
    fast._refresh_all()
    fast.iterate(3)
    slow.iterate(3)
    _assert_same(fast, slow)
    with pytest.raises(AttributeError):
        fast._no_such_buffer  # noqa: B018


def test_torch_passes_keep_their_buffers(leduc: LevelTree) -> None:
    solver = _TorchSolver(leduc)
    assert "_reach" in solver.__dict__ and "edge_prob" in solver._flat.__dict__
    assert not solver.__dict__.get("_node_buffers_released", False)


def _recall_by_history(tree: LevelTree) -> tuple[int, int | None]:
    """Perfect-recall violations counted history by history (plain Python): the acting
    player's previous own slot on the path to every decision node, per infoset."""
    prev = [[-1] * tree.num_players]  # per node of the current level
    seen: dict[int, set[int]] = {}
    for d, level in enumerate(tree.levels):
        kind = level.kind.tolist()
        infoset = level.infoset.tolist()
        if d > 0:
            parent = level.parent.tolist()
            slot = level.parent_action_slot.tolist()
            above = tree.levels[d - 1].kind.tolist()
            rows = []
            for n, h in enumerate(parent):
                row = list(prev[h])
                if above[h] >= 0:
                    row[above[h]] = slot[n]
                rows.append(row)
            prev = rows
        for n, k in enumerate(kind):
            if k >= 0:
                seen.setdefault(infoset[n], set()).add(prev[n][k])
    bad = sorted(i for i, values in seen.items() if len(values) > 1)
    return len(bad), (bad[0] if bad else None)


@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "goofspiel(num_cards=3)",
                                  "goofspiel(num_cards=4,points_order=descending)"])
def test_perfect_recall_check_matches_history_by_history(game: str) -> None:
    tree = flatten_game(game)
    count, first = _recall_by_history(tree)
    assert perfect_recall_violations(tree) == (
        count, None if first is None else tree.infoset_keys[first])
    assert tree.metadata["imperfect_recall_infosets"] == count


def test_memory_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/bench_engine_memory.py on kuhn_poker (one configuration: one worker
    process, the script's own; its ``main()`` runs in this process, as
    tests/test_numeral211_figure5_bench.py runs its script's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_engine_memory", REPO / "benchmarks" / "bench_engine_memory.py")
    bench = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    threads = torch.get_num_threads()
    try:
        spec.loader.exec_module(bench)  # (sets one torch thread, as the script does)
        out = tmp_path / "memory.json"
        code = bench.main(["--games", "kuhn_poker", "--configs", "torch", "--iterations", "2",
                           "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    assert "| kuhn_poker | torch passes" in capsys.readouterr().out
    report = json.loads(out.read_text())
    torch_entry = report["games"][0]["configs"]["torch"]
    assert torch_entry["peak_mb"] >= torch_entry["solver_rss_mb"] - 1e-9
    assert torch_entry["info"]["uses_numba"] is False
    assert np.isfinite(torch_entry["anon_mb"]) and "peak_vs_cpp" not in torch_entry
