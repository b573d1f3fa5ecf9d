"""Benchmark: many Pasur deals as one DCFR problem (``pasur batch --batch-size``), one at a time
against batches of 1, 4, 16, 64... on one CPU thread or a GPU, side by side in one run.

* **one at a time** (the baseline, always on the CPU, one thread): ``run_dcfr`` per deal,
  seeds ``0..B-1`` (``--baseline-deals B``): graph build, round-by-round DCFR and the exact
  evaluation (exploitability and game value), no files;
* **batches** of ``K`` deals (``--sizes``, seeds ``0..K-1``) on ``--device``: each deal's
  graphs built once (on the CPU, by ``--build-processes`` spawned processes of one thread;
  their wall time is counted, the pool's start is not), then the merged solve and exact
  evaluation (``solve_graphs_batch``: merge, DCFR, evaluation) timed.

Per row: deals per second end to end (builds + solve) and for the solve alone, and
edge-iterations per second (edges of all rounds x iterations / solve seconds), which does not
depend on which deals a row holds (deal sizes vary 2-3x); the speed-up over the baseline is
given in both. Each batch's per-deal values are compared with the baseline's where the deals
overlap (``max_value_diff``). A size whose projected time would pass ``--time-budget``, or
whose memory (the model, scaled from the deals built so far) would pass 90% of what the
device has free, is skipped (said in the output). The 1-minute load average is noted
before and after each row.

Runs from a checkout with ``PYTHONPATH=src`` and no install (numpy and torch only). Usage::

    PYTHONPATH=src python3 benchmarks/bench_pasur_batched.py --device cpu --sizes 1,4,16
    PYTHONPATH=src python3 benchmarks/bench_pasur_batched.py --device cuda \\
        --out "$OUT/pasur_batched.json"            # the GPU run, about 3 minutes
    .venv/bin/python benchmarks/bench_pasur_batched.py --merge gpu_out/pasur_batched.json

``--out`` (default ``docs/benchmarks/pasur_batched.json``) gets the run under its device type
(``cpu`` / ``cuda``), beside the runs of other devices already there, and a markdown page next
to it (``.md``); the default file instead refreshes the batching section of
``docs/benchmarks/pasur_batch.md``. ``--merge FILE`` only copies FILE's runs into ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC_JSON = ROOT / "docs/benchmarks/pasur_batched.json"
BATCH_PAGE = ROOT / "docs/benchmarks/pasur_batch.md"
sys.path.insert(0, str(ROOT / "src"))

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def _machine(device: Any) -> dict[str, Any]:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__,
            "python": platform.python_version(),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["gpu_memory_gib"] = torch.cuda.get_device_properties(device).total_memory / 2**30
    return info


def _load() -> float:
    return os.getloadavg()[0]


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _edges(graphs: list[Any]) -> int:
    return sum(g.total_edges for g in graphs)


def baseline(seeds: list[int], iterations: int) -> dict[str, Any]:
    """One deal at a time on the CPU, one thread: ``run_dcfr`` per deal."""
    from tensorcfr.games.pasur.engine.rules import random_deal
    from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings, run_dcfr

    load = _load()
    deals = []
    t0 = time.perf_counter()
    for seed in seeds:
        r = run_dcfr(DcfrSettings(deal=random_deal(seed), iterations=iterations, threads=1,
                                  device="cpu", reuse_freed_memory=False))
        deals.append({"seed": seed, "value": r["value"], "exact_value": r["exact_value"],
                      "exploitability": r["exploitability"], "edges": sum(r["edges_per_round"]),
                      "build_seconds": r["build_seconds"],
                      "solve_seconds": r["solve_seconds"] + r["quality_seconds"],
                      "seconds": r["seconds"]})
        print(json.dumps({"baseline_deal": deals[-1]}), flush=True)
    wall = time.perf_counter() - t0
    solve = sum(d["solve_seconds"] for d in deals)
    return {"deals": len(deals), "wall_seconds": wall, "solve_seconds": solve,
            "build_seconds": sum(d["build_seconds"] for d in deals),
            "deals_per_second": len(deals) / wall, "solve_deals_per_second": len(deals) / solve,
            "edge_iterations_per_second": sum(d["edges"] for d in deals) * iterations / solve,
            "load_start": load, "load_end": _load(), "per_deal": deals}


def _build(seed: int) -> list[Any]:
    """The dag-mode graphs of seeded deal ``seed`` (in a build process: one thread)."""
    import torch

    from tensorcfr.games.pasur.engine.rules import random_deal
    from tensorcfr.games.pasur.solving.dcfr_run import build_graphs

    torch.set_num_threads(1)
    return build_graphs(random_deal(seed), "dag", device="cpu")


def _convert(value: Any, to_numpy: bool) -> Any:
    """Tensors of a graph (lists, dicts, RoundGraphs) as numpy arrays or back."""
    import dataclasses

    import numpy as np
    import torch

    if isinstance(value, torch.Tensor) and to_numpy:
        return value.numpy()
    if isinstance(value, np.ndarray) and not to_numpy:
        return torch.from_numpy(value)
    if isinstance(value, list):
        return [_convert(v, to_numpy) for v in value]
    if isinstance(value, dict):
        return {k: _convert(v, to_numpy) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        return dataclasses.replace(value, **{f.name: _convert(getattr(value, f.name), to_numpy)
                                             for f in dataclasses.fields(value)})
    return value


def _build_bytes(seed: int) -> bytes:
    """:func:`_build` as one pickle of numpy arrays (protocol 5): one pipe write, where
    pickling the tensors themselves puts each of the ~700 into its own shared-memory file and
    ``torch.save`` compresses (both measured slower than building the graphs)."""
    import pickle

    return pickle.dumps(_convert(_build(seed), True), protocol=5)


def _load_graphs(payload: bytes) -> list[Any]:
    import pickle

    return _convert(pickle.loads(payload), False)


class Builder:
    """Builds the graphs of seeds 0, 1, 2... in order, in this process (``processes`` 1) or
    in a pool of spawned processes, one thread each; ``seconds`` is the wall time spent."""

    def __init__(self, processes: int) -> None:
        self.graphs: list[Any] = []
        self.seconds: list[float] = []  # wall time of each deal's build (pool: its share)
        self.pool = None
        if processes > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(processes,
                                            mp_context=multiprocessing.get_context("spawn"))
            list(self.pool.map(_build_bytes, [0] * processes))  # start them (untimed)

    def up_to(self, size: int) -> None:
        todo = list(range(len(self.graphs), size))
        if not todo:
            return
        if self.pool is None:
            for seed in todo:
                t0 = time.perf_counter()
                self.graphs.append(_build(seed))
                self.seconds.append(time.perf_counter() - t0)
            return
        t0 = time.perf_counter()
        self.graphs.extend(_load_graphs(b) for b in self.pool.map(_build_bytes, todo))
        share = (time.perf_counter() - t0) / len(todo)
        self.seconds.extend([share] * len(todo))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def batches(sizes: list[int], iterations: int, device: Any, budget_end: float,
            base: dict[str, Any] | None, on_row: Any, build_processes: int = 1
            ) -> list[dict[str, Any]]:
    """Batches of ``sizes`` deals (seeds 0..K-1) on ``device``; graphs built once per deal
    (``build_processes`` at a time)."""
    import torch

    from tensorcfr.core.regret import CFRVariant
    from tensorcfr.games.pasur.engine.rules import random_deal
    from tensorcfr.games.pasur.solving.batched import (batch_memory_need, memory_allowed,
                                                       solve_graphs_batch)
    from tensorcfr.games.pasur.solving.dcfr_run import build_graphs

    variant = CFRVariant.parse("dcfr", None, None, None)
    builder = Builder(build_processes)
    graphs, build = builder.graphs, builder.seconds
    # warm-up (CUDA context, kernels, allocator): one small deal, 2 iterations, untimed
    solve_graphs_batch([build_graphs(random_deal(0), "dag")], variant, 2, device=device)
    _sync(device)
    rows: list[dict[str, Any]] = []
    previous: tuple[int, float] | None = None
    known = {d["seed"]: d for d in (base or {}).get("per_deal", [])}
    for size in sizes:
        per_build = (sum(build) / len(build)) if build else 0.3
        projected = (size - len(graphs)) * per_build
        if previous is not None:
            projected += previous[1] * size / previous[0]
        if time.perf_counter() + projected > budget_end:
            rows.append({"size": size, "skipped": f"projected {projected:.0f} s past the "
                         "time budget"})
            on_row(rows[-1])
            break
        if graphs:  # the memory model of the deals built so far, scaled to this size
            need = batch_memory_need(graphs) * size / len(graphs)
            limit, what = memory_allowed(device, None)
            if need > 0.9 * limit:
                rows.append({"size": size, "skipped": f"needs about {need / 2**30:.0f} GiB, "
                             f"{limit / 2**30:.0f} GiB {what}"})
                on_row(rows[-1])
                break
        builder.up_to(size)
        load = _load()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        _sync(device)
        t0 = time.perf_counter()
        result = solve_graphs_batch(graphs[:size], variant, iterations, device=device)
        _sync(device)
        solve = time.perf_counter() - t0
        builds = sum(build[:size])
        edges = sum(_edges(g) for g in graphs[:size])
        diffs = [abs(result.solutions[k].value - known[k]["value"])
                 for k in range(size) if k in known]
        row = {"size": size, "solve_seconds": solve, "merge_seconds": result.merge_seconds,
               "dcfr_seconds": result.solve_seconds, "quality_seconds": result.quality_seconds,
               "build_seconds": builds, "build_processes": build_processes,
               "deals_per_second": size / (builds + solve),
               "solve_deals_per_second": size / solve,
               "edge_iterations_per_second": edges * iterations / solve,
               "memory_model_gib": batch_memory_need(graphs[:size]) / 2**30,
               "max_value_diff": max(diffs) if diffs else None,
               "load_start": load, "load_end": _load()}
        if device.type == "cuda":
            row["peak_gpu_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        if base:
            row["speedup_deals"] = row["deals_per_second"] / base["deals_per_second"]
            row["speedup_solve"] = row["solve_deals_per_second"] / base["solve_deals_per_second"]
            row["speedup_edges"] = (row["edge_iterations_per_second"]
                                    / base["edge_iterations_per_second"])
        rows.append(row)
        on_row(row)
        previous = (size, solve)
    builder.close()
    return rows


# --------------------------------------------------------------------------- reports


def render_run(name: str, run: dict[str, Any]) -> list[str]:
    """Markdown lines of one device's run."""
    m = run["machine"]
    where = f"{m.get('gpu', 'CPU')}" + (f" ({m['gpu_memory_gib']:.0f} GiB)" if "gpu" in m else "")
    lines = [f"### {name}: batches on {where}", "",
             f"- machine: {m['cpu']}, {m['cores']} cores; torch {m['torch']}, Python "
             f"{m['python']}; {m['date']}; `{run['command']}`",
             f"- DCFR (alpha 1.5, beta 0, gamma 2), {run['iterations']} iterations per round, "
             "dag mode (merged states), float64; deals are the seeded random deals "
             "(`pasur solve --seed S`); one CPU thread for the baseline; the batches' graphs "
             f"built by {run.get('build_processes', 1)} process(es) of one thread (their wall "
             "time is *build s*)", ""]
    base = run.get("baseline")
    lines += ["| run | deals | build s | solve s | deals/s (end to end) | deals/s (solve) | "
              "edge-iterations/s | vs baseline: deals/s, solve, edges | model GiB | "
              "max value diff | load start / end |",
              "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    if base:
        lines.append(f"| one at a time, CPU | {base['deals']} | {base['build_seconds']:.1f} | "
                     f"{base['solve_seconds']:.1f} | {base['deals_per_second']:.3f} | "
                     f"{base['solve_deals_per_second']:.3f} | "
                     f"{base['edge_iterations_per_second']:.3g} | 1x | | | "
                     f"{base['load_start']:.2f} / {base['load_end']:.2f} |")
    for row in run["rows"]:
        if "skipped" in row:
            lines.append(f"| batch of {row['size']} | | | | | | | {row['skipped']} | | | |")
            continue
        ratios = (f"{row['speedup_deals']:.1f}x, {row['speedup_solve']:.1f}x, "
                  f"{row['speedup_edges']:.1f}x" if "speedup_deals" in row else "")
        peak = (f" (peak {row['peak_gpu_gib']:.2f} on the GPU)" if "peak_gpu_gib" in row else "")
        diff = "" if row["max_value_diff"] is None else f"{row['max_value_diff']:.1e}"
        lines.append(f"| batch of {row['size']}, {run['device']} | {row['size']} | "
                     f"{row['build_seconds']:.1f} | {row['solve_seconds']:.1f} | "
                     f"{row['deals_per_second']:.3f} | {row['solve_deals_per_second']:.3f} | "
                     f"{row['edge_iterations_per_second']:.3g} | {ratios} | "
                     f"{row['memory_model_gib']:.2f}{peak} | {diff} | "
                     f"{row['load_start']:.2f} / {row['load_end']:.2f} |")
    lines.append("")
    return lines


def render_section(runs: dict[str, Any]) -> str:
    """The batching section of ``docs/benchmarks/pasur_batch.md`` from every device's run."""
    lines = ["## Many deals as one DCFR problem (`--batch-size`)", "",
             "Generated by `benchmarks/bench_pasur_batched.py` (its JSON: "
             "`docs/benchmarks/pasur_batched.json`). `pasur batch --method dcfr --batch-size K` "
             "solves K decks' round graphs as one graph (their disjoint union), then evaluates "
             "them exactly in one pass; per deal the same strategy and values as alone (bit "
             "for bit on the CPU). *Solve* is the merge, the DCFR solve and the exact "
             "evaluation; *end to end* adds the deals' graph builds (on the CPU, numpy). Edge-iterations per second do not depend on which deals a row holds "
             "(their sizes vary 2-3x); the baseline is `run_dcfr` one deal at a time on one "
             "CPU thread, on the same machine. *max value diff*: the largest difference of a "
             "deal's DCFR value (points) from the baseline's, over the deals both ran.", ""]
    for name in sorted(runs):
        if name != "notes":
            lines += render_run(name, runs[name])
    if runs.get("notes"):
        lines += ["Notes:", ""] + [f"- {note}" for note in runs["notes"]] + [""]
    return "\n".join(lines)


def _write(out: Path, runs: dict[str, Any]) -> None:
    """``out`` (JSON) and its report: for the docs' JSON the section of
    ``docs/benchmarks/pasur_batch.md`` (the page is re-rendered), else a page beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(runs, indent=1) + "\n")
    if out.resolve() != DOC_JSON.resolve():
        out.with_suffix(".md").write_text("# Pasur deals in batches\n\n" + render_section(runs))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_pasur_batch

    page_json = BATCH_PAGE.with_suffix(".json")
    BATCH_PAGE.write_text(bench_pasur_batch.render(json.loads(page_json.read_text())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="where the batches run (cpu, cuda)")
    parser.add_argument("--iterations", type=int, default=200, help="DCFR iterations per round")
    parser.add_argument("--sizes", default="1,4,16,64,256", help="batch sizes, ascending")
    parser.add_argument("--baseline-deals", type=int, default=4,
                        help="deals solved one at a time on the CPU (0: no baseline)")
    parser.add_argument("--build-processes", type=int, default=0,
                        help="processes building the batches' graphs (0: 1 for --device cpu, "
                        "min(8, CPUs/2) otherwise)")
    parser.add_argument("--time-budget", type=float, default=200.0,
                        help="seconds for the whole run; larger sizes past it are skipped")
    parser.add_argument("--out", default=str(DOC_JSON))
    parser.add_argument("--merge", default=None, help="copy this JSON's runs into --out, "
                        "run nothing")
    args = parser.parse_args(argv)
    out = Path(args.out)
    runs: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    if args.merge:
        runs.update(json.loads(Path(args.merge).read_text()))
        _write(out, runs)
        print(f"wrote {out}", file=sys.stderr)
        return 0

    import torch

    from tensorcfr.utils.device import resolve_device

    started = time.perf_counter()
    torch.set_num_threads(1)
    device = resolve_device(args.device, "--device")
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    run: dict[str, Any] = {"machine": _machine(device), "device": str(device),
                           "iterations": args.iterations, "threads": 1,
                           "command": " ".join(["bench_pasur_batched.py", *sys.argv[1:]]),
                           "rows": []}
    runs[device.type] = run
    if args.baseline_deals > 0:
        run["baseline"] = baseline(list(range(args.baseline_deals)), args.iterations)
        print(json.dumps({k: v for k, v in run["baseline"].items() if k != "per_deal"}),
              flush=True)
        _write(out, runs)

    def on_row(row: dict[str, Any]) -> None:
        run["rows"].append(row)
        print(json.dumps(row), flush=True)
        _write(out, runs)

    processes = args.build_processes or (
        1 if device.type == "cpu" else max(1, min(8, (os.cpu_count() or 2) // 2)))
    run["build_processes"] = processes
    batches(sizes, args.iterations, device, started + args.time_budget, run.get("baseline"),
            on_row, processes)
    run["seconds"] = time.perf_counter() - started
    _write(out, runs)
    print(f"wrote {out} and {out.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
