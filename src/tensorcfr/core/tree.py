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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Iterator

import numpy as np
import torch
from torch import Tensor

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["KIND_CHANCE", "KIND_TERMINAL", "InfosetKeys", "Level", "LevelTree",
           "estimate_tree_bytes"]

KIND_CHANCE = -1
KIND_TERMINAL = -2


def _index_tensor(values: Tensor) -> Tensor:
    """``values`` as an int32 tensor when every entry fits (int64 otherwise)."""
    if values.dtype == torch.int32:
        return values
    if values.dtype.is_floating_point or values.dtype == torch.bool:
        raise TensorCFRError(f"index arrays must be integers, got {values.dtype}")
    if values.numel() and (int(values.max()) > _INT32_MAX or int(values.min()) < -_INT32_MAX):
        return values.to(torch.long)
    return values.to(torch.int32)


_INT32_MAX = 2**31 - 1


def _count_kind(kind: Tensor, value: int) -> int:
    """How many entries of ``kind`` equal ``value`` (numpy on the CPU: counting maps no
    torch kernel into a process that may run none, docs/benchmarks/engine_memory.md)."""
    if kind.device.type == "cpu":
        return int(np.count_nonzero(kind.numpy() == value))
    return int((kind == value).sum())


class Level:
    """The nodes at one depth of the tree (``N_d`` of them), stored compactly.

    Stored tensors (:meth:`tensors`), all of length ``N_d`` unless noted:
        parent: int32 (int64 only if a level had 2^31 nodes), index of the parent node in
            level ``d-1`` (-1 at the root level).
        kind: int8, acting player ``0..n-1``, -1 chance, -2 terminal.
        infoset: int32, global infoset index at decision nodes, -1 elsewhere.
        parent_action_slot: int32, slot of the parent's infoset-action leading here when
            the parent is a decision node, -1 otherwise (children of chance nodes, root).
        chance_edge_prob: float ``[C_d]``, probability of the edge into each node whose
            ``parent_action_slot`` is -1, in node order (the root's is 1).  Edges out of
            decision nodes carry no probability of their own.
        terminal_utility: float ``[T_d, num_players]``, payoffs of the level's terminal
            nodes (``kind == -2``) in node order.

    Dense views kept for code written against the former layout (computed on each access,
    so loops should read the compact tensors): :attr:`chance_prob` ``[N_d]`` (1 at
    children of decision nodes) and :attr:`utility` ``[N_d, num_players]`` (0 at
    non-terminal nodes); assigning either stores its compact form.  The constructor
    accepts either form (``chance_prob=`` / ``utility=`` or ``chance_edge_prob=`` /
    ``terminal_utility=``); index arrays are stored as int32 when their values fit.
    """

    __slots__ = ("parent", "kind", "infoset", "parent_action_slot", "chance_edge_prob",
                 "terminal_utility")

    def __init__(self, parent: Tensor, kind: Tensor, infoset: Tensor,
                 parent_action_slot: Tensor, chance_prob: Tensor | None = None,
                 utility: Tensor | None = None, *, chance_edge_prob: Tensor | None = None,
                 terminal_utility: Tensor | None = None) -> None:
        self.parent = _index_tensor(parent)
        self.kind = kind if kind.dtype == torch.int8 else kind.to(torch.int8)
        self.infoset = _index_tensor(infoset)
        self.parent_action_slot = _index_tensor(parent_action_slot)
        if (chance_prob is None) == (chance_edge_prob is None):
            raise TensorCFRError("a Level needs exactly one of chance_prob (dense) and "
                                 "chance_edge_prob (compact)")
        if (utility is None) == (terminal_utility is None):
            raise TensorCFRError("a Level needs exactly one of utility (dense) and "
                                 "terminal_utility (compact)")
        if chance_edge_prob is None:
            self.chance_prob = chance_prob  # type: ignore[assignment]  (compacted)
        else:
            self.chance_edge_prob = chance_edge_prob
        if terminal_utility is None:
            self.utility = utility  # type: ignore[assignment]  (compacted)
        else:
            self.terminal_utility = terminal_utility

    # ----------------------------------------------------------------- compact <-> dense
    @property
    def num_nodes(self) -> int:
        """Number of nodes ``N_d`` at this depth."""
        return int(self.parent.shape[0])

    @property
    def num_players(self) -> int:
        """Number of players (columns of :attr:`terminal_utility`)."""
        return int(self.terminal_utility.shape[1])

    @property
    def terminal_index(self) -> Tensor:
        """long ``[T_d]``: positions of the terminal nodes in this level (node order)."""
        return torch.nonzero(self.kind == KIND_TERMINAL).squeeze(1)

    @property
    def chance_edge_index(self) -> Tensor:
        """long ``[C_d]``: positions of the nodes whose ``chance_edge_prob`` is stored
        (``parent_action_slot == -1``: children of chance nodes, and the root)."""
        return torch.nonzero(self.parent_action_slot < 0).squeeze(1)

    @property
    def chance_prob(self) -> Tensor:
        """Dense float ``[N_d]``: the chance probability of the edge into each node, 1 at
        children of decision nodes (a new tensor on each access)."""
        dense = torch.ones(self.num_nodes, dtype=self.chance_edge_prob.dtype,
                           device=self.chance_edge_prob.device)
        dense[self.chance_edge_index] = self.chance_edge_prob
        return dense

    @chance_prob.setter
    def chance_prob(self, dense: Tensor) -> None:
        if dense.dim() != 1 or dense.shape[0] != self.num_nodes:
            raise TensorCFRError(f"chance_prob must be [{self.num_nodes}], got "
                                 f"{list(dense.shape)}")
        self.chance_edge_prob = dense[self.chance_edge_index.to(dense.device)].contiguous()

    @property
    def utility(self) -> Tensor:
        """Dense float ``[N_d, num_players]``: terminal payoffs, 0 at non-terminal nodes
        (a new tensor on each access)."""
        compact = self.terminal_utility
        dense = torch.zeros((self.num_nodes, compact.shape[1]), dtype=compact.dtype,
                            device=compact.device)
        dense[self.terminal_index] = compact
        return dense

    @utility.setter
    def utility(self, dense: Tensor) -> None:
        if dense.dim() != 2 or dense.shape[0] != self.num_nodes:
            raise TensorCFRError(f"utility must be [{self.num_nodes}, num_players], got "
                                 f"{list(dense.shape)}")
        self.terminal_utility = dense[self.terminal_index.to(dense.device)].contiguous()

    def to(self, device: torch.device | str | None = None,
           dtype: torch.dtype | None = None) -> "Level":
        """Copy to ``device``; float arrays (probabilities, utilities) are cast to ``dtype``."""
        float_dtype = dtype or self.terminal_utility.dtype
        return Level(
            parent=self.parent.to(device),
            kind=self.kind.to(device),
            infoset=self.infoset.to(device),
            parent_action_slot=self.parent_action_slot.to(device),
            chance_edge_prob=self.chance_edge_prob.to(device=device, dtype=float_dtype),
            terminal_utility=self.terminal_utility.to(device=device, dtype=float_dtype),
        )

    def tensors(self) -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) pairs of the stored (compact) arrays of this level."""
        for name in self.__slots__:
            yield name, getattr(self, name)

    def dense_dict(self) -> dict[str, Tensor]:
        """The level in the former dense layout: int64 ``parent``, ``kind`` (int8),
        ``infoset``, ``parent_action_slot``, ``chance_prob`` [N_d], ``utility`` [N_d, P]."""
        return {"parent": self.parent.long(), "kind": self.kind,
                "infoset": self.infoset.long(),
                "parent_action_slot": self.parent_action_slot.long(),
                "chance_prob": self.chance_prob, "utility": self.utility}

    def __repr__(self) -> str:
        return (f"Level(num_nodes={self.num_nodes}, terminals="
                f"{int(self.terminal_utility.shape[0])}, chance_edges="
                f"{int(self.chance_edge_prob.shape[0])})")


class InfosetKeys(Sequence[str]):
    """An immutable sequence of information-state strings stored as one UTF-8 byte string
    plus int32 offsets (int64 past 2 GiB of text): ``len + 4`` bytes per key instead of a
    Python ``str`` object and its list slot (about ``len + 57``).

    Behaves like a ``list[str]`` for reading: ``len``, indexing (a ``str``), slicing (a
    list), iteration, ``in`` and ``==`` with any sequence of strings.
    """

    __slots__ = ("_blob", "_offsets", "_ascii")

    def __init__(self, keys: "Iterable[str] | InfosetKeys" = ()) -> None:
        if isinstance(keys, InfosetKeys):
            self._blob, self._offsets, self._ascii = keys._blob, keys._offsets, keys._ascii
            return
        keys = keys if isinstance(keys, (list, tuple)) else list(keys)
        text = "".join(keys)
        blob = text.encode("utf-8")
        ascii_only = len(blob) == len(text)
        del text
        offsets = np.zeros(len(keys) + 1,
                           dtype=np.int32 if len(blob) <= _INT32_MAX else np.int64)
        if ascii_only:
            lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        else:
            lengths = np.fromiter((len(k.encode("utf-8")) for k in keys), dtype=np.int64,
                                  count=len(keys))
        np.cumsum(lengths, out=offsets[1:])
        self._blob, self._offsets, self._ascii = blob, offsets, ascii_only

    @property
    def nbytes(self) -> int:
        """Bytes held (the UTF-8 text and the offsets)."""
        return len(self._blob) + int(self._offsets.nbytes)

    def __len__(self) -> int:
        return int(self._offsets.shape[0]) - 1

    def _key(self, i: int) -> str:
        offsets = self._offsets
        return self._blob[int(offsets[i]):int(offsets[i + 1])].decode("utf-8")

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self._key(i) for i in range(*index.indices(len(self)))]
        i = int(index)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("infoset key index out of range")
        return self._key(i)

    def __iter__(self) -> Iterator[str]:
        bounds = self._offsets.tolist()
        if self._ascii:
            text = self._blob.decode("ascii")
            for a, b in zip(bounds[:-1], bounds[1:]):
                yield text[a:b]
        else:
            blob = self._blob
            for a, b in zip(bounds[:-1], bounds[1:]):
                yield blob[a:b].decode("utf-8")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, InfosetKeys):
            return self._blob == other._blob and np.array_equal(self._offsets, other._offsets)
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):  # pickles as a plain list of strings
        return (InfosetKeys, (list(self),))

    def __repr__(self) -> str:
        head = ", ".join(repr(k) for k in self[:3])
        return f"InfosetKeys([{head}{', ...' if len(self) > 3 else ''}], n={len(self)})"


def estimate_tree_bytes(num_nodes: int, num_slots: int, num_infosets: int, num_players: int,
                        float_bytes: int = 8, solver: bool = True,
                        num_terminals: int | None = None,
                        num_chance_edges: int = 0) -> int:
    """Estimated bytes of a :class:`LevelTree` (and, if ``solver``, a CFR solver on it).

    Tree (the compact layout of :class:`Level`): per node 3 int32 + 1 int8, per terminal
    ``num_players`` floats (``num_terminals`` None: every node counted as a terminal, an
    upper bound), per chance edge 1 float, per slot 2 int32, per infoset 3 longs (the
    information-state strings are not included: see :class:`InfosetKeys`).  Solver working
    set (see :mod:`tensorcfr.core.solver`), per node at most: ``n`` reach rows, the values
    row, the edge probability and a chance reach (``n + 3`` floats) and three int64
    indices (parent, action slot, terminal position);
    per slot 6 floats and 2 int32; per infoset 1 float (the scratch buffers are
    chunk-sized, a few MiB at most).
    """
    terminals = num_nodes if num_terminals is None else num_terminals
    total = (num_nodes * (3 * 4 + 1) + terminals * num_players * float_bytes
             + num_chance_edges * float_bytes + num_slots * 2 * 4 + num_infosets * 3 * 8)
    if solver:
        total += num_nodes * ((num_players + 3) * float_bytes + 3 * 8)
        total += num_slots * (6 * float_bytes + 2 * 4) + num_infosets * float_bytes
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
        action_infoset: int32 ``[A]`` (long accepted), infoset of each action slot.
        action_id: int32 ``[A]`` (long accepted), the game's action id of each slot.
        infoset_keys: ``I`` strings (OpenSpiel ``information_state_string``), stored as
            :class:`InfosetKeys` (a list of strings given here is converted).
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
    infoset_keys: InfosetKeys
    game_string: str
    setup_seconds: float = 0.0
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.infoset_keys, InfosetKeys):
            self.infoset_keys = InfosetKeys(self.infoset_keys)

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
        return sum(_count_kind(level.kind, KIND_TERMINAL) for level in self.levels)

    @property
    def num_chance_nodes(self) -> int:
        """Number of chance nodes."""
        return sum(_count_kind(level.kind, KIND_CHANCE) for level in self.levels)

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
        return self.levels[0].terminal_utility.dtype

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
        """Bytes held by the tree's tensors (the infoset key strings not included: see
        ``infoset_keys.nbytes``)."""
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
            infoset_keys=self.infoset_keys,  # immutable, shared
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
        index_dtypes = (torch.int32, torch.long)
        for t in (self.action_infoset, self.action_id, self.infoset_player,
                  self.infoset_num_actions, self.infoset_action_offset):
            if t.dtype not in index_dtypes:
                raise TensorCFRError(f"infoset and slot arrays must be int32 or int64, got "
                                     f"{t.dtype}")
        for d, level in enumerate(self.levels):
            n = level.num_nodes
            for name in ("parent", "kind", "infoset", "parent_action_slot"):
                t = getattr(level, name)
                if t.dim() != 1 or t.shape[0] != n:
                    raise TensorCFRError(f"level {d}: {name} has {t.shape[0]} rows, expected {n}")
                if name != "kind" and t.dtype not in index_dtypes:
                    raise TensorCFRError(f"level {d}: {name} must be int32 or int64")
            terminals = int((level.kind == KIND_TERMINAL).sum())
            compact = level.terminal_utility
            if compact.dim() != 2 or tuple(compact.shape) != (terminals, self.num_players):
                raise TensorCFRError(f"level {d}: terminal_utility must be [{terminals}, "
                                     f"{self.num_players}], got {list(compact.shape)}")
            chance_edges = int((level.parent_action_slot < 0).sum())
            if tuple(level.chance_edge_prob.shape) != (chance_edges,):
                raise TensorCFRError(f"level {d}: chance_edge_prob must be [{chance_edges}], "
                                     f"got {list(level.chance_edge_prob.shape)}")
            if d == 0:
                continue
            prev = self.levels[d - 1].num_nodes
            if n and (int(level.parent.min()) < 0 or int(level.parent.max()) >= prev):
                raise TensorCFRError(f"level {d}: parent index out of range")
            if n > 1 and bool((level.parent[1:] < level.parent[:-1]).any()):
                raise TensorCFRError(f"level {d}: nodes are not grouped by parent")
            parent_kind = self.levels[d - 1].kind[level.parent.long()]
            decision_child = parent_kind >= 0
            slots = level.parent_action_slot
            if bool((slots[decision_child] < 0).any()) or bool((slots[~decision_child] != -1).any()):
                raise TensorCFRError(f"level {d}: parent_action_slot inconsistent with parents")
            if n and int(slots.max()) >= n_slots:
                raise TensorCFRError(f"level {d}: parent_action_slot out of range")
            parent_infoset = self.levels[d - 1].infoset[level.parent[decision_child].long()]
            if bool((self.action_infoset[slots[decision_child].long()] != parent_infoset).any()):
                raise TensorCFRError(f"level {d}: a child's action slot is not its parent's")
        for d, level in enumerate(self.levels):
            has_children = torch.zeros(level.num_nodes, dtype=torch.bool, device=level.kind.device)
            if d + 1 < len(self.levels):
                has_children[self.levels[d + 1].parent.long()] = True
            terminal = level.kind == KIND_TERMINAL
            if bool((has_children == terminal).any()):
                raise TensorCFRError(f"level {d}: a terminal node has children or an inner "
                                     "node has none")

    # ----------------------------------------------------------------- save/load
    def state_dict(self) -> dict[str, object]:
        """Plain dict of tensors / lists / scalars (used by :meth:`from_state_dict`); the
        levels hold the compact arrays of :meth:`Level.tensors`."""
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
                # Compact levels, or the former dense ones (chance_prob, utility).
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
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError,
                TensorCFRError) as exc:
            raise CorruptFileError(f"not a valid LevelTree: {exc}") from None
        return tree
