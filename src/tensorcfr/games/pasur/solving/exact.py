"""Exact minimax solution of a full-information Pasur deal by level-wise backward induction.

With the whole deal known, Pasur is a finite two-player zero-sum game of perfect information,
so every deal (and every position) has a minimax value: Alex's points minus Bob's points under
optimal play by both. This module computes it with whole-level array operations (numpy, on the
CPU; the shared-format graph of :func:`build_state_graph` is handed over as torch tensors):

1. **Forward pass**: the unique states of each remaining ply ("levels", 48 in a whole game)
   are generated at once and merged (states reached by different orders of play become one
   node, so the tree becomes a DAG).
2. **Backward pass**: from the last level up, the value of each edge (``Q = reward +
   V[child]``) and of each node (max at Alex's levels, min at Bob's), a level at a time.

The passes live in :mod:`~tensorcfr.games.pasur.solving.exact_levels` (the level builder);
the packed int64 state key and the card tables in
:mod:`~tensorcfr.games.pasur.solving.exact_keys`. This module holds the solution and its
queries (:class:`ExactSolution`), the entry points (:func:`solve_exact`, PIMC's batched
:func:`action_values_many`, the shared-format graph :func:`build_state_graph`) and a plain
recursive reference (:func:`memoised_minimax`), and re-exports the key constants and
:class:`DeadlineExceeded` that callers import from here.

Points already scored are never part of a state: they are *edge rewards* that add up along a
path (points of the captured cards, Surs, the clubs bonus at the moment a player reaches 7
clubs, and after the 48th play the end-of-game cleanup as a *terminal reward*). The value of a
node is therefore the points still to come (Alex minus Bob); the value of a whole game is the
points already scored at the starting position plus the value of the root.

A state is one int64 key (:func:`state_key`, layout in
:mod:`~tensorcfr.games.pasur.solving.exact_keys`). A level ``l`` (0..48) holds the states
before play ``l``; level 48 holds the end-of-game states before the cleanup.

Example::

    >>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
    >>> sol = solve_exact(random_deal(1))          # doctest: +SKIP
    >>> sol.value, sol.num_states                  # doctest: +SKIP
    (-6, 318304)
    >>> sol.action_values(initial_state(random_deal(1)))[:2]   # doctest: +SKIP
    [(Action(card=2, captured=(37,)), -6), (Action(card=11, captured=()), -6)]
    >>> values = action_values_many(determinizations)   # doctest: +SKIP
    >>> values[0] == solve_exact(determinizations[0]).action_values(determinizations[0])  # doctest: +SKIP
    True

Nothing here knows about observations or agents: a determinized state is a full state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.exact_keys import (
    ALL_CARDS_MASK,
    CLUBS_DONE,
    CLUBS_MASK,
    CLUBS_SHIFT,
    LAST_SHIFT,
    NUM_LEVELS,
    POOL_SHIFT,
    dealt_mask,
    state_key,
    sum11_combos,
)
from tensorcfr.games.pasur.solving.exact_levels import (
    BatchTables,
    DeadlineExceeded,
    Level,
    LevelGraph,
    backward_pass,
    batch_capacity,
    build_levels,
    memory_guard,
)
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph
from tensorcfr.utils.resources import peak_rss_mb

__all__ = [
    "CLUBS_MASK",
    "DeadlineExceeded",
    "ExactSolution",
    "NUM_LEVELS",
    "POOL_SHIFT",
    "StateNotSolvedError",
    "action_values_many",
    "as_start",
    "batch_capacity",
    "build_state_graph",
    "memoised_minimax",
    "principal_record",
    "replay_rows",
    "solve_exact",
    "state_key",
    "sum11_combos",
]

_EARLY_PLAYS = 24  # action_values_many: before this play, at most _EARLY_PASS_STARTS per pass
_EARLY_PASS_STARTS = 8


class StateNotSolvedError(TensorCFRError):
    """A position that is not part of a solution (another deal, or before its start)."""


# --------------------------------------------------------------------------- reference solver

def memoised_minimax(state: rules.GameState, memo: dict[tuple[int, int], int] | None = None
                     ) -> int:
    """Minimax value (final Alex-minus-Bob points) by plain recursion over :mod:`rules`.

    The baseline the tensor solver is benchmarked against: it memoises the points still to
    come on the same merged-state key (``(play_index, state_key)``), so it visits the same
    states, one Python call each. Slow; meant for tests and benchmarks.
    """
    memo = {} if memo is None else memo

    def to_go(s: rules.GameState, scored: int) -> int:
        if s.is_terminal:
            return 0
        k = (s.play_index, state_key(s))
        hit = memo.get(k)
        if hit is not None:
            return hit
        best: int | None = None
        maximise = s.player == rules.ALEX
        for action in rules.legal_actions(s):
            child = rules.apply_action(s, action)
            child_scored = rules.utility(child)
            v = child_scored - scored + to_go(child, child_scored)
            if best is None or (v > best if maximise else v < best):
                best = v
        assert best is not None
        memo[k] = best
        return best

    base = rules.utility(state)
    return base + to_go(state, base)


# --------------------------------------------------------------------------- solution

@dataclass
class ExactSolution:
    """The exact (minimax) solution of a full-information Pasur game from one position.

    Attributes:
        deal: the 52-card deal.
        start: the position solved from (the initial state for a whole deal).
        value: the final score difference (Alex's points minus Bob's, whole game including
            points scored before ``start``) when both play optimally from ``start``.
        states_per_level: number of unique merged states at each level from ``start``'s play
            to play 48 (``states_per_level[i]`` = states before play ``start.play_index + i``;
            the last entry counts the finished games, before the cleanup).
        states_per_round: 6 ints: for round ``r``, the unique states before its plays
            ``8r .. 8r+7`` (decision states: the round's roots and its 7 inner levels; the
            finished-game level 48 is not counted; 0 for rounds before ``start``).
        edges_per_level: number of legal plays (edges) at each level from ``start``.
        seconds: wall-clock time of the solve (forward + backward passes), s.
        peak_rss_mb: peak resident memory of this process after the solve, MiB.
        device: torch device named by the caller (the solver itself runs on the CPU).

    Computed on first use (and then kept):
        principal_line: game record ``{"deal": [...], "plays": [{"card", "captured"}...]}`` of
            an optimal game (plays before ``start``, from its history, then optimal plays; at
            each state the first optimal play in the order of :func:`rules.legal_actions`).
        principal_rows: one dict per optimal play from ``start``: ``play`` (1..48),
            ``player``, ``card``, ``captured``, ``points`` (the mover's points for the play),
            ``alex``, ``bob`` (running scores), plus a final ``cleanup`` row when the last
            pool goes to someone.
    """

    deal: tuple[int, ...]
    start: rules.GameState
    value: int
    states_per_level: list[int]
    states_per_round: list[int]
    edges_per_level: list[int]
    seconds: float
    peak_rss_mb: float
    device: str
    _graph: LevelGraph = field(repr=False, default=None)  # type: ignore[assignment]
    _line: tuple[dict[str, Any], list[dict[str, Any]]] | None = field(repr=False, default=None)

    @property
    def principal_line(self) -> dict[str, Any]:
        """Game record of an optimal game (see the class docstring)."""
        return self._principal()[0]

    @property
    def principal_rows(self) -> list[dict[str, Any]]:
        """One row per optimal play from the start (see the class docstring)."""
        return self._principal()[1]

    def _principal(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        if self._line is None:
            actions = [] if self.start.is_terminal else _principal_line(self._graph)
            self._line = principal_record(self.start, actions, self.value)
        return self._line

    @property
    def num_states(self) -> int:
        """Unique states over all levels (including the finished-game level)."""
        return int(sum(self.states_per_level))

    def _locate(self, state: rules.GameState) -> tuple[Level, int]:
        if tuple(state.deal) != self.deal:
            raise StateNotSolvedError("the position is from another deal than the solution")
        offset = state.play_index - self._graph.start_level
        if state.is_terminal or offset < 0:
            raise StateNotSolvedError(
                f"play {state.play_index} is not part of the solution (it starts at play "
                f"{self._graph.start_level} and ends after play 47; plays count from 0)")
        lv = self._graph.levels[offset]
        try:
            packed = state_key(state)
        except ValueError as exc:
            raise StateNotSolvedError(f"not a position of this deal: {exc}") from None
        pos = int(np.searchsorted(lv.keys, packed))
        if pos >= lv.keys.size or int(lv.keys[pos]) != packed:
            raise StateNotSolvedError("the position cannot be reached from the solved start")
        return lv, pos

    def level_values(self, play: int) -> tuple[np.ndarray, np.ndarray]:
        """The merged states before play ``play`` (from the start's play to 48 = the
        finished games before the cleanup) as sorted packed keys (int64 [N], see
        :func:`state_key`) and their points still to come (int32 [N], Alex minus Bob)."""
        offset = play - self._graph.start_level
        if offset < 0 or offset >= len(self._graph.levels):
            raise StateNotSolvedError(f"play {play} is not part of the solution")
        level = self._graph.levels[offset]
        assert level.values is not None
        return level.keys, level.values

    def state_value(self, state: rules.GameState) -> int:
        """Final score difference (Alex minus Bob) from ``state`` under optimal play."""
        if state.is_terminal and tuple(state.deal) == self.deal:
            return rules.utility(state)
        lv, pos = self._locate(state)
        assert lv.values is not None
        return rules.utility(state) + int(lv.values[pos])

    def action_values(self, state: rules.GameState) -> list[tuple[rules.Action, int]]:
        """Every legal play at ``state`` with its value: the final score difference (Alex
        minus Bob, points so far included) if it is played and both play optimally after.

        Ties between optimal plays show as equal values. Order: card, then captured set
        (the order of :func:`rules.legal_actions`).
        """
        lv, pos = self._locate(state)
        return _node_action_values(lv, pos, rules.utility(state))

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (the ``--json`` output of ``tensorcfr pasur solve``)."""
        return {
            "deal": list(self.deal),
            "start_play": self.start.play_index,
            "value": self.value,
            "states_per_round": self.states_per_round,
            "states_per_level": self.states_per_level,
            "edges_per_level": self.edges_per_level,
            "num_states": self.num_states,
            "seconds": self.seconds,
            "peak_rss_mb": self.peak_rss_mb,
            "device": self.device,
            "principal_line": self.principal_line,
            "principal_rows": self.principal_rows,
        }


def _node_action_values(lv: Level, pos: int, base: int) -> list[tuple[rules.Action, int]]:
    """Every play of node ``pos`` of ``lv`` with ``base`` + its Q-value, in the order of
    :func:`rules.legal_actions` (card, then captured set)."""
    assert lv.edge_start is not None and lv.q_values is not None
    lo, hi = int(lv.edge_start[pos]), int(lv.edge_start[pos + 1])
    q = lv.q_values[lo:hi].tolist()
    out = [(lv.edge_action(e), base + v) for e, v in zip(range(lo, hi), q)]
    out.sort(key=lambda av: (av[0].card, av[0].captured))
    return out


def _principal_line(graph: LevelGraph) -> list[rules.Action]:
    """Optimal plays from the start (first optimal edge at each node)."""
    actions: list[rules.Action] = []
    node = 0
    for i, lv in enumerate(graph.levels[:-1]):
        assert lv.edge_start is not None and lv.q_values is not None
        assert lv.edge_child is not None
        lo, hi = int(lv.edge_start[node]), int(lv.edge_start[node + 1])
        q = lv.q_values[lo:hi]
        alex_moves = (graph.start_level + i) % 2 == 0
        best = int(np.argmax(q)) if alex_moves else int(np.argmin(q))
        e = lo + best
        actions.append(lv.edge_action(e))
        node = int(lv.edge_child[e])
    return actions


def principal_record(start: rules.GameState, actions: list[rules.Action], value: int
                     ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The game record and the score rows of an optimal game: ``start``'s history, then
    ``actions`` (optimal plays from ``start`` to the end), checked to end at ``value`` (final
    Alex-minus-Bob points). The record is ``{"deal", "plays"}`` plus ``"start_play"`` when
    ``start`` is not finished and its history does not reach back to play 0 (a finished game's
    record is its history alone); the rows are :func:`replay_rows`'s.

    Raises:
        AssertionError: the plays do not score ``value`` (a solver bug).
    """
    prefix = [{"card": a.card, "captured": list(a.captured)} for a in start.history]
    final, rows = replay_rows(start, actions)
    if rules.utility(final) != value:  # pragma: no cover - a solver bug
        raise AssertionError(f"principal line scores {rules.utility(final)}, value is {value}")
    record: dict[str, Any] = {"deal": list(start.deal), "plays": prefix + [
        {"card": a.card, "captured": list(a.captured)} for a in actions]}
    if len(prefix) != start.play_index and not start.is_terminal:
        record["start_play"] = start.play_index  # the history before is unknown
    return record, rows


def replay_rows(start: rules.GameState, actions: list[rules.Action]
                ) -> tuple[rules.GameState, list[dict[str, Any]]]:
    """Replay ``actions`` (legal plays from ``start``) through :mod:`rules` and tabulate the
    running score: the final state and one row per play (``play``, ``player``, ``card``,
    ``captured``, ``points`` the mover scored, ``alex`` and ``bob`` the running totals), plus
    a ``play: None`` row for the last pool's cleanup."""
    state = start
    rows: list[dict[str, Any]] = []
    a0, b0 = (s.total for s in rules.score(state))
    for action in actions:
        before_pool = state.pool
        mover = state.player
        nxt = rules.apply_action(state, action)
        a1, b1 = (s.total for s in rules.score(nxt))
        cleanup: dict[str, Any] | None = None
        if nxt.is_terminal and before_pool and nxt.last_capturer is not None:
            left = tuple(c for c in before_pool if c not in action.captured)
            if not action.captured:
                left = tuple(sorted(left + (action.card,)))
            if left:
                # split the last play's points from the cleanup's
                pre = rules.GameState(deal=state.deal, play_index=nxt.play_index,
                                      hands=nxt.hands, pool=(),
                                      piles=tuple(tuple(c for c in pile if c not in left)
                                                  for pile in nxt.piles),  # type: ignore[arg-type]
                                      surs=nxt.surs, last_capturer=nxt.last_capturer)
                pa, pb = (s.total for s in rules.score(pre))
                cleanup = {"play": None, "player": rules.PLAYERS[nxt.last_capturer],
                           "card": None, "captured": list(left),
                           "points": (a1 - pa) if nxt.last_capturer == 0 else (b1 - pb),
                           "alex": a1, "bob": b1}
                a1_play, b1_play = pa, pb
            else:
                a1_play, b1_play = a1, b1
        else:
            a1_play, b1_play = a1, b1
        rows.append({"play": state.play_index, "player": rules.PLAYERS[mover],
                     "card": action.card, "captured": list(action.captured),
                     "points": (a1_play - a0) if mover == 0 else (b1_play - b0),
                     "alex": a1_play, "bob": b1_play})
        if cleanup is not None:
            rows.append(cleanup)
        a0, b0 = a1, b1
        state = nxt
    return state, rows


def as_start(deal_or_state: Sequence[int] | rules.GameState) -> rules.GameState:
    """The position a solve starts from: ``deal_or_state`` itself, or a deal's (validated)
    initial state."""
    if isinstance(deal_or_state, rules.GameState):
        return deal_or_state
    return rules.initial_state(rules.validate_deal(deal_or_state))


def solve_exact(deal_or_state: Sequence[int] | rules.GameState, device: str | torch.device = "cpu",
                max_memory: int | None = None, progress: Any = None) -> ExactSolution:
    """Solve a full-information Pasur deal (or the rest of a game from a position) exactly.

    Args:
        deal_or_state: a deal (52 card indices, validated) or a :class:`rules.GameState` to
            solve from (e.g. after some plays).
        device: recorded in the result (the solver runs on the CPU, in numpy; the
            shared-format graph of :func:`build_state_graph` is moved to a device).
        max_memory: limit in bytes for the solver's estimated memory (stored levels plus the
            working set of the level being expanded); ``None`` = the memory available now.
            Checked before each level is allocated: :class:`MemoryLimitError` if exceeded.
        progress: optional callable ``progress(level)`` called after each expanded level.

    Returns:
        An :class:`ExactSolution` whose ``value`` is the final Alex-minus-Bob points of
        optimal play and whose principal line replays legally through :mod:`rules`.
    """
    t0 = time.perf_counter()
    start = as_start(deal_or_state)
    dev = torch.device(device)
    deal = tuple(start.deal)
    if start.is_terminal:
        return ExactSolution(deal=deal, start=start, value=rules.utility(start),
                             states_per_level=[1], states_per_round=[0] * rules.NUM_ROUNDS,
                             edges_per_level=[], seconds=time.perf_counter() - t0,
                             peak_rss_mb=peak_rss_mb(), device=str(dev),
                             _graph=LevelGraph(start, start.play_index, []))
    guard = memory_guard(max_memory)
    graph = build_levels([start], guard, progress)
    backward_pass(graph, guard)
    root_values = graph.levels[0].values
    assert root_values is not None
    value = rules.utility(start) + int(root_values[0])
    states_per_level = [int(lv.keys.size) for lv in graph.levels]
    states_per_round = [0] * rules.NUM_ROUNDS
    for i, count in enumerate(states_per_level[:-1]):
        states_per_round[(start.play_index + i) // PLIES_PER_ROUND] += count
    edges = [lv.num_edges for lv in graph.levels[:-1]]
    return ExactSolution(deal=deal, start=start, value=value, states_per_level=states_per_level,
                         states_per_round=states_per_round, edges_per_level=edges,
                         seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb(),
                         device=str(dev), _graph=graph)


def action_values_many(states: Sequence[rules.GameState], max_memory: int | None = None,
                       *, deadline: float | None = None
                       ) -> list[list[tuple[rules.Action, int]]]:
    """Every legal play of each of ``states`` with its exact value, many states per pass.

    The values are those of :meth:`ExactSolution.action_values`: the final score difference
    (Alex minus Bob, points so far included) if the play is made and both then play
    optimally with the whole deal known. Meant for PIMC, which solves many determinizations
    of one observed position: states with the same play index are solved together in one
    level-wise pass (their states never merge: each start's index is written into key bits
    no state uses, see :class:`BatchTables`), as many per pass as there are free bits for
    (:func:`batch_capacity`; 2 at the first play, 32 once 4 cards are captured), and at
    most 8 per pass before play 24, where each solve is large enough that smaller passes are
    faster (measured: 8 per pass beats 32 at play 11, ties at play 20, loses at play 27).

    Args:
        states: positions (any deals, any play indices; a finished game gets ``[]``).
        max_memory: limit in bytes per pass (``None``: the memory available now).
        deadline: a ``time.perf_counter()`` time: a pass still running then is abandoned
            between two levels with :class:`DeadlineExceeded` (PIMC's time budget).

    Returns:
        One list per state, in the order of :func:`rules.legal_actions` (card, then
        captured set): ``(action, value)`` pairs.
    """
    out: list[list[tuple[rules.Action, int]]] = [[] for _ in states]
    by_play: dict[int, list[int]] = {}
    for i, state in enumerate(states):
        if not state.is_terminal:
            by_play.setdefault(state.play_index, []).append(i)
    for play, indices in by_play.items():
        capacity = batch_capacity([states[i] for i in indices])
        if play < _EARLY_PLAYS:  # large solves: several smaller passes sort faster
            capacity = min(capacity, _EARLY_PASS_STARTS)
        for lo in range(0, len(indices), capacity):
            chunk = indices[lo:lo + capacity]
            guard = memory_guard(max_memory)
            guard.deadline = deadline
            graph = build_levels([states[i] for i in chunk], guard)
            backward_pass(graph, guard)
            for d, i in enumerate(chunk):
                out[i] = _node_action_values(graph.levels[0], graph.root_index[d],
                                             rules.utility(states[i]))
    return out


# --------------------------------------------------------------------------- shared graph

def _node_state(keys: np.ndarray, level: int, tables: BatchTables, round_end: bool,
                device: torch.device) -> dict[str, torch.Tensor]:
    """Decoded per-node state of ``keys`` at global ``level`` (hands empty if ``round_end``),
    as int64 tensors [N] on ``device``."""
    pool = keys >> POOL_SHIFT
    clubs_field = (keys >> CLUBS_SHIFT) & 7
    done = clubs_field == CLUBS_DONE
    captured_clubs = tables.captured_clubs(keys, level, None)
    if round_end or level >= NUM_LEVELS:
        hand_a = np.zeros_like(keys)
        hand_b = np.zeros_like(keys)
    else:
        rel_a, rel_b = tables.hands_rel(keys, level)
        hand_a = tables.hands_abs(rel_a, level, 0, None)
        hand_b = tables.hands_abs(rel_b, level, 1, None)
    dealt = dealt_mask(tables.deals[0], level) if level < NUM_LEVELS else ALL_CARDS_MASK
    if round_end and level < NUM_LEVELS:  # before the next round's hands are dealt
        dealt = dealt_mask(tables.deals[0], level - 1)
    anyone = (dealt & ~pool & ~hand_a & ~hand_b) != 0
    columns = {
        "key": keys,
        "pool": pool,
        "alex_hand": hand_a,
        "bob_hand": hand_b,
        "alex_clubs": np.where(done, -1, clubs_field),
        "bob_clubs": np.where(done, -1, captured_clubs - clubs_field),
        "clubs_done": done.astype(np.int64),
        "last_capturer": np.where(anyone, (keys >> LAST_SHIFT) & 1, -1),
    }
    return {name: torch.from_numpy(np.ascontiguousarray(col, dtype=np.int64)).to(device)
            for name, col in columns.items()}


def build_state_graph(deal: Sequence[int], device: str | torch.device = "cpu",
                      max_memory: int | None = None) -> list[RoundGraph]:
    """The merged state graph of a whole deal in the shared format (dag mode of CFR).

    One :class:`RoundGraph` per round; level 8 of round ``r`` is level 0 of round ``r+1``
    (``next_root`` is the identity); round 5's ``terminal_reward`` is the cleanup. Each level's
    ``node_state`` holds int64 tensors [N]: ``key`` (packed state), ``pool``, ``alex_hand``,
    ``bob_hand`` (52-bit card masks), ``alex_clubs``, ``bob_clubs`` (club counts, -1 once
    somebody has 7), ``clubs_done`` (1 once somebody has 7), ``last_capturer`` (0 Alex,
    1 Bob, -1 nobody yet). Rewards are float64 points, Alex minus Bob. The graph is built on
    the CPU and its tensors are then moved to ``device``.
    """
    dev = torch.device(device)
    start = rules.initial_state(rules.validate_deal(deal))
    guard = memory_guard(max_memory)
    graph = build_levels([start], guard)
    num_edges = sum(lv.num_edges for lv in graph.levels)
    num_nodes = sum(lv.keys.size for lv in graph.levels)
    # int64 parent/child/card and float64 reward per edge, 8 int64 node-state tensors per node
    guard.check(0, num_edges * 40 + num_nodes * 8 * 8, "the graph in the shared format")
    tables = BatchTables([start])

    def as_tensor(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device=dev, dtype=dtype)

    rounds: list[RoundGraph] = []
    for r in range(rules.NUM_ROUNDS):
        lvs = graph.levels[8 * r:8 * r + 9]
        num_end = lvs[8].keys.size
        last_round = r == rules.NUM_ROUNDS - 1
        if last_round:
            assert lvs[8].terminal_reward is not None
            terminal = as_tensor(lvs[8].terminal_reward, torch.float64)
            next_root = torch.full((num_end,), -1, dtype=torch.int64, device=dev)
        else:
            terminal = torch.zeros(num_end, dtype=torch.float64, device=dev)
            next_root = torch.arange(num_end, dtype=torch.int64, device=dev)
        node_state = [_node_state(lvs[i].keys, 8 * r + i, tables, i == 8, dev) for i in range(9)]
        plays = [lv.edge_play for lv in lvs[:8]]
        rounds.append(RoundGraph(
            round_index=r,
            num_nodes=[int(lv.keys.size) for lv in lvs],
            edge_parent=[as_tensor(lv.edge_parent(), torch.int64) for lv in lvs[:8]],
            edge_child=[as_tensor(lv.edge_child, torch.int64) for lv in lvs[:8]],  # type: ignore[arg-type]
            edge_reward=[as_tensor(lv.edge_reward, torch.float64) for lv in lvs[:8]],  # type: ignore[arg-type]
            edge_card=[as_tensor(lv.play_card[p], torch.int64)  # type: ignore[index]
                       for lv, p in zip(lvs[:8], plays)],
            edge_captured=[as_tensor(lv.play_captured[p], torch.int64)  # type: ignore[index]
                           for lv, p in zip(lvs[:8], plays)],
            next_root=next_root,
            terminal_reward=terminal,
            node_state=node_state,
        ))
    return rounds
