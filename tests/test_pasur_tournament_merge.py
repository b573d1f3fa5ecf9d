"""`pasur tournament-merge`: several tournament folders as one table (pooled deals, pairs turned
round, shared deals counted once, options that differ refused), and their analyses of where the
agents lose points merged by the same rules."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _cli_helpers import cli
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AGENTS
from tensorcfr.games.pasur.tournament import (TournamentSettings, duplicate_interval,
                                              run_tournament)
from tensorcfr.games.pasur.tournament_merge import MergeSettings, merge_tournaments
from tensorcfr.games.pasur.tournament_price import PriceSettings, run_price_analysis

pytestmark = pytest.mark.usefixtures("one_thread")


def _run(out, agents, deals, seed, price=False):
    run_tournament(TournamentSettings(agents=agents, out=out, deals=deals, seed=seed,
                                      in_process=True))
    if price:  # where each agent loses points (price_games.parquet and the aggregates)
        run_price_analysis(PriceSettings(run=out))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("merge")
    return {"a": _run(base / "a", ("greedy", "random"), 3, 0, price=True),
            # the pair turned round
            "b": _run(base / "b", ("random", "greedy"), 3, 100, price=True),
            "c": _run(base / "c", ("greedy", "random"), 2, 1),  # deals 1-2: a's deals 1-2
            # three agents, two pairs of them met in no other folder
            "d": _run(base / "d", ("greedy", "random", "distilled"), 3, 200, price=True)}


def _deal_diffs(folder, flip=False):
    rows = pq.read_table(folder / "games.parquet").to_pylist()
    by_deal = {}
    for r in rows:
        by_deal.setdefault(r["deal"], []).append(r["a_diff"])
    sign = -1 if flip else 1
    return [sign * sum(d) / 2 for _, d in sorted(by_deal.items())]


def test_one_folder_gives_its_own_summary(runs):
    merged = merge_tournaments(MergeSettings(runs=(runs["a"],)))
    own = pq.read_table(runs["a"] / "summary.parquet").to_pylist()[0]
    (pair,) = merged.pairs
    assert (pair.a, pair.b, pair.deals) == (own["a"], own["b"], own["deals"]) == \
        ("greedy", "random", 3)
    assert pair.mean_diff == pytest.approx(own["mean_diff"], abs=1e-12)
    assert pair.ci95 == pytest.approx((own["ci95_low"], own["ci95_high"]), abs=1e-12)
    assert merged.sources[("greedy", "random")] == [str(runs["a"])]
    assert merged.options[("greedy", "random")] == {"greedy": {}, "random": {}}


def test_a_pair_turned_round_pools_its_deals(runs):
    merged = merge_tournaments(MergeSettings(runs=(runs["a"], runs["b"])))
    (pair,) = merged.pairs
    assert (pair.a, pair.b, pair.deals, pair.games) == ("greedy", "random", 6, 12)
    expected = _deal_diffs(runs["a"]) + _deal_diffs(runs["b"], flip=True)
    mean, interval, sd = duplicate_interval(expected)
    assert pair.mean_diff == pytest.approx(mean, abs=1e-12)
    assert pair.ci95 == pytest.approx(interval, abs=1e-12)
    assert pair.sd_diff == pytest.approx(sd, abs=1e-12)
    # turned the other way round, the same statistics with the sign changed
    back = merge_tournaments(MergeSettings(runs=(runs["b"], runs["a"]))).pairs[0]
    assert (back.a, back.b, back.deals) == ("random", "greedy", 6)
    assert back.mean_diff == pytest.approx(-mean, abs=1e-12)
    assert back.price["random"] == pytest.approx(pair.price["random"])


def test_a_deal_two_folders_played_counts_once(runs):
    merged = merge_tournaments(MergeSettings(runs=(runs["a"], runs["c"])))
    (pair,) = merged.pairs
    assert pair.deals == 3  # c's two deals are a's deals 1 and 2
    assert merged.sources[("greedy", "random")] == [str(runs["a"])]
    own = merge_tournaments(MergeSettings(runs=(runs["a"],))).pairs[0]
    assert pair.mean_diff == own.mean_diff


def _relabel(src, dst, agent, seconds):
    """A copy of tournament ``src`` with ``random`` renamed ``agent`` and the given budget
    (the merge reads names and options only; the games stay what they were)."""
    shutil.copytree(src, dst)
    identity = json.loads((dst / "tournament.json").read_text())
    identity["agents"] = [agent if a == "random" else a for a in identity["agents"]]
    identity["seconds_per_move"] = seconds
    (dst / "tournament.json").write_text(json.dumps(identity))
    table = pq.read_table(dst / "games.parquet")
    for column in ("a", "b", "alex", "bob"):
        values = [agent if v == "random" else v for v in table.column(column).to_pylist()]
        table = table.set_column(table.schema.get_field_index(column), column,
                                 pa.array(values, pa.string()))
    pq.write_table(table, dst / "games.parquet")
    return dst


def test_options_that_change_a_pair_are_refused_and_others_ignored(runs, tmp_path):
    fast = _relabel(runs["a"], tmp_path / "fast", "ismcts-time", 0.25)
    slow = _relabel(runs["b"], tmp_path / "slow", "ismcts-time", 1.0)
    with pytest.raises(TensorCFRError, match=r"greedy vs ismcts-time was played with other "
                       r"options in .*slow than in .*fast \(ismcts-time seconds_per_move\)"):
        merge_tournaments(MergeSettings(runs=(fast, slow)))
    # greedy and random read no option: another budget does not keep them apart
    other_budget = _relabel(runs["b"], tmp_path / "other", "random", 9.0)
    merged = merge_tournaments(MergeSettings(runs=(runs["a"], other_budget)))
    assert merged.pairs[0].deals == 6


def test_bad_input_is_one_line(runs, tmp_path):
    with pytest.raises(TensorCFRError, match="given twice"):
        MergeSettings(runs=(runs["a"], runs["a"]))
    with pytest.raises(TensorCFRError, match="at least one"):
        MergeSettings(runs=())
    with pytest.raises(TensorCFRError, match="is one of the --run folders"):
        MergeSettings(runs=(runs["a"], runs["b"]), out=runs["b"])
    (tmp_path / "empty").mkdir()
    proc = cli("pasur", "tournament-merge", "--run", str(runs["a"]), "--run",
               str(tmp_path / "empty"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'empty'} is not a tournament folder (no tournament.json); give "
        "the --out folder of `pasur tournament`"]


def test_cli_writes_the_merged_tables_and_json(runs, tmp_path):
    out = tmp_path / "merged"
    proc = cli("pasur", "tournament-merge", "--run", str(runs["a"]), "--run", str(runs["b"]),
               "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [(p["a"], p["b"], p["deals"]) for p in result["pairs"]] == [("greedy", "random", 6)]
    assert result["pairs"][0]["sources"] == [str(runs["a"]), str(runs["b"])]
    assert result["runs"] == [str(runs["a"]), str(runs["b"])]
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    assert summary[0]["deals"] == 6 and summary[0]["sources"] == result["pairs"][0]["sources"]
    assert (out / "cross_table.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "merge.json").read_text())["runs"] == result["runs"]
    text = cli("pasur", "tournament-merge", "--run", str(runs["a"]))
    assert text.returncode == 0 and "greedy vs random:" in text.stdout
    assert not (runs["a"] / "merge.json").exists()  # nothing written into a tournament


def test_the_losses_of_one_folder_are_its_own_analysis(runs):
    """Merged alone, a folder's by-round losses and paired differences are its analysis'
    own tables (the merge keys a deal by its cards, the analysis by its number: the same
    grouping)."""
    merged = merge_tournaments(MergeSettings(runs=(runs["d"],)))
    own = pq.read_table(runs["d"] / "price_by_round.parquet").to_pylist()
    assert len(merged.by_round) == len(own) > 0
    for mine, theirs in zip(merged.by_round, own):
        assert mine.keys() == theirs.keys() and mine == pytest.approx(theirs, abs=1e-12), mine
    paired = pq.read_table(runs["d"] / "price_paired.parquet").to_pylist()
    assert merged.paired == [pytest.approx(r, abs=1e-12) for r in paired]
    assert merged.priced_games == {pair: 6 for pair in merged.sources}
    assert merged.unpriced_runs == []


def _losses(folder, agent):
    """Per deal, ``agent``'s points lost per game (both seats averaged), from the folder's
    own analysed games."""
    by_deal = {}
    for g in pq.read_table(folder / "price_games.parquet").to_pylist():
        for seat in ("alex", "bob"):
            if g[seat] == agent:
                by_deal.setdefault(g["deal"], []).append(sum(g[f"{seat}_loss"]))
    return [sum(v) / len(v) for _, v in sorted(by_deal.items())]


def test_pooled_losses_count_each_folder_once_and_skip_unanalysed_ones(runs):
    merged = merge_tournaments(MergeSettings(runs=(runs["a"], runs["b"], runs["c"])))
    pair = ("greedy", "random")
    assert merged.priced_games == {pair: 12} and merged.unpriced_runs == [str(runs["c"])]
    (summary,) = merged.pairs
    assert summary.games == 12  # c's deals are a's: none of c's games was pooled
    for agent in pair:
        expected = _losses(runs["a"], agent) + _losses(runs["b"], agent)
        mean, interval, _ = duplicate_interval(expected)
        for rival in (pair[1] if agent == pair[0] else pair[0], "all"):
            row = next(r for r in merged.by_round if (r["agent"], r["rival"], r["seat"],
                                                      r["round"]) == (agent, rival, "both", None))
            assert (row["games"], row["deals"]) == (12, 6)
            assert row["loss_mean"] == pytest.approx(mean, abs=1e-12)
            assert (row["loss_ci95_low"], row["loss_ci95_high"]) == pytest.approx(interval)
    # c first: its two deals and a's third; b's three; c's games are not analysed
    other = merge_tournaments(MergeSettings(runs=(runs["c"], runs["a"], runs["b"])))
    assert other.priced_games == {pair: 8} and other.pairs[0].games == 12


def test_a_price_table_that_does_not_match_its_games_is_refused(runs, tmp_path):
    folder = tmp_path / "swapped"
    shutil.copytree(runs["a"], folder)
    table = pq.read_table(folder / "price_games.parquet")
    swapped = {"alex": table.column("bob"), "bob": table.column("alex")}
    for column, values in swapped.items():
        table = table.set_column(table.schema.get_field_index(column), column, values)
    pq.write_table(table, folder / "price_games.parquet")
    with pytest.raises(TensorCFRError, match=r"price_games.parquet does not match .*swapped's "
                       r"games .* run `tensorcfr pasur tournament-price` on that folder again"):
        merge_tournaments(MergeSettings(runs=(folder,)))
    values = pq.read_table(runs["a"] / "price_games.parquet").to_pylist()
    values[0]["values"] = values[0]["values"][:-1] + [values[0]["values"][-1] + 1]
    shutil.copytree(runs["a"], tmp_path / "bent")
    pq.write_table(pa.Table.from_pylist(values, schema=table.schema),
                   tmp_path / "bent" / "price_games.parquet")
    with pytest.raises(TensorCFRError, match=r"bent/price_games.parquet.*row 0: its position "
                       r"values run from .* not from the deal's exact value"):
        merge_tournaments(MergeSettings(runs=(tmp_path / "bent",)))


def test_cli_prints_and_writes_the_merged_losses(runs, tmp_path):
    out = tmp_path / "merged"
    proc = cli("pasur", "tournament-merge", "--run", str(runs["a"]), "--run", str(runs["c"]),
               "--run", str(runs["d"]), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "points lost against open-hands play" in text and "24 games analysed" in text
    assert "greedy (18 games, 6 deals, every rival)" in text
    assert "random minus distilled, against greedy (3 deals)" in text
    assert "not analysed" not in text  # c's deals are a's: none of its games was pooled
    by_round = pq.read_table(out / "price_by_round.parquet").to_pylist()
    merged = merge_tournaments(MergeSettings(runs=(runs["a"], runs["c"], runs["d"])))
    assert by_round == [pytest.approx(r, abs=1e-12) for r in merged.by_round]
    assert (out / "price_paired.parquet").exists()
    data = json.loads(cli("pasur", "tournament-merge", "--run", str(runs["c"]), "--run",
                          str(runs["d"]), "--json").stdout)
    assert data["unpriced_runs"] == [str(runs["c"])] and data["by_round"]
    assert [p["priced_games"] for p in data["pairs"]] == [6, 6, 6]
    assert data["price_by_round_parquet"] is None  # nothing written without --out
    text = cli("pasur", "tournament-merge", "--run", str(runs["c"]), "--run",
               str(runs["d"])).stdout
    assert f"4 pooled game(s) not analysed (folders without an analysis: {runs['c']}; run " \
        "`pasur tournament-price --run DIR` there)" in text
    # the same folder merged again without an analysis: no stale price tables left there
    assert cli("pasur", "tournament-merge", "--run", str(runs["c"]), "--out",
               str(out)).returncode == 0
    assert not (out / "price_by_round.parquet").exists()


# The merge pools a pair's results across folders whose options differ only where neither agent
# reads them (AgentEntry.reads): check that declaration against the agents themselves.
_UNREAD_VALUES = {"determinizations": (2, 3), "seconds_per_move": (None, 30.0),
                  "simulations": (20, 21), "model": (None, "/nonexistent/model")}
_TIME_DRIVEN = {"ismcts-time"}  # searches for its budget: plays vary from run to run anyway


@pytest.mark.parametrize("name", [n for n in AGENTS if n not in _TIME_DRIVEN])
def test_an_option_an_agent_does_not_declare_does_not_change_its_plays(name) -> None:
    from tensorcfr.games.pasur.agents import AgentOptions, make_agent
    from tensorcfr.games.pasur.engine import rules
    from tensorcfr.games.pasur.playing.match import play_game

    reads = AGENTS[name].reads
    # what the agent reads stays fixed (small and without a clock: plays are repeatable)
    fixed = {"determinizations": 2, "seconds_per_move": None, "simulations": 20, "model": None}
    deal = rules.random_deal(5)
    histories = []
    for pick in (0, 1):
        values = {o: (fixed[o] if o in reads else _UNREAD_VALUES[o][pick]) for o in fixed}
        agent = make_agent(name, AgentOptions(**values))
        histories.append(play_game(deal, agent, make_agent("greedy"), seed=7).state.history)
    assert histories[0] == histories[1], f"{name} plays differently with an option it does " \
        f"not declare in AgentEntry.reads ({reads})"
