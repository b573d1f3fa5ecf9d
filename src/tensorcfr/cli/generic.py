"""``tensorcfr solve``: tensor CFR on any OpenSpiel game (and ``exploitability`` when present)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import MAX_THREADS, dcfr_option, err_console, path_check, print_json
from tensorcfr.errors import TensorCFRError

ALGO_HELP = "cfr | cfr+ | lcfr | dcfr | pcfr+ (default cfr, or the checkpoint's with --resume)"


def _status(message: str) -> Any:
    """A rich spinner on stderr while ``message`` runs (nothing when stderr is not a TTY)."""
    import contextlib

    if not err_console.is_terminal:
        return contextlib.nullcontext()
    return err_console.status(message)


CHECKPOINT_SECONDS = 60.0
"""Default interval of ``solve --save`` checkpoints during a run (seconds of solving)."""

WALK_REPORT_SECONDS = 10.0
"""Interval of the walk's progress lines on a stderr that is not a terminal."""


def _walk_progress(game: str, status: Any) -> Any:
    """A ``flatten_game`` progress callback: updates the spinner on a terminal, else prints
    one line every :data:`WALK_REPORT_SECONDS` seconds to stderr (long walks of big games
    are then visible in logs)."""
    started = time.perf_counter()
    last = {"time": started}

    def report(nodes: int, infosets: int) -> None:
        now = time.perf_counter()
        if status is not None:
            status.update(f"walking {game}: {nodes:,} nodes, {infosets:,} infosets")
        elif now - last["time"] >= WALK_REPORT_SECONDS:
            last["time"] = now
            err_console.print(f"walking {game}: {nodes:,} nodes, {infosets:,} infosets, "
                              f"{now - started:.0f} s", highlight=False, soft_wrap=True)

    return report


def _eval_points(start: int, total: int, every: int) -> set[int]:
    """Iterations (absolute numbers) after which exploitability is evaluated."""
    points = {total}
    if every > 0:
        points.update(range(start + every - (start % every), total + 1, every))
    return {p for p in points if p > start}


def _plot(history: list[tuple[int, float]], path: Path, title: str) -> None:
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


