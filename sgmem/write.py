"""The write path's steps, kept out of the facade (:mod:`sgmem.memory`).

An add is :func:`prepare_add` (validation, segmenting, embedding, keyword
and derived-memory plans: everything that can fail or is slow, before any
lock), :func:`apply_add` (inside the store's write transaction) and
:func:`finish_add` (after the commit). A delete is :func:`delete_step` then
:func:`tidy_scope` in one transaction; a replace runs delete, add and tidy
in the same one. :func:`place_messages` inserts an add's messages into their thread, opening
rounds at user turns (ALGORITHMS §1.1: a round is a user turn and the
replies until the next one); :func:`extend_index` grows a scope's in-memory
index by what a committed add wrote, so the next read needs no rebuild.
"""

from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .entities.index import EntityIndex
from .entities.store import apply_entities
from .entities.store import prune as prune_entities
from .entities.write import plan_entities
from .errors import InvalidInputError, SgmemError
from .ingest import embed_texts, knn_edges, prepare, turn_vectors
from .pyramid.retrieve import ensure_keywords, plan_add
from .pyramid.vocabulary import apply_plan, lookup_ahead, prune
from .retrieval.ann import ensure_ann, in_background
from .retrieval.dense import scan_threads
from .retrieval.index import ScopeIndex, discard_cache, load_scope_index
from .retrieval.knn import KnnUpdate, knn_update, list_owners, repair_lists
from .store import versions
from .store.sqlite import SQLiteStore
from .text.acts import stored_acts
from .types import AddResult, DeleteReceipt
from .validate import check_name, check_names, check_time, normalise_messages

log = logging.getLogger(__name__)

__all__ = [
    "AppliedAdd",
    "PreparedAdd",
    "apply_add",
    "commit_add",
    "delete_rows",
    "delete_step",
    "extend_index",
    "finish_add",
    "place_messages",
    "plan_prepared",
    "prepare_add",
    "replace_messages",
    "segment_add",
    "session_names",
    "tidy_scope",
]


@dataclass
class PreparedAdd:
    """An add validated, segmented, embedded and planned; nothing stored yet."""

    scope: str
    thread: str
    msgs: list[dict[str, Any]]
    ext_ids: list[str]
    t0: float
    prep: Any = None
    n_embedded: int = 0
    kw_plan: Any = None
    ent_plan: Any = None  # the entity layer's plan (None while Config.entities is off)
    d_plan: Any = None
    t_seg: float = 0.0
    t_emb: float = 0.0
    sent_vecs: np.ndarray | None = None  # the new sentences' vectors, stacked (float32)
    knn: EarlyKnn | None = None  # the kNN search started once the vectors were known


@dataclass
class EarlyKnn:
    """An add's kNN search (SGMem's similarity edges), started on the write path's worker after embedding.

    It runs while the add plans its keywords and derived memory and opens its
    transaction; :func:`apply_add` uses its result only if the scope's index
    is still the one it searched, with the same rows and the same HNSW graph
    (else it searches again), so the edges are those of a search made inside
    the transaction.
    """

    idx: ScopeIndex
    ann: Any
    n_sentences: int
    pairs: Future[list[tuple[int, int, float]]]

    def matches(self, idx: ScopeIndex, ann: Any) -> bool:
        return self.idx is idx and self.ann is ann and self.n_sentences == idx.n_sentences


@dataclass
class AppliedAdd:
    """What :func:`apply_add` wrote inside the transaction, for :func:`finish_add`."""

    scope_id: int
    idx: ScopeIndex
    gen_before: int
    gen_after: int
    msg_ids: list[int]
    rounds: list[int]
    sent_ids: list[int]
    sent_vecs: np.ndarray
    sedges: list[tuple[int, int, float]]
    turn_edges: list[tuple[int, int]]
    kw_applied: Any
    d_applied: Any
    edges: int
    t_graph: float
    ent_applied: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    linking: Future[None] | None = None  # the new rows' HNSW insertion, running during the transaction


