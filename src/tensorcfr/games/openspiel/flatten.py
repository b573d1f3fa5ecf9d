"""Load OpenSpiel games with one-line errors and flatten them into a :class:`LevelTree`.

The walk is depth first and touches every history exactly once (``state.child(a)``), so
only about depth x branching OpenSpiel states are alive at any time; nodes go into compact
typed arrays and a stable sort by depth gives the breadth-first level order.
Information-state strings are mapped to infoset ids with a dict.  Memory is estimated
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

from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, Level, LevelTree, estimate_tree_bytes
from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.utils.resources import current_rss_bytes, format_bytes, release_free_memory

__all__ = ["GameLoadError", "UnsupportedGameError", "load_game", "flatten_game",
           "perfect_recall_violations", "WALK_BYTES_PER_PENDING_STATE", "WALK_BYTES_PER_FRONTIER_STATE",
           "WALK_BYTES_PER_NODE"]

WALK_BYTES_PER_PENDING_STATE = 1024
"""Rough bytes held per live OpenSpiel state waiting on the depth-first stack (estimate)."""

WALK_BYTES_PER_FRONTIER_STATE = WALK_BYTES_PER_PENDING_STATE
"""Former name of :data:`WALK_BYTES_PER_PENDING_STATE` (the walk was breadth first)."""

KEY_OVERHEAD_BYTES = 120
"""Bytes per information set besides its string's characters: the str object header, the
dict entry of the walk's key -> id map, and the list slot of ``infoset_keys``."""

WALK_BYTES_PER_NODE = 128
"""Rough bytes of walk bookkeeping per node: the typed arrays of the depth-first walk
(about 45 bytes) and the numpy temporaries of the conversion to levels."""


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
        registered = list(pyspiel.registered_names())
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


