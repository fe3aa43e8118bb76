"""SQLite schema, as named migrations applied in order inside one transaction each.

Never edit a migration that has shipped: add a new one. ``SCHEMA_VERSION`` is
the number of migrations; a store whose recorded version is higher was written
by a newer sgmem and is refused.
"""

from __future__ import annotations

__all__ = ["ENTITY_MIGRATION", "MIGRATIONS", "PG_MIGRATIONS", "SCHEMA_VERSION"]

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

# MGRetrieval (ALGORITHMS §3): canonical keyword vocabulary per scope and the
# inverted index keyword -> messages. A vocabulary row is a lookup form (lemma):
# canonical when canonical_id is NULL, else an alias merged into that entry.
# vec is the keyword's embedding (for cosine matching). Postings go with their
# message; entries left without postings are pruned by the delete.
_KEYWORDS = """
CREATE TABLE vocabulary (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_id     INTEGER NOT NULL REFERENCES scopes(id),
    keyword      TEXT NOT NULL,
    lemma        TEXT NOT NULL,
    canonical_id INTEGER REFERENCES vocabulary(id) ON DELETE CASCADE,
    vec          BLOB,
    UNIQUE (scope_id, lemma)
);
CREATE INDEX vocabulary_canonical ON vocabulary (canonical_id);

CREATE TABLE keyword_postings (
    keyword_id INTEGER NOT NULL REFERENCES vocabulary(id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    scope_id   INTEGER NOT NULL,
    PRIMARY KEY (keyword_id, message_id)
) WITHOUT ROWID;
CREATE INDEX keyword_postings_message ON keyword_postings (message_id);
CREATE INDEX keyword_postings_scope ON keyword_postings (scope_id, message_id);
"""

# Derived memory (ALGORITHMS §1 SGMem facts, summaries, insights; §2 SAGE gate).
# A derived row is the current version (its sources are its origin links);
# derived_versions keeps the superseded versions, each with its time, cause
# and the message ids it was built from (so a store holds each text once). Sources link a
# memory to the messages its text came from ('origin') or that repeated it and
# were skipped by the gate ('support'); they go with their message. The gate's
# per-scope state and decision log, and LLM usage per scope, live here too.
_DERIVED = """
CREATE TABLE derived (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_id   INTEGER NOT NULL REFERENCES scopes(id),
    kind       TEXT NOT NULL CHECK (kind IN ('fact', 'summary', 'insight')),
    text       TEXT NOT NULL,
    vec        BLOB NOT NULL,
    at         TEXT NOT NULL,
    at_ts      REAL NOT NULL,
    thread     TEXT NOT NULL,
    session    TEXT,
    speaker    TEXT,
    method     TEXT NOT NULL,
    version    INTEGER NOT NULL DEFAULT 1,
    cause      TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX derived_scope ON derived (scope_id, kind, id);
CREATE INDEX derived_session ON derived (scope_id, kind, thread, session);

CREATE TABLE derived_sources (
    memory_id  INTEGER NOT NULL REFERENCES derived(id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('origin', 'support')),
    PRIMARY KEY (memory_id, message_id)
) WITHOUT ROWID;
CREATE INDEX derived_sources_message ON derived_sources (message_id);

CREATE TABLE derived_versions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id   INTEGER NOT NULL REFERENCES derived(id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    text        TEXT NOT NULL,
    vec         BLOB NOT NULL,
    cause       TEXT NOT NULL,
    at          TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    sources     TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '{}',
    UNIQUE (memory_id, version)
);

-- one row per gated candidate; memory_id is the fact added, merged into, or
-- covering a Noop (kept even if that fact is later deleted)
CREATE TABLE gate_decisions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_id    INTEGER NOT NULL REFERENCES scopes(id),
    message_id  INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    step        INTEGER NOT NULL,
    action      TEXT NOT NULL,
    score       REAL NOT NULL,
    novelty     REAL NOT NULL,
    tau         REAL NOT NULL,
    kappa       REAL NOT NULL,
    n           INTEGER NOT NULL,
    memory_id   INTEGER,
    candidate   TEXT NOT NULL,
    sources     TEXT NOT NULL,
    scorer      TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE INDEX gate_decisions_scope ON gate_decisions (scope_id, id);
CREATE INDEX gate_decisions_message ON gate_decisions (message_id);

CREATE TABLE gate_state (
    scope_id      INTEGER PRIMARY KEY REFERENCES scopes(id),
    version       INTEGER NOT NULL DEFAULT 0,
    n             INTEGER NOT NULL DEFAULT 0,
    step          INTEGER NOT NULL DEFAULT 0,
    msg_count     INTEGER NOT NULL DEFAULT 0,
    tau           REAL,
    kappa         REAL NOT NULL DEFAULT 1.0,
    sum_vec       BLOB,
    pca_mean      BLOB,
    pca_basis     BLOB,
    pca_lo        BLOB,
    pca_hi        BLOB,
    pca_n_fit     INTEGER NOT NULL DEFAULT 0,
    pca_stale     INTEGER NOT NULL DEFAULT 1,
    ivf_centroids BLOB,
    ivf_n_train   INTEGER NOT NULL DEFAULT 0,
    insight_n     INTEGER NOT NULL DEFAULT 0,
    adds          INTEGER NOT NULL DEFAULT 0,
    updates       INTEGER NOT NULL DEFAULT 0,
    noops         INTEGER NOT NULL DEFAULT 0,
    updated_at    TEXT
);

CREATE TABLE llm_usage (
    scope_id          INTEGER NOT NULL REFERENCES scopes(id),
    task              TEXT NOT NULL,
    calls             INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    ms                REAL NOT NULL DEFAULT 0,
    fallbacks         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope_id, task)
) WITHOUT ROWID;
"""

