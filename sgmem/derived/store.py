"""SQL for derived memory and the gate (tables of migration ``0002_derived_memory``).

Every function runs on the caller's connection, inside the caller's
transaction: an add stores its messages, facts, versions, links, decisions,
gate state and LLM usage in one commit.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

import numpy as np

from ..gate.density import Density
from ..gate.gate import Decision, GateState
from ..llm import LLMUsage
from ..store.batch import ahead, drawn_ids

__all__ = [
    "add_support",
    "add_supports",
    "add_usage",
    "decision_row",
    "delete_memories",
    "insert_memory",
    "load_state",
    "log_decision",
    "log_decisions",
    "save_state",
    "state_version",
    "update_memory",
]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def _blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def _chunks(ids: Sequence[int], size: int = 500) -> Iterable[list[int]]:
    for i in range(0, len(ids), size):
        yield list(ids[i : i + size])


# ------------------------------------------------------------------ gate state
def state_version(conn: sqlite3.Connection, scope_id: int | None) -> int:
    """The scope's derived-memory version (0 before its first derived write)."""
    if scope_id is None:
        return 0
    row = conn.execute("SELECT version FROM gate_state WHERE scope_id = ?", (scope_id,)).fetchone()
    return int(row[0]) if row else 0


def load_state(
    conn: sqlite3.Connection, scope_id: int, dim: int, pca_dim: int
) -> tuple[GateState, np.ndarray | None, int]:
    """The scope's gate state with its facts, plus persisted IVF centroids and their training size."""
    st = GateState(dim=dim, pca_dim=pca_dim)
    ids: list[int] = []
    blobs: list[bytes] = []
    for mid, blob in conn.execute(
        "SELECT id, vec FROM derived WHERE scope_id = ? AND kind = 'fact' ORDER BY id", (scope_id,)
    ):
        ids.append(int(mid))
        blobs.append(blob)
    vecs = (
        np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dim)
        if ids
        else np.zeros((0, dim), np.float32)
    )
    st.load_facts(ids, vecs)
    row = conn.execute(
        "SELECT version, step, msg_count, tau, kappa, sum_vec, pca_mean, pca_basis, pca_lo, pca_hi, pca_n_fit, "
        "pca_stale, adds, updates, noops FROM gate_state WHERE scope_id = ?",
        (scope_id,),
    ).fetchone()
    ivf = conn.execute("SELECT centroids, n_train FROM gate_ivf WHERE scope_id = ?", (scope_id,)).fetchone()
    if row is None:
        st.sum_vec = vecs.astype(np.float64).sum(axis=0) if ids else np.zeros(dim)
        return st, None, 0
    st.version, st.step, st.msg_count = int(row[0]), int(row[1]), int(row[2])
    st.tau = None if row[3] is None else float(row[3])
    st.kappa = float(row[4])
    sum_ok = row[5] is not None and len(row[5]) == 8 * dim
    st.sum_vec = np.frombuffer(row[5], dtype=np.float64).copy() if sum_ok else vecs.astype(np.float64).sum(axis=0)
    st.density = Density.from_blobs(dim, pca_dim, row[6], row[7], row[8], row[9], int(row[10]), bool(row[11]))
    st.counts = {"add": int(row[12]), "update": int(row[13]), "noop": int(row[14])}
    centroids = None
    if ivf is not None and ivf[0] is not None and len(ivf[0]) % (4 * dim) == 0 and len(ivf[0]):
        centroids = np.frombuffer(ivf[0], dtype=np.float32).reshape(-1, dim).copy()
    return st, centroids, int(ivf[1]) if ivf is not None else 0


