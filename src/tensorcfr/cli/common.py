"""Shared CLI helpers: the error printer (verbatim text, one line), JSON output, consoles,
the stop signals (SIGINT and SIGTERM always stop a command, which says "interrupted"), and
the checks every option goes through when the command line is parsed: the declared range of
a number option (:func:`range_error_line` words its refusal) and :class:`PathCheck` for
path options (outputs never over a device, a FIFO or another output; inputs that exist and
are regular files or folders)."""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
from typing import Any, Literal, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from tensorcfr.utils.checks import MAX_SEED

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
    from tensorcfr.utils.interrupts import Terminated

    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


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


# ----------------------------------------------------------------------------- option checks
# Every number option declares its valid range with typer's ``min=``/``max=`` (checked when
# the command line is parsed: an absurd, negative, NaN or infinite value never reaches the
# command; tests/test_cli_generated.py reads the range to generate the bad values).
MAX_BASE_SEED = MAX_SEED - 2**32
"""Largest first seed of options that seed item ``i`` with ``SEED + i`` (deals, games)."""
MAX_THREADS = 1024
"""Most threads a ``--threads`` option takes."""

def dcfr_option(name: Literal["alpha", "beta", "gamma"], prefix: str = "") -> Any:
    """The ``--alpha`` / ``--beta`` / ``--gamma`` option of a DCFR run (None: the default of
    :class:`~tensorcfr.core.regret.CFRVariant`, named in the help), with the bounds every
    command that takes it shares: alpha and beta in [-1000, 1000], gamma in [0, 1000].
    ``prefix`` starts the help text (e.g. ``"dcfr: "``)."""
    from tensorcfr.core.regret import CFRVariant

    default = getattr(CFRVariant("dcfr"), name)
    what = "DCFR / PCFR+ gamma, the averaging exponent" if name == "gamma" else f"DCFR {name}"
    return typer.Option(None, f"--{name}", min=0 if name == "gamma" else -1000, max=1000,
                        help=f"{prefix}{what} (default {default:g}).")


PathRole = Literal["output-file", "output-dir", "input-file", "input-dir", "input-path"]
"""What a path option names: a file or folder the command writes, or one it reads
(``input-path``: a file or a folder)."""

_OUTPUTS_KEY = "tensorcfr.outputs"


def option_name(param: Any) -> str:
    """How the user spells a parameter: ``--out`` for an option, ``FOLDER`` for an
    argument."""
    opts = getattr(param, "opts", None) or []
    longs = [o for o in opts if o.startswith("--")]
    if getattr(param, "param_type_name", "") == "option" and (longs or opts):
        return (longs or opts)[0]
    return str(getattr(param, "human_readable_name", None) or param.name).upper()


class PathCheck:
    """Callback of a path option (``typer.Option(..., callback=path_check("output-file"))``):
    checks every path given as soon as the command line is parsed, before any work, with the
    central checks of :mod:`tensorcfr.utils.io`:

    - outputs: not empty, not an existing device, FIFO or socket (never replaced), not a
      folder for a file and not a file for a folder, in a folder where a file can be created,
      and no two output options of one command naming the same path;
    - inputs: not empty, existing, a regular file (``input-file``) or a folder
      (``input-dir``) or either (``input-path``); never a FIFO or a device (a read would
      block or never end).

    ``keep`` lists words that are not paths (``seeds`` for a deck file); with ``named`` a
    value ``NAME=PATH`` is checked as ``PATH``; ``what`` names an argument's path in messages
    (``run folder x does not exist`` rather than ``RUNS x ...``); with ``per_file`` (a
    command that reports each of several inputs, as ``pasur replay``) a missing file or a
    folder is left to the command and only what would block or never end (a FIFO, a device)
    and empty paths are refused here. The role is read by
    the generated command-tree test (``tests/test_cli_generated.py``) to choose bad paths.
    Errors are :class:`~tensorcfr.errors.TensorCFRError` (one ``error:`` line, exit 2).
    """

    def __init__(self, role: PathRole, *, keep: tuple[str, ...] = (), named: bool = False,
                 what: str = "", per_file: bool = False) -> None:
        self.role: PathRole = role
        self.keep = keep
        self.named = named
        self.what = what
        self.per_file = per_file

    def __repr__(self) -> str:
        return f"PathCheck({self.role!r})"

    def check(self, value: Any, option: str) -> None:
        """Check one path ``value`` of ``option`` (raises ``TensorCFRError``)."""
        from tensorcfr.utils import io

        if self.role == "output-file":
            io.check_output_file(value, option)
        elif self.role == "output-dir":
            io.check_output_dir(value, option)
        elif self.role == "input-file" and self.per_file:
            target = io.check_path_text(value, option)
            kind = io.file_kind(target)
            if kind is not None:
                from tensorcfr.errors import TensorCFRError

                raise TensorCFRError(f"{option} {target} is {kind}, not a regular file")
        elif self.role == "input-file":
            io.check_input_file(value, option)
        elif self.role == "input-dir":
            io.check_input_dir(value, option)
        else:
            target = io.check_path_text(value, option)
            if not target.is_dir():
                io.check_input_file(target, option)

    def callback(self, ctx: Any, param: Any, value: Any) -> Any:
        """Check ``value`` (one path or a list) of ``param``; return it unchanged. A refusal
        is printed as one ``error:`` line and exits with code 2 (:func:`fail`), so it reads
        the same however the command is run (the entry point, ``CliRunner``, a test app)."""
        from tensorcfr.errors import TensorCFRError

        try:
            return self._check_all(ctx, param, value)
        except TensorCFRError as exc:
            fail(str(exc), exc.exit_code)

    def _check_all(self, ctx: Any, param: Any, value: Any) -> Any:
        if value is None:
            return value
        from tensorcfr.errors import TensorCFRError
        from tensorcfr.utils import io

        option = option_name(param)
        if self.what and getattr(param, "param_type_name", "") == "argument":
            option = self.what
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, str) and item in self.keep:
                continue
            if self.named and isinstance(item, str) and "=" in item:
                item = item.split("=", 1)[1]
            self.check(item, option)
            if self.role.startswith("output"):
                seen: dict[str, Any] = ctx.meta.setdefault(_OUTPUTS_KEY, {})
                for other, other_path in seen.items():
                    if other != option and io.same_path(item, other_path):
                        raise TensorCFRError(f"{option} {item} is also given as {other}; give "
                                             "each output its own path")
                seen[option] = item
        return value