# LightGMEM entity layer (ALGORITHMS §4; sgmem/entities/store.py): canonical
# entities and their mentions per turn. Plain SQL that PostgreSQL accepts too:
# no AUTOINCREMENT, no BLOB, no WITHOUT ROWID (ids are drawn by the database
# since 0009_entity_ids). Mentions go with their message; entities left without
# mentions are pruned by the delete's transaction.
ENTITY_MIGRATION = """
CREATE TABLE entities (
    id         INTEGER PRIMARY KEY,
    scope_id   INTEGER NOT NULL REFERENCES scopes(id),
    name       TEXT NOT NULL,
    norm       TEXT NOT NULL,
    type       TEXT NOT NULL,
    type_score REAL NOT NULL,
    profile    TEXT,
    profiled   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX entities_scope ON entities (scope_id, norm);

CREATE TABLE entity_mentions (
    entity_id  INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    scope_id   INTEGER NOT NULL,
    surface    TEXT NOT NULL,
    type       TEXT NOT NULL,
    score      REAL NOT NULL,
    start_char INTEGER NOT NULL,
    end_char   INTEGER NOT NULL,
    PRIMARY KEY (entity_id, message_id, start_char)
);
CREATE INDEX entity_mentions_message ON entity_mentions (message_id);
CREATE INDEX entity_mentions_scope ON entity_mentions (scope_id, message_id);
"""
_ENTITIES = ENTITY_MIGRATION

# The gate's IVF centroids in a row of their own: in gate_state, whose row every add
# rewrites, SQLite rewrote the centroids' ~0.5–2 MB of overflow pages at every add (and zeroed the
# old ones, secure_delete). Existing centroids move over; gate_state's two columns stay, unused.
_GATE_IVF = """
CREATE TABLE gate_ivf (
    scope_id  INTEGER PRIMARY KEY REFERENCES scopes(id),
    centroids BLOB,
    n_train   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO gate_ivf (scope_id, centroids, n_train)
    SELECT scope_id, ivf_centroids, ivf_n_train FROM gate_state WHERE ivf_centroids IS NOT NULL;
UPDATE gate_state SET ivf_centroids = NULL, ivf_n_train = 0 WHERE ivf_centroids IS NOT NULL;
"""

# LightGMEM community summaries (seed §3.2.4, appendix E.3; sgmem/entities/communities.py):
# an LLM-written name and description per entity community, and the messages
# it was written from. A source goes with its message (ON DELETE CASCADE); a
# summary that lost a source is removed by the delete's transaction (``sources``
# is how many it had), so no deleted message lives on in a summary.
_ENTITY_COMMUNITIES = """
CREATE TABLE entity_communities (
    id       INTEGER PRIMARY KEY,
    scope_id INTEGER NOT NULL REFERENCES scopes(id),
    members  TEXT NOT NULL,
    name     TEXT NOT NULL,
    summary  TEXT NOT NULL,
    episodes INTEGER NOT NULL,
    sources  INTEGER NOT NULL
);
CREATE INDEX entity_communities_scope ON entity_communities (scope_id);

CREATE TABLE entity_community_sources (
    community_id INTEGER NOT NULL REFERENCES entity_communities(id) ON DELETE CASCADE,
    message_id   INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    scope_id     INTEGER NOT NULL,
    PRIMARY KEY (community_id, message_id)
);
CREATE INDEX entity_community_sources_message ON entity_community_sources (message_id);
"""

