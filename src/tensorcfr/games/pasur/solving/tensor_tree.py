"""The paper's tensorized game-tree builder for full-information Pasur (``--mode tree``).

Baghal (2025), "Solving Pasur Using GPU-Accelerated Counterfactual Regret Minimization",
section 2, rebuilt on PyTorch (device-agnostic) and producing the shared
:class:`~tensorcfr.games.pasur.solving.graph.RoundGraph` format, one graph per round.

The construction keeps two things apart, as the paper does:

* **Card states** (paper: the *Game Tree*, tensor ``t_gme`` ``[M, 3, m]`` int8 per layer): the
  ``m`` cards in play in the round (the pool at the round's start plus the 8 dealt cards),
  row 0 = where each card is (1 Alex's hand, 2 Bob's hand, 3 pool, 0 taken), rows 1/2 = Alex's
  and Bob's in-round action history (``t+1`` on the card laid at turn ``t``, ``10*(t+1)`` added
  on each card captured at turn ``t``). A round's card tree starts from the distinct pools
  reached at the round's start and is expanded one ply at a time: the legal actions of a whole
  layer are found at once (numeric captures with one matrix product against the sum-to-11
  template, Jacks, Queens, Kings, forced capture per card, lays), giving a branch factor per
  node (``t_brf``) and an action tensor (``t_act``); the layer is then expanded with
  ``repeat_interleave`` and the actions applied.
* **Inherited scores** (paper: ``t_scr``): what a node inherits from earlier rounds and still
  matters for the future: Alex's clubs, Bob's clubs, the Win flag (1/2 once Alex/Bob has 7
  clubs; the counts are then zeroed and no longer tracked) and, for the end-of-game cleanup of
  ``docs/PASUR_RULES.md``, the last player who captured anything in the game so far (0 none,
  1 Alex, 2 Bob). Points are additive, so they are not part of a node: they are edge rewards.

The **full game tree** pairs every card state with every inherited score it can carry (paper:
``t_fgm`` rows ``(card node, score id)``); its edges between consecutive layers come from the
paper's *RepeatBlocks* operation (:func:`repeat_blocks`). Between rounds, round-end nodes are
merged by ``unique`` on (pool, new score) into the next round's roots (paper: ``t_lnk``, here
``RoundGraph.next_root``). Inside a round the graph is a tree (every node has one parent).

Node order used here: the roots of a round are sorted by (pool, score); a level's full nodes
are ordered by (root, action path), so a node's children are contiguous and
``edge_parent`` is sorted, ``edge_child = arange`` (the RoundGraph tree-mode contract). With
that order the card node of every full node of level ``l`` is
``arange(M_l) (x)_{d_l} c_scr`` (RepeatBlocks of the level's card nodes, blocks = each root's
descendants ``d_l``, repeated once per inherited score ``c_scr`` of the root).

Public API: :func:`build_tree_rounds` (+ :func:`build_tree_round` for one round),
:func:`estimate_tree_size` (+ :class:`TreeEstimate`), :func:`round_start_states` and
:func:`inherited_score_sets` (the merged round roots), :func:`build_card_round` (one round's
card-state tree), :func:`repeat_blocks`, :func:`compressed_codes` (the paper's ``t_cmp``).
Feature rows: :mod:`tensorcfr.games.pasur.solving.features`. Documentation: docs/pasur_tensor_tree.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.games.pasur.engine.cards import (
    ACES,
    JACKS,
    NUM_CARDS,
    TEN_OF_DIAMONDS,
    TWO_OF_CLUBS,
    is_jack,
    is_king,
    is_numeric,
    is_queen,
)
from tensorcfr.games.pasur.solving.graph import PLIES_PER_ROUND, RoundGraph
from tensorcfr.games.pasur.engine.rules import (
    CLUBS_BONUS,
    CLUBS_FOR_BONUS,
    NUM_ROUNDS,
    SUR_POINTS,
    round_hands,
    validate_deal,
)
from tensorcfr.games.pasur.engine.sum11 import combos_within
from tensorcfr.utils.resources import format_bytes, parse_memory

# Row-0 codes of the card-state tensor t_gme (paper Table "State Encoding").
GONE, ALEX_HAND, BOB_HAND, POOL = 0, 1, 2, 3
# Columns of the inherited score table (paper t_scr without the point difference, + last capturer).
SCORE_ALEX_CLUBS, SCORE_BOB_CLUBS, SCORE_WIN, SCORE_LAST = 0, 1, 2, 3
# Columns of the in-round running tally (paper t_rus, points kept on edges instead).
RUS_ALEX_CLUBS, RUS_BOB_CLUBS, RUS_LAST = 0, 1, 2

_TEMPLATE_FIXED, _TEMPLATE_JACK, _TEMPLATE_LAY = 0, 1, 2
_CHUNK_ROWS = 1 << 16

# Bytes the RoundGraph keeps per edge: edge_parent, edge_child, edge_reward, edge_card and
# edge_captured are 8 bytes each (LongTensor / float64, as graph.py specifies).
EDGE_BYTES = 40
# Bytes per node of node_state: card_node and score_index (int32 each).
NODE_BYTES = 8
# Bytes per round-end node: next_root (int64) and terminal_reward (float64).
END_NODE_BYTES = 16
# Transient working memory while a level is built, per node of that level (int64 index
# tensors of RepeatBlocks and the edge gathers; measured ~115 B on decks 3 and 6).
TRANSIENT_EDGE_BYTES = 128
# Per card node of the round being unfolded: tallies, roots, branch, action card / captured /
# points (3 + 8 + 8 + 8 + 8 + 2 bytes).
CARD_NODE_WORK_BYTES = 37


def _card_points() -> list[int]:
    points = [0] * NUM_CARDS
    for c in ACES + JACKS:
        points[c] = 1
    points[TEN_OF_DIAMONDS] = 3
    points[TWO_OF_CLUBS] = 2
    return points


CARD_POINTS = tuple(_card_points())
"""Points of each card index in a pile (Aces, Jacks: 1; 10 of diamonds: 3; 2 of clubs: 2)."""


# --------------------------------------------------------------------------- RepeatBlocks

def repeat_blocks(values: torch.Tensor, block_sizes: torch.Tensor,
                  repeats: torch.Tensor) -> torch.Tensor:
    """The paper's RepeatBlocks (its appendix): ``values (x)_{block_sizes} repeats``.

    ``values`` (1-D, length ``block_sizes.sum()``) is cut into consecutive blocks of
    ``block_sizes``; block ``b`` is written ``repeats[b]`` times in a row. A generalization of
    ``repeat_interleave`` (blocks of size 1). Example: values ``[1,2,3,4,5,6]``, block sizes
    ``[2,3,1]``, repeats ``[1,3,2]`` give ``[1,2,3,4,5,3,4,5,3,4,5,6,6]``.
    """
    block_sizes = block_sizes.to(torch.int64)
    repeats = repeats.to(torch.int64)
    if block_sizes.numel() != repeats.numel():
        raise ValueError("repeat_blocks: block_sizes and repeats differ in length")
    if int(block_sizes.sum()) != values.numel():
        raise ValueError("repeat_blocks: block sizes do not add up to the length of values")
    device = values.device
    block_start = torch.cumsum(block_sizes, 0) - block_sizes          # paper: t_bgn before x
    segment_len = torch.repeat_interleave(block_sizes, repeats)       # paper: t_bls
    segment_src = torch.repeat_interleave(block_start, repeats)       # source start per copy
    total = int(segment_len.sum())
    if total == 0:
        return values[:0]
    segment_id = torch.repeat_interleave(
        torch.arange(segment_len.numel(), device=device), segment_len)
    segment_out_start = torch.cumsum(segment_len, 0) - segment_len    # paper: t_csm
    position = torch.arange(total, device=device) - segment_out_start[segment_id]  # t_pos
    return values[segment_src[segment_id] + position]                 # t_idx -> t_rbk


# --------------------------------------------------------------------------- action templates

@dataclass
class _Templates:
    """Every action a player may have in a round, over the round's ``m`` in-play cards.

    A template is (played card, captured cards) with a kind: a fixed capture (numeric sum to
    11, Queen or King), the Jack capture (takes every numeric card and Jack of the pool, so the
    captured set depends on the node), or a lay. The legal templates of a whole chunk of nodes
    are found with one matrix product of the nodes' [pool | hand] indicators against
    ``requirement`` (the paper's sum-to-11 template restricted to the cards in play, plus the
    Jack / Queen / King columns). Ordered by played card, then captured set, lay last.
    """

    kind: torch.Tensor           # LongTensor [K]: _TEMPLATE_FIXED / _JACK / _LAY
    card_pos: torch.Tensor       # LongTensor [K]: position (0..m-1) of the played card
    requirement: torch.Tensor    # float32 [2m, K]: pool incidence (rows 0..m-1), 100 x played
    low: torch.Tensor            # float32 [K]: template captures iff low <= product <= high
    high: torch.Tensor           # float32 [K]
    slot_onehot: torch.Tensor    # float32 [K, h]: hand slot of each capture template
    lay_columns: torch.Tensor    # LongTensor [h]: the lay template of each hand slot
    hand_pos: torch.Tensor       # LongTensor [h]: positions of the player's hand cards (sorted)
    captured: torch.Tensor       # bool [K, m]: fixed captured cards (paper t_act[:, 1, :])
    played: torch.Tensor         # bool [K, m]: played card one-hot (paper t_act[:, 0, :])
    bits: torch.Tensor           # int64 [K]: bit mask (52-card indices) of fixed captured cards
    points: torch.Tensor         # int16 [K]: points of the fixed capture incl. played card
    clubs: torch.Tensor          # int8 [K]: clubs of the fixed capture incl. played card


def _player_templates(cards: list[int], hand: Sequence[int], device: torch.device) -> _Templates:
    position = {c: i for i, c in enumerate(cards)}
    in_play = frozenset(cards)
    entries: list[tuple[int, tuple[int, ...], int]] = []  # (card, captured, kind)
    numeric_combos = [c for c in combos_within(in_play) if any(h in c for h in hand)]
    for card in hand:
        if is_numeric(card):
            for combo in numeric_combos:
                if card in combo:
                    entries.append((card, tuple(c for c in combo if c != card), _TEMPLATE_FIXED))
        elif is_jack(card):
            entries.append((card, (), _TEMPLATE_JACK))
        else:
            same_rank = is_queen if is_queen(card) else is_king
            for other in cards:
                if other != card and same_rank(other):
                    entries.append((card, (other,), _TEMPLATE_FIXED))
        entries.append((card, (), _TEMPLATE_LAY))
    entries.sort(key=lambda e: (e[0], e[2] == _TEMPLATE_LAY, e[1]))
    m, k = len(cards), len(entries)
    hand_sorted = sorted(hand)
    slot = {c: i for i, c in enumerate(hand_sorted)}
    numjack = [is_numeric(c) or is_jack(c) for c in cards]
    requirement = [[0.0] * k for _ in range(2 * m)]
    low, high, slot_onehot = [0.0] * k, [0.0] * k, [[0.0] * len(hand_sorted) for _ in range(k)]
    captured = [[False] * m for _ in range(k)]
    played = [[False] * m for _ in range(k)]
    bits, points, clubs, lay_columns = [0] * k, [0] * k, [0] * k, [0] * len(hand_sorted)
    for j, (card, cap, kind) in enumerate(entries):
        requirement[m + position[card]][j] = 100.0
        played[j][position[card]] = True
        if kind == _TEMPLATE_LAY:
            low[j] = high[j] = -1.0  # never a capture
            lay_columns[slot[card]] = j
            continue
        slot_onehot[j][slot[card]] = 1.0
        if kind == _TEMPLATE_JACK:
            for i, nj in enumerate(numjack):
                requirement[i][j] = 1.0 if nj else 0.0
            low[j], high[j] = 101.0, 1e9  # in hand and at least one numeric card / Jack in pool
        else:
            for c in cap:
                requirement[position[c]][j] = 1.0
                captured[j][position[c]] = True
            low[j] = high[j] = 100.0 + len(cap)  # in hand and every captured card in the pool
        taken = (card,) + cap
        bits[j] = sum(1 << c for c in cap)
        points[j] = sum(CARD_POINTS[c] for c in taken)
        clubs[j] = sum(1 for c in taken if c % 4 == 0)

    def t(values: object, dtype: torch.dtype) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype, device=device)

    return _Templates(
        kind=t([e[2] for e in entries], torch.int64),
        card_pos=t([position[e[0]] for e in entries], torch.int64),
        requirement=t(requirement, torch.float32), low=t(low, torch.float32),
        high=t(high, torch.float32),
        slot_onehot=t(slot_onehot, torch.float32).reshape(k, len(hand_sorted)),
        lay_columns=t(lay_columns, torch.int64),
        hand_pos=t([position[c] for c in hand_sorted], torch.int64),
        captured=t(captured, torch.bool).reshape(k, m), played=t(played, torch.bool).reshape(k, m),
        bits=t(bits, torch.int64), points=t(points, torch.int16), clubs=t(clubs, torch.int8))


def _legal_templates(row0: torch.Tensor, player: int, tpl: _Templates) -> torch.Tensor:
    """Boolean ``[C, K]``: which templates are legal at each node (row 0 of ``t_gme``)."""
    in_pool = row0 == POOL
    in_hand = row0 == (ALEX_HAND if player == 0 else BOB_HAND)
    # One matrix product: captured cards found in the pool, + 100 if the played card is in hand.
    product = torch.cat([in_pool, in_hand], dim=1).to(torch.float32) @ tpl.requirement  # [C, K]
    legal = (product >= tpl.low) & (product <= tpl.high)             # the legal captures
    # Forced capture per card: a hand card with a capture cannot be laid.
    has_capture = (legal.to(torch.float32) @ tpl.slot_onehot) > 0     # [C, h]
    legal[:, tpl.lay_columns] = in_hand[:, tpl.hand_pos] & ~has_capture
    return legal


# --------------------------------------------------------------------------- card-state tree

@dataclass
class CardRound:
    """One round's card-state tree (the paper's Game Tree layers), all tensors on one device.

    Attributes:
        round_index: 0..5.
        in_play: LongTensor [m]: the card indices in play this round (sorted); ``t_gme``'s last
            axis follows this order (paper: ``t_inp``).
        dealt_before: BoolTensor [52]: cards dealt before this round (initial pool and earlier
            hands; paper: ``t_dlt``).
        states: per level 0..8, int8 ``[M_l, 3, m]`` (paper: ``t_gme``). With
            ``keep_levels=False`` only the last level's states, tallies and roots are kept
            (the others are empty tensors) and the per-ply lists are emptied likewise.
        tallies: per level, int8 ``[M_l, 3]``: clubs Alex / Bob captured in the round so far
            and the round's last capturer (0 none, 1 Alex, 2 Bob) (paper: ``t_rus``).
        roots: per level, LongTensor ``[M_l]``: the level-0 node each node descends from.
        branch: per ply 0..7, LongTensor ``[M_l]``: number of actions of each node (``t_brf``).
        action_card: per ply, LongTensor ``[M_{l+1}]``: card played to reach each child.
        action_captured: per ply, LongTensor ``[M_{l+1}]``: bit mask of the captured cards.
        action_points: per ply, int16 ``[M_{l+1}]``: points (Alex minus Bob) of the action:
            captured cards and the played card when it captures, Surs; no clubs bonus.
        level_sizes: card nodes per level 0..8.
        root_counts: per level, LongTensor ``[R]``: descendants of each root at that level.
    """

    round_index: int
    in_play: torch.Tensor
    dealt_before: torch.Tensor
    states: list[torch.Tensor] = field(default_factory=list)
    tallies: list[torch.Tensor] = field(default_factory=list)
    roots: list[torch.Tensor] = field(default_factory=list)
    branch: list[torch.Tensor] = field(default_factory=list)
    action_card: list[torch.Tensor] = field(default_factory=list)
    action_captured: list[torch.Tensor] = field(default_factory=list)
    action_points: list[torch.Tensor] = field(default_factory=list)
    level_sizes: list[int] = field(default_factory=list)
    root_counts: list[torch.Tensor] = field(default_factory=list)
    keep_levels: bool = True

    def _record_level(self) -> None:
        """Count the newest level (card nodes, descendants per root) and, when levels are not
        kept, free the previous one (then only the last level stays in memory)."""
        self.level_sizes.append(int(self.states[-1].shape[0]))
        self.root_counts.append(torch.bincount(self.roots[-1],
                                               minlength=int(self.root_counts[0].numel())
                                               if self.root_counts else
                                               int(self.states[0].shape[0])))
        if not self.keep_levels and len(self.states) > 1:
            empty = self.states[-1].new_zeros(0)
            for name in ("states", "tallies", "roots"):
                getattr(self, name)[-2] = empty
            for name in ("branch", "action_card", "action_captured", "action_points"):
                getattr(self, name)[-1] = empty


def _pack_columns(codes: torch.Tensor, bits_per_column: int) -> torch.Tensor:
    """int64 key per row of a small-integer matrix ``[N, m]`` (``m * bits <= 62``), column
    ``j`` in bits ``j*bits ..``; built column by column (no ``[N, m]`` int64 temporary)."""
    key = torch.zeros(codes.shape[0], dtype=torch.int64, device=codes.device)
    for j in range(codes.shape[1]):
        key |= torch.bitwise_left_shift(codes[:, j].to(torch.int64), bits_per_column * j)
    return key


def _unique_configs(row0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct rows of ``t_gme[:, 0, :]`` (codes 0..3) and the inverse index of every node."""
    m = row0.shape[1]
    if 0 < m <= 31:
        values, inverse = torch.unique(_pack_columns(row0, 2), return_inverse=True)
        configs = (torch.bitwise_right_shift(values.unsqueeze(1), 2 * torch.arange(
            m, device=row0.device)) & 3).to(torch.int8)
        return configs, inverse
    return torch.unique(row0, dim=0, return_inverse=True)


