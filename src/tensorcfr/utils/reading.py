"""Reading input files safely: every reader of a file the user hands a command (tables,
journals, checkpoints, strategy/Phi/bucket-map files, model folders, deck and MM tables)
goes through the helpers here, so that

* a folder, FIFO, device node or socket given where a file is wanted is refused, by name,
  without opening it (``stat`` first: opening a FIFO for reading blocks until a writer comes,
  and reading ``/dev/zero`` never ends);
* a file larger than the reader's bound is refused unread;
* whatever malformed content does to the parser (a truncated ZIP, flipped bytes, a missing
  key or column, a value of the wrong type, ``NaN`` or ``Infinity``) ends as one
  :class:`~tensorcfr.errors.CorruptFileError` line that names the file, never a traceback.

Nothing here knows a game or a format beyond JSON, NPZ and Parquet containers; the caller
names what the file should be (``"a deck file"``) and checks its meaning.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import stat
import zipfile
from pathlib import Path
from typing import Any, Iterator, Mapping

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["MAX_JSON_BYTES", "MAX_NPZ_BYTES", "MAX_TABLE_BYTES", "check_input_file",
           "check_input_folder", "damaged", "has_keys", "load_json", "load_npz", "load_parquet_rows",
           "read_input_bytes", "reading", "require_keys", "saved_count", "strict_json_loads",
           "value_is"]

MAX_JSON_BYTES = 64 * 2**20
"""Default bound on a JSON file (manifest, record, identity): 64 MiB."""

MAX_NPZ_BYTES = 16 * 2**30
"""Default bound on an NPZ file (checkpoints, strategies): 16 GiB."""

MAX_TABLE_BYTES = 4 * 2**30
"""Default bound on a Parquet table: 4 GiB."""

MAX_SAVED_ITERATION = 10**12
"""Largest iteration count a checkpoint may hold (a trillion iterations: far past any run;
``1e30`` or ``10**30`` is damage, and would overflow the averaging weights)."""

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _node_kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _stat_input(path: str | os.PathLike[str], what: str) -> tuple[Path, os.stat_result]:
    """``(path, os.stat(path))`` with symbolic links followed; one-line
    :class:`TensorCFRError` naming ``what`` when the path is empty, missing or unreadable."""
    target = Path(path)
    if str(path) == "":
        raise TensorCFRError(f"{what}: the path is empty")
    try:
        return target, os.stat(target)
    except FileNotFoundError:
        raise TensorCFRError(f"{what} {target} does not exist") from None
    except OSError as exc:
        raise TensorCFRError(f"cannot read {what} {target}: "
                             f"{(exc.strerror or str(exc)).lower()}") from None


def check_input_file(path: str | os.PathLike[str], what: str,
                     max_bytes: int | None = None) -> Path:
    """Return ``path`` if it is a regular file (symbolic links followed) of at most
    ``max_bytes``; else raise :class:`TensorCFRError` in one line naming ``what`` and the
    path: missing, a folder, a FIFO or a device (found by ``stat``, nothing is opened)."""
    target, info = _stat_input(path, what)
    if not stat.S_ISREG(info.st_mode):
        raise TensorCFRError(f"{what} {target} is {_node_kind(info.st_mode)}, not a file")
    if max_bytes is not None and info.st_size > max_bytes:
        raise TensorCFRError(f"{what} {target} is {info.st_size:,} bytes, too large for "
                             f"{what} ({max_bytes:,} bytes at most); it was not read")
    return target


def check_input_folder(path: str | os.PathLike[str], what: str) -> Path:
    """Return ``path`` if it is a folder, else raise :class:`TensorCFRError` saying what it
    is (missing, a file, a FIFO, a device)."""
    target, info = _stat_input(path, what)
    if not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else _node_kind(info.st_mode)
        raise TensorCFRError(f"{what} {target} is {kind}, not a folder")
    return target


def read_input_bytes(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (checked before and while
    reading; the file is opened non-blocking, so a FIFO swapped in after the check cannot
    block). One-line :class:`TensorCFRError` otherwise."""
    target = check_input_file(path, what, max_bytes)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise TensorCFRError(f"cannot read {what} {target}: "
                             f"{(exc.strerror or str(exc)).lower()}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TensorCFRError(f"{what} {target} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise TensorCFRError(f"cannot read {what} {target}: "
                             f"{(exc.strerror or str(exc)).lower()}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # the file grew since the check
        raise TensorCFRError(f"{what} {target} is larger than {max_bytes:,} bytes")
    return data


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, KeyError):
        text = f"missing {text}" if text else "a missing key"
    if not text:
        text = type(exc).__name__
    return text[:160]


def damaged(path: str | os.PathLike[str], what: str, reason: str) -> CorruptFileError:
    """The one-line error for a damaged file: ``{what} {path} is damaged ({reason})``."""
    reason = " ".join(reason.split())[:200]
    return CorruptFileError(f"{what} {path} is damaged or not {what} ({reason})")


def _parser_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [
        OSError, ValueError, KeyError, IndexError, TypeError, AttributeError, EOFError,
        zipfile.BadZipFile, UnicodeDecodeError, RecursionError, OverflowError,
        ZeroDivisionError, AssertionError, NotImplementedError]
    with contextlib.suppress(ImportError):
        import pyarrow as pa

        errors.append(pa.ArrowException)
    with contextlib.suppress(ImportError):
        import xgboost

        errors.append(xgboost.core.XGBoostError)
    return tuple(errors)


@contextlib.contextmanager
def reading(path: str | os.PathLike[str], what: str) -> Iterator[None]:
    """Inside the block, any parser failure on malformed content (ValueError, KeyError,
    TypeError, a bad ZIP, a pyarrow or XGBoost error...) becomes one
    :class:`CorruptFileError` naming ``what`` and ``path``; a :class:`TensorCFRError`
    passes through unchanged (add the path to its message if it lacks it)."""
    try:
        yield
    except TensorCFRError as exc:
        if str(path) in str(exc):
            raise
        raise type(exc)(f"{what} {path}: {exc}") from None
    except _parser_errors() as exc:
        raise damaged(path, what, _reason(exc)) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def strict_json_loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` (Python's
    extensions, never written by this project) with a ValueError."""
    return json.loads(text, parse_constant=_refuse_constant)


def load_json(path: str | os.PathLike[str], what: str,
              max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Parse a strict JSON file (no NaN/Infinity) of at most ``max_bytes``; one-line errors
    naming the file (see :func:`read_input_bytes` and :func:`reading`)."""
    raw = read_input_bytes(path, what, max_bytes)
    with reading(path, what):
        return strict_json_loads(raw.decode("utf-8"))


_TYPE_NAMES = {int: "an integer", float: "a number", str: "text", bool: "true or false",
               list: "a list", dict: "an object"}


def value_is(value: Any, kind: type | tuple[type, ...]) -> bool:
    """Whether ``value`` (parsed JSON) is of ``kind``: ``float`` is any finite number,
    ``int`` an integer but not ``true``/``false``, ``type(None)`` is null; a tuple is any of
    its kinds."""
    for k in kind if isinstance(kind, tuple) else (kind,):
        if k is type(None):
            if value is None:
                return True
        elif k is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and math.isfinite(value):
                return True
        elif k is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return True
        elif isinstance(value, k):
            return True
    return False


def has_keys(obj: Any, fields: Mapping[str, type | tuple[type, ...]]) -> bool:
    """Whether ``obj`` is a dict holding every key of ``fields`` with a value of its kind
    (:func:`value_is`); the test behind journal row checks."""
    return isinstance(obj, dict) and all(k in obj and value_is(obj[k], kind)
                                         for k, kind in fields.items())


def saved_count(value: Any, path: str | os.PathLike[str], what: str, key: str,
                high: int = MAX_SAVED_ITERATION) -> int:
    """``value`` (a count read from a file, e.g. a checkpoint's iteration) if it is an
    integer (not a float such as ``1e30``, not ``true``) in ``0..high``; else one-line
    :class:`CorruptFileError` naming the file and ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise damaged(path, what, f"{key} is {value!r:.40}, not a count in 0..{high:,}")
    return value


def require_keys(obj: Any, fields: Mapping[str, type | tuple[type, ...]],
                 path: str | os.PathLike[str], what: str, *, where: str = "") -> dict[str, Any]:
    """Check that ``obj`` is a JSON object holding each key of ``fields`` with a value of its
    type (``float`` accepts integers and must be finite; ``int`` refuses ``true``); return it.
    Raises :class:`CorruptFileError` naming the file, the key and what was found."""
    at = f" {where}" if where else ""
    if not isinstance(obj, dict):
        raise damaged(path, what, f"{where or 'the content'} is {type(obj).__name__}, "
                      "expected an object")
    for key, kind in fields.items():
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if key not in obj:
            raise damaged(path, what, f"key {key!r}{at} is missing")
        value = obj[key]
        if not value_is(value, kind):
            wanted = " or ".join(_TYPE_NAMES.get(k, "null" if k is type(None) else k.__name__)
                                 for k in kinds)
            raise damaged(path, what, f"key {key!r}{at} is {value!r:.40}, expected {wanted}")
    return obj


def load_npz(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_NPZ_BYTES,
             *, required: tuple[str, ...] = (), finite: bool = True) -> dict[str, Any]:
    """Every array of an NPZ file (no pickles), read at once so that a truncated member
    fails here; each name of ``required`` must be present, and float arrays must be finite
    unless ``finite`` is false. One-line errors naming the file."""
    import numpy as np

    target = check_input_file(path, what, max_bytes)
    with reading(target, what):
        with np.load(target, allow_pickle=False) as archive:
            arrays = {name: np.asarray(archive[name]) for name in archive.files}
    for name in required:
        if name not in arrays:
            raise damaged(target, what, f"array {name!r} is missing")
    if finite:
        from tensorcfr.utils.checks import check_finite

        for name, array in arrays.items():
            if array.dtype.kind in "fc":
                check_finite(array, f"{what} {target}: array {name!r}")
    return arrays


def check_game_rows(path: str | os.PathLike[str], what: str, arrays: Mapping[str, Any],
                    num_features: int, *, features: str = "", game_key: str = "game",
                    max_games: int | None = None) -> int:
    """Check the training rows of a checkpoint read by :func:`load_npz`: ``x`` float
    [N, num_features], ``y`` float [N], ``arrays[game_key]`` integer [N] (the game each row
    came from) and ``games`` one integer (games played, in ``0..max_games``) above every
    row's game number. Returns ``games``; one-line :class:`CorruptFileError` naming the file
    (``features``: words before "features" in the message, e.g. the feature set's name)."""
    x, y, game, games = arrays["x"], arrays["y"], arrays[game_key], arrays["games"]
    if x.ndim != 2 or x.shape[1] != num_features or x.dtype.kind != "f":
        raise damaged(path, what, f"x has shape {x.shape} ({x.dtype}), expected rows of "
                      f"{num_features} {features + ' ' if features else ''}features")
    if y.shape != (x.shape[0],) or y.dtype.kind != "f" or game.shape != (x.shape[0],) \
            or game.dtype.kind not in "iu":
        raise damaged(path, what, f"y {y.shape} and {game_key} {game.shape} must be one number "
                      f"per row of x ({x.shape[0]} rows)")
    if games.shape != () or games.dtype.kind not in "iu":
        raise damaged(path, what, "games must be one integer")
    done = int(games)
    too_many = max_games is not None and done > max_games
    if done < 0 or too_many or (game.size and not (0 <= int(game.min()) and
                                                   int(game.max()) < done)):
        raise damaged(path, what, f"games {done} does not cover the rows' game numbers")
    return done


def npz_bytes_reader(data: bytes) -> Any:
    """An NPZ archive over bytes already read (for a caller that bounded the read)."""
    import numpy as np

    return np.load(io.BytesIO(data), allow_pickle=False)


def load_parquet_rows(path: str | os.PathLike[str], what: str,
                      columns: Mapping[str, type | tuple[type, ...]],
                      max_bytes: int = MAX_TABLE_BYTES, *,
                      nullable: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The rows of a Parquet table as dicts, after checking that each column of
    ``columns`` exists and every value has its type (``float``: finite number; ``int``:
    integer); columns in ``nullable`` may hold nulls (None), and NaN there reads as None.
    One-line :class:`CorruptFileError` naming the file, the column and the row."""
    import pyarrow.parquet as pq

    target = check_input_file(path, what, max_bytes)
    with reading(target, what):
        table = pq.read_table(str(target))
        names = set(table.column_names)
        for column in columns:
            if column not in names:
                raise damaged(target, what, f"column {column!r} is missing")
        rows = table.to_pylist()
    for number, row in enumerate(rows):
        for column, kind in columns.items():
            value = row.get(column)
            if isinstance(value, float) and math.isnan(value) and column in nullable:
                row[column] = value = None
            if value is None and column in nullable:
                continue
            try:
                require_keys({column: value}, {column: kind}, target, what)
            except CorruptFileError:
                kinds = kind if isinstance(kind, tuple) else (kind,)
                wanted = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
                raise damaged(target, what, f"column {column!r}, row {number}: "
                              f"{value!r:.40} is not {wanted}") from None
    return rows
