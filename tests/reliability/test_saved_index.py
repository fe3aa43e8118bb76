"""A scope's index is saved beside the database and mapped when the store is reopened, never trusted stale.

Reopening answers exactly as before and reads no row of the scope from SQLite;
files left from before later writes (a writer killed before it saved), from
another history of the database (a restored backup written again), rewritten
or cut short, or copied from another store, are each caught by one check of
their own (:mod:`sgmem.retrieval.cachefiles`) and the index is rebuilt from
SQLite: nothing deleted or foreign is ever returned.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sgmem
from sgmem.retrieval.index import ScopeIndex

from .crash_writer import SCOPES, batch, scope_of
from .helpers import FastEmbedder

BATCH = 5
HNSW = sgmem.Config(graph=sgmem.GraphConfig(knn_index="hnsw"))
QUERIES = ["where did the trip go", "Lake Topic3 item 2", "numbers and dates", "tok5x message"]
MODES = ("vector", "graph", "hybrid", "pyramid")


def _fill(mem: sgmem.Memory, batches: range) -> None:
    for b in batches:
        mem.add(batch(b, BATCH), scope=scope_of(b), thread=f"thread-{b % 3}")


def _answers(mem: sgmem.Memory) -> list[tuple[str, ...]]:
    return [
        tuple(i for h in mem.search(q, scope=s, k=8, mode=mode) for i in h.message_ids)
        for q in QUERIES
        for s in SCOPES
        for mode in MODES
    ]


@pytest.fixture
def rows_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Turn rows read from SQLite into an index (the rebuild; a mapped index reads none)."""
    calls: list[int] = []
    real = ScopeIndex._append_turn_columns

    def counted(self: ScopeIndex, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ScopeIndex, "_append_turn_columns", counted)
    return calls


def _reopened(store: Path, emb: FastEmbedder, rows_read: list[int]) -> tuple[list[tuple[str, ...]], bool]:
    """Answers of a fresh Memory on ``store``, and whether it rebuilt an index from SQLite."""
    rows_read.clear()
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        got = _answers(mem)
    return got, bool(rows_read)


def _rebuilt_answers(store: Path, emb: FastEmbedder, tmp: Path) -> list[tuple[str, ...]]:
    """What the store answers with no cache files at all (from a copy: the store's own files stay)."""
    copy = tmp / "no-cache"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "faiss")
    with sgmem.Memory(copy, embedder=emb, config=HNSW) as mem:
        return _answers(mem)


def test_a_reopened_store_answers_as_before_without_reading_its_rows(tmp_path: Path, rows_read: list[int]) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(12))
        before = _answers(mem)
    got, rebuilt = _reopened(store, emb, rows_read)  # the first reopening saves what the queries loaded
    assert got == before and not rebuilt
    got, rebuilt = _reopened(store, emb, rows_read)
    assert got == before and not rebuilt
    # adds to a reopened store (its vectors mapped from the file until then) and reopening again
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _answers(mem)
        _fill(mem, range(12, 18))
        extended = _answers(mem)
        for s in SCOPES:
            idx = mem._index(mem._store.require_scope(s))
            assert idx.ann is not None and idx.ann.ntotal == idx.n_sentences
    assert extended == _rebuilt_answers(store, emb, tmp_path)
    got, rebuilt = _reopened(store, emb, rows_read)
    assert got == extended and not rebuilt


def test_a_read_only_memory_maps_the_saved_index_and_never_writes_it(tmp_path: Path, rows_read: list[int]) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(12))
        before = _answers(mem)
    files = {p.name: p.stat().st_mtime_ns for p in (store / "faiss").iterdir()}
    rows_read.clear()
    with sgmem.Memory(store, embedder=emb, config=HNSW, read_only=True) as mem:
        assert _answers(mem) == before
    assert not rows_read
    assert {p.name: p.stat().st_mtime_ns for p in (store / "faiss").iterdir()} == files


def test_the_cache_files_are_the_owners_alone(tmp_path: Path) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8))
        _answers(mem)
    cache = store / "faiss"
    names = sorted(p.name for p in cache.iterdir())
    assert {n.rsplit(".", 1)[-1] for n in names} >= {"columns", "faiss", "json"}, names
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    for p in cache.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p.name


def _unstamped(store: Path) -> None:
    """The store as an sgmem from before stamps (schema 10) leaves it: every scope's stamp 0, and a write by
    such a process (one still running beside an upgraded one) draws none."""
    db = sqlite3.connect(store / "sgmem.db")
    db.execute("UPDATE scopes SET stamp = 0")
    db.commit()
    db.close()


