"""Starting or joining a Ray cluster for a batch of work, with every failure as one line.

* :func:`check_ray_address` refuses, in seconds, an address where nothing listens or where
  the listener does not speak gRPC (HTTP/2), as a Ray head's GCS does: ``ray.init`` would
  otherwise retry for minutes without a word.
* :func:`connect_ray` starts a local instance (``num_cpus``) or joins ``address``. For a
  cluster started the usual way (``ray start --head``; Ray 2.60 turns token authentication
  on when a token exists in ``~/.ray/auth_token``) it uses the token Ray keeps for the user,
  as Ray's documentation asks of a client (``RAY_AUTH_MODE=token``, the token from
  ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), and names the
  remedy when authentication still fails. A watchdog thread bounds the whole start-up
  (``timeout_s``) and makes SIGINT / SIGTERM stop it at once, even while Ray's C++ core
  holds the main thread (the signals reach it through ``signal.set_wakeup_fd``).
* :func:`driver_signals` keeps a terminal's Ctrl-C off the processes a local start spawns
  and, once the driver listens, turns SIGINT / SIGTERM into a latch the driver checks
  between two units of work (then it saves what is done and stops).
* :func:`stdout_to_stderr` sends what Ray's processes print on the driver's stdout (worker
  death warnings...) to stderr, so ``--json`` output stays one JSON object.

Nothing here knows what the workers compute.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator

from tensorcfr.errors import TensorCFRError

__all__ = ["RAY_CONNECT_TIMEOUT_S", "SignalLatch", "check_ray_address", "connect_ray",
           "driver_signals", "ray_token_available", "run_on_ray", "stdout_to_stderr"]

RAY_CONNECT_TIMEOUT_S = 120.0
"""Longest a start-up or a connection may take before it is given up (seconds)."""
JOIN_GCS_ATTEMPTS = 5
"""Attempts (about a second each) a join of a cluster that answers on its port makes at
Ray's control service before it gives up (Ray's own default is 20: a client the cluster
refuses, a missing token, waited 20 s for its one-line error).  Ray's variable
``RAY_gcs_server_port_wait_time_s``, when set, wins."""

_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_AUTH_REMEDY = ("the cluster may require token authentication: give this machine its token "
                "(`ray get-auth-token` on the head node prints it) in ~/.ray/auth_token, "
                "RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH, and set RAY_AUTH_MODE=token")


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``host:port`` (``ray://`` etc. stripped); None for ``auto``."""
    target = address
    for prefix in ("ray://", "http://", "https://"):
        if target.startswith(prefix):
            target = target[len(prefix):]
    if target == "auto":
        return None
    host, _, port = target.rpartition(":")
    try:
        port_number = int(port)
        if not 0 < port_number < 65536:
            raise ValueError
    except ValueError:
        raise TensorCFRError(f"--address {address!r} must be host:port (e.g. 10.0.0.5:6379) "
                             "or auto") from None
    return host or "127.0.0.1", port_number


def check_ray_address(address: str, timeout: float = 5.0) -> None:
    """Refuse (one line) an address where no server listens, or where the server does not
    answer an HTTP/2 preface with a SETTINGS frame (a Ray GCS is a gRPC server)."""
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(_HTTP2_PREFACE)
            reply = b""
            while len(reply) < 9:
                chunk = conn.recv(9 - len(reply))
                if not chunk:
                    break
                reply += chunk
    except socket.timeout:
        reply = b""
    except OSError as exc:
        raise TensorCFRError(f"no Ray cluster answers at --address {address} "
                             f"({exc.strerror or exc})") from None
    if len(reply) < 9 or reply[3] != 0x04:  # frame type 4 = SETTINGS
        raise TensorCFRError(f"--address {address}: the server there is not a Ray cluster (it "
                             "does not speak gRPC); give the address `ray start --head` "
                             "printed (host:port of the GCS, port 6379 by default)")


