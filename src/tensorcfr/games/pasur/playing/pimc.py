"""The ``pimc`` agent: Perfect Information Monte Carlo over determinizations.

At each of its plays the agent draws K full states consistent with its observation
(:func:`determinize`: the unseen cards shared out uniformly between the opponent's hand and
the rounds to come), solves each one exactly from the current play on (the double-dummy
search :func:`solving.double_dummy.dd_action_values_many`: whole-game Alex-minus-Bob values
of every legal play, the exact solver's numbers in milliseconds),
and plays the legal play with the best **mean** value from the mover's side over the draws.

* **Ties**: the first best play in :meth:`Observation.legal_actions` order (by card, then
  captured set), the rule of the ``exact`` agent; means are compared as exact integer sums
  over the same draws, so with the true state as its only draw PIMC plays exactly like
  ``exact`` (tested).
* **Seeds**: the draws of play ``t`` come from ``random.Random("pimc:{seed}:{t}")`` after
  ``reset(seed)``: the same seed gives the same game.
* **Budget**: K draws (``determinizations``), and optionally ``seconds_per_move``: no new
  draw is started once the time is spent, or when the slowest solve of the move so far would
  end past it (a double-dummy solve takes milliseconds, so a reply ends within one solve of
  its budget; at least one draw is always solved, unless ``max_reply_seconds``, the play
  server's hard limit on a reply, has passed before the first: then the play is the
  ``greedy`` one).
* **Solving step**: :meth:`PimcAgent._solve_draws` (``states -> [[(action, value)]]``) is
  the one place that calls the solver: :func:`double_dummy.dd_action_values_many` (the same
  answers as :func:`exact.action_values_many`, from a search that visits a few thousand
  states where the exact solver expands them all: 64 draws a move from play 0 in 0.5 s,
  docs/benchmarks/pasur_double_dummy.md).

Values (:meth:`PimcAgent.estimates`) are final points differences from the mover's side,
with the number of draws they average. This module sees only observations: the true state
that a runner might pass to ``choose`` is ignored (``sees_everything`` is false).
"""

from __future__ import annotations

import random
import time
from typing import Iterator, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import Observation
from tensorcfr.games.pasur.playing.agent import PlayEstimate, check_turn, mover_sign

__all__ = ["PimcAgent", "best_estimate", "mean_values"]

ActionValues = list[tuple[rules.Action, int]]


def mean_values(obs: Observation, legal: Sequence[rules.Action],
                solved: Sequence[ActionValues], weights: Sequence[float] | None = None
                ) -> list[PlayEstimate]:
    """Per legal play (``legal`` order), the mean over the draws of its whole-game value
    from the mover's side; ``weights`` (one per draw, default equal) weight the mean.

    Raises:
        TensorCFRError: a draw's solution does not list exactly the legal plays (a solver or
            determinization bug, reported in one line).
    """
    sign = mover_sign(obs.player)
    sums = {a: 0 for a in legal}
    weighted = weights is not None
    fsums = {a: 0.0 for a in legal}
    total_weight = 0.0
    for k, values in enumerate(solved):
        if len(values) != len(sums) or any(a not in sums for a, _ in values):
            raise TensorCFRError("a determinization's legal plays differ from the observed "
                                 "ones (determinization or solver bug)")
        w = weights[k] if weighted else 1.0
        total_weight += w
        for action, value in values:
            sums[action] += sign * value
            fsums[action] += w * sign * value
    draws = len(solved)
    if weighted and total_weight > 0:
        return [PlayEstimate(a, fsums[a] / total_weight, draws) for a in legal]
    return [PlayEstimate(a, sums[a] / draws, draws) for a in legal]


def best_estimate(estimates: Sequence[PlayEstimate]) -> rules.Action:
    """The play of the highest value; the first of equal ones (``estimates`` in legal
    order). Equal-weight means over the same draws compare exactly (integer sums over the
    same count divided by the same count are equal exactly when the sums are)."""
    best = estimates[0]
    for est in estimates[1:]:
        if est.value > best.value:
            best = est
    return best.action


