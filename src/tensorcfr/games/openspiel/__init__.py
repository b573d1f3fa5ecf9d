"""OpenSpiel games for the generic tensor CFR engine: loading, flattening, solvers that take
game strings (:mod:`~tensorcfr.games.openspiel.solvers`), ``TabularPolicy`` conversions
(:mod:`~tensorcfr.games.openspiel.policy`) and one ``tensorcfr solve`` run as a library call
(:mod:`~tensorcfr.games.openspiel.solve`: ``solve(SolveSettings(...))``)."""

from tensorcfr.games.openspiel.flatten import (
    GameLoadError,
    UnsupportedGameError,
    flatten_game,
    load_game,
)

__all__ = ["GameLoadError", "UnsupportedGameError", "flatten_game", "load_game",
           "TensorCFRSolver", "CFRSolver", "CFRPlusSolver", "LinearCFRSolver", "DCFRSolver",
           "PCFRPlusSolver", "load_checkpoint"]

_SOLVERS = {"TensorCFRSolver", "CFRSolver", "CFRPlusSolver", "LinearCFRSolver", "DCFRSolver",
            "PCFRPlusSolver", "load_checkpoint"}


def __getattr__(name: str) -> object:
    """Lazy access to the solvers (importing this package does not build the core solver)."""
    if name in _SOLVERS:
        from tensorcfr.games.openspiel import solvers

        return getattr(solvers, name)
    raise AttributeError(f"module 'tensorcfr.games.openspiel' has no attribute {name!r}")
