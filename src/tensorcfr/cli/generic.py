"""``tensorcfr solve``: tensor CFR on any OpenSpiel game.

The run is :func:`tensorcfr.games.openspiel.solve.solve` with a
:class:`~tensorcfr.games.openspiel.solve.SolveSettings` (walk, solver or resumed checkpoint,
iterations with exact evaluations, checkpoints, policy and plot); this module parses the
options, shows the run's progress events (a spinner during the walk, or a line every
:data:`WALK_REPORT_SECONDS` in logs; a bar during the iterations) and prints the summary.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import (MAX_THREADS, console, dcfr_option, err_console, path_check,
                                  print_json)

ALGO_HELP = "cfr | cfr+ | lcfr | dcfr | pcfr+ (default cfr, or the checkpoint's with --resume)"

WALK_REPORT_SECONDS = 10.0
"""Interval of the walk's progress lines on a stderr that is not a terminal."""


class _Display:
    """Shows :func:`~tensorcfr.games.openspiel.solve.solve`'s events on stderr: a spinner
    from ``setup`` to ``ready`` (walk counts in it, or a line every
    :data:`WALK_REPORT_SECONDS` when stderr is not a terminal), notes and warnings as lines,
    and a bar with the last exploitability from ``start`` to the end of the run."""

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()
        self.status: Any = None
        self.game = ""
        self.walk_started = self.last_line = 0.0
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> "_Display":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stack.close()

    def __call__(self, event: Any) -> None:
        getattr(self, f"_on_{event.event}")(event)

    def _on_setup(self, event: Any) -> None:
        self.game = event.game
        self.walk_started = self.last_line = time.perf_counter()
        if err_console.is_terminal:
            self.status = self.stack.enter_context(
                err_console.status(f"walking {event.game} and building tensors"))

    def _on_walk(self, event: Any) -> None:
        now = time.perf_counter()
        if self.status is not None:
            self.status.update(f"walking {self.game}: {event.nodes:,} nodes, "
                               f"{event.infosets:,} infosets")
        elif now - self.last_line >= WALK_REPORT_SECONDS:
            self.last_line = now
            err_console.print(f"walking {self.game}: {event.nodes:,} nodes, "
                              f"{event.infosets:,} infosets, {now - self.walk_started:.0f} s",
                              highlight=False, soft_wrap=True)

    def _on_ready(self, event: Any) -> None:
        self.stack.close()  # the spinner goes
        self.status = None

    def _on_note(self, event: Any) -> None:
        err_console.print(event.text, highlight=False, soft_wrap=True)

    def _on_warning(self, event: Any) -> None:
        err_console.print(f"[yellow]warning:[/] {event.text}", highlight=False, soft_wrap=True)

    def _on_start(self, event: Any) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = self.stack.enter_context(Progress(
            TextColumn("[bold]{task.description}"), BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("expl {task.fields[expl]}"), TimeRemainingColumn(),
            console=err_console, transient=True, disable=not err_console.is_terminal))
        self.task = self.bar.add_task(event.label, total=event.target - event.start_iteration,
                                      expl="-")

    def _on_iteration(self, event: Any) -> None:
        self.bar.update(self.task, completed=event.iteration - event.start_iteration)

    def _on_evaluated(self, event: Any) -> None:
        self.bar.update(self.task, expl=f"{event.exploitability:.3e}")


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
    cuda_graph: bool = typer.Option(False, "--cuda-graph",
                                    help="On a CUDA --device: replay each iteration as one "
                                    "captured CUDA graph (one launch per iteration)."),
    passes: str = typer.Option(
        "auto", "--passes",
        help="Which passes run the iterations: auto (numpy for small trees, compiled from "
        "100,000 nodes on CPU, torch otherwise), torch, or lean (CPU, float64: no per-node "
        "state between iterations, about a third of the torch passes' memory at about "
        "half their speed)."),
    dtype: Optional[str] = typer.Option(
        None, help="float64, float32 or auto (default: float64 up to 5,000,000 nodes, "
        "float32 above; the choice is printed)."),
    threads: Optional[int] = typer.Option(None, min=1, max=MAX_THREADS,
                                          help="torch intra-op threads (default 1)."),
    max_memory: str = typer.Option("auto", "--max-memory",
                                   help="Refuse games needing more, e.g. 8G (default: auto, "
                                   "80% of the memory available now)."),
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
    from tensorcfr.games.openspiel.solve import SolveSettings, solve

    settings = SolveSettings(
        game=game, algo=algo, iterations=iterations, alternating=alternating, alpha=alpha,
        beta=beta, gamma=gamma, eval_every=eval_every, device=device, cuda_graph=cuda_graph,
        passes=passes, dtype=dtype, threads=threads, max_memory=max_memory, save=save, checkpoint_every=checkpoint_every,
        resume=resume, policy_out=policy_out, plot=plot)
    with _Display() as display:
        summary = solve(settings, on_progress=display).summary
    if json_out:
        print_json(summary)
        return
    _print_summary(summary, save, policy_out, plot)


def _print_summary(summary: dict[str, Any], save: Path | None, policy_out: Path | None,
                   plot: Path | None) -> None:
    from rich.table import Table

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
        ("passes", summary["passes"]),
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
