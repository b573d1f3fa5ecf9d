"""Every Pasur player by name: the one registry the CLI, self-play, batches, tournaments and
the play server ask.

Two families:

* **open-hands players** (:data:`OPEN_PLAYER_NAMES`, :func:`make_player`): policies of one
  known deal that see every card (``random``, ``exact``, ``table``, ``model``); they play
  through the batched self-play engine (:mod:`.playing.selfplay`).
* **hidden-hand agents** (:data:`AGENT_NAMES`, :func:`make_agent`): players of the real game
  that see only their observation (:mod:`.playing.agent`); ``exact`` among them is the
  open-hands optimum, kept as a cheating upper bound.

This module sits above the stages (engine -> solving -> playing -> learning) and may import
any of them; nothing in the stages imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.learning.hidden_model import HiddenModelAgent
from tensorcfr.games.pasur.learning.policy_model import ModelPlayer
from tensorcfr.games.pasur.playing.agent import ExactAgent, HiddenAgent, RandomAgent
from tensorcfr.games.pasur.playing.ismcts_agent import ISMCTSAgent, timed_ismcts_agent
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.pimc import PimcAgent
from tensorcfr.games.pasur.playing.pimc_infer import PimcInferAgent
from tensorcfr.games.pasur.playing.players import (
    ExactPlayer,
    Player,
    RandomPlayer,
    TablePlayer,
)

__all__ = ["AGENT_NAMES", "AgentOptions", "MAX_DETERMINIZATIONS", "MAX_SECONDS_PER_MOVE",
           "MAX_SIMULATIONS", "OPEN_PLAYER_NAMES", "PLAYER_NAMES", "make_agent",
           "make_player"]

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


# --------------------------------------------------------------------------- hidden hands


MAX_DETERMINIZATIONS = 100_000
"""Most determinizations K per move an agent takes (each is an exact solve)."""
MAX_SIMULATIONS = 100_000_000
"""Most ISMCTS simulations per move (about a day of one core)."""
MAX_SECONDS_PER_MOVE = 3600.0
"""Longest time budget per move, in seconds (a finite bound: ``inf`` never ends a move)."""


@dataclass(frozen=True)
class AgentOptions:
    """Settings of the hidden-hand agents (each agent reads the ones it uses).

    Attributes:
        determinizations: K, the draws per move of ``pimc`` / ``pimc-infer`` (>= 1).
        seconds_per_move: a time budget per move (``pimc`` starts no draw it expects to end
            after it, ``ismcts`` stops searching when it is spent, ``ismcts-time`` searches for
            this long); ``None``: no budget.
        simulations: ISMCTS simulations per move (``ismcts``).
        model: the folder of a ``hidden-model`` (``tensorcfr pasur train-hidden``); ``None``:
            the model shipped with the package.
        device: torch device of the exact solver.
        threads: XGBoost threads.
        max_reply_seconds: a hard limit on a play of ``pimc`` / ``pimc-infer`` (the play
            server's): when not even one draw is solved within it, the agent plays the
            ``greedy`` play; ``None``: the first draw is always solved, however long it takes.
    """

    determinizations: int = 32
    seconds_per_move: float | None = None
    simulations: int = 1000
    model: Path | None = None
    device: str = "cpu"
    threads: int = 1
    max_reply_seconds: float | None = None

    def __post_init__(self) -> None:
        from tensorcfr.utils.checks import check_int_range

        check_int_range(self.determinizations, "--determinizations", 1, MAX_DETERMINIZATIONS,
                        why="draws per move, each an exact solve")
        if self.seconds_per_move is not None and not (
                0 < self.seconds_per_move <= MAX_SECONDS_PER_MOVE):
            raise TensorCFRError(f"--seconds-per-move must be a positive number of seconds, "
                                 f"at most {MAX_SECONDS_PER_MOVE:,} (an hour), got "
                                 f"{self.seconds_per_move}")
        check_int_range(self.simulations, "--simulations", 1, MAX_SIMULATIONS,
                        why="ISMCTS simulations per move")
        if self.max_reply_seconds is not None and not (
                0 < self.max_reply_seconds <= MAX_SECONDS_PER_MOVE):
            raise TensorCFRError(f"the reply limit must be a positive number of seconds, at "
                                 f"most {MAX_SECONDS_PER_MOVE:,}, got {self.max_reply_seconds}")


def _pimc_agent(cls: Callable[..., PimcAgent], options: AgentOptions) -> PimcAgent:
    """A ``pimc``-family agent with the options' budget and reply limit."""
    agent = cls(options.determinizations, options.seconds_per_move, device=options.device)
    agent.max_reply_seconds = options.max_reply_seconds
    return agent


_AGENT_FACTORIES: dict[str, Callable[[AgentOptions], HiddenAgent]] = {
    "random": lambda options: RandomAgent(),
    "greedy": lambda options: GreedyAgent(),
    "pimc": lambda options: _pimc_agent(PimcAgent, options),
    "pimc-infer": lambda options: _pimc_agent(PimcInferAgent, options),
    "hidden-model": lambda options: HiddenModelAgent(options.model, threads=options.threads),
    "ismcts": lambda options: ISMCTSAgent(simulations=options.simulations,
                                          max_seconds=options.seconds_per_move),
    "ismcts-time": lambda options: timed_ismcts_agent(options.seconds_per_move),
    "exact": lambda options: ExactAgent(device=options.device),
}
AGENT_NAMES: tuple[str, ...] = tuple(_AGENT_FACTORIES)
"""Names :func:`make_agent` accepts."""


def make_agent(name: str, options: AgentOptions | None = None) -> HiddenAgent:
    """A hidden-hand agent by name (:data:`AGENT_NAMES`).

    Raises:
        TensorCFRError: unknown name or unusable options (one line).
    """
    factory = _AGENT_FACTORIES.get(name)
    if factory is None:
        raise TensorCFRError(f"unknown agent {name!r}: choose one of {', '.join(AGENT_NAMES)}")
    return factory(options or AgentOptions())