def _expand_ply(card_round: CardRound, level: int, tpl: _Templates, numjack_pos: torch.Tensor,
                card_points: torch.Tensor, card_clubs: torch.Tensor, chunk_rows: int) -> None:
    """Apply one ply to the last layer of ``card_round`` (paper: FindMoves + ApplyMoves).

    Legal actions and their effect on row 0 depend only on row 0 (where each card is), which
    many nodes share (the same cards played in another order). So actions are found and
    applied once per distinct row 0 ("config"), then gathered for every node: the child's
    row 0 is its config-action's new row 0 and the player's history row gets the action's
    delta (``turn+1`` on the played card, ``10*(turn+1)`` on each captured card).
    """
    state, tally, root = card_round.states[-1], card_round.tallies[-1], card_round.roots[-1]
    device = state.device
    round_index = card_round.round_index
    player, turn = level % 2, level // 2
    configs, config_of_node = _unique_configs(state[:, 0, :])
    config_parent_parts, config_template_parts = [], []
    for start in range(0, configs.shape[0], chunk_rows):
        legal = _legal_templates(configs[start:start + chunk_rows], player, tpl)
        node, template = torch.nonzero(legal, as_tuple=True)   # sorted by node, then template
        config_parent_parts.append(node + start)
        config_template_parts.append(template)
    config_parent = torch.cat(config_parent_parts)
    config_template = torch.cat(config_template_parts)
    config_branch = torch.bincount(config_parent, minlength=configs.shape[0])
    if bool((config_branch == 0).any()):
        raise AssertionError("a node without a legal action: the hands are inconsistent")
    # --- each config action applied once (paper: t_act rows [0] played, [1] captured) ---
    kind = tpl.kind[config_template]
    captured = tpl.captured[config_template]                           # t_act[:, 1, :]
    played = tpl.played[config_template]                               # t_act[:, 0, :]
    bits = tpl.bits[config_template]
    points = tpl.points[config_template]
    clubs = tpl.clubs[config_template]
    parent_row0 = configs[config_parent]
    jack_rows = torch.nonzero(kind == _TEMPLATE_JACK).flatten()
    if jack_rows.numel():  # the Jack takes every numeric card and Jack of the pool
        jack_captured = (parent_row0[jack_rows] == POOL) & numjack_pos
        captured[jack_rows] = jack_captured
        weights = torch.bitwise_left_shift(torch.ones_like(card_round.in_play),
                                           card_round.in_play)
        bits[jack_rows] = (jack_captured.to(torch.int64) * weights).sum(dim=1)
        points[jack_rows] += (jack_captured.to(torch.int16) * card_points).sum(
            dim=1, dtype=torch.int16)
        clubs[jack_rows] += (jack_captured.to(torch.int8) * card_clubs).sum(dim=1,
                                                                            dtype=torch.int8)
    takes = kind != _TEMPLATE_LAY                                      # paper: t_mpk
    new_row0 = parent_row0.masked_fill(captured, GONE)
    new_place = torch.where(takes, GONE, POOL).to(torch.int8).unsqueeze(1)
    new_row0 = torch.where(played, new_place, new_row0)
    history_delta = (played.to(torch.int8) * (turn + 1)
                     + captured.to(torch.int8) * (10 * (turn + 1)))
    pool_empty = ~(new_row0 == POOL).any(dim=1)
    # Sur: a capture that empties the pool, not by a Jack, not in the last round.
    sur = takes & pool_empty & (kind != _TEMPLATE_JACK) & (round_index < NUM_ROUNDS - 1)
    points = points + sur.to(torch.int16) * SUR_POINTS
    del captured, played, parent_row0
    # --- every node: paper t_gme <- t_gme (x) t_brf, then the config action's effect ---
    config_start = torch.cumsum(config_branch, 0) - config_branch
    branch = config_branch[config_of_node]                             # paper: t_brf
    parent = torch.repeat_interleave(torch.arange(state.shape[0], device=device), branch)
    edge_start = torch.cumsum(branch, 0) - branch
    action = (config_start[config_of_node[parent]]
              + torch.arange(parent.numel(), device=device) - edge_start[parent])
    del parent, edge_start
    child = torch.repeat_interleave(state, branch, dim=0)
    child[:, 0, :] = new_row0[action]
    child[:, 1 + player, :] += history_delta[action]
    child_tally = torch.repeat_interleave(tally, branch, dim=0)
    child_tally[:, RUS_ALEX_CLUBS + player] += clubs[action]
    child_tally[:, RUS_LAST].masked_fill_(takes[action], player + 1)
    card_round.branch.append(branch)
    card_round.action_card.append(card_round.in_play[tpl.card_pos[config_template[action]]])
    card_round.action_captured.append(bits[action])
    card_round.action_points.append(points[action] if player == 0 else -points[action])
    card_round.states.append(child)
    card_round.tallies.append(child_tally)
    card_round.roots.append(torch.repeat_interleave(root, branch, dim=0))
    card_round._record_level()


