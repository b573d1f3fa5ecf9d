"""Many decks (``pasur batch``: deck files, Ray, resume, failures) and the analysis
(``pasur analyze``: Figure 14, Table 16)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.learning.analysis import analyze_batches
from tensorcfr.games.pasur.batch import (
    BatchOptions,
    alex_counts,
    check_ray_address,
    parse_deck_range,
    read_decks,
    run_batch,
)
from tensorcfr.games.pasur.engine.cards import is_club, is_jack
from tensorcfr.games.pasur.solving.exact import solve_exact

pytestmark = pytest.mark.usefixtures("one_thread")
runner = CliRunner()
SEEDS = (3, 11, 12)  # small deals (about 0.1 to 0.2 s each to solve exactly)


@pytest.fixture(scope="module")
def deck_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("decks") / "decks.csv"
    path.write_text("".join(",".join(map(str, rules.random_deal(s))) + "\n" for s in SEEDS))
    return path


@pytest.fixture(scope="module")
def exact_batch(deck_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("batch") / "exact"
    summary = run_batch(str(deck_file), 0, 2, out, BatchOptions(games=60), workers=0)
    return out, summary


def _rows(folder):
    return pq.read_table(str(folder / "decks.parquet")).to_pylist()


def test_deck_ranges():
    assert parse_deck_range("0-499") == (0, 499)
    assert parse_deck_range(" 7 ") == (7, 7)
    for bad in ("", "a-b", "5-3", "-1", "1-2-3"):
        with pytest.raises(TensorCFRError, match="--decks"):
            parse_deck_range(bad)


def test_read_decks(deck_file, tmp_path):
    decks, digest = read_decks(str(deck_file), 1, 2)
    assert [i for i, _ in decks] == [1, 2]
    assert decks[0][1] == rules.random_deal(SEEDS[1]) and len(digest) == 64
    assert read_decks("seeds", 4, 5)[0] == [(4, rules.random_deal(4)), (5, rules.random_deal(5))]
    with pytest.raises(TensorCFRError, match="past the end .* has 3 decks"):
        read_decks(str(deck_file), 2, 3)
    with pytest.raises(TensorCFRError, match="deck file .*nope.csv does not exist"):
        read_decks(str(tmp_path / "nope.csv"), 0, 0)
    bad = tmp_path / "bad.csv"
    bad.write_text(deck_file.read_text() + "1,2,3\n")
    with pytest.raises(TensorCFRError, match="row 3 .* not a deal"):
        read_decks(str(bad), 0, 3)


def test_alex_counts_count_his_24_cards():
    deal = rules.random_deal(3)
    cards = [c for r in range(6) for c in rules.round_hands(deal, r)[0]]
    assert len(cards) == 24
    assert alex_counts(deal) == (sum(map(is_jack, cards)), sum(map(is_club, cards)))


def test_exact_batch_rows(exact_batch):
    out, summary = exact_batch
    assert summary["computed"] == 3 and summary["failed"] == 0 and summary["mode"] == "in-process"
    rows = _rows(out)
    assert [r["deck"] for r in rows] == [0, 1, 2]
    for r, seed in zip(rows, SEEDS):
        deal = rules.random_deal(seed)
        assert r["status"] == "ok" and r["error"] is None and r["deal"] == list(deal)
        solution = solve_exact(deal)
        assert r["exact_value"] == solution.value and r["states"] == solution.num_states
        assert (r["alex_jacks"], r["alex_clubs"]) == alex_counts(deal)
        assert r["exact_fair_value"] == (1.0 if solution.value > 0 else
                                         0.5 if solution.value == 0 else 0.0)
        # exact vs exact: every game ends at the exact value
        assert r["exact_vs_exact_min_diff"] == r["exact_vs_exact_max_diff"] == solution.value
        # the exact player never ends a game below the exact value, from its own side
        assert r["exact_vs_random_min_diff"] >= solution.value
        assert r["random_vs_exact_max_diff"] <= solution.value
        for m in ("exact_vs_random", "random_vs_exact", "random_vs_random"):
            assert 0 <= r[f"{m}_alex_win_rate"] + r[f"{m}_tie_rate"] <= 1
    identity = json.loads((out / "batch.json").read_text())
    assert identity["method"] == "exact" and identity["games"] == 60


def test_rerun_skips_finished_decks_and_ignores_a_cut_line(exact_batch, deck_file):
    out, _ = exact_batch
    journal = out / "decks.jsonl"
    before = journal.read_text()
    journal.write_text(before + '{"deck": 1, "status": "ok", "exac')  # a write cut by a kill
    try:
        again = run_batch(str(deck_file), 0, 2, out, BatchOptions(games=60), workers=0)
        assert again["skipped"] == 3 and again["computed"] == 0
        assert [r["deck"] for r in _rows(out)] == [0, 1, 2]
        with pytest.raises(TensorCFRError, match="other options: --games 61"):
            run_batch(str(deck_file), 0, 2, out, BatchOptions(games=61), workers=0)
    finally:
        journal.write_text(before)


def test_a_failing_deck_is_recorded_and_retried(deck_file, tmp_path, monkeypatch):
    import tensorcfr.games.pasur.solving.exact as exact

    real = exact.solve_exact
    broken = rules.random_deal(SEEDS[1])

    def flaky(deal, *args, **kwargs):
        if tuple(deal) == broken:
            raise RuntimeError("simulated failure\nsecond line")
        return real(deal, *args, **kwargs)

    monkeypatch.setattr(exact, "solve_exact", flaky)
    summary = run_batch(str(deck_file), 0, 2, tmp_path, BatchOptions(games=0), workers=0)
    assert summary["failed"] == 1
    rows = {r["deck"]: r for r in _rows(tmp_path)}
    assert rows[1]["status"] == "error" and rows[1]["error"] == "RuntimeError: simulated failure"
    assert rows[0]["status"] == rows[2]["status"] == "ok"
    monkeypatch.setattr(exact, "solve_exact", real)
    again = run_batch(str(deck_file), 0, 2, tmp_path, BatchOptions(games=0), workers=0)
    assert again["computed"] == 1 and again["failed"] == 0
    assert {r["deck"]: r["status"] for r in _rows(tmp_path)} == {0: "ok", 1: "ok", 2: "ok"}


def test_ray_local_two_workers(deck_file, exact_batch, tmp_path):
    summary = run_batch(str(deck_file), 0, 2, tmp_path, BatchOptions(games=60), workers=2)
    assert summary["mode"] == "ray" and summary["cpus"] == 2.0 and summary["failed"] == 0
    ours = _rows(tmp_path)
    theirs = _rows(exact_batch[0])
    drop = {"seconds", "exact_seconds"}
    # same seeds, same results: Ray changes where decks run, not what they give
    assert [{k: v for k, v in r.items() if k not in drop} for r in ours] == \
        [{k: v for k, v in r.items() if k not in drop} for r in theirs]


def test_unreachable_ray_address():
    with pytest.raises(TensorCFRError, match="no Ray cluster answers"):
        check_ray_address("127.0.0.1:1", timeout=1.0)
    with pytest.raises(TensorCFRError, match="host:port"):
        check_ray_address("nonsense")


@pytest.fixture(scope="module")
def dcfr_batch(tmp_path_factory):
    out = tmp_path_factory.mktemp("batch") / "dcfr"
    options = BatchOptions(method="dcfr", games=100, iterations=40, train_games=200,
                           model_rounds=20)
    summary = run_batch("seeds", 3, 3, out, options, workers=0)
    return out, summary


def test_dcfr_batch_row(dcfr_batch):
    out, summary = dcfr_batch
    assert summary["failed"] == 0
    (row,) = _rows(out)
    assert row["deck"] == 3 and row["exact_value"] == -6
    assert abs(row["dcfr_value"] - row["exact_value"]) < 0.05
    assert 0 <= row["dcfr_exploitability"] < 0.05
    assert row["model_rmse_test"] >= 0 and row["model_rows"] > 0
    assert row["fair_value"] == row["table_vs_table_fair_value"]
    for name in ("table", "model"):
        for m in (f"{name}_vs_{name}", f"{name}_vs_random", f"random_vs_{name}",
                  f"{name}_vs_exact", f"exact_vs_{name}"):
            assert 0 <= row[f"{m}_fair_value"] <= 1
        # nobody beats the exact player on its own side of a deterministic game
        assert row[f"{name}_vs_exact_max_diff"] <= row["exact_value"]
        assert row[f"exact_vs_{name}_min_diff"] >= row["exact_value"]
    assert (out / "runs" / "deck_00003" / "strategy.parquet").is_file()
    assert (out / "models" / "deck_00003" / "policy.ubj").is_file()


def test_analysis(exact_batch, dcfr_batch, tmp_path):
    mm = tmp_path / "MM.csv"
    mm.write_text(",Deck,MM_WINS,MM_SCORES,MR_WINS,MR_SCORES,RM_WINS,RM_SCORES,RR_WINS,RR_SCORES\n"
                  "0,3,10.0,-5.0,90.0,10.0,5.0,-9.0,40.0,-1.0\n")
    result = analyze_batches([exact_batch[0], dcfr_batch[0]], tmp_path / "an", min_leaf=1,
                             paper_mm=mm)
    assert result["decks"] == 4  # decks 0-2 of the deck file and seed deck 3
    png = (tmp_path / "an" / "figure14.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "an" / "table16.md").read_text()
    assert "Alex's Jacks" in md and "exact game value" in md
    stored = json.loads((tmp_path / "an" / "analysis.json").read_text())
    exact = stored["table16"]["exact_value"]
    assert exact["decks"] == 4
    rows = _rows(exact_batch[0]) + _rows(dcfr_batch[0])
    for group in exact["groups"]:
        members = [r for r in rows if r["alex_jacks"] == group["jacks"]]
        assert group["decks"] == len(members)
        if members:
            assert sum(leaf["decks"] for leaf in group["leaves"]) == len(members)
            assert group["mean"] == pytest.approx(
                sum(r["exact_value"] for r in members) / len(members))
    assert stored["table16"]["table_vs_table_fair_value"]["decks"] == 1
    panel = stored["figure14"]["near-Nash vs near-Nash"]
    assert panel["exact"]["decks"] == 4 and panel["model"]["decks"] == 1
    assert panel["paper"]["decks"] == 1
    # the paper's Table 16 leaves, at its thresholds, both fair-value conventions
    from tensorcfr.games.pasur.learning.analysis import PAPER_TABLE16

    leaves = stored["paper_table16"]
    assert len(leaves) == 2 * len(PAPER_TABLE16)
    assert "at the paper's thresholds" in md and "win + tie/2" in md
    for leaf in leaves:
        limit = int(leaf["clubs"].split()[-1])
        at_most = leaf["clubs"].startswith("<=")
        members = [r for r in rows if r["alex_jacks"] == leaf["jacks"]
                   and (r["alex_clubs"] <= limit) == at_most]
        series = {s["name"]: s for s in leaf["series"]}
        assert series["exact_half_tie"]["decks"] == len(members)
        if members:
            values = [r["exact_value"] for r in members]
            assert series["exact_tie_win"]["mean"] == pytest.approx(
                sum(v >= 0 for v in values) / len(values))
            assert series["exact_half_tie"]["mean"] == pytest.approx(
                sum(1.0 if v > 0 else 0.5 if v == 0 else 0.0 for v in values) / len(values))


def test_cli_batch_and_analyze(deck_file, tmp_path):
    out = tmp_path / "b"
    res = runner.invoke(app, ["pasur", "batch", str(deck_file), "--decks", "0-1", "--method",
                              "exact", "--out", str(out), "--workers", "0", "--games", "20",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["decks"] == 2 and data["computed"] == 2 and data["threads"] == 1
    assert {"deck", "exact_value"} <= set(pq.read_table(str(out / "decks.parquet")).column_names)
    res = runner.invoke(app, ["pasur", "analyze", str(out), "--out", str(tmp_path / "an"),
                              "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["decks"] == 2


@pytest.mark.parametrize("args, message", [
    (["--decks", "2-9"], "past the end"),
    (["--decks", "x"], "--decks must look like"),
    (["--decks", "0-0", "--method", "cfr"], "--method must be one of"),
    (["--decks", "0-0", "--address", "127.0.0.1:1"], "no Ray cluster answers"),
    (["--decks", "0-0", "--games", "-1"], "--games must be between 0"),
])
def test_cli_batch_bad_input(deck_file, tmp_path, args, message):
    res = runner.invoke(app, ["pasur", "batch", str(deck_file), "--out", str(tmp_path / "o"),
                              "--workers", "0", *args])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o" / "decks.parquet").exists()


def test_cli_batch_unreadable_deck_file(tmp_path):
    res = runner.invoke(app, ["pasur", "batch", str(tmp_path / "missing.csv"), "--decks", "0-1",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "missing.csv does not exist" in res.output


def test_cli_analyze_bad_input(tmp_path):
    res = runner.invoke(app, ["pasur", "analyze", str(tmp_path / "none")])
    assert res.exit_code == 2 and "none does not exist" in res.output
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["pasur", "analyze", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "decks.parquet is missing" in res.output
