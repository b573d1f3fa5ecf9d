"""CLI: ``tensorcfr --help``, ``pasur --help``, ``pasur deal``, ``pasur replay``.

Most cases run in-process with typer's CliRunner (``replay`` handles its own errors per file);
a few run the real entry point in a subprocess to check exit codes and that no traceback ever
reaches the user.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _cli_helpers import cli
from tensorcfr.cli.main import app
from tensorcfr.games.pasur.engine.cards import cards_str
from tensorcfr.games.pasur.engine.rules import random_deal

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "records_expected.json").read_text())
runner = CliRunner()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real ``tensorcfr`` entry point (main(), which turns user errors into exit codes)."""
    return subprocess.run([sys.executable, "-m", "tensorcfr.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


def write(path: Path, obj: Any) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


@pytest.fixture()
def records(tmp_path: Path) -> dict[str, str]:
    """Record files: three good ones, an illegal one, and invalid ones."""
    files: dict[str, str] = {}
    for i in range(3):
        files[f"good{i}"] = write(tmp_path / f"good{i}.json", EXPECTED[i]["record"])
    illegal = copy.deepcopy(EXPECTED[0]["record"])
    illegal["plays"][5] = {"card": 51, "captured": []}  # Bob lays Ks while Kd is in the pool
    files["illegal"] = write(tmp_path / "illegal.json", illegal)
    files["bad_json"] = str(tmp_path / "bad_json.json")
    Path(files["bad_json"]).write_text("{\"deal\": [1, 2,, 3]}")
    short = copy.deepcopy(EXPECTED[0]["record"])
    short["deal"].pop()
    files["cards51"] = write(tmp_path / "cards51.json", short)
    dup = copy.deepcopy(EXPECTED[0]["record"])
    dup["deal"][51] = dup["deal"][0]
    files["duplicate"] = write(tmp_path / "duplicate.json", dup)
    out = copy.deepcopy(EXPECTED[0]["record"])
    out["deal"][51] = 77
    files["out_of_range"] = write(tmp_path / "out_of_range.json", out)
    jack = copy.deepcopy(EXPECTED[0]["record"])
    jack["deal"] = [40] + [c for c in jack["deal"] if c != 40]
    files["jack_in_pool"] = write(tmp_path / "jack_in_pool.json", jack)
    files["truncated"] = str(tmp_path / "truncated.json")
    Path(files["truncated"]).write_text(json.dumps(EXPECTED[1]["record"], indent=1)[:700])
    files["missing"] = str(tmp_path / "missing.json")
    return files


INVALID = ["bad_json", "cards51", "duplicate", "out_of_range", "jack_in_pool", "truncated",
           "missing"]
INVALID_MESSAGES = {"bad_json": "not valid JSON", "cards51": "has 51", "duplicate": "twice",
                    "out_of_range": "out of range", "jack_in_pool": "Jack",
                    "truncated": "truncated", "missing": "no such file"}


# --------------------------------------------------------------------------- replay

def test_replay_good_records_json(records: dict[str, str]) -> None:
    files = [records["good0"], records["good1"], records["good2"]]
    result = runner.invoke(app, ["pasur", "replay", "--json", *files])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3  # exactly one JSON object per file, nothing else on stdout
    for i, line in enumerate(lines):
        obj = json.loads(line)
        assert obj["file"] == files[i]
        assert obj["legal"] is True
        assert (obj["alex_points"], obj["bob_points"]) == \
            (EXPECTED[i]["alex_points"], EXPECTED[i]["bob_points"])
        assert set(obj["breakdown"]) == {"alex", "bob"}
        for side in ("alex", "bob"):
            assert {"clubs", "clubs_bonus", "aces", "jacks", "ten_of_diamonds", "two_of_clubs",
                    "surs", "total"} <= set(obj["breakdown"][side])
        assert obj["breakdown"]["alex"]["total"] == obj["alex_points"]
        assert "illegal_play" not in obj and "error" not in obj


def test_replay_good_record_table(records: dict[str, str]) -> None:
    result = runner.invoke(app, ["pasur", "replay", records["good0"]])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for label in ("clubs", "clubs bonus", "aces", "jacks", "10 of diamonds", "2 of clubs",
                  "Surs", "total", "Alex", "Bob"):
        assert label in out
    assert f"Alex {EXPECTED[0]['alex_points']} - Bob {EXPECTED[0]['bob_points']}" in out


def test_replay_illegal_record(records: dict[str, str]) -> None:
    result = runner.invoke(app, ["pasur", "replay", records["illegal"]])
    assert result.exit_code == 1
    assert "play 5 (Bob): Ks can capture Kd, so it cannot be laid" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = runner.invoke(app, ["pasur", "replay", "--json", records["illegal"]])
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    obj = json.loads(line)
    assert obj["legal"] is False
    assert obj["illegal_play"]["number"] == 5
    assert obj["illegal_play"]["player"] == "Bob"
    assert obj["illegal_play"]["reason"] == "Ks can capture Kd, so it cannot be laid"


@pytest.mark.parametrize("name", INVALID)
def test_replay_invalid_files_exit_2_one_line(records: dict[str, str], name: str) -> None:
    result = runner.invoke(app, ["pasur", "replay", records[name]])
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, result.stderr
    assert err[0].startswith("error: ") and records[name] in err[0]
    assert INVALID_MESSAGES[name] in err[0]
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_replay_json_mixed_files_keep_order_and_worst_exit_code(records: dict[str, str]) -> None:
    files = [records["good0"], records["missing"], records["illegal"], records["truncated"],
             records["good1"]]
    result = runner.invoke(app, ["pasur", "replay", "--json", *files])
    assert result.exit_code == 2
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["file"] for o in objs] == files
    assert objs[0]["legal"] is True and objs[4]["legal"] is True
    assert "no such file" in objs[1]["error"] and "truncated" in objs[3]["error"]
    assert objs[2]["legal"] is False
    # illegal only (no invalid file): worst is 1
    result = runner.invoke(app, ["pasur", "replay", "--json", records["good0"], records["illegal"]])
    assert result.exit_code == 1


def test_replay_needs_a_file() -> None:
    result = runner.invoke(app, ["pasur", "replay"])
    assert result.exit_code == 2


# --------------------------------------------------------------------------- real entry point

def test_subprocess_replay_bad_file_and_illegal(records: dict[str, str]) -> None:
    proc = run_cli("pasur", "replay", "--json", records["good0"], records["jack_in_pool"],
                   records["illegal"])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [("error" in o) for o in objs] == [False, True, False]
    assert objs[0]["alex_points"] == EXPECTED[0]["alex_points"]
    errs = proc.stderr.strip().splitlines()
    assert len(errs) == 2
    assert errs[0].startswith("error: ") and "jack_in_pool.json" in errs[0]
    assert "play 5 (Bob): Ks can capture Kd, so it cannot be laid" in errs[1]


def test_subprocess_help_and_deal() -> None:
    """The help texts through the entry point in-process, then one real interpreter: the
    ``python -m tensorcfr.cli.main`` entry point, its exit code and its stdout (each start
    is about 3 CPU seconds, so one is enough)."""
    proc = cli("--help")
    assert proc.returncode == 0 and "pasur" in proc.stdout
    proc = cli("pasur", "--help")
    assert proc.returncode == 0
    for command in ("deal", "replay", "solve"):
        assert command in proc.stdout
    proc = run_cli("pasur", "deal", "--seed", "5", "--json")
    assert proc.returncode == 0
    obj = json.loads(proc.stdout)
    assert obj["seed"] == 5 and obj["deal"] == list(random_deal(5))
    assert obj["notation"] == cards_str(random_deal(5))


# --------------------------------------------------------------------------- deal (in-process)

def test_deal_is_deterministic() -> None:
    first = runner.invoke(app, ["pasur", "deal", "--seed", "42", "--json"])
    second = runner.invoke(app, ["pasur", "deal", "--seed", "42", "--json"])
    other = runner.invoke(app, ["pasur", "deal", "--seed", "43", "--json"])
    assert first.exit_code == second.exit_code == other.exit_code == 0
    assert first.stdout == second.stdout != other.stdout
    assert len(first.stdout.splitlines()) == 1
    assert json.loads(first.stdout)["deal"] == list(random_deal(42))
    text = runner.invoke(app, ["pasur", "deal", "--seed", "42"])
    assert text.exit_code == 0
    # (the 52 codes may be wrapped over two lines by the console width)
    assert cards_str(random_deal(42)) in " ".join(text.stdout.split())
    assert "round 6" in text.stdout


def test_replay_help() -> None:
    result = runner.invoke(app, ["pasur", "replay", "--help"])
    assert result.exit_code == 0
    assert "--json" in result.stdout
