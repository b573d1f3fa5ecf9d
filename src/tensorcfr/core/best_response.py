"""Exact best response, NashConv and exploitability on a generic :class:`LevelTree`.

Everything here is whole-tensor work over the level-by-level tree of
:mod:`tensorcfr.core.tree`; the only Python loops run over depths, players and
"own-action depths" (at most the tree depth), never over nodes or infosets.

Method (sequence form, no per-node recursion)
=============================================
For a best-responding player ``p`` and a fixed joint policy ``pi`` (one probability
per infoset-action *slot*, shape ``[A]``):

1. **Top-down pass.** For every node ``h`` compute

   * ``opponent_reach[h, p]`` - the product of chance probabilities and of every
     *other* player's policy probabilities on the path to ``h`` (the counterfactual
     reach ``pi_{-p}(h)``);
   * ``own_sequence[h, p]`` - the slot of ``p``'s last own infoset-action on the path
     to ``h`` (``-1``: ``p`` has not acted yet), i.e. ``p``'s *sequence* leading to ``h``;
   * ``own_depth[h, p]`` - how many actions ``p`` took on the path.

2. **Terminal payoffs by sequence.** ``sequence_value[sigma] = sum over terminals z whose
   own sequence is sigma of u_p(z) * pi_{-p}(z)`` (one ``index_add_`` per level).

3. **Bottom-up over own depth.** Under perfect recall every node of an infoset ``I`` of
   ``p`` has the same own sequence ``parent(I)`` and own depth ``k(I)``, and every
   infoset ``J`` below an action of ``I`` has ``k(J) > k(I)``. Resolving infosets in
   decreasing ``k``::

       value(I)                = max_a sequence_value[(I, a)]        # one action per infoset
       sequence_value[parent(I)] += value(I)

   gives at the empty sequence the best-response value
   ``max over pure strategies of p of sum_z u_p(z) pi_{-p}(z) pi_p(z)``, which is what
   OpenSpiel's ``BestResponsePolicy.value(root)`` computes by recursion.

Because the grouping is by the player's own action count and not by tree depth, an
infoset whose nodes sit at different depths (histories of different lengths sharing an
information state) is handled exactly; none of the OpenSpiel games tested here has one
(kuhn_poker, leduc_poker, liars_dice and turn-based goofspiel were checked), but the
hand-built trees in ``tests/test_best_response.py`` do. Games without perfect recall
(nodes of one infoset reached by different own sequences) are rejected with a
:class:`~tensorcfr.errors.TensorCFRError`, since a one-action-per-infoset best response
is then no longer computable bottom-up.

All values are in the game's utility units; everything is computed in float64 on the
tree's device (or ``device=`` when given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from tensorcfr.core.tree import KIND_TERMINAL
from tensorcfr.errors import TensorCFRError

if TYPE_CHECKING:  # pragma: no cover - import for type hints only
    from tensorcfr.core.tree import LevelTree

__all__ = [
    "ExploitabilityResult",
    "PolicyError",
    "NotPerfectRecallError",
    "validate_policy",
    "policy_values",
    "best_response_values",
    "best_response_policy",
    "exploitability",
]

POLICY_TOLERANCE = 1e-6
"""How far an infoset's float64 action probabilities may sum away from 1 in
:func:`validate_policy`."""
POLICY_TOLERANCE_LOW_PRECISION = 1e-4
"""The same for float32 / float16 policies (rounding of up to hundreds of actions)."""


class PolicyError(TensorCFRError):
    """A policy vector that does not fit the tree (wrong length, negative, not normalized)."""


class NotPerfectRecallError(TensorCFRError):
    """The nodes of one infoset were reached by different own-action sequences."""


@dataclass(frozen=True)
class ExploitabilityResult:
    """Exact best-response analysis of one joint policy.

    Attributes:
        per_player: ``[num_players]`` float64, the value player ``p`` gets by
            best-responding to the others' fixed policy (game utility units).
        policy_values: ``[num_players]`` float64, each player's expected utility when
            everybody follows the policy.
        nash_conv: ``sum_p (per_player[p] - policy_values[p])`` (>= 0 up to rounding).
        exploitability: ``nash_conv / num_players``; in a two-player constant-sum game
            this equals OpenSpiel's ``exploitability`` ``(sum_p per_player[p] -
            utility_sum) / 2``, because the policy values then sum to the utility sum.
    """

    per_player: Tensor
    policy_values: Tensor
    nash_conv: float
    exploitability: float

    @property
    def improvements(self) -> Tensor:
        """``[num_players]`` float64: what each player gains by deviating to a best response."""
        return self.per_player - self.policy_values

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form (lists and floats) for JSON output."""
        return {
            "best_response_values": [float(v) for v in self.per_player.tolist()],
            "policy_values": [float(v) for v in self.policy_values.tolist()],
            "improvements": [float(v) for v in self.improvements.tolist()],
            "nash_conv": float(self.nash_conv),
            "exploitability": float(self.exploitability),
        }


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def _prepare(tree: LevelTree, policy_slots: Tensor,
             device: torch.device | str | None) -> tuple[LevelTree, Tensor]:
    """Move the tree (float64) and the validated policy (float64) onto one device."""
    target = torch.device(device) if device is not None else tree.infoset_player.device
    tree = tree.to(target, torch.float64)
    policy = validate_policy(tree, policy_slots).to(device=target, dtype=torch.float64)
    return tree, policy


