"""CFR on an abstraction of a public-tree game: bucketed CFR and Embedding CFR.

Works on any :class:`tensorcfr.core.public_tree.PublicTreeGame` whose cells (board, hand) of
round r are grouped in *classes* (``cell_class[r]`` [B_r, H], -1 for impossible cells; e.g.
suit-isomorphic classes) and whose canonical boards stand for ``board_weight[r]`` [B_r]
(or whose cells stand for ``board_weight[r]`` [B_r, H_r] concrete infosets each, e.g. a
game whose "hands" are the classes themselves)
concrete boards.  Per round an *embedding* maps classes to ``m_r`` "advisors":

* a bucket map (int [C_r] class -> bucket): classic abstraction (a one-hot Phi);
* an embedding matrix Phi (float [m_r, C_r], each column on the probability simplex), kept as
  its ``k`` largest entries per column (:class:`Embedding`; ``k = m`` is exact).

At every betting node (info-block) of a round, advisor ``p`` holds regrets ``R(e_p, a)``; a
class plays ``sigma(q, a) = sum_p phi_pq sigma(e_p, a)`` with ``sigma(e_p)`` = regret
matching on ``R(e_p)``; each iteration adds ``sum_q phi_pq r(q, a)`` to ``R(e_p, a)`` where
``r(q, a)`` is the class's counterfactual regret (the sum over its concrete infosets).
How the regret of an action is measured (``regret_baseline``):

* ``"advisor"`` (default; the paper's Eq. 9 / Proposition 1): against the advisor's own
  strategy, ``R(e_p, a) += sum_q phi_pq (v(q, a) - sum_b sigma(e_p, b) v(q, b))``: each
  advisor is a regret minimiser of its own, which the paper's regret bound needs.  From the
  class regrets ``r(q, a) = v(q, a) - v(q)`` this is ``L(p, a) - sum_b sigma(e_p, b) L(p, b)``
  with ``L = Phi r`` (the class baselines ``v(q)`` cancel, sigma(e_p) summing to 1);
* ``"infoset"``: against the information set's mixed strategy, ``L(p, a)`` itself (the rule
  before issue 28).

With a one-hot Phi (bucket maps) the two are the same rule (``sigma(q) = sigma(e_p)``), and the
solver adds ``L`` unchanged.
Regret matching is :func:`~tensorcfr.core.public_tree.regret_matching_dense`, with each
advisor's value scale ``sum_q phi_pq (the board-weighted value scales of q's cells)`` in the
rounding bound (:mod:`tensorcfr.core.regret`).
The average strategy averages the advisors' strategies, weighted by the reach of the hands
they advise (``averaging="reach"``: with Phi = identity or one-hot this is exactly CFR's
average on the abstract game) or uniformly over iterations (``averaging="uniform"``, the
Embedding CFR paper's rule), and maps it back through Phi.

The counterfactual values come from the full game's own pass
(:func:`tensorcfr.core.public_tree.public_pass`), so one iteration is one exact full sweep;
only the regret bookkeeping is abstract.  Alternating updates, as :class:`PublicTreeCFR`.

With ``sampling`` (public chance sampling, :class:`~tensorcfr.core.public_tree.BoardSampling`)
an iteration visits only the drawn boards (every private hand of each); the cells' regrets
and reach-weighted strategies enter the class sums multiplied by the sample's importance
weights, so every advisor's regret increment is an unbiased estimate of the full sweep's,
and only the drawn cells' strategies are ever formed (no full-game strategy tensor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.public_tree import BoardSample, BoardSampling, PublicTreeGame, \
    normalize_dense, parse_sampling, public_pass, regret_matching_dense, round_hands
from tensorcfr.core.regret import CFRVariant, average_decay
from tensorcfr.errors import TensorCFRError

__all__ = ["Embedding", "AbstractCFR", "REGRET_BASELINES"]

REGRET_BASELINES: dict[str, str] = {
    "advisor": "each advisor's regret against its own strategy (the paper's Eq. 9, default)",
    "infoset": "the information set's regret lifted through Phi (the rule before issue 28)",
}
"""The ``regret_baseline`` values of :class:`AbstractCFR`, with their descriptions."""


PHI_FLOOR = 1e-12
"""Entries of a Phi column below this fraction of the column's sum are dropped (set to 0) by
:meth:`Embedding.from_matrix`.  They move no class strategy by more than ``m * 1e-12``, but a
softmax Phi holds many far smaller ones (down to 1e-45), which are subnormal numbers in
float32: a product with a full-game turn Phi [396, 62,020] took 28 s with them and 0.24 s
without (one core)."""


@dataclass
class Embedding:
    """Sparse columns of Phi: ``index`` [k, C] long (advisor ids) and ``weight`` [k, C]
    float (each column sums to 1) for ``num_advisors`` advisors.

    With every column complete (``k = m``) the products with Phi run as dense matrix
    products over a dense copy [m, C] built once (``prefer_dense=False`` keeps the sparse
    kernels, for tests); :meth:`bytes_needed` estimates the memory either way."""

    index: Tensor
    weight: Tensor
    num_advisors: int
    prefer_dense: bool = True
    _dense_cache: Tensor | None = field(default=None, init=False, repr=False, compare=False)

    @staticmethod
    def bytes_needed(num_advisors: int, num_classes: int, top_k: int | None,
                     itemsize: int) -> int:
        """Bytes of an embedding of ``num_advisors`` x ``num_classes`` keeping ``top_k``
        entries per column (None: all, dense): the index (8 bytes) and weight
        (``itemsize``) per kept entry, plus the dense copy [m, C] when every entry is kept."""
        k = num_advisors if top_k is None else max(1, min(int(top_k), num_advisors))
        dense = num_advisors * num_classes * itemsize if k == num_advisors else 0
        return k * num_classes * (8 + itemsize) + dense

    @staticmethod
    def from_labels(labels: np.ndarray | Tensor) -> "Embedding":
        """One-hot embedding of a bucket map [C] (bucket ids 0..K-1)."""
        lab = torch.as_tensor(np.asarray(labels), dtype=torch.long).reshape(1, -1)
        if lab.numel() and int(lab.min()) < 0:
            raise TensorCFRError("bucket labels must be >= 0")
        return Embedding(lab, torch.ones(lab.shape, dtype=torch.float64),
                         int(lab.max()) + 1 if lab.numel() else 0)

    @staticmethod
    def from_matrix(phi: np.ndarray | Tensor, top_k: int | None = None) -> "Embedding":
        """From a dense Phi [m, C] (columns renormalised); ``top_k`` keeps the k largest
        entries of each column (None: all m)."""
        phi_t = torch.as_tensor(np.asarray(phi), dtype=torch.float64)
        if phi_t.ndim != 2 or not torch.isfinite(phi_t).all() or (phi_t < 0).any():
            raise TensorCFRError("Phi must be a finite non-negative [m, C] matrix")
        m = phi_t.shape[0]
        k = m if top_k is None else max(1, min(int(top_k), m))
        column_sum = phi_t.sum(0, keepdim=True)
        if (column_sum <= 0).any():
            raise TensorCFRError("every column of Phi needs a positive entry")
        phi_t = torch.where(phi_t < PHI_FLOOR * column_sum, 0.0, phi_t)
        weight, index = phi_t.topk(k, dim=0)
        return Embedding(index, weight / weight.sum(0, keepdim=True), m)

    @property
    def num_classes(self) -> int:
        """Columns C."""
        return int(self.index.shape[1])

    def to(self, dtype: torch.dtype, device: torch.device) -> "Embedding":
        """On ``device`` with float ``dtype``."""
        return Embedding(self.index.to(device), self.weight.to(device=device, dtype=dtype),
                         self.num_advisors, self.prefer_dense)

    def columns(self, classes: Tensor) -> "Embedding":
        """The embedding restricted to the columns ``classes`` [U] (same advisors)."""
        return Embedding(self.index.index_select(1, classes),
                         self.weight.index_select(1, classes), self.num_advisors,
                         self.prefer_dense)

    @property
    def is_one_hot(self) -> bool:
        """True when every column is one advisor (a bucket map: k = 1 with weight 1)."""
        return self.index.shape[0] == 1 and bool((self.weight == 1).all())

    @property
    def is_dense(self) -> bool:
        """True when every column keeps all m entries and products run dense."""
        return self.prefer_dense and self.index.shape[0] >= max(2, self.num_advisors)

    def _dense(self) -> Tensor | None:
        """The dense Phi [m, C] when :attr:`is_dense` (built once; matmul is faster)."""
        if not self.is_dense:
            return None
        if self._dense_cache is None:
            dense = torch.zeros((self.num_advisors, self.num_classes),
                                dtype=self.weight.dtype, device=self.weight.device)
            self._dense_cache = dense.scatter_(0, self.index, self.weight)
        return self._dense_cache

    def down(self, x: Tensor) -> Tensor:
        """Advisor values [..., m] -> class values [..., C]: ``sum_p phi_pq x_p``."""
        dense = self._dense()
        if dense is not None:
            return x @ dense
        out = None
        shape = x.shape[:-1] + (self.num_classes,)
        for j in range(self.index.shape[0]):
            # gather, not index_select: the latter is several times slower on the last
            # axis of a 3-d tensor
            term = torch.gather(x, -1, self.index[j].expand(shape))
            weight = self.weight[j]
            if not bool((weight == 1).all()):  # one-hot rows (bucket maps) need no product
                term.mul_(weight)
            out = term if out is None else out.add_(term)
        assert out is not None
        return out

    def up(self, x: Tensor) -> Tensor:
        """Class values [..., C] -> advisor sums [..., m]: ``sum_q phi_pq x_q``."""
        dense = self._dense()
        if dense is not None:
            return x @ dense.T
        flat = x.reshape(-1, x.shape[-1])
        out = torch.zeros((flat.shape[0], self.num_advisors), dtype=x.dtype, device=x.device)
        for j in range(self.index.shape[0]):
            weight = self.weight[j]
            # one-hot rows (bucket maps): no product with ones over the whole input
            term = flat if bool((weight == 1).all()) else flat * weight
            out.index_add_(1, self.index[j], term)
        return out.reshape(x.shape[:-1] + (self.num_advisors,))


class _Buffers:
    """Duck-typed solver for :func:`public_pass`: instantaneous regrets / weighted
    strategies."""

    def __init__(self, regrets: list[Tensor], average: list[Tensor], iteration: int,
                 regret_scale: list[Tensor] | None = None) -> None:
        self.regrets = regrets
        self.average = average
        self.iteration = iteration
        self.variant = CFRVariant("cfr")
        self.regret_scale = regret_scale


class AbstractCFR:
    """CFR over advisors (buckets or Embedding CFR) with full-sweep counterfactual values.

    ``game``: the full game; ``cell_class[r]`` [B_r, H_r] long; ``board_weight[r]`` [B_r]
    (concrete boards per canonical board) or [B_r, H_r] (concrete infosets per cell);
    ``embeddings[r]``: :class:`Embedding` per round; ``algo``: ``cfr`` (vanilla, the paper's)
    or ``cfr+``; ``averaging``: ``"reach"`` or ``"uniform"`` (see the module docstring);
    ``sampling``: ``None`` (exact full sweeps), a
    :class:`~tensorcfr.core.public_tree.BoardSampling` or an int (boards drawn per parent
    board; 0 = every board through the sampled code path, which equals the full sweep);
    ``regret_baseline``: ``"advisor"`` (default, the paper's) or ``"infoset"`` (see the
    module docstring and :data:`REGRET_BASELINES`).
    """

    def __init__(self, game: PublicTreeGame, cell_class: Sequence[np.ndarray],
                 board_weight: Sequence[np.ndarray], embeddings: Sequence[Embedding], *,
                 algo: str = "cfr", averaging: str = "reach",
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
                 sampling: BoardSampling | int | None = None,
                 regret_baseline: str = "advisor") -> None:
        self.variant = CFRVariant.parse(algo)
        if regret_baseline not in REGRET_BASELINES:
            raise TensorCFRError(f"regret baseline must be one of "
                                 f"{', '.join(REGRET_BASELINES)}, got {regret_baseline!r}")
        self.regret_baseline = regret_baseline
        if self.variant.name not in ("cfr", "cfr+"):
            raise TensorCFRError(f"abstract CFR runs cfr or cfr+, not {algo!r}")
        if averaging not in ("reach", "uniform"):
            raise TensorCFRError(f"averaging must be 'reach' or 'uniform', got {averaging!r}")
        self.game = game
        self.sampling = parse_sampling(sampling)
        self.averaging = averaging
        self.dtype = dtype
        self.device = torch.device(device)
        self.iteration = 0
        rounds = game.rounds
        self.prefixes = [1]
        for tmpl in rounds[:-1]:
            self.prefixes.append(self.prefixes[-1] * tmpl.num_exits)
        self._tables: list[Tensor] = []  # [B_r, H] class per cell (C_r: impossible)
        self._cell_weight: list[Tensor] = []  # [B_r * H] board weight per cell (0: impossible)
        self.embeddings: list[Embedding] = []
        for r, (table, weights, emb) in enumerate(zip(cell_class, board_weight, embeddings)):
            h = round_hands(game, r)
            table = np.asarray(table).reshape(game.num_boards[r], h)
            if table.size and table.max() >= emb.num_classes:
                raise TensorCFRError(f"round {r}: the embedding covers {emb.num_classes} "
                                     f"classes, the game has {int(table.max()) + 1}")
            # every cell's class, impossible cells -> a spare class C (dropped after sums)
            padded = np.where(table >= 0, table, emb.num_classes).astype(np.int64)
            self._tables.append(torch.as_tensor(padded, device=self.device))
            weights = np.asarray(weights, dtype=np.float64)
            weights = weights[:, None] if weights.ndim == 1 else weights.reshape(table.shape)
            cell_w = np.where(table >= 0, weights, 0.0)
            self._cell_weight.append(torch.as_tensor(cell_w.reshape(-1), dtype=dtype,
                                                     device=self.device))
            self.embeddings.append(emb.to(dtype, self.device))
        self.num_classes = [e.num_classes for e in self.embeddings]
        kw = {"dtype": dtype, "device": self.device}
        self.regrets = [torch.zeros((t.num_slots, p, e.num_advisors), **kw)
                        for t, p, e in zip(rounds, self.prefixes, self.embeddings)]
        self.average = [torch.zeros_like(x) for x in self.regrets]
        # each advisor's value scale (regret matching's rounding bound), per decision node
        self.regret_scale = [torch.zeros((t.num_nodes, p, e.num_advisors), **kw)
                             for t, p, e in zip(rounds, self.prefixes, self.embeddings)]
        self.advisor_strategy = [torch.zeros_like(x) for x in self.regrets]
        self._cell_shapes = [(t.num_slots, p, b, round_hands(game, r))
                             for r, (t, p, b) in enumerate(zip(rounds, self.prefixes,
                                                               game.num_boards))]
        # the full-game strategy of the current iterate (exact sweeps only; sampled
        # iterations form the drawn cells' strategies on the fly)
        self.cell_strategy = [] if self.sampling is not None else [
            torch.zeros(shape, **kw) for shape in self._cell_shapes]
        self._buffers: tuple[list[Tensor], list[Tensor]] | None = None
        for player in (0, 1):
            self._refresh(player)

    # ------------------------------------------------------------------ mappings
    def _node_index(self, r: int, sl: slice) -> int:
        """Decision node of round r whose slots are ``sl``."""
        return self.game.rounds[r].slot_offsets.index(sl.start)

    def _node_slices(self, r: int) -> list[tuple[int, slice]]:
        tmpl = self.game.rounds[r]
        return [(tmpl.players[j], slice(o, o + a))
                for j, (o, a) in enumerate(zip(tmpl.slot_offsets, tmpl.num_actions))]

    def _cells_to_classes(self, r: int, x: Tensor) -> Tensor:
        """[S, P, B, H] -> [S, P, C]: board-weighted sums over each class's cells.

        One ``index_add_`` over all cells (impossible ones into a spare class), a few slots
        at a time: no gather of the cells (``index_select`` over the last axis of a 3-d
        tensor was measured 8x slower than this on the turn's 148,200 cells)."""
        table = self._tables[r].reshape(-1)
        w = self._cell_weight[r]
        s, p = x.shape[:2]
        out = torch.zeros((s, p, self.num_classes[r] + 1), dtype=x.dtype, device=x.device)
        flat = x.reshape(s, p, -1)
        step = max(1, int(2**24 // max(1, p * flat.shape[2])))
        for start in range(0, s, step):
            out[start:start + step].index_add_(2, table, flat[start:start + step] * w)
        return out[:, :, :-1]

    def _classes_to_cells(self, r: int, x: Tensor, out: Tensor, fill: float = 0.0) -> None:
        """Write class strategies [S', P, C] into cell strategies ``out`` [S', P, B, H]
        (contiguous), ``fill`` on impossible cells; one ``gather`` per slot."""
        table = self._tables[r].reshape(1, -1)
        s, p = out.shape[:2]
        padded = torch.cat([x, x.new_full((s, p, 1), fill)], dim=2)
        flat = out.view(s, p, -1)
        for j in range(s):
            torch.gather(padded[j], 1, table.expand(p, -1), out=flat[j])

    def class_policy(self, advisor: Sequence[Tensor]) -> list[Tensor]:
        """Advisor strategies per round [S_r, P_r, m_r] -> class strategies [S_r, P_r, C_r]."""
        return [self.embeddings[r].down(a) for r, a in enumerate(advisor)]

    def cell_policy(self, per_class: Sequence[Tensor]) -> list[Tensor]:
        """Class strategies [S_r, P_r, C_r] -> full-game policy (by default
        :meth:`pass_policy`; a subclass whose game is a compact view of a larger game returns
        the larger game's layout here)."""
        return self.pass_policy(per_class)

    def pass_policy(self, per_class: Sequence[Tensor]) -> list[Tensor]:
        """Class strategies [S_r, P_r, C_r] -> policy of :attr:`game` [S_r, P_r, B_r, H_r]
        (what :func:`public_pass` on ``game`` takes; uniform on impossible cells)."""
        out = []
        for r, pol in enumerate(per_class):
            cells = torch.empty(self._cell_shapes[r], dtype=self.dtype, device=self.device)
            for _, sl in self._node_slices(r):
                self._classes_to_cells(r, pol[sl], cells[sl], 1.0 / (sl.stop - sl.start))
            out.append(cells)
        return out

    def _refresh(self, player: int) -> None:
        for r in range(len(self.game.rounds)):
            emb = self.embeddings[r]
            for acting, sl in self._node_slices(r):
                if acting != player:
                    continue
                sigma = regret_matching_dense(
                    self.regrets[r][sl], value_scale=self.regret_scale[r][self._node_index(r, sl)],
                    out=self.advisor_strategy[r][sl])
                if self.cell_strategy:
                    self._classes_to_cells(r, emb.down(sigma), self.cell_strategy[r][sl])

    # ------------------------------------------------------------------ iterations
    def iterate(self, num_iterations: int = 1) -> None:
        """Run ``num_iterations`` full-sweep iterations (player 0, then player 1)."""
        for _ in range(num_iterations):
            self.iteration += 1
            t = self.iteration
            if self.sampling is not None:
                self._sampled_iteration(self.sampling.draw(self.game, t))
                continue
            for player in (0, 1):
                inst_r, inst_w = self._pass_buffers(player)
                inst_s = [x.new_zeros((tmpl.num_nodes,) + x.shape[1:3] + (1,))
                          for tmpl, x in zip(self.game.rounds, inst_r)]
                public_pass(self.game, self.cell_strategy, player, "cfr",
                            solver=_Buffers(inst_r, inst_w, t, inst_s))
                self.accumulate_pass(player, list(inst_r), list(inst_w), t, inst_s)
                self._refresh(player)

    def _pass_buffers(self, player: int) -> tuple[list[Tensor], list[Tensor]]:
        """Buffers for one pass of ``player``: instantaneous regrets and weighted strategies
        (the cell strategy's shapes), zero at ``player``'s slots (the only ones a pass
        writes), kept between passes: zeroing reuses the memory, where fresh gigabyte-sized
        tensors are page-faulted anew every pass."""
        buffers = self._buffers
        if buffers is None:
            buffers = self._buffers = ([torch.zeros_like(s) for s in self.cell_strategy],
                                       [torch.zeros_like(s) for s in self.cell_strategy])
            return buffers
        for r in range(len(self.game.rounds)):
            for acting, sl in self._node_slices(r):
                if acting == player:
                    buffers[0][r][sl].zero_()
                    buffers[1][r][sl].zero_()
        return buffers

    def accumulate_pass(self, player: int, inst_r: list[Tensor], inst_w: list[Tensor],
                        t: int, inst_s: list[Tensor] | None = None) -> None:
        """Add one full-sweep pass's cell regrets and own-reach weighted strategies
        (``inst_r`` / ``inst_w``: per round [S_r, P_r, B_r, H], freed as they are read) to
        ``player``'s advisor tables at iteration ``t`` (also used by CFR-BR); ``inst_s``:
        the pass's value scales per round [N_r, P_r, B_r, 1] (None: the advisors' value
        scales stay as they are)."""
        decay = average_decay(self.variant, t)
        for r in range(len(self.game.rounds)):
            h = round_hands(self.game, r)
            for acting, sl in self._node_slices(r):
                if acting == player:  # the pass wrote only the player's slots
                    scale_c = None
                    if inst_s is not None:
                        j = self._node_index(r, sl)
                        cells = inst_s[r][j:j + 1].expand(-1, -1, -1, h).contiguous()
                        scale_c = self._cells_to_classes(r, cells)[0]
                    self._update_node(r, sl, self._cells_to_classes(r, inst_r[r][sl]),
                                      self._cells_to_classes(r, inst_w[r][sl]),
                                      self.embeddings[r], decay, scale_c)
            inst_r[r] = inst_w[r] = None  # type: ignore[call-overload]

    def _update_advisors(self, r: int, player: int, regret_c: Tensor, weighted_c: Tensor,
                         emb: Embedding, decay: float, scale_c: Tensor | None = None) -> None:
        """Add class regrets [S, P, C'] (through ``emb``: C' columns) to the advisors of
        ``player``'s nodes of round r and accumulate their average strategy (``scale_c``:
        the classes' value scales per node [N, P, C'], or None)."""
        for acting, sl in self._node_slices(r):
            if acting == player:
                self._update_node(r, sl, regret_c[sl], weighted_c[sl], emb, decay,
                                  None if scale_c is None else scale_c[self._node_index(r, sl)])

    def _update_node(self, r: int, sl: slice, regret_c: Tensor, weighted_c: Tensor,
                     emb: Embedding, decay: float, scale_c: Tensor | None = None) -> None:
        """One node's part of :meth:`_update_advisors` (``regret_c`` / ``weighted_c``:
        [A, P, C'] of its slots; ``scale_c`` [P, C'] the classes' value scales or None).

        The advisor baseline subtracts ``sum_b sigma(e_p, b) L(p, b)`` from the lifted
        regrets ``L``, sigma being the strategy the advisors played this iteration."""
        regrets = self.regrets[r][sl]
        sigma = self.advisor_strategy[r][sl]
        lifted = emb.up(regret_c)  # [A, P, m]
        if self.regret_baseline == "advisor" and not emb.is_one_hot:
            lifted.sub_((lifted * sigma).sum(0, keepdim=True))
        regrets.add_(lifted)
        if self.variant.floors_regrets:
            regrets.clamp_min_(0)
        if scale_c is not None:
            self.regret_scale[r][self._node_index(r, sl)].add_(emb.up(scale_c))
        if self.averaging == "reach":
            contrib = sigma * emb.up(weighted_c.sum(0, keepdim=True))
        else:
            contrib = sigma
        avg = self.average[r][sl]
        if decay != 1.0:
            avg.mul_(decay)
        avg.add_(contrib)

    def _sampled_iteration(self, sample: BoardSample) -> None:
        """One iteration on the drawn boards (see the module docstring)."""
        t = self.iteration
        decay = average_decay(self.variant, t)
        cells = []
        h = self.game.num_hands
        for r in range(len(self.game.rounds)):
            boards = sample.boards[r]
            table = self._tables[r].index_select(0, boards).reshape(-1)  # [n * H]
            # the drawn classes (the spare class C of impossible cells sorts last)
            classes, inverse = torch.unique(table, return_inverse=True)
            if int(classes[-1]) == self.num_classes[r]:
                classes = classes[:-1]
            cell = (boards[:, None] * h + torch.arange(h, device=self.device)).reshape(-1)
            weight = sample.importance[r].repeat_interleave(h) * self._cell_weight[
                r].index_select(0, cell)
            cells.append((len(boards), inverse, classes, weight,
                          self.embeddings[r].columns(classes)))
        for player in (0, 1):
            strategy = []
            for r, (n, inverse, classes, _, emb) in enumerate(cells):
                s, p, _ = self.advisor_strategy[r].shape
                per_class = emb.down(self.advisor_strategy[r])  # [S, P, U]
                per_class = torch.cat([per_class, per_class.new_zeros((s, p, 1))], dim=2)
                flat = torch.gather(per_class, 2, inverse.expand(s, p, -1))
                strategy.append(flat.reshape(s, p, n, h))
            inst_r = [torch.zeros_like(x) for x in strategy]
            inst_w = [torch.zeros_like(x) for x in strategy]
            inst_s = [x.new_zeros((tmpl.num_nodes,) + x.shape[1:3] + (1,))
                      for tmpl, x in zip(self.game.rounds, strategy)]
            public_pass(self.game, strategy, player, "cfr",
                        solver=_Buffers(inst_r, inst_w, t, inst_s), sample=sample)
            del strategy
            for r, (n, inverse, classes, weight, emb) in enumerate(cells):
                sums = []
                scale_cells = inst_s[r].expand(-1, -1, -1, h).contiguous()
                for inst in (inst_r[r], inst_w[r], scale_cells):
                    s, p = inst.shape[:2]
                    out = torch.zeros((s, p, len(classes) + 1), dtype=self.dtype,
                                      device=self.device)
                    out.index_add_(2, inverse, inst.reshape(s, p, -1).mul_(weight))
                    sums.append(out[:, :, :len(classes)])
                inst_r[r] = inst_w[r] = inst_s[r] = None  # type: ignore[call-overload]
                self._update_advisors(r, player, sums[0], sums[1], emb, decay, sums[2])
            self._refresh(player)

    def advisor_average(self) -> list[Tensor]:
        """Average advisor strategies per round [S_r, P_r, m_r] (normalised per node)."""
        out = []
        for r in range(len(self.game.rounds)):
            pol = torch.empty_like(self.average[r])
            for _, sl in self._node_slices(r):
                pol[sl] = normalize_dense(self.average[r][sl])
            out.append(pol)
        return out

    def average_class_policy(self) -> list[Tensor]:
        """Average strategy per class [S_r, P_r, C_r]."""
        return self.class_policy(self.advisor_average())

    def average_policy(self) -> list[Tensor]:
        """Average strategy as a full-game policy [S_r, P_r, B_r, H]."""
        return self.cell_policy(self.average_class_policy())

    def current_policy(self) -> list[Tensor]:
        """Current strategy as a full-game policy."""
        if not self.cell_strategy:
            return self.cell_policy(self.class_policy(self.advisor_strategy))
        return [s.clone() for s in self.cell_strategy]

    # ------------------------------------------------------------------ state
    def state_arrays(self) -> dict[str, np.ndarray]:
        """Arrays that determine the solver state: per round the advisor regrets
        ``regrets_<r>`` and cumulative strategies ``average_<r>`` ([S_r, P_r, m_r]) and value
        scales ``scale_<r>`` ([N_r, P_r, m_r]).  With
        :attr:`iteration` they resume a run bitwise (the current strategy is their regret
        matching; nothing else is carried between iterations)."""
        arrays: dict[str, np.ndarray] = {}
        for r in range(len(self.regrets)):
            arrays[f"regrets_{r}"] = self.regrets[r].cpu().numpy()
            arrays[f"average_{r}"] = self.average[r].cpu().numpy()
            arrays[f"scale_{r}"] = self.regret_scale[r].cpu().numpy()
        return arrays

    def load_state_arrays(self, arrays: dict[str, np.ndarray], iteration: int) -> None:
        """Restore :meth:`state_arrays` after ``iteration`` iterations (shapes and dtype
        checked: :class:`~tensorcfr.errors.CorruptFileError`) and re-derive the current
        strategies of both players."""
        from tensorcfr.errors import CorruptFileError

        if not isinstance(iteration, (int, np.integer)) or iteration < 0:
            raise CorruptFileError(f"checkpoint iteration must be >= 0, got {iteration!r}")
        want = str(self.dtype).removeprefix("torch.")
        for r in range(len(self.regrets)):
            self.regret_scale[r].zero_()
            for name, target in (("regrets", self.regrets[r]), ("average", self.average[r]),
                                 ("scale", self.regret_scale[r])):
                key = f"{name}_{r}"
                if key not in arrays and name == "scale":
                    continue  # written before the value scale existed: zero scale
                if key not in arrays:
                    raise CorruptFileError(f"checkpoint lacks {key}")
                arr = np.asarray(arrays[key])
                if tuple(arr.shape) != tuple(target.shape) or str(arr.dtype) != want:
                    raise CorruptFileError(f"checkpoint array {key} has shape {arr.shape} "
                                           f"{arr.dtype}, expected {tuple(target.shape)} {want}")
                target.copy_(torch.from_numpy(np.ascontiguousarray(arr)))
        self.iteration = int(iteration)
        for player in (0, 1):
            self._refresh(player)
