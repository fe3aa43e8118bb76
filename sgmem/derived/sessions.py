"""Session summaries and insights inside a write (ALGORITHMS §1.5–§1.6).

Called from :meth:`sgmem.derived.engine.DerivedEngine.apply`, inside the add's
transaction, after its messages, sentences and facts are stored. LLM texts
were produced before the lock (see :mod:`sgmem.derived.engine`); the
extractive rule runs here on the session's stored sentence vectors.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..store.batch import ahead
from .extract import cluster_insights, extractive_summary, is_fact_sentence
from .store import delete_memories, insert_memory, update_memory

__all__ = ["REMOVED", "replace_cluster_insights", "replace_session_insights", "session_lines", "upsert_summary"]

#: :func:`upsert_summary`'s answer when it removed the session's rule summary (no fact sentence left in it)
REMOVED: tuple[()] = ()


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n > 0 else v.astype(np.float32)


def session_lines(
    conn: sqlite3.Connection, scope_id: int, thread: str, session: str
) -> list[tuple[int, str, datetime]]:
    """``(message id, "Speaker: content", at)`` of a stored session, in order."""
    return [
        (int(mid), f"{name or role}: {content}", datetime.fromisoformat(at))
        for mid, name, role, content, at in conn.execute(
            "SELECT id, name, role, content, at FROM messages WHERE scope_id = ? AND thread = ? AND session = ? "
            "ORDER BY id",
            (scope_id, thread, session),
        )
    ]


def _labelled(lines: Sequence[tuple[str, str]]) -> str:
    """``(speaker, sentence)`` pairs as text with one speaker label per run: "Alice: I ... She ... Bob: ..."."""
    out: list[str] = []
    last = None
    for speaker, sentence in lines:
        out.append(f"{speaker}: {sentence}" if speaker != last else sentence)
        last = speaker
    return " ".join(out)


def summary_row(
    conn: sqlite3.Connection, scope_id: int, thread: str, session: str
) -> tuple[int, str, str, dict[str, Any]] | None:
    """``(id, text, method, detail)`` of a session's summary, if any."""
    row = conn.execute(
        "SELECT id, text, method, detail FROM derived WHERE scope_id = ? AND kind = 'summary' AND thread = ? "
        "AND session = ?",
        (scope_id, thread, session),
    ).fetchone()
    return (int(row[0]), row[1], row[2], json.loads(row[3])) if row else None


def upsert_summary(
    conn: sqlite3.Connection,
    scope_id: int,
    thread: str,
    session: str,
    k: int,
    llm_text: tuple[str, np.ndarray, int] | None,
    force: bool = False,
    roles: Sequence[str] = ("user",),
    min_tokens: int = 4,
) -> tuple[int, float, str, np.ndarray] | tuple[()] | None:
    """Write a session's summary (LLM text if given, else extractive); if it changed, its row as the derived
    memory's cache holds it, ``(id, at_ts, thread, vector)``, or :data:`REMOVED` if it went; else None.

    An LLM summary is kept until the next LLM summary of its session (the
    extractive rule does not overwrite it, unless ``force``: a delete took
    some of its messages); the extractive one follows the session at every add.
    The extractive one is made of the session's fact sentences (``roles``' statements of ``min_tokens``+
    tokens, :func:`sgmem.derived.extract.is_fact_sentence`); a session without any has none (and loses one).
    Its reads are sent together (one round trip on PostgreSQL, :func:`sgmem.store.batch.ahead`).
    """
    summary = ahead(
        conn,
        "SELECT id, text, method, detail FROM derived WHERE scope_id = ? AND kind = 'summary' AND thread = ? "
        "AND session = ?",
        (scope_id, thread, session),
    )
    stored = ahead(
        conn,
        "SELECT id, name, role, content, at FROM messages WHERE scope_id = ? AND thread = ? AND session = ? "
        "ORDER BY id",
        (scope_id, thread, session),
    )
    sentences = (
        ahead(
            conn,
            "SELECT s.message_id, s.text, s.vec, COALESCE(m.name, m.role), m.role, s.act FROM sentences s "
            "JOIN messages m ON m.scope_id = s.scope_id AND m.id = s.message_id "
            "WHERE m.scope_id = ? AND m.thread = ? AND m.session = ? ORDER BY s.message_id, s.idx",
            (scope_id, thread, session),
        )
        if llm_text is None
        else None
    )
    row = next(iter(summary()), None)
    existing = (int(row[0]), row[1], row[2], json.loads(row[3])) if row else None
    lines = [
        (int(mid), f"{name or role}: {content}", datetime.fromisoformat(at))
        for mid, name, role, content, at in stored()
    ]
    if not lines:
        return None
    first_at = lines[0][2]
    if llm_text is not None:
        text, vec, covered = llm_text
        sources = [mid for mid, _, _ in lines]
        method, cause, detail = "llm", "summarised-llm", {"covered": covered}
    else:
        if existing is not None and existing[2] == "llm" and not force:
            return None
        rows = [
            r[:4]
            for r in (sentences() if sentences is not None else [])
            if r[4] in roles and is_fact_sentence(r[1], r[5], min_tokens)
        ]
        if not rows:  # nothing worth reading: no summary (a rule summary left from before goes)
            if existing is not None and (existing[2] != "llm" or force):
                delete_memories(conn, scope_id, [existing[0]])
                return REMOVED
            return None
        # a sentence said twice in a session is one candidate (the first)
        seen: set[str] = set()
        rows = [r for r in rows if not (r[1].strip().lower() in seen or seen.add(r[1].strip().lower()))]  # type: ignore[func-returns-value]
        vecs = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows])
        pick = extractive_summary(vecs, k)
        text = _labelled([(rows[i][3], rows[i][1]) for i in pick])
        vec = _unit(vecs[pick].astype(np.float64).mean(axis=0))
        sources = sorted({int(rows[i][0]) for i in pick})
        method, cause, detail = "rule", "summarised-rule", {"covered": len(lines)}
    row = (first_at.timestamp(), thread, np.array(vec, dtype=np.float32))  # as stored (the caller's cache)
    if existing is None:
        mid = insert_memory(
            conn, scope_id, "summary", text, vec, first_at, thread, session, None, method, sources, cause, detail
        )
        return (mid, *row)
    if existing[1] == text and existing[2] == method:
        return None
    # [D] only an LLM summary is archived when replaced: an extractive one is recomputable, and
    # follows its session at every add (archiving each would grow the store per message); after a
    # delete (force) the replaced text held deleted words and is never archived
    update_memory(
        conn,
        scope_id,
        existing[0],
        text,
        vec,
        first_at,
        cause,
        sources,
        detail,
        replace_sources=True,
        archive=existing[2] == "llm" and not force,
    )
    conn.execute("UPDATE derived SET method = ? WHERE scope_id = ? AND id = ?", (method, scope_id, existing[0]))
    return (existing[0], *row)