def test_files_from_before_another_writer_deleted_rows_are_not_used(tmp_path: Path, rows_read: list[int]) -> None:
    """Caught by the generation: the rows the files hold at the probes are all still stored, and the writer, an
    sgmem from before stamps, drew no new stamp."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(12))
    _unstamped(store)
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _answers(mem)  # loaded: saved at close, with stamp 0
    shutil.copytree(store / "faiss", tmp_path / "old")
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:  # another writer, killed before its save
        receipt = mem.delete(scope=SCOPES[0], message_ids=["b000004-m1", "b000004-m2"])
        assert receipt.messages == 2
    _unstamped(store)
    shutil.rmtree(store / "faiss")
    shutil.copytree(tmp_path / "old", store / "faiss", copy_function=shutil.copy2)
    _restore_signatures(store / "faiss")  # the same files as saved, as if never copied
    got, rebuilt = _reopened(store, emb, rows_read)
    assert not {"b000004-m1", "b000004-m2"} & {i for hits in got for i in hits}
    assert got == _rebuilt_answers(store, emb, tmp_path)
    assert rebuilt


def test_files_from_another_history_of_the_database_are_not_used(tmp_path: Path, rows_read: list[int]) -> None:
    """A backup restored and written again up to the same generation: caught by the stamp of that write."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8))
    shutil.copy2(store / "sgmem.db", tmp_path / "backup.db")
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(8, 12))
        _answers(mem)
    (store / "sgmem.db").unlink()
    for extra in ("sgmem.db-wal", "sgmem.db-shm"):
        (store / extra).unlink(missing_ok=True)
    shutil.copy2(tmp_path / "backup.db", store / "sgmem.db")
    saved = tmp_path / "saved"
    shutil.copytree(store / "faiss", saved, copy_function=shutil.copy2)
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:  # the same number of writes, other messages
        for b in range(8, 12):
            mem.add(batch(b + 100, BATCH), scope=scope_of(b), thread=f"thread-{b % 3}")
    shutil.rmtree(store / "faiss")
    shutil.copytree(saved, store / "faiss", copy_function=shutil.copy2)
    _restore_signatures(store / "faiss")
    meta = json.loads((store / "faiss" / "scope-1.json").read_text())
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        assert mem._store.generation(1) == meta["generation"]  # the generation alone cannot tell them apart
    got, rebuilt = _reopened(store, emb, rows_read)
    assert rebuilt
    assert not any(i.startswith(("b000008", "b000009", "b000010", "b000011")) for hits in got for i in hits)
    assert got == _rebuilt_answers(store, emb, tmp_path)


def _diary(city: str) -> list[dict[str, Any]]:
    """A thread of 21 turns; turn 6, neither the first, the middle nor the last, names ``city``."""
    at = "2024-03-01T09:00:00Z"
    notes = [{"id": f"d{i}", "role": "user", "content": f"Diary note {i}: the garden needed water.", "at": at}
             for i in range(21)]  # fmt: skip
    notes[6] = {"id": "d6", "role": "user", "content": f"I moved to {city} last spring.", "at": at}
    return notes


def _restore_db(store: Path, backup: Path) -> None:
    for extra in ("sgmem.db-wal", "sgmem.db-shm"):
        (store / extra).unlink(missing_ok=True)
    shutil.copy2(backup, store / "sgmem.db")


