"""The generic level-by-level game tree format shared by the tensor CFR solvers.

A game is flattened once into one :class:`Level` per depth ``d = 0..D`` (the root is the
only node of level 0).  Nodes of a level are stored in breadth-first order, so the
children of a node are contiguous and ordered like their parents.  Information sets are
numbered globally and own consecutive *action slots*: infoset ``i`` has slots
``infoset_action_offset[i] .. infoset_action_offset[i] + infoset_num_actions[i] - 1``, and
``action_infoset[s]`` / ``action_id[s]`` give the infoset and the game's action id of
slot ``s``.

Node kinds (``Level.kind``): ``0..n-1`` decision node of that player, ``KIND_CHANCE`` (-1)
chance node, ``KIND_TERMINAL`` (-2) terminal node.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Iterator

import torch
from torch import Tensor

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["KIND_CHANCE", "KIND_TERMINAL", "Level", "LevelTree", "estimate_tree_bytes"]

KIND_CHANCE = -1
KIND_TERMINAL = -2


@dataclass
class Level:
    """The nodes at one depth of the tree (``N_d`` of them).

    Attributes (all 1-D of length ``N_d`` unless noted):
        parent: long, index of the parent node in level ``d-1`` (-1 at the root level).
        kind: int8, acting player ``0..n-1``, -1 chance, -2 terminal.
        infoset: long, global infoset index at decision nodes, -1 elsewhere.
        parent_action_slot: long, slot of the parent's infoset-action leading here when the
            parent is a decision node, -1 otherwise.
        chance_prob: float, probability of the edge from a chance parent, 1 otherwise.
        utility: float ``[N_d, num_players]``, terminal payoffs, 0 at non-terminal nodes.
    """

    parent: Tensor
    kind: Tensor
    infoset: Tensor
    parent_action_slot: Tensor
    chance_prob: Tensor
    utility: Tensor

    @property
    def num_nodes(self) -> int:
        """Number of nodes ``N_d`` at this depth."""
        return int(self.parent.shape[0])

    def to(self, device: torch.device | str | None = None,
           dtype: torch.dtype | None = None) -> "Level":
        """Copy to ``device``; float arrays (chance_prob, utility) are cast to ``dtype``."""
        float_dtype = dtype or self.chance_prob.dtype
        return Level(
            parent=self.parent.to(device),
            kind=self.kind.to(device),
            infoset=self.infoset.to(device),
            parent_action_slot=self.parent_action_slot.to(device),
            chance_prob=self.chance_prob.to(device=device, dtype=float_dtype),
            utility=self.utility.to(device=device, dtype=float_dtype),
        )

    def tensors(self) -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) pairs of this level."""
        for f in fields(self):
            yield f.name, getattr(self, f.name)


def estimate_tree_bytes(num_nodes: int, num_slots: int, num_infosets: int, num_players: int,
                        float_bytes: int = 8, solver: bool = True) -> int:
    """Estimated bytes of a :class:`LevelTree` (and, if ``solver``, a CFR solver on it).

    Tree: per node 3 longs + 1 int8 + 1 float + ``num_players`` floats, per slot 2 longs,
    per infoset 3 longs.  Solver working set (see :mod:`tensorcfr.core.cfr`), per node:
    reach and factor rows (``2 (n + 1)`` floats), values, scratch and utilities (``3 n``),
    edge and chance probabilities (2), and about ``n + 7`` longs of precomputed indices;
    per slot about 8 floats and 5 longs.
    """
    per_node = 3 * 8 + 1 + float_bytes + num_players * float_bytes
    per_slot = 2 * 8
    per_infoset = 3 * 8
    total = num_nodes * per_node + num_slots * per_slot + num_infosets * per_infoset
    if solver:
        total += num_nodes * ((5 * num_players + 4) * float_bytes + (num_players + 7) * 8)
        total += num_slots * (8 * float_bytes + 5 * 8) + num_infosets * 2 * float_bytes
    return int(total)


