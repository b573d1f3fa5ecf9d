"""The tensorized Pasur tree builder against the reference rules engine and the paper's data.

Reference enumerations with ``rules.py`` are exhaustive for round 0 and for single sampled
round-start states of later rounds; the whole-game check (round-start (pool, score) sets and
full-tree node counts) runs rounds 0..1 of a small deal. The paper's ``scores.csv`` is
checked for a sample of decks here (all 198 decks: ``benchmarks/pasur_tree_scores.py``).
"""

from __future__ import annotations

import csv
import random
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from tensorcfr.errors import InvalidDealError, MemoryLimitError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import is_club
from tensorcfr.games.pasur.engine.sum11 import combos_within, sum11_combos, sum11_matrix
from tensorcfr.games.pasur.solving.tensor_tree import (
    build_card_round,
    build_tree_round,
    build_tree_rounds,
    estimate_tree_size,
    inherited_score_sets,
    repeat_blocks,
    round_start_states,
)

DATA = Path(__file__).parent / "data"
SMALL_DECK = 7  # decks_0_199.csv line whose whole tree is small (about 1.8M nodes)
BFS_DECK = 2  # a deck whose rounds 0..1 are small enough for a rules.py enumeration


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _decks() -> list[list[int]]:
    lines = (DATA / "decks_0_199.csv").read_text().split()
    return [[int(c) for c in line.split(",")] for line in lines]


@pytest.fixture(scope="module")
def small_tree() -> tuple[list[int], list]:
    deal = _decks()[SMALL_DECK]
    return deal, build_tree_rounds(deal)


# --------------------------------------------------------------------------- helpers

def _pool_tensor(pools: list[tuple[int, ...]]) -> torch.Tensor:
    tensor = torch.zeros((len(pools), 52), dtype=torch.bool)
    for i, pool in enumerate(pools):
        tensor[i, list(pool)] = True
    return tensor


def _level_counts(state: rules.GameState, plies: int = 8) -> list[int]:
    """Nodes per level of the in-round tree below ``state`` (reference, with rules.py)."""
    counts = [0] * (plies + 1)

    def walk(s: rules.GameState, depth: int) -> None:
        counts[depth] += 1
        if depth == plies:
            return
        for action in rules.legal_actions(s):
            walk(rules.apply_action(s, action), depth + 1)

    walk(state, 0)
    return counts


def _score_key(state: rules.GameState) -> tuple[int, int, int, int]:
    """(Alex clubs, Bob clubs, Win, last capturer) of a round-start state."""
    alex = sum(1 for c in state.piles[0] if is_club(c))
    bob = sum(1 for c in state.piles[1] if is_club(c))
    last = 0 if state.last_capturer is None else state.last_capturer + 1
    if alex >= 7:
        return 0, 0, 1, last
    if bob >= 7:
        return 0, 0, 2, last
    return alex, bob, 0, last


def _play_to_round(deal: list[int], round_index: int, rng: random.Random) -> rules.GameState:
    state = rules.initial_state(deal)
    while state.play_index < 8 * round_index:
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))
    return state


# --------------------------------------------------------------------------- building blocks