def prepare_add(
    mem: Any,
    messages: Any,
    scope: str,
    thread: str,
    at: datetime | str | None,
    *,
    allow_empty: bool = False,
    exclude_rows: frozenset[int] = frozenset(),
) -> PreparedAdd:
    """Everything of ``mem.add`` that can fail or is slow, before the write lock.

    ``exclude_rows``: message rows the same transaction deletes first (a
    replace); generated summaries and insights are planned without them.
    """
    p = segment_add(mem, messages, scope, thread, at, allow_empty=allow_empty)
    return plan_prepared(mem, p, exclude_rows=exclude_rows)


def segment_add(
    mem: Any, messages: Any, scope: str, thread: str, at: datetime | str | None, *, allow_empty: bool = False
) -> PreparedAdd:
    """Validate and segment one add (nothing is read or written yet); :func:`plan_prepared` does the rest."""
    t0 = time.perf_counter()
    limits = mem.config.limits
    scope = check_name(scope, "scope", limits, new=True)
    thread = check_name(thread, "thread", limits, new=True)
    default_at = check_time(at, "at") or datetime.now(timezone.utc)
    msgs = normalise_messages(messages, default_at, limits, allow_empty=allow_empty)
    ext_ids = [m["id"] or f"msg_{uuid.uuid4().hex[:20]}" for m in msgs]
    p = PreparedAdd(scope, thread, msgs, ext_ids, t0)
    if msgs:
        sessions = session_names(msgs, thread, mem.config.session_by_day)
        p.prep = prepare(msgs, mem.config, sessions, ext_ids, mem.analyzer)
    p.t_seg = time.perf_counter()
    return p


def plan_prepared(
    mem: Any,
    p: PreparedAdd,
    vectors: dict[str, np.ndarray] | None = None,
    embedded: int = 0,
    exclude_rows: frozenset[int] = frozenset(),
) -> PreparedAdd:
    """Embed a segmented add (texts whose hash is not in ``vectors`` nor stored), plan keywords and derived memory.

    ``vectors``: precomputed vectors by text hash (:func:`sgmem.bulk.add_many`'s
    one length-sorted pass), of which ``embedded`` were new for this add.
    """
    prep = p.prep
    if prep is None:
        p.t_emb = time.perf_counter()
        return p
    vectors = vectors or {}
    missing = [s.embed_hash for s in prep.sentences if s.embed_hash not in vectors]
    with mem._lock:  # the connection is shared: no read may interleave with another thread's write
        mem._check_open()
        sid_known = mem._store.scope_id(p.scope)
        if sid_known:  # the scope's index checked now: PostgreSQL read its generation with its id (no round trip)
            mem._index(sid_known)
        known = mem._store.vectors_by_hash(sid_known, missing) if sid_known and missing else {}
    known.update((s.embed_hash, vectors[s.embed_hash]) for s in prep.sentences if s.embed_hash in vectors)
    vecs, n_embedded = embed_texts(
        mem.embedder, prep.sentence_texts, known, mem.config.embed_batch_size, [s.embed_hash for s in prep.sentences]
    )
    p.n_embedded = n_embedded + embedded
    for sent, vec in zip(prep.sentences, vecs, strict=False):
        sent.vec = vec
    turn_vectors(prep, int(mem.embedder.dim))
    p.sent_vecs = _stacked(prep, int(mem.embedder.dim))
    if prep.sentences:  # each sentence's act, read from the vectors just computed, is stored with it
        acts = stored_acts([s.text for s in prep.sentences], p.sent_vecs, mem._act_model)
        for sent, act in zip(prep.sentences, acts.tolist(), strict=True):
            sent.act = act
    with mem._lock:  # keywords are planned against the scope's vocabulary, outside the transaction
        # the index checked above (an add of another thread of this Memory may have replaced it since: that one)
        kw_idx = (mem._indexes.get(sid_known) or mem._index(sid_known)) if sid_known else None
        if kw_idx is not None:
            ann = ensure_ann(kw_idx, mem.config.graph)  # a first (re)build happens here, outside the write lock
            p.knn = _start_knn(mem, kw_idx, ann, p.sent_vecs)
        kw_snapshot = ensure_keywords(mem._store, kw_idx) if kw_idx is not None else None
    p.kw_plan = plan_add(
        kw_snapshot,
        kw_idx.n_turns if kw_idx else 0,
        prep.messages,
        mem.config.pyramid,
        mem._words,
        mem.llm,
        int(mem.embedder.dim),
    )
    if mem.config.entities.enabled:  # opt-in: off, an add does no entity work at all
        p.ent_plan = _plan_entities(mem, sid_known, prep, exclude_rows)
        p.kw_plan.usage.merge(p.ent_plan.usage)  # counted with the rest of the add's LLM calls
    p.d_plan = mem._derived.plan(sid_known, p.thread, prep, exclude_rows)  # LLM calls and gate routing
    p.t_emb = time.perf_counter()
    return p


