"""The ``pimc-infer`` agent: PIMC whose draws follow what the opponent's plays reveal.

Policy-based inference (Rebstock, Solinas, Buro and Sturtevant, "Policy Based Inference in
Trick-Taking Card Games", 2019): a candidate opponent hand is weighted by how likely a model
of the opponent makes the plays the opponent was seen to make.

* **What carries information.** Past rounds' opponent hands are revealed whole by its plays,
  so only the opponent's plays of the *current* round say something about its current hidden
  hand. A candidate hand ``H`` is weighted by the product, over the opponent's plays this
  round, of the model's probability of the play it made given the hand it then held (``H``
  plus the cards it has played since in this round) and the public position then.
* **The opponent model**: the ``greedy`` heuristic softened, a softmax over
  :func:`greedy.greedy_scores` (points now + 0.3 x clubs - 0.1 x cards left on the pool -
  0.05 x threats of a lay) at temperature :data:`DEFAULT_TEMPERATURE` = 1 point, mixed with
  the uniform policy (weight :data:`DEFAULT_UNIFORM_MIX` = 0.2) so that one surprising play
  cannot rule a hand out.
* **Draws**: ``CANDIDATES_PER_DRAW x K`` candidate hands are drawn uniformly from the unseen
  cards, weighted, and K of them are **resampled** with replacement in proportion to their
  weights (seeded); each resampled hand becomes a determinization (the other unseen cards
  dealt to the rounds to come in random order) that is solved exactly, and the K solutions
  are averaged with equal weights, as in ``pimc``. Resampling keeps the cost at K solves.
  With a time budget per move, weighting may take :data:`WEIGHTING_SHARE` of it: candidates
  are weighted until that time is spent (at least ``CANDIDATES_PER_DRAW`` of them), so a
  large K does not make the agent overrun its budget before its first solve.

:func:`opponent_hand_log_likelihood` is the weight's logarithm (tested: on a constructed
position the true hand is favoured), shared with the benchmark that measures it on played
games. This module reads observations only.
"""

from __future__ import annotations

import math
import random
import time
from typing import Iterator, Sequence

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import NUM_CARDS, is_jack
from tensorcfr.games.pasur.engine.determinize import determinize_with_hand
from tensorcfr.games.pasur.engine.observation import Observation, seen_cards
from tensorcfr.games.pasur.playing.greedy import greedy_scores
from tensorcfr.games.pasur.playing.pimc import PimcAgent

__all__ = ["CANDIDATES_PER_DRAW", "DEFAULT_TEMPERATURE", "DEFAULT_UNIFORM_MIX", "OpponentPlays",
           "PimcInferAgent", "WEIGHTING_SHARE",
           "opponent_hand_log_likelihood", "opponent_plays_this_round"]

DEFAULT_TEMPERATURE = 1.0
"""Softmax temperature of the opponent model, in points of :func:`greedy_scores`."""
DEFAULT_UNIFORM_MIX = 0.2
"""Weight of the uniform policy mixed into the opponent model: robustness to opponents that
do not play like greedy (on saved games, 0.2 keeps most of the gain against a greedy opponent
and stops the loss against random and learned ones: docs/benchmarks/pasur_inference.md)."""
CANDIDATES_PER_DRAW = 8
"""Uniform candidate hands weighted per determinization kept."""
WEIGHTING_SHARE = 0.25
"""With ``seconds_per_move``, the share of the budget that weighting candidate hands may take
(the rest is for solving draws)."""


