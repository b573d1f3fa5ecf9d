"""Pasur with hidden hands as an OpenSpiel Python game, ``python_pasur`` (registered on import).

Two players (0 = Alex, 1 = Bob), zero-sum, sequential, imperfect information, explicit
stochastic chance, terminal rewards: ``returns() = [u, -u]`` with ``u`` = Alex's points minus
Bob's points (:func:`rules.utility`), ``[0, 0]`` before the end.

**Chance.** Every card reaches the table through a chance node, one card per node, so no
hidden card is fixed before it is dealt:

* the initial pool: four chance nodes, each uniform over the non-Jack cards not yet dealt;
* at the start of each round ``h`` (before its first play): eight chance nodes, Alex's four
  cards then Bob's four, each uniform over the cards not yet dealt.

This is exactly the deal distribution of the table rule of ``PASUR_RULES.md`` as
:func:`rules.random_deal` draws it: there the pool is a uniform 4-set of the 48 non-Jack cards
(the redeal and single-Jack-replacement procedure treats every non-Jack card alike and never
ends with a Jack in the pool) and the other 48 cards follow in a uniform order (the replaced
Jack is reinserted at a uniform place among the other 47), so every round's hands are uniform
draws without replacement from what is left, which is what the chance nodes do.

**Actions.** A play is ``card * M + k``: ``card`` the index of the played card (0..51), ``k``
the index of the captured set among that card's captures in :func:`rules.captures` order (the
order of :func:`rules.legal_actions`), ``k = 0`` for a lay. A Jack's capture, a Queen or a
King taking one card of its rank are each one such index. ``M`` = :data:`CAPTURES_PER_CARD` =
1059 is a proven upper bound on the captures of one card: a numeric card's capture together
with the card is a subset of the 40 numeric cards summing to 11 that holds the card, and the
Aces lie in the most such subsets (1059 of the 2764, :func:`sum11.sum11_combos`); a Queen or
King has at most 3 captures and a Jack 1. Ids increase with the card and then with ``k``, so
``legal_actions()`` lists the plays in the order of :func:`rules.legal_actions`. Chance
outcomes are card indices 0..51.

**Information.** ``information_state_string`` / ``_tensor`` and ``observation_string`` /
``_tensor`` read only what the player sees (:mod:`..engine.observation`): its own hand, the
starting pool, every play so far (card and captured set; hence pool, piles, Surs and points),
the round and the turn, and the opponent's hand as a count. Two states that differ only in
the opponent's hand or the undealt cards give the same strings and tensors (tested).
:meth:`PasurState.resample_from_infostate` draws a full state consistent with them
(:func:`determinize.determinize`), replayed from the start so its ``history()`` is legal.

**Speed.** A state keeps one immutable :class:`rules.GameState` (shared by clones: OpenSpiel's
clone deep-copies ``__dict__``, and the holder copies as itself) and its legal plays, computed
once per position by :func:`rules.hand_captures` (whose subset enumeration is cached). A play is
applied by :func:`rules.apply_legal_action` (the reference engine's own step, without the
legality check the legal list already made), so this game cannot drift from the engine.

**Parameters** (OpenSpiel game parameters, :class:`PasurConfig`): the deck and the deal sizes,
the rules unchanged otherwise. ``ranks`` (a subset of ``A23456789TJQK``) and ``suits`` (of
``cdhs``) make the deck; ``table_cards`` face-up cards start the pool (never a Jack); each of
``rounds`` rounds deals ``hand_cards`` cards to Alex, then to Bob (cards left over are never
dealt); ``clubs_for_bonus`` is the pile size in clubs that scores the 7-point bonus (7, the
real rule, makes the bonus unreachable in a deck of fewer than 7 clubs; a value must exceed
half the deck's clubs, so at most one player reaches it). ``sorted_deal=true`` deals every
hand and the starting pool in increasing card order, each chance node drawing the next card
with the probability that a uniform set of the remaining size has it as its next-smallest
card: every set keeps its probability and the information states are the same, but the tree
has ``k!`` times fewer chance histories per set of ``k`` cards (what the exact solvers of
small variants want). Without parameters the game is the real one, node for node as before.
A variant's action ids are ``card * M + k`` with ``M`` the most captures one card of its deck
can have (:attr:`PasurConfig.captures_per_card`), so a small deck has few distinct actions.
Bad parameters raise :class:`PasurParameterError` with one line.

>>> import pyspiel
>>> small = pyspiel.load_game("python_pasur(ranks=A5TJ,suits=cd,table_cards=1,hand_cards=2,"
...                           "rounds=1,sorted_deal=true)")
>>> small.num_distinct_actions(), small.max_game_length()
(156, 4)

This module knows the rules through :mod:`..engine` only; it knows nothing of agents or
search (:mod:`.ismcts_agent` drives it).

>>> import pyspiel
>>> game = pyspiel.load_game("python_pasur")
>>> state = game.new_initial_state()
>>> state.is_chance_node(), len(state.chance_outcomes())
(True, 48)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from functools import cached_property
from math import comb
from typing import Any, Callable

import numpy as np
import pyspiel

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import (
    ACES,
    NUM_CARDS,
    RANKS,
    SUITS,
    TEN_OF_DIAMONDS,
    TWO_OF_CLUBS,
    card_code,
    card_value,
    cards_str,
    is_club,
    is_jack,
    is_numeric,
)
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import Observation, observe

__all__ = ["CAPTURES_PER_CARD", "DEFAULT_CONFIG", "GAME_NAME", "MAX_UTILITY",
           "NUM_DISTINCT_ACTIONS", "PasurConfig", "PasurGame", "PasurParameterError",
           "PasurState", "action_id", "apply_play", "deal_card", "determinized_deal", "load_game",
           "score", "state_from_rules"]

GAME_NAME = "python_pasur"
CAPTURES_PER_CARD = 1059
"""M: most captures one card can have (an Ace: 1059 subsets summing to 10 with it); see the
module docstring."""
NUM_DISTINCT_ACTIONS = NUM_CARDS * CAPTURES_PER_CARD
MAX_UTILITY = 120
"""A bound on |Alex's points - Bob's points|: the 20 card points (clubs bonus 7, Aces 4,
Jacks 4, 10 of diamonds 3, 2 of clubs 2) plus 5 per Sur, at most 20 Surs (a player's 20 plays
of rounds 1..5)."""
_CHANCE = int(pyspiel.PlayerId.CHANCE)
_TERMINAL = int(pyspiel.PlayerId.TERMINAL)
MAX_HAND_CARDS = 13
"""Most cards per hand a variant may deal."""
MAX_ROUNDS = 26
"""Most rounds a variant may have (a one-card hand per player per round, 52 cards)."""


class PasurParameterError(TensorCFRError, ValueError):
    """A ``python_pasur`` game parameter out of range or inconsistent with the others."""


def _letters(name: str, text: Any, alphabet: str, what: str) -> str:
    """``text`` as a string of distinct letters of ``alphabet``, in the alphabet's order."""
    if not isinstance(text, str) or not text.strip():
        raise PasurParameterError(f"{name} must be a non-empty string of {what} ({alphabet}), "
                                  f"got {text!r}")
    letters = text.strip().upper() if alphabet == RANKS else text.strip().lower()
    bad = sorted({ch for ch in letters if ch not in alphabet})
    if bad:
        raise PasurParameterError(f"{name} holds {''.join(bad)!r}, not among the {what} "
                                  f"{alphabet}")
    twice = sorted({ch for ch in letters if letters.count(ch) > 1})
    if twice:
        raise PasurParameterError(f"{name} names {''.join(twice)!r} twice")
    return "".join(ch for ch in alphabet if ch in letters)


