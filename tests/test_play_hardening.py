"""The play server hardened (issue 26, part 2), tried as an attacker would:

* a request with a ``Host`` header the server does not serve (DNS rebinding) is refused;
* the end-of-game analysis is cached by deal and plays, and at most a few run at once
  (a flood of uploads gets 503 with ``Retry-After``, not the CPU);
* a model or run folder cannot make a loader open a file outside it (``../``, absolute
  paths, symbolic links);
* ``serve``/``play`` check ``--device`` at start, and ``--max-games``/``--cache-size``/
  ``--ttl-minutes`` are bounded.

Every test runs in seconds (the exact solves are of the quick deal of seed 3).
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import threading
import warnings
from pathlib import Path

import pytest

from _cli_helpers import run_cli
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.engine.records import GameRecord, record_to_json
from tensorcfr.games.pasur.engine.rules import (
    apply_action,
    initial_state,
    legal_actions,
    random_deal,
)
from tensorcfr.play.hosts import HostPolicy, check_host_name, host_name
from tensorcfr.play.caches import AnalysisCache, SolutionCache
from tensorcfr.play.limits import CACHE_SIZE_LIMIT, MAX_GAMES_LIMIT, Busy, WorkGate
from tensorcfr.play.server import create_app
from tensorcfr.play.session import GameSession
from tensorcfr.utils.confine import file_in_folder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

SEED = 3  # quick exact solve (about 0.1 s)
LOCAL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def solutions(one_thread):
    return SolutionCache(max_size=2)


def _record(plays_seed: int, mode: str = "open") -> dict:
    """A finished game of the deal of seed 3, its plays drawn at random by ``plays_seed``."""
    rng = random.Random(plays_seed)
    state = initial_state(random_deal(SEED))
    plays = []
    while not state.is_terminal:
        action = rng.choice(legal_actions(state))
        plays.append(action)
        state = apply_action(state, action)
    obj = record_to_json(GameRecord(deal=tuple(random_deal(SEED)), plays=tuple(plays)))
    return {**obj, "mode": mode, "human": "Alex"}


# ----------------------------------------------------------------------------- Host header

@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:8000",
                                  "[::1]", "[::1]:8000", "LOCALHOST:8000", "localhost.:8000"])
def test_loopback_hosts_are_served(solutions, host):
    client = TestClient(create_app(solutions=solutions), base_url=LOCAL)
    r = client.get("/api/options", headers={"Host": host})
    assert r.status_code == 200, (host, r.text)


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:8000",
                                  "localhost.evil.example.com", "127.0.0.1.nip.io",
                                  "192.168.1.5:8000", "[::1", "localhost:80x", "",
                                  "a" * 300, "[fe80::1]:8000"])
def test_other_hosts_get_400(solutions, host):
    """What a DNS-rebinding page sends (its own name), and malformed values."""
    app = create_app(solutions=solutions)
    client = TestClient(app, base_url=LOCAL)
    for method, path, body in (("GET", "/api/options", None), ("GET", "/", None),
                               ("POST", "/api/games", {"mode": "open", "seed": SEED})):
        r = client.request(method, path, headers={"Host": host}, json=body)
        assert r.status_code == 400, (host, path, r.text)
        assert r.headers["content-type"] == "application/json"
        assert "Host header" in r.json()["detail"] and "\n" not in r.json()["detail"]
    assert len(app.state.store) == 0  # the POST never reached the route


def _asgi_status(app, headers: list[tuple[bytes, bytes]]) -> int:
    """Status of a raw ASGI GET /api/options with exactly these headers."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": "/api/options", "raw_path":
             b"/api/options", "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_missing_or_doubled_host_is_refused(solutions):
    app = create_app(solutions=solutions)
    assert _asgi_status(app, [(b"host", b"127.0.0.1:8000")]) == 200
    assert _asgi_status(app, []) == 400
    assert _asgi_status(app, [(b"host", b"localhost"), (b"host", b"evil.example.com")]) == 400


