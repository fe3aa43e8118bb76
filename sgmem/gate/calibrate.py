"""Calibrating the portable binary gate's τ_noop on a corpus (ALGORITHMS §2.7).

The paper's leakage-controlled recipe: stream a corpus that is *not* the
evaluation data (theirs: an LLM-written single-persona diary) through the
scorer, record each candidate's ``s_vMF`` against everything streamed before
it, and set ``τ_noop`` to a high quantile of those scores (p80: "skip the top
20 % most-covered"). Nothing is skipped while calibrating: every candidate
joins the store after it is scored, as in a host memory without the gate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .blas import single_thread_blas
from .config import GateConfig
from .vmf import estimate_kappa, vmf_score

__all__ = ["Calibration", "calibrate", "stream_scores"]


def stream_scores(vectors: Iterable[np.ndarray], config: GateConfig | None = None) -> np.ndarray:
    """``s_vMF`` of each unit vector against all earlier ones (NaN for the first).

    κ is estimated as the gate does (or fixed by ``config.kappa``).
    """
    cfg = config or GateConfig()
    rows = [np.asarray(v, dtype=np.float32) for v in vectors]
    if not rows:
        return np.zeros(0)
    mat = np.stack(rows)
    dim = mat.shape[1]
    out = np.full(len(mat), np.nan)
    total = np.zeros(dim)
    with single_thread_blas():
        for i, c in enumerate(mat):
            if i:
                kappa = (
                    cfg.kappa if cfg.kappa is not None else estimate_kappa(total, i, dim, cfg.kappa_min, cfg.kappa_max)
                )
                out[i] = vmf_score(c, mat[:i], float(kappa)).score
            total += c.astype(np.float64)
    return out


@dataclass(frozen=True)
class Calibration:
    """The outcome of a calibration run.

    Attributes:
        tau_noop: the recommended ``GateConfig(mode="binary", tau_noop=...)``.
        quantile: the quantile it was taken at.
        candidates: candidates streamed.
        skip_rate: share of the corpus's scored candidates above ``tau_noop``
            (≈ 1 − quantile on the calibration corpus itself).
        quantiles: s_vMF at p50, p80, p90, p95.
    """

    tau_noop: float
    quantile: float
    candidates: int
    skip_rate: float
    quantiles: dict[str, float]


def calibrate(scores: np.ndarray, quantile: float = 0.8, candidates: int | None = None) -> Calibration:
    """τ_noop = the ``quantile`` of the streamed scores (§2.7 step 3).

    ``candidates`` is how many were streamed (default: the scores plus the
    unscored first one).
    """
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile: received {quantile!r}, expected a number in (0, 1) such as 0.8")
    s = np.asarray(scores, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0:
        raise ValueError("calibration needs at least two candidates (the first has nothing to be scored against)")
    tau = float(np.quantile(s, quantile))
    qs = {f"p{int(q * 100)}": float(np.quantile(s, q)) for q in (0.5, 0.8, 0.9, 0.95)}
    n = int(s.size) + 1 if candidates is None else int(candidates)
    return Calibration(tau, quantile, n, float(np.mean(s > tau)), qs)
