"""The fault and bad-input tour of issue 19 on the newer commands (`pasur batch`, `selfplay`,
`train`, `analyze`, `serve`, `play`, the `numeral211` commands): one test per kind, in the
order of the issue. Full disks are injected as ``OSError(ENOSPC)``; torn journal lines are
written by the tests; interrupts are real signals sent to a child process.

Every refusal is one ``error:`` line on stderr with exit code 2 and no traceback; the table
in ``docs/reliability.md`` maps each kind and command to the test here that covers it.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest

from _cli_helpers import run_cli
from tensorcfr.errors import OutputWriteError
from tensorcfr.utils.journal import append_journal, folder_lock, read_journal

SRC = str(Path(__file__).resolve().parents[1] / "src")
SMALL_N211 = ["--ranks", "9TA", "--suits", "2", "--max-bets", "2"]
N211_BUILD_CPU_SECONDS = 5.0
"""CPU time a child `numeral211 solve` of SMALL_N211 spends, once its signal handlers are in
place, before it surely iterates: its build and first iteration take about 1 CPU second on an
idle machine (a signal before the loop has no checkpoint to write). CPU time, not wall time: a
loaded machine stretches the wall time of the build far more than its CPU time, though not
nothing (two busy hyperthreads of one core each count full CPU time at about half the speed:
2.5 s was too little with three test workers on the two cores)."""


def one_line_error(code: int, err: str, expected_code: int = 2) -> str:
    """The single ``error:`` line of a refused command."""
    assert code == expected_code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:"), err
    return lines[0]


def refused(args: list[str], capsys, monkeypatch) -> str:
    code, out, err = run_cli(args, capsys, monkeypatch)
    return one_line_error(code, err)


def failed_after_progress(args: list[str], capsys, monkeypatch) -> str:
    """The one ``error:`` line of a command that failed after its progress lines."""
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    return errors[0]


def cli_process(args: list[str], cwd: Path, **kwargs) -> subprocess.Popen:
    """``tensorcfr ARGS`` in a child process (for real signals)."""
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([sys.executable, "-c", "from tensorcfr.cli.main import main; main()",
                             *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def wait_until_handling_signals(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until the child ``tensorcfr`` has installed its SIGINT/SIGTERM handlers (the entry
    point's first step, after the imports: 3-6 s at load 1, much more under load), read from
    the kernel's mask of caught signals (Python itself catches SIGINT from the start, SIGTERM
    only once ``install_stop_signals`` ran), instead of sleeping a fixed time that a loaded
    machine outlasts (a signal during the imports kills the child with the default action)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        caught = int(next(line.split()[1] for line in status.splitlines()
                          if line.startswith("SigCgt:")), 16)
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.1)
    raise AssertionError(f"the child did not install its signal handlers in {timeout} s")


def wait_for_cpu_seconds(proc: subprocess.Popen, seconds: float, timeout: float = 120.0) -> None:
    """Wait until the child has used ``seconds`` more CPU time (user + system, from
    ``/proc/PID/stat``) than when called."""
    tick = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    start = used()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if used() - start >= seconds:
            return
        time.sleep(0.05)
    raise AssertionError(f"the child did not use {seconds} s of CPU in {timeout} s")


@pytest.fixture()
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("x")
    return path


def _batch(out: Path, decks: str = "0-1", *extra: str) -> list[str]:
    return ["pasur", "batch", "seeds", "--decks", decks, "--out", str(out), "--workers", "0",
            "--games", "2", *extra]


def _journal_decks(out: Path) -> list[int]:
    return sorted(read_journal(out / "decks.jsonl", "deck").rows)


# ============================================================ 1. data loss: torn journal line
def test_a_torn_journal_line_is_dropped_said_and_its_deck_computed_again(tmp_path, capsys,
                                                                         monkeypatch) -> None:
    out = tmp_path / "b"
    code, _, err = run_cli(_batch(out, "0-1"), capsys, monkeypatch)
    assert code == 0, err
    journal = out / "decks.jsonl"
    whole = journal.read_text()
    # a kill or a full disk mid-write leaves half a row, and an older writer glued a row to
    # half of another (a complete but unreadable line)
    journal.write_text(whole + '{"deck": 2, "status": "ok", "exa')
    code, out_text, err = run_cli(_batch(out, "0-2", "--json"), capsys, monkeypatch)
    assert code == 0, err
    assert "dropped a torn last line" in err and "Traceback" not in err
    summary = json.loads(out_text)
    assert summary["computed"] == 1 and summary["skipped"] == 2 and summary["table_rows"] == 3
    assert journal.read_text().startswith(whole)  # the new row starts on a line of its own
    assert _journal_decks(out) == [0, 1, 2]
    lines = journal.read_text().splitlines()
    journal.write_text(lines[0] + "\n" + lines[1][:40] + lines[2] + "\n")  # glued rows
    contents = read_journal(journal, "deck")
    assert sorted(contents.rows) == [0] and contents.unreadable_lines == [2]
    code, out_text, err = run_cli(_batch(out, "0-2", "--json"), capsys, monkeypatch)
    assert code == 0 and "skipped 1 unreadable line" in err
    assert json.loads(out_text)["computed"] == 2 and _journal_decks(out) == [0, 1, 2]


def test_a_full_disk_while_appending_leaves_the_journal_whole(tmp_path, monkeypatch) -> None:
    journal = tmp_path / "decks.jsonl"
    append_journal(journal, {"deck": 0, "status": "ok"})
    before = journal.read_bytes()
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:  # the disk fills up part-way
        real_write(fd, data[:7])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_write)
    with pytest.raises(OutputWriteError, match="no space left on device"):
        append_journal(journal, {"deck": 1, "status": "ok"})
    monkeypatch.setattr(os, "write", real_write)
    assert journal.read_bytes() == before


# ============================================================ 2. hangs: not a Ray cluster, signals
def test_an_address_that_is_not_a_ray_cluster_is_refused_in_seconds(tmp_path, capsys,
                                                                     monkeypatch) -> None:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # the server's log is not the command's
            pass

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        started = time.monotonic()
        line = refused(["pasur", "batch", "seeds", "--decks", "0-1", "--out",
                        str(tmp_path / "o"), "--address", f"127.0.0.1:{port}"], capsys,
                       monkeypatch)
        assert "not a Ray cluster" in line
        assert time.monotonic() - started < 60  # refused, not retried for minutes
    finally:
        server.shutdown()
        server.server_close()


WATCHDOG = """
import os, sys, time
from tensorcfr.utils.ray_cluster import _Watchdog, _quiet_stderr
print("ready", flush=True)
with _Watchdog("connecting to the Ray cluster at x", float(sys.argv[1]), True).active(), \
        _quiet_stderr():  # as connect_ray: Ray's start-up noise muted, the line still shown
    time.sleep(60)  # stands for ray.init stuck in Ray's C++ core
