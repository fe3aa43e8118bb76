"""Bring a cached scope index up to date with rows another process (host) appended.

A :class:`~sgmem.retrieval.index.ScopeIndex` is a cache of the store, stamped
with the scope's generation. When another process has changed the scope, the
generation differs; rebuilding the whole index reads every row of the scope
again. Most changes are appends (adds), so :func:`refresh_index` reads only the
rows newer than the newest the cache holds (message ids grow monotonically and
writers of one scope are serialised, so "newer" is "id greater"), in one read
snapshot together with the generation.

A removal (delete, replace, or anything that took a row the cache holds) must
never be served from a cache: the refresh first checks, in the same snapshot,
that the scope's row counts equal what the cache holds plus the new rows. Any
removed message or sentence breaks that equality (new rows all have greater
ids), and the caller rebuilds the index from scratch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..store.batch import ahead
from ..text.acts import acts_identity

__all__ = ["refresh_index"]


def refresh_index(store: Any, idx: Any) -> bool:
    """Append the scope's rows newer than ``idx``'s to it; False (``idx`` untouched) when only a rebuild will do.

    On True, ``idx.generation`` is the store's. The caller holds the lock that
    guards ``idx`` (``Memory._lock``).
    """
    sid = int(idx.scope_id)
    with store.read() as conn:
        gen = store.generation(sid)
        if gen == idx.generation:
            return True
        if gen < idx.generation:  # the scope was emptied and made again
            return False
        last_msg = int(idx.msg_ids[-1]) if idx.n_turns else 0
        # every read below is sent before any is read (one round trip to a PostgreSQL server, ahead())
        counts = ahead(
            conn,
            "SELECT (SELECT COUNT(*) FROM messages WHERE scope_id = ?), (SELECT COUNT(*) FROM sentences WHERE scope_id = ?)",
            (sid, sid),
        )
        new_turns = ahead(
            conn,
            "SELECT id, ext_id, thread, session, round_id, at_ts, tokens, COALESCE(name, role), terms, vec, role "
            "FROM messages WHERE scope_id = ? AND id > ? ORDER BY id",
            (sid, last_msg),
        )
        new_sents = ahead(
            conn,
            "SELECT id, message_id, idx, vec, COALESCE(act, -1) FROM sentences WHERE scope_id = ? AND message_id > ? "
            "ORDER BY message_id, idx",
            (sid, last_msg),
        )
        new_edges = ahead(
            conn,
            "SELECT e.src, e.dst, e.weight FROM sentence_edges e JOIN sentences s ON s.scope_id = e.scope_id "
            "AND s.id = e.src WHERE e.scope_id = ? AND s.scope_id = ? AND s.message_id > ?",
            (sid, sid, last_msg),
        )
        # GraphConfig.knn_rule="knn": an add also puts its sentences into earlier sentences' lists and drops
        # what they push out; a list that changed so holds a new sentence (a delete is caught by the counts
        # below), and is re-read whole
        listed = ahead(
            conn,
            "SELECT e.src FROM sentence_edges e JOIN sentences s ON s.scope_id = e.scope_id AND s.id = e.dst "
            "JOIN sentences o ON o.scope_id = e.scope_id AND o.id = e.src "
            "WHERE e.scope_id = ? AND s.message_id > ? AND o.message_id <= ?",
            (sid, last_msg, last_msg),
        )
        new_tedges = ahead(
            conn,
            "SELECT src, dst FROM turn_edges WHERE scope_id = ? AND (src > ? OR dst > ?)",
            (sid, last_msg, last_msg),
        )
        kw_ahead = _keywords_ahead(conn, sid, idx.keywords, last_msg) if idx.keywords is not None else None
        n_msgs, n_sents = counts()[0]
        turns, sents = new_turns(), new_sents()
        if idx.n_turns + len(turns) != int(n_msgs) or idx.n_sentences + len(sents) != int(n_sents):
            return False  # something the cache holds was removed: rebuild
        sedges = new_edges()
        owners = sorted({int(r[0]) for r in listed()})
        relisted: list[tuple[int, int, float]] = []
        for i in range(0, len(owners), 500):
            chunk = owners[i : i + 500]
            marks = ",".join("?" * len(chunk))
            relisted += conn.execute(
                f"SELECT src, dst, weight FROM sentence_edges WHERE scope_id = ? AND src IN ({marks})", (sid, *chunk)
            ).fetchall()
        tedges = new_tedges()
        kw_new = _new_keywords(idx.keywords, *kw_ahead()) if kw_ahead is not None else None
    dim = int(idx.dim)
    for r in turns:
        idx.append_turn(
            int(r[0]), r[1], r[2], r[3], int(r[4]), float(r[5]), int(r[6]), r[7], r[8].split(),
            np.frombuffer(r[9], dtype=np.float32).reshape(1, dim), r[10] == "tool",
        )  # fmt: skip
    if sents:
        vecs = np.frombuffer(b"".join(bytes(r[3]) for r in sents), dtype=np.float32).reshape(len(sents), dim)
        acts = [int(r[4]) for r in sents] if store.acts_current(acts_identity(idx.act_model)) else None
        idx.append_sentences([(int(r[0]), int(r[1]), int(r[2]), "") for r in sents], vecs, acts=acts)
    knn: list[tuple[int, int, float]] = []
    for a, b, w in sedges:
        idx.add_sentence_edge(int(a), int(b))
        ra, rb = idx.sent_row(int(a)), idx.sent_row(int(b))
        if ra is not None and rb is not None:
            knn.append((ra, rb, float(w)))
    idx.knn.apply(knn, [])
    if owners:
        _relist(idx, owners, relisted)
    for a, b in tedges:
        idx.add_turn_edge(int(a), int(b))
    if kw_new is not None:
        idx.keywords.extend(kw_new, idx.msg_row)
    idx.generation = gen
    return True


def _relist(idx: Any, owners: list[int], edges: list[tuple[int, int, float]]) -> None:
    """Replace the kNN lists of ``owners`` (sentence ids) with ``edges`` read from the store; adjacency follows."""
    row = idx.sent_row
    fresh: dict[int, list[tuple[int, float]]] = {r: [] for o in owners if (r := row(o)) is not None}
    for a, b, w in edges:
        ra, rb = row(int(a)), row(int(b))
        if ra is not None and rb is not None:
            fresh.setdefault(ra, []).append((rb, float(w)))
    gone: list[tuple[int, int]] = []
    for r, items in fresh.items():
        old = {t for t, _ in idx.knn.row(r)}
        new = {t for t, _ in items}
        gone += [(r, t) for t in old - new]
        for t in new - old:
            idx.adjacency.add(r, t)
        idx.knn.set_row(r, items)
    if gone:
        idx.adjacency.remove(gone)


def _keywords_ahead(conn: Any, sid: int, kwi: Any, last_msg: int) -> Any:
    """Send the reads of the keyword entries and postings the new messages brought (:func:`_new_keywords`)."""
    known = max(kwi.ids, default=0)
    entries = ahead(
        conn,
        "SELECT id, lemma, canonical_id, vec FROM vocabulary WHERE scope_id = ? AND id > ? ORDER BY id",
        (sid, known),
    )
    postings = ahead(
        conn,
        "SELECT message_id, keyword_id FROM keyword_postings WHERE scope_id = ? AND message_id > ? "
        "ORDER BY message_id, keyword_id",
        (sid, last_msg),
    )
    return lambda: (entries(), postings())


def _new_keywords(kwi: Any, entry_rows: list[Any], posting_rows: list[Any]) -> Any:
    """The keyword entries and postings the new messages brought, as :meth:`KeywordIndex.extend` takes them.

    Vocabulary rows are only ever inserted by an add (and pruned by a delete,
    which the caller's row counts turn into a rebuild), so every entry newer
    than the newest canonical entry the index holds is new, save aliases it
    already has.
    """
    from ..pyramid.vocabulary import Applied

    entries = []
    for db_id, lemma, canonical, blob in entry_rows:
        if canonical is None and int(db_id) in kwi.local:
            continue
        if canonical is not None and kwi.lookup.get(lemma, -1) == kwi.local.get(int(canonical), -2):
            continue  # an alias it already has
        vec = np.frombuffer(blob, dtype=np.float32) if blob else None
        entries.append((int(db_id), lemma, None if canonical is None else int(canonical), vec))
    postings: dict[int, list[int]] = {}
    for mid, kid in posting_rows:
        postings.setdefault(int(mid), []).append(int(kid))
    return Applied(entries=entries, postings=list(postings.items()))
