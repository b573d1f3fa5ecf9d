"""Table and model players, XGBoost policy models, and the selfplay / train commands."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.agents import make_player
from tensorcfr.games.pasur.learning.policy_model import load_policy_model, train_policy_model
from tensorcfr.games.pasur.playing.selfplay import play_games
from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, run_dcfr

pytestmark = pytest.mark.usefixtures("one_thread")
runner = CliRunner()
SEED = 3
DEAL = rules.random_deal(SEED)  # exact value -6


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "dcfr"
    run_dcfr(DcfrSettings(deal=DEAL, iterations=60, out=out))
    return out


@pytest.fixture(scope="module")
def model_dir(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "m"
    train_policy_model([run_dir], out, games=400, rounds=40, early_stopping=10)
    return out


def test_table_player_plays_near_the_exact_value(run_dir):
    table = make_player("table", DEAL, table=run_dir)
    result = play_games(DEAL, table, table, 500, sample_seed=1)
    assert abs(result.summary()["mean_diff"] - (-6)) < 0.2
    assert table.misses == 0
    (probs,) = table.action_probs([rules.initial_state(DEAL)])
    assert [a for a, _ in probs] == rules.legal_actions(rules.initial_state(DEAL))
    assert abs(sum(p for _, p in probs) - 1) < 1e-9


def test_table_of_another_deal_is_refused(run_dir):
    with pytest.raises(TensorCFRError, match="another deal"):
        make_player("table", rules.random_deal(4), table=run_dir)


def test_model_is_saved_loaded_and_plays(model_dir):
    manifest = json.loads((model_dir / "manifest.json").read_text())
    assert manifest["features"]["name"] == "pasur-infoset-58-v1"
    assert manifest["params"]["tree_method"] == "hist" and manifest["params"]["nthread"] == 1
    assert manifest["rows"]["test"] > 0 and manifest["rmse"]["test"] >= 0
    assert (model_dir / "policy.ubj").is_file()
    player = make_player("model", DEAL, model=model_dir)
    state = rules.initial_state(DEAL)
    (probs,) = player.action_probs([state])
    assert [a for a, _ in probs] == rules.legal_actions(state)
    assert abs(sum(p for _, p in probs) - 1) < 1e-9
    result = play_games(DEAL, player, make_player("random", DEAL), 200, sample_seed=2)
    assert result.num_games == 200


def test_bad_model_folders(model_dir, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(model_dir, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["features"]["name"] = "some-other-features"
    (other / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptFileError, match="trained on other features"):
        load_policy_model(other)
    broken = tmp_path / "broken"
    shutil.copytree(model_dir, broken)
    (broken / "policy.ubj").write_bytes(b"not a model")
    with pytest.raises(CorruptFileError, match="not a readable XGBoost model"):
        load_policy_model(broken)
    with pytest.raises(TensorCFRError, match="not a folder"):
        load_policy_model(tmp_path / "nothing")


def test_selfplay_cli_json(run_dir, tmp_path):
    res = runner.invoke(app, ["pasur", "selfplay", "--seed", str(SEED), "--alex", "exact",
                              "--bob", "table", "--table", str(run_dir), "--games", "50",
                              "--sample-seed", "3", "--records", str(tmp_path / "recs"),
                              "--num-records", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("games", "mean_diff", "min_diff", "max_diff", "ci95", "alex_win_rate",
                "tie_rate", "bob_win_rate", "fair_value"):
        assert key in out
    assert out["games"] == 50 and len(out["ci95"]) == 2
    assert out["min_diff"] >= -6  # exact Alex never ends below the exact value
    from tensorcfr.games.pasur.engine.records import parse_record, replay_record

    record = json.loads((tmp_path / "recs" / "game_00000.json").read_text())
    assert replay_record(parse_record(record)).legal


@pytest.mark.parametrize("args, message", [
    (["--alex", "nash", "--bob", "random"], "unknown player 'nash'"),
    (["--alex", "model", "--bob", "random"], "needs --model"),
    (["--alex", "model", "--bob", "random", "--model", "/nonexistent"], "does not exist"),
    (["--alex", "random", "--bob", "random", "--games", "0"], "must be between 1 and"),
])
def test_selfplay_cli_errors(args, message):
    res = runner.invoke(app, ["pasur", "selfplay", "--seed", "3", *args, "--json"])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output


def test_train_cli(run_dir, tmp_path):
    res = runner.invoke(app, ["pasur", "train", str(run_dir), "--out", str(tmp_path / "m"),
                              "--games", "200", "--rounds", "10", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["deals"] == 1 and out["rows"]["test"] > 0
    bad = runner.invoke(app, ["pasur", "train", str(tmp_path / "none"), "--out",
                              str(tmp_path / "m2"), "--json"])
    assert bad.exit_code == 2 and not (tmp_path / "m2").exists()
