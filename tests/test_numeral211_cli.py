"""``tensorcfr numeral211 info | solve | exploitability`` on small variants: JSON keys, the
default game's sizes, resume, strategy files, plots and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli_helpers import run_cli

SMALL = ["--ranks", "9TA", "--suits", "2", "--max-bets", "2"]


def test_info_json_default_game(capsys, monkeypatch) -> None:
    code, out, _ = run_cli(["numeral211", "info", "--json"], capsys, monkeypatch)
    assert code == 0
    info = json.loads(out)
    assert info["decision_nodes"] == [10, 90, 810]
    assert info["infosets"] == [7_800, 2_667_600, 888_310_800]
    assert info["fold_terminals"] == [8, 72, 648] and info["showdowns"] == 729
    assert info["isomorphic_classes"] == [100, 2_260, 62_020]
    assert len(info["outcome_classes"]) == 3
    assert all(o <= c for o, c in zip(info["outcome_classes"], info["isomorphic_classes"]))
    assert info["memory_estimate_bytes"]["float32"] < 16 * 2**30


def test_solve_resume_strategy_file_and_exploitability(tmp_path, capsys, monkeypatch) -> None:
    ck, strat, png = tmp_path / "ck.npz", tmp_path / "s.npz", tmp_path / "c.png"
    code, out, err = run_cli(["numeral211", "solve", *SMALL, "--algo", "cfr+",
                              "--iterations", "6", "--eval-every", "3", "--save", str(ck),
                              "--json"], capsys, monkeypatch)
    assert code == 0, err
    first = json.loads(out)
    assert [p["iteration"] for p in first["curve"]] == [3, 6]
    code, out, err = run_cli(["numeral211", "solve", *SMALL, "--algo", "cfr+",
                              "--iterations", "12", "--eval-every", "3", "--resume", str(ck),
                              "--out", str(strat), "--plot", str(png), "--json"],
                             capsys, monkeypatch)
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["resumed_from"] == 6 and resumed["iterations_run"] == 6
    # stderr says where the run resumed, then one progress line per evaluation
    assert f"resumed from {ck} at iteration 6" in err
    assert "cfr+: iteration 9/12, exploitability" in err
    assert "cfr+: iteration 12/12, exploitability" in err
    assert [p["iteration"] for p in resumed["curve"]] == [3, 6, 9, 12]
    assert png.read_bytes()[:4] == b"\x89PNG"
    # straight 12 iterations give the same curve (bitwise resume)
    code, out, _ = run_cli(["numeral211", "solve", *SMALL, "--iterations", "12",
                            "--eval-every", "3", "--json"], capsys, monkeypatch)
    straight = json.loads(out)
    assert [p["exploitability"] for p in straight["curve"]] == [
        p["exploitability"] for p in resumed["curve"]]
    code, out, err = run_cli(["numeral211", "exploitability", str(strat), "--json"],
                             capsys, monkeypatch)
    assert code == 0, err
    ex = json.loads(out)
    assert ex["exploitability"] == pytest.approx(resumed["exploitability"], rel=1e-5)
    assert ex["exploitability_mbg"] == pytest.approx(ex["exploitability"] * 1000 / 5)
    assert ex["meta"]["iterations"] == 12
    data = np.load(strat)
    assert set(data.files) == {"meta", "policy_0", "policy_1", "policy_2"}


@pytest.mark.parametrize("args, fragment", [
    (["info", "--ranks", "TA", "--suits", "2"], "too small"),
    (["info", "--bets", "0"], "positive"),
    (["solve", "--ranks", "9TA", "--suits", "2", "--algo", "cfr++"], "unknown CFR"),
    (["solve", "--max-memory", "1G"], "GiB"),
    (["solve", "--ranks", "9TA", "--suits", "2", "--iterations", "0"], "between 1 and"),
    (["solve", "--resume", "/nonexistent/ck.npz"], "does not exist"),
    (["exploitability", "/nonexistent/s.npz"], "does not exist"),
])
def test_bad_input_one_line_errors(args, fragment, capsys, monkeypatch) -> None:
    code, out, err = run_cli(["numeral211", *args], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert fragment in err and len(err.strip().splitlines()) == 1


def test_corrupt_files(tmp_path, capsys, monkeypatch) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 truncated")
    for args in (["exploitability", str(bad)], ["solve", "--resume", str(bad)]):
        code, _, err = run_cli(["numeral211", *args], capsys, monkeypatch)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
    other = tmp_path / "other.npz"
    np.savez(other, meta=np.array(json.dumps({"format": "something else"})))
    code, _, err = run_cli(["numeral211", "exploitability", str(other)], capsys, monkeypatch)
    assert code == 2 and "not a" in err