def _stacked(prep: Any, dim: int) -> np.ndarray:
    if not prep.sentences:
        return np.zeros((0, dim), dtype=np.float32)
    return np.stack([s.vec for s in prep.sentences]).astype(np.float32)


def _start_knn(mem: Any, idx: ScopeIndex, ann: Any, vecs: np.ndarray) -> EarlyKnn | None:
    """Start the add's kNN search on the worker now (under ``mem._lock``), if it runs in the background."""
    g = mem.config.graph
    if not (g.knn_background and g.knn_early and len(vecs)):
        return None
    pairs = in_background(
        _knn_fn(g), idx, vecs, g.knn_k, g.knn_min_cosine, ann=ann, threads=_early_knn_threads(mem, idx)
    )
    idx.add_reader(pairs)  # whatever appends to the storage meanwhile waits for it
    return EarlyKnn(idx, ann, idx.n_sentences, pairs)


def _knn_fn(g: Any) -> Any:
    """The kNN search of ``GraphConfig.knn_rule``: the lists kept up to date, or links to earlier sentences."""
    return knn_update if g.knn_rule == "knn" else knn_edges


def _early_knn_threads(mem: Any, idx: ScopeIndex) -> int:
    """[D] Threads of an add's early kNN search (``GraphConfig.knn_early_threads``; by default the scan
    threads but one, at least one).

    The adding thread plans the add's keywords and derived memory meanwhile
    and keeps a core for it. On this project's 2-core machine that is one
    thread: two slowed the adds (simulated-GPU write path at 50k, four
    alternating runs: 488–510 against 471–483 µs/sentence). On a many-core
    host the search is split, as the in-transaction search is; there the split
    search measured 523–596 against 625–677 engine µs/sentence (on a 16-core
    GPU host).
    """
    if mem.config.graph.knn_early_threads is not None:  # GraphConfig.knn_early_threads
        return int(mem.config.graph.knn_early_threads)
    n = max(idx.n_sentences, mem.config.dense_scan_min_sentences)
    return max(1, scan_threads(mem.config, n) - 1)


def _plan_entities(mem: Any, sid_known: int | None, prep: Any, exclude_rows: frozenset[int]) -> Any:
    """The entity layer's plan for an add (LightGMEM, :mod:`sgmem.entities`)."""
    with mem._lock:
        snap = mem._entities.get(mem._store, sid_known) if sid_known else EntityIndex(0, -1)
    if exclude_rows:  # a replace: resolve and profile against what its delete leaves
        snap = snap.without_messages(exclude_rows)
    cfg = mem.config.entities
    return plan_entities(
        snap,
        prep.messages,
        prep.sentences,
        mem._types,
        cfg,
        mem.llm if cfg.llm else None,
        lambda ids: mem._stored_texts(sid_known, ids),
    )


