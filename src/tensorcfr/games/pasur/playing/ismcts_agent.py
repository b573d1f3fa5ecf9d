"""ISMCTS agents: OpenSpiel's Information Set MCTS playing ``python_pasur`` from an observation.

Two hidden-hand agents (:class:`~.agent.HiddenAgent`) around
:class:`open_spiel.python.algorithms.ismcts.ISMCTSBot` with
:class:`open_spiel.python.algorithms.mcts.RandomRolloutEvaluator` (one uniformly random
roll-out to the end of the game per leaf, chance nodes sampled from their outcomes):

* ``ismcts``: ``simulations`` simulations per move, and with ``max_seconds`` (the registry's
  ``seconds_per_move``, as the play server gives every agent) no more than that time;
* ``ismcts-time``: the same search for ``seconds_per_move`` seconds per move.

Bot settings: ``uct_c`` = :data:`UCT_C` = 10 (returns are points differences, whose spread
under random play is about 11 points, where OpenSpiel's usual ``uct_c = 2`` is meant for
returns in [-1, 1]); the bot's defaults otherwise: ``max_world_samples`` unlimited (every
simulation draws a fresh world), UCT child selection, final policy = the most visited play
(ties broken at random), infostate keys from ``information_state_string``.

**A move.** :meth:`ISMCTSAgent.choose` builds one ``python_pasur`` state consistent with the
observation (one uniform :func:`determinize.determinize` draw, replayed through the chance
deals and the observed plays); ISMCTS reads only its information state from it: every
simulation starts from a fresh uniform draw of the hidden cards
(:meth:`PasurState.resample_from_infostate`, seeded by the agent, built directly rather than
replayed: ISMCTS never reads ``history()``). The chosen action id is
mapped back to a :class:`rules.Action` by the state.

**Budget.** OpenSpiel's ``run_search`` spends its first simulation expanding the root (a
roll-out that visits no root child) and cannot stop on time, so :class:`BudgetedISMCTSBot`
keeps the bot's tree, selection, expansion, back-up and final policy and replaces only the
loop: after the root's expansion it runs ``simulations`` descents through the root's
children (stopping early once ``max_seconds`` is spent, when given), or, with a time budget,
descents until ``seconds_per_move`` is spent; times are measured from the start of the search,
expansion included, the clock checked after each simulation (a slice of one simulation), and
at least one descent is run. One legal play: no search.

**Seeding.** :meth:`reset` seeds one ``numpy.random.RandomState`` that the bot, the roll-outs
and the world draws share: same seed, same play for ``ismcts`` without ``max_seconds``
(``ismcts-time``, and a search the time cap cuts short, depend on the machine's speed). Seeds
are 0..2^63-1: below 2^32 as ``RandomState(seed)``, larger ones as its two 32-bit words.

**Estimates.** :meth:`estimates` returns, for each play the search visited, the root's mean
return (final points difference from the mover's side, points already scored included) and
its visit count; plays not visited (only when simulations are fewer than the plays) are left
out. It reuses the search of the last :meth:`choose` on the same observation, else searches.

This module knows OpenSpiel, the ``python_pasur`` game and the engine; nothing of the
registry or the tournaments.

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> from tensorcfr.games.pasur.engine.observation import observe
>>> agent = ISMCTSAgent(simulations=5); agent.reset(seed=0)
>>> obs = observe(initial_state(random_deal(3)), player=0)
>>> agent.choose(obs) in obs.legal_actions(), agent.last_simulations
(True, 5)
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
from open_spiel.python.algorithms.ismcts import ISMCTSBot
from open_spiel.python.algorithms.mcts import RandomRolloutEvaluator

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import Observation
from tensorcfr.games.pasur.playing.agent import PlayEstimate, check_turn
from tensorcfr.games.pasur.playing.openspiel_game import (
    PasurState,
    load_game,
    state_from_rules,
)

__all__ = ["BudgetedISMCTSBot", "ISMCTSAgent", "UCT_C", "timed_ismcts_agent"]

UCT_C = 10.0
"""UCT exploration constant, in points (see the module docstring)."""


class BudgetedISMCTSBot(ISMCTSBot):
    """OpenSpiel's ISMCTS bot whose search runs a number of simulations or until a time
    budget is spent (see the module docstring).

    Args:
        game: the ``python_pasur`` game.
        evaluator: the leaf evaluator (a ``RandomRolloutEvaluator``).
        uct_c: UCT exploration constant.
        simulations: descents through the root's children per search (>= 1).
        seconds: if given, search until this many seconds have passed instead.
        random_state: the ``numpy.random.RandomState`` of all the bot's draws.
        max_seconds: with ``simulations``: stop early once this many seconds have passed.
    """

    def __init__(self, game: Any, evaluator: Any, uct_c: float, simulations: int,
                 seconds: float | None, random_state: np.random.RandomState,
                 max_seconds: float | None = None) -> None:
        super().__init__(game, evaluator, uct_c, simulations, random_state=random_state)
        self.seconds = seconds
        self.max_seconds = max_seconds
        self.last_simulations = 0
        self.root: Any = None

    def run_search(self, state: Any) -> list[tuple[int, float]]:
        """The final policy [(action, probability)] after a budgeted search from ``state``."""
        self.reset()
        start = time.perf_counter()
        self.root = self._root_node = self.create_new_node(state)
        self.run_simulation(self.sample_root_state(state))  # expands the root
        descents = 0
        while True:
            self.run_simulation(self.sample_root_state(state))
            descents += 1
            elapsed = time.perf_counter() - start
            if self.seconds is None:
                if descents >= self._max_simulations or (
                        self.max_seconds is not None and elapsed >= self.max_seconds):
                    break
            elif elapsed >= self.seconds:
                break
        self.last_simulations = descents
        return self.get_final_policy(state, self.root)


class ISMCTSAgent:
    """A hidden-hand agent searching with OpenSpiel's ISMCTS (see the module docstring).

    Raises :class:`TensorCFRError` on a simulation count below 1 or a non-positive time.

    Args:
        simulations: simulations (root descents) per move, when ``seconds_per_move`` is None.
        seconds_per_move: a time budget per move instead of a simulation count.
        uct_c: UCT exploration constant (points).
        name: the agent's registry name.
        max_seconds: with a simulation count: the most seconds a move may take.
    """

    sees_everything = False

    def __init__(self, simulations: int = 1000, seconds_per_move: float | None = None,
                 uct_c: float = UCT_C, name: str = "ismcts",
                 max_seconds: float | None = None) -> None:
        if simulations < 1:
            raise TensorCFRError(f"ISMCTS needs at least 1 simulation per move, got "
                                 f"{simulations}")
        if seconds_per_move is not None and not seconds_per_move > 0:
            raise TensorCFRError(f"the time per move must be positive, got {seconds_per_move}")
        if max_seconds is not None and not max_seconds > 0:
            raise TensorCFRError(f"the time per move must be positive, got {max_seconds}")
        self.max_seconds = max_seconds
        self.name = name
        self.simulations = simulations
        self.seconds_per_move = seconds_per_move
        self.uct_c = uct_c
        self._game = load_game()
        self._last: tuple[str, list[PlayEstimate]] | None = None
        self.reset(0)

    def reset(self, seed: int) -> None:
        """New game: every draw (worlds, roll-outs, ties) follows
        ``numpy.random.RandomState(seed)``."""
        seed = int(seed)
        self._random_state = np.random.RandomState(
            seed if seed < 2**32 else [seed & 0xFFFFFFFF, seed >> 32])
        evaluator = RandomRolloutEvaluator(random_state=self._random_state)
        self._bot = BudgetedISMCTSBot(self._game, evaluator, self.uct_c, self.simulations,
                                      self.seconds_per_move, self._random_state,
                                      max_seconds=self.max_seconds)
        self._bot.set_resampler(self._resample)
        self._last = None

    @property
    def last_simulations(self) -> int:
        """Root descents of the last search (0 if the last move had no search)."""
        return self._bot.last_simulations

    def _resample(self, state: PasurState, player: int) -> PasurState:
        return state.resample_from_infostate(player, self._random_state.random_sample,
                                             replay=False)

    def _root_state(self, obs: Observation) -> PasurState:
        world_seed = int(self._random_state.randint(2 ** 31))
        return state_from_rules(self._game, determinize(obs, random.Random(world_seed)))

    def _search(self, obs: Observation) -> tuple[PasurState, list[tuple[int, float]]]:
        root = self._root_state(obs)
        policy = self._bot.run_search(root)
        node = self._bot.root
        estimates = [PlayEstimate(action=root.rules_action(a), value=float(child.value()),
                                  samples=int(child.visits))
                     for a, child in sorted(node.child_info.items()) if child.visits > 0]
        self._last = (obs.key(), estimates)
        return root, policy

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        """The play ISMCTS picks for ``obs`` (the most visited; ties at random)."""
        legal = check_turn(obs, self.name)
        if len(legal) == 1:
            self._bot.last_simulations = 0
            return legal[0]
        root, policy = self._search(obs)
        actions = [a for a, _ in policy]
        probabilities = np.asarray([p for _, p in policy], dtype=np.float64)
        chosen = int(self._random_state.choice(actions, p=probabilities / probabilities.sum()))
        return root.rules_action(chosen)

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        """The root's mean final points difference (mover's side) and visits per visited
        play, from the last search on ``obs`` or a new one."""
        check_turn(obs, self.name)
        if self._last is None or self._last[0] != obs.key():
            self._search(obs)
        assert self._last is not None
        return list(self._last[1])


def timed_ismcts_agent(seconds_per_move: float | None) -> ISMCTSAgent:
    """The ``ismcts-time`` agent: ISMCTS searching ``seconds_per_move`` seconds per move.

    Raises:
        TensorCFRError: no time budget given, or not a positive one.
    """
    if seconds_per_move is None:
        raise TensorCFRError("the ismcts-time agent needs a time per move "
                             "(AgentOptions.seconds_per_move, e.g. --seconds-per-move 1)")
    return ISMCTSAgent(seconds_per_move=seconds_per_move, name="ismcts-time")
