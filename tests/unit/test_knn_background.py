"""An add's kNN search and HNSW insertion on the write path's worker thread (``GraphConfig.knn_background``).

What a user would notice if it went wrong: other similarity edges, another
graph (other search results), an index that holds the rows of an add that
failed (a search returning sentences that are not stored, or a crash at the
next add), or the embedder called several times for one add.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sgmem
from sgmem.errors import StoreError
from sgmem.retrieval.ann import AnnIndex

from .helpers import HashEmbedder
from .helpers import topic_sessions as _sessions

DIM = 16


def _config(background: bool) -> sgmem.Config:
    # HNSW edges from the first sentence: the path that scopes past knn_ann_min_sentences take
    return sgmem.Config(graph=sgmem.GraphConfig(knn_index="hnsw", knn_background=background))


def _edges(path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(path / "sgmem.db")
    try:
        return con.execute("SELECT src, dst, weight FROM sentence_edges ORDER BY src, dst").fetchall()
    finally:
        con.close()


def _fill(path: Path, background: bool, sessions: list[list[dict[str, Any]]]) -> tuple[Any, ...]:
    with sgmem.Memory(path, embedder=HashEmbedder(dim=DIM), config=_config(background)) as mem:
        for i, msgs in enumerate(sessions):
            mem.add(msgs, scope="u", thread=f"t{i % 3}")
        idx = next(iter(mem._indexes.values()))
        links = bytes(idx.ann.serialize())
        hits = [
            [(h.message_ids, round(h.score, 6)) for h in mem.search(q, scope="u", k=8)]
            for q in ("the cat and the tuna", "Berlin marathon", "piano recipe river")
        ]
    return links, hits


def test_background_knn_stores_the_same_edges_and_builds_the_same_graph(tmp_path: Path) -> None:
    sessions = _sessions(10)
    links_bg, hits_bg = _fill(tmp_path / "bg", True, sessions)
    links_in, hits_in = _fill(tmp_path / "inline", False, sessions)
    assert _edges(tmp_path / "bg") == _edges(tmp_path / "inline")
    assert len(_edges(tmp_path / "bg")) > 200
    assert links_bg == links_in  # same rows linked in the same order: the HNSW graph is byte for byte the same
    assert hits_bg == hits_in


def _failing_write(orig: Any) -> Any:
    """A write transaction that fails after its body ran (as a commit hitting a full disk would)."""

    @contextlib.contextmanager
    def write(*a: Any, **k: Any):  # type: ignore[no-untyped-def]
        with orig(*a, **k) as conn:
            yield conn
            raise StoreError("simulated failure at commit")

    return write


def _boom(*a: Any, **k: Any) -> Any:
    """The derived memory's apply failing inside the transaction, after the sentences went in and the linking began."""
    raise RuntimeError("simulated failure inside the transaction")


