"""Exact best response / NashConv / exploitability on the generic level tree.

Reference values come from OpenSpiel itself (the Python ``exploitability`` module and the
C++ ``pyspiel.nash_conv`` / ``pyspiel.exploitability``), and from brute force over all
pure strategies on small random perfect-recall games built by hand, some of whose
infosets span several depths.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
import typer
from typer.testing import CliRunner

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python import policy as openspiel_policy  # noqa: E402
from open_spiel.python.algorithms import cfr as openspiel_cfr  # noqa: E402
from open_spiel.python.algorithms import exploitability as openspiel_exploitability  # noqa: E402
from open_spiel.python.algorithms import expected_game_score  # noqa: E402

from tensorcfr.cli.generic_exploitability import exploitability_command  # noqa: E402
from tensorcfr.core.best_response import (  # noqa: E402
    ExploitabilityResult,
    NotPerfectRecallError,
    PolicyError,
    best_response_policy,
    best_response_values,
    exploitability,
    policy_values,
    validate_policy,
)
from tensorcfr.core.policy_io import save_policy  # noqa: E402
from tensorcfr.games.openspiel.policy import from_tabular_policy  # noqa: E402
from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, Level, LevelTree  # noqa: E402
from tensorcfr.errors import TensorCFRError  # noqa: E402
from tensorcfr.games.openspiel.flatten import flatten_game, load_game  # noqa: E402

TOL = 1e-9


# ---------------------------------------------------------------------------------------
# OpenSpiel helpers
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _tree(game_string: str) -> LevelTree:
    return flatten_game(game_string)


def _slots(tree: LevelTree, probs_of: Callable[[str], dict[int, float]]) -> torch.Tensor:
    """Policy vector [A] from a function infoset key -> {action id: probability}."""
    slots = torch.zeros(tree.num_slots, dtype=torch.float64)
    offsets = tree.infoset_action_offset.tolist()
    counts = tree.infoset_num_actions.tolist()
    action_ids = tree.action_id.tolist()
    for info, key in enumerate(tree.infoset_keys):
        probs = probs_of(key)
        for s in range(offsets[info], offsets[info] + counts[info]):
            slots[s] = float(probs.get(action_ids[s], 0.0))
    return slots


def _slots_from_cpp_policy(tree: LevelTree, policy: Any) -> torch.Tensor:
    """Slots from a C++ ``pyspiel.Policy`` (e.g. a CFR average or ``GetRandomPolicy``)."""
    return _slots(tree, lambda key: dict(policy.get_state_policy(key)))


def _random_python_policy(game: Any, seed: int) -> Any:
    """A seeded random (fully mixed) OpenSpiel ``TabularPolicy``."""
    policy = openspiel_policy.TabularPolicy(game)
    rng = np.random.default_rng(seed)
    probs = rng.random(policy.action_probability_array.shape) * policy.legal_actions_mask
    policy.action_probability_array[:] = probs / probs.sum(axis=1, keepdims=True)
    return policy


def _check_against_python(game_string: str, policy: Any) -> ExploitabilityResult:
    """Compare with OpenSpiel's Python ``nash_conv`` (per-player improvements too)."""
    game = load_game(game_string)
    tree = _tree(game_string)
    result = exploitability(tree, from_tabular_policy(tree, policy))
    reference = openspiel_exploitability.nash_conv(game, policy, return_only_nash_conv=False)
    assert result.nash_conv == pytest.approx(reference.nash_conv, abs=TOL)
    np.testing.assert_allclose(result.improvements.numpy(), reference.player_improvements,
                               rtol=0, atol=TOL)
    on_policy = expected_game_score.policy_value(game.new_initial_state(),
                                                 [policy] * game.num_players())
    np.testing.assert_allclose(result.policy_values.numpy(), on_policy, rtol=0, atol=TOL)
    np.testing.assert_allclose(result.per_player.numpy(),
                               np.asarray(on_policy) + reference.player_improvements,
                               rtol=0, atol=TOL)
    if game.num_players() == 2 and game.get_type().utility in (
            pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM):
        assert result.exploitability == pytest.approx(
            openspiel_exploitability.exploitability(game, policy), abs=TOL)
    return result


