"""``tensorcfr pasur train-hidden``: train the ``hidden-model`` agent (XGBoost on what a
player sees), :mod:`tensorcfr.games.pasur.learning.hidden_model`.

Parses options into a :class:`TrainHiddenSettings`, runs :func:`run_train_hidden` with a
progress bar and prints the result; nothing here knows the features or the training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import (MAX_BASE_SEED, MAX_THREADS, console, err_console, fail,
                                  path_check, print_json)
from tensorcfr.errors import TensorCFRError


def train_hidden_command(
    games: int = typer.Option(..., "--games", min=1, max=10_000_000,
                              help="Games played to collect decisions "
                              "(random deals, seed + i)."),
    out: str = typer.Option(..., "--out", callback=path_check("output-dir"),
                            help="Model folder (hidden_model.ubj + "
                            "manifest.json; rows.npz checkpoint, resumed on a rerun)."),
    teacher: str = typer.Option("exact", "--teacher", help="exact (open-hands exact values, "
                                "one solve per game), pimc (PIMC's mean values; slow) or "
                                "round-search (its mean values: expert iteration)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_BASE_SEED,
                             help="Seed of the deals, behaviour and split."),
    determinizations: int = typer.Option(8, "--determinizations", "-k", min=1, max=10_000,
                                         help="pimc and round-search teachers: "
                                         "determinizations K per decision."),
    rounds: int = typer.Option(300, "--rounds", min=1, max=100_000, help="Most boosting rounds."),
    max_depth: int = typer.Option(6, "--max-depth", min=1, max=64, help="XGBoost max_depth."),
    eta: float = typer.Option(0.1, "--eta", min=1e-6, max=1.0, help="XGBoost learning rate."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="XGBoost and torch threads "
                                          "(default 1)."),
    behaviour: str = typer.Option("teacher", "--behaviour",
                                  callback=path_check("input-dir",
                                                      keep=("teacher", "hidden-model",
                                                            "distilled")),
                                  help="Who makes the 0.6 share of the plays of the games "
                                  "played: teacher (its best play), hidden-model or distilled "
                                  "(the shipped models) or a hidden-model folder (expert "
                                  "iteration: the apprentice plays, the teacher labels)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Train the hidden-model agent on a teacher's decisions; held-out RMSE."""
    from tensorcfr.utils.resources import set_threads

    try:
        n_threads = set_threads(threads)
        from tensorcfr.games.pasur.learning.hidden_model import (
            TrainHiddenSettings,
            run_train_hidden,
        )

        settings = TrainHiddenSettings(games=games, out=Path(out), teacher=teacher, seed=seed,
                                       threads=n_threads, determinizations=determinizations,
                                       rounds=rounds, max_depth=max_depth, eta=eta,
                                       behaviour=behaviour)
        manifest = _train_with_bar(settings, run_train_hidden,
                                   show=not json_out and err_console.is_terminal)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    result = {"out": out, "teacher": manifest["teacher"], "games": manifest["games"],
              "rows": manifest["rows"], "rmse": manifest["rmse"],
              "target_std": manifest["target_std"], "rounds": manifest["rounds"],
              "model_bytes": manifest["model_bytes"], "seconds": manifest["seconds"],
              "threads": n_threads}
    if json_out:
        print_json(result)
        return
    rows = manifest["rows"]
    console.print(f"{manifest['games']} games, teacher {manifest['teacher']}: {rows['total']:,} "
                  f"rows ({rows['train']:,} train, {rows['test']:,} held-out)",
                  highlight=False, soft_wrap=True)
    console.print(f"RMSE of the advantage (points): held-out {manifest['rmse']['test']:.3f} "
                  f"(target std {manifest['target_std']['test']:.3f}), train "
                  f"{manifest['rmse']['train']:.3f}; {manifest['rounds']} rounds; "
                  f"{manifest['seconds']['total']:.1f} s, {n_threads} thread(s)",
                  highlight=False, soft_wrap=True)
    console.print(f"wrote {out}/hidden_model.ubj ({manifest['model_bytes']:,} bytes) and "
                  f"{out}/manifest.json", highlight=False, soft_wrap=True)


def _train_with_bar(settings: Any, run: Any, show: bool) -> dict[str, Any]:
    """Run the training with a progress bar of games, then a spinner while boosting."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not show) as bar:
        task = bar.add_task("games", total=settings.games)

        def on_progress(p: Any) -> None:
            if p.stage == "games":
                bar.update(task, completed=p.done)
            else:
                bar.update(task, description="training", completed=0, total=None)

        return run(settings, on_progress)


__all__ = ["train_hidden_command"]