# Issue 29: derived_session indexed (scope_id, kind, thread, session), and a thread's default session
# is "<thread>@<day>": with a thread near max_name_chars of 4-byte characters an index row passed 4 KB,
# which PostgreSQL's btree refuses (rows of at most ~2,700 bytes) while SQLite stores it. Keyed by the
# session alone (a session names its thread's day, or is given): as selective, and within the limit.
_DERIVED_SESSION_INDEX = """
DROP INDEX derived_session;
CREATE INDEX derived_session ON derived (scope_id, kind, session);
"""

# LightGMEM relation edges E_rel (seed §3.1, §3.2.1; sgmem/entities/relations.py): with an LLM, each
# add's turns yield (head, relation, tail) triples among their entities. A relation goes with the
# message it was read from and with either entity (ON DELETE CASCADE): a delete, which prunes entities
# left without mentions, leaves no relation behind. Plain SQL that PostgreSQL accepts too.
_ENTITY_RELATIONS = """
CREATE TABLE entity_relations (
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    head_id    INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    tail_id    INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    scope_id   INTEGER NOT NULL,
    relation   TEXT NOT NULL,
    PRIMARY KEY (message_id, head_id, tail_id, relation)
);
CREATE INDEX entity_relations_scope ON entity_relations (scope_id, message_id);
CREATE INDEX entity_relations_head ON entity_relations (head_id);
CREATE INDEX entity_relations_tail ON entity_relations (tail_id);
"""

# Entity and community ids drawn by the database, not computed by the writer: ``MAX(id) + 1`` under a scope's
# lock collided on PostgreSQL when hosts wrote to different scopes at once, and under row security (a writer
# sees only its scope's rows) every scope after the first reused the first one's ids. On SQLite an INTEGER
# PRIMARY KEY is the rowid, which an INSERT without an id draws under the database's one write lock: nothing
# to change. PostgreSQL's form is in PG_MIGRATIONS.
_ENTITY_IDS = """
-- SQLite: the ids already are rowids; the writers now let the database draw them
"""

# PostgreSQL's form of 0009: both id columns become identity columns whose sequences start after the ids
# stored. The tables' owner runs migrations; under forced row security it would see no row (so count from
# 0), so forcing is lifted for the count and restored, inside the migration's transaction.
_PG_ENTITY_IDS = """
DO $sgmem$
DECLARE
  t text;
  forced boolean;
BEGIN
  FOREACH t IN ARRAY ARRAY['entities', 'entity_communities'] LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY', t);
    SELECT c.relforcerowsecurity INTO forced FROM pg_class c WHERE c.oid = to_regclass(quote_ident(t));
    IF forced THEN
      EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', t);
    END IF;
    EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, ''id''), (SELECT COALESCE(MAX(id), 0) + 1 FROM %I), false)',
                   quote_ident(t), t);
    IF forced THEN
      EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    END IF;
  END LOOP;
END
$sgmem$
"""

# Each sentence's dialogue act out of context (sgmem.text.acts.stored_acts), read once at ingest from the
# vectors it computes: opening a store never classifies it again. NULL: not read yet (a store written before,
# classified and filled in by its first index load); the meta key 'acts_by' names what read the acts stored
# (another classifier's are cleared and read again, once). Plain SQL that PostgreSQL accepts too.
_SENTENCE_ACTS = """
ALTER TABLE sentences ADD COLUMN act INTEGER;
"""

# A random stamp each write draws with the generation it bumps: a scope's saved index files record both, and a
# database that reached the same generation by other writes (a backup restored and written again, a copy
# written apart) has another stamp, whatever rows it changed. 0: not written since this migration. Plain SQL
# that PostgreSQL accepts too (INTEGER is BIGINT there).
_SCOPE_STAMPS = """
ALTER TABLE scopes ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0;
"""

