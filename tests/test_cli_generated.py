"""Bad values for every option of every command, generated from the CLI's own command tree.

The test walks ``typer.main.get_command(app)`` (every group, every command, every option and
argument) and feeds each parameter the bad values of its kind:

- numbers (``int``/``float``): values outside the range the option declares with typer's
  ``min=``/``max=`` (a new number option without a declared range fails the test), NaN,
  +-inf, 1e30, 99999999999999999999, an empty value, a word;
- text options: an empty and a blank value (``refuse_empty_text`` gives every text option
  without a callback of its own that check, so a new option has it too);
- paths (options whose callback is ``tensorcfr.cli.common.path_check(ROLE)``, which says the
  role: an output file or folder, an input file or folder): an empty path, a folder, a file
  where a folder is wanted, a path under a regular file, a folder where nothing can be
  created (under ``/proc``, which root cannot write either), a missing input, a FIFO, a
  character device (a ``mknod`` copy of ``/dev/null``), a link to the FIFO, and the same
  path as another output option of the command. A string option whose help speaks of a
  file or folder must carry a ``PathCheck`` (so a new path option is not missed).

Every case must exit with code 2 and print exactly one ``error:`` line naming the option, no
traceback, within ``CASE_SECONDS``, before the command's body runs (the body is replaced by one that fails the case:
each bad value here is decidable from the command line alone, so no work ever starts), and
leave every file in the test's folder and the current folder as it was (no device or FIFO
replaced, nothing created). The grid is run whole (about 1,700 cases, about 3 s on one core);
if it grows past ``MAX_CASES``, a fixed-seed sample of that size is run.
"""

from __future__ import annotations

import math
import os
import random
import re
import signal
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer

from tensorcfr.cli.common import PathCheck, option_name
from tensorcfr.cli.main import app, main

MAX_CASES = 4000
"""Cases run at most (a fixed-seed sample above that)."""

SAMPLE_SEED = 27

NOT_PATHS = {("pasur", "batch", "--decks"), ("solve", "--algo")}
"""String options whose help names a file but which take no path (``--decks A-B`` rows, an
algorithm "or the checkpoint's")."""

PATH_WORDS = re.compile(r"\b(files?|folders?|director(y|ies)|paths?|checkpoint|png|npz|csv|"
                        r"json)\b", re.IGNORECASE)


CASE_SECONDS = 10
"""A case still running after this long (a check that opened a FIFO, say) fails as hung."""


class BodyReached(Exception):
    """A command's body started: its bad value was accepted by the parser."""


class CaseHung(Exception):
    """A case ran past ``CASE_SECONDS``."""


def _hung(signum: int, frame: Any) -> None:
    raise CaseHung


@dataclass(frozen=True)
class Case:
    """One generated invocation: ``command`` with ``param`` set to ``value``."""

    command: tuple[str, ...]
    param: str
    label: str
    value: str
    extra: tuple[str, ...] = ()