class PimcAgent:
    """Perfect Information Monte Carlo with exact solves of K uniform determinizations."""

    name = "pimc"
    sees_everything = False
    max_reply_seconds: float | None = None
    """A hard limit on :meth:`choose` (the play server's): when not even the first draw is
    solved within it, the play is the ``greedy`` one. ``None``: the first draw is always
    solved. :meth:`estimates` (hints, the analysis) always solve at least one draw."""

    def __init__(self, determinizations: int = 32, seconds_per_move: float | None = None,
                 device: str = "cpu") -> None:
        if determinizations < 1:
            raise TensorCFRError(f"the number of determinizations K must be at least 1, got "
                                 f"{determinizations}")
        self.determinizations = determinizations
        self.seconds_per_move = seconds_per_move
        self.device = device
        self._seed = 0
        self._cache: tuple[str, list[PlayEstimate]] | None = None

    def reset(self, seed: int) -> None:
        self._seed = int(seed)
        self._cache = None

    def _rng(self, obs: Observation) -> random.Random:
        return random.Random(f"{self.name}:{self._seed}:{obs.play_index}")

    def _solve_draws(self, states: Sequence[rules.GameState], deadline: float | None = None
                     ) -> list[ActionValues]:
        """Whole-game Alex-minus-Bob values of every legal play of each state (the one call
        to the solver, the double-dummy search; legal-actions order inside each list). With
        ``deadline`` (``time.perf_counter()`` seconds), no state is started once it has
        passed: :class:`~tensorcfr.games.pasur.solving.exact.DeadlineExceeded`."""
        from tensorcfr.games.pasur.solving.double_dummy import dd_action_values_many

        return dd_action_values_many(states, deadline=deadline)

    def _draws(self, obs: Observation, rng: random.Random) -> Iterator[rules.GameState]:
        """The agent's determinizations, one by one (uniform here)."""
        while True:
            yield determinize(obs, rng)

    def _solve_with_budget(self, obs: Observation, first_deadline: float | None = None
                           ) -> tuple[list[rules.GameState], list[ActionValues]]:
        """Draw and solve up to K states within the time budget: the first solve always runs
        to its end; no later one starts once the budget is spent or when the slowest solve
        of this move so far would end past it. A reply so keeps to its budget (plus the first
        solve when that alone is longer). ``first_deadline``, passed before the first solve,
        leaves nothing solved (two empty lists)."""
        rng = self._rng(obs)
        draws = self._draws(obs, rng)
        if self.seconds_per_move is None and first_deadline is None:
            states = [next(draws) for _ in range(self.determinizations)]
            return states, self._solve_draws(states)
        from tensorcfr.games.pasur.solving.exact import DeadlineExceeded

        now = time.perf_counter()
        deadline = now + self.seconds_per_move if self.seconds_per_move is not None else None
        if first_deadline is not None:
            deadline = first_deadline if deadline is None else min(deadline, first_deadline)
        states, solved = [], []
        slowest = 0.0
        while len(states) < self.determinizations:
            started = time.perf_counter()
            state = next(draws)
            try:
                values = self._solve_draws([state], deadline=deadline if states
                                           else first_deadline)
            except DeadlineExceeded:
                break
            states.append(state)
            solved.extend(values)
            now = time.perf_counter()
            slowest = max(slowest, now - started)
            if deadline is not None and now + slowest >= deadline:
                break
        return states, solved

    def _evaluate(self, obs: Observation, first_deadline: float | None = None
                  ) -> list[PlayEstimate] | None:
        """The mean values of ``obs``'s plays (cached per observation), or None when
        ``first_deadline`` passed before one draw was solved."""
        key = f"{self._seed}|{obs.key()}"
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        legal = check_turn(obs, self.name)
        _, solved = self._solve_with_budget(obs, first_deadline)
        if not solved:
            return None
        result = mean_values(obs, legal, solved)
        self._cache = (key, result)
        return result

    def estimates_from_states(self, obs: Observation, states: Sequence[rules.GameState]
                              ) -> list[PlayEstimate]:
        """The mean values over the given draws (a test hook: with ``[true state]`` PIMC
        is the exact player)."""
        legal = check_turn(obs, self.name)
        return mean_values(obs, legal, self._solve_draws(list(states)))

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        """The play of the best mean value (``state`` is ignored: PIMC sees only ``obs``)."""
        legal = check_turn(obs, self.name)
        if len(legal) == 1:
            return legal[0]
        limit = self.max_reply_seconds
        estimates = self._evaluate(obs, None if limit is None else time.perf_counter() + limit)
        if estimates is None:  # no draw solved within the reply limit
            from tensorcfr.games.pasur.playing.greedy import GreedyAgent

            return GreedyAgent().choose(obs)
        return best_estimate(estimates)

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        """Mean whole-game value from the mover's side of every legal play, with the number
        of draws (at least one draw is solved, whatever the reply limit)."""
        return self._evaluate(obs)
