"""Round-by-round CFR over Pasur round graphs (src/tensorcfr/games/pasur/solving/round_cfr.py).

Small positions (the last one or two rounds of a game) are built from the reference rules
engine by an independent test builder, in both shapes (tree and dag); solved values are
checked against a plain minimax over rules.py, and exploitability is measured exactly.
"""

from __future__ import annotations

import json

import pytest
import torch

from _pasur_cfr_helpers import build_position_graphs, minimax_value as rules_minimax, \
    position_at_round
from tensorcfr.core.regret import CFRVariant
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.solving.graph import RoundGraph
from tensorcfr.games.pasur.solving.round_cfr import (
    ALEX,
    BOB,
    CheckpointMismatchError,
    RoundCheckpointStore,
    SolveInterrupted,
    best_response_value,
    exploitability,
    minimax_value,
    node_values,
    reach_probabilities,
    solve_dcfr,
    solve_round,
    uniform_strategies,
)

torch.set_num_threads(1)

_GRAPHS: dict[tuple[int, int, str], list[RoundGraph]] = {}


def graphs_for(seed: int, round_index: int, mode: str) -> list[RoundGraph]:
    key = (seed, round_index, mode)
    if key not in _GRAPHS:
        _GRAPHS[key] = build_position_graphs(position_at_round(seed, round_index), mode)
    return _GRAPHS[key]


# --------------------------------------------------------------------------- a hand-made graph

def _chain_round(level1: list[tuple[int, float]]) -> RoundGraph:
    """One last round: Alex's root with two actions (rewards 0 and 1) to Bob's nodes A and B;
    ``level1`` lists Bob's edges (parent, reward); every later level is a chain of single
    actions with reward 0 to the round's end (terminal reward 0)."""
    n1 = 2
    parent1 = torch.tensor([p for p, _ in level1])
    n2 = len(level1)
    edge_parent = [torch.tensor([0, 0]), parent1] + [torch.arange(n2)] * 6
    edge_child = [torch.tensor([0, 1]), torch.arange(n2)] + [torch.arange(n2)] * 6
    edge_reward = ([torch.tensor([0.0, 1.0], dtype=torch.float64),
                    torch.tensor([r for _, r in level1], dtype=torch.float64)]
                   + [torch.zeros(n2, dtype=torch.float64)] * 6)
    cards = [torch.zeros(len(p), dtype=torch.long) for p in edge_parent]
    graph = RoundGraph(round_index=5, num_nodes=[1, n1] + [n2] * 7, edge_parent=edge_parent,
                       edge_child=edge_child, edge_reward=edge_reward, edge_card=cards,
                       edge_captured=[c.clone() for c in cards],
                       next_root=torch.full((n2,), -1), terminal_reward=torch.zeros(
                           n2, dtype=torch.float64))
    graph.validate()
    return graph


def test_hand_made_graph_known_values() -> None:
    # Bob at A: +4 or -2 (A is worth min = -2); at B (after Alex's +1): 0 or +2 (worth 1).
    graphs = [_chain_round([(0, 4.0), (0, -2.0), (1, 0.0), (1, 2.0)])]
    assert minimax_value(graphs) == 1.0
    half = uniform_strategies(graphs)
    report = exploitability(graphs, half)
    # value: 0.5 * (0.5*4 + 0.5*-2) + 0.5 * (1 + 0.5*0 + 0.5*2) = 0.5 + 1.0
    assert report.value == pytest.approx(1.5)
    # Bob best-responds to Alex's 50/50: 0.5 * -2 + 0.5 * (1 + 0) = -0.5
    assert report.best_response_to_alex == pytest.approx(-0.5)
    # Alex best-responds to Bob's 50/50: max(1, 2) = 2
    assert report.best_response_to_bob == pytest.approx(2.0)
    assert report.exploitability == pytest.approx(2.5)
    assert best_response_value(graphs, half, ALEX) == pytest.approx(2.0)
    assert best_response_value(graphs, half, BOB) == pytest.approx(-0.5)
    solution = solve_dcfr(graphs, iterations=300)
    assert solution.value == pytest.approx(1.0, abs=1e-4)
    assert exploitability(graphs, solution.strategies).exploitability < 1e-3
    # Alex learns to take the +1 branch, Bob the 0 answer there.
    assert float(solution.strategies[0][0][1]) > 0.999
    assert float(solution.strategies[0][1][2]) > 0.999