# ---------------------------------------------------------------------------------------
# OpenSpiel comparisons
# ---------------------------------------------------------------------------------------

PYTHON_REFERENCE_GAMES = [
    "kuhn_poker",
    "leduc_poker",
    "liars_dice(dice_sides=3)",
    "turn_based_simultaneous_game(game=goofspiel(num_cards=3))",
    "kuhn_poker(players=3)",
]


@pytest.mark.parametrize("game_string", PYTHON_REFERENCE_GAMES)
def test_uniform_policy_matches_openspiel(game_string: str) -> None:
    game = load_game(game_string)
    _check_against_python(game_string, openspiel_policy.TabularPolicy(game))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("game_string", PYTHON_REFERENCE_GAMES)
def test_random_policy_matches_openspiel(game_string: str, seed: int) -> None:
    game = load_game(game_string)
    _check_against_python(game_string, _random_python_policy(game, seed))


@pytest.mark.parametrize("game_string,iterations", [
    ("kuhn_poker", 50), ("leduc_poker", 5), ("liars_dice(dice_sides=3)", 20),
    ("kuhn_poker(players=3)", 20),
])
def test_cfr_average_policy_matches_openspiel(game_string: str, iterations: int) -> None:
    game = load_game(game_string)
    solver = openspiel_cfr.CFRSolver(game)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    result = _check_against_python(game_string, average)
    # Sanity: CFR's average is far less exploitable than the uniform policy.
    tree = _tree(game_string)
    uniform = exploitability(tree, 1.0 / tree.infoset_num_actions[tree.action_infoset].double())
    assert result.nash_conv < uniform.nash_conv


def test_full_liars_dice_matches_cpp_reference() -> None:
    """Default liars_dice (294,883 nodes) against OpenSpiel's C++ nash_conv/exploitability."""
    game_string = "liars_dice"
    game = load_game(game_string)
    tree = _tree(game_string)
    policy = pyspiel.GetRandomPolicy(game, 7)
    result = exploitability(tree, _slots_from_cpp_policy(tree, policy))
    reference = pyspiel.nash_conv(game, policy)
    assert result.nash_conv == pytest.approx(reference, abs=TOL)
    assert result.exploitability == pytest.approx(reference / 2, abs=TOL)
    # Zero-sum: the policy values cancel.
    assert float(result.policy_values.sum()) == pytest.approx(0.0, abs=TOL)


def test_imperfect_information_goofspiel_matches_cpp_reference() -> None:
    game_string = "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4))"
    game = load_game(game_string)
    tree = _tree(game_string)
    for seed in (1,):
        policy = pyspiel.GetRandomPolicy(game, seed)
        result = exploitability(tree, _slots_from_cpp_policy(tree, policy))
        assert result.nash_conv == pytest.approx(pyspiel.nash_conv(game, policy), abs=TOL)
        assert result.exploitability == pytest.approx(pyspiel.exploitability(game, policy),
                                                      abs=TOL)


def test_cpp_cfr_average_on_leduc() -> None:
    game = load_game("leduc_poker")
    tree = _tree("leduc_poker")
    solver = pyspiel.CFRSolver(game)
    for _ in range(30):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    result = exploitability(tree, _slots_from_cpp_policy(tree, average))
    assert result.nash_conv == pytest.approx(pyspiel.nash_conv(game, average), abs=TOL)
    assert result.exploitability == pytest.approx(pyspiel.exploitability(game, average),
                                                  abs=TOL)


# ---------------------------------------------------------------------------------------
# Kuhn poker: closed-form checks
# ---------------------------------------------------------------------------------------

PASS, BET = 0, 1


def _kuhn_policy(tree: LevelTree, table: dict[str, float]) -> torch.Tensor:
    """Kuhn policy from {infoset key: probability of betting/calling}."""
    return _slots(tree, lambda key: {PASS: 1.0 - table[key], BET: table[key]})