def build_card_round(deal: Sequence[int], round_index: int, pools: torch.Tensor,
                     device: torch.device | str = "cpu",
                     chunk_rows: int = _CHUNK_ROWS, keep_levels: bool = True,
                     on_level: Callable[[CardRound], None] | None = None) -> CardRound:
    """Build one round's card-state tree from several round-start pools, layer by layer.

    Args:
        deal: the 52-card deal.
        round_index: 0..5 (selects the dealt hands).
        pools: BoolTensor ``[R, 52]``: the distinct pools at the round's start (one root each).
        device: torch device for every tensor.
        chunk_rows: nodes processed per matrix product (bounds the ``[C, K]`` temporaries).
        keep_levels: keep every level (default) or only the last one (for counting: memory
            of two consecutive levels instead of nine).
        on_level: called after each level is built (e.g. to stop early on a memory limit).

    Returns:
        The :class:`CardRound` with 9 levels (level 0 = the R roots, in the given order).
    """
    deal = validate_deal(deal)
    if not 0 <= round_index < NUM_ROUNDS:
        raise TensorCFRError(f"round_index must be 0..5, got {round_index}")
    if pools.dim() != 2 or pools.shape[1] != NUM_CARDS:
        raise TensorCFRError(f"pools must be a [R, 52] boolean tensor, got {tuple(pools.shape)}")
    device = torch.device(device)
    pools = pools.to(device=device, dtype=torch.bool)
    alex, bob = round_hands(deal, round_index)
    hand_cards = set(alex) | set(bob)
    if pools.numel() and bool(pools[:, list(hand_cards)].any()):
        raise TensorCFRError("a round-start pool holds a card dealt in that round")
    in_play_mask = pools.any(dim=0) if pools.shape[0] else torch.zeros(52, dtype=torch.bool,
                                                                        device=device)
    in_play_mask = in_play_mask.clone()
    in_play_mask[list(hand_cards)] = True
    in_play = torch.nonzero(in_play_mask).flatten()
    cards = in_play.tolist()
    m = len(cards)
    state = torch.zeros((pools.shape[0], 3, m), dtype=torch.int8, device=device)
    state[:, 0, :] = torch.where(pools[:, in_play], POOL, GONE).to(torch.int8)
    pos = {c: i for i, c in enumerate(cards)}
    state[:, 0, [pos[c] for c in alex]] = ALEX_HAND
    state[:, 0, [pos[c] for c in bob]] = BOB_HAND
    dealt_before = torch.zeros(NUM_CARDS, dtype=torch.bool, device=device)
    dealt_before[list(deal[:4 + 8 * round_index])] = True
    card_round = CardRound(round_index=round_index, in_play=in_play, dealt_before=dealt_before,
                           keep_levels=keep_levels)
    card_round.states.append(state)
    card_round.tallies.append(torch.zeros((pools.shape[0], 3), dtype=torch.int8, device=device))
    card_round.roots.append(torch.arange(pools.shape[0], device=device))
    card_round._record_level()
    templates = [_player_templates(cards, alex, device), _player_templates(cards, bob, device)]
    numjack_pos = torch.tensor([is_numeric(c) or is_jack(c) for c in cards], dtype=torch.bool,
                               device=device)
    card_points = torch.tensor([CARD_POINTS[c] for c in cards], dtype=torch.int16, device=device)
    card_clubs = torch.tensor([c % 4 == 0 for c in cards], dtype=torch.int8, device=device)
    for level in range(PLIES_PER_ROUND):
        _expand_ply(card_round, level, templates[level % 2], numjack_pos, card_points,
                    card_clubs, chunk_rows)
        if on_level is not None:
            on_level(card_round)
    return card_round


