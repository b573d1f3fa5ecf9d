"""Numeral211 full-game solver: cross-checks against OpenSpiel and the generic engine.

A tiny deck (ranks T, A in 3 suits: 6 cards, exactly one deal's worth) with 1 bet per round
keeps OpenSpiel's history walk to a few seconds.  The public-tree solver, OpenSpiel's own
``nash_conv`` on the Python game ``python_numeral211`` and the project's generic engine
(the game flattened into a :class:`LevelTree`) must give the same exploitability for the same
policy, and the public-tree CFR iterates must be OpenSpiel's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorcfr.core.public_tree import PublicTreeCFR
from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError
from tensorcfr.games.numeral211.game import openspiel_game as og
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.game.config import GameConfig

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = og.config_of({"ranks": "TA", "suits": 3, "max_bets": 1})
SMALL = GameConfig(ranks="9TA", suits=2, max_bets=(2, 2, 2))


@pytest.fixture(scope="module")
def tiny():
    """(public-tree game, OpenSpiel game, TabularPolicy template, flattened LevelTree)."""
    from open_spiel.python import policy as os_policy

    from tensorcfr.games.openspiel.flatten import flatten_game

    game = n211.build_game(TINY, dtype=torch.float64)
    os_game = og.load(TINY)
    return game, os_game, os_policy.TabularPolicy(os_game), flatten_game(
        os_game, dtype=torch.float64)


def _slots_from_tabular(tree, tab) -> torch.Tensor:
    """The generic engine's [A] policy slots from an OpenSpiel TabularPolicy."""
    slots = torch.zeros(tree.num_slots, dtype=torch.float64)
    offsets = tree.infoset_action_offset.tolist()
    counts = tree.infoset_num_actions.tolist()
    ids = tree.action_id.tolist()
    for i, key in enumerate(tree.infoset_keys):
        row = tab.action_probability_array[tab.state_lookup[key]]
        for s in range(offsets[i], offsets[i] + counts[i]):
            slots[s] = float(row[ids[s]])
    return slots


def _chance_scales(config: GameConfig) -> list[float]:
    """Probability of the public cards of rounds 1..r: the public-tree solver's regrets at
    round r are OpenSpiel's divided by it (a per-round constant: regret matching, RM+ and
    DCFR's discounts are scale free, so the iterates are the same)."""
    scales, left = [1.0], config.num_cards - 4
    for r in range(1, config.num_rounds):
        scales.append(scales[-1] / left)
        left -= 1
    return scales


def test_exploitability_agrees_three_ways(tiny) -> None:
    """A random suit-symmetric policy: public tree == OpenSpiel nash_conv / 2 == generic
    engine (float64, 1e-9); the uniform policy: public tree == generic engine."""
    from open_spiel.python.algorithms import exploitability as os_expl

    from tensorcfr.core.best_response import exploitability as generic_expl

    game, os_game, template, tree = tiny
    for which in ("uniform", "random"):
        policy = (n211.uniform_policy(game) if which == "uniform"
                  else n211.random_symmetric_policy(game, seed=3))
        ours = n211.exploitability(game, policy)
        tab = og.policy_to_tabular(game, policy, os_game, template)
        generic = generic_expl(tree, _slots_from_tabular(tree, tab))
        assert ours.exploitability == pytest.approx(generic.exploitability, abs=1e-9)
        assert ours.best_response_values == pytest.approx(
            generic.per_player.tolist(), abs=1e-9)
        assert ours.policy_values == pytest.approx(generic.policy_values.tolist(), abs=1e-9)
        assert sum(ours.policy_values) == pytest.approx(0.0, abs=1e-12)  # zero-sum
        if which == "random":
            theirs = os_expl.nash_conv(os_game, tab) / 2
            assert ours.exploitability == pytest.approx(theirs, abs=1e-9)


