"""``tensorcfr pasur exploitability DIR``: the exact exploitability of a saved DCFR table.

The run folder is the ``--out`` of ``pasur solve --method dcfr``
(:mod:`tensorcfr.games.pasur.solving.dcfr_run`, which defines it and does the work:
:func:`~tensorcfr.games.pasur.solving.dcfr_run.run_folder_exploitability` rebuilds the graph
from the manifest's deal and mode, maps the saved table back onto its edges and recomputes the
exploitability). This module parses and prints.
"""

from __future__ import annotations

from typing import Optional

import typer

from tensorcfr.cli.common import MAX_THREADS, console, path_check, print_json


def exploitability_command(
    folder_text: str = typer.Argument(..., metavar="FOLDER",
                                      callback=path_check("input-dir", what="run folder"),
                                      help="The --out folder of a `pasur solve --method "
                                      "dcfr`."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory",
                                             help="Memory limit for rebuilding the graph, "
                                             "e.g. 8G."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch threads (default 1)."),
    device: str = typer.Option("cpu", "--device", help="Torch device, e.g. cpu or cuda."),
) -> None:
    """Recompute the exact exploitability of a saved strategy table.

    Rebuilds the graph from the manifest's deal and mode, then best responses to the table.
    """
    from tensorcfr.games.pasur.solving.dcfr_run import run_folder_exploitability

    result = run_folder_exploitability(folder_text, max_memory=max_memory, threads=threads,
                                       device=device)
    if json_out:
        print_json(result)
        return
    console.print(f"{result['folder']}: {result['mode']} mode, {result['table_rows']:,} table "
                  "rows", highlight=False, soft_wrap=True)
    console.print(f"value {result['value']:+.6f}, exact value {result['exact_value']:+.6f}, "
                  f"exploitability {result['exploitability']:.3e} points per game",
                  highlight=False, soft_wrap=True)


__all__ = ["exploitability_command"]
