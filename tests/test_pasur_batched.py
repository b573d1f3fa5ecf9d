"""Many Pasur deals as one DCFR problem (``solving.batched``, ``pasur batch --batch-size``):
per-deal results equal to separate solves, the CLI path, the memory refusal."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import torch
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.core.regret import CFRVariant
from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.batched import (batch_memory_need, merge_graphs,
                                                   run_dcfr_batch, solve_graphs_batch)
from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, build_graphs, run_dcfr
from tensorcfr.games.pasur.solving.round_cfr import exploitability, minimax_value, solve_dcfr

pytestmark = pytest.mark.usefixtures("one_thread")
runner = CliRunner()
SEEDS = (3, 11, 12)  # small deals
ITERATIONS = 6
VARIANT = CFRVariant.parse("dcfr", None, None, None)


@pytest.fixture(scope="module")
def graphs():
    return [build_graphs(rules.random_deal(s), "dag") for s in SEEDS]


def test_merged_graph_is_a_valid_round_graph(graphs):
    merged, layout = merge_graphs(graphs)
    for p, graph in enumerate(merged):
        graph.validate()
        assert graph.total_edges == sum(g[p].total_edges for g in graphs)
    assert layout.num_deals == len(SEEDS) and layout.roots() == [0, 1, 2]
    # deal 1's round-2 level-3 edges point at deal 1's nodes, shifted by deal 0's
    sl = layout.edges(2, 3, 1)
    assert torch.equal(merged[2].edge_child[3][sl] - layout.node_offsets[2][4][1],
                       graphs[1][2].edge_child[3])


def test_batch_equals_separate_solves_bit_for_bit_on_the_cpu(graphs):
    batch = solve_graphs_batch(graphs, VARIANT, ITERATIONS)
    for k, deal_graphs in enumerate(graphs):
        alone = solve_dcfr(deal_graphs, VARIANT, ITERATIONS)
        got = batch.solutions[k]
        for a, b in zip(alone.strategies, got.strategies):
            assert all(torch.equal(x, y) for x, y in zip(a, b))  # exactly, not approximately
        for a, b in zip(alone.rounds, got.rounds):
            assert torch.equal(a.root_values, b.root_values)
        assert got.value == alone.value
        report = exploitability(deal_graphs, alone.strategies)
        assert batch.quality[k] == report
        assert batch.exact_values[k] == minimax_value(deal_graphs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_batch_on_cuda_matches_the_cpu_to_float64_rounding(graphs):
    cpu = solve_graphs_batch(graphs, VARIANT, ITERATIONS)
    gpu = solve_graphs_batch(graphs, VARIANT, ITERATIONS, device="cuda")
    for a, b in zip(cpu.solutions, gpu.solutions):  # atomics reorder sums on the GPU
        for ra, rb in zip(a.strategies, b.strategies):
            for x, y in zip(ra, rb):
                torch.testing.assert_close(y, x, rtol=1e-9, atol=1e-9)
        assert b.value == pytest.approx(a.value, abs=1e-9)
    assert gpu.exact_values == cpu.exact_values
    for qa, qb in zip(cpu.quality, gpu.quality):
        assert qb.exploitability == pytest.approx(qa.exploitability, abs=1e-9)


def test_run_dcfr_batch_writes_the_run_folders_of_separate_solves(tmp_path):
    deals = [rules.random_deal(s) for s in SEEDS[:2]]
    common = dict(iterations=ITERATIONS, checkpoint=False, reuse_freed_memory=False)
    alone = [run_dcfr(DcfrSettings(deal=d, out=tmp_path / f"alone{k}", **common))
             for k, d in enumerate(deals)]
    events = []
    batch = run_dcfr_batch([DcfrSettings(deal=d, out=tmp_path / f"batch{k}", **common)
                            for k, d in enumerate(deals)], on_progress=events.append)
    assert events[0].event == "built" and events[0].nodes_per_round == tuple(
        a + b for a, b in zip(alone[0]["nodes_per_round"], alone[1]["nodes_per_round"]))
    assert (events[-1].event, events[-1].round_index, events[-1].done) == (
        "iteration", 0, ITERATIONS)
    for k, (a, b) in enumerate(zip(alone, batch)):
        assert b["batch_size"] == 2 and set(a) | {"batch_size"} == set(b)
        for key in ("value", "exact_value", "exploitability", "best_response_to_alex",
                    "best_response_to_bob", "nodes_per_round", "edges_per_round", "table_rows"):
            assert a[key] == b[key], key
        ta = pq.read_table(str(tmp_path / f"alone{k}" / "strategy.parquet"))
        tb = pq.read_table(str(tmp_path / f"batch{k}" / "strategy.parquet"))
        assert ta.equals(tb) and ta.schema.metadata == tb.schema.metadata
        manifest = json.loads((tmp_path / f"batch{k}" / "manifest.json").read_text())
        assert manifest["format"] == "tensorcfr-pasur-dcfr-run" and manifest["batch_size"] == 2


def test_a_batch_that_does_not_fit_is_refused_with_a_batch_size_that_does(graphs):
    deals = [rules.random_deal(s) for s in SEEDS]
    need = batch_memory_need(graphs)
    settings = [DcfrSettings(deal=d, iterations=1, max_memory=need // 2) for d in deals]
    with pytest.raises(MemoryLimitError, match=r"a batch of 3 deals needs about .* use "
                                               r"--batch-size 1 or raise --max-memory"):
        run_dcfr_batch(settings)
    one = batch_memory_need(graphs[:1])
    with pytest.raises(MemoryLimitError, match="this deal needs about .* raise --max-memory"):
        run_dcfr_batch([DcfrSettings(deal=deals[0], iterations=1, max_memory=one // 2)])


def test_a_tree_mode_batch_is_checked_on_the_summed_tree_model_before_building():
    settings = [DcfrSettings(deal=rules.random_deal(s), mode="tree", iterations=1,
                             max_memory="1G") for s in (11, 12)]  # 0.66 + 1.15 GiB
    with pytest.raises(MemoryLimitError, match=r"a batch of 2 deals needs about 1\.8 GiB.*"
                                               r"--batch-size 1"):
        run_dcfr_batch(settings)


def test_settings_a_batch_cannot_share_are_refused():
    deals = [rules.random_deal(s) for s in SEEDS[:2]]
    with pytest.raises(TensorCFRError, match="must share their iterations"):
        run_dcfr_batch([DcfrSettings(deal=deals[0], iterations=2),
                        DcfrSettings(deal=deals[1], iterations=3)])
    with pytest.raises(TensorCFRError, match="--convergence"):
        run_dcfr_batch([DcfrSettings(deal=d, out="x", convergence=True) for d in deals])


def _batch(tmp_path, name, *extra):
    return runner.invoke(app, ["pasur", "batch", "seeds", "--decks", "3-4", "--method", "dcfr",
                               "--out", str(tmp_path / name), "--workers", "0", "--games", "0",
                               "--train-games", "0", "--iterations", str(ITERATIONS), "--json",
                               *extra])


def test_cli_batch_size_gives_the_rows_and_tables_of_one_at_a_time(tmp_path):
    one = _batch(tmp_path, "one")
    assert one.exit_code == 0, one.output
    two = _batch(tmp_path, "two", "--batch-size", "2")
    assert two.exit_code == 0, two.output
    assert json.loads(two.stdout)["computed"] == 2
    rows_one = pq.read_table(str(tmp_path / "one" / "decks.parquet")).to_pylist()
    rows_two = pq.read_table(str(tmp_path / "two" / "decks.parquet")).to_pylist()
    for a, b in zip(rows_one, rows_two):
        assert b["status"] == "ok" and b["dcfr_batch_size"] == 2
        for key in ("deck", "exact_value", "dcfr_value", "dcfr_exploitability"):
            assert a[key] == b[key], key
        run = f"runs/deck_{a['deck']:05d}/strategy.parquet"
        assert pq.read_table(str(tmp_path / "one" / run)).equals(
            pq.read_table(str(tmp_path / "two" / run)))
    # a rerun with another batch size is the same batch: nothing left to compute
    again = _batch(tmp_path, "two", "--batch-size", "1")
    assert again.exit_code == 0 and json.loads(again.stdout)["skipped"] == 2


def test_cli_memory_refusal_names_a_batch_size_that_fits(tmp_path):
    graphs = [build_graphs(rules.random_deal(s), "dag") for s in (3, 4)]
    limit = batch_memory_need(graphs) * 2 // 3
    res = _batch(tmp_path, "m", "--batch-size", "2", "--max-memory", str(limit))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "a batch of 2 deals needs about" in res.output and "--batch-size 1" in res.output
    assert "0 of" not in res.output


@pytest.mark.parametrize("args, message", [
    (["--method", "exact", "--batch-size", "2"], "needs --method dcfr"),
    (["--method", "dcfr", "--device", "cuda:9", "--workers", "0"], "--device 'cuda:9'"),
    (["--method", "dcfr", "--batch-size", "0"], "--batch-size"),
])
def test_cli_batch_size_bad_input(tmp_path, args, message):
    res = runner.invoke(app, ["pasur", "batch", "seeds", "--decks", "0-0", "--out",
                              str(tmp_path / "o"), "--workers", "0", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
