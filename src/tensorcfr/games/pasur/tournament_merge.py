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

Nothing is written into the tournament folders.  With an output folder, ``summary.parquet``
(the tournament's columns plus ``sources``, ``options``), ``cross_table.png`` and
``merge.json`` (the folders, in order) are written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AGENTS, AgentOptions
from tensorcfr.games.pasur.tournament import (CROSS_TABLE, SUMMARY_TABLE, PairSummary,
                                              draw_cross_table, read_tournament,
                                              summarize_pairs, summary_schema)

__all__ = ["MAX_MERGED_RUNS", "MERGE_FILE", "MergeResult", "MergeSettings",
           "merge_tournaments"]

MAX_MERGED_RUNS = 256
"""Most tournament folders one merge reads."""
MERGE_FILE = "merge.json"

_GAME_COLUMNS = {"a": str, "b": str, "deal": int, "seating": int, "alex": str, "bob": str,
                 "status": str, "deal_cards": list}
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

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``pairs`` (each :meth:`PairSummary.as_dict` plus ``sources`` and
        ``options``), ``agents``, ``runs`` and the written files (or None)."""
        written = self.out is not None
        return {"pairs": [p.as_dict() | {"sources": self.sources[(p.a, p.b)],
                                         "options": self.options[(p.a, p.b)]}
                          for p in self.pairs],
                "agents": list(self.agents), "runs": list(self.runs),
                "out": str(self.out) if written else None,
                "summary_parquet": str(self.out / SUMMARY_TABLE) if written else None,
                "cross_table_png": str(self.out / CROSS_TABLE) if written else None}


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
    for number, run in enumerate(settings.runs):
        identity, rows = read_tournament(run, _GAME_COLUMNS, _NULLABLE)
        used: dict[tuple[str, str], dict[Any, list[dict[str, Any]]]] = {}
        for row in rows:
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
                added = True
            if added:
                sources[key].append(str(run))
    summaries = summarize_pairs(pairs, games)
    result = MergeResult(agents=agents, pairs=summaries, sources=sources, options=options,
                         runs=[str(r) for r in settings.runs], out=settings.out)
    if settings.out is not None:
        _write(result, settings.out)
    return result


def _write(result: MergeResult, out: Path) -> None:
    """``summary.parquet``, ``cross_table.png`` and ``merge.json`` into ``out``."""
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
    with atomic_path(out / MERGE_FILE) as tmp:
        tmp.write_text(json.dumps({"runs": result.runs}, indent=1) + "\n", encoding="utf-8")
