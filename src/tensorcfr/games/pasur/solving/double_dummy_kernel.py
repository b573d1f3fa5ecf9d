"""The compiled inner loop of the Pasur double-dummy search (numba, ``cache=True``).

Everything here is plain integers and int arrays so that numba compiles it to machine code
(the wheels of numba and llvmlite are all a user needs; no C compiler). The Python side,
:mod:`.double_dummy`, turns rules states into the integers below and the answers back into
rules actions; nothing here knows rules objects.

A search position is the tuple
``(t, pool, rel_a, rel_b, clubs_a, clubs_b, last, points_left)``:

========== ==========================================================================
t          play index 0..48 (48: the game is over, the cleanup is still to come)
pool       52-bit mask of the pool's cards (bit ``c`` = card ``c``)
rel_a/b    4-bit masks: which of the cards dealt to Alex/Bob this round are still held
           (slot ``j`` = ``hands[t // 8, player, j]``, each round's hand sorted)
clubs_a/b  clubs in each pile; both are :data:`CLUBS_DONE` once somebody has 7 (the bonus
           is paid and clubs stop counting)
last       last player who captured: 0 Alex, 1 Bob, -1 nobody yet
points_left  card points (Aces, Jacks, 10♦, 2♣: 13 in a deck) in no pile yet
========== ==========================================================================

Values are *points still to come* from the side of the player to move (negamax form): the
mover's future points minus the opponent's. A play's reward (its captured card points, a
Sur, the clubs bonus when the mover reaches 7) is added along the edge, the end-of-game
cleanup at ``t = 48``, exactly as in :mod:`.exact`.

The search is fail-soft alpha-beta with
* a transposition table (one slot per hash, always replaced; two int64 words a slot) over the
  merged state of :mod:`.exact` (pool, hands held, clubs, last capturer, play index), storing
  a lower and an upper bound and the best play's index; a *generation* stamp per solved deal
  makes clearing unnecessary (a slot of another generation is empty);
* symmetry: the diamond, heart and spade of a rank (less the 10 of diamonds) play the same
  part (same value, same points, no club). The table's key moves the pool's cards of such a
  group onto the group's lowest cards that are in no hand and not still to be dealt
  (:func:`canonical_pool`), so positions that differ only by which of them was captured
  share a slot; and of two plays that differ only by such cards, one is searched
  (:func:`canonical_play`);
* bounds from the points still available: the mover can win at most the card points left,
  the clubs bonus if it can still reach 7 clubs, and 5 per play it has left before the last
  round (a Sur); the opponent likewise. A window outside these bounds is cut at once;
* move ordering: the table's best play first, then captures by immediate reward, then lays
  of cards worth nothing;
* :func:`mtdf`: a first search in a window around a guess, then zero-window searches
  (MTD(f)) that home in on the exact value, each reusing the table of the ones before.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

CLUBS_DONE = 64
INF = 10_000
MAX_MOVES = 1024
"""Plays one position may have (a pool with very many numeric cards could exceed it; the
search then reports an overflow and the caller falls back on the exact solver)."""
NUM_PLAYS = 48
ASPIRATION_WIDTH = 12
"""Half-width, in points, of the first window :func:`mtdf` tries around its guess (measured:
10-14 visit the fewest positions from play 0; a zero window visits 15% more)."""
LAST_SUR_PLAY = 40  # plays 40..47 (the last round) score no Sur

CLUBS_MASK = np.int64(sum(1 << c for c in range(0, 52, 4)))
ONE_POINT_MASK = np.int64(sum(1 << c for c in (0, 1, 2, 3, 40, 41, 42, 43)))
NUMERIC_MASK = np.int64((1 << 40) - 1)
JACKS_MASK = np.int64(sum(1 << c for c in (40, 41, 42, 43)))


def _equivalence_groups() -> tuple[np.ndarray, np.ndarray]:
    """Cards that play the same part everywhere: same rank, not a club, same points (the
    diamonds, hearts and spades of a rank, less the 10 of diamonds). ``group_of[c]``: mask of
    card ``c``'s group (itself alone for a club or the 10 of diamonds); ``groups``: the 13
    groups of two or three cards."""
    group_of = [1 << c for c in range(52)]
    groups = []
    for rank in range(13):
        members = [4 * rank + s for s in (1, 2, 3) if 4 * rank + s != 37]
        mask = sum(1 << c for c in members)
        groups.append(mask)
        for c in members:
            group_of[c] = mask
    return np.array(group_of, dtype=np.int64), np.array(groups, dtype=np.int64)


GROUP_OF, GROUPS = _equivalence_groups()
GROUPED_MASK = np.int64(int(np.bitwise_or.reduce(GROUPS)))
GROUP_FIRST_MASK = np.int64(sum(1 << (4 * rank + 1) for rank in range(13) if rank != 9)
                            | (1 << 38))
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xBF58476D1CE4E5B9)
_S29 = np.uint64(29)


@intrinsic
def _ctpop(typingctx, x):  # type: ignore[no-untyped-def]
    """LLVM's population count (one ``popcnt`` instruction where the CPU has it)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.ctpop(args[0])

    return types.int64(types.int64), codegen


