"""The one iteration loop (:mod:`tensorcfr.core.solver_loop`): the solver classes it drives
satisfy its protocols, and :func:`run` evaluates, checkpoints, reports and stops where its
documentation says (a counting solver, so each case takes milliseconds)."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from tensorcfr.core.solver_loop import Iterating, LoopState, Solver, every, run
from tensorcfr.errors import InterruptedRun


class Counting:
    """A solver that only counts; ``stop_at``: send this process SIGINT during that
    iteration (as a user's Ctrl+C would arrive mid-iteration)."""

    def __init__(self, start: int = 0, stop_at: int | None = None) -> None:
        self.iteration = start
        self.stop_at = stop_at

    def iterate(self, num_iterations: int = 1) -> None:
        for _ in range(num_iterations):
            self.iteration += 1
            if self.iteration == self.stop_at:
                os.kill(os.getpid(), signal.SIGINT)

    def average_policy(self) -> list[int]:
        return [self.iteration]


def test_the_solver_classes_are_solvers() -> None:
    """The five solver classes (tensor CFR on a flat tree, on a public tree, per class, and
    the abstract solvers in both layouts) are :class:`Solver`; CFR-BR only iterates."""
    from tensorcfr.abstraction.cfr_br import CFRBR
    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.games.numeral211.solving.abstract_solve import (abstract_solver,
                                                                   lossless_embeddings)
    from tensorcfr.games.openspiel import flatten_game

    game = n211.build_game(GameConfig(ranks="9TA", suits=2, max_bets=(1, 1, 1)))
    solvers = [TensorCFRSolver(flatten_game("kuhn_poker"), algo="cfr+"),
               n211.make_solver(game, "cfr+", storage="cells"),
               n211.make_solver(game, "cfr+", storage="classes"),
               abstract_solver(game, lossless_embeddings(game), storage="cells"),
               abstract_solver(game, lossless_embeddings(game), storage="classes")]
    assert len({type(s) for s in solvers}) == 5
    for solver in solvers:
        assert isinstance(solver, Solver), type(solver).__name__
    pair = CFRBR(solvers[-1])
    assert isinstance(pair, Iterating) and not isinstance(pair, Solver)
    state = run(pair, 2)
    assert pair.iteration == state.iteration == 2


def test_run_evaluates_at_its_points_and_keeps_the_latest_value() -> None:
    seen: list[int] = []
    progress: list[tuple[int, bool, object]] = []

    def evaluate(state: LoopState) -> int:
        seen.append(state.iteration)
        return 10 * state.iteration

    state = run(Counting(), 7, evaluate=evaluate, eval_at=every(3, 7),
                on_progress=lambda s: progress.append((s.iteration, s.evaluated, s.value)))
    assert seen == [3, 6, 7]
    assert progress[:4] == [(1, False, None), (2, False, None), (3, True, 30), (4, False, 30)]
    assert (state.iteration, state.value, state.iterations_run, state.evaluated) == (7, 70, 7,
                                                                                    True)
    assert run(Counting(), 4, evaluate=evaluate).value == 40  # default: the target only
    assert every(0, 5)(5) and not every(0, 5)(4) and every(2, 5)(4)


def test_a_resumed_run_continues_its_counts_and_a_finished_one_does_nothing() -> None:
    calls: list[int] = []
    state = run(Counting(start=5), 8, solving_seconds=2.5, value="old",
                evaluate=lambda s: calls.append(s.iteration))
    assert calls == [8] and state.iterations_run == 3 and state.solving_seconds >= 2.5
    saved: list[int] = []
    done = run(Counting(start=8), 8, evaluate=lambda s: 1 / 0, value="kept",
               checkpoint=lambda s: saved.append(s.iteration))
    assert (done.iteration, done.value, done.iterations_run, saved) == (8, "kept", 0, [8])


def test_checkpoints_when_due_and_once_after_the_loop() -> None:
    saved: list[int] = []
    run(Counting(), 10, checkpoint=lambda s: saved.append(s.iteration),
        checkpoint_iterations=4)
    assert saved == [4, 8, 10]
    saved.clear()
    run(Counting(), 3, checkpoint=lambda s: saved.append(s.iteration), checkpoint_seconds=0)
    assert saved == [1, 2, 3]  # due every iteration, but not twice at the target
    saved.clear()
    run(Counting(), 3, checkpoint=lambda s: saved.append(s.iteration))
    assert saved == [3]


@pytest.fixture
def default_sigint():
    """SIGINT at Python's default handler for the test (another test in the same worker,
    e.g. a CLI run, may have left its own), restored after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_stop_signal_ends_the_run_after_the_iteration_with_its_checkpoint(
        default_sigint) -> None:
    solver = Counting(stop_at=3)
    saved: list[int] = []
    seen: list[int] = []
    with pytest.raises(InterruptedRun, match=r"stopped by SIGINT; written=True at 3$"):
        run(solver, 100, checkpoint=lambda s: saved.append(s.iteration),
            evaluate=lambda s: seen.append(s.iteration), eval_at=every(3, 100),
            interrupt_message=lambda t, written: f"written={written} at {t}")
    assert solver.iteration == 3 and saved == [3] and seen == [3]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    with pytest.raises(InterruptedRun, match="written=False at 2"):
        run(Counting(stop_at=2), 100,
            interrupt_message=lambda t, written: f"written={written} at {t}")


def test_without_an_interrupt_message_signals_are_left_alone(default_sigint) -> None:
    with pytest.raises(KeyboardInterrupt):
        run(Counting(stop_at=2), 100)


def test_numeral211_run_solver_stops_cleanly_and_resumes_bitwise(tmp_path) -> None:
    """The full-game loop on run(): a stop writes the checkpoint with the curve so far, and
    the resumed run ends where an uninterrupted one does."""
    from tensorcfr.games.numeral211.game.config import GameConfig
    from tensorcfr.games.numeral211.solving import solver as n211

    config = GameConfig(ranks="9TA", suits=2, max_bets=(1, 1, 1))
    game = n211.build_game(config)
    straight = n211.make_solver(game, "cfr+")
    n211.run_solver(game, straight, 4, eval_every=2)
    stopped = n211.make_solver(game, "cfr+")
    original = stopped.iterate

    def iterate(n: int = 1) -> None:
        original(n)
        if stopped.iteration == 3:
            os.kill(os.getpid(), signal.SIGINT)

    stopped.iterate = iterate  # type: ignore[method-assign]
    ck = tmp_path / "ck.npz"
    with pytest.raises(InterruptedRun, match=f"checkpoint {ck} written at iteration 3"):
        n211.run_solver(game, stopped, 4, eval_every=2, checkpoint=ck)
    resumed = n211.make_solver(game, "cfr+")
    meta = n211.load_checkpoint(ck, resumed, config)
    assert resumed.iteration == 3 and [p["iteration"] for p in meta["curve"]] == [2]
    result = n211.run_solver(game, resumed, 4, eval_every=2, curve=meta["curve"])
    assert [p["iteration"] for p in result.curve] == [2, 4]
    for ours, theirs in zip(resumed.average_policy(), straight.average_policy()):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
