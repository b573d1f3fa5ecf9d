"""The paper's compressed card codes and 58-column infoset rows (features.py)."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest
import torch

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import parse_card
from tensorcfr.games.pasur.solving.features import (
    COL_PLAYER,
    COL_ROUND,
    COLLECTED,
    NUM_FEATURES,
    level_features,
    reference_features,
)
from tensorcfr.games.pasur.solving.tensor_tree import build_tree_round, build_tree_rounds, compressed_codes

DATA = Path(__file__).parent / "data"
SUITS = {"♣": "c", "♦": "d", "♥": "h", "♠": "s"}


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _deck(index: int) -> list[int]:
    line = (DATA / "decks_0_199.csv").read_text().split()[index]
    return [int(c) for c in line.split(",")]


@pytest.fixture(scope="module")
def deck9_round0():
    return build_tree_round(_deck(9), 0)


@pytest.fixture(scope="module")
def small_tree():
    deal = _deck(7)
    return deal, build_tree_rounds(deal)


def _worked_example_deal() -> tuple[int, ...]:
    first = [0, 3, 33, 49, 12, 13, 25, 44, 9, 10, 16, 51]
    return rules.validate_deal(first + [c for c in range(52) if c not in first])


# --------------------------------------------------------------------------- hand-checked

def test_worked_example_rows() -> None:
    """docs/PASUR_RULES.md: Alex lays 7d, then Bob's 3d takes Ac + 7d."""
    deal = _worked_example_deal()
    state = rules.apply_action(rules.initial_state(deal), rules.Action(25, ()))
    row = reference_features(state)
    assert len(row) == NUM_FEATURES
    assert row[25] == 1                                  # 7d laid by Alex at turn 0
    assert [row[c] for c in (0, 3, 33, 49)] == [110] * 4  # initial pool
    assert [row[c] for c in (12, 13, 44)] == [100] * 3    # Alex's hand
    assert [row[c] for c in (9, 10, 16, 51)] == [105] * 4  # Bob's hand
    assert sum(1 for v in row[:52] if v == 0) == 40       # not dealt yet
    assert row[52:58] == [0, 0, 0, 0, 0, 0]
    state = rules.apply_action(state, rules.Action(9, (0, 25)))
    row = reference_features(state)
    assert row[0] == -10      # round-start pool card taken by Bob at turn 0
    assert row[25] == -9      # laid by Alex at turn 0, taken by Bob at turn 0
    assert row[9] == 109      # played by Bob at turn 0 to capture
    assert row[3] == 110 and row[10] == 105
    assert row[COL_ROUND:] == [0, 0, 1]


def test_compressed_codes_of_a_handmade_layer() -> None:
    # cards: [pool, Alex hand, Bob hand, laid by Bob t1, played by Alex t2 to capture,
    #         laid by Alex t0 then taken by Alex t3]
    state = torch.tensor([[[3, 1, 2, 3, 0, 0],
                           [0, 0, 0, 0, 3, 41],
                           [0, 0, 0, 2, 0, 0]]], dtype=torch.int8)
    assert compressed_codes(state).tolist() == [[110, 100, 105, -2, 113, 41]]


# --------------------------------------------------------------------------- paper's Table 15

def test_paper_sample_rows_deck9(deck9_round0) -> None:
    """sample.csv: the paper's rows of deck 9, round 0, turn 0 (Alex's 4 and Bob's 18)."""
    with open(DATA / "pasur_sample_deck9.csv", encoding="utf-8") as f:
        table = list(csv.reader(f))
    header = table[0]
    cards = []
    for name in header[1:13]:
        rank = {"1": "A", "10": "T"}.get(name[:-1], name[:-1])
        cards.append(parse_card(rank + SUITS[name[-1]]))
    expected = {tuple(int(v) for v in r[1:13]) + tuple(int(v) for v in r[13:16])
                for r in table[1:]}
    graph = deck9_round0
    ours = set()
    for level in (1, 2):
        rows = level_features(graph.node_state[level])
        assert rows.dtype == torch.int8 and rows.shape == (graph.num_nodes[level], 58)
        for row in rows.tolist():
            assert all(row[c] == 0 for c in range(52) if c not in cards)
            ours.add(tuple(row[c] for c in cards) + tuple(row[COL_ROUND:COL_PLAYER + 1]))
    assert ours == expected


# --------------------------------------------------------------------------- vectorized = reference

def test_round0_all_nodes_match_reference(deck9_round0) -> None:
    deal = _deck(9)
    graph = deck9_round0
    rows = [None] + [level_features(graph.node_state[level]) for level in range(1, 9)]

    def walk(state: rules.GameState, level: int, node: int) -> None:
        if level:
            assert rows[level][node].tolist() == reference_features(state)
        if level == 8:
            return
        parents = graph.edge_parent[level]
        lo = int(torch.searchsorted(parents, node))
        hi = int(torch.searchsorted(parents, node, right=True))
        for edge in range(lo, hi):
            bits = int(graph.edge_captured[level][edge])
            action = rules.Action(int(graph.edge_card[level][edge]),
                                  tuple(c for c in range(52) if bits >> c & 1))
            walk(rules.apply_action(state, action), level + 1, int(graph.edge_child[level][edge]))

    walk(rules.initial_state(deal), 0, 0)


def test_random_paths_match_reference_in_every_round(small_tree) -> None:
    deal, graphs = small_tree
    rng = random.Random(11)
    seen_collected = False
    for _ in range(40):
        state, node = rules.initial_state(deal), 0
        for round_index, graph in enumerate(graphs):
            for level in range(8):
                parents = graph.edge_parent[level]
                lo = int(torch.searchsorted(parents, node))
                hi = int(torch.searchsorted(parents, node, right=True))
                edge = rng.randrange(lo, hi)
                bits = int(graph.edge_captured[level][edge])
                state = rules.apply_action(state, rules.Action(
                    int(graph.edge_card[level][edge]),
                    tuple(c for c in range(52) if bits >> c & 1)))
                node = int(graph.edge_child[level][edge])
                row = level_features(graph.node_state[level + 1],
                                     nodes=torch.tensor([node]))[0].tolist()
                assert row == reference_features(state), (round_index, level)
                seen_collected |= COLLECTED in row
            if round_index < 5:
                node = int(graph.next_root[node])
    assert seen_collected


def test_level_zero_is_rejected(small_tree) -> None:
    _, graphs = small_tree
    with pytest.raises(ValueError):
        level_features(graphs[0].node_state[0])
    with pytest.raises(ValueError):
        reference_features(rules.initial_state(_deck(7)))