def _kuhn_nash(alpha: float) -> dict[str, float]:
    """The Kuhn equilibrium family (cards 0=J, 1=Q, 2=K), parameter alpha in [0, 1/3]."""
    return {
        # player 0: open, and answer a bet after checking
        "0": alpha, "1": 0.0, "2": 3 * alpha,
        "0pb": 0.0, "1pb": alpha + 1 / 3, "2pb": 1.0,
        # player 1: after a check ("p") or facing a bet ("b")
        "0p": 1 / 3, "1p": 0.0, "2p": 1.0,
        "0b": 0.0, "1b": 1 / 3, "2b": 1.0,
    }


@pytest.mark.parametrize("alpha", [0.0, 0.2, 1 / 3])
def test_kuhn_nash_has_zero_exploitability(alpha: float) -> None:
    tree = _tree("kuhn_poker")
    result = exploitability(tree, _kuhn_policy(tree, _kuhn_nash(alpha)))
    assert result.exploitability == pytest.approx(0.0, abs=1e-12)
    assert float(result.policy_values[0]) == pytest.approx(-1 / 18, abs=1e-12)
    assert result.per_player.tolist() == pytest.approx([-1 / 18, 1 / 18], abs=1e-12)


def test_best_response_to_pure_strategy() -> None:
    """Player 1 always bets/calls; player 0's best response is computed by hand below."""
    tree = _tree("kuhn_poker")
    always_bet = {k: 1.0 for k in ["0p", "1p", "2p", "0b", "1b", "2b"]}
    table = {**_kuhn_nash(0.0), **always_bet}
    policy = _kuhn_policy(tree, table)
    # Player 0's best response to "always bet": with J fold (check, then fold): -1;
    # with Q: opponent holds J or K equally; calling wins 2 vs J, loses 2 vs K (0), folding -1,
    # so call/bet (0); with K: bet or check-call wins 2. Value = (-1 + 0 + 2) / 3 = 1/3.
    values = best_response_values(tree, policy)
    assert float(values[0]) == pytest.approx(1 / 3, abs=1e-12)
    game = load_game("kuhn_poker")
    python_policy = openspiel_policy.TabularPolicy(game)
    for key, row in python_policy.state_lookup.items():
        python_policy.action_probability_array[row] = [1 - table[key], table[key]]
    ref = openspiel_exploitability.best_response(game, python_policy, 0)
    assert float(values[0]) == pytest.approx(ref["best_response_value"], abs=TOL)
    # The returned pure best response achieves that value and is deterministic.
    br = best_response_policy(tree, policy, 0)
    mine = tree.infoset_player[tree.action_infoset] == 0
    assert set(br[mine].tolist()) <= {0.0, 1.0}
    assert float(policy_values(tree, br)[0]) == pytest.approx(1 / 3, abs=1e-12)
    # Player 0 holding J folds to the bet after checking.
    jack = tree.infoset_keys.index("0pb")
    offset = int(tree.infoset_action_offset[jack])
    assert br[offset + PASS] == 1.0


@pytest.mark.parametrize("game_string", ["kuhn_poker", "leduc_poker", "kuhn_poker(players=3)"])
def test_best_response_policy_attains_best_response_value(game_string: str) -> None:
    tree = _tree(game_string)
    game = load_game(game_string)
    policy = from_tabular_policy(tree, _random_python_policy(game, 11))
    values = best_response_values(tree, policy)
    for player in range(tree.num_players):
        br = best_response_policy(tree, policy, player)
        assert float(policy_values(tree, br)[player]) == pytest.approx(float(values[player]),
                                                                       abs=TOL)
        # Against a best response's own policy the player cannot improve.
        assert float(best_response_values(tree, br)[player]) == pytest.approx(
            float(values[player]), abs=TOL)


# ---------------------------------------------------------------------------------------
# Hand-built trees: brute force over pure strategies, infosets spanning several depths
# ---------------------------------------------------------------------------------------
# Node description: ("T", utilities) | ("C", [(prob, child), ...]) |
# ("P", player, key, [(action_id, child), ...]).


