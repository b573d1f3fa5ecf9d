"""Pasur players: a batch of positions in, action probabilities over the legal plays out.

Four kinds (``PLAYER_NAMES``), all for one full-information deal:

* ``random``: uniform over the legal plays.
* ``exact``: optimal play from the exact solver (:func:`exact.solve_exact`), ties broken
  uniformly among the optimal plays, from the point of view of the player to move (Alex
  maximizes, Bob minimizes Alex-minus-Bob).
* ``table``: the DCFR average strategy of a solved run directory
  (``tensorcfr pasur solve --method dcfr --out DIR``); dag-mode tables are looked up by the
  merged-state key, tree-mode tables by the paper's 58-column feature row of each play.
  A position the table has no rows for (its player left the table's own play) gets the
  uniform strategy.
* ``model``: an XGBoost policy model directory (``tensorcfr pasur train``): it predicts
  ``100 * sigma`` of each play from the feature row of the node the play leads to; the
  predictions are clipped at 0 and renormalised over the legal plays (uniform when all 0).

Two ways to ask a player:

* :meth:`Player.action_probs` (the public interface): a list of :class:`rules.GameState`
  (any player to move, not finished) -> per state the legal actions in
  :func:`rules.legal_actions` order with their probabilities (summing to 1);
* ``edge_probs(batch)`` (used by :mod:`selfplay`): a :class:`selfplay.DecisionBatch` of many
  positions at the same play -> a float64 Tensor [E] of play probabilities.

>>> from tensorcfr.games.pasur.engine.rules import initial_state, random_deal
>>> deal = random_deal(3)
>>> player = make_player("random", deal)
>>> [round(p, 2) for _, p in player.action_probs([initial_state(deal)])[0]]
[0.25, 0.25, 0.25, 0.25]
"""

from __future__ import annotations

import os
from typing import Any, Protocol, Sequence, runtime_checkable

import torch
from torch import Tensor

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import NUM_CARDS
from tensorcfr.games.pasur.playing.selfplay import DecisionBatch, decisions_from_states
from tensorcfr.games.pasur.solving.dcfr_run import run_table_path

__all__ = [
    "PLAYER_NAMES",
    "ExactPlayer",
    "Player",
    "RandomPlayer",
    "TablePlayer",
]

PLAYER_NAMES = ("random", "exact", "table")
"""The open-hands players of this module; :mod:`tensorcfr.games.pasur.agents` names every player."""

@runtime_checkable
class Player(Protocol):
    """A policy for one deal: ``name`` and :meth:`action_probs`."""

    name: str

    def action_probs(self, states: Sequence[rules.GameState]
                     ) -> list[list[tuple[rules.Action, float]]]:
        """For each (non-terminal) state, its legal actions in :func:`rules.legal_actions`
        order with their probabilities (summing to 1)."""
        ...


class _BatchPlayer:
    """Shared code: ``action_probs`` through the same batch path as self-play."""

    name = "?"
    needs_features = False

    def __init__(self, deal: Sequence[int], device: str | torch.device = "cpu") -> None:
        self.deal = rules.validate_deal(deal)
        self.device = torch.device(device)

    def edge_probs(self, batch: DecisionBatch) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def action_probs(self, states: Sequence[rules.GameState]
                     ) -> list[list[tuple[rules.Action, float]]]:
        states = list(states)
        for s in states:
            if tuple(s.deal) != self.deal:
                raise TensorCFRError(f"the {self.name} player was made for another deal")
        out: list[list[tuple[rules.Action, float]] | None] = [None] * len(states)
        for indices, batch in decisions_from_states(states, with_features=self.needs_features,
                                                    device=self.device):
            probs = self.edge_probs(batch).double().cpu().tolist()
            pos = batch.edge_position.tolist()
            cards = batch.edge_card.tolist()
            masks = batch.edge_captured.tolist()
            per: list[list[tuple[rules.Action, float]]] = [[] for _ in indices]
            for p, card, mask, prob in zip(pos, cards, masks, probs):
                captured = tuple(c for c in range(NUM_CARDS) if (mask >> c) & 1)
                per[p].append((rules.Action(card, captured), float(prob)))
            for local, i in enumerate(indices):
                out[i] = per[local]
        return [o for o in out if o is not None]

    def __repr__(self) -> str:
        return f"<{self.name} player>"


