"""Numeral211 Hold'em: rules, evaluator, suit isomorphism and the full-game public-tree solver.

Public API for other modules (e.g. abstractions):

* :class:`~.game.config.GameConfig` (game parameters), card helpers in :mod:`.game.config`;
* :mod:`.game.engine`: the reference engine (source of truth);
* :mod:`.game.evaluator`: ``three_card_values``, ``best_of_four``, ``board_hand_values``;
* :mod:`.game.isomorphism`: ``isomorphism(config)`` -> canonical boards, hand permutations,
  ``class_table(r)`` / ``class_of(...)`` (isomorphic class indices per round);
* :mod:`.game.outcomes`: ``turn_outcomes``, ``outcome_features``, ``outcome_classes``.
"""

from tensorcfr.games.numeral211.game.config import GameConfig, GameConfigError

__all__ = ["GameConfig", "GameConfigError"]
