"""SGMem's similarity edges as a kNN graph kept up to date incrementally (ALGORITHMS §1.1, §1.2 step 4).

The paper builds, offline, a global kNN graph: each sentence is linked to
its ``k`` most similar sentences of the haystack. A memory grows one add at a
time, so ``GraphConfig.knn_rule="knn"`` keeps that graph as the scope grows:

* a new sentence's list is its ``k`` nearest among every sentence of the
  scope present now (the existing ones and the add's other new ones);
* it also becomes a candidate neighbour of the existing sentences it is
  close to: an existing sentence whose ``k``-th neighbour is farther than the
  new one takes it into its list and drops the farthest (the edge is
  deleted);
* a delete repairs the lists that lost a member (:func:`repair_lists`, exact).

Each list is stored as directed edges ``src → dst`` (its owner is ``src``)
with their cosine; retrieval reads them undirected (§1.2 [C]). Below
``GraphConfig.knn_ann_min_sentences`` every comparison is exact, so each
list equals the global kNN list of the sentences present (ties aside);
above, the candidates come from the scope's HNSW graph, forward (a new
sentence's nearest) and backward (the existing sentences near a new one,
taken from its ``reverse_pool`` nearest). ``benchmarks.knn_recall`` measures
the lists against a global kNN of the stored vectors.

``knn_rule="earlier"`` is the earlier rule (SGRM's incremental form): a new
sentence links to its ``k`` most similar *earlier* sentences and no list
changes afterwards (:func:`sgmem.ingest.knn_edges`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["KnnLists", "KnnUpdate", "knn_update", "list_owners", "repair_lists"]


class KnnLists:
    """Each sentence row's out-list: neighbour rows and cosines, best first (padding: row -1, cosine -inf)."""

    def __init__(self, width: int = 4) -> None:
        self.n = 0
        self.tgt = np.full((16, width), -1, dtype=np.int32)
        self.cos = np.full((16, width), -np.inf, dtype=np.float32)

    @property
    def width(self) -> int:
        return int(self.tgt.shape[1])

    def grow(self, n: int, width: int | None = None) -> None:
        """Rows now number ``n`` (new rows have empty lists); at least ``width`` slots per row."""
        w = max(self.width, width or 0)
        if n > len(self.tgt) or w > self.width:
            cap = max(n, 2 * len(self.tgt)) if n > len(self.tgt) else len(self.tgt)
            tgt = np.full((cap, w), -1, dtype=np.int32)
            cos = np.full((cap, w), -np.inf, dtype=np.float32)
            tgt[: len(self.tgt), : self.width] = self.tgt
            cos[: len(self.cos), : self.width] = self.cos
            self.tgt, self.cos = tgt, cos
        self.n = max(self.n, n)

    def load(self, src: np.ndarray, dst: np.ndarray, cos: np.ndarray, n: int) -> None:
        """Replace every list with the edges ``src[i] → dst[i]`` of cosine ``cos[i]``."""
        width = int(np.bincount(src, minlength=1).max()) if len(src) else 1
        self.tgt = np.full((max(n, 16), max(width, 1)), -1, dtype=np.int32)
        self.cos = np.full((max(n, 16), max(width, 1)), -np.inf, dtype=np.float32)
        self.n = n
        if not len(src):
            return
        order = np.lexsort((-cos, src))  # by owner, best first
        s, d, c = src[order], dst[order], cos[order]
        starts = np.searchsorted(s, s, side="left")
        slot = np.arange(len(s)) - starts
        self.tgt[s, slot] = d
        self.cos[s, slot] = c

    def row(self, r: int) -> list[tuple[int, float]]:
        keep = self.tgt[r] >= 0
        return list(zip(self.tgt[r][keep].tolist(), self.cos[r][keep].tolist(), strict=True))

    def set_row(self, r: int, items: list[tuple[int, float]]) -> None:
        items = sorted(items, key=lambda t: -t[1])
        self.grow(self.n, len(items))
        self.tgt[r] = -1
        self.cos[r] = -np.inf
        if items:
            self.tgt[r, : len(items)] = [t for t, _ in items]
            self.cos[r, : len(items)] = [c for _, c in items]

    def thresholds(self, k: int, min_cos: float) -> np.ndarray:
        """Per row, the cosine a newcomer must exceed to enter its list: its k-th (or below ``min_cos``)."""
        if self.width < k:
            self.grow(self.n, k)
        kth = self.cos[: self.n, k - 1].astype(np.float64)
        # a list with room takes anything at or above min_cos
        return np.where(np.isfinite(kth), kth, np.nextafter(min_cos, -np.inf))

    def apply(self, edges: list[tuple[int, int, float]], evicted: list[tuple[int, int]]) -> None:
        """Follow a committed add: new edges ``(src_row, dst_row, cos)`` and evicted ``(src_row, dst_row)``."""
        touched: dict[int, list[tuple[int, float]]] = {}
        gone: dict[int, set[int]] = {}
        for a, b in evicted:
            gone.setdefault(a, set()).add(b)
        for a, b, c in edges:
            touched.setdefault(a, []).append((b, c))
        for a in set(touched) | set(gone):
            items = [(t, c) for t, c in self.row(a) if t not in gone.get(a, ())] + touched.get(a, [])
            self.set_row(a, list(dict(items).items()))

    @property
    def nbytes(self) -> int:
        return int(self.tgt.nbytes + self.cos.nbytes)


