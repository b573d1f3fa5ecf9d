"""Strategy tables: a solved deal's average strategy as a Parquet table (paper 2.8, section 3).

One row per (decision node, action) of every node whose mover can reach it when following
her own average strategy (the mover's *own* reach probability from the game root, > 0): the
other nodes are never reached by that player whatever the opponent does, so their strategy
cannot matter (not for play, not for exploitability). Single-action nodes are kept, so every
reachable decision of the game has its rows. See ``docs/pasur_cfr.md`` for the schema.

Rows are addressed by ``(round, ply, edge)``: the edge index inside its level of the
``RoundGraph`` the table was solved on; ``card`` and ``captured_mask`` repeat the action so a
table can be checked against a rebuilt graph (:func:`strategies_from_table`).

Tree-mode tables also carry the paper's 58-column feature row of each action
(``feature_00`` .. ``feature_57``, from :mod:`tensorcfr.games.pasur.solving.features`); both modes
carry the builder's per-node state codes (``state_<name>``). The schema check covers the
core columns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import Tensor

from tensorcfr.errors import CorruptFileError
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph
from tensorcfr.utils.io import atomic_path

__all__ = [
    "TABLE_FORMAT",
    "TABLE_SCHEMA",
    "StrategyTable",
    "load_strategy_table",
    "strategies_from_table",
    "write_strategy_table",
]

TABLE_FORMAT = "tensorcfr-pasur-strategy-table"
TABLE_VERSION = 1
_META_KEY = b"tensorcfr"

TABLE_SCHEMA = pa.schema([
    pa.field("round", pa.int8(), nullable=False),          # 0..5
    pa.field("ply", pa.int8(), nullable=False),            # 0..7, level inside the round
    pa.field("turn", pa.int8(), nullable=False),           # 0..3 = ply // 2
    pa.field("player", pa.int8(), nullable=False),         # 0 Alex, 1 Bob (= ply % 2)
    pa.field("node", pa.int64(), nullable=False),          # node index in its level
    pa.field("edge", pa.int64(), nullable=False),          # edge index in its level
    pa.field("card", pa.int8(), nullable=False),           # card played, 0..51
    pa.field("captured_mask", pa.int64(), nullable=False),  # bit c = card c captured
    pa.field("captured", pa.list_(pa.int8()), nullable=False),  # captured cards, ascending
    pa.field("probability", pa.float64(), nullable=False),  # average strategy
    pa.field("reach", pa.float64(), nullable=False),        # mover's own reach of the node
    pa.field("node_value", pa.float64(), nullable=False),   # value of the node, points A-B
    pa.field("action_value", pa.float64(), nullable=False),  # reward + child value
])
"""The core columns, in order, every strategy table has (extra columns may follow)."""


@dataclass
class StrategyTable:
    """A loaded strategy table: the Arrow table and its metadata (deal, mode, variant...)."""

    table: pa.Table
    metadata: dict[str, Any]

    @property
    def num_rows(self) -> int:
        return int(self.table.num_rows)

    def column(self, name: str) -> np.ndarray:
        """One core column as a NumPy array."""
        return self.table.column(name).to_numpy()


def _mask_to_lists(masks: np.ndarray) -> pa.Array:
    """Int64 bit masks [K] -> ListArray of the set bits (ascending card indices)."""
    masks = masks.astype(np.int64)
    bits = ((masks[:, None] >> np.arange(52, dtype=np.int64)[None, :]) & 1).astype(bool)
    counts = bits.sum(axis=1)
    offsets = np.zeros(len(masks) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    values = np.nonzero(bits)[1].astype(np.int8)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values, pa.int8()))


def _feature_columns(graph: RoundGraph, level: int, children: Tensor) -> dict[str, pa.Array]:
    """The paper's 58-column feature row of each row's action (``feature_00`` ..
    ``feature_57``, int8): as in the paper, an action is described by the row of the node it
    leads to (:func:`tensorcfr.games.pasur.solving.features.level_features`). Only tree-mode graphs
    carry the card states these rows need; other graphs get no feature columns."""
    state = graph.node_state[level + 1] if graph.node_state else None
    if not state or "card_node" not in state:
        return {}
    try:
        from tensorcfr.games.pasur.solving.features import NUM_FEATURES, level_features
    except ImportError:  # pragma: no cover - features.py is part of the package
        return {}
    rows = level_features(state, children).cpu().numpy()
    return {f"feature_{k:02d}": pa.array(rows[:, k]) for k in range(NUM_FEATURES)}


PER_NODE_STATE_KEYS = (
    # tree mode (tensor_tree): the node's card state and inherited-score index
    "card_node", "score_index",
    # dag mode (exact.build_state_graph): the packed merged state and its parts
    "key", "pool", "alex_hand", "bob_hand", "alex_clubs", "bob_clubs", "clubs_done",
    "last_capturer",
)
"""``node_state`` entries that hold one value per node (others, such as the tree builder's
per-card ``in_play`` or per-level ``scores``, are not node columns even when their length
happens to equal the node count)."""


def _state_columns(graph: RoundGraph, level: int, nodes: np.ndarray) -> dict[str, pa.Array]:
    """Per-node state codes the builder kept (``node_state``), as ``state_<name>`` columns."""
    if not graph.node_state or level >= len(graph.node_state):
        return {}
    out: dict[str, pa.Array] = {}
    for name, values in graph.node_state[level].items():
        if name not in PER_NODE_STATE_KEYS or not isinstance(values, Tensor):
            continue
        if values.dim() != 1 or values.numel() != graph.num_nodes[level]:
            continue
        out[f"state_{name}"] = pa.array(values.detach().cpu().numpy()[nodes])
    return out


def write_strategy_table(path: str | Path, graphs: Sequence[RoundGraph],
                         strategies: Sequence[Sequence[Tensor]], *,
                         metadata: dict[str, Any] | None = None,
                         min_reach: float = 0.0,
                         rounds: Sequence[int] | None = None) -> int:
    """Write the average strategy of a solved game as a Parquet table, atomically.

    Args:
        path: the ``.parquet`` file to write.
        graphs: the game's round graphs (the ones the strategy was solved on).
        strategies: per round, per level, Tensor [E_l] of action probabilities.
        metadata: JSON-ready facts stored in the file (deal, mode, variant, iterations...).
        min_reach: a node gets rows when its mover's own reach is > ``min_reach``.
        rounds: only write the rows of these rounds (0..5; default: every round).

    Returns:
        The number of rows written.
    """
    from tensorcfr.games.pasur.solving.round_cfr import node_values, reach_probabilities

    reaches = reach_probabilities(graphs, strategies)
    values = node_values(graphs, strategies)
    meta = {"format": TABLE_FORMAT, "version": TABLE_VERSION, **(metadata or {})}
    schema = TABLE_SCHEMA.with_metadata({_META_KEY: json.dumps(meta).encode()})
    rows = 0
    with atomic_path(path) as tmp:
        writer: pq.ParquetWriter | None = None
        try:
            for position, graph in enumerate(graphs):
                if rounds is not None and graph.round_index not in rounds:
                    continue
                for level in range(PLIES_PER_ROUND):
                    mover = level % 2
                    parent = graph.edge_parent[level]
                    node_reach = reaches[position][level][mover].index_select(0, parent)
                    keep = (node_reach > min_reach).nonzero().flatten()
                    if keep.numel() == 0:
                        continue
                    edges_t = keep
                    nodes_t = parent.index_select(0, keep)
                    child = graph.edge_child[level].index_select(0, keep)
                    edge_value = (graph.edge_reward[level].index_select(0, keep).double()
                                  + values[position][level + 1].index_select(0, child).double())
                    captured = graph.edge_captured[level].index_select(0, keep).cpu().numpy()
                    nodes = nodes_t.cpu().numpy()
                    edges = edges_t.cpu().numpy()
                    n = len(edges)
                    columns: dict[str, pa.Array] = {
                        "round": pa.array(np.full(n, graph.round_index, np.int8)),
                        "ply": pa.array(np.full(n, level, np.int8)),
                        "turn": pa.array(np.full(n, level // 2, np.int8)),
                        "player": pa.array(np.full(n, mover, np.int8)),
                        "node": pa.array(nodes.astype(np.int64)),
                        "edge": pa.array(edges.astype(np.int64)),
                        "card": pa.array(graph.edge_card[level].index_select(0, keep)
                                         .cpu().numpy().astype(np.int8)),
                        "captured_mask": pa.array(captured.astype(np.int64)),
                        "captured": _mask_to_lists(captured),
                        "probability": pa.array(strategies[position][level].index_select(
                            0, keep).double().cpu().numpy()),
                        "reach": pa.array(node_reach.index_select(0, keep).cpu().numpy()),
                        "node_value": pa.array(values[position][level].index_select(
                            0, nodes_t).double().cpu().numpy()),
                        "action_value": pa.array(edge_value.cpu().numpy()),
                    }
                    columns.update(_state_columns(graph, level, nodes))
                    columns.update(_feature_columns(graph, level, child))
                    batch_schema = schema
                    for name, array in columns.items():
                        if batch_schema.get_field_index(name) < 0:
                            batch_schema = batch_schema.append(pa.field(name, array.type))
                    if writer is None:
                        writer = pq.ParquetWriter(str(tmp), batch_schema)
                        schema = batch_schema
                    table = pa.Table.from_pydict(
                        {f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in schema},
                        schema=schema)
                    writer.write_table(table)
                    rows += n
            if writer is None:
                writer = pq.ParquetWriter(str(tmp), schema)
        finally:
            if writer is not None:
                writer.close()
    return rows


def _fail(path: Path, why: str) -> CorruptFileError:
    why = " ".join(why.split())[:200]  # one line, whatever the Parquet library said
    return CorruptFileError(f"{path} is not a valid strategy table: {why}")


def load_strategy_table(path: str | Path) -> StrategyTable:
    """Read and validate a strategy table written by :func:`write_strategy_table`.

    Raises :class:`CorruptFileError` for a missing, truncated or non-Parquet file, a file of
    another format (metadata), missing core columns or wrong column types, nulls, or
    probabilities outside [0, 1].
    """
    from tensorcfr.utils.reading import MAX_TABLE_BYTES, check_input_file

    path = Path(path)
    if not os.path.lexists(path):
        raise CorruptFileError(f"strategy table {path} does not exist")
    check_input_file(path, "strategy table", MAX_TABLE_BYTES)  # a FIFO or device: unopened
    try:
        parquet = pq.ParquetFile(str(path))
        schema = parquet.schema_arrow
        table = parquet.read()
    except (pa.ArrowException, OSError, ValueError, TypeError, NotImplementedError) as exc:
        raise _fail(path, f"unreadable Parquet ({exc})") from None
    raw = (schema.metadata or {}).get(_META_KEY)
    if raw is None:
        raise _fail(path, "no tensorcfr metadata")
    try:
        metadata = json.loads(raw.decode())
    except (UnicodeDecodeError, ValueError):
        raise _fail(path, "unreadable metadata") from None
    from tensorcfr.utils.manifest import check_format

    metadata = check_format(metadata, TABLE_FORMAT, path, "a valid strategy table",
                            version=TABLE_VERSION)
    for expected in TABLE_SCHEMA:
        index = table.schema.get_field_index(expected.name)
        if index < 0:
            raise _fail(path, f"column {expected.name!r} is missing")
        actual = table.schema.field(index).type
        if actual != expected.type:
            raise _fail(path, f"column {expected.name!r} has type {actual}, "
                              f"expected {expected.type}")
        if table.column(index).null_count:
            raise _fail(path, f"column {expected.name!r} has missing values")
    if table.num_rows:
        prob = table.column("probability").to_numpy()
        if not np.all(np.isfinite(prob)) or prob.min() < 0 or prob.max() > 1 + 1e-9:
            raise _fail(path, "probabilities outside [0, 1]")
        plies = table.column("ply").to_numpy()
        rounds = table.column("round").to_numpy()
        if plies.min() < 0 or plies.max() >= PLIES_PER_ROUND or rounds.min() < 0 \
                or rounds.max() > 5:
            raise _fail(path, "round or ply out of range")
    return StrategyTable(table=table, metadata=metadata)


def strategies_from_table(table: StrategyTable, graphs: Sequence[RoundGraph],
                          tolerance: float = 1e-6) -> list[list[Tensor]]:
    """Map a table's rows back onto the edges of ``graphs`` (per round, per level, [E_l]).

    Nodes without rows (never reached by their mover) get the uniform strategy, which
    cannot change any value or best response. Raises :class:`CorruptFileError` when a row
    names an edge the graphs do not have, its card or captured set differs from the edge's,
    or a node's probabilities do not sum to 1 (within ``tolerance``).
    """
    from tensorcfr.games.pasur.solving.round_cfr import uniform_strategies

    out = uniform_strategies(graphs)
    by_round = {g.round_index: i for i, g in enumerate(graphs)}
    # Per round and ply: which nodes got rows (None: none of them).
    has_rows: list[list[Tensor | None]] = [[None] * PLIES_PER_ROUND for _ in graphs]
    t = table.table
    rounds = t.column("round").to_numpy().astype(np.int64)
    plies = t.column("ply").to_numpy().astype(np.int64)
    edges = t.column("edge").to_numpy()
    cards = t.column("card").to_numpy().astype(np.int64)
    masks = t.column("captured_mask").to_numpy()
    probs = t.column("probability").to_numpy()
    for round_index in np.unique(rounds):
        if int(round_index) not in by_round:
            raise CorruptFileError(f"the strategy table has rows of round {round_index} "
                                   "(0-based, as in its 'round' column), which the game graph "
                                   "does not have")
        position = by_round[int(round_index)]
        graph = graphs[position]
        for level in range(PLIES_PER_ROUND):
            sel = (rounds == round_index) & (plies == level)
            if not sel.any():
                continue
            e = torch.as_tensor(edges[sel], dtype=torch.long)
            num_edges = graph.edge_parent[level].numel()
            if int(e.min()) < 0 or int(e.max()) >= num_edges:
                raise CorruptFileError(
                    f"the strategy table names edges the game graph does not have (round "
                    f"{round_index}, ply {level}, 0-based as in the table): was it solved on "
                    "another graph?")
            device = graph.edge_card[level].device
            e = e.to(device)
            same = (graph.edge_card[level].index_select(0, e).cpu().numpy() == cards[sel]) & (
                graph.edge_captured[level].index_select(0, e).cpu().numpy() == masks[sel])
            if not same.all():
                raise CorruptFileError(
                    f"the strategy table's actions do not match the game graph (round "
                    f"{round_index}, ply {level}, 0-based as in the table): was it solved on "
                    "another graph?")
            strategy = out[position][level]
            strategy[e] = torch.as_tensor(probs[sel], dtype=strategy.dtype, device=device)
            parent = graph.edge_parent[level]
            nodes = torch.unique(parent.index_select(0, e))
            covered = torch.zeros(parent.numel(), dtype=torch.long, device=device)
            covered[e] = 1
            rows_per_node = torch.zeros(graph.num_nodes[level], dtype=torch.long,
                                        device=device).index_add_(0, parent, covered)
            edges_per_node = torch.zeros(graph.num_nodes[level], dtype=torch.long,
                                         device=device).index_add_(0, parent,
                                                                   torch.ones_like(covered))
            if int(e.numel()) != int(rows_per_node.sum()) or bool(
                    (rows_per_node.index_select(0, nodes)
                     != edges_per_node.index_select(0, nodes)).any()):
                raise CorruptFileError(
                    f"the strategy table's rows of a node are incomplete or repeated (round "
                    f"{round_index}, ply {level}, 0-based as in the table): the table is "
                    "incomplete or corrupt")
            sums = torch.zeros(graph.num_nodes[level], dtype=strategy.dtype, device=device)
            sums.index_add_(0, parent, strategy)
            if bool(((sums.index_select(0, nodes) - 1).abs() > tolerance).any()):
                raise CorruptFileError(
                    f"the strategy table's probabilities of a node do not sum to 1 (round "
                    f"{round_index}, ply {level}, 0-based as in the table): the table is "
                    "incomplete or corrupt")
            has_rows[position][level] = rows_per_node > 0
    _check_reached_nodes_have_rows(graphs, out, has_rows)
    return out


def _check_reached_nodes_have_rows(graphs: Sequence[RoundGraph], strategies: list[list[Tensor]],
                                   has_rows: list[list[Tensor | None]]) -> None:
    """Raise :class:`CorruptFileError` when a node its mover reaches (own reach > 0 under the
    table's strategy, the rule :func:`write_strategy_table` keeps rows by) has no rows: such
    a table lost rows (e.g. the root's), and a uniform default there would change values."""
    from tensorcfr.games.pasur.solving.round_cfr import reach_probabilities

    reaches = reach_probabilities(graphs, strategies)
    for position, graph in enumerate(graphs):
        for level in range(PLIES_PER_ROUND):
            mover = level % 2
            node_reach = reaches[position][level][mover]
            rows = has_rows[position][level]
            reached = node_reach > 0
            missing = reached if rows is None else reached & ~rows.to(reached.device)
            if bool(missing.any()):
                node = int(missing.nonzero()[0, 0])
                count = int(missing.sum())
                raise CorruptFileError(
                    f"the strategy table has no rows for {count:,} node(s) that their mover "
                    f"reaches (first: node {node} of round {graph.round_index}, ply {level}, "
                    "0-based as in the table): the table is incomplete or corrupt")