def _build_tree(root: tuple, num_players: int) -> LevelTree:
    """Flatten a nested node description into a LevelTree (breadth first)."""
    keys: dict[str, int] = {}
    key_list: list[str] = []
    infoset_player: list[int] = []
    infoset_actions: list[list[int]] = []
    offsets: list[int] = []
    levels: list[Level] = []
    frontier: list[tuple[tuple, int, int, float]] = [(root, -1, -1, 1.0)]
    num_slots = 0
    while frontier:
        parent, kind, infoset, slot_of, chance_prob, utility = [], [], [], [], [], []
        nxt: list[tuple[tuple, int, int, float]] = []
        for index, (node, par, slot, prob) in enumerate(frontier):
            parent.append(par)
            slot_of.append(slot)
            chance_prob.append(prob)
            if node[0] == "T":
                kind.append(KIND_TERMINAL)
                infoset.append(-1)
                utility.append(list(node[1]))
                continue
            utility.append([0.0] * num_players)
            if node[0] == "C":
                kind.append(KIND_CHANCE)
                infoset.append(-1)
                nxt.extend((child, index, -1, p) for p, child in node[1])
                continue
            _, player, key, edges = node
            actions = [a for a, _ in edges]
            if key not in keys:
                keys[key] = len(key_list)
                key_list.append(key)
                infoset_player.append(player)
                infoset_actions.append(actions)
                offsets.append(num_slots)
                num_slots += len(actions)
            info = keys[key]
            assert infoset_actions[info] == actions and infoset_player[info] == player
            kind.append(player)
            infoset.append(info)
            nxt.extend((child, index, offsets[info] + j, 1.0) for j, (_, child) in enumerate(edges))
        levels.append(Level(
            parent=torch.tensor(parent, dtype=torch.long),
            kind=torch.tensor(kind, dtype=torch.int8),
            infoset=torch.tensor(infoset, dtype=torch.long),
            parent_action_slot=torch.tensor(slot_of, dtype=torch.long),
            chance_prob=torch.tensor(chance_prob, dtype=torch.float64),
            utility=torch.tensor(utility, dtype=torch.float64).reshape(-1, num_players),
        ))
        frontier = nxt
    counts = [len(a) for a in infoset_actions]
    tree = LevelTree(
        num_players=num_players, levels=levels, num_infosets=len(key_list),
        infoset_player=torch.tensor(infoset_player, dtype=torch.long),
        infoset_num_actions=torch.tensor(counts, dtype=torch.long),
        infoset_action_offset=torch.tensor(offsets, dtype=torch.long),
        action_infoset=torch.repeat_interleave(torch.arange(len(key_list)),
                                               torch.tensor(counts, dtype=torch.long)),
        action_id=torch.tensor([a for acts in infoset_actions for a in acts], dtype=torch.long),
        infoset_keys=key_list, game_string="hand_built",
    )
    tree.validate()
    return tree


def _random_game(seed: int, num_players: int, max_depth: int = 5) -> tuple:
    """A random perfect-recall game with chance nodes at random depths.

    A player's information state is (own earlier information states and actions, a coarse
    token of the history): perfect recall holds, while chance nodes inserted at random
    depths make one information state appear at several depths.
    """
    rng = np.random.default_rng(seed)

    def gen(depth: int, own: tuple, history: tuple) -> tuple:
        r = rng.random()
        if depth >= max_depth or (depth > 1 and r < 0.2):
            return ("T", tuple(float(u) for u in rng.integers(-3, 4, size=num_players)))
        if r < 0.45:
            k = int(rng.integers(2, 4))
            probs = rng.dirichlet(np.ones(k))
            return ("C", [(float(p), gen(depth + 1, own, history + (("c", i),)))
                          for i, p in enumerate(probs)])
        player = int(rng.integers(num_players))
        token = sum(1 for h in history if h == ("c", 0)) % 2
        key = f"p{player}|{own[player]}|{token}"
        n_actions = 2 + zlib.crc32(key.encode()) % 2
        action_ids = [3 * a + 1 for a in range(n_actions)]
        edges = []
        for a in action_ids:
            new_own = own[:player] + ((own[player] + ((key, a),)),) + own[player + 1:]
            edges.append((a, gen(depth + 1, new_own, history + ((player, a),))))
        return ("P", player, key, edges)

    return gen(0, tuple(() for _ in range(num_players)), ())


