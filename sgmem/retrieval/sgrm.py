"""SGRM: segment-graph retrieval (ALGORITHMS §5; seed paper §3.1–3.6), ``mode="sgrm"``.

Segments are built from a scope's turn index on first use and cached per
scope generation (a cache of SQLite like the rest of the index): each
thread's turns, in order, are packed into windows of ``segment_tokens``
tokens (§3.1; [D] whole turns only). A segment's vector is the normalised sum
of its turns' sentence vectors ([D]: the paper embeds the segment's text; this
costs no embedding and equals the turn-vector rule of :func:`sgmem.ingest.turn_vectors`).
Edges (§3.3): chronological ``(v_{i-1}, v_i)`` within a thread, and for each
segment directed edges to its ``knn_k`` most similar earlier segments; the
walk follows both directions ([C]: the paper's BFS direction is not stated).

The graph is held as arrays: segment ``i``'s turn rows are
``turns[ptr[i]:ptr[i+1]]`` and its neighbours (both directions, sorted,
without duplicates) ``indices[indptr[i]:indptr[i+1]]`` (CSR), about
16 bytes per edge instead of a Python set per segment.

The similarity edges are exact (every earlier segment compared, a block of
segments at a time: O(segments²)) or, past ``SGRMConfig.knn_ann_min_segments``
[D], found by an HNSW index (:class:`sgmem.retrieval.ann.AnnIndex`) built
*incrementally* in segment order: a block of segments searches the index
holding every earlier block, its own earlier segments are compared exactly,
and then it is added; so a segment only ever finds earlier segments (the
§3.3 constraint holds exactly, only which earlier ones are found is
approximate) and the build costs about ``segments · log(segments)``. The
HNSW index is dropped once the edges are built. Edge recall against the
exact path is checked by the tests (tie-aware).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .heap import release_free_heap

__all__ = ["Segments", "segments_of", "sgrm_search"]

#: segments compared or searched at once while building the similarity edges
BLOCK = 512


class Segments:
    """One scope's segment graph (arrays; see the module docstring)."""

    __slots__ = ("ptr", "turns", "vecs", "indptr", "indices", "approximate")

    def __init__(
        self,
        ptr: np.ndarray,
        turns: np.ndarray,
        vecs: np.ndarray,
        indptr: np.ndarray,
        indices: np.ndarray,
        approximate: bool = False,
    ) -> None:
        self.ptr, self.turns, self.vecs = ptr, turns, vecs
        self.indptr, self.indices = indptr, indices
        self.approximate = approximate  # True when the similarity edges came from the HNSW path

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def rows_of(self, i: int) -> np.ndarray:
        """Turn rows of segment ``i``, in conversation order."""
        return self.turns[self.ptr[i] : self.ptr[i + 1]]

    def neighbours(self, i: int) -> np.ndarray:
        """Segments linked to ``i`` (chronological or similarity, either direction), ascending."""
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    @property
    def rows(self) -> list[list[int]]:
        """Every segment's turn rows as lists (for inspection and tests; builds Python lists)."""
        return [self.rows_of(i).tolist() for i in range(len(self))]

    @property
    def adj(self) -> list[set[int]]:
        """Every segment's neighbours as sets (for inspection and tests; builds Python sets)."""
        return [set(self.neighbours(i).tolist()) for i in range(len(self))]

    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.ptr, self.turns, self.vecs, self.indptr, self.indices)))


_CACHE: dict[tuple[Any, ...], Segments] = {}
_LOCK = threading.Lock()


def _windows(idx: Any, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ptr, turns, chronological (a, a+1) sources): §3.1 token windows of whole turns, thread by thread."""
    n = idx.n_turns
    codes = np.asarray(idx.array("thread_codes"), dtype=np.int64)[:n]
    # threads in order of first appearance, each thread's turns in row order (a stable sort)
    _, first = np.unique(codes, return_index=True)
    rank = np.empty(int(codes.max()) + 1 if n else 0, dtype=np.int64)
    rank[codes[np.sort(first)]] = np.arange(len(first))
    order = np.argsort(rank[codes], kind="stable") if n else np.zeros(0, dtype=np.int64)
    tokens = np.asarray(idx.array("tokens"))[order].tolist()
    thread_of = codes[order].tolist()
    starts: list[int] = []
    chrono: list[int] = []
    used = 0
    prev_thread = None
    for pos, (t, th) in enumerate(zip(tokens, thread_of, strict=True)):
        if th != prev_thread:  # a new thread starts a new segment (no chronological edge across threads)
            starts.append(pos)
            used, prev_thread = 0, th
        elif used + t > window:
            chrono.append(len(starts) - 1)
            starts.append(pos)
            used = 0
        used += int(t)
    ptr = np.asarray(starts + [n], dtype=np.int64)
    return ptr, order.astype(np.int32), np.asarray(chrono, dtype=np.int64)


def _segment_vectors(idx: Any, ptr: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """Normalised float64 sums of each segment's turn vectors, as float32."""
    tv = idx.turn_vectors()  # float32, derived from the sentence vectors
    n_seg = len(ptr) - 1
    vecs = np.zeros((n_seg, tv.shape[1] if tv.ndim == 2 else 0), dtype=np.float32)
    step = 4096
    for s0 in range(0, n_seg, step):
        s1 = min(s0 + step, n_seg)
        lo, hi = int(ptr[s0]), int(ptr[s1])
        sums = np.add.reduceat(tv[turns[lo:hi]].astype(np.float64), ptr[s0:s1] - lo, axis=0)
        for i in range(s1 - s0):  # the 1-d norm of the former per-segment loop, bit for bit
            nrm = np.linalg.norm(sums[i])
            vecs[s0 + i] = sums[i] / nrm if nrm > 0 else sums[i]
    return vecs


