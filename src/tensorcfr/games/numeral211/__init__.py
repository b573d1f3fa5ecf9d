"""Numeral211 Hold'em: rules, evaluator, suit isomorphism and the full-game public-tree solver.

Public API for other modules (e.g. abstractions):

* :class:`~.config.GameConfig` (game parameters), card helpers in :mod:`.config`;
* :mod:`.engine`: the reference engine (source of truth);
* :mod:`.evaluator`: ``three_card_values``, ``best_of_four``, ``board_hand_values``;
* :mod:`.isomorphism`: ``isomorphism(config)`` -> canonical boards, hand permutations,
  ``class_table(r)`` / ``class_of(...)`` (isomorphic class indices per round);
* :mod:`.outcomes`: ``turn_outcomes``, ``outcome_features``, ``outcome_classes``.
"""

from tensorcfr.games.numeral211.config import GameConfig, GameConfigError

__all__ = ["GameConfig", "GameConfigError"]
