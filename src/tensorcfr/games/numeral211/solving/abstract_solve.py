"""Numeral211 abstract solving: bucketed CFR / Embedding CFR measured in the full game.

* :func:`abstract_solver`: an :class:`~tensorcfr.abstraction.abstract_cfr.AbstractCFR` on
  the full public-tree game (classes = suit-isomorphic classes of :mod:`.isomorphism`,
  board weights = :func:`~.abstractions.board_multiplicity`) for per-round embeddings:
  bucket maps (:func:`bucket_embeddings`) or HandEbdNet's Phi (:mod:`.embedding_net`);
* :func:`phi_embeddings`: the embeddings of a Phi per round (HandEbdNet's, the soft
  clustering's), dense where it fits in memory (:data:`DENSE_PHI_BYTES`), else each column's
  :data:`DEFAULT_PHI_TOP` largest entries;
* :func:`run_abstract`: iterate it, with the full game's exact exploitability of the
  average strategy every ``eval_every`` iterations (the curve of Figure 5).

Exploitability is ``(b0 + b1) / 2`` in chips per game, also in mb/g (thousandths of the ante,
:func:`~.solver.to_mbg`).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from tensorcfr.abstraction.abstract_cfr import AbstractCFR, Embedding
from tensorcfr.abstraction.bucket_map import BucketMap
from tensorcfr.core.public_tree import BoardSampling
from tensorcfr.core.solver_loop import LoopState, every, run
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.abstraction.abstractions import (board_multiplicity,
                                                                 check_bucket_map, class_sizes)
from tensorcfr.games.numeral211.game.isomorphism import isomorphism
from tensorcfr.games.numeral211.game.public_game import Numeral211PublicGame
from tensorcfr.games.numeral211.solving.solver import (STORAGES, class_exploitability, class_game,
                                                       class_policy, exploitability, to_mbg)

__all__ = ["bucket_embeddings", "abstract_solver", "run_abstract", "lossless_embeddings",
           "ClassStorageAbstractCFR", "phi_embeddings", "choose_phi_top", "DENSE_PHI_BYTES",
           "DEFAULT_PHI_TOP"]

DENSE_PHI_BYTES = 1 << 30
"""Phi is kept dense by default when its flop and turn embeddings need at most this many
bytes (1 GiB; the paper's game with 225 / 396 advisors needs about 0.4 GiB in float32)."""

DEFAULT_PHI_TOP = 8
"""Entries kept per column of Phi when the dense Phi does not fit :data:`DENSE_PHI_BYTES`."""


def bucket_embeddings(game: Numeral211PublicGame, bmap: BucketMap) -> list[Embedding]:
    """One-hot embeddings of a bucket map (checked against the game variant)."""
    check_bucket_map(game.config, bmap)
    return [Embedding.from_labels(lab) for lab in bmap.labels]


class ClassStorageAbstractCFR(AbstractCFR):
    """:class:`AbstractCFR` whose passes run over the per-class game (:func:`class_game`:
    one entry per suit-isomorphic class, each weighted by its concrete infosets), the same
    advisor updates as over the cells up to rounding; its policies
    (:meth:`average_policy`, :meth:`current_policy`, :meth:`cell_policy`) are returned in
    the full game's layout [S_r, P_r, B_r, H] of ``cell_game``."""

    def __init__(self, game: Numeral211PublicGame, embeddings: Sequence[Embedding], *,
                 algo: str = "cfr", averaging: str = "reach",
                 regret_baseline: str = "advisor") -> None:
        self.cell_game = game
        per_class = class_game(game)
        tables = [np.arange(c)[None, :] for c in per_class.hands_per_round]
        weights = [class_sizes(game.config, r)[None, :] for r in range(len(tables))]
        super().__init__(per_class, tables, weights, embeddings, algo=algo,
                         averaging=averaging, dtype=game.dtype, device=game.device,
                         regret_baseline=regret_baseline)
        per_class.prepare()

    def _cells_to_classes(self, r: int, x: Tensor) -> Tensor:
        """[S, P, 1, C] -> [S, P, C]: each entry times its class's concrete infosets (the
        pass's entries are the classes: no sum over cells; ``x`` is a spent pass buffer and
        is scaled in place)."""
        s, p = x.shape[:2]
        return x.reshape(s, p, -1).mul_(self._cell_weight[r])

    def _classes_to_cells(self, r: int, x: Tensor, out: Tensor, fill: float = 0.0) -> None:
        """Class strategies [S', P, C] into the pass's entries ``out`` [S', P, 1, C]."""
        out.view(x.shape).copy_(x)

    def cell_policy(self, per_class: Sequence[Tensor]) -> list[Tensor]:
        """Class strategies [S_r, P_r, C_r] -> full-game policy [S_r, P_r, B_r, H]."""
        return class_policy(self.cell_game, [p.detach().cpu() for p in per_class])

    def exploitability(self) -> float:
        """Exact full-game exploitability of the average strategy (chips per game),
        evaluated over the classes."""
        policy = self.pass_policy(self.average_class_policy())
        return class_exploitability(self.game, policy).exploitability


def abstract_solver(game: Numeral211PublicGame, embeddings: Sequence[Embedding], *,
                    algo: str = "cfr", averaging: str = "reach",
                    sampling: BoardSampling | int | None = None,
                    storage: str = "classes", regret_baseline: str = "advisor") -> AbstractCFR:
    """:class:`AbstractCFR` over the suit-isomorphic classes of ``game`` (``sampling``:
    None = exact full sweeps, else public chance sampling, see
    :class:`~tensorcfr.core.public_tree.BoardSampling`).  ``storage``: ``"classes"``
    (default for exact sweeps: :class:`ClassStorageAbstractCFR`, passes over one entry per
    class) or ``"cells"`` (passes over every canonical (board, hand) cell; sampled
    iterations always run there).  ``regret_baseline``: ``"advisor"`` (the paper's) or
    ``"infoset"`` (:class:`~tensorcfr.abstraction.abstract_cfr.AbstractCFR`)."""
    if storage not in STORAGES:
        raise TensorCFRError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}")
    if storage == "classes" and sampling is None:
        return ClassStorageAbstractCFR(game, embeddings, algo=algo, averaging=averaging,
                                       regret_baseline=regret_baseline)
    iso = isomorphism(game.config)
    tables = [iso.class_table(r)[0] for r in range(game.config.num_rounds)]
    return AbstractCFR(game, tables, board_multiplicity(game.config), embeddings, algo=algo,
                       averaging=averaging, dtype=game.dtype, device=game.device,
                       sampling=sampling, regret_baseline=regret_baseline)


