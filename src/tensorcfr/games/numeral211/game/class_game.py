"""Numeral211 as a public-tree game over suit-isomorphic *classes* (per-class storage).

:class:`Numeral211PublicGame` carries one entry per (canonical board, hand): 1 x 780 /
10 x 780 / 190 x 780 cells per round (148,200 on the turn).  Suit isomorphism makes many of
them equal: every (board, hand) of one orbit under the suit permutations has the same reach,
values, regrets and strategy whenever the strategies are suit-symmetric, which the solver's
iterates are (in exact arithmetic).  :class:`Numeral211ClassGame` keeps one entry per
isomorphic class instead (100 / 2,260 / 62,020): every round has one "board" (``B_r = 1``)
and ``C_r`` "hands" (``hands_per_round``), so round r's tensors are ``[S_r, P_r, 1, C_r]``.

An entry holds the value of *one member* of its class (the class representative: its first
(canonical board, hand) cell in :meth:`~.isomorphism.Isomorphism.class_table` order), so the
regrets are those of :class:`Numeral211PublicGame` at the representative cell; the root sum
over hands weighs each preflop class by its size (``root_weights``).

* chance forward: a class's reach is its parent class's (same hand, the board without its
  last card); chance backward: a class's value sums, over every concrete new card, the value
  of the class the (board + card, hand) falls in (``1 / cards left`` each; clashing cards 0);
* folds and showdowns are, per canonical board, linear maps of the opponent's reach over
  the board's classes [X, k] -> [X, k].  By default (:attr:`~Numeral211ClassGame.dense`)
  each is a matrix product per board with matrices built once (about 106 MiB for the full
  game in float32, counted in the memory estimate): a showdown matrix [k, k] of
  (compatible hands) x sign(strength difference), and for folds the rank N + 1 pair
  "per-card sums, then total - either card's sum" (the class's own hand added back);
* otherwise (matrices over :attr:`~Numeral211ClassGame.dense_max_bytes`, or ``dense``
  off): folds as one batched product of the classes' reach with their hands x card
  incidence, and showdowns as the cell game's sort sweep, gathered straight from the
  classes (the all-hands sums over each board's classes sorted by strength, the 39-hand
  per-card lists, the nine partial-sum lookups at the representatives only), board-major
  by default (the 729 exit x prefix rows innermost, so gathers copy whole rows).

Exact for suit-symmetric strategies, which is what the solver iterates and what
:func:`~.solver.exploitability` evaluates (it reads a policy at the class representatives).
Betting, stakes and hand strengths come from the cell game; nothing here knows CFR; sampled
iterations (``chance_children``) are not offered:
they run on the cell game.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from torch import Tensor

from tensorcfr.games.numeral211.game.evaluator import board_hand_values
from tensorcfr.games.numeral211.game.public_game import Numeral211PublicGame, _sorted_groups

__all__ = ["Numeral211ClassGame"]


def _prefix_sums_(x: Tensor) -> Tensor:
    """In-place cumulative sums along axis 1 of [A, L, X] (X contiguous): one vectorised
    add of whole [A, X] slices per position (measured about 10x faster than
    ``cumsum_(1)`` for L = 40, X = 729 on one CPU thread, torch 2.13)."""
    for i in range(1, x.shape[1]):
        x[:, i].add_(x[:, i - 1])
    return x


def _copy_transposed(dst: Tensor, src: Tensor) -> None:
    """``dst[...] = src.t()`` for 2-D ``src`` [a, b] and a (possibly strided) ``dst`` [b, a].
    On the CPU through NumPy, 64 rows of ``src`` at a time (measured 2-3x faster than
    torch's strided copy for [729, 650] blocks on one thread, torch 2.13); elsewhere torch."""
    if dst.device.type != "cpu":
        dst.copy_(src.t())
        return
    d, s = dst.numpy(), src.numpy()
    for i in range(0, s.shape[0], 64):
        d[:, i:i + 64] = s[i:i + 64].T


def _cumsum_from_zero(x: Tensor) -> Tensor:
    """Cumulative sums over the last axis with a leading 0: [..., L] -> [..., L+1], written
    straight into the padded buffer (measured 2-6x faster than the cell game's blocked
    matrix-product sums at these lengths, torch 2.13 on one CPU thread)."""
    out = torch.empty(x.shape[:-1] + (x.shape[-1] + 1,), dtype=x.dtype, device=x.device)
    out[..., 0] = 0
    torch.cumsum(x, -1, out=out[..., 1:])
    return out


class Numeral211ClassGame:
    """The per-class public-tree description of the variant of ``cells`` (a
    :class:`Numeral211PublicGame`, whose betting, stakes and showdown tables it reuses)."""

    chunk_elements: int = 2**22
    """Largest temporary of a fold or showdown chunk (elements; 16 MiB in float32): below
    glibc's 32 MiB mmap ceiling, so freed chunks are reused instead of page-faulted anew."""

    board_major: bool = True
    """Sweep showdowns with the rows innermost (:meth:`_showdown_by_boards`) or row-major
    (:meth:`_win_minus_lose`); the same numbers up to rounding."""

    dense: bool = True
    """Showdowns and folds as one matrix product per canonical board (:meth:`_dense_tables`)
    when those matrices fit :attr:`dense_max_bytes`; otherwise (or when False) the sort
    sweep and the batched per-card fold sums.  The same numbers up to rounding."""

    dense_showdowns: bool = True
    """Showdowns by the per-board matrices too (when :attr:`dense`; else the sort sweep):
    36 GFLOP per full-game pass, measured about 1.2x faster than the sweep on one CPU
    thread (docs/benchmarks/numeral211_speed.md) and the natural choice on a GPU."""

    dense_max_bytes: int = 2**29
    """Largest total size of the per-board showdown matrices (bytes) kept for :attr:`dense`
    (the full 40-card game needs about 80 MiB in float32)."""

    batched: bool = False
    """Run the per-board products as whole-game batched operations rather than a loop over
    the canonical boards: showdowns as one ``bmm`` over every board's matrix zero-padded to
    the largest board (:meth:`_batched_showdown`), folds by the batched per-card sums of
    :meth:`_compatible_sum`.  The same numbers up to rounding.  A loop issues one kernel
    per board (about 10,000 per full-game iteration), which bounds a GPU by its launch
    latency, so this is on by default off the CPU (set in ``__init__``); on one CPU thread
    the padding's extra arithmetic makes the loop the faster form."""

    def __init__(self, cells: Numeral211PublicGame) -> None:
        self.cells = cells
        self.config = cells.config
        self.dtype = cells.dtype
        self.device = cells.device
        if self.device.type != "cpu":  # kernels, not caches, bound a GPU: batch, large chunks
            self.batched = True
            self.chunk_elements = 2**26
        self.iso = cells.iso
        self.betting = cells.betting
        self.rounds = cells.rounds
        self.prefixes = cells.prefixes
        rounds = self.config.num_rounds
        self.num_boards = [1] * rounds
        h = cells.num_hands
        dev = self.device
        self.class_tables: list[np.ndarray] = []
        self.hands_per_round: list[int] = []
        self._rep_cell: list[Tensor] = []  # [C_r] flat (board * H + hand) of the representative
        self._expand: list[Tensor] = []  # [B_r * H] class of every cell, C_r where clashing
        for r in range(rounds):
            table, count = self.iso.class_table(r)
            flat = table.reshape(-1)
            ok = np.flatnonzero(flat >= 0)
            _, first = np.unique(flat[ok], return_index=True)
            self.class_tables.append(table)
            self.hands_per_round.append(int(count))
            self._rep_cell.append(torch.as_tensor(ok[first], device=dev))
            self._expand.append(torch.as_tensor(np.where(flat >= 0, flat, count), device=dev))
        self.num_hands = max(self.hands_per_round)
        sizes0 = np.bincount(self.class_tables[0][self.class_tables[0] >= 0],
                             minlength=self.hands_per_round[0])
        self._root_weights = torch.as_tensor(sizes0[None, :], dtype=self.dtype, device=dev)
        # chance: parent class of every class, and the classes below every class per card
        self._parent_class: list[Tensor | None] = [None]
        self._children: list[tuple[Tensor, float] | None] = [None]
        for r in range(1, rounds):
            reps = self._rep_cell[r].cpu().numpy()
            board, hand = reps // h, reps % h
            parent_board = cells._parent_of[r].cpu().numpy()[board]
            parent = self.class_tables[r - 1][parent_board, hand]
            assert (parent >= 0).all()
            self._parent_class.append(torch.as_tensor(parent, device=dev))
            trans_parent, trans_child, perm = self.iso.transitions(r)
            prev = self._rep_cell[r - 1].cpu().numpy()
            pb, ph = prev // h, prev % h
            # every parent board has the same number of concrete next cards
            order = np.argsort(trans_parent, kind="stable")
            per_board = len(trans_parent) // self.iso.num_boards(r - 1)
            rows = order.reshape(self.iso.num_boards(r - 1), per_board)  # [B_{r-1}, T]
            my_rows = rows[pb]  # [C_{r-1}, T] transition rows of each parent class
            child_board = trans_child[my_rows]
            child_hand = perm[my_rows, ph[:, None]]
            child_class = self.class_tables[r][child_board, child_hand]
            count = self.hands_per_round[r]
            index = np.where(child_class >= 0, child_class, count)
            _, _, weight = cells._trans[r]
            self._children.append((torch.as_tensor(index.reshape(-1), device=dev), weight))
        self._build_fold_tables()
        self._build_sweep()
        self._dense: dict[str, Any] | None = None

    def _build_fold_tables(self) -> None:
        """Per round: for every class, its board and the flat (board * N + card) positions
        of its representative hand's two cards (the card-removal lookups of folds)."""
        cells = self.cells
        h, n = cells.num_hands, self.config.num_cards
        c1 = cells._hand_c1.cpu().numpy()
        c2 = cells._hand_c2.cpu().numpy()
        self._fold: list[dict[str, Tensor]] = []
        for r in range(self.config.num_rounds):
            reps = self._rep_cell[r].cpu().numpy()
            board, hand = reps // h, reps % h
            t = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=self.device)  # noqa: E731
            # each board's classes (numbered board by board), padded with the zero entry C,
            # and how many of each class's hands on the board hold each card
            table = self.class_tables[r]
            count = self.hands_per_round[r]
            per_board = np.bincount(board, minlength=len(table))
            width = int(per_board.max())
            first = np.cumsum(per_board) - per_board
            members = np.full((len(table), width), count, dtype=np.int64)
            slot = np.arange(count) - first[board]
            members[board, slot] = np.arange(count)
            incidence = np.zeros((len(table), width, n))
            bb, hh = np.nonzero(table >= 0)
            where = table[bb, hh] - first[bb]
            np.add.at(incidence, (bb, where, c1[hh]), 1.0)
            np.add.at(incidence, (bb, where, c2[hh]), 1.0)
            self._fold.append({"board": t(board), "card1": t(board * n + c1[hand]),
                               "card2": t(board * n + c2[hand]),
                               "members": t(members.reshape(-1)), "width": width,
                               "incidence": torch.as_tensor(incidence, dtype=self.dtype,
                                                            device=self.device)})

    def _build_sweep(self) -> None:
        """Index tables of the showdown sweep over class entries: the all-hands sums over
        each board's classes sorted by strength (:meth:`_class_sort`), the cell game's
        per-card lists with every cell replaced by its class (clashing cells by the zero pad
        entry ``C``), and the partial-sum lookups at the representatives only."""
        cells = self.cells
        last = self.config.num_rounds - 1
        expand = self._expand[last]
        sweep = cells._sweep
        card_off = cells.num_boards[last] * (cells.num_hands + 1)
        rep = self._rep_cell[last]
        plus = sweep["plus"].reshape(4, -1).index_select(1, rep)
        minus = sweep["minus"].reshape(5, -1).index_select(1, rep)
        main = self._class_sort(last)
        # main sums: + cs[lo] + cs[hi] - cs[end]; card sums: + ccs[end1] + ccs[end2]
        # - ccs[lo1] - ccs[hi1] - ccs[lo2] - ccs[hi2]  (weaker - stronger, ties out)
        self._sweep = {
            "order": main["order"], "size": main["size"],
            "main_plus": main["plus"], "main_minus": main["minus"],
            "card_hands": expand.index_select(0, sweep["card_hands"]),
            "card_plus": (plus[2:] - card_off).reshape(-1),
            "card_minus": (minus[1:] - card_off).reshape(-1),
        }
        assert int(self._sweep["card_minus"].min()) >= 0
        self._build_board_major(main, card_off)

    def _build_board_major(self, main: dict[str, Tensor], card_off: int) -> None:
        """Tables of the board-major showdown (:meth:`_showdown_by_boards`): per board the
        rows to gather (its sorted classes, its per-card lists) and, per class, its
        lookups relative to its own board's block."""
        cells = self.cells
        last = self.config.num_rounds - 1
        b = cells.num_boards[last]
        n = self.config.num_cards
        width = main["order"].numel() // b
        rep = self._rep_cell[last]
        board = rep // cells.num_hands  # [C]; classes are numbered board by board
        sw = self._sweep
        main_block = width + 1
        card_block = n * n  # N lists of M + 1 = N partial sums per board
        main_local = torch.cat([sw["main_plus"].reshape(2, -1), sw["main_minus"].reshape(1, -1)]
                               ) - board * main_block
        card_local = torch.cat([sw["card_plus"].reshape(2, -1), sw["card_minus"].reshape(4, -1)]
                               ) - board * card_block
        assert int(main_local.min()) >= 0 and int(main_local.max()) < main_block
        assert int(card_local.min()) >= 0 and int(card_local.max()) < card_block
        counts = torch.bincount(board, minlength=b)
        assert bool((board[1:] >= board[:-1]).all())
        count = self.hands_per_round[last]
        # every list starts with the zero entry C: the gather lays out the exclusive sums
        main_rows = torch.nn.functional.pad(main["order"].reshape(b, width), (1, 0),
                                            value=count)
        size = torch.nn.functional.pad(main["size"].reshape(b, width), (1, 0))
        card_rows = torch.nn.functional.pad(sw["card_hands"].reshape(b * n, n - 1), (1, 0),
                                            value=count).reshape(b, n * n)
        self._chunk_plans: dict[int, list[dict[str, Any]]] = {}
        self._by_board = {"main_rows": main_rows, "size": size, "card_rows": card_rows,
                          "main_local": main_local, "card_local": card_local,
                          "first_class": torch.cumsum(counts, 0) - counts, "counts": counts,
                          "board": board, "width": width}

    def _unique_card_lists(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Per board, its distinct per-card lists and which one every card reads.

        A per-card list holds the classes of the hands on the board that contain the card,
        sorted by strength.  Cards that the board's suit symmetries map onto each other have
        lists with the same classes; ordered by (strength, class) inside each tie group
        they become equal sequences and are kept once (about 24 of the 40 lists of a turn
        board of the full game).  Reordering inside a tie group moves no lookup: every
        lookup reads a tie group's boundary or the list's end.  Returns the lists
        (``[u_b, N]`` int64 class entries, ``C`` = the zero entry) and ``[B, N]`` the index
        of every card's list among its board's."""
        bb = self._by_board
        n = self.config.num_cards
        last = self.config.num_rounds - 1
        rows = bb["card_rows"].cpu().numpy().reshape(-1, n, n)
        # the strength of every list entry's *cell* (clashing cells included: their places
        # in the lists are kept), the order the lookups were computed in
        cell_strength = board_hand_values(self.config, self.iso.boards[last]).reshape(-1)
        keys = cell_strength[self.cells._sweep["card_hands"].cpu().numpy()].reshape(
            -1, n, n - 1)
        lists, list_of = [], np.empty(rows.shape[:2], dtype=np.int64)
        for b, board_rows in enumerate(rows):
            # the leading zero entry stays first: it is not part of any tie group
            order = np.lexsort((board_rows[:, 1:], keys[b]), axis=1) + 1
            canonical = board_rows.copy()
            canonical[:, 1:] = np.take_along_axis(board_rows, order, axis=1)
            unique, inverse = np.unique(canonical, axis=0, return_inverse=True)
            lists.append(unique)
            list_of[b] = inverse.reshape(-1)
        return lists, list_of

    def _board_chunks(self, rows: int) -> list[dict[str, Any]]:
        """The board-major showdown's plan for ``rows`` reach rows (cached per count): groups
        of consecutive boards small enough that one group's gathered lists stay under
        :attr:`chunk_elements`, each with its gather indices relative to its own classes
        (the zero entry = one past them) and its lookups as a sparse CSR matrix
        [classes, main + card positions] with the nine +-1 entries of every class."""
        plan = self._chunk_plans.get(rows)
        if plan is not None:
            return plan
        bb = self._by_board
        n = self.config.num_cards
        width = bb["width"]
        count = self.hands_per_round[self.config.num_rounds - 1]
        per_board = (width + 1 + n * n) * rows
        step = max(1, int(self.chunk_elements // max(1, per_board)))
        nb_total = len(bb["counts"])
        signs = torch.tensor([1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0],
                             dtype=self.dtype, device=self.device)
        card_lists, card_list_of = self._unique_card_lists()
        plan = []
        for b0 in range(0, nb_total, step):
            b1 = min(nb_total, b0 + step)
            nb = b1 - b0
            c0 = int(bb["first_class"][b0])
            c1 = int(bb["first_class"][b1 - 1] + bb["counts"][b1 - 1])
            k = c1 - c0

            def local(global_rows: Tensor) -> Tensor:
                return torch.where(global_rows == count, k, global_rows - c0).reshape(-1)

            lists = card_lists[b0:b1]
            first_list = np.cumsum([0] + [len(x) for x in lists])[:-1]
            rel = bb["board"][c0:c1] - b0
            main_cols = bb["main_local"][:, c0:c1] + rel * (width + 1)
            # a lookup (board, card, position) reads the board's unique list of that card
            card_off = bb["card_local"][:, c0:c1].cpu().numpy()
            rel_np = rel.cpu().numpy()
            which = np.stack([card_list_of[b0 + rel_np][np.arange(len(rel_np)), card]
                              for card in card_off // n])
            card_cols = torch.as_tensor((first_list[rel_np] + which) * n + card_off % n,
                                        device=self.device) + nb * (width + 1)
            total_cols = nb * (width + 1) + int(first_list[-1] + len(lists[-1])) * n
            cols = torch.cat([main_cols, card_cols]).t().reshape(-1)  # [k * 9], row-major
            with warnings.catch_warnings():  # "sparse CSR support is in beta state"
                warnings.simplefilter("ignore", UserWarning)
                lookups = torch.sparse_csr_tensor(
                    torch.arange(0, 9 * k + 1, 9, device=self.device), cols, signs.repeat(k),
                    (k, total_cols), dtype=self.dtype, device=self.device,
                    check_invariants=False)
            plan.append({"classes": (c0, c1), "boards": nb, "card_lists": int(
                            first_list[-1] + len(lists[-1])),
                         "main_rows": local(bb["main_rows"][b0:b1]),
                         "size": bb["size"][b0:b1].reshape(-1, 1),
                         "card_rows": local(torch.as_tensor(np.concatenate(lists),
                                                            device=self.device)),
                         "lookups": lookups})
        self._chunk_plans[rows] = plan
        return plan

    def _showdown_by_boards(self, opp: Tensor) -> Tensor:
        """Opponent class reach [X, C] -> [X, C] like :meth:`_win_minus_lose`, with the rows
        X innermost: a few boards at a time, their classes' reach is transposed to [k, X]
        (a cache-sized block), so every gather copies whole rows of X numbers; the prefix
        sums run over those boards' lists and the nine partial-sum lookups of every class
        are one sparse-by-dense product (CSR, 9 entries a row) written straight into the
        output's columns."""
        bb = self._by_board
        x, _ = opp.shape
        n = self.config.num_cards
        width = bb["width"]
        out = torch.empty_like(opp)
        for chunk in self._board_chunks(x):
            c0, c1 = chunk["classes"]
            nb = chunk["boards"]
            block = torch.empty((c1 - c0 + 1, x), dtype=opp.dtype, device=opp.device)
            _copy_transposed(block[:-1], opp[:, c0:c1])
            block[-1] = 0
            main_len = nb * (width + 1)
            work = torch.empty((main_len + chunk["card_lists"] * n, x), dtype=opp.dtype,
                               device=opp.device)
            main = torch.index_select(block, 0, chunk["main_rows"], out=work[:main_len])
            main.mul_(chunk["size"]).view(nb, width + 1, x).cumsum_(1)
            card = torch.index_select(block, 0, chunk["card_rows"], out=work[main_len:])
            _prefix_sums_(card.view(chunk["card_lists"], n, x))
            _copy_transposed(out[:, c0:c1], torch.sparse.mm(chunk["lookups"], work))
        return out

    def _board_ranges(self, r: int) -> list[tuple[int, int, int]]:
        """Round r's canonical boards that hold classes, as (board, first class, end) with
        the classes numbered board by board."""
        board = self._rep_cell[r].cpu().numpy() // self.cells.num_hands
        assert (board[1:] >= board[:-1]).all()
        counts = np.bincount(board, minlength=len(self.class_tables[r]))
        ends = np.cumsum(counts)
        return [(b, int(e - c), int(e)) for b, (c, e) in enumerate(zip(counts, ends)) if c]

    def dense_bytes(self, element_size: int) -> int:
        """Memory of the dense showdown and fold matrices (:meth:`_dense_tables`, bytes):
        per board of the last round its [k, k] showdown matrix, per board of every round
        two [k, N] fold factors (an upper bound: the first factor is a view of the fold
        tables' card incidence); when :attr:`batched`, the zero-padded [B, k_max, k_max]
        showdown blocks alone."""
        n = self.config.num_cards
        last = self.config.num_rounds - 1
        ranges = self._board_ranges(last)
        if self.batched:  # one [k_max, k_max] block per board; folds need no tables
            return int(len(ranges) * max(c1 - c0 for _, c0, c1 in ranges) ** 2 * element_size)
        total = sum((c1 - c0) ** 2 for _, c0, c1 in ranges)
        total += sum(2 * n * (c1 - c0) for r in range(self.config.num_rounds)
                     for _, c0, c1 in self._board_ranges(r))
        return int(total * element_size)

    def prepare(self) -> None:
        """Build the dense per-board matrices now (when :attr:`dense` keeps them; about
        1.5 s for the full game) rather than in the first pass that needs them: solvers
        call this when they are created, so an iteration's time is the iteration's."""
        self._use_dense()

    def _use_dense(self) -> bool:
        if not self.dense:
            return False
        if self._dense is None:  # decided once: built, or {} when it would not fit
            size = self.dense_bytes(torch.empty((), dtype=self.dtype).element_size())
            self._dense = self._dense_tables() if size <= self.dense_max_bytes else {}
        return bool(self._dense)

    def _dense_tables(self) -> dict[str, Any]:
        """Per canonical board b with classes ``c0:c1`` (k of them), the linear maps of its
        folds and showdowns on opponent class reach [X, k] -> [X, k]:

        * showdown: ``W_b`` [k, k], ``W_b[j, i]`` = (hands of class j on the board that
          share no card with class i's representative) x sign(strength_i - strength_j), so
          that ``values_b = reach_b @ W_b`` is compatible weaker minus stronger reach;
        * fold: the compatible count matrix has rank N + 1: ``reach_b @ inc_b`` [X, N] are
          the per-card sums (``inc_b[j, c]`` = hands of class j holding card c: the fold
          tables' incidence of board b, a view), and
          ``per_card @ pick_b`` with ``pick_b[c, i]`` = 1/2 - [c in class i's representative]
          gives total - either card's sum; + ``reach_b`` adds back the class's own hand.

        Built in float64 with NumPy, stored in the game's dtype and device."""
        cells = self.cells
        h = cells.num_hands
        hand_cards = cells._incidence.cpu().numpy().astype(np.float64)  # [H, N] 0/1
        compatible = (hand_cards @ hand_cards.T) == 0  # [H, H] no shared card
        t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=self.dtype,  # noqa: E731
                                      device=self.device)
        folds: list[list[tuple[int, int, Tensor, Tensor]]] = []
        rounds_with_fold_factors = [] if self.batched else range(self.config.num_rounds)
        for r in rounds_with_fold_factors:  # batched folds use the per-card sums instead
            reps = self._rep_cell[r].cpu().numpy() % h
            incidence = self._fold[r]["incidence"]  # [B, width, N], board b's classes first
            folds.append([(k0, k1, incidence[b, :k1 - k0], t(0.5 - hand_cards[reps[k0:k1]].T))
                          for b, k0, k1 in self._board_ranges(r)])
        last = self.config.num_rounds - 1
        strength = board_hand_values(self.config, self.iso.boards[last]).astype(np.float64)
        table = self.class_tables[last]
        reps = self._rep_cell[last].cpu().numpy() % h
        showdowns = []
        for b, k0, k1 in self._board_ranges(last):
            row = table[b]
            valid = np.flatnonzero(row >= 0)
            rep = reps[k0:k1]
            signed = np.sign(strength[b, rep][:, None] - strength[b, valid][None, :])
            signed *= compatible[rep][:, valid]  # [k, valid hands]
            order = np.argsort(row[valid], kind="stable")
            cls_sorted = row[valid][order] - k0
            starts = np.flatnonzero(np.r_[True, cls_sorted[1:] != cls_sorted[:-1]])
            assert len(starts) == k1 - k0
            matrix = np.add.reduceat(signed[:, order], starts, axis=1)  # [i, j]
            showdowns.append((k0, k1, t(matrix.T)))
        if self.batched:  # folds run the batched per-card sums: no per-board factors
            return {"padded": self._pad_showdowns(showdowns)}
        return {"folds": folds, "showdowns": showdowns}

    def _pad_showdowns(self, showdowns: list[tuple[int, int, Tensor]]) -> dict[str, Tensor]:
        """The per-board showdown matrices as one zero-padded block tensor for
        :meth:`_batched_showdown`: ``matrices`` [B, k_max, k_max], ``gather`` [B * k_max]
        (the class in each board's slot, the padding column C where the board has fewer)
        and ``scatter`` [C] (each class's slot ``b * k_max + i``)."""
        count = self.hands_per_round[-1]
        width = max(k1 - k0 for k0, k1, _ in showdowns)
        matrices = torch.zeros((len(showdowns), width, width), dtype=self.dtype,
                               device=self.device)
        gather = np.full((len(showdowns), width), count, dtype=np.int64)
        scatter = np.empty(count, dtype=np.int64)
        for b, (k0, k1, matrix) in enumerate(showdowns):
            matrices[b, :k1 - k0, :k1 - k0] = matrix
            gather[b, :k1 - k0] = np.arange(k0, k1)
            scatter[k0:k1] = b * width + np.arange(k1 - k0)
        return {"matrices": matrices,
                "gather": torch.as_tensor(gather.reshape(-1), device=self.device),
                "scatter": torch.as_tensor(scatter, device=self.device)}

    def _batched_showdown(self, opp: Tensor) -> Tensor:
        """Opponent class reach [X, C] -> [X, C] (as :meth:`_dense_showdown`): every board's
        product at once, ``[B, X, k_max] @ [B, k_max, k_max]``, on the zero-padded blocks."""
        assert self._dense is not None
        padded = self._dense["padded"]
        x = opp.shape[0]
        blocks = torch.nn.functional.pad(opp, (0, 1)).index_select(1, padded["gather"])
        blocks = blocks.reshape(x, len(padded["matrices"]), -1).transpose(0, 1)
        out = torch.bmm(blocks, padded["matrices"]).transpose(0, 1).reshape(x, -1)
        return out.index_select(1, padded["scatter"])

    def _dense_showdown(self, opp: Tensor) -> Tensor:
        """Opponent class reach [X, C] -> [X, C] (as :meth:`_win_minus_lose`): one product
        with each board's showdown matrix, written into the output's columns."""
        assert self._dense is not None
        out = torch.empty_like(opp)
        for k0, k1, matrix in self._dense["showdowns"]:
            torch.mm(opp[:, k0:k1], matrix, out=out[:, k0:k1])
        return out

    def _dense_compatible_sum(self, r: int, opp: Tensor) -> Tensor:
        """Opponent class reach [X, C_r] -> [X, C_r] (as :meth:`_compatible_sum`): per board
        its per-card sums, then total - either card's sum + own, as two small products."""
        assert self._dense is not None
        out = torch.empty_like(opp)
        for k0, k1, inc, pick in self._dense["folds"][r]:
            reach = opp[:, k0:k1]
            torch.addmm(reach, reach @ inc, pick, out=out[:, k0:k1])
        return out

    def _class_sort(self, r: int) -> dict[str, Tensor]:
        """The all-hands part of the sweep over classes: per board its classes sorted by
        hand strength (padded to the largest board's count with the zero entry ``C``),
        each weighted by its hands on the board; the partial-sum lookups of every class
        (weaker = before its tie group, stronger = after it)."""
        cells = self.cells
        h = cells.num_hands
        table = self.class_tables[r]
        count = self.hands_per_round[r]
        reps = self._rep_cell[r].cpu().numpy()
        board = reps // h
        strength = board_hand_values(self.config, self.iso.boards[r]).reshape(-1)[reps]
        size = np.bincount(table[table >= 0], minlength=count).astype(np.float64)
        per_board = np.bincount(board, minlength=len(table))
        width = int(per_board.max())
        order = np.lexsort((strength, board))  # classes by board, then strength
        start = np.cumsum(per_board) - per_board
        slot = np.arange(count) - start[board[order]]
        sorted_cls = np.full((len(table), width), count, dtype=np.int64)
        sorted_val = np.full((len(table), width), strength.max() + 1, dtype=strength.dtype)
        sorted_cls[board[order], slot] = order
        sorted_val[board[order], slot] = strength[order]
        _, lo, hi = _sorted_groups(sorted_val)  # already sorted: identity order
        position = np.empty(count, dtype=np.int64)
        position[order] = slot
        base = board * (width + 1)
        t = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=self.device)  # noqa: E731
        padded_size = np.append(size, 0.0)[sorted_cls]
        return {"order": t(sorted_cls.reshape(-1)),
                "size": torch.as_tensor(padded_size.reshape(-1), dtype=self.dtype,
                                        device=self.device),
                "plus": t(np.stack([base + lo[board, position],
                                    base + hi[board, position]]).reshape(-1)),
                "minus": t(base + width)}

    def _win_minus_lose(self, opp: Tensor) -> Tensor:
        """Opponent class reach [X, C] -> [X, C]: compatible weaker minus stronger opponent
        reach of every class's representative hand (the sweep of
        :meth:`Numeral211PublicGame._win_minus_lose`, gathering straight from the classes)."""
        cells = self.cells
        sw = self._sweep
        last = self.config.num_rounds - 1
        x = opp.shape[0]
        b, n = cells.num_boards[last], self.config.num_cards
        padded = torch.nn.functional.pad(opp, (0, 1))
        cs = _cumsum_from_zero(padded.index_select(1, sw["order"]).mul_(sw["size"]).reshape(
            x, b, -1)).reshape(x, -1)
        out = cs.index_select(1, sw["main_plus"]).reshape(x, 2, -1).sum(1)
        out.sub_(cs.index_select(1, sw["main_minus"]))
        del cs
        ccs = _cumsum_from_zero(padded.index_select(1, sw["card_hands"]).reshape(
            x, b * n, n - 1)).reshape(x, -1)
        out.add_(ccs.index_select(1, sw["card_plus"]).reshape(x, 2, -1).sum(1))
        out.sub_(ccs.index_select(1, sw["card_minus"]).reshape(x, 4, -1).sum(1))
        return out

    # ------------------------------------------------------------------ helpers
    def root_weights(self) -> Tensor:
        """[B_0, H_0]: concrete hands each root entry stands for (the preflop class sizes)."""
        return self._root_weights

    def workspace_bytes(self, element_size: int) -> int:
        """Temporary memory of folds, showdowns and chance sums (bytes): the cell game's
        workspace (an upper bound for the class sweeps) plus the dense per-board matrices
        (:meth:`dense_bytes`) where :attr:`dense` keeps them."""
        dense = self.dense_bytes(element_size)
        kept = dense if self.dense and dense <= self.dense_max_bytes else 0
        return self.cells.workspace_bytes(element_size) + kept

    # ------------------------------------------------------------------ protocol
    def initial_reach(self) -> Tensor:
        """[1, C_0] ones."""
        return torch.ones((1, self.hands_per_round[0]), dtype=self.dtype, device=self.device)

    def chance_forward(self, r: int, reach: Tensor) -> Tensor:
        """Reach [X, 1, C_{r-1}] -> [X, 1, C_r]: each class takes its parent class's reach."""
        parent = self._parent_class[r]
        assert parent is not None
        return reach.index_select(2, parent)

    def chance_backward(self, r: int, values: Tensor) -> Tensor:
        """Values [X, 1, C_r] -> [X, 1, C_{r-1}]: (1 / cards left) x the sum over every
        concrete new card of the value of the class (board + card, hand) falls in."""
        children = self._children[r]
        assert children is not None
        index, weight = children
        lead = values.shape[0]
        count = self.hands_per_round[r - 1]
        padded = torch.nn.functional.pad(values.reshape(lead, -1), (0, 1))
        out = torch.empty((lead, count), dtype=values.dtype, device=values.device)
        chunk = max(1, int(2**25 // max(1, index.numel())))
        for start in range(0, lead, chunk):
            part = padded[start:start + chunk].index_select(1, index)
            torch.sum(part.reshape(part.shape[0], count, -1), dim=2,
                      out=out[start:start + chunk])
        return out.mul_(weight).reshape(lead, 1, count)

    def terminal_values(self, r: int, k: int, player: int, opp_reach: Tensor) -> Tensor:
        """Fold k of round r [P_r, 1, C_r]: +-stake x compatible opponent reach x the deal
        probability, computed on the expanded cells and read at the representatives."""
        cells = self.cells
        folder = cells.betting[r].fold_player[k]
        stake = cells._fold_stake[r][k] * (cells.deal_factor if folder != player
                                           else -cells.deal_factor)
        rows = opp_reach.shape[0]
        if self._use_dense() and not self.batched:
            out = self._dense_compatible_sum(r, opp_reach.reshape(rows, -1))
            return out.mul_(stake[:, None]).reshape(opp_reach.shape)
        out = torch.empty_like(opp_reach)
        chunk = max(1, int(self.chunk_elements // max(1, self._expand[r].numel())))
        for start in range(0, rows, chunk):
            out[start:start + chunk, 0] = self._compatible_sum(r, opp_reach[start:start + chunk])
        return out.mul_(stake[:, None, None])

    def _compatible_sum(self, r: int, opp_reach: Tensor) -> Tensor:
        """Opponent class reach [X, 1, C_r] -> [X, C_r]: the reach summed over the
        opponent hands that share no card with each class's representative hand (total of
        its board - hands holding either card + itself; the per-card sums are one batched
        product per board of its classes with their hands x card incidence)."""
        cells = self.cells
        fold = self._fold[r]
        x = opp_reach.shape[0]
        padded = torch.nn.functional.pad(opp_reach.reshape(x, -1), (0, 1))
        by_board = padded.index_select(1, fold["members"]).reshape(x, cells.num_boards[r],
                                                                    fold["width"])
        per_card = torch.einsum("xbk,bkn->xbn", by_board, fold["incidence"]).reshape(x, -1)
        total = per_card.reshape(x, cells.num_boards[r], -1).sum(-1).mul_(0.5)  # [X, B]
        out = total.index_select(1, fold["board"])
        out.sub_(per_card.index_select(1, fold["card1"]))
        out.sub_(per_card.index_select(1, fold["card2"]))
        return out.add_(opp_reach.reshape(x, -1))

    def final_values(self, player: int, opp_reach: Tensor) -> Tensor:
        """Showdowns [E, P, 1, C]: stake x (compatible weaker - stronger opponent reach) x
        the deal probability (the cell game's sort sweep on expanded cells, read at the
        representatives)."""
        cells = self.cells
        last = self.config.num_rounds - 1
        e, p = opp_reach.shape[:2]
        count = self.hands_per_round[last]
        flat = opp_reach.reshape(e * p, count)
        if self.dense_showdowns and self._use_dense():
            out = self._batched_showdown(flat) if self.batched else self._dense_showdown(flat)
        elif self.board_major:
            out = self._showdown_by_boards(flat)
        else:
            out = torch.empty((e * p, count), dtype=opp_reach.dtype, device=opp_reach.device)
            chunk = max(1, int(self.chunk_elements // max(1, self._sweep["card_hands"].numel())))
            for start in range(0, e * p, chunk):
                out[start:start + chunk] = self._win_minus_lose(flat[start:start + chunk])
        out = out.reshape(e, p, 1, count)
        return out.mul_((cells._showdown_stake * cells.deal_factor)[:, :, None, None])
