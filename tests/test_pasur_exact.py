"""The exact Pasur solver against plain minimax over the reference engine, and its CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from _cli_helpers import cli
from tensorcfr.errors import MemoryLimitError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.exact import (
    StateNotSolvedError,
    action_values_many,
    batch_capacity,
    build_state_graph,
    memoised_minimax,
    solve_exact,
    state_key,
    sum11_combos,
)

DATA = Path(__file__).parent / "data"


# --------------------------------------------------------------------------- reference minimax

def _full_key(state: rules.GameState) -> tuple:
    """Everything of a rules state except its history (no merging assumption at all)."""
    return (state.play_index, state.hands, state.pool, state.piles, state.surs,
            state.last_capturer)


def reference_to_go(state: rules.GameState, memo: dict | None) -> int:
    """Points still to come (Alex minus Bob) under minimax, by recursion over rules.py.

    ``memo=None``: plain recursion; otherwise memoised on the complete state.
    """
    if state.is_terminal:
        return 0
    if memo is not None:
        key = _full_key(state)
        if key in memo:
            return memo[key]
    here = rules.utility(state)
    values = [rules.utility(child) - here + reference_to_go(child, memo)
              for child in (rules.apply_action(state, a) for a in rules.legal_actions(state))]
    best = max(values) if state.player == rules.ALEX else min(values)
    if memo is not None:
        memo[_full_key(state)] = best
    return best


def reference_action_values(state: rules.GameState, memo: dict | None) -> list:
    here = rules.utility(state)
    out = []
    for a in rules.legal_actions(state):
        child = rules.apply_action(state, a)
        out.append((a, here + rules.utility(child) - here + reference_to_go(child, memo)))
    return out


def random_position(seed: int, play_index: int) -> rules.GameState:
    """A position reached by random legal plays from a seeded random deal."""
    rng = random.Random(seed * 7919 + play_index)
    state = rules.initial_state(rules.random_deal(seed))
    while state.play_index < play_index:
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))
    return state


def replay_record(record: dict) -> rules.GameState:
    state = rules.initial_state(record["deal"])
    for play in record["plays"]:
        state = rules.apply_action(state, rules.Action(play["card"], tuple(play["captured"])))
    return state


# --------------------------------------------------------------------------- tables

def test_sum11_combos_match_the_papers_template() -> None:
    reference = json.loads((DATA / "pasur_sum11_combos_2764.json").read_text())
    assert len(sum11_combos()) == 2764
    assert sorted(tuple(sorted(c)) for c in reference) == sorted(sum11_combos())
    sizes = [sum(1 for c in sum11_combos() if len(c) == k) for k in range(2, 8)]
    assert sizes == [80, 440, 976, 920, 320, 28]


# --------------------------------------------------------------------------- exactness

@pytest.mark.parametrize("seed", range(1, 13))
def test_last_round_matches_plain_minimax(seed: int) -> None:
    start = random_position(seed, 40)
    sol = solve_exact(start)
    expected = rules.utility(start) + reference_to_go(start, None)
    assert sol.value == expected
    # action values at the start and along a random path, against plain minimax
    rng = random.Random(seed)
    state = start
    while not state.is_terminal:
        got = sol.action_values(state)
        want = reference_action_values(state, None)
        assert got == want
        assert sol.state_value(state) == (max if state.player == 0 else min)(v for _, v in want)
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_last_two_rounds_match_memoised_minimax(seed: int) -> None:
    start = random_position(seed, 32)
    sol = solve_exact(start)
    memo: dict = {}
    assert sol.value == rules.utility(start) + reference_to_go(start, memo)
    rng = random.Random(seed)
    state = start
    for _ in range(10):
        assert sol.action_values(state) == reference_action_values(state, memo)
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))
    # the baseline of the benchmark (memoised on the merged key) agrees too
    assert memoised_minimax(start) == sol.value


@pytest.mark.parametrize("seed", [3, 11])
def test_principal_line_replays_to_the_value(seed: int) -> None:
    deal = rules.random_deal(seed)
    sol = solve_exact(deal)
    record = sol.principal_line
    assert record["deal"] == list(deal)
    assert len(record["plays"]) == rules.NUM_PLAYS
    final = replay_record(record)
    assert final.is_terminal
    assert rules.utility(final) == sol.value
    rows = [r for r in sol.principal_rows if r["play"] is not None]
    assert [r["play"] for r in rows] == list(range(48))  # numbered from 0, like replay
    last = sol.principal_rows[-1]
    alex, bob = rules.score(final)
    assert (last["alex"], last["bob"]) == (alex.total, bob.total)
    # every play of the line is optimal: its value equals the state's value
    state = rules.initial_state(deal)
    for play in record["plays"]:
        action = rules.Action(play["card"], tuple(play["captured"]))
        assert dict(sol.action_values(state))[action] == sol.value
        state = rules.apply_action(state, action)
    assert len(sol.states_per_round) == 6
    assert sum(sol.states_per_round) == sum(sol.states_per_level[:-1])
    assert sol.states_per_level[0] == 1


def test_principal_line_from_a_position_keeps_its_history() -> None:
    start = random_position(5, 36)
    sol = solve_exact(start)
    assert len(sol.principal_line["plays"]) == 48
    assert rules.utility(replay_record(sol.principal_line)) == sol.value
    assert sol.states_per_round[:4] == [0, 0, 0, 0]


def test_determinism() -> None:
    deal = rules.random_deal(12)
    a, b = solve_exact(deal), solve_exact(deal)
    assert a.value == b.value
    assert a.states_per_level == b.states_per_level
    assert a.edges_per_level == b.edges_per_level
    assert a.principal_line == b.principal_line


@pytest.mark.parametrize("seed,play", [(6, 40), (9, 40), (14, 36)])
def test_states_per_level_are_the_reachable_merged_states(seed: int, play: int) -> None:
    """Breadth-first over rules.py: the solver's level sizes are the distinct merged keys."""
    start = random_position(seed, play)
    sol = solve_exact(start)
    frontier = {_full_key(start): start}
    for offset in range(0, 48 - play):
        keys = {state_key(s) for s in frontier.values()}
        assert len(keys) == sol.states_per_level[offset], offset
        nxt = {}
        for s in frontier.values():
            for a in rules.legal_actions(s):
                child = rules.apply_action(s, a)
                nxt[_full_key(child)] = child
        frontier = nxt
    # different orders of play do meet in one merged state
    assert sum(sol.states_per_level) < sum(sol.edges_per_level) + 1


