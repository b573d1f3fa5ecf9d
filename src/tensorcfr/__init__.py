"""tensorcfr: counterfactual regret minimization written as whole-tensor operations.

Pillars: Pasur solved end to end (:mod:`tensorcfr.games.pasur`), a generic tensor CFR
engine for OpenSpiel games (:mod:`tensorcfr.core`, :mod:`tensorcfr.games.openspiel`).
"""

__version__ = "0.1.0"