def test_a_restored_backup_written_again_with_one_middle_turn_changed_is_not_served_stale(
    tmp_path: Path, rows_read: list[int]
) -> None:
    """The same thread written again after a restore, one turn no probe row reads changed to a text of the
    same size: dates, ids, generation and row counts all equal the saved files'."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        mem.add(batch(0, BATCH), scope="u", thread="intro")
    shutil.copy2(store / "sgmem.db", tmp_path / "backup.db")
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        mem.add(_diary("Paris"), scope="u", thread="diary")
        assert mem.search("I moved to Paris", scope="u", k=1)[0].message_ids == ("d6",)
    saved = tmp_path / "saved"
    shutil.copytree(store / "faiss", saved, copy_function=shutil.copy2)
    _restore_db(store, tmp_path / "backup.db")
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:  # the diary again, turn 6 rewritten
        mem.add(_diary("Milan"), scope="u", thread="diary")
    shutil.rmtree(store / "faiss")  # the files of before the restore, as a writer killed before its save left them
    shutil.copytree(saved, store / "faiss", copy_function=shutil.copy2)
    _restore_signatures(store / "faiss")
    meta = json.loads((store / "faiss" / "scope-1.json").read_text())
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        assert mem._store.generation(1) == meta["generation"]
        assert mem.stats("u").scopes[0].messages == meta["n_turns"]
    rows_read.clear()
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        got = _paris(mem)
    rebuilt = bool(rows_read)
    copy = tmp_path / "no-cache"
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "faiss")
    with sgmem.Memory(copy, embedder=emb, config=HNSW) as mem:
        # the Milan turn at the Milan text's own relevance (stale, its Paris vector gave it 0.756)
        assert got == _paris(mem)
    assert rebuilt


def _paris(mem: sgmem.Memory) -> list[tuple[Any, ...]]:
    hits = mem.search("I moved to Paris", scope="u", k=5, min_score=0)
    return [(h.message_ids, h.text, round(h.score, 6), round(h.relevance, 6)) for h in hits]


def test_files_written_by_another_sgmem_version_are_not_used(tmp_path: Path, rows_read: list[int]) -> None:
    """Persisted files record the library's version; another version's files are rebuilt, never read as ours."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(6))
        before = _answers(mem)
    for meta_path in (store / "faiss").glob("scope-*.json"):
        meta = json.loads(meta_path.read_text())
        meta["library"] = "0.0.1"  # everything else as saved
        meta_path.write_text(json.dumps(meta))
    got, rebuilt = _reopened(store, emb, rows_read)
    assert rebuilt and got == before


#: a dog's chat whose two replies say nothing in words no rule lists (the classifier reads them as non-answers,
#: the word rules as statements); the first, middle and last sentences (the probe rows) read alike for both
PUPPY = [
    {"id": "p0", "role": "user", "content": "We adopted a puppy called Biscuit last spring."},
    {"id": "p1", "role": "assistant", "content": "What breed is Biscuit?"},
    {"id": "p2", "role": "user", "content": "I couldn't tell you, it's been ages."},
    {"id": "p3", "role": "assistant", "content": "Does Biscuit like walks?"},
    {"id": "p4", "role": "user", "content": "Biscuit loves long walks by the river."},
    {"id": "p5", "role": "assistant", "content": "Hmm, I'd have to check my notes on that."},
    {"id": "p6", "role": "user", "content": "My sister lives in Lisbon."},
]


def _breed(mem: sgmem.Memory) -> list[tuple[Any, ...]]:
    hits = mem.search("What breed is Biscuit?", scope="u", k=7, min_score=0)
    return [(h.message_ids, round(h.score, 6), round(h.relevance, 6)) for h in hits]


def test_files_saved_under_another_act_classifier_are_not_used(
    tmp_path: Path, rows_read: list[int], embedder: sgmem.Embedder
) -> None:
    """Switching ``Config.acts`` reads every sentence's act anew and stores it; files of the former
    classifier's acts, left by a process killed before its save, would rank by the old acts."""
    rules, model = sgmem.Config(acts="rules"), sgmem.Config(acts="model")
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=embedder, config=rules) as mem:
        mem.add(PUPPY, scope="u", thread="t", at="2024-03-01T10:00:00Z")
        _breed(mem)  # loaded: saved at close with the rules' acts
    saved = tmp_path / "saved"
    shutil.copytree(store / "faiss", saved, copy_function=shutil.copy2)
    with sgmem.Memory(store, embedder=embedder, config=model) as mem:
        _breed(mem)  # the classifier reads and stores every act (no write: the generation is the same)
    shutil.rmtree(store / "faiss")
    shutil.copytree(saved, store / "faiss", copy_function=shutil.copy2)
    _restore_signatures(store / "faiss")
    rows_read.clear()
    with sgmem.Memory(store, embedder=embedder, config=model) as mem:
        got = _breed(mem)
    rebuilt = bool(rows_read)
    copy = tmp_path / "no-cache"
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "faiss")
    with sgmem.Memory(copy, embedder=embedder, config=model) as mem:
        assert got == _breed(mem)
    assert rebuilt


def _pre_stamp_store(path: Path, emb: FastEmbedder, texts: list[str], ids: str) -> None:
    """A store of one thread whose scope was last written before stamps existed (stamp 0), index files saved."""
    at = "2024-03-01T10:00:00Z"
    with sgmem.Memory(path, embedder=emb) as mem:
        mem.add(
            [{"id": f"{ids}{i}", "role": "user", "content": t, "at": at} for i, t in enumerate(texts)],
            scope="u",
            thread="t",
        )
    _unstamped(path)
    with sgmem.Memory(path, embedder=emb) as mem:
        mem.search("anything", scope="u")  # the index loaded: saved at close, with stamp 0


