"""A loaded XGBoost model folder (policy model or hidden-hand model), read one way.

A model folder holds ``manifest.json`` (format, version, the feature set it was trained on,
training facts) and the booster file it names (``model_file``). :class:`XGBoostModel` is
what both kinds share once loaded (the booster, the manifest, the folder; ``predict`` over
rows of ``num_features`` float features); :meth:`XGBoostModel.load` checks a folder against
its kind's :class:`ModelKind`: the manifest through
:func:`~tensorcfr.utils.manifest.read_manifest` (confined to the folder, bounded, strict
JSON, the kind's format and version), the feature set by name and columns, then the booster
file (:func:`read_booster`: confined, a regular file of at most ``max_model_bytes``, one
:class:`~tensorcfr.errors.CorruptFileError` line if XGBoost cannot read it) and its number of
features. A kind with ``compile_forest`` also gets the booster's trees compiled
(:class:`~.compiled_forest.CompiledForest`: the same predictions bit for bit, without
XGBoost's ~1 ms a call), which ``predict`` then uses. Each model module declares its kind and
keeps its own folder checks and training; nothing here knows what a model predicts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, TypeVar

import numpy as np

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.utils.confine import file_in_folder
from tensorcfr.utils.reading import check_input_file

__all__ = ["ModelKind", "XGBoostModel", "read_booster"]

_Model = TypeVar("_Model", bound="XGBoostModel")


@dataclass(frozen=True)
class ModelKind:
    """What a folder of one model kind must hold.

    ``what`` names the kind in messages (``"a policy model"``); ``format``/``version`` are
    the manifest's; ``model_file`` is the default booster file name; ``feature_set`` and
    ``feature_columns`` the features it was trained on (``num_features`` of them);
    ``max_model_bytes`` bounds the booster file; ``hint`` (how to make one) ends the errors;
    ``compile_forest``: compile the trees on load for fast predictions of a few rows.
    """

    what: str
    format: str
    version: int
    model_file: str
    feature_set: str
    feature_columns: tuple[str, ...]
    max_model_bytes: int
    hint: str
    compile_forest: bool = False

    @property
    def num_features(self) -> int:
        """Features per row the booster takes."""
        return len(self.feature_columns)


def read_booster(folder: str | os.PathLike[str], manifest: Mapping[str, Any],
                 manifest_path: Path, default_file: str, max_bytes: int) -> tuple[Any, Path]:
    """``(xgboost.Booster, its path)`` for the ``model_file`` of ``manifest`` (default
    ``default_file``) inside ``folder``; one-line errors (see the module's docstring)."""
    import xgboost

    model_file = file_in_folder(folder, manifest.get("model_file", default_file),
                                named_by=manifest_path, key="model_file")
    check_input_file(model_file, "XGBoost model", max_bytes)
    try:
        booster = xgboost.Booster(model_file=str(model_file))
    except xgboost.core.XGBoostError as exc:
        first = (str(exc).strip().splitlines() or ["unreadable"])[0]
        raise CorruptFileError(f"{model_file} is not a readable XGBoost model "
                               f"({first[:120]})") from None
    return booster, model_file


@dataclass
class XGBoostModel:
    """A loaded model folder: the XGBoost ``booster``, its ``manifest`` and the folder
    ``path``; ``forest``: the compiled trees (a
    :class:`~.compiled_forest.CompiledForest`) or None. A subclass sets ``kind`` (its
    :class:`ModelKind`)."""

    booster: Any
    manifest: dict[str, Any]
    path: Path
    forest: Any = None

    kind: ClassVar[ModelKind]

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """The booster's prediction for each row of ``rows`` [N, num_features] -> float32
        [N] (the unit is the kind's target)."""
        n = self.kind.num_features
        if rows.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] != n:
            raise TensorCFRError(f"{self.kind.what} needs rows of {n} features, got shape "
                                 f"{tuple(rows.shape)}")
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        if self.forest is not None:
            return self.forest.predict(rows)
        return np.asarray(self.booster.inplace_predict(rows), dtype=np.float32)

    @classmethod
    def load(cls: type[_Model], folder: str | os.PathLike[str], threads: int = 1) -> _Model:
        """Read and check a model folder of this kind (see the module's docstring); the
        booster predicts on ``threads`` threads.

        Raises:
            TensorCFRError: ``folder`` is not a folder.
            CorruptFileError: a missing, foreign, damaged or other-feature manifest or
                booster (one line naming the file and, where it helps, ``kind.hint``).
        """
        from tensorcfr.utils.manifest import read_manifest

        kind, root = cls.kind, Path(folder)
        mpath, manifest = read_manifest(root, expected_format=kind.format, what=kind.what,
                                        version=kind.version, hint=kind.hint)
        features = manifest.get("features")
        if not isinstance(features, dict):
            raise CorruptFileError(f"{mpath}: \"features\" is {features!r:.40}, not the "
                                   f"object of {kind.what}: {kind.hint}")
        if features.get("name") != kind.feature_set \
                or features.get("columns") != list(kind.feature_columns):
            raise CorruptFileError(
                f"{root} was trained on other features ({features.get('name')!r:.40}); this "
                f"version of tensorcfr reads {kind.what} of {kind.feature_set!r}: {kind.hint}")
        booster, model_file = read_booster(root, manifest, mpath, kind.model_file,
                                           kind.max_model_bytes)
        if booster.num_features() != kind.num_features:
            raise CorruptFileError(f"{model_file} is a model of {booster.num_features()} "
                                   f"features, not the {kind.num_features} of "
                                   f"{kind.feature_set}: it was trained on other features")
        booster.set_param({"nthread": int(threads)})
        forest = None
        if kind.compile_forest:
            from tensorcfr.games.pasur.learning.compiled_forest import CompiledForest

            forest = CompiledForest.from_booster(booster)
        return cls(booster=booster, manifest=manifest, path=root, forest=forest)