def _compare_regrets(game, ours, infoset_regrets, os_game, template) -> int:
    scaled = [r.clone() * s for r, s in zip(n211.cell_regrets(ours),
                                            _chance_scales(game.config))]
    tab = og.policy_to_tabular(game, scaled, os_game, template)
    checked = 0
    for key, idx in tab.state_lookup.items():
        for action, value in infoset_regrets(key).items():
            assert tab.action_probability_array[idx][action] == pytest.approx(
                value, abs=1e-12), key
            checked += 1
    return checked


def test_cfr_iterates_match_openspiel(tiny) -> None:
    """Vanilla CFR, alternating updates: the cumulative regrets of every infoset agree with
    OpenSpiel's own CFRSolver, entry by entry, for two iterations (its Python solver is slow
    here; ``test_iterates_match_openspiel_for_100_iterations`` goes to 100 through the
    generic engine, and ``benchmarks/bench_numeral211_openspiel_parity.py`` runs OpenSpiel's
    solver itself for 100).  Rows whose regrets are all 0 in OpenSpiel are uniform there;
    they are skipped in the policy comparison, which only counts informative rows."""
    from open_spiel.python.algorithms import cfr

    game, os_game, template, _ = tiny
    ours = PublicTreeCFR(game, "cfr", dtype=torch.float64)
    theirs = cfr.CFRSolver(os_game)
    for _ in range(2):
        ours.iterate(1)
        theirs.evaluate_and_update_policy()
        nodes = theirs._info_state_nodes
        assert _compare_regrets(game, ours, lambda k: nodes[k].cumulative_regret, os_game,
                                template) > 10_000
    cur_ours = og.policy_to_tabular(game, ours.current_policy(), os_game, template)
    cur_theirs = theirs.current_policy()
    compared = 0
    for key, idx in cur_ours.state_lookup.items():
        if max(abs(v) for v in nodes[key].cumulative_regret.values()) < 1e-9:
            continue  # an all-zero regret row: uniform there, noise-driven here
        compared += 1
        np.testing.assert_allclose(cur_ours.action_probability_array[idx],
                                   cur_theirs.action_probability_array[
                                       cur_theirs.state_lookup[key]], atol=1e-12)
    assert compared > 3000


@pytest.mark.parametrize("algo", ["cfr+", "dcfr"])
def test_iterates_match_generic_engine(tiny, algo: str) -> None:
    """CFR+ and DCFR: regrets equal the generic tensor engine's (on the flattened OpenSpiel
    game) for two iterations (see above for why no more), and the average policies' exploitabilities agree."""
    from tensorcfr.core.best_response import exploitability as generic_expl
    from tensorcfr.core.solver import TensorCFRSolver

    game, os_game, template, tree = tiny
    ours = n211.make_solver(game, algo)
    generic = TensorCFRSolver(tree, algo)
    keys = tree.infoset_keys
    offsets = tree.infoset_action_offset.tolist()
    counts = tree.infoset_num_actions.tolist()
    ids = tree.action_id.tolist()
    index = {k: i for i, k in enumerate(keys)}
    for _ in range(2):
        ours.iterate(1)
        generic.iterate(1)
        regrets = generic.cumulative_regrets().tolist()

        def lookup(key, regrets=regrets):
            i = index[key]
            return {ids[s]: regrets[s] for s in range(offsets[i], offsets[i] + counts[i])}

        _compare_regrets(game, ours, lookup, os_game, template)
    ex_ours = n211.exploitability(game, ours.average_policy()).exploitability
    ex_generic = generic_expl(tree, generic.average_policy()).exploitability
    assert ex_ours == pytest.approx(ex_generic, abs=1e-9)