@dataclass
class KnnUpdate:
    """An add's changes to the kNN lists, in rows: see :func:`knn_update`.

    Attributes:
        pairs: ``(i, target, cos)``: new sentence ``i``'s list; ``target >= 0``
            is an existing row, ``target < 0`` new sentence ``-target-1``.
        back: ``(row, i, cos)``: existing ``row`` takes new sentence ``i``.
        evicted: ``(row, target_row)``: existing edges that leave ``row``'s list.
    """

    pairs: list[tuple[int, int, float]] = field(default_factory=list)
    back: list[tuple[int, int, float]] = field(default_factory=list)
    evicted: list[tuple[int, int]] = field(default_factory=list)


def _top(sims: np.ndarray, ids: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` columns of each row (unsorted): (cosines, ids or column numbers)."""
    kk = min(k, sims.shape[1])
    if kk <= 0:
        return np.zeros((len(sims), 0)), np.zeros((len(sims), 0), dtype=np.int64)
    part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk] if kk < sims.shape[1] else np.argsort(-sims, axis=1)
    cols = part if ids is None else np.take_along_axis(ids, part, axis=1)
    return np.take_along_axis(sims, part, axis=1), cols


def knn_update(
    idx: Any,
    new_vecs: np.ndarray,
    k: int,
    min_cos: float,
    ann: Any = None,
    threads: int = 1,
    reverse_pool: int = 32,
) -> KnnUpdate:
    """The kNN lists after an add of ``new_vecs`` to the scope ``idx`` (no store access).

    Exact (``ann`` None): every new sentence is compared with every existing
    one once; the same products give its nearest and the existing sentences
    whose k-th neighbour it beats. With ``ann`` (HNSW over the existing rows),
    both come from its ``max(reverse_pool, 2k)`` nearest existing sentences,
    scored exactly.
    """
    out = KnnUpdate()
    n_new = len(new_vecs)
    if k <= 0 or n_new == 0:
        return out
    existing = idx.sentence_vectors()
    n_old = len(existing)
    lists: KnnLists = idx.knn
    lists.grow(n_old, k)
    thr = lists.thresholds(k, min_cos) if n_old else np.zeros(0)
    fwd_c: list[np.ndarray] = []
    fwd_t: list[np.ndarray] = []
    back_rows: list[np.ndarray] = []
    back_new: list[np.ndarray] = []
    back_cos: list[np.ndarray] = []
    if n_old:
        if ann is not None:
            pool = max(reverse_pool, 2 * k)
            ids = ann.candidates(new_vecs, pool, threads)
            safe = np.maximum(ids, 0)
            sims = np.einsum("qd,qcd->qc", new_vecs, existing[safe]).astype(np.float64)
            sims = np.where(ids >= 0, sims, -np.inf)
            c, t = _top(sims, ids, k)
            fwd_c.append(c)
            fwd_t.append(t)
            qi, ci = np.nonzero((sims >= min_cos) & (sims > thr[safe]) & (ids >= 0))
            back_rows.append(ids[qi, ci])
            back_new.append(qi)
            back_cos.append(sims[qi, ci])
        else:
            step = max(1, (1 << 24) // max(n_old, 1))
            for q0 in range(0, n_new, step):
                sims = new_vecs[q0 : q0 + step] @ existing.T
                c, t = _top(sims, None, k)
                fwd_c.append(c)
                fwd_t.append(t)
                # a list's threshold is never below min_cos - ulp (its members pass min_cos): test that after
                qi, rj = np.nonzero(sims > thr[None, :])
                cs = sims[qi, rj].astype(np.float64)
                ok = cs >= min_cos
                back_rows.append(rj[ok])
                back_new.append(qi[ok] + q0)
                back_cos.append(cs[ok])
    old_c = np.concatenate(fwd_c) if fwd_c else np.zeros((n_new, 0))
    old_t = np.concatenate(fwd_t) if fwd_t else np.zeros((n_new, 0), dtype=np.int64)
    # the add's other new sentences, earlier and later alike
    nn = new_vecs @ new_vecs.T
    np.fill_diagonal(nn, -np.inf)
    new_c, new_t = _top(nn, None, k)
    dist = np.concatenate([old_c.astype(np.float64), new_c.astype(np.float64)], axis=1)
    tgt = np.concatenate([old_t.astype(np.int64), -new_t.astype(np.int64) - 1], axis=1)
    valid = np.concatenate([old_t >= 0, np.ones(new_t.shape, dtype=bool)], axis=1)  # HNSW pads with -1
    dist = np.where(valid, dist, -np.inf)
    order = np.argsort(-dist, axis=1, kind="stable")[:, :k]
    top_d = np.take_along_axis(dist, order, axis=1)
    top_t = np.take_along_axis(tgt, order, axis=1)
    rows, cols = np.nonzero(np.isfinite(top_d) & (top_d >= min_cos))
    out.pairs = [
        (int(r), int(top_t[r, c]), float(top_d[r, c])) for r, c in zip(rows.tolist(), cols.tolist(), strict=True)
    ]
    if back_rows:
        br = np.concatenate(back_rows)
        bn = np.concatenate(back_new)
        bc = np.concatenate(back_cos)
        if len(br):
            _merge_back(lists, k, br, bn, bc, out)
    return out


def _merge_back(lists: KnnLists, k: int, rows: np.ndarray, news: np.ndarray, coss: np.ndarray, out: KnnUpdate) -> None:
    """Each existing row's list with the new sentences that beat its k-th: what enters and what leaves."""
    order = np.lexsort((-coss, rows))
    rows, news, coss = rows[order], news[order], coss[order]
    bounds = np.flatnonzero(np.diff(rows)) + 1
    for lo, hi in zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(rows)].tolist(), strict=True):
        r = int(rows[lo])
        old = [(t, c, False) for t, c in lists.row(r)[:k]]
        cand = [(int(n), float(c), True) for n, c in zip(news[lo:hi].tolist(), coss[lo:hi].tolist(), strict=True)]
        merged = sorted(old + cand, key=lambda x: -x[1])[:k]  # stable: an old member wins a tie
        kept_old = {t for t, _, is_new in merged if not is_new}
        out.back += [(r, t, c) for t, c, is_new in merged if is_new]
        out.evicted += [(r, t) for t, _, _ in old if t not in kept_old]


def list_owners(conn: Any, scope_id: int, dead_ids: list[int]) -> list[int]:
    """The sentences whose lists hold one of ``dead_ids`` (call before the delete; the dead excluded)."""
    dead = set(dead_ids)
    owners: set[int] = set()
    for i in range(0, len(dead_ids), 500):
        chunk = dead_ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        owners.update(
            int(r[0])
            for r in conn.execute(
                f"SELECT src FROM sentence_edges WHERE scope_id = ? AND dst IN ({marks})", (scope_id, *chunk)
            )
        )
    return sorted(owners - dead)


def repair_lists(conn: Any, scope_id: int, owners: list[int], k: int, min_cos: float) -> int:
    """Recompute the lists of ``owners`` (:func:`list_owners`) after a delete, inside its transaction.

    Each owner's list becomes its ``k`` nearest (cosine ≥ ``min_cos``) among
    the scope's remaining sentences, exactly, from the stored vectors (a
    delete is rare; one scan of the scope's vectors). Returns the edges written.
    """
    if not owners or k <= 0:
        return 0
    rows = conn.execute("SELECT id, vec FROM sentences WHERE scope_id = ? ORDER BY id", (scope_id,)).fetchall()
    ids = np.array([int(r[0]) for r in rows], dtype=np.int64)
    present = set(ids.tolist())
    own = np.array([o for o in owners if o in present], dtype=np.int64)
    if not len(own):
        return 0
    blob = b"".join(bytes(r[1]) for r in rows)
    vecs = np.frombuffer(blob, dtype=np.float32).reshape(len(ids), -1)
    pos = np.searchsorted(ids, own)
    sims = vecs[pos] @ vecs.T
    sims[np.arange(len(own)), pos] = -np.inf
    c, t = _top(sims, None, k)
    edges: list[tuple[int, int, int, float]] = []
    for a in range(len(own)):
        for cc, tt in sorted(zip(c[a].tolist(), t[a].tolist(), strict=True), reverse=True):
            if np.isfinite(cc) and cc >= min_cos:
                edges.append((scope_id, int(own[a]), int(ids[tt]), float(cc)))
    conn.executemany("DELETE FROM sentence_edges WHERE scope_id = ? AND src = ?", [(scope_id, int(a)) for a in own])
    conn.executemany("INSERT INTO sentence_edges (scope_id, src, dst, weight) VALUES (?, ?, ?, ?)", edges)
    return len(edges)
