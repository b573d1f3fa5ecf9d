"""Unit tests of tensorcfr.core.regret: regret matching and the variants' update rules."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorcfr.core.regret import (
    VARIANT_NAMES,
    CFRVariant,
    discount_regrets,
    normalize_strategy,
    regret_matching,
    update_average,
    update_regrets,
)
from tensorcfr.errors import TensorCFRError

# Two infosets: slots 0-1 belong to infoset 0, slots 2-4 to infoset 1.
ACTION_INFOSET = torch.tensor([0, 0, 1, 1, 1])


def test_regret_matching_normalises_positive_regrets() -> None:
    regrets = torch.tensor([1.0, 3.0, -1.0, 0.0, 2.0], dtype=torch.float64)
    strategy = regret_matching(regrets, ACTION_INFOSET, 2)
    assert torch.allclose(strategy, torch.tensor([0.25, 0.75, 0.0, 0.0, 1.0],
                                                 dtype=torch.float64))


def test_regret_matching_uniform_without_positive_regret() -> None:
    regrets = torch.tensor([-1.0, -3.0, 0.0, 0.0, -2.0], dtype=torch.float64)
    strategy = regret_matching(regrets, ACTION_INFOSET, 2)
    assert torch.allclose(strategy, torch.tensor([0.5, 0.5, 1 / 3, 1 / 3, 1 / 3],
                                                 dtype=torch.float64))
    assert not torch.isnan(strategy).any()


def test_regret_matching_keeps_dtype_float32() -> None:
    regrets = torch.tensor([1.0, 3.0, -1.0, 0.0, 2.0], dtype=torch.float32)
    strategy = regret_matching(regrets, ACTION_INFOSET, 2)
    assert strategy.dtype == torch.float32


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=5, max_size=5))
def test_regret_matching_is_a_distribution_per_infoset(values: list[float]) -> None:
    strategy = regret_matching(torch.tensor(values, dtype=torch.float64), ACTION_INFOSET, 2)
    assert (strategy >= 0).all()
    sums = torch.zeros(2, dtype=torch.float64).index_add_(0, ACTION_INFOSET, strategy)
    assert torch.allclose(sums, torch.ones(2, dtype=torch.float64))


def test_update_regrets_rules() -> None:
    cumulative = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    instant = torch.tensor([0.5, -1.0, -1.0], dtype=torch.float64)
    total = cumulative + instant  # [1.5, -3.0, -0.5]
    assert torch.equal(update_regrets(cumulative, instant, CFRVariant("cfr"), 3), total)
    assert torch.equal(update_regrets(cumulative, instant, CFRVariant("cfr+"), 3),
                       total.clamp_min(0))
    assert torch.equal(update_regrets(cumulative, instant, CFRVariant("pcfr+"), 3),
                       total.clamp_min(0))
    assert torch.allclose(update_regrets(cumulative, instant, CFRVariant("lcfr"), 3),
                          total * 3 / 4)
    dcfr = CFRVariant("dcfr", alpha=1.5, beta=0.5)
    t = 3
    expected = torch.tensor([1.5 * t**1.5 / (t**1.5 + 1), -3.0 * t**0.5 / (t**0.5 + 1),
                             -0.5 * t**0.5 / (t**0.5 + 1)], dtype=torch.float64)
    assert torch.allclose(update_regrets(cumulative, instant, dcfr, t), expected, rtol=1e-14)
    # inputs untouched
    assert torch.equal(cumulative, torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_discount_regrets_is_update_without_the_addition(name: str) -> None:
    variant = CFRVariant(name, alpha=2.0, beta=0.5)
    generator = torch.Generator().manual_seed(2)
    cumulative = torch.randn(20, generator=generator, dtype=torch.float64)
    instant = torch.randn(20, generator=generator, dtype=torch.float64)
    expected = update_regrets(cumulative, instant, variant, 5)
    total = cumulative + instant
    assert torch.equal(discount_regrets(total, variant, 5), expected)
    discount_regrets(total, variant, 5, out=total)
    assert torch.equal(total, expected)


def test_discount_factor_matches_openspiel_formula() -> None:
    # OpenSpiel DCFR multiplies by t**alpha / (t**alpha + 1); huge powers do not overflow.
    variant = CFRVariant("dcfr", alpha=1.5, beta=0.0)
    regrets = torch.tensor([2.0, -2.0], dtype=torch.float64)
    t = 7
    out = discount_regrets(regrets, variant, t)
    assert out.tolist() == [2.0 * (t**1.5 / (t**1.5 + 1)), -2.0 * (t**0.0 / (t**0.0 + 1))]
    huge = discount_regrets(regrets, CFRVariant("dcfr", alpha=400.0), 10**6)
    assert huge[0] == 2.0


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_out_argument_is_bitwise_identical(name: str) -> None:
    generator = torch.Generator().manual_seed(1)
    variant = CFRVariant(name)
    cumulative = torch.randn(50, generator=generator, dtype=torch.float64)
    instant = torch.randn(50, generator=generator, dtype=torch.float64)
    weighted = torch.rand(50, generator=generator, dtype=torch.float64)
    for t in (1, 2, 7):
        pure = update_regrets(cumulative, instant, variant, t)
        in_place = cumulative.clone()
        update_regrets(in_place, instant, variant, t, out=in_place)
        assert torch.equal(pure, in_place)
        pure_avg = update_average(cumulative.abs(), weighted, variant, t)
        avg = cumulative.abs()
        update_average(avg, weighted, variant, t, out=avg)
        assert torch.equal(pure_avg, avg)


@pytest.mark.parametrize("name,exponent", [("cfr", 0.0), ("cfr+", 1.0), ("lcfr", 1.0),
                                           ("dcfr", 2.0), ("pcfr+", 2.0)])
def test_average_weights_iteration_t_by_t_to_the_exponent(name: str, exponent: float) -> None:
    variant = CFRVariant(name)
    generator = torch.Generator().manual_seed(0)
    contributions = [torch.rand(5, generator=generator, dtype=torch.float64) for _ in range(6)]
    cumulative = torch.zeros(5, dtype=torch.float64)
    for t, w in enumerate(contributions, start=1):
        cumulative = update_average(cumulative, w, variant, t)
    direct = sum(t**exponent * w for t, w in enumerate(contributions, start=1))
    ours = normalize_strategy(cumulative, ACTION_INFOSET, 2)
    expected = normalize_strategy(direct, ACTION_INFOSET, 2)
    assert torch.allclose(ours, expected, rtol=1e-13, atol=0)


def test_normalize_strategy_uniform_on_zero_infosets() -> None:
    cumulative = torch.tensor([0.0, 0.0, 1.0, 3.0, 0.0], dtype=torch.float64)
    policy = normalize_strategy(cumulative, ACTION_INFOSET, 2)
    assert torch.allclose(policy, torch.tensor([0.5, 0.5, 0.25, 0.75, 0.0],
                                               dtype=torch.float64))


def test_variant_parse() -> None:
    assert CFRVariant.parse("CFR+").name == "cfr+"
    assert CFRVariant.parse(" dcfr ", alpha=2, beta=None, gamma=3) == CFRVariant("dcfr", 2.0,
                                                                                 0.0, 3.0)
    assert CFRVariant.parse("linear").name == "lcfr"
    for bad in ("cfr++", "", "mccfr"):
        with pytest.raises(TensorCFRError):
            CFRVariant.parse(bad)
    with pytest.raises(TensorCFRError):
        CFRVariant.parse("dcfr", alpha=math.nan)
    with pytest.raises(TensorCFRError):
        CFRVariant.parse("dcfr", gamma=-1.0)
    with pytest.raises(TensorCFRError):
        update_regrets(torch.zeros(2), torch.zeros(2), CFRVariant("cfr"), 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_regret_matching_on_cuda() -> None:  # pragma: no cover - no GPU in CI
    regrets = torch.tensor([1.0, 3.0, -1.0, 0.0, 2.0], device="cuda")
    strategy = regret_matching(regrets, ACTION_INFOSET.cuda(), 2)
    assert strategy.device.type == "cuda"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dense_regret_matching_in_place_is_bitwise_the_plain_rule(dtype) -> None:
    """``regret_matching_dense(..., out=)`` (clamp, sum, one fused divide-add) gives
    bitwise the plain rule: positive regrets over their sum, uniform where the sum is 0."""
    from tensorcfr.core.public_tree import regret_matching_dense

    regrets = torch.randn((3, 40, 50), generator=torch.Generator().manual_seed(2), dtype=dtype)
    regrets[:, 0] = -1.0
    regrets[:, 1, :7] = 0.0
    positive = regrets.clamp_min(0)
    total = positive.sum(0, keepdim=True)
    plain = torch.where(total > 0, positive / torch.where(total > 0, total, 1.0),
                        torch.full_like(total, 1.0 / 3))
    out = torch.full_like(regrets, float("nan"))
    assert regret_matching_dense(regrets, out=out) is out
    assert torch.equal(out, plain)
    assert torch.equal(regret_matching_dense(regrets), plain)
    assert torch.equal(out[:, 0], torch.full_like(out[:, 0], 1.0 / 3))


def test_regret_matching_treats_rounding_noise_as_zero() -> None:
    """Issue 28: a regret within the rounding bound (tolerance x (sum of |regret| + value
    scale)) counts as 0, the same in the segment, buffered and dense forms."""
    import torch

    from tensorcfr.core.public_tree import regret_matching_dense
    from tensorcfr.core.regret import (REGRET_TOLERANCES, regret_matching,
                                       regret_matching_into, regret_tolerance)

    assert regret_tolerance(torch.float64) < regret_tolerance(torch.float32) < 1e-4
    assert set(REGRET_TOLERANCES) >= {torch.float32, torch.float64}
    # infoset 0: [2, 1e-15, 1e-12], only the 2 is kept; 1: a genuine regret; 2: all
    # noise, with value scale 1
    regrets = torch.tensor([2.0, 1e-15, 1e-12, 5.0, -1e-20, 3e-17, -3e-17],
                           dtype=torch.float64)
    action_infoset = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    strategy = regret_matching(regrets, action_infoset, 3,
                               value_scale=torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    expected = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.5, 0.5], dtype=torch.float64)
    assert torch.equal(strategy, expected)
    # without a value scale the all-noise row is a genuine (tiny) regret row
    plain = regret_matching(regrets, action_infoset, 3)
    assert torch.equal(plain[5:], torch.tensor([1.0, 0.0], dtype=torch.float64))
    out = torch.empty_like(regrets)
    uniform = torch.tensor([1 / 3] * 3 + [0.5] * 4, dtype=torch.float64)
    regret_matching_into(regrets, action_infoset, torch.empty(3, dtype=torch.float64),
                         uniform, torch.zeros((), dtype=torch.float64), out)
    assert torch.equal(out, plain)
    dense = torch.tensor([[2.0, 3e-17], [1e-12, -3e-17]], dtype=torch.float64)  # [A=2, 2]
    got = regret_matching_dense(dense, value_scale=torch.tensor([0.0, 1.0],
                                                                dtype=torch.float64))
    assert torch.equal(got, torch.tensor([[1.0, 0.5], [0.0, 0.5]], dtype=torch.float64))
