"""Stopping a long run cleanly on SIGINT (Ctrl-C) or SIGTERM (``kill``, a scheduler).

A long loop (CFR iterations, decks of a batch) runs inside :func:`deferred_stop`: the first
SIGINT or SIGTERM only sets :attr:`StopRequest.requested`; the loop sees it between two steps,
writes its checkpoint (a state in the middle of an iteration would be torn) and raises
:class:`~tensorcfr.errors.InterruptedRun` saying where the checkpoint is. A second signal
stops at once (``KeyboardInterrupt``), for a user who will not wait for the step to end.

Nothing here knows what a step or a checkpoint is.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

from tensorcfr.errors import InterruptedRun

__all__ = ["StopRequest", "Terminated", "deferred_stop", "interrupted"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as a :class:`KeyboardInterrupt` (so every handler of Ctrl+C stops on it
    too) that an interactive prompt can tell apart from the user's own Ctrl+C: a prompt may
    read Ctrl+C as "quit", but SIGTERM always stops the command as interrupted."""


class StopRequest:
    """Whether a stop signal arrived (``requested``) and which (``signal_name``)."""

    def __init__(self) -> None:
        self.signal_number: int | None = None

    @property
    def requested(self) -> bool:
        """True once SIGINT or SIGTERM arrived inside :func:`deferred_stop`."""
        return self.signal_number is not None

    @property
    def signal_name(self) -> str:
        """``SIGINT`` / ``SIGTERM`` (empty before a signal)."""
        return signal.Signals(self.signal_number).name if self.signal_number else ""

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signal_number is not None:  # the second signal: stop now
            raise KeyboardInterrupt
        self.signal_number = signum


@contextlib.contextmanager
def deferred_stop() -> Iterator[StopRequest]:
    """Inside the block SIGINT and SIGTERM set the yielded request's flag (the second one
    raises KeyboardInterrupt); the previous handlers come back on exit. Outside the main
    thread nothing changes (the flag never rises)."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, request._handle)
    try:
        yield request
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupted(request: StopRequest, saved: str) -> InterruptedRun:
    """The :class:`InterruptedRun` to raise after a stop: ``saved`` says what was written
    and where (e.g. ``"checkpoint ck.npz at iteration 1,200; continue with --resume
    ck.npz"``)."""
    name = request.signal_name or "a signal"
    return InterruptedRun(f"stopped by {name}; {saved}")
