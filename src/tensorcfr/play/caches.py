"""The play server's caches: one bounded LRU of shared computations under three uses.

:class:`SharedLRU` is the one idea: results by key, each held as a
:class:`~concurrent.futures.Future` from the moment its computation starts, so that every
asker of a key shares one computation (two requests for one deal's exact solution run one
solve), and at most ``max_size`` entries, finished or not, are kept (the least recently used
goes first). Three caches are built on it:

* :class:`SolutionCache`: exact solutions by deal (5-60 MiB each), solved on demand or in the
  background (:meth:`SolutionCache.prefetch`), at most ``max_concurrent`` solves at once;
* :class:`AnalysisCache`: end-of-game analyses by :func:`analysis_key` (the deal, the plays,
  the mode, the agent...), handed out as copies; requests waiting on one under way are
  bounded (:class:`~tensorcfr.play.limits.Busy` beyond);
* :class:`PlayerCache`: loaded ``table`` / ``model`` players by (name, deal, files).

A failed computation is not kept: its waiters get its error, the next asker computes afresh.
Nothing here knows HTTP or the rules (:class:`SolutionCache` calls the exact solver by name).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Callable, Generic, Hashable, Sequence, TypeVar

from tensorcfr.play.limits import Busy

__all__ = ["ANALYSIS_CACHE_SIZE", "AnalysisCache", "PlayerCache", "SharedLRU",
           "SolutionCache", "analysis_key", "release_freed_memory"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

ANALYSIS_CACHE_SIZE = 64
"""Analyses kept (each about 20-40 KiB of JSON-ready dicts)."""


class SharedLRU(Generic[K, V]):
    """A bounded, thread-safe LRU of results by key, each a :class:`Future` (pending while its
    computation runs). ``max_size`` 0 keeps nothing: each asker computes its own.

    >>> lru: SharedLRU[str, int] = SharedLRU(max_size=1)
    >>> fut, mine = lru.claim("a")      # a new entry: this caller computes it
    >>> mine, fut.set_result(1), lru.claim("a")[1]
    (True, None, False)
    >>> lru.put("b", 2); "a" in lru     # the least recently used goes first
    False
    """

    def __init__(self, max_size: int) -> None:
        if max_size < 0:
            raise ValueError(f"max_size must be >= 0, got {max_size}")
        self.max_size = max_size
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, Future[V]] = OrderedDict()

    def claim(self, key: K) -> tuple[Future[V], bool]:
        """The entry of ``key`` (now the most recently used) and False, or a new pending
        entry and True: the caller must then complete it (``set_result`` or, after
        :meth:`discard`, ``set_exception``)."""
        with self._lock:
            fut = self._entries.get(key)
            if fut is not None:
                self._entries.move_to_end(key)
                return fut, False
            fut = Future()
            fut.set_running_or_notify_cancel()
            self._entries[key] = fut
            self._evict()
            return fut, True

    def lookup(self, key: K) -> Future[V] | None:
        """The entry of ``key`` (now the most recently used), or None."""
        with self._lock:
            fut = self._entries.get(key)
            if fut is not None:
                self._entries.move_to_end(key)
            return fut

    def peek(self, key: K) -> Future[V] | None:
        """The entry of ``key`` without touching the order, or None."""
        with self._lock:
            return self._entries.get(key)

    def holds(self, key: K, fut: Future[V]) -> bool:
        """Whether ``fut`` is still the entry of ``key`` (not evicted or replaced)."""
        with self._lock:
            return self._entries.get(key) is fut

    def discard(self, key: K, fut: Future[V]) -> None:
        """Forget ``key`` if ``fut`` is its entry (a failed computation is not kept)."""
        with self._lock:
            if self._entries.get(key) is fut:
                del self._entries[key]

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` as the finished entry of ``key``."""
        fut: Future[V] = Future()
        fut.set_running_or_notify_cancel()
        fut.set_result(value)
        with self._lock:
            self._entries[key] = fut
            self._entries.move_to_end(key)
            self._evict()

    def _evict(self) -> None:
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


# --------------------------------------------------------------------------- exact solutions

