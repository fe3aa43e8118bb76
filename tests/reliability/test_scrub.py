"""Deleted text leaves the disk when ``delete`` (or ``replace``) returns: the raw bytes of every file
under the store directory (database, WAL, shared memory, FAISS caches) are searched for the
deleted messages' distinctive words and sentences, including right after a SIGKILL.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import sgmem

from .helpers import FastEmbedder, db_path

ROOT = Path(__file__).resolve().parents[2]
EMB = FastEmbedder()


def _secret_messages(tag: str) -> tuple[list[dict[str, str]], list[str]]:
    """Two messages of two sentences each; every sentence holds a random word. Returns them and the needles."""
    words = [f"{tag}{secrets.token_hex(6)}" for _ in range(4)]
    sentences = [
        f"My locker code is {words[0]} at the gym.",
        f"The spare key hides under {words[1]} in the garden.",
        f"Tell nobody that {words[2]} is my password.",
        f"I buried {words[3]} treasure near the old oak tree.",
    ]
    msgs = [
        {"id": f"{tag}-1", "role": "user", "content": f"{sentences[0]} {sentences[1]}"},
        {"id": f"{tag}-2", "role": "assistant", "content": f"{sentences[2]} {sentences[3]}"},
    ]
    return msgs, words + sentences


def _filler(n: int, scope: str = "a") -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"Filler note {i} for {scope}: the weather was mild and dry today."}
        for i in range(n)
    ]


def leaks(store: Path, needles: list[str]) -> list[tuple[str, str]]:
    """(file, needle) for every needle found in the raw bytes of any file under ``store``."""
    found = []
    for root, _, files in os.walk(store):
        for name in files:
            data = (Path(root) / name).read_bytes()
            found += [(name, n) for n in needles if n.encode() in data]
    return found


def _prepared(path: Path, tag: str) -> tuple[sgmem.Memory, list[str]]:
    """A store whose database file and WAL both hold the secret (added, searched, checkpointed, touched again)."""
    secret, needles = _secret_messages(tag)
    with sgmem.Memory(path, embedder=EMB) as mem:
        mem.add(_filler(20), scope="a", thread="keep")
        mem.add(secret, scope="a", thread="secret")
        mem.add(_filler(3, "b"), scope="b", thread="other")
        mem.search("locker code password", scope="a")  # FAISS caches saved on close
    mem = sgmem.Memory(path, embedder=EMB)
    mem.add(_filler(2), scope="a", thread="secret")  # the pages of the thread are in the WAL again
    assert sorted({n for _, n in leaks(path, needles)}) == sorted(needles)  # the test can see them
    return mem, needles


DELETES: dict[str, Callable[[sgmem.Memory, str], object]] = {
    "thread": lambda m, t: m.delete(scope="a", thread="secret"),
    "message ids": lambda m, t: m.delete(scope="a", message_ids=[f"{t}-1", f"{t}-2"]),
    "scope": lambda m, t: m.delete(scope="a"),
    "replace thread": lambda m, t: m.replace(_filler(2), scope="a", thread="secret").replaced,
    "replace ids (reused)": lambda m, t: (
        m.replace(
            [{"id": f"{t}-1", "role": "user", "content": "Nothing to see here any more."}],
            scope="a",
            thread="secret",
            message_ids=[f"{t}-1", f"{t}-2"],
        ).replaced
    ),
}


@pytest.mark.parametrize("how", sorted(DELETES))
def test_deleted_text_is_in_no_file_when_delete_returns(tmp_path: Path, how: str) -> None:
    path = tmp_path / "store"
    tag = "zq" + secrets.token_hex(2)
    mem, needles = _prepared(path, tag)
    try:
        receipt = DELETES[how](mem, tag)
        assert isinstance(receipt, sgmem.DeleteReceipt) and receipt.messages >= 2 and receipt.scrubbed
        assert leaks(path, needles) == []
        assert mem.messages(scope="b") and not mem.search(needles[0], scope="a", mode="bm25")
    finally:
        mem.close()
    assert leaks(path, needles) == []


@pytest.mark.parametrize("torn", [".columns", ".sentences.faiss", ".json"])
def test_a_cache_save_torn_part_way_leaves_no_deleted_text(
    tmp_path: Path, torn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk (or a kill) between a cache file's write and its rename leaves the temporary file: deleting
    what it holds removes it too, before the receipt says the text is gone."""
    import errno

    from sgmem.retrieval import cachefiles

    path = tmp_path / "store"
    tag = "zt" + secrets.token_hex(2)
    secret, needles = _secret_messages(tag)
    thread = f"thread-{tag}-private"
    real = os.replace

    def full_disk(src: object, dst: object) -> None:
        if str(src).endswith(torn + ".tmp"):
            raise OSError(errno.ENOSPC, "No space left on device", str(src))
        real(src, dst)  # type: ignore[arg-type]

    with sgmem.Memory(path, embedder=EMB) as mem:
        mem.add(_filler(5), scope="a", thread="keep")
        mem.add(secret, scope="a", thread=thread)
        mem.search("locker code", scope="a")  # the index is saved at close: the save fails part-way
        monkeypatch.setattr(cachefiles.os, "replace", full_disk)
    monkeypatch.undo()
    assert list((path / "faiss").glob("*.tmp")), "the torn save left its temporary file"
    assert leaks(path, [thread]), "the test can see the thread name in it"
    with sgmem.Memory(path, embedder=EMB) as mem:
        receipt = mem.delete(scope="a")
        assert receipt.messages == 7 and receipt.scrubbed
        assert leaks(path, [*needles, thread]) == []
        assert list((path / "faiss").glob("scope-1.*")) == []  # vectors leak what was said too
    assert leaks(path, [*needles, thread]) == []