class RandomPlayer(_BatchPlayer):
    """Uniform over the legal plays."""

    name = "random"

    def edge_probs(self, batch: DecisionBatch) -> Tensor:
        return batch.normalize(torch.ones(batch.edge_card.numel(), dtype=torch.float64,
                                          device=batch.device))


class ExactPlayer(_BatchPlayer):
    """Optimal play from the exact solution; ties uniform among the optimal plays."""

    name = "exact"

    def __init__(self, deal: Sequence[int], device: str | torch.device = "cpu",
                 solution: Any = None) -> None:
        super().__init__(deal, device)
        from tensorcfr.games.pasur.solving.exact import solve_exact

        self.solution = solution if solution is not None else solve_exact(self.deal,
                                                                          device=self.device)
        if tuple(self.solution.deal) != self.deal:
            raise TensorCFRError("the exact solution given is of another deal")

    @property
    def value(self) -> int:
        """The deal's exact value (Alex's points minus Bob's under optimal play)."""
        return int(self.solution.value)

    def action_values(self, batch: DecisionBatch) -> Tensor:
        """Points to come after each play under optimal play, plus the play's own reward
        (Alex minus Bob), LongTensor [E]."""
        from tensorcfr.games.pasur.solving.exact import StateNotSolvedError

        try:
            if batch.level < self.solution.start.play_index:
                raise StateNotSolvedError("before the solved start")
            level_keys, level_values = self.solution.level_values(batch.level + 1)
        except StateNotSolvedError:
            raise TensorCFRError(f"play {batch.level} is not covered by the exact solution") \
                from None
        keys = torch.from_numpy(level_keys).to(batch.device)
        pos = torch.searchsorted(keys, batch.child_key).clamp(max=keys.numel() - 1)
        if not bool((keys.index_select(0, pos) == batch.child_key).all()):
            raise TensorCFRError("a position is not reachable in this deal's exact solution")
        values = torch.from_numpy(level_values).to(batch.device).long().index_select(0, pos)
        return batch.edge_reward + values

    def edge_probs(self, batch: DecisionBatch) -> Tensor:
        q = self.action_values(batch).double()
        sign = 1.0 if batch.mover == rules.ALEX else -1.0
        q = sign * q
        best = torch.full((batch.num_positions,), -float("inf"), dtype=torch.float64,
                          device=batch.device).scatter_reduce_(0, batch.edge_position, q,
                                                               reduce="amax")
        optimal = q == best.index_select(0, batch.edge_position)
        return batch.normalize(optimal.double())


