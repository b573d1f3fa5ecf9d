"""Double-dummy search of Pasur: exact values of a full-information position in milliseconds.

"Double dummy" is bridge's word for a deal with every hand known. Here a position is a full
:class:`rules.GameState` (a determinization: both hands *and* the cards still to be dealt
are fixed), and the search returns the same numbers as the exact solver (:mod:`.exact`):

* :func:`dd_value`: the final Alex-minus-Bob points under optimal play by both (points
  already scored included), :attr:`ExactSolution.value <.exact.ExactSolution.value>`.
* :func:`dd_action_values`: every legal play with that value if it is played,
  :meth:`ExactSolution.action_values <.exact.ExactSolution.action_values>` (same order:
  :func:`rules.legal_actions`).
* :func:`dd_action_values_many`: the same for many positions, a drop-in for
  :func:`.exact.action_values_many` (PIMC's determinizations).

Where the exact solver expands every merged state of the rest of the game level by level
(a quarter of a million states from the first play, 0.13-0.2 s), this search visits few of
them (about 20,000): alpha-beta in a window around a guess, then zero-window (MTD(f))
steps, a transposition table over the same merged state (equivalent cards merged), move
ordering (the table's best play, then captures by points) and cuts from the points still
available (:mod:`.double_dummy_kernel`, compiled by numba; the first call
in a fresh environment compiles it, later processes load it from numba's cache:
:func:`compile_kernels` does it up front and says how long it took).

A position whose pool offers more than :data:`~.double_dummy_kernel.MAX_MOVES` plays (never
seen in real deals) is handed to the exact solver, so the answers are always exact.

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> from tensorcfr.games.pasur.solving.exact import solve_exact
>>> state = initial_state(random_deal(1))
>>> dd_value(state) == solve_exact(state).value            # doctest: +SKIP
True

Nothing here knows about observations or agents: a determinized state is a full state.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import ACES, JACKS, TEN_OF_DIAMONDS, TWO_OF_CLUBS
from tensorcfr.games.pasur.solving.exact import DeadlineExceeded, as_start

__all__ = [
    "DEFAULT_TABLE_BITS",
    "DoubleDummySolution",
    "DoubleDummySolver",
    "compile_kernels",
    "dd_action_values",
    "dd_action_values_many",
    "dd_value",
    "position_arrays",
    "solve_double_dummy",
]

DEFAULT_TABLE_BITS = 18
"""log2 of the transposition table's slots (2**18 slots of 16 bytes: 4 MiB, a few times
the positions a search from the first play visits)."""
_TOTAL_CARD_POINTS = 13  # 4 Aces, 4 Jacks, 10♦ (3), 2♣ (2)
_POINT_VALUE = {c: 1 for c in (*ACES, *JACKS)} | {TEN_OF_DIAMONDS: 3, TWO_OF_CLUBS: 2}
_SUBSET_SLOTS = (np.arange(16)[:, None] >> np.arange(4)) & 1  # [16, 4]: slot j in mask m

ActionValues = list[tuple[rules.Action, int]]


def _kernel():  # type: ignore[no-untyped-def]
    """The compiled kernel module (imported on first use: importing numba costs ~0.3 s)."""
    from tensorcfr.games.pasur.solving import double_dummy_kernel

    return double_dummy_kernel


def _mask_cards(mask: int) -> tuple[int, ...]:
    cards = []
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return tuple(cards)


def position_arrays(state: rules.GameState
                    ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The kernel's hands table [6, 2, 4] (each round's hands, sorted), masks table
    [6, 33] (per round: the cards dealt after it; Alex's then Bob's hand as a card mask
    for each 4-bit mask of its slots) and the position integers of ``state``."""
    deal = state.deal
    hands = np.sort(np.asarray(deal[4:], dtype=np.int64).reshape(rules.NUM_ROUNDS, 2, 4),
                    axis=-1)
    bits = np.left_shift(np.int64(1), hands)  # [6, 2, 4]
    masks = np.zeros((rules.NUM_ROUNDS, 33), dtype=np.int64)
    dealt_after = 0
    for r in range(rules.NUM_ROUNDS - 1, -1, -1):
        masks[r, 0] = dealt_after
        dealt_after |= int(np.bitwise_or.reduce(bits[r].reshape(-1)))
    masks[:, 1:17] = (bits[:, 0, None, :] * _SUBSET_SLOTS).sum(-1)
    masks[:, 17:33] = (bits[:, 1, None, :] * _SUBSET_SLOTS).sum(-1)
    r = state.play_index // rules.PLAYS_PER_ROUND
    rels = []
    for p in (rules.ALEX, rules.BOB):
        dealt = hands[r, p].tolist()
        held = state.hands[p]
        rel = sum(1 << j for j, c in enumerate(dealt) if c in held)
        if bin(rel).count("1") != len(held):
            raise ValueError(f"{rules.PLAYERS[p]}'s hand was not dealt in round {r + 1} "
                             "of the state's deal")
        rels.append(rel)
    clubs = [sum(1 for c in pile if c % 4 == 0) for pile in state.piles]
    if max(clubs) >= rules.CLUBS_FOR_BONUS:
        clubs = [_kernel().CLUBS_DONE] * 2
    scored = sum(_POINT_VALUE.get(c, 0) for pile in state.piles for c in pile)
    pool = 0
    for c in state.pool:
        pool |= 1 << c
    last = -1 if state.last_capturer is None else int(state.last_capturer)
    return hands, masks, (state.play_index, pool, rels[0], rels[1], clubs[0], clubs[1],
                          last, _TOTAL_CARD_POINTS - scored)


