"""Durable stores: reopening gives the same answers; FAISS caches are rebuilt when bad.

The cache tests use the instant fake embedder: rebuilding is embedder-agnostic,
and every search embeds its query, which is what a test's time goes on.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import sgmem

from .helpers import CAT_THREAD, DAY1, DAY2, RUN_THREAD, HashEmbedder

MODES = ["vector", "graph", "bm25", "hybrid"]
QUERIES = ["What is my cat called?", "marathon kilometres"]


def results(mem: sgmem.Memory, scope: str = "alice") -> list[Any]:
    """Every mode's hits for the test queries, as comparable tuples."""
    out = []
    for mode in MODES:
        for q in QUERIES:
            out.append(
                [
                    (h.message_ids, h.text, h.kind, h.thread, h.at, h.speaker, round(h.score, 5))
                    for h in mem.search(q, scope=scope, k=6, mode=mode)
                ]
            )
    return out


def fill(mem: sgmem.Memory) -> None:
    """Three adds, with searches in between so the index is extended in place."""
    mem.add([dict(m) for m in CAT_THREAD[:2]], scope="alice", thread="chat-1", at=DAY1)
    mem.search("cat", scope="alice")
    mem.add([dict(m) for m in CAT_THREAD[2:]], scope="alice", thread="chat-1", at=DAY1)
    mem.search("cat", scope="alice", mode="bm25")
    mem.add([dict(m) for m in RUN_THREAD], scope="alice", thread="chat-2", at=DAY2)


@pytest.fixture
def fake() -> HashEmbedder:
    return HashEmbedder(name="fake-persistence", dim=32)


@pytest.fixture
def durable(fake: HashEmbedder, store_path: Path) -> tuple[list[Any], list[Any]]:
    """A filled durable store, closed; returns (results, messages) seen before closing."""
    with sgmem.Memory(store_path, embedder=fake) as mem:
        fill(mem)
        before = results(mem)
        msgs = mem.messages(scope="alice")
    return before, msgs


def test_reopen_gives_the_same_messages_and_results(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        fill(mem)
        before = results(mem)
        msgs = mem.messages(scope="alice")
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        assert mem.messages(scope="alice") == msgs
        assert results(mem) == before
        assert mem.threads(scope="alice") == ["chat-1", "chat-2"]


def test_index_built_in_place_matches_one_built_from_scratch(fake: HashEmbedder, store_path: Path) -> None:
    """Adds extend the live index; a fresh in-memory store built in one go must agree."""
    with sgmem.Memory(store_path, embedder=fake) as mem:
        fill(mem)
        incremental = results(mem)
    shutil.rmtree(store_path / "faiss", ignore_errors=True)
    with sgmem.Memory(store_path, embedder=fake) as mem:
        assert results(mem) == incremental


def test_cache_files_are_written_on_close(store_path: Path, durable: tuple[list[Any], list[Any]]) -> None:
    files = os.listdir(store_path / "faiss")
    assert any(f.endswith(".faiss") for f in files)


def test_missing_cache_is_rebuilt(fake: HashEmbedder, store_path: Path, durable: tuple[list[Any], list[Any]]) -> None:
    before, _ = durable
    shutil.rmtree(store_path / "faiss")
    with sgmem.Memory(store_path, embedder=fake) as mem:
        assert results(mem) == before
    assert any(f.endswith(".faiss") for f in os.listdir(store_path / "faiss")), "the rebuilt cache is saved again"


@pytest.mark.parametrize("which", ["faiss", "json", "all"])
def test_corrupt_cache_is_rebuilt(
    fake: HashEmbedder, store_path: Path, durable: tuple[list[Any], list[Any]], which: str
) -> None:
    before, _ = durable
    cache = store_path / "faiss"
    for f in cache.iterdir():
        if which == "all" or f.name.endswith(f".{which}"):
            f.write_bytes(b"IxFI" + os.urandom(512) if f.name.endswith(".faiss") else b"{not json")
    with sgmem.Memory(store_path, embedder=fake) as mem:
        assert results(mem) == before


def test_truncated_cache_is_rebuilt(fake: HashEmbedder, store_path: Path, durable: tuple[list[Any], list[Any]]) -> None:
    before, _ = durable
    for f in (store_path / "faiss").glob("*.faiss"):
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])
    with sgmem.Memory(store_path, embedder=fake) as mem:
        assert results(mem) == before


def test_stale_cache_is_rebuilt(fake: HashEmbedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=fake) as mem:
        mem.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
        mem.search("cat", scope="alice")
    old_cache = store_path.parent / "old-cache"
    shutil.copytree(store_path / "faiss", old_cache)
    with sgmem.Memory(store_path, embedder=fake) as mem:
        mem.add([dict(m) for m in RUN_THREAD], scope="alice", thread="chat-2", at=DAY2)
        expected = results(mem)
    # put the older generation's files back: they no longer describe the store
    shutil.rmtree(store_path / "faiss")
    shutil.copytree(old_cache, store_path / "faiss")
    with sgmem.Memory(store_path, embedder=fake) as mem:
        assert results(mem) == expected
        top = mem.search("Berlin marathon", scope="alice", k=1, mode="bm25")[0]
        assert top.message_ids == ("r1",)


def test_cache_from_another_scope_is_not_used(fake: HashEmbedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=fake) as mem:
        mem.add([dict(m) for m in CAT_THREAD], scope="a", thread="t", at=DAY1)
        mem.add([dict(m) for m in RUN_THREAD], scope="b", thread="t", at=DAY1)
        mem.search("x", scope="a")
        mem.search("x", scope="b")
        expected = results(mem, "a")
    cache = store_path / "faiss"
    names = sorted(f.name for f in cache.iterdir())
    # swap the two scopes' cache files
    tmp = store_path / "swap"
    tmp.mkdir()
    for n in names:
        other = n.replace("scope-1", "scope-X").replace("scope-2", "scope-1").replace("scope-X", "scope-2")
        shutil.copy(cache / n, tmp / other)
    shutil.rmtree(cache)
    tmp.rename(cache)
    with sgmem.Memory(store_path, embedder=fake) as mem:
        assert results(mem, "a") == expected


def test_a_write_by_another_instance_is_seen(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as reader:
        reader.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
        assert reader.search("Berlin marathon", scope="alice", k=1, mode="bm25") == []
        with sgmem.Memory(store_path, embedder=embedder) as writer:
            writer.add([dict(m) for m in RUN_THREAD], scope="alice", thread="chat-2", at=DAY2)
        for mode in MODES:
            assert reader.search("Berlin marathon", scope="alice", k=1, mode=mode)[0].message_ids == ("r1",)
