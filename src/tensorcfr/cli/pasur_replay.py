"""``tensorcfr pasur replay FILE... [--json]``: check game records against the rules.

Each file is loaded as a game record (:mod:`tensorcfr.games.pasur.engine.records`), every play is
checked against the rules, and the final score is printed with its breakdown. Files are
processed in the order given and one bad file does not stop the others.

Exit code: 0 if every record is valid and legal, 1 if some record holds an illegal play,
2 if some file is missing or is not a valid record (the worst code wins: 2 > 1 > 0).

With ``--json``, stdout holds exactly one JSON object per file, one per line, in order:
``file``, ``legal``, ``alex_points``, ``bob_points``, ``utility``, ``breakdown``
(``{"alex": {...}, "bob": {...}}``), and ``illegal_play`` (``number``, ``player``, ``reason``)
for an illegal record; a file that cannot be read as a record gets ``{"file", "error"}``.
Errors are also printed on one line to stderr.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from tensorcfr.cli.common import console, err_console, path_check, print_json
from tensorcfr.errors import TensorCFRError

EXIT_OK, EXIT_ILLEGAL, EXIT_INVALID = 0, 1, 2

# (breakdown key, row label) of the score table, in display order.
_ROWS = (
    ("clubs", "clubs (count)"),
    ("clubs_bonus", "clubs bonus (7+ clubs)"),
    ("aces", "aces"),
    ("jacks", "jacks"),
    ("ten_of_diamonds", "10 of diamonds"),
    ("two_of_clubs", "2 of clubs"),
    ("sur_points", "Surs"),
)


def _score_table(breakdown: dict[str, dict[str, int]]) -> Table:
    """A rich table: one row per scoring item, one column per player (points unless noted)."""
    table = Table(show_lines=False)
    table.add_column("")
    table.add_column("Alex", justify="right")
    table.add_column("Bob", justify="right")
    alex, bob = breakdown["alex"], breakdown["bob"]
    for key, label in _ROWS:
        if key == "sur_points":
            table.add_row(label, f"{alex['sur_points']} ({alex['surs']}x5)",
                          f"{bob['sur_points']} ({bob['surs']}x5)")
        else:
            table.add_row(label, str(alex[key]), str(bob[key]))
    table.add_section()
    table.add_row("[bold]total[/]", f"[bold]{alex['total']}[/]", f"[bold]{bob['total']}[/]")
    return table


def _error_line(message: str, prefix: str = "error") -> None:
    """One red line on stderr (never wrapped); ``message`` is rich markup (escape user text)."""
    err_console.print(f"[bold red]{prefix}:[/] {message}", highlight=False, soft_wrap=True)


def _replay_one(path: str) -> tuple[int, dict[str, Any]]:
    """Load and replay one file; returns (exit code for it, its JSON object)."""
    from tensorcfr.games.pasur.engine.records import load_record, replay_record

    try:
        record = load_record(path)
    except TensorCFRError as exc:
        return EXIT_INVALID, {"file": path, "error": str(exc)}
    result = replay_record(record)
    obj: dict[str, Any] = {"file": path, **result.as_dict()}
    return (EXIT_OK if result.legal else EXIT_ILLEGAL), obj


def replay_command(
    files: list[str] = typer.Argument(..., callback=path_check("input-file", what="record file",
                                                               per_file=True),
                                      help="Game record files (JSON: deal + 48 plays).",
                                      show_default=False),
    json_out: bool = typer.Option(False, "--json",
                                  help="Print one JSON object per file (one per line)."),
) -> None:
    """Check every play of game records against the rules and print the final scores.

    Exit code 0: all legal; 1: an illegal play; 2: a missing or invalid record file.
    """
    from rich.markup import escape

    worst = EXIT_OK
    for path in files:
        code, obj = _replay_one(path)
        worst = max(worst, code)
        if "error" in obj:
            _error_line(f"{escape(path)}: {escape(obj['error'])}")
            if json_out:
                print_json(obj)
            continue
        if json_out:
            print_json(obj)
        illegal = obj.get("illegal_play")
        if illegal is not None:
            _error_line(f"{escape(path)}: {escape(illegal['message'])}", prefix="illegal")
            continue
        if not json_out:
            # The heading is its own line (never wrapped, so the file name stays whole).
            console.print(f"[bold]{escape(path)}[/]: legal, Alex {obj['alex_points']} - "
                          f"Bob {obj['bob_points']} (Alex {obj['utility']:+d})",
                          highlight=False, soft_wrap=True)
            console.print(_score_table(obj["breakdown"]), highlight=False)
    if worst != EXIT_OK:
        raise typer.Exit(worst)
