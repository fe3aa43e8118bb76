"""Concurrency: threads sharing one Memory, processes sharing one store, stuck locks, close races.

Nothing may be lost or duplicated, no ``sqlite3`` error may reach the caller, readers see
whole adds or nothing, and a lock that never clears ends in a clear ``StoreBusyError``
within the configured time, with nothing stored.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import sqlite3
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import sgmem

from .conftest import record_figure
from .helpers import ENTITIES, FastEmbedder, db_path, observable
from .workers import MSGS_PER_ADD, SCOPE, add_messages, reader, writer


def _run_threads(targets: list[Any]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guard(fn: Any) -> Any:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - collected and asserted on
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guard(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return errors


def test_threads_sharing_one_memory_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    n_writers, n_adds = 4, 40
    stop = threading.Event()
    seen_partial: list[Any] = []
    reads = [0]
    with sgmem.Memory(tmp_path / "store", embedder=FastEmbedder(), config=ENTITIES) as mem:

        def write(w: int) -> Any:
            def run() -> None:
                for i in range(n_adds):
                    mem.add(add_messages(w, i), scope=SCOPE, thread=f"writer-{w}")
                    if i % 2:  # generated ids too
                        mem.add({"role": "user", "content": f"anonymous {w} {i}"}, scope="anon", thread=f"t{w}")

            return run

        def read() -> None:
            rng = random.Random(1)
            first = True  # at least one round, however the threads are scheduled (reads[0] > 0 below)
            while first or not stop.is_set():
                first = False
                ids = [m.id for m in mem.messages(scope=SCOPE)]
                groups: dict[str, int] = {}
                for mid in ids:
                    g = mid.rsplit("-m", 1)[0]
                    groups[g] = groups.get(g, 0) + 1
                seen_partial.extend(g for g, n in groups.items() if n != MSGS_PER_ADD)
                mem.search("shared words writer", scope=SCOPE, k=5, mode=rng.choice(sgmem.MODES))
                mem.context("token part", scope=SCOPE, budget_tokens=200)
                mem.stats()
                reads[0] += 1

        readers = [threading.Thread(target=read) for _ in range(2)]
        for r in readers:
            r.start()
        try:
            errors = _run_threads([write(w) for w in range(n_writers)])
        finally:
            stop.set()
            for r in readers:
                r.join(60)
        assert errors == []
        assert seen_partial == []
        ids = [m.id for m in mem.messages(scope=SCOPE)]
        want = {m["id"] for w in range(n_writers) for i in range(n_adds) for m in add_messages(w, i)}
        assert len(ids) == len(set(ids)) == len(want) and set(ids) == want
        anon = mem.messages(scope="anon")
        assert len(anon) == len({m.id for m in anon}) == n_writers * (n_adds // 2)
        # the in-process index saw every add: each writer's last add is found by its token
        for w in range(n_writers):
            hits = mem.search(f"w{w}a{n_adds - 1}x", scope=SCOPE, k=MSGS_PER_ADD, mode="bm25")
            assert {i for h in hits for i in h.message_ids} == {m["id"] for m in add_messages(w, n_adds - 1)}
    assert reads[0] > 0
    record_figure(
        "concurrency: threads",
        f"{n_writers} writer threads x {n_adds} adds ({n_writers * n_adds * MSGS_PER_ADD} "
        f"messages + {len(anon)} generated-id messages), 2 reader threads ({reads[0]} read rounds): 0 lost, 0 duplicated",
    )


@pytest.mark.slow
def test_processes_sharing_one_store_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    n_writers, n_adds = 4, 30
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder(), config=ENTITIES):
        pass  # create the store once, so the writers race on data, not on the schema
    stop_file = tmp_path / "stop"
    ctx = multiprocessing.get_context("spawn")
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=n_writers + 1, mp_context=ctx) as pool:
        read_f = pool.submit(reader, str(store), str(stop_file), 120.0)
        write_fs = [pool.submit(writer, str(store), w, n_adds, 30.0) for w in range(n_writers)]
        results = [f.result(timeout=180) for f in write_fs]
        stop_file.touch()
        read_out = read_f.result(timeout=60)
    elapsed = time.monotonic() - t0
    for r in results:
        assert r["errors"] == [], r["errors"]
    assert read_out["errors"] == [] and read_out["violations"] == [], read_out
    assert read_out["reads"] > 0
    returned = [i for r in results for i in r["returned"]]
    with sgmem.Memory(store, embedder=FastEmbedder(), config=ENTITIES) as mem:
        ids = [m.id for m in mem.messages(scope=SCOPE)]
        assert len(ids) == len(set(ids)) == n_writers * n_adds * MSGS_PER_ADD
        assert set(ids) == set(returned)
        for w in range(n_writers):
            # each writer's thread kept its own order
            own = [m.id for m in mem.messages(scope=SCOPE, thread=f"writer-{w}")]
            assert own == [m["id"] for i in range(n_adds) for m in add_messages(w, i)]
    record_figure(
        "concurrency: processes",
        f"{n_writers} writer processes x {n_adds} adds = {len(ids)} messages, 0 lost, 0 duplicated; "
        f"reader process: {read_out['reads']} reads + {read_out['searches']} searches, 0 partial adds seen; {elapsed:.1f}s",
    )


def test_another_memory_on_the_same_path_sees_writes_and_deletes(tmp_path: Path) -> None:
    """Each Memory caches its index; another writer's changes must still show (generation check)."""
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb, config=ENTITIES) as a, sgmem.Memory(store, embedder=emb, config=ENTITIES) as b:
        a.add(add_messages(0, 0), scope=SCOPE, thread="t")
        for mode in sgmem.MODES:
            assert a.search("w0a0x", scope=SCOPE, k=3, mode=mode)  # a's index is now cached
        b.add(add_messages(1, 0), scope=SCOPE, thread="t")
        for mode in ("bm25", "hybrid"):
            got = {i for h in a.search("w1a0x", scope=SCOPE, k=3, mode=mode) for i in h.message_ids}
            assert got == {m["id"] for m in add_messages(1, 0)}
        # a extends its cache with its own add; b's add must not be lost from it
        a.add(add_messages(0, 1), scope=SCOPE, thread="t")
        assert len(a.search("Shared words", scope=SCOPE, k=50, mode="bm25")) == 3 * MSGS_PER_ADD
        b.delete(scope=SCOPE, message_ids=[m["id"] for m in add_messages(0, 0)])
        for mode in sgmem.MODES:
            got = {i for h in a.search("w0a0x writer 0 add 0", scope=SCOPE, k=50, mode=mode) for i in h.message_ids}
            assert not got & {m["id"] for m in add_messages(0, 0)}, mode
        b.delete(scope=SCOPE)
        assert a.search("w1a0x", scope=SCOPE) == []
        assert a.messages(scope=SCOPE) == []