@njit(cache=True, inline="always")
def popcount(x: np.int64) -> np.int64:
    """Set bits of a non-negative int64."""
    return _ctpop(np.int64(x))


@njit(cache=True, inline="always")
def mask_points(mask: np.int64) -> np.int64:
    """Card points of a set of cards: Aces and Jacks 1, 10♦ 3, 2♣ 2."""
    return popcount(mask & ONE_POINT_MASK) + 3 * ((mask >> 37) & 1) + 2 * ((mask >> 4) & 1)


# columns of the per-play frame table ``frame[t, column]`` of :func:`search`
F_POOL, F_REL_A, F_REL_B, F_CLUBS_A, F_CLUBS_B, F_LAST, F_POINTS = 0, 1, 2, 3, 4, 5, 6
F_ALPHA, F_BETA, F_ALPHA0, F_BEST, F_BEST_INDEX, F_NEXT, F_COUNT = 7, 8, 9, 10, 11, 12, 13
F_SLOT, F_LO, F_HI, F_REWARD, F_META, F_WORD0 = 14, 15, 16, 17, 18, 19
NUM_FRAME_COLUMNS = 20
# a table slot is two int64 words: [pool | t << 52, meta | gen | lo | hi | best play]
GEN_SHIFT, LO_SHIFT, HI_SHIFT, MOVE_SHIFT = 13, 33, 43, 53
GEN_BITS = 20
CHECK_MASK = (1 << LO_SHIFT) - 1  # meta (13 bits) and generation (20 bits)
BIAS = 512  # bounds are stored as 10-bit values + 512


@njit(cache=True, inline="always")
def _lowest(mask: np.int64, k: np.int64) -> np.int64:
    """The ``k`` lowest set bits of ``mask``."""
    out = np.int64(0)
    for _ in range(k):
        low = mask & -mask
        out |= low
        mask ^= low
    return out


@njit(cache=True)
def canonical_pool(pool: np.int64, fixed: np.int64) -> np.int64:
    """The pool with each group's cards moved to the group's lowest cards outside ``fixed``
    (the hands and the cards still to be dealt). Cards of one group that are in the pool or
    in a pile can change places without changing anything to come (same value, same points,
    no club), so two positions with the same canonical pool have the same value."""
    grouped = pool & GROUPED_MASK
    out = pool & ~GROUPED_MASK
    while grouped != 0:
        low = grouped & -grouped
        g = GROUP_OF[popcount(low - 1)]
        out |= _lowest(g & ~fixed, popcount(grouped & g))
        grouped &= ~g
    return out


