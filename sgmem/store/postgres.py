"""The shared store: PostgreSQL as the system of record for many app hosts.

:class:`PostgresStore` has :class:`~sgmem.store.sqlite.SQLiteStore`'s methods
and semantics; its SQL is SQLite's, translated by :mod:`sgmem.store.pgsql`.
One connection per store (from a URL, or borrowed from a
``psycopg_pool.ConnectionPool`` until :meth:`close`), shared by the threads of
one ``Memory`` under a re-entrant lock, like the SQLite store's.

Many hosts, one truth:

* every write is one transaction; a writer first locks its scope's row in
  ``scopes`` (``FOR NO KEY UPDATE``), so concurrent writers on any number of hosts
  are serialised per scope (other scopes proceed), and a host killed mid-add
  leaves nothing (the server rolls its transaction back). A row lock names no
  scope in ``pg_locks``, and under row security a client that may not see the
  scope's row cannot lock it (see :mod:`sgmem.store.rowsecurity`);
* each change bumps ``scopes.generation`` inside that transaction; every search
  compares it with the generation of its in-RAM index and rebuilds on a change,
  so another host's add or delete is seen by this host's next search;
* reads run in one ``REPEATABLE READ`` snapshot, so an index is never built
  from half of another host's write.

A host keeps the indexes of the scopes it serves in RAM; with
``Config.pg_cache_dir`` it also saves them on its own disk (a subdirectory per
:meth:`store_id`), to load a cold scope from them and the server's newer rows.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from .._version import __version__
from ..errors import ConfigError, DependencyError, InvalidInputError, SchemaVersionError, StoreError
from .connection import statements
from .pgsql import PgConn, ddl, redact, scrub, translate_pg
from .pgtx import PgTransactions
from .rowsecurity import RowSecurity, scope_token
from .schema import MIGRATIONS, PG_MIGRATIONS, SCHEMA_VERSION

__all__ = ["PostgresStore", "scope_token", "server_dense"]

_VECTOR_TABLES = ("messages", "sentences", "derived")


def _libpq_target(target: str) -> str:
    """``target`` as libpq takes it: a URL's scheme in lower case (libpq reads ``POSTGRESQL://`` as key=value)."""
    head, sep, rest = target.strip().partition("://")
    return head.lower() + sep + rest if sep and head.lower() in ("postgresql", "postgres") else target


def server_dense(config: Any, store: PostgresStore) -> str:
    """Resolve ``Config.pg_dense`` against the server: ``"server"`` or ``"host"``."""
    want = config.pg_dense
    if want == "server" and not store.pgvector:
        raise ConfigError(
            f"Config.pg_dense='server' needs pgvector on the PostgreSQL server {store.where!r}, which has none. "
            "Install the extension (CREATE EXTENSION vector, as a role allowed to) or use pg_dense='host'."
        )
    if want == "auto":
        return "server" if store.pgvector and store.vector_index == "hnsw" else "host"
    return str(want)


