"""Numeral211's last stage, the runs: each command of ``tensorcfr numeral211`` as one library
call with a settings object validated when built and an optional progress callback, no
printing (the CLI parses and prints):

* :mod:`.run_solve`: a full-game solve (:class:`~.run_solve.SolveSettings`,
  :func:`~.run_solve.solve`);
* :mod:`.run_abstract_solve`: a bucketed / Embedding CFR solve or CFR-BR floor
  (:class:`~.run_abstract_solve.AbstractSolveSettings`,
  :func:`~.run_abstract_solve.solve_abstract`);
* :mod:`.run_abstraction`: building a bucket map; :mod:`.run_embed`: training HandEbdNet's Phi;
* :mod:`.run_common`: what the solve runs share (settings base, progress events, sampling);
  :mod:`.plots`: their curve plots.

Imports every earlier stage (``game``, ``abstraction``, ``solving``); nothing in the package
imports this one.
"""