def _code_table() -> list[int]:
    """``t_cmp`` for every (row 0 code r, history difference h): index ``r * 128 + h + 64``."""
    table = []
    for place in (GONE, ALEX_HAND, BOB_HAND, POOL):
        for h in range(-64, 64):
            if place == GONE and 0 < abs(h) < 5:
                code = 110 + h          # played to capture: both legs in the same turn
            elif h == 0 and place == POOL:
                code = 110              # in the pool since the round's start
            elif h == 0 and place == ALEX_HAND:
                code = 100
            elif h == 0 and place == BOB_HAND:
                code = 105
            else:
                code = h
            table.append(code)
    return table


_CODE_TABLE = tuple(_code_table())


def compressed_codes(state: torch.Tensor) -> torch.Tensor:
    """The paper's compressed game tensor ``t_cmp`` ``[M, m]`` int8 of a layer ``t_gme``.

    One code per in-play card summarizing where it is and its two "legs" in the round (laid,
    then picked), see docs/pasur_tensor_tree.md (the paper's Table 11): 100 / 105 held by
    Alex / Bob, 110 in the pool since the round's start, ``+-(t+1)`` laid by Alex / Bob at turn
    ``t`` and still in the pool, ``110 +- (t+1)`` played by Alex / Bob at turn ``t`` to capture,
    otherwise (Alex's history minus Bob's) e.g. ``-10`` = a round-start pool card Bob captured
    at turn 0, ``-9`` = laid by Alex at turn 0 and captured by Bob at turn 0. Computed as
    ``t_cmp = t_gme[:,1] - t_gme[:,2]`` then the paper's rules, by one table lookup.
    """
    table = torch.tensor(_CODE_TABLE, dtype=torch.int8, device=state.device)
    history = (state[:, 1, :] - state[:, 2, :]).to(torch.int16) + 64        # 20..108
    index = state[:, 0, :].to(torch.int16) * 128 + history
    return table[index.long()]


