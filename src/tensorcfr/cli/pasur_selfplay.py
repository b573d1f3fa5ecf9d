"""``tensorcfr pasur selfplay``, ``pasur train`` and ``pasur evaluate``: players of a deal
and their policy models.

``selfplay`` parses its options into a :class:`~tensorcfr.games.pasur.selfplay_run.
SelfplaySettings`, runs :func:`~tensorcfr.games.pasur.selfplay_run.run_selfplay` (open-hands
players all games at once as tensors, or hidden-hand agents game by game) under a progress
bar and prints the score difference (Alex minus Bob) with its 95% interval, Alex's win / tie /
loss rates and the deal's fair value.

``train`` fits an XGBoost policy model on the strategy tables of one or more DCFR run folders
(:mod:`tensorcfr.games.pasur.learning.policy_model`); ``evaluate`` measures policy models on a
deal's full game tree (:mod:`tensorcfr.games.pasur.learning.evaluate`).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer

from tensorcfr.cli.common import (MAX_BASE_SEED, MAX_SEED, MAX_THREADS, console, err_console, fail,
                                  path_check, print_json)
from tensorcfr.errors import TensorCFRError
from tensorcfr.utils.checks import check_int_range


def _path(text: Optional[str]) -> Optional[Path]:
    return Path(text) if text is not None else None


@contextmanager
def _progress_bar(settings: Any, show: bool) -> Iterator[Callable[[Any], None]]:
    """A rich bar on stderr for :func:`run_selfplay`'s progress events: the 48 plays of all
    games at once (open hands) or the games one by one (hidden hands); nothing when not
    ``show``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    if settings.hidden:
        columns: tuple[Any, ...] = (TextColumn("games"), BarColumn(), MofNCompleteColumn())
        total = settings.games
    else:
        columns = (TextColumn(f"{settings.games:,} games"), BarColumn(),
                   TextColumn("play {task.completed}/48"))
        total = 48
    with Progress(*columns, TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not show) as bar:
        task = bar.add_task("games" if settings.hidden else "play", total=total)
        yield lambda event: bar.update(task, completed=event.done)


def _print_result(result: dict[str, Any]) -> None:
    from rich.table import Table

    from tensorcfr.games.pasur.engine.cards import cards_str

    console.print(f"deal     {cards_str(result['deal'])}", highlight=False, soft_wrap=True)
    table = Table(title=f"{result['alex']} (Alex) vs {result['bob']} (Bob), "
                        f"{result['games']:,} games", title_justify="left")
    for name in ("measure", "value"):
        table.add_column(name, justify="left" if name == "measure" else "right")
    lo, hi = result["ci95"]
    table.add_row("mean diff (Alex - Bob)", f"{result['mean_diff']:+.3f}")
    table.add_row("95% interval", f"[{lo:+.3f}, {hi:+.3f}]")
    table.add_row("min / max diff", f"{result['min_diff']:+d} / {result['max_diff']:+d}")
    table.add_row("Alex wins / ties / Bob wins",
                  f"{result['alex_win_rate']:.3f} / {result['tie_rate']:.3f} / "
                  f"{result['bob_win_rate']:.3f}")
    table.add_row("fair value (P(win) + P(tie)/2)", f"{result['fair_value']:.3f}")
    if result.get("exact_value") is not None:
        table.add_row("exact value", f"{result['exact_value']:+d}")
    for seat in ("alex", "bob"):
        stats = result.get(f"{seat}_move_seconds")
        if stats and stats["plays"]:
            table.add_row(f"{result[seat]} s/play (median / p90)",
                          f"{stats['median']:.4f} / {stats['p90']:.4f}")
    console.print(table)
    console.print(f"{result['games']:,} games in {result['seconds']:.2f} s "
                  f"({result['games_per_second']:,.1f} games/s; setup "
                  f"{result['setup_seconds']:.2f} s), {result['threads']} thread(s), device "
                  f"{result['device']}", highlight=False, soft_wrap=True)
    if "records" in result:
        console.print(f"wrote {result['records_written']} game records to {result['records']}/",
                      highlight=False, soft_wrap=True)


