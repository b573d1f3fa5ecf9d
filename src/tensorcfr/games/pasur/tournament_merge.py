"""One table of several duplicate tournaments (``tensorcfr pasur tournament-merge``).

Tournaments are often run a pair or a few agents at a time (a long pair in the background,
another on a bigger machine).  :func:`merge_tournaments` reads their folders (the ``--out``
of ``pasur tournament``) and gives every pair that any of them played one row, with the
statistics of :func:`tensorcfr.games.pasur.tournament.summarize_pairs` over the pooled
deals, and the cross table of all their agents in one PNG.

Pooling rules, so that a merged row means what a single run's row means:

* a pair played in several folders pools their deals; the two games of a deal always come
  from one folder, and a deal (its 52 cards) that two folders both played for the pair counts
  once (the first folder given wins);
* the pair's agents must have played with the same options in every folder that pools it:
  the options each agent's plays depend on (:attr:`tensorcfr.games.pasur.agents.AgentEntry.
  reads`, e.g. ``seconds_per_move`` for ``ismcts-time``, nothing for ``greedy``); folders that
  differ there are refused with a one-line error naming the pair, the folders and the option;
* a pair met as ``b`` against ``a`` in a later folder is turned round (differences negated,
  seatings swapped), so every row keeps the orientation the first folder gave it.

Where the folders hold an analysis of where the agents lose points (``pasur
tournament-price``, :mod:`.tournament_price`), the analysed games of the pooled deals are
merged too, by the same rules, and aggregated as one analysis would: each agent's points lost
by round and seat against every rival it met in any folder (:func:`~.tournament_price.
price_by_round`; a deal is its 52 cards, so the games of one deal played in two folders against
two rivals are averaged together), and two agents against a common rival paired by deal.  A
pooled game a folder's analysis has not valued (no analysis, or one older than the game) is
left out of those tables and counted.

Nothing is written into the tournament folders.  With an output folder, ``summary.parquet``
(the tournament's columns plus ``sources``, ``options``), ``cross_table.png``, ``merge.json``
(the folders, in order) and, where some game was analysed, ``price_by_round.parquet`` and
``price_paired.parquet`` are written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AGENTS, AgentOptions
from tensorcfr.games.pasur.tournament import (CROSS_TABLE, SUMMARY_TABLE, PairSummary,
                                              draw_cross_table, read_tournament,
                                              summarize_pairs, summary_schema)
from tensorcfr.games.pasur.tournament_price import (PRICE_BY_ROUND_TABLE, PRICE_PAIRED_TABLE,
                                                    paired_differences, price_by_round,
                                                    read_price_games, write_price_aggregates)

__all__ = ["MAX_MERGED_RUNS", "MERGE_FILE", "MergeResult", "MergeSettings",
           "merge_tournaments"]

MAX_MERGED_RUNS = 256
"""Most tournament folders one merge reads."""
MERGE_FILE = "merge.json"

_GAME_COLUMNS = {"a": str, "b": str, "deal": int, "seating": int, "alex": str, "bob": str,
                 "status": str, "deal_cards": list, "a_diff": int, "alex_price": int,
                 "bob_price": int, "alex_move_seconds_median": float,
                 "bob_move_seconds_median": float}
_NULLABLE = ("a_diff", "alex_price", "bob_price", "alex_move_seconds_median",
             "bob_move_seconds_median")


@dataclass(frozen=True)
class MergeSettings:
    """A merge: ``runs`` (tournament folders, in order of precedence) and ``out`` (a folder
    for the merged tables; None: compute and return only)."""

    runs: tuple[Path, ...]
    out: Path | None = None

    def __post_init__(self) -> None:
        if not self.runs:
            raise TensorCFRError("--run: give at least one tournament folder")
        if len(self.runs) > MAX_MERGED_RUNS:
            raise TensorCFRError(f"--run: at most {MAX_MERGED_RUNS} tournament folders, got "
                                 f"{len(self.runs)}")
        resolved = [Path(r).resolve() for r in self.runs]
        for i, run in enumerate(resolved):
            if run in resolved[:i]:
                raise TensorCFRError(f"--run: {self.runs[i]} is given twice")
        if self.out is not None and Path(self.out).resolve() in resolved:
            raise TensorCFRError(f"--out {self.out} is one of the --run folders: the merge "
                                 "would overwrite that tournament's own tables; give another "
                                 "folder")


@dataclass
class MergeResult:
    """The merged pairs (``pairs``, in first-met order), the agents in first-met order, and
    per pair the folders it came from and the options its agents played with."""

    agents: list[str]
    pairs: list[PairSummary]
    sources: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    options: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    out: Path | None = None
    by_round: list[dict[str, Any]] = field(default_factory=list)
    paired: list[dict[str, Any]] = field(default_factory=list)
    priced_games: dict[tuple[str, str], int] = field(default_factory=dict)
    unpriced_runs: list[str] = field(default_factory=list)

    @property
    def priced(self) -> bool:
        """Whether any pooled game was analysed (the price tables exist)."""
        return any(self.priced_games.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``pairs`` (each :meth:`PairSummary.as_dict` plus ``sources``,
        ``options`` and ``priced_games``, its games whose losses were analysed), ``agents``,
        ``runs``, ``unpriced_runs`` (folders without an analysis), ``by_round`` and ``paired``
        (the merged analysis' rows, empty without one) and the written files (or None)."""
        written = self.out is not None
        priced = written and self.priced
        return {"pairs": [p.as_dict() | {"sources": self.sources[(p.a, p.b)],
                                         "options": self.options[(p.a, p.b)],
                                         "priced_games": self.priced_games.get((p.a, p.b), 0)}
                          for p in self.pairs],
                "agents": list(self.agents), "runs": list(self.runs),
                "unpriced_runs": list(self.unpriced_runs),
                "by_round": self.by_round, "paired": self.paired,
                "out": str(self.out) if written else None,
                "summary_parquet": str(self.out / SUMMARY_TABLE) if written else None,
                "cross_table_png": str(self.out / CROSS_TABLE) if written else None,
                "price_by_round_parquet": str(self.out / PRICE_BY_ROUND_TABLE) if priced
                else None,
                "price_paired_parquet": str(self.out / PRICE_PAIRED_TABLE) if priced
                else None}


