"""Many independent jobs on Ray (a local instance or a cluster), stoppable by Ctrl-C.

What ``pasur batch`` and ``pasur tournament`` share about Ray:

* :func:`check_ray_address`: refuse, in one line, an ``--address`` where nobody answers;
* :func:`run_on_ray`: start Ray quietly (its start-up lines kept off the terminal, workers
  at the driver's niceness), run ``function(*args)`` for every job with a bounded window of
  tasks in flight, hand each result (or a worker's one-line failure) to ``on_result`` as it
  arrives, and shut Ray down;
* signals: during ``ray.init`` SIGINT is ignored so the processes Ray starts inherit it
  ignored (Ctrl-C in a terminal reaches the whole process group); afterwards a SIGINT (or
  SIGTERM) is only counted and the driver stops between results by raising
  :class:`KeyboardInterrupt`, every result handed over so far kept;
* :func:`interrupt_on_sigterm`: for runs in this process, SIGTERM stops them as Ctrl-C does.

This module knows Ray and signals only; it does not know what the jobs compute.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from typing import Any, Callable, Hashable, Iterator, Sequence

from tensorcfr.errors import TensorCFRError

__all__ = ["check_ray_address", "interrupt_on_sigterm", "run_on_ray"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def check_ray_address(address: str, timeout: float = 3.0) -> None:
    """Refuse (one line) a Ray address whose host:port does not accept a connection."""
    target = address
    for prefix in ("ray://", "http://", "https://"):
        if target.startswith(prefix):
            target = target[len(prefix):]
    if target == "auto":
        return
    host, _, port = target.rpartition(":")
    try:
        port_number = int(port)
    except ValueError:
        raise TensorCFRError(f"--address {address!r} must be host:port (e.g. 10.0.0.5:6379) "
                             "or auto") from None
    try:
        with socket.create_connection((host or "127.0.0.1", port_number), timeout=timeout):
            pass
    except OSError as exc:
        raise TensorCFRError(f"no Ray cluster answers at --address {address} "
                             f"({exc.strerror or exc})") from None


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    return ((str(exc).splitlines() or [type(exc).__name__])[0])[:limit]


class _SignalLatch:
    """Counts stop signals once :meth:`listen` has been called (see
    :func:`_driver_only_signals`)."""

    def __init__(self, active: bool, signals: Sequence[int]) -> None:
        self.active = active
        self.signals = tuple(signals)
        self.count = 0

    @property
    def seen(self) -> bool:
        """Whether a stop signal arrived since :meth:`listen`."""
        return self.count > 0

    def listen(self) -> None:
        """From now on a stop signal is only counted (no KeyboardInterrupt inside Ray calls)."""
        if self.active:
            for signum in self.signals:
                signal.signal(signum, lambda number, frame: self._count())

    def _count(self) -> None:
        self.count += 1


@contextlib.contextmanager
def _driver_only_signals(signals: Sequence[int] = STOP_SIGNALS) -> Iterator[_SignalLatch]:
    """Inside this block SIGINT is ignored until the latch's ``listen()``, so the processes
    ray.init starts (and the workers they start) inherit it ignored and only the driver sees
    Ctrl-C; after ``listen()`` the driver only counts ``signals`` and stops between results.
    The previous handlers come back on exit. Outside the main thread (where handlers cannot be
    set) nothing changes."""
    active = threading.current_thread() is threading.main_thread()
    latch = _SignalLatch(active, signals)
    if not active:
        yield latch
        return
    previous = {signum: signal.getsignal(signum) for signum in signals}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield latch
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Ray prints start-up lines on stderr (file descriptor 2); keep them off the terminal."""
    devnull = open(os.devnull, "w")
    old_err = os.dup(2)
    try:
        sys.stderr.flush()
        os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(old_err, 2)
        os.close(old_err)
        devnull.close()


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Inside this block SIGTERM raises :class:`KeyboardInterrupt` in the main thread, as
    Ctrl-C does, so ``finally`` blocks run (outside the main thread: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_on_ray(function: Callable[..., Any], jobs: Sequence[tuple[Hashable, tuple[Any, ...]]],
               on_result: Callable[[Hashable, Any, str | None], None], *, workers: int = 1,
               address: str | None = None, window: int | None = None,
               signals: Sequence[int] = STOP_SIGNALS) -> dict[str, Any]:
    """Run ``function(*args)`` for each ``(key, args)`` of ``jobs`` on Ray.

    Args:
        function: a module-level function (Ray pickles it by reference), one CPU per call.
        jobs: ``(key, args)`` pairs; keys name the jobs in ``on_result``.
        on_result: ``on_result(key, result, error)`` in the driver as each job ends: ``error``
            is None, or the one-line reason a worker failed (``result`` is then None).
        workers: CPUs of a local instance (``ray.init(num_cpus=workers)``).
        address: an existing cluster instead of a local instance (checked first).
        window: most tasks in flight (default twice the cluster's CPUs).
        signals: the signals that stop the run (between results).

    Returns:
        ``{"mode": "ray", "address": ..., "cpus": ...}``.

    Raises:
        TensorCFRError: Ray cannot start or the address does not answer (one line).
        KeyboardInterrupt: a stop signal arrived; the results handed over so far are kept.
    """
    if address is not None:
        check_ray_address(address)
    import ray

    # Ray starts its workers at niceness +15 by default (``worker_niceness``): on a machine
    # shared with other work they then get almost no CPU. Keep the driver's.
    os.environ.setdefault("RAY_worker_niceness", "0")
    with _driver_only_signals(signals) as interrupts:
        with _quiet_stderr():
            try:
                if address is not None:
                    ray.init(address=address, include_dashboard=False, log_to_driver=False,
                             logging_level="error")
                else:
                    ray.init(num_cpus=max(1, workers), include_dashboard=False,
                             log_to_driver=False, logging_level="error")
            except Exception as exc:  # noqa: BLE001 - any start-up failure is one line
                raise TensorCFRError(
                    f"cannot start Ray: {_first_line(exc)}") from None
        interrupts.listen()
        info = {"mode": "ray", "address": address or "local",
                "cpus": float(ray.cluster_resources().get("CPU", 0))}
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(function)
            limit = window if window is not None else max(2, 2 * int(info["cpus"] or 1))
            pending: dict[Any, Hashable] = {}
            queue = list(jobs)
            queue.reverse()  # pop() from the end takes the jobs in their order
            while queue or pending:
                if interrupts.seen:
                    raise KeyboardInterrupt
                while queue and len(pending) < limit:
                    key, args = queue.pop()
                    pending[remote.remote(*args)] = key
                # a timeout keeps the driver responsive to Ctrl-C (a blocking wait in Ray's
                # C++ core would hold the signal until a job finishes)
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                for ref in ready:
                    key = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a worker died on this job
                        on_result(key, None,
                                  f"worker failed: {_first_line(exc)}")
                    else:
                        on_result(key, result, None)
        finally:
            ray.shutdown()
    return info
