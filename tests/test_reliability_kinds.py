"""The kinds of issue 27, part 2, one case each where the tour found it (tracebacks, hangs and
unbounded memory, bad input accepted, Ray, concurrency, journals, signals and messages). The
option-value grid of every command is ``tests/test_cli_generated.py``; every file reader is
fuzzed in ``tests/test_readers_fuzz.py``; ``docs/reliability.md`` maps each kind to its test.

Tournaments here play ``random`` against ``greedy`` in this process (a few seconds a deal);
the one Ray case starts a real local instance (about 30 s on the loaded 2-core machine).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from _cli_helpers import run_cli
from tensorcfr.errors import CorruptFileError, InterruptedRun, TensorCFRError

SRC = str(Path(__file__).resolve().parents[1] / "src")


def one_line_error(code: int, err: str) -> str:
    """The single ``error:`` line of a command refused with exit code 2."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    return lines[0]


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging) when the block takes longer than ``seconds``."""
    def expire(signum: int, frame: Any) -> None:
        raise _Timeout(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _device(path: Path) -> Path:
    """A character device node at ``path`` (``/dev/zero``'s numbers; a link to it where
    ``mknod`` is not allowed)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except OSError:
        os.symlink("/dev/zero", path)
    return path


def _settings(out: Path, **kwargs: Any) -> Any:
    from tensorcfr.games.pasur.tournament import TournamentSettings

    return TournamentSettings(**{"agents": ("random", "greedy"), "out": out, "deals": 2,
                                 "in_process": True, **kwargs})


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-deal tournament folder (random vs greedy, in this process)."""
    from tensorcfr.games.pasur.tournament import run_tournament

    out = tmp_path_factory.mktemp("tournament") / "t"
    run_tournament(_settings(out))
    return out


# ============================================================ tracebacks


def test_a_seed_whose_deals_pass_64_bits_is_refused_before_any_game(tmp_path, capsys,
                                                                    monkeypatch) -> None:
    for seed in ("9223372036854775807", "-3"):
        code, _, err = run_cli(["pasur", "tournament", "--agents", "random,greedy", "--deals",
                                "2", "--seed", seed, "--in-process", "--out",
                                str(tmp_path / "t")], capsys, monkeypatch)
        assert "--seed" in one_line_error(code, err)
        assert not (tmp_path / "t").exists()
    from tensorcfr.utils.checks import MAX_SEED

    with pytest.raises(TensorCFRError, match="--seed must be between 0 and"):
        _settings(tmp_path / "t", seed=MAX_SEED)  # deal 1 would be seeded 2**63


@pytest.mark.parametrize("damage", [
    lambda row: row.update(utility="lots"), lambda row: row.pop("a_diff"),
    lambda row: row.update(alex_move_seconds_median=math.inf)])
def test_journal_rows_of_wrong_types_are_skipped_said_and_replayed(played, tmp_path,
                                                                   damage) -> None:
    import shutil

    from tensorcfr.games.pasur.tournament import run_tournament

    out = tmp_path / "t"
    shutil.copytree(played, out)
    journal = out / "games.jsonl"
    lines = journal.read_text().splitlines()
    row = json.loads(lines[1])  # a game of deal 0
    damage(row)
    lines[1] = json.dumps(row)  # json.dumps writes inf as Infinity, as a bad writer would
    journal.write_text("\n".join(lines) + "\n")
    notices: list[str] = []
    result = run_tournament(_settings(out), on_progress=lambda p: notices.append(p.notice))
    assert result.computed == 1 and result.failed == 0
    assert any(n and "skipped 1 unreadable line(s) (2)" in n for n in notices), notices
    assert result.pairs[0].deals == 2


def _damage_rows(path: Path, how: str) -> None:
    from tensorcfr.games.pasur.learning.hidden_model import NUM_FEATURES

    x = np.zeros((8, NUM_FEATURES), np.float32)
    y = np.zeros(8, np.float32)
    if how == "nan":
        y[3] = np.nan
    if how == "5 features":
        x = x[:, :5]
    np.savez(path, x=x, y=y, game=np.zeros(8, np.int32), games=1,
             ident="exact|0|8|pasur-hidden-v1")
    if how == "truncated":
        path.write_bytes(path.read_bytes()[:300])


@pytest.mark.parametrize("how", ["truncated", "nan", "5 features"])
def test_a_damaged_rows_checkpoint_is_one_line(tmp_path, how, capsys, monkeypatch) -> None:
    out = tmp_path / "m"
    out.mkdir()
    _damage_rows(out / "rows.npz", how)
    code, _, err = run_cli(["pasur", "train-hidden", "--games", "2", "--out", str(out)],
                           capsys, monkeypatch)
    assert "rows.npz" in one_line_error(code, err)
    assert sorted(p.name for p in out.iterdir()) == ["rows.npz"]


def _batch_folder(folder: Path, column: str, values: list[Any]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.file_readers import _batch_rows

    rows = _batch_rows()
    for row, value in zip(rows, values):
        row[column] = value
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), str(folder / "decks.parquet"))
    return folder


def test_analyze_refuses_a_text_column_reads_nan_and_null_as_missing(tmp_path, capsys,
                                                                     monkeypatch) -> None:
    text = _batch_folder(tmp_path / "text", "exact_fair_value", ["lots"] * 6)
    code, _, err = run_cli(["pasur", "analyze", str(text), "--out", str(tmp_path / "a")],
                           capsys, monkeypatch)
    line = one_line_error(code, err)
    assert "decks.parquet" in line and "exact_fair_value" in line
    assert not (tmp_path / "a" / "figure14.png").exists()
    nan = _batch_folder(tmp_path / "nan", "exact_fair_value", [math.nan] + [1.0] * 5)
    null = _batch_folder(tmp_path / "null", "alex_clubs", [None] * 6)
    for folder in (nan, null):
        code, _, err = run_cli(["pasur", "analyze", str(folder), "--out",
                                str(tmp_path / f"a_{folder.name}")], capsys, monkeypatch)
        assert code == 0 and "Traceback" not in err, err


def test_a_manifest_with_features_lots_is_one_line(tmp_path) -> None:
    from tensorcfr.file_readers import _hidden_model_folder
    from tensorcfr.games.pasur.learning.hidden_model import load_hidden_model

    model = _hidden_model_folder(tmp_path)
    manifest = json.loads((model / "manifest.json").read_text())
    manifest["features"] = "lots"
    (model / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptFileError, match="manifest.json: \"features\" is 'lots'"):
        load_hidden_model(model)


# ============================================================ hangs and unbounded memory


def test_unbounded_tournament_and_agent_options_are_refused(tmp_path) -> None:
    from tensorcfr.games.pasur.agents import AgentOptions
    from tensorcfr.games.pasur.learning.hidden_model import TrainHiddenSettings

    started = time.perf_counter()
    with pytest.raises(TensorCFRError, match="--deals must be between 1 and 100,000"):
        _settings(tmp_path / "t", deals=100_000_000)
    with pytest.raises(TensorCFRError, match="--workers must be between 1 and .* CPU"):
        _settings(tmp_path / "t", workers=100_000, in_process=False)
    for options, message in (({"seconds_per_move": math.inf}, "--seconds-per-move"),
                             ({"simulations": 10**20}, "--simulations"),
                             ({"determinizations": 10**20}, "--determinizations")):
        with pytest.raises(TensorCFRError, match=message):
            AgentOptions(**options)
    for options, message in (({"games": 10**12}, "--games"), ({"rounds": 10**9}, "--rounds"),
                             ({"eta": math.inf}, "--eta"), ({"seed": -1}, "--seed"),
                             ({"max_depth": 10**20}, "--max-depth")):
        with pytest.raises(TensorCFRError, match=message):
            TrainHiddenSettings(**{"games": 2, "out": tmp_path / "m", **options})
    assert time.perf_counter() - started < 10  # refused, not started
    assert not (tmp_path / "t").exists()


def test_a_fifo_or_device_given_as_an_input_file_is_refused_without_blocking(tmp_path) -> None:
    from tensorcfr.games.pasur.batch import read_decks
    from tensorcfr.games.pasur.learning.analysis import _read_paper_mm

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    device = _device(tmp_path / "zero.csv")
    with within(10):
        for path, reader in ((fifo, lambda p: read_decks(str(p), 0, 0)),
                             (fifo, _read_paper_mm), (device, _read_paper_mm),
                             (device, lambda p: read_decks(str(p), 0, 0))):
            with pytest.raises(TensorCFRError) as info:
                reader(path)
            message = str(info.value)
            assert str(path) in message and "does not exist" not in message
            assert ("FIFO" in message) == (path == fifo)
        (tmp_path / "folder.csv").mkdir()
        with pytest.raises(TensorCFRError, match="folder.csv is a folder, not a file"):
            read_decks(str(tmp_path / "folder.csv"), 0, 0)


# ============================================================ bad input accepted with exit 0


def test_bad_input_is_refused_at_the_start(tmp_path, capsys, monkeypatch) -> None:
    with pytest.raises(TensorCFRError, match="--device 'bogus'"):
        _settings(tmp_path / "t", agent_options=__import__(
            "tensorcfr.games.pasur.agents", fromlist=["AgentOptions"]).AgentOptions(
                device="bogus"))
    code, _, err = run_cli(["numeral211", "embed", "--ranks", "9TA", "--suits", "2", "--flop",
                            "100000", "--turn", "3", "--out", str(tmp_path / "phi.npz")],
                           capsys, monkeypatch)
    assert "--flop must be between 1 and 30" in one_line_error(code, err)
    assert not (tmp_path / "phi.npz").exists()


def test_a_checkpoint_at_iteration_1e30_is_refused(tmp_path) -> None:
    from tensorcfr.file_readers import _generic_checkpoint, _numeral211_checkpoint

    for make in (_numeral211_checkpoint, _generic_checkpoint):
        folder = tmp_path / make.__name__
        folder.mkdir()
        sample = make(folder)
        with np.load(sample.file) as data:
            arrays = {k: data[k] for k in data.files}
        for iteration in (1e30, 10**30):
            if "meta" in arrays:
                meta = json.loads(str(arrays["meta"]))
                meta["iteration"] = iteration
                changed = {**arrays, "meta": np.array(json.dumps(meta))}
            else:
                meta = json.loads(arrays["metadata_json"].tobytes())
                meta["iteration"] = iteration
                changed = {**arrays, "metadata_json": np.frombuffer(
                    json.dumps(meta).encode(), dtype=np.uint8)}
            np.savez(sample.file, **changed)
            with pytest.raises(CorruptFileError, match="iteration"):
                sample.read()


# ============================================================ concurrency


def test_a_second_tournament_on_the_same_folder_is_refused_with_the_holder(tmp_path) -> None:
    from tensorcfr.games.pasur.tournament import run_tournament
    from tensorcfr.utils.journal import folder_lock

    out = tmp_path / "t"
    out.mkdir()
    with folder_lock(out, "tournament"):
        with pytest.raises(TensorCFRError, match=f"in use by another tournament \\(pid "
                                                 f"{os.getpid()}"):
            run_tournament(_settings(out))
    assert not (out / "games.jsonl").exists()


# ============================================================ signals and messages


def test_sigint_during_train_hidden_saves_the_rows_so_far(tmp_path) -> None:
    from tensorcfr.games.pasur.learning.hidden_model import (
        TrainHiddenSettings,
        load_rows_checkpoint,
        run_train_hidden,
    )

    def progress(p: Any) -> None:
        if p.stage == "games" and p.done == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the first game

    out = tmp_path / "m"
    with pytest.raises(InterruptedRun, match="the rows of 1 of 3 games are in .*rows.npz"):
        run_train_hidden(TrainHiddenSettings(games=3, out=out), on_progress=progress)
    saved = load_rows_checkpoint(out / "rows.npz")
    assert saved["games"] == 1 and len(saved["y"]) > 0
    assert not (out / "hidden_model.ubj").exists()


def test_a_bad_mm_table_names_its_problem(tmp_path) -> None:
    from tensorcfr.games.pasur.learning.analysis import _read_paper_mm

    table = tmp_path / "MM.csv"
    table.write_text("deck,MM_WINS\n0,50\n")
    with pytest.raises(CorruptFileError, match="MM.csv .*no Deck column"):
        _read_paper_mm(table)
    table.write_text("Deck,MM_WINS\n0,inf\n")
    with pytest.raises(CorruptFileError, match="MM.csv .*line 2"):
        _read_paper_mm(table)


# ============================================================ Ray


def test_a_local_ray_run_starts_its_own_instance_and_ctrl_c_during_its_start_stops_it(
        tmp_path) -> None:
    """Ray's temporary folder holds a stale ``ray_current_cluster`` (a head that was killed)
    and RAY_ADDRESS names it: a local run still starts its own instance, and a Ctrl-C while
    that instance starts stops the run with exit 130 (it was held back and dropped)."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="rk", dir="/tmp"))  # short: Ray's socket paths
    try:
        (ray_tmp / "ray").mkdir()
        (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:9\n")
        env = dict(os.environ, PYTHONPATH=SRC, RAY_TMPDIR=str(ray_tmp),
                   RAY_ADDRESS="127.0.0.1:9")
        args = [sys.executable, "-c", "from tensorcfr.cli.main import main; main()", "pasur",
                "tournament", "--agents", "random,greedy", "--deals", "1", "--workers", "1"]
        proc = subprocess.Popen([*args, "--out", str(tmp_path / "u")], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        sessions = lambda: [p for p in (ray_tmp / "ray").glob("session_*")  # noqa: E731
                            if p.name != "session_latest"]
        before = len(sessions())
        # a session folder of its own appears: the run starts its instance (joining the
        # stale address would fail at once, without one)
        while len(sessions()) == before:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
        games = tmp_path / "u" / "games.jsonl"
        assert not games.exists() or games.read_text().count("\n") < 3
    finally:
        import shutil

        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_an_address_where_nothing_answers_is_not_blamed_on_the_token() -> None:
    import socket

    from tensorcfr.utils.ray_cluster import _failure_hint

    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    hint = _failure_hint(address, "Failed to connect to GCS at address 127.0.0.1 within 5 "
                         "seconds", auth="")
    assert "nothing answers there" in hint and "token" not in hint
    assert "token" in _failure_hint(address, "Authentication failed: UNAUTHENTICATED", "")
    assert _failure_hint(None, "Failed to connect", "") == ""


def test_a_rows_checkpoint_of_other_options_is_refused_naming_the_option(tmp_path) -> None:
    from tensorcfr.games.pasur.learning.hidden_model import TrainHiddenSettings, _collect_rows

    out = tmp_path / "m"
    out.mkdir()
    _damage_rows(out / "rows.npz", "none")  # a whole checkpoint of seed 0, teacher exact
    before = (out / "rows.npz").read_bytes()
    with pytest.raises(TensorCFRError, match="--seed 1 \\(the saved rows used 0\\)"):
        _collect_rows(TrainHiddenSettings(games=2, out=out, seed=1), lambda p: None)
    assert (out / "rows.npz").read_bytes() == before  # kept, not overwritten


def test_the_short_join_window_is_set_only_while_joining(monkeypatch) -> None:
    """A join of a cluster that refuses the client gives up after JOIN_GCS_ATTEMPTS tries
    (tests/test_reliability_ray.py runs it against a real head); the variable is Ray's, set
    only inside the join, and a user's own value is kept."""
    import os

    from tensorcfr.utils.ray_cluster import JOIN_GCS_ATTEMPTS, _environment_default

    name = "RAY_gcs_server_port_wait_time_s"
    monkeypatch.delenv(name, raising=False)
    with _environment_default(name, str(JOIN_GCS_ATTEMPTS)):
        assert os.environ[name] == str(JOIN_GCS_ATTEMPTS)
    assert name not in os.environ
    monkeypatch.setenv(name, "30")
    with _environment_default(name, str(JOIN_GCS_ATTEMPTS)):
        assert os.environ[name] == "30"
    assert os.environ[name] == "30"