@pytest.mark.parametrize("seed", range(100, 130))
def test_last_plies_match_plain_minimax(seed: int) -> None:
    start = random_position(seed, 43 + seed % 2)
    sol = solve_exact(start)
    assert sol.value == rules.utility(start) + reference_to_go(start, None)
    assert sol.action_values(start) == reference_action_values(start, None)


def test_positions_outside_the_solution_are_refused() -> None:
    deal = rules.random_deal(6)
    sol = solve_exact(random_position(6, 40))
    with pytest.raises(StateNotSolvedError):
        sol.action_values(rules.initial_state(deal))  # before the solved start
    with pytest.raises(StateNotSolvedError):
        sol.action_values(random_position(7, 41))  # another deal


def test_memory_refusal() -> None:
    with pytest.raises(MemoryLimitError, match="limit"):
        solve_exact(rules.random_deal(1), max_memory=10_000)


def test_state_graph_is_valid_and_gives_the_value() -> None:
    deal = rules.random_deal(11)
    graphs = build_state_graph(deal, device="cpu")
    assert len(graphs) == 6
    for g in graphs:
        g.validate()
        assert g.node_state is not None and len(g.node_state) == 9
    # backward induction over the shared format
    value_next = graphs[5].terminal_reward.clone()
    for g in reversed(graphs):
        values = g.terminal_reward + (value_next[g.next_root.clamp(min=0)]
                                      if g.round_index < 5 else 0)
        for level in range(7, -1, -1):
            q = g.edge_reward[level] + values[g.edge_child[level]]
            v = torch.empty(g.num_nodes[level], dtype=q.dtype)
            v.scatter_reduce_(0, g.edge_parent[level], q,
                              reduce="amax" if level % 2 == 0 else "amin", include_self=False)
            values = v
        value_next = values
    sol = solve_exact(deal)
    assert int(value_next[0]) == sol.value
    assert [n for g in graphs for n in g.num_nodes[:8]] == sol.states_per_level[:-1]
    # the node state of the root is the initial position
    root = graphs[0].node_state[0]
    pool = sum(1 << c for c in deal[:4])
    assert int(root["pool"][0]) == pool
    assert int(root["alex_hand"][0]) == sum(1 << c for c in deal[4:8])
    assert int(root["bob_hand"][0]) == sum(1 << c for c in deal[8:12])
    assert int(root["last_capturer"][0]) == -1
    assert int(root["alex_clubs"][0]) == 0
    end = graphs[5].node_state[8]
    assert int(end["alex_hand"].abs().sum()) == 0


