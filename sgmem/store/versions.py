"""Earlier texts of edited messages: the ``message_versions`` table (migration ``0013_message_versions``).

An edit (:meth:`sgmem.Memory.edit`, ``sgmem ingest`` of a changed file) and
every thread edit that re-adds messages (``insert`` before them, ``replace``
with their ids) delete message rows and add new ones in one transaction. The
versions of a deleted row go with it (``ON DELETE CASCADE``), so forgetting a
message forgets its earlier texts; :func:`carry` reads them before the
delete and :func:`restore` writes them onto the rows that take their place,
adding the text an edit replaced as the newest earlier version. Both backends
run the same SQL (PostgreSQL through :mod:`sgmem.store.pgsql`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

__all__ = ["VersionRow", "carry", "of_message", "restore"]


@dataclass(frozen=True)
class VersionRow:
    """One earlier text of a message, as stored (times as ISO-8601 text, metadata as JSON text)."""

    ext_id: str
    role: str
    name: str | None
    content: str
    at: str
    metadata: str
    replaced_at: str

    @classmethod
    def of(cls, message: Any, replaced_at: datetime) -> VersionRow:
        """The version row of a stored :class:`sgmem.Message` being replaced now."""
        at = message.at or replaced_at
        return cls(
            str(message.id),
            message.role,
            message.name,
            message.content,
            at.isoformat(),
            json.dumps(message.metadata or {}, ensure_ascii=False, sort_keys=True),
            replaced_at.isoformat(),
        )


_COLUMNS = "ext_id, role, name, content, at, metadata, replaced_at"


def carry(conn: Any, scope_id: int, rows: Iterable[int]) -> dict[str, list[VersionRow]]:
    """The earlier versions of the message ``rows`` (row ids), oldest first, by the messages' caller ids."""
    ids = sorted(rows)
    out: dict[str, list[VersionRow]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            f"SELECT m.ext_id, v.{', v.'.join(_COLUMNS.split(', '))} FROM message_versions v "
            f"JOIN messages m ON m.scope_id = v.scope_id AND m.id = v.message_id WHERE v.scope_id = ? "
            f"AND v.message_id IN ({marks}) "
            "ORDER BY v.message_id, v.version",
            (scope_id, *chunk),
        ):
            out.setdefault(str(r[0]), []).append(VersionRow(*r[1:]))
    return out


def restore(
    conn: Any,
    scope_id: int,
    new_rows: Sequence[tuple[str, int]],
    carried: Mapping[str, list[VersionRow]],
    replaced: Mapping[str, tuple[str, VersionRow]],
) -> int:
    """Write earlier versions onto the rows an edit added; returns how many version rows were written.

    Args:
        new_rows: ``(caller id, row id)`` of the messages just added.
        carried: :func:`carry`'s result for the rows deleted in the same transaction.
        replaced: ``new caller id → (old caller id, the text it replaces)`` for each edited message.
    """
    values = []
    for ext_id, row in new_rows:
        old, text = replaced.get(ext_id, (ext_id, None))
        versions = list(carried.get(old, ()))
        if text is not None:
            versions.append(text)
        for n, v in enumerate(versions, 1):
            values.append((row, scope_id, n, v.ext_id, v.role, v.name, v.content, v.at, v.metadata, v.replaced_at))
    if values:
        conn.executemany(
            f"INSERT INTO message_versions (message_id, scope_id, version, {_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
    return len(values)


def of_message(conn: Any, scope_id: int, ext_id: str) -> tuple[int, list[VersionRow]] | None:
    """The row id of the scope's message ``ext_id`` and its earlier versions, oldest first (None: no such message)."""
    row = conn.execute("SELECT id FROM messages WHERE scope_id = ? AND ext_id = ?", (scope_id, ext_id)).fetchone()
    if row is None:
        return None
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM message_versions WHERE scope_id = ? AND message_id = ? ORDER BY version",
        (scope_id, int(row[0])),
    ).fetchall()
    return int(row[0]), [VersionRow(*r) for r in rows]


def now() -> datetime:
    """The time an edit records as its versions' ``replaced_at``."""
    return datetime.now(timezone.utc)
