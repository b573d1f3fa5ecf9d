"""An XGBoost regression forest compiled to flat arrays and walked by a numba kernel.

XGBoost's ``inplace_predict`` costs about a millisecond a call whatever the rows (213 trees,
3 rows: 1.07 ms on one thread, nearly all of it per-call set-up), so a player that asks for
one decision at a time could not pass ~1,000 decisions a second through it.
:class:`CompiledForest` holds the same trees as small arrays and :func:`predict_rows` walks
them in compiled code: a few microseconds for a decision's rows.

**Layout.** Every tree is stored as a *complete* binary tree of the forest's depth ``D``
(heap order: node ``i``'s children are ``2i + 1`` and ``2i + 2``), so a walk is ``D`` steps
with no child pointers and no leaf test, over arrays small enough to stay in the core's
caches (the distilled model, 213 trees of depth 6: 134 KB against 350 KB with pointers). A
leaf of XGBoost's tree above depth ``D`` fills every leaf below its place with its value, so
whichever way the padding nodes send a row, it ends on that value. Arrays (``T`` trees,
``D`` levels): ``feature`` int32 [T, 2^D - 1] (the split's feature), ``threshold`` float32
[T, 2^D - 1] (the split condition), ``default_left`` uint8 [T, 2^D - 1] (1: a missing value
goes left), ``leaf`` float32 [T, 2^D]; ``base`` float32 (the base score). Forests deeper than
:data:`MAX_DEPTH` are not compiled.

**Same numbers, bit for bit.** XGBoost's CPU predictor starts each row's sum at the base
score and adds each tree's leaf value in tree order, in float32; a node sends a row left when
``value < split_condition`` (float32), and a missing value (NaN) to its default side. The
kernel does exactly that, so its predictions equal ``inplace_predict``'s bit for bit (tested
on every row of hundreds of games, both shipped models). :meth:`CompiledForest.from_booster`
compiles only what it can reproduce: a ``gbtree`` booster with one target and the
``reg:squarederror`` objective (identity link), numeric splits only; anything else returns
``None`` and the caller keeps XGBoost. It also checks itself against the booster on probe
rows when it is built and returns ``None`` on any difference.

Units are the model's target. Nothing here knows Pasur or what the features mean;
:func:`predict_rows` can be called from other numba kernels.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

__all__ = ["MAX_DEPTH", "CompiledForest", "predict_rows"]

MAX_DEPTH = 12
"""Deepest forest compiled (a complete tree of depth 12 holds 8,191 nodes a tree)."""
PROBE_ROWS = 256
"""Rows of the self-check against the booster when a forest is built."""


@njit(cache=True)
def predict_rows(rows: np.ndarray, count: int, base: np.float32, feature: np.ndarray,
                 threshold: np.ndarray, default_left: np.ndarray, leaf: np.ndarray,
                 out: np.ndarray) -> None:
    """``out[r]`` = base + the leaf of each tree for ``rows[r]``, ``r < count``, summed in
    tree order in float32 (XGBoost's order). A row goes down all the trees level by level (a
    step: left when ``value < threshold`` or when the value is missing and the node's default
    is left, without a branch), so the trees' walks overlap in the core (measured: about a
    third faster than one tree after the other); then the leaves are added in tree order."""
    depth = int(math.log2(leaf.shape[1]) + 0.5)
    inner = feature.shape[1]
    trees = feature.shape[0]
    nodes = np.zeros(trees, dtype=np.int32)
    for r in range(count):
        row = rows[r]
        nodes[:] = 0
        for _ in range(depth):
            for t in range(trees):
                node = nodes[t]
                value = row[feature[t, node]]
                go_left = (value < threshold[t, node]) | (
                    (value != value) & (default_left[t, node] != 0))
                nodes[t] = 2 * node + 2 - np.int32(go_left)
        total = base
        for t in range(trees):
            total = np.float32(total + leaf[t, nodes[t] - inner])
        out[r] = total


@dataclass(frozen=True)
class CompiledForest:
    """The trees of one XGBoost regression booster as complete trees (see the module's
    docstring for the arrays); :meth:`predict` gives ``inplace_predict``'s numbers."""

    num_features: int
    base: np.float32
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    leaf: np.ndarray

    @property
    def num_trees(self) -> int:
        return int(self.feature.shape[0])

    @property
    def depth(self) -> int:
        return int(self.leaf.shape[1]).bit_length() - 1

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """Predictions of ``rows`` float32 [N, num_features] (C order) -> float32 [N]."""
        out = np.empty(rows.shape[0], dtype=np.float32)
        predict_rows(rows, rows.shape[0], self.base, self.feature, self.threshold,
                     self.default_left, self.leaf, out)
        return out

    @classmethod
    def from_booster(cls, booster: Any, probe_seed: int = 0) -> CompiledForest | None:
        """The forest of ``booster`` (an ``xgboost.Booster``), or ``None`` when it is not a
        model this kernel reproduces exactly (see the module's docstring) or when the
        self-check on :data:`PROBE_ROWS` rows finds any difference."""
        try:
            forest = cls._parse(json.loads(bytes(booster.save_raw(raw_format="json"))))
        except (KeyError, ValueError, TypeError, IndexError):
            return None
        if forest is None or forest.num_features != booster.num_features():
            return None
        rng = np.random.default_rng(probe_seed)
        probe = rng.integers(-1, 14, size=(PROBE_ROWS, forest.num_features)).astype(np.float32)
        probe[rng.random(probe.shape) < 0.02] = np.nan
        expected = np.asarray(booster.inplace_predict(probe), dtype=np.float32)
        if not np.array_equal(forest.predict(probe).view(np.int32), expected.view(np.int32)):
            return None
        return forest

    @classmethod
    def _parse(cls, model: dict[str, Any]) -> CompiledForest | None:
        """Flatten XGBoost's JSON model; ``None`` for a kind this kernel does not do."""
        learner = model["learner"]
        if learner["objective"]["name"] != "reg:squarederror":
            return None
        params = learner["learner_model_param"]
        if int(params.get("num_class", "0")) > 1 or int(params.get("num_target", "1")) != 1:
            return None
        booster = learner["gradient_booster"]
        if booster["name"] != "gbtree":
            return None
        trees = booster["model"]["trees"]
        if not trees or any(int(t) != 0 for t in booster["model"]["tree_info"]):
            return None
        if any(int(s) != 0 for tree in trees for s in tree["split_type"]):
            return None  # categorical splits
        base_text = str(params["base_score"]).strip("[]")
        if "," in base_text:
            return None
        depth = max(_tree_depth(tree) for tree in trees)
        if depth > MAX_DEPTH:
            return None
        inner = 2 ** depth - 1
        feature = np.zeros((len(trees), inner), dtype=np.int32)
        threshold = np.full((len(trees), inner), np.inf, dtype=np.float32)
        default_left = np.ones((len(trees), inner), dtype=np.uint8)
        leaf = np.zeros((len(trees), inner + 1), dtype=np.float32)
        for t, tree in enumerate(trees):
            _fill(tree, depth, feature[t], threshold[t], default_left[t], leaf[t])
        return cls(num_features=int(params["num_feature"]), base=np.float32(float(base_text)),
                   feature=feature, threshold=threshold, default_left=default_left, leaf=leaf)


