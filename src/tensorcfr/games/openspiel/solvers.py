"""The tensor CFR solvers for OpenSpiel games: game strings in, OpenSpiel policies out.

These subclass the game-independent solvers of :mod:`tensorcfr.core.solver`: they flatten a
game string or ``pyspiel.Game`` with :func:`~tensorcfr.games.openspiel.flatten.flatten_game`
(an already flattened :class:`~tensorcfr.core.tree.LevelTree` is used as it is) and hand
the tree to the core, and they add ``average_policy_tabular`` / ``current_policy_tabular``
(OpenSpiel ``TabularPolicy`` objects).  The iterations are the core's, bit for bit.

Example::

    from tensorcfr.games.openspiel import CFRSolver
    solver = CFRSolver("kuhn_poker")      # threads=1 by default, float64
    solver.iterate(1000)
    tabular = solver.average_policy_tabular()
"""

from __future__ import annotations

from typing import Any

import torch

from tensorcfr.core import solver as core_solver
from tensorcfr.core.tree import LevelTree
from tensorcfr.errors import CorruptFileError

__all__ = ["TensorCFRSolver", "CFRSolver", "CFRPlusSolver", "LinearCFRSolver", "DCFRSolver",
           "PCFRPlusSolver", "load_checkpoint", "tree_for"]


def tree_for(game: Any, max_memory_bytes: int | str | None = "auto"
             ) -> tuple[LevelTree, Any]:
    """``(tree, pyspiel_game_or_None)`` for a game string, ``pyspiel.Game`` or
    :class:`LevelTree` (the walk refuses early above ``max_memory_bytes``: see
    :func:`~tensorcfr.games.openspiel.flatten.flatten_game`)."""
    if isinstance(game, LevelTree):
        return game, None
    from tensorcfr.games.openspiel.flatten import flatten_game, load_game

    loaded = load_game(game) if isinstance(game, str) else game
    tree = flatten_game(loaded, max_memory_bytes=max_memory_bytes, dtype=torch.float64)
    return tree, loaded


class _OpenSpielSolver:
    """Mixin: OpenSpiel game input and ``TabularPolicy`` output for a core solver."""

    tree: LevelTree
    _game: Any = None

    def _build_tree(self, game: Any, max_memory_bytes: int | None) -> LevelTree:
        tree, self._game = tree_for(game, max_memory_bytes)
        return tree

    @classmethod
    def checkpoint_class(cls) -> "type[core_solver.TensorCFRSolver]":
        return TensorCFRSolver

    @classmethod
    def load(cls, path: str, game: Any = None, device: torch.device | str | None = "cpu",
             max_memory_bytes: int | str | None = "auto",
             passes: str = "auto") -> "TensorCFRSolver":
        """A solver restored from a checkpoint (see :func:`load_checkpoint`; ``game``
        defaults to the checkpoint's own game string)."""
        return load_checkpoint(path, game, device=device, max_memory_bytes=max_memory_bytes,
                               passes=passes)

    def average_policy_tabular(self, game: Any = None) -> Any:
        """The average policy as an OpenSpiel ``TabularPolicy`` (``game`` defaults to the
        game the solver was built from, or loading ``tree.game_string``)."""
        from tensorcfr.games.openspiel.policy import to_tabular_policy

        return to_tabular_policy(self.tree, self.average_policy(),  # type: ignore[attr-defined]
                                 game or self._game)

    def current_policy_tabular(self, game: Any = None) -> Any:
        """The current policy as an OpenSpiel ``TabularPolicy``."""
        from tensorcfr.games.openspiel.policy import to_tabular_policy

        return to_tabular_policy(self.tree, self.current_policy(),  # type: ignore[attr-defined]
                                 game or self._game)


class TensorCFRSolver(_OpenSpielSolver, core_solver.TensorCFRSolver):
    """:class:`tensorcfr.core.solver.TensorCFRSolver` taking a game string, ``pyspiel.Game``
    or :class:`LevelTree` as ``game`` (same arguments otherwise)."""


class CFRSolver(_OpenSpielSolver, core_solver.CFRSolver):
    """Vanilla CFR with alternating updates (OpenSpiel ``CFRSolver``), on an OpenSpiel game."""


class CFRPlusSolver(_OpenSpielSolver, core_solver.CFRPlusSolver):
    """CFR+ (OpenSpiel ``CFRPlusSolver``), on an OpenSpiel game."""


class LinearCFRSolver(_OpenSpielSolver, core_solver.LinearCFRSolver):
    """Linear CFR (OpenSpiel ``LCFRSolver``), on an OpenSpiel game."""


class DCFRSolver(_OpenSpielSolver, core_solver.DCFRSolver):
    """Discounted CFR(alpha, beta, gamma) (OpenSpiel ``DCFRSolver``), on an OpenSpiel game."""


class PCFRPlusSolver(_OpenSpielSolver, core_solver.PCFRPlusSolver):
    """Predictive CFR+, on an OpenSpiel game."""


def load_checkpoint(path: str, game: Any = None, device: torch.device | str | None = "cpu",
                    max_memory_bytes: int | str | None = "auto",
                    passes: str = "auto") -> TensorCFRSolver:
    """Rebuild a solver from a checkpoint (bitwise resume).

    ``game`` (game string, ``pyspiel.Game`` or :class:`LevelTree`) defaults to the
    checkpoint's own game string; a checkpoint of another game raises
    :class:`~tensorcfr.errors.CorruptFileError` before the game is walked.
    """
    from tensorcfr.core.policy_io import read_checkpoint_metadata
    from tensorcfr.games.openspiel.flatten import load_game

    metadata = read_checkpoint_metadata(path)
    game_string = str(metadata.get("game"))
    if game is None:
        game = game_string
    if isinstance(game, str):
        game = load_game(game)
    other = game.game_string if isinstance(game, LevelTree) else str(game)
    if other != game_string:
        raise CorruptFileError(f"{path}: checkpoint is for {game_string}, not {other}")
    solver = core_solver.load_checkpoint(path, game, device=device,
                                      max_memory_bytes=max_memory_bytes,
                                      solver_class=TensorCFRSolver, passes=passes)
    assert isinstance(solver, TensorCFRSolver)
    return solver
