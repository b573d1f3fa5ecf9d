"""``tensorcfr pasur tournament``: a duplicate tournament between hidden-hand agents (the run
itself is :func:`tensorcfr.games.pasur.tournament.run_tournament`), and ``tensorcfr pasur
tournament-price``: where each agent of a tournament loses points against open-hands play,
by round and seat (:func:`tensorcfr.games.pasur.tournament_price.run_price_analysis`; also
run by ``pasur tournament --price``), and ``tensorcfr pasur tournament-merge``: one table and
cross table of several tournament folders
(:func:`tensorcfr.games.pasur.tournament_merge.merge_tournaments`).  This module only parses
options and prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import typer

from tensorcfr.cli.common import (MAX_BASE_SEED, MAX_THREADS, console, err_console, fail,
                                  path_check, print_json)
from tensorcfr.errors import TensorCFRError

if TYPE_CHECKING:
    from rich.progress import Progress

    from tensorcfr.games.pasur.tournament import TournamentResult
    from tensorcfr.games.pasur.tournament_price import PriceProgress, PriceResult

INTERRUPTED_EXIT_CODE = 130


def tournament_command(
    agents: str = typer.Option(..., "--agents", help="Comma-separated agent names (at least "
                               "two), e.g. random,exact; every pair plays."),
    deals: Optional[int] = typer.Option(None, "--deals", min=1, max=1_000_000,
                                        help="N seeded random deals "
                                        "(deal i is `pasur deal --seed SEED+i`)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_BASE_SEED,
                             help="Seed of the first deal; the agents of deal i "
                             "are seeded SEED+i."),
    decks: Optional[str] = typer.Option(None, "--decks", callback=path_check("input-file"),
                                        help="A deck file (CSV, one deal per "
                                        "line, as `pasur batch`) instead of seeded deals."),
    deck_range: Optional[str] = typer.Option(None, "--range", help="Rows A-B of --decks "
                                             "(from 0, inclusive)."),
    out: str = typer.Option(..., "--out", callback=path_check("output-dir"),
                            help="Tournament folder (journal, games.parquet, "
                            "summary.parquet, cross_table.png); rerun to resume."),
    workers: int = typer.Option(1, "--workers", min=1, max=1024,
                                help="Ray workers of a local instance."),
    processes: int = typer.Option(0, "--processes", min=0, max=1024,
                                  help="P > 0: play on P local worker processes, without Ray "
                                  "(where Ray is missing or cannot start)."),
    in_process: bool = typer.Option(False, "--in-process", help="Play in this process, one "
                                    "job at a time, without Ray."),
    address: Optional[str] = typer.Option(None, "--address", help="An existing Ray cluster "
                                          "(host:port) instead of a local instance."),
    determinizations: int = typer.Option(32, "--determinizations", min=1, max=10_000,
                                         help="K, draws per move "
                                         "of the determinizing agents."),
    seconds_per_move: Optional[float] = typer.Option(None, "--seconds-per-move",
                                                     min=0.001, max=3600,
                                                     help="Time budget per move of the "
                                                     "agents that have one."),
    simulations: int = typer.Option(1000, "--simulations", min=1, max=10_000_000,
                                    help="ISMCTS simulations per "
                                    "move."),
    model: Optional[str] = typer.Option(None, "--model", callback=path_check("input-dir"),
                                        help="Folder of a hidden-hand policy "
                                        "model (agents that use one)."),
    device: str = typer.Option("cpu", "--device", help="Torch device of the exact solver."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch threads per worker "
                                          "(default 1)."),
    price: bool = typer.Option(False, "--price", help="At the end, replay every game with "
                               "open-hands values: the points each agent loses by round and "
                               "seat (as `pasur tournament-price`)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object (key `pairs`; "
                                  "`price` with --price) instead of text."),
) -> None:
    """Duplicate tournament: every pair of agents plays each deal twice, seats swapped."""
    from tensorcfr.games.pasur.agents import AgentOptions
    from tensorcfr.games.pasur.batch import parse_deck_range
    from tensorcfr.games.pasur.tournament import (
        TournamentProgress,
        TournamentSettings,
        run_tournament,
    )
    from tensorcfr.utils.resources import set_threads

    try:
        n_threads = set_threads(threads)
        settings = TournamentSettings(
            agents=tuple(agents.split(",")), out=Path(out),
            deals=deals, seed=seed, decks=Path(decks) if decks is not None else None,
            deck_range=parse_deck_range(deck_range, "--range") if deck_range else None,
            workers=workers, processes=processes, in_process=in_process, address=address,
            threads=n_threads,
            agent_options=AgentOptions(
                determinizations=determinizations, seconds_per_move=seconds_per_move,
                simulations=simulations, model=Path(model) if model is not None else None,
                device=device, threads=n_threads))
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
            TimeElapsedColumn, TimeRemainingColumn

        from tensorcfr.games.pasur.tournament_price import (price_settings_for,
                                                            run_price_analysis)

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                      TextColumn("ETA"), TimeRemainingColumn(), console=err_console,
                      transient=True, disable=not err_console.is_terminal) as bar:
            task = bar.add_task("games and exact values", total=None, failed=0)

            def on_progress(progress: TournamentProgress) -> None:
                if progress.notice is not None:
                    err_console.print(f"note: {progress.notice}", highlight=False,
                                      soft_wrap=True, markup=False)
                elif progress.row is None:
                    bar.reset(task, total=progress.total, completed=progress.done, failed=0)
                else:
                    bar.update(task, completed=progress.done, failed=progress.failed)

            result = run_tournament(settings, on_progress=on_progress)
            if price:  # then replay its games with open-hands values
                price_result = run_price_analysis(price_settings_for(settings),
                                                  on_progress=price_progress_printer(bar))
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    except KeyboardInterrupt:  # the entry point prints the one `interrupted:` line
        fail(f"every finished game is in {Path(out) / 'games.jsonl'} (and every analysed one "
             f"in {Path(out) / 'price.jsonl'}); run the same command to resume",
             INTERRUPTED_EXIT_CODE)
    if json_out:
        print_json(result.as_dict() | ({"price": price_result.as_dict()} if price else {}))
        return
    _print_pairs(result)
    if price:

        print_price(price_result)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def _print_pairs(result: TournamentResult) -> None:
    from tensorcfr.games.pasur.tournament import CROSS_TABLE, GAMES_TABLE, SUMMARY_TABLE

    console.print(f"duplicate tournament, {result.deals} deals; points per deal, A minus B; "
                  "price of hidden information = the exact open-hands value minus the result, "
                  "from the agent's seat", highlight=False, soft_wrap=True)
    for p in result.pairs:
        if p.mean_diff is None:
            console.print(f"{p.a} vs {p.b}: no deal finished both games "
                          f"({p.failed_games} games failed)", highlight=False, soft_wrap=True)
            continue
        ci = "no interval (one deal)" if p.ci95 is None else \
            f"95% CI [{p.ci95[0]:+.2f}, {p.ci95[1]:+.2f}]"
        console.print(
            f"{p.a} vs {p.b}: {p.mean_diff:+.2f} ({ci}, {p.deals} deals); {p.a} wins "
            f"{p.a_win_rate:.0%}, ties {p.tie_rate:.0%}, {p.b} wins {p.b_win_rate:.0%}; price "
            f"{p.a} {_fmt(p.price[p.a]['mean'])}, {p.b} {_fmt(p.price[p.b]['mean'])}",
            highlight=False, soft_wrap=True)
    failed = sum(p.failed_games for p in result.pairs)
    console.print(f"{result.jobs} jobs (games and exact values): {result.computed} run now, "
                  f"{result.skipped} already done, {result.failed} failed now; {failed} games "
                  f"failed in all; {result.seconds:.1f} s ({result.run['mode']}, "
                  f"{result.run['workers']} worker(s), {result.run['threads']} thread(s) each)",
                  highlight=False, soft_wrap=True)
    console.print(f"wrote {result.out / GAMES_TABLE}, {result.out / SUMMARY_TABLE} and "
                  f"{result.out / CROSS_TABLE}", highlight=False, soft_wrap=True)




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
    _print_by_round(result.agents, result.rows, result.games)
    _print_paired(result.paired)
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


def _print_by_round(agents: Sequence[str], rows: Sequence[dict[str, Any]],
                    games: int) -> None:
    """Per agent (every rival), per seat, the points lost per game in each round and in all,
    then its price; ``rows``: :func:`~tensorcfr.games.pasur.tournament_price.price_by_round`'s."""
    from tensorcfr.games.pasur.engine.rules import NUM_ROUNDS
    from tensorcfr.games.pasur.tournament_price import find_price_row

    console.print(f"points lost against open-hands play, per game, by round (mean ±95% "
                  f"half-interval over deals); price = own loss minus the rival's (= the "
                  f"deal's exact value minus the result, from the seat); {games} games "
                  "analysed", highlight=False, soft_wrap=True)
    rounds = [*range(1, NUM_ROUNDS + 1), None]
    header = "  ".join(f"{'round ' + str(r) if r else 'whole game':>14}" for r in rounds)
    for agent in agents:
        whole = find_price_row(rows, agent, "both", None)
        console.print(f"{agent} ({whole['games']} games, {whole['deals']} deals, every rival)",
                      highlight=False, soft_wrap=True)
        console.print(f"  {'':12}{header}", highlight=False, soft_wrap=True)
        for key, label in (("loss", "loss"), ("price", "price")):
            for seat in ("alex", "bob", "both"):
                cells = "  ".join(f"{_cell(find_price_row(rows, agent, seat, r), key):>14}"
                                  for r in rounds)
                name = f"{label} {seat if seat != 'both' else 'all'}"
                console.print(f"  {name:12}{cells}", highlight=False, soft_wrap=True)


