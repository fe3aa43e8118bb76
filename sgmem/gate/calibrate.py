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


def corpus_streams(path: str, roles: tuple[str, ...], min_tokens: int = 4) -> list[list[str]]:
    """Candidate texts of a corpus file, one stream per speaker's memory.

    - ``.txt``: one candidate per non-empty line (e.g. an LLM-written diary, §2.7).
    - LoCoMo JSON (a list of samples with ``"conversation"``): each sample is
      its own stream; candidates as sgmem's LLM-free facts.
    - Messages as ``sgmem ingest`` reads them (JSON / JSONL): one stream; the
      LLM-free fact candidates (§1.6) of turns of ``roles``, speaker-prefixed
      exactly as sgmem embeds them.
    """
    import json
    from datetime import datetime, timezone
    from pathlib import Path

    from ..config import Config
    from ..derived.config import DerivedConfig
    from ..derived.extract import rule_fact_candidates
    from ..ingest import prepare
    from ..validate import normalise_messages

    p = Path(path)
    if p.suffix == ".txt":
        return [[line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]]
    cfg = Config(derived=DerivedConfig(fact_roles=roles, fact_min_tokens=min_tokens))

    def texts(msgs: list[dict], session: str) -> list[str]:  # type: ignore[type-arg]
        norm = normalise_messages(msgs, datetime.now(timezone.utc), cfg.limits)
        prep = prepare(norm, cfg, [session] * len(norm), [f"x{i}" for i in range(len(norm))])
        for s in prep.sentences:  # candidates need no vectors to be listed
            s.vec = None  # type: ignore[assignment]
        return [c.text for c in rule_fact_candidates(prep, cfg.derived)]

    raw = json.loads(p.read_text(encoding="utf-8")) if p.suffix == ".json" else None
    if isinstance(raw, list) and raw and isinstance(raw[0], dict) and "conversation" in raw[0]:
        from ..eval.locomo import load_locomo

        return [[t for key, _, msgs in conv.sessions for t in texts(msgs, key)] for conv in load_locomo(p)]
    from ..cli import _load_messages

    return [[t for thread, msgs in _load_messages(p, None) for t in texts(msgs, str(thread))]]


def calibrate_corpus(
    path: str,
    embedder: object,
    quantile: float = 0.8,
    roles: tuple[str, ...] = ("user",),
    config: GateConfig | None = None,
) -> Calibration:
    """Stream a corpus file through the scorer and calibrate τ_noop (``sgmem calibrate``)."""
    scores = []
    total = 0
    for stream in corpus_streams(path, roles):
        total += len(stream)
        if len(stream) < 2:
            continue
        vecs = embedder.embed(stream)  # type: ignore[attr-defined]
        scores.append(stream_scores(vecs, config))
    if not scores:
        raise ValueError(f"{path}: the corpus yields fewer than two candidates; give it more text")
    return calibrate(np.concatenate(scores), quantile, total)
