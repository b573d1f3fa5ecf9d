"""The compiled CPU passes (tensorcfr.core.numba_passes: the pruned passes of
tensorcfr.core.pruned_passes and the fused passes of tensorcfr.core.fused_passes where
their layout applies, the level passes elsewhere) give bitwise the torch passes' results:
every variant, float64 and float32, two and three players, mixed levels, levels that keep
no reach copy, infosets on several depths, the pruned passes' partial relists and kept
lists."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tensorcfr.core import numba_passes
from tensorcfr.core.solver import TensorCFRSolver
from tensorcfr.core.tree import LevelTree
from tensorcfr.games.openspiel import flatten_game

pytestmark = pytest.mark.skipif(not numba_passes.AVAILABLE, reason="numba not importable")


class _NumbaSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = 0


class _FusedSolver(_NumbaSolver):
    compiled_passes = "fused"


class _TorchSolver(TensorCFRSolver):
    numpy_fast_path_max_nodes = -1
    numba_min_nodes = None


@pytest.fixture(scope="module")
def trees() -> dict[str, LevelTree]:
    games = ("kuhn_poker(players=3)", "leduc_poker", "goofspiel(num_cards=3,imp_info=True)")
    return {g: flatten_game(g) for g in games}


def _level(solver: TensorCFRSolver) -> TensorCFRSolver:
    """``solver`` switched to the level passes (what the fused passes replaced)."""
    solver._numba_passes = numba_passes.NumbaPasses(solver, fused=False)
    solver._refresh_all()
    return solver


def _assert_same(fast: TensorCFRSolver, slow: TensorCFRSolver) -> None:
    for name, tensor in fast.state_tensors().items():
        assert torch.equal(tensor, slow.state_tensors()[name]), name
    assert torch.equal(fast.average_policy(), slow.average_policy())


@pytest.mark.parametrize("passes", ["pruned", "fused", "level"])
@pytest.mark.parametrize("algo", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "leduc_poker",
                                  "goofspiel(num_cards=3,imp_info=True)"])
def test_numba_passes_are_bitwise_the_torch_passes(trees: dict[str, LevelTree], game: str,
                                                   algo: str, passes: str) -> None:
    iterations = 5 if game == "leduc_poker" else 12
    fast = (_FusedSolver if passes == "fused" else _NumbaSolver)(trees[game], algo=algo)
    if passes == "level":
        _level(fast)
    slow = _TorchSolver(trees[game], algo=algo)
    assert fast.uses_numba and not slow.uses_numba
    assert fast._numba_passes.kind == passes
    fast.iterate(iterations)
    slow.iterate(iterations)
    _assert_same(fast, slow)


@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "leduc_poker"])
def test_pruned_passes_keep_relist_and_rebuild_bitwise(trees: dict[str, LevelTree],
                                                       game: str) -> None:
    """Vanilla CFR over many iterations: the pruned passes skip histories, keep their live
    list when no action comes to life (dead histories stay listed), relist only the
    segments below revived actions, rebuild when one lies above the split level; the
    state stays bitwise the torch passes' (checked as it goes)."""
    fast = _NumbaSolver(trees[game])
    slow = _TorchSolver(trees[game])
    engine = fast._numba_passes.engine
    assert fast._numba_passes.kind == "pruned"
    assert engine.root_position.shape[0] > 1  # (several segments)
    kept = dead_listed = 0
    for _ in range(8):
        before = (engine.rebuilds, engine.relists)
        fast.iterate(10)
        slow.iterate(10)
        kept += engine.rebuilds == before[0] and engine.relists == before[1]
        dead_listed += engine.dead > 0
        _assert_same(fast, slow)
    assert engine.live_nodes < fast._flat.num_nodes  # (something is skipped)
    assert engine.relists > 0 and engine.rebuilds > 0
    if game == "leduc_poker":
        assert dead_listed > 0


def test_numba_passes_float32_and_resume(trees: dict[str, LevelTree]) -> None:
    tree = trees["leduc_poker"]
    fast = _NumbaSolver(tree, algo="dcfr", dtype="float32")
    slow = _TorchSolver(tree, algo="dcfr", dtype="float32")
    fast.iterate(4)
    slow.iterate(4)
    _assert_same(fast, slow)
    resumed = _NumbaSolver(tree, algo="dcfr", dtype="float32")
    assert resumed._numba_passes.kind == "pruned"
    resumed.load_state_tensors(fast.state_tensors(), fast.iteration)
    resumed.iterate(3)
    slow.iterate(3)
    _assert_same(resumed, slow)


