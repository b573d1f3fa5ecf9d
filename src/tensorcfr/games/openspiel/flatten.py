"""Load OpenSpiel games with one-line errors and flatten them into a :class:`LevelTree`.

The walk is depth first and touches every history exactly once (``state.child(a)``), so
only about depth x branching OpenSpiel states are alive at any time.
Each node goes straight into the typed arrays of its depth, already in level order and in
the compact :class:`~tensorcfr.core.tree.Level` layout.  Information-state strings are
mapped to infoset ids with a dict during the walk and kept packed in an
:class:`~tensorcfr.core.tree.InfosetKeys` afterwards.  Memory is estimated
from the node and slot counts as the walk proceeds and the walk stops with a
:class:`~tensorcfr.errors.MemoryLimitError` as soon as the estimate exceeds the budget.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import os
import sys
import time
from array import array
from itertools import chain
from typing import Callable, Iterator

import numpy as np
import torch

from tensorcfr.core.tree import (KIND_CHANCE, KIND_TERMINAL, InfosetKeys, Level, LevelTree,
                                 estimate_tree_bytes)
from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.utils.resources import (current_rss_bytes, format_bytes, memory_budget,
                                       release_free_memory)

__all__ = ["GameLoadError", "UnsupportedGameError", "load_game", "flatten_game",
           "perfect_recall_violations", "WALK_BYTES_PER_PENDING_STATE", "WALK_BYTES_PER_FRONTIER_STATE",
           "WALK_BYTES_PER_NODE"]

WALK_BYTES_PER_PENDING_STATE = 1024
"""Rough bytes held per live OpenSpiel state waiting on the depth-first stack (estimate)."""

WALK_BYTES_PER_FRONTIER_STATE = WALK_BYTES_PER_PENDING_STATE
"""Former name of :data:`WALK_BYTES_PER_PENDING_STATE` (the walk was breadth first)."""

KEY_OVERHEAD_BYTES = 160
"""Bytes of walk bookkeeping per information set besides its string's characters: the str
object (header and allocator rounding), its entry in the key -> id dict, the id's int
object, and the per-infoset player, slot offset and legal-action pointer.  Measured: the
walk of tic_tac_toe (294,778 infosets of 19 characters on average, 549,946 nodes) holds
65 MiB at its end, of which 11 MiB are the node arrays; 180 bytes per infoset remain."""

WALK_BYTES_PER_NODE = 8
"""Rough bytes of walk bookkeeping per node besides the tree's own arrays (which the walk
fills directly, see :func:`estimate_tree_bytes`): the typed arrays' over-allocation
(about 6%) and the temporaries of renumbering a level's infosets after the walk."""


GC_AFTER_INFOSETS = 100_000
"""Walks finding at least this many information sets end with a full ``gc.collect()``."""


class GameLoadError(TensorCFRError):
    """An unknown game name or a game string OpenSpiel cannot parse."""


class UnsupportedGameError(TensorCFRError):
    """A game the tensor CFR engine cannot solve (sampled chance, no info-state strings...)."""


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Silence C++ writes to file descriptor 2 (OpenSpiel prints its exceptions there)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # pragma: no cover - captured stderr
        fd = 2
    try:
        saved = os.dup(fd)
    except OSError:  # pragma: no cover
        yield
        return
    try:
        sys.stderr.flush()
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), fd)
            try:
                yield
            finally:
                os.dup2(saved, fd)
    finally:
        os.close(saved)


def _short_name(game_string: str) -> str:
    return game_string.split("(", 1)[0].strip()


def _first_line(message: str) -> str:
    text = str(message).strip().splitlines()
    return text[0] if text else "unknown error"


def registered_game_names(name: str | None = None) -> list[str]:
    """OpenSpiel's registered game names. When ``name`` is given and not among them,
    OpenSpiel's own Python games (``python_kuhn_poker``, ...) are registered first (they
    register on import of ``open_spiel.python.games``, 0.2 s), so that whether a name is known,
    and the close matches an error names, never depend on what else the process imported."""
    import pyspiel

    registered = list(pyspiel.registered_names())
    if name is not None and name not in registered:
        import open_spiel.python.games  # noqa: F401  (registers the Python games)

        registered = list(pyspiel.registered_names())
    return registered


