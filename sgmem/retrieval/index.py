"""Per-scope in-memory index: a cache of SQLite, never the system of record.

Holds the FAISS indexes of sentence and turn vectors, the sentence graph's
adjacency, the chronological chain and the lexical postings of one scope.
It is built from SQLite (or from FAISS files saved next to the database when
their recorded generation still matches) and extended in place after each
add of this process. Any other change — a delete, or a write by another
process — bumps the scope's generation and the cache is rebuilt.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DependencyError
from ..text.lexical import DEFAULT_ANALYZER
from .cachefiles import discard_cache, save_cached
from .compact import Column, Grow, Lazy, Names, Neighbours, Postings
from .knn import KnnLists

__all__ = ["ScopeIndex", "discard_cache", "load_scope_index"]


_FAISS: Any = None


def _faiss() -> Any:
    global _FAISS
    if _FAISS is None:
        try:
            import faiss
        except ImportError as exc:  # pragma: no cover - faiss-cpu is a core dependency
            raise DependencyError("sgmem needs faiss-cpu: pip install sgmem") from exc
        _FAISS = faiss
    return _FAISS


def _new_flat(dim: int) -> Any:
    return _faiss().IndexFlatIP(dim)


def _view(index: Any) -> np.ndarray:
    """Zero-copy float32 view of a flat index's vectors (rows = insertion order)."""
    n, d = index.ntotal, index.d
    if n == 0:
        return np.zeros((0, d), dtype=np.float32)
    return _faiss().rev_swig_ptr(index.get_xb(), n * d).reshape(n, d)


#: Python objects per keyword entry of a KeywordIndex, in bytes (measured with tracemalloc, benchmarks/scopes.py)
KEYWORD_BYTES = 400


def _inner_products(index: Any, q: np.ndarray) -> np.ndarray:
    n = index.ntotal
    out = np.empty(n, dtype=np.float32)
    if n:
        faiss = _faiss()
        qv = np.ascontiguousarray(q, dtype=np.float32).reshape(-1)
        faiss.fvec_inner_products_ny(faiss.swig_ptr(out), faiss.swig_ptr(qv), index.get_xb(), index.d, n)
    return out


def idf(n_turns: int, df: int) -> float:
    """Robertson–Spärck Jones IDF with +1 smoothing of a term held by ``df`` of ``n_turns`` turns."""
    n = max(n_turns, 1)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _find(ids: np.ndarray, key: int) -> int | None:
    """Row of ``key`` in ascending ``ids`` (SQLite row ids only grow), or None."""
    i = int(np.searchsorted(ids, key))
    return i if i < len(ids) and int(ids[i]) == key else None


class _PostingsView:
    """``idx.postings.get(term)`` as with the former dict of lists."""

    __slots__ = ("_idx",)

    def __init__(self, idx: ScopeIndex) -> None:
        self._idx = idx

    def get(self, term: str, default: Any = None) -> Any:
        rows = self._idx.term_rows(term)
        return default if rows is None else rows

    def __contains__(self, term: str) -> bool:
        return self._idx.term_rows(term) is not None


