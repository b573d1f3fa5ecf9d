"""The manifest of a run or model folder, read one way everywhere.

A folder a command writes and another reads back (a DCFR run's ``--out``, a policy or
hidden-hand model, a round checkpoint, a resumable run's identity file) carries a small JSON
object whose ``"format"`` names what the folder is (``"tensorcfr-pasur-dcfr-run"``...) and,
for some, a ``"version"``. :func:`read_manifest` reads it: the name is confined to the folder
(no ``../``, no absolute path, no link out: :func:`~tensorcfr.utils.confine.file_in_folder`),
the file must be a regular file of bounded size (a FIFO or a device is refused unopened),
strict JSON (no NaN), an object of the expected format and version; every failure is one
:class:`~tensorcfr.errors.CorruptFileError` line naming the file. :func:`check_format` is the
format and version check alone, for an object already parsed. :func:`peek_manifest` is the
lenient read of a display hint (a run's deal or seed): ``None`` for anything unreadable.

Nothing here knows what a format's other fields mean; each caller checks its own.

>>> import json, tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "manifest.json").write_text(json.dumps({"format": "demo", "seed": 3}))
>>> read_manifest(folder, expected_format="demo", what="a demo run")[1]["seed"]
3
>>> peek_manifest(folder / "nowhere") is None
True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["MANIFEST", "MAX_MANIFEST_BYTES", "check_format", "peek_manifest", "read_manifest"]

MANIFEST = "manifest.json"
"""The file name of a folder's manifest."""

MAX_MANIFEST_BYTES = 4 * 2**20
"""Largest manifest read (a few KiB are written): 4 MiB."""


def check_format(obj: Any, expected_format: str, path: str | os.PathLike[str], what: str, *,
                 version: int | None = None, hint: str = "") -> dict[str, Any]:
    """``obj`` (parsed JSON) if it is an object whose ``"format"`` is ``expected_format``
    (and, when ``version`` is given, whose ``"version"`` equals it); else one
    :class:`CorruptFileError` line: ``{path} is not {what} (format ...)`` or ``{path}:
    unsupported version ...``, ending with ``: {hint}`` when a hint is given."""
    tail = f": {hint}" if hint else ""
    if not isinstance(obj, dict) or obj.get("format") != expected_format:
        found = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        raise CorruptFileError(f"{path} is not {what} (format {found!r:.60}){tail}")
    if version is not None and obj.get("version") != version:
        raise CorruptFileError(f"{path}: unsupported version {obj.get('version')!r:.40} of "
                               f"{what} (this tensorcfr reads version {version}){tail}")
    return obj


def read_manifest(folder: str | os.PathLike[str], name: str = MANIFEST, *,
                  expected_format: str, what: str, version: int | None = None,
                  max_bytes: int = MAX_MANIFEST_BYTES, hint: str = "",
                  missing: str | None = None) -> tuple[Path, dict[str, Any]]:
    """``(path, manifest)`` of the manifest ``name`` inside ``folder``.

    Args:
        folder: the run or model folder (must be a folder).
        name: the manifest's file name inside it (confined to the folder).
        expected_format, version: what ``"format"`` (and ``"version"``, if not None) must be.
        what: what the folder is, for the messages (``"a DCFR run"``).
        max_bytes: the largest file read.
        hint: appended to a format or version error (``"train one with ..."``).
        missing: what to say after ``{path} is missing:`` when the file does not exist
            (default: ``{folder} is not {what}``).

    Raises:
        TensorCFRError: ``folder`` is not a folder.
        CorruptFileError: the manifest is missing, escapes the folder, is not a regular file,
            is too large, is not strict JSON, or is of another format or version (one line).
    """
    from tensorcfr.utils.confine import file_in_folder
    from tensorcfr.utils.reading import load_json

    root = Path(folder)
    if not root.is_dir():
        raise TensorCFRError(f"{root} is not a folder: it should be {what}")
    path = file_in_folder(root, name, named_by=root, key="the manifest")
    if not os.path.lexists(path):  # a FIFO or device there is refused by load_json, unread
        raise CorruptFileError(f"{path} is missing: {missing or f'{root} is not {what}'}")
    manifest = load_json(path, f"the manifest of {what}", max_bytes)
    return path, check_format(manifest, expected_format, path, f"the manifest of {what}",
                              version=version, hint=hint)


def peek_manifest(folder: str | os.PathLike[str], name: str = MANIFEST) -> dict[str, Any] | None:
    """The manifest object of ``folder`` for a display hint (a deal, a seed), or ``None`` when
    there is none or it is unreadable, escapes the folder or is not a JSON object. Its
    fields are unchecked: validate each one read."""
    from tensorcfr.utils.confine import file_in_folder
    from tensorcfr.utils.reading import load_json

    try:
        path = file_in_folder(str(folder), name, named_by=str(folder), key="the manifest")
        obj = load_json(path, "the run's manifest", MAX_MANIFEST_BYTES)
    except (OSError, ValueError, TensorCFRError):
        return None
    return obj if isinstance(obj, dict) else None
