"""An append-only JSONL journal: one complete JSON object per line, one line per finished job.

Long runs (``pasur batch``, ``pasur tournament``) append a row as each job finishes, with a
single write that is flushed and synced, so a killed run loses only the jobs in flight. A
kill can still cut the last write short: :func:`repair_journal` drops such a torn last line
(a line without its newline) before a resumed run appends to the file, and says how many
bytes it dropped. A bad line anywhere else is corruption, not a cut write: :func:`read_journal`
refuses it (``strict``) or skips it.

This module knows files and JSON only; it does not know what the rows mean.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tensorcfr.errors import CorruptFileError

__all__ = ["append_row", "read_journal", "repair_journal"]


def append_row(path: str | os.PathLike[str], row: dict[str, Any]) -> None:
    """Append ``row`` as one JSON line to the journal at ``path`` (one write, flushed and
    synced to disk)."""
    line = json.dumps(row, separators=(",", ":")) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def repair_journal(path: str | os.PathLike[str]) -> int:
    """Cut a torn last line (one without its newline, left by a killed write) off the journal.

    Returns the number of bytes dropped (0: the file was whole, or is missing).
    """
    target = Path(path)
    if not target.is_file():
        return 0
    with open(target, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # walk back to the last newline (journals are small: read the tail in blocks)
        end = size
        keep = 0
        while end > 0:
            start = max(0, end - 65536)
            fh.seek(start)
            block = fh.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            end = start
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return size - keep


def read_journal(path: str | os.PathLike[str], *, strict: bool = True) -> list[dict[str, Any]]:
    """Every row of the journal at ``path``, in order (a missing file has none).

    A torn last line (no newline) is ignored. Any other line that is not a JSON object raises
    :class:`CorruptFileError` (one line, naming the file and the line number) when
    ``strict``, and is skipped otherwise.
    """
    target = Path(path)
    rows: list[dict[str, Any]] = []
    if not target.is_file():
        return rows
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        if strict:
            raise CorruptFileError(f"journal {target} is unreadable: {exc}") from None
        return rows
    lines = text.split("\n")
    for number, line in enumerate(lines[:-1], start=1):  # lines[-1]: "" or a torn line
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        elif strict:
            raise CorruptFileError(f"journal {target} is corrupt at line {number} (not a JSON "
                                   "object); move it away to start over")
    return rows