def test_wildcard_listen_serves_addresses_and_allowed_names(solutions):
    app = create_app(solutions=solutions, host="0.0.0.0", allowed_hosts=["Pasur.LAN"])
    client = TestClient(app, base_url=LOCAL)
    for host in ("192.168.1.5:8000", "[fe80::1]:8000", "pasur.lan:8000", "localhost"):
        assert client.get("/api/options", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example.com", "pasur.lan.evil.example.com"):
        assert client.get("/api/options", headers={"Host": host}).status_code == 400, host


def test_named_listen_host_is_served(solutions):
    client = TestClient(create_app(solutions=solutions, host="pasur.example"), base_url=LOCAL)
    assert client.get("/api/options", headers={"Host": "pasur.example:8000"}).status_code == 200
    assert client.get("/api/options", headers={"Host": "10.0.0.1:8000"}).status_code == 400


def test_host_parsing_and_policy():
    assert host_name("[::1]:8000") == "::1"
    assert host_name("Example.COM.:80") == "example.com"
    assert host_name("example.com:") is None and host_name("[::1]x") is None
    policy = HostPolicy.for_listen("127.0.0.1")
    assert not policy.any_ip and policy.allows("[::1]") and not policy.allows(None)
    assert check_host_name("fe80::1") == "fe80::1" and check_host_name("[::1]:80") == "::1"
    for bad in ("a b", "x/y", "", "http://x", "-x"):
        with pytest.raises(TensorCFRError, match="--allowed-host"):
            check_host_name(bad)


# ----------------------------------------------------------------------------- bounded work

def test_analysis_is_cached_by_deal_and_plays(solutions, monkeypatch):
    """The second GET /analysis of a game, and the analysis of the same record uploaded
    again, are served from the cache: the session's analysis runs once."""
    calls = []
    original = GameSession.analysis

    def counted(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(GameSession, "analysis", counted)
    app = create_app(solutions=solutions)
    client = TestClient(app, base_url=LOCAL)
    record = _record(1)
    first = client.post("/api/records", json=record).json()["game_id"]
    again = client.post("/api/records", json=record).json()["game_id"]
    other = client.post("/api/records", json=_record(2)).json()["game_id"]
    answers = [client.get(f"/api/games/{gid}/analysis") for gid in (first, first, again)]
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert answers[0].json() == answers[1].json() == answers[2].json()
    assert len(calls) == 1
    assert client.get(f"/api/games/{other}/analysis").status_code == 200
    assert len(calls) == 2  # other plays: analysed afresh
    cache = app.state.context.analyses
    assert cache.hits == 2 and len(cache) == 2


def test_analysis_work_is_bounded(solutions, monkeypatch):
    """With one analysis running and one waiting, a third is refused at once (503 with
    Retry-After and a readable line); the first two complete when the first one ends."""
    started = threading.Event()
    release = threading.Event()
    running = []
    original = GameSession.analysis

    def slow(self):
        running.append(1)
        started.set()
        assert release.wait(20)
        return original(self)

    monkeypatch.setattr(GameSession, "analysis", slow)
    app = create_app(solutions=solutions, max_analyses=1)
    gids = [TestClient(app, base_url=LOCAL).post("/api/records", json=_record(k)).json()
            ["game_id"] for k in (11, 12, 13)]
    results: dict[int, int] = {}

    def ask(i: int) -> None:
        r = TestClient(app, base_url=LOCAL).get(f"/api/games/{gids[i]}/analysis")
        results[i] = r.status_code

    threads = [threading.Thread(target=ask, args=(0,))]
    threads[0].start()
    assert started.wait(20)
    threads.append(threading.Thread(target=ask, args=(1,)))
    threads[1].start()
    gate = app.state.context.analysis_gate
    for _ in range(200):  # the second request is queued behind the first
        if gate.in_use == 2:
            break
        threading.Event().wait(0.02)
    assert gate.in_use == 2
    r = TestClient(app, base_url=LOCAL).get(f"/api/games/{gids[2]}/analysis")
    assert r.status_code == 503
    assert "busy" in r.json()["detail"] and int(r.headers["Retry-After"]) >= 1
    assert len(running) == 1  # the refused request started no work
    release.set()
    for t in threads:
        t.join(30)
    assert results == {0: 200, 1: 200}
    assert gate.in_use == 0 and gate.refused == 1


def test_work_gate_wait_runs_out():
    gate = WorkGate(max_running=1, max_waiting=1, wait_seconds=0.05)
    with gate.slot():
        with pytest.raises(Busy, match="busy"):
            with gate.slot():  # waits 0.05 s for the held slot, then gives up
                pass
    with gate.slot():  # free again
        assert gate.in_use == 1


def test_analysis_cache_is_bounded_and_copies():
    cache = AnalysisCache(max_size=2)
    for k in range(3):
        cache.put((k,), {"plays": [k]})
    assert len(cache) == 2 and cache.get((0,)) is None
    got = cache.get((2,))
    got["plays"].append(99)
    assert cache.get((2,)) == {"plays": [2]}


# ----------------------------------------------------------------------------- folders

def test_file_in_folder_refuses_escapes(tmp_path):
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "m.ubj").write_bytes(b"x")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (folder / "inside_link").symlink_to(folder / "sub" / "m.ubj")
    (folder / "outside_link").symlink_to(outside)
    (folder / "dir_link").symlink_to(tmp_path)
    assert file_in_folder(folder, "sub/m.ubj", named_by="manifest.json") == folder / "sub/m.ubj"
    assert file_in_folder(folder, "inside_link", named_by="m") == folder / "inside_link"
    for name in ("../secret.txt", "../../../../etc/passwd", str(outside), "/etc/passwd",
                 "outside_link", "dir_link/secret.txt", "sub/../../secret.txt", ".", "",
                 None, 7, ["a"], "a\x00b"):
        with pytest.raises(CorruptFileError) as info:
            file_in_folder(folder, name, named_by=folder / "manifest.json", key="model_file")
        message = str(info.value)
        assert "manifest.json" in message and "\n" not in message, name


def _hidden_model_copy(tmp_path: Path) -> Path:
    from tensorcfr.games.pasur.learning.hidden_model import DEFAULT_MODEL_DIR

    folder = tmp_path / "hidden"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    return folder


def _set_manifest(folder: Path, **changes) -> None:
    path = folder / "manifest.json"
    obj = json.loads(path.read_text())
    obj.update(changes)
    path.write_text(json.dumps(obj))


def test_hidden_model_manifest_cannot_point_outside(tmp_path):
    from tensorcfr.games.pasur.learning.hidden_model import load_hidden_model

    folder = _hidden_model_copy(tmp_path)
    load_hidden_model(folder)  # the copy loads
    (tmp_path / "elsewhere.ubj").write_bytes((folder / "hidden_model.ubj").read_bytes())
    for target in ("../../../../etc/passwd", "../elsewhere.ubj", "/etc/passwd"):
        _set_manifest(folder, model_file=target)
        with pytest.raises(CorruptFileError, match="manifest.json: model_file .* outside|"
                                                   "manifest.json: model_file .* absolute"):
            load_hidden_model(folder)
    (folder / "hidden_model.ubj").unlink()
    (folder / "hidden_model.ubj").symlink_to(tmp_path / "elsewhere.ubj")  # a valid model!
    _set_manifest(folder, model_file="hidden_model.ubj")
    with pytest.raises(CorruptFileError, match="leads outside"):
        load_hidden_model(folder)


def test_manifest_itself_cannot_be_a_link_out(tmp_path):
    from tensorcfr.games.pasur.learning.hidden_model import load_hidden_model

    folder = _hidden_model_copy(tmp_path)
    (tmp_path / "manifest.json").write_bytes((folder / "manifest.json").read_bytes())
    (folder / "manifest.json").unlink()
    (folder / "manifest.json").symlink_to(tmp_path / "manifest.json")
    with pytest.raises(CorruptFileError, match="the manifest .* leads outside"):
        load_hidden_model(folder)


def test_policy_model_manifest_cannot_point_outside(tmp_path, capsys, monkeypatch):
    from tensorcfr.games.pasur.learning import policy_model as pm

    folder = tmp_path / "policy"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({
        "format": pm.MODEL_FORMAT, "version": pm.MODEL_VERSION,
        "model_file": "../../../../etc/passwd",
        "features": {"name": pm.FEATURE_SET, "columns": pm.FEATURE_COLUMNS}}))
    with pytest.raises(CorruptFileError, match="model_file '../../../../etc/passwd' leads "
                                               "outside"):
        pm.load_policy_model(folder)
    code, out, err = run_cli(["pasur", "play", "--mode", "open", "--ai", "model", "--model",
                              str(folder)], capsys, monkeypatch)
    assert code == 2 and err.startswith("error:") and "leads outside" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_run_folder_manifest_cannot_point_outside(tmp_path):
    from tensorcfr.games.pasur.solving.dcfr_run import RUN_FORMAT, check_run_folder

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({
        "format": RUN_FORMAT, "files": {"strategy_table": "../../../../etc/passwd"}}))
    with pytest.raises(CorruptFileError, match="files.strategy_table .* leads outside"):
        check_run_folder(folder)


