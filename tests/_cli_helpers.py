"""Running the ``tensorcfr`` entry point in-process from tests.

A ``tensorcfr`` subprocess pays the interpreter's start and the imports (torch, numpy, the
command modules: about 3 CPU seconds) on every call; these helpers run the same entry point,
:func:`tensorcfr.cli.main.main` (one-line errors, exit codes), in the test's own process. Keep
a real subprocess only where the test is about the process itself (signals, the console
script, the environment): see docs/testing.md.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tensorcfr.cli.main import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Run ``tensorcfr ARGS`` in this process; return (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["tensorcfr", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cli(*args: str | os.PathLike[str], cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``tensorcfr ARGS`` run in-process, returned as ``subprocess.run(..., text=True,
    capture_output=True)`` would return it (``returncode``, ``stdout``, ``stderr``), so a
    test written for a subprocess reads the same. ``sys.argv``, the working directory and
    the SIGINT/SIGTERM handlers that :func:`main` sets are restored afterwards."""
    argv = ["tensorcfr", *map(str, args)]
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        sys.argv = argv
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                if isinstance(exc.code, str):  # as the interpreter does: message, code 1
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        for s, handler in saved_signals.items():
            signal.signal(s, handler)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