def _evaluate(node: tuple, policy: dict[str, dict[int, float]], num_players: int) -> np.ndarray:
    """Expected utilities by plain recursion (independent of the tensor code)."""
    if node[0] == "T":
        return np.array(node[1], dtype=np.float64)
    if node[0] == "C":
        return sum(p * _evaluate(child, policy, num_players) for p, child in node[1])
    _, _, key, edges = node
    return sum(policy[key][a] * _evaluate(child, policy, num_players) for a, child in edges)


def _policy_dict(tree: LevelTree, slots: torch.Tensor) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {key: {} for key in tree.infoset_keys}
    for s in range(tree.num_slots):
        out[tree.infoset_keys[int(tree.action_infoset[s])]][int(tree.action_id[s])] = float(slots[s])
    return out


def _brute_force_best_response(root: tuple, tree: LevelTree, slots: torch.Tensor,
                               player: int) -> float:
    """Max over every pure strategy of ``player`` (one action per infoset)."""
    base = _policy_dict(tree, slots)
    mine = [i for i in range(tree.num_infosets) if int(tree.infoset_player[i]) == player]
    choices = [tree.action_id[tree.action_infoset == i].tolist() for i in mine]
    best = -np.inf
    for pure in itertools.product(*choices):
        policy = dict(base)
        for info, action in zip(mine, pure):
            key = tree.infoset_keys[info]
            policy[key] = {a: float(a == action) for a in policy[key]}
        best = max(best, float(_evaluate(root, policy, tree.num_players)[player]))
    return best


def _random_slots(tree: LevelTree, seed: int, pure_fraction: float = 0.3) -> torch.Tensor:
    """Random policy; a fraction of infosets get a pure (0/1) strategy."""
    gen = torch.Generator().manual_seed(seed)
    raw = torch.rand(tree.num_slots, generator=gen, dtype=torch.float64)
    pure = torch.rand(tree.num_infosets, generator=gen, dtype=torch.float64) < pure_fraction
    sums = torch.zeros(tree.num_infosets, dtype=torch.float64).index_add_(
        0, tree.action_infoset, raw)
    mixed = raw / sums[tree.action_infoset]
    first = tree.infoset_action_offset[tree.action_infoset] == torch.arange(tree.num_slots)
    return torch.where(pure[tree.action_infoset], first.double(), mixed)


def _mixed_depth_infosets(tree: LevelTree) -> int:
    lowest = torch.full((tree.num_infosets,), 10**9, dtype=torch.long)
    highest = torch.full((tree.num_infosets,), -1, dtype=torch.long)
    for depth, level in enumerate(tree.levels):
        decision = level.kind >= 0
        depths = torch.full((int(decision.sum()),), depth, dtype=torch.long)
        lowest.scatter_reduce_(0, level.infoset[decision], depths, "amin")
        highest.scatter_reduce_(0, level.infoset[decision], depths, "amax")
    return int((lowest != highest).sum())


def _small_random_games() -> list[tuple[int, int]]:
    """(seed, num_players) of random games whose pure strategy spaces are brute-forceable."""
    chosen = []
    for seed in range(200):
        num_players = 2 + seed % 2
        tree = _build_tree(_random_game(seed, num_players), num_players)
        sizes = []
        for p in range(num_players):
            mine = tree.infoset_player == p
            sizes.append(int(torch.prod(tree.infoset_num_actions[mine].double())))
        if tree.num_infosets >= 4 and max(sizes) <= 400:
            chosen.append((seed, num_players))
        if len(chosen) == 16:
            break
    return chosen


RANDOM_GAMES = _small_random_games()


def test_random_games_include_infosets_spanning_depths() -> None:
    mixed = sum(_mixed_depth_infosets(_build_tree(_random_game(s, n), n)) > 0
                for s, n in RANDOM_GAMES)
    assert len(RANDOM_GAMES) == 16 and mixed >= len(RANDOM_GAMES) // 2