class TablePlayer(_BatchPlayer):
    """The average strategy of a Parquet strategy table (dag or tree mode)."""

    name = "table"

    def __init__(self, deal: Sequence[int], table: str | os.PathLike[str],
                 device: str | torch.device = "cpu") -> None:
        super().__init__(deal, device)
        import numpy as np

        from tensorcfr.games.pasur.solving.strategy_table import load_strategy_table

        path, _ = run_table_path(table)
        loaded = load_strategy_table(path)
        meta_deal = loaded.metadata.get("deal")
        if meta_deal is not None and tuple(meta_deal) != self.deal:
            raise TensorCFRError(f"strategy table {path} was solved for another deal")
        self.path = path
        self.mode = str(loaded.metadata.get("mode", "dag"))
        self.iterations = loaded.metadata.get("iterations")
        t = loaded.table
        names = set(t.column_names)
        self.misses = 0  # positions answered uniformly (no rows)
        rounds = t.column("round").to_numpy().astype(np.int64)
        plies = t.column("ply").to_numpy().astype(np.int64)
        level = rounds * 8 + plies
        self._probs = torch.tensor(np.array(t.column("probability").to_numpy()),
                                   dtype=torch.float64)
        if "state_key" in names:
            self.lookup = "key"
            key = t.column("state_key").to_numpy().astype(np.int64)
            order = np.lexsort((t.column("edge").to_numpy(), key, level))
            self._level = torch.as_tensor(level[order])
            self._key = torch.as_tensor(key[order])
            self._card = torch.as_tensor(t.column("card").to_numpy().astype(np.int64)[order])
            self._mask = torch.as_tensor(t.column("captured_mask").to_numpy()[order])
            self._probs = self._probs[order]
            # composite sort key: level (6 bits) above the 62-bit state key does not fit in
            # int64, so search per level
            self._level_bounds = torch.searchsorted(self._level, torch.arange(49))
        elif "feature_00" in names:
            self.lookup = "features"
            cols = np.stack([t.column(f"feature_{k:02d}").to_numpy() for k in range(58)],
                            axis=1).astype(np.int8)
            probs = t.column("probability").to_numpy()
            sums: dict[bytes, list[float]] = {}
            for row, p in zip(cols, probs):
                acc = sums.setdefault(row.tobytes(), [0.0, 0.0])
                acc[0] += float(p)
                acc[1] += 1.0
            self._by_row = {k: v[0] / v[1] for k, v in sums.items()}
            self.needs_features = True
        else:
            raise CorruptFileError(f"strategy table {path} has neither state keys nor feature "
                                   "rows: it cannot be played")

    def lookup_probs(self, batch: DecisionBatch) -> tuple[Tensor, Tensor]:
        """The table's probability of each play (float64 [E], -1 where absent) and, per
        position, whether the table has no (complete) rows for it (bool [positions])."""
        dev = batch.device
        if self.lookup == "features":
            rows = batch.child_features().cpu().numpy()
            weights = [self._by_row.get(r.tobytes(), -1.0) for r in rows]
            w = torch.tensor(weights, dtype=torch.float64, device=dev)
            missing = batch.segment_sum((w < 0).double()) > 0
        else:
            lo, hi = int(self._level_bounds[batch.level]), int(self._level_bounds[batch.level + 1])
            keys = self._key[lo:hi].to(dev)
            if keys.numel() == 0:
                return (torch.full_like(batch.edge_card, -1, dtype=torch.float64),
                        torch.ones(batch.num_positions, dtype=torch.bool, device=dev))
            start = torch.searchsorted(keys, batch.parent_key)
            row = (start + batch.edge_rank).clamp(max=keys.numel() - 1)
            ok = (keys.index_select(0, start.clamp(max=keys.numel() - 1)) == batch.parent_key)
            ok &= keys.index_select(0, row) == batch.parent_key
            ok &= self._card[lo:hi].to(dev).index_select(0, row) == batch.edge_card
            ok &= self._mask[lo:hi].to(dev).index_select(0, row) == batch.edge_captured
            w = torch.where(ok, self._probs[lo:hi].to(dev).index_select(0, row), -1.0)
            # the node must have exactly as many rows as legal plays
            nxt = (start + batch.num_edges.index_select(0, batch.edge_position))
            extra = (nxt < keys.numel()) & (keys.index_select(
                0, nxt.clamp(max=keys.numel() - 1)) == batch.parent_key)
            missing = batch.segment_sum(((w < 0) | extra).double()) > 0
        return w, missing

    def edge_probs(self, batch: DecisionBatch) -> Tensor:
        w, missing = self.lookup_probs(batch)
        self.misses += int(missing.sum())
        w = torch.where(missing.index_select(0, batch.edge_position), 1.0, w.clamp(min=0))
        return batch.normalize(w)
