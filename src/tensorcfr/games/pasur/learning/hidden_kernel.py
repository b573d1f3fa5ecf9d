"""The hidden model's decision in compiled code: feature rows, forest, choice (numba).

:func:`.hidden_model.decision_rows` is the reference (plain Python, used for training); this
module computes the same rows, float32 for float32, from an observation packed into
integers, then scores them with the compiled forest (:mod:`.compiled_forest`) and picks the
first play of the highest score, in one call of a few microseconds. Equality with
``decision_rows`` and with XGBoost's choices is tested on every decision of hundreds of
games.

:func:`pack_decision` packs what the kernels read, from the observation only (a card set is
a 52-bit mask, bit ``c`` = card ``c``): ``info`` int64 [:data:`INFO_SIZE`] (the ``I_*``
slots below) and ``plays`` int64 [N, 2] (each legal play's card and captured-cards mask).
The rows are float32 [N, 75] in :data:`.hidden_model.FEATURE_COLUMNS` order. Nothing here
reads a game state; the greedy facts repeat :func:`.greedy.play_facts` and the threats of a
lay :func:`.greedy._threats` (same rules, same order, tested equal).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import NUM_CARDS, TEN_OF_DIAMONDS, TWO_OF_CLUBS
from tensorcfr.games.pasur.engine.observation import Observation
from tensorcfr.games.pasur.learning.compiled_forest import predict_rows

__all__ = ["INFO_SIZE", "NUM_FEATURES", "choose_index", "decision_features",
           "pack_decision"]

NUM_FEATURES = 75
(I_PLAYER, I_PLAY_INDEX, I_HAND_LEN, I_OPP_HAND, I_UNSEEN_LEN, I_POOL_LEN, I_MY_SURS,
 I_OPP_SURS, I_LAST, I_HAND, I_POOL, I_UNSEEN, I_MY_PILE, I_OPP_PILE) = range(14)
INFO_SIZE = 14
"""``I_LAST``: the last capturer seen from the mover, -1 nobody yet, 1 the mover, 0 the
opponent; ``I_HAND`` .. ``I_OPP_PILE``: card masks."""

_BIT = tuple(1 << c for c in range(NUM_CARDS))
_CARD_POINTS = np.array([(1 if c < 4 or 40 <= c < 44 else 0) + (3 if c == TEN_OF_DIAMONDS else 0)
                         + (2 if c == TWO_OF_CLUBS else 0) for c in range(NUM_CARDS)],
                        dtype=np.int64)
"""Points of each card in a pile (greedy's ``CARD_POINTS``; a constant of the kernels)."""
_LAST_PLAY = rules.NUM_PLAYS - 1
_LAST_ROUND = rules.NUM_ROUNDS - 1
_PER_ROUND = rules.PLAYS_PER_ROUND
_SUR = rules.SUR_POINTS
_BONUS = rules.CLUBS_BONUS
_FOR_BONUS = rules.CLUBS_FOR_BONUS
_TEN_D = TEN_OF_DIAMONDS
_TWO_C = TWO_OF_CLUBS


def pack_decision(obs: Observation, legal: Sequence[rules.Action], info: np.ndarray,
                  plays: np.ndarray) -> None:
    """Write ``obs`` and its ``legal`` plays into ``info`` int64 [INFO_SIZE] and ``plays``
    int64 [len(legal), 2] (see the module's docstring). Reads the observation only."""
    me = obs.player
    bit = _BIT.__getitem__
    last = obs.last_capturer
    info[:] = (me, obs.play_index, len(obs.hand), obs.opponent_hand_size, len(obs.unseen),
               len(obs.pool), obs.surs[me], obs.surs[1 - me],
               -1 if last is None else int(last == me),
               sum(map(bit, obs.hand)), sum(map(bit, obs.pool)), sum(map(bit, obs.unseen)),
               sum(map(bit, obs.piles[me])), sum(map(bit, obs.piles[1 - me])))
    for i, (card, captured) in enumerate(legal):
        plays[i, 0] = card
        plays[i, 1] = sum(map(bit, captured))


@njit(cache=True)
def _pile_score(mask: int, surs: int) -> int:
    """:func:`rules.score_pile`'s total: card points, the clubs bonus, 5 a Sur."""
    points = 0
    clubs = 0
    for c in range(52):
        if (mask >> c) & 1:
            points += _CARD_POINTS[c]
            if c % 4 == 0:
                clubs += 1
    return points + (_BONUS if clubs >= _FOR_BONUS else 0) + _SUR * surs


@njit(cache=True)
def _clubs(mask: int) -> int:
    count = 0
    for c in range(0, 52, 4):
        count += (mask >> c) & 1
    return count


@njit(cache=True)
def _threats(card: int, pool: int, unseen: int) -> int:
    """Unseen cards that could capture the laid ``card`` from ``pool`` (greedy's threats)."""
    count = 0
    if card < 40:
        reach = 1  # bit s: some subset of the other numeric pool cards sums to s
        for c in range(40):
            if c != card and (pool >> c) & 1:
                reach |= (reach << (c // 4 + 1)) & 0xFFF
        need = 11 - (card // 4 + 1)
        for u in range(52):
            if (unseen >> u) & 1:
                if u < 40:
                    rest = need - (u // 4 + 1)
                    if rest >= 0 and (reach >> rest) & 1:
                        count += 1
                elif u < 44:
                    count += 1
        return count
    low = 40 if card < 44 else (44 if card < 48 else 48)
    for u in range(low, low + 4):
        count += (unseen >> u) & 1
    return count


@njit(cache=True)
def decision_features(info: np.ndarray, plays: np.ndarray, rows: np.ndarray) -> None:
    """Write the feature rows of the N legal plays ``plays`` [N, 2] into ``rows`` float32
    [>= N, 75] (:func:`.hidden_model.decision_rows`'s numbers)."""
    n = plays.shape[0]
    play_index = info[I_PLAY_INDEX]
    hand, pool, unseen = info[I_HAND], info[I_POOL], info[I_UNSEEN]
    my_pile, opp_pile = info[I_MY_PILE], info[I_OPP_PILE]
    my_clubs, opp_clubs = _clubs(my_pile), _clubs(opp_pile)
    pool_len = info[I_POOL_LEN]
    # ---- the decision's prefix (columns 0..58), written in row 0 then copied
    row = rows[0]
    row[0] = play_index // _PER_ROUND
    row[1] = play_index % _PER_ROUND
    row[2] = info[I_HAND_LEN]
    row[3] = info[I_OPP_HAND]
    row[4] = info[I_UNSEEN_LEN] - info[I_OPP_HAND]
    row[5] = (_pile_score(my_pile, info[I_MY_SURS])
              - _pile_score(opp_pile, info[I_OPP_SURS]))
    row[6] = my_clubs
    row[7] = opp_clubs
    row[8] = pool_len
    pool_sum = pool_points = 0
    for c in range(52):
        if (pool >> c) & 1:
            if c < 40:
                pool_sum += c // 4 + 1
            pool_points += _CARD_POINTS[c]
    row[9] = pool_sum
    row[10] = pool_points
    row[11] = _clubs(pool)
    for k in range(20, 59):
        row[k] = 0
    for c in range(52):
        if (unseen >> c) & 1:
            row[20 + c // 4] += 1
        if (pool >> c) & 1:
            row[33 + c // 4] += 1
        if (hand >> c) & 1:
            row[46 + c // 4] += 1
    row[12] = row[20]
    row[13] = row[30]
    row[14] = (unseen >> _TEN_D) & 1
    row[15] = (unseen >> _TWO_C) & 1
    row[16] = _clubs(unseen)
    row[17] = 1 if info[I_PLAYER] == 0 else 0
    row[18] = info[I_LAST]
    row[19] = n
    for i in range(1, n):
        for k in range(59):  # a loop: a slice assignment here costs ~4 s of compilation
            rows[i, k] = row[k]
    # ---- each play: greedy's facts (columns 59..68), then the card's own facts
    last_play = play_index == _LAST_PLAY
    sur_possible = play_index // _PER_ROUND < _LAST_ROUND
    for i in range(n):
        card, captured = plays[i, 0], plays[i, 1]
        r = rows[i]
        taken = 0
        for c in range(52):
            taken += (captured >> c) & 1
        if captured != 0:
            both = captured | (np.int64(1) << card)
            points = clubs = aces = jacks = 0
            for c in range(52):
                if (both >> c) & 1:
                    points += _CARD_POINTS[c]
                    if c % 4 == 0:
                        clubs += 1
                    if c < 4:
                        aces += 1
                    elif 40 <= c < 44:
                        jacks += 1
            left = pool_len - taken
            if left == 0 and sur_possible and not (40 <= card < 44):
                points += _SUR
            if last_play and left:
                rest = pool & ~captured
                for c in range(52):
                    if (rest >> c) & 1:
                        points += _CARD_POINTS[c]
                        if c % 4 == 0:
                            clubs += 1
            if my_clubs < _FOR_BONUS <= my_clubs + clubs:
                points += _BONUS
            r[59] = points
            r[60] = clubs
            r[61] = aces
            r[62] = jacks
            r[63] = (both >> _TEN_D) & 1
            r[64] = (both >> _TWO_C) & 1
            r[65] = left
            r[66] = 0
            r[67] = 0
            r[68] = 0
        else:
            points = 0
            last = info[I_LAST]
            if last_play and last >= 0:
                rest = pool | (np.int64(1) << card)
                gain = 0
                for c in range(52):
                    if (rest >> c) & 1:
                        gain += _CARD_POINTS[c]
                rest_clubs = _clubs(rest)
                if last == 1:
                    points = gain + (_BONUS if my_clubs < _FOR_BONUS <= my_clubs + rest_clubs
                                     else 0)
                else:
                    points = -gain - (_BONUS if opp_clubs < _FOR_BONUS
                                      <= opp_clubs + rest_clubs else 0)
            r[59] = points
            for k in range(60, 65):
                r[k] = 0
            r[65] = pool_len + 1
            r[66] = _CARD_POINTS[card]
            r[67] = 1 if card % 4 == 0 else 0
            r[68] = _threats(card, pool, unseen)
        r[69] = card // 4
        r[70] = 1 if card % 4 == 0 else 0
        r[71] = taken
        r[72] = 1 if captured == 0 else 0
        r[73] = _CARD_POINTS[card]
        r[74] = 0
    # ---- is_greedy_choice: the first play of the largest greedy key
    best = 0
    for i in range(1, n):
        if _key_greater(rows[i], rows[best]):
            best = i
    rows[best, 74] = 1


@njit(cache=True)
def _key_greater(a: np.ndarray, b: np.ndarray) -> bool:
    """Greedy's key of facts ``a`` beats that of ``b`` (points .. 2 of clubs larger, then
    fewer cards left, a cheaper laid card, a non-club, fewer threats)."""
    for k in range(59, 65):
        if a[k] != b[k]:
            return a[k] > b[k]
    for k in range(65, 69):
        if a[k] != b[k]:
            return a[k] < b[k]
    return False


@njit(cache=True)
def choose_index(info: np.ndarray, plays: np.ndarray, rows: np.ndarray, scores: np.ndarray,
                 base: np.float32, feature: np.ndarray, threshold: np.ndarray,
                 default_left: np.ndarray, leaf: np.ndarray) -> int:
    """Rows, forest scores (into ``scores`` float32 [>= N]; the forest's arrays as in
    :class:`.compiled_forest.CompiledForest`) and the index of the first play of the highest
    score."""
    n = plays.shape[0]
    decision_features(info, plays, rows)
    predict_rows(rows, n, base, feature, threshold, default_left, leaf, scores)
    best = 0
    for i in range(1, n):
        if scores[i] > scores[best]:
            best = i
    return best

