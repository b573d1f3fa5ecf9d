"""The one iteration loop every solve run shares: :func:`run` drives any :class:`Iterating`
solver to a target iteration count, with evaluations, checkpoints, progress and clean stops.

A solver here is anything with an ``iteration`` count (iterations done in total; a resumed
solver starts past 0) and ``iterate(n)``; a :class:`Solver` also has ``average_policy()``
(the strategy a run returns, a tensor or a list of per-round tensors, as the solver
defines).  The core's :class:`~tensorcfr.core.solver.TensorCFRSolver` and
:class:`~tensorcfr.core.public_tree.PublicTreeCFR`, the abstract solvers of
:mod:`tensorcfr.abstraction` and the games' solvers built on them are all solvers; a CFR-BR
pair (:class:`~tensorcfr.abstraction.cfr_br.CFRBR`) only iterates.

What a run does after each iteration, in order: the evaluation when ``eval_at`` says so (its
value is kept as the latest), a checkpoint when one is due (every ``checkpoint_seconds`` of
wall time or ``checkpoint_iterations`` iterations, never at the target: the run writes one
after the loop), the progress callback, then a pending stop.  With ``interrupt_message`` the
run defers SIGINT/SIGTERM (:func:`~tensorcfr.utils.interrupts.deferred_stop`): the iteration
under way finishes whole, the checkpoint is written, and
:class:`~tensorcfr.errors.InterruptedRun` is raised.  Seconds are wall seconds;
``solving_seconds`` counts only the time inside ``iterate`` (evaluations and checkpoints
excluded).

Nothing here knows a game, a file format or a command line: evaluating, saving and showing
progress are the caller's callbacks.

>>> class Count:
...     iteration = 0
...     def iterate(self, n=1):
...         self.iteration += n
>>> state = run(Count(), 6, evaluate=lambda s: s.iteration ** 2, eval_at=every(4, 6))
>>> state.iteration, state.value, state.evaluated
(6, 36, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, runtime_checkable

__all__ = ["Iterating", "Solver", "LoopState", "run", "every"]


@runtime_checkable
class Iterating(Protocol):
    """A solver :func:`run` can drive: ``iteration`` (iterations done in total) and
    ``iterate(num_iterations)``."""

    @property
    def iteration(self) -> int: ...

    def iterate(self, num_iterations: int = 1) -> None: ...


@runtime_checkable
class Solver(Iterating, Protocol):
    """An :class:`Iterating` solver with a strategy: ``average_policy()`` (the average
    strategy so far, in the solver's own layout)."""

    def average_policy(self) -> Any: ...


@dataclass
class LoopState:
    """Where a :func:`run` stands after an iteration (the same object throughout a run).

    ``iteration``: iterations done in total; ``target``: the total the run iterates to;
    ``solving_seconds``: seconds inside ``iterate`` (plus the offset the run was given, e.g.
    a resumed run's earlier solving time); ``wall_seconds``: wall seconds since the run
    started; ``value``: what the latest evaluation returned (the run's initial ``value``
    before the first); ``evaluated``: whether this iteration was evaluated;
    ``iterations_run``: iterations done by this run."""

    iteration: int
    target: int
    solving_seconds: float = 0.0
    wall_seconds: float = 0.0
    value: Any = None
    evaluated: bool = False
    iterations_run: int = 0


def every(k: int, target: int) -> Callable[[int], bool]:
    """An ``eval_at`` that evaluates every ``k`` iterations (none for ``k`` = 0) and at the
    ``target``."""
    return lambda t: (k > 0 and t % k == 0) or t == target


def run(solver: Iterating, target: int, *,
        evaluate: Optional[Callable[[LoopState], Any]] = None,
        eval_at: Optional[Callable[[int], bool]] = None,
        checkpoint: Optional[Callable[[LoopState], None]] = None,
        checkpoint_seconds: float = math.inf,
        checkpoint_iterations: Optional[int] = None,
        on_progress: Optional[Callable[[LoopState], None]] = None,
        interrupt_message: Optional[Callable[[int, bool], str]] = None,
        solving_seconds: float = 0.0, value: Any = None) -> LoopState:
    """Iterate ``solver`` one iteration at a time until ``solver.iteration`` reaches
    ``target`` (nothing when it is already there) and return the final :class:`LoopState`.

    ``evaluate(state)`` runs after the iterations ``eval_at(iteration)`` accepts (default:
    the target only; see :func:`every`), its result becomes ``state.value``.
    ``checkpoint(state)`` runs when due (``checkpoint_seconds`` of wall time since the last
    one, or ``checkpoint_iterations`` iterations) and once after the loop.
    ``on_progress(state)`` after every iteration.  ``interrupt_message(iteration,
    checkpoint_written)``: when given, SIGINT/SIGTERM stop the run after the iteration under
    way (checkpoint written first) with :class:`~tensorcfr.errors.InterruptedRun` whose text
    ends with this message; when None, signals are left alone.  ``solving_seconds`` and
    ``value``: the state's starting values (a resumed run's earlier ones)."""
    if eval_at is None:
        eval_at = every(0, target)
    state = LoopState(int(solver.iteration), target, float(solving_seconds), value=value)
    started = last_save = time.perf_counter()
    saved_at = state.iteration

    def step(stop: Any) -> None:
        nonlocal last_save, saved_at
        began = time.perf_counter()
        solver.iterate(1)
        state.solving_seconds += time.perf_counter() - began
        state.iteration = int(solver.iteration)
        state.iterations_run += 1
        state.evaluated = evaluate is not None and eval_at(state.iteration)
        if state.evaluated:
            state.value = evaluate(state)  # type: ignore[misc]
        now = time.perf_counter()
        state.wall_seconds = now - started
        stopping = stop is not None and stop.requested
        if checkpoint is not None and not stopping and state.iteration < target and (
                now - last_save >= checkpoint_seconds or (
                    checkpoint_iterations is not None
                    and state.iteration - saved_at >= checkpoint_iterations)):
            checkpoint(state)
            last_save, saved_at = time.perf_counter(), state.iteration
        if on_progress is not None:
            on_progress(state)
        if stop is not None and stop.requested:
            from tensorcfr.utils.interrupts import interrupted

            if checkpoint is not None:
                checkpoint(state)
            assert interrupt_message is not None
            raise interrupted(stop, interrupt_message(state.iteration, checkpoint is not None))

    if interrupt_message is None:
        while solver.iteration < target:
            step(None)
    else:
        from tensorcfr.utils.interrupts import deferred_stop

        with deferred_stop() as stop:
            while solver.iteration < target:
                step(stop)
    if checkpoint is not None:
        checkpoint(state)
    state.wall_seconds = time.perf_counter() - started
    return state
