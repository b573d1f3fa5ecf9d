"""CLI: ``tensorcfr pasur solve --method dcfr`` and ``tensorcfr pasur exploitability DIR``.

Two cases run the real entry point in a subprocess (exit codes, one JSON line on stdout,
one-line errors without traceback); the others run in-process with typer's CliRunner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from _cli_helpers import cli
from tensorcfr.cli.main import app

ITERATIONS = "40"
runner = CliRunner()


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tensorcfr.cli.main", *args],
                          capture_output=True, text=True, timeout=300, env=full_env)


def one_json_line(stdout: str) -> dict:
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    return json.loads(lines[0])


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:")
    return lines[0]


@pytest.fixture(scope="module")
def solved_run(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("dcfr") / "run"
    # in-process (the entry point, stdout and stderr apart): test_exploitability_of_a_bad_folder
    # keeps this file's real interpreter start
    proc = cli("pasur", "solve", "--seed", "3", "--method", "dcfr", "--mode", "dag",
               "--iterations", ITERATIONS, "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, one_json_line(proc.stdout)


def test_solve_json_fields(solved_run) -> None:
    out, result = solved_run
    for key in ("value", "exact_value", "exploitability", "nodes_per_round", "seconds",
                "peak_rss_mb", "mode", "variant", "iterations", "threads", "value_gap",
                "best_response_to_alex", "best_response_to_bob", "edges_per_round"):
        assert key in result, key
    assert result["mode"] == "dag" and result["variant"] == "dcfr"
    assert result["iterations"] == int(ITERATIONS) and result["threads"] == 1
    assert (result["alpha"], result["beta"], result["gamma"]) == (1.5, 0.0, 2.0)
    assert len(result["nodes_per_round"]) == 6 and all(n > 0 for n in result["nodes_per_round"])
    assert result["exact_value"] == -6.0  # seed 3's minimax value (the exact solver's)
    assert abs(result["value"] - result["exact_value"]) < 0.05
    assert 0 <= result["exploitability"] < 0.05
    assert result["best_response_to_alex"] <= result["exact_value"] <= \
        result["best_response_to_bob"]
    assert result["resumed_rounds"] == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["deal"] == result["deal"] and manifest["seed"] == 3
    assert manifest["value"] == result["value"] and "versions" in manifest
    assert (out / "strategy.parquet").is_file()
    assert sorted(p.name for p in (out / "checkpoint").iterdir()) == [
        "meta.json"] + [f"round_{r}.pt" for r in range(6)]


def test_exploitability_command(solved_run) -> None:
    out, result = solved_run
    result_run = runner.invoke(app, ["pasur", "exploitability", str(out), "--json"])
    assert result_run.exit_code == 0, result_run.output
    again = one_json_line(result_run.stdout)
    assert again["exploitability"] == pytest.approx(result["exploitability"], abs=1e-9)
    assert again["value"] == pytest.approx(result["value"], abs=1e-9)
    assert again["exact_value"] == result["exact_value"]
    assert again["table_rows"] == result["table_rows"]


def test_resume_after_interruption(tmp_path, solved_run, monkeypatch) -> None:
    first_out, first = solved_run
    out = tmp_path / "run"
    args = ["pasur", "solve", "--seed", "3", "--method", "dcfr", "--iterations", ITERATIONS,
            "--json", "--out", str(out)]
    monkeypatch.setenv("TENSORCFR_STOP_AFTER_ROUNDS", "2")
    stopped = runner.invoke(app, args)
    assert stopped.exit_code == 2 and "stopped after round 5" in stopped.stderr
    assert stopped.stdout == ""
    assert not (out / "manifest.json").exists()
    assert sorted(p.name for p in (out / "checkpoint").glob("round_*.pt")) == [
        "round_4.pt", "round_5.pt"]
    monkeypatch.delenv("TENSORCFR_STOP_AFTER_ROUNDS")
    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    result = one_json_line(resumed.stdout)
    assert result["resumed_rounds"] == [5, 6]
    assert result["value"] == first["value"]
    assert result["exploitability"] == first["exploitability"]
    a = pq.read_table(first_out / "strategy.parquet")
    b = pq.read_table(out / "strategy.parquet")
    assert a.column("probability").equals(b.column("probability"))
    assert a.column("edge").equals(b.column("edge"))


def test_other_options_refuse_the_checkpoint(solved_run) -> None:
    out, _ = solved_run
    result = runner.invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr",
                                 "--iterations", "41", "--json", "--out", str(out)])
    assert result.exit_code == 2 and "different solve" in result.stderr
    assert result.stdout == ""


def test_tree_mode_refused_when_too_big() -> None:
    result = runner.invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr",
                                 "--mode", "tree", "--max-memory", "50M", "--json"])
    assert result.exit_code == 2 and "--mode dag" in result.stderr
    assert result.stdout == ""


def test_bad_options() -> None:
    result = runner.invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr",
                                 "--convergence", "--iterations", "2"])
    assert result.exit_code == 2 and "--out" in result.stderr
    result = runner.invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr",
                                 "--variant", "nope"])
    assert result.exit_code == 2 and "nope" in result.stderr


def test_exploitability_of_a_bad_folder(tmp_path) -> None:
    assert "does not exist" in one_line_error(run_cli("pasur", "exploitability",
                                                      str(tmp_path / "missing")))
    # In-process too (the root command prints the one line), exit code 2.
    result = runner.invoke(app, ["pasur", "exploitability", str(tmp_path)])
    assert result.exit_code == 2 and "manifest.json" in result.output
    (tmp_path / "manifest.json").write_text("{broken")
    result = runner.invoke(app, ["pasur", "exploitability", str(tmp_path)])
    assert result.exit_code == 2 and result.output.startswith("error:")


def test_exploitability_of_a_truncated_table(tmp_path, solved_run) -> None:
    out, _ = solved_run
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "manifest.json").write_text((out / "manifest.json").read_text())
    data = (out / "strategy.parquet").read_bytes()
    (copy / "strategy.parquet").write_bytes(data[: len(data) // 3])
    result = runner.invoke(app, ["pasur", "exploitability", str(copy)])
    assert result.exit_code == 2 and "strategy table" in result.output
    assert "Traceback" not in result.output


def test_convergence_files_in_process(tmp_path) -> None:
    out = tmp_path / "conv"
    result = runner.invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr",
                                 "--iterations", "8", "--variant", "cfr+", "--convergence",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "exploitability" in result.stdout
    lines = (out / "convergence.csv").read_text().splitlines()
    assert lines[0] == "round,iteration,mse" and len(lines) == 1 + 6 * 8
    last = [line for line in lines[1:] if line.split(",")[1] == "8"]
    assert len(last) == 6 and all(float(line.split(",")[2]) == 0.0 for line in last)
    assert (out / "convergence.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["variant"] == "cfr+" and manifest["files"]["convergence_csv"]


def test_tree_mode_small_deal() -> None:
    """Tree mode runs end to end on a deal that fits and finds the same exact value."""
    run = runner.invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr", "--mode",
                              "tree", "--iterations", "2", "--json"])
    assert run.exit_code == 0, run.output
    result = one_json_line(run.stdout)
    assert result["mode"] == "tree" and result["exact_value"] == -6.0
    assert result["exploitability"] >= 0