def flatten_game(game: "str | object", *, max_memory_bytes: int | None = None,
                 dtype: torch.dtype = torch.float64, require_perfect_recall: bool = False,
                 max_nodes: int | None = None,
                 progress: "Callable[[int, int], None] | None" = None) -> LevelTree:
    """Walk an OpenSpiel game once and flatten it into a :class:`LevelTree`.

    Args:
        game: a game string (``"leduc_poker"``, ``"kuhn_poker(players=3)"``) or a loaded
            ``pyspiel.Game``.  Simultaneous games are converted to turn-based.
        max_memory_bytes: budget for the tree plus a solver's working set (estimated from the
            counts with :func:`estimate_tree_bytes`); ``None`` means no limit.  The check runs
            after every level, so an oversized game is refused before it is built.
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
        tree = _flatten(loaded, max_memory_bytes, dtype, max_nodes, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    violations, example = perfect_recall_violations(tree)
    tree.metadata["perfect_recall"] = violations == 0
    tree.metadata["imperfect_recall_infosets"] = violations
    tree.metadata["imperfect_recall_example"] = example
    if require_perfect_recall and violations:
        raise UnsupportedGameError(_recall_message(tree, violations, example))
    release_free_memory()  # the walk's freed bookkeeping, before a solver allocates
    tree.setup_seconds = time.perf_counter() - started
    return tree


def _flatten(loaded: "object", max_memory_bytes: int | None, dtype: torch.dtype,
             max_nodes: int | None,
             progress: "Callable[[int, int], None] | None" = None) -> LevelTree:
    """The depth-first walk of :func:`flatten_game` (no perfect-recall check).

    Nodes are recorded in depth-first pre-order into compact typed arrays (about 40 bytes
    per node) while only the states of the current path and their unvisited siblings are
    alive (depth x branching states, instead of a whole breadth-first frontier).  A stable
    sort by depth then yields the level order: within a depth, pre-order is the
    lexicographic order of the action paths, which is exactly the breadth-first order
    (children grouped by parent, parents in order).  Infosets and slots, numbered on first
    sight during the walk, are renumbered by first occurrence in that level order, so the
    tree is identical, node by node and slot by slot, to a breadth-first walk's.
    """
    import pyspiel

    num_players = loaded.num_players()
    game_string = str(loaded)
    terminal_id = int(pyspiel.PlayerId.TERMINAL)
    chance_id = int(pyspiel.PlayerId.CHANCE)
    float_bytes = torch.empty((), dtype=dtype).element_size()

    infoset_index: dict[str, int] = {}
    infoset_keys: list[str] = []
    infoset_player = array("i")
    # Legal actions per infoset, as tuples shared through a pool (games have few distinct
    # legal-action sets): one pointer per infoset instead of one list each.
    infoset_actions: list[tuple[int, ...]] = []
    action_sets: dict[tuple[int, ...], tuple[int, ...]] = {}
    infoset_offset = array("q")
    num_slots = 0

    # One entry per node, in depth-first pre-order (walk order).
    node_depth = array("i")
    node_parent = array("q")  # walk index of the parent (-1 at the root)
    node_kind = array("b")
    node_infoset = array("q")  # walk-order infoset id (-1 if not a decision node)
    node_slot = array("q")  # walk-order slot of the parent's action (-1 if no decision parent)
    node_prob = array("d")  # chance probability of the incoming edge (1 otherwise)
    terminal_nodes = array("q")
    terminal_returns = array("d")  # num_players values per terminal

    # Pending nodes: (state, parent walk index, depth, slot, chance prob); children are
    # pushed in reverse so that they are popped (visited) in action order.
    stack: list[tuple] = [(loaded.new_initial_state(), -1, 0, -1, 1.0)]
    pop, push_all = stack.pop, stack.extend
    append_depth, append_parent = node_depth.append, node_parent.append
    append_kind, append_infoset = node_kind.append, node_infoset.append
    append_slot, append_prob = node_slot.append, node_prob.append
    node_limit = max_nodes if max_nodes is not None else -1
    key_bytes = 0  # bytes of the information-state strings kept (and their dict entries)
    rss_start = current_rss_bytes()
    # Checks run every ``check_every`` OpenSpiel states created (nodes visited plus states
    # waiting on the stack): deep games such as chess push tens of thousands of large
    # states before visiting a few thousand nodes.
    check_every = 1024
    next_check = check_every
    node = -1
    while stack:
        state, parent, depth, slot, prob = pop()
        node += 1
        if node == node_limit:
            raise MemoryLimitError(
                f"{game_string} has more than {max_nodes} nodes (limit reached while walking)")
        if node + len(stack) >= next_check:
            next_check = node + len(stack) + check_every
            if max_memory_bytes is not None:
                _check_walk_memory(game_string, node, len(stack), num_slots, len(infoset_keys),
                                   num_players, float_bytes, max_memory_bytes, key_bytes,
                                   current_rss_bytes() - rss_start)
            if progress is not None:
                progress(node, len(infoset_keys))
        append_depth(depth)
        append_parent(parent)
        append_slot(slot)
        append_prob(prob)
        player = state.current_player()
        if player == terminal_id:
            append_kind(KIND_TERMINAL)
            append_infoset(-1)
            terminal_nodes.append(node)
            terminal_returns.extend(state.returns())
        elif player == chance_id:
            append_kind(KIND_CHANCE)
            append_infoset(-1)
            child_depth = depth + 1
            push_all([(state.child(a), node, child_depth, -1, p)
                      for a, p in reversed(state.chance_outcomes()) if p > 0.0])
        elif player >= 0:
            append_kind(player)
            key = state.information_state_string(player)
            legal = state.legal_actions(player)
            info = infoset_index.get(key)
            if info is None:
                if not legal:
                    raise UnsupportedGameError(
                        f"{game_string}: decision node without legal actions ({key!r})")
                info = len(infoset_keys)
                key_bytes += len(key) + KEY_OVERHEAD_BYTES
                infoset_index[key] = info
                infoset_keys.append(key)
                infoset_player.append(player)
                actions = tuple(legal)
                infoset_actions.append(action_sets.setdefault(actions, actions))
                infoset_offset.append(num_slots)
                num_slots += len(legal)
            elif infoset_player[info] != player or infoset_actions[info] != tuple(legal):
                raise UnsupportedGameError(
                    f"{game_string}: histories with information state {key!r} differ in "
                    "acting player or legal actions (the info-state strings do not define "
                    "information sets)")
            append_infoset(info)
            first_slot = infoset_offset[info]
            child_depth = depth + 1
            push_all([(state.child(legal[j]), node, child_depth, first_slot + j, 1.0)
                      for j in range(len(legal) - 1, -1, -1)])
        else:
            raise UnsupportedGameError(
                f"{game_string}: node with player id {player} (simultaneous node in a "
                "sequential game?)")
        del state
    total_nodes = node + 1
    if max_memory_bytes is not None:
        _check_walk_memory(game_string, total_nodes, 0, num_slots, len(infoset_keys),
                           num_players, float_bytes, max_memory_bytes, key_bytes,
                           current_rss_bytes() - rss_start)
    if progress is not None:
        progress(total_nodes, len(infoset_keys))
    del infoset_index  # the keys are kept in infoset_keys

    # --- level order: stable sort of the walk order by depth.
    depth_np = np.frombuffer(node_depth, dtype=np.intc)
    order = np.argsort(depth_np, kind="stable")  # level-order position -> walk index
    sizes = np.bincount(depth_np).tolist()
    del depth_np, node_depth
    level_of_walk = np.empty(total_nodes, dtype=np.int64)  # walk index -> level-order position
    level_of_walk[order] = np.arange(total_nodes, dtype=np.int64)

    # --- infosets and slots renumbered by first occurrence in level order.
    num_infosets = len(infoset_keys)
    walk_infoset = np.frombuffer(node_infoset, dtype=np.int64)[order]
    del node_infoset
    decision = walk_infoset >= 0
    _, first_position = np.unique(walk_infoset[decision], return_index=True)
    infoset_order = np.argsort(first_position, kind="stable")  # new id -> walk-order id
    new_infoset_of_walk = np.empty(num_infosets, dtype=np.int64)
    new_infoset_of_walk[infoset_order] = np.arange(num_infosets, dtype=np.int64)
    walk_num_actions = np.fromiter((len(a) for a in infoset_actions), dtype=np.int64,
                                   count=num_infosets)
    new_num_actions = walk_num_actions[infoset_order]
    new_offset = np.zeros(num_infosets, dtype=np.int64)
    if num_infosets:
        new_offset[1:] = np.cumsum(new_num_actions)[:-1]
    walk_slot_infoset = np.repeat(np.arange(num_infosets, dtype=np.int64), walk_num_actions)
    walk_offset = np.frombuffer(infoset_offset, dtype=np.int64)
    new_slot_of_walk = (new_offset[new_infoset_of_walk[walk_slot_infoset]]
                        + np.arange(num_slots, dtype=np.int64) - walk_offset[walk_slot_infoset])
    level_infoset = np.where(decision, new_infoset_of_walk[np.maximum(walk_infoset, 0)], -1)
    del walk_infoset, decision
    walk_slot = np.frombuffer(node_slot, dtype=np.int64)[order]
    del node_slot
    level_slot = np.where(walk_slot >= 0, new_slot_of_walk[np.maximum(walk_slot, 0)], -1)
    del walk_slot

    # --- parents as level-order positions; utilities of terminals.
    walk_parent = np.frombuffer(node_parent, dtype=np.int64)[order]
    del node_parent
    level_parent = np.where(walk_parent >= 0, level_of_walk[np.maximum(walk_parent, 0)], -1)
    del walk_parent
    level_kind = np.frombuffer(node_kind, dtype=np.int8)[order]
    level_prob = np.frombuffer(node_prob, dtype=np.float64)[order]
    del node_kind, node_prob, order
    utility = np.zeros((total_nodes, num_players), dtype=np.float64)
    utility[level_of_walk[np.frombuffer(terminal_nodes, dtype=np.int64)]] = np.frombuffer(
        terminal_returns, dtype=np.float64).reshape(-1, num_players)
    del level_of_walk, terminal_nodes, terminal_returns

    # Per-level tensors, one field at a time, each global array freed once split.
    bounds = np.cumsum([0] + sizes).tolist()
    spans = list(zip(bounds[:-1], bounds[1:]))
    for d in range(len(spans) - 1, 0, -1):  # parents local to the previous level
        level_parent[spans[d][0]:spans[d][1]] -= spans[d - 1][0]

    def split(values: np.ndarray, as_dtype: torch.dtype | None = None) -> list[torch.Tensor]:
        parts = [torch.from_numpy(values[s:e].copy()) for s, e in spans]
        return parts if as_dtype is None else [part.to(as_dtype) for part in parts]

    fields: dict[str, list[torch.Tensor]] = {"parent": split(level_parent)}
    del level_parent
    fields["kind"] = split(level_kind)
    del level_kind
    fields["infoset"] = split(level_infoset)
    del level_infoset
    fields["parent_action_slot"] = split(level_slot)
    del level_slot
    fields["chance_prob"] = split(level_prob, dtype)
    del level_prob
    fields["utility"] = split(utility, dtype)
    del utility
    levels = [Level(**{name: parts[d] for name, parts in fields.items()})
              for d in range(len(spans))]
    del fields

    action_infoset = torch.repeat_interleave(torch.arange(num_infosets, dtype=torch.long),
                                             torch.from_numpy(new_num_actions))
    action_id = np.empty(num_slots, dtype=np.int64)
    action_id[new_slot_of_walk] = np.fromiter(chain.from_iterable(infoset_actions),
                                              dtype=np.int64, count=num_slots)
    del infoset_actions, action_sets
    order_list = infoset_order.tolist()
    tree = LevelTree(
        num_players=num_players,
        levels=levels,
        num_infosets=num_infosets,
        infoset_player=torch.from_numpy(
            np.frombuffer(infoset_player, dtype=np.intc)[infoset_order].astype(np.int64)),
        infoset_num_actions=torch.from_numpy(new_num_actions),
        infoset_action_offset=torch.from_numpy(new_offset),
        action_infoset=action_infoset,
        action_id=torch.from_numpy(action_id),
        infoset_keys=[infoset_keys[i] for i in order_list],
        game_string=game_string,
        metadata={"num_distinct_actions": loaded.num_distinct_actions(),
                  "short_name": loaded.get_type().short_name},
    )
    return tree


def _check_walk_memory(game_string: str, nodes: int, pending: int, num_slots: int,
                       num_infosets: int, num_players: int, float_bytes: int,
                       max_memory_bytes: int, key_bytes: int = 0, rss_growth: int = 0) -> None:
    """Raise :class:`MemoryLimitError` when the tree + solver + walk estimate for the
    ``nodes`` visited (and ``pending`` states on the stack, and ``key_bytes`` of
    information-state strings) exceeds the budget, or when the process has already grown
    by more than the budget (``rss_growth`` bytes) since the walk started."""
    if rss_growth > max_memory_bytes:
        raise MemoryLimitError(
            f"{game_string}: the walk of the game tree already holds "
            f"{format_bytes(rss_growth)} after {nodes:,} nodes ({num_infosets:,} information "
            f"sets), more than the limit of {format_bytes(max_memory_bytes)}; this game is "
            "too large for the tensor CFR engine at this limit (raise --max-memory or pick a "
            "smaller game configuration)")
    estimate = estimate_tree_bytes(nodes + pending, num_slots, num_infosets, num_players,
                                   float_bytes)
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
    (infoset, action) slot, and one such infoset key (``(0, None)``: perfect recall).

    By induction over a player's own decisions, "same previous own slot at every history of
    every infoset" is equivalent to perfect recall.  Whole-tensor, one pass over levels.
    """
    n_players = tree.num_players
    prev_slot = torch.full((1, n_players), -1, dtype=torch.long)
    lowest = torch.full((tree.num_infosets,), torch.iinfo(torch.long).max, dtype=torch.long)
    highest = torch.full((tree.num_infosets,), -2, dtype=torch.long)
    for d, level in enumerate(tree.levels):
        if d > 0:
            parent = level.parent.cpu()
            prev_slot = prev_slot.index_select(0, parent)
            parent_kind = tree.levels[d - 1].kind.cpu().index_select(0, parent).long()
            rows = torch.nonzero(parent_kind >= 0).squeeze(1)
            prev_slot[rows, parent_kind[rows]] = level.parent_action_slot.cpu()[rows]
        kind = level.kind.cpu()
        decision_nodes = torch.nonzero(kind >= 0).squeeze(1)
        if decision_nodes.numel() == 0:
            continue
        infosets = level.infoset.cpu()[decision_nodes]
        own_prev = prev_slot[decision_nodes, kind[decision_nodes].long()]
        lowest.scatter_reduce_(0, infosets, own_prev, reduce="amin")
        highest.scatter_reduce_(0, infosets, own_prev, reduce="amax")
    bad = torch.nonzero((lowest != highest) & (highest > -2)).squeeze(1)
    if bad.numel() == 0:
        return 0, None
    return int(bad.numel()), tree.infoset_keys[int(bad[0])]


def _check_perfect_recall(tree: LevelTree) -> None:
    """Raise :class:`UnsupportedGameError` unless the tree has perfect recall."""
    violations, example = perfect_recall_violations(tree)
    if violations:
        raise UnsupportedGameError(_recall_message(tree, violations, example))
