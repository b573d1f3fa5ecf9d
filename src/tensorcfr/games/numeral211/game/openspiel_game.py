"""Numeral211 as an OpenSpiel Python game (``python_numeral211``), for cross-checks.

The game wraps the reference engine (:mod:`.engine`).  Chance deals player 0's hand (one
outcome per private hand), then player 1's, then the flop and the turn card when their round
starts.  Actions: 0 fold, 1 check/call, 2 bet/raise (as ``universal_poker``).  Information
states read ``p<player> hand:<cards> board:<cards> bets:<history>``.

Game parameters: ``ranks`` (rank letters, default ``9TA``), ``suits`` (2), ``max_bets`` (per
round, 2), ``ante`` (5), ``bet_preflop`` (10), ``bet_postflop`` (20).  Only small decks are
practical: OpenSpiel walks every history.  Use :func:`load` (registers on first use).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch

from tensorcfr.games.numeral211.game.config import GameConfig, cards_to_str, hand_cards
from tensorcfr.games.numeral211.game.engine import State as EngineState
from tensorcfr.games.numeral211.game.public_game import prefix_histories

__all__ = ["GAME_NAME", "register", "load", "config_of", "policy_to_tabular",
           "infoset_string"]

GAME_NAME = "python_numeral211"
_ACTION_LETTERS = ("f", "c", "r")
_DEFAULTS: dict[str, Any] = {"ranks": "9TA", "suits": 2, "max_bets": 2, "ante": 5,
                             "bet_preflop": 10, "bet_postflop": 20}


def config_of(params: dict[str, Any]) -> GameConfig:
    """The :class:`GameConfig` of OpenSpiel game parameters (defaults filled in)."""
    p = {**_DEFAULTS, **(params or {})}
    return GameConfig(ranks=str(p["ranks"]), suits=int(p["suits"]),
                      max_bets=(int(p["max_bets"]),) * 3, ante=int(p["ante"]),
                      bets=(int(p["bet_preflop"]), int(p["bet_postflop"]),
                            int(p["bet_postflop"])))


def infoset_string(config: GameConfig, player: int, hand: Any, board: Any,
                   history: str) -> str:
    """Information-state string of ``player`` holding ``hand`` (2 cards, any order) with the
    public ``board`` (in deal order) after betting ``history`` (rounds joined by ``/``)."""
    return (f"p{player} hand:{cards_to_str(config, sorted(int(c) for c in hand))} "
            f"board:{cards_to_str(config, board)} bets:{history}")


def register() -> None:
    """Register ``python_numeral211`` with pyspiel (once): its type and bounds, then the game
    and state classes built on pyspiel's (pyspiel is imported only here)."""
    import pyspiel

    if GAME_NAME in pyspiel.registered_names():
        return
    game_type, game_info = _game_type_and_info(pyspiel)
    pyspiel.register_game(game_type, _game_class(pyspiel, game_type, game_info,
                                                 _state_class(pyspiel)))


def _game_type_and_info(pyspiel: Any) -> tuple[Any, Any]:
    """pyspiel's ``GameType`` and ``GameInfo`` of ``python_numeral211`` (utility and length
    bounds of the paper's game, the largest variant)."""
    big = GameConfig()
    game_type = pyspiel.GameType(
        short_name=GAME_NAME, long_name="Python Numeral211 Hold'em",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=2, min_num_players=2,
        provides_information_state_string=True, provides_information_state_tensor=False,
        provides_observation_string=False, provides_observation_tensor=False,
        parameter_specification=dict(_DEFAULTS))
    max_stake = big.ante + 16 * 10 + 2 * 16 * 20
    game_info = pyspiel.GameInfo(num_distinct_actions=3, max_chance_outcomes=big.num_hands,
                                 num_players=2, min_utility=-float(max_stake),
                                 max_utility=float(max_stake), utility_sum=0.0,
                                 max_game_length=4 + 3 * 18)
    return game_type, game_info