def _reads(name: str) -> tuple[str, ...]:
    entry = AGENTS.get(name)
    # an agent no longer registered: every option of a run's identity may matter to it
    return entry.reads if entry is not None else tuple(AgentOptions().identity())


def _turned(row: dict[str, Any]) -> dict[str, Any]:
    """A game row of pair (b, a) as a row of pair (a, b)."""
    flip = dict(row, a=row["b"], b=row["a"], seating=1 - row["seating"])
    if row.get("a_diff") is not None:
        flip["a_diff"] = -row["a_diff"]
    return flip


def merge_tournaments(settings: MergeSettings) -> MergeResult:
    """Merge the tournament folders of ``settings`` (see the module docstring); write the
    merged tables when ``settings.out`` is set."""
    agents: list[str] = []
    pairs: list[tuple[str, str]] = []
    sources: dict[tuple[str, str], list[str]] = {}
    options: dict[tuple[str, str], dict[str, Any]] = {}
    first_source: dict[tuple[str, str], str] = {}
    seen_deals: dict[tuple[str, str], set[tuple[int, ...]]] = {}
    games: list[dict[str, Any]] = []
    priced: list[dict[str, Any]] = []
    priced_games: dict[tuple[str, str], int] = {}
    unpriced_runs: list[str] = []
    for number, run in enumerate(settings.runs):
        identity, rows = read_tournament(run, _GAME_COLUMNS, _NULLABLE)
        _check_finished_games(run, rows)
        analysed = _analysed_games(run)
        if analysed is None:
            unpriced_runs.append(str(run))
        used: dict[tuple[str, str], dict[Any, list[dict[str, Any]]]] = {}
        for row in rows:
            price = (analysed or {}).get((row["a"], row["b"], row["deal"], row["seating"]))
            if price is not None and (price["alex"], price["bob"]) != (row["alex"], row["bob"]):
                raise TensorCFRError(
                    f"{Path(run) / 'price_games.parquet'} does not match {run}'s games (deal "
                    f"{row['deal']}, seating {row['seating']}: {price['alex']} against "
                    f"{price['bob']} there, {row['alex']} against {row['bob']} in the games "
                    "table); run `tensorcfr pasur tournament-price` on that folder again")
            row = dict(row, _price=price)
            key = (row["a"], row["b"])
            if key not in sources and (key[1], key[0]) in sources:
                key, row = (key[1], key[0]), _turned(row)
            if key not in used:  # the pair's first row in this folder: its options
                mine = {name: {o: identity.get(o) for o in _reads(name)} for name in key}
                if key not in sources:
                    agents.extend(name for name in key if name not in agents)
                    pairs.append(key)
                    sources[key] = []
                    seen_deals[key] = set()
                    options[key] = mine
                    first_source[key] = str(run)
                elif mine != options[key]:
                    differ = sorted(f"{name} {o}" for name in key for o in mine[name]
                                    if mine[name][o] != options[key][name][o])
                    raise TensorCFRError(
                        f"{key[0]} vs {key[1]} was played with other options in {run} than "
                        f"in {first_source[key]} ({', '.join(differ)}): merge runs whose "
                        "agents played alike")
            used.setdefault(key, {}).setdefault(row["deal"], []).append(row)
        # (a deal's two games come from this folder; a deal another folder gave both games
        # of is left out)
        for key, deals in used.items():
            added = False
            for deal_rows in deals.values():
                cards = tuple(deal_rows[0]["deal_cards"])
                if cards in seen_deals[key]:
                    continue
                if sum(r["status"] == "ok" for r in deal_rows) == 2:  # (counts: taken)
                    seen_deals[key].add(cards)
                games.extend(dict(r, deal=(number, r["deal"])) for r in deal_rows)
                for r in deal_rows:
                    if r["status"] == "ok" and r["_price"] is not None:
                        priced.append({"a": key[0], "b": key[1], "deal": cards,
                                       "alex": r["alex"], "bob": r["bob"],
                                       "alex_loss": r["_price"]["alex_loss"],
                                       "bob_loss": r["_price"]["bob_loss"]})
                        priced_games[key] = priced_games.get(key, 0) + 1
                added = True
            if added:
                sources[key].append(str(run))
    summaries = summarize_pairs(pairs, games)
    result = MergeResult(agents=agents, pairs=summaries, sources=sources, options=options,
                         runs=[str(r) for r in settings.runs], out=settings.out,
                         priced_games=priced_games, unpriced_runs=unpriced_runs)
    if priced:
        result.by_round = price_by_round(priced, pairs)
        result.paired = paired_differences(priced, pairs)
    if settings.out is not None:
        _write(result, settings.out)
    return result


