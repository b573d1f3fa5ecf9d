"""Issue 19, item 20: `pasur batch --address` against a real Ray head node started the usual
way (`ray start --head --port P`) on loopback, with token authentication on (Ray 2.60 turns
it on when the user has a token in ~/.ray/auth_token). The head runs with its own HOME and
temp folder and is stopped by its process id at the end (never `ray stop`, which would stop
every Ray instance of the user). Slow (a head node starts in ~10 s): two tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
RAY = str(Path(sys.executable).with_name("ray"))

pytestmark = pytest.mark.skipif(not os.path.exists(RAY), reason="needs the ray command")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """(port, HOME holding the cluster's token) of a head node with token authentication."""
    from tensorcfr.errors import TensorCFRError
    from tensorcfr.utils.ray_cluster import check_ray_address

    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, HOME=str(home))
    env.pop("RAY_AUTH_MODE", None)
    subprocess.run([RAY, "get-auth-token", "--generate"], env=dict(env, RAY_AUTH_MODE="token"),
                   check=True, timeout=120, capture_output=True)
    assert (home / ".ray" / "auth_token").is_file()
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths
    head = subprocess.Popen([RAY, "start", "--head", "--port", str(port), "--num-cpus", "1",
                             "--include-dashboard=false", "--disable-usage-stats",
                             "--temp-dir", temp_dir, "--block"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                check_ray_address(f"127.0.0.1:{port}", timeout=2.0)
                break
            except TensorCFRError:
                if head.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the Ray head did not start: {head.stderr.read()[-2000:]}")
                time.sleep(1.0)
        yield port, home
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops its processes on SIGTERM
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _batch(port: int, home: Path, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC, HOME=str(home))
    env.pop("RAY_AUTH_MODE", None)
    return subprocess.run([sys.executable, "-c", "from tensorcfr.cli.main import main; main()",
                           "pasur", "batch", "seeds", "--decks", "0-1", "--games", "2",
                           "--address", f"127.0.0.1:{port}", "--out", str(out), "--json"],
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_batch_runs_on_a_token_authenticated_head_node(ray_head, tmp_path) -> None:
    port, home = ray_head
    done = _batch(port, home, tmp_path / "b")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # stdout holds the JSON object only
    assert summary["mode"] == "ray" and summary["auth"] == "token"
    assert summary["computed"] == 2 and summary["failed"] == 0 and summary["table_rows"] == 2


def test_without_the_token_the_one_line_names_the_remedy(ray_head, tmp_path) -> None:
    port, _ = ray_head
    stranger = tmp_path / "home"
    stranger.mkdir()
    done = _batch(port, stranger, tmp_path / "b")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot start Ray")
    assert "RAY_AUTH_MODE=token" in lines[0] and "auth_token" in lines[0]
