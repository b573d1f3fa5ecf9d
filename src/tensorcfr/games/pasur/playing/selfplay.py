"""Batched self-play of one Pasur deal: N games advanced together as tensors.

Every running game is one packed merged-state key (:func:`exact.state_key`, an int64). At each
of the 48 plies the distinct keys of all games are expanded at once with the exact solver's
level expansion (legal plays, rewards, child keys as tensors), each game's legal plays are
gathered into one flat "decision batch", the player to move gives a probability per play
(:meth:`players.Player.edge_probs`), and one play per game is sampled with a seeded torch
generator. Scores are the edge rewards (points, Alex minus Bob) summed along the game plus
the end-of-game cleanup, exactly as in the exact solver, so no Python code runs per game.

The paper's 58-column infoset row of each candidate play (the row of the node it leads to,
:mod:`features`) is tracked incrementally per game (its card codes change with every play),
so a policy model sees an ``[E, 58]`` batch per ply, as in the paper's parallel self-play.

Everything runs on the ``device`` given (CPU by default); sampling uses a
``torch.Generator`` seeded with ``sample_seed``, so a run is reproducible on one device.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch
from torch import Tensor

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import NUM_CARDS, is_club
from tensorcfr.games.pasur.solving.exact_keys import CLUBS_MASK, NUM_LEVELS, POOL_SHIFT, state_key
from tensorcfr.games.pasur.solving.exact_levels import (
    BatchTables,
    MemoryGuard,
    expand_level,
    terminal_rewards,
)
from tensorcfr.games.pasur.solving.features import (
    COL_ALEX_CLUBS,
    COL_PLAYER,
    COL_ROUND,
    COL_TURN,
    COL_WIN,
    COLLECTED,
    HELD_BY_ALEX,
    HELD_BY_BOB,
    IN_POOL_SINCE_START,
    NUM_FEATURES,
    reference_features,
)
from tensorcfr.utils.resources import available_memory_bytes




class BatchPolicy(Protocol):
    """What :func:`play_games` asks of a player: a ``name`` and the probabilities of the
    plays of a batch of positions (float [E], summing to 1 per position). Every player of
    :mod:`.players` is one."""

    name: str

    def edge_probs(self, batch: "DecisionBatch") -> Tensor: ...


__all__ = [
    "BatchPolicy",
    "DecisionBatch",
    "SelfPlayResult",
    "decisions_from_states",
    "matchup_summary",
    "play_games",
]

def _card_bits(device: torch.device) -> Tensor:
    return torch.tensor([1 << c for c in range(NUM_CARDS)], dtype=torch.int64, device=device)


def _mask_to_bool(masks: Tensor) -> Tensor:
    """int64 card masks [K] -> bool [K, 52]."""
    return (masks.unsqueeze(1) & _card_bits(masks.device).unsqueeze(0)) != 0


@dataclass
class DecisionBatch:
    """The legal plays of a batch of positions at the same play (all with the same mover).

    Edges of one position are contiguous and in the order of :func:`rules.legal_actions`
    (card, then captured set). All tensors are on one device.

    Attributes:
        deal: the deal.
        level: the play index 0..47 of every position (Alex moves when it is even).
        num_positions: number of positions (games) in the batch.
        edge_position: LongTensor [E]: the position each play belongs to (ascending).
        edge_rank: LongTensor [E]: index of the play among its position's legal plays.
        edge_card: LongTensor [E]: the card played (0..51).
        edge_captured: int64 Tensor [E]: bit mask of the captured cards (0 = laid).
        edge_reward: LongTensor [E]: points the play scores, Alex minus Bob.
        parent_key: int64 Tensor [E]: packed merged-state key of the position.
        child_key: int64 Tensor [E]: packed key after the play (at play ``level + 1``).
        num_edges: LongTensor [num_positions]: legal plays per position.
    """

    deal: tuple[int, ...]
    level: int
    num_positions: int
    edge_position: Tensor
    edge_rank: Tensor
    edge_card: Tensor
    edge_captured: Tensor
    edge_reward: Tensor
    parent_key: Tensor
    child_key: Tensor
    num_edges: Tensor
    _features: Callable[[], Tensor] | None = field(default=None, repr=False)
    _feature_cache: Tensor | None = field(default=None, repr=False)

    @property
    def mover(self) -> int:
        """0 = Alex, 1 = Bob."""
        return self.level % 2

    @property
    def device(self) -> torch.device:
        return self.edge_card.device

    def child_features(self) -> Tensor:
        """int8 Tensor [E, 58]: the paper's infoset row of the node each play leads to."""
        if self._feature_cache is None:
            if self._features is None:
                raise TensorCFRError("this decision batch carries no feature rows")
            self._feature_cache = self._features()
        return self._feature_cache

    def segment_sum(self, values: Tensor) -> Tensor:
        """Sum of per-edge ``values`` [E] over each position -> [num_positions]."""
        out = torch.zeros(self.num_positions, dtype=values.dtype, device=values.device)
        return out.index_add_(0, self.edge_position, values)

    def normalize(self, weights: Tensor) -> Tensor:
        """Per-position normalization of non-negative edge weights [E] (float64); a position
        whose weights are all zero (or not finite) gets the uniform distribution."""
        weights = weights.to(torch.float64).clamp(min=0)
        weights = torch.where(torch.isfinite(weights), weights, torch.zeros_like(weights))
        total = self.segment_sum(weights).index_select(0, self.edge_position)
        uniform = 1.0 / self.num_edges.to(torch.float64).index_select(0, self.edge_position)
        return torch.where(total > 0, weights / torch.where(total > 0, total, 1.0), uniform)