def validate_policy(tree: LevelTree, policy_slots: Tensor | Any,
                    tolerance: float | None = None) -> Tensor:
    """Check that ``policy_slots`` is a behaviour policy of ``tree`` and return it as a tensor.

    Args:
        tree: the game tree.
        policy_slots: ``[A]`` probabilities, one per infoset-action slot (any float dtype,
            anything ``torch.as_tensor`` accepts).
        tolerance: allowed deviation of each infoset's probability sum from 1 (default
            :data:`POLICY_TOLERANCE`, or :data:`POLICY_TOLERANCE_LOW_PRECISION` when
            ``policy_slots`` is a float32/float16 tensor).

    Returns:
        ``policy_slots`` as a float64 tensor on the tree's device (not renormalized).

    Raises:
        PolicyError: wrong shape, non-finite or negative entries, or an infoset whose
            probabilities do not sum to 1 within ``tolerance``.
    """
    device = tree.infoset_player.device
    num_slots = int(tree.action_infoset.shape[0])
    if isinstance(policy_slots, Tensor):
        policy = policy_slots.detach()
    else:  # lists / numpy arrays: read in full precision
        policy = torch.as_tensor(policy_slots, dtype=torch.float64)
    if tolerance is None:
        low_precision = policy.is_floating_point() and torch.finfo(policy.dtype).bits < 64
        tolerance = POLICY_TOLERANCE_LOW_PRECISION if low_precision else POLICY_TOLERANCE
    policy = policy.to(device=device, dtype=torch.float64)
    if policy.dim() != 1 or policy.shape[0] != num_slots:
        raise PolicyError(f"policy has shape {tuple(policy.shape)} but the game has "
                          f"{num_slots} infoset-action slots")
    if not bool(torch.isfinite(policy).all()):
        raise PolicyError("policy holds NaN or infinite probabilities")
    if bool((policy < 0).any()):
        raise PolicyError("policy holds negative probabilities")
    sums = torch.zeros(tree.num_infosets, dtype=torch.float64, device=device)
    sums.index_add_(0, tree.action_infoset.to(device), policy)
    deviation = (sums - 1.0).abs()
    if tree.num_infosets and float(deviation.max()) > tolerance:
        worst = int(deviation.argmax())
        key = tree.infoset_keys[worst] if worst < len(tree.infoset_keys) else str(worst)
        raise PolicyError(f"policy probabilities of infoset {key!r} sum to "
                          f"{float(sums[worst]):.9g}, not 1")
    return policy


@dataclass
class _TopDown:
    """Per-level results of the top-down pass (lists indexed by depth).

    ``opponent_reach[d]`` [N_d, P] float64: chance x other players' policy reach (pi_{-p}).
    ``own_sequence[d]`` [N_d, P] long: slot of player p's last own action (-1: none).
    ``own_depth[d]`` [N_d, P] long: number of own actions of player p on the path.
    ``full_reach[d]`` [N_d] float64: reach probability of the node under the policy.
    """

    opponent_reach: list[Tensor]
    own_sequence: list[Tensor]
    own_depth: list[Tensor]
    full_reach: list[Tensor]


