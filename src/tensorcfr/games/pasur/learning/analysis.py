"""The paper's Figure 14 and Table 16 from batch results (``tensorcfr pasur analyze``).

Input: one or more batch folders (``tensorcfr pasur batch --out DIR``); their
``decks.parquet`` tables are joined on ``deck`` (for a column present in several folders the
first folder's non-null value wins, so an ``exact`` batch of 500 decks and a ``dcfr`` batch
of 100 decks combine into one table).

Outputs, in the ``out`` folder:

* ``figure14.png``: three panels over the decks: near-Nash vs near-Nash, near-Nash vs Random,
  Random vs near-Nash; the fair value (P(Alex wins) + P(tie) / 2) of each deck for every
  near-Nash player the batches hold: ``exact`` (the exact solver's players: the exact-vs-exact
  fair value is 1, 1/2 or 0 by the sign of the exact value), ``table`` (the DCFR average
  strategy) and ``model`` (the per-deck XGBoost policy model); with ``paper_mm`` the paper's
  own ``MM.csv`` values (its per-deck models, ties counted as Alex's wins) are overlaid.
* ``table16.md``: the paper's Table 16: decks grouped by Alex's Jacks (0..4); per group a
  scikit-learn decision tree (regression, squared error) on Alex's clubs; each leaf gives a
  clubs range, its number of decks and the mean target. One table per target: the near-Nash
  fair values, the exact-player fair value and the exact game value in points (which the paper
  could not compute). The trees themselves follow as text.
  Every mean comes with its standard deviation and deck count. Then the comparison with the
  paper's Table 16 *at the paper's own thresholds* (:data:`PAPER_TABLE16`): for each of its
  leaves, our exact play in both fair-value conventions (P(win) + P(tie)/2, and P(win) +
  P(tie) as the paper's code counts ties) and in points, our DCFR-table and model self-play
  (the paper's values come from its models' self-play, so these are the like-for-like
  series), and the paper's own ``MM.csv`` on the decks it covers; leaves with fewer than
  :data:`SMALL_SAMPLE` decks are marked as too small to conclude.
* ``analysis.json``: the same numbers (per-series means, leaves, trees, the comparison with
  the paper), machine-readable.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Sequence

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.utils.reading import check_input_folder

__all__ = ["PAPER_TABLE16", "SERIES", "SMALL_SAMPLE", "TARGETS", "analyze_batches",
           "load_batches"]

FIGURE = "figure14.png"
TABLE_MD = "table16.md"
RESULT_JSON = "analysis.json"

# (column, label) of the three Figure 14 panels for each near-Nash player
SERIES: dict[str, tuple[str, str, str]] = {
    "exact": ("exact_fair_value", "exact_vs_random_fair_value", "random_vs_exact_fair_value"),
    "table": ("table_vs_table_fair_value", "table_vs_random_fair_value",
              "random_vs_table_fair_value"),
    "model": ("model_vs_model_fair_value", "model_vs_random_fair_value",
              "random_vs_model_fair_value"),
}
PANELS = ("near-Nash vs near-Nash", "near-Nash vs Random", "Random vs near-Nash")
SERIES_LABEL = {"exact": "exact solver", "table": "DCFR table", "model": "XGBoost model",
                "paper": "paper (its models, ties = wins)"}
SERIES_STYLE = {"exact": ("tab:blue", "o"), "table": ("tab:orange", "s"),
                "model": ("tab:green", "^"), "paper": ("tab:red", "x")}

# The paper's Table 16 leaves this project has (quoted in its docs and issues): Alex's Jacks,
# the paper's clubs threshold, and its fair value on each side (None: not quoted here). The
# paper's values come from self-play of its per-deck models.
PAPER_TABLE16: tuple[dict[str, Any], ...] = (
    {"jacks": 0, "threshold": 7, "at_most": 0.06, "above": None},
    {"jacks": 4, "threshold": 4, "at_most": 0.66, "above": 0.85},
)
SMALL_SAMPLE = 30  # fewer decks than this in a leaf: too few to conclude

# Table 16 targets: column -> (title, unit format)
TARGETS: dict[str, tuple[str, str]] = {
    "table_vs_table_fair_value": ("fair value, DCFR table vs DCFR table (self-play)", "{:.2f}"),
    "model_vs_model_fair_value": ("fair value, XGBoost model vs model (self-play)", "{:.2f}"),
    "exact_fair_value": ("fair value, exact vs exact (1 / 0.5 / 0 by the sign of the exact "
                         "value)", "{:.2f}"),
    "exact_value": ("exact game value (points, Alex minus Bob)", "{:+.2f}"),
}


def load_batches(folders: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The ``ok`` rows of the batches' ``decks.parquet`` tables, joined on ``deck``."""
    if not folders:
        raise TensorCFRError("give at least one batch folder")
    merged: dict[int, dict[str, Any]] = {}
    for folder in folders:
        path = Path(folder) / "decks.parquet"
        check_input_folder(folder, "batch folder")
        if not os.path.lexists(path):
            raise TensorCFRError(f"{path} is missing: is {folder} a `tensorcfr pasur batch` "
                                 "folder?")
        rows = read_batch_table(path)
        for row in rows:
            if row.get("status", "ok") != "ok" or not isinstance(row.get("deck"), int):
                continue
            into = merged.setdefault(int(row["deck"]), {})
            for key, value in row.items():
                if into.get(key) is None and value is not None:
                    into[key] = value
    return [merged[d] for d in sorted(merged)]


