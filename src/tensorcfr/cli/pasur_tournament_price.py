"""``tensorcfr pasur tournament-price``: where each agent of a tournament loses points against
open-hands play, by round and seat (the run itself is
:func:`tensorcfr.games.pasur.tournament_price.run_price_analysis`; this module parses options
and prints, and holds the printing that ``pasur tournament --price`` shares)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import typer

from tensorcfr.cli.common import console, err_console, fail, path_check, print_json
from tensorcfr.errors import TensorCFRError

if TYPE_CHECKING:
    from rich.progress import Progress

    from tensorcfr.games.pasur.tournament_price import PriceProgress, PriceResult

INTERRUPTED_EXIT_CODE = 130


def price_progress_printer(bar: "Progress") -> Callable[["PriceProgress"], None]:
    """An ``on_progress`` for the analysis: notices on stderr, the bar's own task."""
    task: dict[str, Any] = {}

    def on_progress(progress: PriceProgress) -> None:
        if progress.notice is not None:
            err_console.print(f"note: {progress.notice}", highlight=False, soft_wrap=True,
                              markup=False)
            return
        if "id" not in task:
            task["id"] = bar.add_task("games analysed", total=progress.total,
                                      completed=progress.done, failed=0)
        bar.update(task["id"], completed=progress.done, failed=progress.failed)

    return on_progress


def _cell(row: dict[str, Any], key: str) -> str:
    mean, low, high = row[f"{key}_mean"], row[f"{key}_ci95_low"], row[f"{key}_ci95_high"]
    if mean is None:
        return "-"
    if low is None:
        return f"{mean:.2f}"
    return f"{mean:.2f} ±{(high - low) / 2:.2f}"


def print_price(result: PriceResult) -> None:
    """The by-round tables of an analysis: per agent (all rivals), per seat, the points lost
    per game in each round and in all, then its price (own loss minus the rival's)."""
    from tensorcfr.games.pasur.engine.rules import NUM_ROUNDS

    console.print(f"points lost against open-hands play, per game, by round (mean ±95% "
                  f"half-interval over deals); price = own loss minus the rival's (= the "
                  f"deal's exact value minus the result, from the seat); {result.games} games "
                  "analysed", highlight=False, soft_wrap=True)
    rounds = [*range(1, NUM_ROUNDS + 1), None]
    header = "  ".join(f"{'round ' + str(r) if r else 'whole game':>14}" for r in rounds)
    for agent in result.agents:
        whole = result.row(agent, "both", None)
        console.print(f"{agent} ({whole['games']} games, {whole['deals']} deals, every rival)",
                      highlight=False, soft_wrap=True)
        console.print(f"  {'':12}{header}", highlight=False, soft_wrap=True)
        for key, label in (("loss", "loss"), ("price", "price")):
            for seat in ("alex", "bob", "both"):
                cells = "  ".join(f"{_cell(result.row(agent, seat, r), key):>14}"
                                  for r in rounds)
                name = f"{label} {seat if seat != 'both' else 'all'}"
                console.print(f"  {name:12}{cells}", highlight=False, soft_wrap=True)
    _print_paired(result)
    seconds = "-" if result.seconds_per_game is None else f"{result.seconds_per_game:.3f}"
    extra = f", {result.without_plays} without recorded plays" if result.without_plays else ""
    console.print(f"{result.computed} games analysed now, {result.skipped} already done, "
                  f"{result.failed} failed{extra}; {seconds} s a game (median), "
                  f"{result.seconds:.1f} s ({result.mode}"
                  f"{', ' + str(result.workers) + ' process(es)' if result.workers else ''})",
                  highlight=False, soft_wrap=True)
    from tensorcfr.games.pasur.tournament_price import (PRICE_BY_ROUND_TABLE,
                                                        PRICE_GAMES_TABLE, PRICE_PAIRED_TABLE)

    console.print(f"wrote {result.run / PRICE_GAMES_TABLE}, {result.run / PRICE_BY_ROUND_TABLE} "
                  f"and {result.run / PRICE_PAIRED_TABLE}", highlight=False, soft_wrap=True)


def _interval(row: dict[str, Any]) -> str:
    if row["diff_mean"] is None:
        return "-"
    if row["diff_ci95_low"] is None:
        return f"{row['diff_mean']:+.2f}"
    return f"{row['diff_mean']:+.2f} [{row['diff_ci95_low']:+.2f}, {row['diff_ci95_high']:+.2f}]"


def _print_paired(result: PriceResult) -> None:
    """Two agents against the same rival, paired by deal: one line per (A, B, rival)."""
    groups: dict[tuple[str, str, str], dict[int | None, dict[str, Any]]] = {}
    for row in result.paired:
        groups.setdefault((row["agent"], row["other"], row["rival"]), {})[row["round"]] = row
    if not groups:
        return
    console.print("against the same rival, paired by deal: A's points lost a game minus B's "
                  "(both seats; 95% interval over deals), rounds 1-6 and whole game",
                  highlight=False, soft_wrap=True)
    for (a, b, rival), rounds in groups.items():
        cells = ", ".join(_interval(rounds[r]) for r in range(1, 7))
        console.print(f"  {a} minus {b}, against {rival} ({rounds[None]['deals']} deals): "
                      f"{cells}; whole game {_interval(rounds[None])}", highlight=False,
                      soft_wrap=True)


def tournament_price_command(
    run: str = typer.Option(..., "--run", callback=path_check("input-dir"),
                            help="A tournament folder (the --out of `pasur tournament`, "
                            "played by a version that records plays); rerun to resume."),
    processes: int = typer.Option(0, "--processes", min=0, max=1024,
                                  help="P > 0: analyse on P local worker processes; 0: in "
                                  "this process."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object (key "
                                  "`by_round`) instead of text."),
) -> None:
    """Replay a tournament's games with open-hands values: the points each agent loses, by
    round and seat."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn, TimeRemainingColumn

    from tensorcfr.games.pasur.tournament_price import PriceSettings, run_price_analysis

    try:
        settings = PriceSettings(run=Path(run), processes=processes)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                      TextColumn("ETA"), TimeRemainingColumn(), console=err_console,
                      transient=True, disable=not err_console.is_terminal) as bar:
            result = run_price_analysis(settings, on_progress=price_progress_printer(bar))
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    except KeyboardInterrupt:
        fail(f"every analysed game is in {Path(run) / 'price.jsonl'}; run the same command "
             "to resume", INTERRUPTED_EXIT_CODE)
    if json_out:
        print_json(result.as_dict())
        return
    print_price(result)


__all__ = ["print_price", "price_progress_printer", "tournament_price_command"]
