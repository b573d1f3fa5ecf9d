"""Render OpenSpiel benchmark results: markdown tables and the time-vs-size plot.

Input is the dictionary returned by :func:`tensorcfr.bench.openspiel_bench.run_benchmark`
(or read back from its JSON).  Hand-written notes kept between the markers
``<!-- notes:start -->`` and ``<!-- notes:end -->`` of an existing markdown file survive
regeneration (:func:`render_markdown` takes them as ``notes``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tensorcfr.utils.io import atomic_path, write_text_atomic

__all__ = ["render_markdown", "write_markdown", "plot_time_vs_size", "extract_notes",
           "SOLVER_SHORT_NAMES",
           "NOTES_START", "NOTES_END"]

NOTES_START = "<!-- notes:start -->"
NOTES_END = "<!-- notes:end -->"

SOLVER_SHORT_NAMES = {"ours": "ours f64", "ours_f32": "ours f32", "openspiel_cpp": "OpenSpiel C++",
          "openspiel_python": "OpenSpiel Python", "jax": "JaxCFR"}


def _fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _fmt_s(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _bytes_per_node(above_baseline_mb: float | None, nodes: int | None) -> str:
    """Peak memory above the baseline per game-tree node, in bytes ("—" if unknown)."""
    if above_baseline_mb is None or not nodes:
        return "—"
    return f"{above_baseline_mb * 2**20 / nodes:,.0f}"


def _fmt_mb(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _fmt_x(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.1f}x" if value >= 1 else f"{value:.2f}x"


def _result(game: dict[str, Any], solver: str) -> dict[str, Any] | None:
    return next((r for r in game["results"] if r["solver"] == solver), None)


def _short_status(result: dict[str, Any]) -> str:
    status = str(result.get("status", ""))
    return status.replace("|", "/")


def extract_notes(path: str | os.PathLike[str]) -> str | None:
    """Return the hand-written notes block of an existing markdown file, if any."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(re.escape(NOTES_START) + r"\n?(.*?)" + re.escape(NOTES_END), text,
                      flags=re.S)
    return match.group(1).strip() if match else None


def _run_rows(meta: dict[str, Any], games: list[dict[str, Any]]) -> list[str]:
    """The table of the run: date (and the games of each merged run), machine, threads,
    versions, code, method, load, run time."""
    lines: list[str] = ["| | |", "|---|---|"]
    add = lines.append
    if meta.get("earlier_runs"):
        own = [g["key"] for g in games if g.get("run_utc") == meta.get("date_utc")]
        add(f"| date | {meta.get('date_utc')}"
            + (f" ({', '.join(own)}; other games from the earlier runs below)" if own else "")
            + " |")
    else:
        add(f"| date | {meta.get('date_utc')} |")
    versions = meta.get("versions", {})
    add(f"| machine | {meta.get('cpu_model')}, {meta.get('cpu_cores')} cores, "
        f"{meta.get('ram_gib')} GiB RAM |")
    add(f"| threads per solver | {meta.get('threads')} (torch intra-op, OMP/MKL, XLA CPU) |")
    add(f"| versions | torch {versions.get('torch')}, open_spiel {versions.get('open_spiel')}, "
        f"jax {versions.get('jax')}, numpy {versions.get('numpy')}, "
        f"Python {meta.get('python')} |")
    if meta.get("git_revision") or meta.get("code_sha256"):
        digests = ", ".join(f"`{k}` {v}" for k, v in (meta.get("code_sha256") or {}).items())
        add(f"| code measured | git {meta.get('git_revision')}; SHA-256 prefixes: {digests} |")
    cfg = meta.get("config", {})
    add(f"| method | {cfg.get('warmup')} warm-up iterations, {cfg.get('reps')} timed "
        f"repetitions of >= {cfg.get('min_rep_seconds')} s each; solvers slower than "
        f"{cfg.get('max_iter_seconds')} s/iteration skipped |")
    load0, load1 = meta.get("load_average_start"), meta.get("load_average_end")
    if load0 and load1:
        busy = max(load0[0], load1[0]) > 0.5 * (meta.get("cpu_cores") or 1)
        add(f"| load average (1 min) | {load0[0]:.2f} at start, {load1[0]:.2f} at end"
            + (" (other jobs were running: compare ratios, not absolute times)" if busy else "")
            + " |")
    if meta.get("total_s") is not None:
        add(f"| run time | {meta['total_s'] / 60:.1f} min |")
    for earlier in meta.get("earlier_runs") or []:
        loads = earlier.get("load_average_start") or [float("nan")]
        games_of_run = [g["key"] for g in games if g.get("run_utc") == earlier.get("date_utc")]
        digests = ", ".join(f"`{k}` {v}" for k, v in (earlier.get("code_sha256") or {}).items())
        add(f"| earlier run merged | {earlier.get('date_utc')}"
            + (f" ({', '.join(games_of_run)})" if games_of_run else "")
            + f": git {earlier.get('git_revision')}; {digests}; load {loads[0]:.2f} at start"
            + (f"; {earlier['total_s'] / 60:.1f} min" if earlier.get("total_s") else "") + " |")
    lines.append("")
    return lines


