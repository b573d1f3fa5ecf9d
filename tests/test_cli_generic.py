"""``tensorcfr solve``: JSON output, OpenSpiel parity, checkpoints, plots and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyspiel
import pytest

from _cli_helpers import run_cli


def test_json_exploitability_matches_openspiel_cfr(capsys, monkeypatch) -> None:
    from open_spiel.python.algorithms import exploitability

    code, out, err = run_cli(["solve", "kuhn_poker", "--algo", "cfr", "--iterations", "1000",
                              "--json"], capsys, monkeypatch)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])
    for key in ("game", "algo", "iterations", "exploitability", "nash_conv", "ms_per_iteration",
                "setup_seconds", "peak_rss_mb", "threads", "device"):
        assert key in summary
    assert summary["game"] == "kuhn_poker()" and summary["algo"] == "cfr"
    assert summary["iterations"] == 1000 and summary["alternating"] is True
    assert summary["threads"] == 1 and summary["device"] == "cpu"
    game = pyspiel.load_game("kuhn_poker")
    reference = pyspiel.CFRSolver(game)
    for _ in range(1000):
        reference.evaluate_and_update_policy()
    expected = exploitability.exploitability(game, reference.average_policy())
    assert abs(summary["exploitability"] - expected) < 1e-9


def test_save_resume_policy_and_plot(tmp_path: Path, capsys, monkeypatch) -> None:
    checkpoint = tmp_path / "ck.npz"
    policy = tmp_path / "policy.npz"
    plot = tmp_path / "expl.png"
    code, out, err = run_cli(["solve", "leduc_poker", "--algo", "dcfr", "--iterations", "6",
                              "--alpha", "2", "--save", str(checkpoint), "--json"],
                             capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["alpha"] == 2.0
    code, out, err = run_cli(["solve", "leduc_poker", "--resume", str(checkpoint),
                              "--iterations", "4", "--eval-every", "2", "--plot", str(plot),
                              "--policy-out", str(policy), "--json"], capsys, monkeypatch)
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["iterations"] == 10 and resumed["algo"] == "dcfr"
    assert [i for i, _ in resumed["exploitability_history"]] == [8, 10]
    code, out, err = run_cli(["solve", "leduc_poker", "--algo", "dcfr", "--alpha", "2",
                              "--iterations", "10", "--eval-every", "0", "--json"],
                             capsys, monkeypatch)
    straight = json.loads(out)
    assert straight["exploitability"] == resumed["exploitability"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from tensorcfr.core.policy_io import load_policy

    saved = load_policy(policy)
    assert saved.game_string == "leduc_poker()" and saved.extra["iterations"] == 10


def test_human_readable_output_and_simultaneous(capsys, monkeypatch) -> None:
    code, out, err = run_cli(["solve", "kuhn_poker(players=3)", "--algo", "pcfr+",
                              "--simultaneous", "--iterations", "20", "--dtype", "float32"],
                             capsys, monkeypatch)
    assert code == 0, err
    assert "exploitability" in out and "simultaneous" in out and "float32" in out


@pytest.mark.parametrize("args,message", [
    (["solve", "kuhn_pokr"], "did you mean kuhn_poker"),
    (["solve", "kuhn_poker(players=x)"], "cannot load game"),
    (["solve", "kuhn_poker", "--iterations", "0"], "--iterations"),
    (["solve", "kuhn_poker", "--algo", "cfr++"], "unknown CFR algorithm"),
    (["solve", "kuhn_poker", "--dtype", "float16"], "dtype"),
    (["solve", "kuhn_poker", "--threads", "0"], "threads"),
    (["solve", "leduc_poker", "--max-memory", "64K"], "limit"),
    (["solve", "kuhn_poker", "--max-memory", "lots"], "memory size"),
    (["solve", "breakthrough"], "information_state_string"),
])
def test_one_line_errors(args: list[str], message: str, capsys, monkeypatch) -> None:
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def test_corrupt_and_mismatched_resume(tmp_path: Path, capsys, monkeypatch) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"\x00" * 100)
    code, _, err = run_cli(["solve", "kuhn_poker", "--resume", str(bad)], capsys, monkeypatch)
    assert code == 2 and "not a readable NPZ" in err and len(err.strip().splitlines()) == 1
    checkpoint = tmp_path / "ck.npz"
    code, _, err = run_cli(["solve", "kuhn_poker", "--iterations", "2", "--save",
                            str(checkpoint), "--json"], capsys, monkeypatch)
    assert code == 0, err
    code, _, err = run_cli(["solve", "leduc_poker", "--resume", str(checkpoint)], capsys,
                           monkeypatch)
    assert code == 2 and "kuhn_poker" in err
    code, _, err = run_cli(["solve", "kuhn_poker", "--resume", str(checkpoint), "--algo",
                            "cfr+"], capsys, monkeypatch)
    assert code == 2 and "differs" in err
