"""A new PostgreSQL store's tables partitioned by hash of the scope (PostgreSQL's native partitioning).

Every table that holds a scope's rows has a key that leads with ``scope_id``
and every statement sgmem issues names one scope (migration ``0012_scope_keys``;
``tests/unit/test_postgres_shardable.py`` checks both). So each table can be
split into partitions by ``HASH (scope_id)``: a scope's rows, keys and foreign
keys all fall in one partition of each table, and PostgreSQL prunes every
statement to that partition. :func:`partition_by_scope` turns the freshly
created (empty) tables of a store into such partitioned tables, keeping every
column, default, identity, constraint, index, trigger, row-security policy and
grant; ``scopes``, ``meta`` and ``migrations`` (one row per scope or none)
stay plain tables. Later migrations apply to the partitioned tables as to
plain ones.

docs/postgres.md ("Partitioned or distributed PostgreSQL") says how to use it,
and what was tested.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError, StoreError

__all__ = ["partition_by_scope", "partitioned_tables"]


def partitioned_tables(target: Any) -> dict[str, int]:
    """The store's tables partitioned by scope and how many partitions each has (empty for a plain store)."""
    from .postgres import PostgresStore

    store = PostgresStore(target)
    try:
        return _partitioned(store._raw)
    finally:
        store.close()


def _partitioned(raw: Any) -> dict[str, int]:
    rows = raw.execute(
        "SELECT k.relname, (SELECT COUNT(*) FROM pg_inherits i WHERE i.inhparent = k.oid) FROM pg_class k "
        "WHERE k.relnamespace = to_regnamespace(current_schema()) AND k.relkind = 'p' ORDER BY k.relname"
    ).fetchall()
    return {str(name): int(n) for name, n in rows}


def partition_by_scope(target: Any, *, partitions: int = 16) -> dict[str, int]:
    """Partition a new store's scope tables by ``HASH (scope_id)`` into ``partitions`` partitions each.

    Args:
        target: the store's libpq URL, ``key=value`` string or psycopg pool (as for
            :class:`sgmem.Memory`); its schema is created first if it is not yet.
        partitions: partitions per table (2 to 1024).

    Returns:
        Each table partitioned and its number of partitions.

    Raises:
        InvalidInputError: ``partitions`` out of range.
        StoreError: the store already holds messages or other scope rows (partition a new
            store before its first add), or its tables are partitioned already; nothing is changed.

    Runs in one transaction under sgmem's schema lock, as the tables' owner.
    """
    if isinstance(partitions, bool) or not isinstance(partitions, int) or not 2 <= partitions <= 1024:
        raise InvalidInputError("partitions", partitions, "an integer from 2 to 1024")
    from .postgres import PostgresStore

    store = PostgresStore(target)
    try:
        with store._translated(), store.write():
            store._lock_schema()
            raw = store._raw
            if _partitioned(raw):
                raise StoreError(
                    f"the tables of {store.where!r} are partitioned already ({sorted(_partitioned(raw))}); "
                    "nothing was changed."
                )
            tables = store._scoped_tables()
            full = [t for t in tables if raw.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() is not None]
            if full:
                raise StoreError(
                    f"the store {store.where!r} already holds rows (in {full}); partition a new store before its "
                    "first add, or copy an existing one into a partitioned store (docs/postgres.md). Nothing was "
                    "changed."
                )
            _convert(raw, tables, partitions)
            return _partitioned(raw)
    finally:
        store.close()


def _convert(raw: Any, tables: list[str], n: int) -> None:
    """Replace each (empty) table by a table partitioned by hash of scope_id with the same definition."""
    oids = [int(raw.execute("SELECT %s::regclass::oid", (f'"{t}"',)).fetchone()[0]) for t in tables]
    fkeys = raw.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE contype = 'f' AND conrelid = ANY(%s) ORDER BY conrelid, conname",
        (oids,),
    ).fetchall()
    for table, name, _ in fkeys:  # they reference tables about to be replaced
        raw.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for table, oid in zip(tables, oids, strict=True):
        keys = raw.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s "
            "AND contype IN ('p', 'u', 'c') ORDER BY contype DESC, conname",
            (oid,),
        ).fetchall()
        indexes = [
            r[0]
            for r in raw.execute(
                "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = %s AND NOT EXISTS "
                "(SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) ORDER BY i.indexrelid",
                (oid,),
            )
        ]
        triggers = [
            r[0]
            for r in raw.execute(
                "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s AND NOT tgisinternal", (oid,)
            )
        ]
        policies = raw.execute(
            "SELECT p.polname, pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid) "
            "FROM pg_policy p WHERE p.polrelid = %s",
            (oid,),
        ).fetchall()
        rls, forced = raw.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s", (oid,)
        ).fetchone()
        grants = raw.execute(
            "SELECT a.grantee, a.privilege_type FROM pg_class k, aclexplode(k.relacl) a WHERE k.oid = %s "
            "AND a.grantee <> k.relowner",
            (oid,),
        ).fetchall()
        seq = raw.execute(
            "SELECT pg_get_serial_sequence(%s, 'id') FROM pg_attribute WHERE attrelid = %s AND attname = 'id'",
            (f'"{table}"', oid),
        ).fetchone()
        last = None
        if seq is not None and seq[0] is not None:
            last = raw.execute(f"SELECT last_value, is_called FROM {seq[0]}").fetchone()
        raw.execute(f'ALTER TABLE "{table}" RENAME TO "{table}__plain"')
        raw.execute(
            f'CREATE TABLE "{table}" (LIKE "{table}__plain" INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING GENERATED '
            "INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY HASH (scope_id)"
        )
        parts = [f"{table}_p{i}" for i in range(n)]
        for i, part in enumerate(parts):
            raw.execute(f'CREATE TABLE "{part}" PARTITION OF "{table}" FOR VALUES WITH (MODULUS {n}, REMAINDER {i})')
        raw.execute(f'DROP TABLE "{table}__plain"')  # its sequence too: the new table's draws on from its value
        if last is not None:
            new_seq = raw.execute("SELECT pg_get_serial_sequence(%s, 'id')", (f'"{table}"',)).fetchone()[0]
            raw.execute(f'ALTER SEQUENCE {new_seq} RENAME TO "{seq[0].split(".")[-1].strip(chr(34))}"')
            raw.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s, %s)", (f'"{table}"', last[0], last[1]))
        for name, definition in keys:
            raw.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
        for definition in [*indexes, *triggers]:
            raw.execute(definition)
        # a partition read directly meets its own policies only (PostgreSQL's rule): each gets its parent's
        for target in (table, *parts):
            for name, qual, check in policies:
                using = f" USING ({qual})" if qual else ""
                with_check = f" WITH CHECK ({check})" if check else ""
                raw.execute(f'CREATE POLICY "{name}" ON "{target}"{using}{with_check}')
            if rls:
                raw.execute(f'ALTER TABLE "{target}" ENABLE ROW LEVEL SECURITY')
            if forced:
                raw.execute(f'ALTER TABLE "{target}" FORCE ROW LEVEL SECURITY')
            for grantee, privilege in grants:
                role = (
                    "PUBLIC" if int(grantee) == 0 else raw.execute("SELECT %s::regrole::text", (grantee,)).fetchone()[0]
                )
                raw.execute(f'GRANT {privilege} ON "{target}" TO {role}')
    for table, name, definition in fkeys:
        raw.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
