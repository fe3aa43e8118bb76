"""Approximate nearest neighbours over a scope's sentence vectors (the kNN edges of large scopes).

SGMem links each new sentence to its ``k`` most similar earlier sentences
(ALGORITHMS §1.2 step 4). Done exactly, an add of ``b`` sentences to a scope
of ``N`` costs ``b · N · d`` multiply-adds: the write path slows down as the
scope grows and a bulk build is quadratic. Past
``GraphConfig.knn_ann_min_sentences`` [D] the candidates come instead from
an HNSW graph (Malkov & Yashunin 2018) whose search cost grows with log N;
its vectors are 8-bit scalar-quantised (a quarter of the float32 copy) and
every candidate is re-scored exactly against the float32 vectors of the
flat index, so the edge weights and the ``knn_min_cosine`` cut use exact
cosines — only *which* neighbours are found is approximate. Edge recall
against exact kNN is measured by ``python -m benchmarks.scale`` (≥ 0.95).

The HNSW index is a cache like the FAISS flat files: rebuilt from the
vectors whenever it is missing, torn or stale (it records the scope's
generation and its row count, and a digest of its bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..gate.blas import SMALL_FAISS_BATCH, faiss_single_thread

__all__ = ["AnnIndex", "approx_cosines", "ensure_ann"]


def _faiss() -> Any:
    import faiss

    return faiss


class AnnIndex:
    """HNSW (8-bit scalar quantised, inner product) over sentence rows ``0..ntotal-1``."""

    def __init__(self, dim: int, m: int, ef_construction: int, ef_search: int, index: Any = None) -> None:
        faiss = _faiss()
        self.dim, self.m, self.ef_construction, self.ef_search = dim, m, ef_construction, ef_search
        if index is None:
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
        self.index = index
        self.index.hnsw.efSearch = ef_search

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def extend(self, vecs: np.ndarray) -> None:
        """Index the rows of ``vecs`` not indexed yet (``vecs`` = every sentence vector, in row order)."""
        if len(vecs) <= self.ntotal:
            return
        if not self.index.is_trained:
            # per-dimension ranges of the 8-bit codes: learnt once on the first vectors; later
            # vectors outside them are clipped, which only affects candidate order (re-scored exactly)
            self.index.train(np.ascontiguousarray(vecs[: min(len(vecs), 65536)], dtype=np.float32))
        with faiss_single_thread(len(vecs) - self.ntotal < SMALL_FAISS_BATCH):  # an add's few dozen: one thread
            self.index.add(np.ascontiguousarray(vecs[self.ntotal :], dtype=np.float32))

    def candidates(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Row ids of about the ``k`` nearest indexed rows of each query (-1 pads)."""
        if self.ntotal == 0 or len(queries) == 0:
            return np.full((len(queries), k), -1, dtype=np.int64)
        with faiss_single_thread(len(queries) < SMALL_FAISS_BATCH):
            _, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), min(k, self.ntotal))
        return ids

    def top_k(self, queries: np.ndarray, vecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosines of the approximate top-``k`` (candidates re-scored against ``vecs``).

        Returns ``(cosines, rows)`` shaped ``(len(queries), k')``; missing
        entries have cosine ``-inf`` and row ``-1``.
        """
        pool = max(2 * k, k + 8)  # [D] re-scoring twice k candidates recovers most quantisation misorders
        ids = self.candidates(queries, pool)
        safe = np.maximum(ids, 0)
        sims = np.einsum("qd,qcd->qc", queries, vecs[safe])
        sims = np.where(ids >= 0, sims, -np.inf)
        kk = min(k, sims.shape[1])
        part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk] if kk < sims.shape[1] else np.argsort(-sims, axis=1)
        return np.take_along_axis(sims, part, axis=1), np.take_along_axis(ids, part, axis=1)

    def nbytes(self) -> int:
        """Resident bytes: 8-bit codes plus the HNSW links (about 2·M ids at level 0)."""
        return self.ntotal * (self.dim + 4 * 2 * self.m + 16)

    def serialize(self) -> Any:
        return _faiss().serialize_index(self.index)

    @classmethod
    def deserialize(cls, data: Any, dim: int, m: int, ef_construction: int, ef_search: int) -> AnnIndex | None:
        """An index from bytes, or None if they are not an HNSW-SQ index of this shape."""
        faiss = _faiss()
        index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        if not isinstance(index, faiss.IndexHNSWSQ) or index.d != dim or index.hnsw.nb_neighbors(1) != 2 * m:
            return None
        return cls(dim, m, ef_construction, ef_search, index=index)


def ensure_ann(idx: Any, cfg: Any) -> AnnIndex | None:
    """The scope's HNSW index when ``cfg`` (a :class:`sgmem.GraphConfig`) wants one, built or extended
    to every sentence row; None when the kNN edges are to be exact."""
    use = cfg.knn_index == "hnsw" or (cfg.knn_index == "auto" and idx.n_sentences >= cfg.knn_ann_min_sentences)
    if not use or cfg.knn_k <= 0:
        return None
    ann: AnnIndex | None = idx.ann
    if ann is None or ann.m != cfg.knn_hnsw_m or ann.ntotal > idx.n_sentences:
        ann = AnnIndex(idx.dim, cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
    ann.index.hnsw.efSearch = cfg.knn_hnsw_ef_search
    ann.extend(idx.sentence_vectors())
    idx.ann = ann
    return ann


def approx_cosines(idx: Any, q: np.ndarray, config: Any) -> np.ndarray | None:
    """Query cosines from the HNSW index when ``config`` (a :class:`sgmem.Config`) asks for them.

    The ``dense_ann_candidates`` nearest sentences get their exact cosine,
    every other sentence −1. None when the scope is to be scanned exactly.
    """
    if config.dense_index != "hnsw" or idx.n_sentences < config.dense_ann_min_sentences or idx.n_sentences == 0:
        return None
    g = config.graph
    ann = ensure_ann(idx, g) if g.knn_k > 0 else None
    if ann is None:  # kNN edges off: an index of its own, same parameters
        ann = idx.ann or AnnIndex(idx.dim, g.knn_hnsw_m, g.knn_hnsw_ef_construction, g.knn_hnsw_ef_search)
        ann.extend(idx.sentence_vectors())
        idx.ann = ann
    n_cand = min(config.dense_ann_candidates, idx.n_sentences)
    ann.index.hnsw.efSearch = max(g.knn_hnsw_ef_search, n_cand)
    qv = np.ascontiguousarray(q, dtype=np.float32).reshape(1, -1)
    rows = ann.candidates(qv, n_cand)[0]
    rows = rows[rows >= 0]
    out = np.full(idx.n_sentences, -1.0, dtype=np.float32)
    out[rows] = idx.sentence_vectors()[rows] @ qv[0]
    return out