_TEXT_COLUMNS = ("status", "error")
_INT_COLUMNS = ("deck", "alex_jacks", "alex_clubs", "exact_value")
MAX_BATCH_TABLE_BYTES = 4 * 2**30
"""Largest ``decks.parquet`` read."""
MAX_MM_TABLE_BYTES = 64 * 2**20
"""Largest ``MM.csv`` read (the paper's is under 1 MiB)."""


def read_batch_table(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a batch's ``decks.parquet``, checked: ``deck`` present; ``status`` and
    ``error`` text; ``deal`` a list; every other column numbers (integers for ``deck``,
    ``alex_jacks``, ``alex_clubs``, ``exact_value``), NaN read as missing (None), infinity
    refused. Raises :class:`CorruptFileError` naming the file and the column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.utils.reading import check_input_file, damaged, reading

    what = "batch table"
    target = check_input_file(path, what, MAX_BATCH_TABLE_BYTES)
    with reading(target, what):
        table = pq.read_table(str(target))
        if "deck" not in table.column_names:
            raise damaged(target, what, "column 'deck' is missing")
        for field in table.schema:
            kind = field.type
            if field.name in _TEXT_COLUMNS:
                ok = pa.types.is_string(kind) or pa.types.is_large_string(kind) \
                    or pa.types.is_null(kind)
            elif field.name == "deal":
                ok = pa.types.is_list(kind) or pa.types.is_large_list(kind) \
                    or pa.types.is_null(kind)
            elif field.name in _INT_COLUMNS:
                ok = pa.types.is_integer(kind) or pa.types.is_null(kind)
            else:
                ok = pa.types.is_integer(kind) or pa.types.is_floating(kind) \
                    or pa.types.is_null(kind)
            if not ok:
                raise damaged(target, what, f"column {field.name!r} is of type {kind}, not "
                              "the numbers a batch writes")
        rows = table.to_pylist()
    for number, row in enumerate(rows):
        for key, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                if math.isnan(value):
                    row[key] = None
                else:
                    raise damaged(target, what, f"column {key!r}, row {number} is {value}")
    return rows


def _values(rows: list[dict[str, Any]], column: str) -> tuple[list[int], list[float]]:
    decks, values = [], []
    for row in rows:
        value = row.get(column)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            decks.append(int(row["deck"]))
            values.append(float(value))
    return decks, values


def _read_paper_mm(path: str | os.PathLike[str]) -> dict[int, dict[str, float]]:
    """The paper's ``MM.csv``: per deck ``XX_WINS`` (percent, ties as wins) and
    ``XX_SCORES``."""
    import csv
    import io

    from tensorcfr.utils.reading import damaged, read_input_bytes

    what = "the paper's MM table"
    raw = read_input_bytes(path, what, MAX_MM_TABLE_BYTES)
    out: dict[int, dict[str, float]] = {}
    line = 1
    try:
        reader = csv.DictReader(io.StringIO(raw.decode("utf-8"), newline=""))
        if reader.fieldnames is None or "Deck" not in reader.fieldnames:
            raise damaged(path, what, "its header has no Deck column (the paper's MM.csv "
                          "starts with Deck,MM_WINS,...)")
        for line, rec in enumerate(reader, start=2):
            if None in rec:
                raise ValueError("more fields than the header")
            deck = int(rec["Deck"] or "")
            values = {k: float(v) for k, v in rec.items()
                      if k and k != "Deck" and v not in ("", None)}
            if deck < 0 or not all(math.isfinite(v) for v in values.values()):
                raise ValueError("a negative deck or a value that is not finite")
            out[deck] = values
    except CorruptFileError:
        raise
    except (ValueError, TypeError, csv.Error, UnicodeDecodeError) as exc:
        raise damaged(path, what, f"line {line}: {' '.join(str(exc).split())[:120]}") from None
    return out


def _figure(rows: list[dict[str, Any]], path: Path, paper: dict[int, dict[str, float]] | None
            ) -> dict[str, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tensorcfr.utils.io import atomic_path

    fig, axes = plt.subplots(3, 1, figsize=(14, 10), sharex=True)
    stats: dict[str, Any] = {}
    paper_cols = ("MM_WINS", "MR_WINS", "RM_WINS")
    for p, (ax, title) in enumerate(zip(axes, PANELS)):
        panel: dict[str, Any] = {}
        for name, columns in SERIES.items():
            decks, values = _values(rows, columns[p])
            if not decks:
                continue
            color, marker = SERIES_STYLE[name]
            mean = sum(values) / len(values)
            ax.scatter(decks, values, s=10 if len(decks) > 150 else 16, alpha=0.6, color=color,
                       marker=marker,
                       label=f"{SERIES_LABEL[name]}: {len(decks)} decks, mean {mean:.3f}")
            ax.axhline(mean, color=color, lw=0.8, ls="--")
            panel[name] = {"column": columns[p], "decks": len(decks), "mean": mean}
        if paper:
            decks = sorted(d for d in paper if paper_cols[p] in paper[d])
            values = [paper[d][paper_cols[p]] / 100.0 for d in decks]
            if decks:
                color, marker = SERIES_STYLE["paper"]
                mean = sum(values) / len(values)
                ax.scatter(decks, values, s=14, alpha=0.7, color=color, marker=marker,
                           label=f"{SERIES_LABEL['paper']}: {len(decks)} decks, mean {mean:.3f}")
                panel["paper"] = {"column": paper_cols[p], "decks": len(decks), "mean": mean}
        ax.set_title(f"({'abc'[p]}) {title}", loc="left", fontsize=11)
        ax.set_ylabel("fair value of the deck")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        if panel:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                      borderaxespad=0.0)
        stats[title] = panel
    axes[-1].set_xlabel("deck (row of the deck file)")
    fig.suptitle("Pasur: fair value of each deck = P(Alex wins) + P(tie)/2 (Figure 14)",
                 fontsize=12)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return stats


def _fmt_range(lo: float, hi: float, max_clubs: int) -> str:
    lo_i = int(math.floor(lo)) + 1 if lo > -math.inf else 0
    hi_i = int(math.floor(hi)) if hi < math.inf else max_clubs
    if lo == -math.inf and hi == math.inf:
        return "any"
    if lo == -math.inf:
        return f"<= {hi_i}"
    if hi == math.inf:
        return f"> {lo_i - 1}"
    return f"{lo_i}..{hi_i}"


def _leaves(tree: Any) -> list[tuple[float, float, int]]:
    """(low, high, node) of each leaf: clubs in (low, high]."""
    t = tree.tree_
    out = []

    def walk(node: int, lo: float, hi: float) -> None:
        if t.children_left[node] == -1:
            out.append((lo, hi, node))
            return
        thr = float(t.threshold[node])
        walk(int(t.children_left[node]), lo, min(hi, thr))
        walk(int(t.children_right[node]), max(lo, thr), hi)

    walk(0, -math.inf, math.inf)
    return out


def _table16(rows: list[dict[str, Any]], max_depth: int, min_leaf: int
             ) -> dict[str, Any]:
    import numpy as np
    from sklearn.tree import DecisionTreeRegressor, export_text

    result: dict[str, Any] = {}
    for column in TARGETS:
        groups = []
        have = [r for r in rows if r.get(column) is not None and r.get("alex_jacks") is not None
                and r.get("alex_clubs") is not None]
        if not have:
            continue
        for jacks in range(5):
            sel = [r for r in have if int(r["alex_jacks"]) == jacks]
            entry: dict[str, Any] = {"jacks": jacks, "decks": len(sel)}
            if sel:
                x = np.array([[float(r["alex_clubs"])] for r in sel])
                y = np.array([float(r[column]) for r in sel])
                entry["mean"] = float(y.mean())
                entry["std"] = float(y.std(ddof=1)) if len(y) > 1 else 0.0
                tree = DecisionTreeRegressor(max_depth=max_depth,
                                             min_samples_leaf=min(min_leaf, max(1, len(sel))),
                                             random_state=0).fit(x, y)
                leaves = []
                for lo, hi, node in _leaves(tree):
                    inside = (x[:, 0] > lo) & (x[:, 0] <= hi)
                    leaves.append({"clubs": _fmt_range(lo, hi, 13),
                                   "clubs_low_exclusive": None if lo == -math.inf else lo,
                                   "clubs_high_inclusive": None if hi == math.inf else hi,
                                   "decks": int(inside.sum()),
                                   "mean": float(y[inside].mean()),
                                   "std": float(y[inside].std(ddof=1)) if inside.sum() > 1
                                   else 0.0,
                                   "tree_value": float(tree.tree_.value[node].ravel()[0])})
                entry["leaves"] = leaves
                entry["tree"] = export_text(tree, feature_names=["alex_clubs"], decimals=3)
            groups.append(entry)
        result[column] = {"title": TARGETS[column][0], "decks": len(have), "groups": groups}
    return result


def _series_values(rows: list[dict[str, Any]], paper: dict[int, dict[str, float]] | None
                   ) -> list[tuple[str, str, str, dict[int, float]]]:
    """(name, player, convention, {deck: value}) of every series set against the paper's
    Table 16: exact play (fair value in both conventions, and points), the DCFR-table and
    model self-play (both conventions), and the paper's own MM.csv (ties as wins)."""
    out: list[tuple[str, str, str, dict[int, float]]] = []
    exact = {int(r["deck"]): float(r["exact_value"]) for r in rows
             if r.get("exact_value") is not None}
    if exact:
        out.append(("exact_half_tie", "exact play", "win + tie/2",
                    {d: 1.0 if v > 0 else (0.5 if v == 0 else 0.0) for d, v in exact.items()}))
        out.append(("exact_tie_win", "exact play", "win + tie",
                    {d: 1.0 if v >= 0 else 0.0 for d, v in exact.items()}))
    for player, prefix in (("DCFR table self-play", "table_vs_table"),
                           ("model self-play", "model_vs_model")):
        half, full = {}, {}
        for r in rows:
            win, tie = r.get(f"{prefix}_alex_win_rate"), r.get(f"{prefix}_tie_rate")
            if win is None or tie is None:
                continue
            half[int(r["deck"])] = float(win) + float(tie) / 2
            full[int(r["deck"])] = float(win) + float(tie)
        if half:
            out.append((f"{prefix}_half_tie", player, "win + tie/2", half))
            out.append((f"{prefix}_tie_win", player, "win + tie", full))
    if paper:
        mm = {d: v["MM_WINS"] / 100.0 for d, v in paper.items() if "MM_WINS" in v}
        if mm:
            out.append(("paper_mm", "paper's MM.csv (its models)", "win + tie", mm))
    if exact:
        out.append(("exact_points", "exact play", "points (Alex - Bob)", exact))
    return out


def _paper_table16(rows: list[dict[str, Any]], paper: dict[int, dict[str, float]] | None
                   ) -> list[dict[str, Any]]:
    """Each leaf of :data:`PAPER_TABLE16` with every series' deck count, mean and std."""
    import numpy as np

    counts = {int(r["deck"]): (r.get("alex_jacks"), r.get("alex_clubs")) for r in rows}
    series = _series_values(rows, paper)
    out = []
    for split in PAPER_TABLE16:
        for side, paper_value in (("at_most", split["at_most"]), ("above", split["above"])):
            def inside(deck: int) -> bool:
                jacks, clubs = counts.get(deck, (None, None))
                if jacks is None or clubs is None or int(jacks) != split["jacks"]:
                    return False
                return (int(clubs) <= split["threshold"]) == (side == "at_most")
            leaf = {"jacks": split["jacks"],
                    "clubs": (f"<= {split['threshold']}" if side == "at_most"
                              else f"> {split['threshold']}"),
                    "paper": paper_value, "series": []}
            for name, player, convention, values in series:
                y = np.array([v for d, v in values.items() if inside(d)], dtype=float)
                entry = {"name": name, "player": player, "convention": convention,
                         "decks": int(y.size)}
                if y.size:
                    entry["mean"] = float(y.mean())
                    entry["std"] = float(y.std(ddof=1)) if y.size > 1 else 0.0
                leaf["series"].append(entry)
            out.append(leaf)
    return out


def _paper_t16_markdown(paper_t16: list[dict[str, Any]]) -> list[str]:
    lines = ["## Against the paper's Table 16, at the paper's thresholds", "",
             "The paper's leaves quoted in this project (`PAPER_TABLE16`; its other leaves are "
             "not in the reference data here). The paper's values are fair values of its "
             "per-deck models' self-play, and its code counts ties as Alex's wins; so the "
             "like-for-like rows are the model (and DCFR-table) self-play in the `win + tie` "
             "convention. Exact play is shown in both conventions and in points. "
             f"(few) = fewer than {SMALL_SAMPLE} decks: too few to conclude.", "",
             "| Alex's Jacks | Alex's clubs | paper | series | convention | decks | mean | std |",
             "|---:|---|---:|---|---|---:|---:|---:|"]
    for leaf in paper_t16:
        paper = "" if leaf["paper"] is None else f"{leaf['paper']:.2f}"
        for k, s in enumerate(leaf["series"]):
            head = f"| {leaf['jacks']} | {leaf['clubs']} | {paper} " if k == 0 else "| | | "
            if not s["decks"]:
                lines.append(f"{head}| {s['player']} | {s['convention']} | 0 | | |")
                continue
            fmt = "{:+.2f}" if s["name"] == "exact_points" else "{:.2f}"
            small = " (few)" if s["decks"] < SMALL_SAMPLE else ""
            lines.append(f"{head}| {s['player']} | {s['convention']} | {s['decks']}{small} | "
                         f"{fmt.format(s['mean'])} | {s['std']:.2f} |")
    return lines + [""]


def _markdown(rows: list[dict[str, Any]], table16: dict[str, Any], figure: dict[str, Any],
              folders: Sequence[str], max_depth: int, min_leaf: int,
              paper_cmp: dict[str, Any] | None,
              paper_t16: list[dict[str, Any]] | None = None) -> str:
    lines = ["# Pasur: fair value by Alex's Jacks and clubs (Table 16)", "",
             f"From {len(rows)} decks of the batch folder(s) "
             + ", ".join(f"`{f}`" for f in folders)
             + ". Written by `tensorcfr pasur analyze`.", "",
             f"Decks are grouped by the number of Jacks Alex is dealt (0-4, of his 24 cards); "
             f"in each group a decision tree (scikit-learn `DecisionTreeRegressor`, squared "
             f"error, max depth {max_depth}, at least {min_leaf} decks per leaf) splits on the "
             f"number of clubs Alex is dealt. Fair value = P(Alex wins) + P(tie)/2 in these "
             f"tables (and in Figure 14); the comparison with the paper's `MM.csv` and its "
             f"Table 16 also gives P(win) + P(tie), the paper's convention. std = standard "
             f"deviation over the decks; (few) = fewer than {SMALL_SAMPLE} decks, too few to "
             f"conclude (a fitted split on so few decks may point either way).", ""]
    if paper_t16:
        lines += _paper_t16_markdown(paper_t16)
    for column, block in table16.items():
        fmt = TARGETS[column][1]
        lines += [f"## {block['title']}", "", f"`{column}`, {block['decks']} decks.", "",
                  "| Alex's Jacks | decks | mean | std | Alex's clubs | decks in leaf "
                  "| mean in leaf | std in leaf |",
                  "|---:|---:|---:|---:|---|---:|---:|---:|"]
        for g in block["groups"]:
            if not g["decks"]:
                lines.append(f"| {g['jacks']} | 0 | | | | | | |")
                continue
            for k, leaf in enumerate(g["leaves"]):
                head = (f"| {g['jacks']} | {g['decks']} | {fmt.format(g['mean'])} | "
                        f"{abs(g['std']):.2f} " if k == 0 else "| | | | ")
                small = " (few)" if leaf["decks"] < SMALL_SAMPLE else ""
                lines.append(f"{head}| {leaf['clubs']} | {leaf['decks']}{small} | "
                             f"{fmt.format(leaf['mean'])} | {leaf['std']:.2f} |")
        lines.append("")
    lines += ["## Figure 14 series (means over decks)", "",
              "| panel | player | column | decks | mean fair value |", "|---|---|---|---:|---:|"]
    for panel, series in figure.items():
        for name, s in series.items():
            lines.append(f"| {panel} | {SERIES_LABEL[name]} | `{s['column']}` | {s['decks']} | "
                         f"{s['mean']:.3f} |")
    lines.append("")
    if paper_cmp:
        lines += ["## Against the paper's MM.csv (same decks)", "",
                  "The paper counts ties as Alex's wins, so our side of the comparison is "
                  "P(win) + P(tie) here.", "",
                  "| matchup | ours | paper | decks | mean ours | mean paper | mean abs diff | "
                  "correlation |", "|---|---|---|---:|---:|---:|---:|---:|"]
        for c in paper_cmp["rows"]:
            lines.append(f"| {c['matchup']} | `{c['ours']}` | `{c['paper']}` | {c['decks']} | "
                         f"{c['mean_ours']:.3f} | {c['mean_paper']:.3f} | "
                         f"{c['mean_abs_diff']:.3f} | {c['correlation']:.3f} |")
        lines.append("")
    lines += ["## Decision trees", ""]
    for column, block in table16.items():
        for g in block["groups"]:
            if g.get("tree"):
                lines += [f"`{column}`, {g['jacks']} Jacks ({g['decks']} decks):", "", "```",
                          g["tree"].rstrip(), "```", ""]
    return "\n".join(lines)


def _paper_comparison(rows: list[dict[str, Any]], paper: dict[int, dict[str, float]]
                      ) -> dict[str, Any]:
    import numpy as np

    pairs = [("model vs model", "model_vs_model", "MM_WINS"),
             ("model vs random", "model_vs_random", "MR_WINS"),
             ("random vs model", "random_vs_model", "RM_WINS"),
             ("table vs table", "table_vs_table", "MM_WINS"),
             ("random vs random", "random_vs_random", "RR_WINS")]
    out = []
    for label, ours, theirs in pairs:
        a, b = [], []
        for r in rows:
            d = int(r["deck"])
            win, tie = r.get(f"{ours}_alex_win_rate"), r.get(f"{ours}_tie_rate")
            if win is None or tie is None or d not in paper or theirs not in paper[d]:
                continue
            a.append(win + tie)
            b.append(paper[d][theirs] / 100.0)
        if len(a) < 2:
            continue
        x, y = np.array(a), np.array(b)
        corr = float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else float("nan")
        out.append({"matchup": label, "ours": f"{ours}_alex_win_rate + tie_rate",
                    "paper": theirs, "decks": len(a), "mean_ours": float(x.mean()),
                    "mean_paper": float(y.mean()), "mean_abs_diff": float(abs(x - y).mean()),
                    "correlation": corr})
    return {"rows": out}


def analyze_batches(folders: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                    max_depth: int = 1, min_leaf: int = 5,
                    paper_mm: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Build Figure 14, Table 16 and ``analysis.json`` from batch folders (module docstring).

    Args:
        folders: batch folders; their tables are joined on ``deck``.
        out: output folder (created).
        max_depth: depth of each Jacks group's decision tree (1 = one split, as in the paper).
        min_leaf: fewest decks in a leaf.
        paper_mm: optional path of the paper's ``MM.csv`` to overlay and compare.

    Returns:
        JSON-ready summary with the paths written (``figure14_png``, ``table16_md``,
        ``analysis_json``), the deck count, Figure 14 means and the Table 16 leaves.
    """
    from tensorcfr.utils.checks import check_int_range
    from tensorcfr.utils.io import check_output_dir, write_error, write_json_atomic, \
        write_text_atomic

    check_int_range(max_depth, "--max-depth", 1, 64)
    check_int_range(min_leaf, "--min-leaf", 1, 10**9)
    check_output_dir(out, "--out")
    rows = load_batches(folders)
    if not rows:
        raise TensorCFRError("the batch folders hold no finished decks yet")
    paper = _read_paper_mm(paper_mm) if paper_mm is not None else None
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise TensorCFRError(f"--out {out_dir} exists and is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(out_dir, exc) from None
    # every number first, the files after: a failure leaves no figure behind
    table16 = _table16(rows, max_depth, min_leaf)
    paper_cmp = _paper_comparison(rows, paper) if paper else None
    paper_t16 = _paper_table16(rows, paper)
    figure = _figure(rows, out_dir / FIGURE, paper)
    names = [str(f) for f in folders]
    write_text_atomic(out_dir / TABLE_MD, _markdown(rows, table16, figure, names, max_depth,
                                                    min_leaf, paper_cmp, paper_t16))
    result = {"folders": names, "decks": len(rows),
              "figure14_png": str(out_dir / FIGURE), "table16_md": str(out_dir / TABLE_MD),
              "analysis_json": str(out_dir / RESULT_JSON), "max_depth": max_depth,
              "min_leaf": min_leaf, "figure14": figure, "table16": table16,
              "paper_comparison": paper_cmp, "paper_table16": paper_t16}
    write_json_atomic(out_dir / RESULT_JSON, result)
    return result
