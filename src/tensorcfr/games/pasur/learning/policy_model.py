"""XGBoost policy models of Pasur: predict ``100 * sigma`` of a play from its infoset row.

The paper (Baghal 2025, section 3) fits, per deal, an XGBoost regressor from the 58-column
infoset row of the node a play leads to (:mod:`features`) to ``100 *`` the average
strategy's probability of that play; a player turns the predictions of a position's plays
into a strategy by clipping at 0 and renormalising (uniform when all are 0).

Training rows come from strategy tables (``tensorcfr pasur solve --method dcfr --out DIR``):

* a **tree-mode** table carries the feature row of every play (``feature_00..57``): its rows
  are used as they are (every node its player reaches under the average strategy);
* a **dag-mode** table (merged states, the usual one) has no history, so no feature rows: the
  positions are *sampled* by batched self-play of the table's own strategy (against itself,
  and against a uniform random opponent on both sides, so the positions a random opponent
  leads to are covered too), and every visited position the table has rows for gives one row
  per legal play: its tracked feature row and ``100 *`` the table's probability. Equal feature
  rows are merged (their targets averaged).

One model can be trained on one deal (the paper) or on many (its future work: one model
across decks). A model directory holds ``policy.ubj`` (XGBoost's own binary format) and
``manifest.json`` (format, feature set, target, the deals and run folders it was trained on,
the hyper-parameters, row counts, held-out RMSE, timings and versions).
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.playing.players import RandomPlayer, TablePlayer, _BatchPlayer
from tensorcfr.games.pasur.solving.dcfr_run import run_table_path
from tensorcfr.games.pasur.playing.selfplay import DecisionBatch, play_games
from tensorcfr.games.pasur.learning.xgb_model import ModelKind, XGBoostModel
from tensorcfr.games.pasur.solving.features import NUM_FEATURES
from tensorcfr.utils.io import atomic_path, write_json_atomic

__all__ = [
    "DEFAULT_PARAMS",
    "FEATURE_SET",
    "MODEL_FILE",
    "MODEL_FORMAT",
    "ModelPlayer",
    "PolicyModel",
    "load_policy_model",
    "table_training_rows",
    "train_policy_model",
]

MODEL_FORMAT = "tensorcfr-pasur-policy-model"
MODEL_VERSION = 1
MODEL_FILE = "policy.ubj"
MANIFEST = "manifest.json"
FEATURE_SET = "pasur-infoset-58-v1"
FEATURE_COLUMNS = [f"feature_{k:02d}" for k in range(NUM_FEATURES)]
TARGET = "100 * average-strategy probability of the play"

DEFAULT_PARAMS: dict[str, Any] = {
    "objective": "reg:squarederror",
    "eval_metric": "rmse",
    "tree_method": "hist",
    "max_depth": 12,
    "eta": 0.3,
    "gamma": 1.0,
    "min_child_weight": 1.0,
    "subsample": 1.0,
}
"""Hyper-parameters (see ``docs/pasur_selfplay.md``): the paper's squared error, depth 12
and eta 0.3; gamma 1 as its text says (the minimum loss reduction of a split: on targets in
0..100 a split must lower the summed squared error by at least 1, i.e. it prunes only splits
that change predictions by a fraction of a percentage point, so it barely costs accuracy and
keeps the trees from splitting on noise of sampled rows)."""


_KIND = ModelKind(
    what="a policy model", format=MODEL_FORMAT, version=MODEL_VERSION, model_file=MODEL_FILE,
    feature_set=FEATURE_SET, feature_columns=tuple(FEATURE_COLUMNS),
    max_model_bytes=2 * 2**30, hint="train one with `tensorcfr pasur train`")


class PolicyModel(XGBoostModel):
    """A loaded policy model: the XGBoost booster and its manifest; ``predict`` gives
    ``100 * sigma`` of each row [K, 58] (int8 features) -> float32 [K]."""

    kind = _KIND


def _versions() -> dict[str, str]:
    import xgboost

    from tensorcfr import __version__

    return {"tensorcfr": __version__, "xgboost": xgboost.__version__,
            "numpy": np.__version__, "torch": torch.__version__,
            "python": platform.python_version()}


def load_policy_model(path: str | os.PathLike[str], threads: int = 1) -> PolicyModel:
    """Load a model directory written by :func:`train_policy_model`.

    Raises :class:`TensorCFRError` for a path that is not a folder and
    :class:`CorruptFileError` (one line) for a missing manifest or model file, a manifest of
    another format or version, a model trained on other features, or an unreadable model
    file (:meth:`~tensorcfr.games.pasur.learning.xgb_model.XGBoostModel.load`).
    """
    folder = Path(path)
    if not folder.is_dir():
        raise TensorCFRError(f"--model {folder} is not a folder (give the --out folder of "
                             "`tensorcfr pasur train`)")
    return PolicyModel.load(folder, threads=threads)


# --------------------------------------------------------------------------- training rows


class _Collector:
    """Plays a table's strategy and keeps (feature row, 100 * probability) of every play of
    every position the table has rows for."""

    needs_features = True

    def __init__(self, table: Any) -> None:
        self.table = table
        self.name = "table"
        self.rows: list[np.ndarray] = []
        self.targets: list[np.ndarray] = []

    def edge_probs(self, batch: Any) -> torch.Tensor:
        w, missing = self.table.lookup_probs(batch)
        keep = ~missing.index_select(0, batch.edge_position)
        if bool(keep.any()):
            self.rows.append(batch.child_features()[keep].cpu().numpy())
            self.targets.append((100.0 * w[keep]).cpu().numpy())
        w = torch.where(missing.index_select(0, batch.edge_position), 1.0, w.clamp(min=0))
        return batch.normalize(w)


def _dedupe(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge equal feature rows (mean target), keeping the first occurrence's order."""
    if len(x) == 0:
        return x, y
    uniq, first, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = np.bincount(inverse, weights=y, minlength=len(uniq))
    counts = np.bincount(inverse, minlength=len(uniq))
    order = np.argsort(first)
    return uniq[order].astype(np.int8), (sums / counts)[order]