class ScopeIndex:
    """Everything retrieval needs for one scope, row-aligned with SQLite ids.

    Turn rows and sentence rows are in id order (a turn's sentences are
    contiguous). Columns are numpy arrays (:mod:`sgmem.retrieval.compact`);
    the public attributes (``msg_ids``, ``threads``, ``adjacency``,
    ``sent_text``…) are read-only sequence views of them, and sentence texts
    are read from SQLite when asked for, not held in memory.
    """

    def __init__(self, scope_id: int, dim: int, generation: int = -1, store: Any = None) -> None:
        self.scope_id = scope_id
        self.dim = dim
        self.generation = generation
        self.dirty = False
        self.sent_index: Any = _new_flat(dim)
        # MGRetrieval vocabulary + postings (sgmem.pyramid.vocabulary.KeywordIndex),
        # loaded lazily from SQLite by sgmem.pyramid.retrieve.ensure_keywords
        self.keywords: Any = None
        # approximate kNN index over the sentence vectors (sgmem.retrieval.ann), built when needed, or loaded
        # from the cache files when first asked for (_ann_pending: None if not trusted)
        self._ann: Any = None
        self._ann_pending: Callable[[], Any] | None = None
        # sent_index maps the cache file (shared page cache, read-only): copied before the first append
        self._mapped = False
        # background jobs still reading the vector storage in place (an add's early kNN search, see
        # add_reader): whatever appends to or replaces the storage on this thread waits for them first
        self._readers: list[Any] = []
        self._store = store
        # turns
        self._msg_ids = Grow(np.int64)
        self.ext_ids: list[str] = []
        self._threads = Names()
        self._sessions = Names()  # (thread, session) pairs: one code per session of a thread
        self._speakers = Names()
        self._round_ids = Grow(np.int64)
        self._at_ts = Grow(np.float64)
        self._tokens = Grow(np.int32)
        self._prev = Grow(np.int32)
        self._next = Grow(np.int32)
        self._tool = Grow(np.int8)  # 1: a tool's message (role "tool": a tool call's output)
        self._term_ptr = Grow(np.int64, np.zeros(1, dtype=np.int64))
        self._term_ids = Grow(np.int32)
        self._vocab: dict[str, int] = {}
        self._words: list[str] = []
        self._str_bytes = 0  # estimated bytes of ext_ids and _words (kept as they grow: nbytes() runs on every add)
        self._postings = Postings()
        # sentences
        self._sent_ids = Grow(np.int64)
        self._sent_msg = Grow(np.int32)
        self._sent_idx = Grow(np.int32)
        self._sent_ids_sorted = True  # ids grow with rows unless a message's sentences were rewritten
        self.adjacency = Neighbours()
        # each sentence's own kNN list (its stored out-edges, with cosines): GraphConfig.knn_rule="knn"
        # keeps it up to date (sgmem.retrieval.knn)
        self.knn = KnnLists()
        self._np_cache: dict[str, np.ndarray] = {}
        self._turn_norms: np.ndarray | None = None
        # each turn's cosine to the previous and next turn of its thread, with the chain they were taken on
        self._links: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._vec_view: tuple[tuple[int, int], np.ndarray] | None = None
        # sentence ids and their dialogue acts in context, resolved lazily (sentence_acts) from each row's act as
        # stored at ingest (_raw_acts; -1: not known, classified at the next query)
        self._acts: tuple[np.ndarray, np.ndarray] = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8))
        self._raw_acts = Grow(np.int8)
        #: decides the acts by meaning (:class:`sgmem.text.acts.ActClassifier`); None: word rules
        self.act_model: Any = None
        #: the lexical analyzer of the store's terms (:mod:`sgmem.text.lexical`); the owning Memory sets it
        self.analyzer: str = DEFAULT_ANALYZER

    # ---------------------------------------------------------------- views
    @property
    def ann(self) -> Any:
        """The scope's HNSW index (:class:`sgmem.retrieval.ann.AnnIndex`) or None; a saved one is loaded here."""
        pending = self._ann_pending
        if pending is not None:
            self._ann_pending = None
            self._ann = pending()
        return self._ann

    @ann.setter
    def ann(self, value: Any) -> None:
        self._ann_pending = None
        self._ann = value

    def own_vectors(self) -> None:
        """Copy mapped sentence vectors into memory of their own (FAISS cannot append to a mapped index);
        called before anything appends to or links into the vector storage."""
        if not self._mapped:
            return
        ann = self.ann  # a saved HNSW index is attached to the mapped storage: load it first, then move both
        self._quiesce()  # a background reader may still scan the mapped vectors
        flat = _new_flat(self.dim)
        if self.sent_index.ntotal:
            flat.add(np.ascontiguousarray(_view(self.sent_index)))
        if ann is not None:
            ann.attach(flat)
        self.sent_index, self._mapped = flat, False
        self._changed()

    @property
    def n_turns(self) -> int:
        return self._msg_ids.n

    @property
    def n_sentences(self) -> int:
        return self._sent_ids.n

    @property
    def msg_ids(self) -> Column:
        return Column(self._msg_ids)

    @property
    def sent_ids(self) -> Column:
        return Column(self._sent_ids)

    @property
    def sent_msg(self) -> Column:
        return Column(self._sent_msg)

    @property
    def sent_idx(self) -> Column:
        return Column(self._sent_idx)

    @property
    def round_ids(self) -> Column:
        return Column(self._round_ids)

    @property
    def at_ts(self) -> Column:
        return Column(self._at_ts)

    @property
    def tokens(self) -> Column:
        return Column(self._tokens)

    @property
    def prev_row(self) -> Column:
        return Column(self._prev)

    @property
    def next_row(self) -> Column:
        return Column(self._next)

    @property
    def threads(self) -> Names:
        return self._threads

    @property
    def sessions(self) -> Sequence[str]:
        return Lazy(lambda: self.n_turns, lambda r: self._sessions[r][1], lambda rs: [self._sessions[r][1] for r in rs])

    @property
    def speakers(self) -> Names:
        return self._speakers

    @property
    def terms(self) -> Sequence[frozenset[str]]:
        """Each turn's lexical terms (a set of strings, built on access)."""
        return Lazy(lambda: self.n_turns, self.turn_terms, lambda rs: [self.turn_terms(r) for r in rs])

    @property
    def msg_sents(self) -> Sequence[list[int]]:
        """Each turn's sentence rows (contiguous, in order)."""
        return Lazy(lambda: self.n_turns, self.turn_sentences, lambda rs: [self.turn_sentences(r) for r in rs])

    @property
    def sent_text(self) -> Lazy:
        """Sentence texts by row, read from SQLite (``.many(rows)`` reads several at once)."""
        return Lazy(lambda: self.n_sentences, lambda r: self.sentence_texts([r])[0], self.sentence_texts)

    @property
    def postings(self) -> _PostingsView:
        """``postings.get(term)``: ascending turn rows holding ``term`` (None if no turn does)."""
        return _PostingsView(self)

    def turn_terms(self, row: int) -> frozenset[str]:
        ptr = self._term_ptr.view()
        ids = self._term_ids.view()[ptr[row] : ptr[row + 1]]
        return frozenset(self._words[i] for i in ids.tolist())

    def matched_terms(self, row: int, terms: set[str]) -> list[str]:
        """The sorted ``terms`` that turn ``row`` holds (``sorted(terms & self.terms[row])`` without the set)."""
        ids = {i for i in (self._vocab.get(t) for t in terms) if i is not None}
        if not ids:
            return []
        ptr = self._term_ptr.view()
        own = self._term_ids.view()[ptr[row] : ptr[row + 1]].tolist()
        return sorted({self._words[i] for i in own if i in ids})

    def turn_sentences(self, row: int) -> list[int]:
        starts = self._turn_first_sentence()
        return list(range(int(starts[row]), int(starts[row + 1])))

    def _turn_first_sentence(self) -> np.ndarray:
        arr = self._np_cache.get("_turn_first")
        if arr is None:
            arr = np.searchsorted(self._sent_msg.view(), np.arange(self.n_turns + 1), side="left")
            self._np_cache["_turn_first"] = arr
        return arr

    def sentence_texts(self, rows: Sequence[int]) -> list[str]:
        """Texts of sentence rows, from SQLite ("" for a row no longer stored)."""
        if not len(rows):
            return []
        ids = [int(i) for i in self._sent_ids.view()[np.asarray(rows, dtype=np.int64)]]
        got = self._store.sentence_texts(self.scope_id, ids) if self._store is not None else {}
        return [got.get(i, "") for i in ids]

    def sentence_acts(self) -> np.ndarray:
        """Each sentence row's dialogue act in context (:mod:`sgmem.text.acts`), int8, read-only.

        Read from each row's act as classified at ingest and stored with it
        (a row without one is classified here, from its text and vector), then
        resolved in its exchange once per row: a reply fragment ("12.") is a
        statement in a reply to a question, else filler. The kept prefix is
        checked against the sentence ids, so a rebuilt or rewritten index is
        resolved anew. An index with no store (no texts) has only statements.
        """
        n = self.n_sentences
        ids, acts = self._acts
        m = len(acts)
        sids = self._sent_ids.view()
        if m > n or (m and not np.array_equal(ids, sids[:m])):
            m = 0
        if m == n:
            return acts if m == len(acts) else acts[:n]
        if self._store is None:
            new = np.zeros(n - m, dtype=np.int8)
        else:
            raw = self._raw_acts.view()[m:n].copy() if self._raw_acts.n >= n else np.full(n - m, -1, dtype=np.int8)
            unknown = np.flatnonzero(raw < 0)
            if unknown.size:
                rows = unknown + m
                raw[unknown] = self.classify_rows(self.sentence_texts(rows.tolist()), self.sentence_vectors()[rows])
            new = self._in_context(acts[:m], raw)
        acts = np.concatenate([acts[:m], new])
        acts.flags.writeable = False
        self._acts = (sids[:n].copy(), acts)  # one assignment: a concurrent reader sees the old or the new pair
        return acts

    def classify_rows(self, texts: Sequence[str], vecs: np.ndarray) -> np.ndarray:
        """The acts sentences are stored with (:func:`sgmem.text.acts.stored_acts`, by :attr:`act_model`)."""
        from ..text.acts import stored_acts

        return stored_acts(texts, vecs, self.act_model)

    def _in_context(self, before: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """The acts of the sentence rows after ``before`` (the acts of every earlier row) from their stored acts,
        in context: a reply fragment ("12.", "Yes, I am.") is a statement when its turn replies to a question
        (the previous turn of its thread, by another speaker, asks one), else filler. Vectorised, no texts."""
        from ..text.acts import FILLER, FRAGMENT, QUESTION, STATEMENT

        out = raw.astype(np.int8, copy=True)
        frag = np.flatnonzero(out == FRAGMENT)
        if not frag.size:
            return out
        m = len(before)
        owner = self._sent_msg.view()[: m + len(raw)]
        known = np.concatenate([before, raw])
        asks = np.zeros(self.n_turns, dtype=bool)
        asks[owner[known == QUESTION]] = True
        t = owner[m + frag]
        p = self._prev.view()[t]
        spk = self._speakers.codes()
        reply = (p >= 0) & asks[np.maximum(p, 0)] & (spk[np.maximum(p, 0)] != spk[t])
        out[frag] = np.where(reply, STATEMENT, FILLER)
        return out

    def term_rows(self, term: str) -> np.ndarray | None:
        tid = self._vocab.get(term)
        if tid is None:
            return None
        rows = self._postings.rows(tid, self._term_ptr.view(), self._term_ids.view())
        return rows if rows.size else None

    def turn_vectors(self) -> np.ndarray:
        """(n_turns, dim) turn vectors, computed from the sentence vectors (a new array; not held in memory).

        A turn's vector is the normalised sum of its sentence vectors
        (:func:`sgmem.ingest.turn_vectors`, the same float64 sums in the same
        order, so equal to the vectors stored in SQLite); zero for a turn
        without sentences. Only SGRM's segment build reads them (once per
        scope generation), so holding a copy would cost 1.5 KB per turn for nothing.
        """
        out = np.zeros((self.n_turns, self.dim), dtype=np.float32)
        for turns, sums in self._turn_sums(np.float64):
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            out[turns] = (sums / norms).astype(np.float32)
        return out

    def _turn_sums(self, dtype: Any, block: int = 4096) -> Iterable[tuple[np.ndarray, np.ndarray]]:
        """(turn rows, Σ of their sentence vectors in ``dtype``) for runs of up to ``block`` turns with sentences."""
        if not self.n_sentences:
            return
        vecs = self.sentence_vectors()
        starts, turns = self.array("sent_starts"), self.array("sent_turns")
        for i in range(0, len(starts), block):
            lo = int(starts[i])
            hi = int(starts[i + block]) if i + block < len(starts) else self.n_sentences
            part = vecs[lo:hi].astype(dtype) if dtype != np.float32 else vecs[lo:hi]
            yield turns[i : i + block], np.add.reduceat(part, starts[i : i + block] - lo, axis=0)

    def sentence_vectors(self) -> np.ndarray:
        """(n_sentences, dim) view of the sentence vectors (valid until the next append)."""
        key = (id(self.sent_index), self.sent_index.ntotal)
        if self._vec_view is None or self._vec_view[0] != key:
            self._vec_view = (key, _view(self.sent_index))
        return self._vec_view[1]

    def sentence_cosines(self, q: np.ndarray) -> np.ndarray:
        """``q ·`` every sentence vector (float32), by FAISS's SIMD kernel: the scan of a flat search."""
        return _inner_products(self.sent_index, q)

    def turn_cosines(self, q: np.ndarray) -> np.ndarray:
        """``q ·`` every turn vector: Σ sentence cosines ÷ ‖Σ sentence vectors‖ (see :meth:`turn_sum_norms`)."""
        out = np.zeros(self.n_turns, dtype=np.float64)
        if self.n_sentences:
            turns, starts = self.array("sent_turns"), self.array("sent_starts")
            sums = np.add.reduceat(self.sentence_cosines(q).astype(np.float64), starts)
            norms = self.turn_sum_norms()[turns]
            out[turns] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    def turn_sum_norms(self) -> np.ndarray:
        """‖Σ of each turn's sentence vectors‖ (0 for a turn without sentences).

        A turn's vector is that sum normalised (:func:`sgmem.ingest.turn_vectors`),
        so its cosine to a query is the sum of its sentences' cosines divided
        by this norm: the hybrid mode gets turn cosines from the sentence
        cosines it already has, without a second scan of the vectors. Kept up
        to date as turns are appended; recomputed after a reload.
        """
        n = self.n_turns
        cur = self._turn_norms
        vecs = self.sentence_vectors()
        if cur is None or len(cur) > n:
            cur = np.zeros(n, dtype=np.float64)
            for turns, sums in self._turn_sums(np.float32):  # by blocks: no (n_turns, dim) temporary
                cur[turns] = np.linalg.norm(sums.astype(np.float64), axis=1)
        elif len(cur) < n:
            first = self._turn_first_sentence()
            extra = np.zeros(n - len(cur), dtype=np.float64)
            for i, r in enumerate(range(len(cur), n)):
                if first[r + 1] > first[r]:
                    # the float32 sum of the whole-scope pass above: a saved or extended index ranks as a reloaded one
                    total = np.add.reduceat(vecs[first[r] : first[r + 1]], [0], axis=0)[0]
                    extra[i] = float(np.linalg.norm(total.astype(np.float64)))
            cur = np.concatenate([cur, extra])
        self._turn_norms = cur
        return cur

    def _unit_turn_vectors(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), dim) float64: the normalised sum of each turn's sentence vectors (0 for none)."""
        out = np.zeros((rows.size, self.dim), dtype=np.float64)
        if not rows.size or not self.n_sentences:
            return out
        first = self._turn_first_sentence()
        lo, hi = first[rows], first[rows + 1]
        has = hi > lo
        if not has.any():
            return out
        lo, counts = lo[has], (hi - lo)[has]
        offsets = np.r_[0, np.cumsum(counts)[:-1]].astype(np.intp)
        sents = np.repeat(lo - offsets, counts) + np.arange(int(counts.sum()))
        sums = np.add.reduceat(self.sentence_vectors()[sents].astype(np.float64), offsets, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out[has] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    def chain_links(self, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
        """Each turn's cosine (clipped to [0, 1]) to the previous and to the next turn of its thread (0 at a
        chain's end): how much a turn continues what its neighbour said, so that a neighbour lifts it only as
        far as the two are about one thing. Kept up to date as turns are appended (the appended turns and their
        predecessors), recomputed when the chains change otherwise or after a reload."""
        n = self.n_turns
        prev, nxt = self.array("prev_row"), self.array("next_row")
        cur = self._links
        if cur is not None and cur[0].size <= n:
            m = cur[0].size
            old_prev, old_next = cur[2][0], cur[2][1]
            # the old rows' chains as they were, but for the ends the appended turns continue
            same = np.array_equal(prev[:m], old_prev) and np.array_equal(
                np.where(nxt[:m] >= m, -1, nxt[:m]), np.where(old_next >= m, -1, old_next)
            )
            if same and m == n:
                return cur[0], cur[1]
            if same:
                new = np.arange(m, n)
                rows = np.unique(np.r_[new, prev[new][prev[new] >= 0]])
                lp = np.r_[cur[0], np.zeros(n - m)]
                ln = np.r_[cur[1], np.zeros(n - m)]
                self._fill_links(rows, prev, nxt, lp, ln)
                self._links = (lp, ln, np.stack([prev.copy(), nxt.copy()]))
                return lp, ln
        lp, ln = np.zeros(n), np.zeros(n)
        for b in range(0, n, block):
            self._fill_links(np.arange(b, min(n, b + block)), prev, nxt, lp, ln)
        self._links = (lp, ln, np.stack([prev.copy(), nxt.copy()]))
        return lp, ln

    def _fill_links(self, rows: np.ndarray, prev: np.ndarray, nxt: np.ndarray, lp: np.ndarray, ln: np.ndarray) -> None:
        mine = self._unit_turn_vectors(rows)
        for to, out in ((prev, lp), (nxt, ln)):
            other = to[rows]
            ok = other >= 0
            out[rows] = 0.0
            if ok.any():
                theirs = self._unit_turn_vectors(other[ok])
                out[rows[ok]] = np.clip(np.einsum("ij,ij->i", mine[ok], theirs), 0.0, 1.0)

    def array(self, name: str) -> np.ndarray:
        """A read-only numpy array of a per-turn or per-sentence column (cached until the next change).

        Derived columns: ``session_codes``, a small int per (thread, session);
        ``sent_starts``, the first sentence row of each run of one turn's
        sentences (rows are contiguous per turn), for segment reductions.
        """
        arr = self._np_cache.get(name)
        if arr is None:
            if name == "session_codes":
                arr = self._sessions.codes()
            elif name == "thread_codes":
                arr = self._threads.codes()
            elif name == "sent_starts":
                owner = self.array("sent_msg")
                arr = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if owner.size else owner
            elif name == "sent_turns":  # the turn row of each run in sent_starts
                arr = self.array("sent_msg")[self.array("sent_starts")]
            elif name == "sent_counts":  # sentences in each run of sent_starts
                arr = np.diff(np.r_[self.array("sent_starts"), self.n_sentences])
            elif name == "turn_first":  # first sentence row of each turn, and n_sentences at the end
                arr = self._turn_first_sentence()
            elif name in ("threads", "speakers"):
                arr = getattr(self, "_" + name).values()
            elif name == "sessions":
                arr = np.array([s for _, s in self._sessions._table] or [""], dtype=object)[self._sessions.codes()]
            elif name == "ext_ids":
                arr = np.empty(self.n_turns, dtype=object)
                arr[:] = list(self.ext_ids)
            else:
                col = {
                    "msg_ids": self._msg_ids,
                    "round_ids": self._round_ids,
                    "at_ts": self._at_ts,
                    "tokens": self._tokens,
                    "prev_row": self._prev,
                    "next_row": self._next,
                    "tool": self._tool,
                    "sent_ids": self._sent_ids,
                    "sent_msg": self._sent_msg,
                    "sent_idx": self._sent_idx,
                }.get(name)
                if col is None:
                    raise KeyError(f"ScopeIndex has no column {name!r}")
                arr = col.view()
            self._np_cache[name] = arr
        return arr

    def derived(self, key: str, build: Callable[[], np.ndarray]) -> np.ndarray:
        """A per-query-invariant array (e.g. a prior over the turns), built once until the next change."""
        arr = self._np_cache.get(key)
        if arr is None:
            arr = self._np_cache[key] = build()
        return arr

    def msg_row(self, message_id: int) -> int | None:
        return _find(self._msg_ids.view(), message_id)

    def sent_row(self, sentence_id: int) -> int | None:
        ids = self._sent_ids.view()
        if self._sent_ids_sorted:
            return _find(ids, sentence_id)
        hit = np.flatnonzero(ids == sentence_id)  # ids out of row order (a message rewritten later): a scan
        return int(hit[0]) if hit.size else None

    def idf(self, term: str) -> float:
        """Robertson–Spärck Jones IDF with +1 smoothing (never negative)."""
        rows = self.term_rows(term)
        return idf(self.n_turns, 0 if rows is None else len(rows))

    def nbytes(self) -> int:
        """An estimate of the bytes this index holds in memory (vectors, columns, caches; see :meth:`nbytes_parts`)."""
        return sum(self.nbytes_parts().values())

    def nbytes_parts(self) -> dict[str, int]:
        """:meth:`nbytes` part by part: ``vectors``, ``turn_columns``, ``sentence_columns``, ``terms`` (vocabulary,
        ext ids, postings), ``names`` (threads, sessions, speakers), ``graph_edges`` (similarity and kNN lists),
        ``acts``, ``caches`` (derived arrays, turn norms), ``ann`` (HNSW links) and ``keywords`` (the pyramid's)."""
        turn_cols = (self._msg_ids, self._round_ids, self._at_ts, self._tokens, self._prev, self._next, self._tool)
        cache = sum(a.nbytes for a in self._np_cache.values() if a.base is None)
        # a derived object (one per index version, e.g. the hybrid's act table) counts its own arrays
        cache += sum(
            int(getattr(a.item(), "nbytes", 0)) for a in self._np_cache.values() if a.dtype == object and a.size == 1
        )
        if self._turn_norms is not None:
            cache += self._turn_norms.nbytes
        if self._links is not None:
            cache += sum(a.nbytes for a in self._links)
        kw = self.keywords
        return {
            "vectors": 4 * self.dim * self.sent_index.ntotal,  # turn vectors are not held (see turn_vectors)
            "turn_columns": sum(g.nbytes for g in turn_cols),
            "sentence_columns": self._sent_ids.nbytes + self._sent_msg.nbytes + self._sent_idx.nbytes,
            # ext id and vocabulary strings, list and dict slots (counted as appended), each turn's term ids
            "terms": self._str_bytes + self._term_ptr.nbytes + self._term_ids.nbytes + self._postings.nbytes,
            "names": self._threads.nbytes + self._sessions.nbytes + self._speakers.nbytes,
            "graph_edges": self.adjacency.nbytes + self.knn.nbytes,
            "acts": self._acts[0].nbytes + self._acts[1].nbytes + self._raw_acts.view().nbytes,
            "caches": cache,
            "ann": int(self._ann.nbytes()) if self._ann is not None else 0,  # a saved one counts once loaded
            # canonical entries and their postings; entry vectors twice (the list and the stacked matrix)
            "keywords": (
                len(kw.ids) * KEYWORD_BYTES + len(kw.entry_keys) * self.dim * 8 + len(kw.turn_kws) * 120
                if kw is not None
                else 0
            ),
        }

    # --------------------------------------------------------------- append
    def _changed(self) -> None:
        self._np_cache.clear()
        self._vec_view = None

    def append_turn(
        self,
        message_id: int,
        ext_id: str,
        thread: str,
        session: str,
        round_id: int,
        at_ts: float,
        tokens: int,
        speaker: str,
        terms: Iterable[str],
        vec: np.ndarray,
        tool: bool = False,
    ) -> int:
        row = self.n_turns
        self._append_turn_columns(message_id, ext_id, thread, session, round_id, at_ts, tokens, speaker, terms, tool)
        # ``vec`` (the turn vector, stored in SQLite) is not held: it is derived from the sentence vectors
        self._postings.maybe_merge(self._term_ptr.view(), self._term_ids.view(), len(self._words))
        self._changed()
        return row

    def _append_turn_columns(
        self,
        message_id: int,
        ext_id: str,
        thread: str,
        session: str,
        round_id: int,
        at_ts: float,
        tokens: int,
        speaker: str,
        terms: Iterable[str],
        tool: bool = False,
    ) -> None:
        self._msg_ids.append(message_id)
        self.ext_ids.append(ext_id)
        self._str_bytes += 65 + len(ext_id)
        self._threads.append(thread)
        self._sessions.append((thread, session))
        self._speakers.append(speaker)
        self._round_ids.append(round_id)
        self._at_ts.append(at_ts)
        self._tokens.append(tokens)
        self._prev.append(-1)
        self._next.append(-1)
        self._tool.append(1 if tool else 0)
        vocab = self._vocab
        for t in terms:
            tid = vocab.get(t)
            if tid is None:
                tid = vocab[t] = len(self._words)
                self._words.append(sys.intern(t))
                self._str_bytes += 160 + len(t)
            self._term_ids.append(tid)
        self._term_ptr.append(self._term_ids.n)

    def append_sentences(
        self,
        rows: list[tuple[int, int, int, str]],
        vecs: np.ndarray,
        linked: bool = False,
        acts: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        """Append sentences ``(sentence_id, message_id, idx, text)`` with their vectors (texts stay in SQLite)
        and their stored acts (``acts``, -1 or None: classified at the next query).

        ``linked``: the vectors are appended to the HNSW graph's shared storage
        by the add's background insertion (:func:`sgmem.retrieval.ann.in_background`,
        started during its transaction, possibly still running); only the
        rows' metadata is appended here. The caller caches the index once the
        insertion is done and holds every row (:meth:`sgmem.cache.CacheView.defer`).
        """
        self.own_vectors()
        if rows:  # one vectorised lookup of the owners (an add's ~50 sentences)
            sids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            mids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
            owners = _rows_of_sorted(self._msg_ids.view(), mids)
            if (owners < 0).any():
                raise KeyError(f"message {int(mids[owners < 0][0])} is not in scope index {self.scope_id}")
            last = self._sent_ids.view()[-1] if self._sent_ids.n else None
            if (last is not None and sids[0] <= last) or (len(sids) > 1 and (np.diff(sids) <= 0).any()):
                self._sent_ids_sorted = False
            self._sent_ids.extend(sids)
            self._sent_msg.extend(owners)
            self._sent_idx.extend([r[2] for r in rows])
        self.adjacency.grow(self.n_sentences)
        self.knn.grow(self.n_sentences)
        self._raw_acts.extend(np.full(len(rows), -1, dtype=np.int8) if acts is None else np.asarray(acts, np.int8))
        if linked:
            if self.ann is None or self.ann.storage() is not self.sent_index:
                raise RuntimeError(
                    f"scope index {self.scope_id}: {len(rows)} sentences were to be linked in the background, "
                    "but the index has no HNSW graph sharing its storage"
                )
        elif len(rows):
            self._quiesce()
            vecs = np.ascontiguousarray(vecs, dtype=np.float32)
            if self.ann is not None and self.ann.storage() is self.sent_index:
                self.ann.add_rows(vecs)  # appends to the shared flat storage and links the new rows
            else:
                self.sent_index.add(vecs)
                if self.ann is not None:
                    self.ann.extend(self.sentence_vectors())
        self._changed()

    def add_reader(self, job: Any) -> None:
        """Register ``job`` (a :class:`concurrent.futures.Future`) as reading the vector storage in place.

        The storage is a FAISS flat index whose buffer moves when rows are
        appended: :meth:`append_sentences` and :meth:`use_ann` wait for the
        registered jobs before they change it (the write path's worker
        appends only in the order it runs its jobs, after such a reader).
        """
        self._readers = [r for r in self._readers if not r.done()]
        self._readers.append(job)

    def _quiesce(self) -> None:
        readers, self._readers = self._readers, []
        for r in readers:
            try:
                r.result()
            except Exception:  # noqa: BLE001, S112 - the reader's own caller reports its failure
                continue

    def use_ann(self, ann: Any) -> None:
        """Adopt ``ann`` (over every sentence row) and its flat storage as the sentence index (one copy)."""
        if ann.ntotal != self.n_sentences:
            raise ValueError("the HNSW index does not cover the scope's sentences")
        self._quiesce()
        self.ann = ann
        self.sent_index, self._mapped = ann.storage(), False
        self.dirty = True  # the new links are worth saving with the caches (Memory.close)
        self._changed()

    def sent_rows(self, sentence_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """:meth:`sent_row` of many ids in one vectorised lookup (-1 where absent)."""
        rows_of = _rows_of_sorted if self._sent_ids_sorted else _rows_of
        return rows_of(self._sent_ids.view(), np.asarray(sentence_ids, dtype=np.int64))

    def add_sentence_edge(self, src_id: int, dst_id: int) -> None:
        a, b = self.sent_row(src_id), self.sent_row(dst_id)
        if a is None or b is None or a == b:
            return
        self.adjacency.add(a, b)

    def add_sentence_edges(self, src_ids: Sequence[int], dst_ids: Sequence[int]) -> None:
        """:meth:`add_sentence_edge` for many edges, in order, with their rows found in one vectorised lookup."""
        if not len(src_ids):
            return
        ids = self._sent_ids.view()
        rows_of = _rows_of_sorted if self._sent_ids_sorted else _rows_of
        a = rows_of(ids, np.asarray(src_ids, dtype=np.int64))
        b = rows_of(ids, np.asarray(dst_ids, dtype=np.int64))
        add = self.adjacency.add
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            if x >= 0 and y >= 0 and x != y:
                add(x, y)

    def add_turn_edge(self, src_id: int, dst_id: int) -> None:
        a, b = self.msg_row(src_id), self.msg_row(dst_id)
        if a is None or b is None:
            return
        self._next.set(a, b)
        self._prev.set(b, a)
        self._changed()

    # ----------------------------------------------------------- persistence
    def save(self, directory: Path) -> None:
        """Write the cache files next to the database (:mod:`sgmem.retrieval.cachefiles`: atomic renames,
        user-only files, the metadata last, so a save torn by a crash or interleaved with another process's
        save is detected on load instead of serving the wrong rows)."""
        from ..text.acts import acts_identity

        save_cached(self, directory, acts_identity(self.act_model))
        self.dirty = False


def _rows_of_sorted(ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Rows of ``keys`` in ascending ``ids`` (-1 where absent)."""
    if not len(ids):
        return np.full(len(keys), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(ids, keys), len(ids) - 1)
    return np.where(ids[pos] == keys, pos, -1)


def _rows_of(ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Rows of ``keys`` in ``ids`` (-1 where absent)."""
    if not len(ids):
        return np.full(len(keys), -1, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    pos = order[np.minimum(np.searchsorted(ids, keys, sorter=order), len(ids) - 1)]
    return np.where(ids[pos] == keys, pos, -1)


# re-exported: load_scope_index lives in .loading (module size); imported last, it needs ScopeIndex
from .loading import load_scope_index  # noqa: E402