class DoubleDummySolver:
    """The search with its own transposition table and move buffers (reused across calls;
    one solver per thread: it is not thread-safe).

    Args:
        table_bits: log2 of the table's slots (16..28); a larger table keeps more of a long
            search, a smaller one is cheaper to hold.
    """

    def __init__(self, table_bits: int = DEFAULT_TABLE_BITS) -> None:
        if not 16 <= int(table_bits) <= 28:
            raise ValueError(f"table_bits must be in 16..28, got {table_bits}")
        self.table_bits = int(table_bits)
        size = 1 << self.table_bits
        self._table = np.zeros((size, 2), dtype=np.int64)
        k = _kernel()
        self._move_card = np.zeros((rules.NUM_PLAYS + 1, k.MAX_MOVES), dtype=np.int64)
        self._move_cap = np.zeros((rules.NUM_PLAYS + 1, k.MAX_MOVES), dtype=np.int64)
        self._move_key = np.zeros((rules.NUM_PLAYS + 1, k.MAX_MOVES), dtype=np.int64)
        self._out_card = np.zeros(k.MAX_MOVES, dtype=np.int64)
        self._out_cap = np.zeros(k.MAX_MOVES, dtype=np.int64)
        self._out_value = np.zeros(k.MAX_MOVES, dtype=np.int64)
        self._frame = np.zeros((rules.NUM_PLAYS + 1, k.NUM_FRAME_COLUMNS), dtype=np.int64)
        self._scratch = np.zeros((5, k.MAX_MOVES), dtype=np.int64)
        self._stats = np.zeros(4, dtype=np.int64)
        self._gen = 0
        self.nodes = 0
        """Positions the last call searched (its transposition-table hits included)."""
        self.searches = 0
        """Zero-window searches the last call made (MTD(f) steps, over all its plays)."""

    # ------------------------------------------------------------------ helpers

    def _position(self, state: rules.GameState
                  ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        return position_arrays(state)

    def _next_generation(self) -> int:
        self._gen += 1
        if self._gen >= 1 << _kernel().GEN_BITS:  # wrap: clear once a million searches
            self._table[:] = 0
            self._gen = 1
        self._stats[:] = 0
        return self._gen

    # ------------------------------------------------------------------ public

    def value(self, deal_or_state: Sequence[int] | rules.GameState) -> int:
        """Final Alex-minus-Bob points under optimal play from a deal's start or a position
        (points scored before it included): :attr:`.exact.ExactSolution.value`."""
        state = as_start(deal_or_state)
        if state.is_terminal:
            return rules.utility(state)
        hands, masks, pos = self._position(state)
        gen = self._next_generation()
        k = _kernel()
        to_go = int(k.mtdf(*pos, 0, hands, masks, self._table, gen, self.table_bits,
                           self._move_card, self._move_cap, self._move_key, self._frame,
                           self._scratch, self._stats))
        self.nodes = int(self._stats[0])
        self.searches = int(self._stats[2])
        if self._stats[1]:
            from tensorcfr.games.pasur.solving.exact import solve_exact

            return solve_exact(state).value
        sign = 1 if state.player == rules.ALEX else -1
        return rules.utility(state) + sign * to_go

    def values_of_deal(self, states: Sequence[rules.GameState]) -> list[int]:
        """:meth:`value` of each of ``states``, positions of one deal (a game's positions
        one after another, say), sharing one table generation: what the search learned
        about a position stays valid for the others of the deal (the table holds points to
        come, and the deal fixes every hand), so a game's 49 positions cost about a quarter
        of 49 separate calls. Each search starts from the previous answer as its guess.

        Raises:
            ValueError: positions of different deals.
        """
        if not states:
            return []
        deal = tuple(states[0].deal)
        if any(tuple(s.deal) != deal for s in states):
            raise ValueError("values_of_deal takes positions of one deal")
        hands, masks, _ = self._position(states[0])
        gen = self._next_generation()
        k = _kernel()
        out: list[int] = []
        for state in states:
            if state.is_terminal:
                out.append(rules.utility(state))
                continue
            _, _, pos = self._position(state)
            base = rules.utility(state)
            sign = 1 if state.player == rules.ALEX else -1
            guess = sign * (out[-1] - base) if out else 0
            self._stats[:] = 0
            to_go = int(k.mtdf(*pos, guess, hands, masks, self._table, gen, self.table_bits,
                               self._move_card, self._move_cap, self._move_key, self._frame,
                               self._scratch, self._stats))
            if self._stats[1]:  # a pool too big for the kernel: the exact solver answers
                from tensorcfr.games.pasur.solving.exact import solve_exact

                out.append(solve_exact(state).value)
                continue
            out.append(base + sign * to_go)
        return out

    def action_values(self, state: rules.GameState) -> ActionValues:
        """Every legal play at ``state`` with its final Alex-minus-Bob value if it is played
        and both then play optimally, in :func:`rules.legal_actions` order
        (:meth:`.exact.ExactSolution.action_values`); ``[]`` for a finished game."""
        if state.is_terminal:
            return []
        return self._action_values(state, self._next_generation())

    def _action_values(self, state: rules.GameState, gen: int) -> ActionValues:
        """:meth:`action_values` with the table generation ``gen`` (a new one for a lone
        position; one for all the positions of a deal, as :meth:`optimal_line` does)."""
        hands, masks, pos = self._position(state)
        self._stats[:] = 0
        k = _kernel()
        n = int(k.play_values(*pos, hands, masks, self._table, gen, self.table_bits,
                              self._move_card, self._move_cap, self._move_key, self._frame,
                              self._scratch, self._stats,
                              self._out_card, self._out_cap, self._out_value))
        self.nodes = int(self._stats[0])
        self.searches = int(self._stats[2])
        if n < 0:
            from tensorcfr.games.pasur.solving.exact import solve_exact

            return solve_exact(state).action_values(state)
        base = rules.utility(state)
        sign = 1 if state.player == rules.ALEX else -1
        by_play = {(int(c), int(m)): base + sign * int(v) for c, m, v in
                   zip(self._out_card[:n], self._out_cap[:n], self._out_value[:n])}
        out: ActionValues = []
        for action in rules.legal_actions(state):
            mask = 0
            for c in action.captured:
                mask |= 1 << c
            out.append((action, by_play[(action.card, mask)]))
        if len(out) != n:  # pragma: no cover - a kernel bug
            raise AssertionError("the double-dummy plays differ from the legal plays")
        return out

    def optimal_line(self, state: rules.GameState
                     ) -> tuple[list[rules.Action], int, int, int]:
        """An optimal game from ``state`` to the end: at each position the first optimal
        play in :func:`rules.legal_actions` order (the exact solver's principal line, the
        same plays), every search of the line sharing one table generation. Returns the
        plays, ``state``'s value (final Alex-minus-Bob points), and the positions searched
        and the zero-window searches made over the line."""
        gen = self._next_generation()
        actions: list[rules.Action] = []
        value = rules.utility(state) if state.is_terminal else None
        nodes = searches = 0
        while not state.is_terminal:
            values = self._action_values(state, gen)
            nodes += self.nodes
            searches += self.searches
            pick = max if state.player == rules.ALEX else min
            best = pick(v for _, v in values)
            if value is None:
                value = best
            action = next(a for a, v in values if v == best)
            actions.append(action)
            state = rules.apply_action(state, action)
        self.nodes, self.searches = nodes, searches
        assert value is not None
        return actions, value, nodes, searches

    def action_values_many(self, states: Sequence[rules.GameState], *,
                           deadline: float | None = None) -> list[ActionValues]:
        """:meth:`action_values` of each state. With ``deadline`` (a ``time.perf_counter()``
        time), :class:`.exact.DeadlineExceeded` is raised if it has passed when a state is
        to be started (one state takes milliseconds, so no solve is cut in the middle)."""
        out: list[ActionValues] = []
        for state in states:
            if deadline is not None and time.perf_counter() > deadline:
                raise DeadlineExceeded("the solve's deadline passed")
            out.append(self.action_values(state))
        return out


_local = threading.local()


def _default_solver() -> DoubleDummySolver:
    solver = getattr(_local, "solver", None)
    if solver is None:
        solver = _local.solver = DoubleDummySolver()
    return solver


def dd_value(deal_or_state: Sequence[int] | rules.GameState) -> int:
    """Final Alex-minus-Bob points of optimal play (this thread's shared solver)."""
    return _default_solver().value(deal_or_state)


def dd_action_values(state: rules.GameState) -> ActionValues:
    """Every legal play's exact value (this thread's shared solver)."""
    return _default_solver().action_values(state)


def dd_action_values_many(states: Sequence[rules.GameState], *,
                          deadline: float | None = None) -> list[ActionValues]:
    """Every legal play's exact value for each state (this thread's shared solver): the
    same answers as :func:`.exact.action_values_many`, in the same order."""
    return _default_solver().action_values_many(states, deadline=deadline)


@dataclass(frozen=True)
class DoubleDummySolution:
    """What ``tensorcfr pasur solve --method double-dummy`` reports for a deal or position.

    Attributes:
        deal: the deal's 52 card indices.
        start: the position solved from (the initial state for a whole deal).
        value: final Alex-minus-Bob points under optimal play from ``start`` (points scored
            before it included): the exact solver's value.
        principal_line: game record of an optimal game, the exact solver's principal line
            (:attr:`.exact.ExactSolution.principal_line`: the same plays).
        principal_rows: one row per play of it from ``start`` (:func:`.exact.replay_rows`).
        positions_searched: positions the search visited over the whole line (table hits
            included): the work, where the exact solver counts its merged states.
        searches: zero-window searches made over the line.
        seconds: wall-clock time of the solve and the line, s.
        peak_rss_mb: peak resident memory of this process after the solve, MiB.
    """

    deal: tuple[int, ...]
    start: rules.GameState
    value: int
    principal_line: dict[str, Any]
    principal_rows: list[dict[str, Any]]
    positions_searched: int
    searches: int
    seconds: float
    peak_rss_mb: float

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (``tensorcfr pasur solve --method double-dummy --json``)."""
        return {"deal": list(self.deal), "start_play": self.start.play_index,
                "value": self.value, "positions_searched": self.positions_searched,
                "searches": self.searches, "seconds": self.seconds,
                "peak_rss_mb": self.peak_rss_mb, "device": "cpu",
                "principal_line": self.principal_line, "principal_rows": self.principal_rows}


def solve_double_dummy(deal_or_state: Sequence[int] | rules.GameState,
                       solver: DoubleDummySolver | None = None) -> DoubleDummySolution:
    """The value and an optimal game of a full-information deal (or of the rest of a game
    from a position) by the double-dummy search: the exact solver's value and principal line
    (tests/test_pasur_double_dummy.py), without its count of every merged state.

    Args:
        deal_or_state: a deal (52 card indices, validated) or a :class:`rules.GameState`.
        solver: the search to use (default: this thread's shared one).

    Raises:
        InvalidDealError: a bad deal.
    """
    from tensorcfr.games.pasur.solving.exact import principal_record
    from tensorcfr.utils.resources import peak_rss_mb

    t0 = time.perf_counter()
    start = as_start(deal_or_state)
    solver = _default_solver() if solver is None else solver
    actions, value, nodes, searches = solver.optimal_line(start)
    record, rows = principal_record(start, actions, value)  # checks the line scores value
    return DoubleDummySolution(deal=tuple(start.deal), start=start, value=value,
                               principal_line=record, principal_rows=rows,
                               positions_searched=nodes, searches=searches,
                               seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb())


def compile_kernels() -> float:
    """Compile (or load from numba's cache) the search kernel and run it once; returns the
    seconds it took (the first-call cost, reported apart from search times)."""
    t0 = time.perf_counter()
    state = rules.initial_state(rules.random_deal(0))
    while state.play_index < rules.NUM_PLAYS - 4:  # a short search: the time is the compile's
        state = rules.apply_legal_action(state, rules.legal_actions(state)[0])
    solver = _default_solver()
    solver.action_values(state)
    solver.value(state)
    return time.perf_counter() - t0