@njit(cache=True, inline="always")
def has_equivalent_pair(cards: np.int64) -> bool:
    """Whether two of ``cards`` are in one group (bit tricks: a group is 2 or 3 adjacent
    bits ``4r+1 .. 4r+3``)."""
    x = cards & GROUPED_MASK
    return ((x & (x >> 1)) | (x & (x >> 2) & GROUP_FIRST_MASK)) != 0


@njit(cache=True)
def canonical_play(card: np.int64, cap: np.int64) -> tuple[np.int64, np.int64]:
    """A play's class: its card's group (lowest card) and its captured set with each group's
    cards replaced by the group's lowest ones. Two plays of one position in the same class
    lead to positions that a swap of equivalent cards maps onto each other: equal values."""
    g = GROUP_OF[card]
    canon = np.int64(0)
    rest = cap
    while rest != 0:
        low = rest & -rest
        gm = GROUP_OF[popcount(low - 1)]
        canon |= _lowest(gm, popcount(cap & gm))
        rest &= ~gm
    return popcount((g & -g) - 1), canon


@njit(cache=True)
def drop_equivalent_plays(t: np.int64, n: np.int64, move_card: np.ndarray,
                          move_cap: np.ndarray, scratch: np.ndarray) -> np.int64:
    """Keep one play of each class (:func:`canonical_play`) in row ``t``; the new count."""
    m = 0
    for i in range(n):
        cls, canon = canonical_play(move_card[t, i], move_cap[t, i])
        seen = False
        for j in range(m):
            if scratch[3, j] == cls and scratch[4, j] == canon:
                seen = True
                break
        if not seen:
            scratch[3, m] = cls
            scratch[4, m] = canon
            move_card[t, m] = move_card[t, i]
            move_cap[t, m] = move_cap[t, i]
            m += 1
    return m


@njit(cache=True)
def generate_plays(t: np.int64, pool: np.int64, rel: np.int64, hands: np.ndarray,
                   out_card: np.ndarray, out_cap: np.ndarray, row: np.int64,
                   scratch: np.ndarray) -> np.int64:
    """Write the legal plays of the mover at play ``t`` into row ``row`` of ``out_card``
    (card) and ``out_cap`` (captured mask, 0 = laid); returns their number (-1: more than
    :data:`MAX_MOVES`). ``scratch``: int64 [4, 52] work space.

    Order: the hand's slots in order; a numeric card's captures by a depth-first walk of
    the pool's numeric cards (values ascending). A card with a capture is never laid
    (forced capture is per card).
    """
    r = t // 8
    p = t % 2
    cards = scratch[0]
    values = scratch[1]
    stack = scratch[2]
    n = 0
    numeric = pool & NUMERIC_MASK
    while numeric != 0:
        low = numeric & -numeric
        c = popcount(low - 1)
        cards[n] = c
        values[n] = c // 4 + 1
        n += 1
        numeric ^= low
    count = 0
    for j in range(4):
        if not (rel >> j) & 1:
            continue
        card = hands[r, p, j]
        before = count
        if card < 40:
            # every set of numeric pool cards summing to 11 - value, by an explicit stack
            remaining = 10 - card // 4
            chosen = np.int64(0)
            depth = 0
            i = 0
            while True:
                if i < n and values[i] <= remaining:
                    v = values[i]
                    if v == remaining:
                        if count >= MAX_MOVES:
                            return -1
                        out_card[row, count] = card
                        out_cap[row, count] = chosen | (np.int64(1) << cards[i])
                        count += 1
                    else:
                        stack[depth] = i
                        depth += 1
                        remaining -= v
                        chosen |= np.int64(1) << cards[i]
                    i += 1
                else:
                    if depth == 0:
                        break
                    depth -= 1
                    i = stack[depth]
                    remaining += values[i]
                    chosen &= ~(np.int64(1) << cards[i])
                    i += 1
        elif card < 44:
            take = pool & (NUMERIC_MASK | JACKS_MASK)
            if take != 0:
                out_card[row, count] = card
                out_cap[row, count] = take
                count += 1
        else:
            base = 44 if card < 48 else 48
            for q in range(base, base + 4):
                if (pool >> q) & 1:
                    if count >= MAX_MOVES:
                        return -1
                    out_card[row, count] = card
                    out_cap[row, count] = np.int64(1) << q
                    count += 1
        if count == before:
            if count >= MAX_MOVES:
                return -1
            out_card[row, count] = card
            out_cap[row, count] = 0
            count += 1
    return count