def session_facts(
    conn: sqlite3.Connection, scope_id: int, thread: str, session: str
) -> list[tuple[int, datetime, str]]:
    """``(id, at, text)`` of the facts said in a session."""
    return [
        (int(i), datetime.fromisoformat(at), text)
        for i, at, text in conn.execute(
            "SELECT id, at, text FROM derived WHERE scope_id = ? AND kind = 'fact' AND thread = ? AND session = ? "
            "ORDER BY id",
            (scope_id, thread, session),
        )
    ]


def _fact_sources(conn: sqlite3.Connection, scope_id: int, fact_ids: Sequence[int]) -> list[int]:
    out: set[int] = set()
    for i in range(0, len(fact_ids), 500):
        chunk = list(fact_ids[i : i + 500])
        marks = ",".join("?" * len(chunk))
        out.update(
            int(r[0])
            for r in conn.execute(
                "SELECT message_id FROM derived_sources WHERE scope_id = ? AND role = 'origin' "
                f"AND memory_id IN ({marks})",
                (scope_id, *chunk),
            )
        )
    return sorted(out)


def replace_session_insights(
    conn: sqlite3.Connection,
    scope_id: int,
    thread: str,
    session: str,
    insights: Sequence[tuple[datetime, str, np.ndarray]],
) -> int:
    """Replace a session's insights with LLM ones; their sources are the session's facts' sources."""
    old = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM derived WHERE scope_id = ? AND kind = 'insight' AND thread = ? AND session = ?",
            (scope_id, thread, session),
        )
    ]
    delete_memories(conn, scope_id, old)
    facts = session_facts(conn, scope_id, thread, session)
    sources = _fact_sources(conn, scope_id, [f[0] for f in facts])
    if not sources:
        sources = [mid for mid, _, _ in session_lines(conn, scope_id, thread, session)]
    for at, text, vec in insights:
        insert_memory(conn, scope_id, "insight", text, vec, at, thread, session, None, "llm", sources, "insight-llm")
    return len(insights)


def replace_cluster_insights(
    conn: sqlite3.Connection, scope_id: int, fact_ids: Sequence[int], vecs: np.ndarray, min_cos: float, min_size: int
) -> int:
    """Recompute the LLM-free cluster insights over all facts (§1.6 option)."""
    old = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM derived WHERE scope_id = ? AND kind = 'insight' AND method = 'rule'", (scope_id,)
        )
    ]
    delete_memories(conn, scope_id, old)
    n = 0
    for members, medoid in cluster_insights(vecs, min_cos, min_size):
        ids = [fact_ids[i] for i in members]
        marks = ",".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT id, at, thread, session, text FROM derived WHERE scope_id = ? AND id IN ({marks})",
            (scope_id, *ids),
        ).fetchall()
        by_id = {int(r[0]): r for r in rows}
        newest = max(rows, key=lambda r: datetime.fromisoformat(r[1]))
        med = by_id[fact_ids[medoid]]
        insert_memory(
            conn,
            scope_id,
            "insight",
            med[4],
            vecs[medoid],
            datetime.fromisoformat(newest[1]),
            newest[2],
            newest[3],
            None,
            "rule",
            _fact_sources(conn, scope_id, ids),
            "insight-rule",
            {"facts": ids, "size": len(ids)},
        )
        n += 1
    return n
