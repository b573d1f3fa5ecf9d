"""Hidden-hand agents: players of the real game, that see only their observation.

An agent is asked for one play at a time, from what its player sees
(:class:`~tensorcfr.games.pasur.engine.observation.Observation`):

* :meth:`HiddenAgent.choose` -> one legal :class:`rules.Action`;
* :meth:`HiddenAgent.estimates` -> its evaluation of every legal play (for hints and the
  post-game analysis), or ``None`` for agents that have none;
* :meth:`HiddenAgent.reset` -> before each game, with the game's seed (same seed, same play).

Values are **final points difference from the mover's side** (the mover's whole-game points
minus the opponent's, points already scored included), so a hint reads the same for Alex and
Bob.

The one exception to "sees only its observation" is the reference player ``exact``
(:class:`ExactAgent`, ``sees_everything = True``): it is handed the true state and plays the
open-hands optimum. It is an upper bound, marked as cheating wherever it appears; a runner
passes the true state to an agent only when its ``sees_everything`` is true.

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> from tensorcfr.games.pasur.engine.observation import observe
>>> agent = RandomAgent(); agent.reset(seed=0)
>>> obs = observe(initial_state(random_deal(3)), player=0)
>>> agent.choose(obs) in obs.legal_actions()
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.observation import Observation

__all__ = ["ExactAgent", "HiddenAgent", "PlayEstimate", "RandomAgent", "mover_sign"]


@dataclass(frozen=True)
class PlayEstimate:
    """An agent's evaluation of one legal play.

    Attributes:
        action: the play.
        value: expected final points difference from the mover's side (mover minus
            opponent, whole game).
        samples: how many draws (determinizations, roll-outs) the value averages; 1 for a
            deterministic evaluation.
    """

    action: rules.Action
    value: float
    samples: int = 1


@runtime_checkable
class HiddenAgent(Protocol):
    """A player of the hidden-hand game."""

    name: str
    sees_everything: bool

    def reset(self, seed: int) -> None:
        """Start a new game; the agent's random draws follow ``seed``."""
        ...

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        """One legal play for ``obs`` (``obs.my_turn`` must hold). ``state`` is the true
        state, passed only to agents with ``sees_everything``."""
        ...

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        """The agent's evaluation of every legal play, or ``None`` if it has none."""
        ...


def mover_sign(player: int) -> int:
    """+1 for Alex, -1 for Bob: turns Alex-minus-Bob points into the mover's side."""
    return 1 if player == rules.ALEX else -1


def check_turn(obs: Observation, name: str) -> list[rules.Action]:
    """The legal plays of ``obs``; raises if it is not the observer's turn."""
    legal = obs.legal_actions()
    if not legal:
        raise TensorCFRError(f"the {name} agent was asked to play when it is not its turn")
    return legal


class RandomAgent:
    """Uniform over the legal plays (seeded)."""

    name = "random"
    sees_everything = False

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def reset(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        return self._rng.choice(check_turn(obs, self.name))

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        return None


class ExactAgent:
    """The open-hands optimum (cheats: it is handed the true state). Ties: the first optimal
    play in :func:`rules.legal_actions` order."""

    name = "exact"
    sees_everything = True

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self._solution = None

    def reset(self, seed: int) -> None:
        self._solution = None

    def _values(self, state: rules.GameState) -> Sequence[tuple[rules.Action, int]]:
        from tensorcfr.games.pasur.solving.exact import StateNotSolvedError, solve_exact

        if self._solution is not None:
            try:
                return self._solution.action_values(state)
            except StateNotSolvedError:
                pass
        self._solution = solve_exact(state, device=self.device)
        return self._solution.action_values(state)

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        check_turn(obs, self.name)
        if state is None:
            raise TensorCFRError("the exact agent sees everything: it needs the true state")
        sign = mover_sign(state.player)
        values = self._values(state)
        best = max(sign * v for _, v in values)
        return next(a for a, v in values if sign * v == best)

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        return None