@njit(cache=True, inline="always")
def _tt_index(word0: np.int64, meta: np.int64, bits: np.int64) -> np.int64:
    h = np.uint64(word0) * _K1
    h ^= (np.uint64(meta) + _K2) * _K2
    h ^= h >> _S29
    h *= _K1
    return np.int64(h >> np.uint64(64 - bits))


@njit(cache=True)
def cleanup_value(pool: np.int64, clubs_a: np.int64, clubs_b: np.int64, last: np.int64
                  ) -> np.int64:
    """Alex's points minus Bob's of the end-of-game cleanup (the pool to the last capturer)."""
    if last < 0 or pool == 0:
        return 0
    points = mask_points(pool)
    if clubs_a < CLUBS_DONE:
        taker = clubs_a if last == 0 else clubs_b
        if taker + popcount(pool & CLUBS_MASK) >= 7:
            points += 7
    return points if last == 0 else -points


@njit(cache=True, inline="always")
def child_state(t: np.int64, card: np.int64, cap: np.int64, pool: np.int64, rel_a: np.int64,
                rel_b: np.int64, clubs_a: np.int64, clubs_b: np.int64, last: np.int64,
                points_left: np.int64, hands: np.ndarray):
    """The position after the mover at play ``t`` plays ``card`` capturing ``cap`` (0: lays
    it), and the play's reward for the mover: ``(pool, rel_a, rel_b, clubs_a, clubs_b,
    last, points_left, reward)``."""
    p = t % 2
    r = t // 8
    bit = np.int64(1) << card
    c_a = clubs_a
    c_b = clubs_b
    c_last = last
    c_points = points_left
    reward = np.int64(0)
    if cap != 0:
        taken = cap | bit
        c_pool = pool & ~cap
        gained = mask_points(taken)
        reward = gained
        c_points -= gained
        if c_pool == 0 and r < 5 and (card < 40 or card >= 44):  # a Sur (never by a Jack)
            reward += 5
        c_last = p
        if clubs_a < CLUBS_DONE:
            clubs = popcount(taken & CLUBS_MASK)
            if p == 0:
                c_a += clubs
                if c_a >= 7:
                    reward += 7
                    c_a = CLUBS_DONE
                    c_b = CLUBS_DONE
            else:
                c_b += clubs
                if c_b >= 7:
                    reward += 7
                    c_a = CLUBS_DONE
                    c_b = CLUBS_DONE
    else:
        c_pool = pool | bit
    slot_j = 0
    for j in range(4):
        if hands[r, p, j] == card:
            slot_j = j
    c_rel_a = rel_a
    c_rel_b = rel_b
    if p == 0:
        c_rel_a = rel_a & ~(1 << slot_j)
    else:
        c_rel_b = rel_b & ~(1 << slot_j)
    if (t + 1) % 8 == 0:
        c_rel_a = 15
        c_rel_b = 15
    return c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, c_points, reward