def run_abstract(game: Numeral211PublicGame, solver: AbstractCFR, iterations: int, *,
                 eval_every: int = 0,
                 on_progress: Callable[[int, float | None], None] | None = None,
                 curve: list[dict[str, float]] | None = None,
                 checkpoint: Callable[[list[dict[str, float]]], None] | None = None,
                 checkpoint_seconds: float = math.inf,
                 interrupt_message: Callable[[int, bool], str] | None = None
                 ) -> list[dict[str, float]]:
    """Iterate ``solver`` to ``iterations`` (by :func:`tensorcfr.core.solver_loop.run`); every
    ``eval_every`` iterations (and at the end) the exact full-game exploitability of its
    average strategy.  Returns the curve: dicts ``{"iteration", "exploitability"
    (chips/game), "mbg", "seconds"}`` (``seconds``: solving time so far, evaluation
    excluded).  ``on_progress(iteration, last exploitability)``; ``curve``: the curve so far
    of a resumed solver (continued, seconds included); ``checkpoint(curve so far)`` every
    ``checkpoint_seconds`` and at the end; ``interrupt_message``: stop cleanly on
    SIGINT/SIGTERM (see :func:`~tensorcfr.core.solver_loop.run`)."""
    curve = list(curve or [])

    def evaluate(state: LoopState) -> float:
        if isinstance(solver, ClassStorageAbstractCFR):
            ex = solver.exploitability()
        else:
            ex = exploitability(game, solver.average_policy()).exploitability
        curve.append({"iteration": state.iteration, "exploitability": ex,
                      "mbg": to_mbg(ex, game.config), "seconds": state.solving_seconds})
        return ex

    run(solver, iterations, evaluate=evaluate, eval_at=every(eval_every, iterations),
        checkpoint=None if checkpoint is None else (lambda state: checkpoint(curve)),
        checkpoint_seconds=checkpoint_seconds, interrupt_message=interrupt_message,
        on_progress=None if on_progress is None else (
            lambda state: on_progress(state.iteration, state.value)),
        solving_seconds=curve[-1]["seconds"] if curve else 0.0,
        value=curve[-1]["exploitability"] if curve else None)
    return curve