# --------------------------------------------------------------------------- CLI

def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tensorcfr.cli.main", "pasur", "solve", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_cli_seed_json() -> None:
    proc = cli("pasur", "solve", "--seed", "1", "--json")  # in-process: stdout is the JSON only
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0])
    for key in ("deal", "value", "states_per_round", "seconds", "peak_rss_mb",
                "principal_line", "threads"):
        assert key in out
    assert out["deal"] == list(rules.random_deal(1))
    assert len(out["states_per_round"]) == 6
    assert rules.utility(replay_record(out["principal_line"])) == out["value"]


def _check_one_line_error(code: int, stderr: str, needle: str, context: object) -> None:
    assert code == 2, (context, stderr)
    err = stderr.strip()
    assert len(err.splitlines()) == 1, (context, err)
    assert needle in err, (context, err)
    assert "Traceback" not in stderr


def test_cli_errors_in_a_subprocess() -> None:
    """One error through a real interpreter (exit code 2, one line, no traceback, nothing on
    stdout), another through the entry point in-process."""
    for args, needle, run in (((), "--seed", run_cli),
                              (("--deal", "Ac As 9d Kd"), "52 cards",
                               lambda *a: cli("pasur", "solve", *a))):
        proc = run(*args)
        _check_one_line_error(proc.returncode, proc.stderr, needle, args)
        assert proc.stdout == ""


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tensorcfr.cli.main import app

    bad_json = tmp_path / "bad.json"
    bad_json.write_text("[1, 2, 3")
    short = tmp_path / "short.json"
    short.write_text(json.dumps(list(range(51))))
    jack_pool = tmp_path / "jack.txt"
    deal = list(rules.random_deal(3))
    jack_pool.write_text(" ".join(rules.card_code(c) for c in [40] + [c for c in deal if c != 40][:51]))
    cases = [
        (("--deal", "Zz " * 52), "is not a card"),
        (("--deal-file", str(bad_json)), "not valid JSON"),
        (("--deal-file", str(short)), "52 cards"),
        (("--deal-file", str(jack_pool)), "Jack"),
        (("--deal-file", str(tmp_path / "missing.txt")), "missing.txt"),
        (("--seed", "1", "--deal", "Ac"), "only one"),
        (("--seed", "1", "--max-memory", "64K"), "limit"),
        (("--seed", "1", "--max-memory", "lots"), "memory size"),
        (("--seed", "1", "--iterations", "0"), "--iterations"),
        (("--seed", "1", "--mode", "graph"), "--mode"),
        (("--seed", "1", "--method", "magic"), "--method"),
    ]
    runner = CliRunner()
    for args, needle in cases:
        result = runner.invoke(app, ["pasur", "solve", *args])
        _check_one_line_error(result.exit_code, result.stderr, needle, args)


