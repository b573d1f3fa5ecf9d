"""One round-by-round DCFR solve of a Pasur deal as a library call, and its run folder.

:func:`run_dcfr` with a :class:`DcfrSettings` is what ``tensorcfr pasur solve --method dcfr``
runs (and ``pasur batch --method dcfr`` per deck): it builds the deal's game graph
(:func:`build_graphs`: ``dag``, merged states, or ``tree``, the paper's game tree, with its
memory checked first), solves it round by round with CFR
(:mod:`tensorcfr.games.pasur.solving.round_cfr`), measures the exact exploitability and the
gap to the exact game value (points per game, Alex minus Bob), and with ``out`` writes the
**run folder**, atomically, file by file:

* ``strategy.parquet`` (:data:`RUN_TABLE`): the average strategy
  (:mod:`tensorcfr.games.pasur.solving.strategy_table`);
* ``manifest.json`` (:data:`RUN_MANIFEST`): ``format`` = :data:`RUN_FORMAT`, the deal,
  parameters, versions, timings and results, and ``files`` (the names of the other files);
* ``convergence.csv`` and ``convergence.png`` with ``convergence``;
* ``checkpoint/``: one file per finished round, so rerunning a killed solve with the same
  ``out`` resumes from its last finished round (same result as an uninterrupted run).

This module is the one definition of that folder: :func:`read_run_manifest` (strict: the
manifest must be there, for :func:`run_folder_exploitability`) and :func:`run_table_path`
(a folder or a bare table file, for the players and the policy models) read it.

Nothing here prints or parses command lines: progress goes to ``on_progress``
(:class:`DcfrProgress`), errors are :class:`~tensorcfr.errors.TensorCFRError` subclasses with
one-line messages naming the CLI options.

>>> settings = DcfrSettings(deal=tuple(range(52)), mode="dag", iterations=2)
>>> settings.mode, settings.cfr_variant.name
('dag', 'dcfr')
"""

from __future__ import annotations

import csv
import io
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError
from tensorcfr.games.pasur.vocab import GraphMode
from tensorcfr.utils.confine import file_in_folder

if TYPE_CHECKING:
    from tensorcfr.core.regret import CFRVariant
    from tensorcfr.games.pasur.solving.graph import RoundGraph

__all__ = [
    "MODES",
    "RUN_FORMAT",
    "RUN_MANIFEST",
    "RUN_TABLE",
    "DcfrProgress",
    "DcfrSettings",
    "build_graphs",
    "check_run_folder",
    "read_run_manifest",
    "run_dcfr",
    "run_folder_exploitability",
    "run_table_path",
    "tree_memory_estimate",
]

# --------------------------------------------------------------------------- the run folder

RUN_FORMAT = "tensorcfr-pasur-dcfr-run"
"""``manifest.json``'s ``format``: the folder is a DCFR run."""
RUN_MANIFEST = "manifest.json"
RUN_TABLE = "strategy.parquet"
CONVERGENCE_CSV = "convergence.csv"
CONVERGENCE_PNG = "convergence.png"
CHECKPOINT_DIR = "checkpoint"
MAX_MANIFEST_BYTES = 4 * 2**20
"""Largest manifest read (a real one is a few KiB)."""

MODES = tuple(m.value for m in GraphMode)
"""Graph modes: ``dag`` (merged states) and ``tree`` (the paper's game tree)."""

STOP_ENV = "TENSORCFR_STOP_AFTER_ROUNDS"
"""The environment variable the CLI reads into :attr:`DcfrSettings.stop_after_rounds`."""

# Bytes per edge and per node the round solver holds for the round being solved
# (regrets, cumulative and current strategy, edge reach/values, node reach/values, and the
# temporaries of each iteration, which the allocator keeps: see round_cfr.keep_freed_memory)
# plus the average strategy kept for every round: float64 tensors. Calibrated on measured
# peak RSS of tree-mode solves (seeds 0, 3, 6, 7: 237 to 356 bytes per edge of the largest
# round above the builder's estimate; docs/benchmarks/pasur_dcfr.md), rounded up.
SOLVER_BYTES_PER_EDGE = 8 * 48
SOLVER_BYTES_PER_NODE = 8 * 6
KEPT_BYTES_PER_EDGE = 8


