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
from typing import Any, Callable

import numpy as np
import pyspiel

from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import NUM_CARDS, card_code, cards_str, is_jack
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import Observation, observe

__all__ = ["CAPTURES_PER_CARD", "GAME_NAME", "MAX_UTILITY", "NUM_DISTINCT_ACTIONS",
           "PasurGame", "PasurState", "action_id", "load_game", "state_from_rules"]

GAME_NAME = "python_pasur"
CAPTURES_PER_CARD = 1059
"""M: most captures one card can have (an Ace: 1059 subsets summing to 10 with it); see the
module docstring."""
NUM_DISTINCT_ACTIONS = NUM_CARDS * CAPTURES_PER_CARD
MAX_UTILITY = 120
"""A bound on |Alex's points - Bob's points|: the 20 card points (clubs bonus 7, Aces 4,
Jacks 4, 10 of diamonds 3, 2 of clubs 2) plus 5 per Sur, at most 20 Surs (a player's 20 plays
of rounds 1..5)."""
_POOL_SIZE = 4
_NON_JACKS = tuple(c for c in range(NUM_CARDS) if not is_jack(c))
_MAX_PLAYS = rules.NUM_PLAYS
_CHANCE = int(pyspiel.PlayerId.CHANCE)

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
    parameter_specification={})
_GAME_INFO = pyspiel.GameInfo(
    num_distinct_actions=NUM_DISTINCT_ACTIONS,
    max_chance_outcomes=NUM_CARDS,
    num_players=2,
    min_utility=-float(MAX_UTILITY),
    max_utility=float(MAX_UTILITY),
    utility_sum=0.0,
    max_game_length=_MAX_PLAYS)


