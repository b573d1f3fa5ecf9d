"""Where each agent of a duplicate tournament loses points: the price of hidden information,
play by play, summed by round and seat.

A tournament folder (:mod:`.tournament`) records every game's plays (``play_codes``). This
module replays each recorded game and values every position on the way with the
double-dummy search (:mod:`.solving.double_dummy`: the exact open-hands value, every card
of the deal known, the same numbers as the exact solver). With ``V_k`` the value of the
position before play ``k`` (Alex minus Bob, points already scored included; ``V_0`` is the
deal's exact value, ``V_48`` the game's result), the **loss** of the mover at play ``k`` is
what its play gave up against open-hands play, from its seat::

    Alex (even k): V_k - V_{k+1}          Bob (odd k): V_{k+1} - V_k          (points, >= 0)

The deals between rounds move nothing (the open-hands value already knows the cards to
come), so the losses telescope: per game, Alex's losses minus Bob's losses equal
``V_0 - V_48``, the deal's exact value minus the result, which is Alex's price of hidden
information in ``games.parquet`` (Bob's is its negative). An agent's **price** in a round is
its own loss there minus its rival's: summed over the rounds it is the tournament's price by
seat. The losses are an agent's own (what not seeing the cards, and its mistakes, cost it);
the price nets out what its rival gave away.

Aggregates (:func:`price_by_round`): per agent, per rival (each rival, and ``"all"``), per seat
(``"alex"``, ``"bob"``, ``"both"``) and per round (1-6, and ``None`` for the whole game), the
mean per game of the loss and of the price, with 95% Student-t intervals over deals (the
games of one deal are averaged first: the deal is the unit, as in the duplicate statistics).

A tournament folder then also holds:

* ``price.jsonl``: the analysis journal, one row per analysed game (its 49 position values,
  the seconds it took, or its one-line error); a rerun analyses only the games it lacks (the
  games a resumed tournament added), so an analysis is resumable like the tournament.
* ``price_games.parquet``: one row per analysed game: the pair, deal, seating and seats,
  ``exact_value``, ``utility``, ``values`` (49 ints), ``alex_loss`` and ``bob_loss`` (6 ints,
  one per round), their totals, ``seconds``, ``status``, ``error``.
* ``price_by_round.parquet``: the aggregates above, one row per (agent, rival, seat, round).
* ``price_paired.parquet``: two agents against the same rival, paired by deal, by round
  (:func:`paired_differences`).

Nothing here knows how an agent chooses its plays; games recorded before tournaments kept
their plays are counted and left out. A worker imports the rules and the search, not the
agents: the tournament module is imported where the driver needs it.
"""

from __future__ import annotations

import json
import statistics
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Literal, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.play_codes import plays_from_codes
from tensorcfr.utils.interrupts import deferred_stop
from tensorcfr.utils.journal import append_journal, folder_lock, read_journal, repair_journal
from tensorcfr.utils.process_pool import run_on_processes

__all__ = [
    "PRICE_BY_ROUND_TABLE",
    "PRICE_GAMES_TABLE",
    "PRICE_JOURNAL",
    "PRICE_PAIRED_TABLE",
    "PriceProgress",
    "PriceResult",
    "PriceSettings",
    "Seat",
    "game_losses",
    "paired_differences",
    "position_values",
    "find_price_row",
    "price_by_round",
    "price_settings_for",
    "read_price_games",
    "run_price_analysis",
    "write_price_aggregates",
]

PRICE_JOURNAL = "price.jsonl"
PRICE_GAMES_TABLE = "price_games.parquet"
PRICE_BY_ROUND_TABLE = "price_by_round.parquet"
PRICE_PAIRED_TABLE = "price_paired.parquet"
ALL_RIVALS = "all"
MAX_ABS_VALUE = 1000
"""Bound on a position value read back from the journal (a game's points are far below)."""

Seat = Literal["alex", "bob", "both"]
SEATS: tuple[Seat, ...] = ("alex", "bob", "both")


# --------------------------------------------------------------------------- one game


