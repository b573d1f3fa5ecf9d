"""Checks of values a user or a file hands a command: bounded integer options and finite arrays.

Every count a command takes (games, decks, workers, seeds, rounds) goes through
:func:`check_int_range`, so an absurd value is refused in one line that states the bound
instead of failing as an allocation error, an overflow or a traceback deep in a library.
Every array loaded from a file, and every result before it is written, goes through
:func:`check_finite`, so a NaN in a checkpoint or a diverged training is refused instead of
silently producing wrong numbers.

Nothing here knows a game or a command: the caller names the option or the file.
"""

from __future__ import annotations

from typing import Any

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["MAX_SEED", "NonFiniteResultError", "check_finite", "check_finite_result",
           "check_int_range"]

MAX_SEED = 2**63 - 1
"""Largest seed a command takes (torch and numpy generators take 64-bit seeds)."""


class NonFiniteResultError(TensorCFRError):
    """A computed result holds NaN or infinity (a diverged run); it is not written."""


def check_int_range(value: int, option: str, low: int, high: int, *, why: str = "") -> int:
    """Return ``value`` if ``low <= value <= high``, else raise :class:`TensorCFRError`
    naming ``option`` and both bounds (``why`` adds the reason of the upper bound).

    >>> check_int_range(5, "--games", 1, 10)
    5
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TensorCFRError(f"{option} must be an integer, got {value!r}")
    if low <= value <= high:
        return value
    reason = f" ({why})" if why else ""
    raise TensorCFRError(f"{option} must be between {low:,} and {high:,}{reason}, got "
                         f"{value:,}")


def _first_bad(array: Any) -> tuple[int, int] | None:
    """(count of non-finite entries, flat index of the first) of an array, or None."""
    import numpy as np

    try:
        import torch

        if isinstance(array, torch.Tensor):
            if not array.is_floating_point():
                return None
            bad_mask = ~torch.isfinite(array)
            count = int(bad_mask.sum())
            if count == 0:
                return None
            return count, int(torch.nonzero(bad_mask.flatten())[0])
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    values = np.asarray(array)
    if values.dtype.kind not in "fc":
        return None
    bad_mask = ~np.isfinite(values)
    count = int(bad_mask.sum())
    if count == 0:
        return None
    return count, int(np.flatnonzero(bad_mask)[0])


def check_finite(array: Any, what: str) -> Any:
    """Return ``array`` (numpy or torch) if every entry is finite, else raise
    :class:`~tensorcfr.errors.CorruptFileError` naming ``what`` (e.g. ``"checkpoint ck.npz:
    regrets_0"``) and the count of NaN/inf entries. Integer arrays pass unchecked."""
    bad = _first_bad(array)
    if bad is not None:
        count, first = bad
        raise CorruptFileError(f"{what} holds {count:,} non-finite value(s) (NaN or inf, the "
                               f"first at flat index {first:,}); the file is damaged")
    return array


def check_finite_result(array: Any, what: str) -> Any:
    """Like :func:`check_finite` for a result about to be written: raise
    :class:`NonFiniteResultError` (the run diverged; nothing is written)."""
    bad = _first_bad(array)
    if bad is not None:
        raise NonFiniteResultError(f"{what} holds {bad[0]:,} non-finite value(s) (NaN or inf): "
                                   "the run diverged; nothing was written")
    return array


def option_differences(saved: dict[str, Any], given: dict[str, Any],
                       names: dict[str, str] | None = None) -> str:
    """Name the options in which a run differs from the one that made a saved state, e.g.
    ``--alpha 2.0 (the saved run used 1.5)``. Nested dicts are compared key by key
    (``variant.alpha``); a key is shown as ``names[key]`` or as ``--last-part``."""
    names = names or {}

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    mine, theirs = flat(given), flat(saved)
    parts = []
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) == theirs.get(key):
            continue
        label = names.get(key, "--" + key.rsplit(".", 1)[-1].replace("_", "-"))
        if isinstance(mine.get(key), (list, tuple)) or len(repr(mine.get(key))) > 40:
            parts.append(f"{label} (not the saved run's)")
        else:
            parts.append(f"{label} {mine.get(key)} (the saved run used {theirs.get(key)})")
    return ", ".join(parts)
