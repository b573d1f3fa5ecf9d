"""Small pieces the benchmark scripts share: timing a call, seed ranges, the run's identity.

Scripts in this folder import it as ``_timing`` (Python puts the script's folder first on
``sys.path``).  Nothing here measures on its own; each benchmark keeps its own protocol.

>>> parse_seeds("1-3,7")
[1, 2, 3, 7]
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and CPU seconds (``time.process_time``: this process)."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall0, time.process_time() - cpu0


def parse_seeds(text: str) -> list[int]:
    """``"1-20"`` / ``"1,4,7-9"`` -> the seeds, in the order given (ranges inclusive;
    empty parts, as in ``"1,"``, are skipped)."""
    out: list[int] = []
    for part in text.split(","):
        if not part.strip():
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def git_commit(root: Path = ROOT) -> str:
    """The short commit of ``HEAD`` in ``root`` ("" when git does not answer)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                          capture_output=True, text=True, check=False).stdout.strip()


def machine_line(machine: dict[str, Any]) -> str:
    """``"<cpu>, <n> cores, <x> GiB RAM"`` from :func:`tensorcfr.utils.machine.machine_info`."""
    return f"{machine['cpu']}, {machine['cores']} cores, {machine['ram_gib']:.1f} GiB RAM"
