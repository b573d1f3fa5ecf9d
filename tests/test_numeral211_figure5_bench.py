"""The Figure 5 benchmark scripts: the report's CFR-BR floors and devices
(``benchmarks/bench_numeral211_figure5.py``) and the GPU driver's job list and pool
(``benchmarks/bench_numeral211_gpu.py``), on a tiny deck and trivial jobs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_driver():
    return _module("bench_numeral211_gpu")


@pytest.fixture(scope="module")
def figure5():
    return _module("bench_numeral211_figure5")


def _run(figure5, capsys, *args: str) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/bench_numeral211_figure5.py ARGS``, run in this process (its
    ``main()`` with ``sys.argv`` set: no interpreter and torch start per call), returned as
    ``subprocess.run`` returns it."""
    saved, code = sys.argv, 0
    sys.argv = ["bench_numeral211_figure5.py", *args]
    capsys.readouterr()
    try:
        figure5.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def test_report_lists_floors_and_devices(figure5, capsys, tmp_path: Path) -> None:
    """Two vanilla iterations of EHS and the soft controls on the 9TA deck (once per regret
    rule: the soft runs run again, the bucket map's is read back), then a floor file beside
    them: the redrawn report has a floors table, the runs' device and rule, both figures."""
    work, out = tmp_path / "work", tmp_path / "fig"
    common = ["--ranks", "9TA", "--work", str(work), "--out", str(out)]
    run = _run(figure5, capsys, "--families", "ehs,soft", "--seeds", "0", "--algos", "cfr",
               "--iterations", "2", *common)
    assert run.returncode == 0, run.stderr
    soft_files = sorted((work / "cfr").glob("soft*.json"))
    assert soft_files, sorted(p.name for p in (work / "cfr").iterdir())
    assert json.loads(soft_files[0].read_text())["regret_baseline"] == "advisor"
    # the other regret rule: the soft control runs again (its checkpoint holds the advisor
    # rule), the bucket map's finished run is read back (one-hot: the same arithmetic)
    again = _run(figure5, capsys, "--families", "ehs,soft", "--seeds", "0", "--algos", "cfr",
                 "--iterations", "2", "--regret-baseline", "infoset", *common)
    assert again.returncode == 0, again.stderr
    assert json.loads(soft_files[0].read_text())["regret_baseline"] == "infoset"
    assert json.loads((work / "cfr" / "ehs_seed_0.json").read_text())["regret_baseline"] \
        == "advisor"
    (work / "floors").mkdir()
    (work / "floors" / "ehs.out.json").write_text(json.dumps(
        {"method": "ehs", "source": "/somewhere/method_ehs_seed_0.npz", "floor_mbg": 123.4,
         "average_mbg": 130.0, "iterations": 8, "algo": "cfr+", "seconds": 1.5,
         "device": "cpu"}))
    redraw = _run(figure5, capsys, "--report-only", "--algos", "cfr", *common)
    assert redraw.returncode == 0, redraw.stderr
    report = json.loads(out.with_name("fig.json").read_text())
    assert report["devices"] == ["cpu"]
    assert report["floors"][0]["floor_mbg"] == 123.4
    run_file = json.loads((work / "cfr" / "ehs_seed_0.json").read_text())
    assert run_file["device"] == "cpu" and run_file["done"]
    page = out.with_name("fig.md").read_text()
    assert "information-set regret baseline" in page
    assert "## CFR-BR floors" in page and "| ehs | `method_ehs_seed_0.npz` | 8 (cfr+) | 123.4 |" \
        in page
    assert out.with_name("fig.png").stat().st_size > 0
    assert out.with_name("fig_b0b1.png").stat().st_size > 0


def test_bad_train_and_stop_options_are_one_line_errors(figure5, capsys, tmp_path: Path) -> None:
    for extra in (["--train", "x=not json"], ["--stop-after", "0"]):
        run = _run(figure5, capsys, "--ranks", "9TA", "--families", "embedding", "--no-train",
                   "--work", str(tmp_path), "--out", str(tmp_path / "f"), *extra)
        assert run.returncode == 2 and run.stderr.startswith("error: "), run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_gpu_driver_jobs_come_in_priority_order(gpu_driver, tmp_path: Path) -> None:
    """Trainings first (long), then the vanilla curves of every clustering setting, the
    floors (their --json output saved), the soft control and the CFR+ panel; every
    Figure 5 job runs on the given device and deck."""
    jobs = gpu_driver.jobs(tmp_path, 1024, 256, device="cpu", ranks="789TA")
    names = [j["name"] for j in jobs]
    assert len(names) == len(set(names))
    networks = len(gpu_driver.NETWORKS)
    assert all(n.startswith("train ") for n in names[:networks])
    settings = len(gpu_driver.FIRST) + len(gpu_driver.REST)
    assert all(n.startswith("cfr ") for n in names[networks:networks + settings])
    floors = [j for j in jobs if j["kind"] == "floor"]
    assert len(floors) == len(gpu_driver.FLOORS)
    assert all(str(j["stdout"]).endswith(".out.json") for j in floors)
    assert names.index(floors[-1]["name"]) < names.index("cfr soft T=0.5") < \
        names.index("cfr+ paemd --seeds 2")
    for job in jobs:
        argv = job["argv"]
        assert argv[argv.index("--device") + 1] == "cpu"
        assert argv[argv.index("--ranks") + 1] == "789TA"
        if job["kind"] == "figure5":  # the committed references are the full game's
            assert "--reference" not in argv


def test_gpu_driver_pool_runs_saves_and_skips(gpu_driver, tmp_path: Path) -> None:
    """The pool runs a job, saves a floor job's stdout apart from its log, gives Figure 5
    jobs the time left as --stop-after, and skips a floor that would not fit."""
    echo = [sys.executable, "-c", "import sys; print(' '.join(sys.argv[1:]))"]
    todo = [{"name": "figure", "kind": "figure5", "argv": [*echo, "run"]},
            {"name": "floor", "kind": "floor", "argv": [*echo, "{}"],
             "stdout": tmp_path / "floors" / "f.out.json"},
            {"name": "late floor", "kind": "floor", "argv": echo,
             "stdout": tmp_path / "floors" / "g.out.json"}]
    (tmp_path / "floors").mkdir()
    done = gpu_driver.run_pool(tmp_path, todo[:2], 2, time.time() + 120, floor_seconds=1)
    assert sorted((d["name"], d["returncode"]) for d in done) == [("figure", 0),
                                                                 ("floor", 0)]
    assert (tmp_path / "floors" / "f.out.json").read_text().strip() == "{}"
    log = (tmp_path / "logs" / "figure.log").read_text()
    assert log.startswith("run --stop-after ")
    skipped = gpu_driver.run_pool(tmp_path, todo[2:], 2, time.time() + 60,
                                  floor_seconds=3600)
    assert skipped == [{"name": "late floor", "returncode": None, "skipped": "no time"}]
