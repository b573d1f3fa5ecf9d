"""Atomic file writes (write to a temporary file in the same folder, then rename), checks of
output and input paths before long work, capped reads of small input files, and the one-line
message of a failed write (a full disk, no permission).

Nothing is destroyed: an output path that exists and is not a regular file (a device such as
``/dev/zero``, a FIFO, a socket) is refused by :func:`check_output_file` before any work and
again by :func:`atomic_path` before the rename (a rename would replace the node, as root even a
device in ``/dev``); an empty path is refused rather than read as the current folder.

Nothing here knows a game or a command: options are named by the caller (``"--out"``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
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


def file_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is not a regular file or a folder (``"a FIFO"``,
    ``"a character device"``, ``"a block device"``, ``"a socket"``, ``"a special file"``);
    ``None`` when it is a regular file, a folder or does not exist. Symbolic links are
    followed (a link to ``/dev/zero`` is a character device)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a dangling link, a NUL in the name
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def check_path_text(path: str | os.PathLike[str] | None, option: str) -> Path:
    """``Path(path)``, refusing an empty path (which ``Path`` would read as the current
    folder) or one with a NUL byte, in one line naming ``option``."""
    from tensorcfr.errors import TensorCFRError

    text = os.fspath(path) if path is not None else ""
    if not str(text).strip():
        raise TensorCFRError(f"{option}: the path is empty; give a file or folder name")
    if "\0" in str(text):
        raise TensorCFRError(f"{option}: the path holds a NUL byte")
    return Path(text)


def _refuse_special(target: Path, option: str) -> None:
    """Raise ``TensorCFRError`` when ``target`` exists and is a device, FIFO or socket."""
    from tensorcfr.errors import TensorCFRError

    kind = file_kind(target)
    if kind is not None:
        raise TensorCFRError(f"{option} {target} is {kind}, not a regular file; give the path "
                             "of a file to write (it is never replaced)")


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
    if not os.fspath(path):
        raise write_error(target, OSError(None, "the path is empty"))
    kind = file_kind(target)
    if kind is not None:  # the last guard: a rename would replace a device or a FIFO
        raise write_error(target, OSError(None, f"it is {kind}, not a regular file; it was "
                                                "left as it is"))
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
        kind = file_kind(target)
        if kind is not None:  # made while the file was being written
            raise write_error(target, OSError(None, f"it is {kind}, not a regular file; it "
                                                    "was left as it is"))
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


def write_text_or_elsewhere(path: str | os.PathLike[str], text: str, *, prefix: str
                            ) -> tuple[Path, str | None]:
    """Write ``text`` to ``path`` atomically; if that fails (a full or read-only disk, a path
    that became a folder), write it to a new file in the temporary folder instead (named
    ``PREFIX-XXXX.json``), so that nothing is lost. Returns (where it was saved, the reason
    ``path`` failed or ``None``). Raises :class:`~tensorcfr.errors.OutputWriteError` only
    when neither could be written."""
    from tensorcfr.errors import OutputWriteError, TensorCFRError

    try:
        write_text_atomic(path, text)
        return Path(path), None
    except TensorCFRError as exc:
        reason = str(exc)
    for folder in (tempfile.gettempdir(), os.path.expanduser("~"), os.getcwd()):
        try:
            fd, spare = tempfile.mkstemp(prefix=f"{prefix}-", suffix=Path(path).suffix or
                                         ".txt", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            return Path(spare), reason
        except OSError:
            continue
    raise OutputWriteError(f"{reason}; no other folder could hold it either")


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
    must not be empty, an existing folder, or an existing device, FIFO or socket (which the
    atomic rename would replace).  Raises :class:`~tensorcfr.errors.TensorCFRError` with
    a one-line message naming ``option`` (e.g. ``"--save"``).
    """
    from tensorcfr.errors import TensorCFRError

    target = check_path_text(path, option)
    _refuse_special(target, option)
    if target.is_dir():
        raise TensorCFRError(f"{option} {target} is a folder; give a file name, e.g. "
                             f"{target / 'out.npz'}")
    if str(target).endswith(os.sep) or target.name in ("", ".", ".."):
        raise TensorCFRError(f"{option} {target}: give a file name")
    _probe_folder(_nearest_existing(target.parent), option, target)
    return target


def check_output_dir(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Check, before any long work, that ``path`` is (or can become) a writable folder.

    Raises :class:`~tensorcfr.errors.TensorCFRError` (one line) when ``path`` is empty,
    ``path`` or one of its ancestors is a file (regular or not) or the nearest existing folder
    is not writable.
    """
    from tensorcfr.errors import TensorCFRError

    target = check_path_text(path, option)
    kind = file_kind(target)
    if kind is not None:
        raise TensorCFRError(f"{option} {target} is {kind}, not a folder")
    if target.exists() and not target.is_dir():
        raise TensorCFRError(f"{option} {target} exists and is not a folder")
    existing = _nearest_existing(target)
    if existing.exists() and not existing.is_dir():
        raise TensorCFRError(f"{option} {target}: {existing} is a file, not a folder")
    _probe_folder(existing, option, target)
    return target


def check_input_file(path: str | os.PathLike[str], option: str) -> Path:
    """Check that the input ``path`` is an existing regular file (not empty text, a folder,
    a FIFO that would block the read, or a device that never ends); raise
    :class:`~tensorcfr.errors.TensorCFRError` naming ``option`` otherwise."""
    from tensorcfr.errors import TensorCFRError

    target = check_path_text(path, option)
    kind = file_kind(target)
    if kind is not None:
        raise TensorCFRError(f"{option} {target} is {kind}, not a regular file")
    if target.is_dir():
        raise TensorCFRError(f"{option} {target} is a folder; give a file")
    if not target.exists():
        raise TensorCFRError(f"{option} {target} does not exist")
    if not os.access(target, os.R_OK):
        raise TensorCFRError(f"{option} {target} cannot be read (permission denied)")
    return target


def check_input_dir(path: str | os.PathLike[str], option: str) -> Path:
    """Check that the input ``path`` is an existing folder; raise
    :class:`~tensorcfr.errors.TensorCFRError` naming ``option`` otherwise."""
    from tensorcfr.errors import TensorCFRError

    target = check_path_text(path, option)
    kind = file_kind(target)
    if kind is not None:
        raise TensorCFRError(f"{option} {target} is {kind}, not a folder")
    if not target.exists():
        raise TensorCFRError(f"{option} {target} does not exist")
    if not target.is_dir():
        raise TensorCFRError(f"{option} {target} is a file, not a folder")
    return target


def same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file: equal once made absolute and resolved
    (``a.npz``, ``./a.npz`` and a link to it are the same)."""
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError, ValueError):
        return os.path.abspath(a) == os.path.abspath(b)


def check_distinct_outputs(outputs: dict[str, str | os.PathLike[str] | None]) -> None:
    """Refuse two options that name the same output (``{"--out": "a.npz", "--soft-out":
    "a.npz"}``): the second write would replace the first. ``None`` values are skipped."""
    from tensorcfr.errors import TensorCFRError

    seen: list[tuple[str, str | os.PathLike[str]]] = []
    for option, path in outputs.items():
        if path is None:
            continue
        for other, other_path in seen:
            if same_path(path, other_path):
                raise TensorCFRError(f"{option} {path} is also given as {other}; give each "
                                     "output its own path")
        seen.append((option, path))


def file_slug(text: str) -> str:
    """File-name form of a label: lower case, every run of other characters than a-z and 0-9
    replaced by one ``_``, none at the ends (``"KrwEmd 1,1,1;1,1"`` -> ``"krwemd_1_1_1_1_1"``)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")

