"""Pasur, stage 2: solving open-hands deals.

The exact minimax solver (:mod:`.exact`), the paper's tensor tree (:mod:`.tensor_tree`,
:mod:`.graph`, :mod:`.features`), round-by-round DCFR (:mod:`.round_cfr`), strategy tables
(:mod:`.strategy_table`), one DCFR solve with its run folder (:mod:`.dcfr_run`). Imports only the
engine stage.
"""
