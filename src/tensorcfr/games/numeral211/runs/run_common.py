"""What the Numeral211 solve runs (:mod:`.run_solve`, :mod:`.run_abstract_solve`) share: the
settings base (:class:`RunSettings`: the options both take, checked once), the progress event
they report, and their sampling mode.

A run reports :class:`RunProgress` events to an optional callback: one ``"start"`` event
before the first iteration (with the iteration a resumed run starts from), then one
``"iteration"`` event after every iteration.  Exploitabilities are in chips per game and in
mb/g (thousandths of the ante per game).  Nothing here prints, parses options or knows a
terminal; what a caller shows of the events is its own affair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, cast

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.config import STORAGES, GameConfig, Storage

__all__ = ["ROUND_NAMES", "RunSettings", "RunProgress", "ProgressCallback", "DTYPES",
           "STORAGE_CHOICES", "check_dtype", "check_storage", "check_positive_minutes",
           "check_output_files", "sampling_of", "sampling_dict"]

ROUND_NAMES = ("preflop", "flop", "turn")
"""Names of Numeral211's betting rounds, in order (keys of per-round JSON entries)."""

DTYPES = ("float32", "float64")
"""Float types a solve run takes, by name."""

STORAGE_CHOICES = STORAGES
"""Solver layouts (:data:`~..game.config.Storage`): one entry per suit-isomorphic class
(default) or per (board, hand) cell."""


@dataclass(frozen=True)
class RunSettings:
    """The settings every Numeral211 solve run takes (the options ``numeral211 solve`` has
    with and without ``--abstraction`` / ``--embedding``), checked when built; the full-game
    :class:`~.run_solve.SolveSettings` and the abstract
    :class:`~.run_abstract_solve.AbstractSolveSettings` add their own.

    ``game``: the variant (None: the default game, the file's or the checkpoint's, as the run
    says).  ``algo``: the CFR variant (each run says which it takes).  ``iterations``: the
    total to reach, counted from the start (a resumed run continues up to it);
    ``eval_every``: exact exploitability every K iterations (0: only at the end).  ``save``:
    checkpoint file, written every ``checkpoint_minutes`` and at the end; ``resume``: the
    checkpoint to continue (bitwise).  ``out``: strategy file; ``plot``: PNG of the curve;
    ``curve``: JSON of the curve.  ``dtype``: ``"float32"`` or ``"float64"``; ``device``: a
    torch device name; ``max_memory``: a limit such as ``"16G"`` (None: what is free now);
    ``threads``: torch threads (None: the project default, 1).  ``sample_boards`` /
    ``seed``: public chance sampling (None: exact full sweeps).  ``storage``: ``"classes"``
    (one entry per suit-isomorphic class, the default) or ``"cells"`` (per (board, hand);
    sampled runs always use cells).  Value checks run here; file and device checks when the
    run starts."""

    game: Optional[GameConfig] = None
    algo: str = "cfr+"
    iterations: int = 100
    eval_every: int = 0
    save: Optional[str] = None
    resume: Optional[str] = None
    out: Optional[str] = None
    plot: Optional[str] = None
    curve: Optional[str] = None
    checkpoint_minutes: float = 10.0
    dtype: str = "float32"
    device: str = "cpu"
    max_memory: Optional[str] = None
    threads: Optional[int] = None
    sample_boards: Optional[int] = None
    seed: int = 0
    storage: Storage = "classes"

    def __post_init__(self) -> None:
        sampling_of(self.sample_boards, self.seed)
        if self.iterations < 1:
            raise TensorCFRError(f"--iterations must be at least 1, got {self.iterations}")
        if self.eval_every < 0:
            raise TensorCFRError(f"--eval-every must be >= 0, got {self.eval_every}")
        check_positive_minutes(self.checkpoint_minutes)
        object.__setattr__(self, "dtype", check_dtype(self.dtype))
        object.__setattr__(self, "storage", check_storage(self.storage))

    def check_outputs(self) -> None:
        """Check, before any long work, that every output file can be written and that no
        two are the same file (:func:`check_output_files`)."""
        check_output_files(save=self.save, out=self.out, plot=self.plot, curve=self.curve)


