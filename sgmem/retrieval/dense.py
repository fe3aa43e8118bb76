"""Per-turn dense scores from one scan of a query's sentence cosines.

A query scans the scope's sentence vectors once (FAISS's SIMD kernel, the
work of an exact flat search). Everything the dense channels need per turn
comes from that array by segment reductions, computed once per query and
shared: a turn's best sentence, the mean of its others, and its whole-turn
cosine (the turn vector is the normalised sum of its sentence vectors, so its
cosine is the sum of the sentence cosines over ‖Σ‖). What is needed only for
the hits — the row of a turn's best sentence, a hit's relevance — is computed
for those turns alone, never as an array over the scope.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .index import ScopeIndex, _faiss, _inner_products

__all__ = [
    "Approx",
    "ScanJob",
    "TurnDense",
    "ann_cosines",
    "relevance_of_rows",
    "scan",
    "scan_pool",
    "scan_threads",
    "score_rows",
    "start_scan",
    "turn_relevance",
]

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _forget_pools() -> None:
    """In a forked child: the parent's scan threads do not exist there (a task queued to their pool would
    never run); the next scan starts new ones."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools)


def scan_threads(config: Any, n_sentences: int) -> int:
    """Threads for the dense scan of a scope of ``n_sentences`` under ``config`` (a :class:`sgmem.Config`).

    One below ``Config.dense_scan_min_sentences``; above it
    ``Config.dense_scan_threads``, or with ``None`` the machine's cores (at
    most 8: the scan is bound by memory bandwidth, which a few cores fill).
    """
    if n_sentences < config.dense_scan_min_sentences:
        return 1
    want = config.dense_scan_threads
    if want is None:
        want = min(8, os.cpu_count() or 1)
    return max(1, int(want))


