"""Compiled CPU updates of a decision node for :class:`~.solver.ClassStorageCFR` (numba).

A node's tables are ``[A, P, 1, C]`` (A actions, P prefixes, C classes: up to 3 x 81 x
62,020 = 15M numbers, 60 MB in float32, on the full game's turn).  The torch rules of
:func:`tensorcfr.core.public_tree.public_pass` and
:func:`~tensorcfr.core.public_tree.regret_matching_dense` walk them about twenty times per
node and iteration (value scale: |v|, sums, max; per action: v - value, R + r, max(R, 0),
sigma x reach, S x decay + w; regret matching: |R|, sum, bound, kept, sum, mask, uniform,
quotient), each walk a separate pass through memory with its temporaries.  Here:

* :func:`node_update` does a whole CFR / CFR+ update of one node of the updating player in
  two passes per prefix (the value scale's max over the classes first, as the bound needs
  it; then regrets, average and, inside an iteration, the new strategy, block by block);
* :func:`regret_matching` does regret matching alone (the nodes the pass did not update).

Both use the torch rules' float operations in the torch rules' order (sums over the
actions in action order, ``(sum |R| + scale) * tolerance``, ``uniform_or_0 + kept /
(total or 1)``, the dtype's own arithmetic), so the results are *bitwise* the torch path's
(tests/test_numeral211_solver_kernels.py).  Loops run over 1-D contiguous row views in
blocks of :data:`_BLOCK` infosets, which the compiler vectorises.  Nothing here knows the
game; ``AVAILABLE`` is False when numba cannot be imported (callers keep torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # numba is a dependency; a broken install falls back to the torch rule
    import numba

    def _njit(function: Any) -> Any:
        return numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False,
                          error_model="numpy")(function)
    AVAILABLE = True
except Exception:  # pragma: no cover - numba missing or broken
    AVAILABLE = False

    def _njit(function: Any) -> Any:
        return function

__all__ = ["AVAILABLE", "regret_matching", "node_update"]


_BLOCK = 512
"""Infosets per block: the block's per-infoset temporaries stay in the L1 cache and every
loop is a plain loop over 1-D contiguous views (vectorised by the compiler; indexing the
3-D arrays inside the loops defeats that: measured 6-7x slower)."""


@_njit
def _match_block(regrets: np.ndarray, p: int, c0: int, n: int, s: Any, tolerance: Any,
                 uniform: Any, bound: np.ndarray, total: np.ndarray,
                 out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Regret matching of infosets ``c0:c0 + n`` of prefix ``p`` (see :func:`regret_matching`)."""
    actions = regrets.shape[0]
    zero = tolerance - tolerance
    one = np.ones(1, dtype=regrets.dtype)[0]
    first = regrets[0, p, c0:c0 + n]
    for c in range(n):
        bound[c] = abs(first[c])
    for a in range(1, actions):
        row = regrets[a, p, c0:c0 + n]
        for c in range(n):
            bound[c] += abs(row[c])
    for c in range(n):
        bound[c] = (bound[c] + s) * tolerance
        total[c] = zero
    for a in range(actions):
        row = regrets[a, p, c0:c0 + n]
        for c in range(n):
            v = row[c]
            total[c] += v if v > bound[c] else zero
    for a in range(actions):
        row = regrets[a, p, c0:c0 + n]
        dst = out[a, p, c0:c0 + n]
        for c in range(n):
            v = row[c]
            kept = v if v > bound[c] else zero
            positive = total[c] > zero
            dst[c] = (zero if positive else uniform) + kept / (total[c] if positive else one)


@_njit
def regret_matching(regrets: np.ndarray, scale: np.ndarray, tolerance: Any, uniform: Any,
                    out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Strategy ``out`` [A, P, C] of one node from its cumulative regrets [A, P, C] and
    value scale ``scale`` [P] (one per public state): a regret counts when it exceeds
    ``(sum_a |R_a| + scale) * tolerance``; kept regrets are normalised, ``uniform``
    (``1 / A`` in the regrets' dtype, as are ``tolerance`` and ``scale``) where none is kept.
    Branch-free selects as in the torch rule: ``uniform_or_0 + kept / (total or 1)``."""
    prefixes, classes = regrets.shape[1], regrets.shape[2]
    bound = np.empty(_BLOCK, dtype=regrets.dtype)
    total = np.empty(_BLOCK, dtype=regrets.dtype)
    for p in range(prefixes):
        for c0 in range(0, classes, _BLOCK):
            _match_block(regrets, p, c0, min(_BLOCK, classes - c0), scale[p], tolerance,
                         uniform, bound, total, out)


@_njit
def node_update(child_values: Any, value: np.ndarray, own_reach: np.ndarray,
                regrets: np.ndarray, average: np.ndarray, strategy: np.ndarray,
                scale: np.ndarray, floor: bool, decay: Any, tolerance: Any, uniform: Any,
                match: bool) -> None:  # pragma: no cover - compiled
    """One CFR / CFR+ update of a decision node of the updating player, in place.

    ``child_values``: tuple of A arrays [P, C] (each action's counterfactual values);
    ``value`` [P, C] the node's value under ``strategy``; ``own_reach`` [P, C]; ``regrets``,
    ``average``, ``strategy`` [A, P, C] the node's slots; ``scale`` [P] the node's value
    scale.  The torch rules' operations in their order: ``scale[p] += max_c sum_a |v_a|``;
    ``R_a += v_a - value`` (then ``max(R_a, 0)`` when ``floor``, CFR+); ``S_a = S_a * decay
    + strategy_a * own_reach`` (``decay`` 1: a plain add); then, when ``match``, the
    strategy becomes regret matching of the new regrets (as :func:`regret_matching`, with
    the new scale; only where the caller refreshes the strategy right after the pass)."""
    actions, prefixes, classes = regrets.shape
    zero = tolerance - tolerance
    one = np.ones(1, dtype=regrets.dtype)[0]
    bound = np.empty(_BLOCK, dtype=regrets.dtype)
    total = np.empty(_BLOCK, dtype=regrets.dtype)
    plain_add = decay == one
    for p in range(prefixes):
        largest = zero
        for c0 in range(0, classes, _BLOCK):
            n = min(_BLOCK, classes - c0)
            first = child_values[0][p, c0:c0 + n]
            for c in range(n):
                bound[c] = abs(first[c])
            for a in range(1, actions):
                row = child_values[a][p, c0:c0 + n]
                for c in range(n):
                    bound[c] += abs(row[c])
            for c in range(n):
                if (c0 == 0 and c == 0) or bound[c] > largest:
                    largest = bound[c]
        scale[p] += largest
        s = scale[p]
        for c0 in range(0, classes, _BLOCK):
            n = min(_BLOCK, classes - c0)
            node = value[p, c0:c0 + n]
            reach = own_reach[p, c0:c0 + n]
            for a in range(actions):
                child = child_values[a][p, c0:c0 + n]
                cum = regrets[a, p, c0:c0 + n]
                for c in range(n):
                    r = cum[c] + (child[c] - node[c])
                    cum[c] = (zero if r < zero else r) if floor else r
                avg = average[a, p, c0:c0 + n]
                sigma = strategy[a, p, c0:c0 + n]
                if plain_add:
                    for c in range(n):
                        avg[c] = avg[c] + sigma[c] * reach[c]
                else:
                    for c in range(n):
                        avg[c] = avg[c] * decay + sigma[c] * reach[c]
            if match:
                _match_block(regrets, p, c0, n, s, tolerance, uniform, bound, total, strategy)
