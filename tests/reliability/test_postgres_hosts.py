"""Many hosts, one PostgreSQL store: processes play separate app hosts.

A write or delete by one host is seen by another host's next search (the
per-scope generation is checked on every search); concurrent writer processes
lose and duplicate nothing; a host killed inside its transaction leaves nothing.
"""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import sgmem
from sgmem.pyramid.vocabulary import load_keywords

from .conftest import record_figure
from .helpers import DEFAULT_MODES, FastEmbedder
from .workers import MSGS_PER_ADD, SCOPE, add_messages, reader, writer

pytestmark = [pytest.mark.postgres, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(__file__).with_name("pg_host.py")
CRASH_WRITER = Path(__file__).with_name("crash_writer.py")


def _other_host(url: str, action: str, w: int, i: int) -> None:
    out = subprocess.run(
        [sys.executable, str(HOST), url, action, str(w), str(i)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-2000:]


def _ids(hits: list[sgmem.Hit]) -> set[str]:
    return {i for h in hits for i in h.message_ids}


def test_another_hosts_write_is_found_and_its_delete_is_gone(pg_url: str) -> None:
    with sgmem.Memory(pg_url, embedder=FastEmbedder()) as here:
        here.add(add_messages(0, 0), scope=SCOPE, thread="here")
        for mode in DEFAULT_MODES:  # this host's index (FAISS, graph, postings, keywords) is now cached
            assert here.search("w0a0x", scope=SCOPE, k=3, mode=mode)
        theirs = {m["id"] for m in add_messages(1, 0)}
        _other_host(pg_url, "add", 1, 0)
        for mode in ("vector", "bm25", "hybrid", "graph"):
            assert _ids(here.search("w1a0x", scope=SCOPE, k=3, mode=mode)) == theirs, mode
        assert theirs <= {m.id for m in here.messages(scope=SCOPE)}
        here.add(add_messages(0, 1), scope=SCOPE, thread="here")  # extends this host's cache: theirs stays
        assert len(here.search("Shared words", scope=SCOPE, k=50, mode="bm25")) == 3 * MSGS_PER_ADD
        _other_host(pg_url, "delete", 1, 0)
        for mode in DEFAULT_MODES:
            got = _ids(here.search("w1a0x writer 1 add 0", scope=SCOPE, k=50, mode=mode))
            assert not got & theirs, f"{mode} served a message another host deleted"
        for kind in ("fact", "summary"):
            got = _ids(here.search("w1a0x writer 1 add 0", scope=SCOPE, k=50, kinds=[kind]))
            assert not got & theirs, kind
        assert "w1a0x" not in here.context("w1a0x writer 1", scope=SCOPE, budget_tokens=500)


def _answers(mem: sgmem.Memory, queries: list[str]) -> list[list[tuple[str, float]]]:
    return [
        [(h.text, round(h.score, 5)) for h in mem.search(q, scope=SCOPE, k=8, mode=mode, min_score=0)]
        for q in queries
        for mode in DEFAULT_MODES
    ]


def test_another_hosts_append_extends_this_hosts_index_in_place(pg_url: str) -> None:
    """An add by another host is appended to this host's cached index (no rebuild); answers equal a rebuilt one's."""
    queries = ["w1a0x writer 1", "w0a0x part 2", "Shared words for every writer", "w1a1x"]
    with sgmem.Memory(pg_url, embedder=FastEmbedder()) as here:
        here.add(add_messages(0, 0), scope=SCOPE, thread="here")
        for mode in DEFAULT_MODES:  # every part of the cache is built (keyword index included)
            here.search("w0a0x", scope=SCOPE, k=3, mode=mode)
        sid = here._store.scope_id(SCOPE)
        cached = here._indexes.get(sid)
        assert cached.keywords is not None
        for i in range(2):
            _other_host(pg_url, "add", 1, i)
            theirs = {m["id"] for m in add_messages(1, i)}
            assert _ids(here.search(f"w1a{i}x", scope=SCOPE, k=3, mode="bm25")) == theirs
            assert here._indexes.get(sid) is cached, "an append by another host refreshes the cache in place"
        assert cached.n_turns == 3 * MSGS_PER_ADD
        with here._store.read() as conn:  # the extended keyword index is the one a rebuild loads
            kw = load_keywords(conn, sid, cached.dim, cached.msg_row)
        got = cached.keywords
        assert (got.words, got.rows, got.lookup, got.entry_keys) == (kw.words, kw.rows, kw.lookup, kw.entry_keys)
        assert kw.words, "the messages have keywords"
        refreshed = _answers(here, queries)
        with sgmem.Memory(pg_url, embedder=FastEmbedder()) as rebuilt:  # a host that reads the scope from scratch
            assert _answers(rebuilt, queries) == refreshed
        _other_host(pg_url, "delete", 1, 0)
        assert not _ids(here.search("w1a0x writer 1 add 0", scope=SCOPE, k=50, mode="bm25")) & {
            m["id"] for m in add_messages(1, 0)
        }
        assert here._indexes.get(sid) is not cached, "a delete by another host rebuilds the cache"


def test_a_removal_followed_by_an_append_is_never_served_from_the_cache(pg_url: str) -> None:
    """Another host deletes messages this host has cached, then adds new ones: the refresh must not keep the old."""
    gone = {m["id"] for m in add_messages(1, 0)}
    with sgmem.Memory(pg_url, embedder=FastEmbedder()) as here:
        here.add(add_messages(0, 0), scope=SCOPE, thread="here")
        here.add(add_messages(1, 0), scope=SCOPE, thread="host-1")  # this host caches them
        assert _ids(here.search("w1a0x", scope=SCOPE, k=3, mode="bm25")) == gone
        _other_host(pg_url, "swap", 1, 0)  # delete those, add (1, 1): as many messages as before
        for mode in DEFAULT_MODES:
            got = _ids(here.search("w1a0x writer 1 add 0 w1a1x", scope=SCOPE, k=50, mode=mode, min_score=0))
            assert not got & gone, f"{mode} served a message another host deleted"
        assert _ids(here.search("w1a1x", scope=SCOPE, k=3, mode="bm25")) == {m["id"] for m in add_messages(1, 1)}
        sid = here._store.scope_id(SCOPE)
        assert here._indexes.get(sid).n_turns == 2 * MSGS_PER_ADD


@pytest.mark.slow
def test_writer_processes_on_one_scope_lose_and_duplicate_nothing(pg_url: str, tmp_path: Path) -> None:
    n_writers, n_adds = 4, 8
    with sgmem.Memory(pg_url, embedder=FastEmbedder()):
        pass
    stop_file = tmp_path / "stop"
    ctx = multiprocessing.get_context("spawn")
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=n_writers + 1, mp_context=ctx) as pool:
        read_f = pool.submit(reader, pg_url, str(stop_file), 120.0)
        write_fs = [pool.submit(writer, pg_url, w, n_adds, 60.0) for w in range(n_writers)]
        results = [f.result(timeout=240) for f in write_fs]
        stop_file.touch()
        read_out = read_f.result(timeout=60)
    elapsed = time.monotonic() - t0
    for r in results:
        assert r["errors"] == [], r["errors"]
    assert read_out["errors"] == [] and read_out["violations"] == [], read_out
    returned = [i for r in results for i in r["returned"]]
    with sgmem.Memory(pg_url, embedder=FastEmbedder()) as mem:
        ids = [m.id for m in mem.messages(scope=SCOPE)]
        assert len(ids) == len(set(ids)) == n_writers * n_adds * MSGS_PER_ADD
        assert set(ids) == set(returned)
        for w in range(n_writers):
            own = [m.id for m in mem.messages(scope=SCOPE, thread=f"writer-{w}")]
            assert own == [m["id"] for i in range(n_adds) for m in add_messages(w, i)]
        stats = mem.stats(SCOPE).scopes[0]
        assert stats.chronological_edges == len(ids) - n_writers
        # the gate's per-scope state is read, changed and written by every add: no update was lost
        assert stats.gate["messages"] == len(ids), stats.gate
    record_figure(
        "concurrency: PostgreSQL hosts",
        f"{n_writers} writer processes x {n_adds} adds = {len(ids)} messages on one scope, 0 lost, 0 duplicated; "
        f"reader process: {read_out['reads']} reads, 0 partial adds seen; {elapsed:.1f}s",
    )


def test_a_host_killed_inside_its_transaction_leaves_nothing(pg_url: str, tmp_path: Path) -> None:
    from .crash_writer import batch, scope_of

    log = tmp_path / "writer.log"
    cmd = [sys.executable, str(CRASH_WRITER), pg_url, "0", "1000", "4", "0", "tx:3"]
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
    added: list[int] = []
    killed_in: list[int] = []
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.strip()
            if line.startswith("ADDED"):
                added.append(int(line.split()[1]))
            elif line.startswith("INTX"):
                proc.send_signal(signal.SIGKILL)
                killed_in.append(int(line.split()[1]))
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(120), log.read_text()[-2000:]
    proc.wait(30)
    assert killed_in == [2] and added == [0, 1], (killed_in, added, log.read_text()[-2000:])
    with sgmem.Memory(pg_url, embedder=FastEmbedder(), config=sgmem.Config(busy_timeout_s=10)) as mem:
        for b in (0, 1):
            assert [m.id for m in mem.get(scope=scope_of(b), message_ids=[m["id"] for m in batch(b, 4)])] == [
                m["id"] for m in batch(b, 4)
            ]
        half = [m["id"] for m in batch(2, 4)]
        assert mem.get(scope=scope_of(2), message_ids=half) == [], "the killed add left messages behind"
        assert not _ids(mem.search("tok2x", scope=scope_of(2), k=10, mode="bm25")) & set(half)
        # the server rolled the dead host's transaction back and released its lock: a new add goes through
        # (a lock still held would raise StoreBusyError after busy_timeout_s; no clock is read here)
        mem.add(batch(2, 4), scope=scope_of(2), thread="retry")
        assert _ids(mem.search("tok2x", scope=scope_of(2), k=10, mode="bm25")) == set(half)
