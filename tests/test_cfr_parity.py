"""Tensor CFR solvers against OpenSpiel (Python and C++), convergence, checkpoints, policies."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyspiel
import pytest
import torch
from open_spiel.python.algorithms import cfr as openspiel_cfr
from open_spiel.python.algorithms import discounted_cfr

from tensorcfr.core.solver import policy_values
from tensorcfr.core.policy_io import load_policy, save_checkpoint, save_policy
from tensorcfr.core.tree import LevelTree
from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError
from tensorcfr.games.openspiel import flatten_game
from tensorcfr.games.openspiel.policy import from_tabular_policy, saved_policy_to_tabular
from tensorcfr.games.openspiel.solvers import (
    CFRPlusSolver,
    CFRSolver,
    DCFRSolver,
    LinearCFRSolver,
    PCFRPlusSolver,
    TensorCFRSolver,
    load_checkpoint,
)

PARITY = 1e-9


@pytest.fixture(scope="module")
def kuhn_tree() -> LevelTree:
    return flatten_game("kuhn_poker")


@pytest.fixture(scope="module")
def leduc_tree() -> LevelTree:
    return flatten_game("leduc_poker")


def _cpp_policy_slots(tree: LevelTree, policy: pyspiel.Policy) -> torch.Tensor:
    """Action-slot probabilities of a C++ solver's policy."""
    out = torch.empty(tree.num_slots, dtype=torch.float64)
    offsets = tree.infoset_action_offset.tolist()
    counts = tree.infoset_num_actions.tolist()
    actions = tree.action_id.tolist()
    for key, offset, count in zip(tree.infoset_keys, offsets, counts):
        probs = dict(policy.get_state_policy(key))
        for slot in range(offset, offset + count):
            out[slot] = probs[actions[slot]]
    return out


@pytest.mark.parametrize("algo,reference", [
    ("cfr", openspiel_cfr.CFRSolver),
    ("cfr+", openspiel_cfr.CFRPlusSolver),
    ("lcfr", discounted_cfr.LCFRSolver),
    ("dcfr", discounted_cfr.DCFRSolver),
])
def test_kuhn_matches_openspiel_python(kuhn_tree: LevelTree, algo: str, reference: type) -> None:
    game = pyspiel.load_game("kuhn_poker")
    ref = reference(game)
    ours = TensorCFRSolver(kuhn_tree, algo=algo)
    for _ in range(100):
        ref.evaluate_and_update_policy()
    ours.iterate(100)
    assert ours.iteration == 100
    ref_average = from_tabular_policy(kuhn_tree, ref.average_policy())
    ref_current = from_tabular_policy(kuhn_tree, ref.current_policy())
    assert (ref_average - ours.average_policy()).abs().max() < PARITY
    assert (ref_current - ours.current_policy()).abs().max() < PARITY


def test_kuhn_simultaneous_matches_openspiel_python(kuhn_tree: LevelTree) -> None:
    game = pyspiel.load_game("kuhn_poker")
    ref = openspiel_cfr._CFRSolver(game, regret_matching_plus=False, alternating_updates=False,
                                   linear_averaging=False)
    ours = TensorCFRSolver(kuhn_tree, algo="cfr", alternating=False)
    for _ in range(100):
        ref.evaluate_and_update_policy()
    ours.iterate(100)
    ref_average = from_tabular_policy(kuhn_tree, ref.average_policy())
    assert (ref_average - ours.average_policy()).abs().max() < PARITY


def test_kuhn_three_players_matches_openspiel_python() -> None:
    game = pyspiel.load_game("kuhn_poker(players=3)")
    tree = flatten_game(game)
    ref = openspiel_cfr.CFRSolver(game)
    ours = CFRSolver(tree)
    for _ in range(30):
        ref.evaluate_and_update_policy()
    ours.iterate(30)
    assert (from_tabular_policy(tree, ref.average_policy())
            - ours.average_policy()).abs().max() < PARITY


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("algo,reference", [("cfr", pyspiel.CFRSolver),
                                            ("cfr+", pyspiel.CFRPlusSolver)])
def test_matches_openspiel_cpp(game_name: str, algo: str, reference: type,
                               kuhn_tree: LevelTree, leduc_tree: LevelTree) -> None:
    tree = kuhn_tree if game_name == "kuhn_poker" else leduc_tree
    ref = reference(pyspiel.load_game(game_name))
    ours = TensorCFRSolver(tree, algo=algo)
    for _ in range(100):
        ref.evaluate_and_update_policy()
    ours.iterate(100)
    assert (_cpp_policy_slots(tree, ref.average_policy())
            - ours.average_policy()).abs().max() < PARITY
    assert (_cpp_policy_slots(tree, ref.current_policy())
            - ours.current_policy()).abs().max() < PARITY


