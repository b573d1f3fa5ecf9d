"""The tensor CFR solvers' public names, in one import (the stable path for user code).

The engine lives in four modules, each one step of the flow:

* :mod:`tensorcfr.core.flat_tree` -- :class:`~tensorcfr.core.flat_tree.FlatTree`, a
  :class:`~tensorcfr.core.tree.LevelTree` laid out once for the passes (flat by depth,
  slots numbered player by player, chunked levels);
* :mod:`tensorcfr.core.pass_views` -- the per-level (and per-chunk) tensor views each pass
  touches, built once per solver;
* :mod:`tensorcfr.core.numpy_passes` -- the numpy fast path of an iteration (small trees on
  CPU; :mod:`tensorcfr.core.numba_passes` is the compiled one for large trees);
* :mod:`tensorcfr.core.solver` -- :class:`TensorCFRSolver` (state, torch passes, public
  API, checkpoints), its variants (:class:`CFRSolver` ... :class:`PCFRPlusSolver`),
  :func:`load_checkpoint` and :func:`policy_values`.

``from tensorcfr.core.cfr import TensorCFRSolver`` keeps working; code inside the project
imports from the module that defines a name.  The module knows no game (an OpenSpiel game
string goes through :mod:`tensorcfr.games.openspiel.solvers`).
"""

from __future__ import annotations

from tensorcfr.core.solver import (
    AUTO_FLOAT32_MIN_NODES,
    NUMBA_MIN_NODES,
    NUMPY_FAST_PATH_MAX_NODES,
    CFRPlusSolver,
    CFRSolver,
    DCFRSolver,
    LinearCFRSolver,
    PCFRPlusSolver,
    TensorCFRSolver,
    load_checkpoint,
    policy_values,
    resolve_device,
    resolve_dtype,
)

__all__ = [
    "TensorCFRSolver",
    "CFRSolver",
    "CFRPlusSolver",
    "LinearCFRSolver",
    "DCFRSolver",
    "PCFRPlusSolver",
    "policy_values",
    "load_checkpoint",
    "resolve_device",
    "resolve_dtype",
    "AUTO_FLOAT32_MIN_NODES",
    "NUMBA_MIN_NODES",
    "NUMPY_FAST_PATH_MAX_NODES",
]