def _check_finished_games(run: Path, rows: list[dict[str, Any]]) -> None:
    """A finished game (status ok) has its result; one-line error naming the table."""
    from tensorcfr.games.pasur.tournament import GAMES_TABLE
    from tensorcfr.utils.reading import damaged

    for number, row in enumerate(rows):
        if row["status"] == "ok" and row["a_diff"] is None:
            raise damaged(Path(run) / GAMES_TABLE, "tournament games table",
                          f"column 'a_diff', row {number}: a finished game without its result")


def _analysed_games(run: Path) -> dict[tuple[str, str, int, int], dict[str, Any]] | None:
    """A folder's analysed games by (a, b, deal, seating), or None without an analysis."""
    rows = read_price_games(run)
    if rows is None:
        return None
    return {(r["a"], r["b"], r["deal"], r["seating"]): r for r in rows}


def _write(result: MergeResult, out: Path) -> None:
    """``summary.parquet``, ``cross_table.png``, ``merge.json`` and, with analysed games,
    the two price tables into ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.utils.io import atomic_path

    out.mkdir(parents=True, exist_ok=True)
    schema = summary_schema().append(pa.field("sources", pa.list_(pa.string()))) \
        .append(pa.field("options", pa.string()))
    rows = [p.table_row() | {"sources": result.sources[(p.a, p.b)],
                             "options": json.dumps(result.options[(p.a, p.b)],
                                                   sort_keys=True)}
            for p in result.pairs]
    with atomic_path(out / SUMMARY_TABLE) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), str(tmp))
    draw_cross_table(result.agents, result.pairs, out / CROSS_TABLE)
    if result.priced:
        write_price_aggregates(out, result.by_round, result.paired)
    else:  # no stale tables of an earlier merge into this folder
        for name in (PRICE_BY_ROUND_TABLE, PRICE_PAIRED_TABLE):
            (out / name).unlink(missing_ok=True)
    with atomic_path(out / MERGE_FILE) as tmp:
        tmp.write_text(json.dumps({"runs": result.runs}, indent=1) + "\n", encoding="utf-8")
