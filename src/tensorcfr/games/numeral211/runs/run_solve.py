"""One full-game Numeral211 solve run as a library call: :func:`solve` with a
:class:`SolveSettings` (what ``tensorcfr numeral211 solve`` runs without ``--abstraction`` /
``--embedding``).

The run builds the game, creates the tensor CFR solver over the public tree (memory checked
first), resumes a checkpoint when asked (same game, algorithm, dtype, sampling and storage),
iterates with exact evaluations every ``eval_every`` iterations and checkpoints every
``checkpoint_minutes``, stops cleanly on SIGINT/SIGTERM (checkpoint written, then
:class:`~tensorcfr.errors.InterruptedRun`), and writes the strategy file, the curve JSON and
its plot.  Exploitability is ``(b0 + b1) / 2`` in chips per game and in mb/g (thousandths of
the ante per game).

>>> from tensorcfr.games.numeral211.game.config import GameConfig
>>> settings = SolveSettings(game=GameConfig(ranks="9TA", suits=2, max_bets=(2, 2, 2)),
...                         iterations=2)
>>> solve(settings).iterations
2

Nothing here prints or parses command lines: progress goes to the optional callback
(:class:`~.run_common.RunProgress` events), errors are :class:`~tensorcfr.errors.
TensorCFRError` subclasses with one-line messages naming the CLI options.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.game.config import GameConfig, GameConfigError
from tensorcfr.games.numeral211.runs.run_common import (ProgressCallback, RunProgress, RunResult,
                                                        RunSettings, sampling_dict,
                                                        sampling_of)

__all__ = ["SolveSettings", "SolveResult", "solve", "SOLVE_UNITS"]

SOLVE_UNITS = ("exploitability = (b0 + b1) / 2 in chips per game; mb/g = thousandths of the "
               "ante per game")


@dataclass(frozen=True)
class SolveSettings(RunSettings):
    """Everything a full-game solve run needs (the options of ``numeral211 solve``): the
    shared :class:`~.run_common.RunSettings` (``algo``: cfr, cfr+, lcfr or dcfr, alternating
    updates; ``game`` None: the paper's game, or the checkpoint's when resuming, and a named
    variant must equal the checkpoint's) and ``alpha`` / ``beta`` / ``gamma`` for dcfr (None:
    its defaults)."""

    alpha: Optional[float] = None
    beta: Optional[float] = None
    gamma: Optional[float] = None


class SolveResult(RunResult):
    """What a full-game solve run did (:class:`~.run_common.RunResult`):
    ``solver.average_policy()`` is the strategy; ``summary`` is the JSON object ``numeral211
    solve --json`` prints, its ``curve`` entries ``iteration``, ``exploitability``
    (chips/game), ``mbg``, ``seconds``."""


def _resume_config(settings: SolveSettings) -> tuple[GameConfig, dict[str, Any]]:
    """The game to continue and the checkpoint's meta (game options, dtype, storage
    checked against the settings)."""
    resume = settings.resume
    meta = n211.read_checkpoint_meta(resume)  # type: ignore[arg-type]
    try:
        saved = GameConfig.from_dict(meta["game"])
    except (KeyError, GameConfigError) as exc:
        raise TensorCFRError(f"checkpoint {resume!r}: bad game ({exc})") from None
    named = settings.game
    if named is not None and named.to_dict() != saved.to_dict():
        raise TensorCFRError(
            f"checkpoint {resume!r} is of {saved.describe()}, not of the "
            f"{named.describe()} the game options name; leave the game options out "
            "to continue the checkpoint's game, or start without --resume")
    if meta.get("dtype") != settings.dtype:
        raise TensorCFRError(f"checkpoint {resume!r} holds {meta.get('dtype')} state; "
                             f"resume with --dtype {meta.get('dtype')}")
    return saved, meta


def _report(progress: Optional[ProgressCallback], **fields: Any) -> None:
    if progress is not None:
        progress(RunProgress(**fields))


def solve(settings: SolveSettings, progress: Optional[ProgressCallback] = None
          ) -> SolveResult:
    """Run the full-game solve ``settings`` describe; ``progress`` gets a ``"start"`` event
    and one ``"iteration"`` event per iteration.  Returns the game, the solver and the
    summary; TensorCFRError (one line) on bad input, InterruptedRun on SIGINT/SIGTERM (after
    writing the checkpoint when ``save`` is set)."""
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import parse_memory, peak_rss_mb, set_threads

    s = settings
    s.check_outputs()
    n_threads = set_threads(s.threads)
    device = resolve_device(s.device, "--device")
    import torch

    dtype = getattr(torch, s.dtype)
    limit = parse_memory(s.max_memory)
    sampling = sampling_of(s.sample_boards, s.seed)
    config = s.game if s.game is not None else GameConfig()
    if s.resume is not None:
        config, _ = _resume_config(s)
    game = n211.build_game(config, dtype=dtype, device=device)
    solver = n211.make_solver(game, s.algo, max_memory_bytes=limit, alpha=s.alpha,
                              beta=s.beta, gamma=s.gamma, sampling=sampling,
                              storage=s.storage)
    curve: list[dict[str, float]] = []
    if s.resume is not None:
        meta = n211.load_checkpoint(s.resume, solver, config)
        curve = list(meta.get("curve") or [])
    start_iteration = solver.iteration
    resumed_from = start_iteration if s.resume is not None else None
    every = s.eval_every if s.eval_every else s.iterations
    started = time.perf_counter()
    _report(progress, event="start", label=s.algo, iteration=start_iteration,
            target=s.iterations, seconds=0.0, resumed_from=resumed_from)

    def on_iteration(p: n211.SolveProgress) -> None:
        evaluated = p.iteration % every == 0 or p.iteration == s.iterations
        ex = p.exploitability
        _report(progress, event="iteration", label=s.algo, iteration=p.iteration,
                target=s.iterations, seconds=time.perf_counter() - started,
                exploitability=ex, exploitability_mbg=None if ex is None else
                n211.to_mbg(ex, config), evaluated=evaluated, resumed_from=resumed_from)

    run = n211.run_solver(game, solver, s.iterations, eval_every=every, checkpoint=s.save,
                          checkpoint_every_seconds=s.checkpoint_minutes * 60,
                          on_progress=on_iteration, curve=curve)
    seconds = time.perf_counter() - started
    final = run.curve[-1] if run.curve else None
    if final is None or final["iteration"] != solver.iteration:
        ex = n211.exploitability(game, solver.average_policy()).exploitability
        final = {"iteration": solver.iteration, "exploitability": ex,
                 "mbg": n211.to_mbg(ex, config), "seconds": seconds}
    if s.out is not None:
        n211.save_policy(s.out, game, solver.average_policy(), algo=s.algo,
                         iterations=solver.iteration, exploitability=final["exploitability"])
    if s.curve is not None:
        from tensorcfr.utils.io import write_json_atomic

        write_json_atomic(s.curve, {"game": config.to_dict(), "algo": s.algo,
                                    "curve": run.curve})
    if s.plot is not None and run.curve:
        from tensorcfr.games.numeral211.runs.plots import plot_exploitability_curve

        plot_exploitability_curve(run.curve, s.plot, f"{config.describe()} {s.algo}")
    ran = solver.iteration - start_iteration
    summary = {
        "game": config.describe(), "algo": s.algo, "iterations": solver.iteration,
        "iterations_run": ran, "resumed_from": resumed_from,
        "exploitability": final["exploitability"], "exploitability_mbg": final["mbg"],
        "units": SOLVE_UNITS, "curve": run.curve, "seconds": seconds,
        "ms_per_iteration": 1000 * seconds / ran if ran else None,
        "peak_rss_bytes": int(peak_rss_mb() * 2**20),
        "memory_estimate_bytes": solver.estimated_memory_bytes,
        "threads": n_threads, "device": str(device), "dtype": s.dtype,
        "strategy_file": s.out, "checkpoint": s.save, "sampling": sampling_dict(sampling),
        "storage": n211.solver_storage(solver),
    }
    return SolveResult(game=game, solver=solver, summary=summary)
