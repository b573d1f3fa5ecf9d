"""Benchmark of ``tensorcfr pasur batch``: exact values of many decks on Ray.

Two parts:

* ``--speedup A-B``: the exact values (no self-play, ``--games 0``) of decks A..B of the deck
  file, three times into fresh folders: in this process without Ray (``--workers 0``), on a
  local Ray instance with 1 worker and with 2 workers. Reports decks per second and the
  speed-up of 2 workers over 1.
* ``--full A-B --full-out DIR``: the same batch over a (large) range into a persistent folder,
  on ``--workers`` workers. The batch is resumable, so an interrupted run continues where it
  stopped when the command is repeated; every session appends its summary (decks computed,
  wall seconds) to ``DIR/bench_sessions.jsonl`` and the report adds the sessions up.

Writes a markdown report (default ``docs/benchmarks/pasur_batch.md``) and its JSON. Usage::

    .venv/bin/python benchmarks/bench_pasur_batch.py --deck-file decks_10000.csv \\
        --speedup 0-199 [--full 0-9999 --full-out runs/batch_exact_10000] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _run(deck_file: str, first: int, last: int, out: Path, workers: int, threads: int
         ) -> dict[str, Any]:
    from tensorcfr.games.pasur.batch import BatchOptions, run_batch

    t0 = time.perf_counter()
    summary = run_batch(deck_file, first, last, out, BatchOptions(games=0, threads=threads),
                        workers=workers)
    summary["wall_seconds"] = time.perf_counter() - t0  # includes starting Ray
    return summary


def _ok_rows(folder: Path) -> int:
    """Decks of a batch folder's journal that finished ``ok``."""
    journal = folder / "decks.jsonl"
    if not journal.is_file():
        return 0
    ok = set()
    for line in journal.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if row.get("status") == "ok":
            ok.add(row["deck"])
    return len(ok)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deck-file", required=True)
    parser.add_argument("--speedup", default=None, help="deck range A-B for 0 / 1 / 2 workers")
    parser.add_argument("--full", default=None, help="deck range A-B of the full run")
    parser.add_argument("--full-out", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "docs/benchmarks/pasur_batch.md"))
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the report from its JSON (and the full run's sessions)")
    args = parser.parse_args(argv)

    import torch

    from tensorcfr.games.pasur.batch import parse_deck_range
    from tensorcfr.utils.machine import machine_info

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    json_path = out.with_suffix(".json")
    results: dict[str, Any] = json.loads(json_path.read_text()) if json_path.is_file() else {}
    if not args.render_only:
        results["machine"] = machine_info()
        results["threads"] = args.threads
        results["deck_file"] = Path(args.deck_file).name
    if args.speedup and not args.render_only:
        first, last = parse_deck_range(args.speedup)
        rows = []
        for workers in (0, 1, 2):
            load = os.getloadavg()[0]
            with tempfile.TemporaryDirectory() as tmp:
                s = _run(args.deck_file, first, last, Path(tmp) / "b", workers, args.threads)
            row = {"workers": workers, "mode": s["mode"], "decks": s["decks"],
                   "failed": s["failed"], "wall_seconds": s["wall_seconds"],
                   "decks_per_second": s["decks"] / s["wall_seconds"], "load_start": load,
                   "load_end": os.getloadavg()[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
        results["speedup"] = {"range": args.speedup, "rows": rows}
    if args.full:
        if not args.full_out:
            parser.error("--full needs --full-out")
        first, last = parse_deck_range(args.full)
        folder = Path(args.full_out)
        sessions = folder / "bench_sessions.jsonl"
        if not args.render_only:
            load = os.getloadavg()[0]
            before = _ok_rows(folder)
            t0 = time.perf_counter()
            try:
                s = _run(args.deck_file, first, last, folder, args.workers, args.threads)
                entry = {"computed": s["computed"], "skipped": s["skipped"],
                         "failed": s["failed"], "wall_seconds": s["wall_seconds"],
                         "interrupted": False}
            except KeyboardInterrupt:  # stopped (SIGINT): record what the session did
                after = _ok_rows(folder)
                entry = {"computed": after - before, "skipped": before, "failed": 0,
                         "wall_seconds": time.perf_counter() - t0, "interrupted": True}
            entry.update(date=machine_info()["date"], workers=args.workers, load_start=load,
                         load_end=os.getloadavg()[0])
            with sessions.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
            print(json.dumps(entry), flush=True)
        entries = [json.loads(line) for line in sessions.read_text().splitlines() if line]
        results["full"] = {"range": args.full, "decks": last - first + 1,
                           "sessions": entries,
                           "computed": sum(e["computed"] for e in entries),
                           "failed_last": entries[-1]["failed"] if entries else None,
                           "wall_seconds": sum(e["wall_seconds"] for e in entries)}
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    out.write_text(render(results))
    print(f"wrote {out}", file=sys.stderr)
    return 0


def render(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = ["# Pasur: many decks on Ray (`tensorcfr pasur batch`)", "",
             "Generated by `benchmarks/bench_pasur_batch.py` (re-run it to refresh this page).",
             "",
             f"- machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']:.1f} GiB RAM; torch "
             f"{m['torch']}, Python {m['python']}; {m['date']}",
             f"- {r['threads']} thread per worker; method `exact` with `--games 0` (exact value, "
             f"merged states and solve time of each deck; no self-play); deck file "
             f"`{r['deck_file']}`",
             "- the 2 cores are shared with other engineers' jobs: the 1-minute load average "
             "at the start and end of each run is given", ""]
    if "speedup" in r:
        rows = r["speedup"]["rows"]
        by = {row["workers"]: row for row in rows}
        lines += [f"## Speed-up of Ray workers (decks {r['speedup']['range']})", "",
                  "Wall time includes starting the local Ray instance and writing the table.",
                  "", "| workers | mode | decks | wall s | decks / s | vs 1 worker | load start / "
                  "end |", "|---:|---|---:|---:|---:|---:|---|"]
        for row in rows:
            ratio = (by[1]["wall_seconds"] / row["wall_seconds"]) if 1 in by else float("nan")
            lines.append(f"| {row['workers']} | {row['mode']} | {row['decks']} | "
                         f"{row['wall_seconds']:.1f} | {row['decks_per_second']:.2f} | "
                         f"{ratio:.2f}x | {row['load_start']:.2f} / {row['load_end']:.2f} |")
        lines.append("")
    if "full" in r:
        f = r["full"]
        rate = f["computed"] / f["wall_seconds"] if f["wall_seconds"] else float("nan")
        lines += [f"## Full run: decks {f['range']} ({f['decks']:,} decks)", "",
                  "| session | workers | decks computed | skipped (done before) | failed | wall s "
                  "| load start / end |", "|---|---:|---:|---:|---:|---:|---|"]
        for e in f["sessions"]:
            lines.append(f"| {e['date']} | {e['workers']} | {e['computed']:,} | "
                         f"{e['skipped']:,} | {e['failed']} | {e['wall_seconds']:.0f} | "
                         f"{e['load_start']:.2f} / {e['load_end']:.2f} |")
        done = f["computed"]
        lines += ["", "(an interrupted session was stopped on purpose; the batch resumes where it "
                  "stopped when the command is repeated)" if any(e.get("interrupted") for e in
                                                                  f["sessions"]) else "",
                  f"{done:,} decks computed in {f['wall_seconds']:.0f} s of wall time in all "
                      f"({rate:.2f} decks/s); at that rate all {f['decks']:,} decks take "
                      f"{f['decks'] / rate / 60:.0f} min (target: under 60 min).", ""]
    if r.get("notes"):
        lines += ["## Notes", ""] + [f"- {note}" for note in r["notes"]] + [""]
    batched = ROOT / "docs/benchmarks/pasur_batched.json"
    if batched.is_file():  # the section of bench_pasur_batched.py (--batch-size)
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import bench_pasur_batched

        lines += [bench_pasur_batched.render_section(json.loads(batched.read_text())), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
