"""``tensorcfr pasur solve``: solve a full-information Pasur deal (exactly, or by DCFR)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import console, err_console, fail, print_json
from tensorcfr.errors import InvalidDealError, TensorCFRError

METHODS = ("exact", "dcfr")
MODES = ("tree", "dag")


def read_deal_file(path: str) -> tuple[int, ...]:
    """A deal from a file: a JSON list of 52 card indices, or 52 card codes as text.

    Raises :class:`InvalidDealError` (one line) for unreadable files and bad deals.
    """
    from tensorcfr.games.pasur.rules import parse_deal, validate_deal

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidDealError(f"cannot read deal file {path}: {reason}") from None
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            cards = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InvalidDealError(
                f"deal file {path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(cards, list):
            raise InvalidDealError(f"deal file {path} must hold a JSON list of 52 card indices")
        try:
            return validate_deal(cards)
        except InvalidDealError as exc:
            raise InvalidDealError(f"deal file {path}: {exc}") from None
    try:
        return parse_deal(stripped)
    except InvalidDealError as exc:
        raise InvalidDealError(f"deal file {path}: {exc}") from None


def choose_deal(deal: str | None, deal_file: str | None, seed: int | None) -> tuple[int, ...]:
    """The deal named by exactly one of ``--deal``, ``--deal-file`` and ``--seed``."""
    from tensorcfr.games.pasur.rules import parse_deal, random_deal

    given = [name for name, v in (("--deal", deal), ("--deal-file", deal_file), ("--seed", seed))
             if v is not None]
    if not given:
        raise TensorCFRError("no deal given: use one of --deal \"Ac As ...\", --deal-file F "
                             "or --seed N")
    if len(given) > 1:
        raise TensorCFRError(f"give only one of --deal, --deal-file or --seed (got "
                             f"{' and '.join(given)})")
    if deal is not None:
        return parse_deal(deal)
    if deal_file is not None:
        return read_deal_file(deal_file)
    assert seed is not None
    return random_deal(seed)


def _check_options(method: str, mode: str, iterations: int, variant: str,
                   alpha: float | None, beta: float | None, gamma: float | None,
                   device: str) -> None:
    """One-line errors for impossible option values (checked for every method)."""
    if method not in METHODS:
        raise TensorCFRError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if mode not in MODES:
        raise TensorCFRError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if iterations < 1:
        raise TensorCFRError(f"--iterations must be at least 1, got {iterations}")
    for label, value in (("--alpha", alpha), ("--beta", beta), ("--gamma", gamma)):
        if value is not None and not math.isfinite(value):
            raise TensorCFRError(f"{label} must be a finite number, got {value}")
    from tensorcfr.core.regret import CFRVariant

    CFRVariant.parse(variant, alpha, beta, gamma)
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise TensorCFRError(f"--device {device!r} is not a torch device (e.g. cpu, cuda)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise TensorCFRError("--device cuda: no CUDA device is available on this machine")


def _print_solution(solution: Any, threads: int) -> None:
    """The text report: deal, value, principal line, sizes, time, memory."""
    from rich.table import Table

    from tensorcfr.games.pasur.cards import card_code, cards_str
    from tensorcfr.games.pasur.rules import describe_deal
    from tensorcfr.utils.resources import format_bytes

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
    per_round = "  ".join(f"{n:,}" for n in solution.states_per_round)
    console.print(f"states per round   {per_round}   (total {solution.num_states:,} with the "
                  f"{solution.states_per_level[-1]:,} end states)", highlight=False, soft_wrap=True)
    console.print(f"time {solution.seconds:.3f} s   peak memory "
                  f"{format_bytes(solution.peak_rss_mb * 2**20)}   threads {threads}   "
                  f"device {solution.device}", highlight=False)


def _run_exact(deal: tuple[int, ...], seed: int | None, json_out: bool, max_memory: int,
               threads: int, device: str, out: str | None) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tensorcfr.games.pasur.exact import NUM_LEVELS, solve_exact
    from tensorcfr.utils.io import write_json_atomic

    if json_out:
        solution = solve_exact(deal, device=device, max_memory=max_memory)
    else:
        with Progress(TextColumn("solving"), BarColumn(), TextColumn("play {task.completed}/48"),
                      TimeElapsedColumn(), console=err_console, transient=True) as bar:
            task = bar.add_task("solve", total=NUM_LEVELS)
            solution = solve_exact(deal, device=device, max_memory=max_memory,
                                   progress=lambda level: bar.update(task, completed=level + 1))
    summary = {"method": "exact", "seed": seed, "threads": threads, **solution.summary()}
    if out is not None:
        folder = Path(out)
        if folder.exists() and not folder.is_dir():
            raise TensorCFRError(f"--out {out} exists and is not a folder")
        write_json_atomic(folder / "exact_solution.json", summary)
        write_json_atomic(folder / "principal_line.json", solution.principal_line)
    if json_out:
        print_json(summary)
        return
    _print_solution(solution, threads)
    if out is not None:
        console.print(f"wrote {Path(out) / 'exact_solution.json'} and "
                      f"{Path(out) / 'principal_line.json'}", highlight=False)


def solve_command(
    deal: Optional[str] = typer.Option(None, "--deal", help="52 card codes, pool first "
                                       "(e.g. \"Ac As 9d Kd 4c ...\")."),
    deal_file: Optional[str] = typer.Option(None, "--deal-file", help="A file with the deal: "
                                            "a JSON list of 52 card indices or 52 card codes."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Solve the seeded random deal."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Memory limit, e.g. 8G "
                                             "(default: what the machine has free now)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Torch threads (default 1)."),
    device: str = typer.Option("cpu", "--device", help="Torch device (cpu, cuda, ...)."),
    method: str = typer.Option("exact", "--method", help="exact (minimax by backward "
                               "induction) or dcfr (round-by-round CFR)."),
    mode: str = typer.Option("dag", "--mode", help="dcfr: tree (the paper's game tree) or dag "
                             "(merged states)."),
    iterations: int = typer.Option(1000, "--iterations", help="dcfr: iterations per round."),
    variant: str = typer.Option("dcfr", "--variant", help="dcfr: cfr, cfr+, lcfr, dcfr, pcfr+."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="dcfr: DCFR alpha (1.5)."),
    beta: Optional[float] = typer.Option(None, "--beta", help="dcfr: DCFR beta (0)."),
    gamma: Optional[float] = typer.Option(None, "--gamma", help="dcfr: DCFR gamma (2)."),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for the result files."),
    convergence: bool = typer.Option(False, "--convergence", help="dcfr: record convergence "
                                     "curves (needs --out)."),
) -> None:
    """Solve a full-information Pasur deal: its value and an optimal game."""
    from tensorcfr.utils.resources import parse_memory, set_threads

    try:
        the_deal = choose_deal(deal, deal_file, seed)
        _check_options(method, mode, iterations, variant, alpha, beta, gamma, device)
        memory_limit = parse_memory(max_memory)
        n_threads = set_threads(threads)
        if method == "dcfr":
            from tensorcfr.cli.pasur_cfr import run_dcfr_solve

            run_dcfr_solve(deal=the_deal, mode=mode, iterations=iterations, variant=variant,
                           alpha=alpha, beta=beta, gamma=gamma, out=out, convergence=convergence,
                           json_out=json_out, max_memory=memory_limit, threads=n_threads,
                           device=device, seed=seed)
            return
        _run_exact(the_deal, seed, json_out, memory_limit, n_threads, device, out)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