def exact_edges(vecs: np.ndarray, k: int, block: int = BLOCK) -> np.ndarray:
    """§3.3 similarity edges, exactly: each segment's ``k`` most similar earlier segments, as (n·k', 2) pairs."""
    pairs: list[np.ndarray] = []
    # similarities a block of segments at a time: memory O(block · segments), not O(segments²)
    for b0 in range(1, len(vecs), block):
        b1 = min(b0 + block, len(vecs))
        sims = vecs[b0:b1] @ vecs[:b1].T
        for i in range(b0, b1):
            # §3.3: directed edges to the top-k most similar earlier segments (j < i)
            top = np.argsort(-sims[i - b0, :i])[:k]
            pairs.append(np.stack([np.full(len(top), i), top], axis=1))
    return np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)


def approximate_edges(
    vecs: np.ndarray, k: int, m: int, ef_construction: int, ef_search: int, block: int = BLOCK
) -> np.ndarray:
    """§3.3 similarity edges from an HNSW index built in segment order (earlier segments only), as pairs."""
    from .ann import AnnIndex

    n = len(vecs)
    ann = AnnIndex(vecs.shape[1], m, ef_construction, ef_search)
    pool = max(2 * k, k + 8)  # [D] as AnnIndex.top_k: candidates re-scored with exact cosines
    out_i: list[np.ndarray] = []
    out_j: list[np.ndarray] = []
    for b0 in range(0, n, block):
        b1 = min(b0 + block, n)
        q = np.ascontiguousarray(vecs[b0:b1])
        # candidates among the earlier blocks (everything in the index is earlier) ...
        ids = ann.candidates(q, pool) if b0 else np.zeros((b1 - b0, 0), dtype=np.int64)
        safe = np.maximum(ids, 0)
        sims = np.einsum("qd,qcd->qc", q, vecs[safe]) if ids.size else np.zeros(ids.shape, dtype=np.float32)
        sims = np.where(ids >= 0, sims, -np.inf)
        # ... and the block's own earlier segments, exactly (j < i within the block)
        inner = q @ q.T
        inner[np.triu_indices(b1 - b0)] = -np.inf
        cand = np.concatenate([ids, np.broadcast_to(np.arange(b0, b1), inner.shape)], axis=1)
        cs = np.concatenate([sims, inner], axis=1)
        kk = min(k, cs.shape[1])
        top = np.argsort(-cs, axis=1, kind="stable")[:, :kk]
        got_s = np.take_along_axis(cs, top, axis=1)
        got_j = np.take_along_axis(cand, top, axis=1)
        keep = np.isfinite(got_s)
        out_i.append(np.broadcast_to(np.arange(b0, b1)[:, None], keep.shape)[keep])
        out_j.append(got_j[keep])
        ann.add_rows(q)
    if not out_i:
        return np.zeros((0, 2), dtype=np.int64)
    return np.stack([np.concatenate(out_i), np.concatenate(out_j)], axis=1).astype(np.int64)