# ----------------------------------------------------------------------------- CLI checks

def _one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, (word, err)


@pytest.mark.parametrize("args", [["pasur", "serve", "--device", "bogus"],
                                  ["pasur", "serve", "--device", "meta"],
                                  ["pasur", "play", "--mode", "open", "--device", "bogus"],
                                  ["pasur", "play", "--device", "bogus"]])
def test_device_is_checked_at_start(args, capsys, monkeypatch):
    code, out, err = run_cli(args, capsys, monkeypatch)
    _one_line_error(code, err, "--device")
    assert out == ""  # nothing started: no deal shown, no server line


@pytest.mark.parametrize("option,value,limit", [
    ("--max-games", "99999999999999999999", f"{MAX_GAMES_LIMIT:,}"),
    ("--max-games", "0", f"{MAX_GAMES_LIMIT:,}"),
    ("--cache-size", "99999999999999999999", str(CACHE_SIZE_LIMIT)),
    ("--ttl-minutes", "1e30", "10,080"),
    ("--ttl-minutes", "nan", "10,080"),
    ("--allowed-host", "evil host", "not a host name"),
])
def test_serve_options_are_bounded(option, value, limit, capsys, monkeypatch):
    code, out, err = run_cli(["pasur", "serve", option, value], capsys, monkeypatch)
    _one_line_error(code, err, option, limit)


