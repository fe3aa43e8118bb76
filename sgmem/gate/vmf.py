"""The vMF kernel novelty score and its concentration κ (ALGORITHMS §2.2–§2.3).

``s_vMF(c | M) = (1/κ) log( (1/N) Σ_i exp(κ m_iᵀ c) )`` is the log-mean-exp of
the candidate's cosines to the scope's memories, divided by κ (paper §3.3,
App. E). It lies in ``[min_i cos, max_i cos] ⊆ [−1, 1]``; it is computed with
a max-shifted log-sum-exp so large κ never overflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["VmfScore", "estimate_kappa", "log_mean_exp", "novelty", "vmf_score"]


@dataclass(frozen=True)
class VmfScore:
    """One candidate's score against a set of memories.

    Attributes:
        score: ``s_vMF`` ∈ [−1, 1] (higher = better covered).
        nearest: row of the most similar memory (the Update target), −1 if none.
        nearest_cos: its cosine to the candidate.
    """

    score: float
    nearest: int
    nearest_cos: float


def log_mean_exp(x: np.ndarray) -> float:
    """``log((1/n) Σ exp(x_i))`` with the max shift (no overflow for large x)."""
    x = np.asarray(x, dtype=np.float64)
    m = float(x.max())
    return m + math.log(float(np.exp(x - m).sum())) - math.log(x.size)


def vmf_score(c: np.ndarray, memories: np.ndarray, kappa: float) -> VmfScore:
    """``s_vMF(c | M)`` of §2.2 for a unit vector ``c`` and unit rows ``memories``.

    Returns score 0 with no nearest row when ``memories`` is empty (the caller
    routes N = 0 to Add without scoring).
    """
    if len(memories) == 0:
        return VmfScore(0.0, -1, 0.0)
    cos = memories @ np.asarray(c, dtype=memories.dtype)
    j = int(np.argmax(cos))
    s = log_mean_exp(kappa * cos.astype(np.float64)) / kappa
    return VmfScore(min(1.0, max(-1.0, s)), j, float(cos[j]))


def novelty(score: float) -> float:
    """The paper's novelty ``ν = (1 − s_vMF) / 2 ∈ [0, 1]`` (§2.2; the code's is 2ν)."""
    return (1.0 - min(1.0, max(-1.0, score))) / 2.0


def estimate_kappa(sum_vec: np.ndarray, n: int, dim: int, lo: float = 1e-3, hi: float = 50.0) -> float:
    """Banerjee et al.'s κ̂ = R̄ (d − R̄²) / (1 − R̄²), with the code's safeguards (§2.3).

    ``R̄ = ‖(1/N) Σ m_i‖`` comes from the running sum of the unit memory
    vectors. ``d`` is the full embedding dimension. ``R̄`` is clipped to
    ``[0, 1 − 1e-6]``, the denominator to ≥ 1e-6; N = 0 or a non-finite
    estimate gives κ = 1; the result is clipped to ``[lo, hi]``.
    """
    if n <= 0:
        return 1.0
    r = float(np.linalg.norm(np.asarray(sum_vec, dtype=np.float64))) / n
    r = min(max(r, 0.0), 1.0 - 1e-6)
    k = r * (dim - r * r) / max(1.0 - r * r, 1e-6)
    if not math.isfinite(k):
        return 1.0
    return float(min(max(k, lo), hi))
