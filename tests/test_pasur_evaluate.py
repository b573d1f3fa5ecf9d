"""Exact evaluation of policy models on a deal's game tree (``pasur evaluate``), checked
against sampled self-play."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import MemoryLimitError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.learning.evaluate import evaluate_policies
from tensorcfr.games.pasur.agents import make_player
from tensorcfr.games.pasur.learning.policy_model import train_policy_model
from tensorcfr.games.pasur.playing.selfplay import play_games
from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, run_dcfr

pytestmark = pytest.mark.usefixtures("one_thread")
runner = CliRunner()
SEED = 11  # exact value -17; its game tree has 2.7 million nodes (about 200 MiB)
DEAL = rules.random_deal(SEED)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("eval")
    run_dcfr(DcfrSettings(deal=DEAL, iterations=60, out=base / "run"))
    train_policy_model([base / "run"], base / "model", games=400, rounds=30, early_stopping=10)
    return base / "model"


@pytest.fixture(scope="module")
def evaluation(model_dir):
    return evaluate_policies(DEAL, {"m": model_dir})


def test_measures_are_consistent(evaluation):
    assert evaluation["exact_value"] == -17
    v = evaluation["exact_value"]
    for name, r in evaluation["policies"].items():
        assert r["best_response_to_alex"] <= v + 1e-9 <= r["best_response_to_bob"] + 2e-9
        assert r["best_response_to_alex"] <= r["self_play_value"] <= r["best_response_to_bob"]
        assert r["exploitability"] >= 0 and r["loss_vs_exact"] >= -1e-9
        # the exact player never ends below the exact value, whoever it plays
        assert r["vs_exact_as_alex"] <= v + 1e-9 and r["vs_exact_as_bob"] >= v - 1e-9
        # a best response gains at least what the exact player does
        assert r["best_response_to_alex"] <= r["vs_exact_as_alex"] + 1e-9
        assert r["best_response_to_bob"] >= r["vs_exact_as_bob"] - 1e-9
    assert evaluation["policies"]["m"]["trained_on_this_deal"] is True
    assert evaluation["policies"]["random"]["exploitability"] > \
        evaluation["policies"]["m"]["exploitability"]


def _within(summary, expected):
    lo, hi = summary["ci95"]
    half = (hi - lo) / 2
    assert abs(summary["mean_diff"] - expected) <= 2 * half + 1e-9, (summary, expected)


def test_exact_values_agree_with_sampled_self_play(evaluation, model_dir):
    """The tree's expectations are what batched self-play samples (same feature rows)."""
    model = make_player("model", DEAL, model=model_dir)
    exact = make_player("exact", DEAL)
    rnd = make_player("random", DEAL)
    m = evaluation["policies"]["m"]
    _within(play_games(DEAL, model, model, 3000, sample_seed=1).summary(), m["self_play_value"])
    _within(play_games(DEAL, model, exact, 3000, sample_seed=2).summary(), m["vs_exact_as_alex"])
    _within(play_games(DEAL, exact, model, 3000, sample_seed=3).summary(), m["vs_exact_as_bob"])
    r = evaluation["policies"]["random"]
    _within(play_games(DEAL, rnd, rnd, 3000, sample_seed=4).summary(), r["self_play_value"])


def test_tree_too_big_is_refused(model_dir):
    with pytest.raises(MemoryLimitError, match="raise --max-memory"):
        evaluate_policies(DEAL, {"m": model_dir}, max_memory="20M")


def test_cli_evaluate(model_dir):
    res = runner.invoke(app, ["pasur", "evaluate", "--seed", str(SEED), "--model",
                              f"mine={model_dir}", "--no-random", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert list(data["policies"]) == ["mine"] and data["seed"] == SEED
    res = runner.invoke(app, ["pasur", "evaluate", "--seed", str(SEED), "--model", "/nope"])
    assert res.exit_code == 2 and "/nope does not exist" in res.output
    res = runner.invoke(app, ["pasur", "evaluate", "--seed", str(SEED), "--model",
                              f"random={model_dir}"])
    assert res.exit_code == 2 and "is taken" in res.output
