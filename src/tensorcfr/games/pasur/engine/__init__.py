"""Pasur, stage 1: the rules and records.

Cards and their notation (:mod:`.cards`), the reference rules engine (:mod:`.rules`), the
sum-to-11 capture template (:mod:`.sum11`), game records (:mod:`.records`), what one player
sees of a game (:mod:`.observation`) and the deals consistent with it (:mod:`.determinize`).
Nothing here solves or learns; every later stage builds on these modules.
"""