def apply_add(mem: Any, conn: Any, p: PreparedAdd, scope_id: int) -> AppliedAdd:
    """Store a prepared add inside ``mem``'s write transaction (under ``mem._lock``)."""
    store: SQLiteStore = mem._store
    msgs, prep = p.msgs, p.prep
    dup = store.existing_ext_ids(scope_id, [m["id"] for m in msgs if m["id"]])
    if dup:
        raise InvalidInputError(
            "messages[].id",
            dup[:5],
            "ids not already stored in this scope",
            "Message ids are unique per scope; omit 'id' to let sgmem generate one.",
        )
    gen_before = store.generation(scope_id)
    idx = mem._indexes.get(scope_id)
    if idx is None or idx.generation != gen_before:
        idx = load_scope_index(store, scope_id, int(mem.embedder.dim), mem._cache_dir, mem._act_model)
        idx.analyzer = mem.analyzer
    new_sent_vecs = p.sent_vecs if p.sent_vecs is not None else _stacked(prep, idx.dim)
    g = mem.config.graph
    ann = ensure_ann(idx, g)
    pairs: Any
    linking = None
    early, p.knn = p.knn, None
    if g.knn_background and len(new_sent_vecs):
        # the kNN search, then the rows' HNSW insertion, run on a worker thread (in that order) while this
        # thread inserts the messages and sentences: FAISS and BLAS release the GIL (sgmem.retrieval.ann).
        # The search was started after embedding (plan_prepared) unless the index changed since.
        if early is not None and early.matches(idx, ann):
            pairs = early.pairs
        else:
            threads = scan_threads(mem.config, max(idx.n_sentences, mem.config.dense_scan_min_sentences))
            pairs = in_background(_knn_fn(g), idx, new_sent_vecs, g.knn_k, g.knn_min_cosine, ann=ann, threads=threads)
        if ann is not None and ann.storage() is idx.sent_index:
            linking = in_background(ann.add_rows, new_sent_vecs)
    else:
        pairs = _knn_fn(g)(idx, new_sent_vecs, g.knn_k, g.knn_min_cosine, ann=ann)
    t_graph = time.perf_counter()
    try:
        return _apply_rows(mem, conn, p, scope_id, idx, gen_before, new_sent_vecs, pairs, t_graph, linking)
    except BaseException:
        if isinstance(pairs, Future):
            _settle(pairs)
        discard_linked(mem, scope_id, idx, linking)
        raise


def _settle(f: Future[Any]) -> None:
    try:
        f.result()
    except BaseException:  # noqa: S110 - the add's own error is the one to report
        pass


def _linked_all(idx: ScopeIndex) -> bool:
    """After an add's background insertion: its HNSW storage is the index's and holds every sentence row."""
    ann = idx.ann
    return ann is not None and ann.storage() is idx.sent_index and ann.ntotal == idx.n_sentences


def discard_linked(mem: Any, scope_id: int, idx: ScopeIndex, linking: Future[None] | None) -> None:
    """An add whose rows were linked in the background failed: drop the scope's index (it holds them)."""
    if linking is None:
        return
    _settle(linking)
    if mem._indexes.get(scope_id) is idx:
        mem._indexes.pop(scope_id, None)


def _apply_rows(
    mem: Any,
    conn: Any,
    p: PreparedAdd,
    scope_id: int,
    idx: ScopeIndex,
    gen_before: int,
    new_sent_vecs: np.ndarray,
    pairs: Any,  # knn_edges' or knn_update's result, or its Future
    t_graph: float,
    linking: Future[None] | None,
) -> AppliedAdd:
    store: SQLiteStore = mem._store
    prep = p.prep
    # the reads the add needs go out together (PostgreSQL: one round trip with the thread's tail below, the
    # new rows' ids drawn ahead so that no INSERT waits for its id; SQLite reads each at once)
    d_plan = p.d_plan
    store.reserve_ids(
        {
            "messages": len(prep.messages),
            "sentences": len(prep.sentences),
            "vocabulary": len(p.kw_plan.new),
            "derived": _new_memories(d_plan, prep),
        }
    )
    found = lookup_ahead(conn, scope_id, p.kw_plan)
    version = mem._derived.version_ahead(conn, scope_id, d_plan)
    msg_ids, rounds, turn_edges = place_messages(store, scope_id, p.thread, prep.messages)
    sent_ids = store.insert_sentences(scope_id, [(msg_ids[s.msg], s) for s in prep.sentences])
    # what needs no kNN edges goes first: the background search has that long to finish (tables are
    # independent, so the rows and ids are the same in any order)
    kw_applied = apply_plan(conn, scope_id, msg_ids, p.kw_plan, store.consecutive_ids, found)
    e = p.ent_plan
    ent_applied = (
        apply_entities(conn, scope_id, e.new_entities, e.mentions, msg_ids, e.profiles, e.relations)
        if e is not None
        else None
    )
    d_applied = mem._derived.apply(conn, scope_id, p.thread, prep, msg_ids, d_plan, p.kw_plan, version)
    if isinstance(pairs, Future):
        pairs = pairs.result()
    upd = pairs if isinstance(pairs, KnnUpdate) else None
    fwd = upd.pairs if upd is not None else pairs
    sedges = [(sent_ids[i], sent_ids[-t - 1] if t < 0 else idx.sent_ids[t], w) for i, t, w in fwd]
    evicted: list[tuple[int, int]] = []
    if upd is not None:  # knn_rule="knn": earlier sentences' lists take new members and drop what they push out
        sedges += [(idx.sent_ids[r], sent_ids[i], w) for r, i, w in upd.back]
        evicted = [(idx.sent_ids[r], idx.sent_ids[t]) for r, t in upd.evicted]
        if evicted:
            conn.executemany(
                "DELETE FROM sentence_edges WHERE scope_id = ? AND src = ? AND dst = ?",
                [(scope_id, a, b) for a, b in evicted],
            )
    n_edges = store.insert_sentence_edges(scope_id, sedges) + store.insert_turn_edges(scope_id, turn_edges)
    gen_after = store.bump_generation(scope_id)
    return AppliedAdd(
        scope_id,
        idx,
        gen_before,
        gen_after,
        msg_ids,
        rounds,
        sent_ids,
        new_sent_vecs,
        sedges,
        turn_edges,
        kw_applied,
        d_applied,
        n_edges,
        t_graph,
        ent_applied,
        extra={"evicted": evicted},
        linking=linking,
    )