"""


@pytest.mark.parametrize("timeout_s, sig, code, text", [
    (1.0, None, 2, "took more than 1 s"),
    (60.0, signal.SIGTERM, 130, "interrupted"),
    (60.0, signal.SIGINT, 130, "interrupted"),
])
def test_a_stuck_ray_start_up_times_out_and_signals_stop_it(tmp_path, timeout_s, sig, code,
                                                            text) -> None:
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-c", WATCHDOG, str(timeout_s)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    if sig is not None:
        time.sleep(0.5)
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code and text in err and "Traceback" not in err


def test_sigterm_stops_a_batch_between_decks_and_keeps_the_finished_ones(tmp_path, capsys,
                                                                       monkeypatch) -> None:
    """A batch in a child process: a second batch on its folder is refused and names the
    holder (issue 19, item 19); SIGTERM then stops the child between decks with the finished
    ones kept (item 2), and the folder's lock goes with it. One child serves both checks (a
    child is an interpreter start)."""
    out = tmp_path / "b"
    out.mkdir()
    proc = cli_process(_batch(out, "0-40"), tmp_path)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out / "decks.jsonl").exists():
            time.sleep(0.2)
        line = refused(_batch(out, "0-40"), capsys, monkeypatch)
        assert "in use by another batch" in line and f"pid {proc.pid}" in line
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().startswith("interrupted: stopped by SIGTERM") and "rerun" in err
    done = _journal_decks(out)
    assert 1 <= len(done) < 41 and (out / "decks.parquet").is_file()
    with folder_lock(out, "batch"):  # released when the holder ended, however it ended
        pass


# ============================================================ 3. interrupts write the checkpoint
def test_ctrl_c_during_numeral211_solve_writes_the_checkpoint_and_says_where(tmp_path) -> None:
    ck = tmp_path / "ck.npz"
    proc = cli_process(["numeral211", "solve", *SMALL_N211, "-n", "100000000",
                        "--checkpoint-minutes", "600", "--save", str(ck)], tmp_path)
    wait_until_handling_signals(proc)  # past the imports
    wait_for_cpu_seconds(proc, N211_BUILD_CPU_SECONDS)  # past the game's build: iterating
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted: stopped by SIGINT; checkpoint" in err and str(ck) in err
    assert "--resume" in err and ck.is_file()
    meta = json.loads(str(np.load(ck)["meta"]))
    assert meta["iteration"] >= 1


def test_an_interrupt_without_save_still_says_interrupted(tmp_path) -> None:
    proc = cli_process(["numeral211", "solve", *SMALL_N211, "-n", "100000000"], tmp_path)
    wait_until_handling_signals(proc)
    wait_for_cpu_seconds(proc, N211_BUILD_CPU_SECONDS)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err and "--save" in err


def test_every_interrupted_command_says_so(tmp_path) -> None:
    # typer turns Ctrl-C into a silent exit code 130; the entry point says "interrupted"
    proc = cli_process(["pasur", "selfplay", "--seed", "1", "--alex", "exact", "--bob",
                        "exact", "--games", "1000000"], tmp_path)
    wait_until_handling_signals(proc)
    time.sleep(1)  # playing
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert [line for line in err.splitlines() if line.strip()] == [
        "interrupted: stopped by SIGINT or SIGTERM"]


# ============================================================ 4-7. memory bounds
def test_unbounded_inputs_are_refused_before_any_allocation(tmp_path, capsys,
                                                            monkeypatch) -> None:
    out = str(tmp_path / "o")
    cases = [
        (["pasur", "batch", "/dev/zero", "--decks", "0-1", "--out", out], "not a regular file"),
        (["pasur", "batch", "seeds", "--decks", "0-999999999999", "--out", out],
         "at most 100,000"),
        (["pasur", "batch", "seeds", "--decks", "0-1", "--out", out, "--games",
          "1000000000000"], "--games must be between 0 and 1,000,000"),
        (["pasur", "batch", "seeds", "--decks", "0-1", "--out", out, "--workers", "1000"],
         "--workers must be between 0 and"),
        (["pasur", "selfplay", "--seed", "1", "--alex", "random", "--bob", "random",
          "--games", "1000000000000"], "--games must be between 1 and 1,000,000"),
        (["pasur", "selfplay", "--seed", "1", "--alex", "random", "--bob", "random",
          "--games", "99999999999999999999"], "--games must be between"),
        (["numeral211", "solve", *SMALL_N211, "--sample-boards", "1000000"],
         "needs about"),
    ]
    for args, expected in cases:
        assert expected in refused(args, capsys, monkeypatch), args
    assert not Path(out).exists()


# ============================================================ 8. output paths before the work
def test_output_paths_are_checked_before_the_work(tmp_path, a_file, capsys,
                                                  monkeypatch) -> None:
    batch = tmp_path / "batch"
    assert run_cli(_batch(batch, "0-0"), capsys, monkeypatch)[0] == 0
    cases = [
        (_batch(a_file / "x"), "not a folder"),
        (_batch(Path("/proc/tensorcfr-test/b")), "cannot write"),
        (["pasur", "selfplay", "--seed", "1", "--alex", "random", "--bob", "random",
          "--records", str(a_file / "r")], "not a folder"),
        (["pasur", "train", str(batch), "--out", str(a_file / "m")], "not a folder"),
        (["pasur", "analyze", str(batch), "--out", str(a_file / "an")], "not a folder"),
        (["pasur", "analyze", str(batch), "--out", "/proc/tensorcfr-test"], "cannot write"),
        (["numeral211", "abstract", "-m", "ehs", "--ranks", "9TA", "--suits", "2", "--out",
          str(a_file / "x.npz")], "not a folder"),
        (["numeral211", "embed", "--ranks", "9TA", "--suits", "2", "--out",
          str(a_file / "x.npz")], "not a folder"),
    ]
    for args, expected in cases:
        line = refused(args, capsys, monkeypatch)
        assert expected in line, (args, line)


# ============================================================ 9. a full disk: one line, no debris
def _no_debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp"))


def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(tmp_path, capsys,
                                                                  monkeypatch) -> None:
    import pyarrow.parquet as pq

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    # numeral211 solve --out (the strategy file) and --save (the checkpoint)
    monkeypatch.setattr(np, "savez", full)
    for option in ("--out", "--save"):
        target = tmp_path / f"n211{option}.npz"
        line = failed_after_progress(["numeral211", "solve", *SMALL_N211, "-n", "2", option,
                                      str(target)], capsys, monkeypatch)
        assert "no space left on device" in line and not target.exists()
    monkeypatch.undo()
    # pasur batch: the Parquet table (pyarrow raises OSError without an errno) ...
    monkeypatch.setattr(pq, "write_table",
                        lambda *a, **k: (_ for _ in ()).throw(OSError("IOError: No space")))
    out = tmp_path / "b"
    assert "No space" in refused(_batch(out, "0-0"), capsys, monkeypatch)
    assert not (out / "decks.parquet").exists()
    monkeypatch.undo()
    # ... and the journal
    monkeypatch.setattr(os, "write", lambda fd, data: full())
    out2 = tmp_path / "b2"
    assert "no space left on device" in refused(_batch(out2, "0-0"), capsys, monkeypatch)
    monkeypatch.undo()
    assert (out2 / "decks.jsonl").read_bytes() == b""
    # a torch.save cut short (pasur solve --method dcfr checkpoints) is a RuntimeError
    from tensorcfr.utils.io import atomic_path

    with pytest.raises(OutputWriteError, match="cannot write"):
        with atomic_path(tmp_path / "round_0.pt"):
            raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write "
                               "failed")
    assert _no_debris(tmp_path) == [] and not (tmp_path / "round_0.pt").exists()


# ============================================================ 10. a binary or folder journal
@pytest.mark.parametrize("make, expected", [
    (lambda p: p.mkdir(), "is a folder, not a journal"),
    (lambda p: p.write_bytes(bytes(range(256)) * 20), "is not a journal"),
])
def test_a_binary_or_folder_journal_is_one_line(tmp_path, make, expected, capsys,
                                                 monkeypatch) -> None:
    out = tmp_path / "b"
    out.mkdir()
    make(out / "decks.jsonl")
    assert expected in refused(_batch(out, "0-0"), capsys, monkeypatch)


# ============================================================ 11. seeds past 64 bits
@pytest.mark.parametrize("args", [
    ["pasur", "selfplay", "--seed", "1", "--alex", "random", "--bob", "random",
     "--sample-seed", "99999999999999999999"],
    ["pasur", "batch", "seeds", "--decks", "0-0", "--out", "o", "--sample-seed",
     "99999999999999999999"],
    ["numeral211", "solve", *SMALL_N211, "--sample-boards", "1", "--seed",
     "99999999999999999999"],
])
def test_seeds_past_64_bits_are_refused(args, capsys, monkeypatch) -> None:
    assert "must be between 0 and" in refused(args, capsys, monkeypatch)


# ============================================================ 12-13. checkpoints: other game, NaN
@pytest.fixture()
def n211_checkpoint(tmp_path, capsys, monkeypatch) -> Path:
    ck = tmp_path / "ck.npz"
    code, _, err = run_cli(["numeral211", "solve", *SMALL_N211, "--algo", "dcfr", "-n", "2",
                            "--save", str(ck)], capsys, monkeypatch)
    assert code == 0, err
    return ck


def test_resume_refuses_other_game_options_and_names_the_changed_option(
        n211_checkpoint, capsys, monkeypatch) -> None:
    resume = ["numeral211", "solve", "--algo", "dcfr", "-n", "3", "--resume",
              str(n211_checkpoint)]
    line = refused([*resume, "--ranks", "89TA", "--suits", "2", "--max-bets", "2"], capsys,
                   monkeypatch)
    assert "ranks=9TA" in line and "ranks=89TA" in line
    line = refused([*resume, "--alpha", "2"], capsys, monkeypatch)
    assert "--alpha" in line and "--algo" not in line
    code, _, err = run_cli([*resume, *SMALL_N211], capsys, monkeypatch)
    assert code == 0, err  # the same options continue


def test_a_checkpoint_with_nan_is_refused(n211_checkpoint, tmp_path, capsys,
                                          monkeypatch) -> None:
    arrays = dict(np.load(n211_checkpoint))
    arrays["regrets_1"] = arrays["regrets_1"].copy()
    arrays["regrets_1"].flat[5] = np.nan
    damaged = tmp_path / "nan.npz"
    np.savez(damaged, **arrays)
    line = refused(["numeral211", "solve", "--algo", "dcfr", "-n", "3", "--resume",
                    str(damaged)], capsys, monkeypatch)
    assert "regrets_1 holds 1 non-finite value" in line


# ============================================================ 14. a diverged training
def test_a_diverged_training_writes_nothing(tmp_path, capsys, monkeypatch) -> None:
    from tensorcfr.games.pasur.learning import policy_model

    rng = np.random.default_rng(0)

    def rows(run, games, seed, device):
        return (rng.random((200, 58)), rng.random(200) * 100,
                {"deal": list(range(52)), "run": str(run)})

    monkeypatch.setattr(policy_model, "table_training_rows", rows)
    monkeypatch.setattr(policy_model.PolicyModel, "predict",
                        lambda self, x: np.full(len(x), np.nan))
    out = tmp_path / "model"
    line = refused(["pasur", "train", str(tmp_path), "--out", str(out), "--rounds", "2"],
                   capsys, monkeypatch)
    assert "non-finite" in line and "diverged" in line
    assert not (out / "policy.ubj").exists() and not (out / "manifest.json").exists()
    assert "finite" in refused(["pasur", "train", str(tmp_path), "--out", str(out), "--eta",
                                "inf"], capsys, monkeypatch)


def test_a_diverged_embedding_writes_nothing(tmp_path, capsys, monkeypatch) -> None:
    from tensorcfr.games.numeral211.abstraction import embedding_net

    def diverged(config, flop, turn, **kwargs):
        return embedding_net.EmbeddingFile(config, {1: np.full((2, 3), np.nan),
                                                    2: np.zeros((2, 3))}, {})

    monkeypatch.setattr(embedding_net, "train_embedding", diverged)
    out = tmp_path / "phi.npz"
    line = refused(["numeral211", "embed", "--ranks", "9TA", "--suits", "2", "--flop", "3",
                    "--turn", "3", "--out", str(out)], capsys, monkeypatch)
    assert "diverged" in line and not out.exists()


# ============================================================ 15. serve/play load the AIs at start
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_and_play_refuse_a_damaged_table_or_model_at_start(tmp_path, capsys,
                                                                 monkeypatch) -> None:
    table = tmp_path / "run"
    table.mkdir()
    (table / "strategy.parquet").write_bytes(b"PAR1" + bytes(100))  # truncated
    model = tmp_path / "model"
    model.mkdir()
    (model / "manifest.json").write_bytes(os.urandom(64))
    port = str(_free_port())
    line = refused(["pasur", "serve", "--port", port, "--table", str(table)], capsys,
                   monkeypatch)
    assert "strategy.parquet" in line or "strategy table" in line
    line = refused(["pasur", "serve", "--port", port, "--model", str(model)], capsys,
                   monkeypatch)
    assert "manifest.json" in line
    line = refused(["pasur", "play", "--mode", "open", "--ai", "model", "--model", str(model),
                    "--seed", "1"],
                   capsys, monkeypatch)
    assert "manifest.json" in line


# ============================================================ 17. --json stdout holds JSON only
def test_what_ray_prints_on_stdout_goes_to_stderr(capfd) -> None:
    from tensorcfr.utils.ray_cluster import stdout_to_stderr

    with stdout_to_stderr():
        os.write(1, b"(raylet) A worker died or was killed\n")  # as Ray's core writes
        print("warning from a logger", flush=True)
    print('{"json": 1}', flush=True)
    captured = capfd.readouterr()
    assert captured.out == '{"json": 1}\n'
    assert "worker died" in captured.err and "warning from a logger" in captured.err


# ============================================================ 18. messages
def test_messages_name_the_right_thing_and_keep_brackets(tmp_path, capsys,
                                                         monkeypatch) -> None:
    line = refused(["pasur", "train", str(tmp_path / "nonexist"), "--out",
                    str(tmp_path / "m")], capsys, monkeypatch)
    assert "run folder" in line and "--table" not in line
    line = refused(["pasur", "selfplay", "--deal-file", str(tmp_path / "[x].json"), "--alex",
                    "random", "--bob", "random"], capsys, monkeypatch)
    assert "[x].json" in line
    out = tmp_path / "b"
    assert run_cli(_batch(out, "0-0"), capsys, monkeypatch)[0] == 0
    line = refused(_batch(out, "0-0")[:-1] + ["3"], capsys, monkeypatch)
    assert "--games 3 (the saved run used 2)" in line
