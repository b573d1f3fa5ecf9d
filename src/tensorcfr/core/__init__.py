"""Game-independent tensor CFR: regret updates, the level tree format, solvers, policy I/O.

* :mod:`tensorcfr.core.regret` -- regret matching and the CFR / CFR+ / LCFR / DCFR / PCFR+
  update rules over infoset-action slots (shared with the Pasur solver);
* :mod:`tensorcfr.core.tree` -- :class:`LevelTree`, a game flattened level by level;
* :mod:`tensorcfr.core.level_graph` -- the reach, value and regret passes over a level graph
  (tree or dag levels), shared by the generic solver and the Pasur solver;
* :mod:`tensorcfr.core.solver` -- :class:`TensorCFRSolver` (on a built tree) and the
  OpenSpiel-like wrappers, over :mod:`~tensorcfr.core.flat_tree` (the tree laid out for
  the passes), :mod:`~tensorcfr.core.pass_views` (the views each pass reads) and the
  numpy / numba fast paths (:mod:`~tensorcfr.core.numpy_passes`,
  :mod:`~tensorcfr.core.numba_passes`); :mod:`tensorcfr.core.cfr` re-exports the public
  names.  Game strings are turned into trees by the game packages
  (:mod:`tensorcfr.games.openspiel.solvers`), never here;
* :mod:`tensorcfr.core.policy_io` -- checkpoints and policies (NPZ + JSON metadata).

Nothing under ``tensorcfr.core`` imports a game package, the CLI or a game library
(``tests/test_core_boundary.py``).
"""

from tensorcfr.core.regret import (
    CFRVariant,
    average_decay,
    discount_regrets,
    normalize_strategy,
    regret_matching,
    update_average,
    update_regrets,
)
from tensorcfr.core.tree import KIND_CHANCE, KIND_TERMINAL, Level, LevelTree

__all__ = [
    "CFRVariant",
    "regret_matching",
    "update_regrets",
    "update_average",
    "normalize_strategy",
    "discount_regrets",
    "average_decay",
    "Level",
    "LevelTree",
    "KIND_CHANCE",
    "KIND_TERMINAL",
    "TensorCFRSolver",
    "CFRSolver",
    "CFRPlusSolver",
    "LinearCFRSolver",
    "DCFRSolver",
    "PCFRPlusSolver",
]

_SOLVERS = {"TensorCFRSolver", "CFRSolver", "CFRPlusSolver", "LinearCFRSolver", "DCFRSolver",
            "PCFRPlusSolver"}


def __getattr__(name: str) -> object:
    """Lazy access to the solver classes (keeps ``import tensorcfr.core`` light)."""
    if name in _SOLVERS:
        from tensorcfr.core import solver

        return getattr(solver, name)
    raise AttributeError(f"module 'tensorcfr.core' has no attribute {name!r}")
