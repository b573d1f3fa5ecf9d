"""The shared level-graph passes (src/tensorcfr/core/level_graph.py) against brute-force
Python loops on small hand-built graphs: reach down tree and dag levels, values up them,
counterfactual regrets, per-slot regret and average accumulation, and a whole CFR solve of a
tiny full-information game built only from these functions."""

from __future__ import annotations

import math
import random

import pytest
import torch

from tensorcfr.core import level_graph as lg
from tensorcfr.core.regret import (
    CFRVariant,
    average_decay,
    discount_factor,
    normalize_strategy,
    regret_matching,
    regret_matching_into,
    uniform_slot_probabilities,
)

F64 = torch.float64


def _t(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def _i(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long)


# A three-level graph: level 0 has 2 roots; level 0 -> 1 is a tree level (5 edges, 5
# nodes); level 1 -> 2 is a dag level (7 edges into 3 merged nodes, children out of order).
PARENT = [_i([0, 0, 1, 1, 1]), _i([0, 0, 1, 2, 3, 4, 4])]
CHILD: list[torch.Tensor | None] = [None, _i([2, 0, 0, 1, 2, 1, 0])]
SIZES = [2, 5, 3]
FACTOR = [_t([0.25, 0.75, 0.5, 0.3, 0.2]), _t([0.6, 0.4, 1.0, 1.0, 1.0, 0.9, 0.1])]
REWARD = [_t([1.0, -2.0, 0.5, 0.0, 3.0]), _t([0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7])]


def _edges(level: int) -> list[tuple[int, int]]:
    """(parent, child) of each edge of a level, children in the next level."""
    child = CHILD[level]
    parents = PARENT[level].tolist()
    children = list(range(len(parents))) if child is None else child.tolist()
    return list(zip(parents, children))


def test_propagate_reach_tree_and_dag_levels_equal_a_loop_bitwise() -> None:
    reach0 = _t([0.7, 0.3])
    for level, reach_parent in ((0, reach0), (1, _t([0.11, 0.23, 0.37, 0.41, 0.53]))):
        for factor in (None, FACTOR[level]):
            expected = [0.0] * SIZES[level + 1]
            for e, (p, c) in enumerate(_edges(level)):
                r = float(reach_parent[p]) * (1.0 if factor is None else float(factor[e]))
                expected[c] += r  # edge order, as the scatter
            out = torch.full((SIZES[level + 1],), 99.0, dtype=F64)  # stale content
            lg.propagate_reach(reach_parent, PARENT[level], out, factor, CHILD[level])
            assert torch.equal(out, _t(expected)), (level, factor is None)


def test_dag_merge_is_bitwise_the_index_add_of_the_former_pasur_pass() -> None:
    gen = torch.Generator().manual_seed(3)
    parent = torch.randint(0, 50, (400,), generator=gen)
    child = torch.randint(0, 120, (400,), generator=gen)
    reach = torch.rand(50, generator=gen, dtype=F64)
    factor = torch.rand(400, generator=gen, dtype=F64)
    before = reach.index_select(0, parent)
    before *= factor
    expected = torch.zeros(120, dtype=F64).index_add_(0, child, before)
    got = lg.propagate_reach(reach, parent, torch.empty(120, dtype=F64), factor, child)
    assert torch.equal(got, expected)


def _path_reach() -> list[float]:
    """Reach of level-2 nodes by enumerating every root-to-node path."""
    out = [0.0] * SIZES[2]
    roots = [0.7, 0.3]
    for e0, (p0, c0) in enumerate(_edges(0)):
        for e1, (p1, c1) in enumerate(_edges(1)):
            if p1 == c0:
                out[c1] += roots[p0] * float(FACTOR[0][e0]) * float(FACTOR[1][e1])
    return out


def test_forward_pass_sums_every_path() -> None:
    reach = torch.zeros(sum(SIZES), dtype=F64)
    levels = [reach[0:2], reach[2:7], reach[7:10]]
    levels[0].copy_(_t([0.7, 0.3]))
    steps = [(levels[d], PARENT[d], levels[d + 1], FACTOR[d], CHILD[d]) for d in range(2)]
    lg.forward_pass(steps)
    assert levels[2].tolist() == pytest.approx(_path_reach(), abs=1e-15)
    again = torch.zeros_like(levels[2])
    lg.propagate_reach(levels[1], PARENT[1], again, FACTOR[1], CHILD[1])
    assert torch.equal(again, levels[2])  # the pass is the level function, step by step


def _brute_values(leaf: list[float]) -> list[list[float]]:
    """v(node) = sum over its edges of weight x (reward + v(child)), recursively."""
    values = [None, None, leaf]
    for level in (1, 0):
        v = [0.0] * SIZES[level]
        for e, (p, c) in enumerate(_edges(level)):
            v[p] += float(FACTOR[level][e]) * (float(REWARD[level][e]) + values[level + 1][c])
        values[level] = v
    return values  # type: ignore[return-value]


def test_backward_graph_pass_equals_the_recursion_bitwise() -> None:
    leaf = [2.0, -1.0, 0.5]
    node_values = torch.zeros(SIZES[0] + SIZES[1], dtype=F64)
    edge_values = torch.zeros(len(PARENT[0]) + len(PARENT[1]), dtype=F64)
    scratch = torch.zeros(7, dtype=F64)
    v0, v1 = node_values[:2], node_values[2:]
    q0, q1 = edge_values[:5], edge_values[5:]
    steps = [(_t(leaf), CHILD[1], REWARD[1], q1, FACTOR[1], scratch[:7], v1, PARENT[1]),
             (v1, CHILD[0], REWARD[0], q0, FACTOR[0], None, v0, PARENT[0])]
    lg.backward_graph_pass(steps)
    expected = _brute_values(leaf)
    assert v1.tolist() == expected[1] and v0.tolist() == expected[0]
    # The edge values stay in place: reward + child value.
    assert q1.tolist() == [float(REWARD[1][e]) + leaf[c] for e, (_, c) in enumerate(_edges(1))]
    assert q0.tolist() == [float(REWARD[0][e]) + expected[1][c]
                           for e, (_, c) in enumerate(_edges(0))]


def test_gather_edge_values_shapes() -> None:
    below = _t([1.0, 2.0, 3.0])
    assert lg.gather_edge_values(below).tolist() == [1.0, 2.0, 3.0]
    assert lg.gather_edge_values(below, None, _t([1.0, 1.0, 1.0])).tolist() == [2.0, 3.0, 4.0]
    out = torch.zeros(4, dtype=F64)
    got = lg.gather_edge_values(below, _i([2, 2, 0, 1]), _t([0.5, 0.0, 0.0, -2.0]), out=out)
    assert got is out and out.tolist() == [3.5, 3.0, 1.0, 0.0]


def test_backward_pass_tree_levels_one_row_per_player() -> None:
    # Tree: root (level 0) -> 2 nodes (level 1) -> 4 terminals (level 2); utilities for two
    # players in a [2, N] buffer, chance-like edge weights.
    parent1, parent2 = _i([0, 0]), _i([0, 0, 1, 1])
    w1, w2 = _t([0.5, 0.5]), _t([0.1, 0.9, 0.3, 0.7])
    utility = torch.tensor([[0, 0, 0, 1, 2, 3, 4], [0, 0, 0, -1, -2, -3, -4]], dtype=F64)
    values, scratch = utility.clone(), torch.zeros_like(utility)
    steps = [(values[:, 3:7], w2, scratch[:, 3:7], values[:, 1:3],
              parent2.expand(2, 4), 1),
             (values[:, 1:3], w1, scratch[:, 1:3], values[:, 0:1], parent1.expand(2, 2), 1)]
    lg.backward_pass(steps)
    n1 = [0.1 * 1 + 0.9 * 2, 0.3 * 3 + 0.7 * 4]
    assert values[0].tolist() == [0.5 * n1[0] + 0.5 * n1[1]] + n1 + [1, 2, 3, 4]
    assert values[1].tolist() == [-x for x in values[0].tolist()]
    # backup_values is the same step, and weight None means 1.
    parent_values = torch.zeros(1, dtype=F64)
    lg.backup_values(_t([1.0, 2.0]), None, None, parent_values, _i([0, 0]))
    assert parent_values.tolist() == [3.0]


def test_counterfactual_regrets() -> None:
    q, v, cf = _t([1.0, 2.0, -1.0]), _t([0.5, 0.5, 0.5]), _t([0.2, -1.0, 4.0])
    assert lg.counterfactual_regrets(q, v, cf).tolist() == [0.1, -1.5, -6.0]
    out = v.clone()
    assert lg.counterfactual_regrets(q, out, 2.0, out=out) is out
    assert out.tolist() == [1.0, 3.0, -3.0]
    assert lg.counterfactual_regrets(q, v, None).tolist() == [0.5, 1.5, -1.5]


def _discounted(variant: CFRVariant, t: int, value: float) -> float:
    if variant.name == "cfr":
        return value
    if variant.floors_regrets:
        return max(value, 0.0)
    if variant.name == "lcfr":
        return value * discount_factor(t, 1.0)
    return value * discount_factor(t, variant.alpha if value >= 0 else variant.beta)


@pytest.mark.parametrize("name", ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"])
def test_slot_accumulation_equals_a_loop_over_iterations(name: str) -> None:
    variant = CFRVariant(name)
    rng = random.Random(7)
    slot_index = _i([0, 2, 2, 1, 0, 2, 3])  # several histories per slot
    num_slots = 4
    regrets = torch.zeros(num_slots, dtype=F64)
    average = torch.zeros(num_slots, dtype=F64)
    sums = torch.zeros(num_slots, dtype=F64)
    flat_regrets = torch.zeros(7, dtype=F64)  # one slot per edge (Pasur's layout)
    flat_average = torch.zeros(7, dtype=F64)
    want_r, want_s = [0.0] * num_slots, [0.0] * num_slots
    want_fr, want_fs = [0.0] * 7, [0.0] * 7
    for t in range(1, 6):
        instant = [rng.uniform(-1, 1) for _ in range(7)]
        own = [rng.uniform(0, 1) for _ in range(7)]
        strategy = [rng.uniform(0, 1) for _ in range(num_slots)]
        flat_strategy = [rng.uniform(0, 1) for _ in range(7)]
        lg.accumulate_regrets(regrets, _t(instant), variant, t, slot_index)
        lg.accumulate_average(average, _t(own), _t(strategy), variant, t, slot_index, sums)
        lg.accumulate_regrets(flat_regrets, _t(instant), variant, t)
        lg.accumulate_average(flat_average, _t(own), _t(flat_strategy), variant, t)
        decay = average_decay(variant, t)
        own_sums = [0.0] * num_slots
        for e, s in enumerate(slot_index.tolist()):
            want_r[s] += instant[e]
            own_sums[s] += own[e]
        want_r = [_discounted(variant, t, r) for r in want_r]
        want_s = [(s * decay if decay != 1.0 else s) + o * p
                  for s, o, p in zip(want_s, own_sums, strategy)]
        want_fr = [_discounted(variant, t, r + i) for r, i in zip(want_fr, instant)]
        want_fs = [(s * decay if decay != 1.0 else s) + o * p
                   for s, o, p in zip(want_fs, own, flat_strategy)]
        assert regrets.tolist() == want_r and average.tolist() == want_s, t
        assert flat_regrets.tolist() == want_fr and flat_average.tolist() == want_fs, t


def test_accumulate_average_needs_a_buffer_with_a_slot_index() -> None:
    with pytest.raises(ValueError, match="slot_sums"):
        lg.accumulate_average(torch.zeros(2, dtype=F64), _t([1.0]), _t([1.0, 0.0]),
                              CFRVariant("cfr"), 1, _i([0]))


def test_regret_matching_into_is_bitwise_regret_matching() -> None:
    gen = torch.Generator().manual_seed(1)
    action_infoset = torch.sort(torch.randint(0, 40, (150,), generator=gen)).values
    num_infosets = 40
    uniform = uniform_slot_probabilities(action_infoset, num_infosets, F64)
    totals = torch.zeros(num_infosets, dtype=F64)
    out = torch.empty(150, dtype=F64)
    for _ in range(5):
        regrets = torch.randn(150, generator=gen, dtype=F64)
        regrets[regrets < -0.5] = 0.0
        got = regret_matching_into(regrets, action_infoset, totals, uniform,
                                   torch.zeros((), dtype=F64), out=out)
        assert got is out
        assert torch.equal(out, regret_matching(regrets, action_infoset, num_infosets))


def test_cfr_on_a_tiny_full_information_dag_reaches_the_minimax_value() -> None:
    """Max (level 0: one root, 3 actions) then Min (level 1: 2 merged nodes, 2 actions
    each) then leaves: the average strategy's value tends to the minimax value, using only
    the level-graph functions (each node its own infoset; slots = edges)."""
    parent = [_i([0, 0, 0]), _i([0, 0, 1, 1])]
    child = [_i([0, 1, 1]), None]  # actions 1 and 2 of the root lead to the same node
    reward = [_t([0.0, 1.0, -0.5]), _t([0.0, 0.0, 0.0, 0.0])]
    leaf = _t([3.0, -2.0, 1.0, 2.0])  # node 0: min(3, -2) = -2; node 1: min(1, 2) = 1
    minimax = max(0.0 - 2.0, 1.0 + 1.0, -0.5 + 1.0)  # = 2 (action 1)
    flat_parent = torch.cat([parent[0], parent[1] + 1])
    sign = _t([1.0] * 3 + [-1.0] * 4)  # +1 where Max moves, -1 where Min does
    mover = torch.tensor([0] * 3 + [1] * 4)
    own_index = mover * 3 + flat_parent
    opponent_index = (1 - mover) * 3 + flat_parent
    variant = CFRVariant("dcfr")
    strategy, regrets, average = (torch.zeros(7, dtype=F64) for _ in range(3))
    reach = torch.zeros(2, 3, dtype=F64)
    node_values, edge_values, scratch = (torch.zeros(n, dtype=F64) for n in (3, 7, 7))
    uniform = uniform_slot_probabilities(flat_parent, 3, F64)
    totals = torch.zeros(3, dtype=F64)
    reach_steps = [(reach[p, 0:1], parent[0], reach[p, 1:3],
                    strategy[0:3] if p == 0 else None, child[0]) for p in (0, 1)]

    def value_steps(sigma: torch.Tensor) -> list:
        return [(leaf, child[1], reward[1], edge_values[3:7], sigma[3:7], scratch[:4],
                 node_values[1:3], parent[1]),
                (node_values[1:3], child[0], reward[0], edge_values[0:3], sigma[0:3],
                 scratch[:3], node_values[0:1], parent[0])]

    steps = value_steps(strategy)
    for t in range(1, 301):
        regret_matching_into(regrets, flat_parent, totals, uniform, torch.zeros((), dtype=F64),
                             out=strategy)
        reach[:, 0] = 1.0
        lg.forward_pass(reach_steps)
        node_values.zero_()
        lg.backward_graph_pass(steps)
        cf = reach.view(-1).index_select(0, opponent_index) * sign
        instant = lg.counterfactual_regrets(edge_values, node_values[flat_parent], cf)
        lg.accumulate_regrets(regrets, instant, variant, t)
        own = reach.view(-1).index_select(0, own_index)
        lg.accumulate_average(average, own, strategy, variant, t)
    avg = normalize_strategy(average, flat_parent, 3)
    node_values.zero_()
    lg.backward_graph_pass(value_steps(avg))
    assert math.isclose(float(node_values[0]), minimax, abs_tol=1e-3)
    assert float(avg[1]) > 0.99  # Max picks action 1
    assert float(avg[5]) > 0.99  # at node 1, Min picks the leaf worth 1
