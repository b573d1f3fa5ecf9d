"""CFR-BR floors and checkpoint/resume of abstract solves (tiny Numeral211 decks)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tensorcfr.abstraction.cfr_br import CFRBR, best_response_policy
from tensorcfr.core.public_tree import public_best_response
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.solving.abstract_solve import (abstract_solver, bucket_embeddings,
                                                               lossless_embeddings, run_abstract)
from tensorcfr.games.numeral211.abstraction.abstractions import build_abstraction
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.solving.floor import cfr_br_floor

from _cli_helpers import run_cli

TINY = GameConfig(ranks="9TA", suits=2, max_bets=(1, 1, 1))  # 6 cards: every card dealt


@pytest.fixture(scope="module")
def game():
    return n211.build_game(TINY, dtype=torch.float64)


def test_best_response_policy_is_a_best_response(game) -> None:
    policy = n211.random_symmetric_policy(game, seed=3)
    for player in (0, 1):
        value, profile = best_response_policy(game, policy, player)
        assert value == pytest.approx(public_best_response(game, policy, player), abs=1e-12)
        # the returned pure strategy achieves the value against the other's strategy
        ex = n211.exploitability(game, profile, symmetrize=False)
        assert ex.policy_values[player] == pytest.approx(value, abs=1e-9)
        # the other player's strategy is untouched
        tmpl = game.rounds
        for r, (p_in, p_out) in enumerate(zip(policy, profile)):
            for j, (o, a) in enumerate(zip(tmpl[r].slot_offsets, tmpl[r].num_actions)):
                block = p_out[o:o + a]
                if tmpl[r].players[j] != player:
                    assert torch.equal(block, p_in[o:o + a])
                else:
                    assert torch.equal(block.sum(0), torch.ones_like(block[0]))
                    assert bool(((block == 0) | (block == 1)).all())


def test_lossless_floor_tends_to_zero(game) -> None:
    """One bucket per class: the full game's equilibrium is expressible, so the floor falls
    towards 0 (CFR-BR's O(1/sqrt(T)) rate); the floor profile's exploitability is the
    reported floor."""
    result = cfr_br_floor(game, lossless_embeddings(game), 40, eval_every=10, algo="cfr+")
    averages = [p["average_mbg"] for p in result["curve"]]
    assert [p["iteration"] for p in result["curve"]] == [10, 20, 30, 40]
    assert averages[-1] < 0.6 * averages[0], averages
    assert averages[-1] < averages[1] < averages[0], averages
    assert result["floor_mbg"] <= result["average_mbg"] + 1e-9
    assert result["floor"] > 0  # CFR-BR bounds the floor from above
    cfr_br = result["cfr_br"]
    floor = cfr_br.floor()
    assert floor.floor == pytest.approx(result["floor"], abs=1e-12)
    ex = n211.exploitability(game, cfr_br.floor_policy(floor), symmetrize=False)
    assert ex.exploitability == pytest.approx(result["floor"], abs=1e-9)
    assert ex.best_response_values[1] == pytest.approx(floor.seats[0].value, abs=1e-9)


def test_floor_below_the_abstract_cfr_solution(game) -> None:
    """A one-bucket abstraction: the least exploitable strategy it expresses (CFR-BR) is far
    below its abstract game's CFR solution (an abstraction pathology)."""
    embeddings = bucket_embeddings(game, build_abstraction(TINY, "ehs", 1, 1))
    floor = cfr_br_floor(game, embeddings, 20, eval_every=20, algo="cfr+")
    solver = abstract_solver(game, embeddings, algo="cfr+")
    curve = run_abstract(game, solver, 20, eval_every=20)
    assert floor["floor"] < 0.75 * curve[-1]["exploitability"]
    assert floor["seats"][0]["used"] in ("average", "current")
    with pytest.raises(Exception, match="at least one iteration"):
        CFRBR(abstract_solver(game, embeddings)).floor()


def _clone_state(solver):
    return {k: v.copy() for k, v in solver.state_arrays().items()}


@pytest.mark.parametrize("averaging", ["reach", "uniform"])
def test_abstract_cfr_resume_is_bitwise(game, averaging) -> None:
    embeddings = bucket_embeddings(game, build_abstraction(TINY, "krwemd", 3, 4))
    straight = abstract_solver(game, embeddings, algo="cfr", averaging=averaging)
    straight.iterate(6)
    first = abstract_solver(game, embeddings, algo="cfr", averaging=averaging)
    first.iterate(3)
    state, it = _clone_state(first), first.iteration
    resumed = abstract_solver(game, embeddings, algo="cfr", averaging=averaging)
    resumed.load_state_arrays(state, it)
    resumed.iterate(3)
    assert resumed.iteration == 6
    for a, b in zip(straight.state_arrays().values(), resumed.state_arrays().values()):
        assert np.array_equal(a, b)
    for a, b in zip(straight.average_policy(), resumed.average_policy()):
        assert torch.equal(a, b)


def test_cfr_br_resume_is_bitwise(game) -> None:
    embeddings = bucket_embeddings(game, build_abstraction(TINY, "ehs", 2, 3))
    straight = CFRBR(abstract_solver(game, embeddings, algo="cfr+"))
    straight.iterate(5)
    first = CFRBR(abstract_solver(game, embeddings, algo="cfr+"))
    first.iterate(2)
    arrays = {**first.solver.state_arrays(), **first.state_arrays()}
    resumed = CFRBR(abstract_solver(game, embeddings, algo="cfr+"))
    resumed.solver.load_state_arrays(arrays, 2)
    resumed.load_state_arrays(arrays)
    resumed.iterate(3)
    for a, b in zip(straight.solver.state_arrays().values(),
                    resumed.solver.state_arrays().values()):
        assert np.array_equal(a, b)
    assert straight.best_current == resumed.best_current
    assert straight.current_values == resumed.current_values
    assert straight.floor().floor == resumed.floor().floor


def test_cli_cfr_br_floor_and_resume(tmp_path, capsys, monkeypatch) -> None:
    bmap = tmp_path / "ehs.npz"
    build_abstraction(TINY, "ehs", 2, 3).save(bmap)
    base = ["numeral211", "solve", "--abstraction", str(bmap), "--ranks", "9TA", "--suits",
            "2", "--max-bets", "1", "--cfr-br", "--eval-every", "2", "--json"]
    code, out, err = run_cli([*base, "-n", "4", "--out", str(tmp_path / "floor.npz"),
                              "--curve", str(tmp_path / "c.json"),
                              "--plot", str(tmp_path / "c.png")], capsys, monkeypatch)
    assert code == 0, err
    full = json.loads(out)
    assert full["solver"] == "cfr-br" and full["algo"] == "cfr+"
    assert [p["iteration"] for p in full["curve"]] == [2, 4]
    assert full["floor"] == full["exploitability"] > 0
    assert {"average", "current", "best_current", "used"} <= set(full["seats"][0])
    assert (tmp_path / "c.png").stat().st_size > 0
    code, out, _ = run_cli(["numeral211", "exploitability", str(tmp_path / "floor.npz"),
                            "--json"], capsys, monkeypatch)
    assert json.loads(out)["exploitability"] == pytest.approx(full["floor"], rel=1e-5)
    ck = tmp_path / "ck.npz"
    code, _, err = run_cli([*base, "-n", "2", "--save", str(ck)], capsys, monkeypatch)
    assert code == 0, err
    code, out, err = run_cli([*base, "-n", "4", "--resume", str(ck)], capsys, monkeypatch)
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["resumed_from"] == 2 and "resumed from" in err
    assert resumed["floor"] == full["floor"] and resumed["seats"] == full["seats"]
    assert [p["average"] for p in resumed["curve"]] == [p["average"] for p in full["curve"]]
    # a CFR-BR checkpoint is not a CFR one
    code, _, err = run_cli(["numeral211", "solve", "--abstraction", str(bmap), "-n", "4",
                            "--resume", str(ck)], capsys, monkeypatch)
    assert code == 2 and "--cfr-br" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["abstraction", "embedding"])