def _popcount(x: Tensor) -> Tensor:
    """Number of set bits of each non-negative int64 (< 2**62), elementwise (SWAR)."""
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x = x + (x >> 8)
    x = x + (x >> 16)
    x = x + (x >> 32)
    return x & 0x7F


def _to_device(array: np.ndarray, device: torch.device) -> Tensor:
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def _expand(deal: tuple[int, ...], level: int, keys: Tensor, tables: BatchTables,
            guard: MemoryGuard) -> tuple[DecisionBatch, Tensor]:
    """Legal plays of positions ``keys`` [N] (packed keys at play ``level``) as a batch
    (without features); also returns, per position, the index of its first edge."""
    device = keys.device
    n = keys.numel()
    unique, inverse = torch.unique(keys, sorted=True, return_inverse=True)
    expanded, next_keys_np = expand_level(level, unique.cpu().numpy(), tables, guard)
    assert expanded.edge_start is not None and expanded.edge_play is not None
    assert expanded.play_card is not None and expanded.play_captured is not None
    assert expanded.edge_reward is not None and expanded.edge_child is not None
    counts = _to_device(np.diff(expanded.edge_start), device)
    starts = _to_device(expanded.edge_start[:-1], device)
    next_keys = _to_device(next_keys_np, device)
    per_pos = counts.index_select(0, inverse)
    pos_first = torch.cumsum(per_pos, 0) - per_pos
    total = int(per_pos.sum())
    edge_position = torch.repeat_interleave(torch.arange(n, device=device), per_pos)
    rank = torch.arange(total, device=device) - pos_first.index_select(0, edge_position)
    src = starts.index_select(0, inverse).index_select(0, edge_position) + rank
    batch = DecisionBatch(
        deal=deal, level=level, num_positions=n, edge_position=edge_position, edge_rank=rank,
        edge_card=_to_device(expanded.play_card[expanded.edge_play], device).long()
        .index_select(0, src),
        edge_captured=_to_device(expanded.play_captured[expanded.edge_play], device)
        .index_select(0, src),
        edge_reward=_to_device(expanded.edge_reward, device).long().index_select(0, src),
        parent_key=keys.index_select(0, edge_position),
        child_key=next_keys.index_select(
            0, _to_device(expanded.edge_child, device).long().index_select(0, src)),
        num_edges=per_pos)
    return batch, pos_first


def _new_tables(deal: tuple[int, ...], device: torch.device) -> tuple[BatchTables, MemoryGuard]:
    """The solver's per-deal tables (it expands levels on the CPU, in numpy) and a memory
    guard against the memory available now."""
    return BatchTables([rules.initial_state(deal)]), MemoryGuard(available_memory_bytes())