# --------------------------------------------------------------------------- inherited scores

@dataclass
class _RoundRoots:
    """The roots of a round's full tree: (card root, inherited score) pairs, sorted."""

    pools: torch.Tensor       # BoolTensor [R, 52]: the card roots (distinct pools), sorted
    scores: torch.Tensor      # int8 [S, 4]: distinct inherited scores (paper: t_scr)
    pair_card: torch.Tensor   # LongTensor [P]: card root of each root pair (paper t_fgm[:,0])
    pair_score: torch.Tensor  # LongTensor [P]: score id of each root pair (paper t_fgm[:,1])

    @property
    def scores_per_root(self) -> torch.Tensor:
        """LongTensor [R]: inherited scores per card root (the paper's ``c_scr``)."""
        return torch.bincount(self.pair_card, minlength=self.pools.shape[0])


@dataclass
class _RoundLink:
    """How a round's end nodes lead to the next round's roots (paper: t_lnk)."""

    end_group: torch.Tensor    # LongTensor [M_8]: group (root, pool, tally) of each end card node
    group_offset: torch.Tensor  # LongTensor [G]: first pair of each group
    pair_next: torch.Tensor    # LongTensor [pairs]: next round's root of each (group, score copy)


def _new_scores(scores: torch.Tensor, tally: torch.Tensor) -> torch.Tensor:
    """Inherited score after a round: add the round's clubs, set Win at 7, last capturer."""
    scores = scores.to(torch.int16)
    tally = tally.to(torch.int16)
    win = scores[:, SCORE_WIN]
    alex = scores[:, SCORE_ALEX_CLUBS] + tally[:, RUS_ALEX_CLUBS]
    bob = scores[:, SCORE_BOB_CLUBS] + tally[:, RUS_BOB_CLUBS]
    tracked = win == 0
    win = torch.where(tracked & (alex >= CLUBS_FOR_BONUS), torch.ones_like(win), win)
    win = torch.where(tracked & (bob >= CLUBS_FOR_BONUS), torch.full_like(win, 2), win)
    alex = torch.where(win > 0, torch.zeros_like(alex), alex)
    bob = torch.where(win > 0, torch.zeros_like(bob), bob)
    last = torch.where(tally[:, RUS_LAST] > 0, tally[:, RUS_LAST], scores[:, SCORE_LAST])
    return torch.stack([alex, bob, win, last], dim=1).to(torch.int8)