def scan_pool(threads: int) -> ThreadPoolExecutor:
    """The pool of ``threads - 1`` workers that scans with the calling thread (created once per size)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads - 1, thread_name_prefix="sgmem-scan")
        return pool


#: the scan's parts start at multiples of this many rows: FAISS's kernel for small dimensions
#: (e.g. 8) works on blocks of rows, whose sums differ in the last bit from those of the rows
#: past the last whole block, so a part must start where a block of the whole scan starts
SCAN_ALIGN = 64


def scan(idx: ScopeIndex, q: np.ndarray, threads: int = 1, reduce: bool = True) -> tuple[np.ndarray, Any]:
    """``q ·`` every sentence vector (float32) and, with ``reduce``, each run's max and float64 sum.

    The scope's sentence rows are cut into ``threads`` parts at multiples of
    :data:`SCAN_ALIGN` rows; each part is scanned by FAISS's SIMD kernel (the
    one of :meth:`ScopeIndex.sentence_cosines`, so the values are those of
    one whole scan) and reduces the runs of one turn's sentences that lie
    inside it (``reduceat`` over whole runs gives the whole-array values); a
    run cut by a part boundary is reduced after the parts. FAISS and numpy
    release the GIL, so the parts run in parallel on a pool of threads; the
    calling thread scans parts too. Returns ``(cos, seg)``,
    ``seg`` = (run max, run sum) over ``idx.array("sent_starts")`` or None.
    To do other work while the pool scans, see :class:`ScanJob`.
    """
    return ScanJob(idx, q, threads, reduce).result()


def scan_device(config: Any, n_sentences: int) -> str | None:
    """The accelerator on which ``config`` scans a scope of ``n_sentences``, or None for the CPU scan.

    [D] ``Config.dense_device`` takes the scan from ``dense_scan_min_sentences``
    sentences on, as the scan threads do: below, a search scans on its own
    thread. A device's scan has a fixed cost (the launch, the wait, the
    copy back: 0.49 ms at 100k sentences on an H200 host,
    where the CPU scan took 16 ms on one thread), which a small scope's
    CPU scan undercuts; and a host serving many small scopes keeps no GPU
    copy of each. A Memory resolves ``"auto"`` when it opens
    (:func:`sgmem.retrieval.device.resolve_device`); a config that was never
    resolved (a retriever built from a fresh ``Config``) scans on the CPU.
    """
    device = getattr(config, "dense_device", None)
    if device is None or device == "auto":
        return None
    return device if n_sentences >= int(getattr(config, "dense_scan_min_sentences", 0)) else None


def start_scan(
    idx: ScopeIndex,
    q: np.ndarray,
    config: Any,
    reduce: bool = True,
    parts_per_thread: int = 1,
    weights: np.ndarray | None = None,
) -> Any:
    """Start one query's exact scan: on ``Config.dense_device`` if set and the scope is large enough
    (:func:`scan_device`; :class:`sgmem.retrieval.device.DeviceScanJob`), else on the scan threads
    (:class:`ScanJob`, which reduces the cosines times ``weights`` when given; see its ``weighted``).

    Both give ``result() -> (cos, seg)`` and ``cancel()``; create it under the Memory's lock.
    """
    device = scan_device(config, idx.n_sentences)
    if device is not None:
        from .device import DeviceScanJob

        return DeviceScanJob(idx, q, device, reduce)
    return ScanJob(idx, q, scan_threads(config, idx.n_sentences), reduce, parts_per_thread, weights)


class ScanJob:
    """One query's :func:`scan`, started on the scan pool's threads at construction.

    The calling thread may do other work (a hybrid query's lexical and
    keyword channels, which do not need the cosines) and then :meth:`result`
    joins it: the caller takes the parts no pool thread has claimed, then
    waits for the others. With ``parts_per_thread`` > 1 the rows are cut
    into more parts than threads, so a caller that arrives late still finds
    parts to share. Any cut at multiples of :data:`SCAN_ALIGN` gives the same
    values. With one thread nothing starts before :meth:`result`.

    With ``weights`` (one float32 per sentence row: the hybrid's dialogue-act
    weights) each part also writes the cosines times their weights to
    ``weighted``, and ``seg`` reduces those instead of the raw cosines: the
    reductions the hybrid ranks by, computed by the scan threads in the same
    pass (a run whose weights are all 1 gets its raw values, x × 1 = x).
    """

    def __init__(
        self,
        idx: ScopeIndex,
        q: np.ndarray,
        threads: int = 1,
        reduce: bool = True,
        parts_per_thread: int = 1,
        weights: np.ndarray | None = None,
    ) -> None:
        self.idx = idx
        n = self.n = idx.n_sentences
        self.cos = np.empty(n, dtype=np.float32)
        self.weights = weights if n else None
        self.weighted = np.empty(n, dtype=np.float32) if self.weights is not None else None
        self.starts = idx.array("sent_starts") if n else np.zeros(0, dtype=np.int64)
        self.seg = (
            (np.empty(len(self.starts), dtype=np.float32), np.empty(len(self.starts), dtype=np.float64))
            if reduce and n
            else None
        )
        threads = max(threads, 1)
        parts = threads * max(parts_per_thread, 1) if threads > 1 else 1
        cuts = np.linspace(0, n, parts + 1)[1:-1] // SCAN_ALIGN * SCAN_ALIGN
        self.bounds = np.unique(np.concatenate([[0], cuts, [n]])).astype(np.int64)
        self._claim = itertools.count()  # the next unclaimed part (next() is atomic under the GIL)
        self._cancelled = False
        self._futures = []
        if n:
            self._vecs = idx.sentence_vectors()
            self._qv = np.ascontiguousarray(q, dtype=np.float32).reshape(-1)
            if len(self.bounds) > 2:
                pool = scan_pool(threads)
                self._futures = [pool.submit(self._work) for _ in range(min(threads - 1, len(self.bounds) - 2))]

    def _work(self) -> None:
        while not self._cancelled and (i := next(self._claim)) < len(self.bounds) - 1:
            self._part(i)

    def cancel(self) -> None:
        """Stop claiming parts and wait for those being scanned: the caller failed before :meth:`result`.

        The parts read the scope's vector storage in place (a view valid until the next append), so
        no part may still run once the caller lets an add go ahead (it releases the Memory's lock).
        """
        self._cancelled = True
        for f in self._futures:
            f.exception()  # waits; a part's own error is of no interest once the query has failed

    def _part(self, i: int) -> None:
        faiss = _faiss()
        cos, seg, starts, n = self.cos, self.seg, self.starts, self.n
        lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
        out, rows = faiss.swig_ptr(cos[lo:hi]), faiss.swig_ptr(self._vecs[lo:hi])
        faiss.fvec_inner_products_ny(out, faiss.swig_ptr(self._qv), rows, self.idx.dim, hi - lo)
        red = cos  # the values reduced: the cosines, or the cosines times their weights
        if self.weighted is not None and self.weights is not None:
            red = self.weighted
            np.multiply(cos[lo:hi], self.weights[lo:hi], out=red[lo:hi])
        if seg is not None:
            r0, r1 = np.searchsorted(starts, [lo, hi])  # runs starting in [lo, hi)
            if hi < n and r1 > r0 and (r1 == len(starts) or starts[r1] > hi):
                r1 -= 1  # the last run goes on past hi: reduced after the parts
            if r1 > r0:
                end = int(starts[r1]) if r1 < len(starts) else n
                local = starts[r0:r1] - lo
                np.maximum.reduceat(red[lo:end], local, out=seg[0][r0:r1])
                np.add.reduceat(red[lo:end], local, dtype=np.float64, out=seg[1][r0:r1])

    def result(self) -> tuple[np.ndarray, Any]:
        """``(cos, seg)`` as :func:`scan` returns them; the calling thread scans what is left first."""
        if not self.n:
            return np.zeros(0, dtype=np.float32), None
        try:
            self._work()
        except BaseException:
            self.cancel()  # no part may outlive the call (see cancel)
            raise
        for f in self._futures:
            f.result()
        cos, seg, starts, n = self.cos, self.seg, self.starts, self.n
        if seg is not None:
            red = self.weighted if self.weighted is not None else cos
            for b in self.bounds[1:-1].tolist():  # runs cut by a part boundary
                r = int(np.searchsorted(starts, b, side="right")) - 1
                if starts[r] < b:
                    lo, hi = int(starts[r]), int(starts[r + 1]) if r + 1 < len(starts) else n
                    seg[0][r] = np.maximum.reduceat(red[lo:hi], [0])[0]
                    seg[1][r] = np.add.reduceat(red[lo:hi], [0], dtype=np.float64)[0]
        return cos, seg


class TurnDense:
    """Per-turn reductions of one query's sentence cosines ``cos`` (one entry per sentence row)."""

    __slots__ = ("idx", "cos", "turns", "counts", "_seg")

    def __init__(self, idx: ScopeIndex, cos: np.ndarray, seg: Any = None) -> None:
        self.idx = idx
        self.cos = cos
        self._seg = seg  # (run max, run sum) when :func:`scan` computed them along with ``cos``
        if cos.size:
            self.turns = idx.array("sent_turns")  # turn row of each run of sentences
            self.counts = idx.array("sent_counts")
        else:
            self.turns = self.counts = np.zeros(0, dtype=np.int64)

    def _reduced(self) -> tuple[np.ndarray, np.ndarray]:
        seg = self._seg
        if seg is None:
            if self.cos.size:
                starts = self.idx.array("sent_starts")
                seg = (np.maximum.reduceat(self.cos, starts), np.add.reduceat(self.cos, starts, dtype=np.float64))
            else:
                seg = (np.zeros(0), np.zeros(0))
        if seg[0].dtype != np.float64:
            seg = (seg[0].astype(np.float64), seg[1])
        self._seg = seg
        return seg

    @property
    def seg_max(self) -> np.ndarray:
        """Each run's best sentence cosine (float64; the max is exact in float32)."""
        return self._reduced()[0]

    @property
    def seg_sum(self) -> np.ndarray:
        """Each run's sum of cosines, accumulated in float64 (as over a float64 copy)."""
        return self._reduced()[1]

    def _all_turns(self) -> bool:
        """Whether the runs are the turns themselves (every turn has a sentence): no scatter needed."""
        idx, turns = self.idx, self.turns
        flag = idx.derived(
            "runs_are_turns",
            lambda: np.array(len(turns) == idx.n_turns and bool((turns == np.arange(len(turns))).all())),
        )
        return bool(flag)

    def sim(self, plus: float) -> np.ndarray:
        """``cos + plus`` in float64 (the graph channel's sim)."""
        return np.add(self.cos, plus, dtype=np.float64)

    def best(self, rest_weight: float, missing: float = -np.inf) -> np.ndarray:
        """Best sentence cosine per turn plus ``rest_weight`` × mean of the others (``missing``: no sentence)."""
        if not self.turns.size:
            return np.full(self.idx.n_turns, missing, dtype=np.float64)
        seg_max, seg_sum = self._reduced()
        # the mean of the others: (sum − max) ÷ (count − 1); a one-sentence turn's is (x − x) ÷ 1 = 0
        div = self.idx.derived("runs_rest_div", lambda: np.maximum(self.counts - 1, 1).astype(np.float64))
        vals = seg_max + rest_weight * ((seg_sum - seg_max) / div)
        if self._all_turns():
            return vals
        out = np.full(self.idx.n_turns, missing, dtype=np.float64)
        out[self.turns] = vals
        return out

    def relevance(self, rows: Sequence[int]) -> list[float]:
        """:func:`turn_relevance` of the turn ``rows``, from this scan's reductions (the very values:
        the same whole scan, the same reductions; valid only when ``cos`` scored every sentence)."""
        if not len(rows):
            return []
        r = np.asarray(rows, dtype=np.int64)
        out = np.zeros(r.size, dtype=np.float64)
        if not self.turns.size:
            return out.tolist()
        if self._seg is None:  # reduce the runs of these turns alone (the same reductions over the same rows)
            sel, counts = _row_sentences(self.idx, r)
            has = counts > 0
            local = np.r_[0, np.cumsum(counts[has])[:-1]].astype(np.intp)
            best, sums = np.zeros(r.size), np.zeros(r.size)
            if sel.size:
                sub = self.cos[sel]
                best[has] = np.maximum.reduceat(sub, local)
                sums[has] = np.add.reduceat(sub, local, dtype=np.float64)
        else:
            seg_max, seg_sum = self._reduced()
            if self._all_turns():
                run, has = r, np.ones(r.size, dtype=bool)
            else:
                run = np.minimum(np.searchsorted(self.turns, r), self.turns.size - 1)
                has = self.turns[run] == r
            best, sums = seg_max[run], seg_sum[run]
        norms = self.idx.turn_sum_norms()[r]
        whole = np.divide(sums, norms, out=np.zeros(r.size), where=norms > 0)
        out[has] = _relevance(best, whole)[has]
        return out.tolist()

    def whole(self) -> np.ndarray:
        """Whole-turn cosines, Σ sentence cosines ÷ ‖Σ sentence vectors‖ (0 for a turn without sentences)."""
        out = np.zeros(self.idx.n_turns, dtype=np.float64)
        if self.turns.size:
            all_turns = self._all_turns()
            norms = self.idx.turn_sum_norms()
            sums = self.seg_sum
            if all_turns:
                np.divide(sums, norms, out=out, where=norms > 0)
            else:
                norms = norms[self.turns]
                out[self.turns] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    def best_row(self, turn: int) -> int:
        """Sentence row of ``turn``'s best sentence (the first one at its maximum), -1 if it has none."""
        first = self.idx.array("turn_first")
        lo, hi = int(first[turn]), int(first[turn + 1])
        if hi <= lo:
            return -1
        seg = self.cos[lo:hi].astype(np.float64)
        return lo + int(np.argmax(seg >= seg.max() - 1e-12))

    def best_rows(self, turns: Sequence[int]) -> list[int]:
        """:meth:`best_row` of each of ``turns``, their sentences gathered and reduced at once."""
        r = np.asarray(turns, dtype=np.int64)
        out = np.full(r.size, -1, dtype=np.int64)
        sel, counts = _row_sentences(self.idx, r)
        if sel.size:
            has = counts > 0
            local = np.r_[0, np.cumsum(counts[has])[:-1]].astype(np.intp)
            sub = self.cos[sel].astype(np.float64)
            near = sub >= np.repeat(np.maximum.reduceat(sub, local), counts[has]) - 1e-12
            hits = np.flatnonzero(near)  # each turn's first row at its maximum: its first hit after its start
            out[has] = sel[hits[np.searchsorted(hits, local)]]
        return out.tolist()


def _row_sentences(idx: ScopeIndex, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sentence rows of the given turns (concatenated, in turn order) and each turn's count."""
    first = idx.array("turn_first")
    lo, hi = first[rows], first[rows + 1]
    counts = (hi - lo).astype(np.int64)
    if not counts.sum():
        return np.zeros(0, dtype=np.int64), counts
    sel = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return sel.astype(np.int64), counts


def score_rows(idx: ScopeIndex, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``q ·`` the sentence vectors of ``rows`` (float32, the kernel of :meth:`ScopeIndex.sentence_cosines`)."""
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    return _inner_products(_Rows(idx.sentence_vectors()[rows]), q)


class Approx:
    """Sentence cosines under the approximate dense index: exact where scored, −1 elsewhere."""

    __slots__ = ("cos", "scored")

    def __init__(self, cos: np.ndarray, scored: np.ndarray) -> None:
        self.cos, self.scored = cos, scored

    def complete(self, idx: ScopeIndex, q: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        """Score the sentence ``rows`` not scored yet (graph neighbours of the seeds); returns them."""
        r = np.asarray(rows, dtype=np.int64)
        r = r[~self.scored[r]]
        if r.size:
            self.cos[r] = score_rows(idx, q, r)
            self.scored[r] = True
        return r


def ann_cosines(idx: ScopeIndex, q: np.ndarray, config: Any, turns: np.ndarray | None = None) -> Approx | None:
    """Sentence cosines from the HNSW index when ``config`` (a :class:`sgmem.Config`) asks for them.

    [D] The ``dense_ann_candidates`` sentences the HNSW index finds nearest
    (:mod:`sgmem.retrieval.ann`; ``efSearch`` = max(``knn_hnsw_ef_search``,
    2 × candidates)) select turns; every sentence of those turns, of their
    chronological neighbours and of the extra ``turns`` (the hybrid passes
    its lexical matches) is scored exactly, so those turns' dense channels are
    the exact ones; every other sentence counts as cosine −1. The vector work is
    that of a few thousand sentences whatever the scope's size. None when the
    scope is to be scanned exactly (``Config.dense_index="exact"`` or a scope
    below ``dense_ann_min_sentences``).
    """
    if config.dense_index != "hnsw" or idx.n_sentences < config.dense_ann_min_sentences or idx.n_sentences == 0:
        return None
    from .ann import build_ann, ensure_ann

    g = config.graph
    ann = ensure_ann(idx, g) if g.knn_k > 0 else None
    if ann is None:  # kNN edges off: the same index, built for the queries
        ann = idx.ann if idx.ann is not None and idx.ann.ntotal == idx.n_sentences else build_ann(idx, g)
    n_cand = min(config.dense_ann_candidates, idx.n_sentences)
    ann.index.hnsw.efSearch = max(g.knn_hnsw_ef_search, 2 * n_cand)
    qv = np.ascontiguousarray(q, dtype=np.float32).reshape(1, -1)
    return approx_from_rows(idx, q, ann.candidates(qv, n_cand)[0], turns)


def approx_from_rows(idx: ScopeIndex, q: np.ndarray, rows: np.ndarray, turns: np.ndarray | None = None) -> Approx:
    """The approximate cosines of :func:`ann_cosines` from given candidate sentence rows (-1 ignored).

    The candidates may come from the HNSW index or from the database server
    (:func:`sgmem.retrieval.server.server_candidates`): every sentence of
    their turns, of those turns' chronological neighbours and of ``turns`` is
    scored exactly; every other sentence counts as cosine −1.
    """
    rows = np.asarray(rows, dtype=np.int64)
    rows = rows[rows >= 0]
    owner = idx.array("sent_msg")
    hit = owner[rows].astype(np.int64)
    prev, nxt = idx.array("prev_row"), idx.array("next_row")
    near = np.concatenate([prev[hit], nxt[hit]])
    parts = [hit, near[near >= 0]]
    if turns is not None and len(turns):
        parts.append(np.asarray(turns, dtype=np.int64))
    want = np.unique(np.concatenate(parts))
    sel, _ = _row_sentences(idx, want)
    cos = np.full(idx.n_sentences, -1.0, dtype=np.float32)
    scored = np.zeros(idx.n_sentences, dtype=bool)
    cos[sel] = score_rows(idx, q, sel)
    scored[sel] = True
    return Approx(cos, scored)


def relevance_of_rows(
    idx: ScopeIndex, q: np.ndarray, rows: Sequence[int], cos: np.ndarray | None = None
) -> dict[int, float]:
    """:func:`turn_relevance` of the given turn rows only (their sentences are scored, nothing else; ``cos``:
    the query's cosine to every sentence of the scope, when a scan already has them: read, not scored again).

    Equal to ``turn_relevance(idx, q)[rows]`` up to float32 rounding (the same
    kernel scores the same vectors, the same reductions run over each turn's sentences).
    """
    want = np.unique(np.asarray(list(rows), dtype=np.int64))
    if not want.size:
        return {}
    sel, counts = _row_sentences(idx, want)
    out = dict.fromkeys(want.tolist(), 0.0)
    if not sel.size:
        return out
    cos = (cos[sel] if cos is not None else score_rows(idx, q, sel)).astype(np.float64)
    has = counts > 0
    starts = np.concatenate([[0], np.cumsum(counts[has])[:-1]])
    seg_max = np.maximum.reduceat(cos, starts)
    seg_sum = np.add.reduceat(cos, starts)
    norms = idx.turn_sum_norms()[want[has]]
    whole = np.divide(seg_sum, norms, out=np.zeros_like(seg_sum), where=norms > 0)
    vals = _relevance(seg_max, whole)
    for r, v in zip(want[has].tolist(), vals.tolist(), strict=True):
        out[r] = v
    return out


class _Rows:
    """A float32 matrix presented as a flat index to :func:`sgmem.retrieval.index._inner_products`."""

    def __init__(self, mat: np.ndarray) -> None:
        import faiss

        self._mat = np.ascontiguousarray(mat, dtype=np.float32)
        self.ntotal, self.d = self._mat.shape
        self._ptr = faiss.swig_ptr(self._mat)

    def get_xb(self) -> object:
        return self._ptr


def _relevance(best: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """[D] :func:`turn_relevance` from a turn's best-sentence and whole-turn cosines (the one formula of its
    three callers: every turn, the hits' rows alone, a hybrid query's own scan)."""
    return np.clip((best + whole) / 2.0, 0.0, 1.0)


def turn_relevance(idx: ScopeIndex, q: np.ndarray) -> np.ndarray:
    """[D] Each turn's relevance to the query embedded as ``q``, in [0, 1], whatever the mode.

    The mean of two dense cosines: the turn's best sentence (a precise match
    inside a long turn) and the whole turn (the normalised mean of its
    sentence vectors; a short sentence that happens to resemble the query, such
    as "It's like a reset button", does not carry the turn alone), clipped to
    [0, 1]. Ranking scores (hybrid's fused sum, BM25) are not comparable across
    modes or queries; this is, so ``min_score`` thresholds it. Chosen over the
    best sentence alone and the turn alone by measurement on the LoCoMo dev
    split (``sgmem eval locomo --relevance``): at equal loss of evidence inside
    a 1,000-token context it leaves the most unrelated questions empty.
    A search needs it for its hits only: :func:`relevance_of_rows`.
    """
    if idx.n_turns == 0:
        return np.zeros(0)
    d = TurnDense(idx, idx.sentence_cosines(q))
    best = d.best(0.0)
    best = np.where(np.isfinite(best), best, 0.0)
    return _relevance(best, d.whole())
