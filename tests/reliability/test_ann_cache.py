"""The approximate-kNN (HNSW) index of a scope is a cache: saved beside the FAISS files,
trusted only when intact and current, rebuilt from the vectors otherwise."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import sgmem
from sgmem.retrieval.index import load_scope_index
from sgmem.store.sqlite import SQLiteStore

from .crash_writer import SCOPES, batch, scope_of
from .helpers import FastEmbedder

BATCH = 5
HNSW = sgmem.Config(graph=sgmem.GraphConfig(knn_index="hnsw"))
QUERIES = ["where did the trip go", "the cat and the dog", "numbers and dates"]


def _fill(mem: sgmem.Memory, batches: range) -> None:
    for b in batches:
        mem.add(batch(b, BATCH), scope=scope_of(b), thread=f"thread-{b % 3}")


def _answers(mem: sgmem.Memory) -> list[tuple[str, ...]]:
    return [
        tuple(i for h in mem.search(q, scope=s, k=8, mode=mode) for i in h.message_ids)
        for q in QUERIES
        for s in SCOPES
        for mode in ("graph", "hybrid")
    ]


def _loaded_ann(store_dir: Path, dim: int) -> dict[int, int | None]:
    """Per scope: the row count of the HNSW index loaded from the cache (None: not trusted)."""
    store = SQLiteStore(store_dir)
    try:
        out = {}
        for (sid,) in store.conn.execute("SELECT id FROM scopes").fetchall():
            idx = load_scope_index(store, int(sid), dim, store_dir / "faiss")
            out[int(sid)] = None if idx.ann is None else idx.ann.ntotal
            if idx.ann is not None:
                assert idx.ann.ntotal == idx.n_sentences
        return out
    finally:
        store.close()


def test_the_hnsw_index_is_saved_and_reused(tmp_path: Path) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(12))
    assert list((store / "faiss").glob("scope-*.ann.faiss")), "no HNSW cache file was written"
    loaded = _loaded_ann(store, emb.dim)
    assert loaded and all(n for n in loaded.values()), loaded


@pytest.mark.parametrize("how", ["garbage", "truncated", "empty", "missing", "flipped", "flipped in place"])
def test_a_damaged_hnsw_cache_is_ignored_and_rebuilt(tmp_path: Path, how: str) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(12))
        expected = _answers(mem)
    for f in (store / "faiss").glob("scope-*.ann.faiss"):
        data = f.read_bytes()
        if how == "garbage":
            f.write_bytes(os.urandom(len(data)))
        elif how == "truncated":
            f.write_bytes(data[: len(data) // 2])
        elif how == "empty":
            f.write_bytes(b"")
        elif how == "missing":
            f.unlink()
        elif how == "flipped":
            arr = bytearray(data)  # one code byte changed: same size, loads fine, wrong content
            arr[-8] ^= 0x40
            f.write_bytes(bytes(arr))
        else:  # the same, written into the same file with its modification time set back: only its digest tells
            st = f.stat()
            with open(f, "r+b") as fh:
                fh.seek(len(data) - 8)
                fh.write(bytes([data[-8] ^ 0x40]))
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert all(n is None for n in _loaded_ann(store, emb.dim).values()), "a damaged HNSW file was trusted"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        assert _answers(mem) == expected  # edges live in SQLite: answers never depend on the cache
        _fill(mem, range(12, 18))  # the next add rebuilds the index over every sentence
        for s in SCOPES:
            idx = mem._index(mem._store.require_scope(s))
            assert idx.ann is not None and idx.ann.ntotal == idx.n_sentences
    assert all(n for n in _loaded_ann(store, emb.dim).values()), "the rebuilt HNSW index was not saved again"


def test_an_hnsw_cache_from_an_earlier_save_is_not_used(tmp_path: Path) -> None:
    """Torn between two saves: the newer metadata beside the older HNSW file."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8))
    old = {p.name: p.read_bytes() for p in (store / "faiss").glob("*.ann.faiss")}
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8, 16))
    for name, data in old.items():
        (store / "faiss" / name).write_bytes(data)
    assert all(n is None for n in _loaded_ann(store, emb.dim).values()), "a stale HNSW file was trusted"


def test_a_whole_cache_directory_from_before_later_writes_is_not_used(tmp_path: Path) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8))
    shutil.copytree(store / "faiss", tmp_path / "old")
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8, 16))
        expected = _answers(mem)
    shutil.rmtree(store / "faiss")
    shutil.copytree(tmp_path / "old", store / "faiss")
    assert all(n is None for n in _loaded_ann(store, emb.dim).values())
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        assert _answers(mem) == expected
