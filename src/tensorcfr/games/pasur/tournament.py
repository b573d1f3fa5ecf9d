"""Duplicate tournaments between hidden-hand Pasur agents: every pair of agents plays every
deal twice, seats swapped, so the luck of the deal cancels; resumable, on Ray or in-process.

For agents ``A, B, ...`` and deals ``0..N-1`` (seeded random deals ``rules.random_deal(seed +
i)``, or rows of a deck file), each pair ``(a, b)`` (in the order given) plays each deal in
seating 0 (``a`` is Alex, ``b`` is Bob) and seating 1 (``b`` is Alex), both games with the
same agent seed (``seed + deal``). Each deal is also solved once with open hands
(:func:`~.solving.double_dummy.dd_value`, the exact solver's value found faster; Alex minus
Bob, in points).

Per pair (:class:`PairSummary`), the unit is the **duplicate deal**: ``d_i`` = the mean over
the two seatings of ``a``'s points minus ``b``'s on deal ``i``. Reported: ``mean_diff`` (the
mean of ``d_i``, points per deal), its 95% Student-t confidence interval over deals, the win /
tie / loss rates of ``a`` over deals (the sign of ``d_i``), and each agent's **price of hidden
information**: the mean, over its games, of the open-hands exact value of the deal from its
seat minus its result from its seat (Alex: ``value - utility``; Bob: ``utility - value``),
overall and by seat.

A tournament folder ``DIR`` holds:

* ``tournament.json``: the identity (agents, deals, seed or deck file and range, agent
  options). A rerun with other settings is refused, naming the option that differs.
* ``games.jsonl``: the append-only journal, one JSON row per finished job (a game, or a deal's
  exact value), failures included with their one-line error; a rerun skips the jobs it lists
  as ``ok`` and retries the rest. A torn last line (a killed write) is cut off and said so.
* ``games.parquet``: one row per game (pair, deal, seating, seats, utility, points, exact
  value, price per seat, per-move seconds median per seat, agent options, status, error, and
  the game's plays as :func:`play_codes`; null in a folder written before plays were kept).
* ``summary.parquet``: one row per pair (the statistics above).
* ``cross_table.png``: the mean difference of each row agent against each column agent,
  with its interval.

All files are written atomically (the tables every few seconds during a run and at its end).

This module runs games through the :class:`~.playing.agent.HiddenAgent` protocol and the
agent registry (:mod:`.agents`); it does not know how any agent chooses its plays.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AgentOptions, check_agent_names, make_agent
from tensorcfr.games.pasur.batch import MAX_DECKS, read_decks
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.play_codes import MAX_PLAY_CODE, play_codes, plays_from_codes
from tensorcfr.games.pasur.playing.match import play_game
from tensorcfr.games.pasur.playing.agent import HiddenAgent
from tensorcfr.utils.checks import MAX_SEED, check_int_range
from tensorcfr.utils.interrupts import deferred_stop
from tensorcfr.utils.process_pool import run_on_processes
from tensorcfr.utils.journal import (append_journal, check_run_identity, folder_lock,
                                     read_journal, repair_journal)
from tensorcfr.utils.reading import has_keys
from tensorcfr.utils.ray_cluster import check_ray_address, run_on_ray

__all__ = [
    "PairSummary",
    "TOURNAMENT_FORMAT",
    "TournamentProgress",
    "TournamentResult",
    "TournamentSettings",
    "duplicate_interval",
    "play_codes",
    "plays_from_codes",
    "read_tournament",
    "run_tournament",
    "summarize_pairs",
    "summary_schema",
]

TOURNAMENT_FORMAT = "tensorcfr-pasur-tournament-1"
IDENTITY_FILE = "tournament.json"
JOURNAL = "games.jsonl"
GAMES_TABLE = "games.parquet"
SUMMARY_TABLE = "summary.parquet"
CROSS_TABLE = "cross_table.png"
CONFIDENCE = 0.95
MAX_CLUSTER_WORKERS = 100_000
"""Most Ray workers on a cluster (``--address``); a local instance gets at most the CPUs."""

# which command-line option sets each identity key (named when a resume differs)
_IDENTITY_OPTIONS = {
    "format": "the folder's format", "agents": "--agents", "deals": "--deals",
    "seed": "--seed", "deck_file": "--decks", "deck_file_sha256": "--decks (file content)",
    "range": "--range", "determinizations": "--determinizations",
    "seconds_per_move": "--seconds-per-move", "simulations": "--simulations",
    "model": "--model",
}


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class TournamentSettings:
    """Everything a tournament needs (validated on construction; bad values raise
    :class:`TensorCFRError` with a one-line message naming the option).

    Attributes:
        agents: agent names of the registry (:data:`~.agents.AGENTS`; checked and stripped
            here, blank ones skipped), at least two, all different.
        out: the tournament folder.
        deals: N, the seeded random deals ``random_deal(seed + i)``, ``i < N`` (not with
            ``decks``).
        seed: the first deal's seed; also the agents' seed base (deal ``i``: ``seed + i``).
        decks: a deck file (CSV, one deal per line, as ``pasur batch``) instead of seeds.
        deck_range: rows ``(first, last)`` of ``decks``, inclusive (needed with ``decks``).
        workers: Ray workers of a local instance (at least 1).
        processes: P > 0 plays on P local worker processes without Ray (a machine where Ray
            is missing or cannot start); 0 (default) uses Ray, or this process with
            ``in_process``.
        in_process: play every job in this process, one by one, without Ray (tests, small
            runs, debugging); ``workers`` is then unused.
        address: an existing Ray cluster (host:port) instead of a local instance.
        agent_options: the agents' settings (determinizations, time per move, ...).
        threads: torch threads per worker.
        flush_seconds: how often the tables are rewritten during a run.
    """

    agents: tuple[str, ...]
    out: Path
    deals: int | None = None
    seed: int = 0
    decks: Path | None = None
    deck_range: tuple[int, int] | None = None
    workers: int = 1
    processes: int = 0
    in_process: bool = False
    address: str | None = None
    agent_options: AgentOptions = field(default_factory=AgentOptions)
    threads: int = 1
    flush_seconds: float = 5.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", check_agent_names(self.agents, "--agents"))
        object.__setattr__(self, "out", Path(self.out))
        if self.decks is not None:
            object.__setattr__(self, "decks", Path(self.decks))
        if self.agent_options.model is not None:  # workers elsewhere read the same folder
            object.__setattr__(self, "agent_options", replace(
                self.agent_options, model=Path(self.agent_options.model).resolve()))
        if len(self.agents) < 2:
            raise TensorCFRError(f"--agents needs at least 2 agents (comma-separated), got "
                                 f"{len(self.agents)}")
        repeated = sorted({a for a in self.agents if self.agents.count(a) > 1})
        if repeated:
            raise TensorCFRError(f"--agents names {', '.join(repeated)} more than once")
        if self.decks is None:
            if self.deck_range is not None:
                raise TensorCFRError("--range picks rows of a deck file: give --decks FILE too")
            if self.deals is None:
                raise TensorCFRError("give --deals N (seeded deals) or --decks FILE --range A-B")
            if self.deals < 1:
                raise TensorCFRError(f"--deals must be at least 1, got {self.deals}")
            check_int_range(self.deals, "--deals", 1, MAX_DECKS,
                            why="split a longer tournament into several folders")
        else:
            if self.deals is not None:
                raise TensorCFRError("--deals counts seeded deals; with --decks give --range A-B")
            if self.deck_range is None:
                raise TensorCFRError("--decks needs --range A-B (rows of the file, from 0)")
            first, last = self.deck_range
            if first < 0 or last < first:
                raise TensorCFRError(f"--range {first}-{last}: need 0 <= A <= B")
        # deal i is seeded SEED + i, and every seed must stay a 64-bit integer
        check_int_range(self.seed, "--seed", 0, MAX_SEED - self.last_deal_index,
                        why="deal i is seeded SEED+i, a 64-bit integer")
        if self.workers < 1:
            raise TensorCFRError(f"--workers must be at least 1, got {self.workers} (use "
                                 "--in-process to play without Ray)")
        if self.processes:
            cpus = os.cpu_count() or 1
            check_int_range(self.processes, "--processes", 0, cpus,
                            why=f"this machine has {cpus} CPU(s)")
            if self.in_process or self.address is not None:
                raise TensorCFRError("--processes plays on local processes without Ray: leave "
                                     "out --in-process and --address")
        elif self.in_process:
            pass  # no Ray workers
        elif self.address is None:
            cpus = os.cpu_count() or 1
            check_int_range(self.workers, "--workers", 1, cpus,
                            why=f"a local Ray instance gets at most the {cpus} CPU(s) of "
                                "this machine; give --address for a cluster")
        else:
            check_int_range(self.workers, "--workers", 1, MAX_CLUSTER_WORKERS)
        from tensorcfr.utils.device import resolve_device

        resolve_device(self.agent_options.device, "--device")
        if self.in_process and self.address is not None:
            raise TensorCFRError("--in-process plays without Ray: leave out --address")
        if self.threads < 1:
            raise TensorCFRError(f"--threads must be at least 1, got {self.threads}")
        if not self.flush_seconds > 0:
            raise TensorCFRError(f"flush_seconds must be positive, got {self.flush_seconds}")

    @property
    def last_deal_index(self) -> int:
        """The largest deal index ``i`` of the tournament (its seed is ``seed + i``)."""
        if self.decks is None:
            return max(0, (self.deals or 1) - 1)
        return self.deck_range[1] if self.deck_range is not None else 0

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Every pair of agents, in the order given (``a`` before ``b``)."""
        return list(itertools.combinations(self.agents, 2))



