"""Determinization: full Pasur states consistent with what one player has seen.

A determinization of an :class:`~.observation.Observation` shares the unseen cards out into
the opponent's current hand and the rounds still to be dealt, and rebuilds the full
:class:`rules.GameState` (deal, hands, pool, piles, history) that the observer cannot tell
apart from the real one. Hidden-hand agents solve such states exactly (PIMC) or hand them to
OpenSpiel's ISMCTS.

* :func:`determinize`: one uniform draw (every split of the unseen cards equally likely),
  from a seeded :class:`random.Random` (same seed, same draws).
* :func:`determinize_with_hand`: the state for a given opponent hand (the rest of the unseen
  cards dealt in a random order), for weighted draws with inference.
* :func:`rebuild_deal`: the 52-card deal behind a determinization, pool first, as the rules
  read it (past rounds' hands are the cards each player played in that round).

Every drawn state replays the observed history legally from its deal (tested).
"""

from __future__ import annotations

import random
from typing import Sequence

from tensorcfr.games.pasur.engine.observation import Observation
from tensorcfr.games.pasur.engine.rules import PLAYS_PER_ROUND, GameState

__all__ = ["determinize", "determinize_with_hand", "rebuild_deal", "sample_states"]


def _played_by_round(obs: Observation) -> list[tuple[list[int], list[int]]]:
    """Per round so far, the cards (Alex, Bob) played in it, in play order."""
    rounds: list[tuple[list[int], list[int]]] = []
    for i, action in enumerate(obs.history):
        r = i // PLAYS_PER_ROUND
        while len(rounds) <= r:
            rounds.append(([], []))
        rounds[r][i % 2].append(action.card)
    return rounds


def rebuild_deal(obs: Observation, opponent_hand: Sequence[int], future: Sequence[int]
                 ) -> tuple[int, ...]:
    """The deal whose game, with ``obs.history`` played, leaves the opponent holding
    ``opponent_hand`` and deals ``future`` (in order) in the rounds to come.

    Args:
        obs: the observer's observation.
        opponent_hand: the opponent's current hand (``obs.opponent_hand_size`` cards).
        future: the remaining unseen cards in deal order (8 per round still to come).

    Raises:
        ValueError: the cards do not split ``obs.unseen`` exactly.
    """
    opponent_hand = tuple(opponent_hand)
    if len(opponent_hand) != obs.opponent_hand_size:
        raise ValueError(f"the opponent holds {obs.opponent_hand_size} cards, "
                         f"{len(opponent_hand)} given")
    if sorted(opponent_hand + tuple(future)) != list(obs.unseen):
        raise ValueError("the opponent's hand and the future deal must be the unseen cards")
    rounds = _played_by_round(obs)
    current = min(obs.round, 5)
    while len(rounds) <= current:
        rounds.append(([], []))
    hands_now = [list(obs.hand), list(opponent_hand)]
    if obs.player == 1:
        hands_now.reverse()
    deal: list[int] = list(obs.initial_pool)
    for r in range(current + 1):
        alex, bob = rounds[r]
        if r == current and not obs.is_terminal:
            alex, bob = alex + hands_now[0], bob + hands_now[1]
        deal += sorted(alex) + sorted(bob)
    deal += list(future)
    return tuple(deal)


def determinize_with_hand(obs: Observation, opponent_hand: Sequence[int],
                          rng: random.Random) -> GameState:
    """The full state in which the opponent holds ``opponent_hand``; the other unseen cards
    go to the rounds to come in an order drawn from ``rng``."""
    held = set(opponent_hand)
    future = [c for c in obs.unseen if c not in held]
    rng.shuffle(future)
    deal = rebuild_deal(obs, opponent_hand, future)
    hands = [tuple(obs.hand), tuple(sorted(opponent_hand))]
    if obs.player == 1:
        hands.reverse()
    return GameState(deal=deal, play_index=obs.play_index, hands=(hands[0], hands[1]),
                     pool=obs.pool, piles=obs.piles, surs=obs.surs,
                     last_capturer=obs.last_capturer, history=obs.history)


def determinize(obs: Observation, rng: random.Random) -> GameState:
    """One uniform draw of a full state consistent with ``obs`` (seeded through ``rng``)."""
    hand = rng.sample(obs.unseen, obs.opponent_hand_size)
    return determinize_with_hand(obs, hand, rng)


def sample_states(obs: Observation, count: int, seed: int) -> list[GameState]:
    """``count`` uniform determinizations of ``obs`` from ``random.Random(seed)``."""
    if count < 1:
        raise ValueError(f"the number of determinizations must be at least 1, got {count}")
    rng = random.Random(seed)
    return [determinize(obs, rng) for _ in range(count)]
