"""Running independent jobs on local worker processes, without Ray.

:func:`run_on_processes` is :func:`~tensorcfr.utils.ray_cluster.run_on_ray`'s contract on a
:class:`concurrent.futures.ProcessPoolExecutor`: for a machine where Ray is not installed or
cannot start (a container without ``/dev/shm``, a GPU box with a bare image), or where a
few processes are all a run needs. The workers are started with ``spawn`` (a fresh
interpreter: no torch threads or locks inherited from the driver) and ignore SIGINT, so a
terminal's Ctrl-C or ``timeout -s INT`` reaches the driver only: it stops between two results,
cancels the jobs not started, and every result handed over so far is kept.

Nothing here knows what the workers compute.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import signal
from typing import Any, Callable, Hashable, Iterable

from tensorcfr.utils.interrupts import deferred_stop

__all__ = ["run_on_processes"]


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the driver's to handle (it stops between results)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_on_processes(function: Callable[..., Any],
                     jobs: Iterable[tuple[Hashable, tuple[Any, ...]]],
                     on_result: Callable[[Hashable, Any, str | None], None], *,
                     workers: int) -> dict[str, Any]:
    """Run ``function(*args)`` for each ``(key, args)`` of ``jobs`` on ``workers`` local
    processes, at most twice ``workers`` jobs in flight (``jobs`` is read lazily).

    ``function`` and its arguments must be picklable (a module-level function).
    ``on_result(key, result, error)`` runs in the driver as each job ends; ``error`` is None,
    or the one-line reason the job failed (its exception, or a worker process that died),
    and ``result`` is then None. A SIGINT or SIGTERM stops the run between two results with
    :class:`KeyboardInterrupt`, the jobs not yet started cancelled and every result handed
    over so far kept. Returns ``{"mode": "processes", "workers": workers}``.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    window = 2 * workers
    context = multiprocessing.get_context("spawn")
    pool = futures.ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                       initializer=_ignore_sigint)
    pending: dict[futures.Future, Hashable] = {}
    queue = iter(jobs)
    more = True
    try:
        with deferred_stop() as stop:
            while True:
                while more and len(pending) < window:
                    job = next(queue, None)
                    if job is None:
                        more = False
                        break
                    key, args = job
                    pending[pool.submit(function, *args)] = key
                if not pending:
                    break
                # a timeout keeps the driver responsive to a stop signal
                done, _ = futures.wait(list(pending), timeout=0.5,
                                       return_when=futures.FIRST_COMPLETED)
                for future in done:
                    key = pending.pop(future)
                    try:
                        result = future.result()
                    except Exception as exc:  # noqa: BLE001 - the job or its worker failed
                        text = (str(exc).splitlines() or [""])[0][:200]
                        on_result(key, None, f"worker failed: {type(exc).__name__}: {text}")
                    else:
                        on_result(key, result, None)
                if stop.requested:
                    raise KeyboardInterrupt
    except BaseException:
        # stopped or failed: jobs not started are cancelled, running ones are not waited for
        workers_now = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers_now:
            process.terminate()
        raise
    pool.shutdown(wait=True)
    return {"mode": "processes", "workers": workers}