def save_state(conn: sqlite3.Connection, scope_id: int, st: GateState, version: int, centroids: Any = None) -> None:
    """Persist the scope's gate state (and new IVF centroids when given)."""
    dens = st.density
    mean, basis, lo, hi = dens.to_blobs() if dens is not None else (None, None, None, None)
    values = (
        version,
        st.n,
        st.step,
        st.msg_count,
        st.tau,
        st.kappa,
        np.ascontiguousarray(st.sum_vec, dtype=np.float64).tobytes(),
        mean,
        basis,
        lo,
        hi,
        dens.n_fit if dens is not None else 0,
        int(dens.stale) if dens is not None else 1,
        st.counts.get("add", 0),
        st.counts.get("update", 0),
        st.counts.get("noop", 0),
        now_iso(),
    )
    conn.execute(
        "INSERT INTO gate_state (scope_id, version, n, step, msg_count, tau, kappa, sum_vec, pca_mean, pca_basis, "
        "pca_lo, pca_hi, pca_n_fit, pca_stale, adds, updates, noops, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(scope_id) DO UPDATE SET version = excluded.version, n = excluded.n, step = excluded.step, "
        "msg_count = excluded.msg_count, tau = excluded.tau, kappa = excluded.kappa, sum_vec = excluded.sum_vec, "
        "pca_mean = excluded.pca_mean, pca_basis = excluded.pca_basis, pca_lo = excluded.pca_lo, "
        "pca_hi = excluded.pca_hi, pca_n_fit = excluded.pca_n_fit, pca_stale = excluded.pca_stale, "
        "adds = excluded.adds, updates = excluded.updates, noops = excluded.noops, updated_at = excluded.updated_at",
        (scope_id, *values),
    )
    if centroids is not None:  # a row of its own: the state's row above is rewritten at every add
        conn.execute(
            "INSERT INTO gate_ivf (scope_id, centroids, n_train) VALUES (?, ?, ?) "
            "ON CONFLICT(scope_id) DO UPDATE SET centroids = excluded.centroids, n_train = excluded.n_train",
            (scope_id, None if centroids is False else _blob(centroids[0]), 0 if centroids is False else centroids[1]),
        )


def bump_version(conn: sqlite3.Connection, scope_id: int) -> int:
    """Mark the scope's derived memory changed (outside a gate-state save)."""
    conn.execute("INSERT OR IGNORE INTO gate_state (scope_id) VALUES (?)", (scope_id,))
    conn.execute("UPDATE gate_state SET version = version + 1 WHERE scope_id = ?", (scope_id,))
    return state_version(conn, scope_id)


# ------------------------------------------------------------------ memories
def insert_memory(
    conn: sqlite3.Connection,
    scope_id: int,
    kind: str,
    text: str,
    vec: np.ndarray,
    at: datetime,
    thread: str,
    session: str | None,
    speaker: str | None,
    method: str,
    sources: Sequence[int],
    cause: str,
    detail: dict[str, Any] | None = None,
    ts: str | None = None,
) -> int:
    """Insert a derived memory (version 1) with its origin links; return its id.

    ``ts`` is the write's wall-clock time (one per transaction; default now).
    """
    ts = ts or now_iso()
    drawn = drawn_ids(conn, "derived", 1)  # PostgreSQL: an id drawn ahead, no round trip for RETURNING
    cur = conn.execute(
        "INSERT INTO derived (scope_id, kind, text, vec, at, at_ts, thread, session, speaker, method, version, "
        f"cause, detail, created_at, updated_at{', id' if drawn else ''}) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?{', ?' if drawn else ''})",
        (
            scope_id,
            kind,
            text,
            _blob(vec),
            at.isoformat(),
            at.timestamp(),
            thread,
            session,
            speaker,
            method,
            cause,
            json.dumps(detail or {}),
            ts,
            ts,
            *(drawn or ()),
        ),
    )
    mid = drawn[0] if drawn else int(cur.lastrowid)  # type: ignore[arg-type]
    conn.executemany(
        "INSERT OR REPLACE INTO derived_sources (scope_id, memory_id, message_id, role) VALUES (?, ?, ?, 'origin')",
        [(scope_id, mid, s) for s in sorted(set(int(s) for s in sources))],
    )
    return mid


def origin_sources(conn: sqlite3.Connection, scope_id: int, mid: int) -> list[int]:
    """The messages a memory's current text came from."""
    return sorted(
        int(r[0])
        for r in conn.execute(
            "SELECT message_id FROM derived_sources WHERE scope_id = ? AND memory_id = ? AND role = 'origin'",
            (scope_id, mid),
        )
    )