def decisions_from_states(states: Sequence[rules.GameState], *, with_features: bool = False,
                          device: str | torch.device = "cpu"
                          ) -> list[tuple[list[int], DecisionBatch]]:
    """Decision batches for arbitrary (non-terminal) positions of one deal.

    Positions are grouped by play index; returns ``(indices into states, batch)`` per group.
    With ``with_features`` the batch's feature rows come from the readable
    :func:`features.reference_features` of each child position (slow, exact).
    """
    if not states:
        return []
    dev = torch.device(device)
    deal = tuple(states[0].deal)
    for s in states:
        if tuple(s.deal) != deal:
            raise TensorCFRError("all positions of one call must be of the same deal")
        if s.is_terminal:
            raise TensorCFRError("a finished game has no plays to choose from")
    tables, guard = _new_tables(deal, dev)
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(states):
        groups.setdefault(s.play_index, []).append(i)
    out = []
    for level, idx in sorted(groups.items()):
        keys = torch.tensor([state_key(states[i]) for i in idx], dtype=torch.int64, device=dev)
        batch, _ = _expand(deal, level, keys, tables, guard)
        if with_features:
            group_states = [states[i] for i in idx]

            def rows(b: DecisionBatch = batch, gs: list[rules.GameState] = group_states
                     ) -> Tensor:
                out_rows = []
                for pos, card, mask in zip(b.edge_position.tolist(), b.edge_card.tolist(),
                                           b.edge_captured.tolist()):
                    captured = tuple(c for c in range(NUM_CARDS) if (mask >> c) & 1)
                    child = rules.apply_action(gs[pos], rules.Action(card, captured))
                    out_rows.append(reference_features(child))
                return torch.tensor(out_rows, dtype=torch.int8, device=b.device).reshape(
                    -1, NUM_FEATURES)

            batch._features = rows
        out.append((idx, batch))
    return out


# --------------------------------------------------------------------------- features


class _FeatureTracker:
    """Per-game card codes (paper Table 11) and inherited clubs, updated play by play."""

    def __init__(self, deal: tuple[int, ...], num_games: int, device: torch.device) -> None:
        self.deal = deal
        self.device = device
        self.codes = torch.zeros((num_games, NUM_CARDS), dtype=torch.int16, device=device)
        self.clubs = torch.zeros((num_games, 2), dtype=torch.int64, device=device)
        self.inherited = torch.zeros((num_games, 3), dtype=torch.int16, device=device)
        self.is_club = torch.tensor([is_club(c) for c in range(NUM_CARDS)], device=device)

    def start_round(self, round_index: int, keys: Tensor) -> None:
        """Codes at a round's start: pool 110, Alex's hand 100, Bob's 105, earlier -127."""
        dev = self.device
        pool = _mask_to_bool(keys >> POOL_SHIFT)
        alex, bob = rules.round_hands(self.deal, round_index)
        hand_a = torch.zeros(NUM_CARDS, dtype=torch.bool, device=dev)
        hand_a[list(alex)] = True
        hand_b = torch.zeros(NUM_CARDS, dtype=torch.bool, device=dev)
        hand_b[list(bob)] = True
        dealt = torch.zeros(NUM_CARDS, dtype=torch.bool, device=dev)
        dealt[list(self.deal[:4 + 8 * round_index])] = True
        zero = torch.zeros((), dtype=torch.int16, device=dev)
        codes = torch.where(dealt, torch.full((), COLLECTED, dtype=torch.int16, device=dev), zero)
        codes = torch.where(hand_b, torch.full((), HELD_BY_BOB, dtype=torch.int16, device=dev),
                            codes)
        codes = torch.where(hand_a, torch.full((), HELD_BY_ALEX, dtype=torch.int16, device=dev),
                            codes)
        self.codes = torch.where(pool, torch.full((), IN_POOL_SINCE_START, dtype=torch.int16,
                                                  device=dev), codes.expand_as(pool))
        a, b = self.clubs[:, 0], self.clubs[:, 1]
        alex_done = a >= rules.CLUBS_FOR_BONUS
        bob_done = b >= rules.CLUBS_FOR_BONUS
        done = alex_done | bob_done
        self.inherited = torch.stack([
            torch.where(done, 0, a), torch.where(done, 0, b),
            torch.where(alex_done, 1, torch.where(bob_done, 2, 0))], dim=1).to(torch.int16)

    @staticmethod
    def _apply(codes: Tensor, level: int, card: Tensor, captured: Tensor) -> Tensor:
        """Codes after each play (rows of ``codes`` [K, 52] aligned with card/captured [K])."""
        ply = level % rules.PLAYS_PER_ROUND
        sign = 1 if ply % 2 == 0 else -1
        t1 = ply // 2 + 1
        codes = codes.clone()
        taken = _mask_to_bool(captured)
        is_capture = captured != 0
        was_pool = codes == IN_POOL_SINCE_START
        codes = torch.where(taken & was_pool, torch.full_like(codes, sign * 10 * t1),
                            torch.where(taken, codes + sign * 10 * t1, codes))
        rows = torch.arange(codes.shape[0], device=codes.device)
        played = torch.where(is_capture, IN_POOL_SINCE_START + sign * t1, sign * t1)
        codes[rows, card] = played.to(codes.dtype)
        return codes

    def child_rows(self, batch: DecisionBatch) -> Tensor:
        """int8 [E, 58] rows of the nodes the batch's plays lead to."""
        pos = batch.edge_position
        codes = self._apply(self.codes.index_select(0, pos), batch.level, batch.edge_card,
                            batch.edge_captured)
        ply = batch.level % rules.PLAYS_PER_ROUND
        rows = torch.empty((pos.numel(), NUM_FEATURES), dtype=torch.int8, device=self.device)
        rows[:, :NUM_CARDS] = codes.to(torch.int8)
        rows[:, COL_ALEX_CLUBS:COL_WIN + 1] = self.inherited.index_select(0, pos).to(torch.int8)
        rows[:, COL_ROUND] = batch.level // rules.PLAYS_PER_ROUND
        rows[:, COL_TURN] = ply // 2
        rows[:, COL_PLAYER] = ply % 2
        return rows

    def play(self, level: int, card: Tensor, captured: Tensor) -> None:
        """Apply each game's chosen play (card [N], captured mask [N])."""
        self.codes = self._apply(self.codes, level, card, captured)
        clubs = _popcount(captured & CLUBS_MASK) + torch.where(
            captured != 0, self.is_club.index_select(0, card).long(), 0)
        self.clubs[:, level % 2] += clubs


