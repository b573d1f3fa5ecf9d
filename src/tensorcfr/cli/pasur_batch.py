"""``tensorcfr pasur batch`` and ``tensorcfr pasur analyze``: many decks on Ray, and the
paper's Figure 14 / Table 16 from a batch folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import (MAX_BASE_SEED, MAX_THREADS, console, err_console, fail,
                                  path_check, print_json, warn)
from tensorcfr.errors import TensorCFRError


def batch_command(
    deckfile: str = typer.Argument(...,
                                   callback=path_check("input-file", keep=("seeds",),
                                                       what="deck file"),
                                   help="Deck file: CSV, one deal (52 card indices) per "
                                   "line, e.g. the paper's decks_10000.csv; or `seeds` for "
                                   "the seeded random deals."),
    decks: str = typer.Option(..., "--decks", help="Rows A-B of the deck file (from 0, "
                              "inclusive)."),
    method: str = typer.Option("exact", "--method", help="exact (exact values and exact/random "
                               "matchups) or dcfr (also DCFR tables, per-deck models and "
                               "near-Nash matchups)."),
    out: str = typer.Option(..., "--out", callback=path_check("output-dir"),
                            help="Batch folder (decks.parquet, journal, runs)."),
    workers: int = typer.Option(1, "--workers", min=0, max=100_000,
                                help="Ray workers of a local instance; 0 runs "
                                "in this process without Ray."),
    address: Optional[str] = typer.Option(None, "--address", help="An existing Ray cluster "
                                          "(host:port) instead of a local instance."),
    games: int = typer.Option(1000, "--games", min=0, max=1_000_000,
                              help="Games per self-play matchup (0: none)."),
    iterations: int = typer.Option(200, "--iterations", min=1, max=1_000_000,
                                   help="dcfr: DCFR iterations per round."),
    train_games: int = typer.Option(1000, "--train-games", min=0, max=1_000_000,
                                    help="dcfr: games sampled from the "
                                    "table to train the per-deck model (0: no model)."),
    model_rounds: int = typer.Option(300, "--model-rounds", min=1, max=100_000,
                                     help="dcfr: most boosting rounds."),
    sample_seed: int = typer.Option(0, "--sample-seed", min=0, max=MAX_BASE_SEED,
                                    help="Self-play seed (deck i uses "
                                    "seed + i)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Threads per worker "
                                          "(default 1)."),
    batch_size: int = typer.Option(1, "--batch-size", min=1, max=4096,
                                   help="dcfr: solve this many decks' DCFR as one problem "
                                   "(their graphs merged; same results as one at a time), "
                                   "e.g. 64 on a GPU."),
    device: str = typer.Option("cpu", "--device", help="dcfr: torch device of the DCFR "
                               "solves (cpu, cuda, ...; not cpu needs --workers 0)."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="dcfr: memory a "
                                             "DCFR solve (a whole --batch-size batch) may "
                                             "use, e.g. 8G (default: what the device has "
                                             "free)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Solve and self-play many decks (one Parquet row each) on Ray; resumable."""
    from tensorcfr.games.pasur.batch import BatchOptions, parse_deck_range, run_batch
    from tensorcfr.games.pasur.solving.dcfr_run import memory_limit
    from tensorcfr.utils.resources import set_threads

    try:
        first, last = parse_deck_range(decks)
        n_threads = set_threads(threads)
        options = BatchOptions(method=method, games=games, iterations=iterations,
                               sample_seed=sample_seed, train_games=train_games,
                               model_rounds=model_rounds, threads=n_threads,
                               batch_size=batch_size, device=device.strip(),
                               max_memory=memory_limit(max_memory))
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
            TimeElapsedColumn, TimeRemainingColumn

        show = not json_out and err_console.is_terminal
        with Progress(TextColumn("decks"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                      TextColumn("ETA"), TimeRemainingColumn(), console=err_console,
                      transient=True, disable=not show) as bar:
            task = bar.add_task("decks", total=last - first + 1, failed=0)
            failed = {"n": 0}

            def progress(done: int, total: int, row: dict[str, Any] | None) -> None:
                if row is None:
                    bar.reset(task, total=total, completed=done, failed=0)
                    return
                failed["n"] += row.get("status") != "ok"
                bar.update(task, completed=done, failed=failed["n"])

            summary = run_batch(deckfile, first, last, out, options, workers=workers,
                                address=address, progress=progress, on_note=warn)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
    summary["threads"] = n_threads
    if json_out:
        print_json(summary)
    else:
        _print_batch(summary, out, workers, n_threads)
    if summary["failed"]:
        fail(f"{summary['failed']} of {summary['decks']} decks failed (their error is in the "
             "table's `error` column); rerun the same command to retry them", 1)


def _print_batch(summary: dict[str, Any], out: str, workers: int, n_threads: int) -> None:
    """The two summary lines of a finished batch."""
    console.print(f"{summary['decks']} decks: {summary['computed']} computed now, "
                  f"{summary['skipped']} already done, {summary['failed']} failed; "
                  f"{summary['seconds']:.1f} s ({summary['mode']}, {workers} worker(s), "
                  f"{n_threads} thread(s) each)", highlight=False, soft_wrap=True)
    console.print(f"wrote {Path(out) / 'decks.parquet'} ({summary['table_rows']} rows)",
                  highlight=False, soft_wrap=True)


def analyze_command(
    folders: list[str] = typer.Argument(..., callback=path_check("input-dir", what="batch folder"),
                                        help="Batch folders (`pasur batch --out`); their "
                                        "decks.parquet tables are joined on `deck`."),
    out: Optional[str] = typer.Option(None, "--out", callback=path_check("output-dir"),
                                      help="Folder for figure14.png, "
                                      "table16.md and analysis.json (default: the first "
                                      "batch folder)."),
    max_depth: int = typer.Option(1, "--max-depth", min=1, max=64,
                                  help="Depth of each Jacks group's "
                                  "decision tree on Alex's clubs (1: one split, as in the "
                                  "paper)."),
    min_leaf: int = typer.Option(5, "--min-leaf", min=1, max=10**9,
                                 help="Fewest decks in a tree leaf."),
    paper_mm: Optional[str] = typer.Option(None, "--paper-mm", callback=path_check("input-file"),
                                           help="The paper's MM.csv "
                                           "(self-play of its models) to overlay and compare."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Figure 14 and Table 16 (fair value by Alex's Jacks and clubs) from batch folders.

    Table 16 is also given in exact game value (points)."""
    from tensorcfr.games.pasur.learning.analysis import analyze_batches

    try:
        result = analyze_batches(folders, out if out is not None else folders[0],
                                 max_depth=max_depth, min_leaf=min_leaf, paper_mm=paper_mm)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    if json_out:
        print_json(result)
        return
    console.print(Path(result["table16_md"]).read_text(encoding="utf-8"), highlight=False,
                  soft_wrap=True, markup=False)
    console.print(f"wrote {result['figure14_png']}, {result['table16_md']} and "
                  f"{result['analysis_json']}", highlight=False, soft_wrap=True)


__all__ = ["analyze_command", "batch_command"]