def test_cli_text_and_out_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tensorcfr.cli.main import app

    deal_file = tmp_path / "deal.json"
    deal_file.write_text(json.dumps(list(rules.random_deal(3))))
    result = CliRunner().invoke(app, ["pasur", "solve", "--deal-file", str(deal_file),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.stderr
    sol = solve_exact(rules.random_deal(3))
    assert f"{sol.value:+d}" in result.stdout
    assert "principal line" in result.stdout and "states per round" in result.stdout
    record = json.loads((tmp_path / "out" / "principal_line.json").read_text())
    assert rules.utility(replay_record(record)) == sol.value
    summary = json.loads((tmp_path / "out" / "exact_solution.json").read_text())
    assert summary["value"] == sol.value


def test_cli_dcfr_is_delegated(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tensorcfr.cli.main import app
    from tensorcfr.games.pasur.solving import dcfr_run

    calls: list[dcfr_run.DcfrSettings] = []
    monkeypatch.setattr(dcfr_run, "run_dcfr",
                        lambda settings, on_progress=None: calls.append(settings) or {})
    result = CliRunner().invoke(app, ["pasur", "solve", "--seed", "3", "--method", "dcfr",
                                      "--iterations", "7", "--mode", "tree", "--json"])
    assert result.exit_code == 0, result.stderr
    assert len(calls) == 1
    settings = calls[0]
    assert settings.deal == rules.random_deal(3) and settings.iterations == 7
    assert settings.mode == "tree" and settings.variant == "dcfr" and settings.seed == 3
    assert settings.out is None and not settings.convergence and settings.device == "cpu"
    assert settings.threads == 1 and settings.max_memory > 0



# --------------------------------------------------------------------------- batched solves

def _determinizations(seed: int, play: int, count: int) -> list[rules.GameState]:
    from tensorcfr.games.pasur.engine.determinize import sample_states
    from tensorcfr.games.pasur.engine.observation import observe

    state = random_position(seed, play)
    return sample_states(observe(state, state.player), count, seed)


@pytest.mark.parametrize("seed,play", [(2, 27), (4, 35), (7, 38), (9, 30)])
def test_batched_determinizations_match_one_solve_each(seed: int, play: int) -> None:
    states = _determinizations(seed, play, 12)
    assert len({s.deal for s in states}) > 1  # different hidden cards
    many = action_values_many(states)
    for state, values in zip(states, many):
        assert values == solve_exact(state).action_values(state)
        assert [a for a, _ in values] == rules.legal_actions(state)


def test_batched_small_late_states_match_memoised_minimax() -> None:
    states = _determinizations(11, 42, 6) + [random_position(s, 44 + s % 3) for s in range(5)]
    many = action_values_many(states)
    for state, values in zip(states, many):
        want = []
        for action in rules.legal_actions(state):
            want.append((action, memoised_minimax(rules.apply_action(state, action))))
        assert values == want


def test_batches_split_by_play_and_capacity() -> None:
    early = _determinizations(3, 0, 3)  # nothing captured yet: 2 per pass
    assert batch_capacity(early) == 2
    mixed = early + [rules.initial_state(rules.random_deal(5)), random_position(6, 40)]
    finished = random_position(8, 48)
    many = action_values_many(mixed + [finished])
    assert many[-1] == []
    for state, values in zip(mixed, many):
        assert values == solve_exact(state).action_values(state)


def test_unique_inverse_matches_numpy_on_wide_values() -> None:
    import numpy as np

    from tensorcfr.games.pasur.solving.exact_keys import unique_inverse

    rng = np.random.default_rng(5)
    for n, bits in ((1, 3), (50, 8), (5000, 53), (70000, 62)):
        half = rng.integers(0, 1 << bits, n // 2 + 1)
        values = np.concatenate([half, half])[:n]
        rng.shuffle(values)
        unique, inverse = unique_inverse(values)
        want_unique, want_inverse = np.unique(values, return_inverse=True)
        assert (unique == want_unique).all() and (inverse == want_inverse).all()