def _new_memories(d_plan: Any, prep: Any) -> int:
    """Generated memories an add may insert: its facts routed Add, a summary per session it touches."""
    if d_plan is None:
        return 0
    adds = sum(1 for op in getattr(d_plan, "ops", None) or () if op.action == "add")
    return adds + len({m.session for m in prep.messages}) + len(getattr(d_plan, "summaries", None) or ())


def commit_add(mem: Any, p: PreparedAdd) -> AddResult:
    """Write a prepared add in one transaction (:func:`apply_add`), then :func:`finish_add`."""
    with mem._lock:
        mem._check_open()
        applied = None
        try:
            with mem._store.write() as conn:
                scope_id = mem._store.scope_id(p.scope, create=True)
                assert scope_id is not None
                applied = apply_add(mem, conn, p, scope_id)
        except BaseException:
            if applied is not None:  # the commit failed
                discard_linked(mem, applied.scope_id, applied.idx, applied.linking)
            raise
        return finish_add(mem, p, applied)


def finish_add(mem: Any, p: PreparedAdd, a: AppliedAdd | None, replaced: DeleteReceipt | None = None) -> AddResult:
    """After the commit (under ``mem._lock``): caches follow what was stored; the :class:`AddResult`."""
    if a is not None:
        mem._derived.committed(a.scope_id, a.d_applied)
        mem._entities.committed(a.scope_id, a.gen_before, a.gen_after, a.ent_applied)
        if a.ent_applied is not None:
            mem._entity_scopes.add(a.scope_id)  # close() flushes this scope's deferred profiles
        linked = a.linking is not None
        # committed: extend the cache in place (or drop it if someone else wrote meanwhile)
        if a.gen_after == a.gen_before + 1:
            try:
                extend_index(
                    a.idx,
                    p.prep,
                    p.thread,
                    a.msg_ids,
                    a.rounds,
                    a.sent_ids,
                    a.sent_vecs,
                    a.sedges,
                    a.turn_edges,
                    a.kw_applied,
                    linked,
                    a.extra.get("evicted", ()),
                )
            except BaseException:  # possibly half-extended: never served (rebuilt from the store at the next read)
                discard_linked(mem, a.scope_id, a.idx, a.linking)
                mem._indexes.pop(a.scope_id, None)
                raise
            a.idx.generation = a.gen_after
            a.idx.dirty = mem._cache_dir is not None
            if a.linking is not None:
                # the rows' HNSW insertion may still run on the worker: the index is cached once it is done
                # (dropped if it failed: committed all the same, the index is rebuilt from the store at the
                # next read). It overlaps the caller's next steps; the next access to the cache waits for it.
                mem._indexes.defer(a.scope_id, a.idx, a.linking, _linked_all)
            else:
                mem._indexes[a.scope_id] = a.idx
        else:
            discard_linked(mem, a.scope_id, a.idx, a.linking)
            mem._indexes.pop(a.scope_id, None)
    t_end = time.perf_counter()
    t_graph = a.t_graph if a is not None else p.t_emb
    d_plan = p.d_plan
    res = AddResult(
        message_ids=tuple(p.ext_ids),
        messages=len(a.msg_ids) if a is not None else 0,
        sentences=len(a.sent_ids) if a is not None else 0,
        edges=a.edges if a is not None else 0,
        # not the entity layer's word vectors: they come from a per-Memory cache shared by all scopes, so
        # counting them would let one scope observe another's words (tests/reliability/test_isolation.py)
        embedded=p.n_embedded + (d_plan.embedded if d_plan is not None else 0),
        timings_ms={
            "segment": (p.t_seg - p.t0) * 1e3,
            "embed": (p.t_emb - p.t_seg) * 1e3,
            "graph": (t_graph - p.t_emb) * 1e3,
            "store": (t_end - t_graph) * 1e3,
            "total": (t_end - p.t0) * 1e3,
            "derived": d_plan.ms if d_plan is not None else 0.0,
        },
        **mem._derived.result(d_plan, a.d_applied if a is not None else None, p.kw_plan),
        replaced=replaced,
    )
    log.debug(
        "add scope=%r thread=%r: %d messages, %d sentences, %d edges, %d texts embedded in %.1f ms%s",
        p.scope,
        p.thread,
        res.messages,
        res.sentences,
        res.edges,
        res.embedded,
        res.timings_ms["total"],
        f" (replaced {replaced.messages} messages)" if replaced is not None else "",
    )
    return res


