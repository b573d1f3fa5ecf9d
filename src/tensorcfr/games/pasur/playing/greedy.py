"""The ``greedy`` agent: the heuristic of a casual player, from the observation only.

Every legal play is ranked by a key, compared left to right (higher is better):

1. **points now**: the points the play scores at once under the rules' scoring (the
   captured cards and the played card: Aces and Jacks 1, 10 of diamonds 3, 2 of clubs 2;
   the 7-point clubs bonus when the capture brings the pile to 7 clubs; 5 for a Sur), and on
   the game's last play the pool that the cleanup hands to the last capturer (counted for
   the mover, or against it when the opponent is that capturer);
2. **clubs** taken;
3. **Aces** taken;
4. **Jacks** taken;
5. the **10 of diamonds** taken;
6. the **2 of clubs** taken;
7. **fewest cards left on the pool** (fewer cards, fewer Surs for the opponent); a capture
   always leaves fewer cards than a lay, so on equal points the agent captures;
8. for **lays** only (every lay ties on 1..7): lay the card least useful to the opponent:
   lowest points of the card itself, then a non-club before a club, then the fewest
   *threats*: unseen cards (the opponent may hold them) that could capture the laid card
   from the new pool;
9. final tie-break: the **first** play in :meth:`Observation.legal_actions` order (by card,
   then by captured set), so the agent is deterministic given the observation.

:func:`greedy_scores` also turns the key into one number per play (for the softmax
opponent model of ``pimc-infer``): ``points + 0.3 * clubs - 0.1 * cards left on the pool -
0.05 * threats of a lay``.

:class:`GreedyAgent` has a batch entry :meth:`GreedyAgent.choose_many` (one call for many
observations: the benchmark's decisions per second). This module reads observations only,
never a :class:`rules.GameState`, and knows nothing of the other agents.

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> from tensorcfr.games.pasur.engine.observation import observe
>>> obs = observe(initial_state(random_deal(3)), player=0)
>>> GreedyAgent().choose(obs) in obs.legal_actions()
True
"""

from __future__ import annotations

from typing import Sequence

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import (
    ACES,
    NUM_CARDS,
    TEN_OF_DIAMONDS,
    TWO_OF_CLUBS,
    is_club,
    is_jack,
    is_king,
    is_numeric,
    is_queen,
)
from tensorcfr.games.pasur.engine.observation import Observation
from tensorcfr.games.pasur.playing.agent import PlayEstimate, check_turn

__all__ = ["CARD_POINTS", "GreedyAgent", "greedy_key", "greedy_scores", "play_facts"]

CARD_POINTS = tuple((1 if c in ACES or is_jack(c) else 0) + (3 if c == TEN_OF_DIAMONDS else 0)
                    + (2 if c == TWO_OF_CLUBS else 0) for c in range(NUM_CARDS))
