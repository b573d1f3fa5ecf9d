"""The bad-input and fault tour of issue 10: every case is one ``error:`` line, exit code 2,
no traceback, and refused *before* any long work starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from _cli_helpers import run_cli
from tensorcfr.games.pasur.engine.cards import card_code
from tensorcfr.games.pasur.engine.rules import random_deal


def one_line_error(code: int, err: str) -> str:
    """The single ``error:`` line of a refused command (exit code 2, no traceback)."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:"), err
    return lines[0]


@pytest.fixture()
def regular_file(tmp_path: Path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("x")
    return path


# ----------------------------------------------------------------------------- devices
@pytest.mark.parametrize("args", [
    ["solve", "kuhn_poker", "-n", "5", "--device", "meta"],
    ["solve", "kuhn_poker", "-n", "5", "--device", "foo"],
    ["exploitability", "kuhn_poker", "pyproject.toml", "--device", "meta"],  # a file that exists
    ["pasur", "solve", "--seed", "1", "--device", "meta"],
    ["pasur", "solve", "--seed", "1", "--method", "dcfr", "--device", "meta"],
    ["pasur", "exploitability", ".", "--device", "foo"],
    ["pasur", "exploitability", ".", "--device", "meta"],
    ["bench", "-g", "kuhn_poker", "-s", "ours", "--device", "meta"],
    ["numeral211", "embed", "--ranks", "9TA", "--suits", "2", "--out", "x.npz",
     "--device", "meta"],
])
def test_bad_devices_are_one_line_errors(args, capsys, monkeypatch) -> None:
    line = one_line_error(*run_cli(args, capsys, monkeypatch)[::2])
    assert "--device" in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("args", [
    ["pasur", "exploitability", ".", "--device", "cuda"],
    ["bench", "-g", "kuhn_poker", "--device", "cuda"],
    ["numeral211", "embed", "--ranks", "9TA", "--suits", "2", "--out", "x.npz",
     "--device", "cuda"],
])
def test_cuda_without_a_gpu_is_refused(args, capsys, monkeypatch) -> None:
    assert "CUDA" in one_line_error(*run_cli(args, capsys, monkeypatch)[::2])


# ----------------------------------------------------------------------------- output paths
def test_output_paths_are_checked_before_the_solve(tmp_path, regular_file, capsys,
                                                   monkeypatch) -> None:
    # A million iterations of leduc would take minutes: a refusal after the solve would hang.
    long_run = ["solve", "leduc_poker", "-n", "1000000"]
    cases = [
        (long_run + ["--save", str(tmp_path)], "is a folder"),
        (long_run + ["--save", "/proc/tensorcfr-test/ck.npz"], "cannot write"),
        (long_run + ["--policy-out", str(regular_file / "p.npz")], "not a folder"),
        (long_run + ["--plot", str(regular_file / "x" / "p.png")], "not a folder"),
        (["pasur", "solve", "--seed", "1", "--method", "dcfr", "--iterations", "100000",
          "--out", str(regular_file / "x")], "not a folder"),
        (["pasur", "solve", "--seed", "1", "--out", str(regular_file)], "not a folder"),
        (["pasur", "solve", "--seed", "1", "--out", "/proc/tensorcfr-test"], "cannot write"),
    ]
    if os.path.isdir("/sys") and not os.access("/sys", os.W_OK):
        cases.append((long_run + ["--save", "/sys/ck.npz"], "cannot write"))
    for args, expected in cases:
        code, _, err = run_cli(args, capsys, monkeypatch)
        assert expected in one_line_error(code, err), args
    assert not (regular_file.parent / "ck.npz").exists()


def test_output_file_check_creates_nothing(tmp_path) -> None:
    from tensorcfr.utils.io import check_output_dir, check_output_file

    check_output_file(tmp_path / "new" / "deeper" / "ck.npz", "--save")
    check_output_dir(tmp_path / "run" / "a", "--out")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- usage errors
@pytest.mark.parametrize("args, expected", [
    (["solve", "kuhn_poker", "-n", "1e3"], "--iterations"),
    (["solve", "kuhn_poker", "--seed", "abc"], "No such option"),
    (["pasur", "solve", "--seed", "abc"], "--seed"),
    (["pasur", "deal"], "--seed"),
    (["solve"], "game"),
])
def test_usage_errors_are_one_line(args, expected, capsys, monkeypatch) -> None:
    line = one_line_error(*run_cli(args, capsys, monkeypatch)[::2])
    assert expected in line and "--help" in line


def test_pasur_variant_names_the_option(capsys, monkeypatch) -> None:
    line = one_line_error(*run_cli(["pasur", "solve", "--seed", "1", "--method", "dcfr",
                                    "--variant", "foo"], capsys, monkeypatch)[::2])
    assert "--variant 'foo'" in line and "algorithm" not in line


@pytest.mark.parametrize("extra", [["--iterations", "5"], ["--mode", "tree"],
                                   ["--variant", "cfr"], ["--convergence"], ["--alpha", "2"]])
def test_exact_method_refuses_dcfr_options(extra, capsys, monkeypatch) -> None:
    line = one_line_error(*run_cli(["pasur", "solve", "--seed", "1", *extra],
                                   capsys, monkeypatch)[::2])
    assert extra[0] in line and "--method dcfr" in line


def test_exact_solver_writes_nothing_on_a_non_terminal_stderr(capsys, monkeypatch) -> None:
    code, out, err = run_cli(["pasur", "solve", "--seed", "1"], capsys, monkeypatch)
    assert code == 0 and "value" in out
    assert err == ""


# ----------------------------------------------------------------------------- bench
def test_bench_unknown_game_suggests_names(capsys, monkeypatch) -> None:
    line = one_line_error(*run_cli(["bench", "-g", "kuhn_pokr"], capsys, monkeypatch)[::2])
    assert "did you mean" in line and "kuhn_poker" in line


# ----------------------------------------------------------------------------- deal files
def test_deal_file_accepts_a_json_list_of_codes(tmp_path, capsys, monkeypatch) -> None:
    deal = random_deal(5)
    path = tmp_path / "deal.json"
    path.write_text(json.dumps([card_code(c) for c in deal]))
    code, out, err = run_cli(["pasur", "solve", "--deal-file", str(path), "--json"],
                             capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["deal"] == list(deal)


def test_record_given_as_deal_file_is_explained(tmp_path, capsys, monkeypatch) -> None:
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"deal": list(random_deal(5)), "plays": []}))
    line = one_line_error(*run_cli(["pasur", "solve", "--deal-file", str(path)],
                                   capsys, monkeypatch)[::2])
    assert "game record" in line and "JSON list of 52 card" in line and "'{'" not in line


