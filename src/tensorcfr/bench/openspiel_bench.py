"""Our tensor CFR against OpenSpiel's CFR solvers (C++, Python, JAX), side by side.

Method (one call of :func:`run_benchmark`):

* Every (game, solver) pair runs in its own fresh worker subprocess
  (:mod:`tensorcfr.bench._worker`), so its peak resident set size is its own.  The worker
  reports its RSS after importing its libraries and loading the game (the *baseline*) and
  its peak RSS (``VmHWM``) at the end; we report both the peak and the peak above baseline.
* Set-up time is the solver's construction: ours = the tree walk + tensor build inside
  ``TensorCFRSolver(game)``; OpenSpiel C++/Python = ``CFRSolver(game)``; JAX = ``JaxCFR(game)``
  (its first iteration, which includes the XLA compilation, is reported separately).
* Workers are built one at a time, then warmed up (``warmup`` iterations each; a solver
  whose iteration takes longer than ``max_iter_seconds`` is skipped as too slow).  From the
  warm-up time each solver gets a number of iterations per repetition that lasts about
  ``min_rep_seconds``.  Then ``reps`` repetitions run round-robin over the live workers
  (A/B alternation; the order rotates each repetition), so load from other processes on
  the machine hits all solvers alike.  ms/iteration is the median over repetitions, and
  the speed-up of ours over solver X is the median of the per-repetition ratios
  ``time_X / time_ours`` (paired repetitions are adjacent in time).
* Workers are limited to ``threads`` threads (torch intra-op threads, OMP/MKL, and XLA's
  CPU flags); the process CPU time is recorded next to the wall time, so a solver that
  uses more cores than asked shows ``cpu/wall > 1``.

All CFR solvers run vanilla CFR with alternating updates and uniform averaging
(JaxCFR is constructed with ``regret_matching_plus=False, linear_averaging=False``).
JaxCFR computes in float32 (JAX's default); ours runs in float64 (``ours``) and float32
(``ours_f32``); the OpenSpiel C++ and Python solvers use float64.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from tensorcfr.errors import TensorCFRError

__all__ = [
    "BenchGame", "BenchConfig", "GameSize", "SOLVERS", "DEFAULT_SOLVERS", "GAMES",
    "DEFAULT_GAMES", "resolve_games", "resolve_solvers", "count_game_size",
    "machine_info", "run_benchmark", "evaluate_targets", "merge_results", "load_results",
    "refresh_derived",
]


@dataclass(frozen=True)
class BenchGame:
    """A benchmark game: a short ``key`` for tables and the OpenSpiel game string."""

    key: str
    game_string: str
    note: str = ""


GAMES: dict[str, BenchGame] = {g.key: g for g in [
    BenchGame("kuhn_poker", "kuhn_poker"),
    BenchGame("leduc_poker", "leduc_poker"),
    # imp_info=True: the default goofspiel info states forget the player's own bids after
    # ties (no perfect recall), which our flattener refuses; OpenSpiel's solvers accept it.
    BenchGame("goofspiel_4", "goofspiel(num_cards=4,imp_info=True)",
              "simultaneous moves, turn-based wrapper; random point order"),
    BenchGame("battleship_2x2", "battleship(board_height=2,board_width=2,ship_sizes=[2],"
              "ship_values=[1],num_shots=3)", "Kim (2024) 'tiny' battleship"),
    BenchGame("liars_dice", "liars_dice"),
    BenchGame("tic_tac_toe", "tic_tac_toe"),
    BenchGame("battleship_3x2", "battleship(board_height=3,board_width=2,ship_sizes=[2],"
              "ship_values=[1],num_shots=3)", "Kim (2024) 'small' battleship"),
    # Larger configurations of Kim (2024); not in the default set (minutes per OpenSpiel
    # C++ iteration and a long Python walk for JaxCFR's set-up).
    BenchGame("battleship_4x4", "battleship(board_height=4,board_width=4,ship_sizes=[1],"
              "ship_values=[1],num_shots=2)", "Kim (2024) 'medium' battleship"),
    BenchGame("battleship_3x2_4shots", "battleship(board_height=3,board_width=2,"
              "ship_sizes=[2],ship_values=[1],num_shots=4)", "Kim (2024) 'huge' battleship"),
    # 27.3 M nodes (425,819 infosets): the largest game of the committed table.
    BenchGame("battleship_3x3", "battleship(board_height=3,board_width=3,ship_sizes=[1],"
              "ship_values=[1],num_shots=3)", "27.3 M nodes; solved in float32 (auto)"),
]}
"""Known games by key. Any other OpenSpiel game string is accepted too."""

DEFAULT_GAMES: tuple[str, ...] = ("kuhn_poker", "leduc_poker", "goofspiel_4", "battleship_2x2",
                                  "liars_dice", "tic_tac_toe", "battleship_3x2")

SOLVERS: dict[str, str] = {
    "ours": "ours (TensorCFRSolver, float64)",
    "ours_f32": "ours (TensorCFRSolver, float32)",
    "ours_lean": "ours (TensorCFRSolver, lean passes)",
    "openspiel_cpp": "OpenSpiel C++ CFRSolver",
    "openspiel_python": "OpenSpiel Python CFRSolver",
    "jax": "OpenSpiel JaxCFR (float32)",
}
"""Solver key -> label for tables and plots."""

DEFAULT_SOLVERS: tuple[str, ...] = ("ours", "ours_f32", "openspiel_cpp", "openspiel_python",
                                    "jax")

REFERENCE_MS_PER_ITER: dict[str, dict[str, float]] = {
    "leduc_poker": {"openspiel_cpp": 5.6, "jax": 0.89},
    "liars_dice": {"openspiel_cpp": 49.0, "jax": 54.0},
    "tic_tac_toe": {"openspiel_cpp": 174.0, "jax": 91.0},
    "battleship_3x2": {"openspiel_cpp": 2452.0, "jax": 109.0},
}
"""Reference ms/iteration measured at low load on the same 2-core machine (from the issue)."""


class BenchmarkError(TensorCFRError):
    """Bad benchmark parameters (unknown solver, impossible repetition counts...)."""


@dataclass
class BenchConfig:
    """Parameters of one benchmark run.

    ``min_rep_seconds``: target wall time of one timed repetition (iterations are grouped
    until a repetition lasts about this long); ``max_iter_seconds``: a solver whose warm-up
    iteration takes longer is skipped as too slow; ``max_setup_seconds``: limit for the
    construction (and for JAX's first, compiling iteration).  ``snapshot_code``: copy the
    ``tensorcfr`` package at the start and run every worker on that copy, so a long run
    measures one version of the code even if the checkout changes meanwhile.
    ``max_worker_memory_mb``: a worker whose resident set grows beyond this is killed and
    its solver reported as skipped (``None``: no limit).
    """

    games: list[BenchGame]
    solvers: list[str] = field(default_factory=lambda: list(DEFAULT_SOLVERS))
    threads: int = 1
    reps: int = 7
    warmup: int = 2
    min_rep_seconds: float = 0.3
    max_iters_per_rep: int = 10000
    max_iter_seconds: float = 30.0
    max_setup_seconds: float = 900.0
    device: str = "cpu"
    snapshot_code: bool = True
    max_worker_memory_mb: float | None = None

    def validate(self) -> None:
        """Raise :class:`BenchmarkError` on impossible parameters."""
        if not self.games:
            raise BenchmarkError("no games to benchmark")
        if not self.solvers:
            raise BenchmarkError("no solvers to benchmark")
        if self.threads < 1:
            raise BenchmarkError(f"--threads must be at least 1, got {self.threads}")
        if self.reps < 1:
            raise BenchmarkError(f"--reps must be at least 1, got {self.reps}")
        if self.warmup < 1:
            raise BenchmarkError(f"--warmup must be at least 1, got {self.warmup}")
        if self.min_rep_seconds < 0 or self.max_iter_seconds <= 0 or self.max_setup_seconds <= 0:
            raise BenchmarkError("time limits must be positive")
        if self.max_worker_memory_mb is not None and self.max_worker_memory_mb <= 0:
            raise BenchmarkError("the worker memory limit must be positive")
        if self.max_iters_per_rep < 1:
            raise BenchmarkError("max_iters_per_rep must be at least 1")
        if any(s.startswith("ours") for s in self.solvers):
            from tensorcfr.utils.device import resolve_device

            try:  # our solver's device: refused here, not inside a worker's table row
                resolve_device(self.device, "--device")
            except TensorCFRError as exc:
                raise BenchmarkError(str(exc)) from None


def resolve_games(names: Iterable[str] | None) -> list[BenchGame]:
    """Map keys of :data:`GAMES` (or raw OpenSpiel game strings) to :class:`BenchGame`.

    ``None`` or empty means :data:`DEFAULT_GAMES`; ``"all"`` means every known game.
    """
    names = [n.strip() for n in (names or []) if n.strip()]
    if not names:
        return [GAMES[k] for k in DEFAULT_GAMES]
    games: list[BenchGame] = []
    for name in names:
        if name == "all":
            games.extend(GAMES.values())
        elif name in GAMES:
            games.append(GAMES[name])
        else:
            _check_game_name(name)
            games.append(BenchGame(name, name))
    return games


def _check_game_name(name: str) -> None:
    """Raise :class:`BenchmarkError` (one line, with close matches among the benchmark keys
    and OpenSpiel's game names) unless ``name`` names an OpenSpiel game."""
    import difflib

    from tensorcfr.games.openspiel.flatten import registered_game_names

    short = name.split("(", 1)[0].strip()
    registered = registered_game_names(short)
    if short in registered:
        return
    close = difflib.get_close_matches(short, list(GAMES) + registered, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise BenchmarkError(f"unknown game {name!r}: not a benchmark key ({', '.join(GAMES)}) "
                         f"nor an OpenSpiel game{hint}")


def resolve_solvers(names: Iterable[str] | None) -> list[str]:
    """Validate solver keys (``None``/empty: :data:`DEFAULT_SOLVERS`)."""
    names = [n.strip() for n in (names or []) if n.strip()]
    if not names:
        return list(DEFAULT_SOLVERS)
    unknown = [n for n in names if n not in SOLVERS]
    if unknown:
        raise BenchmarkError(f"unknown solver {unknown[0]!r}; choose from {', '.join(SOLVERS)}")
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class GameSize:
    """Size of a game tree: histories (``nodes``, chance and terminal included), terminal
    histories, decision infosets, maximum depth, and whether the turn-based wrapper was used."""

    nodes: int
    terminals: int
    infosets: int
    max_depth: int
    turn_based_wrapper: bool


def _load_game(game_string: str) -> tuple[Any, bool]:
    import pyspiel

    try:
        game = pyspiel.load_game(game_string)
    except Exception as exc:  # noqa: BLE001 - pyspiel raises RuntimeError/SpielError
        raise BenchmarkError(f"cannot load game {game_string!r}: "
                             f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc}")
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        return pyspiel.convert_to_turn_based(game), True
    return game, False


def count_game_size(game_string: str) -> GameSize:
    """Walk the whole game tree once (depth first) and count histories and infosets."""
    game, wrapped = _load_game(game_string)
    nodes = terminals = max_depth = 0
    infosets: set[str] = set()
    stack = [(game.new_initial_state(), 0)]
    while stack:
        state, depth = stack.pop()
        nodes += 1
        max_depth = max(max_depth, depth)
        if state.is_terminal():
            terminals += 1
            continue
        if not state.is_chance_node():
            infosets.add(f"{state.current_player()}|{state.information_state_string()}")
        for action in state.legal_actions():
            stack.append((state.child(action), depth + 1))
    return GameSize(nodes, terminals, len(infosets), max_depth, wrapped)


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info(threads: int) -> dict[str, Any]:
    """CPU model, cores, RAM, library versions, thread count, date (UTC), load average."""
    import psutil

    cpu_model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:  # pragma: no cover - not Linux
        pass
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_model": cpu_model,
        "cpu_cores": os.cpu_count(),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "threads": threads,
        "versions": {name: _version(dist) for name, dist in [
            ("torch", "torch"), ("open_spiel", "open_spiel"), ("jax", "jax"),
            ("jaxlib", "jaxlib"), ("numpy", "numpy"), ("tensorcfr", "tensorcfr")]},
        "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def snapshot_package(destination: Path) -> tuple[Path, dict[str, str]]:
    """Copy the ``tensorcfr`` package into ``destination``/src; return that source root and
    the SHA-256 (first 12 hex digits) of the solver files, for the results' metadata."""
    import hashlib
    import shutil

    import tensorcfr

    package = Path(tensorcfr.__file__).resolve().parent
    root = destination / "src"
    shutil.copytree(package, root / "tensorcfr",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    digests = {}
    for rel in ("core/cfr.py", "core/solver.py", "core/flat_tree.py", "core/pass_views.py",
                "core/numpy_passes.py", "core/tree.py", "core/regret.py",
                "games/openspiel/flatten.py"):
        path = root / "tensorcfr" / rel
        if path.exists():
            digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return root, digests


def _git_revision() -> str | None:
    import tensorcfr

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10,
                             cwd=Path(tensorcfr.__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10,
                               cwd=Path(tensorcfr.__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+modified" if dirty.stdout.strip() else "")


def worker_environment(threads: int, device: str,
                       source_root: Path | None = None) -> dict[str, str]:
    """Environment of a worker: every thread pool limited to ``threads``; ``source_root``
    (a code snapshot) first on ``PYTHONPATH``."""
    env = dict(os.environ)
    if source_root is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(source_root)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    if threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
                            " intra_op_parallelism_threads=1").strip()
    if device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return env


class WorkerFailure(Exception):
    """A worker that died, replied with an error, or did not answer in time."""

    def __init__(self, message: str, timed_out: bool = False,
                 out_of_memory: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.out_of_memory = out_of_memory


class Worker:
    """Parent-side handle of one worker subprocess (one solver on one game)."""

    def __init__(self, solver: str, game_string: str, threads: int, device: str,
                 log_dir: Path, source_root: Path | None = None,
                 max_rss_mb: float | None = None) -> None:
        self.solver = solver
        self.max_rss_mb = max_rss_mb
        self.log_path = log_dir / f"{solver}.{os.getpid()}.{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tensorcfr.bench._worker", "--solver", solver,
             "--game", game_string, "--threads", str(threads), "--device", device],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            env=worker_environment(threads, device, source_root), text=True, bufsize=1)
        self._seq = 0
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._replies.put(line)
        self._replies.put(None)

    def _stderr_tail(self) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines()
                     if ln.strip()]
        except OSError:
            return ""
        return lines[-1].strip()[:200] if lines else ""

    def receive(self, timeout: float, seq: int | None = None) -> dict[str, Any]:
        """Wait at most ``timeout`` seconds for the next reply (to request ``seq`` if given;
        late replies to earlier requests are dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._replies.get(timeout=max(0.0, min(remaining, 1.0)))
            except queue.Empty:
                self._check_memory()
                if time.monotonic() < deadline:
                    continue
                raise WorkerFailure(f"no answer within {timeout:.0f} s",
                                    timed_out=True) from None
            if line is None:
                code = self.process.wait()
                tail = self._stderr_tail()
                raise WorkerFailure(f"worker exited with code {code}"
                                    + (f": {tail}" if tail else ""))
            try:
                reply = json.loads(line)
            except json.JSONDecodeError:
                raise WorkerFailure(f"garbled worker reply {line[:80]!r}") from None
            if seq is not None and reply.get("seq") != seq:
                continue
            if not reply.get("ok"):
                raise WorkerFailure(str(reply.get("error", "unknown worker error")))
            return reply

    def _check_memory(self) -> None:
        """Kill the worker if its resident set exceeds ``max_rss_mb`` (protects the machine)."""
        if self.max_rss_mb is None or self.process.poll() is not None:
            return
        import psutil

        try:
            rss_mb = psutil.Process(self.process.pid).memory_info().rss / 2**20
        except psutil.Error:
            return
        if rss_mb > self.max_rss_mb:
            self.kill()
            raise WorkerFailure(f"resident memory {rss_mb / 1024:.1f} GiB exceeded the "
                                f"limit of {self.max_rss_mb / 1024:.1f} GiB",
                                out_of_memory=True)

    def request(self, command: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send a command and wait at most ``timeout`` seconds for its reply."""
        assert self.process.stdin is not None
        self._check_memory()
        self._seq += 1
        command = {**command, "seq": self._seq}
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.process.wait()
            tail = self._stderr_tail()
            raise WorkerFailure(f"worker exited with code {self.process.returncode}"
                                + (f": {tail}" if tail else "")) from None
        return self.receive(timeout, seq=self._seq)

    def close(self) -> None:
        """Ask the worker to exit; kill it (by its own pid) if it does not."""
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps({"cmd": "exit"}) + "\n")
                self.process.stdin.flush()
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self.kill()
        self._log.close()

    def kill(self) -> None:
        """Kill this worker process (it is ours: started by :class:`Worker`)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


ProgressFn = Callable[[str, float], None]
"""Progress callback: (description, fraction of the run done in [0, 1])."""


def _new_result(solver: str) -> dict[str, Any]:
    return {"solver": solver, "label": SOLVERS[solver], "status": "ok", "setup_s": None,
            "first_iter_s": None, "warmup_ms_per_iter": None, "ms_per_iter": None,
            "cpu_ms_per_iter": None, "ms_per_iter_reps": [], "cpu_ms_per_iter_reps": [],
            "iterations_per_rep": None, "baseline_rss_mb": None, "peak_rss_mb": None,
            "peak_above_baseline_mb": None, "info": {}}


def _fail(result: dict[str, Any], exc: WorkerFailure, stage: str, limit: float) -> None:
    if exc.out_of_memory:
        result["status"] = f"skipped (memory: {exc})"
    elif exc.timed_out:
        if stage == "setup":
            result["status"] = f"skipped (set-up too slow: >{limit:.0f} s)"
        else:
            result["status"] = f"skipped (too slow: >{limit:.0f} s/iter)"
    else:
        result["status"] = f"error ({stage}): {exc}"


def bench_game(game: BenchGame, config: BenchConfig,
               progress: ProgressFn | None = None, log_dir: Path | None = None,
               base_fraction: float = 0.0, span: float = 1.0,
               source_root: Path | None = None) -> dict[str, Any]:
    """Benchmark every configured solver on one game; returns its result record.

    ``source_root``: a code snapshot for the workers (see :func:`snapshot_package`)."""
    def report(text: str, done: float) -> None:
        if progress is not None:
            progress(f"{game.key}: {text}", base_fraction + span * min(1.0, done))

    report("counting the tree", 0.0)
    start = time.perf_counter()
    size = count_game_size(game.game_string)
    record: dict[str, Any] = {
        "key": game.key, "game_string": game.game_string, "note": game.note,
        "nodes": size.nodes, "terminals": size.terminals, "infosets": size.infosets,
        "max_depth": size.max_depth, "turn_based_wrapper": size.turn_based_wrapper,
        "count_s": time.perf_counter() - start,
        "measured_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    results = {s: _new_result(s) for s in config.solvers}
    workers: dict[str, Worker] = {}
    own_tmp = None
    if log_dir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="tensorcfr-bench-")
        log_dir = Path(own_tmp.name)
    n = len(config.solvers)
    try:
        # 1. Build one worker at a time (set-up timed without our own contention).
        for k, solver in enumerate(config.solvers):
            report(f"set-up of {solver}", 0.3 * k / n)
            result = results[solver]
            worker = Worker(solver, game.game_string, config.threads, config.device, log_dir,
                            source_root, config.max_worker_memory_mb)
            stage_limit = config.max_setup_seconds
            try:
                ready = worker.receive(timeout=300.0)
                result["baseline_rss_mb"] = ready["baseline_rss_mb"]
                result["info"]["tensorcfr_path"] = ready.get("tensorcfr_path")
                reply = worker.request({"cmd": "setup"}, timeout=config.max_setup_seconds)
                result["setup_s"] = reply["setup_s"]
                result["info"].update(reply.get("info", {}))
                compiles = bool(reply.get("compiles_on_first_iteration"))
                # 2. Warm-up; the first iteration of JAX includes its compilation.
                first_limit = config.max_setup_seconds if compiles else config.max_iter_seconds
                stage_limit = first_limit
                reply = worker.request({"cmd": "run", "iterations": 1}, timeout=first_limit)
                result["first_iter_s"] = reply["wall_s"]
                per_iter = reply["wall_s"]
                if config.warmup > 1:
                    stage_limit = config.max_iter_seconds
                    more = config.warmup - 1
                    reply = worker.request({"cmd": "run", "iterations": more},
                                           timeout=config.max_iter_seconds * more + 5.0)
                    per_iter = reply["wall_s"] / more
                elif compiles:
                    stage_limit = config.max_iter_seconds
                    reply = worker.request({"cmd": "run", "iterations": 1},
                                           timeout=config.max_iter_seconds + 5.0)
                    per_iter = reply["wall_s"]
                result["warmup_ms_per_iter"] = per_iter * 1e3
                if per_iter > config.max_iter_seconds:
                    raise WorkerFailure("slow", timed_out=True)
                result["iterations_per_rep"] = int(min(config.max_iters_per_rep, max(
                    1, math.ceil(config.min_rep_seconds / max(per_iter, 1e-9)))))
                workers[solver] = worker
            except WorkerFailure as exc:
                stage = "setup" if result["setup_s"] is None else "iteration"
                _fail(result, exc, stage, stage_limit)
                if not exc.timed_out:  # a timed-out worker is still busy: just kill it
                    _collect_memory(worker, result)
                worker.kill()
                worker.close()
        # 3. Timed repetitions, round-robin with a rotating order.
        live = [s for s in config.solvers if s in workers]
        for rep in range(config.reps):
            report(f"repetition {rep + 1}/{config.reps}", 0.3 + 0.7 * rep / config.reps)
            order = live[rep % len(live):] + live[:rep % len(live)] if live else []
            for solver in order:
                if solver not in workers:
                    continue
                result = results[solver]
                iters = result["iterations_per_rep"]
                expected = iters * result["warmup_ms_per_iter"] / 1e3
                try:
                    reply = workers[solver].request(
                        {"cmd": "run", "iterations": iters},
                        timeout=max(60.0, 10.0 * expected))
                except WorkerFailure as exc:
                    _fail(result, exc, "iteration", 10.0 * expected)
                    workers.pop(solver).kill()
                    continue
                result["ms_per_iter_reps"].append(reply["wall_s"] * 1e3 / iters)
                result["cpu_ms_per_iter_reps"].append(reply["cpu_s"] * 1e3 / iters)
        # 4. Memory, then close.
        for solver, worker in workers.items():
            _collect_memory(worker, results[solver])
    finally:
        for worker in workers.values():
            worker.close()
        if own_tmp is not None:
            own_tmp.cleanup()
    for result in results.values():
        if result["ms_per_iter_reps"]:
            result["ms_per_iter"] = statistics.median(result["ms_per_iter_reps"])
            result["cpu_ms_per_iter"] = statistics.median(result["cpu_ms_per_iter_reps"])
        elif result["status"] == "ok":
            result["status"] = "error: no timed repetition"
    _add_speedups(results)
    record["results"] = list(results.values())
    record["wall_s"] = time.perf_counter() - start
    report("done", 1.0)
    return record


def _collect_memory(worker: Worker, result: dict[str, Any]) -> None:
    if worker.process.poll() is not None:
        return
    try:
        reply = worker.request({"cmd": "memory"}, timeout=30.0)
    except WorkerFailure:
        return
    result["peak_rss_mb"] = reply["peak_rss_mb"]
    if result["baseline_rss_mb"] is not None:
        result["peak_above_baseline_mb"] = reply["peak_rss_mb"] - result["baseline_rss_mb"]


def _paired_ratio(numerator: list[float], denominator: list[float]) -> float | None:
    pairs = [a / b for a, b in zip(numerator, denominator) if b > 0]
    return statistics.median(pairs) if pairs else None


def _add_speedups(results: dict[str, dict[str, Any]]) -> None:
    """Speed-up of ours (and ours_f32) over each solver: median of paired rep ratios."""
    for ours_key in ("ours", "ours_f32"):
        ours = results.get(ours_key)
        for result in results.values():
            key = f"speedup_of_{ours_key}"
            result[key] = result[f"cpu_{key}"] = None
            if ours is None or result is ours or not ours["ms_per_iter_reps"]:
                continue
            result[key] = _paired_ratio(result["ms_per_iter_reps"], ours["ms_per_iter_reps"])
            result[f"cpu_{key}"] = _paired_ratio(result["cpu_ms_per_iter_reps"],
                                                 ours["cpu_ms_per_iter_reps"])
        for result in results.values():
            key = f"memory_ratio_{ours_key}"
            result[key] = None
            if ours is None or result is ours:
                continue
            if ours.get("peak_above_baseline_mb") and result.get("peak_above_baseline_mb"):
                result[key] = ours["peak_above_baseline_mb"] / result["peak_above_baseline_mb"]


def run_benchmark(config: BenchConfig, progress: ProgressFn | None = None,
                  on_game: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the whole benchmark; returns ``{"meta": ..., "games": [...], "targets": [...]}``.

    ``on_game`` is called with each game's record as soon as it is done (for streaming
    output and for saving partial results).
    """
    config.validate()
    meta = machine_info(config.threads)
    meta["config"] = {
        "solvers": config.solvers, "games": [g.key for g in config.games],
        "reps": config.reps, "warmup": config.warmup, "min_rep_seconds": config.min_rep_seconds,
        "max_iter_seconds": config.max_iter_seconds,
        "max_setup_seconds": config.max_setup_seconds, "device": config.device,
        "max_worker_memory_mb": config.max_worker_memory_mb,
    }
    meta["command_line"] = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    meta["solver_labels"] = {s: SOLVERS[s] for s in config.solvers}
    meta["reference_ms_per_iter"] = REFERENCE_MS_PER_ITER
    games: list[dict[str, Any]] = []
    start = time.perf_counter()
    meta["git_revision"] = _git_revision()
    with tempfile.TemporaryDirectory(prefix="tensorcfr-bench-") as tmp:
        source_root = None
        if config.snapshot_code:
            source_root, meta["code_sha256"] = snapshot_package(Path(tmp) / "snapshot")
        for index, game in enumerate(config.games):
            record = bench_game(game, config, progress, Path(tmp),
                                base_fraction=index / len(config.games),
                                span=1.0 / len(config.games), source_root=source_root)
            record["run_utc"] = meta["date_utc"]  # identifies the run (see merge_results)
            games.append(record)
            if on_game is not None:
                on_game(record)
    meta["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    meta["total_s"] = time.perf_counter() - start
    out = {"meta": meta, "games": games}
    out["targets"] = evaluate_targets(out)
    return out


def _result(game: dict[str, Any], solver: str) -> dict[str, Any] | None:
    for result in game["results"]:
        if result["solver"] == solver:
            return result
    return None


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Check the issue's targets on measured results.

    * ours faster per iteration than JaxCFR on every game;
    * ours at least 10x faster per iteration than OpenSpiel C++ on liars_dice and tic_tac_toe;
    * ours' peak memory at most 3x OpenSpiel C++'s (compared above the import baseline,
      and also as total peak RSS), and the lean passes' (``ours_lean``, when measured)
      above the baseline.
    Each entry: ``{"target", "game", "value", "passed"}`` (``passed`` None if not measured);
    speed targets also carry ``value_cpu`` / ``passed_cpu``, the same check on process CPU
    time, which is less sensitive to machine load than wall time.
    """
    checks: list[dict[str, Any]] = []
    for game in results["games"]:
        def speed(target: str, other: dict[str, Any], threshold: float) -> dict[str, Any]:
            wall, cpu = other.get("speedup_of_ours"), other.get("cpu_speedup_of_ours")
            return {"target": target, "game": game["key"], "value": wall,
                    "passed": None if wall is None else wall >= threshold,
                    "value_cpu": cpu, "passed_cpu": None if cpu is None else cpu >= threshold}

        jax = _result(game, "jax")
        if jax is not None:
            checks.append(speed("ours faster than JaxCFR", jax, 1.0))
        cpp = _result(game, "openspiel_cpp")
        if cpp is not None and game["key"] in ("liars_dice", "tic_tac_toe"):
            checks.append(speed(">=10x faster than OpenSpiel C++", cpp, 10.0))
        ours = _result(game, "ours")
        if cpp is not None and ours is not None:
            value = cpp.get("memory_ratio_ours")
            checks.append({"target": "peak memory above baseline <= 3x OpenSpiel C++",
                           "game": game["key"], "value": value,
                           "passed": None if value is None else value <= 3.0})
            if ours.get("peak_rss_mb") and cpp.get("peak_rss_mb"):
                total = ours["peak_rss_mb"] / cpp["peak_rss_mb"]
                checks.append({"target": "total peak RSS <= 3x OpenSpiel C++",
                               "game": game["key"], "value": total, "passed": total <= 3.0})
        lean = _result(game, "ours_lean")
        if cpp is not None and lean is not None and lean.get("peak_above_baseline_mb") \
                and cpp.get("peak_above_baseline_mb"):
            value = lean["peak_above_baseline_mb"] / cpp["peak_above_baseline_mb"]
            checks.append({"target": "peak memory above baseline <= 3x OpenSpiel C++ "
                                     "(lean passes)",
                           "game": game["key"], "value": value, "passed": value <= 3.0})
    return checks


def refresh_derived(results: dict[str, Any]) -> dict[str, Any]:
    """Recompute the derived numbers (speed-ups, memory ratios, targets) from the raw
    per-repetition times, e.g. for results written by an older version; returns ``results``."""
    for game in results["games"]:
        _add_speedups({r["solver"]: r for r in game["results"]})
    results["targets"] = evaluate_targets(results)
    return results


def merge_results(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Games of ``new`` replace the same-key games of ``old``; the others are kept.

    Games are ordered by size; the metadata is ``new``'s, with ``old``'s run metadata
    listed under ``earlier_runs`` (each game record carries its own ``measured_utc``);
    the targets are re-evaluated.
    """
    fresh = {g["key"] for g in new["games"]}
    kept = [g for g in old.get("games", []) if g["key"] not in fresh]
    for g in kept:  # records written before games carried their own dates
        g.setdefault("measured_utc", old.get("meta", {}).get("date_utc"))
        g.setdefault("run_utc", old.get("meta", {}).get("date_utc"))
    for g in new["games"]:
        g.setdefault("measured_utc", new["meta"].get("date_utc"))
        g.setdefault("run_utc", new["meta"].get("date_utc"))
    games = kept + list(new["games"])
    games.sort(key=lambda g: g["nodes"])
    meta = dict(new["meta"])
    earlier = [dict(m) for m in old.get("meta", {}).get("earlier_runs", [])]
    old_meta = {k: v for k, v in old.get("meta", {}).items() if k != "earlier_runs"}
    if old_meta and not old_meta.get("partial"):
        earlier.append(old_meta)
    meta["earlier_runs"] = earlier
    solvers = list(meta.get("config", {}).get("solvers", []))
    for g in games:
        for r in g["results"]:
            if r["solver"] not in solvers:
                solvers.append(r["solver"])
    meta.setdefault("config", {})["solvers"] = solvers
    meta["config"]["games"] = [g["key"] for g in games]
    meta["solver_labels"] = {s: SOLVERS.get(s, s) for s in solvers}
    return refresh_derived({"meta": meta, "games": games})


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a results JSON written by :func:`run_benchmark`: one-line error if it is missing,
    not a file (a FIFO, a device, a folder), too large, or damaged anywhere the report reads
    (the markdown report is rendered once in memory to check it)."""
    import copy

    from tensorcfr.bench.report import render_markdown
    from tensorcfr.errors import CorruptFileError
    from tensorcfr.utils.reading import load_json, reading

    if not os.path.lexists(path):
        raise BenchmarkError(f"no such results file: {path}")
    what = "benchmark results"
    data = load_json(path, what, 64 * 2**20)
    if not isinstance(data, dict) or not isinstance(data.get("games"), list) or \
            not isinstance(data.get("meta"), dict):
        raise CorruptFileError(f"{path} is not a benchmark results file (no 'meta'/'games')")
    with reading(path, what):
        trial = copy.deepcopy(data)
        refresh_derived(trial)
        render_markdown(trial)
    return data