def update_memory(
    conn: sqlite3.Connection,
    scope_id: int,
    mid: int,
    text: str,
    vec: np.ndarray,
    at: datetime,
    cause: str,
    new_sources: Sequence[int],
    detail: dict[str, Any] | None = None,
    replace_sources: bool = False,
    ts: str | None = None,
    archive: bool = True,
) -> Updated:
    """Give memory ``mid`` a new current version; return it with the memory's time and thread (:class:`Updated`).

    With ``archive`` the version it replaces is kept in ``derived_versions``
    (a delete restoring an older version passes ``archive=False``: the text it
    replaces held deleted words). Sources are the previous version's plus
    ``new_sources`` (or exactly ``new_sources`` with ``replace_sources``);
    ``at`` is when the newest information was said.
    """
    rows = ahead(  # both reads go together (one round trip to a PostgreSQL server)
        conn,
        "SELECT version, at, text, vec, cause, updated_at, detail, thread FROM derived WHERE scope_id = ? AND id = ?",
        (scope_id, mid),
    )
    sources = ahead(
        conn,
        "SELECT message_id FROM derived_sources WHERE scope_id = ? AND memory_id = ? AND role = 'origin'",
        (scope_id, mid),
    )
    row = rows()[0]
    version = int(row[0]) + 1
    current = sorted(int(r[0]) for r in sources())
    if archive:
        conn.execute(
            "INSERT INTO derived_versions (scope_id, memory_id, version, text, vec, cause, at, recorded_at, sources, "
            "detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (scope_id, mid, int(row[0]), row[2], row[3], row[4], row[1], row[5], json.dumps(current), row[6]),
        )
    srcs = set() if replace_sources else set(current)
    srcs |= {int(s) for s in new_sources}
    at_new = max(at, datetime.fromisoformat(row[1])) if not replace_sources else at
    ts = ts or now_iso()
    conn.execute(
        "UPDATE derived SET text = ?, vec = ?, at = ?, at_ts = ?, version = ?, cause = ?, detail = ?, updated_at = ? "
        "WHERE scope_id = ? AND id = ?",
        (
            text,
            _blob(vec),
            at_new.isoformat(),
            at_new.timestamp(),
            version,
            cause,
            json.dumps(detail or {}),
            ts,
            scope_id,
            mid,
        ),
    )
    if replace_sources:
        conn.execute(
            "DELETE FROM derived_sources WHERE scope_id = ? AND memory_id = ? AND role = 'origin'", (scope_id, mid)
        )
    conn.executemany(
        "INSERT OR REPLACE INTO derived_sources (scope_id, memory_id, message_id, role) VALUES (?, ?, ?, 'origin')",
        [(scope_id, mid, s) for s in sorted(srcs)],
    )
    return Updated(version, at_new.timestamp(), row[7])


class Updated(NamedTuple):
    """What :func:`update_memory` made of a memory: its new version, time (epoch seconds) and thread."""

    version: int
    at_ts: float
    thread: str


def add_support(conn: sqlite3.Connection, scope_id: int, mid: int, message_ids: Sequence[int]) -> None:
    """Link messages that repeated memory ``mid`` (skipped by the gate) to it."""
    add_supports(conn, scope_id, [(mid, m) for m in message_ids])


def add_supports(conn: sqlite3.Connection, scope_id: int, links: Sequence[tuple[int, int]]) -> None:
    """Support links ``(memory id, message id)``, in one statement; an existing link of either role stays."""
    if links:
        conn.executemany(
            "INSERT OR IGNORE INTO derived_sources (scope_id, memory_id, message_id, role) VALUES (?, ?, ?, 'support')",
            [(scope_id, int(mid), int(m)) for mid, m in links],
        )


def delete_memories(conn: sqlite3.Connection, scope_id: int, ids: Sequence[int]) -> int:
    """Delete derived memories (links and versions cascade); return how many went."""
    n = 0
    for chunk in _chunks(list(ids)):
        marks = ",".join("?" * len(chunk))
        n += conn.execute(f"DELETE FROM derived WHERE scope_id = ? AND id IN ({marks})", (scope_id, *chunk)).rowcount
    return n


def log_decision(
    conn: sqlite3.Connection,
    scope_id: int,
    step: int,
    d: Decision,
    memory_id: int | None,
    candidate: str,
    sources: Sequence[int],
    ts: str | None = None,
) -> None:
    """One row of the gate's decision log (the newest source message owns it)."""
    log_decisions(conn, [decision_row(scope_id, step, d, memory_id, candidate, sources, ts)])


