"""Measure torch intra-op thread counts on the ops our solvers use, side by side.

Run: ``.venv/bin/python benchmarks/bench_threads.py``. Writes docs/benchmarks/threads.md.
The chosen default (``tensorcfr.utils.resources.DEFAULT_THREADS``) comes from this table.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch

from tensorcfr.utils.machine import machine_line


def _time(fn, repeats: int = 30) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


def main() -> None:
    rows = []
    gen = torch.Generator().manual_seed(0)
    for n in (10_000, 150_000, 2_000_000):
        a = torch.rand(n, dtype=torch.float64, generator=gen)
        b = torch.rand(n, dtype=torch.float64, generator=gen)
        index = torch.randint(0, max(1, n // 4), (n,), generator=gen)
        ops = {
            "multiply": lambda: a * b,
            "gather": lambda: a[index],
            "index_add_": lambda: torch.zeros(max(1, n // 4), dtype=torch.float64).index_add_(0, index, a),
        }
        for name, fn in ops.items():
            timings = {}
            for threads in (1, 2, 1, 2):  # A/B/A/B so load changes hit both
                torch.set_num_threads(threads)
                timings.setdefault(threads, []).append(_time(fn))
            t1, t2 = min(timings[1]), min(timings[2])
            rows.append((name, n, t1, t2, t2 / t1))
    lines = [
        "# Torch intra-op threads on this machine",
        "",
        f"Machine: {machine_line()}.",
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores "
        "(other processes busy make the second thread wait for a core).",
        "Median of 30 runs, best of two A/B rounds, float64. Rerun: `python benchmarks/bench_threads.py`.",
        "",
        "| op | elements | 1 thread (ms) | 2 threads (ms) | 2 threads / 1 thread |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {op} | {n:,} | {t1:.3f} | {t2:.3f} | {r:.2f} |" for op, n, t1, t2, r in rows]
    text = "\n".join(lines) + "\n"
    out = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "threads.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
