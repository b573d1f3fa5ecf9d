"""Policies of the tensor CFR solvers as OpenSpiel ``TabularPolicy`` objects and back.

The core keeps policies as probability tensors over a :class:`~tensorcfr.core.tree.LevelTree`'s
infoset-action slots; these adapters map them to the rows (information-state strings) and
columns (action ids) of OpenSpiel's tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.policy_io import SavedPolicy
from tensorcfr.core.tree import LevelTree
from tensorcfr.errors import TensorCFRError

__all__ = ["to_tabular_policy", "from_tabular_policy", "saved_policy_to_tabular"]


def _game_for(game_string: str, game: Any) -> Any:
    if game is not None:
        return game
    from tensorcfr.games.openspiel.flatten import load_game

    return load_game(game_string)


def _fill_tabular(game: Any, infoset_keys: list[str], infoset_num_actions: np.ndarray,
                  action_ids: np.ndarray, probabilities: np.ndarray) -> Any:
    from open_spiel.python import policy as openspiel_policy

    tabular = openspiel_policy.TabularPolicy(game)
    lookup = tabular.state_lookup
    try:
        rows = np.fromiter((lookup[key] for key in infoset_keys), dtype=np.int64,
                           count=len(infoset_keys))
    except KeyError as exc:
        raise TensorCFRError(f"information state {exc.args[0]!r} of the policy is not a state "
                             f"of {game}") from None
    slot_rows = np.repeat(rows, infoset_num_actions)
    table = tabular.action_probability_array
    table[rows] = 0.0
    table[slot_rows, action_ids] = probabilities
    return tabular


def to_tabular_policy(tree: LevelTree, policy: Tensor, game: Any = None) -> Any:
    """An OpenSpiel ``TabularPolicy`` holding ``policy`` [A] (tree slot order).

    ``game`` (a ``pyspiel.Game``) defaults to loading ``tree.game_string``.  Rows of the
    table not in the tree (none for a fully walked game) keep OpenSpiel's uniform default.
    """
    if tuple(policy.shape) != (tree.num_slots,):
        raise TensorCFRError(f"policy must have shape ({tree.num_slots},), got "
                             f"{tuple(policy.shape)}")
    return _fill_tabular(_game_for(tree.game_string, game), tree.infoset_keys,
                         tree.infoset_num_actions.cpu().numpy(), tree.action_id.cpu().numpy(),
                         policy.detach().cpu().to(torch.float64).numpy())


def saved_policy_to_tabular(saved: SavedPolicy, game: Any = None) -> Any:
    """A policy file's contents (:func:`tensorcfr.core.policy_io.load_policy`) as an OpenSpiel
    ``TabularPolicy`` (``game`` defaults to loading ``saved.game_string``)."""
    return _fill_tabular(_game_for(saved.game_string, game), saved.infoset_keys,
                         saved.infoset_num_actions.numpy(), saved.action_id.numpy(),
                         saved.probabilities.numpy())


def from_tabular_policy(tree: LevelTree, tabular: Any) -> Tensor:
    """Action-slot probabilities [A] (float64, CPU) read from an OpenSpiel ``TabularPolicy``."""
    lookup = tabular.state_lookup
    try:
        rows = np.fromiter((lookup[key] for key in tree.infoset_keys), dtype=np.int64,
                           count=tree.num_infosets)
    except KeyError as exc:
        raise TensorCFRError(f"the tabular policy has no row for information state "
                             f"{exc.args[0]!r}") from None
    slot_rows = np.repeat(rows, tree.infoset_num_actions.cpu().numpy())
    values = tabular.action_probability_array[slot_rows, tree.action_id.cpu().numpy()]
    return torch.as_tensor(np.ascontiguousarray(values), dtype=torch.float64)