def _unique_rows(columns: list[torch.Tensor], widths: list[int]
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(stack(columns), dim=0, return_inverse=True)`` for non-negative int64
    columns of at most ``widths`` bits each, packed into one int64 key when they fit (much
    faster than a row-wise unique); rows come back sorted lexicographically either way."""
    if sum(widths) <= 62:
        key = torch.zeros_like(columns[0])
        for column, width in zip(columns, widths):
            key = torch.bitwise_left_shift(key, width) | column
        values, inverse = torch.unique(key, return_inverse=True)
        rows = []
        for width in reversed(widths):
            rows.append(values & ((1 << width) - 1))
            values = torch.bitwise_right_shift(values, width)
        return torch.stack(rows[::-1], dim=1), inverse
    return torch.unique(torch.stack(columns, dim=1), dim=0, return_inverse=True)


def _link_round(card_round: CardRound, roots: _RoundRoots) -> tuple[_RoundLink, _RoundRoots]:
    """Paper's between-hand update: unique card states and scores, and the linkage ``t_lnk``.

    Round-end card nodes are grouped by (root, pool, round tally): every member of a group
    leads, for each inherited score of the root, to the same next-round root. The pairs
    (group, score) are turned into (pool, new score) and merged with ``unique``.
    """
    device = card_round.in_play.device
    m = card_round.in_play.numel()
    end_state, end_tally, end_root = (card_round.states[-1], card_round.tallies[-1],
                                      card_round.roots[-1])
    position_bits = torch.bitwise_left_shift(torch.ones(m, dtype=torch.int64, device=device),
                                             torch.arange(m, device=device))
    pool_code = _pack_columns(end_state[:, 0, :] == POOL, 1)
    num_roots = roots.pools.shape[0]
    groups, end_group = _unique_rows(
        [end_root, pool_code, end_tally[:, 0].long(), end_tally[:, 1].long(),
         end_tally[:, 2].long()],
        [max(1, (num_roots - 1).bit_length()), m, 4, 4, 2])            # sorted: by root first
    group_root = groups[:, 0]
    counts = roots.scores_per_root
    root_pair_start = torch.cumsum(counts, 0) - counts
    pairs_per_group = counts[group_root]
    group_offset = torch.cumsum(pairs_per_group, 0) - pairs_per_group
    pair_group = torch.repeat_interleave(torch.arange(groups.shape[0], device=device),
                                         pairs_per_group)
    copy = torch.arange(pair_group.numel(), device=device) - group_offset[pair_group]
    pair_score = roots.pair_score[root_pair_start[group_root[pair_group]] + copy]
    new_scores = _new_scores(roots.scores[pair_score], groups[pair_group, 2:5]).long()
    next_roots, pair_next = _unique_rows(
        [groups[pair_group, 1], new_scores[:, 0], new_scores[:, 1], new_scores[:, 2],
         new_scores[:, 3]], [m, 3, 3, 2, 2])
    pool_values, next_card = torch.unique(next_roots[:, 0], return_inverse=True)
    score_rows, next_score = _unique_rows([next_roots[:, i] for i in range(1, 5)], [3, 3, 2, 2])
    pools = torch.zeros((pool_values.numel(), NUM_CARDS), dtype=torch.bool, device=device)
    pools[:, card_round.in_play] = (pool_values.unsqueeze(1) & position_bits) != 0
    link = _RoundLink(end_group=end_group, group_offset=group_offset, pair_next=pair_next)
    return link, _RoundRoots(pools=pools, scores=score_rows.to(torch.int8), pair_card=next_card,
                             pair_score=next_score)


def _first_roots(deal: tuple[int, ...], device: torch.device) -> _RoundRoots:
    pools = torch.zeros((1, NUM_CARDS), dtype=torch.bool, device=device)
    pools[0, list(deal[:4])] = True
    zero = torch.zeros(1, dtype=torch.int64, device=device)
    return _RoundRoots(pools=pools, scores=torch.zeros((1, 4), dtype=torch.int8, device=device),
                       pair_card=zero, pair_score=zero.clone())


_Phase1 = list[tuple["CardRound", "_RoundRoots", "_RoundLink | None"]]
_PHASE1_CACHE: dict[tuple[tuple[int, ...], str], _Phase1] = {}


def _card_rounds(deal: tuple[int, ...], device: torch.device, limit: int | None = None
                 ) -> _Phase1:
    """Phase 1 with a one-deal cache: ``estimate_tree_size`` followed by ``build_tree_rounds``
    on the same deal (what a solver does) counts the card layers once. The cached tensors are
    small (roots, scores, linkage) and never handed out for writing."""
    key = (deal, str(device))
    if key in _PHASE1_CACHE:
        rounds = _PHASE1_CACHE[key]
        if limit is not None:
            _check_limit(_estimate(rounds), limit, complete=True)
        return rounds
    rounds = _card_rounds_uncached(deal, device, limit)
    _PHASE1_CACHE.clear()
    _PHASE1_CACHE[key] = rounds
    return rounds


def _card_rounds_uncached(deal: tuple[int, ...], device: torch.device, limit: int | None = None
                          ) -> _Phase1:
    """Phase 1: every round's card tree (last level only), its root pairs and the linkage
    to the next round.

    With ``limit`` (bytes), stops early with :class:`MemoryLimitError` as soon as the rounds
    built so far already need more than ``limit`` (a lower bound of the whole tree).
    """
    rounds: list[tuple[CardRound, _RoundRoots, _RoundLink | None]] = []
    roots = _first_roots(deal, device)
    for round_index in range(NUM_ROUNDS):
        on_level = None
        if limit is not None:
            done_bytes = _estimate(rounds).graph_bytes if rounds else 0
            counts = roots.scores_per_root

            def on_level(card_round: CardRound, done_bytes: int = done_bytes,
                         counts: torch.Tensor = counts) -> None:
                # Lower bound while the round grows: the full nodes and edges so far.
                nodes = sum(int((d * counts).sum()) for d in card_round.root_counts)
                needed = done_bytes + (EDGE_BYTES + NODE_BYTES) * nodes
                if needed > limit:
                    raise MemoryLimitError(
                        f"already round {card_round.round_index + 1} of this deal's game tree "
                        f"needs more than {format_bytes(needed)}, more than the "
                        f"{format_bytes(limit)} allowed; use --mode dag (merged states) or "
                        "raise --max-memory")

        card_round = build_card_round(deal, round_index, roots.pools, device=device,
                                      keep_levels=False, on_level=on_level)
        if round_index < NUM_ROUNDS - 1:
            link, next_roots = _link_round(card_round, roots)
        else:
            link, next_roots = None, roots
        # Only the counts are needed from here on: free the last level's card states.
        card_round.states, card_round.tallies, card_round.roots = [], [], []
        rounds.append((card_round, roots, link))
        roots = next_roots
        if limit is not None:
            _check_limit(_estimate(rounds), limit, complete=round_index == NUM_ROUNDS - 1)
    return rounds


def _check_limit(estimate: "TreeEstimate", limit: int, complete: bool) -> None:
    if estimate.peak_bytes <= limit:
        return
    rounds = len(estimate.nodes)
    what = ("the game tree of this deal" if complete else
            f"already the first {rounds} round(s) of this deal's game tree")
    raise MemoryLimitError(
        f"{what}: {estimate.total_nodes:,} nodes, about "
        f"{format_bytes(estimate.peak_bytes)}, more than the {format_bytes(limit)} allowed; "
        "use --mode dag (merged states) or raise --max-memory")


def inherited_score_sets(deal: Sequence[int], device: torch.device | str = "cpu"
                         ) -> list[set[tuple[int, int, int]]]:
    """For each round start 0..5, the set of inherited (Alex clubs, Bob clubs, Win) states.

    The paper's ``t_scr`` rows (its ``scores.csv``), without our extra last-capturer column.
    """
    return estimate_tree_size(deal, device=device).inherited


# --------------------------------------------------------------------------- estimate

@dataclass
class TreeEstimate:
    """Size of a deal's full game tree, computed before building it.

    Attributes:
        card_nodes: per round 0..5, card-state nodes per level 0..8 (paper: ``t_gme`` rows).
        nodes: per round, full-tree nodes per level 0..8 (paper: ``t_fgm`` rows).
        score_states: per round, number of distinct inherited scores at its start.
        root_pairs: per round, number of round roots (distinct (pool, score) pairs).
        graph_bytes: bytes of the six RoundGraphs (edges, node_state, round-end tensors).
        peak_bytes: ``graph_bytes`` plus the largest transient while one level is built.
        inherited: per round, the set of (Alex clubs, Bob clubs, Win) at its start (the
            paper's ``t_scr`` rows, its scores.csv).
    """

    card_nodes: list[list[int]]
    nodes: list[list[int]]
    score_states: list[int]
    root_pairs: list[int]
    graph_bytes: int
    peak_bytes: int
    inherited: list[set[tuple[int, int, int]]] = field(default_factory=list)

    @property
    def total_nodes(self) -> int:
        return int(sum(sum(r) for r in self.nodes))

    @property
    def nodes_per_round(self) -> list[int]:
        return [int(sum(r)) for r in self.nodes]

    def as_dict(self) -> dict[str, object]:
        return {"card_nodes": self.card_nodes, "nodes": self.nodes,
                "nodes_per_round": self.nodes_per_round, "total_nodes": self.total_nodes,
                "score_states": self.score_states, "root_pairs": self.root_pairs,
                "graph_bytes": self.graph_bytes, "peak_bytes": self.peak_bytes}


def _full_level_sizes(card_round: CardRound, roots: _RoundRoots) -> list[int]:
    counts = roots.scores_per_root
    return [int((descendants * counts).sum()) for descendants in card_round.root_counts]


def _estimate(rounds: list[tuple[CardRound, _RoundRoots, _RoundLink | None]]) -> TreeEstimate:
    card_nodes, nodes, score_states, root_pairs = [], [], [], []
    graph_bytes, transient = 0, 0
    for card_round, roots, _ in rounds:
        sizes = _full_level_sizes(card_round, roots)
        card_nodes.append(card_round.level_sizes)
        nodes.append(sizes)
        score_states.append(int(roots.scores.shape[0]))
        root_pairs.append(int(roots.pair_card.numel()))
        edges = sum(sizes[1:])
        m = card_round.in_play.numel()
        card_nodes_round = sum(card_round.level_sizes)
        # node_state keeps each level's card states (3 bytes per in-play card).
        graph_bytes += (EDGE_BYTES * edges + NODE_BYTES * sum(sizes) + END_NODE_BYTES * sizes[-1]
                        + 3 * m * card_nodes_round + 8 * card_round.level_sizes[-1])
        # While a round is unfolded: its card layers' other tensors + one level's temporaries.
        transient = max(transient, CARD_NODE_WORK_BYTES * card_nodes_round
                        + TRANSIENT_EDGE_BYTES * max(sizes))
    inherited = [{(int(r[0]), int(r[1]), int(r[2])) for r in roots.scores.tolist()}
                 for _, roots, _ in rounds]
    return TreeEstimate(card_nodes=card_nodes, nodes=nodes, score_states=score_states,
                        root_pairs=root_pairs, graph_bytes=int(graph_bytes),
                        peak_bytes=int(graph_bytes + transient), inherited=inherited)


def estimate_tree_size(deal: Sequence[int], device: torch.device | str = "cpu") -> TreeEstimate:
    """Nodes per round and level and the bytes :func:`build_tree_rounds` would need.

    Builds only the card-state layers (small) and the inherited-score tables, then counts the
    full tree as, per level, the sum over round roots of (descendant card states x inherited
    scores of the root). Raises :class:`~tensorcfr.errors.InvalidDealError` on a bad deal.
    """
    deal = validate_deal(deal)
    return _estimate(_card_rounds(deal, torch.device(device)))


# --------------------------------------------------------------------------- full tree

def _bonus(score_rows: torch.Tensor, before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    """Clubs bonus (Alex minus Bob, points) when a player's clubs cross 7 between two tallies."""
    tracked = score_rows[:, SCORE_WIN] == 0
    alex0 = score_rows[:, SCORE_ALEX_CLUBS].to(torch.int16)
    bob0 = score_rows[:, SCORE_BOB_CLUBS].to(torch.int16)
    alex_cross = tracked & (alex0 + before[:, 0] < CLUBS_FOR_BONUS) & (
        alex0 + after[:, 0] >= CLUBS_FOR_BONUS)
    bob_cross = tracked & (bob0 + before[:, 1] < CLUBS_FOR_BONUS) & (
        bob0 + after[:, 1] >= CLUBS_FOR_BONUS)
    return (alex_cross.to(torch.int16) - bob_cross.to(torch.int16)) * CLUBS_BONUS


def _terminal_rewards(card_round: CardRound, scores: torch.Tensor, end_card: torch.Tensor,
                      end_score: torch.Tensor) -> torch.Tensor:
    """End-of-game cleanup per round-end node of the last round: the pool goes to the last
    player who captured anything in the game, with the clubs bonus if it takes them to 7.

    Pool points and clubs are computed once per card state, then gathered per full node.
    """
    in_play = card_round.in_play
    pool = (card_round.states[-1][:, 0, :] == POOL).to(torch.int16)           # [M_8, m]
    points = torch.tensor([CARD_POINTS[c] for c in in_play.tolist()], dtype=torch.int16,
                          device=in_play.device)
    pool_points = (pool * points).sum(dim=1, dtype=torch.int16)[end_card]
    pool_clubs = (pool * (in_play % 4 == 0).to(torch.int16)).sum(dim=1,
                                                                 dtype=torch.int16)[end_card]
    tally = card_round.tallies[-1][end_card].to(torch.int16)
    score_rows = scores[end_score]
    last = torch.where(tally[:, RUS_LAST] > 0, tally[:, RUS_LAST],
                       score_rows[:, SCORE_LAST].to(torch.int16))
    alex_gets = (last == 1).to(torch.int16)
    bob_gets = (last == 2).to(torch.int16)
    after = tally[:, :2] + torch.stack([alex_gets * pool_clubs, bob_gets * pool_clubs], dim=1)
    reward = (alex_gets - bob_gets) * pool_points + _bonus(score_rows, tally[:, :2], after)
    return reward.to(torch.float64)


def _full_level(card_round: CardRound, roots: _RoundRoots, level: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Card node and score id of every full-tree node of ``level`` (paper: ``t_fgm``).

    Order (root pair, action path): ``t_fgm[:,0] = arange(M_l) (x)_{d_l} c_scr`` (RepeatBlocks
    of the level's card nodes, blocks = each card root's ``d_l`` descendants, repeated once per
    inherited score of the root) and ``t_fgm[:,1]`` = each root pair's score repeated ``d_l``.
    """
    device = card_round.in_play.device
    scores_per_root = roots.scores_per_root                                 # c_scr
    descendants = card_round.root_counts[level]
    card = repeat_blocks(torch.arange(card_round.states[level].shape[0], device=device),
                         descendants, scores_per_root)
    score = torch.repeat_interleave(roots.pair_score, descendants[roots.pair_card])
    return card, score


def _round_graph(card_round: CardRound, roots: _RoundRoots, link: _RoundLink | None,
                 device: torch.device) -> RoundGraph:
    """Phase 2: unfold one round's card tree with its inherited scores (paper t_fgm, t_edg)."""
    edge_parent, edge_child, edge_reward, edge_card, edge_captured = [], [], [], [], []
    node_card: list[torch.Tensor] = []
    node_score: list[torch.Tensor] = []
    card, score = _full_level(card_round, roots, 0)
    for level in range(PLIES_PER_ROUND):
        node_card.append(card.to(torch.int32))
        node_score.append(score.to(torch.int32))
        # Paper t_edg: the parent of every node of the next layer of the full tree. A node's
        # children are contiguous (its actions in order), so parents come out sorted.
        branch = card_round.branch[level][card]
        edge_parent.append(torch.repeat_interleave(torch.arange(card.numel(), device=device),
                                                   branch))
        del branch, card, score
        card, score = _full_level(card_round, roots, level + 1)
        edge_child.append(torch.arange(card.numel(), device=device))
        reward = card_round.action_points[level][card].to(torch.float64)
        # Clubs bonus: only on edges whose action took clubs, for the player reaching 7.
        card_parent = torch.repeat_interleave(
            torch.arange(card_round.states[level].shape[0], device=device),
            card_round.branch[level])                                     # [M_{l+1}]
        before_card = card_round.tallies[level][card_parent, :2].to(torch.int16)
        after_card = card_round.tallies[level + 1][:, :2].to(torch.int16)
        took_clubs = (after_card != before_card).any(dim=1)
        selected = torch.nonzero(took_clubs[card]).flatten()
        if selected.numel():
            selected_card = card[selected]
            reward[selected] += _bonus(roots.scores[score[selected]], before_card[selected_card],
                                       after_card[selected_card]).to(torch.float64)
        edge_reward.append(reward)
        edge_card.append(card_round.action_card[level][card])
        edge_captured.append(card_round.action_captured[level][card])
    node_card.append(card.to(torch.int32))
    node_score.append(score.to(torch.int32))
    if link is None:
        next_root = torch.full((card.numel(),), -1, dtype=torch.int64, device=device)
        terminal = _terminal_rewards(card_round, roots.scores, card, score)
    else:
        # Paper t_lnk: round-end node (card j, k-th score of its root) -> next-round root.
        scores_per_root = roots.scores_per_root
        root_of_end = card_round.roots[-1][card]
        descendants = card_round.root_counts[-1]
        block = scores_per_root * descendants
        block_start = torch.cumsum(block, 0) - block
        copy = (torch.arange(card.numel(), device=device) - block_start[root_of_end]
                ) // descendants[root_of_end]
        next_root = link.pair_next[link.group_offset[link.end_group[card]] + copy]
        terminal = torch.zeros(card.numel(), dtype=torch.float64, device=device)
    round_tensor = torch.tensor(card_round.round_index, device=device)
    scores = roots.scores.clone()  # roots may be cached: hand out a copy
    node_state = []
    for level in range(PLIES_PER_ROUND + 1):
        node_state.append({
            "card_node": node_card[level],
            "score_index": node_score[level],
            "card_state": card_round.states[level],
            "in_play": card_round.in_play,
            "dealt_before": card_round.dealt_before,
            "scores": scores,
            "round": round_tensor,
            "level": torch.tensor(level, device=device),
        })
    return RoundGraph(
        round_index=card_round.round_index,
        num_nodes=[int(c.numel()) for c in node_card],
        edge_parent=edge_parent, edge_child=edge_child, edge_reward=edge_reward,
        edge_card=edge_card, edge_captured=edge_captured, next_root=next_root,
        terminal_reward=terminal, node_state=node_state)


def _memory_limit(max_memory: int | str | None, device: torch.device) -> int:
    """Bytes allowed: ``max_memory`` (int or size string) or what the device has free."""
    if max_memory is None and device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    limit = max_memory if isinstance(max_memory, int) else parse_memory(max_memory)
    if limit <= 0:
        raise TensorCFRError(f"max_memory must be positive, got {max_memory!r}")
    return limit


def build_tree_rounds(deal: Sequence[int], device: torch.device | str = "cpu",
                      max_memory: int | str | None = None, *,
                      progress: Callable[[int, int], None] | None = None) -> list[RoundGraph]:
    """The paper's full game tree of a deal, as six :class:`RoundGraph` (``--mode tree``).

    Args:
        deal: 52 card indices (pool first), validated.
        device: torch device of every tensor (``"cpu"``, ``"cuda"``, ...).
        max_memory: bytes (int) or a size like ``"8G"``; ``None``: the machine's available
            memory (a CUDA device's free memory). Checked against the size estimate (see
            :func:`estimate_tree_size`) before the big tensors exist.
        progress: optional ``progress(done, total)`` callback for a progress bar: called with
            ``(0, 7)`` once the size is checked, then ``(r + 1, 7)`` after each round is
            unfolded and ``(7, 7)`` at the end.

    Returns:
        Six RoundGraphs; level ``l`` node ``q`` of round ``r`` has
        ``node_state[l]["card_node"][q]`` (row of the level's card states / codes) and
        ``node_state[l]["score_index"][q]`` (row of ``node_state[l]["scores"]``: Alex clubs,
        Bob clubs, Win, last capturer). Rewards in points, Alex minus Bob.

    Raises:
        InvalidDealError: a bad deal.
        MemoryLimitError: the estimated size exceeds ``max_memory`` (suggests ``--mode dag``).
    """
    deal = validate_deal(deal)
    device = torch.device(device)
    limit = _memory_limit(max_memory, device)
    rounds = _card_rounds(deal, device, limit=limit)  # raises MemoryLimitError early
    total_steps = NUM_ROUNDS + 1
    if progress is not None:
        progress(0, total_steps)
    graphs = []
    for round_index, (_, roots, link) in enumerate(rounds):
        # Phase 2: rebuild this round's card layers (all levels kept), unfold with the scores.
        card_round = build_card_round(deal, round_index, roots.pools, device=device)
        graphs.append(_round_graph(card_round, roots, link, device))
        del card_round
        if progress is not None:
            progress(round_index + 1, total_steps)
    if progress is not None:
        progress(total_steps, total_steps)
    return graphs


def round_start_states(deal: Sequence[int], device: torch.device | str = "cpu"
                       ) -> list[set[tuple[tuple[int, ...], tuple[int, int, int, int]]]]:
    """For each round 0..5, the roots of the full tree: ``(pool, score)`` with ``pool`` the
    sorted card indices and ``score`` = (Alex clubs, Bob clubs, Win, last capturer) (0 none,
    1 Alex, 2 Bob). Readable form of what :func:`build_tree_rounds` merges at round starts."""
    deal = validate_deal(deal)
    out = []
    for _, roots, _ in _card_rounds(deal, torch.device(device)):
        pools = [tuple(torch.nonzero(p).flatten().tolist()) for p in roots.pools.cpu()]
        scores = [tuple(int(v) for v in row) for row in roots.scores.cpu().tolist()]
        out.append({(pools[c], scores[s]) for c, s in zip(roots.pair_card.tolist(),
                                                          roots.pair_score.tolist())})
    return out


def build_tree_round(deal: Sequence[int], round_index: int, device: torch.device | str = "cpu",
                     max_memory: int | str | None = None) -> RoundGraph:
    """Only round ``round_index`` (0..5) of :func:`build_tree_rounds`, identical to the
    corresponding element of its result (the card layers of every round are built, which is
    cheap; only this round's full tree is unfolded). Raises like :func:`build_tree_rounds`,
    with the memory check on this round alone."""
    deal = validate_deal(deal)
    if not 0 <= round_index < NUM_ROUNDS:
        raise TensorCFRError(f"round_index must be 0..5, got {round_index}")
    device = torch.device(device)
    limit = _memory_limit(max_memory, device)
    rounds = _card_rounds(deal, device)
    _check_limit(_estimate(rounds[round_index:round_index + 1]), limit, complete=True)
    _, roots, link = rounds[round_index]
    card_round = build_card_round(deal, round_index, roots.pools, device=device)
    return _round_graph(card_round, roots, link, device)