class _Observer:
    """The observer pyspiel asks for: information-state strings only (no tensors)."""

    def __init__(self, iig_obs_type: Any, params: Any) -> None:
        self.tensor = np.zeros(1, np.float32)
        self.dict = {"unused": self.tensor}

    def set_from(self, state: Any, player: int) -> None:
        pass

    def string_from(self, state: Any, player: int) -> str:
        return state.info_string(player)


class _Cards(tuple):
    """A tuple of cards (or of hands) that :func:`copy.deepcopy` returns as itself: it is
    immutable, and OpenSpiel deep-copies a state's attributes at every step of a walk."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, object]) -> "_Cards":
        return self


def _state_class(pyspiel: Any) -> type:
    """The ``pyspiel.State`` subclass: chance deals both hands, then the flop and the turn
    when their round starts; the reference engine (:mod:`.engine`) plays the betting."""

    terminal = pyspiel.PlayerId.TERMINAL

    class _State(pyspiel.State):
        def __init__(self, game: Any, config: GameConfig) -> None:
            super().__init__(game)
            self.config = config
            # immutable card tuples: OpenSpiel deep-copies every attribute of a state at
            # every step of a walk, and these copy as themselves (see _Cards)
            self.hands: _Cards = _Cards()
            self.board: _Cards = _Cards()
            self.engine: EngineState | None = None
            self._player = pyspiel.PlayerId.CHANCE  # current_player(), kept by _apply_action

        def _dealt(self) -> set[int]:
            return {c for h in self.hands for c in h} | set(self.board)

        def _needs_card(self) -> bool:
            e = self.engine
            return e is not None and not e.is_terminal and len(self.board) < sum(
                self.config.public_cards[:e.round + 1])

        def current_player(self) -> int:
            return self._player

        def _next_player(self) -> int:
            e = self.engine
            if e is None:
                return pyspiel.PlayerId.CHANCE
            if e.is_terminal:
                return pyspiel.PlayerId.TERMINAL
            if len(self.board) < sum(self.config.public_cards[:e.round + 1]):
                return pyspiel.PlayerId.CHANCE  # the round's public card is still to come
            return e.current_player

        def _legal_actions(self, player: int) -> list[int]:
            return [_ACTION_LETTERS.index(a) for a in self.engine.legal_actions()]

        def chance_outcomes(self) -> list[tuple[int, float]]:
            used = self._dealt()
            if len(self.hands) < 2:
                hands = hand_cards(self.config)
                ok = [h for h in range(len(hands)) if not (set(hands[h].tolist()) & used)]
                return [(h, 1.0 / len(ok)) for h in ok]
            ok = [c for c in range(self.config.num_cards) if c not in used]
            return [(c, 1.0 / len(ok)) for c in ok]

        def _apply_action(self, action: int) -> None:
            self._deal_or_bet(action)
            self._player = self._next_player()

        def _deal_or_bet(self, action: int) -> None:
            if len(self.hands) < 2:
                self.hands = _Cards((*self.hands,
                                     tuple(int(c) for c in hand_cards(self.config)[action])))
                if len(self.hands) == 2:
                    rest = [c for c in range(self.config.num_cards) if c not in self._dealt()]
                    # the engine needs a full deal; public cards are filled in when dealt
                    self.engine = EngineState(self.config, list(self.hands[0]) +
                                              list(self.hands[1]) + rest[:2])
                return
            if self._needs_card():
                self.board = _Cards((*self.board, int(action)))
                self.engine.deal[4:4 + len(self.board)] = self.board
                rest = [c for c in range(self.config.num_cards) if c not in self._dealt()]
                self.engine.deal[4 + len(self.board):] = rest[:2 - len(self.board)]
                return
            self.engine.apply(_ACTION_LETTERS[action])

        def _action_to_string(self, player: int, action: int) -> str:
            if player == pyspiel.PlayerId.CHANCE:
                if len(self.hands) < 2:
                    return "deal " + cards_to_str(self.config, hand_cards(self.config)[action])
                return "board " + cards_to_str(self.config, [action])
            return "fold call raise".split()[action]

        def is_terminal(self) -> bool:
            return self._player == terminal

        def returns(self) -> list[float]:
            if not self.is_terminal():
                return [0.0, 0.0]
            return self.engine.returns()

        def info_string(self, player: int) -> str:
            hand = self.hands[player] if len(self.hands) > player else ()
            history = self.engine.history_string() if self.engine is not None else ""
            return infoset_string(self.config, player, hand, self.board, history)

        def __str__(self) -> str:
            hands = " ".join(cards_to_str(self.config, h) for h in self.hands)
            history = self.engine.history_string() if self.engine is not None else ""
            return f"{hands} | {cards_to_str(self.config, self.board)} | {history}"

    return _State


def _game_class(pyspiel: Any, game_type: Any, game_info: Any, state_class: type) -> type:
    """The ``pyspiel.Game`` subclass: parameters -> :class:`GameConfig`, states of
    ``state_class``, the string observer."""

    class _Game(pyspiel.Game):
        def __init__(self, params: Any = None) -> None:
            super().__init__(game_type, game_info, params or dict())
            self.config = config_of(dict(self.get_parameters()))

        def new_initial_state(self) -> Any:
            return state_class(self, self.config)

        def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> Any:
            return _Observer(iig_obs_type, params)

    return _Game


def load(config: GameConfig) -> Any:
    """Load ``python_numeral211`` for ``config`` (its max bets must be equal per round and
    the flop/turn bets equal)."""
    import pyspiel

    register()
    if len(set(config.max_bets)) != 1 or config.bets[1] != config.bets[2]:
        raise ValueError("the OpenSpiel wrapper needs equal max_bets per round and equal "
                         "flop/turn bets")
    return pyspiel.load_game(GAME_NAME, {
        "ranks": config.ranks, "suits": config.suits, "max_bets": config.max_bets[0],
        "ante": config.ante, "bet_preflop": config.bets[0], "bet_postflop": config.bets[1]})


def policy_to_tabular(game: Any, policy: list[torch.Tensor], os_game: Any,
                      template: Any = None) -> Any:
    """An OpenSpiel ``TabularPolicy`` of ``os_game`` holding the public-tree ``policy`` (per
    round [S_r, P_r, B_r, H] over the canonical boards of ``game``, a
    :class:`~.public_game.Numeral211PublicGame`).  ``template``: a ``TabularPolicy`` of
    ``os_game`` to copy instead of walking the game again (the walk takes seconds)."""
    import copy

    from open_spiel.python import policy as os_policy

    if template is None:
        tab = os_policy.TabularPolicy(os_game)
    else:
        tab = copy.copy(template)
        tab.action_probability_array = template.action_probability_array.copy()
    config = game.config
    hands = hand_cards(config)
    iso = game.iso
    for r, betting in enumerate(game.betting):
        pol = policy[r].detach().cpu().numpy()
        offsets = game.rounds[r].slot_offsets
        prefixes = prefix_histories(game, r)
        for board in itertools.permutations(range(config.num_cards), r):
            b, g = iso.canonical_board(r, board)
            for h, hand in enumerate(hands):
                if set(hand.tolist()) & set(board):
                    continue
                hc = iso.hand_perm[g][h]
                for q, prefix in enumerate(prefixes):
                    for j, hist in enumerate(betting.histories):
                        full = (prefix + "/" if r else "") + hist
                        key = infoset_string(config, betting.players[j], hand, board, full)
                        idx = tab.state_lookup.get(key)
                        if idx is None:
                            continue
                        row = np.zeros(3)
                        for a, letter in enumerate(betting.actions[j]):
                            row[_ACTION_LETTERS.index(letter)] = pol[offsets[j] + a, q, b, hc]
                        tab.action_probability_array[idx] = row
    return tab