def _interval(row: dict[str, Any]) -> str:
    if row["diff_mean"] is None:
        return "-"
    if row["diff_ci95_low"] is None:
        return f"{row['diff_mean']:+.2f}"
    return f"{row['diff_mean']:+.2f} [{row['diff_ci95_low']:+.2f}, {row['diff_ci95_high']:+.2f}]"


def _print_paired(paired: Sequence[dict[str, Any]]) -> None:
    """Two agents against the same rival, paired by deal: one line per (A, B, rival) that
    shares a deal."""
    groups: dict[tuple[str, str, str], dict[int | None, dict[str, Any]]] = {}
    for row in paired:
        groups.setdefault((row["agent"], row["other"], row["rival"]), {})[row["round"]] = row
    groups = {k: v for k, v in groups.items() if v[None]["deals"]}
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


def tournament_merge_command(
    runs: list[str] = typer.Option(..., "--run", callback=path_check("input-dir",
                                                                     what="tournament folder"),
                                   help="A tournament folder (the --out of `pasur "
                                   "tournament`); repeat for each, the first given wins a "
                                   "deal two folders share."),
    out: Optional[str] = typer.Option(None, "--out", callback=path_check("output-dir"),
                                      help="Folder for the merged summary.parquet, "
                                      "cross_table.png and merge.json (default: print only)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object (key `pairs`) "
                                  "instead of text."),
) -> None:
    """One table of several duplicate tournaments: every pair any of them played, its deals
    pooled where the agents played alike."""
    from tensorcfr.games.pasur.tournament_merge import MergeSettings, merge_tournaments

    try:
        result = merge_tournaments(MergeSettings(
            runs=tuple(Path(r) for r in runs), out=None if out is None else Path(out)))
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    if json_out:
        print_json(result.as_dict())
        return
    n_pairs, n_runs = len(result.pairs), len(result.runs)
    console.print(f"{n_pairs} pair{'' if n_pairs == 1 else 's'} of {len(result.agents)} agents "
                  f"from {n_runs} tournament folder{'' if n_runs == 1 else 's'}; points per "
                  "deal, A minus B (95% interval over deals)", highlight=False, soft_wrap=True)
    for p in result.pairs:
        ci = "no interval" if p.ci95 is None else f"[{p.ci95[0]:+.2f}, {p.ci95[1]:+.2f}]"
        sources = ", ".join(result.sources[(p.a, p.b)])
        console.print(f"{p.a} vs {p.b}: {_fmt(p.mean_diff)} {ci}, {p.deals} deals "
                      f"({sources})", highlight=False, soft_wrap=True)
    if result.priced:
        analysed = sum(result.priced_games.values())
        _print_by_round(result.agents, result.by_round, analysed)
        _print_paired(result.paired)
        unpriced = sum(p.games for p in result.pairs) - analysed
        if unpriced:
            console.print(f"{unpriced} pooled game(s) not analysed (folders without an "
                          f"analysis: {', '.join(result.unpriced_runs) or 'none'}; run `pasur "
                          "tournament-price --run DIR` there)", highlight=False, soft_wrap=True)
    if result.out is not None:
        from tensorcfr.games.pasur.tournament import CROSS_TABLE, SUMMARY_TABLE
        from tensorcfr.games.pasur.tournament_price import (PRICE_BY_ROUND_TABLE,
                                                            PRICE_PAIRED_TABLE)

        written = [result.out / SUMMARY_TABLE, result.out / CROSS_TABLE]
        if result.priced:
            written += [result.out / PRICE_BY_ROUND_TABLE, result.out / PRICE_PAIRED_TABLE]
        console.print(f"wrote {', '.join(map(str, written[:-1]))} and {written[-1]}",
                      highlight=False, soft_wrap=True)


__all__ = ["print_price", "price_progress_printer", "tournament_command",
           "tournament_merge_command", "tournament_price_command"]