# --------------------------------------------------------------------------- self-play


@dataclass
class SelfPlayResult:
    """The games of one matchup.

    Attributes:
        deal: the deal.
        diffs: LongTensor [N]: each game's final points, Alex minus Bob.
        cards: LongTensor [48, N] the card of every play (only when records were asked).
        captured: int64 Tensor [48, N]: the captured-card masks (only with records).
        seconds: wall time of the games (s).
        alex, bob: the players' names.
    """

    deal: tuple[int, ...]
    diffs: Tensor
    seconds: float
    alex: str
    bob: str
    cards: Tensor | None = None
    captured: Tensor | None = None

    @property
    def num_games(self) -> int:
        return int(self.diffs.numel())

    def summary(self) -> dict[str, Any]:
        """Mean, min, max and 95% CI of the differences, win/tie/loss rates, fair value."""
        return matchup_summary(self.diffs)

    def record(self, game: int) -> dict[str, Any]:
        """Game ``game`` in the project's game-record JSON format."""
        if self.cards is None or self.captured is None:
            raise TensorCFRError("these games were played without records")
        plays = []
        for card, mask in zip(self.cards[:, game].tolist(), self.captured[:, game].tolist()):
            plays.append({"card": int(card),
                          "captured": [c for c in range(NUM_CARDS) if (mask >> c) & 1]})
        return {"deal": list(self.deal), "plays": plays}


def matchup_summary(diffs: Tensor | Sequence[float]) -> dict[str, Any]:
    """Statistics of final score differences (Alex minus Bob): ``games``, ``mean_diff``,
    ``min_diff``, ``max_diff``, ``std_diff``, ``ci95`` (normal-approximation 95% interval of
    the mean), ``alex_win_rate``, ``tie_rate``, ``bob_win_rate`` and ``fair_value`` =
    P(Alex wins) + P(tie) / 2."""
    d = torch.as_tensor(diffs, dtype=torch.float64).flatten()
    n = int(d.numel())
    if n == 0:
        raise TensorCFRError("no games to summarise")
    mean = float(d.mean())
    std = float(d.std(unbiased=True)) if n > 1 else 0.0
    half = 1.959964 * std / math.sqrt(n)
    win = float((d > 0).double().mean())
    tie = float((d == 0).double().mean())
    return {"games": n, "mean_diff": mean, "min_diff": int(d.min()), "max_diff": int(d.max()),
            "std_diff": std, "ci95": [mean - half, mean + half], "alex_win_rate": win,
            "tie_rate": tie, "bob_win_rate": 1.0 - win - tie, "fair_value": win + tie / 2}


MAX_GAMES = 1_000_000
"""Most games :func:`play_games` plays at once (every game is a row of the batch tensors;
a million games of random players take about 1.5 GB)."""


