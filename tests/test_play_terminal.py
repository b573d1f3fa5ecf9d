"""The terminal game ``tensorcfr pasur play`` driven through a pseudo-terminal (pexpect)."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from tensorcfr.games.pasur.engine.records import parse_record, replay_record

pexpect = pytest.importorskip("pexpect")

PROMPT = re.compile(r"your play \[1-(\d+), hint(?:, undo)?, quit\]: ")  # no undo when hidden


def _spawn(*args: str):
    env = dict(os.environ, COLUMNS="120", LINES="50", NO_COLOR="1", TERM="dumb")
    return pexpect.spawn(sys.executable, ["-m", "tensorcfr.cli.main", "pasur", "play", *args],
                         env=env, encoding="utf-8", timeout=60, dimensions=(50, 120))


def test_terminal_whole_game_with_hint_and_undo(tmp_path):
    record = tmp_path / "game.json"
    child = _spawn("--seed", "3", "--as", "alex", "--mode", "open", "--ai", "exact",
                   "--record", str(record))
    child.expect(PROMPT)
    assert "open hands" in child.before.lower()
    assert "rounds to come" in child.before  # the hands of rounds 2..6, shown in open mode
    child.sendline("hint")
    child.expect("exact values for Alex")
    child.expect(PROMPT)
    assert "best" in child.before
    child.sendline("1")
    child.expect(r"#0 you: ")
    child.expect(r"#1 Bob \(AI\): ")
    child.expect(PROMPT)
    child.sendline("undo")
    child.expect(r"took back 2 play\(s\)")
    child.expect(r"0 of 48 plays made")
    child.expect(PROMPT)
    child.sendline("zz")
    child.expect("not a legal play or command")
    child.expect(PROMPT)
    child.sendline("2h")  # a card of Bob's: the rules' reason and the choices
    child.expect(r"2h is not in Alex's hand \(6h 7h 8d Ks\); your plays: 1\) ")
    child.expect(PROMPT)
    child.sendline("6h")  # two captures: which one?
    child.expect(r"6♥ can capture 2 ways: 1\) 6♥ takes A♠ 4♦; 2\) 6♥ takes 5♠")
    plays = 0
    while True:
        index = child.expect([PROMPT, "record saved to"])
        if index == 1:
            break
        n = int(child.match.group(1))
        child.sendline(str(n))  # the last listed play
        plays += 1
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert plays == 24
    out = child.before
    obj = json.loads(record.read_text(encoding="utf-8"))
    assert obj["human"] == "Alex" and obj["ai"] == "exact" and obj["seed"] == 3
    result = replay_record(parse_record(obj))
    assert result.legal and result.state.is_terminal


def test_terminal_end_of_game_analysis_and_quit(tmp_path):
    record = tmp_path / "game.json"
    child = _spawn("--seed", "3", "--as", "bob", "--ai", "random", "--ai-seed", "4",
                   "--record", str(record))
    child.expect(r"#0 Alex \(AI\): ")
    child.expect(PROMPT)
    child.sendline("quit")
    child.expect("game abandoned")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not record.exists()


def test_terminal_hidden_hands_is_the_default(tmp_path):
    """Hidden hands without --mode (no undo, the random agent gives no hints), one whole game
    to its analysis: the final score is the record's replay, the deal's exact value, what the
    human's plays gave away and the move list (one game serves both checks: a terminal game
    is an interpreter start and 48 plays)."""
    record = tmp_path / "h.json"
    child = _spawn("--seed", "3", "--ai", "random", "--record", str(record))
    child.expect(PROMPT)
    intro = child.before
    assert "hidden hands" in intro and "does not see your hand" in intro
    assert "▮ ▮ ▮ ▮ (4)" in intro and "40 cards still to be dealt" in intro
    assert "rounds to come" not in intro and "2♥" not in intro  # Bob's 2h is hidden
    assert "practice game: you chose the deal (seed 3)" in intro  # --seed: the deal is known
    assert "deal seed" not in intro and child.after.endswith("hint, quit]: ")  # no undo
    child.sendline("hint")
    child.expect("the random agent gives no estimates")
    child.expect(PROMPT)
    child.sendline("undo")  # refused: it would show the AI's answer to another play
    child.expect("no undo in a hidden-hand game")
    while True:
        index = child.expect([PROMPT, "final score"])
        if index == 1:
            break
        child.sendline("1")
    child.expect("record saved to")
    text = child.before
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "no cost against an estimate" in text
    obj = json.loads(record.read_text(encoding="utf-8"))
    assert obj["mode"] == "hidden" and obj["ai"] == "random" and obj["seed"] == 3
    result = replay_record(parse_record(obj))
    final = re.search(r"total\s*│\s*(\d+)\s*│\s*(\d+)", text)
    assert final and (int(final.group(1)), int(final.group(2))) == \
        (result.alex_points, result.bob_points)
    assert "Exact value of the deal (optimal play by both): Alex -6" in text
    assert re.search(r"your plays \(Alex\) gave away \d+ point", text)
    assert "move list" in text
    assert isinstance(obj["ai_seed"], int)  # a secure random one, kept to replay the game


@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "--seed must be between 0 and 9,223,372,036,854,775,807"),
    (["--seed", str(2**63)], "--seed must be between 0 and 9,223,372,036,854,775,807"),
    (["--mode", "closed"], "the mode is hidden or open"),
    (["--mode", "hidden", "--ai", "table"], "--ai must be one of"),
])
def test_terminal_refuses_bad_options_in_one_line(args, message):
    from typer.testing import CliRunner

    from tensorcfr.cli.main import app

    r = CliRunner().invoke(app, ["pasur", "play", *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output


def test_sigterm_at_the_prompt_stops_the_game_as_interrupted(tmp_path):
    """Issue 27: SIGTERM at the terminal game's prompt is no "quit" (that exited 0): the
    command stops with the one ``interrupted:`` line and exit code 130, and writes no record;
    Ctrl+D at the prompt still quits (exit 0)."""
    import signal

    record = tmp_path / "game.json"
    child = _spawn("--seed", "3", "--ai", "greedy", "--record", str(record))
    child.expect(PROMPT)
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130, child.before
    assert "interrupted" in child.before and "Traceback" not in child.before
    assert not record.exists()

    child = _spawn("--seed", "3", "--ai", "greedy", "--record", str(record))
    child.expect(PROMPT)
    child.sendeof()
    child.expect("game abandoned")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
