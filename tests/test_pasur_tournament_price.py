"""The price of hidden information by round and seat (``pasur tournament --price``, ``pasur
tournament-price``): plays recorded by the tournament, the telescoping identity per game,
the aggregates against the tournament's own prices, resume, old folders and bad input."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.solving.double_dummy import DoubleDummySolver, dd_value
from tensorcfr.games.pasur.solving.exact import solve_exact
from tensorcfr.games.pasur.tournament import (TournamentSettings, play_codes,
                                              plays_from_codes, run_tournament)
from tensorcfr.games.pasur.tournament_price import (PriceSettings, game_losses,
                                                    position_values, price_settings_for,
                                                    run_price_analysis)

pytestmark = pytest.mark.usefixtures("one_thread")
runner = CliRunner()
AGENTS = ("random", "greedy", "hidden-model")
DEALS = 2


@pytest.fixture(scope="module")
def priced(tmp_path_factory):
    """A finished in-process tournament of two deals, then its analysis (as --price)."""
    out = tmp_path_factory.mktemp("price") / "run"
    settings = TournamentSettings(agents=AGENTS, out=out, deals=DEALS, seed=7, in_process=True)
    result = run_tournament(settings)
    return out, result, run_price_analysis(price_settings_for(settings))


def _rows(path):
    return pq.read_table(str(path)).to_pylist()


def _copy(priced, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(priced[0], out)
    return out


# --------------------------------------------------------------------------- plays


def test_play_codes_round_trip_and_refuse_what_is_no_play():
    state = rules.play_game(rules.random_deal(5), lambda s, actions: actions[-1])
    codes = play_codes(state.history)
    assert len(codes) == rules.NUM_PLAYS and all(isinstance(c, int) and c >= 0 for c in codes)
    assert plays_from_codes(codes) == state.history
    for bad in (-1, 52, 63, 5 | 1 << (6 + 52)):  # a card or a captured card past 51
        with pytest.raises(ValueError, match="is not a play code"):
            plays_from_codes([bad])


def test_the_tournament_records_every_game_s_plays(priced):
    out = priced[0]
    games = _rows(out / "games.parquet")
    assert len(games) == 3 * DEALS * 2
    for g in games:
        final = rules.initial_state(g["deal_cards"])
        for play in plays_from_codes(g["play_codes"]):
            final = rules.apply_action(final, play)  # legal, in order
        assert final.is_terminal and rules.utility(final) == g["utility"]


# --------------------------------------------------------------------------- one game


def _positions(deal, plays):
    states = [rules.initial_state(deal)]
    for play in plays:
        states.append(rules.apply_action(states[-1], play))
    return states


def test_position_values_are_the_exact_solver_s_and_losses_telescope():
    deal = rules.random_deal(11)
    state = rules.play_game(deal, lambda s, actions: actions[len(actions) // 2])
    values = position_values(deal, state.history)
    assert len(values) == rules.NUM_PLAYS + 1 and values[-1] == rules.utility(state)
    position = rules.initial_state(deal)
    for k, play in enumerate(state.history):
        if k >= 36:  # the exact solver is quick from round 5 on
            assert values[k] == solve_exact(position).value
        position = rules.apply_action(position, play)
    # one table generation for the whole game gives what a fresh search of each position gives
    assert values == [dd_value(s) for s in _positions(deal, state.history)]
    alex, bob = game_losses(values)
    assert min(alex + bob) >= 0  # nobody gains against open-hands play
    assert sum(alex) - sum(bob) == values[0] - values[-1]
    with pytest.raises(ValueError, match="play 0 .* is illegal"):
        position_values(deal, [rules.Action(deal[-1], ())])


def test_the_telescoping_identity_on_every_analysed_game(priced):
    out, _, price = priced
    games = {(g["a"], g["b"], g["deal"], g["seating"]): g for g in _rows(out / "games.parquet")}
    analysed = _rows(out / "price_games.parquet")
    assert len(analysed) == len(games) and all(r["status"] == "ok" for r in analysed)
    for r in analysed:
        g = games[(r["a"], r["b"], r["deal"], r["seating"])]
        assert r["values"][0] == r["exact_value"] == g["exact_value"]
        assert r["values"][-1] == r["utility"] == g["utility"]
        assert len(r["alex_loss"]) == len(r["bob_loss"]) == rules.NUM_ROUNDS
        assert min(r["alex_loss"] + r["bob_loss"]) >= 0
        # Alex's losses minus Bob's = the deal's exact value minus the result = Alex's price
        assert r["alex_loss_total"] - r["bob_loss_total"] == g["alex_price"]
        assert r["alex_loss_total"] == sum(r["alex_loss"])
    assert price.games == len(games) and price.failed == 0 and price.mode == "in-process"
    assert price.seconds_per_game > 0


def test_the_aggregates_add_up_to_the_tournament_s_prices(priced):
    out, result, price = priced
    by_pair = {(p.a, p.b): p for p in result.pairs}
    for (a, b), pair in by_pair.items():
        for agent, rival in ((a, b), (b, a)):
            for seat, key in (("alex", "as_alex"), ("bob", "as_bob")):
                whole = price.row(agent, seat, None, rival)
                assert whole["deals"] == DEALS and whole["games"] == DEALS
                assert whole["price_mean"] == pytest.approx(pair.price[agent][key])
                rounds = [price.row(agent, seat, r, rival) for r in range(1, 7)]
                assert sum(r["loss_mean"] for r in rounds) == pytest.approx(whole["loss_mean"])
                assert sum(r["price_mean"] for r in rounds) == \
                    pytest.approx(whole["price_mean"])
    # every rival pooled: each deal's games averaged, then the mean over deals
    analysed = _rows(out / "price_games.parquet")
    mine = [r for r in analysed if r["alex"] == "greedy"]
    per_deal = [sum(r["alex_loss"][2] for r in mine if r["deal"] == d) / 2 for d in range(2)]
    row = price.row("greedy", "alex", 3)
    assert row["games"] == 4 and row["deals"] == 2
    assert row["loss_mean"] == pytest.approx(sum(per_deal) / 2)
    assert row["loss_ci95_low"] <= row["loss_mean"] <= row["loss_ci95_high"]
    table = _rows(out / "price_by_round.parquet")
    assert len(table) == 3 * 3 * 3 * 7  # agents x (2 rivals + all) x seats x (6 rounds + all)
    assert {r["round"] for r in table} == {1, 2, 3, 4, 5, 6, None}


# --------------------------------------------------------------------------- resume


def test_a_rerun_analyses_only_what_it_lacks(priced, tmp_path):
    out = _copy(priced, tmp_path)
    journal = out / "price.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:3] + ['{"id": "game/x", "crc": 1, "status": "ok", '
                                              '"values": "lots"}'] + lines[5:]) + "\n"
                       + '{"id": "game/random/gr')  # a garbled row and a torn last line
    notes = []
    result = run_price_analysis(PriceSettings(run=out),
                                on_progress=lambda p: notes.append(p.notice))
    assert result.computed == 2 and result.skipped == len(lines) - 2
    assert any(n and "torn last line" in n for n in notes)
    assert any(n and "skipped 1 unreadable line(s) (4)" in n for n in notes)
    assert _rows(out / "price_games.parquet") == _drop_seconds(priced[0], out)
    again = run_price_analysis(PriceSettings(run=out))
    assert again.computed == 0 and again.rows == priced[2].rows


def _drop_seconds(reference, out):
    """The reference's price_games rows with the copy's seconds (timing differs)."""
    seconds = {(r["a"], r["b"], r["deal"], r["seating"]): r["seconds"]
               for r in _rows(out / "price_games.parquet")}
    return [r | {"seconds": seconds[(r["a"], r["b"], r["deal"], r["seating"])]}
            for r in _rows(reference / "price_games.parquet")]


def test_local_processes_give_the_in_process_values(priced, tmp_path):
    out = _copy(priced, tmp_path)
    (out / "price.jsonl").unlink()
    result = run_price_analysis(PriceSettings(run=out, processes=1))
    assert (result.mode, result.workers, result.computed) == ("processes", 1, 12)
    assert _rows(out / "price_games.parquet") == _drop_seconds(priced[0], out)


def test_an_old_folder_without_plays_resumes_and_is_refused_by_the_analysis(priced, tmp_path):
    out = _copy(priced, tmp_path)
    journal = out / "games.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    journal.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "play_codes"})
                               + "\n" for r in rows))  # as an older version wrote it
    before = _rows(out / "summary.parquet")
    again = run_tournament(TournamentSettings(agents=AGENTS, out=out, deals=DEALS, seed=7,
                                              in_process=True))
    assert again.computed == 0  # nothing is played again for its plays
    assert _rows(out / "summary.parquet") == before
    assert all(g["play_codes"] is None for g in _rows(out / "games.parquet"))
    table = pq.read_table(str(out / "games.parquet"))  # and a table without the column
    pq.write_table(table.drop(["play_codes"]), str(out / "games.parquet"))
    res = runner.invoke(app, ["pasur", "tournament-price", "--run", str(out)])
    assert res.exit_code == 2 and "has its plays recorded" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
    # a folder where some games have plays: those are analysed, the others counted
    rows[1].pop("play_codes")
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_tournament(TournamentSettings(agents=AGENTS, out=out, deals=DEALS, seed=7,
                                      in_process=True))
    notes = []
    result = run_price_analysis(PriceSettings(run=out), on_progress=lambda p: notes.append(
        p.notice))
    assert result.without_plays == 1 and result.games == 11
    assert any(n and "1 of the 12 finished games have no recorded plays" in n for n in notes)


def test_a_game_that_does_not_replay_is_an_error_row(priced, tmp_path):
    out = _copy(priced, tmp_path)
    (out / "price.jsonl").unlink()
    table = pq.read_table(str(out / "games.parquet")).to_pylist()
    table[0]["play_codes"] = list(reversed(table[0]["play_codes"]))
    table[1]["utility"] += 1
    schema = pq.read_schema(str(out / "games.parquet"))
    pq.write_table(pa.Table.from_pylist(table, schema=schema), str(out / "games.parquet"))
    result = run_price_analysis(PriceSettings(run=out))
    assert result.failed == 2 and result.games == 10
    errors = [r["error"] for r in _rows(out / "price_games.parquet") if r["status"] != "ok"]
    assert "is illegal" in errors[0] and "the tournament recorded" in errors[1]


# --------------------------------------------------------------------------- command line


def test_cli_json(priced):
    out = priced[0]
    res = runner.invoke(app, ["pasur", "tournament-price", "--run", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["games"] == 12 and data["computed"] == 0 and data["skipped"] == 12
    assert len(data["by_round"]) == 189 and data["seconds_per_game"] > 0
    res = runner.invoke(app, ["pasur", "tournament-price", "--run", str(out)])
    assert res.exit_code == 0 and "round 6" in res.stdout and "price bob" in res.stdout


def test_cli_tournament_with_price(tmp_path):
    out = tmp_path / "t"
    res = runner.invoke(app, ["pasur", "tournament", "--agents", "random,greedy", "--deals",
                              "1", "--seed", "3", "--in-process", "--price", "--json",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["price"]["games"] == 2 and data["pairs"][0]["deals"] == 1
    assert (out / "price_by_round.parquet").exists()


def test_cli_bad_input(priced, tmp_path):
    def error(args):
        res = runner.invoke(app, ["pasur", "tournament-price", *args])
        assert res.exit_code == 2, res.output
        assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
        return res.output

    assert "does not exist" in error(["--run", str(tmp_path / "missing")])
    assert "not a tournament folder" in error(["--run", str(tmp_path)])
    (tmp_path / "t").mkdir()
    shutil.copy(priced[0] / "tournament.json", tmp_path / "t" / "tournament.json")
    assert "no games.parquet yet" in error(["--run", str(tmp_path / "t")])
    (tmp_path / "t" / "games.parquet").write_bytes(b"PAR1 not parquet")
    assert "damaged" in error(["--run", str(tmp_path / "t")])
    (tmp_path / "t" / "tournament.json").write_text('{"format": "other"}')
    assert "is not a tournament identity" in error(["--run", str(tmp_path / "t")])
    assert "--processes" in error(["--run", str(priced[0]), "--processes", "4096"])
    with pytest.raises(TensorCFRError, match="--processes must be between 0"):
        PriceSettings(run=tmp_path, processes=-1)


def test_values_of_deal_refuses_positions_of_two_deals():
    a, b = (rules.initial_state(rules.random_deal(s)) for s in (1, 2))
    with pytest.raises(ValueError, match="one deal"):
        DoubleDummySolver().values_of_deal([a, b])
    assert DoubleDummySolver().values_of_deal([]) == []


def test_paired_differences_against_the_same_rival(priced):
    out, _, price = priced
    analysed = _rows(out / "price_games.parquet")

    def losses(agent, rival, deal, round_index):
        own = [(r["alex_loss"] if r["alex"] == agent else r["bob_loss"])[round_index]
               for r in analysed if {r["alex"], r["bob"]} == {agent, rival} and r["deal"] == deal]
        assert len(own) == 2  # both seatings
        return sum(own) / 2

    rows = {(r["agent"], r["other"], r["rival"], r["round"]): r for r in price.paired}
    assert len(rows) == 3 * 7  # one (A, B) per rival of three agents, 6 rounds + whole game
    row = rows[("random", "greedy", "hidden-model", 4)]
    diffs = [losses("random", "hidden-model", d, 3) - losses("greedy", "hidden-model", d, 3)
             for d in range(DEALS)]
    assert row["deals"] == DEALS and row["diff_mean"] == pytest.approx(sum(diffs) / DEALS)
    whole = rows[("random", "greedy", "hidden-model", None)]
    assert whole["diff_mean"] == pytest.approx(sum(
        rows[("random", "greedy", "hidden-model", r)]["diff_mean"] for r in range(1, 7)))
    assert _rows(out / "price_paired.parquet") == price.paired