def test_dag_counterfactual_reach_sums_paths() -> None:
    """Two of Alex's actions lead to the same Bob node: its reach is the sum over paths."""
    level1_dag = _chain_round([(0, 4.0), (0, -2.0), (1, 0.0), (1, 2.0)])
    # Merge: Alex's two actions (rewards 0 and 1) both lead to Bob's node 0.
    merged = RoundGraph(
        round_index=5, num_nodes=[1, 1] + [2] * 7,
        edge_parent=[torch.tensor([0, 0]), torch.tensor([0, 0])] + [torch.arange(2)] * 6,
        edge_child=[torch.tensor([0, 0]), torch.arange(2)] + [torch.arange(2)] * 6,
        edge_reward=[torch.tensor([0.0, 1.0], dtype=torch.float64),
                     torch.tensor([4.0, -2.0], dtype=torch.float64)]
        + [torch.zeros(2, dtype=torch.float64)] * 6,
        edge_card=[torch.zeros(2, dtype=torch.long)] * 8,
        edge_captured=[torch.zeros(2, dtype=torch.long)] * 8,
        next_root=torch.full((2,), -1), terminal_reward=torch.zeros(2, dtype=torch.float64))
    merged.validate()
    strategies = uniform_strategies([merged])
    reach = reach_probabilities([merged], strategies)
    assert reach[0][1][ALEX].tolist() == [1.0]  # 0.5 + 0.5 over the two paths
    assert reach[0][1][BOB].tolist() == [2.0]   # Bob's own reach: 1 on each path
    solution = solve_dcfr([merged], iterations=200)
    assert solution.value == pytest.approx(minimax_value([merged]), abs=1e-4)
    assert minimax_value([merged]) == pytest.approx(-1.0)
    assert level1_dag.total_nodes > merged.total_nodes


# --------------------------------------------------------------------------- positions

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["dag", "tree"])
def test_last_round_converges_to_minimax(seed: int, mode: str) -> None:
    graphs = graphs_for(seed, 5, mode)
    exact = rules_minimax(position_at_round(seed, 5))
    assert minimax_value(graphs) == exact
    solution = solve_dcfr(graphs, iterations=400)
    report = exploitability(graphs, solution.strategies)
    assert solution.value == pytest.approx(exact, abs=1e-3)
    assert report.value == pytest.approx(solution.value, abs=1e-9)
    assert 0 <= report.exploitability < 1e-3
    assert report.best_response_to_alex <= exact + 1e-9 <= report.best_response_to_bob + 2e-9


@pytest.mark.parametrize("seed", [0, 3])
def test_two_rounds_converge_to_minimax(seed: int) -> None:
    graphs = graphs_for(seed, 4, "dag")
    assert [g.round_index for g in graphs] == [4, 5]
    exact = rules_minimax(position_at_round(seed, 4))
    assert minimax_value(graphs) == exact
    solution = solve_dcfr(graphs, iterations=300)
    assert solution.value == pytest.approx(exact, abs=1e-3)
    assert exploitability(graphs, solution.strategies).exploitability < 2e-3
    # The round-by-round chain value equals the whole-game value of the average profile.
    assert float(node_values(graphs, solution.strategies)[0][0][0]) == pytest.approx(
        solution.value, abs=1e-9)


def test_exploitability_decreases_with_iterations() -> None:
    graphs = graphs_for(2, 5, "dag")
    values = [exploitability(graphs, solve_dcfr(graphs, iterations=n).strategies).exploitability
              for n in (3, 10, 30, 100, 300)]
    assert all(b < a for a, b in zip(values, values[1:])), values
    assert values[-1] < 1e-3 < values[0]


def test_tree_and_dag_agree() -> None:
    tree, dag = graphs_for(3, 5, "tree"), graphs_for(3, 5, "dag")
    assert tree[0].total_nodes > dag[0].total_nodes
    assert minimax_value(tree) == minimax_value(dag)
    value_tree = solve_dcfr(tree, iterations=400).value
    value_dag = solve_dcfr(dag, iterations=400).value
    assert value_tree == pytest.approx(value_dag, abs=1e-3)


@pytest.mark.parametrize("name", ["cfr", "cfr+", "lcfr", "pcfr+"])
def test_other_variants_converge(name: str) -> None:
    graphs = graphs_for(0, 5, "dag")
    solution = solve_dcfr(graphs, CFRVariant.parse(name), iterations=400)
    assert solution.value == pytest.approx(minimax_value(graphs), abs=0.05)
    assert exploitability(graphs, solution.strategies).exploitability < 0.1


def test_dcfr_parameters_change_the_run() -> None:
    graphs = graphs_for(2, 5, "dag")
    a = solve_dcfr(graphs, CFRVariant.parse("dcfr"), iterations=20).value
    b = solve_dcfr(graphs, CFRVariant.parse("dcfr", alpha=1.0, beta=0.5, gamma=1.0),
                   iterations=20).value
    assert a != b