def solve_command(
    game: str = typer.Argument(..., help="OpenSpiel game string, e.g. kuhn_poker or "
                               "'leduc_poker' or 'kuhn_poker(players=3)'."),
    algo: Optional[str] = typer.Option(None, "--algo", help=ALGO_HELP),
    iterations: int = typer.Option(1000, "--iterations", "-n", min=1, max=10**9,
                                   help="Iterations to run now: a resumed "
                                   "run does this many more than its checkpoint's "
                                   "(numeral211 solve counts the total instead)."),
    alternating: Optional[bool] = typer.Option(
        None, "--alternating/--simultaneous",
        help="Alternating updates (default, like OpenSpiel's CFRSolver) or simultaneous."),
    alpha: Optional[float] = dcfr_option("alpha"),
    beta: Optional[float] = dcfr_option("beta"),
    gamma: Optional[float] = dcfr_option("gamma"),
    eval_every: Optional[int] = typer.Option(
        None, "--eval-every", min=0, max=10**9,
        help="Compute exploitability every K iterations (default: about "
        "20 times per run; 0 = only at the end)."),
    device: str = typer.Option("cpu", help="torch device: cpu, cuda, cuda:1 ..."),
    dtype: Optional[str] = typer.Option(
        None, help="float64, float32 or auto (default: float64 up to 5,000,000 nodes, "
        "float32 above; the choice is printed)."),
    threads: Optional[int] = typer.Option(None, min=1, max=MAX_THREADS,
                                          help="torch intra-op threads (default 1)."),
    max_memory: str = typer.Option("auto", "--max-memory",
                                   help="Refuse games needing more, e.g. 8G (default: the "
                                   "memory available now)."),
    save: Optional[Path] = typer.Option(None, "--save", callback=path_check("output-file"),
                                        help="Write a checkpoint here (NPZ): "
                                        "during the run (see --checkpoint-every) and at the "
                                        "end."),
    checkpoint_every: Optional[int] = typer.Option(
        None, "--checkpoint-every", min=0, max=10**9,
        help="With --save: write the checkpoint every K "
        "iterations (default: whenever 60 s of solving have passed since the last one; "
        "0 = only at the end)."),
    resume: Optional[Path] = typer.Option(None, "--resume", callback=path_check("input-file"),
                                          help="Resume from a checkpoint."),
    policy_out: Optional[Path] = typer.Option(None, "--policy-out",
                                              callback=path_check("output-file"),
                                              help="Write the average policy (NPZ + JSON "
                                              "metadata)."),
    plot: Optional[Path] = typer.Option(None, "--plot", callback=path_check("output-file"),
                                        help="Save exploitability vs "
                                        "iteration (log-log PNG)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object to stdout."),
) -> None:
    """Solve an OpenSpiel game with tensor CFR and report its exploitability."""
    import torch
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from tensorcfr.core.cfr import TensorCFRSolver, load_checkpoint, resolve_dtype
    from tensorcfr.core.policy_io import read_checkpoint_metadata, save_policy
    from tensorcfr.core.regret import CFRVariant
    from tensorcfr.games.openspiel.flatten import flatten_game, load_game
    from tensorcfr.utils.resources import parse_memory, peak_rss_mb, set_threads

    from tensorcfr.utils.device import resolve_device as check_device
    from tensorcfr.utils.io import check_output_file

    if iterations < 1:
        raise TensorCFRError(f"--iterations must be at least 1, got {iterations}")
    if eval_every is not None and eval_every < 0:
        raise TensorCFRError(f"--eval-every must be >= 0, got {eval_every}")
    if checkpoint_every is not None and checkpoint_every < 0:
        raise TensorCFRError(f"--checkpoint-every must be >= 0, got {checkpoint_every}")
    if checkpoint_every is not None and save is None:
        raise TensorCFRError("--checkpoint-every needs --save FILE (where to write it)")
    n_threads = set_threads(threads)
    budget = parse_memory(max_memory)
    check_device(device, "--device")  # fail before the (possibly long) walk
    if dtype is not None:
        resolve_dtype(dtype)
    if algo is not None:
        try:
            CFRVariant.parse(algo, alpha, beta, gamma)  # validate early: one-line error
        except TensorCFRError as exc:
            raise TensorCFRError(f"--algo: {exc}") from None
    # Every output path is checked before the (possibly long) walk and solve.
    for option, path in (("--save", save), ("--policy-out", policy_out), ("--plot", plot)):
        if path is not None:
            check_output_file(path, option)
    loaded = load_game(game)
    setup_started = time.perf_counter()
    if resume is not None:
        meta = read_checkpoint_metadata(resume)
        if meta.get("game") != str(loaded):
            from tensorcfr.errors import CorruptFileError

            raise CorruptFileError(f"{resume}: checkpoint is for {meta.get('game')}, "
                                   f"not {loaded}")
        params = meta.get("parameters", {})
        if algo is not None and CFRVariant.parse(algo).name != params.get("algo"):
            raise TensorCFRError(f"--algo {algo} differs from the checkpoint's "
                                 f"{params.get('algo')!r}")
        if alternating is not None and bool(alternating) != bool(params.get("alternating")):
            raise TensorCFRError("--alternating/--simultaneous differs from the checkpoint")
        if dtype is not None and dtype.strip().lower() != "auto" and \
                str(resolve_dtype(dtype)).removeprefix("torch.") != params.get("dtype"):
            raise TensorCFRError(f"--dtype {dtype} differs from the checkpoint's "
                                 f"{params.get('dtype')!r}")
    with _status(f"walking {loaded} and building tensors") as status:
        tree = flatten_game(loaded, max_memory_bytes=budget,
                            progress=_walk_progress(str(loaded), status))
        if resume is not None:
            solver = load_checkpoint(resume, tree, device=device, max_memory_bytes=budget)
        else:
            solver = TensorCFRSolver(tree, algo=algo or "cfr",
                                     alternating=True if alternating is None else alternating,
                                     alpha=alpha, beta=beta, gamma=gamma, device=device,
                                     dtype=dtype or "auto", max_memory_bytes=budget,
                                     threads=n_threads)
    setup_seconds = time.perf_counter() - setup_started

    start_iteration = solver.iteration
    if resume is None and solver.dtype_auto and solver.dtype == torch.float32:
        from tensorcfr.core.cfr import AUTO_FLOAT32_MIN_NODES

        err_console.print(f"dtype float32 chosen automatically: {tree.num_nodes:,} nodes, "
                          f"more than {AUTO_FLOAT32_MIN_NODES:,} (--dtype float64 to keep "
                          "float64)", highlight=False, soft_wrap=True)
    if resume is not None:
        err_console.print(f"resumed from {resume} at iteration {start_iteration:,} "
                          f"({solver.algo}, {str(solver.dtype).removeprefix('torch.')}); "
                          f"running {iterations:,} more", highlight=False, soft_wrap=True)
    target = start_iteration + iterations
    every = eval_every if eval_every is not None else max(1, iterations // 20)
    points = _eval_points(start_iteration, target, every)
    from tensorcfr.core.best_response import exploitability as exploitability_fn

    history: list[tuple[int, float]] = []
    last_result: Any = None
    solve_seconds = 0.0

    evaluation_error: list[str] = []
    if not solver.tree.metadata.get("perfect_recall", True):
        err_console.print(
            f"[yellow]warning:[/] {solver.game_string} does not have perfect recall "
            f"({solver.tree.metadata.get('imperfect_recall_infosets')} infosets); CFR runs but "
            "without convergence guarantees", highlight=False, soft_wrap=True)

    def evaluate() -> Any:
        if evaluation_error:
            return None
        try:
            return exploitability_fn(solver.tree, solver.average_policy())
        except TensorCFRError as exc:  # e.g. imperfect recall: no exact best response
            evaluation_error.append(str(exc))
            return None

    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total}"),
                        TextColumn("expl {task.fields[expl]}"), TimeRemainingColumn(),
                        console=err_console, transient=True, disable=not err_console.is_terminal)
    last_save = {"time": time.perf_counter(), "iteration": start_iteration}
    checkpoints_written = 0

    def maybe_checkpoint() -> None:
        nonlocal checkpoints_written
        if save is None or checkpoint_every == 0 or solver.iteration >= target:
            return
        if checkpoint_every is not None:
            due = solver.iteration - last_save["iteration"] >= checkpoint_every
        else:
            due = time.perf_counter() - last_save["time"] >= CHECKPOINT_SECONDS
        if due:
            solver.save(str(save))
            checkpoints_written += 1
            last_save.update(time=time.perf_counter(), iteration=solver.iteration)

    with progress:
        task = progress.add_task(f"{solver.algo} {solver.game_string}", total=iterations,
                                 expl="-")
        while solver.iteration < target:
            step_end = min((p for p in points if p > solver.iteration), default=target)
            started = time.perf_counter()
            while solver.iteration < step_end:
                solver.evaluate_and_update_policy()
                if solver.device.type == "cuda":  # pragma: no cover - no GPU here
                    torch.cuda.synchronize(solver.device)
                progress.update(task, completed=solver.iteration - start_iteration)
                if save is not None:
                    solve_seconds += time.perf_counter() - started
                    maybe_checkpoint()
                    started = time.perf_counter()
            solve_seconds += time.perf_counter() - started
            if step_end in points:
                last_result = evaluate()
                if last_result is not None:
                    history.append((solver.iteration, float(last_result.exploitability)))
                    progress.update(task, expl=f"{last_result.exploitability:.3e}")

    if save is not None:
        solver.save(str(save))
    exploitability_value = None if last_result is None else float(last_result.exploitability)
    nash_conv = None if last_result is None else float(last_result.nash_conv)
    if policy_out is not None:
        save_policy(policy_out, solver.tree, solver.average_policy(), extra={
            "algo": solver.algo, "iterations": solver.iteration,
            "parameters": solver.parameters(), "exploitability": exploitability_value})
    if plot is not None:
        _plot(history, plot, f"{solver.algo} on {solver.game_string}")
    summary: dict[str, Any] = {
        "game": solver.game_string,
        "algo": solver.algo,
        "alternating": solver.alternating,
        "alpha": solver.variant.alpha, "beta": solver.variant.beta,
        "gamma": solver.variant.gamma,
        "iterations": solver.iteration,
        "iterations_run": iterations,
        "exploitability": exploitability_value,
        "nash_conv": nash_conv,
        "ms_per_iteration": 1000.0 * solve_seconds / iterations,
        "setup_seconds": setup_seconds,
        "walk_seconds": solver.tree.setup_seconds,
        "peak_rss_mb": peak_rss_mb(),
        "threads": n_threads,
        "device": str(solver.device),
        "dtype": str(solver.dtype).removeprefix("torch."),
        "num_nodes": solver.tree.num_nodes,
        "num_infosets": solver.tree.num_infosets,
        "num_action_slots": solver.tree.num_slots,
        "estimated_memory_mb": solver.estimated_memory_bytes / 2**20,
        "exploitability_history": [[i, e] for i, e in history],
        "resumed_from_iteration": start_iteration if resume is not None else None,
    }
    if evaluation_error:
        summary["note"] = f"no exploitability: {evaluation_error[0]}"
    if json_out:
        print_json(summary)
        return
    _print_summary(summary, save, policy_out, plot)