# Every row names its scope, so that every statement can name it too (sharding by scope, docs/postgres.md
# "Partitioned or distributed PostgreSQL"): a memory's source links and archived versions get their memory's
# scope. On SQLite that is all; PostgreSQL's form (_PG_SCOPE_KEYS) also leads every key with the scope.
_SCOPE_KEYS = """
ALTER TABLE derived_sources ADD COLUMN scope_id INTEGER NOT NULL DEFAULT 0;
UPDATE derived_sources SET scope_id = (SELECT d.scope_id FROM derived d WHERE d.id = derived_sources.memory_id);
ALTER TABLE derived_versions ADD COLUMN scope_id INTEGER NOT NULL DEFAULT 0;
UPDATE derived_versions SET scope_id = (SELECT d.scope_id FROM derived d WHERE d.id = derived_versions.memory_id);
"""

# PostgreSQL's form of 0012: the two columns above, then every table's primary key and unique constraints lead
# with scope_id and every foreign key between two scope tables carries it, so that a table partitioned by hash of
# scope_id (or distributed by it, Citus) holds each key and each reference within one partition (shard). The ids
# stay unique on their own (identity columns); the new keys are the old ones with the scope in front.
_PG_SCOPE_KEYS = r"""
DO $sgmem$
DECLARE
  r record;
  spec text[];
  forced boolean;
BEGIN
  FOREACH spec SLICE 1 IN ARRAY ARRAY[['derived_sources', 'memory_id'], ['derived_versions', 'memory_id']] LOOP
    EXECUTE format('ALTER TABLE %I ADD COLUMN scope_id BIGINT', spec[1]);
    SELECT c.relforcerowsecurity INTO forced FROM pg_class c WHERE c.oid = to_regclass(quote_ident(spec[1]));
    IF forced THEN  -- the owner fills the column: under forced row security it would see no row
      EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', spec[1]);
      EXECUTE 'ALTER TABLE derived NO FORCE ROW LEVEL SECURITY';
    END IF;
    EXECUTE format('UPDATE %I x SET scope_id = d.scope_id FROM derived d WHERE d.id = x.%I', spec[1], spec[2]);
    IF forced THEN
      EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', spec[1]);
      EXECUTE 'ALTER TABLE derived FORCE ROW LEVEL SECURITY';
    END IF;
    EXECUTE format('ALTER TABLE %I ALTER COLUMN scope_id SET NOT NULL', spec[1]);
  END LOOP;
  -- foreign keys between scope tables (not those to scopes) go first: the keys they use are replaced
  FOR r IN SELECT c.conname, c.conrelid::regclass AS tab FROM pg_constraint c
            WHERE c.contype = 'f' AND c.connamespace = to_regnamespace(current_schema())
              AND c.confrelid <> to_regclass('scopes') LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.tab, r.conname);
  END LOOP;
  FOREACH spec SLICE 1 IN ARRAY ARRAY[
      ['messages', 'scope_id, id'], ['sentences', 'scope_id, id'], ['sentence_edges', 'scope_id, src, dst'],
      ['turn_edges', 'scope_id, src, dst'], ['vocabulary', 'scope_id, id'],
      ['keyword_postings', 'scope_id, keyword_id, message_id'], ['derived', 'scope_id, id'],
      ['derived_sources', 'scope_id, memory_id, message_id'], ['derived_versions', 'scope_id, id'],
      ['gate_decisions', 'scope_id, id'], ['entities', 'scope_id, id'],
      ['entity_mentions', 'scope_id, entity_id, message_id, start_char'], ['entity_communities', 'scope_id, id'],
      ['entity_community_sources', 'scope_id, community_id, message_id'],
      ['entity_relations', 'scope_id, message_id, head_id, tail_id, relation']] LOOP
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', spec[1], spec[1] || '_pkey');
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (%s)', spec[1], spec[1] || '_pkey', spec[2]);
  END LOOP;
  ALTER TABLE derived_versions DROP CONSTRAINT derived_versions_memory_id_version_key;
  ALTER TABLE derived_versions ADD CONSTRAINT derived_versions_memory_id_version_key
    UNIQUE (scope_id, memory_id, version);
  FOREACH spec SLICE 1 IN ARRAY ARRAY[
      ['sentences', 'message_id', 'messages'], ['sentence_edges', 'src', 'sentences'],
      ['sentence_edges', 'dst', 'sentences'], ['turn_edges', 'src', 'messages'], ['turn_edges', 'dst', 'messages'],
      ['vocabulary', 'canonical_id', 'vocabulary'], ['keyword_postings', 'keyword_id', 'vocabulary'],
      ['keyword_postings', 'message_id', 'messages'], ['derived_sources', 'memory_id', 'derived'],
      ['derived_sources', 'message_id', 'messages'], ['derived_versions', 'memory_id', 'derived'],
      ['gate_decisions', 'message_id', 'messages'], ['entity_mentions', 'entity_id', 'entities'],
      ['entity_mentions', 'message_id', 'messages'], ['entity_community_sources', 'community_id', 'entity_communities'],
      ['entity_community_sources', 'message_id', 'messages'], ['entity_relations', 'message_id', 'messages'],
      ['entity_relations', 'head_id', 'entities'], ['entity_relations', 'tail_id', 'entities']] LOOP
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (scope_id, %I) REFERENCES %I (scope_id, id) '
                   'ON DELETE CASCADE', spec[1], spec[1] || '_' || spec[2] || '_fkey', spec[2], spec[3]);
  END LOOP;
  FOREACH spec SLICE 1 IN ARRAY ARRAY[['derived_sources', 'memory_id'], ['derived_versions', 'memory_id']] LOOP
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (scope_id) REFERENCES scopes (id)',
                   spec[1], spec[1] || '_scope_id_fkey');
  END LOOP;
END
$sgmem$
"""