@dataclass
class LevelTree:
    """A whole game tree flattened level by level (see the module docstring).

    Attributes:
        num_players: number of players ``n``.
        levels: one :class:`Level` per depth, ``levels[0]`` holds the root only.
        num_infosets: number of information sets ``I`` (all players).
        infoset_player: long ``[I]``, the player acting at each infoset.
        infoset_num_actions: long ``[I]``, number of legal actions.
        infoset_action_offset: long ``[I]``, first action slot of each infoset.
        action_infoset: long ``[A]``, infoset of each action slot.
        action_id: long ``[A]``, the game's action id of each slot.
        infoset_keys: ``I`` strings (OpenSpiel ``information_state_string``).
        game_string: the game's canonical string (e.g. ``"kuhn_poker()"``).
        setup_seconds: time spent building the tree (informational).
    """

    num_players: int
    levels: list[Level]
    num_infosets: int
    infoset_player: Tensor
    infoset_num_actions: Tensor
    infoset_action_offset: Tensor
    action_infoset: Tensor
    action_id: Tensor
    infoset_keys: list[str]
    game_string: str
    setup_seconds: float = 0.0
    metadata: dict = field(default_factory=dict)

    # ----------------------------------------------------------------- counts
    @property
    def depth(self) -> int:
        """Number of levels ``D + 1``."""
        return len(self.levels)

    @property
    def num_nodes(self) -> int:
        """Total number of nodes over all levels."""
        return sum(level.num_nodes for level in self.levels)

    @property
    def num_terminals(self) -> int:
        """Number of terminal nodes."""
        return sum(int((level.kind == KIND_TERMINAL).sum()) for level in self.levels)

    @property
    def num_chance_nodes(self) -> int:
        """Number of chance nodes."""
        return sum(int((level.kind == KIND_CHANCE).sum()) for level in self.levels)

    @property
    def num_decision_nodes(self) -> int:
        """Number of decision (player) nodes."""
        return sum(int((level.kind >= 0).sum()) for level in self.levels)

    @property
    def num_slots(self) -> int:
        """Number of infoset-action slots ``A``."""
        return int(self.action_infoset.shape[0])

    @property
    def device(self) -> torch.device:
        """Device of the tree's tensors."""
        return self.action_infoset.device

    @property
    def dtype(self) -> torch.dtype:
        """Float dtype of chance probabilities and utilities."""
        return self.levels[0].utility.dtype

    def level_sizes(self) -> list[int]:
        """``N_d`` per depth."""
        return [level.num_nodes for level in self.levels]

    def summary(self) -> dict[str, object]:
        """JSON-ready counts of the tree."""
        return {
            "game": self.game_string,
            "num_players": self.num_players,
            "depth": self.depth,
            "num_nodes": self.num_nodes,
            "num_terminals": self.num_terminals,
            "num_chance_nodes": self.num_chance_nodes,
            "num_decision_nodes": self.num_decision_nodes,
            "num_infosets": self.num_infosets,
            "num_action_slots": self.num_slots,
            "setup_seconds": self.setup_seconds,
            "memory_bytes": self.memory_bytes(),
        }

    # ----------------------------------------------------------------- memory / device
    def memory_bytes(self) -> int:
        """Bytes held by the tree's tensors (the infoset key strings not included)."""
        total = 0
        for level in self.levels:
            for _, t in level.tensors():
                total += t.numel() * t.element_size()
        for t in (self.infoset_player, self.infoset_num_actions, self.infoset_action_offset,
                  self.action_infoset, self.action_id):
            total += t.numel() * t.element_size()
        return int(total)

    def to(self, device: torch.device | str | None = None,
           dtype: torch.dtype | None = None) -> "LevelTree":
        """A copy of the tree on ``device`` with float arrays in ``dtype``."""
        return replace(
            self,
            levels=[level.to(device, dtype) for level in self.levels],
            infoset_player=self.infoset_player.to(device),
            infoset_num_actions=self.infoset_num_actions.to(device),
            infoset_action_offset=self.infoset_action_offset.to(device),
            action_infoset=self.action_infoset.to(device),
            action_id=self.action_id.to(device),
            infoset_keys=list(self.infoset_keys),
            metadata=dict(self.metadata),
        )

    # ----------------------------------------------------------------- checks
    def validate(self) -> None:
        """Check the structural invariants; raise :class:`TensorCFRError` if one fails."""
        if not self.levels or self.levels[0].num_nodes != 1:
            raise TensorCFRError("a LevelTree needs exactly one root node at level 0")
        n_slots = self.num_slots
        if len(self.infoset_keys) != self.num_infosets:
            raise TensorCFRError("infoset_keys length differs from num_infosets")
        if self.num_infosets and int(self.infoset_num_actions.sum()) != n_slots:
            raise TensorCFRError("infoset_num_actions does not sum to the number of slots")
        for d, level in enumerate(self.levels):
            n = level.num_nodes
            for name, t in level.tensors():
                if t.shape[0] != n:
                    raise TensorCFRError(f"level {d}: {name} has {t.shape[0]} rows, expected {n}")
            if level.utility.dim() != 2 or level.utility.shape[1] != self.num_players:
                raise TensorCFRError(f"level {d}: utility must be [N, {self.num_players}]")
            if d == 0:
                continue
            prev = self.levels[d - 1].num_nodes
            if n and (int(level.parent.min()) < 0 or int(level.parent.max()) >= prev):
                raise TensorCFRError(f"level {d}: parent index out of range")
            if n > 1 and bool((level.parent[1:] < level.parent[:-1]).any()):
                raise TensorCFRError(f"level {d}: nodes are not grouped by parent")
            parent_kind = self.levels[d - 1].kind[level.parent]
            decision_child = parent_kind >= 0
            slots = level.parent_action_slot
            if bool((slots[decision_child] < 0).any()) or bool((slots[~decision_child] != -1).any()):
                raise TensorCFRError(f"level {d}: parent_action_slot inconsistent with parents")
            if n and int(slots.max()) >= n_slots:
                raise TensorCFRError(f"level {d}: parent_action_slot out of range")
            parent_infoset = self.levels[d - 1].infoset[level.parent[decision_child]]
            if bool((self.action_infoset[slots[decision_child]] != parent_infoset).any()):
                raise TensorCFRError(f"level {d}: a child's action slot is not its parent's")
        for d, level in enumerate(self.levels):
            has_children = torch.zeros(level.num_nodes, dtype=torch.bool, device=level.kind.device)
            if d + 1 < len(self.levels):
                has_children[self.levels[d + 1].parent] = True
            terminal = level.kind == KIND_TERMINAL
            if bool((has_children == terminal).any()):
                raise TensorCFRError(f"level {d}: a terminal node has children or an inner "
                                     "node has none")

    # ----------------------------------------------------------------- save/load
    def state_dict(self) -> dict[str, object]:
        """Plain dict of tensors / lists / scalars (used by :meth:`from_state_dict`)."""
        out: dict[str, object] = {
            "num_players": self.num_players, "num_infosets": self.num_infosets,
            "infoset_player": self.infoset_player, "infoset_num_actions": self.infoset_num_actions,
            "infoset_action_offset": self.infoset_action_offset,
            "action_infoset": self.action_infoset, "action_id": self.action_id,
            "infoset_keys": list(self.infoset_keys), "game_string": self.game_string,
            "setup_seconds": self.setup_seconds,
            "levels": [dict(level.tensors()) for level in self.levels],
        }
        return out

    @staticmethod
    def from_state_dict(state: dict[str, object]) -> "LevelTree":
        """Inverse of :meth:`state_dict`; raises :class:`CorruptFileError` on bad input."""
        try:
            tree = LevelTree(
                num_players=int(state["num_players"]),  # type: ignore[arg-type]
                levels=[Level(**lv) for lv in state["levels"]],  # type: ignore[union-attr]
                num_infosets=int(state["num_infosets"]),  # type: ignore[arg-type]
                infoset_player=state["infoset_player"],  # type: ignore[arg-type]
                infoset_num_actions=state["infoset_num_actions"],  # type: ignore[arg-type]
                infoset_action_offset=state["infoset_action_offset"],  # type: ignore[arg-type]
                action_infoset=state["action_infoset"],  # type: ignore[arg-type]
                action_id=state["action_id"],  # type: ignore[arg-type]
                infoset_keys=list(state["infoset_keys"]),  # type: ignore[arg-type]
                game_string=str(state["game_string"]),
                setup_seconds=float(state.get("setup_seconds", 0.0)),  # type: ignore[arg-type]
            )
            tree.validate()
        except (KeyError, TypeError, ValueError, IndexError, TensorCFRError) as exc:
            raise CorruptFileError(f"not a valid LevelTree: {exc}") from None
        return tree