@njit(cache=True, inline="always")
def _store(frame: np.ndarray, t: np.int64, best: np.int64, table: np.ndarray, gen: np.int64
           ) -> None:
    """Record node ``t``'s search result as bounds (fail-soft: a value at or below the
    window is an upper bound, at or above it a lower bound, inside it exact)."""
    lo = frame[t, F_LO]
    hi = frame[t, F_HI]
    if best <= frame[t, F_ALPHA0]:
        hi = best
    elif best >= frame[t, F_BETA]:
        lo = best
    else:
        lo = best
        hi = best
    slot = frame[t, F_SLOT]
    table[slot, 0] = frame[t, F_WORD0]
    table[slot, 1] = (frame[t, F_META] | (gen << GEN_SHIFT) | ((lo + BIAS) << LO_SHIFT)
                      | ((hi + BIAS) << HI_SHIFT) | (frame[t, F_BEST_INDEX] << MOVE_SHIFT))


@njit(cache=True, inline="always")
def _set_position(frame: np.ndarray, t: np.int64, pool: np.int64, rel_a: np.int64,
                  rel_b: np.int64, clubs_a: np.int64, clubs_b: np.int64, last: np.int64,
                  points_left: np.int64, alpha: np.int64, beta: np.int64) -> None:
    """Node ``t``'s position and window into ``frame[t]`` (the root's, or a child's)."""
    frame[t, F_POOL] = pool
    frame[t, F_REL_A] = rel_a
    frame[t, F_REL_B] = rel_b
    frame[t, F_CLUBS_A] = clubs_a
    frame[t, F_CLUBS_B] = clubs_b
    frame[t, F_LAST] = last
    frame[t, F_POINTS] = points_left
    frame[t, F_ALPHA] = alpha
    frame[t, F_BETA] = beta