def range_error_line(exc: Any) -> str | None:
    """The one-line refusal of a number option outside its declared ``min=``/``max=``
    (``--games must be between 1 and 10,000,000, got 0``, the wording of
    :func:`~tensorcfr.utils.checks.check_int_range`), or ``None`` when ``exc`` is not
    such a refusal (a value that is no number keeps click's own message)."""
    param = getattr(exc, "param", None)
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    cause = getattr(exc, "__cause__", None)
    if param is None or (low is None and high is None) or not hasattr(cause, "errors"):
        return None
    try:
        error = cause.errors()[0]
    except (IndexError, TypeError, AttributeError):
        return None
    if not str(error.get("type", "")).endswith(("greater_than_equal", "less_than_equal")):
        return None
    value = error.get("input")
    name = option_name(param)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    span = (f"between {_number(low)} and {_number(high)}" if low is not None
            and high is not None else f"at least {_number(low)}" if low is not None
            else f"at most {_number(high)}")
    if not math.isfinite(number):
        return f"{name} must be a finite number {span}, got {_number(value)}"
    return f"{name} must be {span}, got {_number(value)}"


def _number(value: Any) -> str:
    """``1,000,000`` for whole numbers, ``0.001`` / ``1e-06`` for others, text as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def path_check(role: PathRole, *, keep: tuple[str, ...] = (), named: bool = False,
               what: str = "", per_file: bool = False) -> Any:
    """The typer ``callback=`` of a path option: a function running :class:`PathCheck`
    (which it carries as ``.path_check``, read by the generated command-tree test)."""
    checker = PathCheck(role, keep=keep, named=named, what=what, per_file=per_file)

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        return checker.callback(ctx, param, value)

    callback.path_check = checker  # type: ignore[attr-defined]
    return callback


_TEXT_ANNOTATIONS = {"str", "Optional[str]", "str|None", "list[str]", "Optional[list[str]]",
                     "list[str]|None"}


def _is_text(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(
        annotation, "__name__", None) if annotation is str else repr(annotation)
    text = str(text).replace(" ", "").replace("typing.", "")
    return text in _TEXT_ANNOTATIONS


def _nonempty_text(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """Refuse an empty (or blank) text value of ``param`` in one line (exit code 2)."""
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str) and not item.strip():
            fail(f"{option_name(param)}: the value is empty")
    return value


def refuse_empty_text(app: typer.Typer) -> None:
    """Give every text option and argument of ``app``'s commands (sub-apps included) that
    has no callback of its own a check that refuses an empty value (``--device ''``,
    ``--agents ''``), so that no command reads ``''`` as "not given" or as the current
    folder. Path options have :func:`path_check`, which refuses empty paths itself. Called
    once by the entry point after the commands are wired, so a new option is covered
    without being listed."""
    import inspect

    from typer.models import ParameterInfo

    for info in app.registered_commands:
        if info.callback is None:
            continue
        for param in inspect.signature(info.callback).parameters.values():
            default = param.default
            if isinstance(default, ParameterInfo) and default.callback is None \
                    and _is_text(param.annotation):
                default.callback = _nonempty_text
    for group in app.registered_groups:
        if group.typer_instance is not None:
            refuse_empty_text(group.typer_instance)
