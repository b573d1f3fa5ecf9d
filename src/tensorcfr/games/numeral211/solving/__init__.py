"""Numeral211's third stage, solving: the full-game tensor CFR solver over the public tree,
its exploitability and policy files (:mod:`.solver`), the variant's sizes and memory estimate
(:mod:`.sizes`), the abstract solvers measured in the full game (bucketed / Embedding CFR,
:mod:`.abstract_solve`), their checkpoints (:mod:`.abstract_checkpoint`) and the CFR-BR
floors of an abstraction (:mod:`.floor`).

Imports the ``game`` and ``abstraction`` stages; the runs that drive a solve with settings,
checkpoints and files (``runs``) import this one, never the reverse.
"""
