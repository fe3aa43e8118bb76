"""The shared store: PostgreSQL as the system of record for many app hosts.

:class:`PostgresStore` has :class:`~sgmem.store.sqlite.SQLiteStore`'s methods
and semantics; its SQL is SQLite's, translated by :mod:`sgmem.store.pgsql`.
One connection per store (from a URL, or borrowed from a
``psycopg_pool.ConnectionPool`` until :meth:`close`), shared by the threads of
one ``Memory`` under a re-entrant lock, like the SQLite store's.

Many hosts, one truth:

* every write is one transaction; a writer first takes a per-scope advisory
  lock (``pg_advisory_xact_lock``), so concurrent writers on any number of hosts
  are serialised per scope (other scopes proceed), and a host killed mid-add
  leaves nothing (the server rolls its transaction back);
* each change bumps ``scopes.generation`` inside that transaction; every search
  compares it with the generation of its in-RAM index and rebuilds on a change,
  so another host's add or delete is seen by this host's next search;
* reads run in one ``REPEATABLE READ`` snapshot, so an index is never built
  from half of another host's write.

No file cache is written for this store (FAISS caches stay in RAM).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from .. import __version__
from ..errors import DependencyError, InvalidInputError, SchemaVersionError, StoreError
from .connection import statements
from .pgsql import PgConn, ddl, redact, translate_pg
from .schema import MIGRATIONS, SCHEMA_VERSION
from .sqlite import SQLiteStore

__all__ = ["PostgresStore", "is_postgres_target", "is_url"]

_LOCK_CLASS = 0x53474D  # "SGM": the advisory-lock key space of sgmem (first key of the pair)
_SCHEMA_LOCK = 0  # second key: migrations and the embedder binding
_URL_PREFIXES = ("postgresql://", "postgres://")


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a directory."""
    if not isinstance(path, str):
        return False
    head, sep, _ = path.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").replace(".", "").isalnum() and head[:1].isalpha()


def is_postgres_target(path: Any) -> bool:
    """A ``postgresql://``/``postgres://`` URL or a psycopg connection pool."""
    if isinstance(path, str):
        return path.lower().startswith(_URL_PREFIXES)
    return all(hasattr(path, a) for a in ("getconn", "putconn")) and type(path).__module__.startswith("psycopg_pool")


