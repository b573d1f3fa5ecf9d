"""One tensor CFR run on an OpenSpiel game as a library call: :func:`solve` with a
:class:`SolveSettings` (what ``tensorcfr solve GAME`` runs).

The run loads the game, walks and flattens it (memory checked first), builds the core solver
or resumes a checkpoint (same game; the algorithm, update order and dtype must agree), runs
``iterations`` more iterations with the exact exploitability evaluated at fixed points
(every ``eval_every`` iterations and at the end), writes a checkpoint every
``checkpoint_every`` iterations or minute of solving and at the end, and saves the average
policy (NPZ + JSON metadata) and a log-log plot of exploitability against iterations.
Exploitability is in the game's utility units per game (OpenSpiel's ``exploitability``:
NashConv divided by the number of players).

>>> result = solve(SolveSettings(game="kuhn_poker", algo="cfr+", iterations=20))
>>> result.summary["iterations"], result.summary["exploitability"] < 0.05
(20, True)

Nothing here prints or parses command lines: progress, notes and warnings go to the optional
``on_progress`` callback (:class:`SolveProgress` events); errors are one-line
:class:`~tensorcfr.errors.TensorCFRError` subclasses naming the CLI options.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["CHECKPOINT_SECONDS", "SolveProgress", "SolveResult", "SolveSettings",
           "eval_points", "policy_exploitability", "solve"]

CHECKPOINT_SECONDS = 60.0
"""Default interval of checkpoints during a run with ``save`` (seconds of solving)."""


@dataclass(frozen=True)
class SolveSettings:
    """Everything one run needs (the options of ``tensorcfr solve``), checked when built
    (one-line :class:`TensorCFRError` naming the option).

    Attributes:
        game: an OpenSpiel game string, e.g. ``kuhn_poker`` or ``leduc_poker(players=3)``.
        algo: cfr, cfr+, lcfr, dcfr or pcfr+ (None: cfr, or the checkpoint's with
            ``resume``); alpha, beta, gamma: the DCFR parameters (None: its defaults).
        iterations: iterations to run, in addition to a resumed checkpoint's.
        alternating: alternating updates (None: True, like OpenSpiel's CFRSolver, or the
            checkpoint's) or simultaneous.
        eval_every: exact exploitability every K iterations (None: about 20 times per run;
            0: only at the end).
        device: torch device; dtype: float64, float32 or auto (None: auto, float64 up to
            5,000,000 nodes); threads: torch intra-op threads (None: the default, 1).
        passes: which passes run the iterations: ``"auto"`` (the default), ``"torch"`` or
            ``"lean"`` (the memory-lean passes: no per-node state between iterations, about
            a third of the torch passes' memory on liars_dice at about half their speed;
            CPU, float64, alternating updates; docs/benchmarks/engine_memory.md).
        cuda_graph: on a CUDA device, replay each iteration as one captured CUDA graph
            (see docs/engine_profile.md).
        max_memory: refuse games needing more (bytes, or a size such as ``"8G"``; None or
            ``"auto"``: the memory available when the settings are built); stored as bytes.
        save: checkpoint file (NPZ) written during the run and at the end;
            checkpoint_every: with ``save``, every K iterations (None: whenever
            :data:`CHECKPOINT_SECONDS` of solving have passed; 0: only at the end).
        resume: the checkpoint to continue.
        policy_out: where to write the average policy (NPZ + JSON metadata).
        plot: where to write exploitability against iteration (log-log PNG).
    """

    game: str
    algo: Optional[str] = None
    iterations: int = 1000
    alternating: Optional[bool] = None
    alpha: Optional[float] = None
    beta: Optional[float] = None
    gamma: Optional[float] = None
    eval_every: Optional[int] = None
    device: str = "cpu"
    cuda_graph: bool = False
    passes: str = "auto"
    dtype: Optional[str] = None
    threads: Optional[int] = None
    max_memory: int | str | None = "auto"
    save: Optional[Path] = None
    checkpoint_every: Optional[int] = None
    resume: Optional[Path] = None
    policy_out: Optional[Path] = None
    plot: Optional[Path] = None

    def __post_init__(self) -> None:
        from tensorcfr.core.solver import resolve_dtype
        from tensorcfr.core.regret import CFRVariant
        from tensorcfr.utils.resources import parse_memory

        if self.iterations < 1:
            raise TensorCFRError(f"--iterations must be at least 1, got {self.iterations}")
        if self.cuda_graph and not str(self.device).strip().lower().startswith("cuda"):
            raise TensorCFRError(f"--cuda-graph needs a CUDA --device, not {self.device!r}")
        self._check_passes()
        if self.eval_every is not None and self.eval_every < 0:
            raise TensorCFRError(f"--eval-every must be >= 0, got {self.eval_every}")
        if self.checkpoint_every is not None and self.checkpoint_every < 0:
            raise TensorCFRError(f"--checkpoint-every must be >= 0, got "
                                 f"{self.checkpoint_every}")
        if self.checkpoint_every is not None and self.save is None:
            raise TensorCFRError("--checkpoint-every needs --save FILE (where to write it)")
        for name in ("save", "resume", "policy_out", "plot"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value))
        if not isinstance(self.max_memory, int):
            object.__setattr__(self, "max_memory", parse_memory(self.max_memory))
        elif self.max_memory <= 0:
            raise TensorCFRError(f"--max-memory must be positive, got {self.max_memory}")
        if self.dtype is not None:
            resolve_dtype(self.dtype)
        if self.algo is not None:
            try:
                CFRVariant.parse(self.algo, self.alpha, self.beta, self.gamma)
            except TensorCFRError as exc:
                raise TensorCFRError(f"--algo: {exc}") from None


    def _check_passes(self) -> None:
        """``--passes``: one of the solver's pass families; ``lean`` on the CPU, with
        alternating updates, in float64."""
        from tensorcfr.core.solver import PASSES, resolve_dtype

        passes = str(self.passes).strip().lower()
        if passes not in PASSES:
            raise TensorCFRError(f"--passes must be one of {', '.join(PASSES)}, not "
                                 f"{self.passes!r}")
        object.__setattr__(self, "passes", passes)
        if passes != "lean":
            return
        if str(self.device).strip().lower() != "cpu":
            raise TensorCFRError(f"--passes lean runs on the CPU, not --device {self.device}")
        if self.alternating is False:
            raise TensorCFRError("--passes lean needs alternating updates (drop "
                                 "--simultaneous, or use --passes torch)")
        if self.dtype is not None and self.dtype.strip().lower() != "auto" and \
                resolve_dtype(self.dtype) != resolve_dtype("float64"):
            raise TensorCFRError("--passes lean computes in float64 (drop --dtype "
                                 f"{self.dtype}, or use --passes torch)")


@dataclass(frozen=True)
class SolveProgress:
    """An event of :func:`solve`, in this order:

    * ``"setup"``: the game is loaded (``game``, its string); the walk and the tensors follow.
    * ``"walk"``: during the walk, ``nodes`` and ``infosets`` found so far.
    * ``"ready"``: the solver is built (or resumed).
    * ``"note"`` / ``"warning"``: a line for the user (``text``): the dtype chosen
      automatically, the resumed iteration; a game without perfect recall.
    * ``"start"``: iterations begin: ``label`` (algorithm and game), ``start_iteration``,
      ``target`` (the iteration the run ends at).
    * ``"iteration"``: after each iteration (``iteration``, absolute).
    * ``"evaluated"``: an exact evaluation at ``iteration`` gave ``exploitability``.
    """

    event: str
    game: str = ""
    nodes: int = 0
    infosets: int = 0
    text: str = ""
    label: str = ""
    iteration: int = 0
    start_iteration: int = 0
    target: int = 0
    exploitability: Optional[float] = None


@dataclass
class SolveResult:
    """What :func:`solve` did: ``solver`` (``solver.average_policy()`` is the strategy,
    ``solver.tree`` the flattened game) and ``summary``, the JSON object ``tensorcfr solve
    --json`` prints."""

    solver: Any
    summary: dict[str, Any] = field(default_factory=dict)


def eval_points(start: int, total: int, every: int) -> set[int]:
    """Iterations (absolute numbers) after which exploitability is evaluated: every
    ``every`` (0: none but the last) and ``total``, all after ``start``.

    >>> sorted(eval_points(0, 10, 4))
    [4, 8, 10]
    """
    points = {total}
    if every > 0:
        points.update(range(start + every - (start % every), total + 1, every))
    return {p for p in points if p > start}


def plot_curve(history: list[tuple[int, float]], path: Path, title: str) -> None:
    """Exploitability against iteration, log-log, as a PNG written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tensorcfr.utils.io import atomic_path

    points = [(i, e) for i, e in history if e > 0 and math.isfinite(e)]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    if points:
        ax.loglog([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("exploitability")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)


def _check_resume(s: SolveSettings, loaded: Any) -> None:
    """The checkpoint ``s.resume`` is of ``loaded`` and agrees with the options given."""
    from tensorcfr.core.solver import resolve_dtype
    from tensorcfr.core.policy_io import read_checkpoint_metadata
    from tensorcfr.core.regret import CFRVariant

    meta = read_checkpoint_metadata(s.resume)
    if meta.get("game") != str(loaded):
        raise CorruptFileError(f"{s.resume}: checkpoint is for {meta.get('game')}, "
                               f"not {loaded}")
    params = meta.get("parameters", {})
    if s.algo is not None and CFRVariant.parse(s.algo).name != params.get("algo"):
        raise TensorCFRError(f"--algo {s.algo} differs from the checkpoint's "
                             f"{params.get('algo')!r}")
    if s.alternating is not None and bool(s.alternating) != bool(params.get("alternating")):
        raise TensorCFRError("--alternating/--simultaneous differs from the checkpoint")
    if s.dtype is not None and s.dtype.strip().lower() != "auto" and \
            str(resolve_dtype(s.dtype)).removeprefix("torch.") != params.get("dtype"):
        raise TensorCFRError(f"--dtype {s.dtype} differs from the checkpoint's "
                             f"{params.get('dtype')!r}")


def _build_solver(s: SolveSettings, loaded: Any, threads: int,
                  report: Callable[[SolveProgress], None]) -> Any:
    """Walk and flatten the game, then build the solver or load the checkpoint."""
    from tensorcfr.core.solver import TensorCFRSolver, load_checkpoint
    from tensorcfr.games.openspiel.flatten import flatten_game

    budget = s.max_memory
    report(SolveProgress("setup", game=str(loaded)))
    tree = flatten_game(loaded, max_memory_bytes=budget,
                        progress=lambda nodes, infosets: report(
                            SolveProgress("walk", nodes=nodes, infosets=infosets)))
    if s.resume is not None:
        return load_checkpoint(s.resume, tree, device=s.device, max_memory_bytes=budget,
                               cuda_graph=s.cuda_graph, passes=s.passes)
    return TensorCFRSolver(tree, algo=s.algo or "cfr",
                           alternating=True if s.alternating is None else s.alternating,
                           alpha=s.alpha, beta=s.beta, gamma=s.gamma, device=s.device,
                           dtype=s.dtype or "auto", max_memory_bytes=budget, threads=threads,
                           cuda_graph=s.cuda_graph, passes=s.passes)


def _notes(s: SolveSettings, solver: Any, report: Callable[[SolveProgress], None]) -> None:
    import torch

    if s.resume is None and solver.dtype_auto and solver.dtype == torch.float32:
        from tensorcfr.core.solver import AUTO_FLOAT32_MIN_NODES

        report(SolveProgress("note", text=(
            f"dtype float32 chosen automatically: {solver.tree.num_nodes:,} nodes, more than "
            f"{AUTO_FLOAT32_MIN_NODES:,} (--dtype float64 to keep float64)")))
    if s.resume is not None:
        report(SolveProgress("note", text=(
            f"resumed from {s.resume} at iteration {solver.iteration:,} ({solver.algo}, "
            f"{str(solver.dtype).removeprefix('torch.')}); running {s.iterations:,} more")))
    if not solver.tree.metadata.get("perfect_recall", True):
        report(SolveProgress("warning", text=(
            f"{solver.game_string} does not have perfect recall "
            f"({solver.tree.metadata.get('imperfect_recall_infosets')} infosets); CFR runs "
            "but without convergence guarantees")))


class _SyncedIterations:
    """The loop's view of a solver: one iteration is ``evaluate_and_update_policy()``,
    timed to its end on a CUDA device (kernels run asynchronously)."""

    def __init__(self, solver: Any) -> None:
        self.solver = solver

    @property
    def iteration(self) -> int:
        return int(self.solver.iteration)

    def iterate(self, num_iterations: int = 1) -> None:
        import torch

        for _ in range(num_iterations):
            self.solver.evaluate_and_update_policy()
            if self.solver.device.type == "cuda":  # pragma: no cover - no GPU here
                torch.cuda.synchronize(self.solver.device)


def _iterate(s: SolveSettings, solver: Any, report: Callable[[SolveProgress], None]
             ) -> tuple[float, list[tuple[int, float]], Any, list[str], bool]:
    """Run ``s.iterations`` iterations on :func:`tensorcfr.core.solver_loop.run` with the
    evaluations and the checkpoints of ``--save`` (every ``checkpoint_every`` iterations, or
    every :data:`CHECKPOINT_SECONDS`, and once at the end); returns the seconds of solving
    (evaluations and checkpoints left out), the exploitability history, the last evaluation
    (None if none succeeded), the evaluation error, if any, and whether the checkpoint was
    written at the end."""
    from tensorcfr.core.best_response import exploitability
    from tensorcfr.core.solver_loop import LoopState, run

    start = solver.iteration
    target = start + s.iterations
    every = s.eval_every if s.eval_every is not None else max(1, s.iterations // 20)
    points = eval_points(start, target, every)
    history: list[tuple[int, float]] = []
    errors: list[str] = []

    def evaluate(state: LoopState) -> Any:
        if errors:
            return None
        try:
            result = exploitability(solver.tree, solver.average_policy())
        except TensorCFRError as exc:  # e.g. imperfect recall: no exact best response
            errors.append(str(exc))
            return None
        history.append((solver.iteration, float(result.exploitability)))
        return result

    def progress(state: LoopState) -> None:
        report(SolveProgress("iteration", iteration=state.iteration,
                             start_iteration=start, target=target))
        if state.evaluated and state.value is not None:
            report(SolveProgress("evaluated", iteration=state.iteration,
                                 start_iteration=start, target=target,
                                 exploitability=float(state.value.exploitability)))

    saving = s.save is not None and s.checkpoint_every != 0
    report(SolveProgress("start", label=f"{solver.algo} {solver.game_string}",
                         start_iteration=start, target=target, iteration=start))
    state = run(_SyncedIterations(solver), target, evaluate=evaluate,
                eval_at=points.__contains__,
                checkpoint=(lambda state: solver.save(str(s.save))) if saving else None,
                checkpoint_seconds=(CHECKPOINT_SECONDS if s.checkpoint_every is None
                                    else float("inf")),
                checkpoint_iterations=s.checkpoint_every, on_progress=progress)
    return state.solving_seconds, history, state.value, errors, saving


def solve(settings: SolveSettings, *,
          on_progress: Callable[[SolveProgress], None] | None = None) -> SolveResult:
    """Run what ``settings`` describe (see the module docstring); ``on_progress`` gets the
    :class:`SolveProgress` events. Returns the solver and the summary; one-line
    :class:`TensorCFRError` subclasses on bad input (an unknown game, a device, an output
    path, a checkpoint of another game or other options, a game too large for
    ``max_memory``)."""
    from tensorcfr.core.policy_io import save_policy
    from tensorcfr.games.openspiel.flatten import load_game
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.io import check_output_file
    from tensorcfr.utils.resources import peak_rss_mb, set_threads

    s = settings
    report = on_progress or (lambda event: None)
    threads = set_threads(s.threads)
    resolve_device(s.device, "--device")  # fail before the (possibly long) walk
    # Every output path is checked before the (possibly long) walk and solve.
    for option, path in (("--save", s.save), ("--policy-out", s.policy_out),
                         ("--plot", s.plot)):
        if path is not None:
            check_output_file(path, option)
    loaded = load_game(s.game)
    setup_started = time.perf_counter()
    if s.resume is not None:
        _check_resume(s, loaded)
    solver = _build_solver(s, loaded, threads, report)
    setup_seconds = time.perf_counter() - setup_started
    report(SolveProgress("ready", game=str(loaded)))
    start_iteration = solver.iteration
    _notes(s, solver, report)
    solve_seconds, history, last, errors, saved = _iterate(s, solver, report)

    if s.save is not None and not saved:
        solver.save(str(s.save))
    exploitability = None if last is None else float(last.exploitability)
    nash_conv = None if last is None else float(last.nash_conv)
    if s.policy_out is not None:
        save_policy(s.policy_out, solver.tree, solver.average_policy(), extra={
            "algo": solver.algo, "iterations": solver.iteration,
            "parameters": solver.parameters(), "exploitability": exploitability})
    if s.plot is not None:
        plot_curve(history, s.plot, f"{solver.algo} on {solver.game_string}")
    summary: dict[str, Any] = {
        "game": solver.game_string,
        "algo": solver.algo,
        "alternating": solver.alternating,
        "alpha": solver.variant.alpha, "beta": solver.variant.beta,
        "gamma": solver.variant.gamma,
        "iterations": solver.iteration,
        "iterations_run": s.iterations,
        "exploitability": exploitability,
        "nash_conv": nash_conv,
        "ms_per_iteration": 1000.0 * solve_seconds / s.iterations,
        "setup_seconds": setup_seconds,
        "walk_seconds": solver.tree.setup_seconds,
        "peak_rss_mb": peak_rss_mb(),
        "threads": threads,
        "device": str(solver.device),
        "cuda_graph": solver.cuda_graph,
        "passes": solver.passes_used,
        "dtype": str(solver.dtype).removeprefix("torch."),
        "num_nodes": solver.tree.num_nodes,
        "num_infosets": solver.tree.num_infosets,
        "num_action_slots": solver.tree.num_slots,
        "estimated_memory_mb": solver.estimated_memory_bytes / 2**20,
        "exploitability_history": [[i, e] for i, e in history],
        "resumed_from_iteration": start_iteration if s.resume is not None else None,
    }
    if errors:
        summary["note"] = f"no exploitability: {errors[0]}"
    return SolveResult(solver=solver, summary=summary)


# --------------------------------------------------------------------------- a saved policy


def policy_exploitability(game_string: str, policy_file: str | Path, *, device: str = "cpu",
                          max_memory: str | None = None,
                          on_stage: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The exact analysis of a policy file (:func:`tensorcfr.core.policy_io.save_policy`,
    e.g. ``solve``'s ``policy_out``) on ``game_string`` (what ``tensorcfr exploitability``
    prints). ``on_stage`` gets ``"flattening GAME"`` and ``"computing best responses"`` as
    each stage starts.

    Returns:
        A JSON-ready dict: ``game``, ``policy_file``, ``num_players``, ``num_nodes``,
        ``num_infosets``, ``best_response_values``, ``policy_values``, ``improvements``,
        ``nash_conv``, ``exploitability`` (game utility units), ``flatten_seconds``,
        ``best_response_seconds``.

    Raises:
        TensorCFRError: unknown game, unreadable / corrupt policy file, a policy for
            another game, a policy that is not normalized, or a game too big for
            ``max_memory``.
    """
    from tensorcfr.core.best_response import exploitability
    from tensorcfr.core.policy_io import load_policy
    from tensorcfr.games.openspiel.flatten import flatten_game, load_game
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import parse_memory

    stage = on_stage or (lambda text: None)
    target = resolve_device(device, "--device")
    saved = load_policy(policy_file)
    game = load_game(game_string)
    canonical = str(game)
    if saved.game_string != canonical:
        raise CorruptFileError(f"{policy_file}: the policy is for {saved.game_string}, "
                               f"not {canonical}")
    budget = parse_memory(max_memory)
    started = time.perf_counter()
    stage(f"flattening {canonical}")
    tree = flatten_game(game, max_memory_bytes=budget)
    flatten_seconds = time.perf_counter() - started
    slots = saved.slots_for(tree)
    started = time.perf_counter()
    stage("computing best responses")
    result = exploitability(tree, slots, device=target)
    best_response_seconds = time.perf_counter() - started
    return {
        "game": canonical,
        "policy_file": str(policy_file),
        "num_players": int(tree.num_players),
        "num_nodes": int(tree.num_nodes),
        "num_infosets": int(tree.num_infosets),
        **result.to_dict(),
        "flatten_seconds": flatten_seconds,
        "best_response_seconds": best_response_seconds,
    }