def test_serve_help_states_the_bounds(capsys, monkeypatch):
    code, out, _ = run_cli(["pasur", "serve", "--help"], capsys, monkeypatch)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0
    assert f"1..{MAX_GAMES_LIMIT:,}" in text and f"1..{CACHE_SIZE_LIMIT}" in text
    assert "--allowed-host" in text and "DNS rebinding" in text


def test_create_app_checks_device_and_sizes(solutions):
    with pytest.raises(TensorCFRError, match="device 'bogus'"):
        create_app(solutions=solutions, device="bogus")
    with pytest.raises(ValueError, match="cache_size"):
        create_app(cache_size=CACHE_SIZE_LIMIT + 1)
    with pytest.raises(ValueError, match="max_games"):
        create_app(solutions=solutions, max_games=MAX_GAMES_LIMIT + 1)


def test_analysis_under_way_is_shared():
    """Two requests for one analysis at once compute it once; past ``max_sharing`` waiting
    requests, the next is refused (no request thread waits unbounded)."""
    cache = AnalysisCache(max_sharing=1)
    started, release = threading.Event(), threading.Event()
    runs = []

    def analyse():
        runs.append(1)
        started.set()
        assert release.wait(20)
        return {"plays": [1]}

    got = []
    first = threading.Thread(target=lambda: got.append(cache.compute(("k",), analyse)))
    first.start()
    assert started.wait(20)
    second = threading.Thread(target=lambda: got.append(cache.compute(("k",), analyse)))
    second.start()
    for _ in range(200):
        if cache._sharing == 1:
            break
        threading.Event().wait(0.02)
    with pytest.raises(Busy, match="already wait"):
        cache.compute(("k",), analyse)
    release.set()
    first.join(20)
    second.join(20)
    assert got == [{"plays": [1]}, {"plays": [1]}] and len(runs) == 1
    assert cache.compute(("k",), analyse) == {"plays": [1]} and len(runs) == 1


def test_cross_site_requests_get_nothing(solutions):
    """A page on another site may send "simple" requests (text/plain or form bodies) without
    asking; the server reads bodies only as JSON, so they start no game, and it grants no
    cross-origin access (a JSON POST from another site needs a preflight it never passes)."""
    app = create_app(solutions=solutions)
    client = TestClient(app, base_url=LOCAL)
    evil = {"Origin": "http://evil.example.com"}
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        r = client.post("/api/games", content=b'{"mode": "open", "seed": 3}',
                        headers={**evil, "content-type": kind})
        assert r.status_code == 400, (kind, r.text)
    assert len(app.state.store) == 0
    r = client.options("/api/games", headers={**evil, "Access-Control-Request-Method": "POST",
                                              "Access-Control-Request-Headers": "content-type"})
    assert "access-control-allow-origin" not in r.headers
    r = client.get("/api/options", headers=evil)
    assert "access-control-allow-origin" not in r.headers


def test_ai_replies_and_hints_are_bounded(solutions, monkeypatch):
    """AI replies and hints (an agent thinking, or a wait for an exact solve) share one gate
    over all games: with every slot taken, both get a 503 at once and nothing runs."""
    calls = []
    monkeypatch.setattr(GameSession, "ai_play", lambda self: calls.append("ai"))
    monkeypatch.setattr(GameSession, "hint_report",
                        lambda self, at=None: calls.append("hint") or {"hints": []})
    app = create_app(solutions=solutions)
    ctx = app.state.context
    ctx.work_gate = WorkGate(max_running=1, max_waiting=0)
    client = TestClient(app, base_url=LOCAL)
    gid = client.post("/api/games", json={"mode": "open", "seed": SEED}).json()["game_id"]
    with ctx.work_gate.slot():  # another game's AI is thinking
        for r in (client.post(f"/api/games/{gid}/ai"), client.get(f"/api/games/{gid}/hints")):
            assert r.status_code == 503 and "busy" in r.json()["detail"], r.text
            assert int(r.headers["Retry-After"]) >= 1
    assert calls == []
    assert client.get(f"/api/games/{gid}/hints").status_code == 200 and calls == ["hint"]