def test_abstract_policy_of_classes_equals_full_policy() -> None:
    game = n211.build_game(SMALL, dtype=torch.float64)
    solver = n211.make_solver(game, "cfr+")
    solver.iterate(5)
    policy = solver.average_policy()
    per_class = n211.policy_to_classes(game, policy)
    maps = [np.arange(game.iso.class_table(r)[1]) for r in range(3)]
    a = n211.exploitability(game, policy)
    b = n211.exploitability(game, n211.AbstractPolicy(maps, per_class))
    assert a.exploitability == pytest.approx(b.exploitability, abs=1e-6)
    sym = n211.symmetrize_policy(game, policy)
    # symmetrize=False evaluates on the cells, the default over the classes: the same
    # numbers summed in another order
    assert n211.exploitability(game, sym, symmetrize=False).exploitability == pytest.approx(
        a.exploitability, abs=1e-12)
    # symmetrizing is idempotent and keeps every representative's strategy
    again = n211.symmetrize_policy(game, sym)
    assert all(torch.equal(x, y) for x, y in zip(sym, again))
    # one bucket per round: a strategy that ignores the cards
    one = [np.zeros(game.iso.class_table(r)[1], dtype=np.int64) for r in range(3)]
    strat = [np.ones((t.num_slots, p, 1)) for t, p in zip(game.rounds, game.prefixes)]
    c = n211.exploitability(game, n211.AbstractPolicy(one, strat))
    d = n211.exploitability(game, n211.uniform_policy(game))
    assert c.exploitability == pytest.approx(d.exploitability, abs=1e-9)
    # a bucket map per (board, hand) must be constant on isomorphic classes (3 suits: the
    # flop board's stabilizer swaps the two other suits)
    game3 = n211.build_game(TINY, dtype=torch.float64)
    one3 = [np.zeros(game3.iso.class_table(r)[1], dtype=np.int64) for r in range(3)]
    strat3 = [np.ones((t.num_slots, p, 2)) for t, p in zip(game3.rounds, game3.prefixes)]
    table, _ = game3.iso.class_table(1)
    ok = np.where(table >= 0, 0, -1)
    n211.expand_abstract_policy(game3, n211.AbstractPolicy([one3[0], ok, one3[2]], strat3))
    bad = ok.copy()
    shared = [h for h in np.flatnonzero(table[0] >= 0) if (table[0] == table[0, h]).sum() > 1]
    bad[0, shared[0]] = 1
    with pytest.raises(n211.BucketMapError, match="isomorphic"):
        n211.expand_abstract_policy(game3, n211.AbstractPolicy([one3[0], bad, one3[2]],
                                                               strat3))
    with pytest.raises(n211.BucketMapError, match="shape"):
        n211.expand_abstract_policy(game, n211.AbstractPolicy([one[0], one[0], one[2]], strat))
    with pytest.raises(n211.BucketMapError, match="buckets"):
        n211.expand_abstract_policy(game, n211.AbstractPolicy(
            [one[0], one[1] + 1, one[2]], strat))


def test_symmetry_and_convergence_small_variant() -> None:
    """CFR+ on a 6-card, 2-bet variant: exploitability falls, values are zero-sum, and the
    best responses are non-negative improvements."""
    game = n211.build_game(SMALL, dtype=torch.float64)
    solver = n211.make_solver(game, "cfr+")
    curve = []
    for _ in range(4):
        solver.iterate(25)
        curve.append(n211.exploitability(game, solver.average_policy()))
    assert curve[-1].exploitability < curve[0].exploitability
    for ex in curve:
        assert sum(ex.policy_values) == pytest.approx(0.0, abs=1e-9)
        for b, v in zip(ex.best_response_values, ex.policy_values):
            assert b >= v - 1e-9


def test_float32_evaluation_and_solve_track_float64() -> None:
    """The float32 game evaluates a policy as float64 does (rel 1e-5), and a float32 CFR+
    run converges like the float64 one (iterates may part where regrets are ~0, so only the
    exploitability level is compared)."""
    g64 = n211.build_game(SMALL, dtype=torch.float64)
    g32 = n211.build_game(SMALL, dtype=torch.float32)
    s64 = n211.make_solver(g64, "cfr+")
    s64.iterate(30)
    policy = s64.average_policy()
    e64 = n211.exploitability(g64, policy).exploitability
    e32 = n211.exploitability(g32, [p.float() for p in policy]).exploitability
    assert e32 == pytest.approx(e64, rel=1e-5)
    s32 = n211.make_solver(g32, "cfr+")
    s32.iterate(30)
    assert n211.exploitability(g32, s32.average_policy()).exploitability == pytest.approx(
        e64, rel=0.25)