def _top_down(tree: LevelTree, policy: Tensor) -> _TopDown:
    """Propagate reach probabilities and own sequences from the root down (see module doc).

    This is the generic-tree counterpart of the paper's forward pass of reach tensors
    (one reach column per player); the best response built on it goes beyond the paper.
    """
    num_players = int(tree.num_players)
    device = policy.device
    players = torch.arange(num_players, device=device)
    out = _TopDown([], [], [], [])
    prev_kind: Tensor | None = None
    for depth, level in enumerate(tree.levels):
        count = int(level.parent.shape[0])
        if depth == 0:
            opponent_reach = torch.ones(count, num_players, dtype=torch.float64, device=device)
            own_sequence = torch.full((count, num_players), -1, dtype=torch.long, device=device)
            own_depth = torch.zeros(count, num_players, dtype=torch.long, device=device)
            full_reach = torch.ones(count, dtype=torch.float64, device=device)
        else:
            assert prev_kind is not None
            parent = level.parent.long()
            parent_kind = prev_kind[parent].long()                       # [N_d]
            slot = level.parent_action_slot.long()                       # [N_d], -1 if none
            has_slot = slot >= 0
            action_prob = torch.where(has_slot, policy[slot.clamp(min=0)],
                                      torch.ones((), dtype=torch.float64, device=device))
            chance_prob = level.chance_prob.to(torch.float64)            # 1 unless chance edge
            edge_prob = action_prob * chance_prob                        # [N_d]
            # is_own[h, p]: the edge into h is player p's own action.
            is_own = (parent_kind.unsqueeze(1) == players.unsqueeze(0)) & has_slot.unsqueeze(1)
            edge_for_opponents = torch.where(is_own, chance_prob.unsqueeze(1),
                                             edge_prob.unsqueeze(1))     # [N_d, P]
            opponent_reach = out.opponent_reach[-1][parent] * edge_for_opponents
            own_sequence = torch.where(is_own, slot.unsqueeze(1), out.own_sequence[-1][parent])
            own_depth = out.own_depth[-1][parent] + is_own.long()
            full_reach = out.full_reach[-1][parent] * edge_prob
        out.opponent_reach.append(opponent_reach)
        out.own_sequence.append(own_sequence)
        out.own_depth.append(own_depth)
        out.full_reach.append(full_reach)
        prev_kind = level.kind
    return out


def _infoset_sequences(tree: LevelTree, top: _TopDown) -> tuple[Tensor, Tensor]:
    """Each infoset's own parent sequence and own depth, checking perfect recall.

    Returns:
        ``(parent_sequence [I] long, own_depth [I] long)`` for the acting player of each
        infoset: the slot of that player's previous own action (-1: none) and the number
        of own actions before it.

    Raises:
        NotPerfectRecallError: two nodes of an infoset disagree on either.
    """
    device = tree.infoset_player.device
    num_infosets = int(tree.num_infosets)
    big = torch.iinfo(torch.long).max
    seq_min = torch.full((num_infosets,), big, dtype=torch.long, device=device)
    seq_max = torch.full((num_infosets,), -big, dtype=torch.long, device=device)
    dep_min = seq_min.clone()
    dep_max = seq_max.clone()
    for depth, level in enumerate(tree.levels):
        decision = (level.kind >= 0).nonzero().squeeze(1)
        if decision.numel() == 0:
            continue
        infoset = level.infoset[decision].long()
        player = level.kind[decision].long().unsqueeze(1)
        seq = top.own_sequence[depth][decision].gather(1, player).squeeze(1)
        dep = top.own_depth[depth][decision].gather(1, player).squeeze(1)
        seq_min.scatter_reduce_(0, infoset, seq, "amin")
        seq_max.scatter_reduce_(0, infoset, seq, "amax")
        dep_min.scatter_reduce_(0, infoset, dep, "amin")
        dep_max.scatter_reduce_(0, infoset, dep, "amax")
    # An infoset without nodes (impossible in a flattened tree) is not a recall violation.
    missing = seq_min == big
    bad = ((seq_min != seq_max) | (dep_min != dep_max)) & ~missing
    if bool(bad.any()):
        first = int(bad.nonzero()[0, 0])
        key = tree.infoset_keys[first] if first < len(tree.infoset_keys) else str(first)
        raise NotPerfectRecallError(
            f"infoset {key!r} is reached by different own-action sequences (the game does "
            "not have perfect recall); exact best response needs perfect recall")
    # Map node-less infosets to the empty sequence at own depth 0 (they hold no value).
    seq_min = torch.where(missing, torch.full_like(seq_min, -1), seq_min)
    dep_min = torch.where(missing, torch.zeros_like(dep_min), dep_min)
    return seq_min, dep_min