@pytest.mark.parametrize("seed,num_players", RANDOM_GAMES)
def test_random_games_match_brute_force(seed: int, num_players: int) -> None:
    root = _random_game(seed, num_players)
    tree = _build_tree(root, num_players)
    slots = _random_slots(tree, seed)
    result = exploitability(tree, slots)
    expected_values = _evaluate(root, _policy_dict(tree, slots), num_players)
    np.testing.assert_allclose(result.policy_values.numpy(), expected_values, rtol=0, atol=TOL)
    for player in range(num_players):
        expected = _brute_force_best_response(root, tree, slots, player)
        assert float(result.per_player[player]) == pytest.approx(expected, abs=TOL)
        br = best_response_policy(tree, slots, player)
        attained = _evaluate(root, _policy_dict(tree, br), num_players)[player]
        assert attained == pytest.approx(expected, abs=TOL)
    assert result.nash_conv == pytest.approx(float((result.per_player - result.policy_values)
                                                   .sum()), abs=1e-12)
    assert result.nash_conv >= -TOL


def test_mixed_depth_infoset_picks_one_action_for_all_its_nodes() -> None:
    """Player 0 cannot tell whether chance moved once or twice: its infoset "x" has nodes at
    depths 1 and 2. Per node the best actions differ; the best response must pick the action
    with the larger chance-weighted sum."""
    left = ("P", 0, "x", [(0, ("T", (3.0, -3.0))), (1, ("T", (0.0, 0.0)))])
    right = ("P", 0, "x", [(0, ("T", (-1.0, 1.0))), (1, ("T", (2.0, -2.0)))])
    root = ("C", [(0.25, left), (0.75, ("C", [(1.0, right)]))])
    tree = _build_tree(root, 2)
    assert _mixed_depth_infosets(tree) == 1
    slots = torch.tensor([0.5, 0.5], dtype=torch.float64)
    # action 0: 0.25*3 + 0.75*(-1) = 0; action 1: 0.25*0 + 0.75*2 = 1.5 -> 1.5
    # (a per-node maximum would wrongly give 0.25*3 + 0.75*2 = 2.25).
    values = best_response_values(tree, slots)
    # Player 1 has no decision, so its best-response value is its policy value.
    assert values.tolist() == pytest.approx([1.5, -0.75], abs=1e-12)
    assert best_response_policy(tree, slots, 0).tolist() == [0.0, 1.0]
    result = exploitability(tree, slots)
    assert result.policy_values.tolist() == pytest.approx([0.75, -0.75], abs=1e-12)
    assert result.nash_conv == pytest.approx(1.5 - 0.75, abs=1e-12)


def test_imperfect_recall_is_rejected() -> None:
    """Player 0 acts twice but forgets its first action: not perfect recall."""
    second = lambda base: ("P", 0, "forgot", [(0, ("T", (base, -base))), (1, ("T", (0.0, 0.0)))])  # noqa: E731
    root = ("P", 0, "start", [(0, second(1.0)), (1, second(-1.0))])
    tree = _build_tree(root, 2)
    slots = torch.tensor([0.5, 0.5, 0.5, 0.5], dtype=torch.float64)
    with pytest.raises(NotPerfectRecallError):
        exploitability(tree, slots)
    assert issubclass(NotPerfectRecallError, TensorCFRError)


# ---------------------------------------------------------------------------------------
# Input validation, devices, dtypes
# ---------------------------------------------------------------------------------------


def test_bad_policies_raise_policy_error() -> None:
    tree = _tree("kuhn_poker")
    uniform = 1.0 / tree.infoset_num_actions[tree.action_infoset].double()
    with pytest.raises(PolicyError, match="shape"):
        exploitability(tree, uniform[:-1])
    negative = uniform.clone()
    negative[0], negative[1] = -0.5, 1.5
    with pytest.raises(PolicyError, match="negative"):
        exploitability(tree, negative)
    unnormalized = uniform * 1.1
    with pytest.raises(PolicyError, match="sum to"):
        best_response_values(tree, unnormalized)
    with pytest.raises(PolicyError, match="NaN"):
        validate_policy(tree, torch.full_like(uniform, float("nan")))
    with pytest.raises(PolicyError, match="player"):
        best_response_policy(tree, uniform, 2)
    assert issubclass(PolicyError, TensorCFRError)


