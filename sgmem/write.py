"""The write path's store and index steps, kept out of the facade (:mod:`sgmem.memory`).

:func:`place_messages` inserts an add's messages into their thread, opening
rounds at user turns (ALGORITHMS §1.1: a round is a user turn and the
replies until the next one); :func:`extend_index` grows a scope's in-memory
index by what a committed add wrote, so the next read needs no rebuild.
"""

from __future__ import annotations

from datetime import timezone
from pathlib import Path
from typing import Any

import numpy as np

from .entities.store import prune as prune_entities
from .pyramid.vocabulary import prune
from .retrieval.index import ScopeIndex, discard_cache
from .store.sqlite import SQLiteStore

__all__ = ["delete_rows", "extend_index", "place_messages", "session_names"]


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
    last = store.last_in_thread(scope_id, thread)
    prev_id, prev_session, open_round = (last[0], last[2], last[3]) if last else (None, None, None)
    session_counts: dict[str, int] = {}
    msg_ids: list[int] = []
    rounds: list[int] = []
    turn_edges: list[tuple[int, int]] = []
    for m in messages:
        if m.session not in session_counts:
            session_counts[m.session] = store.session_size(scope_id, m.session)
        if m.session != prev_session:
            open_round = None
        rid = None if (m.role == "user" or open_round is None) else open_round
        mid = store.insert_message(scope_id, thread, m, rid, session_counts[m.session])
        session_counts[m.session] += 1
        open_round = mid if rid is None else rid
        prev_session = m.session
        if prev_id is not None:
            turn_edges.append((prev_id, mid))
        prev_id = mid
        msg_ids.append(mid)
        rounds.append(open_round)
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
) -> None:
    """Append a committed add's turns, sentences, edges and keyword postings to ``idx``."""
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
        )
    idx.append_sentences(
        [(sid, msg_ids[s.msg], s.idx, s.text) for sid, s in zip(sent_ids, prep.sentences, strict=True)],
        sent_vecs,
    )
    for a, b, _ in sentence_edges:
        idx.add_sentence_edge(a, b)
    for a, b in turn_edges:
        idx.add_turn_edge(a, b)
    if idx.keywords is not None:
        idx.keywords.extend(keywords_applied, idx.msg_row)


def delete_rows(
    store: SQLiteStore, derived: Any, cache_dir: Path | None, scope_id: int, thread: str | None, ids: list[str] | None
) -> dict[str, Any]:
    """Delete a scope's messages (all, a thread's, or ``ids``) and everything derived, in one transaction."""
    with store.write() as conn:
        pending = derived.before_delete(conn, scope_id, thread, ids)
        counts = store.delete(scope_id, thread, ids)
        if counts["messages"]:
            prune(store.conn, scope_id)  # keyword postings went with the messages (cascade)
            prune_entities(store.conn, scope_id)  # so did entity mentions
            counts.update(derived.after_delete(conn, scope_id, pending))
            store.bump_generation(scope_id)
            # before the commit: a crash must not leave deleted vectors in cache files
            discard_cache(cache_dir, scope_id)
        if not store.has_messages(scope_id):
            # an emptied scope goes entirely: its name and any derived row left in any table
            store.purge_scope(scope_id)
    return counts