# Earlier texts of edited messages (Memory.edit; `sgmem ingest` of a file whose message changed at the same
# thread position): the raw messages are the system of record, so an edit keeps what it replaced. A version
# goes with its message (ON DELETE CASCADE): forgetting a message forgets its earlier texts; a write that deletes
# and re-adds a message (an edit, an insert before it) carries them to the new row (sgmem.store.versions).
# PostgreSQL's form (_PG_MESSAGE_VERSIONS) keys it by scope.
_MESSAGE_VERSIONS = """
CREATE TABLE message_versions (
    message_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    scope_id    INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    ext_id      TEXT NOT NULL,
    role        TEXT NOT NULL,
    name        TEXT,
    content     TEXT NOT NULL,
    at          TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    replaced_at TEXT NOT NULL,
    PRIMARY KEY (message_id, version)
);
CREATE INDEX message_versions_scope ON message_versions (scope_id, message_id);
"""

# PostgreSQL's form of 0013: keyed by scope as every table is since 0012 (its key leads with scope_id, its
# reference to the message carries the scope, so a table partitioned by scope holds a message and its versions in
# one partition); messages' own key there is (scope_id, id).
_PG_MESSAGE_VERSIONS = """
CREATE TABLE message_versions (
    message_id  BIGINT NOT NULL,
    scope_id    BIGINT NOT NULL,
    version     BIGINT NOT NULL,
    ext_id      TEXT NOT NULL,
    role        TEXT NOT NULL,
    name        TEXT,
    content     TEXT NOT NULL,
    at          TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    replaced_at TEXT NOT NULL,
    PRIMARY KEY (scope_id, message_id, version),
    FOREIGN KEY (scope_id, message_id) REFERENCES messages (scope_id, id) ON DELETE CASCADE
)
"""

#: (name, SQL) pairs, applied in order.
MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_initial", _INITIAL),
    ("0002_derived_memory", _DERIVED),
    ("0003_keywords", _KEYWORDS),
    ("0004_entities", _ENTITIES),
    ("0005_gate_ivf", _GATE_IVF),
    ("0006_entity_communities", _ENTITY_COMMUNITIES),
    ("0007_derived_session_index", _DERIVED_SESSION_INDEX),
    ("0008_entity_relations", _ENTITY_RELATIONS),
    ("0009_entity_ids", _ENTITY_IDS),
    ("0010_sentence_acts", _SENTENCE_ACTS),
    ("0011_scope_stamps", _SCOPE_STAMPS),
    ("0012_scope_keys", _SCOPE_KEYS),
    ("0013_message_versions", _MESSAGE_VERSIONS),
)

#: PostgreSQL's own form of a migration whose SQLite SQL does not translate (run as one statement, as is).
PG_MIGRATIONS: dict[str, str] = {
    "0009_entity_ids": _PG_ENTITY_IDS,
    "0012_scope_keys": _PG_SCOPE_KEYS,
    "0013_message_versions": _PG_MESSAGE_VERSIONS,
}

SCHEMA_VERSION = len(MIGRATIONS)