def _best_response_pass(tree: LevelTree, top: _TopDown, parent_sequence: Tensor,
                        infoset_depth: Tensor, player: int) -> tuple[float, Tensor, Tensor]:
    """Best response of ``player`` against the policy behind ``top``.

    Returns:
        ``(value, sequence_value [A+1], infoset_value [I])``: the best-response value,
        the counterfactual value of every sequence (index 0 = empty sequence, index
        ``s + 1`` = slot ``s``, meaningful for ``player``'s slots) and the value of each
        of ``player``'s infosets (``-inf`` at other players' infosets).
    """
    device = tree.infoset_player.device
    num_slots = int(tree.action_infoset.shape[0])
    num_infosets = int(tree.num_infosets)
    # sequence_value[sigma + 1]: sum_z u_p(z) * pi_{-p}(z) over terminals z with sequence sigma.
    sequence_value = torch.zeros(num_slots + 1, dtype=torch.float64, device=device)
    for depth, level in enumerate(tree.levels):
        terminal = (level.kind == KIND_TERMINAL).nonzero().squeeze(1)
        if terminal.numel() == 0:
            continue
        payoff = level.terminal_utility[:, player].to(torch.float64)  # terminals in order
        weight = top.opponent_reach[depth][terminal, player]
        sequence_value.index_add_(0, top.own_sequence[depth][terminal, player] + 1,
                                  payoff * weight)

    action_infoset = tree.action_infoset.long()
    infoset_value = torch.full((num_infosets,), float("-inf"), dtype=torch.float64,
                               device=device)
    mine = tree.infoset_player.long() == player                          # [I]
    if bool(mine.any()):
        slot_depth = infoset_depth[action_infoset]                       # [A]
        slot_mine = mine[action_infoset]                                 # [A]
        max_depth = int(infoset_depth[mine].max())
        for own_depth in range(max_depth, -1, -1):
            infosets = (mine & (infoset_depth == own_depth)).nonzero().squeeze(1)
            if infosets.numel() == 0:
                continue
            slots = (slot_mine & (slot_depth == own_depth)).nonzero().squeeze(1)
            # value(I) = max_a sequence_value[(I, a)]: one action per infoset.
            infoset_value.scatter_reduce_(0, action_infoset[slots], sequence_value[slots + 1],
                                          "amax", include_self=False)
            sequence_value.index_add_(0, parent_sequence[infosets] + 1, infoset_value[infosets])
    return float(sequence_value[0]), sequence_value, infoset_value


# ---------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------


def policy_values(tree: LevelTree, policy_slots: Tensor, *,
                  device: torch.device | str | None = None) -> Tensor:
    """Expected utility of every player when all follow ``policy_slots``.

    Args:
        tree: the game tree.
        policy_slots: ``[A]`` probability per infoset-action slot.
        device: where to compute (default: the tree's device).

    Returns:
        ``[num_players]`` float64 tensor (game utility units).
    """
    tree, policy = _prepare(tree, policy_slots, device)
    top = _top_down(tree, policy)
    return _policy_values(tree, top)


def _policy_values(tree: LevelTree, top: _TopDown) -> Tensor:
    values = torch.zeros(int(tree.num_players), dtype=torch.float64,
                         device=tree.infoset_player.device)
    for depth, level in enumerate(tree.levels):
        terminal = level.kind == KIND_TERMINAL
        if bool(terminal.any()):
            reach = top.full_reach[depth][terminal]
            values += (reach.unsqueeze(1)
                       * level.terminal_utility.to(torch.float64)).sum(0)  # terminals in order
    return values