def test_convergence_curve() -> None:
    graphs = graphs_for(2, 5, "dag")
    solution = solve_dcfr(graphs, iterations=50, convergence=True)
    curve = solution.rounds[-1].convergence
    assert curve is not None and len(curve) == 50
    assert curve[-1] == 0.0  # the last average strategy is the final one
    assert curve[0] > curve[10] > curve[40]
    # The convergence pass does not change the solution (CFR is deterministic).
    plain = solve_dcfr(graphs, iterations=50)
    for a, b in zip(plain.strategies[0], solution.strategies[0]):
        assert torch.equal(a, b)


def test_solve_round_rejects_bad_iterations() -> None:
    graph = graphs_for(0, 5, "dag")[0]
    with pytest.raises(TensorCFRError):
        solve_round(graph, graph.terminal_reward, iterations=0)


def test_float32_close_to_float64() -> None:
    graphs = graphs_for(1, 5, "dag")
    a = solve_dcfr(graphs, iterations=200).value
    b = solve_dcfr(graphs, iterations=200, dtype=torch.float32).value
    assert a == pytest.approx(b, abs=1e-4)


# --------------------------------------------------------------------------- checkpoints

def _identity() -> dict:
    return {"deal": [1, 2, 3], "mode": "dag", "iterations": 40}


def test_resume_is_identical(tmp_path) -> None:
    graphs = graphs_for(0, 4, "dag")
    full = solve_dcfr(graphs, iterations=40)
    store = RoundCheckpointStore(tmp_path / "ck", _identity())

    def stop(result) -> None:
        raise SolveInterrupted(f"stop after round {result.round_index + 1}")

    with pytest.raises(SolveInterrupted):
        solve_dcfr(graphs, iterations=40, checkpoint=store, on_round_done=stop)
    assert (tmp_path / "ck" / "round_5.pt").exists()
    assert not (tmp_path / "ck" / "round_4.pt").exists()
    resumed = solve_dcfr(graphs, iterations=40,
                         checkpoint=RoundCheckpointStore(tmp_path / "ck", _identity()))
    assert resumed.resumed_rounds == [5]
    assert resumed.value == full.value
    for a_round, b_round in zip(full.strategies, resumed.strategies):
        for a, b in zip(a_round, b_round):
            assert torch.equal(a, b)
    # A third run reuses both rounds.
    again = solve_dcfr(graphs, iterations=40,
                       checkpoint=RoundCheckpointStore(tmp_path / "ck", _identity()))
    assert sorted(again.resumed_rounds) == [4, 5] and again.value == full.value


def test_checkpoint_of_another_solve_is_refused(tmp_path) -> None:
    RoundCheckpointStore(tmp_path / "ck", _identity())
    other = dict(_identity(), iterations=41)
    with pytest.raises(CheckpointMismatchError, match="iterations"):
        RoundCheckpointStore(tmp_path / "ck", other)


def test_corrupt_checkpoint_is_refused(tmp_path) -> None:
    graphs = graphs_for(0, 5, "dag")
    store = RoundCheckpointStore(tmp_path / "ck", _identity())
    solve_dcfr(graphs, iterations=5, checkpoint=store)
    path = tmp_path / "ck" / "round_5.pt"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CorruptFileError):
        solve_dcfr(graphs, iterations=5, checkpoint=store)
    (tmp_path / "ck" / "meta.json").write_text("{not json")
    with pytest.raises(CorruptFileError):
        RoundCheckpointStore(tmp_path / "ck", _identity())
    (tmp_path / "ck" / "meta.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(CorruptFileError):
        RoundCheckpointStore(tmp_path / "ck", _identity())


def test_checkpoint_of_another_graph_is_refused(tmp_path) -> None:
    store = RoundCheckpointStore(tmp_path / "ck", _identity())
    solve_dcfr(graphs_for(0, 5, "dag"), iterations=5, checkpoint=store)
    with pytest.raises(CorruptFileError, match="does not match"):
        solve_dcfr(graphs_for(1, 5, "dag"), iterations=5, checkpoint=store)


# --------------------------------------------------------------------------- real builders

def test_real_dag_builder_small_deal() -> None:
    from tensorcfr.games.pasur.solving.exact import build_state_graph, solve_exact
    from tensorcfr.games.pasur.engine.rules import random_deal

    deal = random_deal(3)
    graphs = build_state_graph(deal)
    exact = solve_exact(deal).value
    assert minimax_value(graphs) == exact
    solution = solve_dcfr(graphs, iterations=150)
    report = exploitability(graphs, solution.strategies)
    assert solution.value == pytest.approx(exact, abs=0.01)
    assert report.exploitability < 0.01