def selfplay_command(
    deal: Optional[str] = typer.Option(None, "--deal", help="52 card codes, pool first."),
    deal_file: Optional[str] = typer.Option(None, "--deal-file", callback=path_check("input-file"),
                                            help="A file with the deal: "
                                            "a JSON list of 52 card indices or 52 card codes."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=MAX_SEED,
                                       help="Play the seeded random deal "
                                       "(as in `pasur solve`)."),
    alex: str = typer.Option(..., "--alex", help="Alex's player: random, exact, table, model "
                             "(open hands), or a hidden-hand agent: greedy, pimc, "
                             "pimc-infer, hidden-model, ..."),
    bob: str = typer.Option(..., "--bob", help="Bob's player (as --alex)."),
    games: int = typer.Option(1000, "--games", min=1, max=1_000_000,
                              help="Number of games, all played at once."),
    sample_seed: int = typer.Option(0, "--sample-seed", min=0, max=MAX_SEED,
                                    help="Seed of the sampling."),
    model: Optional[str] = typer.Option(None, "--model", callback=path_check("input-dir"),
                                        help="Policy model folder "
                                        "(`pasur train --out`) for the model player, or "
                                        "hidden-hand model folder (`pasur train-hidden "
                                        "--out`) for hidden-model (default: the shipped one)."),
    determinizations: int = typer.Option(32, "--determinizations", "-k", min=1, max=10_000,
                                         help="pimc, "
                                         "pimc-infer: determinizations K per play."),
    seconds_per_move: Optional[float] = typer.Option(None, "--seconds-per-move",
                                                     min=0.001, max=3600, help="pimc, "
                                                     "pimc-infer: time budget per play (s)."),
    table: Optional[str] = typer.Option(None, "--table", callback=path_check("input-dir"),
                                        help="DCFR run folder (`pasur solve "
                                        "--method dcfr --out`) for the table player."),
    records: Optional[str] = typer.Option(None, "--records", callback=path_check("output-dir"),
                                          help="Folder for game records "
                                          "(JSON, the `pasur replay` format)."),
    num_records: int = typer.Option(10, "--num-records", min=0, max=100_000,
                                    help="With --records: how many "
                                    "games to write (the first ones)."),
    device: str = typer.Option("cpu", "--device", help="Torch device (cpu, cuda, ...)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch and XGBoost threads "
                                          "(default 1)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Self-play N games of one deal: score difference, win rates, fair value."""
    from tensorcfr.games.pasur.engine.deal_input import choose_deal
    from tensorcfr.games.pasur.selfplay_run import SelfplaySettings, run_selfplay

    try:
        settings = SelfplaySettings(
            deal=choose_deal(deal, deal_file, seed), alex=alex, bob=bob, games=games,
            sample_seed=sample_seed, model=_path(model), table=_path(table), device=device,
            threads=threads, records=_path(records), num_records=num_records,
            determinizations=determinizations, seconds_per_move=seconds_per_move, seed=seed)
        with _progress_bar(settings, not json_out and err_console.is_terminal) as on_progress:
            result = run_selfplay(settings, on_progress=on_progress)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    if json_out:
        print_json(result)
    else:
        _print_result(result)


def train_command(
    runs: list[str] = typer.Argument(..., callback=path_check("input-dir", what="run folder"),
                                     help="DCFR run folders (`pasur solve --method dcfr "
                                     "--out DIR`) to train on: one for a per-deal model, "
                                     "several for one model across decks."),
    out: str = typer.Option(..., "--out", callback=path_check("output-dir"),
                            help="Folder for the model (policy.ubj + "
                            "manifest.json)."),
    games: int = typer.Option(2000, "--games", min=1, max=10_000_000,
                              help="Dag-mode tables: self-play games sampled "
                              "per table to collect positions."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_BASE_SEED,
                             help="Seed of the sampling and of the data split."),
    max_depth: int = typer.Option(12, "--max-depth", min=1, max=64, help="XGBoost max_depth."),
    eta: float = typer.Option(0.3, "--eta", min=1e-6, max=1.0, help="XGBoost learning rate."),
    gamma: float = typer.Option(1.0, "--gamma", min=0, max=1e6,
                                help="XGBoost gamma (min split loss)."),
    rounds: int = typer.Option(1000, "--rounds", min=1, max=100_000,
                               help="Most boosting rounds (early stopping "
                               "after 50 without improvement)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="XGBoost and torch threads "
                                          "(default 1)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Train an XGBoost policy model on strategy tables; held-out RMSE.

    The model predicts 100 * sigma of a play from the 58-column infoset row."""
    from tensorcfr.utils.resources import set_threads

    try:
        n_threads = set_threads(threads)
        if max_depth < 1:
            raise TensorCFRError(f"--max-depth must be at least 1, got {max_depth}")
        if not 0 < eta < float("inf"):
            raise TensorCFRError(f"--eta must be positive and finite, got {eta}")
        if not 0 <= gamma < float("inf"):
            raise TensorCFRError(f"--gamma must be at least 0 and finite, got {gamma}")
        check_int_range(max_depth, "--max-depth", 1, 64)
        from tensorcfr.games.pasur.learning.policy_model import train_policy_model

        show = not json_out and err_console.is_terminal
        with err_console.status("training", spinner="dots") if show else _nothing() as status:
            manifest = train_policy_model(
                runs, out, games=games, seed=seed, rounds=rounds, threads=n_threads,
                params={"max_depth": max_depth, "eta": eta, "gamma": gamma},
                progress=(lambda text: status.update(text)) if show else None)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    result = {"out": out, "deals": len(manifest["deals"]), "rows": manifest["rows"],
              "rmse": manifest["rmse"], "rounds": manifest["rounds"],
              "params": manifest["params"], "seconds": manifest["seconds"],
              "predict_rows_per_second": manifest["predict_rows_per_second"],
              "threads": n_threads}
    if json_out:
        print_json(result)
        return
    rows = manifest["rows"]
    console.print(f"trained on {result['deals']} deal(s): {rows['total']:,} rows "
                  f"({rows['train']:,} train, {rows['validation']:,} early-stopping validation, "
                  f"{rows['test']:,} held-out test)", highlight=False, soft_wrap=True)
    console.print(f"RMSE of 100*sigma: held-out test {manifest['rmse']['test']:.3f}, train "
                  f"{manifest['rmse']['train']:.3f}; {manifest['rounds']} rounds; "
                  f"{manifest['seconds']['train']:.1f} s training, "
                  f"{manifest['seconds']['total']:.1f} s in all, {n_threads} thread(s)",
                  highlight=False, soft_wrap=True)
    console.print(f"wrote {out}/policy.ubj and {out}/manifest.json", highlight=False,
                  soft_wrap=True)


class _nothing:
    """A do-nothing context manager standing in for a status spinner."""

    def __enter__(self) -> "_nothing":
        return self

    def __exit__(self, *args: Any) -> None:
        return None

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


def _model_names(models: list[str]) -> dict[str, str]:
    """``NAME=DIR`` or ``DIR`` (named after the folder) -> {name: folder}."""
    named: dict[str, str] = {}
    for text in models:
        name, sep, folder = text.partition("=")
        if not sep:
            name, folder = Path(text.rstrip("/")).name or text, text
        if not name or not folder:
            raise TensorCFRError(f"--model {text!r}: give DIR or NAME=DIR")
        if name in named or name == "random":
            raise TensorCFRError(f"--model {text!r}: the name {name!r} is taken; use NAME=DIR")
        named[name] = folder
    return named


def evaluate_command(
    deal: Optional[str] = typer.Option(None, "--deal", help="52 card codes, pool first."),
    deal_file: Optional[str] = typer.Option(None, "--deal-file", callback=path_check("input-file"),
                                            help="A file with the deal."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=MAX_SEED,
                                       help="The seeded random deal (as in "
                                       "`pasur solve`)."),
    models: list[str] = typer.Option([], "--model", callback=path_check("input-dir", named=True),
                                     help="Policy model folder (`pasur train "
                                     "--out`), as DIR or NAME=DIR; repeat to compare models."),
    no_random: bool = typer.Option(False, "--no-random", help="Leave out the uniform random "
                                   "baseline."),
    max_memory: str = typer.Option("4G", "--max-memory", help="Largest game tree to build "
                                   "(bytes, or e.g. 4G)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch and XGBoost threads "
                                          "(default 1)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Exact exploitability of policy models on a deal and their loss against exact play.

    Computed on the deal's full game tree (points per game)."""
    from tensorcfr.games.pasur.engine.deal_input import choose_deal
    from tensorcfr.utils.resources import set_threads

    try:
        the_deal = choose_deal(deal, deal_file, seed)
        n_threads = set_threads(threads)
        from tensorcfr.games.pasur.learning.evaluate import evaluate_policies

        show = not json_out and err_console.is_terminal
        with err_console.status("building the game tree and evaluating", spinner="dots") \
                if show else _nothing():
            result = evaluate_policies(the_deal, _model_names(models), max_memory=max_memory,
                                       threads=n_threads, include_random=not no_random)
        result["seed"] = seed
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    if json_out:
        print_json(result)
        return
    from rich.table import Table

    from tensorcfr.games.pasur.engine.cards import cards_str

    console.print(f"deal     {cards_str(result['deal'])}", highlight=False, soft_wrap=True)
    console.print(f"exact value {result['exact_value']:+.0f}; game tree {result['tree_nodes']:,} "
                  f"nodes; points per game, Alex minus Bob", highlight=False, soft_wrap=True)
    table = Table(title_justify="left")
    for col in ("policy", "self", "BR>A", "BR>B", "expl.", "as A", "as B", "loss"):
        table.add_column(col, justify="left" if col == "policy" else "right", no_wrap=True)
    for name, r in result["policies"].items():
        table.add_row(name, f"{r['self_play_value']:+.3f}", f"{r['best_response_to_alex']:+.3f}",
                      f"{r['best_response_to_bob']:+.3f}", f"{r['exploitability']:.3f}",
                      f"{r['vs_exact_as_alex']:+.3f}", f"{r['vs_exact_as_bob']:+.3f}",
                      f"{r['loss_vs_exact']:.3f}")
    console.print(table)
    console.print("self: both follow the policy; BR>A / BR>B: a best response plays against "
                  "Alex / Bob; expl. = BR>B - BR>A; as A / as B: the policy as Alex / Bob "
                  "against the exact player; loss: points lost per game against exact (mean "
                  "of both seats)", highlight=False, soft_wrap=True)
    console.print(f"{result['seconds']:.1f} s, {n_threads} thread(s)", highlight=False)


__all__ = ["evaluate_command", "selfplay_command", "train_command"]
