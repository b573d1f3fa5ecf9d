"""What machine a benchmark ran on: CPU model, cores, RAM, versions, date (for reports)."""

from __future__ import annotations

import datetime as dt
import os
import platform
from typing import Any


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_info() -> dict[str, Any]:
    """CPU model, logical cores, total RAM (GiB), torch and Python versions, UTC date."""
    import psutil
    import torch

    return {"cpu": cpu_model(), "cores": os.cpu_count(),
            "ram_gib": psutil.virtual_memory().total / 2**30, "torch": torch.__version__,
            "python": platform.python_version(),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def machine_line() -> str:
    """One line for a report, e.g. ``AMD EPYC, 2 cores, 23.5 GiB RAM; torch 2.13.0; Python 3.11``."""
    m = machine_info()
    return (f"{m['cpu']}, {m['cores']} cores, {m['ram_gib']:.1f} GiB RAM; torch {m['torch']}; "
            f"Python {m['python']}; {m['date']}")


def load_averages() -> str:
    """The 1-, 5- and 15-minute load averages as ``"a b c"`` (two decimals), noted with
    every timing."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_conditions() -> str:
    """One line of the conditions a timing ran under: logical CPUs, load averages (one
    decimal), torch version and its intra-op threads."""
    import torch

    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f}, torch {torch.__version__}, threads {torch.get_num_threads()}")