def choose_phi_top(shapes: Sequence[tuple[int, int]], itemsize: int,
                   top_k: int | None = None, *,
                   dense_limit_bytes: int = DENSE_PHI_BYTES) -> tuple[int | None, int]:
    """How many entries per column to keep of Phi matrices of ``shapes`` [(m_r, C_r)] with
    float ``itemsize`` bytes: ``top_k`` when given (clipped to m: ``top_k >= m`` is dense),
    else None (dense) when the dense embeddings need at most ``dense_limit_bytes``, else
    :data:`DEFAULT_PHI_TOP`.  Returns ``(top_k or None, estimated bytes)``
    (:meth:`Embedding.bytes_needed` summed over the rounds)."""
    if top_k is not None:
        if not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise TensorCFRError(f"phi top-k must be a positive integer, got {top_k!r}")
        if all(top_k >= m for m, _ in shapes):
            top_k = None
    else:
        dense = sum(Embedding.bytes_needed(m, c, None, itemsize) for m, c in shapes)
        if dense > dense_limit_bytes:
            top_k = DEFAULT_PHI_TOP
    need = sum(Embedding.bytes_needed(m, c, top_k, itemsize) for m, c in shapes)
    return top_k, need


def phi_embeddings(game: Numeral211PublicGame, phi: dict[int, np.ndarray],
                   top_k: int | None = None, *,
                   dense_limit_bytes: int = DENSE_PHI_BYTES) -> tuple[list[Embedding],
                                                                     int | None]:
    """Per-round embeddings of Phi matrices ``phi`` {1: [m_1, C_1], 2: [m_2, C_2]} for
    ``game``'s deck (the preflop keeps one advisor per class), kept dense or as each column's
    ``top_k`` largest entries by :func:`choose_phi_top`.  Returns ``(embeddings, top_k used:
    None = dense)``."""
    counts = isomorphism(game.config).isomorphic_classes()
    for r in (1, 2):
        if r not in phi or np.ndim(phi[r]) != 2 or np.shape(phi[r])[1] != counts[r]:
            raise TensorCFRError(f"Phi of round {r} must be [m, {counts[r]}] for "
                                 f"{game.config.describe()}")
    itemsize = torch.empty((), dtype=game.dtype).element_size()
    top, _ = choose_phi_top([np.shape(phi[r]) for r in (1, 2)], itemsize, top_k,
                            dense_limit_bytes=dense_limit_bytes)
    embeddings = [Embedding.from_labels(np.arange(counts[0]))]
    embeddings += [Embedding.from_matrix(phi[r], top_k=top) for r in (1, 2)]
    return embeddings, top


def lossless_embeddings(game: Numeral211PublicGame) -> list[Embedding]:
    """Identity embeddings (one advisor per class): plain CFR on the classes."""
    counts = isomorphism(game.config).isomorphic_classes()
    return [Embedding.from_labels(np.arange(c)) for c in counts]

