"""Entity and community ids across hosts: drawn from the database, never computed by a writer.

Writers of different scopes run at once (each holds only its own scope's lock):
ids computed as ``MAX(id) + 1`` by each collided on PostgreSQL, and under row
security (where a writer sees only its scope's rows) every scope after the
first failed its first entity add. Ids now come from an identity column
(PostgreSQL) or the rowid (SQLite, one writer at a time), and a store written
before keeps its ids and continues after them.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

import sgmem
from sgmem.store.schema import MIGRATIONS

from .helpers import ENTITIES, FastEmbedder

N_HOSTS, N_ADDS = 3, 6


def _turns(host: int, i: int) -> list[dict[str, str]]:
    # names the rule-based extractor finds: a new entity at every add, and one seen before
    return [
        {
            "role": "user",
            "content": f"Yesterday Marisol{host}x{i} met Doctor Okafor{host} in Lisbon{i} on May {i + 1}.",
        },
        {"role": "assistant", "content": f"Nice! Did Marisol{host}x{i} enjoy Lisbon{i}?"},
    ]


def _hosts_add_at_once(url: str, config: sgmem.Config) -> list[str]:
    """``N_HOSTS`` hosts (a Memory, so a connection, each), each adding to its own scope at once; their errors."""
    errors: list[str] = []
    start = threading.Barrier(N_HOSTS)

    def host(h: int) -> None:
        try:
            with sgmem.Memory(url, embedder=FastEmbedder(), config=config) as mem:
                start.wait(30)
                for i in range(N_ADDS):
                    mem.add(_turns(h, i), scope=f"tenant-{h}", thread="t")
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(f"host {h}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=host, args=(h,)) for h in range(N_HOSTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


def _check_entities(mem: sgmem.Memory) -> None:
    for h in range(N_HOSTS):
        scope = f"tenant-{h}"
        assert len(mem.messages(scope=scope)) == 2 * N_ADDS
        hits = mem.search(f"Marisol{h}x{N_ADDS - 1}", scope=scope, k=3, mode="entity")
        assert hits and f"Marisol{h}x{N_ADDS - 1}" in hits[0].text, hits


@pytest.mark.postgres
def test_hosts_adding_entities_to_different_scopes_at_once_all_succeed(pg_url: str) -> None:
    with sgmem.Memory(pg_url, embedder=FastEmbedder(), config=ENTITIES):
        pass  # the schema exists before the hosts race
    assert _hosts_add_at_once(pg_url, ENTITIES) == []
    with sgmem.Memory(pg_url, embedder=FastEmbedder(), config=ENTITIES) as mem:
        _check_entities(mem)


def test_an_old_sqlite_store_keeps_its_entity_ids_and_continues_after_them(tmp_path: Path) -> None:
    """A store at the schema before the change opens, migrates, keeps its entities and adds new ones."""
    path = tmp_path / "store"
    with sgmem.Memory(path, embedder=FastEmbedder(), config=ENTITIES) as mem:
        mem.add(_turns(0, 0), scope="a", thread="t")
    db = sqlite3.connect(path / "sgmem.db")
    before = db.execute("SELECT id, name FROM entities ORDER BY id").fetchall()
    names = [n for n, _ in MIGRATIONS]
    new = names[names.index("0008_entity_relations") + 1 :]
    assert new, "the entity-id migration follows 0008"
    db.executemany("DELETE FROM migrations WHERE name = ?", [(n,) for n in new])  # as sgmem 0008 left it
    db.execute("ALTER TABLE sentences DROP COLUMN act")  # (0010_sentence_acts)
    db.execute("ALTER TABLE scopes DROP COLUMN stamp")  # (0011_scope_stamps)
    for table in ("derived_sources", "derived_versions"):  # (0012_scope_keys)
        db.execute(f"ALTER TABLE {table} DROP COLUMN scope_id")
    db.execute("DROP TABLE message_versions")  # (0013_message_versions)
    db.commit()
    db.close()
    with sgmem.Memory(path, embedder=FastEmbedder(), config=ENTITIES) as mem:
        mem.add(_turns(1, 1), scope="b", thread="t")
        _ = mem.search("Marisol1x1", scope="b", k=3, mode="entity")
    db = sqlite3.connect(path / "sgmem.db")
    after = db.execute("SELECT id, name FROM entities ORDER BY id").fetchall()
    done = {r[0] for r in db.execute("SELECT name FROM migrations")}
    db.close()
    assert set(new) <= done
    assert after[: len(before)] == before
    assert len(after) > len(before) and min(i for i, _ in after[len(before) :]) > max(i for i, _ in before)


@pytest.mark.postgres
def test_an_old_postgres_store_migrates_and_continues_after_its_ids(pg_url: str) -> None:
    """A store whose ids were computed by writers (before 0009) is migrated by the first host to open it."""
    import psycopg

    with sgmem.Memory(pg_url, embedder=FastEmbedder(), config=ENTITIES) as mem:
        for i in range(3):
            mem.add(_turns(9, i), scope="old", thread="t")
    with psycopg.connect(pg_url, autocommit=True) as admin:  # back to the schema sgmem 0008 left
        for table in ("entities", "entity_communities"):
            admin.execute(f"ALTER TABLE {table} ALTER COLUMN id DROP IDENTITY")
        admin.execute("DELETE FROM migrations WHERE name = '0009_entity_ids'")
        before = admin.execute("SELECT id, scope_id, name FROM entities ORDER BY id").fetchall()
    assert len(before) >= 3
    assert _hosts_add_at_once(pg_url, ENTITIES) == []  # the hosts open (one migrates) and add at once
    with psycopg.connect(pg_url, autocommit=True) as admin:
        after = admin.execute("SELECT id, scope_id, name FROM entities ORDER BY id").fetchall()
        migrated = admin.execute("SELECT 1 FROM migrations WHERE name = '0009_entity_ids'").fetchone()
    assert migrated is not None
    assert after[: len(before)] == before
    assert min(r[0] for r in after[len(before) :]) > max(r[0] for r in before)
    with sgmem.Memory(pg_url, embedder=FastEmbedder(), config=ENTITIES) as mem:
        _check_entities(mem)
        assert mem.search("Marisol9x2", scope="old", k=3, mode="entity")