def test_checkpoint_resume_is_bitwise(tmp_path) -> None:
    game = n211.build_game(SMALL)
    straight = n211.make_solver(game, "dcfr")
    n211.run_solver(game, straight, 6)
    first = n211.make_solver(game, "dcfr")
    ck = tmp_path / "ck.npz"
    n211.run_solver(game, first, 3, checkpoint=ck, eval_every=3)
    resumed = n211.make_solver(game, "dcfr")
    meta = n211.load_checkpoint(ck, resumed, SMALL)
    assert resumed.iteration == 3 and meta["curve"][0]["iteration"] == 3
    n211.run_solver(game, resumed, 6, curve=meta["curve"])
    for a, b in zip(straight.state_arrays().values(), resumed.state_arrays().values()):
        assert np.array_equal(a, b)
    with pytest.raises(CorruptFileError, match="algorithm"):
        n211.load_checkpoint(ck, n211.make_solver(game, "cfr+"), SMALL)
    ck.write_bytes(ck.read_bytes()[:200])
    with pytest.raises(CorruptFileError):
        n211.load_checkpoint(ck, resumed, SMALL)


def test_policy_file_round_trip(tmp_path) -> None:
    game = n211.build_game(SMALL)
    solver = n211.make_solver(game, "cfr+")
    solver.iterate(5)
    policy = solver.average_policy()
    path = tmp_path / "p.npz"
    n211.save_policy(path, game, policy, algo="cfr+", iterations=5)
    game2, policy2, meta = n211.load_policy(path)
    assert meta["iterations"] == 5 and game2.config == SMALL
    a = n211.exploitability(game, policy).exploitability
    b = n211.exploitability(game2, policy2).exploitability
    assert a == pytest.approx(b, rel=1e-6)  # float32 file, renormalised
    (tmp_path / "bad.npz").write_text("not a zip")
    with pytest.raises(CorruptFileError):
        n211.load_policy(tmp_path / "bad.npz")


def test_memory_limit_refuses_before_allocating() -> None:
    game = n211.build_game(GameConfig())
    with pytest.raises(MemoryLimitError, match="GiB"):
        n211.make_solver(game, "cfr+", max_memory_bytes=2**30)
    with pytest.raises(TensorCFRError):
        n211.make_solver(n211.build_game(SMALL), "pcfr+")


def test_betting_tree_matches_universal_poker() -> None:
    """The default betting (antes as equal blinds of 5, bets 10/20/20, 4 bets+raises per
    round, player 0 then player 1 first) walked in OpenSpiel's universal_poker and in the
    reference engine: the same decision histories with the same legal actions, the same fold
    and showdown terminals with the same stakes (OpenSpiel cannot express the 3-card
    showdown, so the deal is fixed and only |payoffs| are compared), and the public-tree
    templates' sizes (910 decision nodes, 728 folds, 729 showdowns)."""
    import pyspiel

    from tensorcfr.games.numeral211.game.engine import new_game

    config = GameConfig(ranks="9TA", suits=2)  # betting as the default game
    up = pyspiel.load_game("universal_poker", {
        "betting": "limit", "numPlayers": 2, "numRounds": 3, "blind": "5 5",
        "raiseSize": "10 20 20", "firstPlayer": "1 2 2", "maxRaises": "4 4 4",
        "numSuits": 2, "numRanks": 3, "numHoleCards": 2, "numBoardCards": "0 1 1",
        "stack": "1000 1000"})
    letters = {0: "f", 1: "c", 2: "r"}

    def walk_up(state, history, nodes, terminals):
        while state.is_chance_node():
            state = state.child(state.chance_outcomes()[0][0])
            if history and not history.endswith("/"):
                history += "/"
        if state.is_terminal():
            terminals[history.rstrip("/")] = abs(state.returns()[0])
            return
        nodes[history] = "".join(letters[a] for a in state.legal_actions())
        for a in state.legal_actions():
            walk_up(state.child(a), history + letters[a], nodes, terminals)

    def walk_engine(state, nodes, terminals):
        if state.is_terminal:
            terminals[state.history_string()] = abs(state.returns()[0])
            return
        nodes[state.history_string()] = "".join(state.legal_actions())
        for a in state.legal_actions():
            child = new_game(config, state.deal)
            child.rounds = list(state.rounds)
            walk_engine(child.apply(a), nodes, terminals)

    up_nodes, up_terms = {}, {}
    walk_up(up.new_initial_state(), "", up_nodes, up_terms)
    en_nodes, en_terms = {}, {}
    walk_engine(new_game(config, [0, 1, 2, 3, 4, 5]), en_nodes, en_terms)
    assert len(en_nodes) == 910 and len(en_terms) == 728 + 729
    assert up_nodes == en_nodes
    assert set(up_terms) == set(en_terms)
    for key, stake in en_terms.items():
        if key.endswith("f") or en_terms[key] != 0:
            assert up_terms[key] == pytest.approx(stake), key
    game = n211.build_game(config)
    assert [t.num_nodes * p for t, p in zip(game.rounds, game.prefixes)] == [10, 90, 810]