class ThreadChanged(SgmemError):
    """The thread no longer holds the rows an edit was planned on (:func:`replace_messages`'s ``expect_rows``)."""


def replace_messages(
    mem: Any,
    messages: Any,
    scope: str,
    thread: str,
    message_ids: Any,
    at: datetime | str | None,
    *,
    expect_rows: tuple[int, ...] | None = None,
    replaced: dict[str, tuple[str, Any]] | None = None,
) -> AddResult:
    """The body of :meth:`sgmem.Memory.replace`: the delete and the add in one transaction.

    ``expect_rows``: the thread's message row ids (sorted) the caller planned
    on; checked under the scope's write lock inside the transaction, and
    :class:`ThreadChanged` raised (nothing written) if the thread moved on
    (:mod:`sgmem.threads`' compare-and-swap). A deleted message that is
    added again (same id) keeps its earlier versions; ``replaced`` maps an
    edited message's new id to ``(old id, the stored Message it replaces)``,
    whose text becomes its newest earlier version (:mod:`sgmem.store.versions`).
    """
    mem._check_open()
    limits = mem.config.limits
    scope, thread = check_name(scope, "scope", limits, new=True), check_name(thread, "thread", limits, new=True)
    ids = check_names(message_ids, "message_ids", limits)
    del_thread = thread if ids is None else None
    with mem._lock:
        sid = mem._store.scope_id(scope)
        rows = frozenset(mem._store.message_rows(sid, del_thread, ids)) if sid is not None else frozenset()
    p = prepare_add(mem, messages, scope, thread, at, allow_empty=True, exclude_rows=rows)
    with mem._lock:
        mem._check_open()
        applied = None
        try:
            with mem._store.write() as conn:
                scope_id = mem._store.scope_id(scope, create=bool(p.msgs))  # PostgreSQL: the scope's lock
                if expect_rows is not None:
                    now = mem._store.message_rows(scope_id, thread, None) if scope_id is not None else set()
                    if tuple(sorted(now)) != expect_rows:
                        raise ThreadChanged(f"thread {thread!r} changed since it was read")
                if scope_id is None:  # nothing to delete, nothing to add
                    return finish_add(mem, p, None, DeleteReceipt())
                carried = versions.carry(conn, scope_id, mem._store.message_rows(scope_id, del_thread, ids))
                counts = delete_step(
                    mem._store, mem._derived, mem._cache_dir, scope_id, del_thread, ids, mem.config.graph
                )
                if counts["messages"] and p.d_plan is not None:
                    p.d_plan.base_version = -1  # route the facts again against what the delete left
                applied = apply_add(mem, conn, p, scope_id) if p.msgs else None
                if applied is not None and (carried or replaced):
                    when = versions.now()
                    texts = {new: (old, versions.VersionRow.of(m, when)) for new, (old, m) in (replaced or {}).items()}
                    versions.restore(conn, scope_id, list(zip(p.ext_ids, applied.msg_ids, strict=True)), carried, texts)
                tidy_scope(mem._store, scope_id, bool(counts["messages"]))
        except BaseException:
            if applied is not None:  # the tidy or the commit failed
                discard_linked(mem, applied.scope_id, applied.idx, applied.linking)
            raise
        if counts["messages"] and applied is None:
            mem._indexes.pop(scope_id, None)
            mem._entities.drop(scope_id)
        scrubbed = mem._scrub() if counts["messages"] or mem._unscrubbed else True
        return finish_add(mem, p, applied, DeleteReceipt(**counts, scrubbed=scrubbed))


