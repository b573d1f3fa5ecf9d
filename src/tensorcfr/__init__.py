"""tensorcfr: counterfactual regret minimization written as whole-tensor operations.

Pillars: Pasur solved end to end (:mod:`tensorcfr.games.pasur`), a generic tensor CFR
engine for OpenSpiel games (:mod:`tensorcfr.core`, :mod:`tensorcfr.games.openspiel`).
"""

import os as _os

__version__ = "0.1.0"

# Large CPU tensors on transparent huge pages: PyTorch's CPU allocator reads this switch once,
# at the process's first tensor allocation, so it is set here unless the caller set it (a
# value of "0" turns it off).  The solvers allocate and free arrays of tens to hundreds of MB
# in every pass; on 4 KiB pages their page faults cost about a quarter of a full-game
# Numeral211 iteration (docs/benchmarks/numeral211_speed.md).  Where torch allocated before
# tensorcfr was imported the switch has no effect; set THP_MEM_ALLOC_ENABLE=1 yourself.
_os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