def test_float32_tree_and_policy_are_computed_in_float64() -> None:
    tree64 = _tree("leduc_poker")
    game = load_game("leduc_poker")
    slots = from_tabular_policy(tree64, _random_python_policy(game, 5))
    reference = exploitability(tree64, slots)
    # float32 chance probabilities are rounded (1/6 etc.), so agreement is to ~1e-7.
    result = exploitability(tree64.to("cpu", torch.float32), slots.float())
    assert result.per_player.dtype == torch.float64
    assert result.policy_values.dtype == torch.float64
    assert result.nash_conv == pytest.approx(reference.nash_conv, abs=1e-5)
    payload = result.to_dict()
    assert set(payload) == {"best_response_values", "policy_values", "improvements",
                            "nash_conv", "exploitability"}
    assert payload["exploitability"] == pytest.approx(result.nash_conv / 2)
    # Lists and numpy arrays are read in float64.
    assert exploitability(tree64, slots.tolist()).nash_conv == reference.nash_conv
    assert exploitability(tree64, slots.numpy()).nash_conv == reference.nash_conv


def test_low_precision_policies_get_a_looser_sum_tolerance() -> None:
    tree = _tree("kuhn_poker")
    uniform = 1.0 / tree.infoset_num_actions[tree.action_infoset].double()
    off = uniform * (1 + 2e-5)
    with pytest.raises(PolicyError):
        validate_policy(tree, off)
    validate_policy(tree, off.float())
    validate_policy(tree, off, tolerance=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu() -> None:  # pragma: no cover - no GPU on the reference machine
    tree = _tree("leduc_poker")
    uniform = 1.0 / tree.infoset_num_actions[tree.action_infoset].double()
    cpu = exploitability(tree, uniform)
    gpu = exploitability(tree, uniform, device="cuda")
    assert gpu.per_player.device.type == "cuda"
    assert gpu.nash_conv == pytest.approx(cpu.nash_conv, abs=1e-12)


# ---------------------------------------------------------------------------------------
# CLI: tensorcfr exploitability GAME_STRING POLICY_FILE [--json]
# ---------------------------------------------------------------------------------------

_cli_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
_cli_app.command("exploitability")(exploitability_command)


@_cli_app.callback()
def _cli_root() -> None:
    """Test wrapper holding only the exploitability command."""


_runner = CliRunner()


def _saved_policy(tmp_path: Path, game_string: str, seed: int | None = None) -> tuple[Path, Any]:
    """Save a uniform (seed None) or random policy of ``game_string``; return path and policy."""
    game = load_game(game_string)
    tree = _tree(game_string)
    policy = (openspiel_policy.TabularPolicy(game) if seed is None
              else _random_python_policy(game, seed))
    path = tmp_path / f"policy_{seed}.npz"
    save_policy(path, tree, from_tabular_policy(tree, policy), extra={"algorithm": "test"})
    return path, policy


def test_cli_json_matches_openspiel(tmp_path: Path) -> None:
    path, policy = _saved_policy(tmp_path, "kuhn_poker(players=3)", seed=4)
    result = _runner.invoke(_cli_app, ["exploitability", "kuhn_poker(players=3)", str(path),
                                       "--json"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    game = load_game("kuhn_poker(players=3)")
    assert report["game"] == str(game)
    assert report["num_players"] == 3
    assert report["nash_conv"] == pytest.approx(openspiel_exploitability.nash_conv(game, policy),
                                                abs=TOL)
    assert report["exploitability"] == pytest.approx(report["nash_conv"] / 3, abs=1e-15)
    assert len(report["best_response_values"]) == len(report["policy_values"]) == 3
    assert report["threads"] == 1


def test_cli_text_output(tmp_path: Path) -> None:
    path, policy = _saved_policy(tmp_path, "kuhn_poker")
    result = _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(path)])
    assert result.exit_code == 0, result.output
    expected = openspiel_exploitability.exploitability(load_game("kuhn_poker"), policy)
    assert "NashConv" in result.stdout and "exploitability" in result.stdout
    assert f"{expected:.12g}" in result.stdout


def _assert_one_line_error(result: Any, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    message = result.stderr.strip()
    assert message.startswith("error:") and len(message.splitlines()) == 1, message
    assert fragment in message
    assert result.stdout == ""


def test_cli_user_errors_are_one_line(tmp_path: Path) -> None:
    path, _ = _saved_policy(tmp_path, "kuhn_poker")
    # A policy for another game.
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "leduc_poker", str(path), "--json"]),
        "is for kuhn_poker")
    # Truncated and garbage files.
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(truncated)]), "NPZ")
    garbage = tmp_path / "garbage.npz"
    garbage.write_text("not a policy\n" * 5)
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(garbage)]), "garbage")
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(tmp_path / "none.npz")]),
        "does not exist")
    # Unknown game.
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_pokr", str(path)]), "unknown game")
    # A policy whose probabilities are not normalized.
    tree = _tree("kuhn_poker")
    bad = tmp_path / "unnormalized.npz"
    save_policy(bad, tree, torch.full((tree.num_slots,), 0.7, dtype=torch.float64))
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(bad)]), "sum to")
    # Impossible options.
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(path), "--device", "nope"]),
        "not a torch device")
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(path),
                                  "--max-memory", "1K"]), "limit")
    _assert_one_line_error(
        _runner.invoke(_cli_app, ["exploitability", "kuhn_poker", str(path),
                                  "--max-memory", "lots"]), "memory")


