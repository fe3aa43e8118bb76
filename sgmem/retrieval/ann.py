"""Approximate nearest neighbours over a scope's sentence vectors (the kNN edges of large scopes).

SGMem links each new sentence to its ``k`` most similar earlier sentences
(ALGORITHMS §1.2 step 4). Done exactly, an add of ``b`` sentences to a scope
of ``N`` costs ``b · N · d`` multiply-adds: the write path slows down as the
scope grows and a bulk build is quadratic. Past
``GraphConfig.knn_ann_min_sentences`` [D] the candidates come instead from
an HNSW graph (Malkov & Yashunin 2018) whose search cost grows with log N.
The graph holds no vectors of its own: its storage *is* the scope's flat
index of float32 sentence vectors (:meth:`AnnIndex.attach`; one copy in
memory, the links cost about 2·M ids per sentence), so candidates are found
and scored with exact cosines, and the edge weights and the
``knn_min_cosine`` cut are exact — only *which* neighbours are found is
approximate. Its cache file holds the links only (the vectors are in the
flat index's file). Edge recall
against exact kNN is measured by ``python -m benchmarks.scale`` (≥ 0.95).

The HNSW index is a cache like the FAISS flat files: rebuilt from the
vectors whenever it is missing, torn or stale (it records the scope's
generation and its row count, and a digest of its bytes).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from ..gate.blas import SMALL_FAISS_BATCH, faiss_single_thread

__all__ = ["AnnIndex", "build_ann", "ensure_ann", "in_background"]

#: an add's kNN search is split over threads only in parts of at least this many queries
#: (an HNSW search of one query costs about 100 µs at 50k sentences; a part's hand-off about 20)
MIN_QUERIES_PER_PART = 8


def _faiss() -> Any:
    import faiss

    return faiss


class AnnIndex:
    """HNSW (inner product, float32 flat storage) over sentence rows ``0..ntotal-1``."""

    def __init__(self, dim: int, m: int, ef_construction: int, ef_search: int, index: Any = None) -> None:
        faiss = _faiss()
        self.dim, self.m, self.ef_construction, self.ef_search = dim, m, ef_construction, ef_search
        if index is None:
            index = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
        self.index = index
        self.index.hnsw.efSearch = ef_search
        self._storage: Any = None  # the flat index the links point into, when attached to one

    def storage(self) -> Any:
        """The flat index holding the vectors (kept alive as long as this index)."""
        if self._storage is None:
            st = _faiss().downcast_index(self.index.storage)
            st.referenced_objects = [self.index]  # the HNSW index owns this storage: the wrapper keeps it alive
            self._storage = st
        return self._storage

    def attach(self, flat: Any) -> None:
        """Make ``flat`` (a deserialised flat index of the same rows) this graph's storage, not copied."""
        if self.index.storage is not None and self.index.own_fields:
            raise ValueError("this HNSW index already owns a storage")
        self.index.storage = flat
        self.index.own_fields = False
        self._storage = flat

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def extend(self, vecs: np.ndarray) -> None:
        """Index the rows of ``vecs`` not indexed yet (``vecs`` = every sentence vector, in row order)."""
        if len(vecs) <= self.ntotal:
            return
        with faiss_single_thread(len(vecs) - self.ntotal < SMALL_FAISS_BATCH):  # an add's few dozen: one thread
            self.index.add(np.ascontiguousarray(vecs[self.ntotal :], dtype=np.float32))

    def add_rows(self, vecs: np.ndarray) -> None:
        """Append ``vecs`` (new rows) to the storage and link them (an add's few dozen on one OpenMP thread)."""
        with faiss_single_thread(len(vecs) < SMALL_FAISS_BATCH):
            self.index.add(np.ascontiguousarray(vecs, dtype=np.float32))

    def candidates(self, queries: np.ndarray, k: int, threads: int = 1) -> np.ndarray:
        """Row ids of about the ``k`` nearest indexed rows of each query (-1 pads).

        ``threads`` > 1 splits a small batch (an add's few dozen) over that
        many threads, the calling one and :func:`sgmem.retrieval.dense.scan_pool`'s,
        each searching its part on one OpenMP thread (FAISS releases the GIL).
        Each query's search is independent of the others, so the ids are the
        same as one search's.
        """
        if self.ntotal == 0 or len(queries) == 0:
            return np.full((len(queries), k), -1, dtype=np.int64)
        q = np.ascontiguousarray(queries, dtype=np.float32)
        kk = min(k, self.ntotal)
        parts = min(threads, len(q) // MIN_QUERIES_PER_PART) if len(q) < SMALL_FAISS_BATCH else 1
        if parts <= 1:
            with faiss_single_thread(len(q) < SMALL_FAISS_BATCH):
                return self.index.search(q, kk)[1]
        from .dense import scan_pool

        def part(lo: int, hi: int) -> np.ndarray:
            with faiss_single_thread():
                return self.index.search(q[lo:hi], kk)[1]

        cuts = np.linspace(0, len(q), parts + 1).astype(int)
        futs = [scan_pool(parts).submit(part, lo, hi) for lo, hi in zip(cuts[1:-1], cuts[2:], strict=True)]
        try:
            first = part(0, int(cuts[1]))
        finally:
            wait(futs)  # the parts read the storage in place: none may outlive the call (an append may follow)
        return np.concatenate([first, *(f.result() for f in futs)])

    def top_k(self, queries: np.ndarray, vecs: np.ndarray, k: int, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosines of the approximate top-``k`` (candidates re-scored against ``vecs``).

        Returns ``(cosines, rows)`` shaped ``(len(queries), k')``; missing
        entries have cosine ``-inf`` and row ``-1``.
        """
        pool = max(2 * k, k + 8)  # [D] re-scoring twice k candidates recovers most quantisation misorders
        ids = self.candidates(queries, pool, threads)
        safe = np.maximum(ids, 0)
        sims = np.einsum("qd,qcd->qc", queries, vecs[safe])
        sims = np.where(ids >= 0, sims, -np.inf)
        kk = min(k, sims.shape[1])
        part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk] if kk < sims.shape[1] else np.argsort(-sims, axis=1)
        return np.take_along_axis(sims, part, axis=1), np.take_along_axis(ids, part, axis=1)

    def nbytes(self) -> int:
        """Resident bytes of the links (the vectors are the flat index's, counted there)."""
        h = self.index.hnsw
        return int(h.neighbors.size() * 4 + h.offsets.size() * 8 + h.levels.size() * 4 + h.assign_probas.size() * 8)

    def serialize(self) -> Any:
        """The links without the vectors (FAISS ``IO_FLAG_SKIP_STORAGE``)."""
        faiss = _faiss()
        w = faiss.VectorIOWriter()
        faiss.write_index(self.index, w, faiss.IO_FLAG_SKIP_STORAGE)
        return faiss.vector_to_array(w.data)

    @staticmethod
    def read_links(data: Any) -> Any:
        """An HNSW index without storage from :meth:`serialize`'s bytes (attach the vectors before use)."""
        faiss = _faiss()
        r = faiss.VectorIOReader()
        faiss.copy_array_to_vector(np.frombuffer(data, dtype=np.uint8), r.data)
        return faiss.read_index(r, faiss.IO_FLAG_SKIP_STORAGE)


def ensure_ann(idx: Any, cfg: Any) -> AnnIndex | None:
    """The scope's HNSW index when ``cfg`` (a :class:`sgmem.GraphConfig`) wants one, built or extended
    to every sentence row; None when the kNN edges are to be exact."""
    use = cfg.knn_index == "hnsw" or (cfg.knn_index == "auto" and idx.n_sentences >= cfg.knn_ann_min_sentences)
    if not use or cfg.knn_k <= 0:
        return None
    own = getattr(idx, "own_vectors", None)
    if own is not None:
        own()  # the add links its rows into the storage: vectors mapped from a cache file are copied first
    ann: AnnIndex | None = idx.ann
    if ann is None or ann.m != cfg.knn_hnsw_m or ann.ntotal != idx.n_sentences:
        ann = build_ann(idx, cfg)
    if ann.index.hnsw.efSearch != cfg.knn_hnsw_ef_search:  # unchanged while an add's early search may run
        ann.index.hnsw.efSearch = cfg.knn_hnsw_ef_search
    return ann


def build_ann(idx: Any, cfg: Any) -> AnnIndex:
    """A new HNSW index over every sentence of ``idx`` that becomes its sentence storage (one copy of the vectors)."""
    ann = AnnIndex(idx.dim, cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
    ann.extend(idx.sentence_vectors())  # copies the vectors into the graph's own flat storage ...
    idx.use_ann(ann)  # ... which replaces the scope's flat index: the old copy is freed
    return ann


_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def _forget_worker() -> None:
    """In a forked child: the parent's worker thread does not exist there; the next add starts a new one."""
    global _worker, _worker_lock
    _worker, _worker_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_worker)


def in_background(fn: Any, *args: Any, **kwargs: Any) -> Future[Any]:
    """``fn(*args, **kwargs)`` on the write path's worker thread: one thread for the process, first in first out.

    An add past ``knn_ann_min_sentences`` spends most of its engine time in
    FAISS: the HNSW search for its new sentences' kNN edges and their
    insertion into the graph (about 110 and 140 µs per sentence at 50k on
    this project's 2-core machine). FAISS and BLAS release the GIL, so both
    run here while the calling thread inserts the add's rows into SQLite
    and commits (:func:`sgmem.write.apply_add`). One worker keeps the order
    of what is submitted: an add's search, which reads the flat storage,
    finishes before its insertion appends to it. The results are those of
    the same calls made in line (same rows, same order, one OpenMP thread
    for an add's few dozen: ``faiss_single_thread`` is per thread). The
    caller waits for the results before the index is read or extended again
    (under the Memory's lock), and discards the scope's cached index if its
    transaction fails: the storage would hold rows that were not stored.
    """
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sgmem-knn")
        return _worker.submit(fn, *args, **kwargs)
