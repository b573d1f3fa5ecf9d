"""Benchmark our tensor CFR against OpenSpiel's C++, Python and JAX CFR solvers.

Same as ``tensorcfr bench --out-dir docs/benchmarks --max-worker-memory <RAM/2>
--max-setup-seconds 1800`` (all options of ``tensorcfr bench`` apply and override these):
writes docs/benchmarks/openspiel.md, openspiel_results.json and
openspiel_time_vs_size.png.  The full default run takes tens of minutes; run it in the
background, e.g. ``nohup .venv/bin/python benchmarks/bench_openspiel.py > bench.log 2>&1 &``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tensorcfr.cli.bench import bench_command
from tensorcfr.cli.common import err_console
from tensorcfr.errors import TensorCFRError

DEFAULT_OUT_DIR = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"


def _given(args: list[str], option: str) -> bool:
    return option in args or any(a.startswith(option + "=") for a in args)


def main(argv: list[str] | None = None) -> int:
    """Run ``bench_command`` with ``--out-dir docs/benchmarks`` unless one is given, and by
    default a per-worker memory limit of half the machine's RAM (JaxCFR's set-up on
    battleship_3x2 grows past 8 GiB) and a 30-minute set-up limit."""
    import psutil

    args = list(sys.argv[1:] if argv is None else argv)
    if not _given(args, "--out-dir"):
        args += ["--out-dir", str(DEFAULT_OUT_DIR)]
    if not _given(args, "--max-worker-memory"):
        args += ["--max-worker-memory", str(psutil.virtual_memory().total // 2)]
    if not _given(args, "--max-setup-seconds"):
        args += ["--max-setup-seconds", "1800"]
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(bench_command)
    try:
        app(args, prog_name="bench_openspiel.py", standalone_mode=False)
    except TensorCFRError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except Exception as exc:  # click usage errors in standalone_mode=False
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