def _games_section(games: list[dict[str, Any]]) -> list[str]:
    """The games measured: OpenSpiel game string, sizes, when measured, notes."""
    lines = ["## Games", "",
             "| game | OpenSpiel game string | nodes | terminals | infosets | depth | measured | "
             "note |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for g in games:
        note = g.get("note") or ""
        if g.get("turn_based_wrapper") and "turn-based" not in note:
            note = (note + "; " if note else "") + "turn-based wrapper"
        lines.append(f"| {g['key']} | `{g['game_string']}` | {g['nodes']:,} | "
                     f"{g['terminals']:,} | {g['infosets']:,} | {g['max_depth']} | "
                     f"{g.get('measured_utc', '')} | {note} |")
    lines.append("")
    return lines


_TIME_TABLES = (
    ("Wall time per iteration (ms, median)", "ms_per_iter", "speedup_of_ours",
     "Wall-clock time, as a user waits for it."),
    ("CPU time per iteration (ms, median)", "cpu_ms_per_iter", "cpu_speedup_of_ours",
     "Process CPU time (all threads of the solver's process). On a loaded machine this "
     "is the fairer single-core measure: wall time also counts waiting for a core, and a "
     "process with several busy threads (JaxCFR's XLA pool) gets a larger share of the "
     "cores."))
"""(title, result field in ms, its speed-up field, what the time is) of each time table."""


def _time_cell(result: dict[str, Any] | None, solver: str, field_name: str,
               speed_field: str) -> str:
    """One cell of a time table: ms per iteration and, for another solver than ours, the
    speed-up of ours over it; its status if it was not measured; "—" if it did not run."""
    if result is None:
        return "—"
    if result.get(field_name) is None:
        return _short_status(result)
    cell = _fmt_ms(result[field_name])
    if solver != "ours" and result.get(speed_field) is not None:
        cell += f" ({_fmt_x(result[speed_field])})"
    return cell


def _time_sections(games: list[dict[str, Any]], solvers: list[str],
                   plot_name: str | None) -> list[str]:
    """The wall-time and CPU-time tables (game x solver), then the plot's link."""
    lines: list[str] = []
    add = lines.append
    for title, field_name, speed_field, explanation in _TIME_TABLES:
        add(f"## {title}")
        add("")
        add("| game | nodes | " + " | ".join(SOLVER_SHORT_NAMES.get(s, s) for s in solvers)
            + " |")
        add("|---|---:|" + "---:|" * len(solvers))
        for g in games:
            cells = [_time_cell(_result(g, s), s, field_name, speed_field) for s in solvers]
            add(f"| {g['key']} | {g['nodes']:,} | " + " | ".join(cells) + " |")
        add("")
        add(explanation + " In parentheses: speed-up of ours (float64) over that solver, "
            "the median of the ratios of paired repetitions.")
        add("")
    if plot_name:
        add(f"![time per iteration against game size]({plot_name})")
        add("")
    return lines


def _details_section(games: list[dict[str, Any]]) -> list[str]:
    """Every (game, solver) row: set-up, first iteration, times, speed-ups, memory, status."""
    lines = ["## Details per game and solver", "",
             "| game | solver | set-up s | 1st iter s | ms/iter | CPU ms/iter | speed-up of ours "
             "| CPU speed-up | peak RSS MiB | above baseline MiB | B/node above baseline | "
             "status |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for g in games:
        for r in g["results"]:
            lines.append(
                f"| {g['key']} | {SOLVER_SHORT_NAMES.get(r['solver'], r['solver'])} | "
                f"{_fmt_s(r.get('setup_s'))} | {_fmt_s(r.get('first_iter_s'))} | "
                f"{_fmt_ms(r.get('ms_per_iter'))} | {_fmt_ms(r.get('cpu_ms_per_iter'))} | "
                f"{_fmt_x(r.get('speedup_of_ours'))} | {_fmt_x(r.get('cpu_speedup_of_ours'))} | "
                f"{_fmt_mb(r.get('peak_rss_mb'))} | "
                f"{_fmt_mb(r.get('peak_above_baseline_mb'))} | "
                f"{_bytes_per_node(r.get('peak_above_baseline_mb'), g.get('nodes'))} | "
                f"{_short_status(r)} |")
    lines += ["",
              "*Set-up*: ours = walk of the OpenSpiel tree + tensor build "
              "(`TensorCFRSolver(game)`); "
              "OpenSpiel C++/Python = `CFRSolver(game)`; JaxCFR = `JaxCFR(game)`, whose first "
              "iteration also compiles the XLA program (*1st iter*). *Peak RSS* is the worker's "
              "`VmHWM`; *above baseline* subtracts its RSS after importing its libraries and "
              "loading the game (torch alone is ~200+ MiB, pyspiel ~30 MiB); *B/node* divides "
              "that by the game's number of nodes. *CPU ms/iter* is process CPU "
              "time; CPU < wall means the worker waited for a core (machine load).",
              ""]
    return lines


def _targets_section(targets: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, measured and met or not (empty without targets)."""
    if not targets:
        return []
    lines = ["## Targets", "",
             "| target | game | measured (wall) | met | measured (CPU time) | met (CPU) |",
             "|---|---|---:|---|---:|---|"]
    verdict = {True: "yes", False: "**no**", None: "not measured"}
    for t in targets:
        value = t.get("value")
        is_memory = "memory" in t["target"] or "RSS" in t["target"]
        measured = "—" if value is None else (f"{value:.2f}x" if is_memory else _fmt_x(value))
        cpu_cells = "| |" if is_memory else (
            f"| {_fmt_x(t.get('value_cpu'))} | {verdict[t.get('passed_cpu')]} |")
        lines.append(f"| {t['target']} | {t['game']} | {measured} | "
                     f"{verdict[t.get('passed')]} " + cpu_cells)
    lines += ["",
              "Speed targets are speed-ups of ours (float64), from wall time and from process "
              "CPU time (paired per repetition); memory targets are ratios ours / OpenSpiel C++ "
              "(< 1: ours uses less).",
              ""]
    return lines


def _reference_section(reference: dict[str, Any], games: list[dict[str, Any]]) -> list[str]:
    """The issue's reference ms/iteration (OpenSpiel C++, JaxCFR) next to this run's (empty
    without reference numbers)."""
    if not reference:
        return []
    lines = ["## Reference numbers (issue, low load) vs this run", "",
             "| game | OpenSpiel C++ ref | C++ here | JaxCFR ref | JaxCFR here |",
             "|---|---:|---:|---:|---:|"]
    for g in games:
        ref = reference.get(g["key"])
        if not ref:
            continue
        cpp, jx = _result(g, "openspiel_cpp"), _result(g, "jax")
        lines.append(f"| {g['key']} | {_fmt_ms(ref.get('openspiel_cpp'))} | "
                     f"{_fmt_ms(cpp.get('ms_per_iter') if cpp else None)} | "
                     f"{_fmt_ms(ref.get('jax'))} | "
                     f"{_fmt_ms(jx.get('ms_per_iter') if jx else None)} |")
    lines.append("")
    return lines


def _notes_section(notes: str | None) -> list[str]:
    """The fixed notes, then the hand-written notes block between the markers."""
    lines = ["## Notes", "",
             "- JaxCFR runs in float32 (JAX's default) and is built with "
             "`regret_matching_plus=False, linear_averaging=False` (vanilla CFR). Its regrets "
             "are known to be wrong on battleship and goofspiel; it is only a speed reference "
             "here.",
             "- `ours f32` is the same solver in float32, for a like-for-like comparison with "
             "JaxCFR.",
             "- Raw numbers (every repetition) are in `openspiel_results.json`.",
             "",
             NOTES_START]
    if notes:
        lines.append(notes.strip())
    lines += [NOTES_END, ""]
    return lines


def render_markdown(results: dict[str, Any], notes: str | None = None,
                    plot_name: str | None = "openspiel_time_vs_size.png",
                    command: str = "tensorcfr bench") -> str:
    """Markdown report: machine, game sizes, time per iteration, memory, targets, notes."""
    meta = results["meta"]
    games = results["games"]
    solvers: list[str] = list(meta.get("config", {}).get("solvers") or
                              [r["solver"] for r in games[0]["results"]] if games else [])
    intro = [
        "# Tensor CFR vs OpenSpiel CFR solvers",
        "",
        "Generated by `" + command + "` (code: `src/tensorcfr/bench/`). Vanilla CFR with "
        "alternating updates for every solver. Each solver runs in its own fresh subprocess; "
        "the timed repetitions alternate between the solvers (round-robin, rotating order) so "
        "that load from other processes hits all of them alike. ms/iter is the median over "
        "repetitions; *speed-up* is the median of the paired per-repetition ratios "
        "`time(solver) / time(ours f64)` (> 1: ours is faster).",
        ""]
    return "\n".join([
        *intro,
        *_run_rows(meta, games),
        *_games_section(games),
        *_time_sections(games, solvers, plot_name),
        *_details_section(games),
        *_targets_section(results.get("targets") or []),
        *_reference_section(meta.get("reference_ms_per_iter") or {}, games),
        *_notes_section(notes),
    ])


def write_markdown(results: dict[str, Any], path: str | os.PathLike[str],
                   plot_name: str | None = "openspiel_time_vs_size.png",
                   command: str = "tensorcfr bench") -> None:
    """Write :func:`render_markdown` to ``path`` atomically, keeping its notes block."""
    notes = extract_notes(path)
    write_text_atomic(path, render_markdown(results, notes=notes, plot_name=plot_name,
                                            command=command))


def plot_time_vs_size(results: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Log-log plot of ms per iteration against game size (nodes), one line per solver.

    Written atomically as PNG with matplotlib's Agg backend (Kim 2024, Figure 1 style).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = results["meta"]
    games = sorted(results["games"], key=lambda g: g["nodes"])
    solvers = list(meta.get("config", {}).get("solvers") or [])
    markers = {"ours": "o", "ours_f32": "s", "openspiel_cpp": "^", "openspiel_python": "v",
               "jax": "D"}
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5), dpi=110, sharey=True)
    panels = (("ms_per_iter", "wall time per CFR iteration (ms)"),
              ("cpu_ms_per_iter", "CPU time per CFR iteration (ms)"))
    for ax, (field_name, ylabel) in zip(axes, panels):
        for solver in solvers:
            xs, ys = [], []
            for g in games:
                r = _result(g, solver)
                if r is not None and r.get(field_name):
                    xs.append(g["nodes"])
                    ys.append(r[field_name])
            if xs:
                ax.plot(xs, ys, marker=markers.get(solver, "o"),
                        label=SOLVER_SHORT_NAMES.get(solver, solver))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("game size (histories / nodes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"CFR iteration time vs game size — {meta.get('cpu_model')}, "
                 f"{meta.get('threads')} thread(s) per solver, {meta.get('date_utc')}",
                 fontsize=10)
    for ax in axes:
        ymin = ax.get_ylim()[0]
        for g in games:
            ax.annotate(g["key"], (g["nodes"], ymin), xytext=(2, 4),
                        textcoords="offset points", rotation=90, fontsize=7, color="gray",
                        va="bottom")
    fig.tight_layout()
    target = Path(path)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
