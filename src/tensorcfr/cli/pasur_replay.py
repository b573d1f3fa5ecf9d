"""``tensorcfr pasur replay`` (being written)."""

import typer


def replay_command(files: list[str] = typer.Argument(..., help="Game record files.")) -> None:
    """Check game records against the rules and print their scores."""
    raise typer.Exit(3)
