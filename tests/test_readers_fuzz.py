"""Every file reader of the registry (``tensorcfr.file_readers.READERS``) fuzzed (issue 27,
part 3): for each reader a valid sample is written, then damaged every way a careless or
unlucky user would, one way at a time:

* the bytes: truncated to half, emptied, 16 bytes flipped (a fixed seed per reader);
* the node: a FIFO, a character device (``/dev/zero``'s numbers, or a link to it where
  ``mknod`` is not allowed) or a folder in the file's place;
* the structure, by container: each JSON key (top level and one level down, and the keys of
  the JSON metadata inside an NPZ) deleted, null, the text ``"lots"``, a list, ``NaN`` and
  ``Infinity``; each NPZ array dropped, replaced by text, given a NaN / infinity (floats) or
  a negative / huge value (integers), cut to one element; each Parquet column dropped, all
  null, text, NaN; each CSV column dropped, a cell ``lots``, ``nan``, ``inf`` or empty; in a
  JSONL journal the middle row damaged as a JSON object.

Each case must either be read (damage the reader can ignore: an unused key, a journal row it
skips and redoes) or raise a ``TensorCFRError`` whose message is one line naming the file
(or the folder the user named that holds it: a model folder, a run folder);
any other exception (a traceback at the command line) or a read that takes longer than
:data:`TIMEOUT_S` (a FIFO that blocks, a device read forever) fails. The node damage and the
truncation of a whole-file format must be refused. A new reader is covered by adding it to
the registry; the whole grid (about 900 cases) runs in about 30 s on one core. Each read
runs under a time limit (SIGALRM); a device or FIFO case also under an address-space bound
(``RLIMIT_AS``, 2 GiB beyond what the process maps: an unbounded read fails with MemoryError),
and every case under a memory watch that ends the test process past 4 GiB (a read of a device
in C cannot be interrupted, and the machine is shared), so a blocking or unbounded reader fails
the test instead of taking the machine.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import resource
import shutil
import signal
import stat
import threading
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from tensorcfr.errors import TensorCFRError
from tensorcfr.file_readers import READERS, FileReader, Sample

TIMEOUT_S = 10.0
"""Longest a read of a damaged file may take (the valid samples read in milliseconds)."""

MEMORY_BYTES = 2 * 2**30
"""Most memory a read of a damaged file may take beyond what the process holds."""

Damage = Callable[[Path, bytes], None]


# ----------------------------------------------------------------------------- damage


def _replace_with(path: Path, make: Callable[[Path], None]) -> None:
    _remove(path)
    make(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero's numbers
    except (PermissionError, OSError):
        os.symlink("/dev/zero", path)


def _byte_damage(name: str, container: str) -> Iterator[tuple[str, Damage, bool]]:
    """(label, damage, must the reader refuse it?) of the byte and node damage."""
    whole_file = container in ("json", "npz", "parquet", "binary")
    yield "truncated", lambda p, raw: p.write_bytes(raw[:len(raw) // 2]), whole_file
    yield "empty", lambda p, raw: p.write_bytes(b""), False

    def flipped(p: Path, raw: bytes) -> None:
        rng = random.Random(zlib.crc32(name.encode()))
        data = bytearray(raw)
        for _ in range(16):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        p.write_bytes(bytes(data))

    yield "16 bytes flipped", flipped, False
    yield "a FIFO", lambda p, raw: _replace_with(p, os.mkfifo), True
    yield "a character device", lambda p, raw: _replace_with(p, _device), True
    yield "a folder", lambda p, raw: _replace_with(p, lambda q: q.mkdir()), True


_BAD_VALUES: tuple[tuple[str, Any], ...] = (
    ("null", None), ("text", "lots"), ("a list", [1, 2]), ("NaN", math.nan),
    ("Infinity", math.inf))


def _json_paths(obj: Any) -> list[tuple[str, ...]]:
    """Keys of a JSON object, and of the objects it holds one level down."""
    if not isinstance(obj, dict):
        return []
    paths = []
    for key, value in obj.items():
        paths.append((key,))
        if isinstance(value, dict):
            paths += [(key, inner) for inner in value]
    return paths


def _json_variants(obj: Any) -> Iterator[tuple[str, Any]]:
    """(label, damaged copy) of a parsed JSON object: each key deleted or given each bad
    value."""
    for path in _json_paths(obj):
        for label, value in (("deleted", _DELETE),) + _BAD_VALUES:
            copy = json.loads(json.dumps(obj))
            holder = copy
            for key in path[:-1]:
                holder = holder[key]
            if value is _DELETE:
                del holder[path[-1]]
            else:
                holder[path[-1]] = value
            yield f"key {'.'.join(path)} {label}", copy


_DELETE = object()


def _json_damage(raw: bytes) -> Iterator[tuple[str, Damage, bool]]:
    obj = json.loads(raw)
    for label, copy in _json_variants(obj):
        yield label, (lambda p, r, c=copy: p.write_text(json.dumps(c))), False


def _jsonl_damage(raw: bytes) -> Iterator[tuple[str, Damage, bool]]:
    lines = raw.decode().splitlines()
    middle = len(lines) // 2
    yield "a garbled middle line", (lambda p, r: p.write_text("\n".join(
        lines[:middle] + ['{"id": "x", "ki#'] + lines[middle + 1:]) + "\n")), False
    for label, copy in _json_variants(json.loads(lines[middle])):
        text = "\n".join(lines[:middle] + [json.dumps(copy)] + lines[middle + 1:]) + "\n"
        yield f"middle row: {label}", (lambda p, r, t=text: p.write_text(t)), False


def _load_npz(raw: bytes, path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: np.asarray(data[k]) for k in data.files}


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _npz_damage(path: Path, raw: bytes, json_member: str | None
                ) -> Iterator[tuple[str, Damage, bool]]:
    arrays = _load_npz(raw, path)
    for name, array in arrays.items():
        variants: list[tuple[str, Any]] = [("dropped", None), ("text", np.array("lots"))]
        if array.dtype.kind == "f" and array.size:
            for bad in (math.nan, math.inf):
                copy = array.copy()
                copy.flat[0] = bad
                variants.append((f"holding {bad}", copy))
        if array.dtype.kind in "iu" and array.size:
            for bad in (-1, np.iinfo(array.dtype).max):
                copy = array.copy()
                copy.flat[0] = bad if array.dtype.kind == "i" or bad >= 0 else 0
                variants.append((f"holding {bad}", copy))
        if array.size > 1:
            variants.append(("cut to one element", array.reshape(-1)[:1]))
        for label, value in variants:
            def damage(p: Path, r: bytes, name: str = name, value: Any = value) -> None:
                copy = dict(arrays)
                if value is None:
                    del copy[name]
                else:
                    copy[name] = value
                _save_npz(p, copy)

            yield f"array {name} {label}", damage, False
    if json_member is not None and json_member in arrays:
        for label, meta in _json_variants(json.loads(str(arrays[json_member]))):
            def damage(p: Path, r: bytes, meta: Any = meta) -> None:
                _save_npz(p, {**arrays, json_member: np.array(json.dumps(meta))})

            yield f"{json_member} {label}", damage, False


def _parquet_damage(path: Path) -> Iterator[tuple[str, Damage, bool]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(str(path))
    n = table.num_rows
    for name in table.column_names:
        column = table.column(name)
        variants: list[tuple[str, Any]] = [
            ("dropped", None), ("all null", pa.nulls(n, column.type)),
            ("text", pa.array(["lots"] * n))]
        if pa.types.is_floating(column.type) or pa.types.is_integer(column.type):
            variants.append(("NaN", pa.array([math.nan] * n)))
            variants.append(("inf", pa.array([math.inf] * n)))
        for label, value in variants:
            def damage(p: Path, r: bytes, name: str = name, value: Any = value) -> None:
                index = table.column_names.index(name)
                changed = table.remove_column(index) if value is None else \
                    table.set_column(index, name, value)
                pq.write_table(changed, str(p))

            yield f"column {name} {label}", damage, False


def _csv_damage(raw: bytes) -> Iterator[tuple[str, Damage, bool]]:
    rows = [line.split(",") for line in raw.decode().splitlines()]
    width = len(rows[0])
    for column in range(width):
        dropped = "\n".join(",".join(c for i, c in enumerate(r) if i != column)
                            for r in rows) + "\n"
        yield f"column {column} dropped", (lambda p, r, t=dropped: p.write_text(t)), False
        for bad in ("lots", "nan", "inf", ""):
            changed = [list(r) for r in rows]
            changed[1][column] = bad
            text = "\n".join(",".join(r) for r in changed) + "\n"
            yield f"column {column} row 1 {bad!r}", (lambda p, r, t=text: p.write_text(t)), \
                False


def damages(reader: FileReader, sample: Sample, raw: bytes
            ) -> Iterator[tuple[str, Damage, bool]]:
    """Every (label, damage, must refuse) case of one reader."""
    yield from _byte_damage(reader.name, reader.container)
    if reader.container == "json":
        yield from _json_damage(raw)
    elif reader.container == "jsonl":
        yield from _jsonl_damage(raw)
    elif reader.container == "npz":
        yield from _npz_damage(sample.file, raw, reader.json_member)
    elif reader.container == "parquet":
        yield from _parquet_damage(sample.file)
    elif reader.container == "csv":
        yield from _csv_damage(raw)


# ----------------------------------------------------------------------------- reading


class _Stopped(Exception):
    pass


def _resident_bytes() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def _guard(seconds: float, extra_bytes: int, label: str, *, bound_address_space: bool
           ) -> Iterator[None]:
    """Stop the block with ``_Stopped`` after ``seconds`` (SIGALRM: a blocked ``open`` of a
    FIFO returns to Python and raises). Memory: with ``bound_address_space`` (a device or FIFO
    in the file's place, where an unbounded read could happen) the address space is bounded
    to what the process maps plus ``extra_bytes`` (``RLIMIT_AS``: the read fails with
    MemoryError); always, a thread samples the resident size every 5 ms and, past twice
    ``extra_bytes`` more than at the start, ends the test process with a line naming the
    case (a read of a device in C cannot be interrupted; the machine is shared)."""
    baseline = _resident_bytes()
    done = threading.Event()

    def expire(signum: int, frame: Any) -> None:
        raise _Stopped

    def watch() -> None:
        while not done.wait(0.005):
            if _resident_bytes() - baseline > 2 * extra_bytes:
                os.write(2, f"\ntest_readers_fuzz: {label} took more than "
                            f"{2 * extra_bytes / 2**30:.0f} GiB; the test process is stopped "
                            "to protect the machine\n".encode())
                os._exit(3)

    previous = signal.signal(signal.SIGALRM, expire)
    limits = resource.getrlimit(resource.RLIMIT_AS)
    if bound_address_space:
        with open("/proc/self/statm", "rb") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (mapped + extra_bytes, limits[1]))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.setitimer(signal.ITIMER_REAL, 0)
        resource.setrlimit(resource.RLIMIT_AS, limits)
        watcher.join()
        signal.signal(signal.SIGALRM, previous)


def _outcome(sample: Sample, label: str = "the valid sample", node: bool = False) -> str:
    """``read`` or ``refused`` (one line naming the file) when the read is acceptable; else
    what went wrong (``node``: a FIFO, device or folder is in the file's place)."""
    try:
        with _guard(TIMEOUT_S, MEMORY_BYTES, label, bound_address_space=node):
            sample.read()
    except _Stopped:
        return f"no answer within {TIMEOUT_S} s (blocked or unbounded)"
    except TensorCFRError as exc:
        message = str(exc)
        if "\n" in message.strip():
            return f"a message of several lines: {message!r}"
        # the file, or the folder the user named that holds it (a model folder, a run)
        if sample.file.name not in message and str(sample.file.parent) not in message:
            return f"the message names neither {sample.file.name} nor its folder: {message!r}"
        return "refused"
    except Exception as exc:  # noqa: BLE001 - what the test looks for
        return f"{type(exc).__name__} (a traceback at the command line): {exc}"[:300]
    return "read"


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_every_damage_is_read_or_refused_in_one_line(reader: FileReader, tmp_path: Path,
                                                     one_thread: None) -> None:
    sample = reader.make(tmp_path)
    raw = sample.file.read_bytes()
    sample.read()  # the valid sample reads (and the reader's imports are done)
    assert _outcome(sample) == "read"
    problems, cases = [], 0
    for label, damage, must_refuse in list(damages(reader, sample, raw)):
        cases += 1
        _remove(sample.file)
        sample.file.write_bytes(raw)
        damage(sample.file, raw)
        result = _outcome(sample, f"{reader.name}, {label}",
                          node=label in ("a FIFO", "a character device", "a folder"))
        if result not in ("read", "refused") or (must_refuse and result != "refused"):
            problems.append(f"{label}: {result}")
    _remove(sample.file)
    sample.file.write_bytes(raw)
    assert cases >= 6
    assert not problems, f"{reader.name}: {len(problems)} of {cases} cases:\n" + \
        "\n".join(problems)


def test_the_registry_covers_every_container() -> None:
    kinds = {r.container for r in READERS}
    assert {"json", "jsonl", "npz", "parquet", "csv", "binary"} <= kinds
    assert len({r.name for r in READERS}) == len(READERS)


# ----------------------------------------------------------------------------- raw reads

_RAW_READS = {("np", "load"), ("numpy", "load"), ("pq", "read_table"), ("pq", "ParquetFile"),
              ("json", "load")}
"""Calls that read a file's contents directly (module alias, function)."""
_GUARDS = {"check_input_file", "reading", "read_input_bytes"}
"""``tensorcfr.utils.reading``'s guards: a function that reads a file raw must call one (a
FIFO, a device or a folder refused unopened; a parser error one line naming the file)."""


def _raw_read(call: Any) -> bool:
    import ast

    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    if (func.value.id, func.attr) in _RAW_READS:
        return True
    # json.loads(path.read_text()) / json.loads(path.read_bytes())
    return (func.value.id, func.attr) == ("json", "loads") and bool(call.args) and \
        isinstance(call.args[0], ast.Call) and isinstance(call.args[0].func, ast.Attribute) \
        and call.args[0].func.attr in ("read_text", "read_bytes")


def test_every_raw_file_read_in_the_package_is_guarded() -> None:
    """The kind of defect the registry's fuzzing found in readers it did not list yet (a bare
    ``np.load`` that blocked on a FIFO and gave tracebacks): every function of the package
    that reads a file's contents itself (``np.load``, ``pq.read_table``, ``json.load``...)
    also calls one of ``utils.reading``'s guards, or leaves the reading to its helpers
    (``load_json``, ``load_npz``, ``load_parquet_rows``)."""
    from _package_source import package_functions

    unguarded = []
    # (skipped: the guards themselves; the registry reads back the samples it wrote)
    for where, function, calls, named in package_functions(skip=("utils/reading.py",
                                                                 "file_readers.py")):
        if not named & _GUARDS:
            unguarded += [f"{where}:{c.lineno} ({function.name})" for c in calls
                          if _raw_read(c)]
    assert not unguarded, "file reads without utils.reading's guards (use load_json, " \
        f"load_npz, load_parquet_rows or check_input_file): {unguarded}"
