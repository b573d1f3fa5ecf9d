"""Pasur, stage 4: learning from solved and played games.

XGBoost policy models (:mod:`.policy_model`), their exact evaluation (:mod:`.evaluate`) and
the analysis of many solved decks (:mod:`.analysis`). Imports the earlier stages only.
"""