def test_oversized_input_files_are_refused_unread(tmp_path, capsys, monkeypatch) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # sparse: 300 MB without writing them
        handle.truncate(300 * 10**6)
    line = one_line_error(*run_cli(["pasur", "solve", "--deal-file", str(big)],
                                   capsys, monkeypatch)[::2])
    assert "too large" in line
    code, _, err = run_cli(["pasur", "replay", str(big)], capsys, monkeypatch)
    assert code == 2 and "too large" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- long runs
def test_periodic_checkpoints_and_resume_message(tmp_path, capsys, monkeypatch) -> None:
    from tensorcfr.core.solver import TensorCFRSolver

    saved_at: list[int] = []
    original = TensorCFRSolver.save

    def recording_save(self, path):  # type: ignore[no-untyped-def]
        saved_at.append(self.iteration)
        original(self, path)

    monkeypatch.setattr(TensorCFRSolver, "save", recording_save)
    checkpoint = tmp_path / "ck.npz"
    code, out, err = run_cli(["solve", "kuhn_poker", "-n", "7", "--save", str(checkpoint),
                              "--checkpoint-every", "3", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert saved_at == [3, 6, 7]
    assert json.loads(out)["resumed_from_iteration"] is None
    code, out, err = run_cli(["solve", "kuhn_poker", "-n", "2", "--resume", str(checkpoint),
                              "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert "resumed from" in err and "iteration 7" in err
    assert json.loads(out)["resumed_from_iteration"] == 7
    code, _, err = run_cli(["solve", "kuhn_poker", "--checkpoint-every", "3"], capsys,
                           monkeypatch)
    assert "--save" in one_line_error(code, err)


def test_walk_progress_lines_when_stderr_is_not_a_terminal(capsys, monkeypatch) -> None:
    from tensorcfr.cli import generic

    monkeypatch.setattr(generic, "WALK_REPORT_SECONDS", 0.0)
    code, _, err = run_cli(["solve", "leduc_poker", "-n", "1", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert "walking leduc_poker()" in err and "nodes" in err


def test_max_memory_bounds_the_walk_of_a_deep_game(tmp_path) -> None:
    """chess used to reach 3.6 GB before refusing under --max-memory 100M."""
    script = textwrap.dedent("""
        import sys
        from tensorcfr.errors import MemoryLimitError
        from tensorcfr.games.openspiel.flatten import flatten_game, load_game
        from tensorcfr.utils.resources import current_rss_bytes
        game = load_game("chess")
        start = current_rss_bytes()
        try:
            flatten_game(game, max_memory_bytes=100 * 2**20)
        except MemoryLimitError as exc:
            # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's (pytest's)
            # resident size at fork time and so can exceed anything this script allocates.
            with open("/proc/self/status") as status:
                peak = next(int(line.split()[1]) * 1024 for line in status
                            if line.startswith("VmHWM:"))
            print((peak - start) / 2**20, str(exc))
            sys.exit(0)
        sys.exit(1)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    growth_mib = float(proc.stdout.split()[0])
    assert growth_mib < 200, proc.stdout  # the limit plus one check interval's overshoot
    assert "100.0 MiB" in proc.stdout


def test_solvers_default_to_one_thread() -> None:
    from tensorcfr.games.openspiel.flatten import flatten_game
    from tensorcfr.core.solver import TensorCFRSolver

    previous = torch.get_num_threads()
    try:
        tree = flatten_game("kuhn_poker")
        torch.set_num_threads(2)
        solver = TensorCFRSolver(tree)
        assert torch.get_num_threads() == 1 and solver.threads == 1
        torch.set_num_threads(2)
        TensorCFRSolver(tree, threads=None)
        assert torch.get_num_threads() == min(2, os.cpu_count() or 2)
    finally:
        torch.set_num_threads(previous)


# ----------------------------------------------------------------------------- strategy tables
def test_table_without_the_root_rows_is_refused(tmp_path, capsys, monkeypatch) -> None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = tmp_path / "run"
    code, _, err = run_cli(["pasur", "solve", "--seed", "3", "--method", "dcfr",
                            "--iterations", "3", "--out", str(out), "--json"],
                           capsys, monkeypatch)
    assert code == 0, err
    path = out / "strategy.parquet"
    table = pq.read_table(path)
    root = pc.and_(pc.equal(table["round"], 0), pc.equal(table["ply"], 0))
    assert pc.any(root).as_py()
    pq.write_table(table.filter(pc.invert(root)), path)
    line = one_line_error(*run_cli(["pasur", "exploitability", str(out)],
                                   capsys, monkeypatch)[::2])
    assert "no rows" in line and "round 0, ply 0" in line and "0-based" in line


# ----------------------------------------------------------------------------- memory
def test_auto_dtype_is_float32_only_for_large_trees(capsys, monkeypatch) -> None:
    from tensorcfr.core import solver

    assert solver.resolve_dtype("auto", 1000) == torch.float64
    assert solver.resolve_dtype("auto", solver.AUTO_FLOAT32_MIN_NODES + 1) == torch.float32
    monkeypatch.setattr(solver, "AUTO_FLOAT32_MIN_NODES", 10)  # kuhn_poker has 58 nodes
    code, out, err = run_cli(["solve", "kuhn_poker", "-n", "3", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["dtype"] == "float32"
    assert "float32 chosen automatically" in err and "58 nodes" in err
    code, out, err = run_cli(["solve", "kuhn_poker", "-n", "3", "--json", "--dtype", "float64"],
                             capsys, monkeypatch)
    assert json.loads(out)["dtype"] == "float64" and "automatically" not in err


def test_solver_keeps_no_second_copy_of_the_utilities() -> None:
    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.games.openspiel.flatten import flatten_game

    tree = flatten_game("leduc_poker")
    before = [level.utility.clone() for level in tree.levels]
    solver = TensorCFRSolver(tree)
    assert solver.dtype == torch.float64 and solver.dtype_auto
    # The solver reads the utilities of terminal nodes only ([P, T_d] per level) ...
    assert sum(u.shape[1] for u in solver._utility_levels) == tree.num_terminals
    for level, old, used in zip(tree.levels, before, solver._utility_levels):
        # ... and, from a tree in the compact layout, the tree's own arrays (no copy).
        if getattr(level, "terminal_utility", None) is not None:
            assert used.data_ptr() == level.terminal_utility.data_ptr()
        assert torch.equal(level.utility, old)
