"""Numeral211 Hold'em, staged by the data flow (a module imports only its own stage or earlier
ones; ``tests/test_core_boundary.py`` checks it):

1. :mod:`.game`: cards and parameters (:class:`~.game.config.GameConfig`), the reference
   engine, the hand evaluator, betting, suit isomorphism, outcome classes, and the game as a
   public tree (per board or per isomorphic class) and as an OpenSpiel Python game;
2. :mod:`.abstraction`: class features and bucket maps (EHS, PaEmd, KrwEmd), HandEbdNet's Phi
   and its teacher, the soft-clustering control;
3. :mod:`.solving`: the full-game solver (exploitability, policy files, sizes), the abstract
   solvers measured in the full game, their checkpoints and CFR-BR floors;
4. :mod:`.runs`: each ``tensorcfr numeral211`` command as a library call (settings, progress
   callback, files written), and the curve plots.

Public API for other modules: :class:`~.game.config.GameConfig` (game parameters), card
helpers in :mod:`.game.config`; :mod:`.game.engine` (the reference engine, source of truth);
:mod:`.game.evaluator` (``three_card_values``, ``best_of_four``, ``board_hand_values``);
:mod:`.game.isomorphism` (``isomorphism(config)`` -> canonical boards, hand permutations,
``class_table(r)`` / ``class_of(...)``); :mod:`.game.outcomes` (``turn_outcomes``,
``outcome_features``, ``outcome_classes``).
"""

from tensorcfr.games.numeral211.game.config import GameConfig, GameConfigError

__all__ = ["GameConfig", "GameConfigError"]
