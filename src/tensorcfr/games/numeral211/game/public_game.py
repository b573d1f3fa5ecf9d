"""Numeral211 as a :class:`tensorcfr.core.public_tree.PublicTreeGame`.

Per round the boards are the canonical boards of :mod:`.isomorphism` (1 / R / R(2R-1) for 4
suits) and the hands all ``H = C(N, 2)`` private hands (those clashing with the board carry
reach 0).  Chance operators sum over every concrete new card, mapping each concrete board to
its canonical one with the suit permutation of the hands (exact: the solver's iterates are
those of full-game CFR, which stay suit-symmetric).  Values are expected chips per game:
terminals multiply by the probability of the private deal ``1 / (H * C(N-2, 2))`` and each
public card by ``1 / (cards left)``.

Folds use inclusion-exclusion over the folder's opponent hands (total - hands holding either
of our cards + our own hand); showdowns a sort-based sweep per board: the sum of opponent reach
strictly below / above each hand from one cumulative sum over the hands sorted by strength,
minus the same sums restricted to the hands holding each of our two cards.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.public_tree import BoardSample, RoundTemplate
from tensorcfr.games.numeral211.game.betting import RoundBetting, round_betting
from tensorcfr.games.numeral211.game.config import GameConfig, hand_cards
from tensorcfr.games.numeral211.game.evaluator import board_hand_values
from tensorcfr.games.numeral211.game.isomorphism import isomorphism

__all__ = ["Numeral211PublicGame", "prefix_histories", "round_templates"]


def round_templates(config: GameConfig) -> list[tuple[RoundBetting, RoundTemplate]]:
    """Betting of each round and its core template (folds become terminals)."""
    out = []
    for r in range(config.num_rounds):
        betting = round_betting(config, r)
        children = tuple(tuple(("terminal", i) if kind == "fold" else (kind, i)
                               for kind, i in node) for node in betting.children)
        out.append((betting, RoundTemplate(betting.players, children,
                                           len(betting.exit_histories))))
    return out


def _sorted_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``values`` [..., M]: stable argsort, and for each sorted position the first
    position of its tie group and one past the last."""
    order = np.argsort(values, axis=-1, kind="stable")
    s = np.take_along_axis(values, order, axis=-1)
    m = s.shape[-1]
    pos = np.broadcast_to(np.arange(m), s.shape)
    new_group = np.concatenate([np.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]],
                               axis=-1)
    lo = np.maximum.accumulate(np.where(new_group, pos, 0), axis=-1)
    end_group = np.concatenate([s[..., 1:] != s[..., :-1], np.ones(s.shape[:-1] + (1,), bool)],
                               axis=-1)
    hi_rev = np.minimum.accumulate(np.where(end_group, pos + 1, m)[..., ::-1], axis=-1)
    hi = hi_rev[..., ::-1]
    return order, lo, np.ascontiguousarray(hi)


