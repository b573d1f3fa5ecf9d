"""One abstract Numeral211 solve run as a library call: :func:`solve_abstract` with an
:class:`AbstractSolveSettings` (what ``tensorcfr numeral211 solve --abstraction FILE`` /
``--embedding FILE`` runs).

The run loads a bucket map (bucketed CFR) or a HandEbdNet Phi file (Embedding CFR), builds
the game (the file's variant, or a named one with the same deck), checks the memory, creates
the abstract solver (or CFR-BR on it for the abstraction's floor), resumes a checkpoint when
asked (same game, abstraction, solver kind, algorithm, averaging, dtype, sampling and
storage), iterates with exact full-game evaluations and periodic checkpoints, stops cleanly
on SIGINT/SIGTERM (checkpoint written, then :class:`~tensorcfr.errors.InterruptedRun`), and
writes the strategy file, the curve JSON and its plot.  Exploitability is
``(b0 + b1) / 2`` in chips per game measured in the full game, also in mb/g (thousandths of
the ante per game); a CFR-BR floor is ``(b1(sigma_0) + b0(sigma_1)) / 2``.

Nothing here prints or parses command lines: progress goes to the optional callback
(:class:`~.run_common.RunProgress` events), errors are one-line
:class:`~tensorcfr.errors.TensorCFRError` subclasses naming the CLI options.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving import solver as n211
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.runs.run_common import (ROUND_NAMES, ProgressCallback,
                                                        RunProgress, RunResult,
                                                        RunSettings, sampling_dict,
                                                        sampling_of)

__all__ = ["AbstractSolveSettings", "AbstractSolveResult", "solve_abstract"]

_CFR_UNITS = ("exploitability = (b0 + b1) / 2 in chips per game, measured in the full "
              "game; mb/g = thousandths of the ante per game")
_FLOOR_UNITS = ("floor = (b1(sigma_0) + b0(sigma_1)) / 2 in chips per game, b_i = "
                "the unabstracted player i's best-response value against the other "
                "seat's CFR-BR strategy (per seat the less exploitable of its final "
                "average and its best current strategy); mb/g = thousandths of the "
                "ante per game")


@dataclass(frozen=True)
class AbstractSolveSettings(RunSettings):
    """Everything an abstract solve run needs (``numeral211 solve --abstraction`` /
    ``--embedding`` and their options).

    Exactly one of ``abstraction`` (bucket map ``.npz`` of ``numeral211 abstract``) and
    ``embedding`` (Phi ``.npz`` of ``numeral211 embed``).  ``game``: the variant (None: the
    file's, or the checkpoint's when resuming; it must share the file's deck, the betting may
    differ).  ``phi_top``: Embedding CFR keeps the k largest entries of each column of Phi
    (None: dense where it fits in memory, else 8; see
    :func:`~tensorcfr.games.numeral211.solving.abstract_solve.choose_phi_top`).
    ``soft_temperature``: with ``abstraction``, run the soft-clustering control instead of
    the bucket map
    (:mod:`~tensorcfr.games.numeral211.abstraction.soft_clustering`: Phi = a softmax of
    the classes' distances to the map's cluster centres at this temperature; 0 = hard
    nearest-centre assignment).
    ``averaging``: ``"reach"`` or ``"uniform"`` weighting of advisor strategies (CFR-BR always
    reach).  ``regret_baseline``: ``"advisor"`` (default: each advisor's regret against its
    own strategy, the paper's Eq. 9) or ``"infoset"`` (against the information set's mixed
    strategy, the rule before issue 28); one rule for a bucket map.  ``algo``: cfr or cfr+.
    ``cfr_br``: the abstraction's floor by CFR-BR instead of
    CFR on the abstraction.  The other fields: the shared :class:`~.run_common.RunSettings`."""

    abstraction: Optional[str] = None
    embedding: Optional[str] = None
    phi_top: Optional[int] = None
    soft_temperature: Optional[float] = None
    averaging: str = "reach"
    regret_baseline: str = "advisor"
    cfr_br: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.abstraction is None) == (self.embedding is None):
            raise TensorCFRError("give either --abstraction or --embedding, not both")
        name = self.algo.strip().lower()
        if name not in ("cfr", "cfr+"):
            raise TensorCFRError(f"--algo {self.algo!r}: abstract solving runs cfr (the "
                                 "papers') or cfr+")
        object.__setattr__(self, "algo", name)
        from tensorcfr.abstraction.abstract_cfr import REGRET_BASELINES

        baseline = str(self.regret_baseline).strip().lower()
        if baseline not in REGRET_BASELINES:
            raise TensorCFRError(f"--regret-baseline {self.regret_baseline!r}: choose one of "
                                 f"{', '.join(REGRET_BASELINES)}")
        object.__setattr__(self, "regret_baseline", baseline)
        if self.phi_top is not None and self.phi_top < 1:
            raise TensorCFRError(f"--phi-top must be >= 1, got {self.phi_top}")
        if self.soft_temperature is not None:
            import math

            if self.abstraction is None:
                raise TensorCFRError("--soft-temperature applies to --abstraction (the map "
                                     "whose clusters are made soft)")
            if not (math.isfinite(self.soft_temperature) and self.soft_temperature >= 0):
                raise TensorCFRError(f"--soft-temperature must be a finite number >= 0, got "
                                     f"{self.soft_temperature}")
            if self.cfr_br:
                raise TensorCFRError("--cfr-br floors are for bucket maps; leave out "
                                     "--soft-temperature")
        if self.sample_boards is not None and self.cfr_br:
            raise TensorCFRError("--cfr-br runs exact full sweeps; leave out --sample-boards")


class AbstractSolveResult(RunResult):
    """What an abstract solve run did (:class:`~.run_common.RunResult`): ``game`` is the
    built full game, ``solver`` the abstract solver; ``summary`` is the JSON object
    ``numeral211 solve --abstraction ... --json`` prints (with CFR-BR also ``floor``,
    ``floor_mbg``, ``average``, ``seats``, and ``exploitability`` is the floor)."""


def _requested_game(s: AbstractSolveSettings) -> Optional[GameConfig]:
    """The variant to solve as named: the settings', else a resumed checkpoint's, else None
    (the file's)."""
    if s.game is not None or s.resume is None:
        return s.game
    from tensorcfr.games.numeral211.solving.abstract_checkpoint import read_abstract_checkpoint_meta
    from tensorcfr.games.numeral211.game.config import GameConfigError

    meta = read_abstract_checkpoint_meta(s.resume)
    try:  # the variant the checkpoint solved (its betting may differ from the file's)
        return GameConfig.from_dict(meta.get("game"))
    except GameConfigError as exc:
        raise TensorCFRError(f"checkpoint {s.resume!r}: bad game ({exc})") from None


def load_abstraction_file(path: str, requested: Optional[GameConfig]) -> tuple[Any, GameConfig]:
    """The bucket map of ``--abstraction`` and the variant it is solved on (``requested``,
    else the file's own), checked against each other; any damage (a bad variant, labels of
    another deck) is one line naming the file."""
    from tensorcfr.abstraction.bucket_map import load_bucket_map
    from tensorcfr.games.numeral211.abstraction.abstractions import check_bucket_map
    from tensorcfr.utils.reading import reading

    with reading(path, "bucket map"):
        bmap = load_bucket_map(path)
        if bmap.game != "numeral211":
            raise TensorCFRError(f"{path!r} is a bucket map of {bmap.game!r:.40}, not of "
                                 "numeral211")
        config = requested if requested is not None else GameConfig.from_dict(bmap.variant)
        check_bucket_map(config, bmap)
    return bmap, config


def _game_and_embeddings(s: AbstractSolveSettings, requested: Optional[GameConfig],
                         dtype: Any, device: Any
                         ) -> tuple[Any, list[Any], str, str, list[int], Any]:
    """(game, per-round embeddings, method, source file, advisors per round, Phi kept per
    column: None for a bucket map, an int k or ``"dense"``) of the bucket map, soft
    clustering or Phi file the settings name."""
    import numpy as np

    from tensorcfr.games.numeral211.solving.abstract_solve import bucket_embeddings, phi_embeddings

    if s.abstraction is not None:
        bmap, config = load_abstraction_file(s.abstraction, requested)
        game = n211.build_game(config, dtype=dtype, device=device)
        if s.soft_temperature is not None:
            from tensorcfr.games.numeral211.abstraction.soft_clustering import soft_clustering

            soft = soft_clustering(config, bmap, float(s.soft_temperature))
            embeddings, top = phi_embeddings(game, soft.phi, top_k=s.phi_top)
            return (game, embeddings, f"soft clustering of {bmap.method} (temperature "
                    f"{s.soft_temperature:g})", s.abstraction, list(bmap.num_buckets),
                    "dense" if top is None else top)
        return (game, bucket_embeddings(game, bmap), bmap.method, s.abstraction,
                list(bmap.num_buckets), None)
    from tensorcfr.games.numeral211.abstraction.embedding_net import load_embedding
    from tensorcfr.games.numeral211.game.isomorphism import isomorphism

    emb_file = load_embedding(s.embedding)  # type: ignore[arg-type]
    config = emb_file.config
    if requested is not None:
        from tensorcfr.games.numeral211.abstraction.abstractions import same_deck

        if not same_deck(config, requested):
            from tensorcfr.abstraction.bucket_map import BucketMapMismatchError

            raise BucketMapMismatchError(
                f"the embedding was trained for ranks {config.ranks!r} x {config.suits} "
                f"suits, not for ranks {requested.ranks!r} x {requested.suits} suits; "
                "train one with `numeral211 embed` for this deck")
        config = requested
    game = n211.build_game(config, dtype=dtype, device=device)
    counts = isomorphism(config).isomorphic_classes()
    embeddings, top = phi_embeddings(game, {r: np.asarray(emb_file.phi[r]) for r in (1, 2)},
                                     top_k=s.phi_top)
    advisors = [counts[0]] + [e.num_advisors for e in embeddings[1:]]
    return (game, embeddings, "embedding", s.embedding,  # type: ignore[return-value]
            advisors, "dense" if top is None else top)


def _check_memory(game: Any, dtype: Any, sampling: Any, max_memory: Optional[str],
                  phi_bytes: int = 0) -> int:
    """Estimated bytes of abstract solving ``game`` (MemoryLimitError above the limit):
    three cell-sized arrays per round (instantaneous regrets, weighted strategies, the cell
    strategy), as the full solver's regrets / average / strategy, plus the class arrays,
    plus ``phi_bytes`` for the embeddings (a dense Phi's copy included)."""
    from tensorcfr.core.public_tree import estimate_solver_bytes
    from tensorcfr.errors import MemoryLimitError
    from tensorcfr.utils.resources import format_bytes, parse_memory

    need = int(estimate_solver_bytes(game, dtype, sampling) * 1.15) + int(phi_bytes)
    limit = parse_memory(max_memory)
    if need > limit:
        raise MemoryLimitError(f"abstract solving of {game.config.describe()} needs about "
                               f"{format_bytes(need)} but {format_bytes(limit)} are allowed; "
                               "free memory, raise --max-memory or use a smaller variant")
    return need


def _storage_of(solver: Any) -> str:
    from tensorcfr.games.numeral211.solving.abstract_solve import ClassStorageAbstractCFR

    return "classes" if isinstance(solver, ClassStorageAbstractCFR) else "cells"


def _resume(path: str, solver: Any, runner: Any, config: GameConfig, fingerprint: str,
            mode: dict[str, Any], storage: str) -> list[dict[str, Any]]:
    """Load the checkpoint ``path`` into ``solver`` (and the CFR-BR ``runner``), refusing one
    of another game, abstraction, sampling ``mode`` or ``storage``; its curve so far."""
    from tensorcfr.games.numeral211.solving.abstract_checkpoint import load_abstract_checkpoint

    meta = load_abstract_checkpoint(path, solver, config, fingerprint=fingerprint,
                                    cfr_br=runner)
    made = meta.get("sampling") or {"mode": "exact full sweeps"}
    if made != mode:
        raise TensorCFRError(f"checkpoint {path!r} was made with {made}; resume with "
                             "the same --sample-boards and --seed (or none)")
    made_storage = meta.get("storage")
    if made_storage is not None and made_storage != storage:
        raise TensorCFRError(f"checkpoint {path!r} was made with --storage "
                             f"{made_storage}; resume with --storage {made_storage} (the "
                             "other layout rounds differently, so the run would not "
                             "continue bitwise)")
    return list(meta.get("curve") or [])


def _reporter(progress: Optional[ProgressCallback], label: str, measure: str, target: int,
              every: int, config: GameConfig, started: float, resumed_from: Optional[int]
              ) -> Callable[[int, Optional[float]], None]:
    """The ``on_progress(iteration, latest value)`` of the loop: one ``"iteration"``
    :class:`RunProgress` event to ``progress`` (nothing without one)."""
    def on_progress(t: int, ex: Optional[float]) -> None:
        if progress is not None:
            progress(RunProgress(
                "iteration", label, t, target, time.perf_counter() - started,
                exploitability=ex,
                exploitability_mbg=None if ex is None else n211.to_mbg(ex, config),
                evaluated=t % every == 0 or t == target, measure=measure,
                resumed_from=resumed_from))
    return on_progress


def solve_abstract(settings: AbstractSolveSettings,
                   progress: Optional[ProgressCallback] = None) -> AbstractSolveResult:
    """Run the abstract solve ``settings`` describe; ``progress`` gets a ``"start"`` event
    and one ``"iteration"`` event per iteration.  Returns the game, the abstract solver and
    the summary; TensorCFRError (one line) on bad input, InterruptedRun on SIGINT/SIGTERM
    (after writing the checkpoint when ``save`` is set)."""
    import torch

    from tensorcfr.games.numeral211.solving.abstract_checkpoint import (embedding_fingerprint,
                                                                        save_abstract_checkpoint)
    from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver, run_abstract
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import set_threads

    s = settings
    s.check_outputs()
    device = resolve_device(s.device, "--device")
    threads = set_threads(s.threads)
    dtype = getattr(torch, s.dtype)
    sampling = sampling_of(s.sample_boards, s.seed)
    requested = _requested_game(s)
    game, embeddings, method, source, advisors, phi_top = _game_and_embeddings(
        s, requested, dtype, device)
    config = game.config
    phi_bytes = sum(e.bytes_needed(e.num_advisors, e.num_classes, int(e.index.shape[0]),
                                   e.weight.element_size()) for e in embeddings)
    need = _check_memory(game, dtype, sampling, s.max_memory, phi_bytes)
    solver = abstract_solver(game, embeddings, algo=s.algo,
                             averaging="reach" if s.cfr_br else s.averaging,
                             sampling=sampling, storage=s.storage,
                             regret_baseline=s.regret_baseline)
    storage = _storage_of(solver)
    fingerprint = embedding_fingerprint(embeddings)
    runner: Any = None
    if s.cfr_br:
        from tensorcfr.abstraction.cfr_br import CFRBR

        runner = CFRBR(solver)
    mode = sampling_dict(sampling)
    curve: list[dict[str, Any]] = []
    resumed_from: Optional[int] = None
    if s.resume is not None:
        curve = _resume(s.resume, solver, runner, config, fingerprint, mode, storage)
        resumed_from = solver.iteration
    file_meta = {"method": method, "source": source,
                 "phi_top": phi_top, "sampling": mode,
                 "storage": storage}

    def checkpoint(points: list[dict[str, Any]]) -> None:
        save_abstract_checkpoint(s.save, solver, config, fingerprint=fingerprint,
                                 cfr_br=runner, curve=points, **file_meta)

    label = f"{method} {'CFR-BR ' if s.cfr_br else ''}{s.algo}"
    measure = "average floor" if s.cfr_br else "exploitability"
    started = time.perf_counter()
    start_iteration = solver.iteration
    every = s.eval_every if s.eval_every else s.iterations
    if progress is not None:
        progress(RunProgress("start", label, start_iteration, s.iterations, 0.0,
                             measure=measure, resumed_from=resumed_from))

    on_progress = _reporter(progress, label, measure, s.iterations, every, config, started,
                            resumed_from)
    loop = {"eval_every": every, "on_progress": on_progress, "curve": curve,
            "checkpoint": checkpoint if s.save is not None else None,
            "checkpoint_seconds": s.checkpoint_minutes * 60,
            "interrupt_message": n211.interrupt_message(s.save)}
    floor: Optional[dict[str, Any]] = None
    if s.cfr_br:
        from tensorcfr.games.numeral211.solving.floor import cfr_br_floor

        floor = cfr_br_floor(game, None, s.iterations, cfr_br=runner, **loop)
        curve = floor["curve"]
    else:
        curve = run_abstract(game, solver, s.iterations, **loop)
    seconds = time.perf_counter() - started
    common = {"game": config.describe(), "algo": s.algo, "method": method, "source": source,
              "advisors": dict(zip(ROUND_NAMES, advisors)),
              "phi_top": phi_top,
              "iterations": solver.iteration, "iterations_run": solver.iteration
              - start_iteration, "resumed_from": resumed_from, "checkpoint": s.save,
              "seconds": seconds, "memory_estimate_bytes": need, "threads": threads,
              "device": str(device), "strategy_file": s.out, "sampling": mode,
              "storage": storage}
    if s.cfr_br:
        assert floor is not None and runner is not None
        summary = _finish_floor(s, game, solver, runner, floor, curve, method, source)
    else:
        summary = _finish_cfr(s, game, solver, curve, method, source)
    return AbstractSolveResult(game=game, solver=solver, summary={**common, **summary})


def _finish_cfr(s: AbstractSolveSettings, game: Any, solver: Any, curve: list[dict[str, Any]],
                method: str, source: str) -> dict[str, Any]:
    """Write the outputs of a CFR run on the abstraction; its part of the summary."""
    config = game.config
    final = curve[-1]
    if s.out is not None:
        n211.save_policy(s.out, game, solver.average_policy(), algo=f"{method}+{s.algo}",
                         iterations=solver.iteration, exploitability=final["exploitability"])
    if s.curve is not None:
        from tensorcfr.utils.io import write_json_atomic

        write_json_atomic(s.curve, {"game": config.to_dict(), "algo": s.algo,
                                    "regret_baseline": s.regret_baseline,
                                    "method": method, "source": source, "curve": curve})
    if s.plot is not None:
        from tensorcfr.games.numeral211.runs.plots import plot_exploitability_curve

        plot_exploitability_curve(curve, s.plot, f"{config.describe()} {method} {s.algo}")
    return {"solver": "cfr", "averaging": s.averaging, "regret_baseline": s.regret_baseline,
            "exploitability": final["exploitability"], "exploitability_mbg": final["mbg"],
            "units": _CFR_UNITS, "curve": curve,
            "ms_per_iteration": 1000 * final["seconds"] / max(1, solver.iteration)}


def _finish_floor(s: AbstractSolveSettings, game: Any, solver: Any, runner: Any,
                  floor: dict[str, Any], curve: list[dict[str, Any]], method: str,
                  source: str) -> dict[str, Any]:
    """Write the outputs of a CFR-BR floor run; its part of the summary."""
    config = game.config
    floor.pop("cfr_br", None)
    result = runner.floor([seat["average"] for seat in floor["seats"]])
    if s.out is not None:
        n211.save_policy(s.out, game, runner.floor_policy(result),
                         algo=f"{method}+cfr-br+{s.algo}", iterations=solver.iteration,
                         exploitability=floor["floor"])
    if s.curve is not None:
        from tensorcfr.utils.io import write_json_atomic

        write_json_atomic(s.curve, {"game": config.to_dict(), "algo": s.algo,
                                    "solver": "cfr-br", "method": method, "source": source,
                                    "curve": curve})
    if s.plot is not None:
        from tensorcfr.games.numeral211.runs.plots import plot_floor_curve

        plot_floor_curve(curve, s.plot, f"{config.describe()} {method} CFR-BR {s.algo}")
    return {"solver": "cfr-br", "averaging": "reach", "regret_baseline": s.regret_baseline,
            "floor": floor["floor"], "floor_mbg": floor["floor_mbg"],
            "exploitability": floor["floor"], "exploitability_mbg": floor["floor_mbg"],
            "average": floor["average"], "average_mbg": floor["average_mbg"],
            "seats": floor["seats"], "curve": curve,
            "ms_per_iteration": 1000 * floor["seconds"] / max(1, solver.iteration),
            "units": _FLOOR_UNITS}

