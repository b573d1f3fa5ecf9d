"""Resolving a ``--device`` / ``device=`` value into a usable torch device, with one-line errors."""

from __future__ import annotations

from typing import Any

from tensorcfr.errors import TensorCFRError

SUPPORTED_DEVICE_TYPES = ("cpu", "cuda", "mps")
"""Device types the solvers run on (``meta`` and the like hold no data and are refused)."""


def resolve_device(device: Any, option: str = "device") -> Any:
    """A usable ``torch.device`` for ``device`` (``None``: cpu).

    Refuses, with a :class:`~tensorcfr.errors.TensorCFRError` naming ``option``: strings
    torch cannot parse, device types other than cpu/cuda/mps (e.g. ``meta``), cuda or mps
    when not available here, and a cuda index beyond the GPUs present.  A one-element
    allocation on the device checks that it really works.
    """
    import torch

    if device is None:
        return torch.device("cpu")
    try:
        dev = device if isinstance(device, torch.device) else torch.device(str(device).strip())
    except (RuntimeError, TypeError, ValueError):
        raise TensorCFRError(f"{option} {device!r} is not a torch device (use cpu, cuda, "
                             "cuda:1 ...)") from None
    if dev.type not in SUPPORTED_DEVICE_TYPES:
        raise TensorCFRError(f"{option} {device!r}: the solvers run on cpu, cuda or mps, not "
                             f"{dev.type}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise TensorCFRError(f"{option} {device!r}: no CUDA device is available on this "
                                 "machine (use cpu)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise TensorCFRError(f"{option} {device!r}: this machine has "
                                 f"{torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise TensorCFRError(f"{option} {device!r}: MPS is not available on this machine")
    if dev.type == "cpu":
        return dev  # (always usable; an allocation would map torch's fill kernel for nothing)
    try:
        torch.zeros(1, device=dev)
    except (RuntimeError, AssertionError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TensorCFRError(f"{option} {device!r} is not usable: {first}") from None
    return dev
