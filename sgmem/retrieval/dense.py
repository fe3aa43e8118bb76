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

from collections.abc import Sequence
from typing import Any

import numpy as np

from .index import ScopeIndex, _inner_products

__all__ = ["Approx", "TurnDense", "ann_cosines", "relevance_of_rows", "score_rows", "turn_relevance"]


class TurnDense:
    """Per-turn reductions of one query's sentence cosines ``cos`` (one entry per sentence row)."""

    __slots__ = ("idx", "cos", "turns", "seg_max", "seg_sum", "counts")

    def __init__(self, idx: ScopeIndex, cos: np.ndarray) -> None:
        self.idx = idx
        self.cos = cos
        if cos.size:
            starts = idx.array("sent_starts")
            self.turns = idx.array("sent_turns")  # turn row of each run of sentences
            self.counts = idx.array("sent_counts")
            # the max is exact in float32; the sums accumulate in float64 (as over a float64 copy)
            self.seg_max = np.maximum.reduceat(cos, starts).astype(np.float64)
            self.seg_sum = np.add.reduceat(cos, starts, dtype=np.float64)
        else:
            self.turns = self.counts = np.zeros(0, dtype=np.int64)
            self.seg_max = self.seg_sum = np.zeros(0)

    def sim(self, plus: float) -> np.ndarray:
        """``cos + plus`` in float64 (the graph channel's sim)."""
        return np.add(self.cos, plus, dtype=np.float64)

    def best(self, rest_weight: float) -> np.ndarray:
        """Best sentence cosine per turn plus ``rest_weight`` × mean of the others (−inf: no sentence)."""
        out = np.full(self.idx.n_turns, -np.inf, dtype=np.float64)
        if self.turns.size:
            cnt = self.counts
            rest = np.where(cnt > 1, (self.seg_sum - self.seg_max) / np.maximum(cnt - 1, 1), 0.0)
            out[self.turns] = self.seg_max + rest_weight * rest
        return out

    def whole(self) -> np.ndarray:
        """Whole-turn cosines, Σ sentence cosines ÷ ‖Σ sentence vectors‖ (0 for a turn without sentences)."""
        out = np.zeros(self.idx.n_turns, dtype=np.float64)
        if self.turns.size:
            norms = self.idx.turn_sum_norms()[self.turns]
            sums = self.seg_sum
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
        return [self.best_row(int(r)) for r in turns]


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


def relevance_of_rows(idx: ScopeIndex, q: np.ndarray, rows: Sequence[int]) -> dict[int, float]:
    """:func:`turn_relevance` of the given turn rows only (their sentences are scored, nothing else).

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
    cos = score_rows(idx, q, sel).astype(np.float64)
    has = counts > 0
    starts = np.concatenate([[0], np.cumsum(counts[has])[:-1]])
    seg_max = np.maximum.reduceat(cos, starts)
    seg_sum = np.add.reduceat(cos, starts)
    norms = idx.turn_sum_norms()[want[has]]
    whole = np.divide(seg_sum, norms, out=np.zeros_like(seg_sum), where=norms > 0)
    vals = np.clip((seg_max + whole) / 2.0, 0.0, 1.0)
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
    return np.clip((best + d.whole()) / 2.0, 0.0, 1.0)
