"""Many Pasur decks: exact values, DCFR tables, policy models and self-play matchups, one
Parquet row per deck, computed by Ray workers (or in-process), resumable.

A batch folder ``DIR`` holds:

* ``batch.json``: the batch's identity (deck file and its SHA-256, method, games per matchup,
  DCFR iterations, sample seed...). A rerun with other options is refused.
* ``decks.jsonl``: the journal, one complete JSON row per finished (or failed) deck, appended
  with a single write and flushed as each deck finishes, so a killed run loses only the decks
  that were in flight; a rerun skips the decks it lists as ``ok`` and retries failed ones.
* ``decks.parquet``: the table (one row per deck, the latest journal row of each), rewritten
  atomically from the journal (every few seconds during a run and at its end).
* ``runs/deck_<i>/`` (``--method dcfr``): the deck's DCFR run folder (strategy table and
  manifest, usable with ``pasur selfplay --table`` and ``pasur train``), and
  ``models/deck_<i>/``: its per-deck policy model (the paper's per-deck XGBoost model).

With ``--method dcfr --batch-size K`` the DCFR solves of ``K`` decks at a time are one problem
(:mod:`~tensorcfr.games.pasur.solving.batched`: the disjoint union of their graphs, one solver,
one exact evaluation, on ``--device``); every deck's run folder and row are those of its solve
alone (timings aside: ``dcfr_seconds`` is then the batch's time divided by its decks, and
``dcfr_batch_size`` says K). Batch size, device and memory limit are not part of the batch's
identity: a rerun may change them.

Columns (see ``docs/pasur_selfplay.md``): ``deck`` (row index in the deck file), ``status``
(``ok`` / ``error``), ``error``, ``deal``, ``alex_jacks``, ``alex_clubs`` (of the 24 cards
Alex is dealt), ``exact_value``, ``states``, ``exact_seconds``, per matchup
``<alex>_vs_<bob>_{mean_diff,min_diff,max_diff,alex_win_rate,tie_rate,fair_value}``, ``fair_value`` (near-Nash
self-play: the exact players for ``exact``, the DCFR table for ``dcfr``), ``seconds``, and with
``dcfr`` the DCFR value, exploitability and model RMSE.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from tensorcfr.errors import CorruptFileError, MemoryLimitError, TensorCFRError
from tensorcfr.utils.checks import MAX_SEED, check_int_range
from tensorcfr.utils.journal import (append_journal, check_run_identity, folder_lock,
                                     read_journal, repair_journal)
from tensorcfr.utils.ray_cluster import check_ray_address, run_on_ray

__all__ = [
    "BATCH_FORMAT",
    "METHODS",
    "BatchOptions",
    "check_ray_address",
    "parse_deck_range",
    "read_decks",
    "run_batch",
    "solve_deck",
    "solve_decks",
]

BATCH_FORMAT = "tensorcfr-pasur-batch-1"
METHODS = ("exact", "dcfr")
IDENTITY_FILE = "batch.json"
JOURNAL = "decks.jsonl"
TABLE = "decks.parquet"
SEEDS_SOURCE = "seeds"
MATCHUP_STATS = ("mean_diff", "min_diff", "max_diff", "alex_win_rate", "tie_rate", "fair_value")
MAX_DECKS = 100_000
"""Most decks one run takes (the paper's file has 10,000): a larger range is refused before
any deal is built; split it into several runs on the same folder."""
MAX_DECK_FILE_BYTES = 64 * 2**20
"""Largest deck file read (64 MiB, ~400,000 decks): a larger one (or /dev/zero) is refused
unread."""
MAX_ITERATIONS = 1_000_000
MAX_MODEL_ROUNDS = 100_000
MAX_BATCH_SIZE = 4096
"""Most decks solved as one DCFR problem (``--batch-size``)."""


@dataclass(frozen=True)
class BatchOptions:
    """What to compute for each deck.

    Attributes:
        method: ``exact`` (exact value + exact/random matchups) or ``dcfr`` (also a DCFR table
            and a per-deck policy model, and their matchups).
        games: games per self-play matchup (0: no self-play).
        iterations: DCFR iterations per round (``dcfr``).
        sample_seed: seed of the self-play sampling (deck ``i`` uses ``sample_seed + i``).
        train_games: ``dcfr``: self-play games sampled from the table to train the model
            (0: no model).
        model_rounds: ``dcfr``: most boosting rounds of the per-deck model.
        threads: torch / XGBoost threads per worker.
        batch_size: ``dcfr``: decks whose DCFR solves run as one problem (1: one at a time).
        device: ``dcfr``: torch device of the DCFR solves (``cpu``, ``cuda``...).
        max_memory: ``dcfr``: bytes a DCFR solve (a whole batch) may use (None: what the
            device has free).
    """

    method: str = "exact"
    games: int = 1000
    iterations: int = 200
    sample_seed: int = 0
    train_games: int = 1000
    model_rounds: int = 300
    threads: int = 1
    batch_size: int = 1
    device: str = "cpu"
    max_memory: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The options that decide a deck's results (the batch's identity)."""
        return {"method": self.method, "games": self.games, "iterations": self.iterations,
                "sample_seed": self.sample_seed, "train_games": self.train_games,
                "model_rounds": self.model_rounds}

    def worker_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (what a Ray worker is handed)."""
        return self.as_dict() | {"threads": self.threads, "batch_size": self.batch_size,
                                 "device": self.device, "max_memory": self.max_memory}


# --------------------------------------------------------------------------- deck files


def parse_deck_range(text: str, option: str = "--decks") -> tuple[int, int]:
    """``"A-B"`` (inclusive, 0-based) or ``"A"`` -> (A, B); errors name ``option``."""
    parts = text.strip().split("-")
    try:
        if len(parts) == 1:
            a = b = int(parts[0])
        elif len(parts) == 2:
            a, b = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise TensorCFRError(f"{option} must look like A-B (row indices, from 0), got {text!r}") \
            from None
    if a < 0 or b < a:
        raise TensorCFRError(f"{option} {text}: need 0 <= A <= B")
    if b - a + 1 > MAX_DECKS:
        raise TensorCFRError(f"{option} {text} asks for {b - a + 1:,} decks; one run takes at "
                             f"most {MAX_DECKS:,} (split the range into several runs on the "
                             "same --out folder)")
    return a, b


def read_decks(source: str, first: int, last: int, option: str = "--decks"
               ) -> tuple[list[tuple[int, tuple[int, ...]]], str]:
    """Decks ``first..last`` (row indices) of a deck file, validated, and the file's SHA-256.

    A deck file is CSV text, one deal per line: 52 card indices in deck order (the paper's
    ``decks_10000.csv``). ``source == "seeds"`` means deck ``i`` = the seeded random deal
    ``i`` (as ``pasur solve --seed i``). Raises :class:`TensorCFRError` (one line) for an
    unreadable file, a range past its end (naming ``option``, the range's option), or an
    invalid deal in the range.
    """
    from tensorcfr.games.pasur.engine.rules import random_deal, validate_deal

    from tensorcfr.utils.reading import damaged, read_input_bytes

    if last - first + 1 > MAX_DECKS:
        raise TensorCFRError(f"decks {first}-{last}: one run takes at most {MAX_DECKS:,} decks")
    if source == SEEDS_SOURCE:
        return [(i, random_deal(i)) for i in range(first, last + 1)], "seeds"
    raw = read_input_bytes(source, "deck file", MAX_DECK_FILE_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise damaged(source, "deck file", f"not UTF-8 text: {exc.reason}") from None
    lines = [line for line in text.splitlines()]
    while lines and not lines[-1].strip():
        lines.pop()
    if last >= len(lines):
        raise TensorCFRError(f"{option} {first}-{last} goes past the end of {source}, which has "
                             f"{len(lines)} decks (rows 0..{len(lines) - 1})")
    decks = []
    for i in range(first, last + 1):
        try:
            row = next(csv.reader([lines[i]]), [])
            cards = [int(x) for x in row if x.strip()]
            deal = validate_deal(cards)
        except (ValueError, csv.Error, TensorCFRError) as exc:
            raise TensorCFRError(f"deck file {source}, row {i} (line {i + 1}) is not a deal: "
                                 f"{exc}") from None
        decks.append((i, deal))
    return decks, hashlib.sha256(raw).hexdigest()


def alex_counts(deal: Sequence[int]) -> tuple[int, int]:
    """(Jacks, clubs) among the 24 cards Alex is dealt over the six rounds."""
    from tensorcfr.games.pasur.engine.cards import is_club, is_jack

    cards = [c for h in range(6) for c in deal[4 + 8 * h:8 + 8 * h]]
    return sum(1 for c in cards if is_jack(c)), sum(1 for c in cards if is_club(c))


# --------------------------------------------------------------------------- one deck


def _matchup(row: dict[str, Any], deal: tuple[int, ...], alex: Any, bob: Any, games: int,
             seed: int) -> None:
    from tensorcfr.games.pasur.playing.selfplay import play_games

    result = play_games(deal, alex, bob, games, sample_seed=seed)
    summary = result.summary()
    prefix = f"{alex.name}_vs_{bob.name}"
    for key in MATCHUP_STATS:
        value = summary[key]
        row[f"{prefix}_{key}"] = int(value) if key.endswith(("min_diff", "max_diff")) \
            else float(value)


def _run_folder(out_dir: str, deck: int) -> Path:
    return Path(out_dir) / "runs" / f"deck_{deck:05d}"


def _dcfr_settings(deal: Sequence[int], options: BatchOptions, out: Path) -> Any:
    """The :class:`~.solving.dcfr_run.DcfrSettings` of a deck's DCFR solve (dag mode, its run
    folder ``out`` without per-round checkpoints), which ``pasur selfplay --table``,
    ``pasur train`` and ``pasur exploitability`` read."""
    from tensorcfr.games.pasur.solving.dcfr_run import DcfrSettings

    return DcfrSettings(deal=deal, mode="dag", iterations=options.iterations, out=out,
                        checkpoint=False, threads=options.threads, device=options.device,
                        max_memory=options.max_memory, command=("tensorcfr pasur batch",),
                        reuse_freed_memory=False)


def solve_deck(deck: int, deal: Sequence[int], options: BatchOptions, out_dir: str | None,
               dcfr: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the batch computes for one deck, as one flat JSON-ready row.

    ``dcfr``: with ``--method dcfr``, the deck's DCFR result when it was already solved (in
    a batch, :func:`solve_decks`; its run folder written), else the deck is solved here.
    Never raises for a problem of the deck itself: the row then has ``status = "error"``
    and the one-line ``error``.
    """
    started = time.perf_counter()
    row: dict[str, Any] = {"deck": int(deck), "status": "ok", "error": None,
                           "deal": [int(c) for c in deal]}
    try:
        import torch

        torch.set_num_threads(options.threads)
        from tensorcfr.games.pasur.solving.exact import solve_exact
        from tensorcfr.games.pasur.agents import make_player
        from tensorcfr.games.pasur.playing.players import ExactPlayer, RandomPlayer
        from tensorcfr.games.pasur.engine.rules import validate_deal

        deal = validate_deal(deal)
        row["alex_jacks"], row["alex_clubs"] = alex_counts(deal)
        solution = solve_exact(deal)
        row["exact_value"] = int(solution.value)
        row["states"] = int(solution.num_states)
        row["exact_seconds"] = float(solution.seconds)
        v = solution.value
        row["exact_fair_value"] = 1.0 if v > 0 else (0.5 if v == 0 else 0.0)
        row["fair_value"] = row["exact_fair_value"]
        games, seed = options.games, options.sample_seed + int(deck)
        exact = ExactPlayer(deal, solution=solution)
        rnd = RandomPlayer(deal)
        if games > 0:
            # play after the deal is deterministic: every exact-vs-exact game must end at the
            # exact value (min_diff = max_diff = exact_value), a check over every deck
            _matchup(row, deal, exact, exact, games, seed + 8)
            _matchup(row, deal, exact, rnd, games, seed)
            _matchup(row, deal, rnd, exact, games, seed + 1)
            _matchup(row, deal, rnd, rnd, games, seed + 2)
        if options.method == "dcfr":
            if out_dir is None:
                raise TensorCFRError("the dcfr method needs an output folder")
            run = _run_folder(out_dir, deck)
            if dcfr is None:
                from tensorcfr.games.pasur.solving.dcfr_run import run_dcfr

                dcfr = run_dcfr(_dcfr_settings(deal, options, run))
            else:
                row["dcfr_batch_size"] = int(dcfr["batch_size"])
            row["dcfr_value"] = float(dcfr["value"])
            row["dcfr_exploitability"] = float(dcfr["exploitability"])
            row["dcfr_seconds"] = float(dcfr["seconds"])
            table = make_player("table", deal, table=run)
            players = {"table": table}
            if options.train_games > 0:
                from tensorcfr.games.pasur.learning.policy_model import train_policy_model

                model_dir = Path(out_dir) / "models" / f"deck_{deck:05d}"
                t0 = time.perf_counter()
                manifest = train_policy_model([run], model_dir, games=options.train_games,
                                              seed=seed, rounds=options.model_rounds,
                                              threads=options.threads)
                row["model_seconds"] = time.perf_counter() - t0
                row["model_rmse_test"] = float(manifest["rmse"]["test"])
                row["model_rows"] = int(manifest["rows"]["total"])
                players["model"] = make_player("model", deal, model=model_dir,
                                               threads=options.threads)
            if games > 0:
                for name, player in players.items():
                    _matchup(row, deal, player, player, games, seed + 3)
                    _matchup(row, deal, player, rnd, games, seed + 4)
                    _matchup(row, deal, rnd, player, games, seed + 5)
                    _matchup(row, deal, player, exact, games, seed + 6)
                    _matchup(row, deal, exact, player, games, seed + 7)
                row["fair_value"] = row["table_vs_table_fair_value"]
    except TensorCFRError as exc:
        row.update(status="error", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - one failing deck must not stop the batch
        row.update(status="error", error=f"{type(exc).__name__}: {exc}".splitlines()[0])
    row["seconds"] = time.perf_counter() - started
    return row


def solve_decks(decks: Sequence[tuple[int, Sequence[int]]], options: BatchOptions,
                out_dir: str | None) -> list[dict[str, Any]]:
    """The rows of ``decks`` (``(deck, deal)`` pairs), in order: with ``--method dcfr`` and
    ``batch_size`` above 1 their DCFR solves are one problem
    (:func:`~.solving.batched.run_dcfr_batch`), the rest of each row as :func:`solve_deck`;
    otherwise :func:`solve_deck` deck by deck.

    A deck whose deal is invalid, or a batched solve that fails, gives error rows;
    :class:`MemoryLimitError` (the batch does not fit: a smaller ``--batch-size`` would) is
    raised, no row written.
    """
    if options.method != "dcfr" or options.batch_size <= 1 or out_dir is None:
        return [solve_deck(deck, deal, options, out_dir) for deck, deal in decks]
    from tensorcfr.games.pasur.engine.rules import validate_deal
    from tensorcfr.games.pasur.solving.batched import run_dcfr_batch

    rows: dict[int, dict[str, Any]] = {}
    valid: list[tuple[int, tuple[int, ...]]] = []
    for deck, deal in decks:
        try:
            valid.append((deck, validate_deal(deal)))
        except TensorCFRError:
            rows[deck] = solve_deck(deck, deal, options, out_dir)  # its error row
    if not valid:
        return [rows[deck] for deck, _ in decks]
    started = time.perf_counter()
    results: list[dict[str, Any]] | None = None
    failure = None
    try:
        import torch

        torch.set_num_threads(options.threads)
        results = run_dcfr_batch([_dcfr_settings(deal, options, _run_folder(out_dir, deck))
                                  for deck, deal in valid])
    except MemoryLimitError:
        raise
    except TensorCFRError as exc:
        failure = str(exc)
    except Exception as exc:  # noqa: BLE001 - one failing batch must not stop the run
        failure = f"{type(exc).__name__}: {exc}".splitlines()[0]
    share = (time.perf_counter() - started) / max(1, len(valid))
    for k, (deck, deal) in enumerate(valid):
        if results is None:
            rows[deck] = {"deck": int(deck), "status": "error", "deal": list(deal),
                          "error": f"the batched DCFR solve failed: {failure}", "seconds": share}
            continue
        rows[deck] = row = solve_deck(deck, deal, options, out_dir,
                                      dcfr={**results[k], "seconds": share})
        row["seconds"] += share
    return [rows[deck] for deck, _ in decks]


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for lo in range(0, len(items), max(1, size)):
        yield items[lo:lo + size]


# --------------------------------------------------------------------------- journal


_TEXT_KEYS = {"status", "error"}
_INT64 = 2**63


def _row_is_whole(row: dict[str, Any]) -> bool:
    """Whether a journal row is one :func:`solve_deck` writes: an integer ``deck``, a status,
    a deal of card indices, and every other value a finite number in 64 bits or null (a row
    with ``"exact_value": "lots"`` or ``Infinity`` is not: it is skipped, the deck redone)."""
    if not isinstance(row.get("deck"), int) or row.get("status") not in ("ok", "error"):
        return False
    if not isinstance(row.get("error"), (str, type(None))):
        return False
    deal = row.get("deal")
    if deal is not None and not (isinstance(deal, list) and all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 52 for c in deal)):
        return False
    for key, value in row.items():
        if key in _TEXT_KEYS or key == "deal" or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if isinstance(value, int) and not -_INT64 <= value < _INT64:
            return False
    return True


def _read_journal(path: Path) -> dict[int, dict[str, Any]]:
    """Latest row per deck of a journal (a torn last line, unreadable lines and rows of
    wrong types skipped)."""
    return read_journal(path, "deck", check=_row_is_whole).rows


def write_table(out: Path) -> int:
    """Rewrite ``decks.parquet`` atomically from the journal; returns its row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.utils.io import atomic_path

    rows = [r for _, r in sorted(_read_journal(out / JOURNAL).items())]
    columns: list[str] = []
    for r in rows:
        for k in r:
            if k not in columns:
                columns.append(k)
    types = {"error": pa.string(), "status": pa.string()}
    data = {k: pa.array([r.get(k) for r in rows], type=types.get(k)) for k in columns}
    table = pa.table(data) if rows else pa.table({"deck": pa.array([], pa.int64()),
                                                  "exact_value": pa.array([], pa.int64())})
    with atomic_path(out / TABLE) as tmp:
        pq.write_table(table, str(tmp))
    return len(rows)


def _check_identity(out: Path, identity: dict[str, Any]) -> None:
    """Refuse (one line) a rerun on ``out`` with other options than the batch it holds."""
    check_run_identity(out / IDENTITY_FILE, identity, what="batch", ignore=("decks",),
                       names={"deck_file": "DECKFILE", "deck_file_sha256": "DECKFILE's content",
                              "format": "the batch format"})


# --------------------------------------------------------------------------- Ray


def _ray_solve(decks: list[tuple[int, list[int]]], options: dict[str, Any],
               out_dir: str | None) -> list[dict[str, Any]]:
    """:func:`solve_decks` on a Ray worker; a batch that does not fit gives error rows."""
    try:
        return solve_decks(decks, BatchOptions(**options), out_dir)
    except MemoryLimitError as exc:
        return [{"deck": int(deck), "status": "error", "error": str(exc),
                 "deal": [int(c) for c in deal]} for deck, deal in decks]


def _check_options(options: BatchOptions, first: int, workers: int,
                   address: str | None) -> None:
    """Refuse (one line, naming the bound) options a run cannot do."""
    if options.method not in METHODS:
        raise TensorCFRError(f"--method must be one of {', '.join(METHODS)}, got "
                             f"{options.method!r}")
    from tensorcfr.games.pasur.playing.selfplay import MAX_GAMES

    check_int_range(options.games, "--games", 0, MAX_GAMES)
    check_int_range(options.train_games, "--train-games", 0, MAX_GAMES)
    check_int_range(options.iterations, "--iterations", 1, MAX_ITERATIONS)
    check_int_range(options.model_rounds, "--model-rounds", 1, MAX_MODEL_ROUNDS)
    check_int_range(options.batch_size, "--batch-size", 1, MAX_BATCH_SIZE)
    from tensorcfr.utils.device import resolve_device

    on_cpu = resolve_device(options.device, "--device").type == "cpu"
    if options.method != "dcfr":
        if options.batch_size > 1:
            raise TensorCFRError("--batch-size batches the DCFR solves: it needs --method dcfr")
        if not on_cpu:
            raise TensorCFRError("--device is where the DCFR solves run: it needs --method "
                                 "dcfr (the exact method runs on the CPU)")
    if not on_cpu and (workers > 0 or address is not None):
        raise TensorCFRError(f"--device {options.device}: one process drives the device; use "
                             "--workers 0 (and a larger --batch-size to fill it)")
    check_int_range(options.sample_seed, "--sample-seed", 0, MAX_SEED - MAX_DECKS - first - 16)
    if address is None:
        cpus = os.cpu_count() or 1
        check_int_range(workers, "--workers", 0, cpus,
                        why=f"a local Ray instance gets at most the {cpus} CPU(s) of this "
                            "machine; give --address for a cluster")
    else:
        check_int_range(workers, "--workers", 0, 100_000)


def run_batch(source: str, first: int, last: int, out: str | os.PathLike[str],
              options: BatchOptions, *, workers: int = 1, address: str | None = None,
              progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
              flush_seconds: float = 5.0,
              on_note: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume) a batch; see the module docstring.

    Args:
        source: deck file (CSV, one deal per line) or ``"seeds"``.
        first, last: the row range, inclusive.
        out: the batch folder.
        options: :class:`BatchOptions`.
        workers: Ray workers on a local instance (``ray.init(num_cpus=workers)``); 0 runs the
            decks one by one in this process (no Ray).
        address: an existing Ray cluster instead of a local instance.
        progress: ``progress(done, total, row)`` after each deck (``row`` None at the start).
        on_note: called with a one-line note when the journal had to be repaired.

    Returns:
        Summary: decks asked, done before (skipped), computed now, failed, seconds, table rows,
        and ``notes`` (journal repairs).

    Raises:
        TensorCFRError: bad options or files, a folder in use by another run, a failed write
            (one line each); InterruptedRun on SIGINT/SIGTERM (the finished decks are in the
            journal and the table).
    """
    from tensorcfr.utils.io import check_output_dir

    _check_options(options, first, workers, address)
    if source == SEEDS_SOURCE:  # deals are drawn lazily, only for the decks still to do
        decks: list[tuple[int, tuple[int, ...] | None]] = [(i, None)
                                                            for i in range(first, last + 1)]
        digest = SEEDS_SOURCE
    else:
        decks, digest = read_decks(source, first, last)  # type: ignore[assignment]
    out_dir = check_output_dir(out, "--out")
    if address is not None:
        check_ray_address(address)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from tensorcfr.utils.io import write_error

        raise write_error(out_dir, exc) from None
    with folder_lock(out_dir, "batch"):
        return _run_locked(source, decks, digest, out_dir, options, workers, address,
                           progress, flush_seconds, on_note or (lambda note: None))


def _deal(deck: int, deal: tuple[int, ...] | None) -> tuple[int, ...]:
    """The deal of a deck (drawn now for a ``seeds`` deck given as None)."""
    if deal is not None:
        return deal
    from tensorcfr.games.pasur.engine.rules import random_deal

    return random_deal(deck)


def _run_locked(source: str, decks: list[tuple[int, tuple[int, ...] | None]], digest: str,
                out_dir: Path, options: BatchOptions, workers: int, address: str | None,
                progress: Callable[[int, int, dict[str, Any] | None], None] | None,
                flush_seconds: float, on_note: Callable[[str], None]) -> dict[str, Any]:
    """:func:`run_batch` once the folder is checked and locked."""
    from tensorcfr.utils.interrupts import deferred_stop, interrupted

    identity = {"format": BATCH_FORMAT,
                "deck_file": source if source == SEEDS_SOURCE else str(Path(source).resolve()),
                "deck_file_sha256": digest, **options.as_dict()}
    _check_identity(out_dir, identity)
    journal = out_dir / JOURNAL
    contents = read_journal(journal, "deck", check=_row_is_whole)
    notes = contents.notes(journal)
    for note in notes:
        on_note(note)
    repair_journal(journal)  # a new row must start on a line of its own
    done = contents.rows
    todo = [(i, d) for i, d in decks if done.get(i, {}).get("status") != "ok"]
    skipped = len(decks) - len(todo)
    total = len(decks)
    started = time.perf_counter()
    count = skipped
    failed = 0
    last_flush = time.perf_counter()
    if progress is not None:
        progress(count, total, None)

    def finish(row: dict[str, Any]) -> None:
        nonlocal count, failed, last_flush
        append_journal(journal, row)
        count += 1
        failed += row.get("status") != "ok"
        if progress is not None:
            progress(count, total, row)
        if time.perf_counter() - last_flush > flush_seconds:
            write_table(out_dir)
            last_flush = time.perf_counter()

    def stopped(stop: Any) -> Exception:
        write_table(out_dir)
        return interrupted(stop, f"{count:,} of {total:,} decks are in {journal} and "
                           f"{out_dir / TABLE}; rerun the same command to continue")

    out_text = str(out_dir)
    ray_info: dict[str, Any] = {"mode": "in-process"}
    if workers == 0 and address is None:
        with deferred_stop() as stop:
            for chunk in _chunks(todo, options.batch_size):
                try:
                    rows = solve_decks([(i, _deal(i, d)) for i, d in chunk], options, out_text)
                except MemoryLimitError:
                    write_table(out_dir)  # the decks finished so far stay in the table
                    raise
                for row in rows:
                    finish(row)
                if stop.requested:
                    raise stopped(stop)
    elif todo:
        ray_info = _run_on_ray(todo, options, workers, address, out_text, finish, stopped)
    rows = write_table(out_dir)
    final = _read_journal(journal)
    missing = [i for i, _ in decks if i not in final]
    if missing:  # never report success with a deck missing
        shown = ", ".join(str(i) for i in missing[:10]) + ("..." if len(missing) > 10 else "")
        raise CorruptFileError(f"{len(missing)} deck(s) have no row in {journal} after the run "
                               f"({shown}); rerun the same command to compute them")
    return {"out": str(out_dir), "decks": total, "skipped": skipped,
            "computed": len(todo), "failed": failed, "table_rows": rows,
            "seconds": time.perf_counter() - started, "workers": workers, **ray_info,
            "notes": notes, **options.as_dict(), "batch_size": options.batch_size,
            "device": options.device}


def _run_on_ray(todo: list[tuple[int, tuple[int, ...] | None]], options: BatchOptions,
                workers: int,
                address: str | None, out_text: str, finish: Callable[[dict[str, Any]], None],
                stopped: Callable[[Any], Exception]) -> dict[str, Any]:
    """The decks of ``todo`` on Ray workers (a local instance or ``address``); each finished
    row goes to ``finish`` (a worker that died gives an error row)."""
    opts = options.worker_dict()
    deals: dict[int, tuple[int, ...]] = {}

    def jobs() -> Iterator[tuple[tuple[int, ...], tuple[Any, ...]]]:
        for chunk in _chunks(todo, options.batch_size):  # `seeds` deals drawn as queued
            batch = []
            for i, maybe_deal in chunk:
                deal = deals[i] = _deal(i, maybe_deal)
                batch.append((i, list(deal)))
            yield tuple(i for i, _ in batch), (batch, opts, out_text)

    def collect(key: Any, rows: list[dict[str, Any]] | None, error: str | None) -> None:
        if rows is None:
            rows = [{"deck": deck, "status": "error", "error": error,
                     "deal": [int(c) for c in deals[deck]]} for deck in key]
        for row in rows:
            finish(row)

    return run_on_ray(_ray_solve, jobs(), collect, workers=workers, address=address,
                      on_stop=stopped)