class OpponentPlays:
    """The public facts of the opponent's plays in the observer's current round: for each,
    the opponent's view without its hand (pool, piles, Surs, last capturer before the play),
    the play, and the cards it played later in the round."""

    def __init__(self, obs: Observation) -> None:
        self.obs = obs
        opponent = 1 - obs.player
        round_start = (obs.play_index // rules.PLAYS_PER_ROUND) * rules.PLAYS_PER_ROUND
        if obs.is_terminal:
            round_start = obs.play_index
        pool = list(obs.initial_pool)
        piles: list[list[int]] = [[], []]
        surs = [0, 0]
        last_capturer: int | None = None
        self.views: list[tuple[Observation, rules.Action, tuple[int, ...]]] = []
        history = obs.history
        for j, action in enumerate(history):
            mover = j % 2
            if j >= round_start and mover == opponent:
                later_own = tuple(a.card for k, a in enumerate(history[j:], start=j)
                                  if k % 2 == opponent)
                later_observer = tuple(a.card for k, a in enumerate(history[j:], start=j)
                                       if k % 2 == obs.player)
                view = Observation(
                    player=opponent, play_index=j, initial_pool=obs.initial_pool, hand=(),
                    pool=tuple(sorted(pool)), history=history[:j],
                    piles=(tuple(sorted(piles[0])), tuple(sorted(piles[1]))),
                    surs=(surs[0], surs[1]), last_capturer=last_capturer,
                    opponent_hand_size=len(obs.hand) + len(later_observer), unseen=())
                self.views.append((view, action, later_own))
            if action.captured:
                for c in action.captured:
                    pool.remove(c)
                piles[mover] += [action.card, *action.captured]
                last_capturer = mover
                if not pool and not is_jack(action.card) and \
                        j // rules.PLAYS_PER_ROUND < rules.NUM_ROUNDS - 1:
                    surs[mover] += 1
            else:
                pool.append(action.card)


def opponent_plays_this_round(obs: Observation) -> OpponentPlays:
    """The opponent's plays of ``obs``'s current round, ready for weighting hands."""
    return OpponentPlays(obs)


def opponent_hand_log_likelihood(plays: OpponentPlays, hand: Sequence[int],
                                 temperature: float = DEFAULT_TEMPERATURE,
                                 uniform_mix: float = DEFAULT_UNIFORM_MIX) -> float:
    """Log of the opponent model's probability of the opponent's plays this round if its
    hidden hand now is ``hand`` (natural log; 0 when it has not played this round).

    Each play's probability is the softmax at ``temperature`` of :func:`greedy_scores` over
    the plays legal with the hand it then held (``hand`` plus its later cards this round),
    mixed with the uniform policy: ``(1 - uniform_mix) * softmax + uniform_mix / plays``.
    """
    total = 0.0
    for view, action, later_own in plays.views:
        held = tuple(sorted((*hand, *later_own)))
        seen = seen_cards(view.initial_pool, view.history, held)
        opp_view = Observation(
            player=view.player, play_index=view.play_index, initial_pool=view.initial_pool,
            hand=held, pool=view.pool, history=view.history, piles=view.piles,
            surs=view.surs, last_capturer=view.last_capturer,
            opponent_hand_size=view.opponent_hand_size,
            unseen=tuple(c for c in range(NUM_CARDS) if c not in seen))
        legal = opp_view.legal_actions()
        if action not in legal:
            return -math.inf
        scores = [s / temperature for s in greedy_scores(opp_view, legal)]
        top = max(scores)
        norm = sum(math.exp(s - top) for s in scores)
        softmax = math.exp(scores[legal.index(action)] - top) / norm
        total += math.log((1.0 - uniform_mix) * softmax + uniform_mix / len(legal))
    return total


class PimcInferAgent(PimcAgent):
    """PIMC over determinizations resampled by the opponent model's likelihood."""

    name = "pimc-infer"

    def __init__(self, determinizations: int = 32, seconds_per_move: float | None = None,
                 device: str = "cpu", temperature: float = DEFAULT_TEMPERATURE,
                 uniform_mix: float = DEFAULT_UNIFORM_MIX,
                 candidates_per_draw: int = CANDIDATES_PER_DRAW) -> None:
        super().__init__(determinizations, seconds_per_move, device)
        if not temperature > 0:
            raise ValueError(f"the temperature must be positive, got {temperature}")
        if not 0 <= uniform_mix < 1:
            raise ValueError(f"the uniform mixture must be in [0, 1), got {uniform_mix}")
        self.temperature = temperature
        self.uniform_mix = uniform_mix
        self.candidates_per_draw = max(1, int(candidates_per_draw))

    def weighted_hands(self, obs: Observation, count: int, rng: random.Random,
                       deadline: float | None = None
                       ) -> tuple[list[tuple[int, ...]], list[float]]:
        """Up to ``count`` uniform candidate opponent hands and their likelihood weights.

        ``deadline`` (``time.perf_counter()`` seconds): no candidate is weighted once it has
        passed, after the first ``candidates_per_draw`` (the same candidates, in the same
        order, as without one, only fewer)."""
        plays = opponent_plays_this_round(obs)
        if not plays.views:
            return [tuple(sorted(rng.sample(obs.unseen, obs.opponent_hand_size)))
                    for _ in range(count)], [1.0] * count
        hands: list[tuple[int, ...]] = []
        logs: list[float] = []
        for _ in range(count):
            hand = tuple(sorted(rng.sample(obs.unseen, obs.opponent_hand_size)))
            hands.append(hand)
            logs.append(opponent_hand_log_likelihood(plays, hand, self.temperature,
                                                     self.uniform_mix))
            if (deadline is not None and len(hands) >= self.candidates_per_draw
                    and time.perf_counter() >= deadline):
                break
        top = max(logs)
        if top == -math.inf:  # no candidate explains the plays (cannot happen: the model
            return hands, [1.0] * len(hands)  # gives every legal play some probability)
        return hands, [math.exp(x - top) for x in logs]

    def _draws(self, obs: Observation, rng: random.Random) -> Iterator[rules.GameState]:
        count = self.candidates_per_draw * self.determinizations
        deadline = None
        if self.seconds_per_move is not None:
            deadline = time.perf_counter() + WEIGHTING_SHARE * self.seconds_per_move
        hands, weights = self.weighted_hands(obs, count, rng, deadline)
        while True:
            hand = rng.choices(hands, weights=weights, k=1)[0]
            yield determinize_with_hand(obs, hand, rng)