def release_freed_memory() -> None:
    """Hand memory freed by a finished solve back to the operating system (glibc's
    ``malloc_trim``; nothing elsewhere). An exact solve's graph peaks at hundreds of MiB and
    more on hard deals; without this the allocator keeps those pages, and a server's resident
    memory ratchets up to the largest solves seen (measured: 0.5 to 2.3 GiB after a flood of new
    open-hands games)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


class _Dropped(Exception):
    """A queued background solve whose entry was evicted before it started."""


class SolutionCache:
    """A bounded, thread-safe LRU of exact solutions by deal (a :class:`SharedLRU`).

    ``get(deal)`` solves on a miss; concurrent requests for the same deal wait for one solve.
    ``prefetch(deal)`` starts that solve in a background thread and returns at once. A
    solution holds its whole state graph (about 5-60 MiB on random deals), so ``max_size``
    bounds the memory.
    """

    def __init__(self, max_size: int = 8, device: str = "cpu",
                 solver: Callable[[tuple[int, ...]], Any] | None = None,
                 max_concurrent: int = 1, max_prefetch: int = 4) -> None:
        if max_size < 1 or max_concurrent < 1 or max_prefetch < 0:
            raise ValueError("max_size and max_concurrent must be at least 1, max_prefetch >= 0")
        self.max_size = max_size
        self.device = device
        self._solver = solver
        self._solutions: SharedLRU[tuple[int, ...], Any] = SharedLRU(max_size)
        # memory bound: at most max_concurrent solves hold their graphs at once (the others
        # wait), and at most max_prefetch background solves are queued (more are dropped:
        # the deal is then solved when first asked for)
        self._slots = threading.Semaphore(max_concurrent)
        self._lock = threading.Lock()  # guards _prefetching
        self.max_prefetch = max_prefetch
        self._prefetching = 0
        self.solves = 0  # number of solves run (tests and benchmarks read it)

    def _solve(self, deal: tuple[int, ...]) -> Any:
        if self._solver is not None:
            return self._solver(deal)
        from tensorcfr.games.pasur.solving.exact import solve_exact

        return solve_exact(deal, device=self.device)

    def _run(self, deal: tuple[int, ...], fut: Future[Any], background: bool = False) -> None:
        """Solve ``deal`` into ``fut`` (a background solve whose entry was evicted while it
        waited for a slot gives up: whoever still waits on it solves afresh)."""
        try:
            with self._slots:
                if background and not self._solutions.holds(deal, fut):
                    raise _Dropped()
                self.solves += 1
                try:
                    result = self._solve(deal)
                finally:
                    release_freed_memory()  # the solve's transient peak goes back
            fut.set_result(result)
        except BaseException as exc:  # noqa: BLE001 - handed to every waiter
            self._solutions.discard(deal, fut)
            fut.set_exception(exc)
        finally:
            if background:
                with self._lock:
                    self._prefetching -= 1

    def get(self, deal: Sequence[int]) -> Any:
        """The exact solution of ``deal`` (solved now if it is not cached)."""
        key = tuple(int(c) for c in deal)
        while True:
            fut, mine = self._solutions.claim(key)
            if mine:
                self._run(key, fut)
            try:
                return fut.result()
            except _Dropped:
                continue

    def prefetch(self, deal: Sequence[int]) -> bool:
        """Start solving ``deal`` in a background thread unless it is cached or under way.

        Returns whether a solve was started; none is when ``max_prefetch`` are already queued
        (the deal is then solved when first asked for)."""
        key = tuple(int(c) for c in deal)
        with self._lock:
            if key in self._solutions or self._prefetching >= self.max_prefetch:
                return False
            self._prefetching += 1
        fut, mine = self._solutions.claim(key)
        if not mine:  # another thread got there first
            with self._lock:
                self._prefetching -= 1
            return False
        # not a daemon: the interpreter waits for it at exit (a few seconds at most),
        # since torch aborts the process if a daemon thread is still inside it then
        threading.Thread(target=self._run, args=(key, fut, True), daemon=False,
                         name="pasur-solve").start()
        return True

    def is_ready(self, deal: Sequence[int]) -> bool:
        """Whether ``deal``'s solution is cached and finished (no wait)."""
        fut = self._solutions.peek(tuple(int(c) for c in deal))
        return fut is not None and fut.done() and fut.exception() is None

    def __len__(self) -> int:
        return len(self._solutions)


