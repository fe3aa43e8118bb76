"""Deleted turns never come back through search, whatever index copy a Memory keeps.

A durable store keeps each scope's vectors in FAISS cache files next to
SQLite and in a per-Memory in-memory index. A delete that left either in
place would return the deleted turn (or, with rows shifted, the wrong text for
the remaining ones) — observed here through search results only.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import sgmem

from .test_ranking_channels import SCOPE, add_all, load

GONE = "s2:14"  # "Yes, the reference number is KX-4471, not that I expect much."
KEPT = ["s1:9", "s4:12", "s6:14"]  # turns after GONE in the store's row order, and one before


def texts() -> dict[str, str]:
    return {t["id"]: t["text"] for s in load()["sessions"] for t in s["turns"]}


def top(mem: sgmem.Memory, query: str, mode: str, k: int = 5) -> list[tuple[str, str]]:
    return [(h.message_ids[0], h.text) for h in mem.search(query, scope=SCOPE, k=k, mode=mode)]


def check(mem: sgmem.Memory) -> None:
    by_id = texts()
    for mode in ("vector", "hybrid", "bm25"):
        found = top(mem, by_id[GONE], mode, k=20)
        assert GONE not in [i for i, _ in found], f"{mode}: the deleted turn came back"
        assert by_id[GONE] not in [t for _, t in found]
    for mode in ("vector", "hybrid"):
        for mid in KEPT:
            best_id, best_text = top(mem, by_id[mid], mode, k=1)[0]
            assert (best_id, best_text) == (mid, by_id[mid]), f"{mode}: searching turn {mid}'s own text"


@pytest.fixture(scope="module")
def template(embedder: sgmem.Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store whose index was built, searched and saved to its cache files."""
    path = tmp_path_factory.mktemp("deleted") / "store"
    with sgmem.Memory(path, embedder=embedder) as mem:
        add_all(mem)
        for mode in ("vector", "hybrid"):
            assert top(mem, texts()[GONE], mode, k=1)[0][0] == GONE  # the index is built and warm
    assert any((path / "faiss").iterdir()), "the cache files this test is about were not written"
    yield path


@pytest.fixture
def durable(template: Path, tmp_path: Path) -> Path:
    """A copy of the template store for one test."""
    return Path(shutil.copytree(template, tmp_path / "store"))


def test_delete_then_reopen(durable: Path, embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(durable, embedder=embedder) as mem:
        top(mem, "warm the index", "hybrid")
        assert mem.delete(scope=SCOPE, message_ids=[GONE]).messages == 1
    with sgmem.Memory(durable, embedder=embedder) as mem:
        check(mem)


def test_delete_seen_by_the_same_memory(durable: Path, embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(durable, embedder=embedder) as mem:
        top(mem, "warm the index", "hybrid")
        mem.delete(scope=SCOPE, message_ids=[GONE])
        check(mem)


def test_delete_seen_by_another_memory_on_the_same_store(durable: Path, embedder: sgmem.Embedder) -> None:
    """A second Memory (another process, say) had the index loaded before the delete."""
    with sgmem.Memory(durable, embedder=embedder) as reader, sgmem.Memory(durable, embedder=embedder) as writer:
        top(reader, "warm the index", "hybrid")
        writer.delete(scope=SCOPE, message_ids=[GONE])
        check(reader)