def test_cli_entry_point_exit_code(tmp_path: Path) -> None:
    """Through the real ``tensorcfr`` entry point (once the command is registered there):
    a corrupt file gives exit code 2 and one line on stderr, no traceback."""
    from tensorcfr.cli.main import app

    names = {command.name for command in app.registered_commands}
    if "exploitability" not in names:
        pytest.skip("exploitability is not registered in tensorcfr.cli.main yet")
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 broken")
    bad = subprocess.run([sys.executable, "-m", "tensorcfr.cli.main", "exploitability",
                          "kuhn_poker", str(corrupt)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("game_string,algo", [("kuhn_poker", "cfr+"), ("leduc_poker", "dcfr")])
def test_tensor_cfr_average_policy_matches_openspiel(game_string: str, algo: str) -> None:
    """The shared solver's average policy (its own tree, float64) against OpenSpiel."""
    from tensorcfr.games.openspiel import TensorCFRSolver

    solver = TensorCFRSolver(game_string, algo=algo)
    solver.iterate(20)
    result = exploitability(solver.tree, solver.average_policy())
    game = load_game(game_string)
    reference = openspiel_exploitability.nash_conv(game, solver.average_policy_tabular())
    assert result.nash_conv == pytest.approx(reference, abs=TOL)


def test_infoset_without_nodes_is_ignored() -> None:
    """An infoset no history reaches (possible in a hand-made tree) changes nothing."""
    from dataclasses import replace

    root = _random_game(2, 2)
    tree = _build_tree(root, 2)
    slots = _random_slots(tree, 2)
    expected = exploitability(tree, slots)
    extra = replace(
        tree,
        num_infosets=tree.num_infosets + 1,
        infoset_player=torch.cat([tree.infoset_player, torch.tensor([1])]),
        infoset_num_actions=torch.cat([tree.infoset_num_actions, torch.tensor([2])]),
        infoset_action_offset=torch.cat([tree.infoset_action_offset,
                                         torch.tensor([tree.num_slots])]),
        action_infoset=torch.cat([tree.action_infoset,
                                  torch.tensor([tree.num_infosets, tree.num_infosets])]),
        action_id=torch.cat([tree.action_id, torch.tensor([0, 1])]),
        infoset_keys=[*tree.infoset_keys, "unreached"],
    )
    result = exploitability(extra, torch.cat([slots, torch.tensor([0.5, 0.5],
                                                                  dtype=torch.float64)]))
    assert result.per_player.tolist() == expected.per_player.tolist()
    assert result.nash_conv == expected.nash_conv
