"""Files on disk: private permissions, refusing newer schemas, reporting (never replacing) damage."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

import sgmem

from .helpers import FastEmbedder, db_path

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


def _fill(mem: sgmem.Memory, n: int = 60) -> None:
    for i in range(n):
        mem.add(
            [{"role": "user", "content": f"Message number {i} about gardening and tomatoes, padded " + "x" * 300}],
            scope="s",
            thread=f"t{i % 3}",
        )


def test_a_new_store_is_private_to_the_user(tmp_path: Path) -> None:
    old = os.umask(0o000)  # even a permissive umask must not widen the store
    try:
        store = tmp_path / "deep" / "store"
        with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
            _fill(mem, 3)
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    files = [p for p in store.rglob("*") if p.is_file()]
    assert db_path(store) in files
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, f"{p.name}: {oct(p.stat().st_mode)}"


def test_wal_and_shm_files_are_private_while_open(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        _fill(mem, 3)
        side = [p for p in store.iterdir() if p.name.startswith("sgmem.db-")]
        assert side, "WAL mode keeps -wal/-shm files while open"
        for p in side:
            assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, f"{p.name}: {oct(p.stat().st_mode)}"


def test_an_existing_directory_keeps_its_permissions(tmp_path: Path) -> None:
    """Pointing a store at a directory the user made must not chmod it behind their back."""
    d = tmp_path / "mine"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    with sgmem.Memory(d, embedder=FastEmbedder()) as mem:
        _fill(mem, 1)
    assert stat.S_IMODE(d.stat().st_mode) == 0o755
    assert stat.S_IMODE(db_path(d).stat().st_mode) & 0o077 == 0


def test_a_store_from_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        _fill(mem, 2)
    conn = sqlite3.connect(db_path(store))
    conn.execute("INSERT INTO migrations (name, applied_at) VALUES ('9999_from_the_future', '2099-01-01')")
    conn.commit()
    conn.close()
    before = db_path(store).read_bytes()
    with pytest.raises(sgmem.SchemaVersionError, match=r"newer sgmem.*9999_from_the_future.*Upgrade") as info:
        sgmem.Memory(store, embedder=FastEmbedder())
    assert isinstance(info.value, sgmem.StoreError)
    assert db_path(store).read_bytes() == before


def test_a_store_built_with_another_embedder_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        _fill(mem, 1)
    with pytest.raises(sgmem.EmbedderMismatchError, match="test-hash-bow-64"):
        sgmem.Memory(store, embedder=FastEmbedder(dim=32, name="other"))


@pytest.mark.parametrize("damage", ["garbage-header", "truncated-header", "not-sqlite", "zero-filled"])
def test_a_file_that_is_not_a_database_is_reported_not_replaced(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        _fill(mem)
    f = db_path(store)
    data = f.read_bytes()
    if damage == "garbage-header":
        data = os.urandom(100) + data[100:]
    elif damage == "truncated-header":
        data = data[:50]
    elif damage == "not-sqlite":
        data = b"this is my shopping list, not a database\n" * 100
    else:
        data = b"\x00" * len(data)
    f.write_bytes(data)
    with pytest.raises(sgmem.CorruptStoreError, match=r"left untouched.*backup") as info:
        sgmem.Memory(store, embedder=FastEmbedder())
    assert isinstance(info.value, sgmem.StoreError)
    assert f.read_bytes() == data, "the damaged file must be left as it was"
    # the failed open released the file: moving it away and starting over works in this process
    f.rename(tmp_path / "damaged.db")
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        assert mem.stats().messages == 0


def test_damage_inside_the_file_is_reported_when_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        _fill(mem)
    f = db_path(store)
    data = bytearray(f.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    n_pages = len(data) // page
    assert n_pages > 10
    for p in range(n_pages // 2, n_pages):  # scribble over the back half of the pages
        data[p * page : p * page + 64] = b"\xff" * 64
    f.write_bytes(bytes(data))
    conn = sqlite3.connect(f)
    try:
        problems = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    finally:
        conn.close()
    assert problems != ["ok"], "the damage is real"
    damaged = f.read_bytes()
    errors = 0
    try:
        mem = sgmem.Memory(store, embedder=FastEmbedder())
    except sgmem.CorruptStoreError:
        errors += 1
    else:
        with mem:
            for call in (
                lambda: mem.messages(scope="s"),
                lambda: mem.search("tomatoes", scope="s"),
                lambda: mem.stats(),
                lambda: mem.add({"role": "user", "content": "new"}, scope="s", thread="t"),
                lambda: mem.delete(scope="s", thread="t1"),
            ):
                try:
                    call()
                except sgmem.CorruptStoreError as exc:
                    assert "damaged" in str(exc) or "malformed" in str(exc)
                    errors += 1
    assert errors >= 1, "the damage was never reported"
    assert f.stat().st_size >= len(damaged), "the damaged file was not replaced"