# ------------------------------------------------------------------------- stuck locks
@pytest.fixture
def held_lock(tmp_path: Path) -> Any:
    """A store with one message, and a function that takes its write lock from another connection."""
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder(), config=ENTITIES) as mem:
        mem.add({"role": "user", "content": "before the lock", "id": "m0"}, scope="s", thread="t")
    conns: list[sqlite3.Connection] = []

    def hold(exclusive: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(db_path(store), isolation_level=None)
        if exclusive:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO meta (key, value) VALUES ('held', 'x')")  # a real pending write
        if exclusive:
            conn.execute("COMMIT")  # exclusive mode keeps the lock after commit
            conn.execute("BEGIN IMMEDIATE")
        conns.append(conn)
        return conn

    yield store, hold
    for c in conns:
        c.close()


def test_a_stuck_writer_lock_gives_store_busy_error_in_time_and_stores_nothing(held_lock: Any) -> None:
    store, hold = held_lock
    cfg = sgmem.Config(busy_timeout_s=0.3)
    with sgmem.Memory(store, embedder=FastEmbedder(), config=cfg) as mem:
        before = observable(mem)
        conn = hold()
        t0 = time.monotonic()
        with pytest.raises(sgmem.StoreBusyError, match=r"locked.*busy_timeout_s") as info:
            mem.add({"role": "user", "content": "during the lock", "id": "m1"}, scope="s", thread="t")
        waited = time.monotonic() - t0
        # it waited for the lock (busy_timeout_s) and then gave up: raising at all shows it did not hang;
        # no upper bound on the wait, which a busy machine stretches
        assert waited >= 0.25
        assert not isinstance(info.value, sqlite3.Error)
        with pytest.raises(sgmem.StoreBusyError):
            mem.delete(scope="s")
        # readers are not blocked by a writer (WAL)
        assert [m.id for m in mem.messages(scope="s")] == ["m0"]
        assert mem.search("before the lock", scope="s", k=1)[0].message_ids == ("m0",)
        conn.rollback()
        assert observable(mem) == before
        mem.add({"role": "user", "content": "after the lock", "id": "m1"}, scope="s", thread="t")
        assert [m.id for m in mem.messages(scope="s")] == ["m0", "m1"]
    record_figure("concurrency: stuck lock", f"StoreBusyError after {waited:.2f}s with busy_timeout_s=0.3")


def test_opening_a_store_someone_holds_exclusively_gives_store_busy_error(held_lock: Any) -> None:
    store, hold = held_lock
    hold(exclusive=True)
    with pytest.raises(sgmem.StoreBusyError, match="locked"):  # raised, not waited on forever
        sgmem.Memory(store, embedder=FastEmbedder(), config=sgmem.Config(busy_timeout_s=0.3))


# ------------------------------------------------------------------------ races
def test_close_racing_with_calls_raises_only_sgmem_errors(tmp_path: Path) -> None:
    for attempt in range(5):
        mem = sgmem.Memory(tmp_path / f"store-{attempt}", embedder=FastEmbedder(), config=ENTITIES)
        mem.add(add_messages(0, 0), scope=SCOPE, thread="t")
        unexpected: list[BaseException] = []
        go = threading.Event()

        def hammer(
            k: int, mem: sgmem.Memory = mem, go: threading.Event = go, unexpected: list[BaseException] = unexpected
        ) -> None:
            go.wait()
            for i in range(200):
                try:
                    if k == 0:
                        mem.add(add_messages(k + 1, i), scope=SCOPE, thread="t")
                    elif k == 1:
                        mem.search("shared words", scope=SCOPE, k=3, mode=sgmem.MODES[i % 4])
                    elif k == 2:
                        mem.context("token", scope=SCOPE, budget_tokens=100)
                    else:
                        mem.messages(scope=SCOPE)
                        mem.stats()
                except sgmem.SgmemError as exc:
                    assert "closed" in str(exc)
                    return
                except BaseException as exc:  # noqa: BLE001
                    unexpected.append(exc)
                    return

        threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        go.set()
        time.sleep(0.02 * (attempt + 1))
        mem.close()
        for t in threads:
            t.join(30)
        assert unexpected == [], "".join(traceback.format_exception(unexpected[0]))
        # what was committed before the close is intact
        with sgmem.Memory(tmp_path / f"store-{attempt}", embedder=FastEmbedder(), config=ENTITIES) as again:
            ids = [m.id for m in again.messages(scope=SCOPE)]
            assert len(ids) == len(set(ids)) and len(ids) % MSGS_PER_ADD == 0


def test_deleting_while_other_threads_search_and_add(tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "store", embedder=FastEmbedder(), config=ENTITIES) as mem:
        for i in range(20):
            mem.add(add_messages(0, i), scope=SCOPE, thread=f"t{i % 4}")
        mem.add(add_messages(9, 0), scope="other", thread="t")
        stop = threading.Event()
        deleted: set[str] = set()

        def search() -> None:
            while not stop.is_set():
                for mode in sgmem.MODES:
                    for h in mem.search("writer token shared", scope=SCOPE, k=20, mode=mode):
                        assert not set(h.message_ids) & {m["id"] for m in add_messages(9, 0)}
                mem.context("writer token", scope=SCOPE, budget_tokens=300)

        def delete() -> None:
            try:
                for i in range(0, 20, 2):
                    ids = [m["id"] for m in add_messages(0, i)]
                    mem.delete(scope=SCOPE, message_ids=ids)
                    deleted.update(ids)
                mem.delete(scope=SCOPE, thread="t1")
                deleted.update(m["id"] for i in range(1, 20, 4) for m in add_messages(0, i))
            finally:
                stop.set()

        def add() -> None:
            i = 0
            while not stop.is_set():
                mem.add(add_messages(1, i), scope=SCOPE, thread="t9")
                i += 1

        errors = _run_threads([search, search, delete, add])
        assert errors == [], [repr(e) for e in errors]
        left = {m.id for m in mem.messages(scope=SCOPE)}
        assert not left & deleted
        for mode in sgmem.MODES:
            got = {i for h in mem.search("writer 0 add token", scope=SCOPE, k=100, mode=mode) for i in h.message_ids}
            assert not got & deleted, mode
        assert [m.id for m in mem.messages(scope="other")] == [m["id"] for m in add_messages(9, 0)]


async def test_async_twins_interleave_safely(tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "store", embedder=FastEmbedder(), config=ENTITIES) as mem:
        adds = [mem.aadd(add_messages(w, 0), scope=SCOPE, thread=f"t{w}") for w in range(12)]
        searches = [mem.asearch("shared words", scope=SCOPE, k=3) for _ in range(12)]
        out = await asyncio.gather(*adds, *searches)
        assert all(isinstance(r, sgmem.AddResult) for r in out[:12])
        assert len(await mem.amessages(scope=SCOPE)) == 12 * MSGS_PER_ADD
        receipts = await asyncio.gather(*(mem.adelete(scope=SCOPE, thread=f"t{w}") for w in range(12)))
        assert sum(r.messages for r in receipts) == 12 * MSGS_PER_ADD
        assert (await mem.astats(SCOPE)).messages == 0
