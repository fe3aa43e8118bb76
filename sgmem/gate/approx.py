"""Approximate vMF scoring from the top-k neighbours of a FAISS IVF index.

Exact scoring reads every fact: O(N·d) per candidate (≈ 22 ms at N = 100k,
d = 384 on a 2-core machine). The approximation finds the ``k`` nearest facts
(default 1024) with an inverted-file index (``IndexIVFFlat``, inner product,
≈ 4√N lists, ``nprobe`` of them read) and stands in for the rest with their
mean cosine, which is exact and O(d) from the running sum of the fact
vectors the gate keeps anyway:

    μ_rest = (cᵀ Σ_i m_i − Σ_{top} cos_i) / (N − k)
    s_approx = (log(Σ_{top} e^{κ cos_i} + (N − k) e^{κ μ_rest}) − log N) / κ

Error bound. By Jensen's inequality ``Σ_rest e^{κ cos} ≥ (N − k) e^{κ μ_rest}``
for *any* split, so ``s_approx ≤ s_exact`` always: the approximation can only
make a candidate look more novel (Noop → Update → Add), never discard what
the exact gate would keep. When the index returns the true top-k (it scans
about 2k facts to make that likely, :meth:`IVFScorer.probes_for`; the
benchmark reports how often it held), every other cosine is at most the
k-th one, so

    0 ≤ s_exact − s_approx ≤ (1/κ) log( (S_top + (N − k) e^{κ cos_(k)})
                                         / (S_top + (N − k) e^{κ μ_rest}) )

which :func:`approx_score` returns as ``bound`` with every score. The
Update target is the index's top-1 (the true nearest memory whenever the
probed lists hold it).

The index is a cache of the gate's fact matrix. Its coarse centroids are
persisted with the gate state, so a restarted process rebuilds the same index
and routes the same stream identically.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .blas import SMALL_FAISS_BATCH, faiss_single_thread
from .vmf import VmfScore

__all__ = ["IVFScorer", "approx_score", "n_lists"]


def _faiss() -> Any:
    import faiss

    return faiss


def n_lists(n: int) -> int:
    """Inverted lists for ``n`` vectors: ≈ 4√n, at most 4096 and never more than ``n``."""
    return int(max(1, min(4096, n, round(4 * math.sqrt(max(n, 1))))))


class IVFScorer:
    """Top-k neighbour search over the gate's facts, row-aligned with the gate's matrix.

    Args:
        dim: vector dimension.
        centroids: trained coarse centroids (``(nlist, dim)`` float32); train
            with :meth:`train` when none are persisted yet.
        nprobe: lists probed per search.
    """

    def __init__(self, dim: int, centroids: np.ndarray, nprobe: int, n_train: int) -> None:
        faiss = _faiss()
        self.dim = dim
        self.n_train = n_train
        self.saved = False  # whether the centroids are persisted with the gate state
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        quantizer = faiss.IndexFlatIP(dim)
        quantizer.add(self.centroids)
        index = faiss.IndexIVFFlat(quantizer, dim, len(self.centroids), faiss.METRIC_INNER_PRODUCT)
        index.is_trained = True
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
        index.nprobe = nprobe
        self._quantizer = quantizer  # the IVF index does not own it: keep it alive
        self.index = index

    @classmethod
    def train(cls, vectors: np.ndarray, nprobe: int, seed: int = 1234) -> IVFScorer:
        """Train centroids on ``vectors`` (evenly spaced sample, fixed seed: deterministic)."""
        faiss = _faiss()
        n, dim = vectors.shape
        nlist = n_lists(n)
        take = min(n, 64 * nlist)
        sample = vectors if take == n else vectors[np.linspace(0, n - 1, take).round().astype(np.int64)]
        km = faiss.Kmeans(dim, nlist, niter=10, seed=seed, spherical=True, verbose=False)
        km.train(np.ascontiguousarray(sample, dtype=np.float32))
        return cls(dim, km.centroids, nprobe, n)

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def probes_for(self, k: int, nprobe: int) -> int:
        """Lists to read so that about 2k facts are scanned (at least ``nprobe``).

        [D] Scanning twice as many facts as are kept makes it likely that the
        ``k`` returned are the true k nearest, the premise of the error bound.
        """
        nlist = len(self.centroids)
        per_list = max(self.ntotal / max(nlist, 1), 1.0)
        return int(min(nlist, max(nprobe, math.ceil(2 * k / per_list))))

    def add(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Index ``vectors`` under the gate's row numbers ``rows``."""
        if len(rows):
            with faiss_single_thread(len(rows) < SMALL_FAISS_BATCH):  # an add's few facts: one thread
                self.index.add_with_ids(
                    np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(rows, dtype=np.int64)
                )

    def replace(self, row: int, vector: np.ndarray) -> None:
        """A merged fact's new vector (an Update)."""
        self.index.remove_ids(np.asarray([row], dtype=np.int64))
        self.add(np.asarray([row]), np.asarray(vector).reshape(1, -1))


def approx_score(
    rows: np.ndarray, cos: np.ndarray, n: int, sum_vec: np.ndarray, c: np.ndarray, kappa: float
) -> tuple[VmfScore, float]:
    """``(s_approx, bound)`` from the known cosines ``cos`` of facts ``rows`` (distinct).

    ``sum_vec`` is the sum of all ``n`` fact vectors; the facts not in
    ``rows`` are represented by their mean cosine (see the module docstring).
    """
    cos = np.asarray(cos, dtype=np.float64)
    j = int(np.argmax(cos))
    x = kappa * cos
    m = float(x[j])
    s_top = float(np.exp(x - m).sum())
    lo_sum = hi_sum = s_top
    n_rest = n - cos.size
    if n_rest > 0:
        mu_rest = (float(np.dot(sum_vec, np.asarray(c, dtype=np.float64))) - float(cos.sum())) / n_rest
        c_min = float(cos.min())
        # the rest's mean cannot exceed the smallest kept cosine when the top-k is right;
        # capping it keeps the estimate a lower bound (Jensen) in every case
        mu_rest = min(mu_rest, c_min)
        lo_sum += n_rest * math.exp(kappa * mu_rest - m)
        hi_sum += n_rest * math.exp(kappa * c_min - m)
    s = (m + math.log(lo_sum) - math.log(n)) / kappa
    bound = (math.log(hi_sum) - math.log(lo_sum)) / kappa
    return VmfScore(max(-1.0, min(1.0, s)), int(rows[j]), float(cos[j])), bound
