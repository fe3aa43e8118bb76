"""Row-level security of the PostgreSQL store: the policies, the signed form, the scope of each statement.

:class:`RowSecurity` is a part of :class:`~sgmem.store.postgres.PostgresStore`
(``Config.pg_row_security``, ``Config.pg_scope_key``). Every table holding a
scope's rows gets a policy ``sgmem_scope`` admitting only the rows of the scope
named by the setting ``sgmem.scope``. The store sets it under its lock, for
each transaction (``set_config(..., true)``) or before a statement outside one,
to the scope the calling thread works on, and resets it before a pooled
connection goes back. The signed form keys that setting: only a holder of the
key can name a scope (:func:`scope_token`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import StoreError

__all__ = ["RowSecurity", "schema_lock_key", "scope_token"]

_LOCK_CLASS = 0x53474D  # "SGM": the advisory-lock key space of sgmem (first key of the pair)
_SCHEMA_LOCK = 0  # second key: migrations, the embedder binding and the policies

# Row security. Tables without a scope_id hold rows of one parent row that has one: their policy
# follows the parent (a child table added later must be named here, or opening with row security fails).
_CHILD_TABLES = {"derived_sources": ("memory_id", "derived"), "derived_versions": ("memory_id", "derived")}
_GLOBAL_TABLES = frozenset({"meta", "migrations", "sgmem_scope_keys"})  # no scope's rows
_SIGNED = "sgmem_scope_name"  # the security-definer function of the signed form (Config.pg_scope_key)


def scope_token(key: str, name: str) -> str:
    """The value of ``sgmem.scope`` for scope ``name`` under a scope key: ``<tag>:<name>``.

    ``tag`` is ``hex(SHA-256(k2 || SHA-256(k1 || name)))`` with two keys derived
    from ``key``: the nested form of HMAC (NMAC), which the database's
    ``sgmem_scope_name()`` recomputes from the keys only it can read.
    """
    k1, k2 = _scope_keys(key)
    inner = hashlib.sha256(k1 + name.encode("utf-8")).digest()
    return hashlib.sha256(k2 + inner).hexdigest() + ":" + name


def schema_lock_key(key: str | None) -> tuple[int, int]:
    """The advisory-lock key pair of the schema lock (migrations, the embedder binding, the policies).

    Without a scope key, sgmem's fixed pair. Under the signed form, a pair
    derived from the key (HMAC-SHA-256): a client without the key cannot
    compute it, and seeing it in ``pg_locks`` (it is taken only while a host
    sets something up) tells nothing about the key or any scope.
    """
    if key is None:
        return _LOCK_CLASS, _SCHEMA_LOCK
    tag = hmac.new(_scope_keys(key)[0], b"sgmem schema lock", hashlib.sha256).digest()
    return int.from_bytes(tag[:4], "big", signed=True), int.from_bytes(tag[4:8], "big", signed=True)


def _scope_keys(key: str) -> tuple[bytes, bytes]:
    raw = key.encode("utf-8")
    return hashlib.sha256(b"sgmem scope key 1\x00" + raw).digest(), hashlib.sha256(
        b"sgmem scope key 2\x00" + raw
    ).digest()


class RowSecurity:
    """The row-security part of :class:`~sgmem.store.postgres.PostgresStore` (which sets these attributes)."""

    row_security: bool
    where: str
    conn: Any
    _raw: Any
    _lock: Any
    _psycopg: Any
    _scope_key: str | None
    _scope_of: Any  # threading.local: the scope this thread works on
    _session_scope: str | None

    if TYPE_CHECKING:  # PostgresStore's

        @contextlib.contextmanager
        def write(self, timeout_s: float | None = None) -> Iterator[Any]: ...

        def _translated(self) -> contextlib.AbstractContextManager[None]: ...

    def _scoped_tables(self, partitions: bool = False) -> list[str]:
        """Tables with a ``scope_id`` column (every table that holds a scope's rows), ``scopes`` aside; a table
        partitioned by scope counts once (its partitions are reached through it), unless ``partitions``."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT k.relname FROM pg_class k JOIN pg_attribute a ON a.attrelid = k.oid "
                "AND a.attname = 'scope_id' AND NOT a.attisdropped "
                "WHERE k.relnamespace = to_regnamespace(current_schema()) AND k.relkind IN ('r', 'p') "
                f"{'' if partitions else 'AND NOT k.relispartition '}AND k.relname <> 'scopes' ORDER BY k.relname"
            )
        ]

    def _lock_schema(self) -> None:
        """Take the schema lock for this transaction (:func:`schema_lock_key`)."""
        self._raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", schema_lock_key(self._scope_key))

    def _setup_row_security(self) -> None:
        """Policies ``sgmem_scope`` on every table holding a scope's rows (created once, by the tables' owner).

        A table of a later migration that has neither a ``scope_id`` nor an entry
        in ``_CHILD_TABLES`` is refused here, so no table is ever left unguarded.
        The schema lock is taken only when something is to be created or changed:
        first a pass that changes nothing looks (an opening of a store set up
        already takes no lock that another client could hold).
        """
        with self.write():
            if self._setup_policies(apply=False):
                self._lock_schema()
                self._setup_policies(apply=True)

    def _setup_policies(self, apply: bool) -> bool:
        """Set up (``apply``) or look whether anything is to be set up; return whether anything was or is."""
        raw = self._raw
        signed = self._scope_key is not None
        todo = False
        if signed:
            todo = self._setup_scope_key(apply)
        have = {
            r[0]: r[1]
            for r in raw.execute(
                "SELECT tablename, qual FROM pg_policies WHERE schemaname = current_schema() "
                "AND policyname = 'sgmem_scope'"
            )
        }
        # partitions too (sgmem.store.partition): a client that reads a partition directly meets its own
        # policies only, not its parent's (PostgreSQL's rule)
        tables = [
            r[0]
            for r in raw.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()) "
                "AND relkind IN ('r', 'p') ORDER BY relname"
            )
        ]
        scoped = set(self._scoped_tables(partitions=True))
        name = f"(SELECT {_SIGNED}())" if signed else "current_setting('sgmem.scope', true)"
        scope_id = f"(SELECT s.id FROM scopes s WHERE s.name = {name})"
        for table in tables:
            if table == "scopes":
                rule = f"name = {name}"
            elif table in scoped:
                rule = f"scope_id = {scope_id}"
            elif table in _CHILD_TABLES:
                column, parent = _CHILD_TABLES[table]
                rule = f"EXISTS (SELECT 1 FROM {parent} p WHERE p.id = {column} AND p.scope_id = {scope_id})"
            elif table in _GLOBAL_TABLES or table.startswith("sgmem_"):
                continue
            else:
                raise StoreError(
                    f"row_security=True: table {table!r} of {self.where!r} holds no scope_id and sgmem knows "
                    "no parent for it, so no policy can guard it. Open the store without row security, or "
                    "upgrade sgmem."
                )
            if table in have and (_SIGNED in (have[table] or "")) == signed:
                continue
            if table not in have or signed:
                todo = True
                if not apply:
                    continue
            if table in have and not signed:
                raise StoreError(
                    f"the row-security policies of {self.where!r} check a signed scope: open it with "
                    "Config(pg_row_security=True, pg_scope_key=...) and the store's key."
                )
            try:
                raw.execute("SAVEPOINT sgmem_policy")
                if table in have:  # the plain policy becomes the signed one (the owner, with the key)
                    raw.execute(f'ALTER POLICY sgmem_scope ON "{table}" USING ({rule}) WITH CHECK ({rule})')
                else:
                    raw.execute(f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY')
                    raw.execute(f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY')  # the owner too
                    raw.execute(f'CREATE POLICY sgmem_scope ON "{table}" USING ({rule}) WITH CHECK ({rule})')
                raw.execute("RELEASE SAVEPOINT sgmem_policy")
            except self._psycopg.errors.InsufficientPrivilege:
                raw.execute("ROLLBACK TO SAVEPOINT sgmem_policy")
                form = "Config(pg_row_security=True, pg_scope_key=...)" if signed else "Config(pg_row_security=True)"
                raise StoreError(
                    f"row_security=True: the policies of {self.where!r} are not set up and this role may not "
                    f"create them on table {table!r}. Open the store once as the tables' owner with {form}."
                ) from None
        if signed and (apply or not todo):
            raw.execute("SELECT set_config('sgmem.scope', %s, true)", (scope_token(str(self._scope_key), ""),))
            if raw.execute(f"SELECT {_SIGNED}()").fetchone()[0] != "":
                raise StoreError(
                    f"Config.pg_scope_key is not the key the row-security policies of {self.where!r} were set "
                    "up with: give this host the store's key. To change the key, the tables' owner runs "
                    "DELETE FROM sgmem_scope_keys and opens the store with the new one (every host then needs it)."
                )
        return todo

    def _setup_scope_key(self, apply: bool = True) -> bool:
        """The signed form's keys table and its security-definer check (by the tables' owner; else verify they exist).

        ``sgmem_scope_keys`` holds two keys derived from ``Config.pg_scope_key``;
        row security on it (not forced) with a policy that admits nobody hides
        them from every role but its owner, even one granted ``SELECT`` on all
        tables. ``sgmem_scope_name()`` runs as that owner and returns the scope
        named by ``sgmem.scope`` when its tag is right, else NULL. Returns
        whether anything was (``apply``), or is to be, created or replaced.
        """
        raw = self._raw
        schema = raw.execute("SELECT current_schema()").fetchone()[0]
        owner = raw.execute(
            "SELECT pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c WHERE c.oid = to_regclass('scopes')"
        ).fetchone()[0]
        table = raw.execute("SELECT to_regclass('sgmem_scope_keys')").fetchone()[0]
        function = raw.execute(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname = %s",
            (_SIGNED,),
        ).fetchone()
        if not owner:
            if table is None or function is None:
                raise StoreError(
                    f"Config.pg_scope_key: the signed row security of {self.where!r} is not set up and this role "
                    "does not own the tables. Open the store once as the tables' owner with "
                    "Config(pg_row_security=True, pg_scope_key=...)."
                )
            return False
        q = '"' + str(schema).replace('"', '""') + '"'
        body = f"""
            DECLARE
              v text := current_setting('sgmem.scope', true);
              k1 bytea;
              k2 bytea;
            BEGIN
              IF v IS NULL OR length(v) < 65 OR substr(v, 65, 1) <> ':' THEN
                RETURN NULL;
              END IF;
              SELECT k.k1, k.k2 INTO k1, k2 FROM {q}.sgmem_scope_keys k LIMIT 1;
              IF encode(sha256(k2 || sha256(k1 || convert_to(substr(v, 66), 'UTF8'))), 'hex') = substr(v, 1, 64) THEN
                RETURN substr(v, 66);
              END IF;
              RETURN NULL;
            END
            """
        keys = table is not None and raw.execute("SELECT COUNT(*) FROM sgmem_scope_keys").fetchone()[0] > 0
        if keys and function is not None and function[0] == body:
            return False
        if not apply:
            return True
        if table is None:
            raw.execute("CREATE TABLE sgmem_scope_keys (k1 BYTEA NOT NULL, k2 BYTEA NOT NULL)")
            raw.execute("REVOKE ALL ON sgmem_scope_keys FROM PUBLIC")
            raw.execute("ALTER TABLE sgmem_scope_keys ENABLE ROW LEVEL SECURITY")  # not forced: its owner reads it
            raw.execute("CREATE POLICY sgmem_nobody ON sgmem_scope_keys USING (false)")
        if raw.execute("SELECT COUNT(*) FROM sgmem_scope_keys").fetchone()[0] == 0:
            raw.execute("INSERT INTO sgmem_scope_keys (k1, k2) VALUES (%s, %s)", _scope_keys(str(self._scope_key)))
        # search_path pinned (pg_temp last): no object a caller creates can stand in for the ones named here.
        # PL/pgSQL keeps its plans for the session: the check costs about nothing per statement (measured by
        # benchmarks.row_security; a SQL-language body is planned again at every call, 3x a plain query)
        raw.execute(
            f"CREATE OR REPLACE FUNCTION {q}.{_SIGNED}() RETURNS text LANGUAGE plpgsql STABLE SECURITY DEFINER "
            f"SET search_path = pg_catalog, pg_temp AS $f${body}$f$"
        )
        return True

    def _setting(self, name: str | None) -> str:
        """The value of ``sgmem.scope`` for scope ``name`` (``""``, which no scope has, for none)."""
        if name is None:
            return ""
        return scope_token(self._scope_key, name) if self._scope_key is not None else name

    def _use_scope(self, name: str) -> None:
        """Row security: this thread now works on scope ``name``.

        Applied at once only inside this thread's own transaction (under the
        store's lock: an open transaction is then this thread's); otherwise by
        the next transaction or statement, under the lock, so another thread's
        transaction on the shared connection is never touched.
        """
        self._scope_of.name = name
        if self.row_security:
            with self._lock, self._translated():
                if self.conn.in_transaction and self.conn.begin is None:  # a read not begun yet sets it at BEGIN
                    self._raw.execute("SELECT set_config('sgmem.scope', %s, true)", (self._setting(name),))

    def _scope_again(self) -> None:
        """Row security, at the start of a transaction: ``sgmem.scope`` is this thread's scope, for this transaction."""
        if self.row_security:
            name = getattr(self._scope_of, "name", None)
            self._raw.execute("SELECT set_config('sgmem.scope', %s, true)", (self._setting(name),))

    def _scope_again_session(self) -> None:
        """Row security, before a statement outside a transaction (under the lock): this thread's scope."""
        value = self._setting(getattr(self._scope_of, "name", None))
        if value != self._session_scope:  # one round trip only when the thread's scope differs from the last
            with self._translated():
                self._raw.execute("SELECT set_config('sgmem.scope', %s, false)", (value,))
            self._session_scope = value
