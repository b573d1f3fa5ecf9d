"""``train-hidden --behaviour``: who plays the games whose decisions are labelled (expert
iteration's second round: the apprentice model plays, the teacher labels).

Two exact-teacher games per run (a few seconds): the default behaviour gives the rows of
before (a fingerprint taken from the code before the option existed), a model behaviour
gives other rows and the same ones twice, bad values are one line with exit code 2, and a
rows checkpoint of another behaviour is refused, naming ``--behaviour``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.learning.hidden_model import (
    DISTILLED_MODEL_DIR,
    TrainHiddenSettings,
    _collect_rows,
    load_rows_checkpoint,
)

runner = CliRunner()

ROWS_BEFORE = "83b1867e8b113104"
"""Fingerprint of the rows of games 0-1 at seed 3 (exact teacher), taken with the code
before ``--behaviour`` (commit 4da0f8f): the default must reproduce it."""


def _rows(tmp_path: Path, name: str, **options: object) -> tuple[np.ndarray, np.ndarray]:
    settings = TrainHiddenSettings(games=2, out=tmp_path / name, seed=3, **options)
    x, y, _ = _collect_rows(settings, lambda p: None)
    return x, y


def _fingerprint(x: np.ndarray, y: np.ndarray) -> str:
    return hashlib.sha256(np.round(x, 3).tobytes() + np.round(y, 3).tobytes()).hexdigest()[:16]


def test_the_default_behaviour_gives_the_rows_of_before(tmp_path: Path) -> None:
    x, y = _rows(tmp_path, "m")
    assert x.shape == (224, 75) and _fingerprint(x, y) == ROWS_BEFORE
    saved = load_rows_checkpoint(tmp_path / "m" / "rows.npz")
    assert saved["ident"] == "exact|3|8|pasur-hidden-v1"  # the ident of before


def test_a_model_behaviour_plays_other_games_deterministically(tmp_path: Path) -> None:
    x1, y1 = _rows(tmp_path, "a", behaviour="distilled")
    x2, y2 = _rows(tmp_path, "b", behaviour=str(DISTILLED_MODEL_DIR))
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
    assert _fingerprint(x1, y1) != ROWS_BEFORE
    x3, y3 = _rows(tmp_path, "c", behaviour="hidden-model")
    assert _fingerprint(x3, y3) not in (ROWS_BEFORE, _fingerprint(x1, y1))
    ident = load_rows_checkpoint(tmp_path / "a" / "rows.npz")["ident"]
    assert ident.startswith("exact|3|8|pasur-hidden-v1|model sha256 ")


@pytest.mark.parametrize("value", ["nowhere", "distiled", ""])
def test_a_bad_behaviour_is_one_line(tmp_path: Path, value: str) -> None:
    result = runner.invoke(app, ["pasur", "train-hidden", "--games", "2", "--out",
                                 str(tmp_path / "m"), "--behaviour", value])
    assert result.exit_code == 2 and "--behaviour" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not (tmp_path / "m").exists()


def test_a_folder_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TensorCFRError, match="--behaviour must be teacher, hidden-model, "
                       "distilled or a hidden-model folder"):
        TrainHiddenSettings(games=2, out=tmp_path / "m", behaviour=str(tmp_path))
    result = runner.invoke(app, ["pasur", "train-hidden", "--games", "2", "--out",
                                 str(tmp_path / "m"), "--behaviour", str(tmp_path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_rows_of_another_behaviour_are_refused_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "m"
    _collect_rows(TrainHiddenSettings(games=1, out=out, seed=3), lambda p: None)
    before = (out / "rows.npz").read_bytes()
    with pytest.raises(TensorCFRError, match="--behaviour model sha256 [0-9a-f]{16} "
                       "\\(the saved rows used teacher\\)"):
        _collect_rows(TrainHiddenSettings(games=2, out=out, seed=3, behaviour="distilled"),
                      lambda p: None)
    assert (out / "rows.npz").read_bytes() == before
    other = tmp_path / "n"
    _collect_rows(TrainHiddenSettings(games=1, out=other, seed=3, behaviour="distilled"),
                  lambda p: None)
    with pytest.raises(TensorCFRError, match="--behaviour teacher \\(the saved rows used "
                       "model sha256"):
        _collect_rows(TrainHiddenSettings(games=2, out=other, seed=3), lambda p: None)
    # the same model under its folder's path is the same behaviour: the run resumes
    x, _, game = _collect_rows(TrainHiddenSettings(games=2, out=other, seed=3,
                                                   behaviour=str(DISTILLED_MODEL_DIR)),
                               lambda p: None)
    assert set(game.tolist()) == {0, 1} and len(x) > 0
