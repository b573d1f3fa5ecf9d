"""Running the ``tensorcfr`` entry point in-process from tests."""

from __future__ import annotations

import sys

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
