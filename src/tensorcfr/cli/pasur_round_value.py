"""``tensorcfr pasur train-round-value``: train the round-end value network of the
``round-search`` agent, :mod:`tensorcfr.games.pasur.learning.round_value`.

Parses options into a :class:`TrainRoundValueSettings`, runs :func:`run_train_round_value`
with a progress bar and prints the result; nothing here knows the features or the training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import (MAX_BASE_SEED, MAX_THREADS, console, err_console, fail,
                                  path_check, print_json)
from tensorcfr.errors import TensorCFRError


def train_round_value_command(
    games: int = typer.Option(..., "--games", min=1, max=1_000_000,
                              help="Games played to collect round ends (5 rows a game)."),
    out: str = typer.Option(..., "--out", callback=path_check("output-dir"),
                            help="Network folder (round_value.npz + manifest.json; rows.npz "
                            "checkpoint, resumed on a rerun)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_BASE_SEED,
                             help="Seed of the deals, behaviour, futures and training."),
    futures: int = typer.Option(4, "--futures", min=1, max=64,
                                help="Deals of the rest solved per round end (averaged)."),
    epochs: int = typer.Option(40, "--epochs", min=1, max=10_000, help="Training epochs."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch threads (default 1)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Train round-search's value of a round's end on double-dummy solves of sampled deals."""
    from tensorcfr.utils.resources import set_threads

    try:
        n_threads = set_threads(threads)
        from tensorcfr.games.pasur.learning.round_value import (
            TrainRoundValueSettings,
            run_train_round_value,
        )

        settings = TrainRoundValueSettings(games=games, out=Path(out), seed=seed,
                                           futures=futures, epochs=epochs, threads=n_threads)
        manifest = _train_with_bar(settings, run_train_round_value,
                                   show=not json_out and err_console.is_terminal)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    result = {"out": out, "games": manifest["games"], "rows": manifest["rows"],
              "rmse": manifest["rmse"], "target_std": manifest["target_std"],
              "round_mean_rmse": manifest["round_mean_rmse"], "seconds": manifest["seconds"],
              "threads": n_threads}
    if json_out:
        print_json(result)
        return
    rows = manifest["rows"]
    console.print(f"{manifest['games']} games: {rows['total']:,} round ends ({rows['train']:,} "
                  f"train, {rows['test']:,} held-out), {manifest['futures']} deal(s) of the "
                  "rest each", highlight=False, soft_wrap=True)
    console.print(f"held-out RMSE {manifest['rmse']['test']:.3f} points (per-round mean "
                  f"{manifest['round_mean_rmse']['test']:.3f}, target std "
                  f"{manifest['target_std']['test']:.3f}); train {manifest['rmse']['train']:.3f}; "
                  f"{manifest['seconds']['total']:.1f} s, {n_threads} thread(s)",
                  highlight=False, soft_wrap=True)
    console.print(f"wrote {out}/round_value.npz and {out}/manifest.json", highlight=False,
                  soft_wrap=True)


def _train_with_bar(settings: Any, run: Any, show: bool) -> dict[str, Any]:
    """Run the training with a progress bar of games, then of epochs."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not show) as bar:
        task = bar.add_task("games", total=settings.games)

        def on_progress(p: Any) -> None:
            bar.update(task, description=p.stage, completed=p.done, total=p.total)

        return run(settings, on_progress)


__all__ = ["train_round_value_command"]