# --------------------------------------------------------------------------- analyses

def analysis_key(session: Any) -> tuple[Hashable, ...]:
    """What a session's analysis depends on: deal, plays (and who made each: human, AI or
    a record), mode, agent and its seed, the human's seat and whether it is known."""
    return (tuple(int(c) for c in session.deal),
            tuple((int(p.action.card), tuple(int(c) for c in p.action.captured), p.by)
                  for p in session.plays),
            session.mode, session.ai_name, int(session.ai_seed), int(session.human),
            bool(getattr(session, "human_known", True)))


class AnalysisCache:
    """A bounded, thread-safe LRU of analyses by :func:`analysis_key` (a :class:`SharedLRU`).
    Callers get copies (a caller may change its answer); :meth:`compute` also shares a
    computation under way (two uploads of one record at once compute it once)."""

    def __init__(self, max_size: int = ANALYSIS_CACHE_SIZE, max_sharing: int = 8,
                 wait_seconds: float = 60.0) -> None:
        if max_size < 0 or max_sharing < 0 or not wait_seconds >= 0:
            raise ValueError("max_size, max_sharing and wait_seconds must be >= 0")
        self.max_size = max_size
        self.max_sharing = max_sharing  # requests waiting on computations under way, at most
        self.wait_seconds = wait_seconds
        self._analyses: SharedLRU[tuple[Hashable, ...], dict[str, Any]] = SharedLRU(max_size)
        self._sharing = 0
        self._lock = threading.Lock()  # guards the counters
        self.hits = 0
        self.misses = 0

    def compute(self, key: tuple[Hashable, ...],
                analyse: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The analysis of ``key``: cached, or the one another thread is computing now (its
        result or its error; :class:`Busy` when ``max_sharing`` requests wait already or it
        takes over ``wait_seconds``), or ``analyse()`` run here and kept."""
        fut, mine = self._analyses.claim(key)
        with self._lock:
            if mine:
                self.misses += 1
            elif not fut.done() and self._sharing >= self.max_sharing:
                raise Busy(f"the server is busy: {self.max_sharing} requests already wait for "
                           "this analysis; try again in a few seconds", retry_after=5)
            else:
                self.hits += 1
                self._sharing += 1
        if mine:
            try:
                result = analyse()
            except BaseException as exc:
                self._analyses.discard(key, fut)
                fut.set_exception(exc)
                raise
            fut.set_result(copy.deepcopy(result))  # the caller may change its own
            return result
        try:
            return copy.deepcopy(fut.result(timeout=self.wait_seconds))
        except TimeoutError:
            raise Busy("the server is busy: this analysis is still running; try again "
                       "in a few seconds", retry_after=5) from None
        finally:
            with self._lock:
                self._sharing -= 1

    def get(self, key: tuple[Hashable, ...]) -> dict[str, Any] | None:
        """A copy of the finished analysis of ``key``, or None."""
        fut = self._analyses.lookup(key)
        found = fut is not None and fut.done() and fut.exception() is None
        with self._lock:
            if found:
                self.hits += 1
            else:
                self.misses += 1
        return copy.deepcopy(fut.result()) if found else None  # type: ignore[union-attr]

    def put(self, key: tuple[Hashable, ...], analysis: dict[str, Any]) -> None:
        """Keep a copy of ``analysis`` as that of ``key``."""
        self._analyses.put(key, copy.deepcopy(analysis))

    def __len__(self) -> int:
        return len(self._analyses)


# --------------------------------------------------------------------------- players

class PlayerCache:
    """A small thread-safe LRU of loaded ``table`` / ``model`` players by (name, deal, files)
    (a :class:`SharedLRU`): loading a strategy table or a model takes a while, games of one
    deal share it, and two games that ask at once load it once."""

    def __init__(self, max_size: int = 4) -> None:
        self.max_size = max_size
        self._players: SharedLRU[tuple[Any, ...], Any] = SharedLRU(max_size)

    def get(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """The player of ``key``, built by ``build()`` if it is not kept."""
        fut, mine = self._players.claim(key)
        if mine:
            try:
                fut.set_result(build())
            except BaseException as exc:
                self._players.discard(key, fut)
                fut.set_exception(exc)
                raise
        return fut.result()
