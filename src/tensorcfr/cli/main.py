"""Entry point: ``tensorcfr``. Sub-commands live in their own modules and are wired here."""

from __future__ import annotations

import sys

import typer

from tensorcfr import __version__
from tensorcfr.cli.common import err_console
from tensorcfr.errors import TensorCFRError

app = typer.Typer(
    name="tensorcfr",
    help="Counterfactual regret minimization as tensor operations: Pasur solved end to end "
    "and a generic CFR engine for OpenSpiel games.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"tensorcfr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """tensorcfr command line."""


def _register() -> None:
    from tensorcfr.cli import bench, generic, pasur

    app.add_typer(pasur.app, name="pasur")
    generic.register(app)
    app.command("bench")(bench.bench_command)


_register()


def main() -> None:
    """Run the CLI; user errors become one red line on stderr and a non-zero exit code."""
    try:
        app()
    except TensorCFRError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("[bold red]interrupted[/]")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