def _count(name: str, value: Any, low: int, high: int, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PasurParameterError(f"{name} must be a whole number from {low} to {high} "
                                  f"({why}), got {value!r}")


@dataclass(frozen=True)
class PasurConfig:
    """The deck and deal sizes of a ``python_pasur`` game: its OpenSpiel parameters.

    Attributes:
        ranks: the deck's ranks, letters of ``A23456789TJQK`` (any order and case).
        suits: the deck's suits, letters of ``cdhs``.
        table_cards: face-up cards that start the pool (no Jack among them).
        hand_cards: cards each player is dealt per round.
        rounds: rounds of the game; no Sur is scored in the last one.
        clubs_for_bonus: clubs in a pile that score the 7-point bonus (more than half the
            deck's clubs; 7, the real rule, is unreachable in a deck of fewer than 7 clubs).
        sorted_deal: deal every set (the starting pool, each hand) in increasing card order
            (see the module docstring); the information states are the same.

    The defaults are the real game (52 cards, 4 on the table, 6 rounds of 4-card hands). A
    config is validated when built (:class:`PasurParameterError`, one line); ranks and
    suits are kept in the canonical order, so equal decks give equal configs.

    >>> PasurConfig(ranks="ta5", suits="dc", table_cards=1, hand_cards=2, rounds=1).ranks
    'A5T'
    """

    ranks: str = RANKS
    suits: str = SUITS
    table_cards: int = 4
    hand_cards: int = 4
    rounds: int = rules.NUM_ROUNDS
    clubs_for_bonus: int = rules.CLUBS_FOR_BONUS
    sorted_deal: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranks", _letters("ranks", self.ranks, RANKS, "ranks"))
        object.__setattr__(self, "suits", _letters("suits", self.suits, SUITS, "suits"))
        _count("table_cards", self.table_cards, 0, 48, "the face-up cards of the start")
        _count("hand_cards", self.hand_cards, 1, MAX_HAND_CARDS, "cards per hand and round")
        _count("rounds", self.rounds, 1, MAX_ROUNDS, "rounds of dealing")
        _count("clubs_for_bonus", self.clubs_for_bonus, 1, 13, "clubs that score the bonus")
        if not isinstance(self.sorted_deal, bool):
            raise PasurParameterError(f"sorted_deal must be true or false, got "
                                      f"{self.sorted_deal!r}")
        deck = len(self.ranks) * len(self.suits)
        if self.cards_dealt > deck:
            raise PasurParameterError(
                f"the deal needs {self.cards_dealt} cards (table_cards + 2 x hand_cards x "
                f"rounds = {self.table_cards} + 2 x {self.hand_cards} x {self.rounds}), the "
                f"deck of ranks {self.ranks} and suits {self.suits} has {deck}")
        if len(self.non_jacks) < self.table_cards:
            raise PasurParameterError(
                f"table_cards={self.table_cards} but the deck has only "
                f"{len(self.non_jacks)} cards that are not Jacks (the starting pool holds no "
                "Jack)")
        clubs = sum(1 for c in self.deck if is_club(c))
        if 2 * self.clubs_for_bonus <= clubs:
            raise PasurParameterError(
                f"clubs_for_bonus={self.clubs_for_bonus} must be more than half the deck's "
                f"{clubs} clubs, so that at most one player reaches it")

    def __deepcopy__(self, memo: dict[int, Any]) -> "PasurConfig":
        return self  # immutable; shared by every state (OpenSpiel's clone deep-copies)

    @classmethod
    def from_parameters(cls, params: dict[str, Any] | None) -> "PasurConfig":
        """The config of OpenSpiel game parameters (unknown names raise)."""
        params = dict(params or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise PasurParameterError(f"python_pasur has no parameter {unknown[0]!r}; its "
                                      f"parameters are {', '.join(sorted(known))}")
        return cls(**params)

    def parameters(self) -> dict[str, Any]:
        """The parameters that differ from the real game (the game string's)."""
        default = DEFAULT_CONFIG if "DEFAULT_CONFIG" in globals() else PasurConfig()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    def game_string(self) -> str:
        """``python_pasur(...)`` with the non-default parameters (``python_pasur()``: the
        real game)."""
        def text(value: Any) -> str:
            return str(value).lower() if isinstance(value, bool) else str(value)
        return f"{GAME_NAME}({','.join(f'{k}={text(v)}' for k, v in self.parameters().items())})"

    # ------------------------------------------------------------------ derived sizes

    @cached_property
    def is_default(self) -> bool:
        """True for the real game."""
        return not self.parameters()

    @cached_property
    def deck(self) -> tuple[int, ...]:
        """The deck's card indices, increasing."""
        return tuple(sorted(4 * RANKS.index(r) + SUITS.index(s)
                            for r in self.ranks for s in self.suits))

    @cached_property
    def non_jacks(self) -> tuple[int, ...]:
        """The deck's cards that may start in the pool."""
        return tuple(c for c in self.deck if not is_jack(c))

    @property
    def plays_per_round(self) -> int:
        return 2 * self.hand_cards

    @property
    def num_plays(self) -> int:
        """Plays in a game (48 in the real game)."""
        return self.rounds * self.plays_per_round

    @property
    def cards_dealt(self) -> int:
        """Cards dealt in a game, the pool's included (52 in the real game)."""
        return self.table_cards + self.num_plays

    def dealt_before_play(self, play_index: int) -> int:
        """Cards dealt (pool included) once the round of play ``play_index`` is dealt."""
        return self.table_cards + self.plays_per_round * (play_index // self.plays_per_round
                                                          + 1)

    def deal_set(self, dealt: int) -> tuple[int, int]:
        """``(first position, size)`` in the deal order of the set (starting pool or hand)
        that the card dealt at position ``dealt`` belongs to."""
        if dealt < self.table_cards:
            return 0, self.table_cards
        group = (dealt - self.table_cards) // self.hand_cards
        return self.table_cards + group * self.hand_cards, self.hand_cards

    @cached_property
    def captures_per_card(self) -> int:
        """M: the most captures one card of the deck can have (action ids are
        ``card * M + k``); :data:`CAPTURES_PER_CARD` for the real game."""
        if self.is_default:
            return CAPTURES_PER_CARD
        numeric = [c for c in self.deck if is_numeric(c)]
        most = 1
        for card in self.deck:
            if is_numeric(card):
                # subsets of the other numeric cards summing to 11 - value: a count DP
                ways = [1] + [0] * 10
                for other in numeric:
                    if other != card:
                        v = card_value(other)
                        for s in range(10, v - 1, -1):
                            ways[s] += ways[s - v]
                most = max(most, ways[11 - card_value(card)])
            elif not is_jack(card):
                same = sum(1 for c in self.deck if c != card and c // 4 == card // 4)
                most = max(most, same)
        return most

    @cached_property
    def num_distinct_actions(self) -> int:
        return NUM_CARDS * self.captures_per_card

    @cached_property
    def max_utility(self) -> int:
        """A bound on |Alex's points - Bob's points|: the deck's card points, the clubs bonus
        when reachable, and 5 per Sur of a player's plays before the last round."""
        if self.is_default:
            return MAX_UTILITY
        card_points = sum((c in ACES) + is_jack(c) + 3 * (c == TEN_OF_DIAMONDS)
                          + 2 * (c == TWO_OF_CLUBS) for c in self.deck)
        clubs = sum(1 for c in self.deck if is_club(c))
        bonus = rules.CLUBS_BONUS if clubs >= self.clubs_for_bonus else 0
        return card_points + bonus + rules.SUR_POINTS * (self.rounds - 1) * self.hand_cards


DEFAULT_CONFIG = PasurConfig()
"""The real game."""


def score(config: PasurConfig, state: rules.GameState) -> tuple[int, int]:
    """(Alex, Bob) points of ``state``'s piles and Surs under ``config``'s clubs bonus."""
    totals = []
    for p in (0, 1):
        part = rules.score_pile(state.piles[p], state.surs[p])
        bonus = rules.CLUBS_BONUS if part.clubs >= config.clubs_for_bonus else 0
        totals.append(part.total - part.clubs_bonus + bonus)
    return totals[0], totals[1]


def apply_play(config: PasurConfig, state: rules.GameState, play: rules.Action
               ) -> rules.GameState:
    """The state after ``play`` (legal in ``state``) under ``config``: the real game's step
    is :func:`rules.apply_legal_action` itself; a variant's is :func:`_apply_play_variant`."""
    if config.is_default:
        return rules.apply_legal_action(state, play)
    return _apply_play_variant(config, state, play)


def _apply_play_variant(config: PasurConfig, state: rules.GameState, play: rules.Action
                        ) -> rules.GameState:
    """:func:`rules.apply_legal_action` with ``config``'s round length and game length
    (tested equal to it under the real game's config). The next round's hands are left
    empty: its chance nodes deal them."""
    return rules.apply_legal_action(state, play, plays_per_round=config.plays_per_round,
                                    num_rounds=config.rounds, deal_next_round=False)


def _mover(config: PasurConfig, state: rules.GameState) -> int:
    """Who acts in ``state``: 0 / 1, chance (cards of the round still to deal) or terminal."""
    if state.play_index >= config.num_plays:
        return _TERMINAL
    if len(state.deal) < config.dealt_before_play(state.play_index):
        return _CHANCE
    return state.play_index % 2


class _Position:
    """One immutable position: the rules state, its legal plays (lazily) and the play text.

    Shared between an OpenSpiel state and its clones (``__deepcopy__`` returns itself), which
    is safe because nothing here is ever changed after the legal plays are filled in.
    """

    __slots__ = ("game_state", "plays_text", "config", "mover", "_legal")

    def __init__(self, game_state: rules.GameState, plays_text: str,
                 config: PasurConfig = DEFAULT_CONFIG) -> None:
        self.game_state = game_state
        self.plays_text = plays_text
        self.config = config
        self.mover = _mover(config, game_state)
        self._legal: dict[int, rules.Action] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Position":
        return self

    def __getstate__(self) -> tuple[rules.GameState, str, PasurConfig]:
        return self.game_state, self.plays_text, self.config

    def __setstate__(self, data: tuple[rules.GameState, str, PasurConfig]) -> None:
        self.__init__(*data)  # type: ignore[misc]

    def legal(self) -> dict[int, rules.Action]:
        """Action id -> play, in increasing id order (= :func:`rules.legal_actions` order)."""
        if self._legal is None:
            state = self.game_state
            per_card = self.config.captures_per_card
            legal: dict[int, rules.Action] = {}
            for card, caps in rules.hand_captures(state.hands[state.play_index % 2],
                                                  state.pool):
                base = card * per_card
                if caps:
                    for k, captured in enumerate(caps):
                        legal[base + k] = rules.Action(card, captured)
                else:
                    legal[base] = rules.Action(card, ())
            self._legal = legal
        return self._legal


def _empty_game_state() -> rules.GameState:
    return rules.GameState(deal=(), play_index=0, hands=((), ()), pool=())


def _chance_outcomes(config: PasurConfig, deal: tuple[int, ...]) -> list[tuple[int, float]]:
    """The next card's outcomes: uniform over the cards not yet dealt (no Jack in the
    starting pool), or with ``sorted_deal`` the next-smallest card of a uniform set."""
    dealt = set(deal)
    n = len(deal)
    candidates = config.non_jacks if n < config.table_cards else config.deck
    left = [c for c in candidates if c not in dealt]
    if not config.sorted_deal:
        p = 1.0 / len(left)
        return [(c, p) for c in left]
    start, size = config.deal_set(n)
    to_deal = size - (n - start)
    if n > start:
        left = [c for c in left if c > deal[-1]]
    total = comb(len(left), to_deal)
    out = []
    for i, c in enumerate(left):
        ways = comb(len(left) - i - 1, to_deal - 1)
        if ways:
            out.append((c, ways / total))
    return out


class PasurState(pyspiel.State):
    """A position of ``python_pasur`` (see the module docstring)."""

    def __init__(self, game: "PasurGame") -> None:
        super().__init__(game)
        self._position = _Position(_empty_game_state(), "", game.config)

    # ------------------------------------------------------------------ reading

    @property
    def rules_state(self) -> rules.GameState:
        """The full :class:`rules.GameState` (every card; ``deal`` holds the cards dealt so
        far, in deal order: pool first, then each round's Alex and Bob hands). In a variant
        its ``round`` and ``is_terminal`` read the real game's sizes: use :attr:`config`."""
        return self._position.game_state

    @property
    def config(self) -> PasurConfig:
        """The game's deck and deal sizes."""
        return self._position.config

    def current_player(self) -> int:
        return self._position.mover

    def is_terminal(self) -> bool:
        return self._position.game_state.play_index >= self._position.config.num_plays

    def returns(self) -> list[float]:
        position = self._position
        state = position.game_state
        if state.play_index < position.config.num_plays:
            return [0.0, 0.0]
        if position.config.is_default:
            u = float(rules.utility(state))
        else:
            a, b = score(position.config, state)
            u = float(a - b)
        return [u, -u]

    def _legal_actions(self, player: int) -> list[int]:
        return list(self._position.legal())

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return _chance_outcomes(self._position.config, self._position.game_state.deal)

    def rules_action(self, action: int) -> rules.Action:
        """The :class:`rules.Action` of a legal action id at this decision node."""
        legal = self._position.legal()
        if action not in legal:
            raise ValueError(f"action {action} is not legal here")
        return legal[action]

    # ------------------------------------------------------------------ moving

    def _apply_action(self, action: int) -> None:
        position = self._position
        state = position.game_state
        config = position.config
        if position.mover == _CHANCE:
            self._position = _Position(deal_card(config, state, int(action)),
                                       position.plays_text, config)
            return
        play = position.legal()[action]
        after = apply_play(config, state, play)
        text = play.notation()
        self._position = _Position(after, f"{position.plays_text} {text}" if
                                   position.plays_text else text, config)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {card_code(int(action))}"
        legal = self._position.legal() if not self.is_terminal() \
            and self.current_player() == player else {}
        if action in legal:
            return legal[action].notation()
        card, k = divmod(int(action), self._position.config.captures_per_card)
        return f"{card_code(card)} capture #{k}"

    # ------------------------------------------------------------------ information

    def info_state_text(self, player: int) -> str:
        """The canonical information-state string of ``player`` (equal exactly when the
        player cannot tell the states apart)."""
        state = self._position.game_state
        table = self._position.config.table_cards
        return (f"p{player} t{state.play_index} n{len(state.deal)} "
                f"start[{cards_str(sorted(state.deal[:table]))}] "
                f"hand[{cards_str(state.hands[player])}] plays[{self._position.plays_text}]")

    def observation_for(self, player: int) -> Observation:
        """What ``player`` sees (:func:`observe`; the real game only: an observation has
        the real game's sizes)."""
        if not self._position.config.is_default:
            raise TensorCFRError("observations (engine.observation) describe the real game; "
                                 "a python_pasur variant has none")
        return observe(self._position.game_state, player)

    def resample_from_infostate(self, player_id: int,
                                probability_sampler: Callable[[], float], *,
                                replay: bool = True) -> "PasurState":
        """A state drawn uniformly among those ``player_id`` cannot tell from this one.

        Args:
            player_id: the player whose information is kept.
            probability_sampler: a callable giving uniform floats in [0, 1) (e.g.
                ``pyspiel.UniformProbabilitySampler``); one draw seeds the determinization.
            replay: ``True``: the new state is replayed from the initial state (chance deals
                and plays), so its ``history()`` is a legal history. ``False`` (search):
                the state is built directly, much faster late in a game, and its
                ``history()`` is empty; everything else (information states, legal plays,
                returns, further play) is the same.

        Returns:
            A new state whose information state for ``player_id`` equals this one's.
        """
        seed = int(probability_sampler() * 2.0 ** 53)
        if not self._position.config.is_default:
            return self._resample_variant(player_id, random.Random(seed), replay)
        drawn = determinize(self.observation_for(player_id), random.Random(seed))
        cut = len(self._position.game_state.deal)
        drawn = rules.GameState(deal=drawn.deal[:cut], play_index=drawn.play_index,
                                hands=drawn.hands, pool=drawn.pool, piles=drawn.piles,
                                surs=drawn.surs, last_capturer=drawn.last_capturer,
                                history=drawn.history)
        if replay:
            return state_from_rules(self.get_game(), drawn)
        state = self.get_game().new_initial_state()
        state._position = _Position(drawn, self._position.plays_text)
        return state

    def _resample_variant(self, player: int, rng: random.Random, replay: bool
                          ) -> "PasurState":
        """:meth:`resample_from_infostate` of a variant, with the deal of
        :func:`determinized_deal`: replayed through the history, or built directly."""
        config = self._position.config
        state = self._position.game_state
        deal = determinized_deal(config, state, player, rng)
        if not replay:
            played = {play.card for play in state.history}
            opponent = 1 - player
            hands = [state.hands[0], state.hands[1]]
            hands[opponent] = tuple(sorted(
                card for pos, card in enumerate(deal)
                if pos >= config.table_cards and card not in played
                and ((pos - config.table_cards) % config.plays_per_round
                     >= config.hand_cards) == bool(opponent)))
            drawn = rules.GameState(deal=deal, play_index=state.play_index,
                                    hands=(hands[0], hands[1]), pool=state.pool,
                                    piles=state.piles, surs=state.surs,
                                    last_capturer=state.last_capturer, history=state.history)
            fresh = self.get_game().new_initial_state()
            fresh._position = _Position(drawn, self._position.plays_text, config)
            return fresh
        fresh = self.get_game().new_initial_state()
        dealt = 0
        for action in self.history():
            if fresh.is_chance_node():
                fresh.apply_action(deal[dealt])
                dealt += 1
            else:
                fresh.apply_action(action)
        return fresh

    def __str__(self) -> str:
        state = self._position.game_state
        hands = " | ".join(f"{rules.PLAYERS[p]} [{cards_str(state.hands[p])}]" for p in (0, 1))
        if self._position.config.is_default:
            a, b = (part.total for part in rules.score(state))
        else:
            a, b = score(self._position.config, state)
        return (f"play {state.play_index} dealt {len(state.deal)} | {hands} | pool "
                f"[{cards_str(state.pool)}] | points {a}-{b} surs "
                f"{state.surs[0]}-{state.surs[1]} | plays [{self._position.plays_text}]")


def deal_card(config: PasurConfig, state: rules.GameState, card: int) -> rules.GameState:
    """``state`` with ``card`` dealt: to the pool (the first ``table_cards``), else to the
    hand being dealt (Alex's then Bob's each round)."""
    if card in state.deal:
        raise ValueError(f"card {card_code(card)} was already dealt")
    if not config.is_default and card not in dict(_chance_outcomes(config, state.deal)):
        raise ValueError(f"card {card_code(card) if 0 <= card < NUM_CARDS else card} cannot "
                         "be dealt here")
    dealt = len(state.deal)
    deal = state.deal + (card,)
    if dealt < config.table_cards:
        return rules.GameState(deal=deal, play_index=state.play_index, hands=state.hands,
                               pool=tuple(sorted(state.pool + (card,))))
    hands = list(state.hands)
    who = 0 if (dealt - config.table_cards) % config.plays_per_round < config.hand_cards else 1
    hands[who] = tuple(sorted(hands[who] + (card,)))
    return rules.GameState(deal=deal, play_index=state.play_index, hands=(hands[0], hands[1]),
                           pool=state.pool, piles=state.piles, surs=state.surs,
                           last_capturer=state.last_capturer, history=state.history)


def determinized_deal(config: PasurConfig, state: rules.GameState, player: int,
                      rng: random.Random) -> tuple[int, ...]:
    """The cards dealt so far (``state.deal``'s length) with the opponent's unplayed cards
    redrawn uniformly from the cards ``player`` has not seen (the start pool, the plays and
    the own hand are seen); each redrawn hand keeps its played cards and is in increasing
    order under ``sorted_deal``. ``player`` cannot tell the result from the true deal."""
    deal = list(state.deal)
    played = {play.card for play in state.history}
    opponent = 1 - player
    hidden = [pos for pos in range(config.table_cards, len(deal))
              if ((pos - config.table_cards) % config.plays_per_round >= config.hand_cards)
              == bool(opponent) and deal[pos] not in played]
    if hidden:
        seen = set(deal[:config.table_cards]) | played | set(state.hands[player])
        unseen = [c for c in config.deck if c not in seen]
        for pos, card in zip(hidden, rng.sample(unseen, len(hidden))):
            deal[pos] = card
        if config.sorted_deal:
            for start in sorted({config.deal_set(pos)[0] for pos in hidden}):
                deal[start:start + config.hand_cards] = sorted(
                    deal[start:start + config.hand_cards])
    return tuple(deal)


def action_id(state: rules.GameState, action: rules.Action, *,
              captures_per_card: int = CAPTURES_PER_CARD) -> int:
    """The action id of ``action`` (a play legal in ``state``): ``card * M + k``
    (``M`` = ``captures_per_card``: the game's :attr:`PasurConfig.captures_per_card`).

    Raises ``ValueError`` when the captured set is not one of the card's captures for the
    pool of ``state`` (or the card must capture and is laid); the inverse is
    :meth:`PasurState.rules_action`.
    """
    caps = rules.captures(action.card, state.pool)
    base = action.card * captures_per_card
    if not action.captured:
        if caps:
            raise ValueError(f"{action.notation()} cannot be laid: it has a capture")
        return base
    captured = tuple(sorted(action.captured))
    if captured not in caps:
        raise ValueError(f"{action.notation()} is not a capture of {card_code(action.card)}")
    return base + caps.index(captured)


def state_from_rules(game: "PasurGame", game_state: rules.GameState) -> PasurState:
    """The ``python_pasur`` state of a rules state reached by :func:`rules.apply_action`
    (its deal's first ``len(deal)`` cards dealt, its history played), replayed from the
    initial state through the chance nodes and the plays, so ``history()`` is legal.

    ``game_state.deal`` may hold more cards than dealt so far (a whole deal): only the cards
    of the rounds reached are dealt. In a variant the deal is read in its deal order (each
    set in increasing order under ``sorted_deal``).
    """
    config = game.config
    if len(game_state.history) != game_state.play_index:
        raise ValueError("the rules state's history does not hold every play")
    dealt_needed = min(len(game_state.deal),
                       config.dealt_before_play(min(game_state.play_index,
                                                    config.num_plays - 1)))
    deal = game_state.deal
    state = game.new_initial_state()
    dealt = 0
    for play in game_state.history:
        while state.is_chance_node():
            state.apply_action(deal[dealt])
            dealt += 1
        state.apply_action(action_id(state.rules_state, play,
                                     captures_per_card=config.captures_per_card))
    while dealt < dealt_needed and state.is_chance_node():
        state.apply_action(deal[dealt])
        dealt += 1
    return state


class _Observer:
    """The tensors and strings of ``python_pasur`` for one observation type.

    ``perfect_recall=False`` (observations): ``player`` [2], ``turn`` [2] (who moves),
    ``round`` [R + 1] (R = over), ``hand`` [52], ``pool`` [52], ``piles`` [2, 52], ``played``
    [2, 52] (cards each player has played), ``opponent_hand_size`` [H + 1] (one-hot 0..H),
    ``surs`` [2], ``points`` [2], ``last_capturer`` [3] (nobody, Alex, Bob).
    ``perfect_recall=True`` (information states) adds ``dealt`` [D + 1] (one-hot: cards dealt
    so far), ``start`` [52] (the initial pool) and ``plays`` [P, 2, 52] (play ``i``: the
    card, then the captured set). R, H, D, P: rounds, cards per hand, cards dealt and plays
    of the game (6, 4, 52, 48 in the real game); cards keep their 52 indices in a variant.
    Without private information the hand is left out; without public information only the
    player and the hand remain.
    """

    def __init__(self, iig_obs_type: Any, params: Any,
                 config: PasurConfig = DEFAULT_CONFIG) -> None:
        if params:
            raise ValueError(f"python_pasur observers take no parameters, got {params}")
        if iig_obs_type is None:
            iig_obs_type = pyspiel.IIGObservationType(perfect_recall=False)
        if iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS:
            raise ValueError("python_pasur has no observer that sees both hands")
        self.config = config
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.public = bool(iig_obs_type.public_info)
        self.private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        pieces: list[tuple[str, tuple[int, ...]]] = [("player", (2,))]
        if self.private:
            pieces.append(("hand", (NUM_CARDS,)))
        if self.public:
            pieces += [("turn", (2,)), ("round", (config.rounds + 1,)),
                       ("pool", (NUM_CARDS,)), ("piles", (2, NUM_CARDS)),
                       ("played", (2, NUM_CARDS)),
                       ("opponent_hand_size", (config.hand_cards + 1,)),
                       ("surs", (2,)), ("points", (2,)), ("last_capturer", (3,))]
            if self.perfect_recall:
                pieces += [("dealt", (config.cards_dealt + 1,)), ("start", (NUM_CARDS,)),
                           ("plays", (config.num_plays, 2, NUM_CARDS))]
        size = sum(int(np.prod(shape)) for _, shape in pieces)
        self.tensor = np.zeros(size, np.float32)
        self.dict: dict[str, np.ndarray] = {}
        offset = 0
        for name, shape in pieces:
            n = int(np.prod(shape))
            self.dict[name] = self.tensor[offset:offset + n].reshape(shape)
            offset += n

    def _points(self, game_state: rules.GameState) -> tuple[int, int]:
        if self.config.is_default:
            a, b = rules.score(game_state)
            return a.total, b.total
        return score(self.config, game_state)

    def _round(self, game_state: rules.GameState) -> int:
        return min(game_state.play_index // self.config.plays_per_round, self.config.rounds)

    def set_from(self, state: PasurState, player: int) -> None:
        """Fill :attr:`tensor` with what ``player`` sees in ``state``."""
        self.tensor.fill(0.0)
        d = self.dict
        d["player"][player] = 1.0
        game_state = state.rules_state
        if self.private:
            d["hand"][list(game_state.hands[player])] = 1.0
        if not self.public:
            return
        mover = state.current_player()
        if mover in (0, 1):
            d["turn"][mover] = 1.0
        d["round"][self._round(game_state)] = 1.0
        d["pool"][list(game_state.pool)] = 1.0
        for p in (0, 1):
            d["piles"][p, list(game_state.piles[p])] = 1.0
        for i, play in enumerate(game_state.history):
            d["played"][i % 2, play.card] = 1.0
        d["opponent_hand_size"][len(game_state.hands[1 - player])] = 1.0
        d["surs"][:] = game_state.surs
        d["points"][:] = self._points(game_state)
        last = game_state.last_capturer
        d["last_capturer"][0 if last is None else last + 1] = 1.0
        if self.perfect_recall:
            d["dealt"][len(game_state.deal)] = 1.0
            d["start"][list(game_state.deal[:self.config.table_cards])] = 1.0
            for i, play in enumerate(game_state.history):
                d["plays"][i, 0, play.card] = 1.0
                d["plays"][i, 1, list(play.captured)] = 1.0

    def string_from(self, state: PasurState, player: int) -> str:
        """What ``player`` sees, as text: the canonical information-state string
        (perfect recall), else a readable view."""
        if self.perfect_recall and self.public and self.private:
            return state.info_state_text(player)
        game_state = state.rules_state
        parts = [f"p{player}"]
        if self.private:
            parts.append(f"hand[{cards_str(game_state.hands[player])}]")
        if self.public:
            mover = state.current_player()
            turn = rules.PLAYERS[mover] if mover in (0, 1) else (
                "over" if state.is_terminal() else "deal")
            a, b = self._points(game_state)
            table = self.config.table_cards
            parts += [f"round {min(self._round(game_state), self.config.rounds - 1) + 1}",
                      f"turn {turn}", f"dealt {len(game_state.deal)}",
                      f"start[{cards_str(sorted(game_state.deal[:table]))}]",
                      f"pool[{cards_str(game_state.pool)}]",
                      f"piles[{cards_str(game_state.piles[0])}|"
                      f"{cards_str(game_state.piles[1])}]",
                      f"points {a}-{b} surs {game_state.surs[0]}-"
                      f"{game_state.surs[1]}",
                      f"opponent holds {len(game_state.hands[1 - player])}",
                      f"plays[{' '.join(p.notation() for p in game_state.history)}]"]
        return " ".join(parts)


_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Pasur (hidden hands)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification={f.name: getattr(DEFAULT_CONFIG, f.name)
                             for f in fields(PasurConfig)})


def _game_info(config: PasurConfig) -> pyspiel.GameInfo:
    return pyspiel.GameInfo(
        num_distinct_actions=config.num_distinct_actions,
        max_chance_outcomes=NUM_CARDS,
        num_players=2,
        min_utility=-float(config.max_utility),
        max_utility=float(config.max_utility),
        utility_sum=0.0,
        max_game_length=config.num_plays)


class PasurGame(pyspiel.Game):
    """The ``python_pasur`` game; its parameters are :class:`PasurConfig`'s fields."""

    def __init__(self, params: Any = None) -> None:
        self.config = PasurConfig.from_parameters(params)
        # Only the parameters that differ from the real game: its string stays
        # ``python_pasur()`` (OpenSpiel hands the constructor every default as well).
        super().__init__(_GAME_TYPE, _game_info(self.config), self.config.parameters())

    def new_initial_state(self) -> PasurState:
        return PasurState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> _Observer:
        return _Observer(iig_obs_type, params, self.config)


def load_game(config: PasurConfig | None = None) -> PasurGame:
    """``pyspiel.load_game("python_pasur")``, or the variant of ``config``."""
    if config is None or config.is_default:
        return pyspiel.load_game(GAME_NAME)
    return pyspiel.load_game(GAME_NAME, config.parameters())


if GAME_NAME not in pyspiel.registered_names():
    pyspiel.register_game(_GAME_TYPE, PasurGame)