def position_values(deal: Sequence[int], plays: Sequence[rules.Action]) -> list[int]:
    """The open-hands value (Alex minus Bob, points; the double-dummy search's
    :meth:`~.solving.double_dummy.DoubleDummySolver.values_of_deal`, equal to
    :func:`~.solving.double_dummy.dd_value` of each) of each position of a game: before
    play 0, 1, ..., and after the last one (49 values for a whole game; the last is the
    result).

    Raises:
        ValueError: a play that is illegal where it was made (names the play's number).
    """
    state = rules.initial_state(deal)
    states = [state]
    for number, play in enumerate(plays):
        reason = rules.illegal_reason(state, play)
        if reason is not None:
            raise ValueError(f"play {number} ({play.notation()}) is illegal: {reason}")
        state = rules.apply_legal_action(state, play)
        states.append(state)
    return _solver().values_of_deal(states)


_SOLVER: list[Any] = []


def _solver() -> Any:
    """This process's double-dummy solver (its table is reused from game to game)."""
    if not _SOLVER:
        from tensorcfr.games.pasur.solving.double_dummy import DoubleDummySolver

        _SOLVER.append(DoubleDummySolver())
    return _SOLVER[0]


def game_losses(values: Sequence[int]) -> tuple[list[int], list[int]]:
    """Alex's and Bob's losses by round (two lists of 6 ints, points) from the position
    values of a whole game (:func:`position_values`, 49 values).

    Bob's play 3 lets the value rise from 0 to 2 (Bob loses 2 in round 1), Alex's play 10
    lets it fall to 1 (Alex loses 1 in round 2); Alex's losses minus Bob's, -1, is the first
    value minus the last:

    >>> game_losses([0] * 4 + [2] * 7 + [1] * 38)
    ([0, 1, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0])
    """
    if len(values) != rules.NUM_PLAYS + 1:
        raise ValueError(f"a whole game has {rules.NUM_PLAYS + 1} position values, got "
                         f"{len(values)}")
    alex, bob = [0] * rules.NUM_ROUNDS, [0] * rules.NUM_ROUNDS
    for k in range(rules.NUM_PLAYS):
        drop = values[k] - values[k + 1]
        if k % 2 == 0:
            alex[k // rules.PLAYS_PER_ROUND] += drop
        else:
            bob[k // rules.PLAYS_PER_ROUND] -= drop
    return alex, bob


def _codes_crc(codes: Sequence[int]) -> int:
    """A checksum of a game's plays: an analysis row belongs to the game it was made from."""
    return zlib.crc32(json.dumps(list(codes)).encode("ascii"))


def _analyse_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Replay and value one recorded game (in a worker or in this process); never raises for
    a problem of the game itself (an illegal play, a value that contradicts the tournament's
    tables): the row then says it in one line."""
    row: dict[str, Any] = {"id": spec["id"], "crc": spec["crc"], "status": "ok",
                           "error": None}
    started = time.perf_counter()
    try:
        plays = plays_from_codes(spec["play_codes"])
        if len(plays) != rules.NUM_PLAYS:
            raise ValueError(f"{len(plays)} plays recorded, a game has {rules.NUM_PLAYS}")
        values = position_values(spec["deal_cards"], plays)
        if values[0] != spec["exact_value"]:
            raise ValueError(f"the deal's open-hands value is {values[0]}, the tournament "
                             f"recorded {spec['exact_value']}")
        if values[-1] != spec["utility"]:
            raise ValueError(f"the replayed game ends {values[-1]}, the tournament recorded "
                             f"{spec['utility']}")
        alex, bob = game_losses(values)
        if min(alex + bob) < 0:  # pragma: no cover - a search that is not exact
            raise ValueError("a play gained against open-hands play (the search is not exact)")
        row["values"] = values
    except Exception as exc:  # noqa: BLE001 - one bad game must not stop the analysis
        text = str(exc) if isinstance(exc, (ValueError, TensorCFRError)) else \
            f"{type(exc).__name__}: {exc}"
        row.update(status="error", error=(text.splitlines() or ["error"])[0][:300])
    row["seconds"] = time.perf_counter() - started
    return row


def _row_is_whole(row: dict[str, Any]) -> bool:
    """An analysis journal row with every field of its type (else it is analysed again)."""
    if not isinstance(row.get("id"), str) or type(row.get("crc")) is not int or \
            type(row.get("seconds")) not in (int, float) or not 0 <= row["seconds"] < 1e9:
        return False
    if row.get("status") == "error":
        return isinstance(row.get("error"), str)
    values = row.get("values")
    return row.get("status") == "ok" and row.get("error", None) is None and \
        isinstance(values, list) and len(values) == rules.NUM_PLAYS + 1 and \
        all(type(v) is int and abs(v) <= MAX_ABS_VALUE for v in values)


# --------------------------------------------------------------------------- aggregates


def _mean_interval(deal_means: dict[int, list[float]]) -> dict[str, float | None]:
    from tensorcfr.games.pasur.tournament import duplicate_interval

    per_deal = [statistics.fmean(v) for _, v in sorted(deal_means.items())]
    mean, interval, _ = duplicate_interval(per_deal)
    return {"mean": mean, "ci95_low": interval[0] if interval else None,
            "ci95_high": interval[1] if interval else None}


def price_by_round(games: Sequence[dict[str, Any]], pairs: Sequence[tuple[str, str]]
                   ) -> list[dict[str, Any]]:
    """The aggregates of analysed games (rows with ``a, b, deal, seating, alex, bob,
    alex_loss, bob_loss``; 6 losses each): one dict per (agent, rival, seat, round) with
    ``games``, ``deals``, ``loss_mean`` / ``loss_ci95_low`` / ``loss_ci95_high`` (the agent's
    own points lost per game) and ``price_mean`` / ``price_ci95_low`` / ``price_ci95_high``
    (its loss minus its rival's). ``rival`` is a rival's name or ``"all"``; ``seat`` is
    ``"alex"``, ``"bob"`` or ``"both"``; ``round`` is 1-6 or None (the whole game).
    Intervals are over deals (each deal's games averaged first); None below two deals."""
    agents = list(dict.fromkeys(name for pair in pairs for name in pair))
    out = []
    for agent in agents:
        rivals = [b if a == agent else a for a, b in pairs if agent in (a, b)]
        for rival in [*rivals, ALL_RIVALS]:
            mine = [g for g in games if agent in (g["alex"], g["bob"]) and (
                rival == ALL_RIVALS or rival in (g["alex"], g["bob"]))
                and (g["a"], g["b"]) in pairs]
            for seat in SEATS:
                seated = [g for g in mine if seat == "both"
                          or g["alex" if seat == "alex" else "bob"] == agent]
                for round_number in [*range(1, rules.NUM_ROUNDS + 1), None]:
                    loss: dict[int, list[float]] = {}
                    price: dict[int, list[float]] = {}
                    for g in seated:
                        own, other = (("alex_loss", "bob_loss") if g["alex"] == agent
                                      else ("bob_loss", "alex_loss"))
                        if round_number is None:
                            own_loss, other_loss = sum(g[own]), sum(g[other])
                        else:
                            own_loss = g[own][round_number - 1]
                            other_loss = g[other][round_number - 1]
                        loss.setdefault(g["deal"], []).append(own_loss)
                        price.setdefault(g["deal"], []).append(own_loss - other_loss)
                    lo, pr = _mean_interval(loss), _mean_interval(price)
                    out.append({"agent": agent, "rival": rival, "seat": seat,
                                "round": round_number, "games": len(seated),
                                "deals": len(loss), "loss_mean": lo["mean"],
                                "loss_ci95_low": lo["ci95_low"],
                                "loss_ci95_high": lo["ci95_high"], "price_mean": pr["mean"],
                                "price_ci95_low": pr["ci95_low"],
                                "price_ci95_high": pr["ci95_high"]})
    return out


def find_price_row(rows: Sequence[dict[str, Any]], agent: str, seat: Seat,
                   round_number: int | None, rival: str = ALL_RIVALS) -> dict[str, Any]:
    """The row of :func:`price_by_round`'s ``rows`` for ``agent`` against ``rival`` in
    ``seat`` and round (None: the whole game); KeyError if there is none."""
    for r in rows:
        if (r["agent"], r["rival"], r["seat"], r["round"]) == (agent, rival, seat,
                                                                round_number):
            return r
    raise KeyError((agent, rival, seat, round_number))


def paired_differences(games: Sequence[dict[str, Any]], pairs: Sequence[tuple[str, str]]
                       ) -> list[dict[str, Any]]:
    """Two agents against the same rival, paired by deal: for each rival ``R`` and each two
    agents ``A``, ``B`` (in the tournament's order) that both met it, by round (1-6, None: the
    whole game), the mean over deals of A's loss against R minus B's (each agent's games of
    the deal against R averaged: both seats), with a 95% interval over the deals where both
    played R. Rows: ``agent`` (A), ``other`` (B), ``rival``, ``round``, ``deals``,
    ``diff_mean``, ``diff_ci95_low``, ``diff_ci95_high`` (negative: A loses less)."""
    import itertools

    from tensorcfr.games.pasur.tournament import duplicate_interval

    agents = list(dict.fromkeys(name for pair in pairs for name in pair))
    met = {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}
    by_deal: dict[tuple[str, str], dict[int, list[list[int]]]] = {}
    for g in games:
        if (g["a"], g["b"]) not in pairs:
            continue
        for seat, rival in (("alex", g["bob"]), ("bob", g["alex"])):
            by_deal.setdefault((g[seat], rival), {}).setdefault(g["deal"], []).append(
                g[f"{seat}_loss"])
    out = []
    for rival in agents:
        rivals_of = [x for x in agents if (x, rival) in met]
        for a, b in itertools.combinations(rivals_of, 2):
            deals_a, deals_b = by_deal.get((a, rival), {}), by_deal.get((b, rival), {})
            common = sorted(set(deals_a) & set(deals_b))
            for round_number in [*range(1, rules.NUM_ROUNDS + 1), None]:
                def mean_loss(losses: list[list[int]]) -> float:
                    picked = [sum(x) if round_number is None else x[round_number - 1]
                              for x in losses]
                    return statistics.fmean(picked)

                diffs = [mean_loss(deals_a[d]) - mean_loss(deals_b[d]) for d in common]
                mean, interval, _ = duplicate_interval(diffs)
                out.append({"agent": a, "other": b, "rival": rival, "round": round_number,
                            "deals": len(common), "diff_mean": mean,
                            "diff_ci95_low": interval[0] if interval else None,
                            "diff_ci95_high": interval[1] if interval else None})
    return out


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class PriceSettings:
    """An analysis of a tournament folder (validated on construction, one-line errors).

    Attributes:
        run: the tournament folder (``pasur tournament --out``).
        processes: P > 0 analyses on P local worker processes; 0 in this process.
        flush_seconds: how often the tables are rewritten during a run.
    """

    run: Path
    processes: int = 0
    flush_seconds: float = 30.0

    def __post_init__(self) -> None:
        import os

        from tensorcfr.utils.checks import check_int_range

        object.__setattr__(self, "run", Path(self.run))
        cpus = os.cpu_count() or 1
        check_int_range(self.processes, "--processes", 0, cpus,
                        why=f"this machine has {cpus} CPU(s)")
        if not self.flush_seconds > 0:
            raise TensorCFRError(f"flush_seconds must be positive, got {self.flush_seconds}")


def price_settings_for(tournament: Any) -> PriceSettings:
    """The analysis of a tournament's folder on the tournament's local processes
    (:class:`~.tournament.TournamentSettings`): its ``processes``, or its local Ray
    instance's ``workers`` when more than one, else this process (a cluster's workers are
    not used: the analysis reads the folder)."""
    processes = tournament.processes
    if not processes and not tournament.in_process and tournament.address is None \
            and tournament.workers > 1:
        processes = tournament.workers
    return PriceSettings(run=tournament.out, processes=processes)


@dataclass(frozen=True)
class PriceProgress:
    """Where an analysis stands: ``done`` of ``total`` analysable games (earlier runs'
    included), ``failed`` this run, and a ``notice`` for the user (else None)."""

    done: int
    total: int
    failed: int
    notice: str | None = None


@dataclass(frozen=True)
class PriceResult:
    """A finished analysis.

    Attributes:
        run: the tournament folder.
        agents: the tournament's agents, in order.
        games: games analysed without error (all runs).
        without_plays: finished games recorded without their plays (left out).
        failed: recorded games whose analysis failed (all runs; their errors in
            ``price_games.parquet``).
        computed, skipped: games analysed now / found in the journal.
        seconds: this run's wall time.
        seconds_per_game: median seconds to replay and value one game (all runs), or None.
        rows: :func:`price_by_round`'s rows.
        paired: :func:`paired_differences`' rows.
        mode: ``"in-process"`` or ``"processes"``; workers: the processes.
    """

    run: Path
    agents: tuple[str, ...]
    games: int
    without_plays: int
    failed: int
    computed: int
    skipped: int
    seconds: float
    seconds_per_game: float | None
    rows: list[dict[str, Any]]
    mode: str
    workers: int
    paired: list[dict[str, Any]] = field(default_factory=list)

    def row(self, agent: str, seat: Seat, round_number: int | None,
            rival: str = ALL_RIVALS) -> dict[str, Any]:
        """The aggregate row of ``agent`` in ``seat`` and round (None: the whole game)."""
        return find_price_row(self.rows, agent, seat, round_number, rival)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts, ``seconds_per_game``, ``by_round`` (the rows) and the
        paths of the tables."""
        return {"run": str(self.run), "agents": list(self.agents), "games": self.games,
                "games_without_plays": self.without_plays, "failed": self.failed,
                "computed": self.computed, "skipped": self.skipped, "seconds": self.seconds,
                "seconds_per_game": self.seconds_per_game, "mode": self.mode,
                "workers": self.workers, "by_round": self.rows, "paired": self.paired,
                "price_games_parquet": str(self.run / PRICE_GAMES_TABLE),
                "price_by_round_parquet": str(self.run / PRICE_BY_ROUND_TABLE),
                "price_paired_parquet": str(self.run / PRICE_PAIRED_TABLE)}


_GAME_COLUMNS = {"a": str, "b": str, "deal": int, "seating": int, "alex": str, "bob": str,
                 "status": str, "utility": int, "exact_value": int, "deal_cards": list}


def _read_run(run: Path) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """The tournament's agents and its finished games (``games.parquet`` rows with status
    ok and an exact value); one-line errors for a folder that is not a tournament's."""
    from tensorcfr.games.pasur.tournament import GAMES_TABLE, read_tournament
    from tensorcfr.utils.reading import damaged

    identity, rows = read_tournament(run, _GAME_COLUMNS, nullable=("utility", "exact_value"))
    table = Path(run) / GAMES_TABLE
    games = []
    for number, row in enumerate(rows):
        codes = row.get("play_codes")
        if codes is not None and not (isinstance(codes, list) and all(
                type(c) is int for c in codes)):
            raise damaged(table, "tournament games table",
                          f"column 'play_codes', row {number}: not a list of integers")
        if row["status"] == "ok" and row["exact_value"] is not None and \
                row["utility"] is not None:
            games.append(row)
    return tuple(identity["agents"]), games


def _game_id(row: dict[str, Any]) -> str:
    return f"game/{row['a']}/{row['b']}/{row['deal']}/{row['seating']}"


def _table_rows(games: Sequence[dict[str, Any]], done: dict[str, dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """The rows of ``price_games.parquet``: the analysed games, in the tournament's order."""
    out = []
    for g in games:
        row = done.get(_game_id(g))
        if row is None:
            continue
        ok = row["status"] == "ok"
        alex, bob = game_losses(row["values"]) if ok else (None, None)
        out.append({key: g[key] for key in ("a", "b", "deal", "seating", "alex", "bob",
                                            "exact_value", "utility")} | {
            "values": row.get("values") if ok else None, "alex_loss": alex, "bob_loss": bob,
            "alex_loss_total": sum(alex) if ok else None,
            "bob_loss_total": sum(bob) if ok else None, "seconds": row["seconds"],
            "status": row["status"], "error": row.get("error")})
    return out


def _schemas() -> tuple[Any, Any]:
    import pyarrow as pa

    i64, f64, text = pa.int64(), pa.float64(), pa.string()
    games = pa.schema([
        ("a", text), ("b", text), ("deal", i64), ("seating", i64), ("alex", text),
        ("bob", text), ("exact_value", i64), ("utility", i64), ("values", pa.list_(pa.int16())),
        ("alex_loss", pa.list_(pa.int16())), ("bob_loss", pa.list_(pa.int16())),
        ("alex_loss_total", i64), ("bob_loss_total", i64), ("seconds", f64),
        ("status", text), ("error", text)])
    by_round = pa.schema([
        ("agent", text), ("rival", text), ("seat", text), ("round", i64), ("games", i64),
        ("deals", i64), ("loss_mean", f64), ("loss_ci95_low", f64), ("loss_ci95_high", f64),
        ("price_mean", f64), ("price_ci95_low", f64), ("price_ci95_high", f64)])
    return games, by_round


def _paired_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("agent", pa.string()), ("other", pa.string()), ("rival", pa.string()),
                      ("round", pa.int64()), ("deals", pa.int64()), ("diff_mean", pa.float64()),
                      ("diff_ci95_low", pa.float64()), ("diff_ci95_high", pa.float64())])


_PRICE_GAMES_COLUMNS = {"a": str, "b": str, "deal": int, "seating": int, "alex": str,
                        "bob": str, "status": str, "exact_value": int, "utility": int,
                        "values": list}


def read_price_games(run: str | Path) -> list[dict[str, Any]] | None:
    """The games a tournament's analysis valued (``price_games.parquet`` of the folder
    ``run``: its rows with status ok, ``alex_loss`` and ``bob_loss`` recomputed from their 49
    position ``values``, points), or None where the folder holds no analysis.

    Raises:
        CorruptFileError: a damaged table: a missing column, a value of the wrong type, or
            position values that are not a whole game's from its exact value to its result
            (one line naming the file, the column and the row).
    """
    from tensorcfr.utils.reading import damaged, load_parquet_rows

    path = Path(run) / PRICE_GAMES_TABLE
    if not path.exists():
        return None
    what = "tournament price table"
    rows = load_parquet_rows(path, what, _PRICE_GAMES_COLUMNS,
                             nullable=("exact_value", "utility", "values"))
    out = []
    for number, row in enumerate(rows):
        if row["status"] != "ok":
            continue
        values = row["values"]
        if not (isinstance(values, list) and len(values) == rules.NUM_PLAYS + 1 and all(
                type(v) is int and abs(v) <= MAX_ABS_VALUE for v in values)):
            raise damaged(path, what, f"column 'values', row {number}: not "
                          f"{rules.NUM_PLAYS + 1} position values")
        if (values[0], values[-1]) != (row["exact_value"], row["utility"]):
            raise damaged(path, what, f"row {number}: its position values run from "
                          f"{values[0]} to {values[-1]}, not from the deal's exact value "
                          f"({row['exact_value']}) to the game's result ({row['utility']})")
        alex, bob = game_losses(values)
        out.append(dict(row, alex_loss=alex, bob_loss=bob))
    return out


def write_price_aggregates(folder: Path, aggregates: Sequence[dict[str, Any]],
                           paired: Sequence[dict[str, Any]]) -> None:
    """Write ``price_by_round.parquet`` (:func:`price_by_round`'s rows) and
    ``price_paired.parquet`` (:func:`paired_differences`') into ``folder``, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.utils.io import atomic_path

    for name, rows, schema in ((PRICE_BY_ROUND_TABLE, aggregates, _schemas()[1]),
                               (PRICE_PAIRED_TABLE, paired, _paired_schema())):
        with atomic_path(folder / name) as tmp:
            pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), str(tmp))


def _write_tables(run: Path, agents: Sequence[str], games: Sequence[dict[str, Any]],
                  done: dict[str, dict[str, Any]]
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Rewrite the three tables atomically; returns (game rows, aggregate rows, paired
    rows)."""
    import itertools

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.utils.io import atomic_path

    table_rows = _table_rows(games, done)
    pairs = list(itertools.combinations(agents, 2))
    ok = [r for r in table_rows if r["status"] == "ok"]
    with atomic_path(run / PRICE_GAMES_TABLE) as tmp:
        pq.write_table(pa.Table.from_pylist(table_rows, schema=_schemas()[0]), str(tmp))
    aggregates, paired = price_by_round(ok, pairs), paired_differences(ok, pairs)
    write_price_aggregates(run, aggregates, paired)
    return table_rows, aggregates, paired


def run_price_analysis(settings: PriceSettings, *,
                       on_progress: Callable[[PriceProgress], None] = lambda p: None
                       ) -> PriceResult:
    """Analyse (or resume analysing) the recorded games of a tournament folder; see the
    module docstring.

    Raises:
        TensorCFRError: a folder that is not a tournament's, holds no finished game or none
            with recorded plays, a damaged table, a folder in use (one line).
        KeyboardInterrupt: Ctrl-C or SIGTERM; every analysed game is in ``price.jsonl`` and
            the tables, and the same call resumes.
    """
    started = time.perf_counter()
    agents, games = _read_run(settings.run)
    with_plays = [g for g in games if g.get("play_codes") is not None]
    without_plays = len(games) - len(with_plays)
    if not with_plays:
        raise TensorCFRError(
            f"none of the {len(games)} finished games in {settings.run} has its plays "
            "recorded (tournaments before plays were kept); play the tournament again into "
            "a new --out folder")
    run = settings.run
    with folder_lock(run, "tournament or analysis"):
        journal = run / PRICE_JOURNAL
        repaired = repair_journal(journal)
        contents = read_journal(journal, "id", check=_row_is_whole)
        crcs = {_game_id(g): _codes_crc(g["play_codes"]) for g in with_plays}
        done = {str(k): r for k, r in contents.rows.items()
                if r["status"] == "ok" and crcs.get(str(k)) == r["crc"]}
        notes = [n for n in contents.notes(journal) if "torn last line" not in n]
        if repaired:
            notes.insert(0, f"repaired {journal}: cut off a torn last line ({repaired} bytes); "
                         "that game is analysed again")
        if without_plays:
            notes.append(f"{without_plays} of the {len(games)} finished games have no "
                         "recorded plays (played before tournaments kept them): left out")
        todo = [g for g in with_plays if _game_id(g) not in done]
        total, skipped = len(with_plays), len(with_plays) - len(todo)
        state = {"done": skipped, "failed": 0, "flushed": time.perf_counter()}
        for note in notes:
            on_progress(PriceProgress(skipped, total, 0, notice=note))
        on_progress(PriceProgress(skipped, total, 0))
        specs = {_game_id(g): {"id": _game_id(g), "crc": crcs[_game_id(g)],
                               "play_codes": g["play_codes"],
                               "deal_cards": [int(c) for c in g["deal_cards"]],
                               "exact_value": g["exact_value"], "utility": g["utility"]}
                 for g in todo}

        def finish(row: dict[str, Any]) -> None:
            append_journal(journal, row)
            done[row["id"]] = row
            state["done"] += 1
            state["failed"] += row["status"] != "ok"
            on_progress(PriceProgress(state["done"], total, state["failed"]))
            if time.perf_counter() - state["flushed"] > settings.flush_seconds:
                _write_tables(run, agents, games, done)
                state["flushed"] = time.perf_counter()

        def collect(key: Hashable, row: dict[str, Any] | None, error: str | None) -> None:
            if row is None:  # the worker died on this game
                row = {"id": str(key), "crc": specs[str(key)]["crc"], "status": "error",
                       "error": error, "seconds": 0.0}
            finish(row)

        mode = "processes" if settings.processes else "in-process"
        try:
            if todo and settings.processes:
                run_on_processes(_analyse_job, ((key, (spec,)) for key, spec in specs.items()),
                                 collect, workers=settings.processes)
            elif todo:
                with deferred_stop() as stop:
                    for spec in specs.values():
                        finish(_analyse_job(spec))
                        if stop.requested:
                            raise KeyboardInterrupt
        except KeyboardInterrupt:
            _write_tables(run, agents, games, done)
            raise
        table_rows, aggregates, paired = _write_tables(run, agents, games, done)
    ok = [r for r in table_rows if r["status"] == "ok"]
    return PriceResult(
        run=run, agents=agents, games=len(ok), without_plays=without_plays,
        failed=len(table_rows) - len(ok), computed=len(todo), skipped=skipped,
        seconds=time.perf_counter() - started,
        seconds_per_game=float(statistics.median(r["seconds"] for r in ok)) if ok else None,
        rows=aggregates, mode=mode, workers=settings.processes, paired=paired)