def test_cli_abstract_solve_resume_is_bitwise(kind, tmp_path, capsys, monkeypatch) -> None:
    path = tmp_path / f"{kind}.npz"
    if kind == "abstraction":
        build_abstraction(TINY, "paemd", 2, 3).save(path)
        extra: list[str] = ["--algo", "cfr"]
    else:
        from tensorcfr.games.numeral211.abstraction.embedding_net import (save_embedding,
                                                                          train_embedding)

        save_embedding(path, train_embedding(TINY, 3, 4, epochs=2, target="hist"))
        extra = ["--algo", "cfr", "--averaging", "uniform", "--phi-top", "2"]
    base = ["numeral211", "solve", f"--{kind}", str(path), "--ranks", "9TA", "--suits", "2",
            "--max-bets", "1", *extra, "--eval-every", "3", "--json"]
    code, out, err = run_cli([*base, "-n", "6", "--out", str(tmp_path / "a.npz")], capsys,
                             monkeypatch)
    assert code == 0, err
    straight = json.loads(out)
    ck = tmp_path / "ck.npz"
    code, out, err = run_cli([*base, "-n", "3", "--save", str(ck)], capsys, monkeypatch)
    assert code == 0, err
    code, out, err = run_cli([*base, "-n", "6", "--resume", str(ck), "--save", str(ck),
                              "--out", str(tmp_path / "b.npz")], capsys, monkeypatch)
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["iterations"] == 6 and resumed["iterations_run"] == 3
    assert [p["exploitability"] for p in resumed["curve"]] == \
        [p["exploitability"] for p in straight["curve"]]
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    for key in a.files:
        if key != "meta":
            assert np.array_equal(a[key], b[key]), key
    # resuming with other options or another file: one line, exit 2
    other = tmp_path / "other.npz"
    build_abstraction(TINY, "ehs", 2, 2).save(other)
    for args, fragment in (
            (["numeral211", "solve", "--abstraction", str(other), "--algo", "cfr", "-n", "8",
              "--resume", str(ck)], "another abstraction"),
            ([*base[:-3], "--algo", "cfr+", "-n", "8", "--resume", str(ck)], "--algo"),
            ([*base, "-n", "8", "--resume", str(tmp_path / "a.npz")], "not a")):
        code, _, err = run_cli(args, capsys, monkeypatch)
        assert code == 2 and fragment in err, (args, err)
        assert len(err.strip().splitlines()) == 1


