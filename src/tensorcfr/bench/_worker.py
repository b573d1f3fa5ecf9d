"""Worker subprocess of the OpenSpiel benchmark: hosts exactly one CFR solver on one game.

Run as ``python -m tensorcfr.bench._worker --solver NAME --game GAME_STRING --threads N``.
Each worker is a fresh process, so its peak resident set size (``VmHWM``) belongs to one
solver alone.  It speaks a line protocol with the parent (one JSON object per line):

* on start, after importing the solver's libraries and loading the game, it sends
  ``{"ok": true, "event": "ready", "baseline_rss_mb": ..., ...}``;
* ``{"cmd": "setup"}`` builds the solver -> ``{"ok": true, "setup_s": ..., "info": {...}}``;
* ``{"cmd": "run", "iterations": n}`` runs ``n`` CFR iterations and waits for them to
  finish (JAX ``block_until_ready``, CUDA synchronize) -> ``{"ok": true, "wall_s": ...,
  "cpu_s": ...}`` (wall-clock and process CPU seconds for all ``n``);
* ``{"cmd": "memory"}`` -> ``{"ok": true, "rss_mb": ..., "peak_rss_mb": ...}``;
* ``{"cmd": "exit"}`` ends the process.

Errors are sent as ``{"ok": false, "error": "..."}``; a reply echoes the ``seq`` number
of its command.  The protocol uses a private copy of
the original stdout; file descriptor 1 is pointed at stderr so that anything a library
prints cannot corrupt the protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from typing import Any, Callable, TextIO

SOLVER_NAMES = ("ours", "ours_f32", "ours_lean", "openspiel_cpp", "openspiel_python", "jax")
"""Solvers the worker can host (see ``openspiel_bench.SOLVERS`` for their descriptions)."""


MEMORY_FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile")
"""The ``/proc/self/status`` fields :func:`read_memory_fields` returns."""


def read_memory_fields() -> dict[str, float]:
    """This process's resident set size now (``VmRSS``), its peak (``VmHWM``) and the
    anonymous (data) and file-backed (library code) parts of the resident set
    (``RssAnon``, ``RssFile``), in MiB, from ``/proc/self/status`` (Linux; the fields a
    kernel lacks are left out).  The benchmarks' worker processes report them."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in MEMORY_FIELDS:
                fields[key] = int(value.split()[0]) / 1024.0
    return fields


def read_memory_mb() -> tuple[float, float]:
    """Current and peak resident set size of this process in MiB (``VmRSS``, ``VmHWM``).

    ``VmHWM`` is the high-water mark of this process image only (it restarts at ``exec``),
    unlike ``ru_maxrss`` which may carry the parent's size across ``fork``/``exec``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        rss_kib = float(fields["VmRSS"].split()[0])
        peak_kib = float(fields["VmHWM"].split()[0])
        return rss_kib / 1024.0, peak_kib / 1024.0
    except (OSError, KeyError, ValueError):  # pragma: no cover - not Linux
        import resource

        import psutil

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        return psutil.Process().memory_info().rss / 2**20, peak


def load_benchmark_game(game_string: str) -> Any:
    """Load an OpenSpiel game; simultaneous-move games get the turn-based wrapper."""
    import pyspiel

    game = pyspiel.load_game(game_string)
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    return game


class HostedSolver:
    """One solver behind a uniform interface: ``setup``, ``step`` (one iteration), ``sync``."""

    compiles_on_first_iteration = False

    def __init__(self, game: Any, device: str) -> None:
        self.game = game
        self.device = device
        self.solver: Any = None

    def setup(self) -> dict[str, Any]:
        """Build the solver (the timed set-up); return facts about it for the report."""
        raise NotImplementedError

    def step(self) -> None:
        """Run one CFR iteration (both players, alternating updates)."""
        self.solver.evaluate_and_update_policy()

    def sync(self) -> None:
        """Wait until all work queued by ``step`` has finished."""


class OursSolver(HostedSolver):
    """``tensorcfr.games.openspiel.TensorCFRSolver`` (the core solver on the flattened
    game), vanilla CFR with alternating updates."""

    dtype_name = "float64"
    passes = "auto"

    def setup(self) -> dict[str, Any]:
        import torch

        from tensorcfr.games.openspiel.solvers import TensorCFRSolver

        dtype = getattr(torch, self.dtype_name)
        self.solver = TensorCFRSolver(self.game, algo="cfr", alternating=True,
                                      device=self.device, dtype=dtype, passes=self.passes)
        info: dict[str, Any] = {"dtype": self.dtype_name, "device": self.device,
                                "threads": torch.get_num_threads(),
                                "passes": self.solver.passes_used}
        fast_path = getattr(self.solver, "uses_numpy_fast_path", None)
        if isinstance(fast_path, bool):
            info["numpy_fast_path"] = fast_path
        internal_setup = getattr(self.solver, "setup_seconds", None)
        if isinstance(internal_setup, float):
            info["reported_setup_s"] = internal_setup  # the solver's own walk + build timer
        tree = getattr(self.solver, "tree", None)
        if tree is not None:
            for name in ("num_nodes", "num_infosets", "num_terminals", "num_slots", "depth"):
                value = getattr(tree, name, None)
                if isinstance(value, int):
                    info[f"tree_{name}"] = value
            memory_bytes = getattr(tree, "memory_bytes", None)
            if callable(memory_bytes):
                info["tree_memory_mb"] = memory_bytes() / 2**20
        return info

    def sync(self) -> None:
        import torch

        if torch.device(self.device).type == "cuda":  # pragma: no cover - no GPU here
            torch.cuda.synchronize(self.device)


class OursFloat32Solver(OursSolver):
    """Our solver in float32 (the precision JaxCFR runs in by default)."""

    dtype_name = "float32"


class OursLeanSolver(OursSolver):
    """Our solver with the memory-lean passes (``passes="lean"``: no per-node state
    between iterations; CPU, float64)."""

    passes = "lean"


class OpenSpielCppSolver(HostedSolver):
    """``pyspiel.CFRSolver``: OpenSpiel's C++ vanilla CFR (alternating updates)."""

    def setup(self) -> dict[str, Any]:
        import pyspiel

        self.solver = pyspiel.CFRSolver(self.game)
        return {"dtype": "float64"}