def table_training_rows(run: str | os.PathLike[str], *, games: int = 2000, seed: int = 0,
                        device: str = "cpu") -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Training rows of one DCFR run folder (or strategy table file).

    Returns ``(X int8 [R, 58], y float64 [R] = 100 * sigma, info)``; ``info`` says the deal,
    the table's mode and how the rows were obtained.
    """
    from tensorcfr.games.pasur.solving.strategy_table import load_strategy_table

    table_path, _ = run_table_path(run)
    loaded = load_strategy_table(table_path)
    deal = loaded.metadata.get("deal")
    if not isinstance(deal, list) or len(deal) != 52:
        raise CorruptFileError(f"strategy table {table_path} does not name its deal")
    info: dict[str, Any] = {"run": str(run), "deal": deal, "mode": loaded.metadata.get("mode"),
                            "iterations": loaded.metadata.get("iterations")}
    names = set(loaded.table.column_names)
    if "feature_00" in names:
        t = loaded.table
        x = np.stack([t.column(c).to_numpy() for c in FEATURE_COLUMNS], axis=1).astype(np.int8)
        y = 100.0 * t.column("probability").to_numpy().astype(np.float64)
        info["source"] = "table feature rows"
    else:
        if games < 4:
            raise TensorCFRError(f"--games must be at least 4 to sample a dag table, got {games}")
        player = TablePlayer(deal, table_path, device)
        collector = _Collector(player)
        rnd = RandomPlayer(deal, device)
        half, quarter = games // 2, games // 4
        play_games(deal, collector, collector, half, sample_seed=seed, device=device)
        play_games(deal, collector, rnd, quarter, sample_seed=seed + 1, device=device)
        play_games(deal, rnd, collector, games - half - quarter, sample_seed=seed + 2,
                   device=device)
        x = np.concatenate(collector.rows) if collector.rows else np.zeros((0, 58), np.int8)
        y = np.concatenate(collector.targets) if collector.targets else np.zeros(0)
        info["source"] = (f"sampled positions: {half} table-vs-table games and "
                          f"{games - half} table-vs-random games (both sides), seed {seed}")
        info["sampled_rows"] = int(len(y))
    x, y = _dedupe(x, y)
    info["rows"] = int(len(y))
    return x, y, info


# --------------------------------------------------------------------------- training


def _rmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred.astype(np.float64) - y) ** 2))) if len(y) else float("nan")


MAX_TRAIN_ROUNDS = 100_000
"""Most boosting rounds of :func:`train_policy_model`."""
MAX_TRAIN_GAMES = 10_000_000
"""Most self-play games sampled per table by :func:`train_policy_model`."""


def train_policy_model(runs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                       games: int = 2000, seed: int = 0, rounds: int = 1000,
                       early_stopping: int = 50, test_fraction: float = 0.2,
                       threads: int = 1, params: dict[str, Any] | None = None,
                       device: str = "cpu", progress: Callable[[str], None] | None = None
                       ) -> dict[str, Any]:
    """Train one policy model on the strategy tables of ``runs`` and save it in ``out``.

    Rows of all runs are pooled and split at random (``seed``) into a held-out test set
    (``test_fraction``, the paper's 80/20), and the rest into training (7/8) and an
    early-stopping validation set (1/8), so the reported test RMSE is measured on rows that
    chose nothing. Up to ``rounds`` boosting rounds, stopping after ``early_stopping`` rounds
    without improvement of the validation RMSE; the saved model keeps the best round.

    Returns the manifest written to ``out/manifest.json`` (RMSE in units of ``100 * sigma``,
    i.e. percentage points of probability).
    """
    import xgboost

    from tensorcfr.utils.checks import MAX_SEED, check_finite_result, check_int_range
    from tensorcfr.utils.io import check_output_dir, write_error

    if not runs:
        raise TensorCFRError("give at least one run folder to train on")
    check_int_range(rounds, "--rounds", 1, MAX_TRAIN_ROUNDS)
    check_int_range(games, "--games", 1, MAX_TRAIN_GAMES)
    check_int_range(seed, "--seed", 0, MAX_SEED - 1000 * len(runs) - 1)
    for run in runs:
        if not Path(run).exists():
            raise TensorCFRError(f"run folder {run} does not exist (give the --out folder of "
                                 "`tensorcfr pasur solve --method dcfr`)")
    if not 0 < test_fraction < 1:
        raise TensorCFRError(f"the test fraction must be in (0, 1), got {test_fraction}")
    if threads < 1:
        raise TensorCFRError(f"--threads must be at least 1, got {threads}")
    out_dir = check_output_dir(out, "--out")  # before the training, not after it
    started = time.perf_counter()
    xs, ys, sources = [], [], []
    for i, run in enumerate(runs):
        if progress is not None:
            progress(f"rows of {run}")
        x, y, info = table_training_rows(run, games=games, seed=seed + 1000 * i, device=device)
        xs.append(x)
        ys.append(y)
        sources.append(info)
    x_all = np.concatenate(xs)
    y_all = np.concatenate(ys)
    rows_seconds = time.perf_counter() - started
    if len(y_all) < 10:
        raise TensorCFRError(f"only {len(y_all)} training rows: solve the deals with more "
                             "iterations or sample more --games")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y_all))
    n_test = max(1, int(round(test_fraction * len(order))))
    n_val = max(1, (len(order) - n_test) // 8)
    test, val, train = order[:n_test], order[n_test:n_test + n_val], order[n_test + n_val:]
    p = {**DEFAULT_PARAMS, **(params or {}), "nthread": int(threads), "seed": int(seed)}
    dtrain = xgboost.DMatrix(x_all[train].astype(np.float32), label=y_all[train])
    dval = xgboost.DMatrix(x_all[val].astype(np.float32), label=y_all[val])
    if progress is not None:
        progress(f"training on {len(train):,} rows")
    t0 = time.perf_counter()
    history: dict[str, Any] = {}
    booster = xgboost.train(p, dtrain, num_boost_round=rounds,
                            evals=[(dtrain, "train"), (dval, "validation")],
                            early_stopping_rounds=early_stopping if early_stopping > 0 else None,
                            evals_result=history, verbose_eval=False)
    train_seconds = time.perf_counter() - t0
    best = getattr(booster, "best_iteration", None)
    if best is not None:
        booster = booster[: best + 1]
    used_rounds = booster.num_boosted_rounds()
    model = PolicyModel(booster=booster, manifest={}, path=out_dir)
    check_finite_result(model.predict(x_all[test]), "the trained model's predictions")
    rmse_test = _rmse(model.predict(x_all[test]), y_all[test])
    rmse_train = _rmse(model.predict(x_all[train]), y_all[train])
    rmse_val = _rmse(model.predict(x_all[val]), y_all[val])
    t0 = time.perf_counter()
    model.predict(x_all[test])
    predict_seconds = time.perf_counter() - t0
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(out_dir, exc) from None
    with atomic_path(out_dir / MODEL_FILE) as tmp:
        tmp.write_bytes(bytes(booster.save_raw(raw_format="ubj")))
    manifest = {
        "format": MODEL_FORMAT, "version": MODEL_VERSION, "model_file": MODEL_FILE,
        "features": {"name": FEATURE_SET, "columns": FEATURE_COLUMNS},
        "target": TARGET,
        "deals": [s["deal"] for s in sources], "sources": sources,
        "params": {k: v for k, v in p.items()},
        "max_rounds": rounds, "early_stopping_rounds": early_stopping,
        "rounds": int(used_rounds),
        "rows": {"total": int(len(y_all)), "train": int(len(train)),
                 "validation": int(len(val)), "test": int(len(test))},
        "rmse": {"train": rmse_train, "validation": rmse_val, "test": rmse_test},
        "seconds": {"rows": rows_seconds, "train": train_seconds,
                    "total": time.perf_counter() - started},
        "predict_rows_per_second": (len(test) / predict_seconds if predict_seconds > 0
                                    else None),
        "threads": int(threads), "seed": int(seed), "versions": _versions(),
    }
    try:
        write_json_atomic(out_dir / MANIFEST, manifest)
    except BaseException:  # a model without its manifest is half a model: remove it
        (out_dir / MODEL_FILE).unlink(missing_ok=True)
        raise
    return manifest


# --------------------------------------------------------------------------- player


class ModelPlayer(_BatchPlayer):
    """An XGBoost policy model: predicted ``100 * sigma`` -> clip at 0 -> renormalise."""

    name = "model"
    needs_features = True

    def __init__(self, deal: Sequence[int], model: str | os.PathLike[str],
                 device: str | torch.device = "cpu", threads: int = 1) -> None:
        super().__init__(deal, device)
        self.model = load_policy_model(model, threads=threads)
        self.rows_predicted = 0

    def edge_probs(self, batch: DecisionBatch) -> Tensor:
        rows = batch.child_features()
        pred = self.model.predict(rows.cpu().numpy())
        self.rows_predicted += int(rows.shape[0])
        return batch.normalize(torch.as_tensor(pred, dtype=torch.float64,
                                               device=batch.device).clamp(min=0))