@pytest.mark.parametrize("where", ["apply", "commit"])
def test_a_failed_add_leaves_no_linked_rows_behind(tmp_path: Path, where: str, monkeypatch: Any) -> None:
    sessions = _sessions(8, seed=1)
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        for msgs in sessions[:5]:
            mem.add(msgs, scope="u", thread="t")
        n_before = mem.stats().sentences
        with monkeypatch.context() as mp, pytest.raises((StoreError, RuntimeError), match="simulated failure"):
            if where == "commit":
                mp.setattr(mem._store, "write", _failing_write(mem._store.write))
            else:
                mp.setattr(mem._derived, "apply", _boom)
            mem.add(sessions[5], scope="u", thread="t")
        assert mem.stats().sentences == n_before
        # the index the next operations use holds exactly the stored rows, and keeps working
        for msgs in sessions[6:]:
            mem.add(msgs, scope="u", thread="t")
        idx = next(iter(mem._indexes.values()))
        stored = mem.stats().sentences
        assert idx.n_sentences == idx.ann.ntotal == idx.sent_index.ntotal == stored
        got = [(h.message_ids, round(h.score, 6)) for h in mem.search("the cat and the tuna", scope="u", k=10)]
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        fresh = [(h.message_ids, round(h.score, 6)) for h in mem.search("the cat and the tuna", scope="u", k=10)]
    assert got == fresh


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_a_split_hnsw_search_finds_what_one_search_finds(threads: int) -> None:
    rng = np.random.default_rng(threads)
    vecs = rng.standard_normal((3000, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ann = AnnIndex(DIM, 16, 40, 48)
    ann.extend(vecs[:2900])
    queries = vecs[2900:2970]
    one = ann.candidates(queries, 12, threads=1)
    split = ann.candidates(queries, 12, threads=threads)
    assert split.shape == one.shape == (70, 12)
    np.testing.assert_array_equal(split, one)


class _FailingHere:
    """An HNSW index stand-in whose search fails on the calling thread and is slow on the others."""

    def __init__(self, inner: Any, caller: Any) -> None:
        self.inner, self.caller = inner, caller
        self.running = 0
        self.finished = 0
        self.ntotal = inner.ntotal

    def search(self, q: np.ndarray, k: int) -> Any:
        import threading
        import time

        if threading.current_thread() is self.caller:
            raise RuntimeError("search failed")
        self.running += 1
        time.sleep(0.2)
        self.running -= 1
        self.finished += 1
        return self.inner.search(q, k)


def test_a_split_search_that_fails_waits_for_its_other_parts() -> None:
    """The parts read the vector storage in place: when one fails, none may still be running once the
    error reaches the caller (an append could reallocate the storage under it)."""
    import threading

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((600, DIM)).astype(np.float32)
    ann = AnnIndex(DIM, 16, 40, 48)
    ann.extend(vecs[:500])
    stand_in = _FailingHere(ann.index, threading.current_thread())
    ann.index = stand_in
    with pytest.raises(RuntimeError, match="search failed"):
        ann.candidates(vecs[500:540], 6, threads=4)
    assert stand_in.running == 0 and stand_in.finished == 3


def test_the_early_search_is_split_over_the_scan_threads_but_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a many-core host the early kNN search uses the scan threads but one (the adding thread keeps a
    core for its plans); the edges are those of one inline search. With one or two scan threads it is one."""
    import threading

    seen: list[tuple[int, str]] = []
    real = AnnIndex.candidates

    def candidates(self: AnnIndex, queries: np.ndarray, k: int, threads: int = 1) -> np.ndarray:
        seen.append((threads, threading.current_thread().name))
        return real(self, queries, k, threads)

    monkeypatch.setattr(AnnIndex, "candidates", candidates)
    sessions = _sessions(5, per=16, seed=4)
    for scan, early_threads, want in ((4, None, 3), (2, None, 1), (4, 2, 2)):
        cfg = sgmem.Config(
            dense_scan_threads=scan,
            dense_scan_min_sentences=0,
            graph=sgmem.GraphConfig(
                knn_index="hnsw", knn_background=True, knn_early=True, knn_early_threads=early_threads
            ),
        )
        seen.clear()
        with sgmem.Memory(tmp_path / f"early{scan}{want}", embedder=HashEmbedder(dim=DIM), config=cfg) as mem:
            for msgs in sessions:
                mem.add(msgs, scope="u", thread="t")
        early = [t for t, name in seen if name.startswith("sgmem-knn")]
        assert early and set(early) == {want}
    with sgmem.Memory(tmp_path / "inline", embedder=HashEmbedder(dim=DIM), config=_config(False)) as mem:
        for msgs in sessions:
            mem.add(msgs, scope="u", thread="t")
    inline = _edges(tmp_path / "inline")
    assert _edges(tmp_path / "early43") == _edges(tmp_path / "early21") == _edges(tmp_path / "early42") == inline


def test_an_add_sends_its_new_texts_to_the_embedder_in_one_call(tmp_path: Path) -> None:
    emb = HashEmbedder(dim=DIM)
    msgs = _sessions(1, per=60, seed=3)[0]  # 120 sentences, ~ a LoCoMo session
    with sgmem.Memory(tmp_path / "m", embedder=emb) as mem:
        res = mem.add(msgs, scope="u", thread="t")
    assert res.embedded > 64
    assert len(emb.calls) == 1  # a GPU pays its per-call overhead once; the embedder sorts the texts by length
    emb2 = HashEmbedder(dim=DIM)
    with sgmem.Memory(tmp_path / "m2", embedder=emb2, config=sgmem.Config(embed_batch_size=32)) as mem:
        res2 = mem.add(msgs, scope="u", thread="t")
    assert [len(c) for c in emb2.calls] == [32] * (res2.embedded // 32) + (
        [res2.embedded % 32] if res2.embedded % 32 else []
    )


def _child(path: str) -> None:
    with sgmem.Memory(path, embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        for msgs in _sessions(3, seed=5):
            mem.add(msgs, scope="u", thread="t")
        assert mem.search("the cat and the tuna", scope="u", k=5)


def test_a_forked_child_adds_and_searches_with_threads_of_its_own(tmp_path: Path) -> None:
    """The worker thread and the scan pool are the parent's: a child forked after they started (a
    pre-forking server, multiprocessing's fork start) must start its own, not queue work that never runs."""
    import multiprocessing

    from sgmem.retrieval.dense import scan_pool

    with sgmem.Memory(tmp_path / "parent", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        mem.add(_sessions(1)[0], scope="u", thread="t")  # starts the write path's worker
    scan_pool(2).submit(int).result()  # and the scan pool
    proc = multiprocessing.get_context("fork").Process(target=_child, args=(str(tmp_path / "child"),))
    proc.start()
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        proc.join()
        pytest.fail("the forked child hung: it queued work to threads it does not have")
    assert proc.exitcode == 0


# ---------------------------------------------------------------- the insertion after the add returns
def _hits(mem: sgmem.Memory, q: str = "the cat and the tuna", k: int = 10) -> list[tuple[Any, ...]]:
    return [(h.message_ids, round(h.score, 6)) for h in mem.search(q, scope="u", k=k)]


def test_an_add_returns_before_its_hnsw_insertion_ends_and_the_next_read_waits_for_it(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The insertion overlaps what the caller does next (a GPU embeds the next add meanwhile); a search
    issued while it runs waits for it and sees the new rows, and the index then holds every stored row."""
    import threading

    sessions = _sessions(6, seed=7)
    release, started = threading.Event(), threading.Event()
    orig = AnnIndex.add_rows
    held: list[bool] = []

    def slow_add_rows(self: AnnIndex, vecs: np.ndarray) -> None:
        if held == [True]:  # the insertion of the add under test only
            started.set()
            assert release.wait(30), "the add waited for its insertion before returning"
        orig(self, vecs)

    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        for msgs in sessions[:4]:
            mem.add(msgs, scope="u", thread="t")
        monkeypatch.setattr(AnnIndex, "add_rows", slow_add_rows)
        held.append(True)
        res = mem.add(sessions[4], scope="u", thread="t")  # returns although the insertion is blocked
        assert started.wait(10) and not release.is_set()
        held[0] = False
        threading.Timer(0.2, release.set).start()
        got = _hits(mem, "Then the cat came up again", k=50)  # waits for the insertion, then searches
        assert release.is_set()
        assert set(res.message_ids) & {i for ids, _ in got for i in ids}, "the new rows are searched"
        idx = next(iter(mem._indexes.values()))
        assert idx.n_sentences == idx.ann.ntotal == idx.sent_index.ntotal == mem.stats().sentences
        mem.add(sessions[5], scope="u", thread="t")
        got = _hits(mem)
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        assert _hits(mem) == got


def test_a_search_of_another_scope_does_not_wait_for_an_insertion(tmp_path: Path, monkeypatch: Any) -> None:
    """Many users, one Memory: an add's insertion still running for one scope delays no other scope's
    search; the scope's own next read still waits for it."""
    import threading

    sessions = _sessions(5, seed=11)
    release, started = threading.Event(), threading.Event()
    orig = AnnIndex.add_rows
    held: list[bool] = []
    released_in_time: list[bool] = []

    def slow_add_rows(self: AnnIndex, vecs: np.ndarray) -> None:
        if held == [True]:
            started.set()
            released_in_time.append(release.wait(5))  # not released in time: the search waited for it
        orig(self, vecs)

    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        for msgs in sessions[:3]:
            mem.add(msgs, scope="u", thread="t")
        mem.add(sessions[4], scope="other", thread="t")
        before = [(h.message_ids, round(h.score, 6)) for h in mem.search("the cat", scope="other", k=5)]
        monkeypatch.setattr(AnnIndex, "add_rows", slow_add_rows)
        held.append(True)
        mem.add(sessions[3], scope="u", thread="t")
        assert started.wait(10)
        held[0] = False
        try:
            got = [(h.message_ids, round(h.score, 6)) for h in mem.search("the cat", scope="other", k=5)]
        finally:
            release.set()
        assert got == before
        assert _hits(mem)  # the scope's own search waits for the insertion
        assert released_in_time == [True], "the other scope's search waited for the insertion"
        idx = mem._indexes.get(mem._store.require_scope("u"))
        assert idx.n_sentences == idx.ann.ntotal == mem.stats("u").sentences


@pytest.mark.parametrize("how", ["raises", "short"])
def test_an_insertion_failing_after_the_commit_keeps_the_add_and_rebuilds_the_index(
    tmp_path: Path, monkeypatch: Any, how: str
) -> None:
    """``raises``: the insertion breaks half-way; ``short``: it returns with rows missing (the check
    that the HNSW storage holds every row before the index is served catches it)."""
    sessions = _sessions(6, seed=8)
    orig = AnnIndex.add_rows
    fail = [False]

    def failing_add_rows(self: AnnIndex, vecs: np.ndarray) -> None:
        orig(self, vecs[: len(vecs) // 2])  # half the rows went in, then it broke
        if fail[0]:
            if how == "short":
                return
            raise MemoryError("simulated failure of the background insertion")
        orig(self, vecs[len(vecs) // 2 :])

    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        monkeypatch.setattr(AnnIndex, "add_rows", failing_add_rows)
        for msgs in sessions[:4]:
            mem.add(msgs, scope="u", thread="t")
        fail[0] = True
        res = mem.add(sessions[4], scope="u", thread="t")  # committed: the failure is the cache's only
        fail[0] = False
        assert res.sentences and mem.stats().sentences == sum(len(s) for s in sessions[:5]) * 2
        got = _hits(mem)
        idx = next(iter(mem._indexes.values()))
        assert idx.n_sentences == idx.sent_index.ntotal == mem.stats().sentences  # rebuilt from the store
        assert idx.ann is None or idx.ann.ntotal == idx.n_sentences
        mem.add(sessions[5], scope="u", thread="t")
        idx = next(iter(mem._indexes.values()))
        assert idx.n_sentences == idx.ann.ntotal == idx.sent_index.ntotal == mem.stats().sentences
        after = _hits(mem)
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        assert _hits(mem) == after
    assert got


def test_an_early_knn_search_is_redone_when_another_add_commits_first(tmp_path: Path) -> None:
    """An add's kNN search starts after its embedding (GraphConfig.knn_early); if another add commits
    between that and its own transaction, it must search again: its edges are those of the order of commits."""
    from sgmem.write import commit_add, prepare_add

    sessions = _sessions(6, seed=9)
    with sgmem.Memory(tmp_path / "early", embedder=HashEmbedder(dim=DIM), config=_config(True)) as mem:
        for msgs in sessions[:4]:
            mem.add(msgs, scope="u", thread="t")
        planned = prepare_add(mem, sessions[5], "u", "t", None)  # its search runs against 4 sessions
        assert planned.knn is not None
        mem.add(sessions[4], scope="u", thread="t")  # commits first
        commit_add(mem, planned)
    with sgmem.Memory(tmp_path / "inline", embedder=HashEmbedder(dim=DIM), config=_config(False)) as mem:
        for msgs in sessions[:4] + [sessions[4], sessions[5]]:
            mem.add(msgs, scope="u", thread="t")
    assert _edges(tmp_path / "early") == _edges(tmp_path / "inline")
    new_rows = {r[0] for r in _edges(tmp_path / "early")}
    assert len(new_rows) > 20


def test_a_reader_of_the_vector_storage_is_waited_for_before_rows_are_appended(tmp_path: Path) -> None:
    """An early kNN search reads the FAISS storage in place; appending moves its buffer, so an append
    on the calling thread (another process's rows, an exact-kNN add) waits for registered readers."""
    import threading
    from concurrent.futures import Future

    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM)) as mem:
        mem.add(_sessions(1)[0], scope="u", thread="t")
        idx = mem._index(mem._store.require_scope("u"))
    reader: Future[None] = Future()
    idx.add_reader(reader)
    threading.Timer(0.3, reader.set_result, (None,)).start()
    n = idx.n_sentences
    vecs = np.ones((1, DIM), dtype=np.float32) / np.sqrt(DIM)
    idx.append_sentences([(10_000_000, int(idx.msg_ids[-1]), 9, "")], vecs)
    assert reader.done(), "the storage grew while a background search was reading it"
    assert idx.n_sentences == idx.sent_index.ntotal == n + 1
