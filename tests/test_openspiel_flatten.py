"""Flattening OpenSpiel games into LevelTrees: counts, invariants, errors, values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorcfr.core.solver import policy_values
from tensorcfr.games.openspiel.policy import to_tabular_policy
from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, Level, LevelTree, estimate_tree_bytes
from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.games.openspiel import GameLoadError, UnsupportedGameError, flatten_game, load_game
from tensorcfr.games.openspiel.flatten import _check_perfect_recall, perfect_recall_violations


@pytest.fixture(scope="module")
def kuhn() -> LevelTree:
    return flatten_game("kuhn_poker")


@pytest.fixture(scope="module")
def leduc() -> LevelTree:
    return flatten_game("leduc_poker")


@pytest.mark.parametrize("game,nodes,terminals,infosets,slots,players", [
    ("kuhn_poker", 58, 30, 12, 24, 2),
    ("kuhn_poker(players=3)", 617, 312, 48, 96, 3),
    ("leduc_poker", 9457, 5520, 936, 2184, 2),
])
def test_counts(game: str, nodes: int, terminals: int, infosets: int, slots: int,
                players: int) -> None:
    tree = flatten_game(game)
    tree.validate()
    assert (tree.num_nodes, tree.num_terminals, tree.num_infosets, tree.num_slots,
            tree.num_players) == (nodes, terminals, infosets, slots, players)
    assert tree.setup_seconds > 0
    assert tree.memory_bytes() > 0


def test_level_layout(kuhn: LevelTree) -> None:
    assert kuhn.level_sizes() == [1, 3, 6, 12, 24, 12]
    root = kuhn.levels[0]
    assert int(root.kind[0]) == KIND_CHANCE and int(root.parent[0]) == -1
    # Children of a chance node: probabilities sum to one per parent.
    for d in range(1, kuhn.depth):
        level, above = kuhn.levels[d], kuhn.levels[d - 1]
        chance_children = above.kind[level.parent] == KIND_CHANCE
        sums = torch.zeros(above.num_nodes, dtype=torch.float64).index_add_(
            0, level.parent[chance_children], level.chance_prob[chance_children])
        assert torch.allclose(sums[above.kind == KIND_CHANCE], torch.ones(1, dtype=torch.float64))
    # Terminal utilities are zero-sum, zero elsewhere.
    for level in kuhn.levels:
        terminal = level.kind == KIND_TERMINAL
        assert torch.allclose(level.utility[terminal].sum(1), torch.zeros(1, dtype=torch.float64))
        assert (level.utility[~terminal] == 0).all()
    # Slots: offsets/num_actions consistent with action_infoset; kuhn actions are pass/bet.
    assert torch.equal(kuhn.action_infoset, torch.repeat_interleave(
        torch.arange(kuhn.num_infosets), kuhn.infoset_num_actions))
    assert set(kuhn.action_id.tolist()) == {0, 1}
    assert kuhn.game_string == "kuhn_poker()"
    assert len(set(kuhn.infoset_keys)) == kuhn.num_infosets


def test_to_float32(kuhn: LevelTree) -> None:
    small = kuhn.to("cpu", torch.float32)
    assert small.dtype == torch.float32 and kuhn.dtype == torch.float64
    assert small.memory_bytes() < kuhn.memory_bytes()
    assert small.num_nodes == kuhn.num_nodes


def test_simultaneous_game_is_converted() -> None:
    tree = flatten_game("goofspiel(num_cards=3)")
    assert tree.game_string.startswith("turn_based_simultaneous_game(")
    tree.validate()
    assert tree.num_infosets > 0


def test_unknown_game_suggests_close_names() -> None:
    with pytest.raises(GameLoadError, match="kuhn_poker"):
        load_game("kuhn_pokr")


@pytest.mark.parametrize("game", ["kuhn_poker(players=x)", "kuhn_poker(players=3",
                                  "kuhn_poker(foo=1)", ""])
def test_bad_game_strings(game: str) -> None:
    with pytest.raises(GameLoadError) as info:
        load_game(game)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("game,reason", [("breakthrough", "information_state_string"),
                                         ("bridge_uncontested_bidding", "sampled")])
def test_unsupported_games(game: str, reason: str) -> None:
    with pytest.raises(UnsupportedGameError, match=reason):
        load_game(game)


def test_memory_limit_refuses_before_building() -> None:
    with pytest.raises(MemoryLimitError, match="limit"):
        flatten_game("leduc_poker", max_memory_bytes=100_000)
    with pytest.raises(MemoryLimitError):
        flatten_game("leduc_poker", max_nodes=1000)


def test_estimate_grows_with_size() -> None:
    assert estimate_tree_bytes(1000, 100, 50, 2) < estimate_tree_bytes(2000, 100, 50, 2)
    assert estimate_tree_bytes(1000, 100, 50, 2, solver=False) < estimate_tree_bytes(1000, 100,
                                                                                     50, 2)


def _tiny_tree(second_infoset_of_right: int) -> LevelTree:
    """Player 0 acts at the root (infoset 0: L/R), then again at both children.

    With ``second_infoset_of_right == 1`` both children share infoset 1 although player 0
    took different actions to reach them: imperfect recall.
    """
    i64 = torch.long
    f64 = torch.float64
    root = Level(parent=torch.tensor([-1], dtype=i64), kind=torch.tensor([0], dtype=torch.int8),
                 infoset=torch.tensor([0], dtype=i64),
                 parent_action_slot=torch.tensor([-1], dtype=i64),
                 chance_prob=torch.ones(1, dtype=f64), utility=torch.zeros(1, 1, dtype=f64))
    middle = Level(parent=torch.tensor([0, 0], dtype=i64),
                   kind=torch.tensor([0, 0], dtype=torch.int8),
                   infoset=torch.tensor([1, second_infoset_of_right], dtype=i64),
                   parent_action_slot=torch.tensor([0, 1], dtype=i64),
                   chance_prob=torch.ones(2, dtype=f64), utility=torch.zeros(2, 1, dtype=f64))
    num_infosets = 2 if second_infoset_of_right == 1 else 3
    offsets = torch.arange(num_infosets, dtype=i64) * 2
    slot_of_leaf = torch.tensor([2, 3, 2 * second_infoset_of_right, 2 * second_infoset_of_right + 1])
    leaves = Level(parent=torch.tensor([0, 0, 1, 1], dtype=i64),
                   kind=torch.full((4,), KIND_TERMINAL, dtype=torch.int8),
                   infoset=torch.full((4,), -1, dtype=i64), parent_action_slot=slot_of_leaf,
                   chance_prob=torch.ones(4, dtype=f64),
                   utility=torch.tensor([[1.0], [0.0], [0.0], [2.0]], dtype=f64))
    return LevelTree(num_players=1, levels=[root, middle, leaves], num_infosets=num_infosets,
                     infoset_player=torch.zeros(num_infosets, dtype=i64),
                     infoset_num_actions=torch.full((num_infosets,), 2, dtype=i64),
                     infoset_action_offset=offsets,
                     action_infoset=torch.arange(num_infosets).repeat_interleave(2),
                     action_id=torch.tensor([0, 1] * num_infosets),
                     infoset_keys=[f"i{k}" for k in range(num_infosets)], game_string="tiny")


def test_perfect_recall_check() -> None:
    good = _tiny_tree(2)
    good.validate()
    _check_perfect_recall(good)
    assert perfect_recall_violations(good) == (0, None)
    bad = _tiny_tree(1)
    bad.validate()
    assert perfect_recall_violations(bad) == (1, "i1")
    with pytest.raises(UnsupportedGameError, match="perfect recall"):
        _check_perfect_recall(bad)


def test_imperfect_recall_game_is_flagged_not_refused() -> None:
    # goofspiel's info-state strings forget the order of one's own bids.
    tree = flatten_game("goofspiel(num_cards=4)")
    assert tree.metadata["perfect_recall"] is False
    assert tree.metadata["imperfect_recall_infosets"] > 0
    with pytest.raises(UnsupportedGameError, match="perfect recall"):
        flatten_game("goofspiel(num_cards=4)", require_perfect_recall=True)
    assert flatten_game("kuhn_poker").metadata["perfect_recall"] is True


def test_validate_rejects_broken_tree(kuhn: LevelTree) -> None:
    broken = kuhn.to("cpu")
    broken.levels[2].parent = broken.levels[2].parent.flip(0)
    with pytest.raises(TensorCFRError):
        broken.validate()


@pytest.mark.parametrize("game", ["kuhn_poker", "kuhn_poker(players=3)", "leduc_poker"])
def test_policy_values_match_openspiel(game: str) -> None:
    from open_spiel.python.algorithms import expected_game_score

    tree = flatten_game(game)
    generator = torch.Generator().manual_seed(3)
    raw = torch.rand(tree.num_slots, generator=generator, dtype=torch.float64) + 0.05
    sums = torch.zeros(tree.num_infosets, dtype=torch.float64).index_add_(
        0, tree.action_infoset, raw)
    policy = raw / sums[tree.action_infoset]
    loaded = load_game(game)
    tabular = to_tabular_policy(tree, policy, loaded)
    expected = expected_game_score.policy_value(loaded.new_initial_state(),
                                                [tabular] * tree.num_players)
    ours = policy_values(tree, policy)
    assert np.allclose(ours.numpy(), np.asarray(expected), atol=1e-12)