def play_games(deal: Sequence[int], alex: BatchPolicy, bob: BatchPolicy, num_games: int, *,
               sample_seed: int = 0, device: str | torch.device = "cpu",
               records: bool = False, progress: Callable[[int], None] | None = None
               ) -> SelfPlayResult:
    """Play ``num_games`` games of ``deal`` between ``alex`` and ``bob``, all at once.

    Args:
        deal: 52 card indices (validated).
        alex, bob: players (:mod:`players`); each must implement ``edge_probs(batch)``.
        num_games: N >= 1.
        sample_seed: seed of the sampling generator (same seed and device, same games).
        device: torch device of every tensor.
        records: keep every play (``cards``/``captured`` [48, N]) for game records.
        progress: optional ``progress(plays_done)`` after each of the 48 plies.

    Returns:
        :class:`SelfPlayResult` with each game's final points difference (Alex minus Bob).
    """
    if num_games < 1:
        raise TensorCFRError(f"--games must be at least 1, got {num_games}")
    deal = rules.validate_deal(deal)
    dev = torch.device(device)
    t0 = time.perf_counter()
    tables, guard = _new_tables(deal, dev)
    generator = torch.Generator(device=dev)
    generator.manual_seed(int(sample_seed))
    start = rules.initial_state(deal)
    keys = torch.full((num_games,), state_key(start), dtype=torch.int64, device=dev)
    diffs = torch.zeros(num_games, dtype=torch.int64, device=dev)
    need_features = bool(getattr(alex, "needs_features", False)
                         or getattr(bob, "needs_features", False))
    tracker = _FeatureTracker(deal, num_games, dev) if need_features else None
    cards = torch.zeros((NUM_LEVELS, num_games), dtype=torch.int64, device=dev) if records \
        else None
    captured = torch.zeros((NUM_LEVELS, num_games), dtype=torch.int64, device=dev) if records \
        else None
    players = (alex, bob)
    for level in range(NUM_LEVELS):
        if tracker is not None and level % rules.PLAYS_PER_ROUND == 0:
            tracker.start_round(level // rules.PLAYS_PER_ROUND, keys)
        batch, first = _expand(deal, level, keys, tables, guard)
        if tracker is not None:
            batch._features = lambda b=batch, tr=tracker: tr.child_rows(b)
        probs = players[level % 2].edge_probs(batch).to(device=dev, dtype=torch.float64)
        chosen = _sample(batch, probs, first, generator)
        keys = batch.child_key.index_select(0, chosen)
        diffs += batch.edge_reward.index_select(0, chosen)
        card = batch.edge_card.index_select(0, chosen)
        mask = batch.edge_captured.index_select(0, chosen)
        if records:
            cards[level] = card  # type: ignore[index]
            captured[level] = mask  # type: ignore[index]
        if tracker is not None:
            tracker.play(level, card, mask)
        if progress is not None:
            progress(level + 1)
    diffs += _to_device(terminal_rewards(keys.cpu().numpy(), tables), keys.device).long()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return SelfPlayResult(deal=deal, diffs=diffs.cpu(), seconds=time.perf_counter() - t0,
                          alex=getattr(alex, "name", "?"), bob=getattr(bob, "name", "?"),
                          cards=cards.cpu() if cards is not None else None,
                          captured=captured.cpu() if captured is not None else None)


def _sample(batch: DecisionBatch, probs: Tensor, first: Tensor, generator: torch.Generator
            ) -> Tensor:
    """One edge per position, drawn with ``probs`` [E] (normalized per position)."""
    n = batch.num_positions
    u = torch.rand(n, generator=generator, dtype=torch.float64, device=probs.device)
    cum = torch.cumsum(probs, 0)
    before = cum.index_select(0, first) - probs.index_select(0, first)
    within = cum - before.index_select(0, batch.edge_position)
    total = within.index_select(0, first + batch.num_edges - 1)
    threshold = (u * total).index_select(0, batch.edge_position)
    below = within <= threshold
    steps = torch.zeros(n, dtype=torch.int64, device=probs.device).index_add_(
        0, batch.edge_position, below.long())
    steps = torch.minimum(steps, batch.num_edges - 1)
    # never pick a zero-probability edge at the end of a segment because of rounding
    chosen = first + steps
    zero = probs.index_select(0, chosen) <= 0
    if bool(zero.any()):
        best = _segment_argmax(batch, probs, first)
        chosen = torch.where(zero, best, chosen)
    return chosen


def _segment_argmax(batch: DecisionBatch, values: Tensor, first: Tensor) -> Tensor:
    """Index of the first maximum of ``values`` in each position's edges."""
    top = torch.full((batch.num_positions,), -math.inf, dtype=values.dtype,
                     device=values.device).scatter_reduce_(0, batch.edge_position, values,
                                                           reduce="amax")
    is_top = values == top.index_select(0, batch.edge_position)
    idx = torch.arange(values.numel(), device=values.device)
    big = torch.full_like(idx, values.numel())
    return torch.full((batch.num_positions,), values.numel(), dtype=torch.int64,
                      device=values.device).scatter_reduce_(
        0, batch.edge_position, torch.where(is_top, idx, big), reduce="amin")
