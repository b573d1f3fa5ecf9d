"""Atomic file writes (write to a temporary file in the same folder, then rename), checks of
output paths before long work, capped reads of small input files, and the one-line message of
a failed write (a full disk, no permission).

Nothing here knows a game or a command: options are named by the caller (``"--out"``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterator

WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS,
                errno.EFBIG, errno.EIO, errno.ENOTDIR, errno.EISDIR)
"""Errors of a write that are the machine's state, not a bug: reported as one line."""


def write_error(path: str | os.PathLike[str], exc: OSError) -> Exception:
    """The one-line :class:`~tensorcfr.errors.OutputWriteError` for a failed write of
    ``path`` (e.g. ``cannot write out/x.npz: no space left on device``), or ``exc`` itself
    when its errno is not one of :data:`WRITE_ERRNOS` (a bug, shown as such)."""
    from tensorcfr.errors import OutputWriteError

    if exc.errno is None:  # pyarrow and other C++ writers raise OSError without an errno
        reason = " ".join(str(exc.strerror or exc).split())[:200] or "write failed"
    elif exc.errno not in WRITE_ERRNOS:
        return exc
    else:
        reason = (exc.strerror or os.strerror(exc.errno)).lower()
    return OutputWriteError(f"cannot write {path}: {reason}; nothing was left half-written")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path``.

    A killed or failed write leaves no file at ``path`` (and removes the temporary one),
    so a file that exists is always complete.
    A write that fails for the machine's state (a full disk, a read-only folder: see
    :data:`WRITE_ERRNOS`) raises :class:`~tensorcfr.errors.OutputWriteError` (one line).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                   dir=target.parent)
    except OSError as exc:
        raise write_error(target, exc) from None
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as exc:
        raise write_error(target, exc) from None
    except RuntimeError as exc:  # torch.save reports a failed write as a RuntimeError
        if "write" not in str(exc).lower():
            raise
        raise write_error(target, OSError(None, " ".join(str(exc).split())[:200])) from None
    finally:
        with contextlib.suppress(OSError):
            if tmp_path.exists():
                tmp_path.unlink()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON to ``path`` atomically."""
    write_text_atomic(path, json.dumps(obj, indent=indent) + "\n")


def _nearest_existing(path: Path) -> Path:
    """``path`` itself or its closest ancestor that exists."""
    current = path
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def _probe_folder(folder: Path, option: str, shown: Path) -> None:
    """Raise ``TensorCFRError`` unless a file can be created in the existing ``folder``."""
    import errno

    from tensorcfr.errors import TensorCFRError

    if not folder.is_dir():
        raise TensorCFRError(f"{option} {shown}: {folder} is a file, not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tensorcfr-write-test.", dir=folder)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in (errno.ENOENT, errno.EPERM, errno.EACCES, errno.EROFS):
            reason = {errno.ENOENT: "files cannot be created there",
                      errno.EROFS: "read-only file system"}.get(exc.errno, "permission denied")
        raise TensorCFRError(f"{option} {shown}: cannot write in {folder} ({reason})") from None
    os.close(fd)
    os.unlink(tmp)


def check_output_file(path: str | os.PathLike[str], option: str = "output") -> Path:
    """Check, before any long work, that a file can be written at ``path``.

    The file itself is not created: the nearest existing ancestor folder must be a folder
    in which a file can be created (missing folders are made at write time), and ``path``
    must not be an existing folder.  Raises :class:`~tensorcfr.errors.TensorCFRError` with
    a one-line message naming ``option`` (e.g. ``"--save"``).
    """
    from tensorcfr.errors import TensorCFRError

    target = Path(path)
    if target.is_dir():
        raise TensorCFRError(f"{option} {target} is a folder; give a file name, e.g. "
                             f"{target / 'out.npz'}")
    if str(target).endswith(os.sep) or target.name in ("", ".", ".."):
        raise TensorCFRError(f"{option} {target}: give a file name")
    _probe_folder(_nearest_existing(target.parent), option, target)
    return target


def check_output_dir(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Check, before any long work, that ``path`` is (or can become) a writable folder.

    Raises :class:`~tensorcfr.errors.TensorCFRError` (one line) when ``path`` or one of its
    ancestors is a regular file or the nearest existing folder is not writable.
    """
    from tensorcfr.errors import TensorCFRError

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise TensorCFRError(f"{option} {target} exists and is not a folder")
    existing = _nearest_existing(target)
    if existing.exists() and not existing.is_dir():
        raise TensorCFRError(f"{option} {target}: {existing} is a file, not a folder")
    _probe_folder(existing, option, target)
    return target


MAX_INPUT_FILE_BYTES = 16 * 2**20
"""Default cap on the size of small JSON/text input files (deals, game records): 16 MiB."""


def read_small_file(path: str | os.PathLike[str], what: str,
                    max_bytes: int = MAX_INPUT_FILE_BYTES, name_path: bool = True) -> bytes:
    """Read a file expected to be small, refusing one larger than ``max_bytes`` unread.

    Raises :class:`OSError` as ``open`` does, and
    :class:`~tensorcfr.errors.TensorCFRError` for a file over the cap (its message starts
    with the path unless ``name_path`` is false).
    """
    from tensorcfr.errors import TensorCFRError
    from tensorcfr.utils.resources import format_bytes

    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            subject = f"{path} is" if name_path else "the file is"
            raise TensorCFRError(f"{subject} {format_bytes(size)}, too large for {what} "
                                 f"(at most {format_bytes(max_bytes)})")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # a pipe or a file that grew
        subject = f"{path} is" if name_path else "the file is"
        raise TensorCFRError(f"{subject} larger than {format_bytes(max_bytes)}, too large for "
                             f"{what}")
    return data


def file_slug(text: str) -> str:
    """File-name form of a label: lower case, every run of other characters than a-z and 0-9
    replaced by one ``_``, none at the ends (``"KrwEmd 1,1,1;1,1"`` -> ``"krwemd_1_1_1_1_1"``)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")

