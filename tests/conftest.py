"""Shared fixtures: one real MiniLM embedder per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import sgmem  # noqa: E402
from sgmem.embed import default_embedder  # noqa: E402


@pytest.fixture(scope="session")
def embedder() -> sgmem.Embedder:
    """The default all-MiniLM-L6-v2 embedder, loaded once for the whole run."""
    return default_embedder()


@pytest.fixture(scope="session", autouse=True)
def _record_pg_statements() -> Iterator[None]:
    """``SGMEM_TEST_PG_STATEMENTS=FILE``: every statement sgmem's PostgreSQL store runs through its connection
    wrapper (``PgConn``: all but the schema's set-up) goes to FILE, one JSON string a line, as sgmem wrote it
    (``python -m tests.shardable FILE`` translates each and checks that it names one scope, and tells sgmem's own
    statements from those a test ran through the store's connection)."""
    path = os.environ.get("SGMEM_TEST_PG_STATEMENTS")
    if not path:
        yield
        return
    import json

    from sgmem.store import pgsql

    execute, executemany = pgsql.PgConn._execute, pgsql.PgConn.executemany
    out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole session

    def record(self, sql, parameters=()):  # type: ignore[no-untyped-def]
        out.write(json.dumps(sql) + "\n")
        return execute(self, sql, parameters)

    def record_many(self, sql, seq):  # type: ignore[no-untyped-def]
        out.write(json.dumps(sql) + "\n")
        return executemany(self, sql, seq)

    pgsql.PgConn._execute, pgsql.PgConn.executemany = record, record_many  # type: ignore[method-assign]
    try:
        yield
    finally:
        pgsql.PgConn._execute, pgsql.PgConn.executemany = execute, executemany  # type: ignore[method-assign]
        out.close()


#: The tests of other behaviour (filters, k, budgets, modes) search for things a store may not hold; the
#: relevance cutoff (tested with its default in test_relevance.py and the adapters' first-hour tests) is off here.
NO_CUTOFF = sgmem.Config(min_relevance=0.0)


# --------------------------------------------------------------- backends
# Tests marked ``both_backends`` (modules of backend-neutral core tests) run once on
# the embedded SQLite store and once on PostgreSQL: their ``memory`` and
# ``store_path`` fixtures become a fresh PostgreSQL schema (see tests/pg.py).
_BACKEND_FIXTURES = {"memory", "sample_memory", "store_path"}  # each asks for ``backend``


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_backends") is None:
        return
    if not _BACKEND_FIXTURES & set(metafunc.fixturenames):
        return
    metafunc.parametrize("backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """``"sqlite"`` unless the test is parametrized over both backends."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A URL to a fresh, empty schema on the test server (dropped afterwards); skips without a server."""
    from tests.pg import fresh_schema

    yield from fresh_schema(request)


@pytest.fixture
def memory(embedder: sgmem.Embedder, backend: str, request: pytest.FixtureRequest) -> Iterator[sgmem.Memory]:
    """A fresh in-memory store (or a fresh PostgreSQL schema for ``both_backends`` tests), without the
    relevance cutoff (see ``default_memory``)."""
    target = request.getfixturevalue("pg_url") if backend == "postgres" else None
    # a test parametrised over sgmem.MODES gets the (opt-in) entity layer for mode="entity"
    callspec = getattr(request.node, "callspec", None)
    entity = callspec is not None and callspec.params.get("mode") == "entity"
    config = NO_CUTOFF.with_(entities=sgmem.EntityConfig(enabled=True)) if entity else NO_CUTOFF
    with sgmem.Memory(target, embedder=embedder, config=config) as mem:
        yield mem


@pytest.fixture
def default_memory(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    """A fresh in-memory store with the default configuration (relevance cutoff on)."""
    with sgmem.Memory(embedder=embedder) as mem:
        yield mem


@pytest.fixture
def store_path(tmp_path, backend: str, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A directory for a durable store (a PostgreSQL URL for ``both_backends`` tests)."""
    if backend == "postgres":
        return request.getfixturevalue("pg_url")
    return tmp_path / "store"
