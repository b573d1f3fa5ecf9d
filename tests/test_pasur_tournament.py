"""Duplicate tournaments (``pasur tournament``): the statistics on known numbers, the duplicate
structure, prices of hidden information, failures, resume after a kill or a signal, bad input,
and one run end to end through the command line on Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AgentOptions
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.playing.agent import RandomAgent
from tensorcfr.games.pasur.solving.exact import solve_exact
from tensorcfr.games.pasur.tournament import (
    TournamentSettings,
    duplicate_interval,
    run_tournament,
    summarize_pairs,
)

pytestmark = pytest.mark.usefixtures("one_thread")
runner = CliRunner()
SEEDS = (3, 11, 12)  # small deals (about 0.1 to 0.2 s each to solve exactly)
AGENTS = ("random", "exact")
TIMING_COLUMNS = {"seconds", "alex_move_seconds_median", "bob_move_seconds_median",
                  "a_move_seconds_median", "b_move_seconds_median"}
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def deck_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("decks") / "decks.csv"
    path.write_text("".join(",".join(map(str, rules.random_deal(s))) + "\n" for s in SEEDS))
    return path


def _settings(deck_file, out, **kwargs):
    return TournamentSettings(agents=AGENTS, out=out, decks=deck_file, deck_range=(0, 2),
                              in_process=True, **kwargs)


@pytest.fixture(scope="module")
def reference(deck_file, tmp_path_factory):
    """A finished in-process tournament on the three small deals."""
    out = tmp_path_factory.mktemp("tournament") / "ref"
    result = run_tournament(_settings(deck_file, out))
    return out, result


def _table(path, drop=TIMING_COLUMNS):
    return [{k: v for k, v in row.items() if k not in drop}
            for row in pq.read_table(str(path)).to_pylist()]


# --------------------------------------------------------------------------- statistics


def test_duplicate_interval_on_known_numbers():
    mean, (low, high), sd = duplicate_interval([1, 2, 3, 4, 5])
    # t(0.975, 4 df) = 2.776445; sd = sqrt(2.5); half width = 2.776445 * sqrt(2.5 / 5)
    assert mean == 3.0 and sd == pytest.approx(2.5 ** 0.5)
    assert (low, high) == pytest.approx((3 - 1.963243, 3 + 1.963243), abs=1e-6)
    mean, (low, high), sd = duplicate_interval([-4.0, 2.0])
    # t(0.975, 1 df) = 12.706205; sd = sqrt(18); half width = 12.706205 * 3
    assert mean == -1.0 and (low, high) == pytest.approx((-1 - 38.118614, -1 + 38.118614))
    assert duplicate_interval([7, 7, 7]) == (7.0, (7.0, 7.0), 0.0)
    assert duplicate_interval([2.5]) == (2.5, None, None)
    assert duplicate_interval([]) == (None, None, None)


def _game(a_diff, deal, seating, value, status="ok"):
    utility = a_diff if seating == 0 else -a_diff
    return {"a": "x", "b": "y", "deal": deal, "seating": seating, "status": status,
            "a_diff": a_diff, "alex_price": value - utility, "bob_price": utility - value,
            "alex_move_seconds_median": 0.5 + seating, "bob_move_seconds_median": 2.0}


def test_summary_of_hand_made_games():
    games = [_game(10, 0, 0, value=4), _game(-2, 0, 1, value=4),   # deal 0: (10 - 2) / 2 = 4
             _game(-3, 1, 0, value=-1), _game(-3, 1, 1, value=-1),  # deal 1: -3
             _game(5, 2, 0, value=0), _game(-5, 2, 1, value=0),     # deal 2: 0 (a tie)
             _game(9, 3, 0, value=0), _game(0, 3, 1, value=0, status="error")]  # incomplete
    (pair,) = summarize_pairs([("x", "y")], games)
    assert pair.deals == 3 and pair.games == 7 and pair.failed_games == 1
    assert pair.mean_diff == pytest.approx(1 / 3)
    assert pair.ci95 == pytest.approx(duplicate_interval([4, -3, 0])[1])
    assert (pair.a_win_rate, pair.tie_rate, pair.b_win_rate) == pytest.approx((1 / 3,) * 3)
    # x is Alex in seating 0: price = value - utility; x is Bob in seating 1: utility - value
    x_as_alex = [4 - 10, -1 + 3, 0 - 5, 0 - 9]
    x_as_bob = [(2) - 4, (3) - (-1), (5) - 0]
    assert pair.price["x"]["as_alex"] == pytest.approx(sum(x_as_alex) / 4)
    assert pair.price["x"]["as_bob"] == pytest.approx(sum(x_as_bob) / 3)
    assert pair.price["x"]["mean"] == pytest.approx(sum(x_as_alex + x_as_bob) / 7)
    assert pair.price["y"]["mean"] == pytest.approx(-pair.price["x"]["mean"])
    assert pair.move_seconds_median == {"x": 0.5, "y": 2.0}


# --------------------------------------------------------------------------- a tournament


def test_every_deal_is_played_in_both_seatings(reference, deck_file):
    out, result = reference
    games = pq.read_table(str(out / "games.parquet")).to_pylist()
    assert len(games) == 3 * 2 and all(g["status"] == "ok" for g in games)
    for deal in range(3):
        seatings = sorted((g for g in games if g["deal"] == deal), key=lambda g: g["seating"])
        assert [(g["alex"], g["bob"]) for g in seatings] == [("random", "exact"),
                                                            ("exact", "random")]
        assert seatings[0]["game_seed"] == seatings[1]["game_seed"]
        assert seatings[0]["deal_cards"] == seatings[1]["deal_cards"] == \
            list(rules.random_deal(SEEDS[deal]))
        for g in seatings:
            assert g["utility"] == g["alex_points"] - g["bob_points"]
            assert g["a_diff"] == (g["utility"] if g["seating"] == 0 else -g["utility"])
            assert g["plays"] == rules.NUM_PLAYS
            assert json.loads(g["agent_options"])["determinizations"] == 32


def test_prices_of_hidden_information(reference):
    out, result = reference
    games = pq.read_table(str(out / "games.parquet")).to_pylist()
    for g in games:
        value = solve_exact(rules.random_deal(SEEDS[g["deal"]])).value
        assert g["exact_value"] == value
        assert g["alex_price"] == value - g["utility"] and g["bob_price"] == -g["alex_price"]
        # the exact agent secures at least the open-hands value from its seat
        exact_price = g["alex_price"] if g["alex"] == "exact" else g["bob_price"]
        assert exact_price <= 0
    (pair,) = result.pairs
    assert pair.price["exact"]["mean"] == pytest.approx(-pair.price["random"]["mean"])
    assert pair.price["random"]["mean"] >= 0
    # over complete duplicate deals the deal values cancel: the mean price is -mean_diff
    assert pair.price["random"]["mean"] == pytest.approx(-pair.mean_diff)
    assert pair.mean_diff == pytest.approx(
        sum(g["a_diff"] for g in games) / len(games))  # both seatings of every deal played
    (row,) = pq.read_table(str(out / "summary.parquet")).to_pylist()
    assert (row["a"], row["b"], row["deals"]) == ("random", "exact", 3)
    assert row["mean_diff"] == pytest.approx(pair.mean_diff)
    assert (row["ci95_low"], row["ci95_high"]) == pytest.approx(pair.ci95)
    assert row["a_price"] == pytest.approx(pair.price["random"]["mean"])
    assert (out / "cross_table.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failing_game_is_recorded_and_retried(deck_file, reference, tmp_path, monkeypatch):
    broken_pool = tuple(sorted(rules.random_deal(SEEDS[1])[:4]))
    real_choose = RandomAgent.choose

    def flaky(self, obs, state=None):
        if obs.initial_pool == broken_pool and obs.player == rules.ALEX:
            raise RuntimeError("simulated failure\nsecond line")
        return real_choose(self, obs, state)

    monkeypatch.setattr(RandomAgent, "choose", flaky)
    result = run_tournament(_settings(deck_file, tmp_path))
    (pair,) = result.pairs
    assert result.failed == 1 and pair.failed_games == 1 and pair.deals == 2
    failed = [g for g in pq.read_table(str(tmp_path / "games.parquet")).to_pylist()
              if g["status"] != "ok"]
    assert [(g["deal"], g["seating"], g["error"]) for g in failed] == \
        [(1, 0, "RuntimeError: simulated failure")]
    monkeypatch.setattr(RandomAgent, "choose", real_choose)
    again = run_tournament(_settings(deck_file, tmp_path))
    assert again.computed == 1 and again.failed == 0
    assert _table(tmp_path / "summary.parquet") == _table(reference[0] / "summary.parquet")


def test_corrupt_journal_and_torn_line(reference, deck_file, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(reference[0], out)
    journal = out / "games.jsonl"
    whole = journal.read_text()
    journal.write_text(whole + '{"id": "game/random/exact/1/0", "kind": "ga')  # a cut write
    notices = []
    result = run_tournament(_settings(deck_file, out),
                            on_progress=lambda p: notices.append(p.notice))
    assert result.repaired_bytes > 0 and result.computed == 0
    assert any(n and "torn last line" in n for n in notices)
    assert journal.read_text() == whole
    lines = whole.splitlines()
    # a garbled line in the middle (issue 27): skipped, said, and its job played again
    garbled = json.loads(lines[2])
    journal.write_text("\n".join(lines[:2] + ['{"id": "' + garbled["id"] + '", "ki#'] +
                                 lines[3:]) + "\n")
    notices = []
    again = run_tournament(_settings(deck_file, out),
                           on_progress=lambda p: notices.append(p.notice))
    assert again.computed == 1 and again.failed == 0
    assert any(n and "skipped 1 unreadable line(s) (3)" in n and "run again" in n
               for n in notices), notices
    assert _table(out / "summary.parquet") == _table(reference[0] / "summary.parquet")


# --------------------------------------------------------------------------- command line


def test_cli_end_to_end_on_ray(reference, deck_file, tmp_path):
    out = tmp_path / "ray"
    res = runner.invoke(app, ["pasur", "tournament", "--agents", "random,exact", "--decks",
                              str(deck_file), "--range", "0-2", "--workers", "1", "--out",
                              str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # stdout holds the JSON only
    assert data["mode"] == "ray" and data["threads"] == 1
    (pair,) = data["pairs"]
    assert {"a", "b", "deals", "mean_diff", "ci95", "a_win_rate", "tie_rate",
            "b_win_rate"} <= set(pair)
    assert (pair["a"], pair["b"], pair["deals"]) == ("random", "exact", 3)
    assert len(pair["ci95"]) == 2 and pair["ci95"][0] <= pair["mean_diff"] <= pair["ci95"][1]
    assert pair["a_win_rate"] + pair["tie_rate"] + pair["b_win_rate"] == pytest.approx(1)
    assert set(pair["price_of_hidden_information"]) == {"random", "exact"}
    # Ray changes where games run, not what they give
    assert _table(out / "games.parquet") == _table(reference[0] / "games.parquet")
    assert _table(out / "summary.parquet") == _table(reference[0] / "summary.parquet")
    assert (out / "cross_table.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_local_processes_give_the_in_process_tables(reference, deck_file, tmp_path):
    """--processes (local workers, no Ray): the same games and summary as in-process."""
    out = tmp_path / "processes"
    settings = TournamentSettings(agents=AGENTS, out=out, decks=deck_file, deck_range=(0, 2),
                                  processes=2)
    result = run_tournament(settings)
    assert result.run["mode"] == "processes" and result.run["workers"] == 2
    assert result.computed == 9 and result.failed == 0
    assert _table(out / "games.parquet") == _table(reference[0] / "games.parquet")
    assert _table(out / "summary.parquet") == _table(reference[0] / "summary.parquet")


def _start_cli(deck_file, out):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "tensorcfr.cli.main", "pasur", "tournament", "--agents",
         "random,exact", "--decks", str(deck_file), "--range", "0-2", "--in-process",
         "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # a test run started in the background (``cmd &``) has SIGINT ignored, and a child
        # would inherit that: give the child Python's usual Ctrl-C
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_journal_lines(proc, journal, lines=1, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count("\n") >= lines:
            return
        if proc.poll() is not None:
            pytest.fail(f"the tournament ended before it could be stopped: {proc.stderr.read()}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("the tournament wrote no journal line in time")


def test_resume_after_sigkill_gives_the_same_tables(reference, deck_file, tmp_path):
    out = tmp_path / "killed"
    proc = _start_cli(deck_file, out)
    _wait_for_journal_lines(proc, out / "games.jsonl")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    journal = out / "games.jsonl"
    done = journal.read_text().count("\n")
    assert 1 <= done < 9  # killed mid-run
    with journal.open("a") as fh:
        fh.write('{"id": "exact/2", "ki')  # a write cut short by the kill
    res = runner.invoke(app, ["pasur", "tournament", "--agents", "random,exact", "--decks",
                              str(deck_file), "--range", "0-2", "--in-process", "--out",
                              str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert "repaired the journal" in res.stderr
    data = json.loads(res.stdout)
    assert data["skipped"] == done and data["computed"] == 9 - done
    assert _table(out / "games.parquet") == _table(reference[0] / "games.parquet")
    assert _table(out / "summary.parquet") == _table(reference[0] / "summary.parquet")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_cleanly(deck_file, tmp_path, signum):
    """Exit 130 with one ``interrupted:`` line naming the journal (the command raises
    InterruptedRun and the entry point prints it once; docs/reliability.md), and a journal
    of whole lines."""
    out = tmp_path / "stopped"
    proc = _start_cli(deck_file, out)
    _wait_for_journal_lines(proc, out / "games.jsonl")
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    assert stderr.count("interrupted:") == 1 and "games.jsonl" in stderr, stderr
    text = (out / "games.jsonl").read_text()
    assert text.endswith("\n") and all(json.loads(line) for line in text.splitlines())


@pytest.mark.parametrize("args, message", [
    (["--agents", "random,nobody", "--deals", "1"], "unknown agent 'nobody'"),
    (["--agents", "random", "--deals", "1"], "at least 2 agents"),
    (["--agents", "random,random", "--deals", "1"], "more than once"),
    (["--agents", "random,exact", "--deals", "0"], "--deals must be between 1"),
    (["--agents", "random,exact"], "give --deals N"),
    (["--agents", "random,exact", "--deals", "1", "--determinizations", "0"],
     "--determinizations must be between 1"),
    (["--agents", "random,exact", "--deals", "1", "--workers", "0"], "--workers must be "
     "between 1"),
    (["--agents", "random,exact", "--deals", "1", "--in-process", "--address", "x:1"],
     "leave out --address"),
    (["--agents", "random,exact", "--deals", "1", "--range", "0-1"], "--decks FILE"),
    (["--agents", "random,exact", "--deals", "1", "--processes", "2", "--in-process"],
     "leave out --in-process"),
    (["--agents", "random,exact", "--deals", "1", "--address", "127.0.0.1:1"],
     "no Ray cluster answers"),
])
def test_cli_bad_input(tmp_path, args, message):
    res = runner.invoke(app, ["pasur", "tournament", "--out", str(tmp_path / "o"), *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_cli_bad_deck_range_and_out(deck_file, tmp_path):
    base = ["pasur", "tournament", "--agents", "random,exact", "--in-process"]
    res = runner.invoke(app, base + ["--decks", str(deck_file), "--range", "2-5", "--out",
                                     str(tmp_path / "o")])
    assert res.exit_code == 2 and "--range 2-5 goes past the end" in res.output
    a_file = tmp_path / "file"
    a_file.write_text("x")
    res = runner.invoke(app, base + ["--deals", "1", "--out", str(a_file)])
    assert res.exit_code == 2 and "exists and is not a folder" in res.output
    res = runner.invoke(app, base + ["--deals", "1", "--out", "/proc/tensorcfr-tournament"])
    assert res.exit_code == 2 and "cannot write" in res.output


def test_cli_resume_with_other_settings(reference, deck_file):
    out = reference[0]
    base = ["pasur", "tournament", "--agents", "random,exact", "--decks", str(deck_file),
            "--in-process", "--out", str(out)]
    for extra, option in ((["--range", "0-1"], "--range"),
                          (["--range", "0-2", "--seed", "5"], "--seed"),
                          (["--range", "0-2", "--determinizations", "8"],
                           "--determinizations")):
        res = runner.invoke(app, base + extra)
        assert res.exit_code == 2 and "other options" in res.output, res.output
        assert f"{option} " in res.output.split("other options")[1], res.output
    res = runner.invoke(app, ["pasur", "tournament", "--agents", "exact,random", "--decks",
                              str(deck_file), "--range", "0-2", "--in-process", "--out",
                              str(out)])
    assert res.exit_code == 2 and "other options: --agents" in res.output
    journal = out / "games.jsonl"
    whole = journal.read_text()
    try:
        journal.write_text("garbage\n" + whole)  # skipped and said; nothing to play again
        res = runner.invoke(app, base + ["--range", "0-2"])
        assert res.exit_code == 0 and "skipped 1 unreadable line(s) (1)" in res.output, \
            res.output
    finally:
        journal.write_text(whole)


def test_settings_validate_on_construction(deck_file, tmp_path):
    with pytest.raises(TensorCFRError, match="--decks needs --range"):
        TournamentSettings(agents=AGENTS, out=tmp_path, decks=deck_file)
    with pytest.raises(TensorCFRError, match="with --decks give --range"):
        TournamentSettings(agents=AGENTS, out=tmp_path, decks=deck_file, deck_range=(0, 1),
                           deals=2)
    with pytest.raises(TensorCFRError, match="determinizations"):
        TournamentSettings(agents=AGENTS, out=tmp_path, deals=1,
                           agent_options=AgentOptions(determinizations=0))
    settings = TournamentSettings(agents=["random", "exact"], out=str(tmp_path), deals=2)
    assert settings.agents == AGENTS and settings.pairs == [AGENTS]
