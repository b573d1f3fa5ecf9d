"""Pasur, stage 3: players and games between them.

Policies over positions (:mod:`.players`), batched self-play (:mod:`.selfplay`) and the
hidden-hand agents that see only a player's observation. Imports the engine and solving
stages; the learned players live in the learning stage, and :mod:`tensorcfr.games.pasur.agents`
names them all.
"""