# --------------------------------------------------------------------------- statistics


def duplicate_interval(deal_diffs: Sequence[float], confidence: float = CONFIDENCE
                       ) -> tuple[float | None, tuple[float, float] | None, float | None]:
    """Mean, Student-t confidence interval and sample standard deviation of per-deal
    differences (points per deal; the duplicate deal is the unit).

    Returns ``(mean, (low, high), sd)``; the interval and sd are None for fewer than two
    deals, everything is None for none.

    >>> mean, (low, high), sd = duplicate_interval([1, 2, 3, 4, 5])
    >>> mean, round(low, 4), round(high, 4), round(sd, 4)
    (3.0, 1.0368, 4.9632, 1.5811)
    """
    from scipy.stats import t as student_t

    n = len(deal_diffs)
    if n == 0:
        return None, None, None
    mean = float(statistics.fmean(deal_diffs))
    if n < 2:
        return mean, None, None
    sd = float(statistics.stdev(deal_diffs))
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean, (mean - half, mean + half), sd


@dataclass(frozen=True)
class PairSummary:
    """One pair's results (``a`` against ``b``; points per deal, ``a`` minus ``b``).

    Attributes:
        a, b: the agents.
        deals: duplicate deals with both games played (the statistics' sample size).
        games: games played without error; failed_games: games that failed.
        mean_diff: mean over deals of ``a``'s points minus ``b``'s (both seatings averaged).
        ci95: 95% confidence interval of ``mean_diff`` (None below two deals).
        sd_diff: sample standard deviation of the per-deal differences.
        a_win_rate, tie_rate, b_win_rate: share of deals where the duplicate difference is
            positive / zero / negative.
        price: per agent, its price of hidden information (points: the exact open-hands
            value from its seat minus its result), ``{"mean", "as_alex", "as_bob"}``.
        move_seconds_median: per agent, the median over its games of its per-game median
            seconds per move.
    """

    a: str
    b: str
    deals: int
    games: int
    failed_games: int
    mean_diff: float | None
    ci95: tuple[float, float] | None
    sd_diff: float | None
    a_win_rate: float | None
    tie_rate: float | None
    b_win_rate: float | None
    price: dict[str, dict[str, float | None]]
    move_seconds_median: dict[str, float | None]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``a, b, deals, mean_diff, ci95 [low, high], a_win_rate, tie_rate,
        b_win_rate, price_of_hidden_information, ...``."""
        return {"a": self.a, "b": self.b, "deals": self.deals, "mean_diff": self.mean_diff,
                "ci95": list(self.ci95) if self.ci95 is not None else [None, None],
                "a_win_rate": self.a_win_rate, "tie_rate": self.tie_rate,
                "b_win_rate": self.b_win_rate, "sd_diff": self.sd_diff, "games": self.games,
                "failed_games": self.failed_games,
                "price_of_hidden_information": self.price,
                "move_seconds_median": self.move_seconds_median}

    def table_row(self) -> dict[str, Any]:
        """One flat row of ``summary.parquet``."""
        row = {"a": self.a, "b": self.b, "deals": self.deals, "games": self.games,
               "failed_games": self.failed_games, "mean_diff": self.mean_diff,
               "ci95_low": self.ci95[0] if self.ci95 else None,
               "ci95_high": self.ci95[1] if self.ci95 else None, "sd_diff": self.sd_diff,
               "a_win_rate": self.a_win_rate, "tie_rate": self.tie_rate,
               "b_win_rate": self.b_win_rate}
        for side, name in (("a", self.a), ("b", self.b)):
            row[f"{side}_price"] = self.price[name]["mean"]
            row[f"{side}_price_as_alex"] = self.price[name]["as_alex"]
            row[f"{side}_price_as_bob"] = self.price[name]["as_bob"]
            row[f"{side}_move_seconds_median"] = self.move_seconds_median[name]
        return row


def _mean(values: Sequence[float]) -> float | None:
    return float(statistics.fmean(values)) if values else None


def summarize_pairs(pairs: Sequence[tuple[str, str]], games: Sequence[dict[str, Any]]
                    ) -> list[PairSummary]:
    """Per-pair statistics from game rows (``games.parquet`` rows: ``a, b, deal, seating,
    status, a_diff, alex_price, bob_price, alex/bob_move_seconds_median``)."""
    summaries = []
    for a, b in pairs:
        mine = [g for g in games if g["a"] == a and g["b"] == b]
        ok = [g for g in mine if g["status"] == "ok"]
        by_deal: dict[int, dict[int, dict[str, Any]]] = {}
        for g in ok:
            by_deal.setdefault(g["deal"], {})[g["seating"]] = g
        deal_diffs = [(seats[0]["a_diff"] + seats[1]["a_diff"]) / 2
                      for _, seats in sorted(by_deal.items()) if len(seats) == 2]
        mean, interval, sd = duplicate_interval(deal_diffs)
        n = len(deal_diffs)
        price: dict[str, dict[str, float | None]] = {}
        seconds: dict[str, float | None] = {}
        for name, alex_seating in ((a, 0), (b, 1)):
            as_alex = [g["alex_price"] for g in ok
                       if g["seating"] == alex_seating and g.get("alex_price") is not None]
            as_bob = [g["bob_price"] for g in ok
                      if g["seating"] != alex_seating and g.get("bob_price") is not None]
            price[name] = {"mean": _mean(as_alex + as_bob), "as_alex": _mean(as_alex),
                           "as_bob": _mean(as_bob)}
            medians = [g["alex_move_seconds_median" if g["seating"] == alex_seating
                         else "bob_move_seconds_median"] for g in ok]
            medians = [m for m in medians if m is not None]
            seconds[name] = float(statistics.median(medians)) if medians else None
        summaries.append(PairSummary(
            a=a, b=b, deals=n, games=len(ok), failed_games=len(mine) - len(ok),
            mean_diff=mean, ci95=interval, sd_diff=sd,
            a_win_rate=sum(d > 0 for d in deal_diffs) / n if n else None,
            tie_rate=sum(d == 0 for d in deal_diffs) / n if n else None,
            b_win_rate=sum(d < 0 for d in deal_diffs) / n if n else None,
            price=price, move_seconds_median=seconds))
    return summaries


# --------------------------------------------------------------------------- one job


@lru_cache(maxsize=16)
def _cached_agent(name: str, options: AgentOptions) -> HiddenAgent:
    """One agent object per (name, options) in a worker process (agents are reset before each
    game; loading a model once per worker, not once per game)."""
    return make_agent(name, options)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, TensorCFRError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def _exact_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Solve one deal with open hands: its exact value (Alex minus Bob, points)."""
    row: dict[str, Any] = {"id": spec["id"], "kind": "exact", "deal": spec["deal"],
                           "status": "ok", "error": None, "exact_value": None}
    started = time.perf_counter()
    try:
        from tensorcfr.games.pasur.solving.double_dummy import dd_value

        row["exact_value"] = int(dd_value(tuple(spec["deal_cards"])))
    except Exception as exc:  # noqa: BLE001 - one failing deal must not stop the tournament
        row.update(status="error", error=_error_text(exc))
    row["seconds"] = time.perf_counter() - started
    return row


