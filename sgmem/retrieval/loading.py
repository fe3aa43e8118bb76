"""Loading a scope's index from its cache files when they are current, else from the store.

:func:`load_scope_index` maps a scope's saved index (:mod:`sgmem.retrieval.cachefiles`)
when its files are current and match SQLite, else reads the scope's rows from
SQLite into a :class:`sgmem.retrieval.index.ScopeIndex` (saved at the next close).
On a PostgreSQL host (``Config.pg_cache_dir``) files of an older generation
are used too when the rows since were only added: they are appended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..store.sqlite import SQLiteStore
from ..text.acts import acts_identity
from .cachefiles import discard_cache, load_cached
from .compact import Grow
from .heap import release_free_heap
from .index import ScopeIndex, _rows_of
from .refresh import refresh_index

__all__ = ["load_scope_index"]


def load_scope_index(
    store: SQLiteStore, scope_id: int, dim: int, cache_dir: Path | None, act_model: Any = None
) -> ScopeIndex:
    """A scope's index: from its cache files in ``cache_dir`` when they are current, else built from SQLite
    (``act_model``: the :class:`sgmem.text.acts.ActClassifier` that reads its dialogue acts; None: word rules)."""
    with store.read() as conn:
        generation = store.generation(scope_id)

        def make() -> ScopeIndex:
            fresh = ScopeIndex(scope_id=scope_id, dim=dim, generation=generation, store=store)
            fresh.act_model = act_model
            return fresh

        acts_by = acts_identity(act_model)
        if store.acts_current(acts_by):  # else every row is classified anew
            saved = load_cached(cache_dir, conn, make, acts_by)
            if saved is not None:
                return saved
            if getattr(store, "backend", None) == "postgres" and cache_dir is not None:
                saved = _older_saved(store, scope_id, dim, generation, cache_dir, conn, act_model, acts_by)
                if saved is not None:
                    return saved
        idx = make()
        cur = conn.execute(
            "SELECT id, ext_id, thread, session, round_id, at_ts, tokens, COALESCE(name, role), terms, role "
            "FROM messages WHERE scope_id = ? ORDER BY id",
            (scope_id,),
        )
        while batch := cur.fetchmany(4096):
            for r in batch:
                idx._append_turn_columns(
                    int(r[0]), r[1], r[2], r[3], int(r[4]), float(r[5]), int(r[6]), r[7], r[8].split(), r[9] == "tool"
                )
        idx._postings.rebuild(idx._term_ptr.view(), idx._term_ids.view(), len(idx._words))
        acts_ok = store.acts_current(acts_by)
        sents = np.array(
            conn.execute(
                "SELECT id, message_id, idx, COALESCE(act, -1) FROM sentences WHERE scope_id = ? "
                "ORDER BY message_id, idx",
                (scope_id,),
            ).fetchall(),
            dtype=np.int64,
        ).reshape(-1, 4)
        msg_ids = idx._msg_ids.view()
        owners = np.searchsorted(msg_ids, sents[:, 1])
        if sents.size and (owners.max() >= len(msg_ids) or not np.array_equal(msg_ids[owners], sents[:, 1])):
            raise RuntimeError(f"scope {scope_id}: a sentence belongs to no message of the scope")
        idx._sent_ids_sorted = len(sents) < 2 or bool(np.all(np.diff(sents[:, 0]) > 0))
        idx._sent_ids.extend(sents[:, 0])
        idx._sent_msg.extend(owners)
        idx._sent_idx.extend(sents[:, 2])
        idx._raw_acts.extend(sents[:, 3].astype(np.int8) if acts_ok else np.full(len(sents), -1, dtype=np.int8))
        _add_blobs(
            idx.sent_index, conn, "SELECT vec FROM sentences WHERE scope_id = ? ORDER BY message_id, idx", scope_id, dim
        )
        idx.dirty = cache_dir is not None  # saved with the index's other cache files (Memory.close)
        edges = np.array(
            conn.execute("SELECT src, dst, weight FROM sentence_edges WHERE scope_id = ?", (scope_id,)).fetchall(),
            dtype=np.float64,
        ).reshape(-1, 3)
        sids = idx._sent_ids.view()
        a = _rows_of(sids, edges[:, 0].astype(np.int64))
        b = _rows_of(sids, edges[:, 1].astype(np.int64))
        keep = (a >= 0) & (b >= 0) & (a != b)
        idx.adjacency.load(a[keep], b[keep], idx.n_sentences)
        idx.knn.load(a[keep], b[keep], edges[keep, 2].astype(np.float32), idx.n_sentences)
        tedges = np.array(
            conn.execute("SELECT src, dst FROM turn_edges WHERE scope_id = ?", (scope_id,)).fetchall(),
            dtype=np.int64,
        ).reshape(-1, 2)
        a, b = _rows_of(msg_ids, tedges[:, 0]), _rows_of(msg_ids, tedges[:, 1])
        keep = (a >= 0) & (b >= 0)
        for x, y in zip(a[keep].tolist(), b[keep].tolist(), strict=True):
            idx._next.set(x, y)
            idx._prev.set(y, x)
    for col in (idx._msg_ids, idx._round_ids, idx._at_ts, idx._tokens, idx._prev, idx._next, idx._tool):
        col.trim()  # the turn columns grew by doubling while loaded
    for col in (idx._term_ptr, idx._term_ids, idx._sent_ids, idx._sent_msg, idx._sent_idx):
        col.trim()
    _classify_unknown(store, idx)
    idx._raw_acts.trim()
    release_free_heap()  # the fetched rows and blobs were temporaries
    return idx


def _older_saved(
    store: SQLiteStore,
    scope_id: int,
    dim: int,
    generation: int,
    cache_dir: Path,
    conn: Any,
    act_model: Any,
    acts_by: str,
) -> ScopeIndex | None:
    """A PostgreSQL host's saved index of an older generation, brought up to date with the rows other hosts
    added since (:func:`sgmem.retrieval.refresh.refresh_index`, in this read's snapshot); None when its files
    are not intact and current up to their generation (:func:`load_cached`, probe rows against the server),
    or when anything they hold was removed since: the files are then removed too (they may hold deleted
    messages' vectors) and the scope is rebuilt from the server."""
    try:
        older = int(json.loads((cache_dir / f"scope-{scope_id}.json").read_bytes())["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not 0 <= older < generation:
        return None

    def make() -> ScopeIndex:
        fresh = ScopeIndex(scope_id=scope_id, dim=dim, generation=older, store=store)
        fresh.act_model = act_model
        return fresh

    idx = load_cached(cache_dir, conn, make, acts_by, same_stamp=False)  # the writes since drew other stamps
    if idx is not None and refresh_index(store, idx) and idx.generation == generation:
        idx.dirty = True  # saved again at its newer generation
        return idx
    discard_cache(cache_dir, scope_id)
    return None


def _classify_unknown(store: SQLiteStore, idx: ScopeIndex) -> None:
    """Classify the sentences stored without an act (a store written before acts were stored, or by another
    classifier) and store their acts: once per store, never again on opening it."""
    raw = idx._raw_acts.view()
    unknown = np.flatnonzero(raw < 0)
    if not unknown.size:
        return
    acts = idx.classify_rows(idx.sentence_texts(unknown.tolist()), idx.sentence_vectors()[unknown])
    raw = raw.copy()
    raw[unknown] = acts
    idx._raw_acts = Grow(np.int8, raw)
    ids = idx._sent_ids.view()[unknown]
    store.save_sentence_acts(idx.scope_id, [(int(a), int(i)) for a, i in zip(acts, ids, strict=True)])


def _add_blobs(index: Any, conn: Any, sql: str, scope_id: int, dim: int) -> None:
    """Add the vectors a query returns to a flat index, a slice at a time (no full copy of the blobs)."""
    cur = conn.execute(sql, (scope_id,))
    while batch := cur.fetchmany(8192):
        index.add(np.frombuffer(b"".join(r[0] for r in batch), dtype=np.float32).reshape(len(batch), dim))