"""Points of each card in a pile (the clubs bonus aside)."""
_IS_CLUB = tuple(is_club(c) for c in range(NUM_CARDS))
_IS_ACE = tuple(c in ACES for c in range(NUM_CARDS))
_IS_JACK = tuple(is_jack(c) for c in range(NUM_CARDS))
_VALUE = tuple(c // 4 + 1 if is_numeric(c) else 0 for c in range(NUM_CARDS))
_LAST_PLAY = rules.NUM_PLAYS - 1
_LAST_ROUND = rules.NUM_ROUNDS - 1
_SUM_MASK = (1 << 12) - 1

SCORE_CLUB_WEIGHT = 0.3
SCORE_POOL_WEIGHT = 0.1
SCORE_THREAT_WEIGHT = 0.05


def _threats(card: int, pool_after: Sequence[int], unseen: Sequence[int]) -> int:
    """How many unseen cards could capture the laid ``card`` from ``pool_after``."""
    if is_numeric(card):
        reach = 1  # bit s: some subset of the other numeric pool cards sums to s
        for c in pool_after:
            if c != card and c < 40:
                reach |= (reach << _VALUE[c]) & _SUM_MASK
        need = 11 - _VALUE[card]
        count = 0
        for u in unseen:
            if u < 40:
                rest = need - _VALUE[u]
                if rest >= 0 and (reach >> rest) & 1:
                    count += 1
            elif _IS_JACK[u]:
                count += 1
        return count
    if is_jack(card):
        return sum(1 for u in unseen if _IS_JACK[u])
    same = is_queen if is_queen(card) else is_king
    return sum(1 for u in unseen if same(u))


def play_facts(obs: Observation, legal: Sequence[rules.Action]) -> list[tuple[int, ...]]:
    """What each play of ``legal`` does now, from the mover's view, in the same order: a
    tuple (points, clubs, aces, jacks, ten of diamonds, two of clubs, cards left on the pool,
    laid card's points, laid card is a club, threats). The last three are 0 for captures."""
    me = obs.player
    pool = obs.pool
    pool_size = len(pool)
    my_clubs = sum(1 for c in obs.piles[me] if _IS_CLUB[c])
    last_play = obs.play_index == _LAST_PLAY
    sur_possible = obs.play_index // rules.PLAYS_PER_ROUND < _LAST_ROUND
    out: list[tuple[int, ...]] = []
    for action in legal:
        card, captured = action
        if captured:
            points = CARD_POINTS[card]
            clubs = _IS_CLUB[card]
            aces = _IS_ACE[card]
            jacks = _IS_JACK[card]
            ten = card == TEN_OF_DIAMONDS
            two = card == TWO_OF_CLUBS
            for c in captured:
                points += CARD_POINTS[c]
                clubs += _IS_CLUB[c]
                aces += _IS_ACE[c]
                jacks += _IS_JACK[c]
                ten = ten or c == TEN_OF_DIAMONDS
                two = two or c == TWO_OF_CLUBS
            left = pool_size - len(captured)
            if left == 0 and sur_possible and not _IS_JACK[card]:
                points += rules.SUR_POINTS
            if last_play and left:
                rest = [c for c in pool if c not in captured]
                points += sum(CARD_POINTS[c] for c in rest)
                clubs += sum(1 for c in rest if _IS_CLUB[c])
            if my_clubs < rules.CLUBS_FOR_BONUS <= my_clubs + clubs:
                points += rules.CLUBS_BONUS
            out.append((points, clubs, aces, jacks, int(ten), int(two), left, 0, 0, 0))
        else:
            points = 0
            if last_play and obs.last_capturer is not None:
                # the cleanup gives the pool (and the laid card) to the last capturer
                rest = pool + (card,)
                gain = sum(CARD_POINTS[c] for c in rest)
                rest_clubs = sum(1 for c in rest if _IS_CLUB[c])
                if obs.last_capturer == me:
                    points = gain + (rules.CLUBS_BONUS if my_clubs < rules.CLUBS_FOR_BONUS
                                     <= my_clubs + rest_clubs else 0)
                else:
                    opp_clubs = sum(1 for c in obs.piles[1 - me] if _IS_CLUB[c])
                    points = -gain - (rules.CLUBS_BONUS if opp_clubs < rules.CLUBS_FOR_BONUS
                                      <= opp_clubs + rest_clubs else 0)
            threats = _threats(card, pool, obs.unseen)
            out.append((points, 0, 0, 0, 0, 0, pool_size + 1, CARD_POINTS[card],
                        int(_IS_CLUB[card]), threats))
    return out


def greedy_key(facts: tuple[int, ...]) -> tuple[int, ...]:
    """The ranking key of one play's facts (larger is better; see the module docstring)."""
    points, clubs, aces, jacks, ten, two, left, lay_points, lay_club, threats = facts
    return (points, clubs, aces, jacks, ten, two, -left, -lay_points, -lay_club, -threats)


def greedy_scores(obs: Observation, legal: Sequence[rules.Action] | None = None
                  ) -> list[float]:
    """One number per legal play (same order as ``legal``, default
    ``obs.legal_actions()``): ``points + 0.3 * clubs - 0.1 * cards left - 0.05 * threats``,
    in points; the softmax of these is ``pimc-infer``'s opponent model."""
    legal = obs.legal_actions() if legal is None else legal
    return [f[0] + SCORE_CLUB_WEIGHT * f[1] - SCORE_POOL_WEIGHT * f[6]
            - SCORE_THREAT_WEIGHT * f[9] for f in play_facts(obs, legal)]


def _best(obs: Observation, legal: Sequence[rules.Action]) -> rules.Action:
    facts = play_facts(obs, legal)
    best_i = 0
    best_key = greedy_key(facts[0])
    for i in range(1, len(facts)):
        key = greedy_key(facts[i])
        if key > best_key:  # strict: the first of equal keys stays
            best_i, best_key = i, key
    return legal[best_i]


class GreedyAgent:
    """Most points now, then the tie-breaks of the module docstring; deterministic."""

    name = "greedy"
    sees_everything = False

    def reset(self, seed: int) -> None:
        """Nothing to reset: the agent draws nothing."""

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        """The play with the largest :func:`greedy_key` (the first of equal ones)."""
        return _best(obs, check_turn(obs, self.name))

    def choose_many(self, observations: Sequence[Observation]) -> list[rules.Action]:
        """:meth:`choose` for each of many observations (the batch entry)."""
        return [_best(obs, check_turn(obs, self.name)) for obs in observations]

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        """None: greedy's scores are points now, not final points differences."""
        return None
