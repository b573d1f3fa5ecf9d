"""Bounds on the work one request to the play server can start.

Most requests are cheap (a view, a play, a hint from a cached solution). The end-of-game
analysis is not: for a hidden-hand game it asks the game's agent for its estimates at every
one of the human's 24 plays, each up to the agent's time budget per move (PIMC: 0.8 s), so
about 14 s of CPU for one ``GET /analysis`` of an uploaded record with ``"ai": "pimc"``.
Two things bound it:

* :class:`~tensorcfr.play.caches.AnalysisCache`: an analysis is kept by what it depends on
  (the deal, the plays, the mode, the agent, its seed, the human's seat), so asking again, for
  the same game or for the same record uploaded again, costs nothing;
* :class:`WorkGate`: at most ``max_running`` analyses run at once and at most ``max_waiting``
  wait for a slot (each at most ``wait_seconds``); any other request is refused at once with
  :class:`Busy` (the server answers 503 with ``Retry-After``), so a flood of uploads holds
  neither the CPU nor the server's request threads.

Nothing here knows HTTP or the rules.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["Busy", "CACHE_SIZE_LIMIT", "MAX_GAMES_LIMIT", "TTL_MINUTES_LIMIT", "WorkGate"]

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