class OpenSpielPythonSolver(HostedSolver):
    """``open_spiel.python.algorithms.cfr.CFRSolver``: OpenSpiel's pure-Python CFR."""

    def setup(self) -> dict[str, Any]:
        from open_spiel.python.algorithms import cfr

        self.solver = cfr.CFRSolver(self.game)
        return {"dtype": "float64"}


class JaxSolver(HostedSolver):
    """``open_spiel.python.jax.cfr.jax_cfr.JaxCFR`` set to vanilla CFR: no regret matching+,
    no linear averaging, alternating updates; default JAX precision (float32)."""

    compiles_on_first_iteration = True

    def setup(self) -> dict[str, Any]:
        import jax
        from open_spiel.python.jax.cfr.jax_cfr import JaxCFR

        self.solver = JaxCFR(self.game, regret_matching_plus=False, alternating_updates=True,
                             linear_averaging=False)
        dtype = str(self.solver.regrets[0].dtype)
        return {"dtype": dtype, "jax_backend": jax.default_backend()}

    def step(self) -> None:
        self.solver.step()

    def sync(self) -> None:
        import jax

        jax.block_until_ready((self.solver.regrets, self.solver.averages))


_HOSTS: dict[str, Callable[[Any, str], HostedSolver]] = {
    "ours": OursSolver,
    "ours_f32": OursFloat32Solver,
    "ours_lean": OursLeanSolver,
    "openspiel_cpp": OpenSpielCppSolver,
    "openspiel_python": OpenSpielPythonSolver,
    "jax": JaxSolver,
}


def _import_libraries(solver_name: str, threads: int) -> None:
    """Import what the solver needs before the baseline memory reading."""
    import pyspiel  # noqa: F401  (every solver walks OpenSpiel states)

    if solver_name.startswith("ours"):
        import torch

        from tensorcfr.core import solver  # noqa: F401
        from tensorcfr.utils.resources import set_threads

        set_threads(threads)
        torch.set_num_interop_threads(1)
    elif solver_name == "openspiel_python":
        from open_spiel.python.algorithms import cfr  # noqa: F401
    elif solver_name == "jax":
        import jax  # noqa: F401
        import jax.numpy as jnp

        from open_spiel.python.jax.cfr import jax_cfr  # noqa: F401

        jnp.zeros(1).block_until_ready()  # initialise the backend (its memory is baseline)


def _send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _handle(host: HostedSolver | None, hosted_factory: Callable[[], HostedSolver],
            command: dict[str, Any]) -> tuple[HostedSolver | None, dict[str, Any]]:
    name = command.get("cmd")
    if name == "setup":
        start = time.perf_counter()
        host = hosted_factory()
        info = host.setup()
        setup_s = time.perf_counter() - start
        rss, peak = read_memory_mb()
        return host, {"ok": True, "setup_s": setup_s, "info": info, "rss_mb": rss,
                      "peak_rss_mb": peak,
                      "compiles_on_first_iteration": host.compiles_on_first_iteration}
    if name == "run":
        if host is None:
            return host, {"ok": False, "error": "run before setup"}
        iterations = int(command.get("iterations", 1))
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(iterations):
            host.step()
        host.sync()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return host, {"ok": True, "wall_s": wall, "cpu_s": cpu, "iterations": iterations}
    if name == "memory":
        rss, peak = read_memory_mb()
        return host, {"ok": True, "rss_mb": rss, "peak_rss_mb": peak}
    return host, {"ok": False, "error": f"unknown command {name!r}"}


def main(argv: list[str] | None = None) -> int:
    """Serve one solver over the line protocol until ``exit`` or end of input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", required=True, choices=SOLVER_NAMES)
    parser.add_argument("--game", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    # Keep a private channel to the parent, then send fd 1 to stderr.
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    try:
        _import_libraries(args.solver, args.threads)
        game = load_benchmark_game(args.game)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
        traceback.print_exc()
        _send(channel, {"ok": False, "event": "ready", "error": f"{type(exc).__name__}: {exc}"})
        return 1
    rss, _peak = read_memory_mb()
    import tensorcfr

    _send(channel, {"ok": True, "event": "ready", "baseline_rss_mb": rss, "pid": os.getpid(),
                    "tensorcfr_path": os.path.dirname(tensorcfr.__file__)})

    host: HostedSolver | None = None
    factory = lambda: _HOSTS[args.solver](game, args.device)  # noqa: E731
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            command = json.loads(line)
        except json.JSONDecodeError:
            _send(channel, {"ok": False, "error": f"bad command line {line[:80]!r}"})
            continue
        if command.get("cmd") == "exit":
            break
        try:
            host, reply = _handle(host, factory, command)
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            traceback.print_exc()
            reply = {"ok": False, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        if "seq" in command:
            reply["seq"] = command["seq"]
        _send(channel, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
