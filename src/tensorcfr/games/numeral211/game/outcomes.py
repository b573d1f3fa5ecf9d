"""Outcome features and ``outcome_classes``: classes of hands with identical win/tie/lose
profiles (the lossless "outcome" abstraction of the Numeral211 papers).

* turn: a (hand, board) feature is its (win, tie, lose) counts against every opponent hand
  that shares no card with it or the board;
* flop: the multiset of the hand's turn features over every possible turn card;
* preflop: the multiset of its flop features over every possible flop card.

Features are computed on the canonical boards of :mod:`.isomorphism` (isomorphic hands have
identical features) and numbered per round.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from tensorcfr.games.numeral211.game.config import GameConfig, hand_cards
from tensorcfr.games.numeral211.game.evaluator import board_hand_values
from tensorcfr.games.numeral211.game.isomorphism import isomorphism

__all__ = ["compatible_hands", "turn_outcomes", "outcome_features", "outcome_classes"]


def compatible_hands(config: GameConfig) -> np.ndarray:
    """[H, H] bool: the two hands share no card."""
    hands = hand_cards(config)
    return ~(hands[:, None, :, None] == hands[None, :, None, :]).any(axis=(-1, -2))


def turn_outcomes(config: GameConfig) -> np.ndarray:
    """[B_2, H, 3] int64: (win, tie, lose) counts of every hand on every canonical turn board
    against all opponent hands compatible with it and the board (0 for clashing hands)."""
    iso = isomorphism(config)
    values = board_hand_values(config, iso.boards[2])
    compat = compatible_hands(config)
    out = np.zeros(values.shape + (3,), dtype=np.int64)
    for b in range(len(values)):
        v = values[b]
        ok = v >= 0
        mask = compat & ok[None, :] & ok[:, None]
        out[b, :, 0] = (mask & (v[None, :] < v[:, None])).sum(1)
        out[b, :, 1] = (mask & (v[None, :] == v[:, None])).sum(1)
        out[b, :, 2] = (mask & (v[None, :] > v[:, None])).sum(1)
    return out


def _number_rows(rows: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, int]:
    """Number the distinct rows of ``rows[valid]``; -1 elsewhere."""
    ids = np.full(valid.shape, -1, dtype=np.int64)
    uniq, inverse = np.unique(rows[valid], axis=0, return_inverse=True)
    ids[valid] = inverse.reshape(-1)
    return ids, len(uniq)


@lru_cache(maxsize=4)
def outcome_features(config: GameConfig) -> tuple[tuple[np.ndarray, int], ...]:
    """Per round: (feature id table [B_r, H] int64, -1 for clashing hands; number of
    distinct features).  Round 2 ids number the (win, tie, lose) triples, round 1 the sorted
    multisets of turn ids, round 0 the sorted multisets of flop ids."""
    iso = isomorphism(config)
    n = config.num_cards
    turn_ids, turn_count = _number_rows(turn_outcomes(config), iso.valid[2])
    result = [(turn_ids, turn_count)]
    child_ids = turn_ids
    for r in (2, 1):
        parent, child, perm = iso.transitions(r)
        bp = iso.num_boards(r - 1)
        hands = config.num_hands
        # gathered[t, h] = id of hand h after concrete card t of the parent board
        gathered = child_ids[child[:, None], perm]
        per_parent = gathered.shape[0] // bp
        multiset = gathered.reshape(bp, per_parent, hands).transpose(0, 2, 1)
        multiset = np.sort(multiset, axis=-1)  # clashing cards (-1) sort first
        ids, count = _number_rows(multiset, iso.valid[r - 1])
        result.append((ids, count))
        child_ids = ids
    return tuple(reversed(result))


def outcome_classes(config: GameConfig) -> list[int]:
    """Number of classes of identical outcome features per round (preflop, flop, turn)."""
    return [count for _, count in outcome_features(config)]