def decision_row(
    scope_id: int,
    step: int,
    d: Decision,
    memory_id: int | None,
    candidate: str,
    sources: Sequence[int],
    ts: str | None = None,
) -> tuple[Any, ...]:
    """The values of a :func:`log_decision` row."""
    return (
        scope_id,
        max(sources) if sources else None,
        step,
        d.action,
        d.score,
        d.novelty,
        d.tau,
        d.kappa,
        d.n,
        memory_id,
        candidate,
        json.dumps(sorted(int(s) for s in sources)),
        d.scorer,
        ts or now_iso(),
    )


def log_decisions(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Rows of :func:`decision_row`, in order, in one statement."""
    if rows:
        conn.executemany(
            "INSERT INTO gate_decisions (scope_id, message_id, step, action, score, novelty, tau, kappa, n, "
            "memory_id, candidate, sources, scorer, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def add_usage(conn: sqlite3.Connection, scope_id: int, usage: LLMUsage) -> None:
    """Add an operation's LLM usage to the scope's totals."""
    for task, u in usage.tasks.items():
        if not (u.calls or u.fallbacks):
            continue
        conn.execute(
            "INSERT INTO llm_usage (scope_id, task, calls, prompt_tokens, completion_tokens, ms, fallbacks) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(scope_id, task) DO UPDATE SET calls = calls + excluded.calls, "
            "prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
            "completion_tokens = completion_tokens + excluded.completion_tokens, ms = ms + excluded.ms, "
            "fallbacks = fallbacks + excluded.fallbacks",
            (scope_id, task, u.calls, u.prompt_tokens, u.completion_tokens, u.ms, u.fallbacks),
        )


def usage_of(conn: sqlite3.Connection, scope_id: int) -> LLMUsage:
    """The scope's LLM usage totals per task."""
    out = LLMUsage()
    for task, calls, pt, ct, ms, fb in conn.execute(
        "SELECT task, calls, prompt_tokens, completion_tokens, ms, fallbacks FROM llm_usage WHERE scope_id = ?",
        (scope_id,),
    ):
        u = out.task(task)
        u.calls, u.prompt_tokens, u.completion_tokens, u.ms, u.fallbacks = (
            int(calls),
            int(pt),
            int(ct),
            float(ms),
            int(fb),
        )
    return out


# --------------------------------------------------------------------- reads
def texts_of(conn: sqlite3.Connection, scope_id: int, ids: Sequence[int]) -> dict[int, str]:
    """Current texts of a scope's derived memories."""
    out: dict[int, str] = {}
    for chunk in _chunks(list(ids)):
        marks = ",".join("?" * len(chunk))
        out.update(
            (int(i), t)
            for i, t in conn.execute(
                f"SELECT id, text FROM derived WHERE scope_id = ? AND id IN ({marks})", (scope_id, *chunk)
            )
        )
    return out


def details(conn: sqlite3.Connection, scope_id: int, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Everything a hit needs about a scope's derived memories, with source ext ids in conversation order."""
    out: dict[int, dict[str, Any]] = {}
    for chunk in _chunks(list(ids)):
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            "SELECT id, kind, text, at, thread, session, speaker, method, version FROM derived "
            f"WHERE scope_id = ? AND id IN ({marks})",
            (scope_id, *chunk),
        ):
            out[int(r[0])] = {
                "kind": r[1],
                "text": r[2],
                "at": datetime.fromisoformat(r[3]),
                "thread": r[4],
                "session": r[5],
                "speaker": r[6],
                "method": r[7],
                "version": int(r[8]),
                "origin": [],
                "support": [],
            }
        for mid, ext, role in conn.execute(
            "SELECT s.memory_id, m.ext_id, s.role FROM derived_sources s JOIN messages m "
            f"ON m.scope_id = s.scope_id AND m.id = s.message_id WHERE s.scope_id = ? AND s.memory_id IN ({marks}) "
            "ORDER BY m.id",
            (scope_id, *chunk),
        ):
            if int(mid) in out:
                out[int(mid)][role].append(ext)
    return out


def counts_of(conn: sqlite3.Connection, scope_id: int) -> dict[str, int]:
    """Derived memories per kind in a scope."""
    rows = conn.execute("SELECT kind, COUNT(*) FROM derived WHERE scope_id = ? GROUP BY kind", (scope_id,))
    return {k: int(n) for k, n in rows}
