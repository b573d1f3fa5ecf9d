"""numba's ``njit`` with the settings of the compiled CPU passes, and whether numba works.

Shared by :mod:`tensorcfr.core.numba_passes` (the level passes, and the choice between
them and the fused ones) and :mod:`tensorcfr.core.fused_passes`: compiled code is cached
on disk (a second process loads it instead of compiling), with no fast-math, so every
addition and multiplication rounds as the torch passes' do.  Where numba is missing or
broken, :data:`AVAILABLE` is False, ``njit`` leaves functions as Python and the solvers
keep the torch passes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AVAILABLE", "njit"]

try:  # numba is a dependency; a broken install falls back to the torch passes
    import numba

    def njit(function: Any = None, **options: Any) -> Any:
        """``numba.njit`` cached on disk, no fast-math, no bounds checks, no GIL."""
        jit = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False, **options)
        return jit if function is None else jit(function)
    AVAILABLE = True
except Exception:  # pragma: no cover - numba missing or broken
    AVAILABLE = False

    def njit(function: Any = None, **options: Any) -> Any:
        """Without numba: the function itself (never called: the solvers check
        :data:`AVAILABLE`)."""
        return (lambda f: f) if function is None else function