@dataclass(frozen=True)
class RunProgress:
    """One progress event of a solve run.

    ``event``: ``"start"`` (before the first iteration of this run) or ``"iteration"``
    (after each).  ``label``: what runs (``"cfr+"``, ``"ehs cfr"``, ``"ehs CFR-BR cfr"``).
    ``iteration``: iterations done in total (a resumed run starts past 0); ``target``: the
    total the run iterates to; ``resumed_from``: the checkpoint's iteration when the run
    resumed one, else None.  ``exploitability`` / ``exploitability_mbg``: the latest
    evaluation (chips per game / mb/g; for CFR-BR the average strategies' floor), None before
    the first; ``evaluated``: True when this iteration was evaluated.  ``measure``: what the
    exploitability is (``"exploitability"`` or ``"average floor"``).  ``seconds``: wall
    seconds since the run started."""

    event: str
    label: str
    iteration: int
    target: int
    seconds: float
    exploitability: Optional[float] = None
    exploitability_mbg: Optional[float] = None
    evaluated: bool = False
    measure: str = "exploitability"
    resumed_from: Optional[int] = None


ProgressCallback = Callable[[RunProgress], None]
"""A callback a run calls with each :class:`RunProgress` event."""


def check_dtype(name: str) -> str:
    """``name`` normalised (``"float32"`` or ``"float64"``); TensorCFRError otherwise."""
    clean = name.strip().lower()
    if clean not in DTYPES:
        raise TensorCFRError(f"--dtype must be float32 or float64, got {clean!r}")
    return clean


def check_storage(name: str) -> Storage:
    """``name`` normalised (``"classes"`` or ``"cells"``); TensorCFRError otherwise."""
    clean = name.strip().lower()
    if clean not in STORAGE_CHOICES:
        raise TensorCFRError(f"--storage must be classes or cells, got {name!r}")
    return cast(Storage, clean)


def check_positive_minutes(minutes: float) -> None:
    """The checkpoint interval must be a positive, finite number of minutes."""
    if not (minutes > 0 and math.isfinite(minutes)):
        raise TensorCFRError(f"--checkpoint-minutes must be a positive, finite number of "
                             f"minutes, got {minutes}")


def check_output_files(**paths: Optional[str | Path]) -> None:
    """Check before any long work that each given output file can be written and that no
    two of them are the same file; keys are the option names without dashes (``save``,
    ``out``, ``plot``, ``curve``)."""
    from tensorcfr.utils.io import check_distinct_outputs, check_output_file

    for option, path in paths.items():
        if path is not None:
            check_output_file(path, f"--{option}")
    check_distinct_outputs({f"--{option}": path for option, path in paths.items()})


def sampling_of(sample_boards: Optional[int], seed: int) -> Any:
    """The :class:`~tensorcfr.core.public_tree.BoardSampling` of ``sample_boards`` boards per
    parent and ``seed`` (None: exact full sweeps); bounds checked."""
    if sample_boards is None:
        return None
    from tensorcfr.core.public_tree import BoardSampling
    from tensorcfr.utils.checks import MAX_SEED, check_int_range

    check_int_range(sample_boards, "--sample-boards", 0, 2**31 - 1)
    check_int_range(seed, "--seed", 0, MAX_SEED)
    return BoardSampling(sample_boards, seed)


def sampling_dict(sampling: Any) -> dict[str, Any]:
    """JSON description of a run's sampling (``{"mode": "exact full sweeps"}`` for None)."""
    return {"mode": "exact full sweeps"} if sampling is None else sampling.to_dict()


@dataclass
class RunResult:
    """What a solve run did: ``game`` / ``solver`` are the built game and the solver after
    the run; ``summary`` is the JSON object the command's ``--json`` prints
    (:meth:`to_dict`), with at least ``iterations``, ``exploitability`` (chips per game) and
    ``curve`` (the evaluations)."""

    game: Any
    solver: Any
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def iterations(self) -> int:
        """Iterations done in total."""
        return int(self.summary["iterations"])

    @property
    def exploitability(self) -> float:
        """The summary's exploitability, chips per game."""
        return float(self.summary["exploitability"])

    @property
    def curve(self) -> list[dict[str, Any]]:
        """The evaluations of the run (keys as in the summary's ``curve``)."""
        return list(self.summary["curve"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready summary."""
        return dict(self.summary)
