"""Suit isomorphism of Numeral211: canonical boards, hand permutations and class indices.

Suits carry no value, so permuting the suits of every card maps a deal to an equivalent one.
Boards are kept in a canonical form per round (the batch the solver works on):

* round 0 (preflop): one empty board;
* round 1 (flop): the flop card of each rank in suit 0 (``R`` boards, each standing for ``S``
  concrete flop cards);
* round 2 (turn): a canonical flop plus a turn card of suit 0 (same suit as the flop card,
  ``R - 1`` ranks) or of suit 1 (a different suit, ``R`` ranks, standing for ``S - 1``
  concrete cards): ``R * (2R - 1)`` boards for 4 suits.

A concrete board maps to its canonical board with a suit permutation ``pi``; a hand ``h`` on
the concrete board plays exactly as hand ``pi(h)`` on the canonical one
(:meth:`Isomorphism.canonical_board`).  An *isomorphic class* of round r is an orbit of
(private cards, public cards) under all suit permutations; classes are numbered per round
(:meth:`Isomorphism.class_table`).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from tensorcfr.games.numeral211.game.config import GameConfig, hand_cards, hand_index_table

__all__ = ["Isomorphism", "isomorphism"]


class Isomorphism:
    """Suit-isomorphism tables of one game variant (build with :func:`isomorphism`).

    Attributes (numpy, int64):
      ``perms`` [G, S]: every suit permutation (``perms[g][s]`` = image of suit s);
      ``hand_perm`` [G, H]: ``hand_perm[g][h]`` = index of hand h with suits mapped by g;
      ``boards[r]`` [B_r, k_r]: the canonical boards of round r (k_r = 0, 1, 2 cards);
      ``valid[r]`` [B_r, H] bool: hands sharing no card with the board.
    """

    def __init__(self, config: GameConfig) -> None:
        self.config = config
        s, n = config.suits, config.num_cards
        self.perms = np.array(list(itertools.permutations(range(s))), dtype=np.int64)
        cards = np.arange(n)
        ranks, suits = cards // s, cards % s
        # card_perm[g][c] = card c with its suit mapped by perms[g]
        self.card_perm = ranks[None, :] * s + self.perms[:, suits]
        hands = hand_cards(config)
        index = hand_index_table(config)
        self.hand_perm = index[self.card_perm[:, hands[:, 0]], self.card_perm[:, hands[:, 1]]]
        self._identity = int(np.flatnonzero((self.perms == np.arange(s)).all(1))[0])
        flop = np.arange(config.num_ranks) * s  # rank r, suit 0
        turn = []
        for f in flop:
            for r in range(config.num_ranks):
                if r * s != f:
                    turn.append((f, r * s))
            if s >= 2:
                for r in range(config.num_ranks):
                    turn.append((f, r * s + 1))
        self.boards = [np.zeros((1, 0), dtype=np.int64), flop[:, None].astype(np.int64),
                       np.array(turn, dtype=np.int64)]
        self._board_lookup = [{(): 0}, {(int(c),): i for i, c in enumerate(flop)},
                              {tuple(int(x) for x in b): i for i, b in enumerate(turn)}]
        self.valid = []
        for boards in self.boards:
            clash = (hands[None, :, :, None] == boards[:, None, None, :]).any(axis=(-1, -2))
            self.valid.append(~clash)
        self._class_tables: dict[int, tuple[np.ndarray, int]] = {}

    # ------------------------------------------------------------------ boards
    def num_boards(self, r: int) -> int:
        """Canonical boards B_r of round r."""
        return len(self.boards[r])

    def _perm_index(self, mapping: dict[int, int]) -> int:
        """Index of a suit permutation with the given (partial) suit mapping."""
        for g, perm in enumerate(self.perms):
            if all(perm[a] == b for a, b in mapping.items()):
                return g
        raise AssertionError(mapping)  # pragma: no cover

    def canonical_board(self, r: int, board: list[int] | tuple[int, ...]) -> tuple[int, int]:
        """(canonical board index, permutation index g) of a concrete board of round r.

        Hand h on ``board`` plays as hand ``hand_perm[g][h]`` on ``boards[r][index]``.
        """
        board = [int(c) for c in board]
        s = self.config.suits
        if r == 0:
            return 0, self._identity
        mapping = {board[0] % s: 0}
        if r == 2 and board[1] % s != board[0] % s:
            mapping[board[1] % s] = 1
        g = self._perm_index(mapping)
        key = tuple(int(self.card_perm[g][c]) for c in board)
        return self._board_lookup[r][key], g

    def transitions(self, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Concrete chance transitions from round r-1's canonical boards to round r's.

        Returns ``parent`` [T], ``child`` [T] (canonical board indices) and ``perm`` [T, H]:
        one row per (canonical parent board, concrete new card); the concrete board equals
        canonical board ``child`` after the suit permutation whose hand map is ``perm``.
        """
        parents, children, perms = [], [], []
        for b, parent in enumerate(self.boards[r - 1]):
            for card in range(self.config.num_cards):
                if card in parent:
                    continue
                child, g = self.canonical_board(r, list(parent) + [card])
                parents.append(b)
                children.append(child)
                perms.append(self.hand_perm[g])
        return (np.array(parents, dtype=np.int64), np.array(children, dtype=np.int64),
                np.stack(perms))

    def stabilizer(self, r: int, b: int) -> np.ndarray:
        """Permutation indices that fix every card of canonical board b of round r."""
        board = self.boards[r][b]
        keep = [g for g in range(len(self.perms))
                if all(self.card_perm[g][c] == c for c in board)]
        return np.array(keep, dtype=np.int64)

    # ------------------------------------------------------------------ classes
    def class_table(self, r: int) -> tuple[np.ndarray, int]:
        """Isomorphic class of every (canonical board, hand) of round r.

        Returns ``(table [B_r, H] int64, num_classes)``; -1 where the hand clashes with the
        board.  Classes are numbered 0.. in (board, smallest hand index of the orbit) order.
        """
        if r not in self._class_tables:
            rows = []
            for b in range(self.num_boards(r)):
                stab = self.stabilizer(r, b)
                rep = self.hand_perm[stab].min(axis=0)
                rows.append(np.where(self.valid[r][b], rep, -1))
            reps = np.stack(rows)
            keys = np.where(reps >= 0, np.arange(len(reps))[:, None] * self.config.num_hands
                            + reps, -1)
            uniq, inverse = np.unique(keys, return_inverse=True)
            inverse = inverse.reshape(keys.shape)
            offset = 1 if uniq[0] == -1 else 0
            table = np.where(keys >= 0, inverse - offset, -1).astype(np.int64)
            self._class_tables[r] = (table, len(uniq) - offset)
        return self._class_tables[r]

    def class_of(self, r: int, private: list[int], board: list[int]) -> int:
        """Isomorphic class index (round r) of concrete private cards and board."""
        b, g = self.canonical_board(r, board)
        h = int(hand_index_table(self.config)[private[0], private[1]])
        table, _ = self.class_table(r)
        return int(table[b, self.hand_perm[g][h]])

    def isomorphic_classes(self) -> list[int]:
        """Number of suit-isomorphic classes of (private, public) cards per round."""
        return [self.class_table(r)[1] for r in range(3)]


@lru_cache(maxsize=8)
def isomorphism(config: GameConfig) -> Isomorphism:
    """The (cached) :class:`Isomorphism` of ``config``."""
    return Isomorphism(config)