def _tree_depth(tree: dict[str, Any]) -> int:
    """Edges from the root to the deepest leaf of one XGBoost JSON tree."""
    left, right = tree["left_children"], tree["right_children"]
    deepest, stack = 0, [(0, 0)]
    while stack:
        node, level = stack.pop()
        if left[node] == -1:
            deepest = max(deepest, level)
        else:
            stack += [(left[node], level + 1), (right[node], level + 1)]
    return deepest


def _fill(tree: dict[str, Any], depth: int, feature: np.ndarray, threshold: np.ndarray,
          default_left: np.ndarray, leaf: np.ndarray) -> None:
    """Write one XGBoost JSON tree into its complete-tree rows (padding: see the module's
    docstring; padding nodes keep feature 0, threshold +inf, default left)."""
    left, right = tree["left_children"], tree["right_children"]
    conditions = tree["split_conditions"]
    inner = 2 ** depth - 1
    stack = [(0, 0, 0)]  # (XGBoost node, heap node, level)
    while stack:
        node, heap, level = stack.pop()
        if left[node] == -1:
            span = 2 ** (depth - level)  # leaves below this heap node
            first = heap * span + span - 1 - inner
            leaf[first:first + span] = conditions[node]
            continue
        feature[heap] = int(tree["split_indices"][node])
        threshold[heap] = conditions[node]
        default_left[heap] = 1 if tree["default_left"][node] else 0
        stack += [(left[node], 2 * heap + 1, level + 1), (right[node], 2 * heap + 2, level + 1)]