class PostgresStore(SQLiteStore):
    """Records, vectors and edges of every scope in one PostgreSQL database (or schema).

    Args:
        target: a libpq URL (``postgresql://user@host:5432/db``; add
            ``?options=-csearch_path%3Dmyschema`` to use a schema) or a
            ``psycopg_pool.ConnectionPool`` (one connection is borrowed until close).
        busy_timeout_s: how long a writer waits for another writer's lock on the
            same scope before :class:`StoreBusyError`.
    """

    backend = "postgres"

    def __init__(self, target: Any, *, busy_timeout_s: float = 30.0) -> None:  # noqa: D107
        try:
            import psycopg
        except ImportError as exc:
            raise DependencyError(
                "a PostgreSQL store needs psycopg 3: pip install 'sgmem[postgres]'"
            ) from exc
        self.dir = None
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.RLock()
        self._writing = False
        self._pool = None if isinstance(target, str) else target
        self._url = target if isinstance(target, str) else None
        self.where = redact(target) if isinstance(target, str) else f"pool {getattr(target, 'name', '')}".strip()
        self._psycopg = psycopg
        raw = self._connect()
        self.conn: Any = PgConn(raw, self.where, busy_timeout_s)
        self._raw = raw
        try:
            self._migrate()
            self.conn.id_tables = frozenset(
                r[0]
                for r in self.conn.execute(
                    "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
                    "AND column_name = 'id' AND is_identity = 'YES'"
                )
            )
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ setup
    def _connect(self) -> Any:
        try:
            if self._pool is not None:
                raw = self._pool.getconn()
                if raw.info.transaction_status != 0:  # a pool hands out idle connections; be sure
                    raw.rollback()
                raw.autocommit = True
            else:
                raw = self._psycopg.connect(str(self._url), autocommit=True, connect_timeout=10)
            ms = max(1, int(self._busy_timeout_s * 1000))
            raw.execute(f"SET lock_timeout = {ms}")
            raw.execute("SET client_min_messages = warning")
            return raw
        except self._psycopg.Error as exc:
            if isinstance(exc, self._psycopg.ProgrammingError) and "invalid" in str(exc).lower():
                raise InvalidInputError("path", self.where, "a libpq URL such as postgresql://user@host:5432/db") from exc
            raise StoreError(
                f"could not connect to the PostgreSQL store {self.where!r}: {str(exc).strip().splitlines()[0]}. "
                "Check the URL, that the server is running and that the role may log in."
            ) from exc

    def _alive(self) -> None:
        """Reconnect a URL store whose connection broke (server restart) between transactions."""
        if self._url is not None and getattr(self._raw, "broken", False) and not self._closed_by_user:
            with contextlib.suppress(Exception):
                self._raw.close()
            self._raw = self._connect()
            self.conn.raw = self._raw

    _closed_by_user = False

    def _migrate(self) -> None:
        with self.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?, ?)", (_LOCK_CLASS, _SCHEMA_LOCK))
            conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
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

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedder on first use (one host wins a race); refuse a different one afterwards."""
        with self.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?, ?)", (_LOCK_CLASS, _SCHEMA_LOCK))
        super().bind_embedder(name, dim)

    # ------------------------------------------------------------ transactions
    @contextlib.contextmanager
    def write(self, timeout_s: float | None = None) -> Iterator[Any]:
        """One write transaction; everything inside commits together or not at all.

        Writers of one scope are serialised by the advisory lock that
        :meth:`scope_id` and :meth:`lock_scope` take inside it.
        """
        with self._lock:
            if self._writing:  # nested: the outer transaction decides
                yield self.conn
                return
            self._alive()
            raw = self._raw
            try:
                raw.execute("BEGIN")
                if timeout_s is not None:
                    raw.execute(f"SET LOCAL lock_timeout = {max(1, int(timeout_s * 1000))}")
            except self._psycopg.Error as exc:
                raise self.conn.translate(exc) from exc
            self._writing = True
            try:
                yield self.conn
            except BaseException:
                with contextlib.suppress(Exception):
                    raw.execute("ROLLBACK")
                raise
            else:
                try:
                    raw.execute("COMMIT")
                except self._psycopg.Error as exc:
                    with contextlib.suppress(Exception):
                        raw.execute("ROLLBACK")
                    raise self.conn.translate(exc) from exc
            finally:
                self._writing = False

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        """A consistent read snapshot (one ``REPEATABLE READ`` read-only transaction)."""
        with self._lock:
            if self.conn.in_transaction:  # already inside write(): same transaction
                yield self.conn
                return
            self._alive()
            try:
                self._raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            except self._psycopg.Error as exc:
                raise self.conn.translate(exc) from exc
            try:
                yield self.conn
            finally:
                with contextlib.suppress(Exception):
                    self._raw.execute("COMMIT")

    def close(self) -> None:
        """Close the connection, or give it back to its pool (idempotent)."""
        with self._lock:
            if self._closed_by_user:
                return
            self._closed_by_user = True
            raw = getattr(self, "_raw", None)
            if raw is None:
                return
            with contextlib.suppress(Exception):
                if self._pool is not None:
                    if raw.info.transaction_status != 0:
                        raw.rollback()
                    self._pool.putconn(raw)
                else:
                    raw.close()

    # ------------------------------------------------------------------ scopes
    def scope_id(self, name: str, *, create: bool = False) -> int | None:
        """The scope's row id; inside a write, after taking the scope's advisory lock."""
        if self._writing:
            self.conn.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", (_LOCK_CLASS, f"sgmem.scope:{name}"))
        return super().scope_id(name, create=create)

    def lock_scope(self, scope_id: int) -> None:
        """Serialise this write with every other writer of the scope (on any host)."""
        self.conn.execute(
            "SELECT pg_advisory_xact_lock(?, hashtext('sgmem.scope:' || name)) FROM scopes WHERE id = ?",
            (_LOCK_CLASS, scope_id),
        )

    def purge_scope(self, scope_id: int) -> int:
        """Remove every row of an emptied scope from every table, then the scope row; return rows removed."""
        tables = [
            r[0]
            for r in self.conn.execute(
                "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
                "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema = current_schema() AND c.column_name = 'scope_id' "
                "AND t.table_type = 'BASE TABLE' AND c.table_name != 'scopes' ORDER BY c.table_name"
            )
        ]
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
                    if not isinstance(exc, self._psycopg.errors.ForeignKeyViolation):
                        raise translate_pg(exc, self.where, self._busy_timeout_s) from exc
                    failed.append(table)
            if not failed:
                break
            pending = failed
        else:
            raise StoreError(f"could not delete scope {scope_id}: rows in {pending} still reference it")
        self.conn.execute("DELETE FROM scopes WHERE id = ?", (scope_id,))
        return removed
