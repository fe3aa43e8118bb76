"""The durable store on disk: SQLite WAL, permissions, identity, refusal of foreign stores."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

import sgmem
from sgmem.store import DB_FILENAME, SCHEMA_VERSION

from .helpers import HashEmbedder


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def _open_handles(path: Path) -> int:
    """File descriptors of this process open on ``path`` (Linux)."""
    target = str(path.resolve())
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                n += 1
        except OSError:
            pass
    return n


def test_store_is_sqlite_in_wal_mode(store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder()) as mem:
        mem.add({"role": "user", "content": "hello"}, scope="s", thread="t")
        db = store_path / DB_FILENAME
        assert db.is_file()
        con = sqlite3.connect(db)
        try:
            assert con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
            assert con.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
        finally:
            con.close()


def test_store_records_its_identity(store_path: Path) -> None:
    emb = HashEmbedder(name="fake-a", dim=8)
    with sgmem.Memory(store_path, embedder=emb):
        pass
    con = sqlite3.connect(store_path / DB_FILENAME)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    assert meta["embedder"] == "fake-a"
    assert meta["dim"] == "8"
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["library_version"] == sgmem.__version__


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_store_directory_and_files_are_private(store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder()) as mem:
        mem.add({"role": "user", "content": "secret"}, scope="s", thread="t")
        mem.search("secret", scope="s")
    assert _mode(store_path) == 0o700
    assert _mode(store_path / DB_FILENAME) == 0o600
    assert _mode(store_path / "faiss") == 0o700


def test_nested_directories_are_created(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    with sgmem.Memory(deep, embedder=HashEmbedder()):
        pass
    assert (deep / DB_FILENAME).is_file()


def test_other_embedder_name_is_refused(store_path: Path, embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        mem.add({"role": "user", "content": "hello there"}, scope="s", thread="t")
    other = HashEmbedder(name="fake-other", dim=8)
    with pytest.raises(sgmem.EmbedderMismatchError) as err:
        sgmem.Memory(store_path, embedder=other)
    assert embedder.name in str(err.value) and "fake-other" in str(err.value)
    # the store is unharmed and still opens with its own embedder
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        assert [m.content for m in mem.messages(scope="s")] == ["hello there"]


def test_same_name_other_dimension_is_refused(store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder(name="fake", dim=8)):
        pass
    with pytest.raises(sgmem.EmbedderMismatchError, match="dim"):
        sgmem.Memory(store_path, embedder=HashEmbedder(name="fake", dim=16))


def test_same_embedder_reopens(store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder(name="fake", dim=8)) as mem:
        mem.add({"role": "user", "content": "kept"}, scope="s", thread="t")
    with sgmem.Memory(store_path, embedder=HashEmbedder(name="fake", dim=8)) as mem:
        assert mem.stats().messages == 1


def test_newer_schema_is_refused_and_left_as_is(store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder()) as mem:
        mem.add({"role": "user", "content": "kept"}, scope="s", thread="t")
    con = sqlite3.connect(store_path / DB_FILENAME)
    con.execute("INSERT INTO migrations (name, applied_at) VALUES ('9999_from_the_future', '2099-01-01')")
    con.commit()
    con.close()
    with pytest.raises(sgmem.SchemaVersionError) as err:
        sgmem.Memory(store_path, embedder=HashEmbedder())
    assert "9999_from_the_future" in str(err.value)
    assert "newer" in str(err.value) and "Upgrade" in str(err.value)
    con = sqlite3.connect(store_path / DB_FILENAME)
    try:
        names = {r[0] for r in con.execute("SELECT name FROM migrations")}
        assert "9999_from_the_future" in names
        assert con.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
    finally:
        con.close()


@pytest.mark.parametrize(
    "garbage",
    [
        b"this is not a database at all " * 300,
        b"SQLite format 3\x00" + bytes(range(256)) * 20,
        os.urandom(8192),
    ],
    ids=["text", "bad-header", "random"],
)
def test_a_garbage_database_is_reported_and_left_untouched(store_path: Path, garbage: bytes) -> None:
    store_path.mkdir(parents=True)
    db = store_path / DB_FILENAME
    db.write_bytes(garbage)
    with pytest.raises(sgmem.CorruptStoreError) as err:
        sgmem.Memory(store_path, embedder=HashEmbedder())
    assert str(db) in str(err.value)
    assert db.read_bytes() == garbage


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_store_that_fails_to_open_releases_its_file(store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder(name="a")):
        pass
    db = store_path / DB_FILENAME
    with pytest.raises(sgmem.EmbedderMismatchError):
        sgmem.Memory(store_path, embedder=HashEmbedder(name="b"))
    assert _open_handles(db) == 0
    con = sqlite3.connect(db)
    con.execute("INSERT INTO migrations (name, applied_at) VALUES ('9999_future', 'x')")
    con.commit()
    con.close()
    with pytest.raises(sgmem.SchemaVersionError):
        sgmem.Memory(store_path, embedder=HashEmbedder(name="a"))
    assert _open_handles(db) == 0
    db.write_bytes(b"garbage" * 1000)
    with pytest.raises(sgmem.CorruptStoreError):
        sgmem.Memory(store_path, embedder=HashEmbedder(name="a"))
    assert _open_handles(db) == 0


def test_two_memories_on_one_path_see_each_others_writes(store_path: Path) -> None:
    emb = HashEmbedder()
    with sgmem.Memory(store_path, embedder=emb) as a, sgmem.Memory(store_path, embedder=emb) as b:
        a.add({"role": "user", "content": "written by a", "id": "a1"}, scope="s", thread="t")
        assert [m.id for m in b.messages(scope="s")] == ["a1"]
        assert b.search("written by a", scope="s", mode="vector")[0].message_ids == ("a1",)
        b.add({"role": "user", "content": "written by b", "id": "b1"}, scope="s", thread="t")
        assert {h.message_ids[0] for h in a.search("written", scope="s", k=5, mode="vector")} == {"a1", "b1"}
        with pytest.raises(sgmem.InvalidInputError):
            a.add({"role": "user", "content": "clash", "id": "b1"}, scope="s", thread="t")


def test_the_write_ahead_log_is_checkpointed_at_the_configured_size(tmp_path: Path) -> None:
    """Config.wal_checkpoint_pages reaches SQLite: past that many pages the log is copied into the database."""
    emb = HashEmbedder()
    wal_pages = {}
    for pages in (None, 3):
        # checkpoints inside commits only (the background checkpointer is tested below)
        base = sgmem.Config(wal_checkpoint_background=False)
        cfg = base if pages is None else base.with_(wal_checkpoint_pages=pages)
        path = tmp_path / f"m{pages}"
        with sgmem.Memory(path, embedder=emb, config=cfg) as mem:
            assert mem._store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == cfg.wal_checkpoint_pages
            for a in range(6):
                msgs = [{"role": "user", "content": f"Note {a}-{i}: the violin lesson moved."} for i in range(30)]
                mem.add(msgs, scope="a", thread="t")
            wal = path / (DB_FILENAME + "-wal")
            wal_pages[pages] = wal.stat().st_size // 4096 if wal.exists() else 0
    # under the default the six adds accumulate in the log; at 3 pages each add's commit checkpoints
    # and the next one writes the log from its start again (the file keeps its largest size)
    assert wal_pages[None] > 3 * wal_pages[3]


def _rows_in_database_file(path: Path) -> int:
    """Messages the database file holds by itself, without its write-ahead log (what a checkpoint copied)."""
    import shutil
    import sqlite3

    copy = path.parent / (path.name + "-alone")
    copy.mkdir()
    shutil.copy(path / DB_FILENAME, copy / DB_FILENAME)
    con = sqlite3.connect(copy / DB_FILENAME)
    try:
        return int(con.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    except sqlite3.OperationalError:  # not even the schema was copied
        return 0
    finally:
        con.close()


@pytest.mark.parametrize("background", [True, False])
def test_a_thread_of_the_store_copies_the_log_into_the_database_after_commits(tmp_path: Path, background: bool) -> None:
    """Config.wal_checkpoint_background: commits do not wait for checkpoints, a thread of the store's runs them
    (with the automatic checkpoint out of reach, only that thread can have copied the adds into the file)."""
    cfg = sgmem.Config(wal_checkpoint_pages=10**6, wal_checkpoint_background=background)
    path = tmp_path / "m"
    with sgmem.Memory(path, embedder=HashEmbedder(), config=cfg) as mem:
        for a in range(4):
            msgs = [{"role": "user", "content": f"Note {a}-{i}: the violin lesson moved."} for i in range(30)]
            mem.add(msgs, scope="a", thread="t")
        ck = mem._store._checkpointer
        assert (ck is not None) == background
        if background:
            assert ck.wait_idle(30)
            assert ck.runs >= 1
        in_file = _rows_in_database_file(path)
        assert in_file == (120 if background else 0)
        thread = ck._thread if ck is not None else None
    assert thread is None or not thread.is_alive()  # closed with the store
    assert not (path / (DB_FILENAME + "-wal")).exists()  # the last connection to close removed the log


def test_a_forked_process_does_not_kick_the_parents_checkpoint_thread(tmp_path: Path, monkeypatch: Any) -> None:
    from sgmem.store.sqlite import Checkpointer

    ck = Checkpointer(str(tmp_path / "x.db"))
    pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: pid + 1)
    ck.kick()  # in a child: no thread, nothing queued (the writers' automatic checkpoint bounds the log)
    assert ck._thread is None
    ck.close()
