"""Precomputed-vector embedder for building stores too large to embed in a benchmark run.

At 100k–1M sentences, MiniLM on a small CPU needs hours just to embed the
store. :class:`SkeletonEmbedder` stands in for it when *building* such stores:
a synthetic sentence's vector is the real MiniLM vector of its skeleton (the
sentence without its detail clause, see :func:`benchmarks.synth.skeleton`;
about 19k distinct skeletons, embedded once and cached on disk) plus a small
deterministic perturbation seeded by the full text, renormalised. The
perturbation's size makes the cosine between a sentence and its skeleton
≈ 0.93 — what MiniLM gives for the real pairs — so the store's neighbourhoods
look like MiniLM's.

Any text that is not a synthetic sentence (a query, a keyword) goes to the
real model, uncached, so query latency always includes a real query
embedding. Ingest-vs-raw-embedding ratios are never measured with this
embedder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.synth import skeleton

__all__ = ["SkeletonEmbedder"]

#: Perturbation scale: cos(vector, skeleton vector) = 1 / sqrt(1 + σ²) ≈ 0.93 (MiniLM's median for these pairs).
SIGMA = 0.39


class SkeletonEmbedder:
    """Real vectors of skeletons + hashed perturbation for synthetic sentences; the real model otherwise.

    Args:
        base: the real embedder (MiniLM).
        cache: an embedder that caches the skeleton vectors (e.g.
            :class:`sgmem.eval.CachingEmbedder` over ``base``); default ``base``.
    """

    def __init__(self, base: Any, cache: Any = None) -> None:
        self.base = base
        self.cache = cache if cache is not None else base
        self.name = f"{base.name} (skeleton vectors)"
        self.dim = int(base.dim)
        self.real_calls = 0  # texts sent to the real model (not synthetic sentences)

    def _noise(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
        return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32) / np.sqrt(self.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        skel = [skeleton(t) for t in texts]
        synth = [i for i, (t, s) in enumerate(zip(texts, skel, strict=True)) if s != t]
        real = [i for i, (t, s) in enumerate(zip(texts, skel, strict=True)) if s == t]
        if synth:
            base = np.asarray(self.cache.embed([skel[i] for i in synth]), dtype=np.float32)
            for row, i in enumerate(synth):
                out[i] = base[row] + SIGMA * self._noise(texts[i])
        if real:
            self.real_calls += len(real)
            out[real] = np.asarray(self.base.embed([texts[i] for i in real]), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def save(self) -> None:
        """Persist the skeleton cache, if it has a ``save``."""
        save = getattr(self.cache, "save", None)
        if callable(save):
            save()