def test_cli_cfr_br_needs_an_abstraction(capsys, monkeypatch) -> None:
    code, _, err = run_cli(["numeral211", "solve", "--ranks", "9TA", "--suits", "2",
                            "--cfr-br", "-n", "1"], capsys, monkeypatch)
    assert code == 2 and "--cfr-br needs --abstraction" in err


@pytest.mark.parametrize("option", ["--alpha", "--beta", "--gamma"])
def test_cli_dcfr_parameters_refused_with_an_abstraction(option, tmp_path, capsys,
                                                         monkeypatch) -> None:
    """An abstract solve runs cfr or cfr+: a DCFR parameter is refused, not dropped."""
    bucket_map = tmp_path / "map.npz"
    bucket_map.write_bytes(b"unread")
    code, _, err = run_cli(["numeral211", "solve", "--abstraction", str(bucket_map),
                            option, "1", "-n", "1"], capsys, monkeypatch)
    assert code == 2 and "--alpha/--beta/--gamma apply to --algo dcfr" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args, fragment", [
    (["--method", "paemd", "--feature", "ehs2"], "--feature applies to --method ehs"),
    (["--method", "ehs", "--feature", "ehs3"], "unknown --feature"),
    (["--method", "ehs", "--hist-turn", "5"], "--hist-turn applies to --method paemd"),
    (["--method", "paemd", "--hist-turn", "999"], "histogram turn clusters"),
])
def test_cli_abstract_option_errors(args, fragment, tmp_path, capsys, monkeypatch) -> None:
    code, _, err = run_cli(["numeral211", "abstract", *args, "--ranks", "9TA", "--suits", "2",
                            "--flop", "2", "--turn", "3", "--out", str(tmp_path / "x.npz")],
                           capsys, monkeypatch)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_ehs2_and_hist_turn_options() -> None:
    """E[HS^2] orders turn classes as the equity does (a square is monotone) and PaEmd's
    histogram clusters change the flop buckets only."""
    from tensorcfr.games.numeral211.abstraction.abstractions import round_ehs2, round_equity

    assert np.allclose(round_ehs2(TINY, 2), round_equity(TINY, 2) ** 2)
    assert (round_ehs2(TINY, 1) >= round_equity(TINY, 1) ** 2 - 1e-12).all()  # Jensen
    deck = GameConfig(ranks="2345", suits=4)  # 1,180 turn classes
    base = build_abstraction(deck, "paemd", 5, 8)
    finer = build_abstraction(deck, "paemd", 5, 8, hist_turn=40)
    assert np.array_equal(base.labels[2], finer.labels[2])
    assert finer.params["hist_turn"] == 40 and base.params["hist_turn"] == 8
    assert not np.array_equal(base.labels[1], finer.labels[1])


def test_cli_abstract_resume_keeps_the_sampling_mode(tmp_path, capsys, monkeypatch) -> None:
    bmap = tmp_path / "ehs.npz"
    build_abstraction(TINY, "ehs", 2, 3).save(bmap)
    ck = tmp_path / "ck.npz"
    base = ["numeral211", "solve", "--abstraction", str(bmap), "--ranks", "9TA", "--suits", "2",
            "--max-bets", "1", "--algo", "cfr", "--json"]
    code, _, err = run_cli([*base, "-n", "2", "--save", str(ck), "--sample-boards", "1",
                            "--seed", "3"], capsys, monkeypatch)
    assert code == 0, err
    for extra in ([], ["--sample-boards", "1", "--seed", "4"]):
        code, _, err = run_cli([*base, "-n", "3", "--resume", str(ck), *extra], capsys,
                               monkeypatch)
        assert code == 2 and "--sample-boards" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli([*base, "-n", "3", "--resume", str(ck), "--sample-boards", "1",
                              "--seed", "3"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["resumed_from"] == 2
