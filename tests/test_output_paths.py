"""Nothing destroyed, nothing lost (issue 27 part 1): outputs never replace a device, a FIFO or
another output, empty paths are refused, and a game's record survives a failed write."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from _cli_helpers import run_cli
from tensorcfr.errors import OutputWriteError, TensorCFRError
from tensorcfr.utils.io import (atomic_path, check_distinct_outputs, check_input_file,
                                check_output_dir, check_output_file, write_text_atomic,
                                write_text_or_elsewhere)


def _one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture()
def device(tmp_path: Path) -> Path:
    """A character device (a ``mknod`` copy of /dev/null), or a FIFO where mknod is denied."""
    path = tmp_path / "zero"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        os.mkfifo(path)
    return path


def _still_special(path: Path) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def test_the_atomic_writer_never_replaces_a_device_or_a_fifo(tmp_path, device) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(device)
    for target in (device, fifo, link):
        with pytest.raises(OutputWriteError, match="not a regular file"):
            write_text_atomic(target, "x")
        assert _still_special(target if target != link else device)
    with pytest.raises(OutputWriteError, match="empty"):
        with atomic_path(""):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "pipe", "zero"]


def test_path_checks(tmp_path, device, monkeypatch) -> None:
    for check in (check_output_file, check_output_dir, check_input_file):
        with pytest.raises(TensorCFRError, match="--x: the path is empty"):
            check(" ", "--x")
        with pytest.raises(TensorCFRError, match="not a"):
            check(device, "--x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TensorCFRError, match="--b a.npz is also given as --a"):
        check_distinct_outputs({"--a": tmp_path / "a.npz", "--c": None, "--b": "a.npz"})


@pytest.mark.parametrize("args", [
    ["numeral211", "embed", "--ranks", "9TA", "--suits", "2", "--flop", "3", "--turn", "3",
     "--out", "{dev}"],
    ["numeral211", "abstract", "-m", "ehs", "--ranks", "9TA", "--suits", "2", "--out", "{dev}"],
    ["numeral211", "solve", "--ranks", "9TA", "--suits", "2", "-n", "1", "--out", "{dev}"],
    ["numeral211", "solve", "--ranks", "9TA", "--suits", "2", "-n", "1", "--save", "{dev}"],
    ["numeral211", "solve", "--ranks", "9TA", "--suits", "2", "-n", "1", "--plot", "{dev}"],
    ["numeral211", "solve", "--ranks", "9TA", "--suits", "2", "-n", "1", "--curve", "{dev}"],
    ["solve", "kuhn_poker", "-n", "1", "--policy-out", "{dev}"],
    ["pasur", "play", "--seed", "1", "--record", "{dev}"],
])
def test_a_device_or_fifo_given_as_an_output_is_refused_and_kept(args, device, capsys,
                                                                 monkeypatch) -> None:
    argv = [a.replace("{dev}", str(device)) for a in args]
    line = _one_error(*run_cli(argv, capsys, monkeypatch)[::2])
    assert "not a regular file" in line and str(device) in line
    assert _still_special(device)


@pytest.mark.parametrize("args", [
    ["numeral211", "abstract", "-m", "ehs", "--ranks", "9TA", "--suits", "2",
     "--soft-temperature", "1", "--soft-out", "a.npz", "--out", "a.npz"],
    ["numeral211", "solve", "--ranks", "9TA", "--suits", "2", "-n", "1", "--save", "s.npz",
     "--out", "./s.npz"],
    ["solve", "kuhn_poker", "-n", "1", "--plot", "p.png", "--policy-out", "p.png"],
])
def test_one_output_over_another_is_refused(args, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_error(*run_cli(args, capsys, monkeypatch)[::2])
    assert "is also given as" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [
    ["pasur", "train-hidden", "--games", "1", "--out", ""],
    ["pasur", "tournament", "--agents", "random,greedy", "--deals", "1", "--out", ""],
    ["pasur", "batch", "seeds", "--decks", "0-1", "--out", ""],
    ["pasur", "analyze", ".", "--out", ""],
    ["numeral211", "embed", "--out", ""],
    ["solve", "kuhn_poker", "--save", ""],
    ["bench", "--out-dir", ""],
])
def test_empty_paths_are_refused(args, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_error(*run_cli(args, capsys, monkeypatch)[::2])
    assert "empty" in line or "is a folder" in line
    assert list(tmp_path.iterdir()) == []


def test_play_record_is_checked_before_the_first_play(tmp_path, capsys, monkeypatch) -> None:
    regular = tmp_path / "f"
    regular.write_text("x")
    for bad, words in ((str(regular / "g.json"), "not a folder"),
                       ("/proc/g.json", "cannot write"), (str(tmp_path), "is a folder")):
        line = _one_error(*run_cli(["pasur", "play", "--seed", "1", "--record", bad],
                                   capsys, monkeypatch)[::2])
        assert words in line and "--record" in line


def test_a_failed_write_saves_the_text_elsewhere(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    target = tmp_path / "game.json"
    target.mkdir()  # the path became a folder while the game was played
    (target / "keep").write_text("x")
    saved, failure = write_text_or_elsewhere(target, '{"a": 1}\n', prefix="pasur-record")
    assert failure is not None and "cannot write" in failure
    assert saved.parent == tmp_path / "spare" and saved.name.startswith("pasur-record-")
    assert json.loads(saved.read_text()) == {"a": 1}
    saved, failure = write_text_or_elsewhere(tmp_path / "ok.json", "{}", prefix="p")
    assert failure is None and saved == tmp_path / "ok.json"


def test_the_terminal_game_keeps_its_record_when_the_write_fails(tmp_path) -> None:
    pexpect = pytest.importorskip("pexpect")
    record = tmp_path / "game.json"
    spare = tmp_path / "spare"
    spare.mkdir()
    env = dict(os.environ, COLUMNS="120", LINES="50", NO_COLOR="1", TERM="dumb",
               TMPDIR=str(spare))
    child = pexpect.spawn(sys.executable, ["-m", "tensorcfr.cli.main", "pasur", "play",
                                           "--seed", "3", "--as", "alex", "--mode", "open",
                                           "--ai", "random", "--record", str(record)],
                          env=env, encoding="utf-8", timeout=60, dimensions=(50, 120))
    prompt = re.compile(r"your play \[1-(\d+), hint(?:, undo)?, quit\]: ")
    child.expect(prompt)
    record.mkdir()  # the record cannot be written there any more
    (record / "keep").write_text("x")
    child.sendline("1")
    while child.expect([prompt, r"instead"]) == 0:
        child.sendline("1")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    spares = list(spare.glob("pasur-record-*.json"))
    assert len(spares) == 1
    assert json.loads(spares[0].read_text())["seed"] == 3


# ------------------------------------------------------------------ every write is atomic

_ATOMIC_HELPERS = {"atomic_path", "write_json_atomic", "write_text_atomic",
                   "write_text_or_elsewhere"}
"""``tensorcfr.utils.io``'s writers: a temporary file in the target's folder, then a rename."""
_NOT_RESULTS = {
    ("bench/openspiel_bench.py", "__init__"): "a benchmark worker's stderr log, appended "
                                              "while it runs",
    ("games/openspiel/flatten.py", "_quiet_native_stderr"): "opens os.devnull",
    ("utils/ray_cluster.py", "_quiet_stderr"): "opens os.devnull",
    ("utils/journal.py", "repair_journal"): "cuts a torn last line off an append-only journal "
                                            "(a truncation in place: whole lines stay whole)",
}
"""Functions that open a file for writing that is not a result: why each may."""


def _raw_write(call) -> bool:
    import ast

    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in ("write_text", "write_bytes", "savefig"):
            return True
        if isinstance(func.value, ast.Name) and (func.value.id, func.attr) in {
                ("np", "save"), ("np", "savez"), ("np", "savez_compressed"),
                ("pq", "write_table"), ("json", "dump"), ("torch", "save")}:
            return True
    if isinstance(func, ast.Name) and func.id == "open":
        mode = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and \
            any(c in mode.value for c in "wax+")
    return False


def test_every_file_the_package_writes_is_written_atomically() -> None:
    """Generated over the package's source: a function that writes a file (``write_text``,
    ``np.savez``, ``pq.write_table``, ``savefig``, ``open(..., "w")``...) also uses one of the
    atomic helpers (it writes into their temporary path), or is listed with its reason; so a
    crash or a full disk never leaves a torn result, in any command, present or future."""
    from _package_source import package_functions

    found = []
    # (skipped: the helpers themselves; the fuzz samples of file_readers)
    for where, function, calls, named in package_functions(skip=("utils/io.py",
                                                                 "file_readers.py")):
        if not (named & _ATOMIC_HELPERS or (where, function.name) in _NOT_RESULTS):
            found += [f"{where}:{c.lineno} ({function.name})" for c in calls if _raw_write(c)]
    assert not found, f"writes outside utils.io's atomic helpers: {found}"
