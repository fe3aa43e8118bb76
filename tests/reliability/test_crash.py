"""Crash safety: a writer killed with SIGKILL leaves a store that opens, holds every add that
returned, holds no half-applied add, and never serves a stale or torn FAISS cache.

The writer (``crash_writer.py``) runs in a subprocess with the fast test embedder and prints
each batch number once its ``add`` returned. The parent kills it at seeded random moments, and
at moments chosen on purpose: inside an add's transaction (messages inserted, sentences not
yet) and between the FAISS cache files of a save. After every kill the same store is reopened
and checked, then the next writer continues on it, so kills pile up like real crashes do.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import sgmem
from sgmem.retrieval.index import load_scope_index
from sgmem.store.sqlite import SQLiteStore

from .conftest import record_figure
from .crash_writer import SCOPES, batch, scope_of
from .helpers import FastEmbedder, db_path, integrity_problems

WRITER = Path(__file__).with_name("crash_writer.py")
ROOT = Path(__file__).resolve().parents[2]
BATCH = 5
SEED = 20240601


def _kill_plan() -> list[tuple[str, float]]:
    """(fault, delay) per kill point: random moments, in-transaction and mid-save kills."""
    rng = random.Random(SEED)
    plan = [("", rng.uniform(0.0, 1.0)) for _ in range(12)]
    plan += [(f"tx:{rng.randint(1, 4)}", 0.0) for _ in range(8)]
    plan += [(f"save:{rng.randint(1, 3)}", 0.0) for _ in range(6)]
    rng.shuffle(plan)
    return plan


def _run_and_kill(store: Path, first: int, fault: str, delay: float, log: Path) -> tuple[list[int], str]:
    """Start a writer at batch ``first``; SIGKILL it; return the batches it reported and the kill marker."""
    reopen = 2 if fault.startswith("save") else 7
    cmd = [sys.executable, str(WRITER), str(store), str(first), "100000", str(BATCH), str(reopen), fault]
    with open(log, "a") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
    lines: list[str] = []
    ready, marked = threading.Event(), threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.strip()
            lines.append(line)
            if line == "READY":
                ready.set()
            elif line.startswith(("INTX", "INSAVE")):
                proc.send_signal(signal.SIGKILL)  # as close to the marked moment as possible
                marked.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60), f"writer never became ready; see {log}: {log.read_text()[-2000:]}"
        if fault.rpartition(",")[2] not in ("", "replace"):  # "replace,tx:N": the window after the mode
            assert marked.wait(60), f"writer never reached the {fault!r} window; output {lines[-5:]}"
        else:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    assert proc.returncode == -signal.SIGKILL, f"writer ended on its own ({proc.returncode}): {log.read_text()[-2000:]}"
    added = [int(x.split()[1]) for x in lines if x.startswith("ADDED")]
    marker = next((x for x in reversed(lines) if x.startswith(("INTX", "INSAVE"))), "")
    return added, marker


def _check_sqlite(store: Path) -> None:
    """The database file itself is sound: integrity, foreign keys, no orphans or half-adds."""
    conn = sqlite3.connect(db_path(store))
    try:
        assert integrity_problems(conn) == []
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        q = conn.execute
        assert (
            q(
                "SELECT COUNT(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM sentences s WHERE s.message_id = m.id)"
            ).fetchone()[0]
            == 0
        )
        assert (
            q(
                "SELECT COUNT(*) FROM sentences s WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = s.message_id)"
            ).fetchone()[0]
            == 0
        )
        assert (
            q(
                "SELECT COUNT(*) FROM sentence_edges e WHERE NOT EXISTS (SELECT 1 FROM sentences s WHERE s.id = e.src)"
                " OR NOT EXISTS (SELECT 1 FROM sentences s WHERE s.id = e.dst)"
            ).fetchone()[0]
            == 0
        )
        assert (
            q(
                "SELECT COUNT(*) FROM turn_edges e WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.src)"
                " OR NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.dst)"
            ).fetchone()[0]
            == 0
        )
        # the entity layer (on in crash_writer's adds, whose messages all name an entity) commits with its
        # add: every message has its mention, no mention or entity is orphaned
        if q("SELECT COUNT(*) FROM entity_mentions").fetchone()[0]:
            assert (
                q(
                    "SELECT COUNT(*) FROM messages m WHERE NOT EXISTS "
                    "(SELECT 1 FROM entity_mentions x WHERE x.message_id = m.id)"
                ).fetchone()[0]
                == 0
            )
        assert (
            q(
                "SELECT COUNT(*) FROM entity_mentions x WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.message_id)"
                " OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = x.entity_id)"
            ).fetchone()[0]
            == 0
        )
        assert (
            q(
                "SELECT COUNT(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM entity_mentions x WHERE x.entity_id = e.id)"
            ).fetchone()[0]
            == 0
        )
        # community summaries (with an LLM) commit with their sources: none has lost one
        assert (
            q(
                "SELECT COUNT(*) FROM entity_communities c WHERE c.sources != "
                "(SELECT COUNT(*) FROM entity_community_sources s WHERE s.community_id = c.id)"
            ).fetchone()[0]
            == 0
        )
    finally:
        conn.close()


def _sqlite_vectors(store: SQLiteStore, scope_id: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    def stack(sql: str) -> np.ndarray:
        blobs = [r[0] for r in store.conn.execute(sql, (scope_id,))]
        return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)

    return (
        stack("SELECT vec FROM messages WHERE scope_id = ? ORDER BY id"),
        stack("SELECT vec FROM sentences WHERE scope_id = ? ORDER BY message_id, idx"),
    )


def _check_caches(store_dir: Path, dim: int) -> tuple[int, int]:
    """Each scope's index, loaded as Memory loads it, equals SQLite's vectors.

    Returns (caches reused, caches rejected and rebuilt).
    """
    reused = rebuilt = 0
    store = SQLiteStore(store_dir)
    try:
        for (sid,) in store.conn.execute("SELECT id FROM scopes").fetchall():
            idx = load_scope_index(store, int(sid), dim, store_dir / "faiss")
            turns, sents = _sqlite_vectors(store, int(sid), dim)
            np.testing.assert_array_equal(idx.turn_vectors(), turns)
            np.testing.assert_array_equal(idx.sentence_vectors(), sents)
            if idx.dirty:
                rebuilt += 1
            else:
                reused += 1
    finally:
        store.close()
    return reused, rebuilt


def _check_memory(store: Path, reported: set[int], rng: random.Random) -> dict[int, list[int]]:
    """Open the store as a user would; every reported batch whole, no batch partial, all searchable."""
    present: dict[int, list[int]] = defaultdict(list)
    # the searches below check what is stored: the role weight (the assistant's turns under the user's,
    # HybridConfig.assistant_weight) is off so that a batch's assistant messages rank by their token alone
    cfg = sgmem.Config(hybrid=sgmem.HybridConfig(assistant_weight=1.0))
    with sgmem.Memory(store, embedder=FastEmbedder(), config=cfg) as mem:
        for scope in SCOPES:
            for m in mem.messages(scope=scope):
                b, j = int(m.id[1:7]), int(m.id.split("-m")[1])
                want = batch(b, BATCH)[j]
                assert scope == scope_of(b)
                assert (m.content, m.metadata, m.at) == (want["content"], want["metadata"], want["at"])
                present[b].append(j)
        for b, js in present.items():
            assert sorted(js) == list(range(BATCH)), f"batch {b} is half-applied: positions {sorted(js)}"
        assert not reported - present.keys(), f"adds that returned are missing: {sorted(reported - present.keys())}"
        sample = sorted(reported)[-1:] + rng.sample(sorted(reported), min(2, len(reported)))
        for b in sample:
            want_ids = {m["id"] for m in batch(b, BATCH)}
            for mode in ("bm25", "hybrid"):
                hits = mem.search(f"tok{b}x", scope=scope_of(b), k=BATCH, mode=mode)
                assert {i for h in hits for i in h.message_ids} == want_ids, (b, mode)
        assert mem.stats().messages == BATCH * len(present)
    return present


@pytest.fixture
def crash_store(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store"


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_or_half_applies_an_add(crash_store: Path, tmp_path: Path) -> None:
    log = tmp_path / "writer.log"
    rng = random.Random(SEED)
    reported: set[int] = set()
    first = 0
    survived = in_tx = mid_save = committed_unreported = reused = rebuilt = 0
    seen_unreported: set[int] = set()
    t0 = time.monotonic()
    for fault, delay in _kill_plan():
        added, marker = _run_and_kill(crash_store, first, fault, delay, log)
        reported.update(added)
        if not (crash_store / "sgmem.db").exists():
            continue  # killed before the store was even created: nothing to check
        _check_sqlite(crash_store)
        r, b = _check_caches(crash_store, FastEmbedder().dim)
        reused, rebuilt = reused + r, rebuilt + b
        present = _check_memory(crash_store, reported, rng)
        if marker.startswith("INTX"):
            in_tx += 1
            pending = int(marker.split()[1])
            assert pending not in present, f"batch {pending} was killed inside its transaction but is stored"
        elif marker == "INSAVE":
            mid_save += 1
        # a batch committed but never reported stays so (the next writer starts after it): count this kill's own
        unreported = present.keys() - reported - seen_unreported
        committed_unreported += len(unreported)
        assert len(unreported) <= 1, "only the add in flight may be committed without being reported"
        seen_unreported |= unreported
        first = max(present, default=first - 1) + 1
        survived += 1
    assert survived >= 20
    assert in_tx >= 5 and mid_save >= 3
    record_figure(
        "crash: kill points survived",
        f"{survived} (random {survived - in_tx - mid_save}, inside a transaction {in_tx}, mid cache-save {mid_save}); "
        f"{len(reported)} returned adds all present; committed-but-unreported adds {committed_unreported}; "
        f"FAISS caches reused {reused} / rejected+rebuilt {rebuilt}; {time.monotonic() - t0:.1f}s",
    )


# ----------------------------------------------------------------- FAISS caches, by hand
QUERIES = ("tok3x item", "topic 5 message 2", "Batch tok11x", "Done here")


def _fill(mem: sgmem.Memory, batches: range) -> None:
    for b in batches:
        mem.add(batch(b, BATCH), scope=scope_of(b), thread=f"thread-{b % 3}")


def _answers(mem: sgmem.Memory) -> list[tuple[str, ...]]:
    return [
        tuple(i for h in mem.search(q, scope=s, k=8, mode=mode) for i in h.message_ids)
        for q in QUERIES
        for s in SCOPES
        for mode in ("vector", "graph", "hybrid")
    ]


def _corrupt(faiss_dir: Path, how: str) -> None:
    files = sorted(faiss_dir.glob("scope-*"))
    assert files, "no cache was written"
    for f in files:
        kind = "json" if f.suffix == ".json" else ("turns" if ".turns." in f.name else "sentences")
        data = f.read_bytes()
        if how == "garbage" and kind != "json":
            f.write_bytes(os.urandom(len(data)))
        elif how == "truncated" and kind != "json":
            f.write_bytes(data[: len(data) // 2])
        elif how == "flipped" and kind == "sentences":
            # one vector component changed: same size, valid header, wrong data
            arr = bytearray(data)
            arr[-8] ^= 0x40
            f.write_bytes(bytes(arr))
        elif how == "empty":
            f.write_bytes(b"")
        elif how == "bad-json" and kind == "json":
            f.write_text("{not json")
        elif how == "missing" and kind == "turns":
            f.unlink()


@pytest.mark.parametrize("how", ["garbage", "truncated", "flipped", "empty", "bad-json", "missing"])
def test_damaged_faiss_caches_are_detected_and_rebuilt(tmp_path: Path, how: str) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb) as mem:
        _fill(mem, range(16))
        expected = _answers(mem)
    _corrupt(store / "faiss", how)
    with sgmem.Memory(store, embedder=emb) as mem:
        assert _answers(mem) == expected
    # the rebuilt cache was written back and is trusted again
    assert _check_caches(store, emb.dim) == (len(SCOPES), 0)


def test_a_cache_saved_before_later_writes_is_not_used(tmp_path: Path) -> None:
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb) as mem:
        _fill(mem, range(8))
    old = tmp_path / "old-faiss"
    shutil.copytree(store / "faiss", old)
    with sgmem.Memory(store, embedder=emb) as mem:
        _fill(mem, range(8, 16))
        expected = _answers(mem)
    shutil.rmtree(store / "faiss")
    shutil.copytree(old, store / "faiss")
    with sgmem.Memory(store, embedder=emb) as mem:
        assert _answers(mem) == expected
    assert _check_caches(store, emb.dim) == (len(SCOPES), 0)


def test_a_cache_torn_between_two_saves_of_equal_size_is_detected(tmp_path: Path) -> None:
    """Two processes saving at once can leave one save's vectors beside the other's metadata.

    A delete followed by an add keeps the counts equal, so only the content can tell.
    """
    emb = FastEmbedder()
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=emb) as mem:
        _fill(mem, range(0, 16, 2))  # scope tenant-a only
    first = {p.name: p.read_bytes() for p in (store / "faiss").iterdir()}
    with sgmem.Memory(store, embedder=emb) as mem:
        mem.delete(scope="tenant-a", message_ids=[m["id"] for m in batch(14, BATCH)])
        mem.add(
            [
                dict(m, id=f"new-{j}", content=f"Zebra {j} quokka. Harbour lights glow. Completely different words!")
                for j, m in enumerate(batch(99, BATCH))
            ],
            scope="tenant-a",
            thread="thread-0",
        )
        expected = _answers(mem)
        new_hits = mem.search("zebra quokka harbour", scope="tenant-a", k=BATCH, mode="vector")
    # torn: the second save's metadata, the first save's vector files (same sizes)
    for name, data in first.items():
        if name.endswith(".faiss"):
            assert len(data) == len((store / "faiss" / name).read_bytes())
            (store / "faiss" / name).write_bytes(data)
    with sgmem.Memory(store, embedder=emb) as mem:
        assert _answers(mem) == expected
        assert mem.search("zebra quokka harbour", scope="tenant-a", k=BATCH, mode="vector") == new_hits
    assert _check_caches(store, emb.dim) == (1, 0)


def test_cache_files_are_private_to_the_user(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        _fill(mem, range(2))
    files = list((store / "faiss").iterdir())
    assert files
    assert (store / "faiss").stat().st_mode & 0o777 == 0o700
    for f in files:
        assert f.stat().st_mode & 0o077 == 0, f"{f.name} is readable by others: {oct(f.stat().st_mode)}"