def load_game(game: "str | object", turn_based: bool = True) -> "object":
    """Load an OpenSpiel game from a game string (or return a ``pyspiel.Game`` unchanged).

    Unknown names raise :class:`GameLoadError` naming close matches; simultaneous-move games
    are wrapped with ``pyspiel.convert_to_turn_based`` when ``turn_based``; games the engine
    cannot solve raise :class:`UnsupportedGameError` with a one-line reason.
    """
    import pyspiel

    if isinstance(game, str):
        game_string = game.strip()
        if not game_string:
            raise GameLoadError("empty game string")
        name = _short_name(game_string)
        registered = registered_game_names(name)
        if name not in registered:
            close = difflib.get_close_matches(name, registered, n=5, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else \
                "; run `python -c 'import pyspiel; print(pyspiel.registered_names())'` for the list"
            raise GameLoadError(f"unknown game {name!r}{hint}")
        try:
            with _quiet_native_stderr():
                loaded = pyspiel.load_game(game_string)
        except (pyspiel.SpielError, RuntimeError, ValueError) as exc:
            msg = _first_line(str(exc)).removeprefix("OpenSpiel exception: ")
            raise GameLoadError(f"cannot load game {game_string!r}: {msg}") from None
    else:
        loaded = game
    game_type = loaded.get_type()
    if game_type.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        if not turn_based:
            raise UnsupportedGameError(
                f"{game_type.short_name} is a simultaneous-move game; use it through "
                "turn_based_simultaneous_game")
        original = game_type.short_name
        with _quiet_native_stderr():
            loaded = pyspiel.convert_to_turn_based(loaded)
        _check_supported(loaded, f"{original} (turn-based)")
        return loaded
    _check_supported(loaded, game_type.short_name)
    return loaded


def _check_supported(game: "object", name: str) -> None:
    import pyspiel

    game_type = game.get_type()
    if game_type.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
        raise UnsupportedGameError(f"{name} is a mean-field game; CFR needs a sequential game")
    if game_type.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise UnsupportedGameError(f"{name} is not a sequential game")
    if game_type.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
        raise UnsupportedGameError(
            f"{name} has sampled stochastic chance (no explicit chance outcomes), so its tree "
            "cannot be enumerated")
    if not game_type.provides_information_state_string:
        raise UnsupportedGameError(
            f"{name} provides no information_state_string, which CFR needs to group histories "
            "into information sets")
    if game.num_players() < 1:
        raise UnsupportedGameError(f"{name} has no players")


def flatten_game(game: "str | object", *, max_memory_bytes: int | str | None = "auto",
                 dtype: torch.dtype = torch.float64, require_perfect_recall: bool = False,
                 max_nodes: int | None = None,
                 progress: "Callable[[int, int], None] | None" = None) -> LevelTree:
    """Walk an OpenSpiel game once and flatten it into a :class:`LevelTree`.

    Args:
        game: a game string (``"leduc_poker"``, ``"kuhn_poker(players=3)"``) or a loaded
            ``pyspiel.Game``.  Simultaneous games are converted to turn-based.
        max_memory_bytes: budget for the tree plus a solver's working set (estimated from the
            counts with :func:`estimate_tree_bytes`): bytes, a size such as ``"8G"``,
            ``"auto"`` (the default: 80 % of the memory available when the walk starts) or ``None``
            (no limit).  The check runs during the walk, so an oversized game is refused
            before it is built.
        dtype: float dtype of chance probabilities and utilities.
        require_perfect_recall: raise :class:`UnsupportedGameError` unless all histories of
            every infoset share the acting player's previous infoset-action (perfect recall).
            Either way the result is recorded in ``tree.metadata["perfect_recall"]`` (and
            ``"imperfect_recall_infosets"``, ``"imperfect_recall_example"``): CFR itself runs
            on imperfect-recall games (as OpenSpiel's does, e.g. goofspiel, whose info-state
            strings forget the order of one's own bids), but without its guarantees, and
            exact best responses need perfect recall.
        max_nodes: optional hard cap on the number of nodes.
        progress: called as ``progress(nodes_visited, infosets_found)`` every few thousand
            nodes of the walk (for progress displays).

    The memory budget is enforced twice during the walk, every 1024 states created: the estimate
    for the nodes and infosets found so far (tree, solver, walk bookkeeping and the
    information-state strings, whose actual lengths are counted) and the process's
    actual resident memory growth since the walk started; whichever exceeds
    ``max_memory_bytes`` first stops the walk with :class:`MemoryLimitError`.

    Returns:
        The tree on CPU, with ``setup_seconds`` set to the walk + conversion time.
    """
    started = time.perf_counter()
    loaded = load_game(game)
    # The walk allocates millions of small objects that are never cyclic garbage; the
    # cyclic collector would rescan them over and over (measured 20-25% of the walk time).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        tree = _flatten(loaded, memory_budget(max_memory_bytes), dtype, max_nodes, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    if tree.num_infosets >= GC_AFTER_INFOSETS:
        # A full collection empties CPython's free lists, whose few thousand recycled
        # stack tuples otherwise pin the arenas the infoset strings were freed from
        # (tic_tac_toe: 16 MiB kept; the collection costs about 0.2 s).
        gc.collect()
    release_free_memory()  # the walk's dict and strings, before the recall check's arrays
    violations, example = perfect_recall_violations(tree)
    tree.metadata["perfect_recall"] = violations == 0
    tree.metadata["imperfect_recall_infosets"] = violations
    tree.metadata["imperfect_recall_example"] = example
    if require_perfect_recall and violations:
        raise UnsupportedGameError(_recall_message(tree, violations, example))
    release_free_memory()  # the walk's freed bookkeeping, before a solver allocates
    tree.setup_seconds = time.perf_counter() - started
    return tree


def _new_level_arrays() -> tuple:
    """Typed arrays of one depth, filled in level order by the walk: parent (int32, local to
    the previous level), kind (int8), infoset (int32, walk-order id), parent_action_slot
    (int32, walk-order slot), chance edge probabilities (float64, one per node whose slot
    is -1) and terminal returns (float64, ``num_players`` per terminal)."""
    return (array("i"), array("b"), array("i"), array("i"), array("d"), array("d"))


def _appenders(arrays: tuple) -> tuple:
    """The bound ``append`` methods of one depth's arrays (``extend`` for the returns), and
    the kind array (whose length is the next node's index): the walk's per-node calls."""
    parents, kinds, infosets, slots, probs, returns = arrays
    return (parents.append, kinds.append, infosets.append, slots.append, probs.append,
            returns.extend, kinds)


def _flatten(loaded: "object", max_memory_bytes: int | None, dtype: torch.dtype,
             max_nodes: int | None,
             progress: "Callable[[int, int], None] | None" = None) -> LevelTree:
    """The depth-first walk of :func:`flatten_game` (no perfect-recall check).

    Nodes are visited in depth-first pre-order while only the states of the current path
    and their unvisited siblings are alive (depth x branching states).  Each node is
    appended straight to the typed arrays of its depth: within a depth, pre-order is the
    lexicographic order of the action paths, which is exactly the breadth-first order
    (children grouped by parent, parents in order), so a node's index in its depth's arrays
    is its final position in the level and no sort or second copy is needed.  The arrays
    already hold the compact :class:`Level` layout (int32 indices, int8 kinds, terminal
    payoffs only, chance-edge probabilities only): 13 bytes per node plus 8 per payoff.
    Infosets and slots, numbered on first sight during the walk, are renumbered in place
    by first occurrence in level order, so the tree is identical, node by node and slot by
    slot, to a breadth-first walk's.
    """
    walk = _Walk(loaded, max_memory_bytes, dtype, progress)
    walk.run(loaded.new_initial_state(), max_nodes)
    walk.check(walk.num_nodes, 0)
    num_infosets = len(walk.infoset_index)
    walk_keys = list(walk.infoset_index)  # walk-order id -> key (the dict's insertion order)
    walk.infoset_index = {}
    levels_arrays = walk.levels_arrays
    if not levels_arrays[-1][1]:  # a depth created for children that had none (p == 0)
        levels_arrays.pop()
    new_infoset_of_walk, infoset_order = _renumber_infosets(levels_arrays, num_infosets)
    # The strings packed first, so they are freed before the larger arrays below.
    infoset_keys = InfosetKeys([walk_keys[i] for i in infoset_order.tolist()])
    del walk_keys
    new_num_actions, new_offset, new_slot_of_walk = _renumber_slots(walk, new_infoset_of_walk,
                                                                    infoset_order)
    levels = _levels_over_arrays(levels_arrays, new_infoset_of_walk, new_slot_of_walk, dtype,
                                 walk.num_players)
    del levels_arrays, new_infoset_of_walk
    walk.levels_arrays = []
    num_slots = walk.num_slots
    action_infoset = torch.from_numpy(np.repeat(np.arange(num_infosets, dtype=np.int32),
                                                new_num_actions))
    action_id = np.empty(num_slots, dtype=np.int32)
    action_id[new_slot_of_walk[:-1]] = np.fromiter(chain.from_iterable(walk.infoset_actions),
                                                   dtype=np.int32, count=num_slots)
    walk.infoset_actions, walk.action_sets = [], {}
    del new_slot_of_walk
    return LevelTree(
        num_players=walk.num_players,
        levels=levels,
        num_infosets=num_infosets,
        infoset_player=torch.from_numpy(
            np.frombuffer(walk.infoset_player, dtype=np.intc)[infoset_order].astype(np.int64)),
        infoset_num_actions=torch.from_numpy(new_num_actions),
        infoset_action_offset=torch.from_numpy(new_offset),
        action_infoset=action_infoset,
        action_id=torch.from_numpy(action_id),
        infoset_keys=infoset_keys,
        game_string=walk.game_string,
        metadata={"num_distinct_actions": loaded.num_distinct_actions(),
                  "short_name": loaded.get_type().short_name},
    )


class _Walk:
    """The depth-first walk's bookkeeping, in walk order: infosets numbered on first sight
    (key -> id, player, legal actions shared through a pool, first slot), the per-depth
    typed arrays (:func:`_new_level_arrays`) and the counts the memory check reads."""

    def __init__(self, loaded: "object", max_memory_bytes: int | None, dtype: torch.dtype,
                 progress: "Callable[[int, int], None] | None") -> None:
        self.num_players = loaded.num_players()
        self.game_string = str(loaded)
        self.max_memory_bytes = max_memory_bytes
        self.float_bytes = torch.empty((), dtype=dtype).element_size()
        self.progress = progress
        # Information-state string -> walk-order infoset id.  The dict's insertion order is
        # the id order, so the strings are kept once (no parallel list) and the dict is
        # dropped as soon as the walk ends (the tree keeps them packed in an InfosetKeys).
        self.infoset_index: dict[str, int] = {}
        self.infoset_player = array("i")
        # Legal actions per infoset, as tuples shared through a pool (games have few
        # distinct legal-action sets): one pointer per infoset instead of one list each.
        self.infoset_actions: list[tuple[int, ...]] = []
        self.action_sets: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.infoset_offset = array("q")
        self.num_slots = 0
        self.levels_arrays: list[tuple] = [_new_level_arrays()]
        self.num_nodes = 0
        self.key_bytes = 0  # bytes of the information-state strings kept (and dict entries)
        self.terminals = 0
        self.chance_edges = 0
        self.rss_start = current_rss_bytes()

    def check(self, nodes: int, pending: int) -> None:
        """The memory budget (:func:`_check_walk_memory`) and the progress callback, after
        ``nodes`` nodes with ``pending`` states on the stack."""
        if self.max_memory_bytes is not None:
            _check_walk_memory(self.game_string, nodes, pending, self.num_slots,
                               len(self.infoset_index), self.num_players, self.float_bytes,
                               self.max_memory_bytes, self.key_bytes,
                               current_rss_bytes() - self.rss_start, self.terminals,
                               self.chance_edges)
        if self.progress is not None:
            self.progress(nodes, len(self.infoset_index))

    def run(self, root: "object", max_nodes: int | None) -> None:
        """Visit every node below ``root`` once, appending each to its depth's arrays.

        The hot loop keeps its counters and bound methods in locals (one attribute
        lookup per node would cost), and writes the counters back for :meth:`check`."""
        import pyspiel

        game_string = self.game_string
        terminal_id = int(pyspiel.PlayerId.TERMINAL)
        chance_id = int(pyspiel.PlayerId.CHANCE)
        infoset_index = self.infoset_index
        infoset_player = self.infoset_player
        infoset_actions = self.infoset_actions
        action_sets = self.action_sets
        infoset_offset = self.infoset_offset
        levels_arrays = self.levels_arrays
        level_appenders: list[tuple] = [_appenders(levels_arrays[0])]
        # Pending nodes: (state, parent's index in its level, depth, slot, chance prob);
        # children are pushed in reverse so that they are popped (visited) in action order.
        stack: list[tuple] = [(root, -1, 0, -1, 1.0)]
        del root
        pop, push_all = stack.pop, stack.extend
        node_limit = max_nodes if max_nodes is not None else -1
        num_slots = key_bytes = terminals = chance_edges = 0
        # Checks run every ``check_every`` OpenSpiel states created (nodes visited plus
        # states waiting on the stack): deep games such as chess push tens of thousands of
        # large states before visiting a few thousand nodes.
        check_every = 1024
        next_check = check_every
        node = -1
        try:
            while stack:
                state, parent, depth, slot, prob = pop()
                node += 1
                if node == node_limit:
                    raise MemoryLimitError(
                        f"{game_string} has more than {max_nodes} nodes (limit reached while "
                        "walking)")
                if node + len(stack) >= next_check:
                    next_check = node + len(stack) + check_every
                    self.num_slots, self.key_bytes = num_slots, key_bytes
                    self.terminals, self.chance_edges = terminals, chance_edges
                    self.check(node, len(stack))
                (append_parent, append_kind, append_infoset, append_slot, append_prob,
                 extend_returns, kinds) = level_appenders[depth]
                index = len(kinds)  # this node's position in its level
                append_parent(parent)
                append_slot(slot)
                if slot < 0:
                    append_prob(prob)
                    chance_edges += 1
                player = state.current_player()
                if player == terminal_id:
                    append_kind(KIND_TERMINAL)
                    append_infoset(-1)
                    extend_returns(state.returns())
                    terminals += 1
                elif player == chance_id:
                    append_kind(KIND_CHANCE)
                    append_infoset(-1)
                    child_depth = depth + 1
                    if child_depth == len(levels_arrays):
                        levels_arrays.append(_new_level_arrays())
                        level_appenders.append(_appenders(levels_arrays[-1]))
                    push_all([(state.child(a), index, child_depth, -1, p)
                              for a, p in reversed(state.chance_outcomes()) if p > 0.0])
                elif player >= 0:
                    append_kind(player)
                    key = state.information_state_string(player)
                    legal = state.legal_actions(player)
                    info = infoset_index.get(key)
                    if info is None:
                        if not legal:
                            raise UnsupportedGameError(
                                f"{game_string}: decision node without legal actions "
                                f"({key!r})")
                        info = len(infoset_index)
                        key_bytes += len(key) + KEY_OVERHEAD_BYTES
                        infoset_index[key] = info
                        infoset_player.append(player)
                        actions = tuple(legal)
                        infoset_actions.append(action_sets.setdefault(actions, actions))
                        infoset_offset.append(num_slots)
                        num_slots += len(legal)
                    elif (infoset_player[info] != player
                          or infoset_actions[info] != tuple(legal)):
                        raise UnsupportedGameError(
                            f"{game_string}: histories with information state {key!r} differ "
                            "in acting player or legal actions (the info-state strings do "
                            "not define information sets)")
                    append_infoset(info)
                    first_slot = infoset_offset[info]
                    child_depth = depth + 1
                    if child_depth == len(levels_arrays):
                        levels_arrays.append(_new_level_arrays())
                        level_appenders.append(_appenders(levels_arrays[-1]))
                    push_all([(state.child(legal[j]), index, child_depth, first_slot + j, 1.0)
                              for j in range(len(legal) - 1, -1, -1)])
                else:
                    raise UnsupportedGameError(
                        f"{game_string}: node with player id {player} (simultaneous node in "
                        "a sequential game?)")
                del state
        except OverflowError:  # an int32 array overflowed: 2^31 slots, infosets or nodes
            raise MemoryLimitError(
                f"{game_string} has more than 2^31 action slots or nodes in one level; too "
                "large for the tensor CFR engine") from None
        self.num_nodes = node + 1
        self.num_slots, self.key_bytes = num_slots, key_bytes
        self.terminals, self.chance_edges = terminals, chance_edges


def _renumber_infosets(levels_arrays: list[tuple], num_infosets: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Infosets numbered by first occurrence in level order: ``(new id of each walk-order
    id, with one more entry [-1] -> -1; walk-order id of each new id)``."""
    new_infoset_of_walk = np.full(num_infosets + 1, -1, dtype=np.int32)  # [-1] maps -1 -> -1
    next_id = 0
    for arrays in levels_arrays:
        ids = np.frombuffer(arrays[2], dtype=np.int32)
        seen = ids[ids >= 0]
        if seen.size == 0:
            continue
        unique, first = np.unique(seen, return_index=True)
        fresh = new_infoset_of_walk[unique] < 0
        unique = unique[fresh][np.argsort(first[fresh], kind="stable")]
        new_infoset_of_walk[unique] = np.arange(next_id, next_id + unique.size, dtype=np.int32)
        next_id += int(unique.size)
        del ids, seen, unique, first, fresh
    infoset_order = np.empty(num_infosets, dtype=np.int64)  # new id -> walk-order id
    infoset_order[new_infoset_of_walk[:-1]] = np.arange(num_infosets, dtype=np.int64)
    return new_infoset_of_walk, infoset_order


def _renumber_slots(walk: _Walk, new_infoset_of_walk: np.ndarray, infoset_order: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slots following the renumbered infosets: ``(actions per new infoset, its first
    slot, new slot of each walk slot with one more entry [-1] -> -1)``; drops the walk's
    slot offsets."""
    num_infosets = len(infoset_order)
    num_slots = walk.num_slots
    walk_num_actions = np.fromiter((len(a) for a in walk.infoset_actions), dtype=np.int64,
                                   count=num_infosets)
    new_num_actions = walk_num_actions[infoset_order]
    new_offset = np.zeros(num_infosets, dtype=np.int64)
    if num_infosets:
        new_offset[1:] = np.cumsum(new_num_actions)[:-1]
    # Slot j of walk-order infoset i (walk slot offset_i + j) becomes new slot
    # new_offset[new id of i] + j: an int32 shift per infoset repeated over its slots, plus
    # the walk slot number added in chunks (no int64 temporaries of the slot count).
    shift = (new_offset[new_infoset_of_walk[:-1]]
             - np.frombuffer(walk.infoset_offset, dtype=np.int64)).astype(np.int32)
    walk.infoset_offset = array("q")
    # One extra entry, -1, so that -1 maps to -1 (np.take's mode="wrap" below).
    new_slot_of_walk = np.repeat(np.append(shift, np.int32(-1)),
                                 np.append(walk_num_actions, 1))
    del shift
    chunk = 1 << 20
    for start in range(0, num_slots, chunk):
        stop = min(start + chunk, num_slots)
        new_slot_of_walk[start:stop] += np.arange(start, stop, dtype=np.int32)
    return new_num_actions, new_offset, new_slot_of_walk


def _levels_over_arrays(levels_arrays: list[tuple], new_infoset_of_walk: np.ndarray,
                        new_slot_of_walk: np.ndarray, dtype: torch.dtype,
                        num_players: int) -> list[Level]:
    """Per-level tensors over the typed arrays themselves (zero copy; CPython
    over-allocates them by about 6%), infoset and slot ids remapped in place; each
    depth's entry of ``levels_arrays`` is dropped once its level is built."""
    levels: list[Level] = []
    for d in range(len(levels_arrays)):
        parents, kinds, infosets, slots, probs, returns = levels_arrays[d]
        levels_arrays[d] = None  # type: ignore[call-overload]
        for ids, table in ((infosets, new_infoset_of_walk), (slots, new_slot_of_walk)):
            if ids:
                view = np.frombuffer(ids, dtype=np.int32)
                np.take(table, view, out=view, mode="wrap")  # -1 wraps to table[-1] == -1
                del view
        levels.append(Level(
            parent=_tensor_over(parents, torch.int32),
            kind=_tensor_over(kinds, torch.int8),
            infoset=_tensor_over(infosets, torch.int32),
            parent_action_slot=_tensor_over(slots, torch.int32),
            chance_edge_prob=_tensor_over(probs, torch.float64).to(dtype),
            terminal_utility=_tensor_over(returns, torch.float64).to(dtype).reshape(
                -1, num_players)))
        del parents, kinds, infosets, slots, probs, returns
    return levels


def _tensor_over(values: array, dtype: torch.dtype) -> torch.Tensor:
    """A tensor sharing the memory of the typed array ``values`` (which it keeps alive)."""
    if not values:
        return torch.empty(0, dtype=dtype)
    return torch.frombuffer(values, dtype=dtype)


def _check_walk_memory(game_string: str, nodes: int, pending: int, num_slots: int,
                       num_infosets: int, num_players: int, float_bytes: int,
                       max_memory_bytes: int, key_bytes: int = 0, rss_growth: int = 0,
                       terminals: int | None = None, chance_edges: int = 0) -> None:
    """Raise :class:`MemoryLimitError` when the tree + solver + walk estimate for the
    ``nodes`` visited (``terminals`` and ``chance_edges`` of them; ``pending`` states on
    the stack, counted as possible terminals and chance edges; ``key_bytes`` of
    information-state strings) exceeds the budget, or when the process has already grown
    by more than the budget (``rss_growth`` bytes) since the walk started."""
    if rss_growth > max_memory_bytes:
        raise MemoryLimitError(
            f"{game_string}: the walk of the game tree already holds "
            f"{format_bytes(rss_growth)} after {nodes:,} nodes ({num_infosets:,} information "
            f"sets), more than the limit of {format_bytes(max_memory_bytes)}; this game is "
            "too large for the tensor CFR engine at this limit (raise --max-memory or pick a "
            "smaller game configuration)")
    estimate = estimate_tree_bytes(
        nodes + pending, num_slots, num_infosets, num_players, float_bytes,
        num_terminals=None if terminals is None else terminals + pending,
        num_chance_edges=chance_edges + pending)
    estimate += pending * WALK_BYTES_PER_PENDING_STATE + (nodes + pending) * WALK_BYTES_PER_NODE
    estimate += key_bytes
    if estimate > max_memory_bytes:
        raise MemoryLimitError(
            f"{game_string} needs more than {format_bytes(estimate)} (at least "
            f"{nodes + pending} nodes, {num_slots} action slots found so far); the limit is "
            f"{format_bytes(max_memory_bytes)}")


def _recall_message(tree: LevelTree, violations: int, example: str | None) -> str:
    return (f"{tree.game_string} does not have perfect recall: information state {example!r} "
            f"is reached through different own histories ({violations} such infosets); this "
            "needs perfect recall")


def perfect_recall_violations(tree: LevelTree) -> tuple[int, str | None]:
    """Number of infosets whose histories differ in the acting player's previous
    (infoset, action) slot, and one such infoset key (``(0, None)``: perfect recall; the
    example is the violating infoset of the lowest id).

    By induction over a player's own decisions, "same previous own slot at every history of
    every infoset" is equivalent to perfect recall.  One pass over the levels in numpy on
    views of the tree's arrays (int32 throughout, one player's column at a time: about
    2 x 4 x P bytes per node of the largest level): each infoset keeps the previous own
    slot of the first level it is met on (its last history there), and every history is
    compared with it.  numpy, not torch: the check runs once per walk, and torch's kernels
    for it (a scatter-min and -max among them) would map about 5 MiB of library code into
    every process that flattens a game (docs/benchmarks/engine_memory.md).
    """
    n_players = tree.num_players
    # prev_slot[p, h]: player p's last slot on the path to node h (-1: none yet).
    prev_slot = np.full((n_players, 1), -1, dtype=np.int32)
    unset = np.int32(-2)
    expected = np.full(tree.num_infosets, unset, dtype=np.int32)
    bad = np.zeros(tree.num_infosets, dtype=np.bool_)
    parent_kind_source: np.ndarray | None = None
    for d, level in enumerate(tree.levels):
        kind = level.kind.cpu().numpy()
        if d > 0:
            assert parent_kind_source is not None
            parent = level.parent.cpu().numpy()
            prev_slot = prev_slot[:, parent]
            parent_kind = parent_kind_source[parent]
            del parent
            slot = level.parent_action_slot.cpu().numpy().astype(np.int32, copy=False)
            for p in range(n_players):
                own_edge = parent_kind == p
                if own_edge.any():
                    np.copyto(prev_slot[p], slot, where=own_edge)
                del own_edge
            del parent_kind, slot
        parent_kind_source = kind
        infoset_of_level = level.infoset.cpu().numpy()
        for p in range(n_players):
            acting = kind == p
            if not acting.any():
                continue
            infosets = infoset_of_level[acting]
            own_prev = prev_slot[p][acting]
            first_seen = expected[infosets] == unset
            expected[infosets[first_seen]] = own_prev[first_seen]
            bad[infosets[expected[infosets] != own_prev]] = True
            del acting, infosets, own_prev, first_seen
    violating = np.flatnonzero(bad)
    if violating.size == 0:
        return 0, None
    return int(violating.size), tree.infoset_keys[int(violating[0])]


def _check_perfect_recall(tree: LevelTree) -> None:
    """Raise :class:`UnsupportedGameError` unless the tree has perfect recall."""
    violations, example = perfect_recall_violations(tree)
    if violations:
        raise UnsupportedGameError(_recall_message(tree, violations, example))
