"""The DCFR half of ``tensorcfr pasur``: ``solve --method dcfr`` and ``exploitability DIR``.

``tensorcfr pasur solve --method dcfr`` (the command itself lives in ``pasur_solve.py``)
calls :func:`run_dcfr_solve`: it builds the deal's game graph (``--mode dag``: merged
states, ``--mode tree``: the paper's game tree), solves it round by round with CFR
(:mod:`tensorcfr.games.pasur.solving.round_cfr`), measures the exact exploitability and the gap to
the exact game value, and with ``--out DIR`` writes atomically:

* ``DIR/strategy.parquet``: the average strategy (:mod:`tensorcfr.games.pasur.solving.strategy_table`);
* ``DIR/manifest.json``: deal, parameters, versions, timings and results;
* ``DIR/convergence.csv`` and ``DIR/convergence.png`` with ``--convergence``;
* ``DIR/checkpoint/``: one file per finished round, so rerunning a killed solve with the
  same ``--out`` resumes from its last finished round (same result as an uninterrupted run).

``tensorcfr pasur exploitability DIR`` rebuilds the graph from the manifest's deal and mode,
maps the saved table back onto its edges and recomputes the exploitability.

Setting the environment variable ``TENSORCFR_STOP_AFTER_ROUNDS=k`` stops a solve (error,
exit code 2) after ``k`` rounds have been solved and checkpointed: a simulated kill.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import typer

from tensorcfr.cli.common import MAX_THREADS, console, err_console, path_check, print_json
from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError
from tensorcfr.utils.confine import file_in_folder

if TYPE_CHECKING:
    from tensorcfr.games.pasur.solving.graph import RoundGraph

STOP_ENV = "TENSORCFR_STOP_AFTER_ROUNDS"
MANIFEST = "manifest.json"
TABLE = "strategy.parquet"
CONVERGENCE_CSV = "convergence.csv"
CONVERGENCE_PNG = "convergence.png"
CHECKPOINT_DIR = "checkpoint"
MANIFEST_FORMAT = "tensorcfr-pasur-dcfr-run"
MODES = ("dag", "tree")

# Bytes per edge and per node the round solver holds for the round being solved
# (regrets, cumulative and current strategy, edge reach/values, node reach/values, and the
# temporaries of each iteration, which the allocator keeps: see round_cfr.keep_freed_memory)
# plus the average strategy kept for every round: float64 tensors. Calibrated on measured
# peak RSS of tree-mode solves (seeds 0, 3, 6, 7: 237 to 356 bytes per edge of the largest
# round above the builder's estimate; docs/benchmarks/pasur_dcfr.md), rounded up.
_SOLVER_BYTES_PER_EDGE = 8 * 48
_SOLVER_BYTES_PER_NODE = 8 * 6
_KEPT_BYTES_PER_EDGE = 8


def _versions() -> dict[str, str]:
    import numpy
    import pyarrow
    import torch

    from tensorcfr import __version__

    return {"tensorcfr": __version__, "torch": torch.__version__, "numpy": numpy.__version__,
            "pyarrow": pyarrow.__version__, "python": platform.python_version()}


def _memory_limit(max_memory: Any) -> int | None:
    from tensorcfr.utils.resources import parse_memory

    if max_memory is None:
        return None
    if isinstance(max_memory, int):
        if max_memory <= 0:
            raise TensorCFRError(f"--max-memory must be positive, got {max_memory}")
        return max_memory
    return parse_memory(str(max_memory))


def build_graphs(deal: Sequence[int], mode: str, device: str = "cpu",
                 max_memory: int | None = None) -> list[RoundGraph]:
    """The six RoundGraphs of ``deal`` in ``mode`` (``dag`` or ``tree``).

    Tree mode checks the builder's size estimate plus the CFR solver's working memory
    against ``max_memory`` (bytes; ``None``: memory available now) and raises
    :class:`MemoryLimitError` suggesting ``--mode dag`` when it does not fit.
    """
    from tensorcfr.utils.resources import available_memory_bytes, format_bytes

    if mode not in MODES:
        raise TensorCFRError(f"unknown --mode {mode!r}: choose dag or tree")
    if mode == "dag":
        from tensorcfr.games.pasur.solving.exact import build_state_graph

        return build_state_graph(deal, device=device, max_memory=max_memory)
    from tensorcfr.games.pasur.solving.tensor_tree import build_tree_rounds, estimate_tree_size

    limit = max_memory if max_memory is not None else available_memory_bytes()
    estimate = estimate_tree_size(deal, device=device)
    edges = [sum(levels[1:]) for levels in estimate.nodes]
    solver = (max(e * _SOLVER_BYTES_PER_EDGE + n * _SOLVER_BYTES_PER_NODE
                  for e, n in zip(edges, estimate.nodes_per_round))
              + sum(edges) * _KEPT_BYTES_PER_EDGE)
    if estimate.peak_bytes + solver > limit:
        raise MemoryLimitError(
            f"the game tree of this deal has {estimate.total_nodes:,} nodes; building and "
            f"solving it needs about {format_bytes(estimate.peak_bytes + solver)}, more than "
            f"the {format_bytes(limit)} allowed; use --mode dag (merged states) or raise "
            "--max-memory")
    try:
        return build_tree_rounds(deal, device=device, max_memory=limit)
    except MemoryLimitError as exc:
        message = str(exc)
        if "--mode dag" not in message:
            message += "; use --mode dag (merged states)"
        raise MemoryLimitError(message) from None


def _progress_bar(enabled: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err_console, transient=True,
                    disable=not enabled)


def _write_convergence(out: Path, rounds: Sequence[Any]) -> None:
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


def _stop_hook() -> Callable[[Any], None] | None:
    raw = os.environ.get(STOP_ENV)
    if not raw:
        return None
    try:
        stop_after = int(raw)
    except ValueError:
        raise TensorCFRError(f"{STOP_ENV} must be a whole number, got {raw!r}") from None
    solved = {"count": 0}

    def hook(result: Any) -> None:
        from tensorcfr.games.pasur.solving.round_cfr import SolveInterrupted

        solved["count"] += 1
        if solved["count"] >= stop_after:
            raise SolveInterrupted(
                f"stopped after round {result.round_index + 1} as {STOP_ENV}={stop_after} "
                "asked; rerun with the same --out to resume")

    return hook


def run_dcfr_solve(deal: Sequence[int], mode: str = "dag", iterations: int = 1000,
                   variant: str = "dcfr", alpha: float | None = None, beta: float | None = None,
                   gamma: float | None = None, out: str | Path | None = None,
                   convergence: bool = False, json_out: bool = False,
                   max_memory: int | str | None = None, threads: int | None = None,
                   device: str = "cpu", seed: int | None = None, **_: Any) -> dict[str, Any]:
    """``tensorcfr pasur solve --method dcfr``: solve a deal by round-by-round CFR.

    Args:
        deal: 52 card indices (validated).
        mode: ``dag`` (merged states) or ``tree`` (the paper's game tree).
        iterations: CFR iterations per round.
        variant, alpha, beta, gamma: the CFR variant (cfr, cfr+, lcfr, dcfr, pcfr+) and the
            DCFR parameters (defaults 1.5, 0, 2).
        out: output folder (table, manifest, convergence data, checkpoints) or ``None``.
        convergence: record each round's convergence curve (needs ``out``).
        json_out: print one JSON object on stdout instead of the text summary.
        max_memory: memory limit (bytes or a size like ``"8G"``; ``None``: available now).
        threads: torch threads (default 1); device: torch device.
        seed: the deal's seed, recorded in the manifest when given.

    Returns:
        The result dict (also printed): ``value``, ``exact_value``, ``value_gap``,
        ``exploitability``, best-response values, ``nodes_per_round``, ``seconds``...
    """
    import torch

    from tensorcfr.core.regret import CFRVariant
    from tensorcfr.games.pasur.solving.round_cfr import (
        RoundCheckpointStore,
        exploitability,
        keep_freed_memory,
        minimax_value,
        solve_dcfr,
    )
    from tensorcfr.games.pasur.engine.rules import validate_deal
    from tensorcfr.games.pasur.solving.strategy_table import write_strategy_table
    from tensorcfr.utils.io import write_json_atomic
    from tensorcfr.utils.resources import peak_rss_mb, set_threads

    started = time.perf_counter()
    deal = validate_deal(deal)
    if mode not in MODES:
        raise TensorCFRError(f"unknown --mode {mode!r}: choose dag or tree")
    if iterations < 1:
        raise TensorCFRError(f"--iterations must be at least 1, got {iterations}")
    cfr_variant = CFRVariant.parse(variant, alpha, beta, gamma)
    if convergence and out is None:
        raise TensorCFRError("--convergence writes files: give an --out folder")
    from tensorcfr.utils.device import resolve_device

    torch_device = resolve_device(device, "--device")
    used_threads = set_threads(threads)
    keep_freed_memory()  # reuse freed temporaries instead of faulting in fresh pages
    limit = _memory_limit(max_memory)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        from tensorcfr.utils.io import check_output_dir

        check_output_dir(out_dir, "--out")  # before the build and the solve

    t0 = time.perf_counter()
    graphs = build_graphs(deal, mode, device=str(torch_device), max_memory=limit)
    build_seconds = time.perf_counter() - t0
    nodes_per_round = [int(g.total_nodes) for g in graphs]
    edges_per_round = [int(g.total_edges) for g in graphs]

    checkpoint = None
    if out_dir is not None:
        identity = {"deal": list(deal), "mode": mode, "variant": cfr_variant.to_dict(),
                    "iterations": iterations, "dtype": "float64",
                    "nodes_per_round": nodes_per_round, "edges_per_round": edges_per_round}
        checkpoint = RoundCheckpointStore(out_dir / CHECKPOINT_DIR, identity)

    show = err_console.is_terminal
    with _progress_bar(show) as bar:
        tasks: dict[int, Any] = {}
        for graph in reversed(graphs):
            tasks[graph.round_index] = bar.add_task(
                f"round {graph.round_index + 1} ({graph.total_nodes:,} nodes)",
                total=iterations)

        def progress(round_index: int, done: int) -> None:
            bar.update(tasks[round_index], completed=done)

        t0 = time.perf_counter()
        solution = solve_dcfr(graphs, cfr_variant, iterations, device=torch_device,
                              checkpoint=checkpoint, convergence=convergence,
                              progress=progress, on_round_done=_stop_hook())
        solve_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    report = exploitability(graphs, solution.strategies)
    exact_value = minimax_value(graphs)
    quality_seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "deal": list(deal),
        "seed": seed,
        "method": "dcfr",
        "mode": mode,
        "variant": cfr_variant.name,
        "alpha": cfr_variant.alpha,
        "beta": cfr_variant.beta,
        "gamma": cfr_variant.gamma,
        "iterations": iterations,
        "threads": used_threads,
        "device": str(torch_device),
        "value": solution.value,
        "exact_value": exact_value,
        "value_gap": solution.value - exact_value,
        "exploitability": report.exploitability,
        "best_response_to_alex": report.best_response_to_alex,
        "best_response_to_bob": report.best_response_to_bob,
        "nodes_per_round": nodes_per_round,
        "edges_per_round": edges_per_round,
        "round_seconds": [r.seconds for r in solution.rounds],
        "resumed_rounds": [r + 1 for r in sorted(solution.resumed_rounds)],
        "build_seconds": build_seconds,
        "solve_seconds": solve_seconds,
        "quality_seconds": quality_seconds,
    }
    if out_dir is not None:
        t0 = time.perf_counter()
        table_meta = {"deal": list(deal), "mode": mode, "variant": cfr_variant.to_dict(),
                      "iterations": iterations}
        rows = write_strategy_table(out_dir / TABLE, graphs, solution.strategies,
                                    metadata=table_meta)
        if convergence:
            _write_convergence(out_dir, solution.rounds)
        result["table_rows"] = rows
        result["table_seconds"] = time.perf_counter() - t0
        result["out"] = str(out_dir)
    result["seconds"] = time.perf_counter() - started
    result["peak_rss_mb"] = peak_rss_mb()
    if out_dir is not None:
        files = {"strategy_table": TABLE, "checkpoint": CHECKPOINT_DIR}
        if convergence:
            files.update({"convergence_csv": CONVERGENCE_CSV, "convergence_png": CONVERGENCE_PNG})
        manifest = {"format": MANIFEST_FORMAT, "versions": _versions(), "files": files,
                    "command": sys.argv, **result}
        write_json_atomic(out_dir / MANIFEST, manifest)
    if json_out:
        print_json(result)
    else:
        _print_summary(result)
    return result


def _print_summary(result: dict[str, Any]) -> None:
    console.print(
        f"DCFR ({result['variant']}, {result['iterations']} iterations per round, "
        f"{result['mode']} mode): value {result['value']:+.6f}, exact value "
        f"{result['exact_value']:+.6f} (gap {result['value_gap']:+.2e})", highlight=False,
        soft_wrap=True)
    console.print(
        f"exploitability {result['exploitability']:.3e} points per game "
        f"(best response to Alex {result['best_response_to_alex']:+.6f}, "
        f"to Bob {result['best_response_to_bob']:+.6f})", highlight=False,
        soft_wrap=True)
    console.print(
        f"nodes per round {result['nodes_per_round']}; build {result['build_seconds']:.1f} s, "
        f"solve {result['solve_seconds']:.1f} s, total {result['seconds']:.1f} s, "
        f"peak RSS {result['peak_rss_mb']:.0f} MiB, {result['threads']} thread(s)",
        highlight=False, soft_wrap=True)
    if result.get("resumed_rounds"):
        console.print(f"resumed rounds {result['resumed_rounds']} from the checkpoint",
                      highlight=False, soft_wrap=True)
    if "out" in result:
        console.print(f"wrote {result['out']}/ ({result['table_rows']:,} table rows)",
                      highlight=False, soft_wrap=True)


def _read_manifest(folder: Path) -> dict[str, Any]:
    if not folder.is_dir():
        raise TensorCFRError(f"{folder} is not a folder of a DCFR solve")
    path = file_in_folder(folder, MANIFEST, named_by=folder, key="the manifest")
    if not path.is_file():
        raise CorruptFileError(f"{path} is missing: is {folder} the --out folder of a solve "
                               "that finished?")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptFileError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise CorruptFileError(f"{path} is not the manifest of a DCFR solve")
    if manifest.get("mode") not in MODES or not isinstance(manifest.get("deal"), list):
        raise CorruptFileError(f"{path} lacks a valid deal and mode")
    return manifest


def exploitability_command(
    folder_text: str = typer.Argument(..., metavar="FOLDER",
                                      callback=path_check("input-dir", what="run folder"),
                                      help="The --out folder of a `pasur solve --method "
                                      "dcfr`."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
    max_memory: str = typer.Option(None, "--max-memory",
                                   help="Memory limit for rebuilding the graph, e.g. 8G."),
    threads: int = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                help="Torch threads (default 1)."),
    device: str = typer.Option("cpu", "--device", help="Torch device, e.g. cpu or cuda."),
) -> None:
    """Recompute the exact exploitability of a saved strategy table.

    Rebuilds the graph from the manifest's deal and mode, then best responses to the table.
    """
    folder = Path(folder_text)
    from tensorcfr.games.pasur.solving.round_cfr import exploitability, minimax_value
    from tensorcfr.games.pasur.engine.rules import validate_deal
    from tensorcfr.games.pasur.solving.strategy_table import load_strategy_table, \
        strategies_from_table
    from tensorcfr.utils.resources import peak_rss_mb, set_threads

    from tensorcfr.utils.device import resolve_device

    started = time.perf_counter()
    resolve_device(device, "--device")  # one-line error before any work
    manifest = _read_manifest(folder)
    try:
        deal = validate_deal(manifest["deal"])
    except TensorCFRError as exc:
        raise CorruptFileError(f"{folder / MANIFEST}: {exc}") from None
    mode = manifest["mode"]
    files = manifest.get("files") or {}
    table_path = file_in_folder(folder, files.get("strategy_table", TABLE) if isinstance(
        files, dict) else None, named_by=folder / MANIFEST, key="files.strategy_table")
    table = load_strategy_table(table_path)
    if table.metadata.get("deal") != list(deal) or table.metadata.get("mode") != mode:
        raise CorruptFileError(f"{table_path} belongs to another deal or mode "
                               f"than {folder / MANIFEST}")
    used_threads = set_threads(threads)
    graphs = build_graphs(deal, mode, device=device, max_memory=_memory_limit(max_memory))
    strategies = strategies_from_table(table, graphs)
    report = exploitability(graphs, strategies)
    exact_value = minimax_value(graphs)
    result = {"folder": str(folder), "deal": list(deal), "mode": mode,
              "table_rows": table.num_rows, "value": report.value, "exact_value": exact_value,
              "value_gap": report.value - exact_value,
              "exploitability": report.exploitability,
              "best_response_to_alex": report.best_response_to_alex,
              "best_response_to_bob": report.best_response_to_bob,
              "threads": used_threads, "seconds": time.perf_counter() - started,
              "peak_rss_mb": peak_rss_mb()}
    if json_out:
        print_json(result)
        return
    console.print(f"{folder}: {mode} mode, {table.num_rows:,} table rows", highlight=False,
                  soft_wrap=True)
    console.print(f"value {result['value']:+.6f}, exact value {exact_value:+.6f}, "
                  f"exploitability {result['exploitability']:.3e} points per game",
                  highlight=False, soft_wrap=True)


__all__ = ["build_graphs", "exploitability_command", "run_dcfr_solve"]
