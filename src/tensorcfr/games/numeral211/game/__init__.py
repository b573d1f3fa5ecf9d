"""Numeral211's first stage, the game itself: cards and parameters (:mod:`.config`), the
reference engine (:mod:`.engine`, the source of truth for the rules), the hand evaluator,
one round's betting template, suit isomorphism, outcome classes, and the game as a public
tree (:mod:`.public_game`, per concrete board; :mod:`.class_game`, per suit-isomorphic class)
and as an OpenSpiel Python game (:mod:`.openspiel_game`).

Nothing here solves, abstracts or runs: the later stages (``abstraction``, ``solving``,
``runs``) import this one, never the reverse.
"""
