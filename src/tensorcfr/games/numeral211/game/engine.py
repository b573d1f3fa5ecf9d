"""Reference engine of Numeral211 Hold'em: the readable source of truth for the rules.

Actions are the letters ``"f"`` (fold), ``"c"`` (check or call) and ``"r"`` (bet or raise).
A game is dealt from ``deal`` = [p0 card, p0 card, p1 card, p1 card, flop, turn]; betting
histories are kept per round (``"cr/rc/cc"``).  Folding when not facing a bet is illegal.
A round ends with check-check or a call of a bet; the game ends with a fold or after the last
round (showdown, best 3 of the 4 cards, :mod:`.evaluator`).  Payoffs are chips won (+) or
lost (-), zero-sum.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.config import GameConfig, cards_to_str
from tensorcfr.games.numeral211.game.evaluator import hand_value

__all__ = ["ACTIONS", "State", "IllegalActionError", "new_game", "random_deal"]

ACTIONS = ("f", "c", "r")
"""Action letters in their fixed order: fold, check/call, bet/raise (index = action id)."""


class IllegalActionError(TensorCFRError):
    """An action the rules forbid in this state."""


def random_deal(config: GameConfig, rng: random.Random) -> list[int]:
    """Six distinct cards: two per player, then the flop and the turn card."""
    return rng.sample(range(config.num_cards), 2 * config.private_cards
                      + sum(config.public_cards))


@dataclass
class State:
    """A Numeral211 game state after a complete deal (chance is resolved up front)."""

    config: GameConfig
    deal: list[int]
    rounds: list[str] = field(default_factory=lambda: [""])
    folded: int | None = None

    def __post_init__(self) -> None:
        n = 2 * self.config.private_cards + sum(self.config.public_cards)
        if len(self.deal) != n or len(set(self.deal)) != n or not all(
                0 <= c < self.config.num_cards for c in self.deal):
            raise TensorCFRError(f"a deal needs {n} distinct cards of the deck, got {self.deal}")

    def __deepcopy__(self, memo: dict[int, object]) -> "State":
        """A deep copy built directly: lists of ints or strings (the deal, the rounds' histories)
        are copied as lists, anything else with :func:`copy.deepcopy` (the config is immutable
        and copies as itself). OpenSpiel clones a ``python_numeral211`` state, and this engine
        state in it, with ``copy.deepcopy`` at every step of a tree walk."""
        clone = object.__new__(type(self))
        attributes = clone.__dict__
        for name, value in vars(self).items():
            if value is None or type(value) in (int, str, GameConfig):
                attributes[name] = value
            elif type(value) is list and all(type(v) in (int, str) for v in value):
                attributes[name] = list(value)
            else:
                attributes[name] = copy.deepcopy(value, memo)
        return clone

    # ------------------------------------------------------------------ views
    @property
    def round(self) -> int:
        """Current betting round (0 preflop, 1 flop, 2 turn)."""
        return len(self.rounds) - 1

    def private(self, player: int) -> list[int]:
        """The player's two private cards."""
        return self.deal[2 * player:2 * player + 2]

    @property
    def board(self) -> list[int]:
        """Public cards visible in the current round."""
        shown = sum(self.config.public_cards[:self.round + 1])
        return self.deal[4:4 + shown]

    def bets_in_round(self, r: int | None = None) -> int:
        """Bets plus raises made so far in round ``r`` (default: the current one)."""
        return self.rounds[self.round if r is None else r].count("r")

    def facing_bet(self) -> bool:
        """True when the player to act faces a bet or raise."""
        history = self.rounds[-1]
        return bool(history) and history[-1] == "r"

    @property
    def current_player(self) -> int:
        """Player to act (meaningless at a terminal state)."""
        return (self.config.first_to_act[self.round] + len(self.rounds[-1])) % 2

    def contributions(self) -> list[int]:
        """Chips each player has put in the pot so far (ante included)."""
        spent = [self.config.ante, self.config.ante]
        for r, history in enumerate(self.rounds):
            player = self.config.first_to_act[r]
            for action in history:
                if action == "r":
                    spent[player] = max(spent) + self.config.bets[r]
                elif action == "c":
                    spent[player] = max(spent)
                player = 1 - player
        return spent

    @property
    def pot(self) -> int:
        """Chips in the pot."""
        return sum(self.contributions())

    @property
    def is_terminal(self) -> bool:
        """True after a fold or when the last round's betting is closed."""
        return self.folded is not None or (self.round == self.config.num_rounds - 1
                                           and _round_closed(self.rounds[-1]))

    def legal_actions(self) -> list[str]:
        """Legal action letters, in the order fold, check/call, bet/raise."""
        if self.is_terminal:
            return []
        actions = []
        if self.facing_bet():
            actions.append("f")
        actions.append("c")
        if self.bets_in_round() < self.config.max_bets[self.round]:
            actions.append("r")
        return actions

    def apply(self, action: str) -> "State":
        """Play ``action`` (in place; returns self)."""
        if action not in self.legal_actions():
            raise IllegalActionError(f"action {action!r} is illegal here (legal: "
                                     f"{', '.join(self.legal_actions()) or 'none'})")
        if action == "f":
            self.folded = self.current_player
            self.rounds[-1] += "f"
            return self
        self.rounds[-1] += action
        if _round_closed(self.rounds[-1]) and self.round < self.config.num_rounds - 1:
            self.rounds.append("")
        return self

    def values(self) -> list[int]:
        """Showdown values of both players (best 3 of 4 cards; larger is better)."""
        return [hand_value(self.config, self.private(p), self.deal[4:]) for p in (0, 1)]

    def returns(self) -> list[float]:
        """Chips won by each player at a terminal state (zero-sum)."""
        if not self.is_terminal:
            raise TensorCFRError("returns() of a non-terminal state")
        spent = self.contributions()
        if self.folded is not None:
            loser = self.folded
        else:
            v0, v1 = self.values()
            if v0 == v1:
                return [0.0, 0.0]
            loser = 0 if v0 < v1 else 1
        won = float(spent[loser])
        return [won, -won] if loser == 1 else [-won, won]

    def history_string(self) -> str:
        """Betting history, rounds separated by ``/``."""
        return "/".join(self.rounds)

    def __str__(self) -> str:
        cfg = self.config
        return (f"p0 {cards_to_str(cfg, self.private(0))} p1 {cards_to_str(cfg, self.private(1))}"
                f" board {cards_to_str(cfg, self.board)} bets {self.history_string()}")


def _round_closed(history: str) -> bool:
    return history == "cc" or (len(history) >= 2 and history[-1] == "c" and history[-2] == "r")


def new_game(config: GameConfig, deal: list[int]) -> State:
    """Start a game on ``deal`` (6 distinct card numbers)."""
    return State(config, list(deal))
