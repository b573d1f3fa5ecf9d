"""Numeral211's second stage, the information abstractions: the classes' features and the
bucket maps of EHS, PaEmd and KrwEmd (:mod:`.abstractions`), the teacher a Phi is taught to
keep (:mod:`.phi_teacher`), HandEbdNet, the network that produces Embedding CFR's Phi
(:mod:`.embedding_net`), and the soft-clustering control (:mod:`.soft_clustering`).

Imports only the ``game`` stage (and the game-free :mod:`tensorcfr.abstraction`); the solvers
that iterate on an abstraction live in ``solving``.
"""
