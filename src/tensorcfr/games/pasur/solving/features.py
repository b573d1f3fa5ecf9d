"""Infoset features of Pasur tree nodes: the paper's compressed card codes and 58-column row.

Baghal (2025), sections 2.4, 2.8 and 3: every node of the full game tree is described by one
int8 row of 58 columns (paper: ``t_inf``), the input of its per-deck XGBoost model:

=========  ==================================================================================
columns    meaning
=========  ==================================================================================
0..51      one code per card index (Table 11 below); 0 for a card not dealt yet and ``-127``
           for a card dealt in an earlier round (or the initial pool) and already captured
52, 53     inherited clubs of Alex, Bob at the round's start (0 once someone has 7)
54         Win flag: 1 / 2 when Alex / Bob already had 7 clubs at the round's start, else 0
55, 56, 57 round (0..5), turn (0..3) and player (0 Alex, 1 Bob) of the ply that *led* to the
           node (the paper writes a row per action: the child node, labelled with the ply)
=========  ==================================================================================

Card codes of the cards in play in the round (paper Table 11, its compressed game tensor
``t_cmp``; ``t`` = turn 0..3 of a player's play in the round)::

    100 held by Alex        105 held by Bob         110 in the pool since the round's start
    +(t+1) laid by Alex at turn t, still in the pool      -(t+1) same for Bob
    110+(t+1) played by Alex at turn t to capture          110-(t+1) same for Bob
    +10(t+1) a round-start pool card captured by Alex at turn t   -10(t+1) by Bob
    laid by X at turn a then captured by Y at turn b: sX*(a+1) + sY*10*(b+1), s = +1 Alex, -1 Bob
    (e.g. -9: laid by Alex at turn 0, captured by Bob at turn 0; 37: laid by Bob at turn 2,
    captured by Alex at turn 3)

The inherited last capturer that :mod:`tensor_tree` also keeps (for the end-of-game cleanup)
is not a column: the paper's row has no such column.

:func:`level_features` computes the rows of a whole RoundGraph level at once from its
``node_state``; :func:`reference_features` is the readable definition from a
:class:`~tensorcfr.games.pasur.engine.rules.GameState`, used to test it.
"""

from __future__ import annotations

from typing import Mapping

import torch

from tensorcfr.games.pasur.engine.cards import NUM_CARDS, is_club
from tensorcfr.games.pasur.engine.rules import (
    CLUBS_FOR_BONUS,
    PLAYS_PER_ROUND,
    GameState,
    apply_action,
    initial_state,
    round_hands,
)
from tensorcfr.games.pasur.solving.tensor_tree import compressed_codes

NUM_FEATURES = 58
COL_ALEX_CLUBS, COL_BOB_CLUBS, COL_WIN = 52, 53, 54
COL_ROUND, COL_TURN, COL_PLAYER = 55, 56, 57
COLLECTED = -127
HELD_BY_ALEX, HELD_BY_BOB, IN_POOL_SINCE_START = 100, 105, 110


def level_features(node_state: Mapping[str, torch.Tensor],
                   nodes: torch.Tensor | None = None) -> torch.Tensor:
    """The 58-column rows of the nodes of one RoundGraph level (tree mode), vectorized.

    Args:
        node_state: ``graph.node_state[level]`` of :func:`tensor_tree.build_tree_rounds`
            (keys ``card_node``, ``score_index``, ``card_state``, ``in_play``,
            ``dealt_before``, ``scores``, ``round``, ``level``); level must be 1..8 (a row
            describes the node reached by ply ``level - 1``). The card codes are the paper's
            ``t_cmp`` of the level's card states (:func:`tensor_tree.compressed_codes`).
        nodes: optional LongTensor of node indices of the level (default: every node), to
            bound memory (58 bytes per row).

    Returns:
        int8 Tensor ``[N, 58]`` on the node_state's device.
    """
    level = int(node_state["level"])
    if not 1 <= level <= PLAYS_PER_ROUND:
        raise ValueError(f"feature rows describe nodes reached by a ply: level 1..8, got {level}")
    card_node = node_state["card_node"]
    score_index = node_state["score_index"]
    if nodes is not None:
        card_node, score_index = card_node[nodes], score_index[nodes]
    card_node, score_index = card_node.long(), score_index.long()
    in_play = node_state["in_play"]
    device = card_node.device
    rows = torch.zeros((card_node.numel(), NUM_FEATURES), dtype=torch.int8, device=device)
    card_state = node_state["card_state"]
    if card_node.numel() >= card_state.shape[0]:  # codes of every card state, then gather
        rows[:, in_play] = compressed_codes(card_state)[card_node]
    else:                                         # only the card states asked for
        rows[:, in_play] = compressed_codes(card_state[card_node])
    # Paper: t_inf[(t_dlt == 1) & (t_inf == 0)] = -127: dealt earlier and no longer in play
    # (a card of the round's in-play set can be gone at a node whose pool never held it).
    dealt = node_state["dealt_before"].to(device)
    cards = rows[:, :NUM_CARDS]
    cards.masked_fill_((cards == 0) & dealt, COLLECTED)
    rows[:, COL_ALEX_CLUBS:COL_WIN + 1] = node_state["scores"][score_index, :3]
    rows[:, COL_ROUND] = int(node_state["round"])
    rows[:, COL_TURN] = (level - 1) // 2
    rows[:, COL_PLAYER] = (level - 1) % 2
    return rows


