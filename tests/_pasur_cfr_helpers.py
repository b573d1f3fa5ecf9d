"""Test helpers of the Pasur DCFR solver (engineer pasur-cfr).

A tiny, deliberately simple reference builder of :class:`RoundGraph` lists from the readable
rules engine (``rules.py``), for the last one or two rounds of a position, in both shapes
(``tree``: one child per edge; ``dag``: children merged by state), and a plain memoized
minimax over ``rules.py`` to check solved values against.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Hashable

import torch

from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph
from tensorcfr.games.pasur.engine.rules import (
    NUM_PLAYS,
    NUM_ROUNDS,
    Action,
    GameState,
    apply_action,
    initial_state,
    legal_actions,
    random_deal,
    score_pile,
    utility,
)
from tensorcfr.games.pasur.engine.cards import is_club


def _clubs_state(piles: tuple[tuple[int, ...], tuple[int, ...]]) -> Hashable:
    counts = tuple(sum(1 for c in pile if is_club(c)) for pile in piles)
    return ("done",) if max(counts) >= 7 else counts


def state_key(state: GameState) -> Hashable:
    """What of a state matters for the rest of the game (points already scored do not)."""
    return (state.play_index, state.hands, state.pool, _clubs_state(state.piles),
            state.last_capturer)


def _edge(state: GameState, action: Action) -> tuple[GameState, float, float, Hashable]:
    """(child, edge reward, cleanup reward, merge key) of one play (cleanup only on play 48)."""
    child = apply_action(state, action)
    before = utility(state)
    if child.play_index < NUM_PLAYS:
        return child, float(utility(child) - before), 0.0, state_key(child)
    # Last play of the game: split the end-of-game cleanup off into the terminal reward.
    captured = tuple(action.captured)
    if captured:
        pool_after = tuple(c for c in state.pool if c not in captured)
        last = state.player
    else:
        pool_after = tuple(sorted(state.pool + (action.card,)))
        last = state.last_capturer
    piles = [list(child.piles[0]), list(child.piles[1])]
    if pool_after and last is not None:
        piles[last] = [c for c in piles[last] if c not in pool_after]
    pre = (score_pile(piles[0], child.surs[0]).total - score_pile(piles[1], child.surs[1]).total)
    key = (NUM_PLAYS, pool_after, last,
           _clubs_state((tuple(piles[0]), tuple(piles[1]))))
    return child, float(pre - before), float(utility(child) - pre), key


def build_position_graphs(state: GameState, mode: str = "dag",
                          device: str | torch.device = "cpu") -> list[RoundGraph]:
    """RoundGraphs of every round from ``state`` (at a round start) to the end of the game."""
    assert state.play_index % PLIES_PER_ROUND == 0 and mode in ("tree", "dag")
    graphs: list[RoundGraph] = []
    roots = [state]
    for round_index in range(state.round, NUM_ROUNDS):
        levels: list[list[GameState]] = [roots]
        num_nodes = [len(roots)]
        edge_parent, edge_child, edge_reward, edge_card, edge_captured = [], [], [], [], []
        end_keys: list[Hashable] = []
        terminal: list[float] = []
        for level in range(PLIES_PER_ROUND):
            nodes: list[GameState] = []
            index: dict[Hashable, int] = {}
            par, chi, rew, card, cap = [], [], [], [], []
            for i, node in enumerate(levels[-1]):
                for action in legal_actions(node):
                    child, reward, cleanup, key = _edge(node, action)
                    if mode == "dag" and key in index:
                        j = index[key]
                    else:
                        j = len(nodes)
                        nodes.append(child)
                        index.setdefault(key, j)
                        if level == PLIES_PER_ROUND - 1:
                            end_keys.append(key)
                            terminal.append(cleanup)
                    par.append(i)
                    chi.append(j)
                    rew.append(reward)
                    card.append(action.card)
                    cap.append(sum(1 << c for c in action.captured))
            levels.append(nodes)
            num_nodes.append(len(nodes))
            edge_parent.append(torch.tensor(par, dtype=torch.long, device=device))
            edge_child.append(torch.tensor(chi, dtype=torch.long, device=device))
            edge_reward.append(torch.tensor(rew, dtype=torch.float64, device=device))
            edge_card.append(torch.tensor(card, dtype=torch.long, device=device))
            edge_captured.append(torch.tensor(cap, dtype=torch.long, device=device))
        if round_index < NUM_ROUNDS - 1:
            next_index: dict[Hashable, int] = {}
            next_roots: list[GameState] = []
            next_root = []
            for node in levels[-1]:
                key = state_key(node)
                if key not in next_index:
                    next_index[key] = len(next_roots)
                    next_roots.append(node)
                next_root.append(next_index[key])
            terminal = [0.0] * len(levels[-1])
        else:
            next_roots = []
            next_root = [-1] * len(levels[-1])
        graph = RoundGraph(
            round_index=round_index, num_nodes=num_nodes, edge_parent=edge_parent,
            edge_child=edge_child, edge_reward=edge_reward, edge_card=edge_card,
            edge_captured=edge_captured,
            next_root=torch.tensor(next_root, dtype=torch.long, device=device),
            terminal_reward=torch.tensor(terminal, dtype=torch.float64, device=device))
        graph.validate()
        graphs.append(graph)
        roots = next_roots
    return graphs


def minimax_value(state: GameState) -> float:
    """Alex-minus-Bob points still to come from ``state`` under optimal play (plain search)."""

    @lru_cache(maxsize=None)
    def value(key: Hashable) -> float:
        node = states[key]
        if node.is_terminal:
            return 0.0
        base = utility(node)
        vals = []
        for action in legal_actions(node):
            child = apply_action(node, action)
            ck = state_key(child)
            states.setdefault(ck, child)
            vals.append(utility(child) - base + value(ck))
        return max(vals) if node.player == 0 else min(vals)

    states: dict[Hashable, GameState] = {state_key(state): state}
    return value(state_key(state))


def position_at_round(seed: int, round_index: int) -> GameState:
    """The state at the start of ``round_index`` of deal ``seed``, reached by a fixed line of
    play (always the first legal action)."""
    state = initial_state(random_deal(seed))
    while state.play_index < PLIES_PER_ROUND * round_index:
        state = apply_action(state, legal_actions(state)[0])
    return state
