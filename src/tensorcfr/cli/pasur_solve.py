"""``tensorcfr pasur solve``: solve a full-information Pasur deal (exactly, by the
double-dummy search, or by DCFR)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import (MAX_SEED, MAX_THREADS, console, dcfr_option, err_console, fail,
                                  path_check, print_json)
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.vocab import GraphMode

METHODS = ("exact", "double-dummy", "dcfr")


DCFR_DEFAULTS = {"mode": "dag", "iterations": 1000, "variant": "dcfr"}
"""Defaults of the options that only ``--method dcfr`` reads."""


def _check_options(method: str, mode: str | None, iterations: int | None, variant: str | None,
                   alpha: float | None, beta: float | None, gamma: float | None,
                   device: str, convergence: bool = False) -> None:
    """One-line errors for impossible option values (checked for every method), and for
    DCFR-only options given with ``--method exact`` (which would silently ignore them)."""
    if method not in METHODS:
        raise TensorCFRError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if method != "dcfr":
        given = [name for name, value in (("--mode", mode), ("--iterations", iterations),
                                          ("--variant", variant), ("--alpha", alpha),
                                          ("--beta", beta), ("--gamma", gamma))
                 if value is not None]
        if convergence:
            given.append("--convergence")
        if given:
            raise TensorCFRError(f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'}"
                                 f" to --method dcfr; the {method} solver has no iterations, "
                                 "mode or variant (add --method dcfr, or drop "
                                 f"{'it' if len(given) == 1 else 'them'})")
    mode = DCFR_DEFAULTS["mode"] if mode is None else mode
    iterations = DCFR_DEFAULTS["iterations"] if iterations is None else iterations
    variant = DCFR_DEFAULTS["variant"] if variant is None else variant
    GraphMode.parse(mode, "--mode")  # refused before the folder is checked and the deal solved
    if iterations < 1:
        raise TensorCFRError(f"--iterations must be at least 1, got {iterations}")
    for label, value in (("--alpha", alpha), ("--beta", beta), ("--gamma", gamma)):
        if value is not None and not math.isfinite(value):
            raise TensorCFRError(f"{label} must be a finite number, got {value}")
    from tensorcfr.core.regret import VARIANT_NAMES, CFRVariant

    try:
        CFRVariant.parse(variant, alpha, beta, gamma)
    except TensorCFRError as exc:
        if "unknown CFR algorithm" in str(exc):
            raise TensorCFRError(f"--variant {variant!r} is not a CFR variant: choose one of "
                                 f"{', '.join(VARIANT_NAMES)}") from None
        raise
    from tensorcfr.utils.device import resolve_device

    resolve_device(device, "--device")


def _print_solution(solution: Any, threads: int) -> None:
    """The text report of the exact solver: deal, value, principal line, sizes, time,
    memory."""
    from tensorcfr.utils.resources import format_bytes

    _print_line(solution)
    per_round = "  ".join(f"{n:,}" for n in solution.states_per_round)
    console.print(f"states per round   {per_round}   (total {solution.num_states:,} with the "
                  f"{solution.states_per_level[-1]:,} end states)", highlight=False, soft_wrap=True)
    console.print(f"time {solution.seconds:.3f} s   peak memory "
                  f"{format_bytes(solution.peak_rss_mb * 2**20)}   threads {threads}   "
                  f"device {solution.device}", highlight=False)


def _print_double_dummy(solution: Any, load_seconds: float) -> None:
    """The text report of the double-dummy search: deal, value, principal line, the
    positions it searched, time (the kernel's load apart), memory."""
    from tensorcfr.utils.resources import format_bytes

    _print_line(solution)
    console.print(f"positions searched {solution.positions_searched:,} over the line "
                  f"({solution.searches:,} zero-window searches; the exact solver's state "
                  "counts: --method exact)", highlight=False, soft_wrap=True)
    console.print(f"time {solution.seconds:.3f} s (and {load_seconds:.1f} s to load the "
                  f"compiled search first)   peak memory "
                  f"{format_bytes(solution.peak_rss_mb * 2**20)}   threads 1   device cpu",
                  highlight=False, soft_wrap=True)


def _print_line(solution: Any) -> None:
    """Deal, value and the principal line's table (``solution``: either solver's)."""
    from rich.table import Table

    from tensorcfr.games.pasur.engine.cards import card_code, cards_str
    from tensorcfr.games.pasur.engine.rules import describe_deal

    console.print(f"deal     {cards_str(solution.deal)}", highlight=False, soft_wrap=True)
    for line in describe_deal(solution.deal):
        console.print(f"  {line}", highlight=False)
    console.print(f"[bold]value[/] (Alex's points minus Bob's, optimal play by both): "
                  f"[bold]{solution.value:+d}[/]", highlight=False)
    table = Table(title="principal line (an optimal game)", title_justify="left",
                  caption="plays are numbered from 0, as in game records", caption_justify="left")
    for name, justify in (("#", "right"), ("player", "left"), ("card", "left"),
                          ("captured", "left"), ("pts", "right"), ("Alex", "right"),
                          ("Bob", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in solution.principal_rows:
        if row["play"] is None:  # end-of-game cleanup
            table.add_row("end", row["player"], "", "pool " + cards_str(row["captured"]),
                          f"{row['points']}", str(row["alex"]), str(row["bob"]))
            continue
        captured = cards_str(row["captured"]) if row["captured"] else "(laid)"
        table.add_row(str(row["play"]), row["player"], card_code(row["card"]), captured,
                      str(row["points"]) if row["points"] else "", str(row["alex"]),
                      str(row["bob"]))
    console.print(table)


def _run_exact(deal: tuple[int, ...], seed: int | None, json_out: bool, max_memory: int,
               threads: int, device: str, out: str | None) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tensorcfr.games.pasur.solving.exact import NUM_LEVELS, solve_exact

    if json_out or not err_console.is_terminal:  # no bar (nor its blank line) in logs
        solution = solve_exact(deal, device=device, max_memory=max_memory)
    else:
        with Progress(TextColumn("solving"), BarColumn(), TextColumn("play {task.completed}/48"),
                      TimeElapsedColumn(), console=err_console, transient=True) as bar:
            task = bar.add_task("solve", total=NUM_LEVELS)
            solution = solve_exact(deal, device=device, max_memory=max_memory,
                                   progress=lambda level: bar.update(task, completed=level + 1))
    summary = {"method": "exact", "seed": seed, "threads": threads, **solution.summary()}
    _save_and_report(summary, "exact_solution.json", solution.principal_line, json_out, out,
                     lambda: _print_solution(solution, threads))


def _save_and_report(summary: dict[str, Any], summary_file: str,
                     principal_line: dict[str, Any], json_out: bool, out: str | None,
                     print_text: Any) -> None:
    """A solve's files in ``--out`` (``summary_file`` and ``principal_line.json``, each
    atomically), then the JSON object, or ``print_text()`` and the files written."""
    from tensorcfr.utils.io import write_json_atomic

    if out is not None:
        write_json_atomic(Path(out) / summary_file, summary)
        write_json_atomic(Path(out) / "principal_line.json", principal_line)
    if json_out:
        print_json(summary)
        return
    print_text()
    if out is not None:
        console.print(f"wrote {Path(out) / summary_file} and "
                      f"{Path(out) / 'principal_line.json'}", highlight=False)


def _run_double_dummy(deal: tuple[int, ...], seed: int | None, json_out: bool,
                      out: str | None) -> None:
    """``--method double-dummy``: the value and the principal line by the search
    (:func:`double_dummy.solve_double_dummy`), its summary in ``--out``."""
    from tensorcfr.games.pasur.solving.double_dummy import compile_kernels, solve_double_dummy

    load_seconds = compile_kernels()  # numba's import and cached code: apart from the solve
    solution = solve_double_dummy(deal)
    summary = {"method": "double-dummy", "seed": seed, "threads": 1, **solution.summary(),
               "kernel_load_seconds": load_seconds}
    _save_and_report(summary, "double_dummy_solution.json", solution.principal_line, json_out,
                     out, lambda: _print_double_dummy(solution, load_seconds))


def _run_dcfr(settings: Any, json_out: bool) -> None:
    """``--method dcfr``: the library run (:func:`dcfr_run.run_dcfr`) under a progress bar
    per round (on a terminal), then the JSON object or the text summary."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
        TimeElapsedColumn

    from tensorcfr.games.pasur.solving import dcfr_run

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not err_console.is_terminal) as bar:
        tasks: dict[int, Any] = {}

        def on_progress(event: Any) -> None:
            if event.event == "built":
                for index in reversed(range(len(event.nodes_per_round))):
                    tasks[index] = bar.add_task(
                        f"round {index + 1} ({event.nodes_per_round[index]:,} nodes)",
                        total=event.iterations)
            else:
                bar.update(tasks[event.round_index], completed=event.done)

        result = dcfr_run.run_dcfr(settings, on_progress=on_progress)
    if json_out:
        print_json(result)
    else:
        _print_dcfr_summary(result)


def _print_dcfr_summary(result: dict[str, Any]) -> None:
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


def solve_command(
    deal: Optional[str] = typer.Option(None, "--deal", help="52 card codes, pool first "
                                       "(e.g. \"Ac As 9d Kd 4c ...\")."),
    deal_file: Optional[str] = typer.Option(None, "--deal-file", callback=path_check("input-file"),
                                            help="A file with the deal: "
                                            "a JSON list of 52 card indices or card codes, or "
                                            "52 card codes as text."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=MAX_SEED,
                                       help="Solve the seeded random deal."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Memory limit, e.g. 8G "
                                             "(default: what the machine has free now)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch threads (default 1)."),
    device: str = typer.Option("cpu", "--device", help="Torch device (cpu, cuda, ...)."),
    method: str = typer.Option("exact", "--method", help="exact (minimax by backward "
                               "induction; counts every merged state), double-dummy (the "
                               "same value and optimal game by alpha-beta search: tens of "
                               "milliseconds, after about a second to load the compiled "
                               "search) or dcfr (round-by-round CFR)."),
    mode: Optional[str] = typer.Option(None, "--mode", help="dcfr: tree (the paper's game "
                                       "tree) or dag (merged states; the default)."),
    iterations: Optional[int] = typer.Option(None, "--iterations", min=1, max=1_000_000,
                                             help="dcfr: iterations per round, each "
                                             "round's subgame solved this many times; a "
                                             "rerun with the same --out keeps its finished "
                                             "rounds (default 1000)."),
    variant: Optional[str] = typer.Option(None, "--variant", help="dcfr: cfr, cfr+, lcfr, "
                                          "dcfr (the default), pcfr+."),
    alpha: Optional[float] = dcfr_option("alpha", "dcfr: "),
    beta: Optional[float] = dcfr_option("beta", "dcfr: "),
    gamma: Optional[float] = dcfr_option("gamma", "dcfr: "),
    out: Optional[str] = typer.Option(None, "--out", callback=path_check("output-dir"),
                                      help="Folder for the result files."),
    convergence: bool = typer.Option(False, "--convergence", help="dcfr: record convergence "
                                     "curves (needs --out)."),
) -> None:
    """Solve a full-information Pasur deal: its value and an optimal game."""
    from tensorcfr.games.pasur.engine.deal_input import choose_deal
    from tensorcfr.utils.resources import parse_memory, set_threads

    try:
        the_deal = choose_deal(deal, deal_file, seed)
        _check_options(method, mode, iterations, variant, alpha, beta, gamma, device,
                       convergence)
        if out is not None:
            from tensorcfr.utils.io import check_output_dir

            check_output_dir(out, "--out")  # before the solve, not after it
        memory_limit = parse_memory(max_memory)
        n_threads = set_threads(threads)
        if method == "dcfr":
            from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, \
                stop_after_rounds_from_env

            settings = DcfrSettings(
                deal=the_deal, mode=mode or DCFR_DEFAULTS["mode"],
                iterations=iterations or DCFR_DEFAULTS["iterations"],
                variant=variant or DCFR_DEFAULTS["variant"], alpha=alpha, beta=beta,
                gamma=gamma, out=Path(out) if out is not None else None,
                convergence=convergence, max_memory=memory_limit, threads=n_threads,
                device=device, seed=seed, command=tuple(sys.argv),
                stop_after_rounds=stop_after_rounds_from_env())
            _run_dcfr(settings, json_out)
            return
        if method == "double-dummy":
            _run_double_dummy(the_deal, seed, json_out, out)
            return
        _run_exact(the_deal, seed, json_out, memory_limit, n_threads, device, out)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
