"""learning.xgb_model: the policy and hidden-hand models are one loaded-model class, each
checked against its own kind (format, version, features) through the same steps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.learning import hidden_model, policy_model
from tensorcfr.games.pasur.learning.xgb_model import XGBoostModel


def test_both_model_kinds_share_the_loaded_model_class() -> None:
    assert issubclass(policy_model.PolicyModel, XGBoostModel)
    assert issubclass(hidden_model.HiddenModel, XGBoostModel)
    assert policy_model.PolicyModel.kind.format != hidden_model.HiddenModel.kind.format
    assert hidden_model.HiddenModel.kind.num_features == hidden_model.NUM_FEATURES


def test_the_shipped_hidden_model_loads_and_checks_its_rows() -> None:
    model = hidden_model.load_hidden_model()
    n = hidden_model.NUM_FEATURES
    assert model.predict(np.zeros((3, n), dtype=np.float32)).shape == (3,)
    assert model.predict(np.zeros((0, n), dtype=np.float32)).shape == (0,)
    with pytest.raises(TensorCFRError, match=f"needs rows of {n} features"):
        model.predict(np.zeros((2, n + 1), dtype=np.float32))


def test_a_model_folder_of_the_other_kind_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "hidden"
    shutil.copytree(hidden_model.DEFAULT_MODEL_DIR, folder)
    with pytest.raises(CorruptFileError, match="is not the manifest of a policy model"):
        policy_model.load_policy_model(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["version"] = 99
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptFileError, match="unsupported version 99 .*train-hidden"):
        hidden_model.load_hidden_model(folder)


def test_the_shipped_models_are_loaded_once_and_shared(tmp_path: Path) -> None:
    """Every agent of a shipped model plays the one loaded copy (the play server builds an
    agent per new hidden-hand game: 0.2 s and 2.8 MiB each when it loaded its own); a copy of
    the folder elsewhere is a model of its own, loaded each time."""
    from tensorcfr.games.pasur.agents import AgentOptions, make_agent

    first, second = (make_agent("distilled", AgentOptions()) for _ in range(2))
    assert first.model is second.model
    assert hidden_model.load_hidden_model() is hidden_model.load_hidden_model(
        hidden_model.DEFAULT_MODEL_DIR)
    assert hidden_model.load_hidden_model() is not first.model
    assert hidden_model.load_hidden_model(threads=2) is not hidden_model.load_hidden_model()
    folder = tmp_path / "copy"
    shutil.copytree(hidden_model.DISTILLED_MODEL_DIR, folder)
    own = hidden_model.load_hidden_model(folder)
    assert own is not first.model and own is not hidden_model.load_hidden_model(folder)
    rows = np.zeros((2, hidden_model.NUM_FEATURES), dtype=np.float32)
    assert np.array_equal(own.predict(rows), first.model.predict(rows))