CHILD = """
import sys
sys.path.insert(0, {root!r})
import sgmem
from tests.reliability.helpers import FastEmbedder
mem = sgmem.Memory({path!r}, embedder=FastEmbedder())
r = mem.delete(scope="a", thread="secret")
print("DELETED", r.messages, r.scrubbed, flush=True)
sys.stdin.read()
"""


def test_deleted_text_is_in_no_file_after_a_sigkill_right_after_delete(tmp_path: Path) -> None:
    path = tmp_path / "store"
    mem, needles = _prepared(path, "zk" + secrets.token_hex(2))
    mem.close()
    with sgmem.Memory(path, embedder=EMB) as m:  # the secret in the WAL as well as in the database
        m.add(_filler(1), scope="a", thread="secret")
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert line.split() == ["DELETED", "5", "True"]
        assert leaks(path, needles) == []  # read before anyone opens the store again
    assert leaks(path, needles) == []


def test_a_reader_holding_an_old_snapshot_is_reported_then_scrub_finishes(tmp_path: Path) -> None:
    path = tmp_path / "store"
    mem, needles = _prepared(path, "zr" + secrets.token_hex(2))
    mem.close()
    reader = sqlite3.connect(db_path(path), isolation_level=None)
    try:
        with sgmem.Memory(path, embedder=EMB, config=sgmem.Config(busy_timeout_s=0.3)) as mem:
            mem.add(_filler(1), scope="a", thread="secret")
            reader.execute("BEGIN")
            reader.execute("SELECT COUNT(*) FROM messages").fetchone()  # holds its snapshot
            receipt = mem.delete(scope="a", thread="secret")
            assert receipt.messages == 5 and receipt.scrubbed is False
            assert leaks(path, needles)  # reported, not silently claimed
            assert mem.scrub(timeout_s=0.2) is False
            reader.execute("COMMIT")
            assert mem.scrub() is True
            assert leaks(path, needles) == []
    finally:
        reader.close()


KILLED_IN_SCRUB = """
import os, signal, sys
sys.path.insert(0, {root!r})
import sgmem
from sgmem.store.sqlite import SQLiteStore
from tests.reliability.helpers import FastEmbedder

def killed(self, timeout_s=None):  # the delete has committed; the process dies before its scrub runs
    print("COMMITTED", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

SQLiteStore.scrub = killed
mem = sgmem.Memory({path!r}, embedder=FastEmbedder())
mem.add([{{"role": "user", "content": "One more filler note."}}], scope="a", thread="secret")  # pages in the WAL
mem.delete(scope="a", thread="secret")
"""


def test_a_kill_between_the_delete_and_its_scrub_is_finished_by_the_next_writable_open(tmp_path: Path) -> None:
    """Issue 29 item 10 (docs/privacy.md says the same): a process killed after a delete
    commits but before its scrub leaves the deleted text in the store's files. A read-only open cannot
    rewrite them (the text stays there); the next writable open finishes the scrub before its constructor
    returns."""
    path = tmp_path / "store"
    mem, needles = _prepared(path, "zs" + secrets.token_hex(2))
    mem.close()
    out = subprocess.run(
        [sys.executable, "-c", KILLED_IN_SCRUB.format(root=str(ROOT), path=str(path))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.stdout.split() == ["COMMITTED"] and out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    assert leaks(path, needles)  # committed, not scrubbed
    with sgmem.Memory(path, embedder=EMB, read_only=True) as ro:
        assert ro.messages(scope="a", thread="secret") == []  # deleted for every reader
        assert leaks(path, needles)  # a read-only open cannot rewrite the files
    assert leaks(path, needles)
    with sgmem.Memory(path, embedder=EMB) as rw:
        assert leaks(path, needles) == []  # scrubbed by the open itself, before any call
        assert rw.messages(scope="a", thread="secret") == [] and rw.messages(scope="b")
    assert leaks(path, needles) == []