class Numeral211PublicGame:
    """The public-tree description of a Numeral211 variant (see the module docstring)."""

    def __init__(self, config: GameConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> None:
        self.config = config
        self.dtype = dtype
        self.device = torch.device(device)
        self.iso = iso = isomorphism(config)
        pairs = round_templates(config)
        self.betting = [b for b, _ in pairs]
        self.rounds = [t for _, t in pairs]
        self.num_boards = [iso.num_boards(r) for r in range(config.num_rounds)]
        self.num_hands = h = config.num_hands
        n = config.num_cards
        self.prefixes = [1]
        for b in self.betting[:-1]:
            self.prefixes.append(self.prefixes[-1] * len(b.exit_histories))
        kw = {"dtype": dtype, "device": self.device}
        self.valid = [torch.as_tensor(v.copy(), **kw) for v in iso.valid]
        self.deal_factor = 1.0 / (h * math.comb(n - 2, 2))
        # chance transitions into rounds 1..: parent, child, gather index into child flat
        self._parent_of: list[Tensor | None] = [None]
        self._trans: list[tuple[Tensor, Tensor, float] | None] = [None]
        self._edges: list[dict[str, Tensor] | None] = [None]
        for r in range(1, config.num_rounds):
            parent, child, perm = iso.transitions(r)
            parent_of = np.zeros(iso.num_boards(r), dtype=np.int64)
            parent_of[child] = parent
            self._parent_of.append(torch.as_tensor(parent_of, device=self.device))
            gather = torch.as_tensor(child[:, None] * h + perm, device=self.device)
            cards_left = n - 4 - sum(config.public_cards[:r])
            self._trans.append((torch.as_tensor(parent, device=self.device), gather,
                                1.0 / cards_left))
            # sampled passes: the concrete cards (edges) of each canonical child, grouped
            mult = np.bincount(child, minlength=iso.num_boards(r))
            order = np.argsort(child, kind="stable")
            self._edges.append({
                "perm": torch.as_tensor(np.ascontiguousarray(perm[order]), device=self.device),
                "start": torch.as_tensor(np.cumsum(mult) - mult, device=self.device),
                "mult": torch.as_tensor(mult, device=self.device),
                # a concrete new card is uniform over the cards not on the board; the exact
                # chance sum weighs each by 1 / (cards left after both hands): the ratio
                # corrects the sampled sum (clashing hands carry value 0)
                "prob": torch.as_tensor(mult / (n - sum(config.public_cards[:r])),
                                        dtype=torch.float64),
                "ratio": (n - sum(config.public_cards[:r])) / cards_left,
                "parent_of": torch.as_tensor(parent_of)})
        # contributions (chips one player has put in) per prefix at the start of each round
        contrib = [np.full(1, float(config.ante))]
        for r, b in enumerate(self.betting[:-1]):
            exits = np.array(b.exit_bets, dtype=np.float64) * config.bets[r]
            contrib.append((exits[:, None] + contrib[-1][None, :]).reshape(-1))
        self._contrib = contrib
        last = config.num_rounds - 1
        exits = np.array(self.betting[last].exit_bets, dtype=np.float64) * config.bets[last]
        self._showdown_stake = torch.as_tensor(exits[:, None] + contrib[last][None, :], **kw)
        # fold stakes: [k] -> [P_r] tensor: chips the folder loses
        self._fold_stake = []
        for r, b in enumerate(self.betting):
            stakes = [torch.as_tensor(contrib[r] + fb * config.bets[r], **kw)
                      for fb in b.fold_bets]
            self._fold_stake.append(stakes)
        hands = hand_cards(config)
        self._hand_c1 = torch.as_tensor(hands[:, 0].copy(), device=self.device)
        self._hand_c2 = torch.as_tensor(hands[:, 1].copy(), device=self.device)
        incidence = np.zeros((h, n))
        incidence[np.arange(h), hands[:, 0]] = 1
        incidence[np.arange(h), hands[:, 1]] = 1
        self._incidence = torch.as_tensor(incidence, **kw)
        self._incidence_t = self._incidence.t().contiguous()
        self._build_showdown()

    # ------------------------------------------------------------------ showdown tables
    def _build_showdown(self) -> None:
        cfg = self.config
        n, h = cfg.num_cards, self.num_hands
        boards = self.iso.boards[cfg.num_rounds - 1]
        values = board_hand_values(cfg, boards)  # [B, H], -1 clash
        order, lo, hi = _sorted_groups(values)
        inverse = np.argsort(order, axis=-1)
        hands = hand_cards(cfg)
        # hands holding each card: [N, N-1]
        holding = np.stack([np.flatnonzero((hands == c).any(1)) for c in range(n)])
        card_values = values[:, holding]  # [B, N, N-1]
        c_order, c_lo, c_hi = _sorted_groups(card_values)
        c_hands = np.take_along_axis(np.broadcast_to(holding, card_values.shape), c_order, -1)
        # position of hand h in card c's sorted list, for its two cards
        pos = np.zeros((len(boards), n, h), dtype=np.int64)
        b_idx = np.arange(len(boards))[:, None, None]
        c_idx = np.arange(n)[None, :, None]
        pos[b_idx, c_idx, c_hands] = np.arange(n - 1)[None, None, :]
        m = n - 1
        p1 = pos[:, hands[:, 0], np.arange(h)] + hands[:, 0][None, :] * m
        p2 = pos[:, hands[:, 1], np.arange(h)] + hands[:, 1][None, :] * m
        dev = self.device
        t = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=dev)  # noqa: E731
        self._sd = {"order": t(order), "lo": t(lo), "hi": t(hi), "inverse": t(inverse),
                    "c_hands": t(c_hands.reshape(len(boards), -1)), "c_lo": t(c_lo),
                    "c_hi": t(c_hi), "p1": t(p1), "p2": t(p2)}
        # Flat indices for the fused sweep (:meth:`_win_minus_lose`).  The cumulative sums
        # live in one buffer per row: [B, H+1] of the main lists, then [B, N, M+1] of the
        # per-card lists; W[h] = cs[lo] + cs[hi] - cs[end]  (weaker - stronger, ties out)
        # minus the same three terms in the lists of each of the hand's two cards.
        nb = len(boards)
        b_ar = np.arange(nb)[:, None]
        main_base = b_ar * (h + 1)
        lo_h = np.take_along_axis(lo, inverse, -1) + main_base
        hi_h = np.take_along_axis(hi, inverse, -1) + main_base
        end_h = np.broadcast_to(main_base + h, (nb, h))
        card_off = nb * (h + 1)

        def card_terms(cards: np.ndarray) -> tuple[np.ndarray, ...]:
            q = pos[:, cards, np.arange(h)]  # [B, H] position in the card's list
            base = card_off + (b_ar * n + cards[None, :]) * (m + 1)
            c_lo_h = np.take_along_axis(c_lo[:, cards, :], q[:, :, None], -1)[..., 0]
            c_hi_h = np.take_along_axis(c_hi[:, cards, :], q[:, :, None], -1)[..., 0]
            return base + c_lo_h, base + c_hi_h, np.broadcast_to(base + m, (nb, h))

        lo1, hi1, end1 = card_terms(hands[:, 0])
        lo2, hi2, end2 = card_terms(hands[:, 1])
        plus = np.stack([lo_h, hi_h, end1, end2]).reshape(4, -1)
        minus = np.stack([end_h, lo1, hi1, lo2, hi2]).reshape(5, -1)
        self._sweep = {
            "order": t((order + b_ar * h).reshape(-1)),
            "card_hands": t((c_hands + b_ar[:, :, None] * h).reshape(-1)),
            "plus": t(plus.reshape(-1)), "minus": t(minus.reshape(-1)),
        }
        # the same per board, without the board offsets (sampled passes re-base them)
        main_local = lambda a: a - main_base  # noqa: E731
        card_local = lambda a: a - (card_off + b_ar * n * (m + 1))  # noqa: E731
        self._sweep_local = {
            "order": t(order), "card_hands": t(c_hands.reshape(nb, -1)),
            "plus_main": t(np.stack([main_local(lo_h), main_local(hi_h)])),
            "plus_card": t(np.stack([card_local(end1), card_local(end2)])),
            "minus_main": t(main_local(end_h)[None]),
            "minus_card": t(np.stack([card_local(lo1), card_local(hi1), card_local(lo2),
                                      card_local(hi2)])),
        }
        self._tri: dict[tuple, Tensor] = {}

    def _sweep_for(self, boards: Tensor) -> dict[str, Tensor]:
        """Flat sweep indices (as ``self._sweep``) for a batch of last-round boards given by
        id (repeats allowed): the per-board tables re-based at each position."""
        loc = self._sweep_local
        h = self.num_hands
        n = self.config.num_cards
        nb = len(boards)
        pos = torch.arange(nb, device=self.device)
        main = (pos * (h + 1))[:, None]
        card = (nb * (h + 1) + pos * n * n)[:, None]  # N * (M + 1) = N * N per board
        plus = torch.cat([loc["plus_main"][:, boards] + main, loc["plus_card"][:, boards] + card])
        minus = torch.cat([loc["minus_main"][:, boards] + main,
                           loc["minus_card"][:, boards] + card])
        return {"order": (loc["order"][boards] + (pos * h)[:, None]).reshape(-1),
                "card_hands": (loc["card_hands"][boards] + (pos * h)[:, None]).reshape(-1),
                "plus": plus.reshape(-1), "minus": minus.reshape(-1)}

    def _triangle(self, rows: int, cols: int, strict: bool, dtype: torch.dtype) -> Tensor:
        """[rows, cols] matrix with 1 where i < j (strict) or i <= j (cached)."""
        key = (rows, cols, strict, dtype)
        if key not in self._tri:
            i = torch.arange(rows, device=self.device)[:, None]
            j = torch.arange(cols, device=self.device)[None, :]
            self._tri[key] = ((i < j) if strict else (i <= j)).to(dtype)
        return self._tri[key]

    def _padded_cumsum(self, x: Tensor, block: int = 64) -> Tensor:
        """Cumulative sums over the last axis with a leading 0: [..., L] -> [..., L+1].

        Computed as small matrix products (blocks of ``block``, then the block offsets):
        torch's cumsum over a short last axis was measured several times slower."""
        length = x.shape[-1]
        if length <= block:
            return x @ self._triangle(length, length + 1, True, x.dtype)
        nb = -(-length // block)
        xp = torch.nn.functional.pad(x, (0, nb * block - length))
        inc = xp.reshape(x.shape[:-1] + (nb, block)) @ self._triangle(block, block, False,
                                                                      x.dtype)
        offsets = inc[..., -1] @ self._triangle(nb, nb, True, x.dtype)
        inc += offsets.unsqueeze(-1)
        out = inc.reshape(x.shape[:-1] + (nb * block,))[..., :length]
        return torch.nn.functional.pad(out, (1, 0))

    def workspace_bytes(self, element_size: int) -> int:
        """Temporary memory of the showdown sweep and chance operators (bytes)."""
        n = self.config.num_cards
        last = self.config.num_rounds - 1
        cell = self.prefixes[last] * self.num_boards[last]
        sweep = cell * (6 * self.num_hands + 4 * n * n) * element_size
        chance = max(self.prefixes[r] * (len(self._trans[r][0]) + self.num_boards[r])
                     * self.num_hands for r in range(1, self.config.num_rounds)) * element_size
        return int(sweep + 2 * chance)

    # ------------------------------------------------------------------ protocol
    def initial_reach(self) -> Tensor:
        """[1, H] ones: every private hand is possible at the root."""
        return torch.ones((1, self.num_hands), dtype=self.dtype, device=self.device)

    def chance_children(self, r: int) -> tuple[Tensor, Tensor]:
        """(parent board [B_r], P(board | parent) [B_r] float64) of round r's canonical
        boards: the share of the concrete new cards (uniform over those not on the board)
        that map to each (sampled passes)."""
        edges = self._edges[r]
        assert edges is not None
        return edges["parent_of"], edges["prob"]

    def _valid_at(self, r: int, sample: BoardSample | None) -> Tensor:
        return self.valid[r] if sample is None else self.valid[r].index_select(
            0, sample.boards[r])

    def chance_forward(self, r: int, reach: Tensor, sample: BoardSample | None = None
                       ) -> Tensor:
        """Reach [X, B_{r-1}, H] -> [X, B_r, H]: the canonical parent's reach, 0 on clashes
        (with ``sample``: the parent position's reach at each sampled position)."""
        if sample is not None:
            return reach.index_select(1, sample.parents[r]) * self._valid_at(r, sample)
        return reach.index_select(1, self._parent_of[r]) * self.valid[r]

    def _sampled_chance_backward(self, r: int, values: Tensor, sample: BoardSample) -> Tensor:
        """Each position's values averaged over the concrete cards of its canonical board
        (their hand permutations), times its chance weight and the ratio exact chance mass
        / sampling probability (cards not on the board / cards left after both hands),
        summed into its parent."""
        edges = self._edges[r]
        assert edges is not None
        boards = sample.boards[r]
        h = self.num_hands
        mult = edges["mult"].index_select(0, boards)
        pos = torch.arange(len(boards), device=values.device).repeat_interleave(mult)
        first = torch.cumsum(mult, 0) - mult
        within = torch.arange(len(pos), device=values.device) - first.repeat_interleave(mult)
        edge = edges["start"].index_select(0, boards).repeat_interleave(mult) + within
        gather = (pos[:, None] * h + edges["perm"].index_select(0, edge)).reshape(-1)
        scale = sample.chance_weight[r].to(values.dtype) * (edges["ratio"] / mult.to(
            values.dtype))
        x = values.shape[0]
        gathered = values.reshape(x, -1).index_select(1, gather).reshape(x, len(pos), h)
        gathered.mul_(scale.repeat_interleave(mult)[:, None])
        out = torch.zeros((x, len(sample.boards[r - 1]), h), dtype=values.dtype,
                          device=values.device)
        return out.index_add_(1, sample.parents[r].repeat_interleave(mult), gathered)

    def chance_backward(self, r: int, values: Tensor, sample: BoardSample | None = None
                        ) -> Tensor:
        """Values [X, B_r, H] -> [X, B_{r-1}, H]: (1 / cards left) x the sum over every
        concrete new card of the canonical board's values at the permuted hands (with
        ``sample``: the sample's weighted estimate, see :class:`BoardSample`)."""
        if sample is not None:
            return self._sampled_chance_backward(r, values, sample)
        parent, gather, weight = self._trans[r]
        x = values.shape[0]
        flat = values.reshape(x, -1)
        out = torch.zeros((x, self.num_boards[r - 1], self.num_hands), dtype=values.dtype,
                          device=values.device)
        chunk = max(1, int(2**26 // max(1, gather.numel())))
        for start in range(0, x, chunk):
            part = flat[start:start + chunk]
            gathered = part[:, gather.reshape(-1)].reshape(part.shape[0], *gather.shape)
            out[start:start + chunk].index_add_(1, parent, gathered)
        return out.mul_(weight)

    def _compatible_sum(self, opp_reach: Tensor) -> Tensor:
        """For every hand: the opponent reach summed over hands sharing no card with it
        (total - hands holding either of its cards + itself; the per-card sums and their
        pairwise sums are two small matrix products)."""
        per_card = opp_reach @ self._incidence  # [..., N]
        either = per_card @ self._incidence_t  # [..., H]: per_card[c1] + per_card[c2]
        return either.neg_().add_(opp_reach.sum(-1, keepdim=True)).add_(opp_reach)

    def terminal_values(self, r: int, k: int, player: int, opp_reach: Tensor,
                        sample: BoardSample | None = None) -> Tensor:
        """Fold k of round r: +stake (opponent folded) or -stake, times the compatible
        opponent reach and the deal probability; 0 for hands clashing with the board."""
        folder = self.betting[r].fold_player[k]
        stake = self._fold_stake[r][k] * (self.deal_factor if folder != player
                                          else -self.deal_factor)
        return self._compatible_sum(opp_reach).mul_(self._valid_at(r, sample)).mul_(
            stake[:, None, None])

    def _win_minus_lose(self, opp: Tensor, sweep: dict[str, Tensor] | None = None) -> Tensor:
        """[X, B, H]: opponent reach of compatible weaker hands minus stronger ones.

        One sort-order gather and one cumulative sum per board (all hands), one gather and
        cumulative sum per (board, card) over the 39 hands holding the card, then the nine
        looked-up partial sums of every hand (:meth:`_build_showdown`)."""
        sw = self._sweep if sweep is None else sweep
        x, b, h = opp.shape
        n = self.config.num_cards
        m = n - 1
        flat = opp.reshape(x, b * h)
        sorted_reach = flat.index_select(1, sw["order"]).reshape(x, b, h)
        cs = self._padded_cumsum(sorted_reach).reshape(x, -1)  # [X, B*(H+1)]
        del sorted_reach
        card_reach = flat.index_select(1, sw["card_hands"]).reshape(x, b * n, m)
        ccs = self._padded_cumsum(card_reach).reshape(x, -1)  # [X, B*N*(M+1)]
        del card_reach
        buf = torch.cat([cs, ccs], dim=1)
        del cs, ccs
        plus = buf.index_select(1, sw["plus"]).reshape(x, 4, b * h).sum(1)
        minus = buf.index_select(1, sw["minus"]).reshape(x, 5, b * h).sum(1)
        return plus.sub_(minus).reshape(x, b, h)

    def final_values(self, player: int, opp_reach: Tensor, sample: BoardSample | None = None
                     ) -> Tensor:
        """Showdowns [E, P, B, H]: stake x (compatible weaker - stronger opponent reach) x
        the deal probability; 0 for hands clashing with the board."""
        e, p, b, h = opp_reach.shape
        last = self.config.num_rounds - 1
        sweep = None if sample is None else self._sweep_for(sample.boards[last])
        flat = opp_reach.reshape(e * p, b, h)
        out = torch.empty_like(flat)
        chunk = max(1, int(2**25 // max(1, b * (h + self.config.num_cards ** 2))))
        for start in range(0, e * p, chunk):
            out[start:start + chunk] = self._win_minus_lose(flat[start:start + chunk], sweep)
        out = out.reshape(e, p, b, h)
        out.mul_(self._valid_at(last, sample)).mul_((self._showdown_stake * self.deal_factor)[:, :, None, None])
        return out


def prefix_histories(game: Numeral211PublicGame, r: int) -> list[str]:
    """Betting histories (rounds joined by ``/``) of round r's prefixes, in prefix-index
    order (prefix ``q = e * P + q'``: exit ``e`` of round r-1 after prefix ``q'``)."""
    hist = [""]
    for rr in range(r):
        exits = game.betting[rr].exit_histories
        hist = [(h + "/" if rr else "") + e for e in exits for h in hist]
    return hist