def _print_summary(summary: dict[str, Any], save: Path | None, policy_out: Path | None,
                   plot: Path | None) -> None:
    from rich.table import Table

    from tensorcfr.cli.common import console

    table = Table(title=f"{summary['algo']} on {summary['game']}", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    expl = summary["exploitability"]
    rows = [
        ("iterations", str(summary["iterations"])),
        ("updates", "alternating" if summary["alternating"] else "simultaneous"),
        ("exploitability", (summary.get("note") or "n/a") if expl is None else f"{expl:.6e}"),
        ("nash_conv", "n/a" if summary["nash_conv"] is None else f"{summary['nash_conv']:.6e}"),
        ("ms / iteration", f"{summary['ms_per_iteration']:.3f}"),
        ("setup (walk + tensors)", f"{summary['setup_seconds']:.2f} s"),
        ("tree", f"{summary['num_nodes']} nodes, {summary['num_infosets']} infosets, "
                 f"{summary['num_action_slots']} action slots"),
        ("device / dtype / threads", f"{summary['device']} / {summary['dtype']} / "
                                     f"{summary['threads']}"),
        ("peak RSS", f"{summary['peak_rss_mb']:.0f} MiB"),
    ]
    for label, path in (("checkpoint", save), ("policy", policy_out), ("plot", plot)):
        if path is not None:
            rows.append((label, str(path)))
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``solve`` to the root app."""
    app.command("solve", help="Solve an OpenSpiel game with tensor CFR (cfr, cfr+, lcfr, "
                "dcfr, pcfr+).")(solve_command)
