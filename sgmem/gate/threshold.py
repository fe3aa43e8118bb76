"""The adaptive threshold and the routing rule (ALGORITHMS §2.5, paper §3.4).

``τ*_t = τ_min + τ_0 · exp(−λ ρ_t)`` (additive floor), smoothed by an EMA
``τ_t = α τ_{t−1} + (1 − α) τ*_t`` with ``τ_1 = τ*_1``. A candidate of
novelty ν is added when ``ν ≥ τ + δ``, merged into its nearest memory when
``τ ≤ ν < τ + δ`` and dropped (Noop) when ``ν < τ``. The portable binary gate
(§2.7) drops a candidate when its raw score exceeds ``τ_noop``.
"""

from __future__ import annotations

import math
from typing import Literal

__all__ = ["ADD", "NOOP", "UPDATE", "Action", "ema", "route", "route_binary", "tau_star"]

Action = Literal["add", "update", "noop"]
ADD: Action = "add"
UPDATE: Action = "update"
NOOP: Action = "noop"


def tau_star(rho: float, tau0: float, tau_min: float, lam: float) -> float:
    """The instantaneous threshold ``τ_min + τ_0 exp(−λρ)`` (§2.5)."""
    return tau_min + tau0 * math.exp(-lam * rho)


def ema(prev: float | None, star: float, alpha: float) -> float:
    """One EMA step: ``τ_1 = τ*_1``, then ``α τ_{t−1} + (1 − α) τ*_t``."""
    return star if prev is None else alpha * prev + (1.0 - alpha) * star


def route(nu: float, tau: float, delta: float, n: int) -> Action:
    """Add / Update / Noop for novelty ``nu`` against threshold ``tau`` (§2.5)."""
    if n == 0 or nu >= tau + delta:
        return ADD
    if nu >= tau:
        return UPDATE
    return NOOP


def route_binary(score: float, tau_noop: float, n: int) -> Action:
    """The portable gate (§2.7): Noop when ``s_vMF > τ_noop``, otherwise pass (Add)."""
    if n > 0 and score > tau_noop:
        return NOOP
    return ADD