def test_turn_based_goofspiel_matches_openspiel_cpp() -> None:
    # Simultaneous moves through the turn-based wrapper; its info-state strings forget the
    # order of one's own bids (imperfect recall), which CFR handles like OpenSpiel does.
    game = pyspiel.convert_to_turn_based(pyspiel.load_game("goofspiel(num_cards=3)"))
    tree = flatten_game(game)
    ref = pyspiel.CFRSolver(game)
    ours = CFRSolver(tree)
    for _ in range(100):
        ref.evaluate_and_update_policy()
    ours.iterate(100)
    assert (_cpp_policy_slots(tree, ref.average_policy())
            - ours.average_policy()).abs().max() < PARITY


def test_leduc_matches_openspiel_python_few_iterations(leduc_tree: LevelTree) -> None:
    ref = openspiel_cfr.CFRSolver(pyspiel.load_game("leduc_poker"))
    ours = CFRSolver(leduc_tree)
    for _ in range(3):
        ref.evaluate_and_update_policy()
    ours.iterate(3)
    assert (from_tabular_policy(leduc_tree, ref.average_policy())
            - ours.average_policy()).abs().max() < PARITY


def test_kuhn_value_converges_to_minus_one_over_eighteen(kuhn_tree: LevelTree) -> None:
    solver = CFRPlusSolver(kuhn_tree)
    solver.iterate(1000)
    values = policy_values(kuhn_tree, solver.average_policy())
    assert abs(float(values[0]) + 1 / 18) < 1e-3
    assert abs(float(values.sum())) < 1e-12
    assert torch.allclose(solver.average_policy_values(), values)


@pytest.mark.parametrize("cls", [CFRSolver, CFRPlusSolver, LinearCFRSolver, DCFRSolver,
                                 PCFRPlusSolver])
def test_all_variants_converge_on_kuhn(kuhn_tree: LevelTree, cls: type) -> None:
    best_response = pytest.importorskip("tensorcfr.core.best_response")
    solver = cls(kuhn_tree)
    solver.iterate(300)
    result = best_response.exploitability(kuhn_tree, solver.average_policy())
    assert result.exploitability < 5e-3


@pytest.mark.parametrize("algo", ["cfr", "cfr+", "pcfr+"])
def test_simultaneous_updates_converge(kuhn_tree: LevelTree, algo: str) -> None:
    best_response = pytest.importorskip("tensorcfr.core.best_response")
    solver = TensorCFRSolver(kuhn_tree, algo=algo, alternating=False)
    solver.iterate(300)
    assert best_response.exploitability(kuhn_tree, solver.average_policy()).exploitability < 3e-2


def test_three_player_nash_conv_decreases() -> None:
    best_response = pytest.importorskip("tensorcfr.core.best_response")
    tree = flatten_game("kuhn_poker(players=3)")
    solver = TensorCFRSolver(tree, algo="cfr+")
    solver.iterate(10)
    early = best_response.exploitability(tree, solver.average_policy()).nash_conv
    solver.iterate(190)
    late = best_response.exploitability(tree, solver.average_policy()).nash_conv
    assert late < early


def test_float32_close_to_float64(leduc_tree: LevelTree) -> None:
    double = TensorCFRSolver(leduc_tree, algo="cfr+")
    single = TensorCFRSolver(leduc_tree, algo="cfr+", dtype="float32")
    double.iterate(20)
    single.iterate(20)
    assert single.average_policy().dtype == torch.float32
    assert (single.average_policy().double() - double.average_policy()).abs().max() < 1e-3


def test_policies_are_distributions(leduc_tree: LevelTree) -> None:
    solver = PCFRPlusSolver(leduc_tree)
    solver.iterate(5)
    for policy in (solver.average_policy(), solver.current_policy()):
        sums = torch.zeros(leduc_tree.num_infosets, dtype=torch.float64).index_add_(
            0, leduc_tree.action_infoset, policy)
        assert torch.allclose(sums, torch.ones_like(sums))
        assert (policy >= 0).all()


def test_bad_parameters() -> None:
    with pytest.raises(TensorCFRError):
        TensorCFRSolver("kuhn_poker", algo="nope")
    with pytest.raises(TensorCFRError):
        TensorCFRSolver("kuhn_poker", dtype="int32")
    with pytest.raises(TensorCFRError):
        TensorCFRSolver("kuhn_poker", device="no-such-device")
    with pytest.raises(MemoryLimitError):
        TensorCFRSolver("leduc_poker", max_memory_bytes=200_000)
    with pytest.raises(TensorCFRError):
        CFRSolver("kuhn_poker").iterate(-1)


