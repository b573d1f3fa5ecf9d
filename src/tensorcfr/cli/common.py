"""Shared CLI helpers: the error printer (verbatim text, one line), JSON output, consoles,
and the stop signals (SIGINT and SIGTERM always stop a command, which says "interrupted")."""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any, NoReturn

from rich.console import Console
from rich.text import Text

console = Console()
err_console = Console(stderr=True)


def print_json(obj: Any) -> None:
    """Print one JSON object on one line to stdout (machine-readable output)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def print_error(message: str, label: str = "error") -> None:
    """Print ``label: message`` on stderr, the message verbatim (no rich markup, so square
    brackets and backslashes in it survive), on one line."""
    line = " ".join(str(message).split())
    err_console.print(Text(f"{label}:", style="bold red") + Text(f" {line}"),
                      highlight=False, soft_wrap=True, markup=False)


def warn(message: str) -> None:
    """Print a one-line ``warning: ...`` on stderr (verbatim)."""
    print_error(message, "warning")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error to stderr and exit with ``code``."""
    import typer

    if code == 130:  # an interrupted run: the entry point says so (once)
        from tensorcfr.errors import InterruptedRun

        raise InterruptedRun(message)
    print_error(message)
    raise typer.Exit(code)


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def install_stop_signals() -> None:
    """Make SIGINT and SIGTERM raise :class:`KeyboardInterrupt` in the main thread.

    Python leaves SIGINT ignored when it started ignored (a background job of a shell) and
    SIGTERM kills without cleanup; with this both stop a command the same way, so that long
    runs write their checkpoint and every command says "interrupted". Outside the main
    thread (where handlers cannot be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
