"""The density proxy ρ behind the adaptive threshold (ALGORITHMS §2.4, paper App. D).

Fit a PCA on the scope's fact vectors, keep ``d′`` components, and take the
volume of the bounding box of the projections,
``V = exp(Σ_j log max(max_i u_ij − min_i u_ij, floor))`` (V = 1 when N < 2);
then ``ρ = N / max(V, 1e-9)``. Missing components (rank < d′) are zero rows,
so their range is floored.

[D] Amortised refits: the basis is refit when the number of facts has grown
by ``pca_refit_growth`` since the last fit (and after deletes); new or merged
vectors in between only widen the per-component ranges. Scopes larger than
``pca_max_rows`` fit on an evenly spaced sample. Every quantity is persisted
(:meth:`Density.to_blobs`), so a restarted process continues bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Density", "rho", "top_components"]


def rho(n: int, volume: float) -> float:
    """``ρ = N / max(V, 1e-9)`` (the code's guard on V)."""
    return n / max(volume, 1e-9)


def top_components(xc: np.ndarray, k: int, oversample: int = 8, power_iters: int = 4, seed: int = 0) -> np.ndarray:
    """The top-``k`` principal directions (rows) of centred data ``xc``.

    Small inputs get an exact SVD; larger ones a randomized range finder with
    power iterations (Halko, Martinsson & Tropp 2011) from a fixed seed, so
    the result is deterministic and costs O(N·d·(k + oversample)) instead of
    the O(N·d²) of a full SVD.
    """
    n, d = xc.shape
    r = min(k + oversample, n, d)
    if n <= 2 * r or d <= 2 * r:
        return np.linalg.svd(xc, full_matrices=False)[2][:k]
    omega = np.random.default_rng(seed).standard_normal((d, r))
    q, _ = np.linalg.qr(xc @ omega)
    for _ in range(power_iters):
        q, _ = np.linalg.qr(xc.T @ q)
        q, _ = np.linalg.qr(xc @ q)
    return np.linalg.svd(q.T @ xc, full_matrices=False)[2][:k]


@dataclass
class Density:
    """PCA basis and projected ranges of one scope's facts.

    [D] The mean and the basis are kept (and persisted) as float32, the
    precision the projections always used, and only the ``m ≤ k`` components
    the fit produced are kept (a scope of 5 facts has 5): a small scope's
    state costs a few KB instead of ~55 KB, and a restart reads back exactly
    the numbers the live process used. Nothing is kept before the first fit
    of ≥ 2 facts.
    """

    dim: int
    k: int = 16
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    basis: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    lo: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hi: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_fit: int = 0
    stale: bool = True
    _offset: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.basis.size == 0:
            self._clear()

    def _clear(self) -> None:
        self.mean = np.zeros(0, dtype=np.float32)
        self.basis = np.zeros((0, self.dim), dtype=np.float32)
        self.lo = np.zeros(0)
        self.hi = np.zeros(0)
        self._offset = None

    def needs_refit(self, n: int, growth: float) -> bool:
        """Whether the basis should be refit for a scope of ``n`` facts."""
        if n < 2:
            return False
        return self.stale or self.n_fit < 2 or n >= math.ceil(self.n_fit * growth) or n <= self.k + 1

    def fit(self, vectors: np.ndarray, max_rows: int) -> None:
        """Refit the basis on ``vectors`` (unit rows) and recompute every range."""
        n = len(vectors)
        self.n_fit = n
        self.stale = False
        if n < 2:
            self._clear()
            return
        rows = vectors if n <= max_rows else vectors[np.linspace(0, n - 1, max_rows).round().astype(np.int64)]
        x = np.asarray(rows, dtype=np.float64)
        mean = x.mean(axis=0)
        basis = np.array(top_components(x - mean, self.k)[: self.k])
        # a deterministic sign per component (SVD's is arbitrary; ranges do not care)
        flip = np.sign(basis[np.arange(len(basis)), np.argmax(np.abs(basis), axis=1)])
        basis *= np.where(flip == 0, 1.0, flip)[:, None]
        self.mean, self.basis = mean.astype(np.float32), np.ascontiguousarray(basis, dtype=np.float32)
        self._offset = None
        proj = self._project(vectors)
        self.lo, self.hi = proj.min(axis=0), proj.max(axis=0)

    def _project(self, vectors: np.ndarray) -> np.ndarray:
        if self._offset is None:  # once per fit
            self._offset = self.mean.astype(np.float64) @ self.basis.astype(np.float64).T
        return (np.asarray(vectors, dtype=np.float32) @ self.basis.T).astype(np.float64) - self._offset

    def extend(self, vec: np.ndarray) -> None:
        """Widen the ranges to cover one new or merged vector."""
        if self.n_fit < 2:
            return
        u = self._project(np.asarray(vec).reshape(1, -1))[0]
        self.lo = np.minimum(self.lo, u)
        self.hi = np.maximum(self.hi, u)

    def volume(self, n: int, floor: float) -> float:
        """The bounding-box volume V of §2.4 (1 when N < 2); components the fit lacks have range 0, floored."""
        if n < 2 or self.n_fit < 2:
            return 1.0
        ranges = np.maximum(self.hi - self.lo, floor)
        return float(np.exp(np.log(ranges).sum() + (self.k - len(ranges)) * math.log(floor)))

    def nbytes(self) -> int:
        """Memory held by the fit."""
        return 200 + self.mean.nbytes + self.basis.nbytes + self.lo.nbytes + self.hi.nbytes

    # ----------------------------------------------------------- persistence
    def to_blobs(self) -> tuple[bytes | None, bytes | None, bytes | None, bytes | None]:
        """``(mean, basis, lo, hi)``: float32, float32 (m rows), float64, float64 bytes; all None before a fit."""
        if self.n_fit < 2:
            return None, None, None, None
        return (
            np.ascontiguousarray(self.mean, dtype=np.float32).tobytes(),
            np.ascontiguousarray(self.basis, dtype=np.float32).tobytes(),
            np.ascontiguousarray(self.lo, dtype=np.float64).tobytes(),
            np.ascontiguousarray(self.hi, dtype=np.float64).tobytes(),
        )

    @classmethod
    def from_blobs(
        cls,
        dim: int,
        k: int,
        mean: bytes | None,
        basis: bytes | None,
        lo: bytes | None,
        hi: bytes | None,
        n_fit: int,
        stale: bool,
    ) -> Density:
        """The inverse of :meth:`to_blobs` (also reads the float64, k-row blobs of earlier versions).

        Missing or mis-sized blobs of a fitted state give a stale, empty fit (refit at the next step).
        """
        if int(n_fit) < 2 and mean is None:
            return cls(dim, k, n_fit=int(n_fit), stale=bool(stale))
        try:
            if mean is None or basis is None or lo is None or hi is None:
                raise ValueError
            dtype = np.float64 if len(mean) == 8 * dim else np.float32
            m = len(basis) // (np.dtype(dtype).itemsize * dim)
            if m > k or len(lo) != 8 * m or len(hi) != 8 * m:
                raise ValueError
            out = cls(
                dim,
                k,
                np.frombuffer(mean, dtype=dtype).astype(np.float32).reshape(dim),
                np.frombuffer(basis, dtype=dtype).astype(np.float32).reshape(m, dim),
                np.frombuffer(lo, dtype=np.float64).copy(),
                np.frombuffer(hi, dtype=np.float64).copy(),
                int(n_fit),
                bool(stale),
            )
        except ValueError:
            return cls(dim, k)
        return out
