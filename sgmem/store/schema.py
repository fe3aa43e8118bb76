"""SQLite schema, as named migrations applied in order inside one transaction each.

Never edit a migration that has shipped: add a new one. ``SCHEMA_VERSION`` is
the number of migrations; a store whose recorded version is higher was written
by a newer sgmem and is refused.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_INITIAL = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- one row per scope (user / tenant). generation bumps on every change so
-- per-scope caches (FAISS, lexical) know when they are stale
CREATE TABLE scopes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,
    generation INTEGER NOT NULL DEFAULT 0
);

-- the system of record: messages verbatim, in order (id is monotonic and
-- never reused, AUTOINCREMENT), with their turn/round/session placement
CREATE TABLE messages (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_id  INTEGER NOT NULL REFERENCES scopes(id),
    thread    TEXT NOT NULL,
    ext_id    TEXT NOT NULL,
    role      TEXT NOT NULL,
    name      TEXT,
    content   TEXT NOT NULL,
    at        TEXT NOT NULL,
    at_ts     REAL NOT NULL,
    session   TEXT NOT NULL,
    round_id  INTEGER NOT NULL,
    turn_idx  INTEGER NOT NULL,
    tokens    INTEGER NOT NULL,
    terms     TEXT NOT NULL,
    metadata  TEXT NOT NULL DEFAULT '{}',
    vec       BLOB NOT NULL,
    UNIQUE (scope_id, ext_id)
);
CREATE INDEX messages_thread ON messages (scope_id, thread, id);
CREATE INDEX messages_session ON messages (scope_id, session, id);

-- turn -> sentences; membership in turn, round and session chunks follows
-- from message_id and the message's round_id / session
CREATE TABLE sentences (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_id   INTEGER NOT NULL REFERENCES scopes(id),
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    start      INTEGER NOT NULL,
    end        INTEGER NOT NULL,
    text       TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    vec        BLOB NOT NULL
);
CREATE INDEX sentences_message ON sentences (message_id, idx);
CREATE INDEX sentences_scope ON sentences (scope_id, id);
CREATE INDEX sentences_hash ON sentences (scope_id, embed_hash);

-- SGMem similarity edges: kNN, stored directed new -> earlier, read undirected
CREATE TABLE sentence_edges (
    scope_id INTEGER NOT NULL,
    src      INTEGER NOT NULL REFERENCES sentences(id) ON DELETE CASCADE,
    dst      INTEGER NOT NULL REFERENCES sentences(id) ON DELETE CASCADE,
    weight   REAL NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX sentence_edges_dst ON sentence_edges (dst);
CREATE INDEX sentence_edges_scope ON sentence_edges (scope_id);

-- SGRM chronological chaining: consecutive turns of a thread
CREATE TABLE turn_edges (
    scope_id INTEGER NOT NULL,
    src      INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    dst      INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX turn_edges_dst ON turn_edges (dst);
CREATE INDEX turn_edges_scope ON turn_edges (scope_id);
"""

#: (name, SQL) pairs, applied in order.
MIGRATIONS: tuple[tuple[str, str], ...] = (("0001_initial", _INITIAL),)

SCHEMA_VERSION = len(MIGRATIONS)
