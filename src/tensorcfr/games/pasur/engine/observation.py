"""What one player sees of a Pasur game with hidden hands: :class:`Observation`.

In the table game a player sees their own hand, the pool, and every play made so far (cards
are played face up, captures are shown); the opponent's hand and the cards still to be dealt
are hidden. :func:`observe` is the one place that turns a full :class:`rules.GameState` into
what a player may know; every hidden-hand agent, the OpenSpiel game and the play server's
hidden mode read an observation and nothing else.

Cards the observer cannot see are only a set, :attr:`Observation.unseen` (the opponent's hand
and the undealt cards together), with the opponent's hand size. Two states that differ only
in where the unseen cards are give equal observations (tested).

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> obs = observe(initial_state(random_deal(3)), player=1)
>>> len(obs.hand), obs.opponent_hand_size, len(obs.unseen)
(4, 4, 44)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensorcfr.games.pasur.engine.cards import NUM_CARDS, cards_str
from tensorcfr.games.pasur.engine.rules import (
    NUM_ROUNDS,
    PLAYERS,
    PLAYS_PER_ROUND,
    Action,
    GameState,
    hand_captures,
    score_pile,
)

__all__ = ["Observation", "observe", "seen_cards"]


@dataclass(frozen=True)
class Observation:
    """Everything player ``player`` knows at play ``play_index`` (0..48) of a game.

    Attributes:
        player: the observer, 0 = Alex, 1 = Bob.
        play_index: plays made so far; the round is ``play_index // 8``.
        initial_pool: the four face-up cards of the start (sorted).
        hand: the observer's current hand (sorted).
        pool: the pool now (sorted).
        history: every play so far, in order (card, captured set).
        piles: both players' capture piles (sorted), Alex's first.
        surs: both players' Surs.
        last_capturer: who captured last (None: nobody yet).
        opponent_hand_size: cards in the opponent's hand now.
        unseen: cards the observer has not seen (the opponent's hand and the undealt cards),
            sorted.
    """

    player: int
    play_index: int
    initial_pool: tuple[int, ...]
    hand: tuple[int, ...]
    pool: tuple[int, ...]
    history: tuple[Action, ...]
    piles: tuple[tuple[int, ...], tuple[int, ...]]
    surs: tuple[int, int]
    last_capturer: int | None
    opponent_hand_size: int
    unseen: tuple[int, ...]

    @property
    def round(self) -> int:
        """Round 0..5 of the next play (6 when the game is over)."""
        return self.play_index // PLAYS_PER_ROUND

    @property
    def to_move(self) -> int:
        """Who plays next (0 = Alex, 1 = Bob)."""
        return self.play_index % 2

    @property
    def is_terminal(self) -> bool:
        return self.play_index >= NUM_ROUNDS * PLAYS_PER_ROUND

    @property
    def my_turn(self) -> bool:
        return not self.is_terminal and self.to_move == self.player

    @property
    def undealt_count(self) -> int:
        """Cards still to be dealt in later rounds (8 per round to come)."""
        return len(self.unseen) - self.opponent_hand_size

    def points(self) -> tuple[int, int]:
        """(Alex, Bob) points scored so far (piles and Surs; the clubs bonus once reached)."""
        return (score_pile(self.piles[0], self.surs[0]).total,
                score_pile(self.piles[1], self.surs[1]).total)

    def legal_actions(self) -> list[Action]:
        """The observer's legal plays (empty unless it is the observer's turn)."""
        if not self.my_turn:
            return []
        # rules.card_actions for each card of the hand, the pool read once
        return [Action(card, s) for card, caps in hand_captures(self.hand, self.pool)
                for s in (caps or ((),))]

    def key(self) -> str:
        """A canonical text of the observation (an information-state string): equal for two
        states exactly when the observer cannot tell them apart."""
        plays = " ".join(a.notation() for a in self.history)
        return (f"p{self.player} t{self.play_index} start[{cards_str(self.initial_pool)}] "
                f"hand[{cards_str(self.hand)}] plays[{plays}]")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view (card indices), e.g. for the play server's hidden mode."""
        return {"player": self.player, "player_name": PLAYERS[self.player],
                "play_index": self.play_index, "round": self.round,
                "initial_pool": list(self.initial_pool), "hand": list(self.hand),
                "pool": list(self.pool),
                "history": [{"card": a.card, "captured": list(a.captured)}
                            for a in self.history],
                "piles": [list(self.piles[0]), list(self.piles[1])],
                "surs": list(self.surs), "last_capturer": self.last_capturer,
                "opponent_hand_size": self.opponent_hand_size,
                "unseen_count": len(self.unseen)}

    def describe(self) -> str:
        """One line for logs: whose view, the hand, the pool."""
        return (f"{PLAYERS[self.player]} at play {self.play_index}: hand "
                f"{cards_str(self.hand) or '-'}, pool {cards_str(self.pool) or '-'}, "
                f"{self.opponent_hand_size} cards in the rival's hand, "
                f"{self.undealt_count} undealt")


def seen_cards(initial_pool: tuple[int, ...], history: tuple[Action, ...],
               hand: tuple[int, ...]) -> frozenset[int]:
    """Cards a player has seen: the starting pool, every card played, its own hand."""
    return frozenset(initial_pool) | {a.card for a in history} | frozenset(hand)


def observe(state: GameState, player: int) -> Observation:
    """What ``player`` (0 = Alex, 1 = Bob) sees in ``state``.

    Nothing of ``state.deal`` beyond the starting pool is read, and nothing of the opponent's
    hand beyond its size, so no hidden card can leak through the result.
    """
    if player not in (0, 1):
        raise ValueError(f"player must be 0 (Alex) or 1 (Bob), got {player!r}")
    initial_pool = tuple(sorted(state.deal[:4]))
    hand = tuple(sorted(state.hands[player]))
    history = tuple(state.history)
    if len(history) != state.play_index:
        raise ValueError("the state's history does not hold every play: observations need "
                         "states reached by rules.apply_action from the start")
    seen = seen_cards(initial_pool, history, hand)
    unseen = tuple(c for c in range(NUM_CARDS) if c not in seen)
    return Observation(player=player, play_index=state.play_index, initial_pool=initial_pool,
                       hand=hand, pool=tuple(state.pool), history=history,
                       piles=(tuple(state.piles[0]), tuple(state.piles[1])),
                       surs=(int(state.surs[0]), int(state.surs[1])),
                       last_capturer=state.last_capturer,
                       opponent_hand_size=len(state.hands[1 - player]), unseen=unseen)

