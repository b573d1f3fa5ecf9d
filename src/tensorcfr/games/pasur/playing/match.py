"""Whole games of hidden-hand Pasur between two agents, one play at a time.

:func:`play_game` runs one game of a deal over the reference engine (:mod:`rules`): at each
play the mover's agent is shown its :func:`observe` view and answers one legal
:class:`rules.Action`; the true state is passed along only to an agent whose
``sees_everything`` is true (the cheating ``exact`` reference). :func:`play_hidden_games`
plays several games of one deal (game ``i`` with seed ``seed + i``), for self-play and
tournaments.

Units: points (Alex minus Bob for :attr:`GameResult.utility`), seconds of wall time per
play for :attr:`GameResult.move_seconds`. This module knows agents only through the
:class:`~.agent.HiddenAgent` protocol; it does not know the agents' names or options.

>>> from tensorcfr.games.pasur.engine.rules import random_deal
>>> from tensorcfr.games.pasur.playing.agent import RandomAgent
>>> result = play_game(random_deal(3), RandomAgent(), RandomAgent(), seed=0)
>>> result.state.is_terminal, result.utility == result.alex_points - result.bob_points
(True, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.observation import observe
from tensorcfr.games.pasur.playing.agent import HiddenAgent
from tensorcfr.games.pasur.playing.selfplay import matchup_summary

__all__ = ["GameResult", "hidden_games_summary", "move_seconds_stats", "play_game",
           "play_hidden_games"]


@dataclass(frozen=True)
class GameResult:
    """One finished game.

    Attributes:
        state: the final state (48 plays, ``history`` holds every play).
        alex_points: Alex's points at the end.
        bob_points: Bob's points at the end.
        utility: Alex's points minus Bob's.
        move_seconds: per seat (Alex, Bob), the wall-clock seconds of each of its 24 plays
            (the agent's ``choose`` call, observation excluded).
        seed: the seed the agents were reset with.
    """

    state: rules.GameState
    alex_points: int
    bob_points: int
    utility: int
    move_seconds: tuple[tuple[float, ...], tuple[float, ...]]
    seed: int

    @property
    def actions(self) -> tuple[rules.Action, ...]:
        """Every play of the game, in order."""
        return self.state.history


def play_game(deal: Sequence[int], alex: HiddenAgent, bob: HiddenAgent, seed: int, *,
              start: rules.GameState | None = None) -> GameResult:
    """Play one game of ``deal`` between ``alex`` (seat 0) and ``bob`` (seat 1).

    Both agents are ``reset(seed)`` first (the same agent object may sit in both seats: it is
    then reset once). Each agent sees only its observation; ``state=`` carries the true state
    to an agent with ``sees_everything`` only. ``start`` (a state of ``deal`` reached by
    plays from its beginning) plays the rest of a game from there; ``move_seconds`` then
    hold the plays from ``start`` on.

    Raises:
        TensorCFRError: an agent answered an illegal play (one line naming it).
    """
    state = rules.initial_state(deal) if start is None else start
    if tuple(state.deal) != tuple(deal):
        raise TensorCFRError("the start state is from another deal")
    agents = (alex, bob)
    alex.reset(seed)
    if bob is not alex:
        bob.reset(seed)
    seconds: tuple[list[float], list[float]] = ([], [])
    while not state.is_terminal:
        player = state.player
        agent = agents[player]
        obs = observe(state, player)
        start = time.perf_counter()
        action = agent.choose(obs, state if agent.sees_everything else None)
        seconds[player].append(time.perf_counter() - start)
        reason = rules.illegal_reason(state, action)
        if reason is not None:
            raise TensorCFRError(f"agent {agent.name!r} ({rules.PLAYERS[player]}) played an "
                                 f"illegal move at play {state.play_index}: {reason}")
        state = rules.apply_action(state, action)
    alex_score, bob_score = rules.score(state)
    return GameResult(state=state, alex_points=alex_score.total, bob_points=bob_score.total,
                      utility=alex_score.total - bob_score.total,
                      move_seconds=(tuple(seconds[0]), tuple(seconds[1])), seed=seed)


def play_hidden_games(deal: Sequence[int], agent_a: HiddenAgent, agent_b: HiddenAgent,
                      games: int, seed: int = 0,
                      progress: Callable[[int], None] | None = None) -> list[GameResult]:
    """``games`` games of ``deal``, ``agent_a`` as Alex and ``agent_b`` as Bob; game ``i`` is
    played with seed ``seed + i`` (same seeds, same games). ``progress(done)`` is called
    after each game."""
    if games < 1:
        raise TensorCFRError(f"the number of games must be at least 1, got {games}")
    results = []
    for i in range(games):
        results.append(play_game(deal, agent_a, agent_b, seed + i))
        if progress is not None:
            progress(i + 1)
    return results


def hidden_games_summary(results: Sequence[GameResult]) -> dict[str, Any]:
    """Statistics of finished games: those of :func:`selfplay.matchup_summary` (mean
    difference, 95% interval, win / tie / loss rates, fair value) plus, per seat, the median,
    90th percentile and mean of its seconds per play (``alex_move_seconds``,
    ``bob_move_seconds``: dicts with ``median``, ``p90``, ``mean``, ``plays``)."""
    out = matchup_summary([r.utility for r in results])
    for seat, key in ((0, "alex_move_seconds"), (1, "bob_move_seconds")):
        out[key] = move_seconds_stats([s for r in results for s in r.move_seconds[seat]])
    return out


def move_seconds_stats(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """``median``, ``p90`` (nearest-rank 90th percentile), ``mean`` and ``plays`` of
    per-play seconds (``None`` values when there are none)."""
    values = sorted(seconds)
    n = len(values)
    if n == 0:
        return {"median": None, "p90": None, "mean": None, "plays": 0}
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    p90 = values[min(n - 1, max(0, math.ceil(0.9 * n) - 1))]
    return {"median": median, "p90": p90, "mean": sum(values) / n, "plays": n}
