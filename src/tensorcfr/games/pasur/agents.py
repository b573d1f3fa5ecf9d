"""Every Pasur player by name: the one registry the CLI, self-play, batches, tournaments and
the play server ask.

Two families:

* **open-hands players** (:data:`OPEN_PLAYER_NAMES`): policies of one known deal that see
  every card (``random``, ``exact``, ``table``, ``model``); they play through the batched
  self-play engine (:mod:`.playing.selfplay`).

This module sits above the stages (engine -> solving -> playing -> learning) and may import
any of them; nothing in the stages imports it.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import torch

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.learning.policy_model import ModelPlayer
from tensorcfr.games.pasur.playing.players import (
    ExactPlayer,
    Player,
    RandomPlayer,
    TablePlayer,
)

__all__ = ["OPEN_PLAYER_NAMES", "PLAYER_NAMES", "make_player"]

OPEN_PLAYER_NAMES = ("random", "exact", "table", "model")
PLAYER_NAMES = OPEN_PLAYER_NAMES
"""Names :func:`make_player` accepts."""


def make_player(name: str, deal: Sequence[int], *, model: str | os.PathLike[str] | None = None,
                table: str | os.PathLike[str] | None = None, device: str = "cpu",
                threads: int = 1, solution: Any = None) -> Player:
    """A player of ``deal`` by name (``PLAYER_NAMES``).

    Args:
        name: ``random``, ``exact``, ``table`` (needs ``table``: a DCFR run directory or its
            ``strategy.parquet``) or ``model`` (needs ``model``: a policy model directory).
        deal: the deal the player plays (52 card indices).
        device: torch device of its tensors.
        threads: XGBoost threads of a model player.
        solution: an :class:`exact.ExactSolution` of the deal to reuse (``exact`` only).

    Raises:
        TensorCFRError: unknown name, missing or unreadable model / table (one line).
    """
    if name not in PLAYER_NAMES:
        raise TensorCFRError(f"unknown player {name!r}: choose one of "
                             f"{', '.join(PLAYER_NAMES)}")
    try:
        torch.device(device)
    except (RuntimeError, ValueError):
        raise TensorCFRError(f"device {device!r} is not a torch device (e.g. cpu, cuda)") \
            from None
    if name == "random":
        return RandomPlayer(deal, device)
    if name == "exact":
        return ExactPlayer(deal, device, solution=solution)
    if name == "table":
        if table is None:
            raise TensorCFRError("the table player needs --table DIR (the --out folder of "
                                 "`tensorcfr pasur solve --method dcfr`)")
        return TablePlayer(deal, table, device)
    if model is None:
        raise TensorCFRError("the model player needs --model DIR (a folder written by "
                             "`tensorcfr pasur train`)")
    return ModelPlayer(deal, model, device, threads=threads)
