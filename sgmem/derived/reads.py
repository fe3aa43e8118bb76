"""Reading and deleting derived memory: hits, context items, history, stats, delete cascade.

Delete policy ([D], documented in :meth:`sgmem.Memory.delete`): a generated
memory goes with the messages it came from.

- A fact whose every origin message is deleted is deleted.
- A fact that lost *some* of its origins (a merge of two sources, one
  deleted) reverts to its newest version built only from surviving messages
  — usually the version before the merge — recorded as a ``"reverted"``
  version. Versions that held deleted content are purged from its history,
  so deleted words never survive in a merged text or in its history.
  Information merged in *after* the lost source goes with it (its messages
  stay in the raw history and in retrieval).
- A summary that lost sources is recomputed by the extractive rule over the
  session's surviving sentences (deleted if none remain); no LLM is called
  during a delete. Insights that lost sources are deleted (cluster insights
  are recomputed at the next add).
- Gate decisions that named a deleted message are dropped; when a scope
  loses all its messages, its gate state, decision log and LLM usage go too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..types import Hit, MemoryVersion
from . import store as sql
from .context import DerivedItem
from .sessions import session_lines, upsert_summary

__all__ = ["after_delete", "before_delete", "check_kinds", "derived_hits", "history", "parse_memory_id"]

KINDS = ("summary", "fact", "insight")
#: what ``Memory.search(kinds=...)`` accepts: the mode's own hits, and each generated kind
SEARCH_KINDS = ("chunk", *KINDS)


def check_kinds(kinds: Any) -> list[str] | None:
    """Validate ``search(kinds=...)``: None, or a list drawn from :data:`SEARCH_KINDS`."""
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    try:
        out = list(dict.fromkeys(kinds))
    except TypeError:
        out = None
    if not out or any(k not in SEARCH_KINDS for k in out):
        raise InvalidInputError("kinds", kinds, f"None or a list of kinds from {SEARCH_KINDS}")
    return out


def parse_memory_id(memory_id: Any) -> int:
    """``"fact:12"`` (or ``12``) → 12."""
    if isinstance(memory_id, int) and not isinstance(memory_id, bool) and memory_id > 0:
        return memory_id
    if isinstance(memory_id, str):
        tail = memory_id.rsplit(":", 1)[-1].strip()
        if tail.isdigit() and int(tail) > 0 and (":" not in memory_id or memory_id.split(":", 1)[0] in KINDS):
            return int(tail)
    raise InvalidInputError(
        "memory_id", memory_id, "a generated memory's id such as 'fact:12'", "Take it from Hit.memory_id."
    )


def ranked(
    cands: list[tuple[int, float]], k: int, exclude: set[str] | None, conn: Any, scope_id: int
) -> list[tuple[int, float, dict[str, Any]]]:
    """Top-``k`` of ranked ``(id, cosine)``: ``(id, cosine, details)``; excluded = all origins excluded."""
    out: list[tuple[int, float, dict[str, Any]]] = []
    i = 0
    while len(out) < k and i < len(cands):
        chunk = cands[i : i + max(2 * k, 16)]
        i += len(chunk)
        det = sql.details(conn, scope_id, [m for m, _ in chunk])
        for mid, cos in chunk:
            d = det.get(mid)
            if d is None:
                continue
            if exclude and d["origin"] and all(e in exclude for e in d["origin"]):
                continue
            out.append((mid, cos, d))
            if len(out) >= k:
                break
    return out


def derived_hits(
    cands: dict[str, list[tuple[int, float]]], conn: Any, k: int, exclude: set[str] | None, scope_id: int
) -> list[Hit]:
    """Top-``k`` of each derived kind in ``cands`` (SGMem §1.3 step 2), as hits."""
    hits: list[Hit] = []
    for kind in KINDS:
        if kind not in cands:
            continue
        for mid, cos, d in ranked(cands[kind], k, exclude, conn, scope_id):
            hits.append(
                Hit(
                    text=d["text"],
                    score=cos + 1.0,  # SGMem's sim = cos + ε (§1.3 step 1)
                    kind=kind,
                    message_ids=tuple(d["origin"]),
                    thread=d["thread"],
                    at=d["at"],
                    why={
                        "mode": "derived",
                        "cosine": round(cos, 4),
                        "method": d["method"],
                        "version": d["version"],
                        **({"session": d["session"]} if d["session"] else {}),
                        **({"also_in": d["support"]} if d["support"] else {}),
                    },
                    speaker=d["speaker"],
                    memory_id=f"{kind}:{mid}",
                    relevance=min(1.0, max(0.0, cos)),  # see Hit.relevance: a memory's cosine to the query
                )
            )
    return hits


def context_items(
    cands: dict[str, list[tuple[int, float]]], conn: Any, k: int, exclude: set[str] | None, scope_id: int
) -> list[DerivedItem]:
    """Context candidates: the top-K summaries, facts and insights, in that order."""
    items: list[DerivedItem] = []
    for kind in KINDS:
        if kind not in cands:
            continue
        for mid, _, d in ranked(cands[kind], k, exclude, conn, scope_id):
            label = d["session"] if kind == "summary" else None
            items.append(DerivedItem(mid, kind, d["at"], d["text"], label, tuple(d["origin"])))
    return items


def history(conn: Any, scope_id: int, memory_id: int) -> list[MemoryVersion] | None:
    """Every stored version of a memory of this scope, oldest first (None if not in the scope)."""
    row = conn.execute(
        "SELECT kind, version, text, cause, at, updated_at, detail FROM derived WHERE scope_id = ? AND id = ?",
        (scope_id, memory_id),
    ).fetchone()
    if row is None:
        return None
    key = f"{row[0]}:{memory_id}"
    versions = [
        (int(v[0]), v[1], v[2], v[3], v[4], json.loads(v[5]), v[6])
        for v in conn.execute(
            "SELECT version, text, cause, at, recorded_at, sources, detail FROM derived_versions "
            "WHERE scope_id = ? AND memory_id = ? ORDER BY version",
            (scope_id, memory_id),
        )
    ]
    versions.append(
        (int(row[1]), row[2], row[3], row[4], row[5], sql.origin_sources(conn, scope_id, memory_id), row[6])
    )
    all_ids = sorted({int(m) for v in versions for m in v[5]})
    ext: dict[int, str] = {}
    for i in range(0, len(all_ids), 500):
        chunk = all_ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        ext.update(
            (int(a), b)
            for a, b in conn.execute(
                f"SELECT id, ext_id FROM messages WHERE scope_id = ? AND id IN ({marks})", (scope_id, *chunk)
            )
        )
    return [
        MemoryVersion(
            memory_id=key,
            version=v[0],
            text=v[1],
            cause=v[2],
            at=datetime.fromisoformat(v[3]),
            recorded_at=datetime.fromisoformat(v[4]),
            message_ids=tuple(ext[m] for m in sorted(v[5]) if m in ext),
            detail=json.loads(v[6]),
        )
        for v in versions
    ]


# ------------------------------------------------------------------- delete
def before_delete(conn: Any, scope_id: int, msgs: set[int]) -> tuple[set[int], dict[int, bool]]:
    """``(msgs, {memory: whether its current text came from one of msgs})`` for the message rows to delete.

    Run before the messages go (their links cascade with them).
    """
    affected: dict[int, bool] = {}
    msg_ids = sorted(msgs)
    for i in range(0, len(msg_ids), 500):
        chunk = msg_ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for mid, role in conn.execute(
            f"SELECT memory_id, role FROM derived_sources WHERE scope_id = ? AND message_id IN ({marks})",
            (scope_id, *chunk),
        ):
            affected[int(mid)] = affected.get(int(mid), False) or role == "origin"
    # superseded versions built from a deleted message must go too, even when the current text is clean
    if msg_ids:
        for mid, sources in conn.execute(
            "SELECT memory_id, sources FROM derived_versions WHERE scope_id = ?",
            (scope_id,),
        ):
            if set(json.loads(sources)) & msgs:
                affected.setdefault(int(mid), False)
    return msgs, affected


def after_delete(
    conn: Any,
    scope_id: int,
    deleted: set[int],
    affected: dict[int, bool],
    summary_k: int,
    roles: Sequence[str] = ("user",),
    min_tokens: int = 4,
) -> tuple[int, int, bool]:
    """Apply the delete policy (module docstring); ``(removed, revised, facts changed)``."""
    if not deleted:
        return 0, 0, False
    removed = revised = 0
    facts_changed = False
    if conn.execute("SELECT COUNT(*) FROM messages WHERE scope_id = ?", (scope_id,)).fetchone()[0] == 0:
        removed = conn.execute("SELECT COUNT(*) FROM derived WHERE scope_id = ?", (scope_id,)).fetchone()[0]
        conn.execute("DELETE FROM derived WHERE scope_id = ?", (scope_id,))
        for table in ("gate_decisions", "gate_state", "gate_ivf", "llm_usage"):
            conn.execute(f"DELETE FROM {table} WHERE scope_id = ?", (scope_id,))
        return int(removed), 0, True
    for mid, current_tainted in sorted(affected.items()):
        row = conn.execute(
            "SELECT kind, thread, session FROM derived WHERE scope_id = ? AND id = ?", (scope_id, mid)
        ).fetchone()
        if row is None:
            continue
        kind, thread, session = row
        old = conn.execute(
            "SELECT version, text, vec, at, sources FROM derived_versions WHERE scope_id = ? AND memory_id = ? "
            "ORDER BY version",
            (scope_id, mid),
        ).fetchall()
        for v in old:  # deleted words never survive in a history
            if set(json.loads(v[4])) & deleted:
                conn.execute(
                    "DELETE FROM derived_versions WHERE scope_id = ? AND memory_id = ? AND version = ?",
                    (scope_id, mid, v[0]),
                )
        clean = [v for v in old if not set(json.loads(v[4])) & deleted]
        if not current_tainted:
            continue  # only a supporting (skipped) message, or an old version, went
        if kind == "summary":
            if not session_lines(conn, scope_id, thread, session):
                removed += sql.delete_memories(conn, scope_id, [mid])
            else:
                upsert_summary(
                    conn, scope_id, thread, session, summary_k, None, force=True, roles=roles, min_tokens=min_tokens
                )
                revised += 1
            continue
        facts_changed |= kind == "fact"
        if kind == "insight" or not clean:
            removed += sql.delete_memories(conn, scope_id, [mid])
            continue
        keep = clean[-1]  # it stays in the history too: the current text is a "reverted" copy of it
        sql.update_memory(
            conn,
            scope_id,
            mid,
            keep[1],
            np.frombuffer(keep[2], dtype=np.float32),
            datetime.fromisoformat(keep[3]),
            "reverted",
            json.loads(keep[4]),
            {"restored_version": int(keep[0])},
            replace_sources=True,
            archive=False,
        )
        revised += 1
    # decisions that named a deleted message (the newest one cascades with its message)
    drop = [
        int(i)
        for i, srcs in conn.execute("SELECT id, sources FROM gate_decisions WHERE scope_id = ?", (scope_id,))
        if set(json.loads(srcs)) & deleted
    ]
    for i in range(0, len(drop), 500):
        chunk = drop[i : i + 500]
        conn.execute(
            f"DELETE FROM gate_decisions WHERE scope_id = ? AND id IN ({','.join('?' * len(chunk))})",
            (scope_id, *chunk),
        )
    return int(removed), revised, facts_changed