def inherited_clubs(state: GameState) -> tuple[int, int, int]:
    """(Alex clubs, Bob clubs, Win) of the piles of ``state``, the paper's inherited score."""
    alex = sum(1 for c in state.piles[0] if is_club(c))
    bob = sum(1 for c in state.piles[1] if is_club(c))
    if alex >= CLUBS_FOR_BONUS:
        return 0, 0, 1
    if bob >= CLUBS_FOR_BONUS:
        return 0, 0, 2
    return alex, bob, 0


def reference_features(state: GameState,
                       inherited: tuple[int, int, int] | None = None) -> list[int]:
    """The 58-column row of the node reached by the last play of ``state`` (readable version).

    Replays the game's history from the deal: the round of the last play, the pool at that
    round's start, then each card's "legs" in the round (laid by whom and when, captured by
    whom and when) mapped to the codes of the module docstring. ``inherited`` overrides the
    (Alex clubs, Bob clubs, Win) columns, which are otherwise computed from the piles at the
    round's start.
    """
    if state.play_index == 0:
        raise ValueError("the initial state was reached by no play; rows describe plays")
    ply = state.play_index - 1
    round_index, in_round = divmod(ply, PLAYS_PER_ROUND)
    start = initial_state(state.deal)
    for action in state.history[:PLAYS_PER_ROUND * round_index]:
        start = apply_action(start, action)
    if inherited is None:
        inherited = inherited_clubs(start)
    alex_hand, bob_hand = round_hands(state.deal, round_index)
    in_play = set(start.pool) | set(alex_hand) | set(bob_hand)
    laid: dict[int, tuple[int, int]] = {}       # card -> (player, turn) of its lay
    captured: dict[int, tuple[int, int]] = {}   # card -> (player, turn) of its capture
    played_to_capture: dict[int, tuple[int, int]] = {}
    round_plays = state.history[PLAYS_PER_ROUND * round_index:state.play_index]
    for k, action in enumerate(round_plays):
        player, turn = k % 2, k // 2
        if action.captured:
            played_to_capture[action.card] = (player, turn)
            for c in action.captured:
                captured[c] = (player, turn)
        else:
            laid[action.card] = (player, turn)
    played = {a.card for a in round_plays}
    row = [0] * NUM_FEATURES
    for card in range(NUM_CARDS):
        if card not in in_play:
            row[card] = COLLECTED if card in state.deal[:4 + 8 * round_index] else 0
            continue
        sign = {0: 1, 1: -1}
        if card in played_to_capture:
            player, turn = played_to_capture[card]
            row[card] = IN_POOL_SINCE_START + sign[player] * (turn + 1)
        elif card in laid:
            player, turn = laid[card]
            code = sign[player] * (turn + 1)
            if card in captured:
                taker, taken_turn = captured[card]
                code += sign[taker] * 10 * (taken_turn + 1)
            row[card] = code
        elif card in captured:
            taker, taken_turn = captured[card]
            row[card] = sign[taker] * 10 * (taken_turn + 1)
        elif card in alex_hand and card not in played:
            row[card] = HELD_BY_ALEX
        elif card in bob_hand and card not in played:
            row[card] = HELD_BY_BOB
        else:
            row[card] = IN_POOL_SINCE_START
    row[COL_ALEX_CLUBS], row[COL_BOB_CLUBS], row[COL_WIN] = inherited
    row[COL_ROUND], row[COL_TURN], row[COL_PLAYER] = round_index, in_round // 2, in_round % 2
    return row
