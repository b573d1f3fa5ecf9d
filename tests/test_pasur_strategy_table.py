"""Strategy tables in Parquet (src/tensorcfr/games/pasur/solving/strategy_table.py)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from _pasur_cfr_helpers import build_position_graphs, position_at_round
from tensorcfr.errors import CorruptFileError
from tensorcfr.games.pasur.solving.round_cfr import exploitability, reach_probabilities, solve_dcfr
from tensorcfr.games.pasur.solving.strategy_table import (
    TABLE_SCHEMA,
    load_strategy_table,
    strategies_from_table,
    write_strategy_table,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def solved():
    graphs = build_position_graphs(position_at_round(0, 4), "dag")
    solution = solve_dcfr(graphs, iterations=60)
    return graphs, solution


@pytest.fixture()
def table_path(tmp_path, solved):
    graphs, solution = solved
    path = tmp_path / "strategy.parquet"
    rows = write_strategy_table(path, graphs, solution.strategies,
                                metadata={"deal": [0, 1], "mode": "dag"})
    assert rows > 0
    return path


def test_round_trip(table_path, solved) -> None:
    graphs, solution = solved
    table = load_strategy_table(table_path)
    assert table.metadata["deal"] == [0, 1] and table.metadata["mode"] == "dag"
    assert table.table.schema.names[:len(TABLE_SCHEMA)] == TABLE_SCHEMA.names
    # One row per edge of every node its mover reaches under the average strategy.
    reach = reach_probabilities(graphs, solution.strategies)
    expected = 0
    for position, graph in enumerate(graphs):
        for level in range(8):
            own = reach[position][level][level % 2].index_select(0, graph.edge_parent[level])
            expected += int((own > 0).sum())
    assert table.num_rows == expected
    restored = strategies_from_table(table, graphs)
    for position, graph in enumerate(graphs):
        for level in range(8):
            own = reach[position][level][level % 2].index_select(0, graph.edge_parent[level])
            keep = own > 0
            assert torch.equal(restored[position][level][keep],
                               solution.strategies[position][level][keep])
    a = exploitability(graphs, solution.strategies)
    b = exploitability(graphs, restored)
    assert b.exploitability == pytest.approx(a.exploitability, abs=1e-12)
    assert b.value == pytest.approx(a.value, abs=1e-12)


def test_columns_are_consistent(table_path, solved) -> None:
    graphs, _ = solved
    table = load_strategy_table(table_path)
    masks = table.column("captured_mask")
    lists = table.table.column("captured").to_pylist()
    for mask, cards in zip(masks[:500], lists[:500]):
        assert sum(1 << c for c in cards) == mask and cards == sorted(cards)
    assert np.array_equal(table.column("turn"), table.column("ply") // 2)
    assert np.array_equal(table.column("player"), table.column("ply") % 2)
    probs = table.column("probability")
    assert probs.min() >= 0 and probs.max() <= 1
    # Probabilities of each node sum to 1.
    keys = (table.column("round").astype(np.int64) * 10 + table.column("ply")) * 10**9 \
        + table.column("node")
    _, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=probs)
    assert np.allclose(sums, 1.0)


def test_truncated_file_is_refused(table_path) -> None:
    data = table_path.read_bytes()
    table_path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError):
        load_strategy_table(table_path)


def test_garbage_and_missing_files_are_refused(tmp_path) -> None:
    path = tmp_path / "x.parquet"
    with pytest.raises(CorruptFileError, match="does not exist"):
        load_strategy_table(path)
    path.write_bytes(b"definitely not parquet")
    with pytest.raises(CorruptFileError):
        load_strategy_table(path)


def test_wrong_schema_is_refused(tmp_path, table_path) -> None:
    # A Parquet file without our metadata.
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), plain)
    with pytest.raises(CorruptFileError, match="metadata"):
        load_strategy_table(plain)
    # Our metadata but a missing column.
    table = pq.read_table(table_path)
    dropped = tmp_path / "dropped.parquet"
    pq.write_table(table.drop_columns(["probability"]), dropped)
    with pytest.raises(CorruptFileError, match="probability"):
        load_strategy_table(dropped)
    # A column of the wrong type.
    retyped = tmp_path / "retyped.parquet"
    index = table.schema.get_field_index("card")
    pq.write_table(table.set_column(index, "card", table.column("card").cast(pa.int32())),
                   retyped)
    with pytest.raises(CorruptFileError, match="card"):
        load_strategy_table(retyped)
    # Another format name.
    other = tmp_path / "other.parquet"
    meta = dict(json.loads(table.schema.metadata[b"tensorcfr"]), format="something-else")
    pq.write_table(table.replace_schema_metadata({b"tensorcfr": json.dumps(meta).encode()}),
                   other)
    with pytest.raises(CorruptFileError, match="format"):
        load_strategy_table(other)


def test_table_of_another_graph_is_refused(table_path) -> None:
    other = build_position_graphs(position_at_round(3, 4), "dag")
    with pytest.raises(CorruptFileError):
        strategies_from_table(load_strategy_table(table_path), other)


def test_incomplete_node_is_refused(tmp_path, table_path, solved) -> None:
    graphs, _ = solved
    table = pq.read_table(table_path)
    # Drop one row of a node with several actions: its probabilities no longer sum to 1.
    probs = table.column("probability").to_numpy()
    victim = int(np.nonzero((probs > 0.01) & (probs < 0.99))[0][0])
    mask = np.ones(table.num_rows, dtype=bool)
    mask[victim] = False
    cut = tmp_path / "cut.parquet"
    pq.write_table(table.filter(pa.array(mask)), cut)
    with pytest.raises(CorruptFileError, match="incomplete"):
        strategies_from_table(load_strategy_table(cut), graphs)


def test_tree_tables_carry_the_paper_features(tmp_path) -> None:
    """Tree-mode tables have the 58 feature columns of the action's resulting node."""
    from tensorcfr.games.pasur.solving.features import level_features
    from tensorcfr.games.pasur.engine.rules import random_deal
    from tensorcfr.games.pasur.solving.round_cfr import uniform_strategies
    from tensorcfr.games.pasur.solving.tensor_tree import build_tree_rounds

    graphs = build_tree_rounds(random_deal(3))
    path = tmp_path / "tree.parquet"
    rows = write_strategy_table(path, graphs, uniform_strategies(graphs), rounds=[0],
                                metadata={"mode": "tree"})
    table = load_strategy_table(path)
    assert rows == table.num_rows == graphs[0].total_edges  # uniform: every node reached
    names = [f"feature_{k:02d}" for k in range(58)]
    assert all(name in table.table.schema.names for name in names)
    for name, feature in (("round", 55), ("turn", 56), ("player", 57)):
        assert np.array_equal(table.column(name), table.column(f"feature_{feature}"))
    # Rows of ply 3 hold the feature rows of the children their edges lead to.
    sel = table.column("ply") == 3
    edges = torch.as_tensor(table.column("edge")[sel])
    expected = level_features(graphs[0].node_state[4], graphs[0].edge_child[3][edges])
    got = np.stack([table.column(name)[sel] for name in names], axis=1)
    assert np.array_equal(got, expected.numpy())