@njit(cache=True, inline="always")
def _value_bounds(t: np.int64, clubs_a: np.int64, clubs_b: np.int64, points_left: np.int64
                  ) -> tuple[np.int64, np.int64]:
    """``(lower, upper)``: what the mover at play ``t < 48`` can still make at worst and at
    best (the points to come, every Sur still possible, the clubs bonus while reachable)."""
    p = t % 2
    done = clubs_a >= CLUBS_DONE
    plays_with_sur = LAST_SUR_PLAY - t if t < LAST_SUR_PLAY else 0
    mine = clubs_a if p == 0 else clubs_b
    theirs = clubs_b if p == 0 else clubs_a
    upper = points_left + 5 * ((plays_with_sur + 1) // 2)
    lower = -(points_left + 5 * (plays_with_sur // 2))
    if not done:
        clubs_left = 13 - clubs_a - clubs_b
        if mine + clubs_left >= 7:
            upper += 7
        if theirs + clubs_left >= 7:
            lower -= 7
    return lower, upper


@njit(cache=True, inline="always")
def _probe(table: np.ndarray, slot: np.int64, word0: np.int64, meta: np.int64, gen: np.int64,
           lo: np.int64, hi: np.int64, alpha: np.int64, beta: np.int64
           ) -> tuple[bool, np.int64, np.int64, np.int64, np.int64, np.int64, np.int64]:
    """The table's word on this position: ``(hit, value, lo, hi, alpha, beta, hint)``; a
    hit when its bounds decide the value in the window, else the bounds and window
    narrowed by them and the stored best play's index as ``hint`` (-1: no entry)."""
    hint = np.int64(-1)
    word1 = table[slot, 1]
    if table[slot, 0] == word0 and (word1 & CHECK_MASK) == (meta | (gen << GEN_SHIFT)):
        tlo = ((word1 >> LO_SHIFT) & 1023) - BIAS
        thi = ((word1 >> HI_SHIFT) & 1023) - BIAS
        if tlo >= beta:
            return True, tlo, lo, hi, alpha, beta, hint
        if thi <= alpha:
            return True, thi, lo, hi, alpha, beta, hint
        if tlo == thi:
            return True, tlo, lo, hi, alpha, beta, hint
        if tlo > lo:
            lo = tlo
        if thi < hi:
            hi = thi
        if lo > alpha:
            alpha = lo
        if hi < beta:
            beta = hi
        hint = (word1 >> MOVE_SHIFT) & 1023
    return False, np.int64(0), lo, hi, alpha, beta, hint


@njit(cache=True, inline="always")
def _order_plays(t: np.int64, n: np.int64, hint: np.int64, pool: np.int64,
                 move_card: np.ndarray, move_cap: np.ndarray, move_key: np.ndarray) -> None:
    """Row ``t`` of ``move_key``: the ``n`` plays' order, best first (the table's hint,
    then captures by points and clubs, a Sur's bonus, then the cheapest cards laid), each
    key ``* 1024 + index``, sorted by insertion."""
    for i in range(n):
        cap = move_cap[t, i]
        card = move_card[t, i]
        if i == hint:
            key = 100_000
        elif cap != 0:
            taken = cap | (np.int64(1) << card)
            key = 1000 + 10 * mask_points(taken) + popcount(taken & CLUBS_MASK)
            if (pool & ~cap) == 0 and (card < 40 or card >= 44):
                key += 60
        else:
            key = (-10 * mask_points(np.int64(1) << card)
                   - 2 * ((card & 3) == 0) - card // 4)
        x = key * 1024 + i
        j = i - 1  # insertion into the sorted prefix, descending
        while j >= 0 and move_key[t, j] < x:
            move_key[t, j + 1] = move_key[t, j]
            j -= 1
        move_key[t, j + 1] = x


@njit(cache=True, inline="always")
def _open_node(frame: np.ndarray, t: np.int64, alpha: np.int64, beta: np.int64, n: np.int64,
               slot: np.int64, lo: np.int64, hi: np.int64, meta: np.int64,
               word0: np.int64) -> None:
    """Node ``t``'s search state before its first play: window, best so far, progress,
    its table slot and words, and the bounds known on entry."""
    frame[t, F_ALPHA] = alpha
    frame[t, F_BETA] = beta
    frame[t, F_ALPHA0] = alpha
    frame[t, F_BEST] = -INF
    frame[t, F_BEST_INDEX] = 0
    frame[t, F_NEXT] = 0
    frame[t, F_COUNT] = n
    frame[t, F_SLOT] = slot
    frame[t, F_LO] = lo
    frame[t, F_HI] = hi
    frame[t, F_META] = meta
    frame[t, F_WORD0] = word0


@njit(cache=True, inline="always")
def _push_child(frame: np.ndarray, t: np.int64, i: np.int64, move_card: np.ndarray,
                move_cap: np.ndarray, hands: np.ndarray) -> None:
    """Node ``t + 1``: the position after node ``t``'s play ``i`` with the negated window
    shifted by the play's reward (kept in ``frame[t]``)."""
    (c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, c_points,
     reward) = child_state(t, move_card[t, i], move_cap[t, i], frame[t, F_POOL],
                           frame[t, F_REL_A], frame[t, F_REL_B], frame[t, F_CLUBS_A],
                           frame[t, F_CLUBS_B], frame[t, F_LAST], frame[t, F_POINTS],
                           hands)
    frame[t, F_REWARD] = reward
    _set_position(frame, t + 1, c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, c_points,
                  reward - frame[t, F_BETA], reward - frame[t, F_ALPHA])


@njit(cache=True)
def search(t0: np.int64, pool: np.int64, rel_a: np.int64, rel_b: np.int64, clubs_a: np.int64,
           clubs_b: np.int64, last: np.int64, points_left: np.int64, alpha: np.int64,
           beta: np.int64, hands: np.ndarray, masks: np.ndarray, table: np.ndarray,
           gen: np.int64, bits: np.int64, move_card: np.ndarray, move_cap: np.ndarray,
           move_key: np.ndarray, frame: np.ndarray, scratch: np.ndarray, stats: np.ndarray
           ) -> np.int64:
    """Fail-soft alpha-beta value of the position (points to come, mover's side), without
    recursion (numba cannot cache recursive functions): node ``t`` of the current line
    keeps its position, window and progress in ``frame[t]`` (int64 [49, NUM_FRAME_COLUMNS]),
    its plays in rows ``t`` of ``move_card`` / ``move_cap`` / ``move_key``.  The steps are
    ``inline="always"`` functions: numba pastes them here, so they cost no call.

    ``stats[0]`` counts nodes; ``stats[1]`` is set to 1 on a move-buffer overflow (the
    value is then meaningless).
    """
    t = t0
    _set_position(frame, t, pool, rel_a, rel_b, clubs_a, clubs_b, last, points_left, alpha,
                  beta)
    while True:
        # ---------------- enter node t: a value now (leaf, bound, table) or set up its plays
        stats[0] += 1
        pool = frame[t, F_POOL]
        rel_a = frame[t, F_REL_A]
        rel_b = frame[t, F_REL_B]
        clubs_a = frame[t, F_CLUBS_A]
        clubs_b = frame[t, F_CLUBS_B]
        last = frame[t, F_LAST]
        points_left = frame[t, F_POINTS]
        alpha = frame[t, F_ALPHA]
        beta = frame[t, F_BETA]
        resolved = True
        ret = np.int64(0)
        if t >= NUM_PLAYS:
            ret = cleanup_value(pool, clubs_a, clubs_b, last)  # t = 48: Alex's side
        else:
            p = t % 2
            lower, upper = _value_bounds(t, clubs_a, clubs_b, points_left)
            if upper <= alpha:
                ret = upper
            elif lower >= beta:
                ret = lower
            else:
                clubs_field = 7 if clubs_a >= CLUBS_DONE else clubs_a
                meta = rel_a | (rel_b << 4) | (clubs_field << 8) | ((last + 1) << 11)
                r = t // 8
                fixed = masks[r, 0] | masks[r, 1 + rel_a] | masks[r, 17 + rel_b]
                word0 = canonical_pool(pool, fixed) | (t << 52)
                slot = _tt_index(word0, meta, bits)
                hit, ret, lo, hi, alpha, beta, hint = _probe(table, slot, word0, meta, gen,
                                                             lower, upper, alpha, beta)
                if not hit:
                    n = generate_plays(t, pool, rel_a if p == 0 else rel_b, hands, move_card,
                                       move_cap, t, scratch)
                    if n < 0:
                        stats[1] = 1
                        return 0
                    mover_hand = masks[r, 1 + rel_a] if p == 0 else masks[r, 17 + rel_b]
                    if n > 1 and (has_equivalent_pair(pool) or has_equivalent_pair(mover_hand)):
                        n = drop_equivalent_plays(t, n, move_card, move_cap, scratch)
                    _order_plays(t, n, hint, pool, move_card, move_cap, move_key)
                    _open_node(frame, t, alpha, beta, n, slot, lo, hi, meta, word0)
                    resolved = False
        # ---------------- go down into node t's next play, or up with a value
        while True:
            if resolved:
                if t == t0:
                    return ret
                t -= 1
                v = frame[t, F_REWARD] - ret
                if v > frame[t, F_BEST]:
                    frame[t, F_BEST] = v
                    frame[t, F_BEST_INDEX] = move_key[t, frame[t, F_NEXT] - 1] & 1023
                    if v > frame[t, F_ALPHA]:
                        frame[t, F_ALPHA] = v
                if v >= frame[t, F_BETA]:
                    _store(frame, t, v, table, gen)
                    ret = v
                    continue
                resolved = False
            k = frame[t, F_NEXT]
            if k >= frame[t, F_COUNT]:
                ret = frame[t, F_BEST]
                _store(frame, t, ret, table, gen)
                resolved = True
                continue
            frame[t, F_NEXT] = k + 1
            _push_child(frame, t, move_key[t, k] & 1023, move_card, move_cap, hands)
            t += 1
            break


@njit(cache=True)
def mtdf(t: np.int64, pool: np.int64, rel_a: np.int64, rel_b: np.int64, clubs_a: np.int64,
         clubs_b: np.int64, last: np.int64, points_left: np.int64, guess: np.int64,
         hands: np.ndarray, masks: np.ndarray, table: np.ndarray, gen: np.int64,
         bits: np.int64, move_card: np.ndarray, move_cap: np.ndarray, move_key: np.ndarray,
         frame: np.ndarray, scratch: np.ndarray, stats: np.ndarray) -> np.int64:
    """Exact value (points to come, mover's side) from ``guess``: one search with the window
    ``guess -+ ASPIRATION_WIDTH`` (exact when the value falls inside it), then zero-window
    searches (MTD(f)) from the bound it returned: each tells whether the value is below a
    test point, and the bounds meet."""
    lo = -INF
    hi = INF
    stats[2] += 1
    g = search(t, pool, rel_a, rel_b, clubs_a, clubs_b, last, points_left,
               guess - ASPIRATION_WIDTH, guess + ASPIRATION_WIDTH, hands, masks, table, gen,
               bits, move_card, move_cap, move_key, frame, scratch, stats)
    if stats[1] != 0:
        return 0
    if g <= guess - ASPIRATION_WIDTH:
        hi = g
    elif g >= guess + ASPIRATION_WIDTH:
        lo = g
    else:
        return g
    while lo < hi:
        stats[2] += 1
        b = g + 1 if g == lo else g
        g = search(t, pool, rel_a, rel_b, clubs_a, clubs_b, last, points_left, b - 1, b,
                   hands, masks, table, gen, bits, move_card, move_cap, move_key, frame,
                   scratch, stats)
        if stats[1] != 0:
            return 0
        if g < b:
            hi = g
        else:
            lo = g
    return g


@njit(cache=True)
def play_values(t: np.int64, pool: np.int64, rel_a: np.int64, rel_b: np.int64,
                clubs_a: np.int64, clubs_b: np.int64, last: np.int64, points_left: np.int64,
                hands: np.ndarray, masks: np.ndarray, table: np.ndarray, gen: np.int64,
                bits: np.int64, move_card: np.ndarray, move_cap: np.ndarray,
                move_key: np.ndarray, frame: np.ndarray, scratch: np.ndarray,
                stats: np.ndarray, out_card: np.ndarray, out_cap: np.ndarray,
                out_value: np.ndarray) -> np.int64:
    """Exact value of every legal play at a position (``t < 48``): writes the plays' cards,
    captured masks and values (points to come including the play's reward, *mover's side*)
    into ``out_*`` and returns their number (-1: move-buffer overflow). Plays of one class
    (:func:`canonical_play`) are searched once."""
    n = generate_plays(t, pool, rel_a if t % 2 == 0 else rel_b, hands, move_card, move_cap, t,
                       scratch)
    if n < 0:
        return -1
    for i in range(n):
        out_card[i] = move_card[t, i]
        out_cap[i] = move_cap[t, i]
    guess = np.int64(0)
    classes = np.empty(n, dtype=np.int64)  # the searches below use all of scratch
    canons = np.empty(n, dtype=np.int64)
    for i in range(n):
        cls, canon = canonical_play(out_card[i], out_cap[i])
        classes[i] = cls
        canons[i] = canon
        same = -1
        for j in range(i):
            if classes[j] == cls and canons[j] == canon:
                same = j
                break
        if same >= 0:
            out_value[i] = out_value[same]
            continue
        (c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, c_points,
         reward) = child_state(t, out_card[i], out_cap[i], pool, rel_a, rel_b, clubs_a,
                               clubs_b, last, points_left, hands)
        child = mtdf(t + 1, c_pool, c_rel_a, c_rel_b, c_a, c_b, c_last, c_points,
                     reward - guess, hands, masks, table, gen, bits, move_card, move_cap,
                     move_key, frame, scratch, stats)
        if stats[1] != 0:
            return -1
        out_value[i] = reward - child
        guess = out_value[i]
    return n
