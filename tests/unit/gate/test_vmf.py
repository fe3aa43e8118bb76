"""The vMF novelty score and κ against hand-computed values (ALGORITHMS §2.2–§2.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgmem.gate import estimate_kappa, novelty, vmf_score
from sgmem.gate.vmf import log_mean_exp


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_score_matches_the_log_mean_exp_by_hand() -> None:
    # M = {e1, e2}, c = e1, κ = 2: s = (1/2) log((e² + e⁰) / 2)
    m = np.stack([unit(1, 0), unit(0, 1)])
    got = vmf_score(unit(1, 0), m, 2.0)
    assert got.score == pytest.approx(0.5 * math.log((math.exp(2) + 1) / 2), abs=1e-6)
    assert got.nearest == 0
    assert got.nearest_cos == pytest.approx(1.0)


def test_a_memory_identical_to_every_stored_one_scores_one_and_has_no_novelty() -> None:
    c = unit(1, 2, 3)
    got = vmf_score(c, np.stack([c, c, c]), 50.0)
    assert got.score == pytest.approx(1.0, abs=1e-6)
    assert novelty(got.score) == pytest.approx(0.0, abs=1e-6)


def test_large_kappa_does_not_overflow() -> None:
    # naive exp(κ·cos) overflows float64 at κ·cos > 709; the max shift keeps it finite
    m = np.stack([unit(1, 0), unit(0.6, 0.8)])
    got = vmf_score(unit(1, 0), m, 5000.0)
    assert math.isfinite(got.score)
    # log-mean-exp → max as κ → ∞: s → max cos − log(N)/κ
    assert got.score == pytest.approx(1.0 - math.log(2) / 5000.0, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30),
    st.floats(1e-3, 500.0),
    st.integers(0, 2**32 - 1),
)
def test_score_stays_within_minus_one_and_one(n: int, kappa: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 8)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    c = rng.normal(size=8).astype(np.float32)
    c /= np.linalg.norm(c)
    got = vmf_score(c, m, kappa)
    cos = m @ c
    assert -1.0 <= got.score <= 1.0
    # a log-mean-exp lies between the smallest and the largest cosine
    assert cos.min() - 1e-5 <= got.score <= cos.max() + 1e-5
    assert 0.0 <= novelty(got.score) <= 1.0


def test_novelty_is_the_papers_convention() -> None:
    assert novelty(1.0) == 0.0
    assert novelty(-1.0) == 1.0
    assert novelty(0.0) == 0.5
    assert novelty(3.0) == 0.0  # clipped like the code


def test_log_mean_exp_by_hand() -> None:
    assert log_mean_exp(np.array([0.0, 0.0])) == pytest.approx(0.0)
    assert log_mean_exp(np.array([1000.0, 1000.0])) == pytest.approx(1000.0)
    assert log_mean_exp(np.array([0.0, math.log(3.0)])) == pytest.approx(math.log(2.0))


def test_kappa_follows_banerjees_formula_by_hand() -> None:
    # e1 and e2 in 3-d: R̄ = ‖(½, ½, 0)‖ = 1/√2; κ̂ = R̄ (d − R̄²) / (1 − R̄²) = (1/√2)(2.5)/(0.5)
    total = unit(1, 0, 0).astype(np.float64) + unit(0, 1, 0)
    assert estimate_kappa(total, 2, 3) == pytest.approx((1 / math.sqrt(2)) * 2.5 / 0.5)


def test_kappa_is_clipped_as_the_code_does() -> None:
    total = unit(1, 0, 0).astype(np.float64) + unit(0, 1, 0)
    # with the full embedding dimension (384) the estimate exceeds the cap of 50
    assert estimate_kappa(total, 2, 384) == 50.0
    # one vector: R̄ = 1 is clipped to 1 − 1e-6, the estimate explodes, the cap holds
    assert estimate_kappa(unit(1, 0, 0).astype(np.float64), 1, 384) == 50.0
    # opposite vectors: R̄ = 0, κ̂ = 0, clipped up to the floor
    assert estimate_kappa(np.zeros(3), 2, 3) == pytest.approx(1e-3)
    # no memories: κ = 1
    assert estimate_kappa(np.zeros(3), 0, 3) == 1.0
