"""Bounds on the work one request to the play server can start.

Most requests are cheap (a view, a play, a hint from a cached solution). The end-of-game
analysis is not: for a hidden-hand game it asks the game's agent for its estimates at every
one of the human's 24 plays, each up to the agent's time budget per move (PIMC: 0.8 s), so
about 14 s of CPU for one ``GET /analysis`` of an uploaded record with ``"ai": "pimc"``.
Two things bound it:

* :class:`AnalysisCache`: an analysis is kept by what it depends on (the deal, the plays,
  the mode, the agent, its seed, the human's seat), so asking again, for the same game or for
  the same record uploaded again, costs nothing;
* :class:`WorkGate`: at most ``max_running`` analyses run at once and at most ``max_waiting``
  wait for a slot (each at most ``wait_seconds``); any other request is refused at once with
  :class:`Busy` (the server answers 503 with ``Retry-After``), so a flood of uploads holds
  neither the CPU nor the server's request threads.

Nothing here knows HTTP or the rules.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Callable, Hashable, Iterator

__all__ = ["ANALYSIS_CACHE_SIZE", "AnalysisCache", "Busy", "CACHE_SIZE_LIMIT",
           "MAX_GAMES_LIMIT", "TTL_MINUTES_LIMIT", "WorkGate", "analysis_key"]

ANALYSIS_CACHE_SIZE = 64
"""Analyses kept (each about 20-40 KiB of JSON-ready dicts)."""
MAX_GAMES_LIMIT = 10_000
"""Most games a server may hold (``--max-games``): about 80 KiB each, so at most about
0.8 GiB (docs/pasur_play.md, "Memory")."""
CACHE_SIZE_LIMIT = 32
"""Most exact solutions a server may keep (``--cache-size``): 5-60 MiB each, at most about
2 GiB."""
TTL_MINUTES_LIMIT = 7 * 24 * 60
"""Longest idle time of a game (``--ttl-minutes``): a week."""


class Busy(Exception):
    """Every slot for this kind of work is taken and the queue is full (or the wait ran
    out); ``retry_after`` is a suggested wait in seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WorkGate:
    """At most ``max_running`` holders at once, at most ``max_waiting`` more waiting, each
    waiting at most ``wait_seconds``. Thread-safe.

    >>> gate = WorkGate(max_running=1, max_waiting=0)
    >>> with gate.slot():
    ...     try:
    ...         with gate.slot():
    ...             pass
    ...     except Busy as exc:
    ...         print("busy")
    busy
    """

    def __init__(self, max_running: int = 2, max_waiting: int = 2,
                 wait_seconds: float = 30.0, what: str = "analyses") -> None:
        if max_running < 1 or max_waiting < 0 or not wait_seconds >= 0:
            raise ValueError("max_running >= 1, max_waiting >= 0 and wait_seconds >= 0")
        self.max_running = max_running
        self.max_waiting = max_waiting
        self.wait_seconds = wait_seconds
        self.what = what
        self._slots = threading.Semaphore(max_running)
        self._lock = threading.Lock()
        self._admitted = 0  # running + waiting
        self.refused = 0  # requests turned away (tests and the docs read it)

    def _busy(self) -> Busy:
        self.refused += 1
        return Busy(f"the server is busy: {self.max_running} {self.what} running and "
                    f"{self.max_waiting} waiting; try again in a few seconds",
                    retry_after=max(1, round(self.wait_seconds / 3)))

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one slot for the ``with`` body; :class:`Busy` at once when ``max_running``
        hold one and ``max_waiting`` wait, or after ``wait_seconds`` without a slot."""
        with self._lock:
            if self._admitted >= self.max_running + self.max_waiting:
                raise self._busy()
            self._admitted += 1
        try:
            if not self._slots.acquire(timeout=self.wait_seconds):
                with self._lock:
                    raise self._busy()
            try:
                yield
            finally:
                self._slots.release()
        finally:
            with self._lock:
                self._admitted -= 1

    @property
    def in_use(self) -> int:
        """Requests admitted now (running and waiting)."""
        with self._lock:
            return self._admitted


def analysis_key(session: Any) -> tuple[Hashable, ...]:
    """What a session's analysis depends on: deal, plays (and who made each: human, AI or
    a record), mode, agent and its seed, the human's seat and whether it is known."""
    return (tuple(int(c) for c in session.deal),
            tuple((int(p.action.card), tuple(int(c) for c in p.action.captured), p.by)
                  for p in session.plays),
            session.mode, session.ai_name, int(session.ai_seed), int(session.human),
            bool(getattr(session, "human_known", True)))


class AnalysisCache:
    """A bounded, thread-safe LRU of analyses by :func:`analysis_key`. ``get`` hands out a
    copy (a caller may change it); :meth:`compute` also shares a computation under way (two
    uploads of one record at once compute it once)."""

    def __init__(self, max_size: int = ANALYSIS_CACHE_SIZE, max_sharing: int = 8,
                 wait_seconds: float = 60.0) -> None:
        if max_size < 0 or max_sharing < 0 or not wait_seconds >= 0:
            raise ValueError("max_size, max_sharing and wait_seconds must be >= 0")
        self.max_size = max_size
        self.max_sharing = max_sharing  # requests waiting on computations under way, at most
        self.wait_seconds = wait_seconds
        self._entries: OrderedDict[tuple[Hashable, ...], dict[str, Any]] = OrderedDict()
        self._running: dict[tuple[Hashable, ...], Future[dict[str, Any]]] = {}
        self._sharing = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def compute(self, key: tuple[Hashable, ...],
                analyse: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The analysis of ``key``: cached, or the one another thread is computing now (its
        result or its error; :class:`Busy` when ``max_sharing`` requests wait already or it
        takes over ``wait_seconds``), or ``analyse()`` run here and kept."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return copy.deepcopy(found)
            running = self._running.get(key)
            if running is None:
                self.misses += 1
                mine: Future[dict[str, Any]] = Future()
                self._running[key] = mine
            elif self._sharing >= self.max_sharing:
                raise Busy(f"the server is busy: {self.max_sharing} requests already wait for "
                           "this analysis; try again in a few seconds", retry_after=5)
            else:
                self.hits += 1
                self._sharing += 1
        if running is not None:
            try:
                return copy.deepcopy(running.result(timeout=self.wait_seconds))
            except TimeoutError:
                raise Busy("the server is busy: this analysis is still running; try again "
                           "in a few seconds", retry_after=5) from None
            finally:
                with self._lock:
                    self._sharing -= 1
        try:
            result = analyse()
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        else:
            self.put(key, result)
            mine.set_result(result)
            return result
        finally:
            with self._lock:
                del self._running[key]

    def get(self, key: tuple[Hashable, ...]) -> dict[str, Any] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        return copy.deepcopy(found)

    def put(self, key: tuple[Hashable, ...], analysis: dict[str, Any]) -> None:
        if self.max_size == 0:
            return
        kept = copy.deepcopy(analysis)
        with self._lock:
            self._entries[key] = kept
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
