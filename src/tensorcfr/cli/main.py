"""Entry point: ``tensorcfr``. Sub-commands live in their own modules and are wired here.

This module is the CLI's registry: the only one that imports the command modules (each of
them imports no other CLI module but :mod:`.common`; ``tests/test_cli_imports.py``). A new
command is a function in its module and one line in :func:`_register`.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, NoReturn

import typer
from typer.core import TyperGroup

from tensorcfr import __version__
from tensorcfr.cli.common import (install_stop_signals, print_error, range_error_line,
                                  refuse_empty_text)
from tensorcfr.errors import InterruptedRun, TensorCFRError


class _OneLineErrorsGroup(TyperGroup):
    """The root command: also when it is called as click calls it (``standalone_mode``, e.g.
    typer's ``CliRunner``), errors are the one line of :func:`main`, not typer's box."""

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        def run() -> Any:
            return super(_OneLineErrorsGroup, self).main(
                args, prog_name, complete_var, standalone_mode=False, **extra)

        if not standalone_mode:
            return run()
        _run_with_one_line_errors(run)


app = typer.Typer(
    cls=_OneLineErrorsGroup,
    name="tensorcfr",
    help="Counterfactual regret minimization as tensor operations: Pasur solved end to end "
    "(exact solver, the paper's tensor CFR, hidden-hand agents, play against the AI), a generic "
    "CFR engine for OpenSpiel games, and Numeral211 Hold'em solved in full with its abstractions "
    "and Embedding CFR measured exactly.",
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
    """Wire every command into the root app and its sub-apps (``pasur``, ``numeral211``), in
    the order ``--help`` lists them."""
    from tensorcfr.cli import (bench, generic, generic_exploitability, numeral211,
                               numeral211_abstract, numeral211_solve, pasur, pasur_batch,
                               pasur_cfr, pasur_exploitability, pasur_hidden, pasur_play,
                               pasur_replay, pasur_round_value, pasur_selfplay, pasur_solve,
                               pasur_tournament)

    pasur_commands = {
        "replay": pasur_replay.replay_command,
        "solve": pasur_solve.solve_command,
        "exploitability": pasur_cfr.exploitability_command,
        "serve": pasur_play.serve_command,
        "play": pasur_play.play_command,
        "selfplay": pasur_selfplay.selfplay_command,
        "train": pasur_selfplay.train_command,
        "evaluate": pasur_selfplay.evaluate_command,
        "batch": pasur_batch.batch_command,
        "analyze": pasur_batch.analyze_command,
        "tournament": pasur_tournament.tournament_command,
        "tournament-price": pasur_tournament.tournament_price_command,
        "tournament-merge": pasur_tournament.tournament_merge_command,
        "agent-exploitability": pasur_exploitability.agent_exploitability_command,
        "train-hidden": pasur_hidden.train_hidden_command,
        "train-round-value": pasur_round_value.train_round_value_command,
    }
    for name, command in pasur_commands.items():
        pasur.app.command(name)(command)
    numeral211_solve.register(numeral211.app)  # info, solve, exploitability
    numeral211_abstract.register(numeral211.app)  # abstract

    app.add_typer(pasur.app, name="pasur")
    app.add_typer(numeral211.app, name="numeral211")
    generic.register(app)  # solve
    generic_exploitability.register(app)  # exploitability
    app.command("bench")(bench.bench_command)
    refuse_empty_text(app)  # every text option: '' is refused, not read as "not given"


_register()


def usage_error_line(exc: Exception) -> str:
    """One line for a click/typer usage error (bad option value, unknown option, missing
    argument), e.g. ``Invalid value for '--iterations' / '-n': '1e3' is not a valid integer;
    see `tensorcfr solve --help```."""
    message = range_error_line(exc) or " ".join(
        str(exc.format_message()).split()).rstrip(".")  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "tensorcfr"
    return f"{message}; see `{path} --help`"


def _run_with_one_line_errors(run: Callable[[], Any]) -> NoReturn:
    """Run ``run`` (the command line, click's non-standalone mode) and exit: user errors
    become one red ``error:`` line on stderr and a non-zero exit code.

    Usage errors that typer would print as a multi-line box (``-n 1e3``, ``--seed abc``,
    unknown options, a number outside its option's range) are one line too, with exit code 2;
    so are the errors of the checks run while the command line is parsed (path options)."""
    try:  # typer >= 0.2x vendors click as typer._click; older versions use click itself
        from typer._click import exceptions as click_exceptions
    except ImportError:  # pragma: no cover - older typer
        from click import exceptions as click_exceptions  # type: ignore[no-redef]
    no_args_is_help = getattr(click_exceptions, "NoArgsIsHelpError", ())

    try:
        code = run()
        if isinstance(code, int) and not isinstance(code, bool) and code:
            if code == 130:  # typer turns a KeyboardInterrupt into Exit(130), silently
                print_error("stopped by SIGINT or SIGTERM", "interrupted")
            sys.exit(code)
    except no_args_is_help as exc:  # type: ignore[misc]
        exc.show()
        sys.exit(exc.exit_code)
    except click_exceptions.ClickException as exc:
        print_error(usage_error_line(exc))
        sys.exit(exc.exit_code)
    except InterruptedRun as exc:
        print_error(str(exc), "interrupted")
        sys.exit(exc.exit_code)
    except TensorCFRError as exc:
        print_error(str(exc))
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):  # click turns Ctrl-C into Abort
        print_error("stopped by SIGINT or SIGTERM", "interrupted")
        sys.exit(130)
    sys.exit(0)


def main() -> None:
    """Run the CLI (the ``tensorcfr`` entry point); see :func:`_run_with_one_line_errors`."""
    install_stop_signals()
    try:
        _run_with_one_line_errors(lambda: app(standalone_mode=False))
    finally:
        _ignore_late_signals()


def _ignore_late_signals() -> None:
    """The command is over (its output or its one line is printed): a SIGINT or SIGTERM while
    the interpreter exits (a second Ctrl-C, one a server re-raises as it stops) is ignored, so
    no finalizer prints a KeyboardInterrupt traceback and the exit code stays the command's."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, lambda signum, frame: None)


if __name__ == "__main__":  # pragma: no cover
    main()
