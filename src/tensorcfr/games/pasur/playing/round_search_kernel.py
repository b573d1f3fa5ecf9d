"""The compiled inner loop of the round search (numba, ``cache=True``): alpha-beta to the end
of the current round, with a learned value of the round's end at the leaves.

Positions are the double-dummy kernel's integers (:mod:`..solving.double_dummy_kernel`:
``t, pool, rel_a, rel_b, clubs_a, clubs_b, last``; its move generator and play step are
reused), so a round is searched exactly as the double-dummy search would, but the search
stops at the round's last play: the position after it (``t = 8 (r + 1)``) is valued by
:func:`leaf_value`, the round-end value network, instead of being searched on with the cards
of the rounds to come. Values are floats, points still to come from the mover's side
(negamax form), play rewards added along the edges. In the last round the leaf is the game's
end (the cleanup), so the search there is exact.

**The round-end value network** sees only what is public once a round is over (both hands
are empty then): the pool, the cards still to be dealt (52 minus the pool and both piles),
the next round, the last capturer and the clubs race. Its input is :data:`NUM_FEATURES`
binary features (layout in :func:`leaf_features`), a two-hidden-layer ReLU network
``[NUM_FEATURES] -> [H1] -> [H2] -> 1`` with weights ``w1 [NUM_FEATURES, H1], b1 [H1],
w2 [H1, H2], b2 [H2], w3 [H2], b3 [1]`` (float64); its output is Alex's future points
minus Bob's, expected over the deals still possible (trained on double-dummy values of
sampled deals: :mod:`..learning.round_value`).

Nothing here knows rules objects, observations or which cards are hidden: the caller hands
it a determinized position.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorcfr.games.pasur.solving.double_dummy_kernel import (
    CLUBS_DONE,
    CLUBS_MASK,
    child_state,
    cleanup_value,
    generate_plays,
    mask_points,
    popcount,
)

__all__ = ["NUM_FEATURES", "leaf_features", "leaf_value", "round_play_values",
           "round_search"]

# feature layout of the round-end value network
FEAT_POOL = 0        # 52: the pool's cards
FEAT_UNDEALT = 52    # 52: cards still to be dealt
FEAT_ROUND = 104     # 5: the next round, 1..5 (round index 1..5 -> 0..4)
FEAT_LAST = 109      # 2: last capturer Alex / Bob (neither: nobody captured yet)
FEAT_CLUBS_A = 111   # 7: Alex's clubs 0..6 (one-hot; none set once the bonus is paid)
FEAT_CLUBS_B = 118   # 7: Bob's clubs 0..6
FEAT_DONE = 125      # 1: somebody has 7 clubs (the bonus is paid)
NUM_FEATURES = 126
NEG_INF = -1.0e18

# columns of the integer frame ``ints[t, column]`` and the float frame ``vals[t, column]``
I_POOL, I_REL_A, I_REL_B, I_CLUBS_A, I_CLUBS_B, I_LAST, I_NEXT, I_COUNT = 0, 1, 2, 3, 4, 5, 6, 7
NUM_INT_COLUMNS = 8
V_ALPHA, V_BETA, V_BEST, V_REWARD = 0, 1, 2, 3
NUM_VAL_COLUMNS = 4


@njit(cache=True)
def leaf_features(next_round: np.int64, pool: np.int64, undealt: np.int64, clubs_a: np.int64,
                  clubs_b: np.int64, last: np.int64, out: np.ndarray) -> np.int64:
    """Write the indices of the set features of a round's end into ``out`` (int64, at least
    120 long) and return their number (every feature is 0 or 1)."""
    n = 0
    for c in range(52):
        if (pool >> c) & 1:
            out[n] = FEAT_POOL + c
            n += 1
        if (undealt >> c) & 1:
            out[n] = FEAT_UNDEALT + c
            n += 1
    out[n] = FEAT_ROUND + next_round - 1
    n += 1
    if last >= 0:
        out[n] = FEAT_LAST + last
        n += 1
    if clubs_a >= CLUBS_DONE:
        out[n] = FEAT_DONE
        n += 1
    else:
        out[n] = FEAT_CLUBS_A + min(clubs_a, 6)
        out[n + 1] = FEAT_CLUBS_B + min(clubs_b, 6)
        n += 2
    return n


@njit(cache=True)
def leaf_value(next_round: np.int64, pool: np.int64, undealt: np.int64, clubs_a: np.int64,
               clubs_b: np.int64, last: np.int64, w1: np.ndarray, b1: np.ndarray,
               w2: np.ndarray, b2: np.ndarray, w3: np.ndarray, b3: np.ndarray,
               index: np.ndarray, h1: np.ndarray, h2: np.ndarray) -> float:
    """The network's value of a round's end: Alex's expected future points minus Bob's.
    ``index`` (int64 [128]), ``h1`` [H1] and ``h2`` [H2] are work space. The features are
    binary, so the first layer sums the rows of ``w1`` of the set ones."""
    n = leaf_features(next_round, pool, undealt, clubs_a, clubs_b, last, index)
    hidden1 = h1.shape[0]
    hidden2 = h2.shape[0]
    for j in range(hidden1):
        h1[j] = b1[j]
    for k in range(n):
        row = index[k]
        for j in range(hidden1):
            h1[j] += w1[row, j]
    for j in range(hidden1):
        if h1[j] < 0.0:
            h1[j] = 0.0
    for j in range(hidden2):
        h2[j] = b2[j]
    for i in range(hidden1):
        x = h1[i]
        if x != 0.0:
            for j in range(hidden2):
                h2[j] += x * w2[i, j]
    out = b3[0]
    for j in range(hidden2):
        if h2[j] > 0.0:
            out += h2[j] * w3[j]
    return out


@njit(cache=True)
def _order_plays(t: np.int64, n: np.int64, pool: np.int64, move_card: np.ndarray,
                 move_cap: np.ndarray, move_key: np.ndarray) -> None:
    """Sort row ``t``'s plays for alpha-beta (descending key in ``move_key[t]``, the play's
    index in its low 10 bits): captures by points and clubs, a Sur first, then lays of the
    cards worth least."""
    for i in range(n):
        cap = move_cap[t, i]
        card = move_card[t, i]
        if cap != 0:
            taken = cap | (np.int64(1) << card)
            key = 1000 + 10 * mask_points(taken) + popcount(taken & CLUBS_MASK)
            if (pool & ~cap) == 0 and (card < 40 or card >= 44):
                key += 60
        else:
            key = -10 * mask_points(np.int64(1) << card) - 2 * ((card & 3) == 0) - card // 4
        x = key * 1024 + i
        j = i - 1
        while j >= 0 and move_key[t, j] < x:
            move_key[t, j + 1] = move_key[t, j]
            j -= 1
        move_key[t, j + 1] = x


@njit(cache=True)
def round_search(t0: np.int64, end: np.int64, pool: np.int64, rel_a: np.int64, rel_b: np.int64,
                 clubs_a: np.int64, clubs_b: np.int64, last: np.int64, alpha: float,
                 beta: float, hands: np.ndarray, masks: np.ndarray, w1: np.ndarray,
                 b1: np.ndarray, w2: np.ndarray, b2: np.ndarray, w3: np.ndarray,
                 b3: np.ndarray, move_card: np.ndarray, move_cap: np.ndarray,
                 move_key: np.ndarray, ints: np.ndarray, vals: np.ndarray,
                 scratch: np.ndarray, index: np.ndarray, h1: np.ndarray, h2: np.ndarray,
                 stats: np.ndarray) -> float:
    """Fail-soft alpha-beta value (points to come, mover's side) of the position at play
    ``t0`` searched to play ``end`` (the end of the round, a multiple of 8; ``t0 == end``:
    the leaf itself), without recursion: node ``t`` keeps its
    position and progress in ``ints[t]`` / ``vals[t]`` (int64 [49, 8], float64 [49, 4]) and
    its plays in row ``t`` of ``move_card`` / ``move_cap`` / ``move_key`` ([49, MAX_MOVES]).
    ``masks[r, 0]``: the cards dealt after round ``r`` (the double-dummy kernel's table).

    ``stats[0]`` counts nodes, ``stats[3]`` leaves valued by the network; ``stats[1]`` is set
    to 1 on a move-buffer overflow (the value is then meaningless).
    """
    t = t0
    ints[t, I_POOL] = pool
    ints[t, I_REL_A] = rel_a
    ints[t, I_REL_B] = rel_b
    ints[t, I_CLUBS_A] = clubs_a
    ints[t, I_CLUBS_B] = clubs_b
    ints[t, I_LAST] = last
    vals[t, V_ALPHA] = alpha
    vals[t, V_BETA] = beta
    ret = 0.0
    while True:
        stats[0] += 1
        resolved = True
        pool = ints[t, I_POOL]
        if t == end:
            # the round is over: Alex moves next (t is even), so Alex's side is the mover's
            if end >= 48:
                ret = float(cleanup_value(pool, ints[t, I_CLUBS_A], ints[t, I_CLUBS_B],
                                          ints[t, I_LAST]))
            else:
                stats[3] += 1
                ret = leaf_value(end // 8, pool, masks[end // 8 - 1, 0], ints[t, I_CLUBS_A],
                                 ints[t, I_CLUBS_B], ints[t, I_LAST], w1, b1, w2, b2, w3, b3,
                                 index, h1, h2)
        else:
            rel = ints[t, I_REL_A] if t % 2 == 0 else ints[t, I_REL_B]
            n = generate_plays(t, pool, rel, hands, move_card, move_cap, t, scratch)
            if n < 0:
                stats[1] = 1
                return 0.0
            _order_plays(t, n, pool, move_card, move_cap, move_key)
            vals[t, V_BEST] = NEG_INF
            ints[t, I_NEXT] = 0
            ints[t, I_COUNT] = n
            resolved = False
        while True:
            if resolved:
                if t == t0:
                    return ret
                t -= 1
                v = vals[t, V_REWARD] - ret
                if v > vals[t, V_BEST]:
                    vals[t, V_BEST] = v
                    if v > vals[t, V_ALPHA]:
                        vals[t, V_ALPHA] = v
                if v >= vals[t, V_BETA]:
                    ret = v
                    continue
                resolved = False
            k = ints[t, I_NEXT]
            if k >= ints[t, I_COUNT]:
                ret = vals[t, V_BEST]
                resolved = True
                continue
            ints[t, I_NEXT] = k + 1
            i = move_key[t, k] & 1023
            (c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, _points,
             reward) = child_state(t, move_card[t, i], move_cap[t, i], ints[t, I_POOL],
                                   ints[t, I_REL_A], ints[t, I_REL_B], ints[t, I_CLUBS_A],
                                   ints[t, I_CLUBS_B], ints[t, I_LAST], np.int64(0), hands)
            vals[t, V_REWARD] = float(reward)
            u = t + 1
            ints[u, I_POOL] = c_pool
            ints[u, I_REL_A] = c_rel_a
            ints[u, I_REL_B] = c_rel_b
            ints[u, I_CLUBS_A] = c_a
            ints[u, I_CLUBS_B] = c_b
            ints[u, I_LAST] = c_last
            vals[u, V_ALPHA] = reward - vals[t, V_BETA]
            vals[u, V_BETA] = reward - vals[t, V_ALPHA]
            t = u
            break


@njit(cache=True)
def round_play_values(t: np.int64, pool: np.int64, rel_a: np.int64, rel_b: np.int64,
                      clubs_a: np.int64, clubs_b: np.int64, last: np.int64,
                      hands: np.ndarray, masks: np.ndarray, w1: np.ndarray, b1: np.ndarray,
                      w2: np.ndarray, b2: np.ndarray, w3: np.ndarray, b3: np.ndarray,
                      move_card: np.ndarray, move_cap: np.ndarray, move_key: np.ndarray,
                      ints: np.ndarray, vals: np.ndarray, scratch: np.ndarray,
                      index: np.ndarray, h1: np.ndarray, h2: np.ndarray, stats: np.ndarray,
                      out_card: np.ndarray, out_cap: np.ndarray, out_value: np.ndarray
                      ) -> np.int64:
    """The value of every legal play at a position (``t < 48``), each searched to the
    round's end with a full window: writes the plays' cards, captured masks and values
    (points to come including the play's reward, mover's side, floats) into ``out_*`` in
    :func:`generate_plays` order and returns their number (-1: move-buffer overflow)."""
    n = generate_plays(t, pool, rel_a if t % 2 == 0 else rel_b, hands, move_card, move_cap, t,
                       scratch)
    if n < 0:
        return -1
    end = (t // 8 + 1) * 8
    for i in range(n):
        out_card[i] = move_card[t, i]
        out_cap[i] = move_cap[t, i]
    for i in range(n):
        (c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, _points,
         reward) = child_state(t, out_card[i], out_cap[i], pool, rel_a, rel_b, clubs_a,
                               clubs_b, last, np.int64(0), hands)
        child = round_search(t + 1, end, c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, NEG_INF,
                             -NEG_INF, hands, masks, w1, b1, w2, b2, w3, b3, move_card,
                             move_cap, move_key, ints, vals, scratch, index, h1, h2, stats)
        if stats[1] != 0:
            return -1
        out_value[i] = reward - child
    return n

