"""``tensorcfr pasur solve`` (being written)."""

import typer


def solve_command(seed: int = typer.Option(None, "--seed")) -> None:
    """Solve a full-information Pasur deal."""
    raise typer.Exit(3)