def test_sum11_template_matches_the_paper() -> None:
    combos = sum11_combos()
    assert len(combos) == 2764
    sizes = defaultdict(int)
    for combo in combos:
        assert sum(c // 4 + 1 for c in combo) == 11
        sizes[len(combo)] += 1
    assert dict(sizes) == {2: 80, 3: 440, 4: 976, 5: 920, 6: 320, 7: 28}
    matrix = sum11_matrix()
    assert matrix.shape == (40, 2764) and int(matrix.sum()) == sum(len(c) for c in combos)
    some = {0, 1, 36, 37, 20, 21, 16}
    assert combos_within(some) == [c for c in combos if set(c) <= some]


def test_repeat_blocks_paper_example() -> None:
    out = repeat_blocks(torch.tensor([1, 2, 3, 4, 5, 6]), torch.tensor([2, 3, 1]),
                        torch.tensor([1, 3, 2]))
    assert out.tolist() == [1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 6, 6]


def test_repeat_blocks_random_against_python() -> None:
    rng = random.Random(3)
    for _ in range(50):
        sizes = [rng.randrange(0, 4) for _ in range(rng.randrange(1, 7))]
        reps = [rng.randrange(0, 4) for _ in sizes]
        values = list(range(100, 100 + sum(sizes)))
        expected, start = [], 0
        for size, rep in zip(sizes, reps):
            expected += values[start:start + size] * rep
            start += size
        out = repeat_blocks(torch.tensor(values), torch.tensor(sizes), torch.tensor(reps))
        assert out.tolist() == expected


# --------------------------------------------------------------------------- card-state layers

def test_round0_layer_sizes_of_200_decks() -> None:
    with open(DATA / "round0_layer_sizes_decks0-199.csv") as f:
        expected = {int(r["deck"]): [int(v) for k, v in r.items() if k != "deck"]
                    for r in csv.DictReader(f)}
    for index, deal in enumerate(_decks()):
        card_round = build_card_round(deal, 0, _pool_tensor([tuple(deal[:4])]))
        assert card_round.level_sizes == [1] + expected[index], f"deck {index}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_round0_levels_match_rules_enumeration(seed: int) -> None:
    deal = rules.random_deal(seed)
    card_round = build_card_round(deal, 0, _pool_tensor([tuple(deal[:4])]))
    assert card_round.level_sizes == _level_counts(rules.initial_state(deal))


@pytest.mark.parametrize("seed,round_index", [(11, 1), (12, 2), (13, 3), (14, 4), (15, 5),
                                              (16, 3), (17, 5)])
def test_later_round_from_sampled_state_matches_rules(seed: int, round_index: int) -> None:
    deal = list(rules.random_deal(seed))
    state = _play_to_round(deal, round_index, random.Random(seed))
    card_round = build_card_round(deal, round_index, _pool_tensor([state.pool]))
    assert card_round.level_sizes == _level_counts(state)


def test_several_roots_are_independent() -> None:
    deal = list(rules.random_deal(21))
    rng = random.Random(5)
    states = [_play_to_round(deal, 2, rng) for _ in range(6)]
    pools = sorted({s.pool for s in states})
    together = build_card_round(deal, 2, _pool_tensor(pools))
    alone = [build_card_round(deal, 2, _pool_tensor([p])).level_sizes for p in pools]
    assert together.level_sizes == [sum(a[level] for a in alone) for level in range(9)]


# --------------------------------------------------------------------------- inherited scores

def test_round_start_states_and_node_counts_match_rules_bfs() -> None:
    """Rounds 0..1 of a deal: the (pool, score) roots and full-tree node counts, by rules.py."""
    deal = _decks()[BFS_DECK]
    ours = round_start_states(deal)
    estimate = estimate_tree_size(deal)
    frontier = {(tuple(sorted(deal[:4])), (0, 0, 0, 0)): rules.initial_state(deal)}
    for round_index in range(2):
        assert set(frontier) == ours[round_index], f"round {round_index} starts"
        level_totals = [0] * 9
        following: dict = {}
        for state in frontier.values():
            counts = [0] * 9

            def walk(s: rules.GameState, depth: int) -> None:
                counts[depth] += 1
                if depth == 8:
                    following.setdefault((s.pool, _score_key(s)), s)
                    return
                for action in rules.legal_actions(s):
                    walk(rules.apply_action(s, action), depth + 1)

            walk(state, 0)
            level_totals = [a + b for a, b in zip(level_totals, counts)]
        assert level_totals == estimate.nodes[round_index], f"round {round_index} sizes"
        frontier = following
    assert set(frontier) == ours[2]


def test_inherited_scores_match_paper_scores_csv() -> None:
    expected: dict[int, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    with open(DATA / "pasur_scores.csv") as f:
        for r in csv.DictReader(f):
            expected[int(r["Deck"])][int(r["Hand"])].add(
                (int(r["Alex"]), int(r["Bob"]), int(r["Win"])))
    assert len(expected) == 198
    decks = _decks()
    for index in (1, 2, 4, 7, 9):  # a sample; all 198: benchmarks/pasur_tree_scores.py
        sets = inherited_score_sets(decks[index])
        for round_index in range(6):
            assert sets[round_index] == expected[index][round_index], (index, round_index)


# --------------------------------------------------------------------------- full tree

def test_graphs_validate_and_match_the_estimate(small_tree) -> None:
    deal, graphs = small_tree
    assert len(graphs) == 6
    estimate = estimate_tree_size(deal)
    for round_index, graph in enumerate(graphs):
        graph.validate()
        assert graph.round_index == round_index
        assert graph.num_nodes == estimate.nodes[round_index]
        assert graph.num_nodes[0] == estimate.root_pairs[round_index]
        for level in range(8):
            assert torch.equal(graph.edge_child[level],
                               torch.arange(graph.num_nodes[level + 1]))
            assert graph.edge_reward[level].dtype == torch.float64
        if round_index < 5:
            nxt = graph.next_root
            assert int(nxt.min()) >= 0 and int(nxt.max()) < graphs[round_index + 1].num_nodes[0]
            # every next-round root is reached
            assert torch.unique(nxt).numel() == graphs[round_index + 1].num_nodes[0]
            assert not bool(graph.terminal_reward.any())
        else:
            assert bool((graph.next_root == -1).all())


def _edge_range(parents: torch.Tensor, node: int) -> tuple[int, int]:
    return (int(torch.searchsorted(parents, node)),
            int(torch.searchsorted(parents, node, right=True)))


def test_random_paths_rewards_equal_rules_utility(small_tree) -> None:
    deal, graphs = small_tree
    rng = random.Random(7)
    for _ in range(150):
        state, total, node = rules.initial_state(deal), 0.0, 0
        for round_index, graph in enumerate(graphs):
            for level in range(8):
                lo, hi = _edge_range(graph.edge_parent[level], node)
                legal = rules.legal_actions(state)
                ours = {(int(graph.edge_card[level][e]), int(graph.edge_captured[level][e]))
                        for e in range(lo, hi)}
                assert ours == {(a.card, sum(1 << c for c in a.captured)) for a in legal}
                edge = rng.randrange(lo, hi)
                bits = int(graph.edge_captured[level][edge])
                captured = tuple(c for c in range(52) if bits >> c & 1)
                state = rules.apply_action(
                    state, rules.Action(int(graph.edge_card[level][edge]), captured))
                total += float(graph.edge_reward[level][edge])
                node = int(graph.edge_child[level][edge])
            if round_index < 5:
                node = int(graph.next_root[node])
            else:
                total += float(graph.terminal_reward[node])
        assert total == rules.utility(state)


def _path_to(graphs: list, round_index: int, node: int) -> list[tuple[int, int, int]]:
    """(round, level, edge) of a root-to-node path ending at round-end ``node``."""
    path = []
    while True:
        graph = graphs[round_index]
        for level in reversed(range(8)):
            edge = node  # tree mode: edge e leads to child e
            path.append((round_index, level, edge))
            node = int(graph.edge_parent[level][edge])
        if round_index == 0:
            return path[::-1]
        round_index -= 1
        node = int(torch.nonzero(graphs[round_index].next_root == node)[0])


def _replay(deal: list[int], graphs: list, path: list[tuple[int, int, int]]) -> None:
    state, total = rules.initial_state(deal), 0.0
    for round_index, level, edge in path:
        graph = graphs[round_index]
        bits = int(graph.edge_captured[level][edge])
        state = rules.apply_action(state, rules.Action(
            int(graph.edge_card[level][edge]), tuple(c for c in range(52) if bits >> c & 1)))
        total += float(graph.edge_reward[level][edge])
    total += float(graphs[5].terminal_reward[path[-1][2]])
    assert state.is_terminal and total == rules.utility(state)


def test_cleanup_and_bonus_paths_equal_rules_utility(small_tree) -> None:
    """Targeted paths: a last round without any capture (the pool goes to a capturer of an
    earlier round), and cleanups worth the most (clubs bonus triggered by the cleanup)."""
    deal, graphs = small_tree
    last = graphs[5]
    no_capture = torch.ones(last.num_nodes[8], dtype=torch.bool)
    child = torch.arange(last.num_nodes[8])
    for level in reversed(range(8)):
        no_capture &= last.edge_captured[level][child] == 0
        child = last.edge_parent[level][child]
    picks = torch.nonzero(no_capture).flatten()[:5].tolist()
    picks += torch.argsort(last.terminal_reward.abs(), descending=True)[:5].tolist()
    assert picks
    for node in picks:
        _replay(deal, graphs, _path_to(graphs, 5, node))


def test_memory_limit_is_checked_before_building() -> None:
    deal = _decks()[SMALL_DECK]
    with pytest.raises(MemoryLimitError, match="--mode dag"):
        build_tree_rounds(deal, max_memory=10_000)
    with pytest.raises(MemoryLimitError, match="--mode dag"):
        build_tree_rounds(deal, max_memory="1M")


def test_invalid_deal_is_rejected() -> None:
    deal = _decks()[0]
    with pytest.raises(InvalidDealError):
        build_tree_rounds(deal[:-1])
    with pytest.raises(InvalidDealError):
        estimate_tree_size([deal[0]] * 52)


def test_estimate_is_consistent() -> None:
    estimate = estimate_tree_size(_decks()[1])
    assert len(estimate.nodes) == 6 and all(len(r) == 9 for r in estimate.nodes)
    assert estimate.nodes[0][0] == 1 and estimate.card_nodes[0][0] == 1
    assert estimate.total_nodes == sum(estimate.nodes_per_round)
    assert estimate.peak_bytes > estimate.graph_bytes > 0
    for card, full in zip(estimate.card_nodes, estimate.nodes):
        assert all(f >= c for c, f in zip(card, full))
    assert estimate.as_dict()["total_nodes"] == estimate.total_nodes


def test_single_round_equals_the_full_build(small_tree) -> None:
    deal, graphs = small_tree
    for round_index in (0, 3, 5):
        one = build_tree_round(deal, round_index)
        full = graphs[round_index]
        assert one.num_nodes == full.num_nodes
        for level in range(8):
            assert torch.equal(one.edge_parent[level], full.edge_parent[level])
            assert torch.equal(one.edge_reward[level], full.edge_reward[level])
            assert torch.equal(one.edge_captured[level], full.edge_captured[level])
        assert torch.equal(one.next_root, full.next_root)
        assert torch.equal(one.terminal_reward, full.terminal_reward)


def test_bad_arguments_are_user_errors() -> None:
    from tensorcfr.errors import TensorCFRError

    deal = _decks()[7]
    with pytest.raises(TensorCFRError):
        build_card_round(deal, 6, _pool_tensor([tuple(deal[:4])]))
    with pytest.raises(TensorCFRError):
        build_card_round(deal, 0, torch.zeros(3, dtype=torch.bool))
    with pytest.raises(TensorCFRError):  # a pool holding a card dealt in that round
        build_card_round(deal, 0, _pool_tensor([tuple(deal[4:8])]))
    with pytest.raises(TensorCFRError):
        build_tree_round(deal, 7)
    with pytest.raises(TensorCFRError):
        build_tree_rounds(deal, max_memory="lots")


def test_progress_callback(small_tree) -> None:
    deal, _ = small_tree
    calls: list[tuple[int, int]] = []
    build_tree_rounds(deal, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 7) for i in range(8)]