def test_numba_only_where_it_applies(trees: dict[str, LevelTree]) -> None:
    tree = trees["leduc_poker"]
    assert not TensorCFRSolver(tree).uses_numba  # 9,457 nodes: below NUMBA_MIN_NODES
    assert not _NumbaSolver(tree, alternating=False).uses_numba
    assert _NumbaSolver(tree).uses_numba


def _hand_built(seed: int, num_players: int, one_depth: bool) -> LevelTree:
    """A random perfect-recall game of tests/test_best_response.py: chance at random
    depths, so levels mix chance and players; its infosets span several depths, unless
    ``one_depth`` adds the depth to every infoset key."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_best_response import _build_tree, _random_game

    def by_depth(node: tuple, depth: int = 0) -> tuple:
        if node[0] == "T":
            return node
        if node[0] == "C":
            return ("C", [(p, by_depth(child, depth + 1)) for p, child in node[1]])
        _, player, key, edges = node
        return ("P", player, f"{key}|{depth}", [(a, by_depth(child, depth + 1))
                                                for a, child in edges])

    game = _random_game(seed, num_players)
    return _build_tree(by_depth(game) if one_depth else game, num_players)


@pytest.mark.parametrize("num_players", [2, 3])
@pytest.mark.parametrize("one_depth", [True, False])
def test_numba_passes_on_mixed_levels(num_players: int, one_depth: bool) -> None:
    """Infosets on one depth each: the fused passes, with levels where chance and players
    act side by side and levels that keep no reach copy; infosets on several depths: the
    fused layout refuses (its bottom-up regret step would reorder a slot's additions) and
    the level passes run.  Bitwise the torch passes either way."""
    from tensorcfr.core import fused_passes

    mixed = unstored = 0
    for seed in range(6):
        tree = _hand_built(seed, num_players, one_depth)
        fast = _NumbaSolver(tree, algo="pcfr+")
        slow = _TorchSolver(tree, algo="pcfr+")
        assert fast._numba_passes.kind == ("pruned" if one_depth else "level")
        if one_depth:
            layout = _FusedSolver(tree, algo="pcfr+")._numba_passes.engine.layout
            assert isinstance(layout, fused_passes.FusedLayout)
            mixed += int((layout.mode == fused_passes.MODE_MIXED).sum())
            unstored += int((~layout.stored).sum())
        fast.iterate(9)
        slow.iterate(9)
        _assert_same(fast, slow)
    if one_depth:
        assert mixed > 0 and unstored > 0


@pytest.mark.parametrize("passes", ["pruned", "fused"])
def test_compiled_passes_match_openspiel_cpp(passes: str) -> None:
    """On leduc with the compiled passes forced (pruned, the default, and fused): the
    average policy is OpenSpiel C++ CFRSolver's to 1e-9, and OpenSpiel's own
    exploitability of it is the C++ policy's."""
    import pyspiel

    from tensorcfr.games.openspiel.solvers import CFRSolver

    class CompiledCFR(CFRSolver):
        numpy_fast_path_max_nodes = -1
        numba_min_nodes = 0
        compiled_passes = passes

    game = pyspiel.load_game("leduc_poker")
    ours = CompiledCFR(game)
    assert ours._numba_passes.kind == passes
    reference = pyspiel.CFRSolver(game)
    for _ in range(30):
        reference.evaluate_and_update_policy()
    ours.iterate(30)
    tree = ours.tree
    theirs = torch.empty(tree.num_slots, dtype=torch.float64)
    policy = reference.average_policy()
    offsets, counts = tree.infoset_action_offset.tolist(), tree.infoset_num_actions.tolist()
    actions = tree.action_id.tolist()
    for key, offset, count in zip(tree.infoset_keys, offsets, counts):
        probabilities = dict(policy.get_state_policy(key))
        for slot in range(offset, offset + count):
            theirs[slot] = probabilities[actions[slot]]
    assert (theirs - ours.average_policy()).abs().max() < 1e-9
    from open_spiel.python.algorithms import exploitability

    assert exploitability.exploitability(game, ours.average_policy_tabular()) == pytest.approx(
        pyspiel.exploitability(game, policy), abs=1e-9)