MINE = ["I grow tomatoes on the balcony.", "The tomatoes need water daily.", "My balcony faces south."]


@pytest.mark.parametrize(
    ("theirs", "ids"),
    [
        # the probe rows' ids, dates, owners and acts are the same: their vectors tell the stores apart
        (["We sail to Corsica in August.", "The boat sleeps six people.", "Corsica has great beaches."], "m"),
        # the same texts under other ids (the chat imported by another tool): the probe rows' ids do
        (MINE, "imported-"),
    ],
    ids=["other texts", "other ids"],
)
def test_files_of_another_store_of_the_same_shape_are_not_used(
    tmp_path: Path, rows_read: list[int], theirs: list[str], ids: str
) -> None:
    """Stores whose scopes were not written since stamps were added (both 0): the probe rows tell them apart."""
    emb = FastEmbedder()
    store, other = tmp_path / "store", tmp_path / "other"
    _pre_stamp_store(store, emb, MINE, "m")
    _pre_stamp_store(other, emb, theirs, ids)
    shutil.rmtree(store / "faiss")
    shutil.copytree(other / "faiss", store / "faiss")
    _restore_signatures(store / "faiss")
    query = "Where do we sail in August?"
    rows_read.clear()
    with sgmem.Memory(store, embedder=emb) as mem:
        got = [(h.message_ids, round(h.score, 6)) for h in mem.search(query, scope="u", k=3)]
    rebuilt = bool(rows_read)
    copy = tmp_path / "no-cache"
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "faiss")
    with sgmem.Memory(copy, embedder=emb) as mem:
        want = [(h.message_ids, round(h.score, 6)) for h in mem.search(query, scope="u", k=3)]
    assert got == want and rebuilt


@pytest.mark.parametrize("how", ["rewritten", "truncated", "other-store"])
def test_changed_or_foreign_files_are_not_used(tmp_path: Path, rows_read: list[int], how: str) -> None:
    """A vector rewritten at a row no probe reads (caught by the file's signature), a file cut short (its size),
    the files of another store with the same scopes, generations and row counts (the probe rows)."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=HNSW) as mem:
        _fill(mem, range(12))
        _answers(mem)
    got, rebuilt = _reopened(store, emb, rows_read)
    assert not rebuilt  # trusted as saved
    cache = store / "faiss"
    if how == "other-store":
        other = tmp_path / "other"
        with sgmem.Memory(other, embedder=emb, config=HNSW) as mem:
            _fill(mem, range(100, 112))  # other messages, the same shape
            _answers(mem)
        shutil.rmtree(cache)
        shutil.copytree(other / "faiss", cache)
        _restore_signatures(cache)  # as if in place: only the probe rows tell the stores apart
    elif how == "truncated":
        f = cache / "scope-1.columns"
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    else:
        f = cache / "scope-1.sentences.faiss"
        data = bytearray(f.read_bytes())
        dim = emb.dim
        row1 = len(data) - (_rows(store) - 1) * dim * 4  # the flat index's vectors end the file
        data[row1 : row1 + dim * 4] = np.roll(np.frombuffer(data[row1 : row1 + dim * 4], np.float32), 1).tobytes()
        st = f.stat()
        f.write_bytes(bytes(data))
        # a rewrite moves the modification time; a coarse clock could leave it equal within a few ms
        os.utime(f, ns=(st.st_atime_ns, max(f.stat().st_mtime_ns, st.st_mtime_ns + 1_000_000)))
    got, rebuilt = _reopened(store, emb, rows_read)
    assert rebuilt
    if how == "other-store":
        assert not any(i.startswith("b0001") for hits in got for i in hits)
    assert got == _rebuilt_answers(store, emb, tmp_path)


def _rows(store: Path) -> int:
    return int(json.loads((store / "faiss" / "scope-1.json").read_text())["n_sentences"])


def _restore_signatures(cache: Path) -> None:
    """Record the copied files' signatures in their metadata: files that are exactly the ones saved, so that
    only the check a test is about can reject them."""
    for meta_path in cache.glob("scope-*.json"):
        meta = json.loads(meta_path.read_text())
        stem = str(meta_path)[: -len(".json")]
        suffix = {"sentences": ".sentences.faiss", "ann": ".ann.faiss", "columns": ".columns"}
        for name in meta["files"]:
            st = os.stat(stem + suffix[name])
            meta["files"][name] = [st.st_size, st.st_mtime_ns, st.st_ino]
        meta_path.write_text(json.dumps(meta))
