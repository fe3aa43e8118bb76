"""The PostgreSQL store's own behaviour: URLs, pools, migrations, errors, deleted rows gone.

The backend-neutral behaviour (add, search, context, delete, isolation...) is
covered by the ``both_backends`` modules; these need a server (tests/pg.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sgmem
from sgmem.store.pgsql import to_pg

from .helpers import CAT_THREAD, DAY1, HashEmbedder

pytestmark = pytest.mark.postgres


@pytest.fixture
def fake() -> HashEmbedder:
    return HashEmbedder()


def _rows(url: str, sql: str, args: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as c:
        return c.execute(sql, args).fetchall()


def test_a_url_is_never_taken_for_a_directory(tmp_path: Path, fake: HashEmbedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sgmem.StoreError, match="could not connect"):
        sgmem.Memory("postgresql://nobody@127.0.0.1:1/nowhere", embedder=fake)
    with pytest.raises(sgmem.InvalidInputError, match="postgresql://"):
        sgmem.Memory("mysql://user:secret@host/db", embedder=fake)
    assert os.listdir(tmp_path) == [], "no directory named after the URL was created"


def test_a_password_never_shows_in_errors() -> None:
    with pytest.raises(sgmem.StoreError) as err:
        sgmem.Memory("postgresql://me:hunter2@127.0.0.1:1/db", embedder=HashEmbedder())
    assert "hunter2" not in str(err.value) and "***" in str(err.value)


def test_sqlite_dialect_is_translated() -> None:
    sql, returns = to_pg("INSERT OR IGNORE INTO t (a, end) VALUES (?, ?)", frozenset({"t"}))
    assert sql == 'INSERT INTO t (a, "end") VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING id' and returns
    sql, _ = to_pg("INSERT OR REPLACE INTO s (a, b) VALUES (?, 'x')")
    assert sql.endswith("ON CONFLICT ON CONSTRAINT s_pkey DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b")
    sql, _ = to_pg("INSERT INTO u (k, n) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET n = n + excluded.n")
    assert sql.endswith("SET n = u.n + excluded.n")
    assert to_pg("SELECT CASE WHEN a LIKE '5%' THEN 1 END FROM t WHERE b = '?'")[0] == (
        "SELECT CASE WHEN a LIKE '5%%' THEN 1 END FROM t WHERE b = '?'"
    )


def test_sqlite_pragmas_are_no_ops(pg_url: str, fake: HashEmbedder) -> None:
    """A SQLite-only statement in shared code (e.g. a WAL checkpoint) does nothing on PostgreSQL."""
    with sgmem.Memory(pg_url, embedder=fake) as mem:
        conn = mem._store.conn
        assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone() is None
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_reopen_and_pool(pg_url: str, fake: HashEmbedder) -> None:
    from psycopg_pool import ConnectionPool

    with sgmem.Memory(pg_url, embedder=fake) as mem:
        mem.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
        first = [h.message_ids for h in mem.search("cat", scope="alice", k=3)]
    with ConnectionPool(pg_url, min_size=1, max_size=2, open=True) as pool:
        with sgmem.Memory(pool, embedder=fake) as mem:
            assert [h.message_ids for h in mem.search("cat", scope="alice", k=3)] == first
            assert len(mem.messages(scope="alice")) == len(CAT_THREAD)
        assert pool.get_stats().get("pool_available", 1) >= 1, "the connection went back to the pool"


def test_a_newer_schema_is_refused(pg_url: str, fake: HashEmbedder) -> None:
    with sgmem.Memory(pg_url, embedder=fake):
        pass
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("INSERT INTO migrations (name, applied_at) VALUES ('9999_from_the_future', 'now')")
    with pytest.raises(sgmem.SchemaVersionError, match="newer sgmem"):
        sgmem.Memory(pg_url, embedder=fake)


def test_another_embedder_is_refused(pg_url: str, fake: HashEmbedder, embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(pg_url, embedder=fake):
        pass
    with pytest.raises(sgmem.EmbedderMismatchError):
        sgmem.Memory(pg_url, embedder=embedder)


def test_deleted_rows_are_gone_from_every_table(pg_url: str, fake: HashEmbedder) -> None:
    with sgmem.Memory(pg_url, embedder=fake) as mem:
        mem.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
        mem.add([{"role": "user", "content": "Bob keeps bees."}], scope="bob", thread="b", at=DAY1)
        receipt = mem.delete(scope="alice")
        assert receipt.messages == len(CAT_THREAD)
    tables = [
        r[0]
        for r in _rows(
            pg_url,
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND column_name = 'scope_id'",
        )
    ]
    assert {"messages", "sentences", "derived", "keyword_postings"} <= set(tables)
    (alice,) = _rows(pg_url, "SELECT COUNT(*) FROM scopes WHERE name = 'alice'")
    assert alice == (0,)
    for t in tables:  # no soft delete: only bob's rows are left anywhere
        left = _rows(pg_url, f'SELECT COUNT(*) FROM "{t}" WHERE scope_id NOT IN (SELECT id FROM scopes)')
        assert left == [(0,)], t
    texts = _rows(pg_url, "SELECT content FROM messages")
    assert texts == [("Bob keeps bees.",)]


def test_a_writer_held_up_by_another_host_gets_store_busy_error_and_stores_nothing(
    pg_url: str, fake: HashEmbedder
) -> None:
    import psycopg

    cfg = sgmem.Config(busy_timeout_s=1.0)
    with sgmem.Memory(pg_url, embedder=fake, config=cfg) as mem:
        mem.add({"role": "user", "content": "before the lock", "id": "m0"}, scope="s", thread="t")
        with psycopg.connect(pg_url) as other:  # another host, stuck inside a write of scope "s" (its row locked)
            other.execute("SELECT 1 FROM scopes WHERE name = 's' FOR NO KEY UPDATE")
            with pytest.raises(sgmem.StoreBusyError, match="busy_timeout_s"):  # raised, not waited on forever
                mem.add({"role": "user", "content": "blocked", "id": "m1"}, scope="s", thread="t")
            mem.add({"role": "user", "content": "another scope goes on", "id": "x1"}, scope="other", thread="t")
        assert [m.id for m in mem.messages(scope="s")] == ["m0"]
        mem.add({"role": "user", "content": "after the lock", "id": "m1"}, scope="s", thread="t")
        assert [m.id for m in mem.messages(scope="s")] == ["m0", "m1"]


def test_cli_takes_a_store_url(
    pg_url: str, fake: HashEmbedder, capsys: pytest.CaptureFixture[str], monkeypatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from sgmem import cli

    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=fake))
    with sgmem.Memory(pg_url, embedder=fake) as mem:
        mem.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["stats", "--store", pg_url]) == 0
    out = capsys.readouterr().out
    assert "alice" in out and f"{len(CAT_THREAD)} messages" in out
    assert os.listdir(tmp_path) == [], "--store never falls back to a local directory"


def test_row_security_shows_each_scope_only_its_own_rows(pg_url: str, fake: HashEmbedder) -> None:
    """Config(pg_row_security=True): a client without ``sgmem.scope`` sees nothing; sgmem as an ordinary role works."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import parse_qs, quote, urlsplit

    import psycopg

    cfg = sgmem.Config(pg_row_security=True, min_relevance=0)
    with sgmem.Memory(pg_url, embedder=fake, config=cfg) as mem:  # the tables' owner sets the policies up
        mem.add([{"role": "user", "content": "alice keeps a red bicycle"}], scope="alice", thread="t")
        mem.add([{"role": "user", "content": "bob owns a blue canoe"}] * 2, scope="bob", thread="t")
    schema = parse_qs(urlsplit(pg_url).query)["options"][0].split("=", 1)[1].split(",")[0]
    role = f"sgmem_app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" NOLOGIN')
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        admin.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        admin.execute(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}"')
    try:
        with psycopg.connect(pg_url, autocommit=True) as c:  # another client of the database, as that role
            c.execute(f'SET ROLE "{role}"')
            for table in ("messages", "sentences", "scopes", "sentence_edges"):
                assert c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, f"{table} without sgmem.scope"
            c.execute("SET sgmem.scope = 'bob'")
            assert {r[0] for r in c.execute("SELECT content FROM messages")} == {"bob owns a blue canoe"}
            assert c.execute("SELECT COUNT(*) FROM scopes").fetchone()[0] == 1
        app_url = pg_url.replace("options=", "options=" + quote(f"-crole={role} ", safe=""), 1)
        with sgmem.Memory(app_url, embedder=fake, config=cfg) as app:  # sgmem itself under the policies
            assert [h.text for h in app.search("bicycle", scope="alice", k=5)] == ["alice keeps a red bicycle"]
            assert {h.text for h in app.search("canoe", scope="bob", k=5)} == {"bob owns a blue canoe"}

            def probe(scope: str, word: str, want: set[str]) -> object:  # threads of one Memory, different scopes
                for _ in range(15):
                    got = {h.text for h in app.search(word, scope=scope, k=5)}
                    texts = {m.content for m in app.messages(scope=scope)}
                    if got != want or texts != want:
                        return got, texts
                return None

            with ThreadPoolExecutor(2) as pool:
                runs = [
                    pool.submit(probe, "alice", "bicycle", {"alice keeps a red bicycle"}),
                    pool.submit(probe, "bob", "canoe", {"bob owns a blue canoe"}),
                ]
                assert [f.result() for f in runs] == [None, None]
            app.add([{"role": "user", "content": "carol paints"}], scope="carol", thread="t")
            assert [m.content for m in app.messages(scope="carol")] == ["carol paints"]
            app.delete(scope="bob")
            assert app.messages(scope="bob") == []
        assert _rows(pg_url, "SELECT COUNT(*) FROM messages")[0][0] == 2  # root (superuser) bypasses: alice, carol
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{role}"')
            admin.execute(f'DROP ROLE "{role}"')
