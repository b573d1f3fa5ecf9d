"""The compact LevelTree layout: int32 indices, terminal-only payoffs, chance-edge-only
probabilities, packed infoset keys; dense views and the former layout still accepted."""

from __future__ import annotations

import pickle

import pytest
import torch

from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, InfosetKeys, Level, LevelTree
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.openspiel import flatten_game


@pytest.fixture(scope="module")
def kuhn() -> LevelTree:
    return flatten_game("kuhn_poker")


def test_compact_dtypes_and_shapes(kuhn: LevelTree) -> None:
    for level in kuhn.levels:
        assert level.parent.dtype == torch.int32
        assert level.infoset.dtype == torch.int32
        assert level.parent_action_slot.dtype == torch.int32
        assert level.kind.dtype == torch.int8
        terminals = int((level.kind == KIND_TERMINAL).sum())
        assert tuple(level.terminal_utility.shape) == (terminals, 2)
        assert level.chance_edge_prob.shape[0] == int((level.parent_action_slot < 0).sum())
    assert kuhn.action_infoset.dtype == torch.int32 and kuhn.action_id.dtype == torch.int32
    assert isinstance(kuhn.infoset_keys, InfosetKeys)
    # 13 bytes per node, payoffs only at the 30 terminals, chance edges only below chance.
    level_bytes = sum(t.numel() * t.element_size() for lv in kuhn.levels for _, t in lv.tensors())
    assert level_bytes == 58 * 13 + 30 * 2 * 8 + (1 + 3 + 6) * 8


def test_dense_views_match_compact(kuhn: LevelTree) -> None:
    for d, level in enumerate(kuhn.levels):
        dense = level.utility
        terminal = level.kind == KIND_TERMINAL
        assert dense.shape == (level.num_nodes, 2)
        assert torch.equal(dense[terminal], level.terminal_utility)
        assert (dense[~terminal] == 0).all()
        probs = level.chance_prob
        assert torch.equal(probs[level.parent_action_slot >= 0],
                           torch.ones(int((level.parent_action_slot >= 0).sum()),
                                      dtype=torch.float64))
        if d > 0:
            above = kuhn.levels[d - 1]
            below_chance = above.kind[level.parent.long()] == KIND_CHANCE
            assert torch.equal(probs[below_chance], level.chance_edge_prob)
        # Assigning a dense array stores its compact form.
        level.utility = dense * 2
        assert torch.equal(level.terminal_utility, dense[terminal] * 2)
        level.utility = dense
        with pytest.raises(TensorCFRError):
            level.utility = torch.zeros(level.num_nodes + 1, 2, dtype=torch.float64)


def test_former_dense_layout_is_accepted(kuhn: LevelTree) -> None:
    state = kuhn.state_dict()
    state["levels"] = [level.dense_dict() for level in kuhn.levels]  # int64 + dense arrays
    tree = LevelTree.from_state_dict(state)
    for new, old in zip(tree.levels, kuhn.levels):
        assert new.parent.dtype == torch.int32
        for name, tensor in old.tensors():
            assert torch.equal(getattr(new, name), tensor), name
    assert tree.infoset_keys == kuhn.infoset_keys
    # And the compact state dict round-trips through torch.save-able plain types.
    again = LevelTree.from_state_dict(kuhn.state_dict())
    assert again.infoset_keys == list(kuhn.infoset_keys)
    assert isinstance(kuhn.state_dict()["infoset_keys"], list)


def test_level_needs_one_form_of_each_array() -> None:
    i32 = torch.int32
    base = dict(parent=torch.tensor([-1], dtype=i32), kind=torch.tensor([KIND_TERMINAL],
                                                                        dtype=torch.int8),
                infoset=torch.tensor([-1], dtype=i32),
                parent_action_slot=torch.tensor([-1], dtype=i32))
    with pytest.raises(TensorCFRError, match="exactly one"):
        Level(**base, utility=torch.zeros(1, 1))
    with pytest.raises(TensorCFRError, match="exactly one"):
        Level(**base, chance_prob=torch.ones(1), chance_edge_prob=torch.ones(1),
              utility=torch.zeros(1, 1))
    level = Level(**base, chance_prob=torch.ones(1), utility=torch.tensor([[3.0]]))
    assert torch.equal(level.terminal_utility, torch.tensor([[3.0]]))
    with pytest.raises(TensorCFRError, match="integers"):
        Level(**{**base, "parent": torch.tensor([-1.0])}, chance_prob=torch.ones(1),
              utility=torch.zeros(1, 1))


def test_validate_checks_compact_shapes(kuhn: LevelTree) -> None:
    state = kuhn.state_dict()
    state["levels"][-1]["terminal_utility"] = state["levels"][-1]["terminal_utility"][1:]
    with pytest.raises(CorruptFileError, match="terminal_utility"):
        LevelTree.from_state_dict(state)
    state = kuhn.state_dict()
    state["levels"][1]["chance_edge_prob"] = state["levels"][1]["chance_edge_prob"][:-1]
    with pytest.raises(CorruptFileError, match="chance_edge_prob"):
        LevelTree.from_state_dict(state)


def test_infoset_keys_behave_like_a_list() -> None:
    words = ["", "a", "pass bet", "Ünïcödé ♠", "x" * 1000, "a"]
    keys = InfosetKeys(words)
    assert len(keys) == 6 and list(keys) == words and keys == words and words == keys
    assert keys[3] == "Ünïcödé ♠" and keys[-1] == "a" and keys[1:3] == ["a", "pass bet"]
    assert "pass bet" in keys and "nope" not in keys
    assert keys.index("pass bet") == 2
    assert keys != words[:-1] and keys != ["b"] * 6
    assert InfosetKeys(keys) == keys and InfosetKeys(iter(words)) == keys
    assert pickle.loads(pickle.dumps(keys)) == keys
    with pytest.raises(IndexError):
        keys[6]
    ascii_keys = InfosetKeys(["ab", "c"])
    assert ascii_keys.nbytes == 3 + 3 * 4  # text plus int32 offsets
    assert list(InfosetKeys([])) == [] and len(InfosetKeys()) == 0


def test_to_keeps_compact_layout(kuhn: LevelTree) -> None:
    small = kuhn.to("cpu", torch.float32)
    for level in small.levels:
        assert level.terminal_utility.dtype == torch.float32
        assert level.chance_edge_prob.dtype == torch.float32
        assert level.parent.dtype == torch.int32
    assert small.infoset_keys == kuhn.infoset_keys
    small.validate()