def ray_token_available() -> bool:
    """Whether a Ray authentication token is available to this user (``RAY_AUTH_TOKEN``,
    the file ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``)."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
    try:
        return bool(Path(path).read_text(encoding="utf-8").strip())
    except OSError:
        return False


class _Watchdog:
    """Ends the process with one line when a start-up outlives ``timeout_s`` or when SIGINT
    / SIGTERM arrive during it (Python handlers cannot run while C++ holds the main
    thread; the wakeup fd is written by the C-level handler all the same)."""

    def __init__(self, what: str, timeout_s: float, watch_sigint: bool) -> None:
        self.what = what
        self.timeout_s = timeout_s
        self.watch_sigint = watch_sigint
        self.done = threading.Event()
        self.err_fd = 2  # the user's stderr, kept before Ray's start-up noise is muted

    def _exit(self, line: str, code: int) -> None:
        try:
            os.write(self.err_fd, (line + "\n").encode("utf-8", "replace"))
        finally:
            os._exit(code)  # the main thread is stuck in Ray's core: nothing else ends it

    def _watch(self, reader: socket.socket) -> None:
        reader.settimeout(0.2)
        waited = 0.0
        while not self.done.is_set():
            try:
                data = reader.recv(16)
            except socket.timeout:
                data = b""
            except OSError:
                return
            if data and not self.done.is_set():
                self._exit(f"interrupted: stopped by a signal while {self.what}; nothing was "
                           "computed", 130)
            waited += 0.2
            if waited >= self.timeout_s and not self.done.is_set():
                self._exit(f"error: {self.what} took more than {self.timeout_s:.0f} s; gave "
                           "up (is the cluster up and reachable from here?)", 2)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Watch during the block (main thread only; elsewhere the block just runs)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        sys.stderr.flush()
        self.err_fd = os.dup(2)
        signals = [signal.SIGTERM] + ([signal.SIGINT] if self.watch_sigint else [])
        previous = {s: signal.getsignal(s) for s in signals}
        for s in signals:
            signal.signal(s, lambda signum, frame: None)  # the wakeup fd does the work
        old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        thread = threading.Thread(target=self._watch, args=(reader,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            self.done.set()
            signal.set_wakeup_fd(old_fd)
            for s, handler in previous.items():
                signal.signal(s, handler)
            thread.join(timeout=1.0)
            reader.close()
            writer.close()
            os.close(self.err_fd)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Ray prints start-up lines on stderr; keep them off the user's terminal."""
    with open(os.devnull, "w") as devnull:
        old_err = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(devnull.fileno(), 2)
            yield
        finally:
            os.dup2(old_err, 2)
            os.close(old_err)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 and ``sys.stdout`` at stderr for the block (what Ray's core
    and its log forwarding print on stdout lands on stderr)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):  # Python-level writers too
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def connect_ray(address: str | None, num_cpus: int, *,
                timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> dict[str, Any]:
    """Start a local Ray instance with ``num_cpus`` CPUs (``address`` None) or join the
    cluster at ``address``; returns ``{"mode": "ray", "address", "cpus", "auth"}``.

    Raises :class:`TensorCFRError` (one line) when Ray cannot start or connect, naming the
    authentication remedy when the cluster may want a token. The start-up is bounded by
    ``timeout_s`` and stopped by SIGTERM (and SIGINT when joining a cluster: a local
    start keeps SIGINT ignored so that the processes it spawns ignore a terminal's Ctrl-C,
    which is the driver's to handle)."""
    if address is not None:
        check_ray_address(address)
    # Ray starts its workers at niceness +15 by default (``worker_niceness``): on a machine
    # shared with other work they then get almost no CPU. Keep the driver's.
    os.environ.setdefault("RAY_worker_niceness", "0")
    auth = os.environ.get("RAY_AUTH_MODE", "")
    if address is not None and not auth and ray_token_available():
        # Ray only picks the user's token up by itself for address "auto"; a cluster
        # started by `ray start --head` on a machine with a token expects it.
        os.environ["RAY_AUTH_MODE"] = "token"
        auth = "token"
        if "ray" in sys.modules:  # Ray's core read its config at import: read it again
            with contextlib.suppress(Exception):
                from ray._raylet import Config

                Config.initialize("")
    import ray

    what = f"connecting to the Ray cluster at {address}" if address else "starting Ray"
    watchdog = _Watchdog(what, timeout_s, watch_sigint=address is not None)
    try:
        with watchdog.active(), _quiet_stderr():
            if address is not None:
                with _environment_default("RAY_gcs_server_port_wait_time_s",
                                          str(JOIN_GCS_ATTEMPTS)):
                    ray.init(address=address, include_dashboard=False, log_to_driver=False,
                             logging_level="error")
            else:
                # "local": always a new instance of this run's own, whatever else runs on
                # the machine (a `ray start --head`, RAY_ADDRESS) or ran (a stale
                # ray_current_cluster file in Ray's temporary folder)
                ray.init(address="local", num_cpus=max(1, num_cpus), include_dashboard=False,
                         log_to_driver=False, logging_level="error")
    except Exception as exc:  # noqa: BLE001 - any start-up failure is one line
        text = " ".join(str(exc).split())[:300]
        raise TensorCFRError(f"cannot start Ray: {text}{_failure_hint(address, text, auth)}"
                             ) from None
    return {"mode": "ray", "address": address or "local",
            "cpus": float(ray.cluster_resources().get("CPU", 0)), "auth": auth or "default"}


@contextlib.contextmanager
def _environment_default(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` inside the block where the variable is unset (a
    later local start of Ray in this process keeps Ray's own default)."""
    if name in os.environ:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


def _failure_hint(address: str | None, text: str, auth: str) -> str:
    """What to do about a failed join of ``address``: the token remedy only when the cluster
    answers (it is up, and refused this client) or Ray says authentication failed; a cluster
    that no longer answers is said to be unreachable, not blamed on the token."""
    if address is None:
        return ""
    if "uthenticat" not in text and "Failed to connect" not in text:
        return ""
    if "uthenticat" not in text:
        try:
            check_ray_address(address, timeout=3.0)
        except TensorCFRError:
            return ("; nothing answers there as a Ray cluster any more: is `ray start --head` "
                    "still running, and is this the address it printed?")
    if auth != "token":
        return f"; {_AUTH_REMEDY}"
    return ("; the token given here is not the cluster's: copy the head node's "
            "(`ray get-auth-token` there) into ~/.ray/auth_token or RAY_AUTH_TOKEN")


class SignalLatch:
    """Counts SIGINTs and SIGTERMs once :meth:`listen` has been called (see
    :func:`driver_signals`)."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.count = 0
        self.signal_name = ""

    @property
    def seen(self) -> bool:
        """Whether a SIGINT or SIGTERM arrived since :meth:`listen`."""
        return self.count > 0

    @property
    def requested(self) -> bool:
        """Same as :attr:`seen` (the :class:`~tensorcfr.utils.interrupts.StopRequest` name)."""
        return self.seen

    def listen(self) -> None:
        """From now on SIGINT and SIGTERM are only counted (no KeyboardInterrupt inside Ray
        calls); the driver stops between two units of work. A SIGINT held back during a
        local start-up is delivered now, so it is counted too (the run stops at once)."""
        if self.active:
            for s in (signal.SIGINT, signal.SIGTERM):
                signal.signal(s, lambda signum, frame: self._count(signum))
            _unblock_sigint()

    def _count(self, signum: int) -> None:
        self.count += 1
        self.signal_name = signal.Signals(signum).name


@contextlib.contextmanager
def driver_signals(ignore_while_starting: bool = True) -> Iterator[SignalLatch]:
    """Ctrl-C in a terminal reaches the whole process group. Inside this block (a local
    instance: ``ignore_while_starting``) SIGINT is ignored until the latch's ``listen()``, so
    the processes ray.init starts (and the workers they start) inherit it ignored and only
    the driver sees Ctrl-C; after ``listen()`` the driver only counts SIGINT and SIGTERM and
    stops between two units of work. The previous handlers come back on exit. Outside the
    main thread (where handlers cannot be set) nothing changes."""
    active = threading.current_thread() is threading.main_thread()
    latch = SignalLatch(active)
    if not active:
        yield latch
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    if ignore_while_starting:
        # blocked, not ignored: the processes Ray spawns inherit the mask (a terminal's
        # Ctrl-C never reaches them), and a Ctrl-C during the start-up stays pending for
        # the driver, which sees it as soon as it listens
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield latch
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _unblock_sigint()  # a SIGINT still pending goes to the previous handler


def _unblock_sigint() -> None:
    if signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set()):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def run_on_ray(function: Callable[..., Any], jobs: Iterable[tuple[Hashable, tuple[Any, ...]]],
               on_result: Callable[[Hashable, Any, str | None], None], *, workers: int = 1,
               address: str | None = None,
               on_stop: Callable[[SignalLatch], BaseException] | None = None) -> dict[str, Any]:
    """Run ``function(*args)`` for each ``(key, args)`` of ``jobs`` on Ray (a local instance
    with ``workers`` CPUs, or the cluster at ``address``), one CPU per call, at most twice the
    cluster's CPUs in flight; ``jobs`` is read lazily, as room opens.

    ``on_result(key, result, error)`` runs in the driver as each job ends (``error``: None,
    or the one-line reason a worker died; ``result`` is then None). A SIGINT or SIGTERM stops
    the run between two results: the exception ``on_stop(latch)`` is raised (default
    :class:`KeyboardInterrupt`), every result handed over so far kept. Ray's output on
    stdout goes to stderr meanwhile. Returns :func:`connect_ray`'s description of the
    instance."""
    with driver_signals(address is None) as interrupts, stdout_to_stderr():
        info = connect_ray(address, workers)  # before `import ray`: it sets Ray's env
        import ray

        interrupts.listen()
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(function)
            window = max(2, 2 * int(info["cpus"] or 1))
            pending: dict[Any, Hashable] = {}
            queue = iter(jobs)
            more = True
            while True:
                if interrupts.seen:
                    raise on_stop(interrupts) if on_stop is not None else KeyboardInterrupt()
                while more and len(pending) < window:
                    job = next(queue, None)
                    if job is None:
                        more = False
                        break
                    key, args = job
                    pending[remote.remote(*args)] = key
                if not pending:
                    break
                # a timeout keeps the driver responsive to Ctrl-C (a blocking wait in Ray's
                # C++ core would hold the signal until a job finishes)
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                for ref in ready:
                    key = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a worker died on this job
                        on_result(key, None,
                                  f"worker failed: {(str(exc).splitlines() or [''])[0][:200]}")
                    else:
                        on_result(key, result, None)
        finally:
            ray.shutdown()
    return info
