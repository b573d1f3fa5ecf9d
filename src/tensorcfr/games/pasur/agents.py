"""Every Pasur player by name: the one registry the CLI, self-play, batches, tournaments and
the play server ask.

Two families:

* **open-hands players** (:data:`OPEN_PLAYER_NAMES`, :func:`make_player`): policies of one
  known deal that see every card (``random``, ``exact``, ``table``, ``model``); they play
  through the batched self-play engine (:mod:`.playing.selfplay`).
* **hidden-hand agents** (:data:`AGENT_NAMES`, :func:`make_agent`): players of the real game
  that see only their observation (:mod:`.playing.agent`); ``exact`` among them is the
  open-hands optimum, kept as a cheating upper bound.

Each name has one entry here with the line that describes it (the play page, ``--help`` and
the docs show it): :data:`OPEN_PLAYERS` and :data:`AGENTS`. A name enters once, through
:func:`check_agent_name` / :func:`check_agent_names` (a CLI option, a request, a settings
object), which strip it and answer an unknown name with the one error line; inner code takes
the checked :data:`~.vocab.AgentName`.

This module sits above the stages (engine -> solving -> playing -> learning) and may import
any of them; nothing in the stages imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.learning.hidden_model import DISTILLED_MODEL_DIR, HiddenModelAgent
from tensorcfr.games.pasur.learning.policy_model import ModelPlayer
from tensorcfr.games.pasur.playing.agent import ExactAgent, HiddenAgent, RandomAgent
from tensorcfr.games.pasur.playing.ismcts_agent import ISMCTSAgent, timed_ismcts_agent
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.pimc import PimcAgent
from tensorcfr.games.pasur.playing.pimc_infer import PimcInferAgent
from tensorcfr.games.pasur.playing.round_search import RoundSearchAgent
from tensorcfr.games.pasur.playing.players import (
    ExactPlayer,
    Player,
    RandomPlayer,
    TablePlayer,
)
from tensorcfr.games.pasur.vocab import AgentName

__all__ = ["AGENTS", "AGENT_NAMES", "AgentEntry", "AgentOptions", "DISTILLED_MODEL_DIR",
           "MAX_DETERMINIZATIONS",
           "MAX_SECONDS_PER_MOVE", "MAX_SIMULATIONS", "OPEN_PLAYERS", "OPEN_PLAYER_NAMES",
           "PLAYER_NAMES", "agent_names", "check_agent_name", "check_agent_names",
           "make_agent", "make_player"]

OPEN_PLAYERS: dict[str, str] = {
    "random": "plays a uniformly random legal move",
    "exact": "plays an optimal move (exact minimax solution of the deal)",
    "table": "plays the DCFR strategy table",
    "model": "plays the learned XGBoost policy",
}
"""Every open-hands player by name, with the line that describes it (a verb phrase: "the
table AI plays the DCFR strategy table")."""
OPEN_PLAYER_NAMES: tuple[str, ...] = tuple(OPEN_PLAYERS)
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
        determinizations: K, the draws per move of ``pimc`` / ``pimc-infer`` /
            ``round-search`` (>= 1).
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

    def identity(self) -> dict[str, Any]:
        """The options that can change an agent's plays, JSON-ready (a run folder's identity
        and its tables record them): ``determinizations``, ``seconds_per_move``,
        ``simulations`` and ``model`` (the folder as an absolute path, or None)."""
        return {"determinizations": self.determinizations,
                "seconds_per_move": self.seconds_per_move, "simulations": self.simulations,
                "model": None if self.model is None else str(Path(self.model).resolve())}


def _pimc_agent(cls: Callable[..., PimcAgent], options: AgentOptions) -> PimcAgent:
    """A ``pimc``-family agent (``round-search`` included) with the options' budget and
    reply limit."""
    agent = cls(options.determinizations, options.seconds_per_move, device=options.device)
    agent.max_reply_seconds = options.max_reply_seconds
    return agent


def _distilled_agent(options: AgentOptions) -> HiddenAgent:
    """The hidden-model agent with the model distilled from ``round-search``."""
    agent = HiddenModelAgent(DISTILLED_MODEL_DIR, threads=options.threads)
    agent.name = "distilled"
    return agent


@dataclass(frozen=True)
class AgentEntry:
    """One hidden-hand agent of the registry.

    Attributes:
        description: one line, a verb phrase ("the pimc AI draws the hidden cards ..."):
            the play page and the docs show it.
        build: the agent from the options (:class:`AgentOptions`; each agent reads the
            ones it uses).
        sees_everything: the agent is handed the true state (a cheating reference): the
            page says it sees your hand.
        reads: the options of :meth:`AgentOptions.identity` its plays depend on (results
            of runs whose options differ elsewhere may be pooled for it).
    """

    description: str
    build: Callable[[AgentOptions], HiddenAgent]
    sees_everything: bool = False
    reads: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.description.strip():
            raise ValueError("a registered agent needs a description")


_SEARCH = ("determinizations", "seconds_per_move")
AGENTS: dict[str, AgentEntry] = {
    "random": AgentEntry("plays a uniformly random legal move", lambda options: RandomAgent()),
    "greedy": AgentEntry("takes the play worth most points now", lambda options: GreedyAgent()),
    "pimc": AgentEntry("draws the hidden cards many times and plays the best play on average "
                       "(perfect-information Monte Carlo)",
                       lambda options: _pimc_agent(PimcAgent, options), reads=_SEARCH),
    "pimc-infer": AgentEntry("plays as pimc, with its draws weighted by what your plays "
                             "suggest about your hand",
                             lambda options: _pimc_agent(PimcInferAgent, options),
                             reads=_SEARCH),
    "round-search": AgentEntry("draws your hand many times, searches each draw to the end of "
                               "the round and values the rest of the game over the deals still "
                               "possible: it does not assume it knows the cards to come",
                               lambda options: _pimc_agent(RoundSearchAgent, options),
                               reads=_SEARCH),
    "hidden-model": AgentEntry("plays a policy learned from hidden-hand self-play",
                               lambda options: HiddenModelAgent(options.model,
                                                                threads=options.threads),
                               reads=("model",)),
    "distilled": AgentEntry("plays a policy learned from round-search's choices (one round of "
                            "expert iteration), in a small fraction of a millisecond",
                            _distilled_agent),
    "ismcts": AgentEntry("searches a tree of what it can see (information-set Monte Carlo "
                         "tree search), a number of simulations per move",
                         lambda options: ISMCTSAgent(simulations=options.simulations,
                                                     max_seconds=options.seconds_per_move),
                         reads=("simulations", "seconds_per_move")),
    "ismcts-time": AgentEntry("searches as ismcts, for its whole time budget per move",
                              lambda options: timed_ismcts_agent(options.seconds_per_move),
                              reads=("seconds_per_move",)),
    "exact": AgentEntry("cheats: sees every card and plays the open-hands optimum (a "
                        "reference)", lambda options: ExactAgent(device=options.device),
                        sees_everything=True),
}
"""Every hidden-hand agent by name: the one list (the CLI, tournaments and the play server ask
it; :func:`agent_names` reads it when asked, so an agent added later is offered at once)."""
AGENT_NAMES: tuple[str, ...] = tuple(AGENTS)
"""The agents registered when this module is loaded (:func:`agent_names`: those now)."""


def agent_names() -> tuple[str, ...]:
    """Every registered hidden-hand agent's name, in registration order."""
    return tuple(AGENTS)


def check_agent_name(name: str, option: str | None = None) -> AgentName:
    """``name`` (stripped) if an agent of that name is registered; a one-line
    :class:`TensorCFRError` otherwise, starting with ``option`` when given (``--agents``).

    >>> check_agent_name(" pimc ")
    'pimc'
    """
    stripped = name.strip() if isinstance(name, str) else name
    if not isinstance(stripped, str) or stripped not in AGENTS:
        where = f"{option}: " if option else ""
        raise TensorCFRError(f"{where}unknown agent {name!r}: choose one of "
                             f"{', '.join(agent_names())}")
    return AgentName(stripped)


def check_agent_names(names: Iterable[str], option: str | None = None
                      ) -> tuple[AgentName, ...]:
    """Each of ``names`` checked by :func:`check_agent_name`; blank ones (``"a,,b"``) are
    skipped."""
    return tuple(check_agent_name(n, option) for n in names
                 if not (isinstance(n, str) and not n.strip()))


def make_agent(name: str, options: AgentOptions | None = None) -> HiddenAgent:
    """A hidden-hand agent by name (:data:`AGENTS`).

    Raises:
        TensorCFRError: unknown name or unusable options (one line).
    """
    return AGENTS[check_agent_name(name)].build(options or AgentOptions())