def _game_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Play one game of the tournament; never raises for a problem of the game itself."""
    row: dict[str, Any] = {key: spec[key] for key in ("id", "a", "b", "deal", "seating",
                                                      "alex", "bob", "game_seed")}
    row.update(kind="game", status="ok", error=None)
    started = time.perf_counter()
    try:
        alex = _cached_agent(spec["alex"], spec["options"])
        bob = _cached_agent(spec["bob"], spec["options"])
        result = play_game(tuple(spec["deal_cards"]), alex, bob, spec["game_seed"])
        utility = int(result.utility)
        row.update(utility=utility, alex_points=int(result.alex_points),
                   bob_points=int(result.bob_points),
                   a_diff=utility if spec["seating"] == 0 else -utility,
                   alex_move_seconds_median=_median(result.move_seconds[0]),
                   bob_move_seconds_median=_median(result.move_seconds[1]),
                   plays=len(result.state.history),
                   play_codes=play_codes(result.state.history))
    except Exception as exc:  # noqa: BLE001 - one failing game must not stop the tournament
        row.update(status="error", error=_error_text(exc))
    row["seconds"] = time.perf_counter() - started
    return row


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _run_job(spec: dict[str, Any], threads: int) -> dict[str, Any]:
    """One job (a game or a deal's exact value), in a worker or in this process."""
    import torch

    torch.set_num_threads(threads)
    return _exact_job(spec) if spec["kind"] == "exact" else _game_job(spec)


# --------------------------------------------------------------------------- run


@dataclass(frozen=True)
class TournamentProgress:
    """Where a run stands (handed to ``on_progress``).

    Attributes:
        done: jobs finished (games and exact solves, including those of earlier runs).
        total: jobs in the tournament.
        failed: jobs of this run that failed.
        row: the journal row that just finished (None at the start and for a notice).
        notice: a message for the user (e.g. a repaired journal), else None.
    """

    done: int
    total: int
    failed: int
    row: dict[str, Any] | None = None
    notice: str | None = None


@dataclass(frozen=True)
class TournamentResult:
    """A finished tournament: per-pair statistics and where the files are."""

    out: Path
    agents: tuple[str, ...]
    deals: int
    pairs: list[PairSummary]
    jobs: int
    skipped: int
    computed: int
    failed: int
    seconds: float
    run: dict[str, Any]
    repaired_bytes: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; ``pairs`` is a list of :meth:`PairSummary.as_dict`."""
        return {"pairs": [p.as_dict() for p in self.pairs], "agents": list(self.agents),
                "deals": self.deals, "out": str(self.out), "jobs": self.jobs,
                "skipped": self.skipped, "computed": self.computed, "failed": self.failed,
                "seconds": self.seconds, "repaired_bytes": self.repaired_bytes,
                "games_parquet": str(self.out / GAMES_TABLE),
                "summary_parquet": str(self.out / SUMMARY_TABLE),
                "cross_table_png": str(self.out / CROSS_TABLE), **self.run}


class _Deals:
    """The tournament's deals by index: the rows of a deck file, or seeded deals drawn when
    asked (``random_deal(seed + i)``), so that a long tournament holds no list of every deal.
    """

    def __init__(self, settings: TournamentSettings) -> None:
        self.seed = settings.seed
        self.rows: dict[int, tuple[int, ...]] | None = None
        if settings.decks is None:
            assert settings.deals is not None
            self.indices: Sequence[int] = range(settings.deals)
            self.digest = "seeds"
        else:
            first, last = settings.deck_range  # type: ignore[misc]
            rows, self.digest = read_decks(str(settings.decks), first, last, option="--range")
            self.rows = dict(rows)
            self.indices = [i for i, _ in rows]

        self.cards = lru_cache(maxsize=4096)(self._cards)

    def __len__(self) -> int:
        return len(self.indices)

    def _cards(self, index: int) -> tuple[int, ...]:
        """The deal of index ``index`` (52 card indices)."""
        if self.rows is not None:
            return self.rows[index]
        return tuple(rules.random_deal(self.seed + index))


def _identity(settings: TournamentSettings, digest: str) -> dict[str, Any]:
    identity: dict[str, Any] = {"format": TOURNAMENT_FORMAT, "agents": list(settings.agents),
                                "seed": settings.seed}
    if settings.decks is None:
        identity["deals"] = settings.deals
    else:
        identity["deck_file"] = str(settings.decks.resolve())
        identity["deck_file_sha256"] = digest
        identity["range"] = list(settings.deck_range)  # type: ignore[arg-type]
    return identity | settings.agent_options.identity()


def _check_identity(out: Path, identity: dict[str, Any]) -> None:
    """Refuse (one line) a rerun on ``out`` with other settings than the tournament it holds."""
    check_run_identity(out / IDENTITY_FILE, identity, what="tournament",
                       names=_IDENTITY_OPTIONS)


def _job_ids(settings: TournamentSettings, deals: _Deals) -> Iterator[str]:
    """Every job id, deal by deal: the deal's exact value, then each pair's two seatings."""
    for index in deals.indices:
        yield f"exact/{index}"
        for a, b in settings.pairs:
            for seating in (0, 1):
                yield f"game/{a}/{b}/{index}/{seating}"


def _job_spec(settings: TournamentSettings, deals: _Deals, job_id: str) -> dict[str, Any]:
    """What a worker needs to run job ``job_id`` (its deal drawn now)."""
    parts = job_id.split("/")
    index = int(parts[-1] if parts[0] == "exact" else parts[3])
    cards = [int(c) for c in deals.cards(index)]
    if parts[0] == "exact":
        return {"id": job_id, "kind": "exact", "deal": index, "deal_cards": cards}
    a, b, seating = parts[1], parts[2], int(parts[4])
    alex, bob = (a, b) if seating == 0 else (b, a)
    return {"id": job_id, "kind": "game", "a": a, "b": b, "deal": index, "seating": seating,
            "alex": alex, "bob": bob, "game_seed": settings.seed + index,
            "deal_cards": cards, "options": settings.agent_options}


_ERROR_ROW = {"status": str, "error": str}
_EXACT_ROW = {"kind": str, "deal": int, "status": str, "exact_value": int}
_GAME_ROW = {"kind": str, "a": str, "b": str, "deal": int, "seating": int, "alex": str,
             "bob": str, "game_seed": int, "status": str}
_GAME_OK_ROW = {"utility": int, "alex_points": int, "bob_points": int, "a_diff": int,
                "alex_move_seconds_median": (float, type(None)),
                "bob_move_seconds_median": (float, type(None)), "plays": (int, type(None)),
                "seconds": (float, type(None))}


def _row_is_whole(row: dict[str, Any]) -> bool:
    """Whether a journal row holds every field the tables read, each of its type (a row
    with ``"utility": "lots"``, a missing key or ``Infinity`` is not: it is skipped and its
    job runs again)."""
    if not isinstance(row.get("id"), str) or row.get("kind") not in ("exact", "game"):
        return False
    if row["kind"] == "exact":
        if row.get("status") == "ok":
            return has_keys(row, _EXACT_ROW) and row["id"] == f"exact/{row['deal']}"
        return has_keys(row, {**_ERROR_ROW, "deal": int})
    if not has_keys(row, _GAME_ROW) or row["seating"] not in (0, 1) or \
            row["id"] != f"game/{row['a']}/{row['b']}/{row['deal']}/{row['seating']}":
        return False
    if row["status"] != "ok":
        return has_keys(row, _ERROR_ROW)
    return has_keys(row, _GAME_OK_ROW) and _codes_are_whole(row.get("play_codes"), row["plays"])


def _codes_are_whole(codes: Any, plays: int | None) -> bool:
    """A journal row's ``play_codes``: absent (a row written before plays were kept) or a
    list of ``plays`` integers in the codes' range (anything else: the game is played again)."""
    if codes is None:
        return True
    return isinstance(codes, list) and len(codes) == plays and all(
        type(c) is int and 0 <= c <= MAX_PLAY_CODE for c in codes)


def _journal_rows(journal: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The latest whole row of each job in the journal, and notes on what was skipped (a
    garbled line, a row of wrong types: that job is played again)."""
    contents = read_journal(journal, "id", check=_row_is_whole)
    rows = {str(key): row for key, row in contents.rows.items()}
    return rows, [note.replace("their work is done again", "their jobs run again")
                  for note in contents.notes(journal) if "torn last line" not in note]


def _latest_rows(journal: Path) -> dict[str, dict[str, Any]]:
    return _journal_rows(journal)[0]


def _game_table_rows(settings: TournamentSettings, rows: dict[str, dict[str, Any]],
                     deals: _Deals) -> list[dict[str, Any]]:
    """The rows of ``games.parquet`` (finished games, in pair / deal / seating order), each
    with its deal's exact value and the price of hidden information of each seat."""
    exact = {r["deal"]: r.get("exact_value") for r in rows.values()
             if r["kind"] == "exact" and r["status"] == "ok"}
    options_json = json.dumps(settings.agent_options.identity(), sort_keys=True)
    table = []
    for a, b in settings.pairs:
        for index in deals.indices:
            for seating in (0, 1):
                row = rows.get(f"game/{a}/{b}/{index}/{seating}")
                if row is None:
                    continue
                value = exact.get(index)
                ok = row["status"] == "ok" and value is not None
                table.append({
                    "a": a, "b": b, "deal": index, "seating": seating, "alex": row["alex"],
                    "bob": row["bob"], "game_seed": row["game_seed"], "status": row["status"],
                    "error": row["error"], "utility": row.get("utility"),
                    "alex_points": row.get("alex_points"), "bob_points": row.get("bob_points"),
                    "a_diff": row.get("a_diff"), "exact_value": value,
                    "alex_price": value - row["utility"] if ok else None,
                    "bob_price": row["utility"] - value if ok else None,
                    "alex_move_seconds_median": row.get("alex_move_seconds_median"),
                    "bob_move_seconds_median": row.get("bob_move_seconds_median"),
                    "plays": row.get("plays"), "play_codes": row.get("play_codes"),
                    "seconds": row.get("seconds"),
                    "agent_options": options_json, "deal_cards": list(deals.cards(index))})
    return table


def _games_schema() -> Any:
    import pyarrow as pa

    i64, f64, text = pa.int64(), pa.float64(), pa.string()
    return pa.schema([
        ("a", text), ("b", text), ("deal", i64), ("seating", i64), ("alex", text),
        ("bob", text), ("game_seed", i64), ("status", text), ("error", text),
        ("utility", i64), ("alex_points", i64), ("bob_points", i64), ("a_diff", i64),
        ("exact_value", i64), ("alex_price", i64), ("bob_price", i64),
        ("alex_move_seconds_median", f64), ("bob_move_seconds_median", f64), ("plays", i64),
        ("play_codes", pa.list_(i64)), ("seconds", f64), ("agent_options", text),
        ("deal_cards", pa.list_(pa.int8()))])


def summary_schema() -> Any:
    """The pyarrow schema of ``summary.parquet``."""
    import pyarrow as pa

    fields = [("a", pa.string()), ("b", pa.string()), ("deals", pa.int64()),
              ("games", pa.int64()), ("failed_games", pa.int64())]
    floats = ["mean_diff", "ci95_low", "ci95_high", "sd_diff", "a_win_rate", "tie_rate",
              "b_win_rate"]
    for side in ("a", "b"):
        floats += [f"{side}_price", f"{side}_price_as_alex", f"{side}_price_as_bob",
                   f"{side}_move_seconds_median"]
    return pa.schema(fields + [(name, pa.float64()) for name in floats])


def _write_tables(settings: TournamentSettings, deals: _Deals) -> list[PairSummary]:
    """Rewrite ``games.parquet`` and ``summary.parquet`` atomically from the journal."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.utils.io import atomic_path

    games = _game_table_rows(settings, _latest_rows(settings.out / JOURNAL), deals)
    summaries = summarize_pairs(settings.pairs, games)
    for name, rows, schema in ((GAMES_TABLE, games, _games_schema()),
                               (SUMMARY_TABLE, [s.table_row() for s in summaries],
                                summary_schema())):
        with atomic_path(settings.out / name) as tmp:
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), str(tmp))
    return summaries


def read_tournament(run: str | Path, columns: dict[str, Any], nullable: Sequence[str] = ()
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tournament folder's identity (``tournament.json``) and the rows of its
    ``games.parquet`` (``columns``: name -> type, checked; ``nullable``: those that may be
    null); one-line errors for a folder that is not a finished-enough
    tournament's (no identity, another format, no games table yet, a damaged table)."""
    from tensorcfr.utils.reading import check_input_folder, load_json, load_parquet_rows

    folder = check_input_folder(run, "tournament folder")
    identity_file = folder / IDENTITY_FILE
    if not identity_file.exists():
        raise TensorCFRError(f"{folder} is not a tournament folder (no {IDENTITY_FILE}); give "
                             "the --out folder of `pasur tournament`")
    identity = load_json(identity_file, "tournament identity")
    agents = identity.get("agents") if isinstance(identity, dict) else None
    if not isinstance(identity, dict) or identity.get("format") != TOURNAMENT_FORMAT or \
            not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise TensorCFRError(f"{identity_file} is not a tournament identity "
                             f"(format {TOURNAMENT_FORMAT})")
    table = folder / GAMES_TABLE
    if not table.exists():
        raise TensorCFRError(f"{folder} holds no {GAMES_TABLE} yet (no game has finished)")
    rows = load_parquet_rows(table, "tournament games table", columns,
                             nullable=tuple(nullable))
    return identity, rows


def draw_cross_table(agents: Sequence[str], pairs: Sequence[PairSummary],
                     path: str | Path) -> None:
    """The cross table as a PNG: cell (row r, column c) is the mean points per deal of agent r
    against agent c, with its 95% interval (red: the row agent wins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from tensorcfr.utils.io import atomic_path

    index = {name: i for i, name in enumerate(agents)}
    n = len(agents)
    values = np.full((n, n), np.nan)
    labels = [["" for _ in range(n)] for _ in range(n)]
    for p in pairs:
        if p.mean_diff is None:
            continue
        i, j = index[p.a], index[p.b]
        values[i, j], values[j, i] = p.mean_diff, -p.mean_diff
        for r, c, sign in ((i, j, 1), (j, i, -1)):
            text = f"{sign * p.mean_diff:+.2f}"
            if p.ci95 is not None:
                low, high = sorted((sign * p.ci95[0], sign * p.ci95[1]))
                text += f"\n[{low:+.2f}, {high:+.2f}]"
            labels[r][c] = text + f"\n{p.deals} deals"
    finite = values[np.isfinite(values)]
    scale = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
    size = 1.6 + 1.5 * n
    fig, ax = plt.subplots(figsize=(size, size * 0.85))
    # (a pair with no finished deal: grey, not the white of 0)
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="#e6e6e6")
    diagonal = np.eye(n, dtype=bool)
    image = ax.imshow(np.ma.masked_where(~np.isfinite(values) & ~diagonal, values), cmap=cmap,
                      vmin=-scale, vmax=scale)
    for r in range(n):
        for c in range(n):
            dark = np.isfinite(values[r, c]) and abs(values[r, c]) > 0.6 * scale
            text = "-" if r == c else labels[r][c] or "not played"
            ax.text(c, r, text, ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    ax.set_xticks(range(n), agents)
    ax.set_yticks(range(n), agents)
    ax.set_xlabel("column agent")
    ax.set_ylabel("row agent")
    ax.set_title("Duplicate tournament: row minus column, points per deal (95% CI)",
                 fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.8, label="points per deal")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def run_tournament(settings: TournamentSettings, *,
                   on_progress: Callable[[TournamentProgress], None] = lambda p: None
                   ) -> TournamentResult:
    """Run (or resume) a duplicate tournament; see the module docstring (the analysis of
    its recorded plays is :func:`.tournament_price.run_price_analysis`).

    Raises:
        TensorCFRError: bad input (a deal range past the deck file, an --out that is a file or
            unwritable, a resume with other settings, a corrupt journal, Ray that cannot
            start), one line.
        KeyboardInterrupt: Ctrl-C or SIGTERM; every finished game is in the journal and the
            tables, and the same settings resume the run.
    """
    from tensorcfr.utils.io import check_output_dir

    started = time.perf_counter()
    deals = _Deals(settings)
    for name in settings.agents:  # unusable options (a missing model...) fail here, at once
        make_agent(name, settings.agent_options)
    if settings.address is not None:
        check_ray_address(settings.address)
    out = check_output_dir(settings.out, "--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from tensorcfr.utils.io import write_error

        raise write_error(out, exc) from None
    with folder_lock(out, "tournament"):
        return _run_locked(settings, deals, out, started, on_progress)


def _run_locked(settings: TournamentSettings, deals: _Deals, out: Path, started: float,
                on_progress: Callable[[TournamentProgress], None]) -> TournamentResult:
    """:func:`run_tournament` once the folder is checked and locked."""
    _check_identity(out, _identity(settings, deals.digest))
    journal = out / JOURNAL
    repaired = repair_journal(journal)
    done_rows, notes = _journal_rows(journal)
    todo = [job for job in _job_ids(settings, deals)
            if done_rows.get(job, {}).get("status") != "ok"]
    total = len(deals) * (1 + 2 * len(settings.pairs))
    skipped = total - len(todo)
    state = {"done": skipped, "failed": 0, "flushed": time.perf_counter()}
    if repaired:
        notes.insert(0, f"repaired the journal {journal}: cut off a torn last line ({repaired} "
                     "bytes, a write stopped by a kill); that job runs again")
    for note in notes:
        on_progress(TournamentProgress(skipped, total, 0, notice=note))
    on_progress(TournamentProgress(skipped, total, 0))

    def finish(row: dict[str, Any]) -> None:
        append_journal(journal, row)
        state["done"] += 1
        state["failed"] += row["status"] != "ok"
        on_progress(TournamentProgress(state["done"], total, state["failed"], row=row))
        if time.perf_counter() - state["flushed"] > settings.flush_seconds:
            _write_tables(settings, deals)
            state["flushed"] = time.perf_counter()

    run_info: dict[str, Any] = {"mode": "in-process" if todo else "nothing to run"}
    try:
        if not todo:
            pass
        elif settings.in_process:
            with deferred_stop() as stop:  # SIGINT / SIGTERM: stop between two games
                for job in todo:
                    finish(_run_job(_job_spec(settings, deals, job), settings.threads))
                    if stop.requested:
                        raise KeyboardInterrupt
        else:
            def collect(key: Hashable, row: dict[str, Any] | None, error: str | None) -> None:
                if row is None:  # a worker died on this job
                    spec = _job_spec(settings, deals, str(key))
                    row = {k: v for k, v in spec.items()
                           if k not in ("deal_cards", "options")}
                    row.update(status="error", error=error)
                finish(row)

            jobs = ((job, (_job_spec(settings, deals, job), settings.threads)) for job in todo)
            if settings.processes:
                run_info = run_on_processes(_run_job, jobs, collect,
                                            workers=settings.processes)
            else:
                run_info = run_on_ray(_run_job, jobs, collect, workers=settings.workers,
                                      address=settings.address)
    except KeyboardInterrupt:  # finished jobs are in the journal; bring the tables up to date
        _write_tables(settings, deals)
        raise
    summaries = _write_tables(settings, deals)
    draw_cross_table(settings.agents, summaries, out / CROSS_TABLE)
    return TournamentResult(out=out, agents=settings.agents, deals=len(deals), pairs=summaries,
                            jobs=total, skipped=skipped, computed=len(todo),
                            failed=state["failed"], seconds=time.perf_counter() - started,
                            run=run_info | {"workers": 0 if settings.in_process
                                            else settings.processes or settings.workers,
                                            "threads": settings.threads},
                            repaired_bytes=repaired)
