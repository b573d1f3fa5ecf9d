"""Numeral211 abstraction floors by CFR-BR (:mod:`tensorcfr.abstraction.cfr_br`).

:func:`cfr_br_floor` runs CFR-BR for both seats on a bucket map or an embedding of a
Numeral211 game and reports the floor ``(b1(sigma_0) + b0(sigma_1)) / 2`` in chips per game
and mb/g (thousandths of the ante), with the curve of the average and current strategies.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from tensorcfr.abstraction.abstract_cfr import AbstractCFR, Embedding
from tensorcfr.core.solver_loop import LoopState, every, run
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.solving.abstract_solve import abstract_solver
from tensorcfr.games.numeral211.game.public_game import Numeral211PublicGame
from tensorcfr.games.numeral211.solving.solver import to_mbg

__all__ = ["cfr_br_floor"]


def cfr_br_floor(game: Numeral211PublicGame, embeddings: Sequence[Embedding] | None,
                 iterations: int, *, eval_every: int = 0, algo: str = "cfr",
                 solver: AbstractCFR | None = None, cfr_br: Any = None,
                 curve: list[dict[str, float]] | None = None,
                 on_progress: Callable[[int, float | None], None] | None = None,
                 checkpoint: Callable[[list[dict[str, float]]], None] | None = None,
                 checkpoint_seconds: float = math.inf,
                 interrupt_message: Callable[[int, bool], str] | None = None
                 ) -> dict[str, Any]:
    """The CFR-BR floor of an abstraction (bucket map or embedding) of ``game``: both seats'
    CFR-BR run ``iterations`` iterations in total (a given ``cfr_br``/``solver`` may already
    be past some, e.g. a resumed checkpoint, with its ``curve`` so far).  Every
    ``eval_every`` iterations (and at the end) a curve point: ``iteration``, ``average``
    (``(b1(avg sigma_0) + b0(avg sigma_1)) / 2``, chips per game), ``current`` (the same for
    the current strategies of that iteration), their ``*_mbg`` and ``seconds`` of CFR-BR
    (evaluation excluded).  ``checkpoint(curve so far)`` every ``checkpoint_seconds`` and at
    the end; ``interrupt_message``: stop cleanly on SIGINT/SIGTERM (both as in
    :func:`tensorcfr.core.solver_loop.run`, which iterates).

    Returns a JSON-ready dict: ``floor`` / ``floor_mbg`` (the counted per-seat minimum of
    average and best current strategy, see :meth:`CFRBR.floor`), ``average`` /
    ``average_mbg`` (final averages), ``seats`` (per seat: ``average``, ``current``,
    ``best_current``, ``best_iteration``, ``used``, each value also in mb/g), ``curve``,
    ``iterations``, ``seconds``, and the :class:`CFRBR` under the key ``"cfr_br"`` (not JSON;
    pop it before printing)."""
    from tensorcfr.abstraction.cfr_br import CFRBR

    if cfr_br is None:
        if solver is None:
            if embeddings is None:
                raise TensorCFRError("cfr_br_floor needs embeddings, a solver or a CFRBR")
            solver = abstract_solver(game, embeddings, algo=algo, averaging="reach")
        cfr_br = CFRBR(solver)
    mbg = (lambda x: to_mbg(x, game.config))
    curve = list(curve or [])
    last_values: list[list[float]] = []

    def evaluate(state: LoopState) -> float:
        values = cfr_br.average_values()
        last_values[:] = [values]
        avg = sum(values) / 2
        cur = sum(cfr_br.current_values) / 2
        curve.append({"iteration": state.iteration, "average": avg, "average_mbg": mbg(avg),
                      "current": cur, "current_mbg": mbg(cur),
                      "seconds": state.solving_seconds})
        return avg

    state = run(cfr_br, iterations, evaluate=evaluate, eval_at=every(eval_every, iterations),
                checkpoint=None if checkpoint is None else (lambda s: checkpoint(curve)),
                checkpoint_seconds=checkpoint_seconds, interrupt_message=interrupt_message,
                on_progress=None if on_progress is None else (
                    lambda s: on_progress(s.iteration, s.value)),
                solving_seconds=curve[-1]["seconds"] if curve else 0.0,
                value=curve[-1]["average"] if curve else None)
    solving = state.solving_seconds
    # the final averages' values when the last iteration was evaluated (else recomputed)
    avg_values = last_values[0] if state.evaluated else None
    result = cfr_br.floor(avg_values)
    average = (result.seats[0].average + result.seats[1].average) / 2
    return {"floor": result.floor, "floor_mbg": mbg(result.floor),
            "average": average, "average_mbg": mbg(average),
            "seats": [sf.to_dict(mbg) for sf in result.seats], "curve": curve,
            "iterations": cfr_br.iteration, "seconds": solving, "cfr_br": cfr_br}
