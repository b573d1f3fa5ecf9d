"""Append-only JSONL journals (one JSON object per line, one line per finished unit of work)
and the lock that keeps two runs off one output folder.

A journal survives a kill or a full disk in the middle of a write: :func:`read_journal`
drops a torn last line (no newline) and reports it, :func:`repair_journal` cuts it off before
the next append (so a new row is never glued onto half of an old one), and
:func:`append_journal` writes a row with one ``write`` and, when the write fails (ENOSPC),
cuts the file back to its previous length and raises a one-line error. A complete line that
is not a JSON object (damage from an older writer) is skipped and counted: its unit is
simply done again.

:func:`folder_lock` takes an exclusive ``flock`` on ``FOLDER/.lock`` (released by the kernel
when the process dies, even by ``kill -9``) and writes the holder's pid and host into it, so
a second run is refused with who holds the folder. :func:`check_run_identity` keeps the
folder's identity file, so that a run of other options never continues it.

Nothing here knows what a row holds beyond its key (e.g. ``"deck"``, an integer, or a
job id).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["JournalContents", "append_journal", "check_run_identity", "folder_lock",
           "read_journal", "repair_journal"]

MAX_JOURNAL_BYTES = 4 * 2**30
"""A journal larger than this (4 GiB) is refused rather than read into memory."""

LOCK_FILE = ".lock"


@dataclass
class JournalContents:
    """What :func:`read_journal` found.

    Attributes:
        rows: the latest row of each key value (``rows[7]`` = the last row with key 7); key
            values are integers (a deck) or strings (a job id).
        torn_bytes: length of a torn last line (no newline) that was dropped; 0 if none.
        unreadable_lines: 1-based numbers of complete lines that are not JSON objects with
            an integer or text key (skipped).
    """

    rows: dict[int | str, dict[str, Any]] = field(default_factory=dict)
    torn_bytes: int = 0
    unreadable_lines: list[int] = field(default_factory=list)

    def notes(self, path: str | os.PathLike[str]) -> list[str]:
        """One-line notes for the user about what was dropped (empty when nothing was)."""
        notes = []
        if self.torn_bytes:
            notes.append(f"{path}: dropped a torn last line ({self.torn_bytes} bytes, a write "
                         "cut short by a kill or a full disk); its work is done again")
        if self.unreadable_lines:
            shown = ", ".join(str(n) for n in self.unreadable_lines[:5])
            more = "..." if len(self.unreadable_lines) > 5 else ""
            notes.append(f"{path}: skipped {len(self.unreadable_lines)} unreadable line(s) "
                         f"({shown}{more}); their work is done again")
        return notes


def _read_bytes(path: Path) -> bytes:
    from tensorcfr.utils.reading import read_input_bytes

    if path.is_dir():
        raise CorruptFileError(f"{path} is a folder, not a journal; move it away")
    return read_input_bytes(path, "journal", MAX_JOURNAL_BYTES)


RowCheck = Callable[[dict[str, Any]], bool]
"""A journal's row check: True when a parsed row holds what its reader needs (every key,
each of its type); a row that fails is skipped and its work done again."""


def read_journal(path: str | os.PathLike[str], key: str,
                 check: RowCheck | None = None) -> JournalContents:
    """Read a journal (missing: empty). A line that is not strict JSON (``NaN`` and
    ``Infinity`` refused), not an object with an integer or text ``key``, or that fails
    ``check`` is skipped and listed in ``unreadable_lines`` (its work is done again).
    Raises :class:`CorruptFileError` (one line) for a folder, a FIFO or device, or a file of
    which no complete line is a readable row (binary data, another file), and
    :class:`TensorCFRError` for an unreadable one."""
    from tensorcfr.utils.reading import strict_json_loads

    target = Path(path)
    contents = JournalContents()
    if not os.path.lexists(target):
        return contents
    data = _read_bytes(target)
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: b"" for a whole journal
    contents.torn_bytes = len(tail)
    for number, raw in enumerate(lines, start=1):
        try:
            row = strict_json_loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            row = None
        if isinstance(row, dict) and isinstance(row.get(key), (int, str)) \
                and not isinstance(row.get(key), bool) and (check is None or _passes(check, row)):
            contents.rows[row[key]] = row
        elif raw.strip():
            contents.unreadable_lines.append(number)
    if contents.unreadable_lines and not contents.rows:
        raise CorruptFileError(f"{target} is not a journal (no line of it is a JSON row with "
                               f"a {key!r}); move it away")
    return contents


def _passes(check: RowCheck, row: dict[str, Any]) -> bool:
    try:
        return bool(check(row))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError):
        return False


def repair_journal(path: str | os.PathLike[str]) -> int:
    """Cut a torn last line off a journal so the next append starts on a line of its own;
    returns the number of bytes cut (0: the journal ends with a newline or is missing)."""
    import stat

    target = Path(path)
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            return 0
    except OSError:
        return 0
    with open(target, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        # find the last newline, reading backwards in blocks
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            block = handle.read(end - start)
            at = block.rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            end = start
        else:
            keep = 0
        if keep == size:
            return 0
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
        return size - keep


def append_journal(path: str | os.PathLike[str], row: dict[str, Any]) -> None:
    """Append ``row`` as one line with one write, flushed to disk. When the write fails (a
    full disk, no permission) the file is cut back to its previous length and
    :class:`~tensorcfr.errors.OutputWriteError` (one line) is raised."""
    from tensorcfr.utils.io import write_error

    line = (json.dumps(row, separators=(",", ":")) + "\n").encode("utf-8")
    target = Path(path)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as exc:
        raise write_error(target, exc) from None
    try:
        size = os.fstat(fd).st_size
        try:
            written = os.write(fd, line)
            if written != len(line):  # a short write: the disk filled up part-way
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise write_error(target, exc) from None
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str], what: str = "run") -> Iterator[Path]:
    """Hold an exclusive lock on ``folder`` (its ``.lock`` file) for the block; raise
    :class:`TensorCFRError` naming the holder (pid, host) when another process holds it.
    The kernel releases the lock when the holder exits, however it exits."""
    target = Path(folder) / LOCK_FILE
    try:
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        from tensorcfr.utils.io import write_error

        raise write_error(target, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
            raise TensorCFRError(f"{folder} is in use by another {what} ({holder}); wait for "
                                 "it to finish or stop it, or use another --out folder") \
                from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield target
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def check_run_identity(path: Path, identity: dict[str, Any], *, what: str,
                       names: dict[str, str] | None = None,
                       ignore: tuple[str, ...] = ()) -> None:
    """The identity file of a resumable run folder (the settings that define its results):
    written at ``path`` (JSON, atomically) by the first run; a later run is refused in one
    line unless its ``identity`` is the same (keys in ``ignore`` aside), naming each option
    that differs (:func:`option_differences` with ``names``). ``identity["format"]`` says what
    kind of folder it is; a file of another format, or unreadable, is refused too."""
    from tensorcfr.utils.checks import option_differences
    from tensorcfr.utils.io import write_json_atomic
    from tensorcfr.utils.manifest import check_format
    from tensorcfr.utils.reading import load_json

    if not os.path.lexists(path):
        write_json_atomic(path, identity)
        return
    # a folder, FIFO or device is refused unopened, the size is bounded, NaN refused
    saved = load_json(path, "the identity file", 2**20)
    saved = check_format(saved, identity["format"], path,
                         f"the identity file of a tensorcfr {what}")
    mine = {k: v for k, v in identity.items() if k not in ignore}
    theirs = {k: v for k, v in saved.items() if k not in ignore}
    if mine != theirs:
        diff = option_differences(theirs, mine, names)
        raise TensorCFRError(f"{path.parent} holds a {what} made with other options: {diff}; "
                             "give the same options to continue it, or another --out")
