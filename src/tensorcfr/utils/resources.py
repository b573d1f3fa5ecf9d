"""Memory and thread helpers: peak RSS, free memory, parsing ``--max-memory``, thread count."""

from __future__ import annotations

import os
import re
import resource
from typing import Any

import psutil

from tensorcfr.errors import TensorCFRError

_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20,
          "MIB": 2**20, "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40,
          "TIB": 2**40}


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def available_memory_bytes() -> int:
    """Memory the machine has available now, in bytes."""
    return int(psutil.virtual_memory().available)


AUTO_MEMORY_SHARE = 0.8
"""``"auto"`` budgets this share of the memory available now: a walk or solve stopped at its
budget leaves the rest to the machine (at the whole of it, the process that trips the limit
has already taken every free byte)."""


def parse_memory(text: str | None) -> int:
    """Parse a memory size like ``"8G"``, ``"512MiB"`` or ``"1000000"`` into bytes.

    ``None`` or ``"auto"`` means :data:`AUTO_MEMORY_SHARE` of what the machine has available
    now.
    """
    if text is None or text.strip().lower() in ("", "auto"):
        return int(AUTO_MEMORY_SHARE * available_memory_bytes())
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise TensorCFRError(f"cannot read memory size {text!r}: use e.g. 8G, 512M or 1000000")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value <= 0:
        raise TensorCFRError(f"memory size must be positive, got {text!r}")
    return int(value)


def memory_budget(limit: int | str | None, device: Any = None) -> int | None:
    """The byte budget a ``max_memory_bytes`` argument of the Python API names.

    ``None``: no limit (``None`` back); ``"auto"``: :data:`AUTO_MEMORY_SHARE` of what is
    available now, the machine's available memory or a CUDA ``device``'s free memory; a positive int: that many bytes; a
    size such as ``"8G"``: parsed by :func:`parse_memory`.  Anything else is a
    :class:`~tensorcfr.errors.TensorCFRError`."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, (int, str)):
        raise TensorCFRError(f"max_memory_bytes must be bytes, a size such as '8G', 'auto' or "
                             f"None, got {limit!r}")
    if isinstance(limit, int):
        if limit <= 0:
            raise TensorCFRError(f"max_memory_bytes must be positive, got {limit}")
        return limit
    if limit.strip().lower() == "auto" and device is not None:
        import torch

        resolved = torch.device(device)
        if resolved.type == "cuda":
            return int(AUTO_MEMORY_SHARE * torch.cuda.mem_get_info(resolved)[0])
    return parse_memory(limit)


def format_bytes(n: float) -> str:
    """Human-readable size, e.g. ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


DEFAULT_THREADS = 1
"""Default torch intra-op thread count. On the 2-core reference machine one thread was
measured faster than two for the small and medium tensors these solvers use (see
docs/benchmarks); ``--threads`` overrides it."""


def set_threads(n: int | None) -> int:
    """Set torch's intra-op thread count (``None``: the default) and return it."""
    import torch

    n = DEFAULT_THREADS if n is None else n
    if n < 1:
        raise TensorCFRError(f"--threads must be at least 1, got {n}")
    n = min(n, os.cpu_count() or n)
    torch.set_num_threads(n)
    return n


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss_bytes() -> int:
    """Resident set size of this process now, in bytes (``/proc/self/statm``; cheap, about
    10 us, so loops may call it every few thousand steps).  Falls back to psutil."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return int(psutil.Process().memory_info().rss)


MMAP_THRESHOLD_BYTES = 128 * 1024
"""The allocation size from which :func:`return_large_blocks` has glibc map memory
directly (and unmap it when freed): glibc's own starting value."""


def return_large_blocks() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD_BYTES` for this process, so that
    every array of that size or more is returned to the system when freed (True when
    set; False where there is no glibc ``mallopt``).

    glibc raises the threshold after the first large block is freed (up to 32 MiB); later
    arrays then come from the heap, and the heap keeps what they leave behind resident:
    a solver that makes and drops a few level-sized arrays per level (the lean passes)
    saw its peak resident set 0.4 MiB higher on liars_dice.  Fixing the threshold also
    fixes the trim threshold, and costs a page fault per page of each new large array."""
    mallopt = _glibc_function("mallopt")
    if mallopt is None:
        return False
    m_mmap_threshold = -3  # (glibc's malloc.h)
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES))


_GLIBC_FUNCTIONS: dict[str, Any] = {}


def _glibc_function(name: str) -> Any:
    """glibc's function ``name`` through ctypes (looked up once), or None where there is
    no glibc or no such function."""
    if name not in _GLIBC_FUNCTIONS:
        try:
            import ctypes

            _GLIBC_FUNCTIONS[name] = getattr(ctypes.CDLL("libc.so.6"), name)
        except (OSError, AttributeError):  # pragma: no cover - not glibc
            _GLIBC_FUNCTIONS[name] = None
    return _GLIBC_FUNCTIONS[name]


def release_free_memory() -> None:
    """Hand memory freed by Python and torch back to the operating system (glibc's
    ``malloc_trim``; a no-op elsewhere).  Called after the game walk and after a solver's
    set-up, whose temporaries otherwise stay in the process's resident set (on
    liars_dice about 15 MiB each) and raise the peak of whatever is allocated next."""
    malloc_trim = _glibc_function("malloc_trim")
    if malloc_trim is not None:
        malloc_trim(0)
