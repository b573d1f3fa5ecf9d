"""Bucket maps: the output of an information abstraction, saved as one NPZ file.

A bucket map assigns every *class* of a round (e.g. a suit-isomorphic class of private and
public cards) to a bucket ``0..K_r-1``.  The file (NumPy ``.npz``, no pickles) holds:

* ``labels_<r>`` [C_r] int64: bucket of each class of round ``r`` (rounds ``0..R-1``);
* ``meta``: a JSON string with ``format`` (``"tensorcfr-bucket-map"``), ``version`` (1),
  ``game`` (e.g. ``"numeral211"``), ``variant`` (the game parameters as a dict), ``method``
  (``"ehs"``, ``"paemd"``, ``"krwemd"``, ``"classes"`` ...), ``params`` (the method's
  settings), ``seconds`` (time to build), ``classes`` and ``buckets`` (per round);
* optional extra arrays ``extra_<name>`` (e.g. cluster centres, per-class features).

:func:`load_bucket_map` checks the format and raises :class:`CorruptFileError` (one line)
for anything else; callers check ``game``/``variant`` against the game they solve.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.utils.io import atomic_path

__all__ = ["BucketMap", "load_bucket_map", "BucketMapMismatchError", "FORMAT_NAME"]

FORMAT_NAME = "tensorcfr-bucket-map"
FORMAT_VERSION = 1


class BucketMapMismatchError(TensorCFRError):
    """A bucket map that belongs to another game or game variant."""


@dataclass
class BucketMap:
    """Per-round class -> bucket labels plus provenance (see the module docstring)."""

    game: str
    variant: dict[str, Any]
    method: str
    labels: list[np.ndarray]
    params: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.labels = [np.asarray(lab, dtype=np.int64).reshape(-1) for lab in self.labels]
        for r, lab in enumerate(self.labels):
            if len(lab) and (lab.min() < 0):
                raise TensorCFRError(f"round {r}: bucket labels must be >= 0")

    @property
    def num_classes(self) -> list[int]:
        """Classes per round."""
        return [len(lab) for lab in self.labels]

    @property
    def num_buckets(self) -> list[int]:
        """Buckets per round (max label + 1)."""
        return [int(lab.max()) + 1 if len(lab) else 0 for lab in self.labels]

    def meta(self) -> dict[str, Any]:
        """The JSON metadata stored in the file."""
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "game": self.game,
                "variant": self.variant, "method": self.method, "params": self.params,
                "seconds": self.seconds, "classes": self.num_classes,
                "buckets": self.num_buckets}

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the NPZ file atomically (temporary file, then rename)."""
        arrays: dict[str, np.ndarray] = {f"labels_{r}": lab for r, lab in enumerate(self.labels)}
        for name, arr in self.extra.items():
            arrays[f"extra_{name}"] = np.asarray(arr)
        arrays["meta"] = np.array(json.dumps(self.meta()))
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)

    def check_game(self, game: str, variant: dict[str, Any], num_classes: list[int]) -> None:
        """Raise :class:`BucketMapMismatchError` unless the map was built for this game
        variant (same parameters and class counts)."""
        if self.game != game or self.variant != variant or self.num_classes != list(
                num_classes):
            raise BucketMapMismatchError(
                f"the bucket map was built for {self.game} {json.dumps(self.variant)} "
                f"(classes {self.num_classes}), not for {game} {json.dumps(variant)} "
                f"(classes {list(num_classes)}); rebuild it with `abstract` for this variant")


def load_bucket_map(path: str | os.PathLike[str]) -> BucketMap:
    """Read a bucket-map NPZ file; :class:`CorruptFileError` when it is missing, truncated
    or not a bucket map."""
    from tensorcfr.utils.manifest import check_format
    from tensorcfr.utils.reading import check_input_file, strict_json_loads

    if not os.path.lexists(path):
        raise CorruptFileError(f"bucket map {os.fspath(path)!r} does not exist")
    check_input_file(path, "bucket map")  # a folder, FIFO or device: refused unopened
    try:
        with np.load(path, allow_pickle=False) as data:
            files = dict((k, data[k]) for k in data.files)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError,
            NotImplementedError) as exc:  # NotImplementedError: a damaged compression field
        raise CorruptFileError(f"{os.fspath(path)!r} is not a readable bucket map (NPZ): "
                               f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                               ) from None
    from tensorcfr.utils.checks import check_finite

    for name, array in files.items():
        if array.dtype.kind in "fc":
            check_finite(array, f"bucket map {os.fspath(path)!r}: {name}")
    try:
        meta = check_format(strict_json_loads(str(files.pop("meta"))), FORMAT_NAME, "meta",
                            "a bucket map")
        if int(meta.get("version", 0)) > FORMAT_VERSION:
            raise ValueError(f"format version {meta.get('version')} is newer than this "
                             "tensorcfr reads")
        rounds = len(meta["classes"])
        labels = [files.pop(f"labels_{r}") for r in range(rounds)]
        if any(lab.dtype.kind not in "iu" or lab.ndim != 1 for lab in labels):
            raise ValueError("label arrays must be 1-D integers")
        extra = {k.removeprefix("extra_"): v for k, v in files.items()
                 if k.startswith("extra_")}
        bmap = BucketMap(str(meta["game"]), dict(meta["variant"]), str(meta["method"]),
                         labels, dict(meta.get("params", {})), float(meta.get("seconds", 0.0)),
                         extra)
        if bmap.num_classes != list(meta["classes"]):
            raise ValueError("label arrays do not match the stored class counts")
    except (KeyError, ValueError, TypeError, AttributeError, OverflowError, TensorCFRError,
            json.JSONDecodeError) as exc:
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise CorruptFileError(f"{os.fspath(path)!r} is not a valid bucket map: {reason}"
                               ) from None
    return bmap