@pytest.mark.parametrize("algo", ["cfr", "cfr+"])
def test_iterates_match_openspiel_for_100_iterations(tiny, algo: str) -> None:
    """Issue 28: with the rounding bound of regret matching (regrets within rounding of 0
    count as 0, :mod:`tensorcfr.core.regret`), the public-tree solver's iterates are
    OpenSpiel's for 100 iterations, both storages: the average policy entry by entry and the
    exploitability to 1e-9.  The reference is the generic engine on the flattened OpenSpiel
    game, which equals OpenSpiel's CFRSolver / CFRPlusSolver (its regrets are summed
    history by history in OpenSpiel's order; ``tests/test_cfr_parity.py``, and to 1e-15 at
    2-20 iterations here); OpenSpiel's own Python solver takes about a minute an iteration
    on this machine, so ``benchmarks/bench_numeral211_openspiel_parity.py`` runs it."""
    from tensorcfr.core.best_response import exploitability as generic_expl
    from tensorcfr.core.solver import TensorCFRSolver

    game, os_game, template, tree = tiny
    generic = TensorCFRSolver(tree, algo)
    solvers = {s: n211.make_solver(game, algo, storage=s) for s in ("classes", "cells")}
    for t in range(1, 101):
        generic.iterate(1)
        for solver in solvers.values():
            solver.iterate(1)
        if t not in (5, 20, 100):
            continue
        reference = generic.average_policy()
        expected = generic_expl(tree, reference).exploitability
        for storage, solver in solvers.items():
            policy = solver.average_policy()
            ours = n211.exploitability(game, policy).exploitability
            assert ours == pytest.approx(float(expected), abs=1e-9), (storage, t)
            tab = og.policy_to_tabular(game, policy, os_game, template)
            slots = _slots_from_tabular(tree, tab)
            assert float((slots - reference).abs().max()) < 1e-9, (storage, t)


def test_summation_order_does_not_change_the_iterates() -> None:
    """Issue 28: 6789TA (24 cards, 2 bets a round), float64: the per-board matrix products
    and the sort sweeps, one and two threads, give the same exploitability after 3
    iterations (1e-12; with plain regret matching the sweeps' differed by 8e-6 chips)."""
    config = GameConfig(ranks="6789TA", suits=4, max_bets=(2, 2, 2))
    results = []
    for dense, threads in ((True, 1), (False, 1), (True, 2)):
        game = n211.build_game(config, dtype=torch.float64)
        n211.class_game(game).dense = dense
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            solver = n211.make_solver(game, "cfr")
            solver.iterate(3)
        finally:
            torch.set_num_threads(before)
        results.append(n211.exploitability(game, solver.average_policy()).exploitability)
    assert max(results) - min(results) < 1e-12, results
