"""``tensorcfr bench``: our tensor CFR against OpenSpiel's C++, Python and JAX CFR solvers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from tensorcfr.cli.common import MAX_THREADS, console, err_console, path_check, print_json

RESULTS_NAME = "openspiel_results.json"
MARKDOWN_NAME = "openspiel.md"
PLOT_NAME = "openspiel_time_vs_size.png"
PARTIAL_NAME = "openspiel_results.partial.json"


def write_outputs(results: dict[str, Any], out_dir: Path, command: str) -> list[Path]:
    """Write the JSON, the markdown table and the plot into ``out_dir``; return the paths."""
    from tensorcfr.bench.openspiel_bench import refresh_derived
    from tensorcfr.bench.report import plot_time_vs_size, write_markdown
    from tensorcfr.utils.io import write_json_atomic

    refresh_derived(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path, png_path = (out_dir / RESULTS_NAME, out_dir / MARKDOWN_NAME,
                                    out_dir / PLOT_NAME)
    write_json_atomic(json_path, results)
    plot_time_vs_size(results, png_path)
    write_markdown(results, md_path, plot_name=PLOT_NAME, command=command)
    return [json_path, md_path, png_path]


def _summary_table(results: dict[str, Any]) -> Any:
    from rich.table import Table

    from tensorcfr.bench.report import SOLVER_SHORT_NAMES, _fmt_mb, _fmt_ms, _fmt_x

    table = Table(title="ms per CFR iteration (speed-up of ours f64 in parentheses)")
    table.add_column("game")
    table.add_column("nodes", justify="right")
    solvers = results["meta"]["config"]["solvers"]
    for s in solvers:
        table.add_column(SOLVER_SHORT_NAMES.get(s, s), justify="right")
    table.add_column("MiB above baseline, ours / C++", justify="right")
    for g in results["games"]:
        by_solver = {r["solver"]: r for r in g["results"]}
        cells = []
        for s in solvers:
            r = by_solver.get(s)
            if r is None:
                cells.append("—")
            elif r.get("ms_per_iter") is None:
                cells.append(r["status"])
            else:
                extra = f" ({_fmt_x(r['speedup_of_ours'])})" if r.get("speedup_of_ours") else ""
                cells.append(_fmt_ms(r["ms_per_iter"]) + extra)
        ours, cpp = by_solver.get("ours"), by_solver.get("openspiel_cpp")
        mem = (f"{_fmt_mb(ours and ours.get('peak_above_baseline_mb'))} / "
               f"{_fmt_mb(cpp and cpp.get('peak_above_baseline_mb'))}")
        table.add_row(g["key"], f"{g['nodes']:,}", *cells, mem)
    return table


def bench_command(
    games: Optional[list[str]] = typer.Option(
        None, "--game", "-g",
        help="Game key (kuhn_poker, leduc_poker, goofspiel_4, battleship_2x2, liars_dice, "
             "tic_tac_toe, battleship_3x2, battleship_4x4, battleship_3x2_4shots), 'all', or "
             "any OpenSpiel game string. Repeatable. Default: the standard set."),
    solvers: Optional[list[str]] = typer.Option(
        None, "--solver", "-s",
        help="ours, ours_f32, ours_lean (the memory-lean passes), openspiel_cpp, "
             "openspiel_python, jax. Repeatable. Default: all but ours_lean."),
    threads: int = typer.Option(1, "--threads", min=1, max=MAX_THREADS,
                                help="Threads per solver (torch, OMP, XLA)."),
    reps: int = typer.Option(7, "--reps", min=1, max=10**6,
                             help="Timed repetitions per solver (round-robin)."),
    warmup: int = typer.Option(2, "--warmup", min=0, max=10**6,
                               help="Warm-up iterations before timing."),
    min_rep_seconds: float = typer.Option(
        0.3, "--min-rep-seconds", min=0, max=86400,
        help="Iterations are grouped until a repetition lasts this long."),
    max_iter_seconds: float = typer.Option(
        30.0, "--max-iter-seconds", min=0.001, max=1e6,
        help="Skip a solver whose iteration takes longer (s)."),
    max_setup_seconds: float = typer.Option(
        900.0, "--max-setup-seconds", min=0.001, max=1e6,
        help="Skip a solver whose set-up takes longer (s)."),
    device: str = typer.Option("cpu", "--device", help="Torch device of our solver."),
    max_worker_memory: Optional[str] = typer.Option(
        None, "--max-worker-memory",
        help="Kill a solver's worker whose resident memory exceeds this (e.g. 6G) and report "
             "it as skipped. Default: no limit."),
    out_dir_text: Optional[str] = typer.Option(
        None, "--out-dir", callback=path_check("output-dir"),
        help=f"Write {RESULTS_NAME}, {MARKDOWN_NAME} and {PLOT_NAME} here "
             f"(finished games are saved to {PARTIAL_NAME} as the run goes)."),
    render: Optional[Path] = typer.Option(
        None, "--render", callback=path_check("input-file"),
        help="Do not measure: re-render the markdown and plot of this "
                               "results JSON into --out-dir (default: its folder)."),
    update: bool = typer.Option(
        False, "--update", help=f"Merge into the existing {RESULTS_NAME} of --out-dir: the "
                                "games measured now replace theirs, the others are kept."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object per game on stdout, "
                                                        "then one with the run's meta data."),
) -> None:
    """Benchmark tensor CFR against OpenSpiel's CFR solvers (time, set-up, memory)."""
    from tensorcfr.bench.openspiel_bench import (BenchConfig, BenchmarkError, load_results,
                                                 merge_results, resolve_games, resolve_solvers,
                                                 run_benchmark)
    from tensorcfr.utils.io import write_json_atomic
    from tensorcfr.utils.resources import parse_memory

    out_dir = Path(out_dir_text) if out_dir_text is not None else None
    command = "tensorcfr bench"
    if render is not None:
        results = load_results(render)
        paths = write_outputs(results, out_dir or render.parent, command)
        if json_out:
            print_json({"written": [str(p) for p in paths]})
        else:
            for p in paths:
                console.print(f"wrote {p}", highlight=False)
        return

    config = BenchConfig(games=resolve_games(games), solvers=resolve_solvers(solvers),
                         threads=threads, reps=reps, warmup=warmup,
                         min_rep_seconds=min_rep_seconds, max_iter_seconds=max_iter_seconds,
                         max_setup_seconds=max_setup_seconds, device=device,
                         max_worker_memory_mb=(None if max_worker_memory is None else
                                               parse_memory(max_worker_memory) / 2**20))
    config.validate()
    previous = None
    if update:
        if out_dir is None:
            raise BenchmarkError("--update needs --out-dir (the results to merge into)")
        if (out_dir / RESULTS_NAME).exists():
            previous = load_results(out_dir / RESULTS_NAME)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    partial: list[dict[str, Any]] = []

    def on_game(record: dict[str, Any]) -> None:
        partial.append(record)
        if json_out:
            print_json({"type": "game", **record})
        if out_dir is not None:
            write_json_atomic(out_dir / PARTIAL_NAME, {"meta": {"partial": True},
                                                       "games": partial})

    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=err_console, transient=json_out) as progress:
        task = progress.add_task("starting", total=1.0)

        def on_progress(text: str, fraction: float) -> None:
            progress.update(task, description=text, completed=fraction)

        results = run_benchmark(config, progress=on_progress, on_game=on_game)
    if previous is not None:
        results = merge_results(previous, results)
    if out_dir is not None:
        paths = write_outputs(results, out_dir, command)
        (out_dir / PARTIAL_NAME).unlink(missing_ok=True)
    else:
        paths = []
    if json_out:
        print_json({"type": "summary", "meta": results["meta"], "targets": results["targets"],
                    "written": [str(p) for p in paths]})
        return
    console.print(_summary_table(results))
    for t in results["targets"]:
        met = {True: "[green]met[/]", False: "[red]NOT met[/]", None: "not measured"}[t["passed"]]
        value = "—" if t["value"] is None else f"{t['value']:.2f}"
        console.print(f"{t['target']} on {t['game']}: {value} {met}")
    for p in paths:
        console.print(f"wrote {p}", highlight=False)
