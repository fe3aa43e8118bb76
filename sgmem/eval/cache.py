"""An embedder wrapper that remembers vectors on disk (for repeated evaluations)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..embed.base import Embedder

__all__ = ["CachingEmbedder"]


class CachingEmbedder:
    """Wraps an :class:`Embedder`; vectors of texts seen before come from a file.

    The cache file is keyed by the wrapped embedder's name, so two models never
    share vectors. Call :meth:`save` to persist new vectors.
    """

    def __init__(self, base: Embedder, directory: str | os.PathLike[str]) -> None:
        self.base = base
        self.name = base.name
        self.dim = base.dim
        safe = hashlib.sha1(base.name.encode()).hexdigest()[:12]
        self.path = Path(directory) / f"embeddings-{safe}.npz"
        self._vecs: dict[str, np.ndarray] = {}
        self._dirty = False
        if self.path.exists():
            with np.load(self.path) as data:
                keys, vecs = data["keys"], data["vecs"]
            self._vecs = {str(k): v for k, v in zip(keys, vecs, strict=False)}

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._vecs]
        if missing:
            new = self.base.embed([texts[i] for i in missing])
            for i, v in zip(missing, new, strict=False):
                self._vecs[keys[i]] = np.asarray(v, dtype=np.float32)
            self._dirty = True
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vecs[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        """Write the cache file if new vectors were computed."""
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vecs))
        vecs = np.stack(list(self._vecs.values())) if self._vecs else np.zeros((0, self.dim), np.float32)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vecs=vecs)
        os.replace(tmp, self.path)
        self._dirty = False
