"""An add's rows of an ``AUTOINCREMENT`` table in one ``executemany``, with their ids.

An add inserted its messages and sentences one statement each, to read each
new row's id (``lastrowid``). Inside one write transaction SQLite gives an
``AUTOINCREMENT`` table's new rows strictly increasing ids (each "at least
one larger than the largest ROWID that has ever existed in that table", and
no other connection can insert while the transaction holds the write lock).
So the first row is inserted alone (its id ``f``), the rest in one
``executemany``, and ``last_insert_rowid()`` read once: when it is
``f + n - 1`` the ``n`` ids are ``f .. f + n - 1`` (n - 1 steps of at least
one each); otherwise (never seen: an id near 2**63 makes SQLite pick random
ones) the ids are read back, the rows with id ≥ ``f`` in id order, which are
exactly this call's rows for the same reason. The stored rows are the same
as one ``INSERT`` each (``tests/unit/test_store_batch.py``).

PostgreSQL's sequences give no such guarantee (another session may take ids
in between): :class:`sgmem.store.postgres.PostgresStore` draws an add's ids
ahead in one statement (``PgConn.reserve``) and inserts the rows with them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .rows import MessageRow

__all__ = [
    "INSERT_MESSAGE",
    "INSERT_MESSAGE_ID",
    "INSERT_SENTENCE",
    "INSERT_SENTENCE_ID",
    "ahead",
    "drawn_ids",
    "insert_rest",
    "insert_with_ids",
    "message_values",
    "plan_rounds",
]


INSERT_MESSAGE = (
    "INSERT INTO messages (scope_id, thread, ext_id, role, name, content, at, at_ts, session, round_id, "
    "turn_idx, tokens, terms, metadata, vec) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_SENTENCE = (
    "INSERT INTO sentences (scope_id, message_id, idx, start, end, text, embed_hash, vec, act) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
#: the same rows given their ids (drawn ahead on PostgreSQL: ``PgConn.new_ids``)
INSERT_MESSAGE_ID = INSERT_MESSAGE.replace("(scope_id,", "(id, scope_id,", 1).replace("VALUES (", "VALUES (?, ", 1)
INSERT_SENTENCE_ID = INSERT_SENTENCE.replace("(scope_id,", "(id, scope_id,", 1).replace("VALUES (", "VALUES (?, ", 1)


def ahead(conn: Any, sql: str, args: Sequence[Any] = ()) -> Callable[[], list[Any]]:
    """Send a read now, take its rows later: inside a pipelined PostgreSQL transaction the rows come back with
    the next read anything needs (one round trip for several); on SQLite they are read at once."""
    cur = conn.execute(sql, args)
    if getattr(conn, "pipe", None) is None:
        rows = cur.fetchall()
        return lambda: rows
    return cur.fetchall  # type: ignore[no-any-return]


def drawn_ids(conn: Any, table: str, n: int) -> list[int] | None:
    """Ids for ``n`` new rows of ``table`` when the store draws them ahead (PostgreSQL, ``PgConn.new_ids``), else
    None (SQLite: :func:`insert_with_ids`)."""
    take = getattr(conn, "new_ids", None)
    return take(table, n) if take is not None and n else None


def message_values(scope_id: int, thread: str, m: MessageRow, round_id: int, turn_idx: int) -> tuple[Any, ...]:
    """The values of an :data:`INSERT_MESSAGE` row."""
    return (
        scope_id,
        thread,
        m.ext_id,
        m.role,
        m.name,
        m.content,
        m.at.isoformat(),
        m.at.timestamp(),
        m.session,
        round_id,
        turn_idx,
        m.tokens,
        m.terms,
        json.dumps(m.metadata, ensure_ascii=False, allow_nan=False),
        np.ascontiguousarray(m.vec, dtype=np.float32).tobytes(),
    )


def _consecutive(first: int, last: int, n: int) -> bool:
    return last - first == n - 1


def insert_with_ids(conn: Any, table: str, sql: str, rows: Sequence[Sequence[Any]]) -> list[int]:
    """Insert ``rows`` with ``sql`` (an ``INSERT`` into ``table``, an AUTOINCREMENT table); their ids in order."""
    if not rows:
        return []
    return insert_rest(conn, table, sql, int(conn.execute(sql, rows[0]).lastrowid), rows[1:])


def insert_rest(conn: Any, table: str, sql: str, first: int, rest: Sequence[Sequence[Any]]) -> list[int]:
    """Insert ``rest`` right after a row given id ``first`` (by the caller, just before); all their ids in order."""
    n = len(rest) + 1
    if not rest:
        return [first]
    conn.executemany(sql, rest)
    last = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
    if _consecutive(first, last, n):
        return list(range(first, first + n))
    ids = [int(r[0]) for r in conn.execute(f"SELECT id FROM {table} WHERE id >= ? ORDER BY id LIMIT ?", (first, n))]
    if len(ids) != n or ids[0] != first:  # pragma: no cover - SQLite's AUTOINCREMENT contract broken
        raise RuntimeError(f"{table}: {n} rows inserted from id {first}, {len(ids)} read back")
    return ids


def plan_rounds(refs: Sequence[int], ids: Sequence[int]) -> list[int]:
    """Each message's round id: ``ref >= 0`` an existing round, ``ref < 0`` the round opened by new message ``-ref-1``."""
    return [r if r >= 0 else ids[-r - 1] for r in refs]