def _load_manifest(path: Path) -> dict[str, Any]:
    """The manifest file ``path`` of a run folder, of :data:`RUN_FORMAT` (one-line errors:
    :func:`~tensorcfr.utils.manifest.check_format`)."""
    from tensorcfr.utils.manifest import check_format
    from tensorcfr.utils.reading import load_json

    return check_format(load_json(path, "the manifest of a DCFR run", MAX_MANIFEST_BYTES),
                        RUN_FORMAT, path, "the manifest of a DCFR run")


def _table_in(folder: Path, manifest: dict[str, Any], named_by: Path) -> Path:
    """The strategy table a manifest names (confined to ``folder``)."""
    files = manifest.get("files") or {}
    name = files.get("strategy_table", RUN_TABLE) if isinstance(files, dict) else None
    return file_in_folder(folder, name, named_by=named_by, key="files.strategy_table")


def read_run_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of the finished run folder ``folder``, checked: its format, a ``deal``
    list and a ``mode`` of :data:`MODES`. Raises :class:`TensorCFRError` (not a folder) or
    :class:`CorruptFileError` (missing, unreadable or foreign manifest), one line each."""
    from tensorcfr.utils.manifest import read_manifest

    path, manifest = read_manifest(
        folder, RUN_MANIFEST, expected_format=RUN_FORMAT, what="a DCFR run",
        max_bytes=MAX_MANIFEST_BYTES,
        missing=f"is {folder} the --out folder of a solve that finished?")
    if manifest.get("mode") not in MODES or not isinstance(manifest.get("deal"), list):
        raise CorruptFileError(f"{path} lacks a valid deal and mode")
    return manifest


def run_table_path(path: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    """The strategy table of a run folder (or of a bare table file) and the folder's
    manifest (``{}`` for a table file, or a folder without one). Every file read is confined
    to the folder (no ``../``, no link out of it); one-line errors."""
    path = Path(path)
    if path.is_file():
        return path, {}
    if not path.is_dir():
        raise TensorCFRError(f"--table {path} does not exist (give the --out folder of "
                             "`tensorcfr pasur solve --method dcfr`)")
    manifest: dict[str, Any] = {}
    mpath = file_in_folder(path, RUN_MANIFEST, named_by=path, key="the manifest")
    if os.path.lexists(mpath):  # a FIFO or device there is refused, not read
        manifest = _load_manifest(mpath)
    table = _table_in(path, manifest, mpath)
    if not os.path.lexists(table):
        raise CorruptFileError(f"{table} is missing: is {path} the --out folder of a DCFR "
                               "solve that finished?")
    return table, manifest


def check_run_folder(path: str | os.PathLike[str]) -> Path:
    """Load and validate the strategy table of a DCFR run folder (or a table file), as a
    player would, so that a command can refuse a damaged one at start; returns the table's
    path. Raises :class:`TensorCFRError` / :class:`CorruptFileError` (one line)."""
    from tensorcfr.games.pasur.solving.strategy_table import load_strategy_table

    table, _ = run_table_path(path)
    load_strategy_table(table)
    return table


def _versions() -> dict[str, str]:
    import numpy
    import pyarrow
    import torch

    from tensorcfr import __version__

    return {"tensorcfr": __version__, "torch": torch.__version__, "numpy": numpy.__version__,
            "pyarrow": pyarrow.__version__, "python": platform.python_version()}


# --------------------------------------------------------------------------- graphs


def memory_limit(max_memory: int | str | None) -> int | None:
    """Bytes of ``max_memory`` (an int, or a size such as ``"8G"``); ``None`` stays None
    (what is available when the graph is built)."""
    from tensorcfr.utils.resources import parse_memory

    if max_memory is None:
        return None
    if isinstance(max_memory, int):
        if max_memory <= 0:
            raise TensorCFRError(f"--max-memory must be positive, got {max_memory}")
        return max_memory
    return parse_memory(str(max_memory))


def tree_memory_estimate(deal: Sequence[int], device: str = "cpu") -> tuple[Any, int, int]:
    """The tree-mode memory model of ``deal``: (the builder's
    :func:`~.tensor_tree.estimate_tree_size`, the edges of all rounds, the bytes building
    and solving the tree needs: the builder's peak plus the round solver's working memory)."""
    from tensorcfr.games.pasur.solving.tensor_tree import estimate_tree_size

    estimate = estimate_tree_size(deal, device=device)
    edges = [sum(levels[1:]) for levels in estimate.nodes]
    solver = (max(e * SOLVER_BYTES_PER_EDGE + n * SOLVER_BYTES_PER_NODE
                  for e, n in zip(edges, estimate.nodes_per_round))
              + sum(edges) * KEPT_BYTES_PER_EDGE)
    return estimate, int(sum(edges)), int(estimate.peak_bytes + solver)


def build_graphs(deal: Sequence[int], mode: GraphMode | str, device: str = "cpu",
                 max_memory: int | None = None) -> list[RoundGraph]:
    """The six RoundGraphs of ``deal`` in ``mode`` (``dag`` or ``tree``).

    Tree mode checks :func:`tree_memory_estimate` against ``max_memory`` (bytes; ``None``:
    memory available now) and raises :class:`MemoryLimitError` suggesting ``--mode dag``
    when it does not fit.
    """
    from tensorcfr.utils.resources import available_memory_bytes, format_bytes

    if GraphMode.parse(mode) is GraphMode.DAG:  # a no-op for a checked GraphMode
        from tensorcfr.games.pasur.solving.exact import build_state_graph

        return build_state_graph(deal, device=device, max_memory=max_memory)
    from tensorcfr.games.pasur.solving.tensor_tree import build_tree_rounds

    limit = max_memory if max_memory is not None else available_memory_bytes()
    estimate, _, need = tree_memory_estimate(deal, device=device)
    if need > limit:
        raise MemoryLimitError(
            f"the game tree of this deal has {estimate.total_nodes:,} nodes; building and "
            f"solving it needs about {format_bytes(need)}, more than "
            f"the {format_bytes(limit)} allowed; use --mode dag (merged states) or raise "
            "--max-memory")
    try:
        return build_tree_rounds(deal, device=device, max_memory=limit)
    except MemoryLimitError as exc:
        message = str(exc)
        if "--mode dag" not in message:
            message += "; use --mode dag (merged states)"
        raise MemoryLimitError(message) from None


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class DcfrSettings:
    """Everything one DCFR solve needs (the options of ``pasur solve --method dcfr``),
    checked when built (one-line :class:`TensorCFRError` naming the option).

    Attributes:
        deal: 52 card indices (validated; stored as a tuple).
        mode: ``dag`` (merged states) or ``tree`` (the paper's game tree).
        iterations: CFR iterations per round.
        variant, alpha, beta, gamma: the CFR variant (cfr, cfr+, lcfr, dcfr, pcfr+) and the
            DCFR parameters (None: the variant's defaults, 1.5, 0, 2 for dcfr).
        out: the run folder, or None (nothing written).
        convergence: record each round's convergence curve (needs ``out``).
        checkpoint: with ``out``, keep per-round checkpoints in ``out/checkpoint`` (resume).
        max_memory: memory limit, bytes or a size such as ``"8G"`` (None: available now);
            stored as bytes.
        threads: torch threads (None: the project default, 1); device: a torch device name
            (checked when the run starts).
        seed: the deal's seed, recorded in the result when given.
        command: the command line recorded in the manifest (None: this process's argv).
        reuse_freed_memory: ask malloc to keep freed memory for reuse (process-wide,
            :func:`~.round_cfr.keep_freed_memory`; right for a solver process).
        stop_after_rounds: stop (:class:`~.round_cfr.SolveInterrupted`) after this many newly
            solved rounds, a simulated kill (``TENSORCFR_STOP_AFTER_ROUNDS``).
    """

    deal: Sequence[int]
    mode: GraphMode = GraphMode.DAG
    iterations: int = 1000
    variant: str = "dcfr"
    alpha: Optional[float] = None
    beta: Optional[float] = None
    gamma: Optional[float] = None
    out: Optional[Path] = None
    convergence: bool = False
    checkpoint: bool = True
    max_memory: int | str | None = None
    threads: Optional[int] = None
    device: str = "cpu"
    seed: Optional[int] = None
    command: Optional[Sequence[str]] = None
    reuse_freed_memory: bool = True
    stop_after_rounds: Optional[int] = None

    def __post_init__(self) -> None:
        from tensorcfr.games.pasur.engine.rules import validate_deal

        object.__setattr__(self, "deal", validate_deal(self.deal))
        object.__setattr__(self, "mode", GraphMode.parse(self.mode))  # a str from Python
        if self.iterations < 1:
            raise TensorCFRError(f"--iterations must be at least 1, got {self.iterations}")
        self.cfr_variant  # noqa: B018 - checks the variant and its parameters
        if self.out is not None:
            object.__setattr__(self, "out", Path(self.out))
        if self.convergence and self.out is None:
            raise TensorCFRError("--convergence writes files: give an --out folder")
        object.__setattr__(self, "max_memory", memory_limit(self.max_memory))
        if self.stop_after_rounds is not None and self.stop_after_rounds < 1:
            raise TensorCFRError(f"{STOP_ENV} must be at least 1, got {self.stop_after_rounds}")

    @property
    def cfr_variant(self) -> CFRVariant:
        """The parsed CFR variant with its parameters."""
        from tensorcfr.core.regret import CFRVariant

        return CFRVariant.parse(self.variant, self.alpha, self.beta, self.gamma)


@dataclass(frozen=True)
class DcfrProgress:
    """A progress event of :func:`run_dcfr`: ``"built"`` once the graphs are built
    (``nodes_per_round`` known, ``iterations`` per round), then ``"iteration"`` with
    ``done`` of ``iterations`` in round ``round_index`` (0-based; the last round first)."""

    event: str
    nodes_per_round: tuple[int, ...]
    iterations: int
    round_index: Optional[int] = None
    done: int = 0


def stop_after_rounds_from_env() -> int | None:
    """:data:`STOP_ENV` as a number of rounds (None when unset); a one-line error when it is
    not a whole number."""
    raw = os.environ.get(STOP_ENV)
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise TensorCFRError(f"{STOP_ENV} must be a whole number, got {raw!r}") from None


def _stop_hook(stop_after: int | None) -> Callable[[Any], None] | None:
    if stop_after is None:
        return None
    solved = {"count": 0}

    def hook(result: Any) -> None:
        from tensorcfr.games.pasur.solving.round_cfr import SolveInterrupted

        solved["count"] += 1
        if solved["count"] >= stop_after:
            raise SolveInterrupted(
                f"stopped after round {result.round_index + 1} as {STOP_ENV}={stop_after} "
                "asked; rerun with the same --out to resume")

    return hook


# --------------------------------------------------------------------------- the run


def _round_progress(on_progress: Callable[[DcfrProgress], None], nodes: tuple[int, ...],
                    iterations: int) -> Callable[[int, int], None]:
    """:func:`~.round_cfr.solve_dcfr`'s ``progress(round_index, done)`` as events."""
    def progress(round_index: int, done: int) -> None:
        on_progress(DcfrProgress("iteration", nodes, iterations, round_index, done))

    return progress


def write_convergence(out: Path, rounds: Sequence[Any]) -> None:
    """``convergence.csv`` (round, iteration, mse) and a log-log plot, atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tensorcfr.utils.io import atomic_path, write_text_atomic

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["round", "iteration", "mse"])
    for result in sorted(rounds, key=lambda r: r.round_index):
        for t, mse in enumerate(result.convergence or [], start=1):
            writer.writerow([result.round_index + 1, t, repr(float(mse))])
    write_text_atomic(out / CONVERGENCE_CSV, buffer.getvalue())
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for result in sorted(rounds, key=lambda r: r.round_index):
        curve = result.convergence or []
        points = [(t, v) for t, v in enumerate(curve, start=1) if v > 0]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    label=f"round {result.round_index + 1}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("MSE of the average strategy to the final one")
    ax.set_title("Round-by-round CFR convergence")
    ax.legend()
    fig.tight_layout()
    with atomic_path(out / CONVERGENCE_PNG) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


def _write_run_folder(s: DcfrSettings, graphs: Sequence[RoundGraph], solution: Any,
                      result: dict[str, Any], started: float) -> None:
    """The table, the convergence files and last the manifest (its presence says the run
    finished); adds ``table_rows``, ``table_seconds``, ``out``, ``seconds``,
    ``peak_rss_mb`` to ``result``."""
    from tensorcfr.games.pasur.solving.strategy_table import write_strategy_table
    from tensorcfr.utils.io import write_json_atomic
    from tensorcfr.utils.resources import peak_rss_mb

    out = s.out
    assert out is not None
    t0 = time.perf_counter()
    table_meta = {"deal": list(s.deal), "mode": s.mode, "variant": s.cfr_variant.to_dict(),
                  "iterations": s.iterations}
    result["table_rows"] = write_strategy_table(out / RUN_TABLE, graphs, solution.strategies,
                                                metadata=table_meta)
    if s.convergence:
        write_convergence(out, solution.rounds)
    result["table_seconds"] = time.perf_counter() - t0
    result["out"] = str(out)
    result["seconds"] = time.perf_counter() - started
    result["peak_rss_mb"] = peak_rss_mb()
    files = {"strategy_table": RUN_TABLE}
    if s.checkpoint:
        files["checkpoint"] = CHECKPOINT_DIR
    if s.convergence:
        files.update({"convergence_csv": CONVERGENCE_CSV, "convergence_png": CONVERGENCE_PNG})
    command = list(s.command) if s.command is not None else sys.argv
    manifest = {"format": RUN_FORMAT, "versions": _versions(), "files": files,
                "command": command, **result}
    write_json_atomic(out / RUN_MANIFEST, manifest)


def run_dcfr(settings: DcfrSettings, *,
             on_progress: Callable[[DcfrProgress], None] | None = None) -> dict[str, Any]:
    """Solve ``settings.deal`` by round-by-round CFR; see the module docstring.

    Returns:
        The JSON-ready result (what ``pasur solve --method dcfr --json`` prints): ``value``,
        ``exact_value``, ``value_gap``, ``exploitability`` (points per game), best-response
        values, ``nodes_per_round``, ``edges_per_round``, ``round_seconds``,
        ``resumed_rounds`` (1-based), timings in seconds, ``peak_rss_mb``; with ``out`` also
        ``table_rows``, ``table_seconds`` and ``out``.

    Raises:
        TensorCFRError (one line): a bad device, output folder or memory limit, a checkpoint
        of another solve; :class:`~.round_cfr.SolveInterrupted` on ``stop_after_rounds``.
    """
    from tensorcfr.games.pasur.solving.round_cfr import (
        RoundCheckpointStore,
        exploitability,
        keep_freed_memory,
        minimax_value,
        solve_dcfr,
    )
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import set_threads

    s = settings
    started = time.perf_counter()
    cfr_variant = s.cfr_variant
    torch_device = resolve_device(s.device, "--device")
    used_threads = set_threads(s.threads)
    if s.reuse_freed_memory:
        keep_freed_memory()  # reuse freed temporaries instead of faulting in fresh pages
    if s.out is not None:
        from tensorcfr.utils.io import check_output_dir

        check_output_dir(s.out, "--out")  # before the build and the solve

    t0 = time.perf_counter()
    graphs = build_graphs(s.deal, s.mode, device=str(torch_device),
                          max_memory=s.max_memory)  # type: ignore[arg-type]
    build_seconds = time.perf_counter() - t0
    nodes_per_round = [int(g.total_nodes) for g in graphs]
    edges_per_round = [int(g.total_edges) for g in graphs]

    checkpoint = None
    if s.out is not None and s.checkpoint:
        identity = {"deal": list(s.deal), "mode": s.mode, "variant": cfr_variant.to_dict(),
                    "iterations": s.iterations, "dtype": "float64",
                    "nodes_per_round": nodes_per_round, "edges_per_round": edges_per_round}
        checkpoint = RoundCheckpointStore(s.out / CHECKPOINT_DIR, identity)

    progress = None
    if on_progress is not None:
        on_progress(DcfrProgress("built", tuple(nodes_per_round), s.iterations))
        progress = _round_progress(on_progress, tuple(nodes_per_round), s.iterations)
    t0 = time.perf_counter()
    solution = solve_dcfr(graphs, cfr_variant, s.iterations, device=torch_device,
                          checkpoint=checkpoint, convergence=s.convergence,
                          progress=progress, on_round_done=_stop_hook(s.stop_after_rounds))
    solve_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    quality = exploitability(graphs, solution.strategies)
    exact_value = minimax_value(graphs)
    quality_seconds = time.perf_counter() - t0
    result = run_result(s, str(torch_device), used_threads, graphs, solution, quality,
                        exact_value, build_seconds=build_seconds, solve_seconds=solve_seconds,
                        quality_seconds=quality_seconds)
    finish_run(s, graphs, solution, result, started)
    return result


def run_result(s: DcfrSettings, device: str, threads: int, graphs: Sequence[RoundGraph],
               solution: Any, quality: Any, exact_value: float, *, build_seconds: float,
               solve_seconds: float, quality_seconds: float) -> dict[str, Any]:
    """The JSON-ready result of one solved deal (see :func:`run_dcfr`), before the run
    folder's and the wall time's keys: ``solution`` is its
    :class:`~.round_cfr.DCFRSolution`, ``quality`` its
    :class:`~.round_cfr.ExploitabilityReport`, ``exact_value`` its game value (points)."""
    cfr_variant = s.cfr_variant
    return {
        "deal": list(s.deal),
        "seed": s.seed,
        "method": "dcfr",
        "mode": s.mode,
        "variant": cfr_variant.name,
        "alpha": cfr_variant.alpha,
        "beta": cfr_variant.beta,
        "gamma": cfr_variant.gamma,
        "iterations": s.iterations,
        "threads": threads,
        "device": device,
        "value": solution.value,
        "exact_value": exact_value,
        "value_gap": solution.value - exact_value,
        "exploitability": quality.exploitability,
        "best_response_to_alex": quality.best_response_to_alex,
        "best_response_to_bob": quality.best_response_to_bob,
        "nodes_per_round": [int(g.total_nodes) for g in graphs],
        "edges_per_round": [int(g.total_edges) for g in graphs],
        "round_seconds": [r.seconds for r in solution.rounds],
        "resumed_rounds": [r + 1 for r in sorted(solution.resumed_rounds)],
        "build_seconds": build_seconds,
        "solve_seconds": solve_seconds,
        "quality_seconds": quality_seconds,
    }


def finish_run(s: DcfrSettings, graphs: Sequence[RoundGraph], solution: Any,
               result: dict[str, Any], started: float) -> None:
    """With ``s.out``, write the run folder (adds its keys to ``result``); in any case add
    ``seconds`` (wall time since ``started``, a ``time.perf_counter()``) and
    ``peak_rss_mb``."""
    from tensorcfr.utils.resources import peak_rss_mb

    if s.out is not None:
        _write_run_folder(s, graphs, solution, result, started)
    else:
        result["seconds"] = time.perf_counter() - started
        result["peak_rss_mb"] = peak_rss_mb()


# --------------------------------------------------------------------------- a saved run


def run_folder_exploitability(folder: str | os.PathLike[str], *,
                              max_memory: int | str | None = None, threads: int | None = None,
                              device: str = "cpu") -> dict[str, Any]:
    """Recompute the exact exploitability of a run folder's strategy table: rebuilds the
    graph from the manifest's deal and mode, maps the table back onto its edges and best
    responds to it. Returns the JSON-ready result of ``pasur exploitability --json``
    (``value``, ``exact_value``, ``value_gap``, ``exploitability``, best responses, points
    per game; ``table_rows``, ``threads``, ``seconds``, ``peak_rss_mb``)."""
    from tensorcfr.games.pasur.engine.rules import validate_deal
    from tensorcfr.games.pasur.solving.round_cfr import exploitability, minimax_value
    from tensorcfr.games.pasur.solving.strategy_table import (load_strategy_table,
                                                              strategies_from_table)
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import peak_rss_mb, set_threads

    folder = Path(folder)
    started = time.perf_counter()
    resolve_device(device, "--device")  # one-line error before any work
    manifest = read_run_manifest(folder)
    try:
        deal = validate_deal(manifest["deal"])
    except TensorCFRError as exc:
        raise CorruptFileError(f"{folder / RUN_MANIFEST}: {exc}") from None
    mode = manifest["mode"]
    table_path = _table_in(folder, manifest, folder / RUN_MANIFEST)
    table = load_strategy_table(table_path)
    if table.metadata.get("deal") != list(deal) or table.metadata.get("mode") != mode:
        raise CorruptFileError(f"{table_path} belongs to another deal or mode "
                               f"than {folder / RUN_MANIFEST}")
    used_threads = set_threads(threads)
    graphs = build_graphs(deal, mode, device=device, max_memory=memory_limit(max_memory))
    strategies = strategies_from_table(table, graphs)
    report = exploitability(graphs, strategies)
    exact_value = minimax_value(graphs)
    return {"folder": str(folder), "deal": list(deal), "mode": mode,
            "table_rows": table.num_rows, "value": report.value, "exact_value": exact_value,
            "value_gap": report.value - exact_value,
            "exploitability": report.exploitability,
            "best_response_to_alex": report.best_response_to_alex,
            "best_response_to_bob": report.best_response_to_bob,
            "threads": used_threads, "seconds": time.perf_counter() - started,
            "peak_rss_mb": peak_rss_mb()}