def session_names(messages: list[dict[str, Any]], thread: str, by_day: bool) -> list[str]:
    """Each message's session: its own, else the thread and its UTC day (``Config.session_by_day``), else the thread."""
    return [
        m["session"] or (f"{thread}@{m['at'].astimezone(timezone.utc).date().isoformat()}" if by_day else thread)
        for m in messages
    ]


def place_messages(
    store: SQLiteStore, scope_id: int, thread: str, messages: list[Any]
) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """Insert ``messages`` after the thread's last turn, inside the caller's write transaction.

    Returns the new message row ids, each message's round id, and the
    chronological turn edges (previous turn → this turn) to insert.
    """
    last, session_counts = store.thread_tail(scope_id, thread, [m.session for m in messages])
    prev_id, prev_session, open_round = (last[0], last[2], last[3]) if last else (None, None, None)
    rows: list[tuple[Any, int, int]] = []  # (message, round ref, turn index): see SQLiteStore.insert_messages
    for i, m in enumerate(messages):
        if m.session != prev_session:
            open_round = None
        ref = -i - 1 if (m.role == "user" or open_round is None) else open_round
        rows.append((m, ref, session_counts[m.session]))
        session_counts[m.session] += 1
        open_round = ref
        prev_session = m.session
    msg_ids, rounds = store.insert_messages(scope_id, thread, rows)
    chain = ([prev_id] if prev_id is not None else []) + msg_ids
    turn_edges = list(zip(chain[:-1], chain[1:], strict=True))
    return msg_ids, rounds, turn_edges


def extend_index(
    idx: ScopeIndex,
    prep: Any,
    thread: str,
    msg_ids: list[int],
    rounds: list[int],
    sent_ids: list[int],
    sent_vecs: np.ndarray,
    sentence_edges: list[tuple[int, int, float]],
    turn_edges: list[tuple[int, int]],
    keywords_applied: Any,
    linked: bool = False,
    evicted: Any = (),
) -> None:
    """Append a committed add's turns, sentences, edges and keyword postings to ``idx``
    (``linked``: the sentence vectors are already in its HNSW storage)."""
    for m, mid, rid in zip(prep.messages, msg_ids, rounds, strict=True):
        idx.append_turn(
            mid,
            m.ext_id,
            thread,
            m.session,
            rid,
            m.at.timestamp(),
            m.tokens,
            m.name or m.role,
            frozenset(m.terms.split()),
            m.vec,
            m.role == "tool",
        )
    idx.append_sentences(
        [(sid, msg_ids[s.msg], s.idx, s.text) for sid, s in zip(sent_ids, prep.sentences, strict=True)],
        sent_vecs,
        linked,
        [-1 if s.act is None else s.act for s in prep.sentences],
    )
    idx.add_sentence_edges([a for a, _, _ in sentence_edges], [b for _, b, _ in sentence_edges])
    _follow_lists(idx, sentence_edges, evicted)
    for a, b in turn_edges:
        idx.add_turn_edge(a, b)
    if idx.keywords is not None:
        idx.keywords.extend(keywords_applied, idx.msg_row)