def walk_commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, click command) of every leaf command of ``tensorcfr``."""
    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        subs = getattr(command, "commands", None)
        if subs is None:
            yield path, command
            return
        for name in sorted(subs):
            yield from walk(subs[name], (*path, name))
    yield from walk(typer.main.get_command(app), ())


def _check(param: Any) -> PathCheck | None:
    """The :class:`PathCheck` of a path parameter (``callback=path_check(...)``), or None."""
    callback = param.type_descriptor.parameter_info.callback
    check = getattr(callback, "path_check", None)
    return check if isinstance(check, PathCheck) else None


def _type(param: Any) -> Any:
    annotation = param.type_descriptor.annotation
    args = getattr(annotation, "__args__", None)
    if args and getattr(annotation, "__origin__", None) is list:
        return args[0]
    return annotation


def _is_flag(param: Any) -> bool:
    return _type(param) is bool


def _number_is_bad(text: str, kind: type, low: float | None, high: float | None) -> bool:
    try:
        value = float(text) if kind is float else int(text)
    except ValueError:
        if kind is int:  # "1e30" and "2.5" are not integers
            return True
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return (low is not None and value < low) or (high is not None and value > high)


def _number_values(param: Any) -> list[tuple[str, str]]:
    kind = _type(param)
    low, high = param.min, param.max
    texts = ["-1", "0", "1e30", "-1e30", "99999999999999999999", "-99999999999999999999",
             "nan", "inf", "-inf", "", "lots"]
    if low is not None:
        texts.append(str(low - 1))
    if high is not None:
        texts.append(str(high + 1))
    return [(f"number {t!r}", t) for t in dict.fromkeys(texts)
            if _number_is_bad(t, kind, low, high)]


@dataclass
class Places:
    """The bad paths of one test folder."""

    root: Path
    folder: Path
    regular: Path
    fifo: Path
    device: Path | None
    fifo_link: Path

    @classmethod
    def make(cls, root: Path) -> "Places":
        folder = root / "a_folder"
        folder.mkdir(parents=True)
        regular = root / "a_file"
        regular.write_text("keep me\n")
        fifo = root / "a_fifo"
        os.mkfifo(fifo)
        device: Path | None = root / "a_device"
        try:
            os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a copy of /dev/null
        except (OSError, AttributeError):
            device = None
        link = root / "link_to_fifo"
        link.symlink_to(fifo)
        return cls(root, folder, regular, fifo, device, link)


def _path_values(role: str, places: Places) -> list[tuple[str, str]]:
    under_file = str(places.regular / "x" / "out.bin")
    unwritable = "/proc/tensorcfr-generated-test/out.bin"
    missing = str(places.root / "missing" / "in.bin")
    specials = [("a FIFO", str(places.fifo)), ("a link to a FIFO", str(places.fifo_link))]
    if places.device is not None:
        specials.append(("a device", str(places.device)))
    values = [("an empty path", ""), *specials]
    if role == "output-file":
        values += [("a folder", str(places.folder)), ("a path under a file", under_file),
                   ("an unwritable folder", unwritable)]
    elif role == "output-dir":
        values += [("a regular file", str(places.regular)), ("a path under a file", under_file),
                   ("an unwritable folder", unwritable)]
    elif role == "input-file":
        values += [("a missing file", missing), ("a folder", str(places.folder))]
    elif role == "input-dir":
        values += [("a missing folder", missing), ("a regular file", str(places.regular))]
    else:
        values += [("a missing path", missing)]
    return values


def _params(command: Any) -> list[Any]:
    return [p for p in command.params if p.expose_value and not _is_flag(p)]


def _argv_for(param: Any, value: str, command: Any, places: Places) -> list[str]:
    """The command line giving ``value`` to ``param`` first (processed first); arguments
    before it get a valid placeholder."""
    if param.param_type_name == "option":
        return [param.opts[0], value]
    argv: list[str] = []
    for other in command.params:
        if other is param:
            break
        if other.param_type_name == "argument":
            check = _check(other)
            role = check.role if check is not None else ""
            argv.append(str(places.folder) if role == "input-dir" else
                        str(places.regular) if role.startswith("input") else "kuhn_poker")
    return [*argv, value]


def generate_cases(places: Places) -> list[Case]:
    """Every (command, parameter, bad value) of the tree."""
    cases: list[Case] = []
    for path, command in walk_commands():
        outputs = [p for p in _params(command) if _check(p) is not None
                   and _check(p).role.startswith("output") and p.param_type_name == "option"]
        for param in _params(command):
            name = option_name(param)
            check = _check(param)
            if check is not None and check.what and param.param_type_name == "argument":
                name = check.what  # "run folder x does not exist" rather than "RUNS x ..."
            if check is not None:
                values = _path_values(check.role, places)
                if check.per_file:  # the command reports a missing file or a folder per file
                    values = [(label, value) for label, value in values
                              if label not in ("a missing file", "a folder")]
            elif _type(param) in (int, float):
                values = _number_values(param)
            elif _type(param) is str:
                values = [("an empty text", ""), ("a blank text", "  ")]
            else:
                continue
            for label, value in values:
                argv = _argv_for(param, value, command, places)
                cases.append(Case(path, name, label, value, tuple(argv)))
            if param in outputs:
                for other in outputs:
                    if other is param:
                        continue
                    same = str(places.root / "same_output")
                    argv = [other.opts[0], same, param.opts[0], same]
                    cases.append(Case(path, name, f"the path of {option_name(other)}", same,
                                      tuple(argv)))
    return cases


def _snapshot(*folders: Path) -> dict[str, tuple[int, int, int]]:
    """(file type bits, size, mtime ns) of every entry under ``folders``."""
    seen: dict[str, tuple[int, int, int]] = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in dirnames + filenames:
                full = os.path.join(dirpath, name)
                info = os.lstat(full)
                seen[full] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns)
    return seen


@pytest.fixture()
def places(tmp_path: Path) -> Places:
    return Places.make(tmp_path / "places")


def _leaf_commands_with_bodies_replaced() -> Any:
    root = typer.main.get_command(app)

    def replace(command: Any, path: tuple[str, ...]) -> None:
        subs = getattr(command, "commands", None)
        if subs is None:
            def body(*args: Any, **kwargs: Any) -> None:
                raise BodyReached(" ".join(path))
            command.callback = body
            return
        for name, sub in subs.items():
            replace(sub, (*path, name))

    replace(root, ())
    return root


def test_every_path_option_declares_its_role() -> None:
    """A string option whose help names a file or folder checks it as a path."""
    missing = []
    for path, command in walk_commands():
        for param in _params(command):
            if _check(param) is not None or _type(param) in (int, float):
                continue
            name = option_name(param)
            if (*path, name) in NOT_PATHS:
                continue
            if PATH_WORDS.search(getattr(param, "help", None) or ""):
                missing.append(f"{' '.join(path)} {name}")
    assert not missing, ("path options without a PathCheck callback (see "
                         f"tensorcfr.cli.common.PathCheck): {missing}")


def test_every_number_option_declares_its_range() -> None:
    """Every int/float option states its valid range (typer ``min=``/``max=``), so that
    the generated test knows its bad values and absurd values are refused when parsed."""
    missing = []
    for path, command in walk_commands():
        for param in _params(command):
            if _type(param) in (int, float) and (param.min is None or param.max is None):
                missing.append(f"{' '.join(path)} {option_name(param)}")
    assert not missing, f"number options without min= and max=: {missing}"


def test_generated_bad_values(places: Places, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    cases = generate_cases(places)
    total = len(cases)
    assert total > 500, total  # the tree has ~20 commands and ~240 parameters
    if total > MAX_CASES:
        cases = random.Random(SAMPLE_SEED).sample(cases, MAX_CASES)
    with capsys.disabled():  # the grid's size, in the output of `pytest -s`
        print(f"\n{total} generated cases, {len(cases)} run")
    root = _leaf_commands_with_bodies_replaced()
    monkeypatch.setattr(typer.main, "get_command", lambda _app: root)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = _snapshot(places.root, cwd)
    failures: list[str] = []
    for case in cases:
        argv = ["tensorcfr", *case.command, *case.extra]
        monkeypatch.setattr(sys, "argv", argv)
        code: Any = 0
        previous = signal.signal(signal.SIGALRM, _hung)
        signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        except BodyReached:
            code = "body ran"
        except CaseHung:
            code = f"hung (over {CASE_SECONDS} s)"
        except Exception as exc:  # noqa: BLE001 - a traceback is what the test looks for
            code = f"traceback {type(exc).__name__}: {exc}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        problem = ""
        if code != 2:
            problem = f"exit {code}"
        elif "Traceback" in err:
            problem = "traceback"
        elif len(lines) != 1 or not lines[0].startswith("error:"):
            problem = f"{len(lines)} stderr lines"
        elif case.param not in lines[0] and case.param.lower() not in lines[0].lower():
            problem = "the error does not name the option"
        after = _snapshot(places.root, cwd)
        if after != before:
            changed = sorted(set(after.items()) ^ set(before.items()))
            problem += f" changed files: {changed[:3]}"
            before = after
        if problem:
            failures.append(f"{' '.join(case.command)} {case.param} = {case.label} "
                            f"({case.value!r}): {problem}; stderr: {' | '.join(lines)[:200]}")
    assert not failures, (f"{len(failures)} of {len(cases)} cases failed:\n"
                          + "\n".join(failures))
