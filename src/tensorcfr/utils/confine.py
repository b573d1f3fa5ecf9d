"""Paths that a file names, kept inside its folder: :func:`file_in_folder`.

A saved folder (a policy or hidden-hand model, a DCFR run) has a manifest that names its
other files (``"model_file": "hidden_model.ubj"``, ``"files": {"strategy_table": ...}``). A
folder handed to a command may come from anyone, so a name such as ``"../../etc/passwd"``, an
absolute path, or a symbolic link that leads out of the folder must not make a loader open a
file elsewhere. Every loader that reads a path from a file, or opens a fixed name inside a
folder it was given, goes through :func:`file_in_folder`: the path is resolved (``..`` and
every symbolic link followed) and must still lie inside the resolved folder. A link that
stays inside is fine; the folder itself may be reached through a link.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     try:
...         file_in_folder(tmp, "../../etc/passwd", named_by="manifest.json", key="model_file")
...     except Exception as exc:
...         print(type(exc).__name__)
CorruptFileError
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from tensorcfr.errors import CorruptFileError

__all__ = ["file_in_folder"]


def file_in_folder(folder: str | os.PathLike[str], name: object, *, named_by: str | os.PathLike[str],
                   key: str = "file") -> Path:
    """The path of ``name`` inside ``folder``, refusing any that leads out of it.

    Args:
        folder: the folder the file belongs to (as the user gave it).
        name: the file name as read (from a manifest: any JSON value), relative to
            ``folder``; subfolders are allowed (``"tables/s.npz"``).
        named_by: the file that names it (for the message), e.g. ``DIR/manifest.json``.
        key: the manifest key, or a word saying what the file is (for the message).

    Returns:
        ``folder / name`` as given (not resolved: messages show the user's spelling).

    Raises:
        CorruptFileError: one line naming ``named_by`` when ``name`` is not a non-empty
            string, is absolute, or resolves (through ``..`` or symbolic links) outside
            ``folder``. Whether the file exists is the caller's check.
    """
    if not isinstance(name, str) or not name.strip() or "\x00" in name:
        raise CorruptFileError(f"{named_by}: {key} must be a file name inside {folder}, got "
                               f"{_short(name)}")
    if PurePath(name).is_absolute() or os.path.isabs(name) or PurePath(name).drive:
        raise CorruptFileError(f"{named_by}: {key} {_short(name)} is an absolute path; a file "
                               f"it names must be inside {folder}")
    path = Path(folder) / name
    try:
        root = Path(folder).resolve()
        target = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symbolic link loop
        raise CorruptFileError(f"{named_by}: {key} {_short(name)} cannot be resolved "
                               f"({exc.__class__.__name__})") from None
    if target == root or not target.is_relative_to(root):
        raise CorruptFileError(f"{named_by}: {key} {_short(name)} leads outside {folder} "
                               "(a file it names must be inside its folder)")
    return path


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
