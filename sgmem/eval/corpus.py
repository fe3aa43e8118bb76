"""Calibration corpora: the files ``sgmem calibrate`` streams through the gate's scorer.

Reading a corpus file (plain text, LoCoMo JSON or messages as ``sgmem ingest``
reads them) and turning it into candidate streams lives here, in the eval
layer, so that :mod:`sgmem.gate` stays an engine module that imports nothing
above it: :func:`sgmem.gate.calibrate.calibrate` takes the scores, this module
finds the texts.
"""

from __future__ import annotations

import numpy as np

from ..gate.calibrate import Calibration, calibrate, stream_scores
from ..gate.config import GateConfig

__all__ = ["calibrate_corpus", "corpus_streams"]


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
        from .locomo import load_locomo

        return [[t for key, _, msgs in conv.sessions for t in texts(msgs, key)] for conv in load_locomo(p)]
    from ..files import load_messages

    return [[t for thread, msgs in load_messages(p, None) for t in texts(msgs, str(thread))]]


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