# ---------------------------------------------------------------------------- checkpoints
def _state(solver: TensorCFRSolver) -> dict[str, torch.Tensor]:
    return solver.state_tensors()


@pytest.mark.parametrize("algo,alternating", [("dcfr", True), ("pcfr+", True),
                                              ("cfr", False)])
def test_resume_is_bitwise_identical(tmp_path: Path, leduc_tree: LevelTree, algo: str,
                                     alternating: bool) -> None:
    straight = TensorCFRSolver(leduc_tree, algo=algo, alternating=alternating, gamma=3.0)
    straight.iterate(12)
    first = TensorCFRSolver(leduc_tree, algo=algo, alternating=alternating, gamma=3.0)
    first.iterate(7)
    path = tmp_path / "ck.npz"
    first.save(str(path))
    resumed = TensorCFRSolver.load(str(path), game=leduc_tree)
    assert resumed.iteration == 7
    assert resumed.variant == first.variant and resumed.alternating == alternating
    resumed.iterate(5)
    for name, tensor in _state(straight).items():
        assert torch.equal(tensor, _state(resumed)[name]), name
    assert torch.equal(straight.average_policy(), resumed.average_policy())


def test_checkpoint_from_game_string(tmp_path: Path) -> None:
    solver = TensorCFRSolver("kuhn_poker", algo="cfr+", dtype="float32")
    solver.iterate(3)
    path = tmp_path / "k.npz"
    save_checkpoint(solver, path)
    restored = load_checkpoint(path)
    assert restored.dtype == torch.float32 and restored.iteration == 3
    assert torch.equal(restored.average_policy(), solver.average_policy())


def test_corrupt_and_wrong_checkpoints(tmp_path: Path, kuhn_tree: LevelTree) -> None:
    solver = TensorCFRSolver(kuhn_tree)
    solver.iterate(2)
    path = tmp_path / "ck.npz"
    solver.save(str(path))
    data = path.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    policy_file = tmp_path / "policy.npz"
    save_policy(policy_file, kuhn_tree, solver.average_policy())
    for bad in (truncated, garbage, policy_file, tmp_path / "missing.npz"):
        with pytest.raises(CorruptFileError) as info:
            load_checkpoint(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(CorruptFileError, match="leduc_poker"):
        load_checkpoint(path, game="leduc_poker")
    # A file whose arrays were tampered with (wrong length).
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["regrets"] = arrays["regrets"][:-1]
    tampered = tmp_path / "tampered.npz"
    with open(tampered, "wb") as handle:
        np.savez(handle, **arrays)
    with pytest.raises(CorruptFileError):
        load_checkpoint(tampered)


# ---------------------------------------------------------------------------- policies
def test_policy_roundtrip_and_tabular(tmp_path: Path, leduc_tree: LevelTree) -> None:
    solver = CFRSolver(leduc_tree)
    solver.iterate(10)
    average = solver.average_policy()
    path = tmp_path / "policy.npz"
    save_policy(path, leduc_tree, average, extra={"algo": "cfr", "iterations": 10})
    saved = load_policy(path)
    assert saved.game_string == "leduc_poker()"
    assert saved.extra == {"algo": "cfr", "iterations": 10}
    assert torch.equal(saved.probabilities, average)
    assert torch.equal(saved.slots_for(leduc_tree), average)
    tabular = saved_policy_to_tabular(saved)
    assert torch.equal(from_tabular_policy(leduc_tree, tabular), average)
    direct = solver.average_policy_tabular()
    assert np.array_equal(direct.action_probability_array, tabular.action_probability_array)
    with pytest.raises(CorruptFileError):
        saved.slots_for(flatten_game("kuhn_poker"))
    checkpoint = tmp_path / "ck.npz"
    solver.save(str(checkpoint))
    with pytest.raises(CorruptFileError):
        load_policy(checkpoint)


def test_general_sum_matches_openspiel_python() -> None:
    # Battle of the sexes (general-sum, simultaneous) through the turn-based wrapper.
    game = pyspiel.convert_to_turn_based(pyspiel.load_game("matrix_bos"))
    tree = flatten_game(game)
    ref = openspiel_cfr.CFRSolver(game)
    ours = CFRSolver(tree)
    for _ in range(50):
        ref.evaluate_and_update_policy()
    ours.iterate(50)
    assert (from_tabular_policy(tree, ref.average_policy())
            - ours.average_policy()).abs().max() < PARITY
