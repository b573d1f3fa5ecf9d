"""The game-graph format shared by Pasur's graph builders and its CFR solver.

A full-information Pasur game is split into six rounds of eight plies. Both graph builders
produce the same format, one :class:`RoundGraph` per round:

* ``--mode tree`` (:mod:`tensorcfr.games.pasur.solving.tensor_tree`): the paper's game tree; every
  node has exactly one parent inside its round (in-round histories kept apart).
* ``--mode dag`` (:mod:`tensorcfr.games.pasur.solving.exact`): merged states; a node may have many
  parents.

In both, a node is a decision point of the player to move (full information: every node is
its own information set). Level ``l`` (0..8) of a round holds the nodes before ply ``l``;
Alex moves at even levels, Bob at odd ones; level 8 holds the round-end nodes, each linked to
one root (level 0 node) of the next round, or terminal after round 6.

Rewards are in points, Alex minus Bob, and are attached to edges: a whole game's utility is
the sum of the rewards along its path plus the terminal reward of its last round-end node.
Points already scored are therefore never part of a node (they simply add up).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PLIES_PER_ROUND = 8


@dataclass
class RoundGraph:
    """One round of a Pasur game graph; all tensors on the same device.

    Attributes:
        round_index: 0..5.
        num_nodes: nodes per level, length 9 (level 0 = round roots, level 8 = round ends).
        edge_parent: length 8; ``edge_parent[l]`` is a LongTensor [E_l] of parent node indices
            at level ``l``, sorted ascending (a node's actions are contiguous). Every node of
            levels 0..7 has at least one edge.
        edge_child: length 8; LongTensor [E_l] of child node indices at level ``l+1``.
            (tree mode: ``arange(E_l)``; dag mode: children may be shared.)
        edge_reward: length 8; float64 Tensor [E_l], points (Alex minus Bob) scored by the
            action itself (cards captured, Surs, the clubs bonus when a player reaches 7).
        edge_card: length 8; LongTensor [E_l], index 0..51 of the card played.
        edge_captured: length 8; LongTensor [E_l], bit mask (bit ``c`` = card ``c``) of the
            captured cards, 0 for a lay.
        next_root: LongTensor [num_nodes[8]]: index of the next round's root each round-end
            node leads to; for round 5 (the last) all -1.
        terminal_reward: float64 Tensor [num_nodes[8]]: points awarded after the round (the
            end-of-game cleanup and any clubs bonus it triggers) for round 5; zeros otherwise.
        node_state: optional, per level, whatever per-node state the builder keeps (e.g. the
            packed card state and inherited score counters) for features and tables.
    """

    round_index: int
    num_nodes: list[int]
    edge_parent: list[torch.Tensor]
    edge_child: list[torch.Tensor]
    edge_reward: list[torch.Tensor]
    edge_card: list[torch.Tensor]
    edge_captured: list[torch.Tensor]
    next_root: torch.Tensor
    terminal_reward: torch.Tensor
    node_state: list[dict[str, torch.Tensor]] | None = None

    @property
    def total_nodes(self) -> int:
        """Number of nodes over all 9 levels."""
        return int(sum(self.num_nodes))

    @property
    def total_edges(self) -> int:
        return int(sum(int(e.numel()) for e in self.edge_parent))

    def validate(self) -> None:
        """Check the structural invariants above (raises ``AssertionError``)."""
        assert len(self.num_nodes) == PLIES_PER_ROUND + 1
        for level in range(PLIES_PER_ROUND):
            parent = self.edge_parent[level]
            child = self.edge_child[level]
            n = parent.numel()
            for t in (child, self.edge_reward[level], self.edge_card[level],
                      self.edge_captured[level]):
                assert t.numel() == n, f"level {level}: edge tensors differ in length"
            if n:
                assert bool((parent[1:] >= parent[:-1]).all()), f"level {level}: parents unsorted"
                assert int(parent.min()) >= 0 and int(parent.max()) < self.num_nodes[level]
                assert int(child.min()) >= 0 and int(child.max()) < self.num_nodes[level + 1]
            assert torch.unique(parent).numel() == self.num_nodes[level], (
                f"level {level}: a node has no action")
        assert self.next_root.numel() == self.num_nodes[PLIES_PER_ROUND]
        assert self.terminal_reward.numel() == self.num_nodes[PLIES_PER_ROUND]
