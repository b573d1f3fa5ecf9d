"""Smoke tests of the OpenSpiel benchmark harness (tiny runs, no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspiel")

from tensorcfr.bench.openspiel_bench import (  # noqa: E402
    BenchConfig,
    BenchmarkError,
    count_game_size,
    load_results,
    resolve_games,
    resolve_solvers,
    run_benchmark,
)
from tensorcfr.bench.report import (  # noqa: E402
    NOTES_END,
    NOTES_START,
    extract_notes,
    plot_time_vs_size,
    render_markdown,
    write_markdown,
)
from tensorcfr.errors import CorruptFileError, TensorCFRError  # noqa: E402


@pytest.fixture(scope="module")
def kuhn_results() -> dict[str, Any]:
    """Two CFR iterations (1 warm-up + 1 timed) of ours (default and lean passes) and
    OpenSpiel C++ on Kuhn poker."""
    config = BenchConfig(games=resolve_games(["kuhn_poker"]),
                         solvers=["ours", "ours_lean", "openspiel_cpp"],
                         reps=1, warmup=1, min_rep_seconds=0.0, max_setup_seconds=120.0)
    return run_benchmark(config)


def test_kuhn_runs_ours_and_openspiel_cpp(kuhn_results: dict[str, Any]) -> None:
    (game,) = kuhn_results["games"]
    assert game["key"] == "kuhn_poker"
    assert (game["nodes"], game["terminals"], game["infosets"]) == (58, 30, 12)
    by_solver = {r["solver"]: r for r in game["results"]}
    assert set(by_solver) == {"ours", "ours_lean", "openspiel_cpp"}
    for result in by_solver.values():
        assert result["status"] == "ok", result["status"]
        assert result["iterations_per_rep"] == 1
        assert len(result["ms_per_iter_reps"]) == 1
        assert result["ms_per_iter"] > 0
        assert result["setup_s"] >= 0
        assert result["peak_rss_mb"] >= result["baseline_rss_mb"] > 0
    # Our tree agrees with the independent count of the harness.
    assert by_solver["ours"]["info"]["tree_num_nodes"] == game["nodes"]
    assert (by_solver["ours"]["info"]["passes"], by_solver["ours_lean"]["info"]["passes"]) == (
        "numpy", "lean")
    assert by_solver["openspiel_cpp"]["speedup_of_ours"] > 0
    meta = kuhn_results["meta"]
    assert meta["threads"] == 1 and meta["cpu_cores"] >= 1
    assert meta["versions"]["torch"] and meta["versions"]["open_spiel"]
    targets = {(t["target"], t["game"]) for t in kuhn_results["targets"]}
    assert ("peak memory above baseline <= 3x OpenSpiel C++", "kuhn_poker") in targets
    assert ("peak memory above baseline <= 3x OpenSpiel C++ (lean passes)",
            "kuhn_poker") in targets
    json.dumps(kuhn_results)  # JSON-serialisable as written by the CLI


def test_report_markdown_plot_and_notes(kuhn_results: dict[str, Any], tmp_path: Path) -> None:
    text = render_markdown(kuhn_results, notes="hand-written finding")
    assert "| kuhn_poker |" in text and "OpenSpiel C++" in text
    assert "hand-written finding" in text
    md = tmp_path / "openspiel.md"
    md.write_text(f"old\n{NOTES_START}\nkeep me\n{NOTES_END}\n", encoding="utf-8")
    write_markdown(kuhn_results, md)
    assert extract_notes(md) == "keep me"
    assert "## Wall time per iteration" in md.read_text(encoding="utf-8")
    png = tmp_path / "plot.png"
    plot_time_vs_size(kuhn_results, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_too_slow_solver_is_skipped() -> None:
    config = BenchConfig(games=resolve_games(["kuhn_poker"]), solvers=["openspiel_cpp"],
                         reps=1, warmup=1, min_rep_seconds=0.0, max_iter_seconds=1e-9)
    (game,) = run_benchmark(config)["games"]
    (result,) = game["results"]
    assert result["status"].startswith("skipped (too slow")
    assert result["ms_per_iter"] is None


def test_bad_parameters_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="unknown solver"):
        resolve_solvers(["cfr_in_rust"])
    with pytest.raises(TensorCFRError):
        BenchConfig(games=resolve_games(None), reps=0).validate()
    with pytest.raises(TensorCFRError, match="cannot load game"):
        count_game_size("no_such_game_xyz")
    corrupt = tmp_path / "results.json"
    corrupt.write_text("{not json", encoding="utf-8")
    with pytest.raises(CorruptFileError):
        load_results(corrupt)
    with pytest.raises(TensorCFRError):
        load_results(tmp_path / "missing.json")


def test_game_resolution_and_turn_based_wrapper() -> None:
    assert [g.key for g in resolve_games(None)][0] == "kuhn_poker"
    (custom,) = resolve_games(["matrix_rps"])
    assert custom.game_string == "matrix_rps"
    size = count_game_size("matrix_rps")
    assert size.turn_based_wrapper
    assert size.terminals == 9 and size.infosets == 2


def test_merge_results_replaces_same_games(kuhn_results: dict[str, Any]) -> None:
    from copy import deepcopy

    from tensorcfr.bench.openspiel_bench import merge_results

    old = deepcopy(kuhn_results)
    other = deepcopy(kuhn_results["games"][0])
    other.update(key="bigger", nodes=10**6)
    old["games"].append(other)
    merged = merge_results(old, kuhn_results)
    assert [g["key"] for g in merged["games"]] == ["kuhn_poker", "bigger"]
    assert merged["games"][0] is kuhn_results["games"][0]
    assert len(merged["meta"]["earlier_runs"]) == 1
    assert "earlier run merged" in render_markdown(merged)


def test_worker_over_memory_limit_is_skipped() -> None:
    config = BenchConfig(games=resolve_games(["kuhn_poker"]), solvers=["openspiel_cpp"],
                         reps=1, warmup=1, min_rep_seconds=0.0, max_worker_memory_mb=1.0)
    (game,) = run_benchmark(config)["games"]
    (result,) = game["results"]
    assert result["status"].startswith("skipped (memory"), result["status"]