def best_response_values(tree: LevelTree, policy_slots: Tensor, *,
                         device: torch.device | str | None = None) -> Tensor:
    """Value each player obtains by best-responding to the others' fixed policy.

    The best response picks one action per infoset (not per node), weighting an
    infoset's nodes by chance and opponents' reach; see the module docstring.

    Args:
        tree: the game tree (must have perfect recall).
        policy_slots: ``[A]`` probability per infoset-action slot (the fixed joint policy;
            player ``p``'s own entries are ignored when computing ``p``'s best response).
        device: where to compute (default: the tree's device).

    Returns:
        ``[num_players]`` float64 tensor: entry ``p`` is ``max_{sigma_p} u_p(sigma_p, pi_{-p})``.

    Raises:
        PolicyError: ``policy_slots`` is not a policy of ``tree``.
        NotPerfectRecallError: the tree does not have perfect recall.
    """
    tree, policy = _prepare(tree, policy_slots, device)
    return _best_responses(tree, policy)[0]


def _best_responses(tree: LevelTree, policy: Tensor) -> tuple[Tensor, Any]:
    """``[num_players]`` best-response values of a prepared policy, and its top-down pass."""
    top = _top_down(tree, policy)
    parent_sequence, infoset_depth = _infoset_sequences(tree, top)
    values = [_best_response_pass(tree, top, parent_sequence, infoset_depth, p)[0]
              for p in range(int(tree.num_players))]
    return torch.tensor(values, dtype=torch.float64, device=policy.device), top


def best_response_policy(tree: LevelTree, policy_slots: Tensor, player: int, *,
                         device: torch.device | str | None = None) -> Tensor:
    """A pure best response of ``player`` to the others' part of ``policy_slots``.

    Args:
        tree: the game tree (must have perfect recall).
        policy_slots: ``[A]`` probability per infoset-action slot.
        player: the best-responding player, ``0 <= player < num_players``.
        device: where to compute (default: the tree's device).

    Returns:
        ``[A]`` float64 joint policy: ``policy_slots`` at other players' infosets and, at
        each of ``player``'s infosets, probability 1 on the lowest slot achieving the
        maximal counterfactual value (OpenSpiel breaks ties the same way: first legal
        action), 0 elsewhere.

    Raises:
        PolicyError: bad ``policy_slots`` or ``player`` out of range.
        NotPerfectRecallError: the tree does not have perfect recall.
    """
    if not 0 <= int(player) < int(tree.num_players):
        raise PolicyError(f"player must be in 0..{int(tree.num_players) - 1}, got {player}")
    tree, policy = _prepare(tree, policy_slots, device)
    top = _top_down(tree, policy)
    parent_sequence, infoset_depth = _infoset_sequences(tree, top)
    _, sequence_value, infoset_value = _best_response_pass(
        tree, top, parent_sequence, infoset_depth, int(player))
    action_infoset = tree.action_infoset.long()
    num_slots = int(action_infoset.shape[0])
    slot_ids = torch.arange(num_slots, device=policy.device)
    slot_mine = tree.infoset_player.long()[action_infoset] == int(player)
    is_best = slot_mine & (sequence_value[1:] == infoset_value[action_infoset])
    best_slot = torch.full((int(tree.num_infosets),), num_slots, dtype=torch.long,
                           device=policy.device)
    best_slot.scatter_reduce_(0, action_infoset,
                              torch.where(is_best, slot_ids, torch.full_like(slot_ids, num_slots)),
                              "amin")
    chosen = slot_ids == best_slot[action_infoset]
    return torch.where(slot_mine, chosen.to(torch.float64), policy)


def exploitability(tree: LevelTree, policy_slots: Tensor, *,
                   device: torch.device | str | None = None) -> ExploitabilityResult:
    """Best-response values, policy values, NashConv and exploitability of a joint policy.

    ``nash_conv = sum_p (br_value_p - policy_value_p)`` as in OpenSpiel's ``nash_conv``;
    ``exploitability = nash_conv / num_players`` (equal to OpenSpiel's ``exploitability``
    for two-player constant-sum games).

    Args:
        tree: the game tree (must have perfect recall).
        policy_slots: ``[A]`` probability per infoset-action slot.
        device: where to compute (default: the tree's device).

    Raises:
        PolicyError: ``policy_slots`` is not a policy of ``tree``.
        NotPerfectRecallError: the tree does not have perfect recall.
    """
    tree, policy = _prepare(tree, policy_slots, device)
    num_players = int(tree.num_players)
    br, top = _best_responses(tree, policy)
    on_policy = _policy_values(tree, top)
    nash_conv = float((br - on_policy).sum())
    return ExploitabilityResult(per_player=br, policy_values=on_policy, nash_conv=nash_conv,
                                exploitability=nash_conv / num_players)