class PostgresStore(RowSecurity, PgTransactions):
    """Records, vectors and edges of every scope in one PostgreSQL database (or schema).

    Args:
        target: a libpq URL (``postgresql://user@host:5432/db``; add
            ``?options=-csearch_path%3Dmyschema`` to use a schema), a libpq
            ``key=value`` string (``"host=db dbname=agents user=app"``) or a
            ``psycopg_pool.ConnectionPool`` (one connection is borrowed until close).
        busy_timeout_s: how long a writer waits for another writer's lock on the
            same scope before :class:`StoreBusyError`.
        vector_index: ``"hnsw"`` builds pgvector HNSW indexes (``Config.pg_vector_index``).
        row_security: row-level security (``Config.pg_row_security``): every
            table holding a scope's rows (``scopes``, each table with a
            ``scope_id``, and ``derived_sources``/``derived_versions`` through
            their ``derived`` row) gets a policy ``sgmem_scope`` that shows and
            accepts only the rows of the scope named by the setting
            ``sgmem.scope``. This store sets it, under its lock, for each
            transaction or statement, to the scope the calling thread works on
            (never left set on a connection it gives back). A query without the
            setting sees nothing. Superusers and ``BYPASSRLS`` roles are exempt
            (PostgreSQL's rule): run the app as an ordinary role.
        scope_key: the signed form (``Config.pg_scope_key``): ``sgmem.scope``
            must hold :func:`scope_token` of the scope under this key, checked by
            the security-definer function ``sgmem_scope_name()`` against keys in
            a table no other role can read; a client of the role that sets
            ``sgmem.scope`` without the key sees nothing.
    """

    backend = "postgres"
    consecutive_ids = False  # a sequence may give other sessions ids in between: one INSERT per new row

    def __init__(  # noqa: D107
        self,
        target: Any,
        *,
        busy_timeout_s: float = 30.0,
        vector_index: str = "none",
        row_security: bool = False,
        scope_key: str | None = None,
    ) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise DependencyError("a PostgreSQL store needs psycopg 3: pip install 'sgmem[postgres]'") from exc
        self.dir = None
        self.read_only = False  # a shared store is always opened for writing (SQLiteStore.read_only)
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.RLock()
        self._writing = False
        self.read_only = False  # read-only opening is for a store directory (see Memory)
        self.vector_index = vector_index
        self.row_security = bool(row_security) or scope_key is not None
        self._scope_key = scope_key
        self._scope_of = threading.local()  # the scope this thread works on (sgmem.scope, for row security)
        self._session_scope: str | None = None  # sgmem.scope as set on the connection outside a transaction
        self.pgvector = False  # set by bind_embedder when the server has the extension
        self.dense = "host"  # where nearest neighbours are found: "host" (FAISS cache) or "server" (Memory sets it)
        self._pipelined = psycopg.Pipeline.is_supported()  # libpq 14+ (see write)
        self._locked: dict[int, int] = {}  # scopes this write transaction locked: their generation now
        self._sequences: dict[str, str] = {}  # table -> its id sequence (reserve_ids)
        self._pool = None if isinstance(target, str) else target
        self._url = _libpq_target(target) if isinstance(target, str) else None
        self.where = redact(target) if isinstance(target, str) else f"pool {getattr(target, 'name', '')}".strip()
        self._psycopg = psycopg
        raw = self._connect()
        self.conn: Any = PgConn(raw, self.where, busy_timeout_s)
        self._raw = raw
        self.conn.lock = self._lock  # threads share the connection: every statement under the store's lock
        if self.row_security:
            self.conn.before_autocommit = self._scope_again_session
        try:
            with self._translated():
                self._migrate()
                if self.row_security:
                    self._setup_row_security()
            ids = self.conn.execute(
                "SELECT k.relname, pg_get_serial_sequence(quote_ident(k.relname), 'id') FROM pg_class k "
                "JOIN pg_attribute a ON a.attrelid = k.oid AND a.attname = 'id' AND a.attidentity <> '' "
                "WHERE k.relnamespace = to_regnamespace(current_schema()) AND NOT k.relispartition"
            ).fetchall()
            self.conn.id_tables = frozenset(r[0] for r in ids)
            self.conn.sequences = {r[0]: r[1] for r in ids if r[1] is not None}
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ setup
    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        """psycopg errors of statements run on the raw connection (set-up, scope settings) as SgmemErrors."""
        try:
            yield
        except self._psycopg.Error as exc:
            raise translate_pg(exc, self.where, self._busy_timeout_s) from exc

    def _connect(self) -> Any:
        try:
            if self._pool is not None:
                raw = self._pool.getconn()
                if raw.info.transaction_status != 0:  # a pool hands out idle connections; be sure
                    raw.rollback()
                self._pool_autocommit = raw.autocommit  # given back as it was lent
                raw.autocommit = True
            else:
                raw = self._psycopg.connect(str(self._url), autocommit=True, connect_timeout=10)
            ms = max(1, int(self._busy_timeout_s * 1000))
            raw.execute(f"SET lock_timeout = {ms}")
            raw.execute("SET client_min_messages = warning")
            if self.row_security:  # whatever a previous borrower left: this store sets it per statement
                raw.execute("RESET sgmem.scope")
            self._session_scope = None
            return raw
        except self._psycopg.Error as exc:
            # the driver's message may quote the connection string, password included: scrubbed, and the
            # driver's exception is not chained (a traceback would print it)
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            text = scrub(text, self._url) if self._url is not None else text
            invalid = isinstance(exc, self._psycopg.ProgrammingError) and "invalid" in str(exc).lower()
        if invalid:
            raise InvalidInputError(
                "path",
                self.where,
                "a libpq URL such as postgresql://user@host:5432/db, or key=value pairs such as "
                "'host=db dbname=agents user=app'",
                f"The driver said: {text}",
            )
        raise StoreError(
            f"could not connect to the PostgreSQL store {self.where!r}: {text}. "
            "Check the URL, that the server is running and that the role may log in."
        )

    def _alive(self) -> None:
        """Reconnect a URL store whose connection broke (server restart) between transactions."""
        if self._url is not None and getattr(self._raw, "broken", False) and not self._closed_by_user:
            with contextlib.suppress(Exception):
                self._raw.close()
            self._raw = self._connect()
            self.conn.raw = self._raw

    _closed_by_user = False
    _pool_autocommit = False

    def _check_schema(self) -> None:
        """Refuse a ``search_path`` whose first schema does not exist (PostgreSQL would quietly use the next one)."""
        setting = str(self._raw.execute("SELECT current_setting('search_path')").fetchone()[0])
        names = [n.strip() for n in setting.split(",") if n.strip() and n.strip() not in ('"$user"', "$user")]
        if not names:
            return
        first = names[0][1:-1].replace('""', '"') if names[0].startswith('"') else names[0].lower()
        if self._raw.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (first,)).fetchone() is None:
            raise StoreError(
                f"the PostgreSQL store {self.where!r} names schema {first!r} first in its search_path, and it does "
                f"not exist: PostgreSQL would put sgmem's tables in the next schema ({setting!r}). Create it "
                f'(CREATE SCHEMA "{first}", as a role allowed to) or fix the URL\'s options=-csearch_path%3Dname.'
            )

    def _up_to_date(self) -> bool:
        """Whether every migration is applied and this sgmem's versions recorded (an opening then changes nothing)."""
        tables = self._raw.execute("SELECT to_regclass('migrations'), to_regclass('meta')").fetchone()
        if tables[0] is None or tables[1] is None:
            return False
        done = {r[0] for r in self._raw.execute("SELECT name FROM migrations")}
        meta = dict(self._raw.execute("SELECT key, value FROM meta WHERE key IN ('schema_version', 'library_version')"))
        return done == {name for name, _ in MIGRATIONS} and meta == {
            "schema_version": str(SCHEMA_VERSION),
            "library_version": __version__,
        }

    def _migrate(self) -> None:
        self._check_schema()
        with self.write() as conn:
            if self._up_to_date():  # the usual opening: no schema lock, which another client could hold
                return
            self._lock_schema()
            if self._raw.execute("SELECT to_regclass('migrations')").fetchone()[0] is None:  # a role may lack CREATE
                conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
            known = {name for name, _ in MIGRATIONS}
            unknown = done - known
            if unknown:
                raise SchemaVersionError(
                    f"this store was written by a newer sgmem (migrations {sorted(unknown)} are unknown to "
                    f"sgmem {__version__}, schema {SCHEMA_VERSION}). Upgrade sgmem to open it."
                )
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                if name in PG_MIGRATIONS:  # written for PostgreSQL: run as is
                    self._raw.execute(PG_MIGRATIONS[name])
                else:
                    for statement in statements(sql):
                        conn.execute(ddl(statement))
                conn.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                    (name, datetime.now(timezone.utc).isoformat()),
                )
            for key, value in (("schema_version", str(SCHEMA_VERSION)), ("library_version", __version__)):
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def store_id(self) -> str | None:
        """A random id of this store (its database or schema), made by the first host that asks: what names its
        hosts' local caches (``Config.pg_cache_dir``). None if this role may not record it."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is None:
            try:
                with self.write():
                    self.conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('store_id', ?) ON CONFLICT (key) DO NOTHING",
                        (uuid.uuid4().hex,),
                    )
                    row = self.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            except StoreError:
                return None
        return str(row[0]) if row is not None else None

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedder on first use (one host wins a race); refuse a different one afterwards.

        The schema lock is taken only when something is to be set up (the first
        binding, pgvector's columns or indexes), not at every opening.
        """
        with self._translated(), self.write():
            bound = dict(self._raw.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"))
            if not bound or not self._pgvector_ready(int(dim)):
                self._lock_schema()
            super().bind_embedder(name, dim)
            self.pgvector = self._setup_pgvector(int(dim))

    def _pgvector_ready(self, dim: int) -> bool:
        """Whether :meth:`_setup_pgvector` has nothing to create (so needs no lock)."""
        raw = self._raw
        if raw.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
            return raw.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None
        if raw.execute("SELECT to_regtype('vector')").fetchone()[0] is None:
            return True
        twins = {
            r[0]
            for r in raw.execute(
                "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND column_name = 'emb'"
            )
        }
        if not twins >= set(_VECTOR_TABLES):
            return False
        if self.vector_index != "hnsw":
            return True
        indexes = {r[0] for r in raw.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
        return all(f"{t}_emb_hnsw" in indexes for t in _VECTOR_TABLES)

    # --------------------------------------------------------------- pgvector
    def _setup_pgvector(self, dim: int) -> bool:
        """With pgvector on the server: a ``vector(dim)`` twin of each ``vec`` column, kept by a trigger.

        ``vec`` (float32 bytes) stays the system of record, read exactly as on
        SQLite; ``emb`` is what ``<=>`` queries (and an optional HNSW index) use.
        Returns whether the twin columns exist.
        """
        raw = self._raw
        have = raw.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        if have is None:
            if raw.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
                return False
            raw.execute("SAVEPOINT sgmem_vector")
            try:
                raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
                raw.execute("RELEASE SAVEPOINT sgmem_vector")
            except self._psycopg.Error:  # not allowed to create it: stay on bytea + host FAISS
                raw.execute("ROLLBACK TO SAVEPOINT sgmem_vector")
                return False
        if raw.execute("SELECT to_regtype('vector')").fetchone()[0] is None:
            return False  # the extension lives in a schema outside this store's search_path: host FAISS
        twins = {
            r[0]
            for r in raw.execute(
                "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND column_name = 'emb'"
            )
        }
        if twins >= set(_VECTOR_TABLES):  # set up by an earlier open: take no table lock
            if self.vector_index == "hnsw":
                for table in _VECTOR_TABLES:
                    raw.execute(
                        f"CREATE INDEX IF NOT EXISTS {table}_emb_hnsw ON {table} USING hnsw (emb vector_cosine_ops)"
                    )
            return True
        # float32 little-endian bytes -> real[] (IEEE 754 decoded exactly; pgvector casts real[] to vector)
        raw.execute(
            """
            CREATE OR REPLACE FUNCTION sgmem_f32(b bytea) RETURNS real[] LANGUAGE sql IMMUTABLE STRICT AS $f$
              SELECT array_agg((CASE WHEN x.bits >> 31 = 1 THEN -1.0::float8 ELSE 1.0::float8 END) *
                     CASE WHEN (x.bits >> 23) & 255 = 0 THEN (x.bits & 8388607)::float8 * 2.0::float8 ^ (-149)
                          ELSE (1.0::float8 + (x.bits & 8388607)::float8 / 8388608.0::float8)
                               * 2.0::float8 ^ (((x.bits >> 23) & 255) - 127) END ORDER BY x.i)::real[]
              FROM (SELECT i, get_byte(b, 4 * i)::bigint | (get_byte(b, 4 * i + 1)::bigint << 8)
                           | (get_byte(b, 4 * i + 2)::bigint << 16) | (get_byte(b, 4 * i + 3)::bigint << 24) AS bits
                      FROM generate_series(0, length(b) / 4 - 1) AS i) AS x
            $f$"""
        )
        raw.execute(
            "CREATE OR REPLACE FUNCTION sgmem_fill_emb() RETURNS trigger LANGUAGE plpgsql AS $f$ "
            "BEGIN NEW.emb := sgmem_f32(NEW.vec)::vector; RETURN NEW; END $f$"
        )
        for table in _VECTOR_TABLES:
            raw.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS emb vector({dim})")
            raw.execute(f"DROP TRIGGER IF EXISTS {table}_emb ON {table}")
            raw.execute(
                f"CREATE TRIGGER {table}_emb BEFORE INSERT OR UPDATE OF vec ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION sgmem_fill_emb()"
            )
            raw.execute(f"UPDATE {table} SET emb = sgmem_f32(vec)::vector WHERE emb IS NULL")
            if self.vector_index == "hnsw":
                raw.execute(
                    f"CREATE INDEX IF NOT EXISTS {table}_emb_hnsw ON {table} USING hnsw (emb vector_cosine_ops)"
                )
        return True

    def nearest(
        self, scope_id: int, query: Any, k: int, table: str = "sentences", kind: str | None = None
    ) -> list[tuple[int, float]]:
        """The scope's ``k`` rows of ``table`` nearest to ``query`` by cosine, computed by the server.

        Needs pgvector (:attr:`pgvector`); exact unless an HNSW index exists
        (``Config(pg_vector_index="hnsw")``). ``kind`` filters ``derived`` rows
        (``"fact"``, ...). Returns ``(row id, cosine)`` best first.
        """
        if not self.pgvector:
            raise StoreError("this PostgreSQL server has no pgvector: nearest() runs in the host's FAISS cache instead")
        if table not in _VECTOR_TABLES:
            raise InvalidInputError("table", table, f"one of {_VECTOR_TABLES}")
        text = "[" + ",".join(repr(float(x)) for x in query) + "]"
        where: str = "scope_id = ?"
        args: list[Any] = [scope_id]
        if kind is not None:
            where, args = where + " AND kind = ?", [scope_id, kind]
        rows = self.conn.execute(
            f"SELECT id, 1 - (emb <=> ?::vector) FROM {table} WHERE {where} ORDER BY emb <=> ?::vector, id LIMIT ?",
            (text, *args, text, int(k)),
        )
        return [(int(i), float(c)) for i, c in rows]

    def close(self) -> None:
        """Close the connection, or give it back to its pool (idempotent)."""
        with self._lock:
            if self._closed_by_user:
                return
            self._closed_by_user = True
            raw = getattr(self, "_raw", None)
            if raw is None:
                return
            if self._pool is None:
                with contextlib.suppress(Exception):
                    raw.close()
                return
            try:
                if raw.info.transaction_status != 0:
                    raw.rollback()
                raw.execute("RESET lock_timeout")
                raw.execute("RESET client_min_messages")
                raw.execute("RESET sgmem.scope")  # the next borrower must not read as this store's last scope
                raw.autocommit = self._pool_autocommit
            except Exception:  # noqa: BLE001 - not reset: closed, so the pool discards it instead of lending it
                with contextlib.suppress(Exception):
                    raw.close()
            with contextlib.suppress(Exception):
                self._pool.putconn(raw)

    def purge_scope(self, scope_id: int) -> int:
        """Remove every row of an emptied scope from every table, then the scope row; return rows removed."""
        tables = self._scoped_tables()
        pending, removed = tables, 0
        for _ in range(len(tables) + 1):  # a parent table may have to wait until its children are emptied
            failed = []
            for table in pending:
                self._raw.execute("SAVEPOINT sgmem_purge")
                try:
                    removed += self.conn.execute(f'DELETE FROM "{table}" WHERE scope_id = ?', (scope_id,)).rowcount
                    self._raw.execute("RELEASE SAVEPOINT sgmem_purge")
                except Exception as exc:  # a foreign key from a table not yet emptied
                    self._raw.execute("ROLLBACK TO SAVEPOINT sgmem_purge")
                    cause = exc.__cause__ if isinstance(exc, StoreError) else exc  # conn.execute translated it
                    if not isinstance(cause, self._psycopg.errors.ForeignKeyViolation):
                        raise
                    failed.append(table)
            if not failed:
                break
            pending = failed
        else:
            raise StoreError(f"could not delete scope {scope_id}: rows in {pending} still reference it")
        self.conn.execute("DELETE FROM scopes WHERE id = ?", (scope_id,))
        self._locked.pop(scope_id, None)
        return removed