def _dealt_before_play(play_index: int) -> int:
    """Cards dealt (pool included) once the round of play ``play_index`` has been dealt."""
    return _POOL_SIZE + 2 * _POOL_SIZE * (play_index // rules.PLAYS_PER_ROUND + 1)


def _mover(state: rules.GameState) -> int:
    """Who acts in ``state``: 0 / 1, chance (cards of the round still to deal) or terminal."""
    if state.play_index >= _MAX_PLAYS:
        return int(pyspiel.PlayerId.TERMINAL)
    if len(state.deal) < _dealt_before_play(state.play_index):
        return int(pyspiel.PlayerId.CHANCE)
    return state.play_index % 2


class _Position:
    """One immutable position: the rules state, its legal plays (lazily) and the play text.

    Shared between an OpenSpiel state and its clones (``__deepcopy__`` returns itself), which
    is safe because nothing here is ever changed after the legal plays are filled in.
    """

    __slots__ = ("game_state", "plays_text", "mover", "_legal")

    def __init__(self, game_state: rules.GameState, plays_text: str) -> None:
        self.game_state = game_state
        self.plays_text = plays_text
        self.mover = _mover(game_state)
        self._legal: dict[int, rules.Action] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Position":
        return self

    def __getstate__(self) -> tuple[rules.GameState, str]:
        return self.game_state, self.plays_text

    def __setstate__(self, data: tuple[rules.GameState, str]) -> None:
        self.__init__(*data)  # type: ignore[misc]

    def legal(self) -> dict[int, rules.Action]:
        """Action id -> play, in increasing id order (= :func:`rules.legal_actions` order)."""
        if self._legal is None:
            state = self.game_state
            legal: dict[int, rules.Action] = {}
            for card, caps in rules.hand_captures(state.hands[state.player], state.pool):
                base = card * CAPTURES_PER_CARD
                if caps:
                    for k, captured in enumerate(caps):
                        legal[base + k] = rules.Action(card, captured)
                else:
                    legal[base] = rules.Action(card, ())
            self._legal = legal
        return self._legal


def _empty_game_state() -> rules.GameState:
    return rules.GameState(deal=(), play_index=0, hands=((), ()), pool=())


class PasurState(pyspiel.State):
    """A position of ``python_pasur`` (see the module docstring)."""

    def __init__(self, game: "PasurGame") -> None:
        super().__init__(game)
        self._position = _Position(_empty_game_state(), "")

    # ------------------------------------------------------------------ reading

    @property
    def rules_state(self) -> rules.GameState:
        """The full :class:`rules.GameState` (every card; ``deal`` holds the cards dealt so
        far, in deal order: pool first, then each round's Alex and Bob hands)."""
        return self._position.game_state

    def current_player(self) -> int:
        return self._position.mover

    def is_terminal(self) -> bool:
        return self._position.game_state.play_index >= _MAX_PLAYS

    def returns(self) -> list[float]:
        state = self._position.game_state
        if state.play_index < _MAX_PLAYS:
            return [0.0, 0.0]
        u = float(rules.utility(state))
        return [u, -u]

    def _legal_actions(self, player: int) -> list[int]:
        return list(self._position.legal())

    def chance_outcomes(self) -> list[tuple[int, float]]:
        dealt = set(self._position.game_state.deal)
        candidates = _NON_JACKS if len(dealt) < _POOL_SIZE else range(NUM_CARDS)
        left = [c for c in candidates if c not in dealt]
        p = 1.0 / len(left)
        return [(c, p) for c in left]

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
        if position.mover == _CHANCE:
            self._position = _Position(_dealt(state, int(action)), position.plays_text)
            return
        play = position.legal()[action]
        after = rules.apply_legal_action(state, play)
        text = play.notation()
        self._position = _Position(after, f"{position.plays_text} {text}" if
                                   position.plays_text else text)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {card_code(int(action))}"
        legal = self._position.legal() if not self.is_terminal() \
            and self.current_player() == player else {}
        if action in legal:
            return legal[action].notation()
        card, k = divmod(int(action), CAPTURES_PER_CARD)
        return f"{card_code(card)} capture #{k}"

    # ------------------------------------------------------------------ information

    def info_state_text(self, player: int) -> str:
        """The canonical information-state string of ``player`` (equal exactly when the
        player cannot tell the states apart)."""
        state = self._position.game_state
        return (f"p{player} t{state.play_index} n{len(state.deal)} "
                f"start[{cards_str(sorted(state.deal[:_POOL_SIZE]))}] "
                f"hand[{cards_str(state.hands[player])}] plays[{self._position.plays_text}]")

    def observation_for(self, player: int) -> Observation:
        """What ``player`` sees (:func:`observe`)."""
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

    def __str__(self) -> str:
        state = self._position.game_state
        hands = " | ".join(f"{rules.PLAYERS[p]} [{cards_str(state.hands[p])}]" for p in (0, 1))
        a, b = rules.score(state)
        return (f"play {state.play_index} dealt {len(state.deal)} | {hands} | pool "
                f"[{cards_str(state.pool)}] | points {a.total}-{b.total} surs "
                f"{state.surs[0]}-{state.surs[1]} | plays [{self._position.plays_text}]")


def _dealt(state: rules.GameState, card: int) -> rules.GameState:
    """``state`` with ``card`` dealt: to the pool (first four), else to the hand being dealt
    (Alex's four then Bob's four each round)."""
    if card in state.deal:
        raise ValueError(f"card {card_code(card)} was already dealt")
    dealt = len(state.deal)
    deal = state.deal + (card,)
    if dealt < _POOL_SIZE:
        return rules.GameState(deal=deal, play_index=state.play_index, hands=state.hands,
                               pool=tuple(sorted(state.pool + (card,))))
    hands = list(state.hands)
    who = 0 if (dealt - _POOL_SIZE) % (2 * _POOL_SIZE) < _POOL_SIZE else 1
    hands[who] = tuple(sorted(hands[who] + (card,)))
    return rules.GameState(deal=deal, play_index=state.play_index, hands=(hands[0], hands[1]),
                           pool=state.pool, piles=state.piles, surs=state.surs,
                           last_capturer=state.last_capturer, history=state.history)


def action_id(state: rules.GameState, action: rules.Action) -> int:
    """The action id of ``action`` (a play legal in ``state``): ``card * M + k``.

    Raises ``ValueError`` when the captured set is not one of the card's captures for the
    pool of ``state`` (or the card must capture and is laid); the inverse is
    :meth:`PasurState.rules_action`.
    """
    caps = rules.captures(action.card, state.pool)
    base = action.card * CAPTURES_PER_CARD
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
    of the rounds reached are dealt.
    """
    if len(game_state.history) != game_state.play_index:
        raise ValueError("the rules state's history does not hold every play")
    dealt_needed = min(len(game_state.deal),
                       _dealt_before_play(min(game_state.play_index, _MAX_PLAYS - 1)))
    deal = game_state.deal
    state = game.new_initial_state()
    dealt = 0
    for play in game_state.history:
        while state.is_chance_node():
            state.apply_action(deal[dealt])
            dealt += 1
        state.apply_action(action_id(state.rules_state, play))
    while dealt < dealt_needed and state.is_chance_node():
        state.apply_action(deal[dealt])
        dealt += 1
    return state


class _Observer:
    """The tensors and strings of ``python_pasur`` for one observation type.

    ``perfect_recall=False`` (observations): ``player`` [2], ``turn`` [2] (who moves),
    ``round`` [7] (6 = over), ``hand`` [52], ``pool`` [52], ``piles`` [2, 52], ``played``
    [2, 52] (cards each player has played), ``opponent_hand_size`` [5] (one-hot 0..4),
    ``surs`` [2], ``points`` [2], ``last_capturer`` [3] (nobody, Alex, Bob).
    ``perfect_recall=True`` (information states) adds ``dealt`` [53] (one-hot: cards dealt
    so far), ``start`` [52] (the initial pool) and ``plays`` [48, 2, 52] (play ``i``: the
    card, then the captured set). Without private information the hand is left out; without
    public information only the player and the hand remain.
    """

    def __init__(self, iig_obs_type: Any, params: Any) -> None:
        if params:
            raise ValueError(f"python_pasur observers take no parameters, got {params}")
        if iig_obs_type is None:
            iig_obs_type = pyspiel.IIGObservationType(perfect_recall=False)
        if iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS:
            raise ValueError("python_pasur has no observer that sees both hands")
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.public = bool(iig_obs_type.public_info)
        self.private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        pieces: list[tuple[str, tuple[int, ...]]] = [("player", (2,))]
        if self.private:
            pieces.append(("hand", (NUM_CARDS,)))
        if self.public:
            pieces += [("turn", (2,)), ("round", (rules.NUM_ROUNDS + 1,)),
                       ("pool", (NUM_CARDS,)), ("piles", (2, NUM_CARDS)),
                       ("played", (2, NUM_CARDS)), ("opponent_hand_size", (_POOL_SIZE + 1,)),
                       ("surs", (2,)), ("points", (2,)), ("last_capturer", (3,))]
            if self.perfect_recall:
                pieces += [("dealt", (NUM_CARDS + 1,)), ("start", (NUM_CARDS,)),
                           ("plays", (_MAX_PLAYS, 2, NUM_CARDS))]
        size = sum(int(np.prod(shape)) for _, shape in pieces)
        self.tensor = np.zeros(size, np.float32)
        self.dict: dict[str, np.ndarray] = {}
        offset = 0
        for name, shape in pieces:
            n = int(np.prod(shape))
            self.dict[name] = self.tensor[offset:offset + n].reshape(shape)
            offset += n

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
        d["round"][min(game_state.round, rules.NUM_ROUNDS)] = 1.0
        d["pool"][list(game_state.pool)] = 1.0
        for p in (0, 1):
            d["piles"][p, list(game_state.piles[p])] = 1.0
        for i, play in enumerate(game_state.history):
            d["played"][i % 2, play.card] = 1.0
        d["opponent_hand_size"][len(game_state.hands[1 - player])] = 1.0
        d["surs"][:] = game_state.surs
        a, b = rules.score(game_state)
        d["points"][:] = (a.total, b.total)
        last = game_state.last_capturer
        d["last_capturer"][0 if last is None else last + 1] = 1.0
        if self.perfect_recall:
            d["dealt"][len(game_state.deal)] = 1.0
            d["start"][list(game_state.deal[:_POOL_SIZE])] = 1.0
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
            a, b = rules.score(game_state)
            parts += [f"round {min(game_state.round, rules.NUM_ROUNDS - 1) + 1}",
                      f"turn {turn}", f"dealt {len(game_state.deal)}",
                      f"start[{cards_str(sorted(game_state.deal[:_POOL_SIZE]))}]",
                      f"pool[{cards_str(game_state.pool)}]",
                      f"piles[{cards_str(game_state.piles[0])}|"
                      f"{cards_str(game_state.piles[1])}]",
                      f"points {a.total}-{b.total} surs {game_state.surs[0]}-"
                      f"{game_state.surs[1]}",
                      f"opponent holds {len(game_state.hands[1 - player])}",
                      f"plays[{' '.join(p.notation() for p in game_state.history)}]"]
        return " ".join(parts)


class PasurGame(pyspiel.Game):
    """The ``python_pasur`` game (no parameters)."""

    def __init__(self, params: Any = None) -> None:
        super().__init__(_GAME_TYPE, _GAME_INFO, params or dict())

    def new_initial_state(self) -> PasurState:
        return PasurState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> _Observer:
        return _Observer(iig_obs_type, params)


def load_game() -> PasurGame:
    """``pyspiel.load_game("python_pasur")``."""
    return pyspiel.load_game(GAME_NAME)


if GAME_NAME not in pyspiel.registered_names():
    pyspiel.register_game(_GAME_TYPE, PasurGame)
