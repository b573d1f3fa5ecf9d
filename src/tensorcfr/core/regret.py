"""Regret-matching building blocks shared by every tensor CFR solver (game independent).

All tensors here are laid out over *action slots*: an information set ``i`` with ``k``
legal actions owns ``k`` consecutive slots, and ``action_infoset[s]`` gives the infoset of
slot ``s``.  Per-infoset reductions are segment sums (``index_add_``), so every function is
a handful of whole-tensor operations, with no Python loop over infosets, on any device and
dtype.

Update rules (iteration ``t = 1, 2, ...``; ``r_t`` = instantaneous counterfactual regret,
``w_t`` = own reach probability x current strategy):

========  ======================================================  ==========================
variant   cumulative regret ``R_t``                               average weight of ``w_t``
========  ======================================================  ==========================
cfr       ``R_{t-1} + r_t``                                       1
cfr+      ``max(R_{t-1} + r_t, 0)`` (regret matching+)            ``t`` (linear averaging)
lcfr      ``(R_{t-1} + r_t) * t / (t + 1)``                       ``t``
dcfr      ``(R_{t-1} + r_t) * t^a/(t^a+1)`` where >= 0,            ``t^gamma``
          ``* t^b/(t^b+1)`` where < 0
pcfr+     ``max(R_{t-1} + r_t, 0)``; the solver plays regret     ``t^gamma`` (default 2)
          matching on ``R_t + r_t`` (prediction = last regret)
========  ======================================================  ==========================

Regret matching counts a regret as positive only when it exceeds the rounding bound of its
information set (:func:`positive_regret_bound`): ``R(I, a) > tol * (sum_b |R(I, b)| +
V(I))``, where ``tol`` is :func:`regret_tolerance` of the dtype (1e-10 in float64, 1e-5 in
float32) and ``V(I)`` is the solver's cumulative *value scale* of I (the sum over iterations
of ``sum_a |v_t(I, a)|``, the counterfactual action values whose differences build the
regrets) where the solver tracks it, else 0.  Why: a regret is a sum of many products; its
rounding error is bounded by about ``n * eps`` times the sum of the magnitudes it adds up
(``V(I)`` bounds that sum up to a factor 2), so a regret below ``tol * scale`` cannot be told
from 0 in the dtype.  Exact arithmetic gives exact zeros there (ties: actions of equal
value, or contributions that cancel by symmetry), and OpenSpiel, which sums history by
history, keeps them exact; a solver that sums in another order (per-hand matrix products,
threads, a GPU) gets +-1e-17 instead, and plain regret matching turns that noise into a pure
strategy.  The rule makes every summation order play the tie as exact arithmetic does.
It moves a genuine regret only when it is below ``tol * scale``: regret matching on regrets
within ``delta = tol * scale`` of the true ones keeps Blackwell's bound up to an added
``2 * A * delta * |r_t|`` a step, i.e. an average-regret floor of about
``Delta * sqrt(2 * A * tol)`` (Delta = payoff range), 2e-5 Delta in float64.

These match OpenSpiel's ``CFRSolver`` / ``CFRPlusSolver`` (regret matching+ with linear
averaging) and ``DCFRSolver`` / ``LCFRSolver`` (discount applied after adding ``r_t``).
The weighted averages are stored *normalised*: instead of ``S_t = S_{t-1} + t^g w_t`` we
keep ``S_t = S_{t-1} ((t-1)/t)^g + w_t`` which is the same vector divided by ``t^g`` (the
paper's "multiply the average by (t/(t+1))^gamma" form), so magnitudes stay bounded in
float32 and the normalised average policy is identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, cast, get_args

import torch
from torch import Tensor

from tensorcfr.errors import TensorCFRError

__all__ = [
    "Algorithm",
    "CFRVariant",
    "VARIANT_NAMES",
    "regret_matching",
    "regret_matching_into",
    "regret_tolerance",
    "REGRET_TOLERANCES",
    "positive_regret_bound",
    "discount_scale",
    "uniform_slot_probabilities",
    "update_regrets",
    "discount_regrets",
    "discount_factor",
    "update_average",
    "average_decay",
    "normalize_strategy",
    "segment_sum",
]

Algorithm = Literal["cfr", "cfr+", "lcfr", "dcfr", "pcfr+"]
"""A CFR update rule's name: the vocabulary every solver and command shares, checked once by
:class:`CFRVariant` (:meth:`CFRVariant.parse` also takes the aliases and any case)."""
VARIANT_NAMES: tuple[Algorithm, ...] = get_args(Algorithm)
_ALIASES = {"cfrplus": "cfr+", "cfr_plus": "cfr+", "linear": "lcfr", "linear_cfr": "lcfr",
            "discounted": "dcfr", "pcfrplus": "pcfr+", "pcfr_plus": "pcfr+", "vanilla": "cfr"}


@dataclass(frozen=True)
class CFRVariant:
    """Which CFR update rule to use, with the Discounted-CFR parameters.

    ``alpha``/``beta``/``gamma`` are only read by ``dcfr`` (all three) and ``pcfr+``
    (``gamma``: the average strategy weights ``t^gamma``).
    """

    name: Algorithm
    alpha: float = 1.5  # DCFR: positive regrets discounted by t^alpha/(t^alpha+1)
    beta: float = 0.0  # DCFR: negative regrets discounted by t^beta/(t^beta+1)
    gamma: float = 2.0  # DCFR: average strategy contributions weighted by (t/(t+1))^gamma

    def __post_init__(self) -> None:
        if self.name not in VARIANT_NAMES:
            raise TensorCFRError(
                f"unknown CFR algorithm {self.name!r}: choose one of {', '.join(VARIANT_NAMES)}")
        for label, value in (("alpha", self.alpha), ("beta", self.beta), ("gamma", self.gamma)):
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise TensorCFRError(f"{label} must be a finite number, got {value!r}")
        if self.gamma < 0:
            raise TensorCFRError(f"gamma must be >= 0, got {self.gamma}")

    @staticmethod
    def parse(name: str, alpha: float | None = None, beta: float | None = None,
              gamma: float | None = None) -> "CFRVariant":
        """Build a variant from a user-facing name (case-insensitive, e.g. ``"CFR+"``).

        Parameters left ``None`` take their defaults (``alpha=1.5, beta=0, gamma=2``).
        Raises :class:`TensorCFRError` on an unknown name or a non-finite/negative value.
        """
        if not isinstance(name, str):
            raise TensorCFRError(f"algorithm name must be a string, got {name!r}")
        key = name.strip().lower()
        key = _ALIASES.get(key, key)
        kwargs: dict[str, float] = {}
        for label, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
            if value is not None:
                try:
                    kwargs[label] = float(value)
                except (TypeError, ValueError):
                    raise TensorCFRError(f"{label} must be a number, got {value!r}") from None
        return CFRVariant(cast(Algorithm, key), **kwargs)  # the name is checked when built

    @property
    def floors_regrets(self) -> bool:
        """True when cumulative regrets are clipped at zero (regret matching+)."""
        return self.name in ("cfr+", "pcfr+")

    @property
    def predictive(self) -> bool:
        """True when the current strategy uses the last instantaneous regret as prediction."""
        return self.name == "pcfr+"

    def average_exponent(self) -> float:
        """Exponent ``g`` of the average-strategy weight ``t^g`` of iteration ``t``."""
        if self.name == "cfr":
            return 0.0
        if self.name in ("cfr+", "lcfr"):
            return 1.0
        return float(self.gamma)

    def to_dict(self) -> dict[str, float | str]:
        """JSON-ready description (for checkpoints and ``--json``)."""
        return {"name": self.name, "alpha": self.alpha, "beta": self.beta, "gamma": self.gamma}


def segment_sum(values: Tensor, segment_ids: Tensor, num_segments: int) -> Tensor:
    """Sum ``values`` [K, ...] into ``num_segments`` buckets given ``segment_ids`` [K] long."""
    out = torch.zeros((num_segments,) + tuple(values.shape[1:]), dtype=values.dtype,
                      device=values.device)
    return out.index_add_(0, segment_ids, values)


REGRET_TOLERANCES: dict[torch.dtype, float] = {
    torch.float64: 1e-10,  # unit roundoff 1.1e-16: ~1e6 rounding steps of margin
    torch.float32: 1e-5,  # unit roundoff 6.0e-8: ~170 rounding steps of margin
    torch.float16: 1e-2,
    torch.bfloat16: 1e-1,
}
"""Relative tolerance of :func:`positive_regret_bound` per dtype: a regret within
``tolerance * scale`` of 0 is rounding noise (see the module docstring)."""


def regret_tolerance(dtype: torch.dtype) -> float:
    """The relative tolerance of regret matching for ``dtype`` (:data:`REGRET_TOLERANCES`)."""
    try:
        return REGRET_TOLERANCES[dtype]
    except KeyError:
        raise TensorCFRError(f"no regret tolerance for dtype {dtype}") from None


def positive_regret_bound(abs_sum: Tensor, value_scale: Tensor | None,
                          tolerance: float) -> Tensor:
    """The bound a regret must exceed to count as positive: ``tolerance * (abs_sum +
    value_scale)`` (``abs_sum``: sum over the infoset's actions of |R|; ``value_scale``:
    the solver's cumulative value scale of the infoset, broadcastable, or None).  Computed
    in place in ``abs_sum``."""
    if value_scale is not None:
        abs_sum.add_(value_scale)
    return abs_sum.mul_(tolerance)


def discount_scale(scale: Tensor, variant: CFRVariant, iteration: int) -> Tensor:
    """Discount a cumulative value scale (>= 0) as the variant discounts regrets that
    include iteration ``iteration``: LCFR's ``t / (t + 1)``, DCFR's larger of its two
    factors (an upper bound on every regret's), nothing for cfr / cfr+ / pcfr+."""
    name = variant.name
    if name == "lcfr":
        return scale.mul_(discount_factor(iteration, 1.0))
    if name == "dcfr":
        return scale.mul_(max(discount_factor(iteration, variant.alpha),
                              discount_factor(iteration, variant.beta)))
    return scale


def regret_matching(regrets: Tensor, action_infoset: Tensor, num_infosets: int, *,
                    value_scale: Tensor | None = None,
                    tolerance: float | None = None) -> Tensor:
    """Current strategy from cumulative regrets (regret matching).

    ``regrets`` [A] (one value per infoset-action slot), ``action_infoset`` [A] long (the
    infoset of each slot); ``value_scale`` [I] (optional, the solver's cumulative value
    scale per infoset); ``tolerance`` (default :func:`regret_tolerance` of the dtype).
    Returns the strategy [A]: the regrets above :func:`positive_regret_bound` normalised
    within each infoset, uniform over the infoset's actions where there are none.
    """
    tol = regret_tolerance(regrets.dtype) if tolerance is None else tolerance
    bound = positive_regret_bound(segment_sum(regrets.abs(), action_infoset, num_infosets),
                                  value_scale, tol)
    positive = torch.where(regrets > bound.index_select(0, action_infoset), regrets,
                           regrets.new_zeros(()))
    totals = segment_sum(positive, action_infoset, num_infosets)  # [I]
    counts = segment_sum(torch.ones_like(positive), action_infoset, num_infosets)  # [I]
    slot_totals = totals.index_select(0, action_infoset)
    uniform = counts.reciprocal().index_select(0, action_infoset)
    # 0/0 -> nan where an infoset has no positive regret; ``where`` picks uniform there.
    return torch.where(slot_totals > 0, positive / slot_totals, uniform)


def regret_matching_into(regrets: Tensor, action_infoset: Tensor, totals: Tensor,
                         uniform: Tensor, zero: Tensor, out: Tensor, *,
                         tolerance: float | None = None) -> Tensor:
    """:func:`regret_matching` with preallocated buffers, written into ``out``; bitwise the
    same result (the same operations, without recounting each infoset's actions; no value
    scale: the callers sum history by history in OpenSpiel's order, so exact ties stay
    exact and only the infoset's own regrets set the bound).

    ``regrets`` [A], ``action_infoset`` [A] long; ``totals`` [I] scratch (overwritten);
    ``uniform`` [A] ``1 / (number of actions of the slot's infoset)``; ``zero`` a 0-dim
    tensor of the dtype; ``out`` [A] receives the strategy (not ``regrets`` itself).
    """
    tol = regret_tolerance(regrets.dtype) if tolerance is None else tolerance
    magnitude = torch.abs(regrets, out=out)
    totals.zero_()
    totals.index_add_(0, action_infoset, magnitude)
    bound = positive_regret_bound(totals, None, tol).index_select(0, action_infoset)
    positive = torch.where(regrets > bound, regrets, zero)
    totals.zero_()
    totals.index_add_(0, action_infoset, positive)
    slot_totals = totals.index_select(0, action_infoset)
    return torch.where(slot_totals > zero, positive.div_(slot_totals), uniform, out=out)


def uniform_slot_probabilities(action_infoset: Tensor, num_infosets: int,
                               dtype: torch.dtype) -> Tensor:
    """[A] ``1 / (number of actions of the slot's infoset)`` (the uniform strategy, as
    :func:`regret_matching` computes it), for :func:`regret_matching_into`."""
    ones = torch.ones(action_infoset.shape, dtype=dtype, device=action_infoset.device)
    counts = segment_sum(ones, action_infoset, num_infosets)
    return counts.reciprocal().index_select(0, action_infoset)


def discount_factor(t: int, exponent: float) -> float:
    """``t^e / (t^e + 1)`` for iteration ``t``, written as OpenSpiel's DCFR does (same
    rounding); 1 when ``t^e`` overflows."""
    try:
        power = float(t) ** exponent
    except OverflowError:
        return 1.0
    if power == float("inf"):
        return 1.0
    return power / (power + 1)


_discount_factor = discount_factor  # former private name


def discount_regrets(regrets: Tensor, variant: CFRVariant, iteration: int, *,
                     out: Tensor | None = None) -> Tensor:
    """Apply the variant's floor/discount to cumulative regrets that already include this
    iteration's instantaneous regrets (``R_{t-1} + r_t``); see :func:`update_regrets`.

    Solvers that accumulate ``r_t`` history by history straight into ``R`` (as OpenSpiel
    does, for identical rounding) call this afterwards.  Returns ``out`` when given (it may
    be ``regrets`` itself), else a new tensor.
    """
    if iteration < 1:
        raise TensorCFRError(f"iteration numbers start at 1, got {iteration}")
    name = variant.name
    if out is None:
        out = regrets.clone()
    elif out is not regrets:
        out.copy_(regrets)
    if name == "cfr":
        return out
    if name in ("cfr+", "pcfr+"):
        return out.clamp_min_(0)
    if name == "lcfr":
        return out.mul_(discount_factor(iteration, 1.0))
    positive_factor = discount_factor(iteration, variant.alpha)
    negative_factor = discount_factor(iteration, variant.beta)
    return out.mul_(torch.where(out >= 0, torch.full_like(out, positive_factor),
                                torch.full_like(out, negative_factor)))


def update_regrets(cumulative_regrets: Tensor, instant_regrets: Tensor, variant: CFRVariant,
                   iteration: int, *, out: Tensor | None = None) -> Tensor:
    """Add this iteration's instantaneous regrets and apply the variant's discount/floor.

    ``cumulative_regrets``, ``instant_regrets``: [A] (same dtype/device); ``iteration`` is
    ``t = 1, 2, ...``.  Returns the new cumulative regrets: a new tensor, or ``out`` when
    given (``out`` may be ``cumulative_regrets`` itself for an in-place update).
    """
    if iteration < 1:
        raise TensorCFRError(f"iteration numbers start at 1, got {iteration}")
    if out is not None:
        total = torch.add(cumulative_regrets, instant_regrets, out=out)
    else:
        total = cumulative_regrets + instant_regrets
    return discount_regrets(total, variant, iteration, out=total)


def average_decay(variant: CFRVariant, iteration: int) -> float:
    """Factor ``((t-1)/t)^g`` applied to the stored cumulative strategy at iteration ``t``
    before adding ``w_t`` (1 for vanilla CFR), see :func:`update_average`."""
    if iteration < 1:
        raise TensorCFRError(f"iteration numbers start at 1, got {iteration}")
    exponent = variant.average_exponent()
    if exponent == 0.0:
        return 1.0
    return ((iteration - 1) / iteration) ** exponent


def update_average(cumulative_strategy: Tensor, weighted_strategy: Tensor, variant: CFRVariant,
                   iteration: int, *, out: Tensor | None = None) -> Tensor:
    """Accumulate ``weighted_strategy`` (own reach x current strategy, per slot [A]).

    Iteration ``t`` contributes with weight ``t^g`` (``g`` = 0 for cfr, 1 for cfr+/lcfr,
    ``gamma`` for dcfr/pcfr+), stored normalised as ``S*((t-1)/t)^g + w`` (see the module
    docstring).  Returns the new cumulative strategy [A]: a new tensor, or ``out`` when
    given (``out`` may be ``cumulative_strategy`` itself).
    """
    decay = average_decay(variant, iteration)
    if decay == 1.0:
        if out is not None:
            return torch.add(cumulative_strategy, weighted_strategy, out=out)
        return cumulative_strategy + weighted_strategy
    if out is not None:
        return torch.mul(cumulative_strategy, decay, out=out).add_(weighted_strategy)
    return cumulative_strategy * decay + weighted_strategy


def normalize_strategy(cumulative_strategy: Tensor, action_infoset: Tensor,
                       num_infosets: int) -> Tensor:
    """Average policy [A] from the cumulative strategy [A]: normalised per infoset,
    uniform over the infoset's actions where the infoset's sum is 0."""
    totals = segment_sum(cumulative_strategy, action_infoset, num_infosets)
    counts = segment_sum(torch.ones_like(cumulative_strategy), action_infoset, num_infosets)
    slot_totals = totals.index_select(0, action_infoset)
    uniform = counts.reciprocal().index_select(0, action_infoset)
    nonzero = slot_totals != 0
    return torch.where(nonzero, cumulative_strategy / torch.where(
        nonzero, slot_totals, torch.ones_like(slot_totals)), uniform)