def _csr(n: int, chrono: np.ndarray, knn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Undirected adjacency of the chronological ``(a, a+1)`` and similarity ``(i, j)`` edges, as CSR."""
    a = np.concatenate([chrono, knn[:, 0]]).astype(np.int64)
    b = np.concatenate([chrono + 1, knn[:, 1]]).astype(np.int64)
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    key = np.unique(src * max(n, 1) + dst)  # sorted by (src, dst), duplicates dropped
    src, dst = key // max(n, 1), key % max(n, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst.astype(np.int32)


def build_segments(idx: Any, cfg: Any) -> Segments:
    """The segment graph of ``idx`` under ``cfg`` (an :class:`sgmem.SGRMConfig`)."""
    ptr, turns, chrono = _windows(idx, cfg.segment_tokens)
    vecs = _segment_vectors(idx, ptr, turns)
    n = len(ptr) - 1
    approximate = cfg.knn_index == "hnsw" or (cfg.knn_index == "auto" and n >= cfg.knn_ann_min_segments)
    if n < 2 or cfg.knn_k <= 0:
        knn = np.zeros((0, 2), dtype=np.int64)
    elif approximate:
        knn = approximate_edges(vecs, cfg.knn_k, cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
    else:
        knn = exact_edges(vecs, cfg.knn_k)
    indptr, indices = _csr(n, chrono, knn)
    seg = Segments(ptr, turns, vecs, indptr, indices, approximate)
    del knn, chrono
    release_free_heap()  # the turn vectors and similarity blocks were temporaries
    return seg


def segments_of(idx: Any, cfg: Any, k: int | None = None) -> Segments:
    """The scope's segment graph for ``cfg`` (cached per scope generation).

    ``cfg`` is an :class:`sgmem.SGRMConfig`; ``segments_of(idx, window, k)``
    (the former signature) builds with the default edge settings.
    """
    if not hasattr(cfg, "segment_tokens"):
        from ..config import SGRMConfig

        cfg = SGRMConfig(segment_tokens=int(cfg), knn_k=int(k if k is not None else 3))
    key = (idx.scope_id, idx.generation, idx.n_turns, cfg)
    with _LOCK:
        seg = _CACHE.get(key)
    if seg is None:
        seg = build_segments(idx, cfg)
        with _LOCK:
            for old in [x for x in _CACHE if x[0] == idx.scope_id]:
                del _CACHE[old]
            _CACHE[key] = seg
    return seg


def _walk(seg: Segments, seed: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """§3.6 BFS from ``seed`` to ``depth`` hops: (segments reached, their hop counts)."""
    reached = [np.array([seed], dtype=np.int64)]
    hops = [np.zeros(1, dtype=np.int64)]
    seen = {seed}
    frontier = reached[0]
    for d in range(1, depth + 1):
        if not frontier.size:
            break
        nxt = np.unique(np.concatenate([seg.indices[seg.indptr[u] : seg.indptr[u + 1]] for u in frontier.tolist()]))
        nxt = np.array([v for v in nxt.tolist() if v not in seen], dtype=np.int64)
        seen.update(nxt.tolist())
        reached.append(nxt)
        hops.append(np.full(len(nxt), d, dtype=np.int64))
        frontier = nxt
    return np.concatenate(reached), np.concatenate(hops)


def sgrm_search(
    idx: Any, q: np.ndarray, k: int, allowed: np.ndarray | None, cfg: Any
) -> list[tuple[str, list[int], float, dict[str, Any]]]:
    """Seed segment (§3.5), BFS to ``cfg.depth`` (§3.6), the ``top_n`` reachable segments by similarity."""
    seg = segments_of(idx, cfg)
    if not len(seg):
        return []
    sims = seg.vecs @ q.astype(np.float32)
    if allowed is None:
        ok = np.ones(len(seg), dtype=bool)
    else:
        ok = np.logical_or.reduceat(np.asarray(allowed, dtype=bool)[seg.turns], seg.ptr[:-1])
    if not ok.any():
        return []
    seed = int(np.argmax(np.where(ok, sims, -np.inf)))
    reached, hop_of = _walk(seg, seed, cfg.depth)
    mask = ok[reached]
    reached, hop_of = reached[mask], hop_of[mask]
    order = np.lexsort((reached, -sims[reached]))[: min(cfg.top_n, k)]  # by similarity, then segment id
    sent = idx.sentence_vectors()
    out = []
    for pos in order.tolist():
        v = int(reached[pos])
        # a hit's messages are in conversation order (``Hit.message_ids``): a thread's turns by message row id
        rs = sorted(
            (int(r) for r in seg.rows_of(v) if allowed is None or allowed[r]), key=lambda r: int(idx.msg_ids[r])
        )
        why = {
            "mode": "sgrm",
            "segment": v,
            "seed": v == seed,
            "hop": int(hop_of[pos]),
            "cosine": round(float(sims[v]), 4),
            "turns": len(rs),
        }
        if cfg.order == "similarity":
            # [D] which turns matched best: positions in the hit's messages, best sentence cosine first
            best = {r: max((float(sent[s] @ q) for s in idx.msg_sents[r]), default=-1.0) for r in rs}
            why["best_turns"] = sorted(range(len(rs)), key=lambda i: (-best[rs[i]], i))
        out.append(("segment", rs, float(sims[v]), why))
    return out
