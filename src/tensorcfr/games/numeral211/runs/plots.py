"""PNG plots of Numeral211 solving curves, shared by the full-game and abstract solve runs.

* :func:`plot_exploitability_curve`: exploitability (mb/g, thousandths of the ante per game)
  against the iteration, both axes logarithmic;
* :func:`plot_floor_curve`: a CFR-BR floor curve, the average and the current strategies'
  ``(b1(sigma_0) + b0(sigma_1)) / 2`` in mb/g.

Curves are lists of the dicts the runs append (``iteration``, ``mbg`` / ``average_mbg``,
``current_mbg``).  Files are written atomically.  Nothing here knows how a curve was made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

__all__ = ["plot_exploitability_curve", "plot_floor_curve"]


def _save(fig: Any, path: str | Path) -> None:
    import matplotlib.pyplot as plt

    from tensorcfr.utils.io import atomic_path

    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def _axes() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6, 4))


def plot_exploitability_curve(curve: Sequence[dict[str, Any]], path: str | Path,
                              title: str) -> None:
    """PNG at ``path`` of ``curve`` points' ``mbg`` against ``iteration`` (log-log)."""
    fig, ax = _axes()
    ax.plot([p["iteration"] for p in curve], [p["mbg"] for p in curve], marker="o", ms=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("exploitability (mb/g, thousandths of the ante)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    _save(fig, path)


def plot_floor_curve(curve: Sequence[dict[str, Any]], path: str | Path, title: str) -> None:
    """PNG at ``path`` of a CFR-BR curve: ``average_mbg`` and ``current_mbg`` against the
    iteration (the floor axis logarithmic)."""
    fig, ax = _axes()
    its = [p["iteration"] for p in curve]
    ax.plot(its, [p["average_mbg"] for p in curve], marker="o", ms=3, label="average")
    ax.plot(its, [p["current_mbg"] for p in curve], marker=".", ms=3, label="current")
    ax.set_yscale("log")
    ax.set_xlabel("CFR-BR iteration")
    ax.set_ylabel("(b1(sigma_0) + b0(sigma_1)) / 2, mb/g")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    _save(fig, path)
