"""Shared CLI helpers: the error printer, JSON output, consoles."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def print_json(obj: Any) -> None:
    """Print one JSON object on one line to stdout (machine-readable output)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = 2) -> None:
    """Print a one-line error to stderr and exit with ``code``."""
    import typer

    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
