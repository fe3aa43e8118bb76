"""A PostgreSQL store can be sharded by scope: every key leads with it, every statement names one scope.

Partitioning a table by hash of ``scope_id`` (or distributing it by that
column on Citus) needs every primary key and unique constraint to contain the
scope and every foreign key to stay inside one scope; routing a statement to
one partition (shard) needs it to name one scope. The schema is read from the
server's catalog; the statements are every one a busy workload issues (adds,
searches in every mode, context, replay, edits, deletes, a replace, another
host's refresh, generated memory with a model, the entity layer, kNN lists),
parsed by PostgreSQL's own parser (pglast, tests/shardable.py). The store's
tables partitioned by scope (sgmem.store.partition) behave as plain ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import sgmem
from sgmem.store.partition import partition_by_scope, partitioned_tables
from tests.pg import makes_its_own_tables
from tests.shardable import violations

from .derived.helpers import ScriptedLLM, facts_json
from .helpers import HashEmbedder

pytestmark = pytest.mark.postgres

#: tables that hold no scope's rows
GLOBAL = {"meta", "migrations", "sgmem_scope_keys"}

def _rows(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as c:
        return c.execute(sql, args).fetchall()


def _constraints(url: str) -> dict[str, list[tuple[str, list[str], list[str], str | None]]]:
    """Per table (partitions aside): (kind, columns, referenced columns, referenced table) of each key."""
    out: dict[str, list[tuple[str, list[str], list[str], str | None]]] = {}
    for table, kind, cols, fcols, ftable in _rows(
        url,
        "SELECT k.relname, c.contype, "
        "ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY u(n, o) "
        "      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = u.n ORDER BY u.o), "
        "ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY u(n, o) "
        "      JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = u.n ORDER BY u.o), "
        "f.relname::text "
        "FROM pg_constraint c JOIN pg_class k ON k.oid = c.conrelid LEFT JOIN pg_class f ON f.oid = c.confrelid "
        "WHERE k.relnamespace = to_regnamespace(current_schema()) AND NOT k.relispartition "
        "AND c.contype IN ('p', 'u', 'f') ORDER BY 1, 2",
    ):
        out.setdefault(table, []).append((kind, list(cols), list(fcols or []), ftable))
    return out


def test_every_key_of_every_table_leads_with_the_scope(pg_url: str) -> None:
    with sgmem.Memory(pg_url, embedder=HashEmbedder()):
        pass
    keys = _constraints(pg_url)
    tables = {
        r[0]
        for r in _rows(
            pg_url,
            "SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()) "
            "AND relkind IN ('r', 'p') AND NOT relispartition",
        )
    }
    assert {"messages", "sentences", "derived_sources", "entity_relations"} <= tables
    for table in sorted(tables - GLOBAL):
        kinds = {kind for kind, *_ in keys.get(table, [])}
        assert "p" in kinds, f"{table} has no primary key"
        for kind, cols, fcols, ftable in keys[table]:
            if table == "scopes":
                assert cols in (["id"], ["name"]), f"scopes: key {cols}"
            elif kind in "pu":
                assert cols[0] == "scope_id", f"{table}: {'primary' if kind == 'p' else 'unique'} key {cols}"
            elif ftable == "scopes":
                assert cols == ["scope_id"] and fcols == ["id"], f"{table}: {cols} -> scopes {fcols}"
            else:  # a reference stays inside the scope: (scope_id, x) -> (scope_id, id)
                assert cols[0] == "scope_id" and fcols[0] == "scope_id", f"{table}: {cols} -> {ftable} {fcols}"


def test_the_checker_flags_a_statement_that_reads_many_scopes() -> None:
    # the statements the store issued before it named the scope everywhere
    assert violations("SELECT id, text FROM sentences WHERE id IN (%s, %s)")
    assert violations(
        "DELETE FROM vocabulary WHERE scope_id = %s AND NOT EXISTS "
        "(SELECT 1 FROM keyword_postings p WHERE p.keyword_id = vocabulary.id)"
    )
    assert violations("INSERT INTO derived_sources (memory_id, message_id, role) VALUES (%s, %s, 'origin')")
    assert violations(
        "SELECT s.text FROM sentences s JOIN messages m ON m.id = s.message_id WHERE m.scope_id = %s AND m.thread = %s"
    )
    # and their forms now
    assert not violations("SELECT id, text FROM sentences WHERE scope_id = %s AND id IN (%s, %s)")
    assert not violations(
        "DELETE FROM vocabulary WHERE scope_id = %s AND NOT EXISTS (SELECT 1 FROM keyword_postings p "
        "WHERE p.scope_id = vocabulary.scope_id AND p.keyword_id = vocabulary.id)"
    )
    assert not violations(
        "SELECT s.text FROM sentences s JOIN messages m ON m.scope_id = s.scope_id AND m.id = s.message_id "
        "WHERE m.scope_id = %s AND m.thread = %s"
    )


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement sent to any PostgreSQL connection of this process while the test runs."""
    import psycopg

    seen: list[str] = []
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def record(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(query if isinstance(query, str) else query.as_string(self))
        return execute(self, query, *args, **kwargs)

    def record_many(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(query if isinstance(query, str) else query.as_string(self))
        return executemany(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", record)
    monkeypatch.setattr(psycopg.Cursor, "executemany", record_many)
    yield seen


def _workload(url: str) -> None:
    """A busy store: two scopes, every kind of call, two hosts."""
    llm = ScriptedLLM(
        {
            "facts": lambda p: facts_json("Anna lives in Paris.", "Anna has a dog named Rex."),
            "summary": "They talked about Anna, Paris and Rex.",
            "insights": json.dumps([{"timestamp": "2024-05-08", "content": "Anna likes dogs."}]),
            "merge": "Anna lives in Paris with Rex.",
        }
    )
    config = sgmem.Config(
        min_relevance=0.0,
        entities=sgmem.EntityConfig(enabled=True),
        graph=sgmem.GraphConfig(knn_rule="knn"),
    )
    emb = HashEmbedder(dim=16)
    with sgmem.Memory(url, embedder=emb, llm=llm, config=config) as mem:
        for i in range(8):
            for scope in ("alice", "bob"):
                mem.add(
                    [
                        {
                            "role": "user",
                            "content": f"I met Anna Smith in Paris on day {i}. Rex barked.",
                            "id": f"u{i}",
                        },
                        {"role": "assistant", "content": f"Did Anna like Paris on day {i}?"},
                    ],
                    scope=scope,
                    thread=f"t{i % 3}",
                    at=f"2024-05-0{1 + i % 3}T10:00:00+00:00",
                )
        for mode in sgmem.MODES:
            mem.search("Where did I meet Anna?", scope="alice", mode=mode)
        mem.context("What about Anna?", scope="alice")
        memory_ids = [h.memory_id for h in mem.search("Anna", scope="alice", mode="hybrid", k=20) if h.memory_id]
        for mid in memory_ids[:2]:
            mem.history(mid, scope="alice")
        mem.messages(scope="alice")
        mem.messages(scope="alice", thread="t1", limit=3)
        mem.get(scope="alice", message_ids=["u1", "u2"])
        mem.threads(scope="alice")
        mem.stats("alice")
        mem.edit({"u4": {"content": "I met Anna Smith in Lyon on day 4."}}, scope="alice", thread="t1")
        # an insert before the edited message carries its earlier versions to the message's new row
        mem.insert([{"role": "user", "content": "A turn about Rome."}], scope="alice", thread="t1", position=1)
        (earlier, _) = mem.versions("u4", scope="alice")
        assert earlier.content == "I met Anna Smith in Paris on day 4. Rex barked."
        mem.pop(scope="alice", thread="t1")
        mem.set_thread([{"role": "user", "content": "A new list about Lisbon."}], scope="alice", thread="t2")
        mem.delete(scope="alice", message_ids=["u3"])
        mem.search("Anna", scope="alice")
        mem.delete(scope="alice", thread="t0")
        mem.clear_thread(scope="alice", thread="t2")
        mem.replace([{"role": "user", "content": "Bob moved to Berlin."}], scope="bob", thread="t1")
        mem.flush_profiles("alice")
        mem.delete(scope="bob")
    with (
        sgmem.Memory(url, embedder=emb, config=config) as host1,
        sgmem.Memory(url, embedder=emb, config=config) as host2,
    ):
        host1.search("Anna", scope="alice")
        host2.add([{"role": "user", "content": "Host two adds Madrid."}], scope="alice", thread="t9")
        host1.search("Anna", scope="alice")  # refreshed from the rows host two added


def test_every_statement_the_store_issues_names_one_scope(pg_url: str, recorded: list[str]) -> None:
    _workload(pg_url)
    distinct = {" ".join(s.split()) for s in recorded}
    assert len(distinct) > 150, "the workload issued the statements of every path"
    bad = {s: v for s in sorted(distinct) if (v := violations(s))}
    assert not bad, "statements not pinned to one scope:\n" + "\n".join(f"{v}: {s[:300]}" for s, v in bad.items())


@makes_its_own_tables
def test_a_store_partitioned_by_scope_keeps_each_scope_apart(pg_url: str) -> None:
    parts = partition_by_scope(pg_url, partitions=4)
    assert parts["messages"] == 4 and parts["sentences"] == 4 and "scopes" not in parts
    assert partitioned_tables(pg_url) == parts
    emb = HashEmbedder(dim=16)
    with sgmem.Memory(pg_url, embedder=emb, config=sgmem.Config(min_relevance=0.0)) as mem:
        for i in range(8):
            mem.add(
                [{"role": "user", "content": f"user {i} keeps a parrot named Kiwi{i}", "id": "m1"}],
                scope=f"user-{i}",
                thread="t",
            )
        assert [h.message_ids for h in mem.search("parrot Kiwi3", scope="user-3")] == [("m1",)]
        assert mem.messages(scope="user-3")[0].content == "user 3 keeps a parrot named Kiwi3"
        mem.delete(scope="user-3")
        assert mem.messages(scope="user-3") == [] and len(mem.scopes()) == 7
    spread = _rows(pg_url, "SELECT tableoid::regclass::text, COUNT(*) FROM messages GROUP BY 1")
    assert len(spread) > 1, "the scopes' rows lie in several partitions"
    with pytest.raises(sgmem.StoreError, match="partitioned already"):
        partition_by_scope(pg_url, partitions=4)


@makes_its_own_tables
def test_a_store_that_holds_rows_is_not_partitioned(pg_url: str) -> None:
    with sgmem.Memory(pg_url, embedder=HashEmbedder()) as mem:
        mem.add([{"role": "user", "content": "hello"}], scope="s", thread="t")
    with pytest.raises(sgmem.StoreError, match="already holds rows"):
        partition_by_scope(pg_url, partitions=4)
    assert partitioned_tables(pg_url) == {}
    with sgmem.Memory(pg_url, embedder=HashEmbedder()) as mem:
        assert mem.messages(scope="s")[0].content == "hello"
    with pytest.raises(sgmem.InvalidInputError, match="partitions"):
        partition_by_scope(pg_url, partitions=1)


@makes_its_own_tables
def test_a_store_of_an_older_schema_is_rekeyed_in_place(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store last opened by an sgmem of schema 0007 (keys by row id alone) opens: every row kept, now keyed by
    scope, a generated memory's links and versions with its scope, and the store reads and deletes as before."""
    import psycopg

    from sgmem.store import postgres, schema

    old = schema.MIGRATIONS[:7]  # before entity_relations (0008) and the scope keys (0012)
    with monkeypatch.context() as m:
        m.setattr(postgres, "MIGRATIONS", old)
        m.setattr(postgres, "SCHEMA_VERSION", len(old))
        postgres.PostgresStore(pg_url).close()
    emb = HashEmbedder(dim=16)
    vec = emb.embed(["Anna keeps a dog named Rex."])[0].tobytes()
    with psycopg.connect(pg_url, autocommit=True) as admin:  # rows as that sgmem wrote them
        admin.execute("INSERT INTO meta (key, value) VALUES ('embedder', %s), ('dim', '16')", (emb.name,))
        sid = admin.execute("INSERT INTO scopes (name, generation) VALUES ('old', 1) RETURNING id").fetchone()[0]
        other = admin.execute("INSERT INTO scopes (name, generation) VALUES ('other', 1) RETURNING id").fetchone()[0]
        ids = {}
        for scope, ext in ((sid, "m1"), (other, "o1")):
            ids[ext] = admin.execute(
                "INSERT INTO messages (scope_id, thread, ext_id, role, name, content, at, at_ts, session, round_id, "
                "turn_idx, tokens, terms, metadata, vec) VALUES (%s, 't', %s, 'user', NULL, "
                "'Anna keeps a dog named Rex.', '2024-05-01T10:00:00+00:00', 1714557600.0, 't', 0, 0, 7, "
                "'anna keep dog name rex', '{}', %s) RETURNING id",
                (scope, ext, vec),
            ).fetchone()[0]
            admin.execute("UPDATE messages SET round_id = id WHERE id = %s", (ids[ext],))
            admin.execute(
                'INSERT INTO sentences (scope_id, message_id, idx, start, "end", text, embed_hash, vec) '
                "VALUES (%s, %s, 0, 0, 27, 'Anna keeps a dog named Rex.', 'h', %s)",
                (scope, ids[ext], vec),
            )
        fact = admin.execute(
            "INSERT INTO derived (scope_id, kind, text, vec, at, at_ts, thread, session, speaker, method, version, "
            "cause, detail, created_at, updated_at) VALUES (%s, 'fact', 'Anna has a dog.', %s, "
            "'2024-05-01T10:00:00+00:00', 1714557600.0, 't', 't', NULL, 'rule', 2, 'merge-rule', '{}', "
            "'2024-05-01T10:00:00+00:00', '2024-05-01T10:00:00+00:00') RETURNING id",
            (sid, vec),
        ).fetchone()[0]
        admin.execute(
            "INSERT INTO derived_sources (memory_id, message_id, role) VALUES (%s, %s, 'origin')", (fact, ids["m1"])
        )
        admin.execute(
            "INSERT INTO derived_versions (memory_id, version, text, vec, cause, at, recorded_at, sources) "
            "VALUES (%s, 1, 'Anna has a pet.', %s, 'add', '2024-05-01T10:00:00+00:00', "
            "'2024-05-01T10:00:00+00:00', %s)",
            (fact, vec, json.dumps([ids["m1"]])),
        )
    with sgmem.Memory(pg_url, embedder=emb, config=sgmem.Config(min_relevance=0.0)) as mem:
        assert [x.content for x in mem.messages(scope="old")] == ["Anna keeps a dog named Rex."]
        assert mem.search("dog Rex", scope="old", mode="vector")[0].message_ids == ("m1",)
        versions = mem.history(f"fact:{fact}", scope="old")
        assert [(v.version, v.text, v.message_ids) for v in versions] == [
            (1, "Anna has a pet.", ("m1",)),
            (2, "Anna has a dog.", ("m1",)),
        ]
        mem.add([{"role": "user", "content": "Rex learned to sit."}], scope="old", thread="t")
        assert len(mem.messages(scope="old")) == 2
        mem.delete(scope="old")
        assert mem.scopes() == ["other"]
    assert _rows(pg_url, "SELECT name FROM migrations WHERE name = '0012_scope_keys'") == [("0012_scope_keys",)]
    assert _rows(pg_url, "SELECT COUNT(*) FROM derived_sources") == [(0,)]  # went with the scope
    keys = _constraints(pg_url)
    assert ("p", ["scope_id", "id"], [], None) in keys["messages"]
    assert ("f", ["scope_id", "memory_id"], ["scope_id", "id"], "derived") in keys["derived_versions"]