def _follow_lists(idx: ScopeIndex, edges: list[tuple[int, int, float]], evicted: Any) -> None:
    """The cached kNN lists and adjacency follow an add's new and evicted similarity edges (ids → rows)."""
    new = [
        (ra, rb, w) for (ra, rb), (_, _, w) in zip(_pair_rows(idx, edges), edges, strict=True) if ra >= 0 and rb >= 0
    ]
    gone = [(ra, rb) for ra, rb in _pair_rows(idx, evicted) if ra >= 0 and rb >= 0]
    if gone:
        idx.adjacency.remove(gone)
    idx.knn.apply(new, gone)


def _pair_rows(idx: ScopeIndex, pairs: Any) -> list[tuple[int, int]]:
    """The rows ``(row(a), row(b))`` of each pair's first two sentence ids (-1 where absent), in one lookup."""
    if not len(pairs):
        return []
    rows = idx.sent_rows([x for p in pairs for x in p[:2]]).reshape(-1, 2)
    return [(a, b) for a, b in rows.tolist()]


def delete_step(
    store: SQLiteStore,
    derived: Any,
    cache_dir: Path | None,
    scope_id: int,
    thread: str | None,
    ids: list[str] | None,
    graph: Any = None,
) -> dict[str, Any]:
    """Delete messages (all of the scope, a thread's, or ``ids``) and everything derived, inside ``store.write()``.

    Vocabulary entries left without postings and an emptied scope are removed
    by :func:`tidy_scope`, which the caller runs last in the same transaction
    (a replace adds its messages in between, reusing the vocabulary).
    """
    conn = store.conn
    store.lock_scope(scope_id)  # PostgreSQL: other hosts' writers of this scope wait
    pending = derived.before_delete(conn, scope_id, thread, ids)
    owners = _knn_owners(store, scope_id, thread, ids) if graph is not None and graph.knn_rule == "knn" else []
    counts = store.delete(scope_id, thread, ids)
    if owners:  # the kNN lists that lost a member are recomputed over what is left
        repair_lists(conn, scope_id, owners, graph.knn_k, graph.knn_min_cosine)
    if counts["messages"]:
        counts.update(derived.after_delete(conn, scope_id, pending))
        store.bump_generation(scope_id)
        # before the commit: a crash must not leave deleted vectors in cache files
        discard_cache(cache_dir, scope_id)
    return counts


def tidy_scope(store: SQLiteStore, scope_id: int, deleted: bool) -> None:
    """End a delete: prune unused keywords; an emptied scope goes entirely (its name and any row left)."""
    if deleted:
        prune(store.conn, scope_id)  # keyword postings went with the messages (cascade)
        prune_entities(store.conn, scope_id)  # so did entity mentions: entities left without any go
    if not store.has_messages(scope_id):
        store.purge_scope(scope_id)


def _knn_owners(store: SQLiteStore, scope_id: int, thread: str | None, ids: list[str] | None) -> list[int]:
    """Sentences outside the delete whose kNN lists hold a sentence it removes."""
    if thread is None and ids is None:
        return []  # the whole scope goes
    msgs = sorted(store.message_rows(scope_id, thread, ids))
    dead: list[int] = []
    for i in range(0, len(msgs), 500):
        chunk = msgs[i : i + 500]
        marks = ",".join("?" * len(chunk))
        dead += [
            int(r[0])
            for r in store.conn.execute(
                f"SELECT id FROM sentences WHERE scope_id = ? AND message_id IN ({marks})", (scope_id, *chunk)
            )
        ]
    return list_owners(store.conn, scope_id, dead)


def delete_rows(
    store: SQLiteStore,
    derived: Any,
    cache_dir: Path | None,
    scope_id: int,
    thread: str | None,
    ids: list[str] | None,
    graph: Any = None,
) -> dict[str, Any]:
    """Delete a scope's messages (all, a thread's, or ``ids``) and everything derived, in one transaction.

    ``graph`` (the ``GraphConfig``): with ``knn_rule="knn"`` the kNN lists that lose a member are repaired.
    """
    with store.write():
        counts = delete_step(store, derived, cache_dir, scope_id, thread, ids, graph)
        tidy_scope(store, scope_id, bool(counts["messages"]))
    return counts
