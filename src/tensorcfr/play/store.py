"""Games held by the play server, by unguessable id: :class:`GameStore`.

Bounded in number (the least recently used goes first) and in idle time. It holds
:class:`tensorcfr.play.session.GameSession` objects and knows nothing of HTTP or of the rules.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from tensorcfr.play.limits import MAX_GAMES_LIMIT

__all__ = ["GameStore", "StoreEntry"]


@dataclass
class StoreEntry:
    """One held game and the lock that serialises requests on it."""

    session: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = 0.0


class GameStore:
    """Games by id, bounded in number and in idle time. Thread-safe.

    ``max_games`` is 1..:data:`~tensorcfr.play.limits.MAX_GAMES_LIMIT`; ``clock`` (seconds,
    monotonic) is injectable for tests.
    """

    def __init__(self, max_games: int = 256, ttl_seconds: float = 2 * 3600,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 1 <= max_games <= MAX_GAMES_LIMIT:
            raise ValueError(f"max_games must be 1..{MAX_GAMES_LIMIT}, got {max_games}")
        self.max_games = max_games
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._games: OrderedDict[str, StoreEntry] = OrderedDict()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._games:
            gid, entry = next(iter(self._games.items()))
            if now - entry.last_used <= self.ttl_seconds:
                break
            del self._games[gid]

    def add(self, session: Any) -> str:
        """Store ``session`` under a new unguessable id (evicting the oldest if full)."""
        gid = secrets.token_urlsafe(18)
        now = self.clock()
        with self._lock:
            self._expire(now)
            self._games[gid] = StoreEntry(session, last_used=now)
            while len(self._games) > self.max_games:
                self._games.popitem(last=False)
        return gid

    def get(self, gid: str) -> StoreEntry | None:
        """The entry of ``gid`` (refreshing its idle time), or None if unknown or expired."""
        now = self.clock()
        with self._lock:
            self._expire(now)
            entry = self._games.get(gid)
            if entry is None:
                return None
            entry.last_used = now
            self._games.move_to_end(gid)
            return entry

    def __len__(self) -> int:
        with self._lock:
            self._expire(self.clock())
            return len(self._games)
