"""The XGBoost model file of a model folder (policy model or hidden-hand model), read once.

A model folder holds ``manifest.json`` and the booster it names (``model_file``). Each model
kind checks its own manifest; this module reads the booster file the manifest names: the
name is confined to the folder (no ``../``, no absolute path, no link out), the file must be
a regular file of at most ``max_bytes`` (a FIFO or a device is refused unopened), and a file
XGBoost cannot read is one :class:`~tensorcfr.errors.CorruptFileError` line naming it.
Nothing here knows what the model predicts or how many features it takes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from tensorcfr.errors import CorruptFileError
from tensorcfr.utils.confine import file_in_folder
from tensorcfr.utils.reading import check_input_file

__all__ = ["read_booster"]


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
