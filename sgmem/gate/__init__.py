"""SAGE: the Spherical Adaptive Gate for memory Evolution (ALGORITHMS §2, arXiv 2605.30711).

Decides, for each derived fact candidate, whether it is new (Add), refines
the nearest fact (Update) or is already known (Noop), with a closed-form vMF
novelty score and an adaptive threshold — no LLM call routes anything.

- :mod:`.vmf` — the novelty score ``s_vMF`` and κ (§2.2–§2.3)
- :mod:`.density` — the PCA density proxy ρ (§2.4)
- :mod:`.threshold` — τ*, its EMA and the routing rule (§2.5, §2.7)
- :mod:`.gate` — per-scope state, write steps and decisions
- :mod:`.approx` — the top-k approximate scorer for large scopes
- :mod:`.calibrate` — the portable gate's τ_noop from a corpus (§2.7)
"""

from __future__ import annotations

from .calibrate import Calibration, calibrate, stream_scores
from .config import SAGE_PAPER, GateConfig
from .gate import Decision, GateState, GateView, NoveltyGate
from .threshold import ema, route, route_binary, tau_star
from .vmf import estimate_kappa, novelty, vmf_score

__all__ = [
    "SAGE_PAPER",
    "Calibration",
    "Decision",
    "GateConfig",
    "GateState",
    "GateView",
    "NoveltyGate",
    "calibrate",
    "ema",
    "estimate_kappa",
    "novelty",
    "route",
    "route_binary",
    "stream_scores",
    "tau_star",
    "vmf_score",
]
