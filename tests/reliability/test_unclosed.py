"""A ``Memory`` dropped without ``close()`` gives back its thread and its connections.

Issue 29 item 6: 30 durable Memory objects dropped without ``close()`` left 30
``sgmem-checkpoint`` threads (each with a SQLite connection of its own) and
file descriptors 6 → 74. Nothing here waits on a clock: threads are joined
with a generous timeout, and the descriptors are counted after that.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path

import pytest

import sgmem

from .helpers import FastEmbedder

N = 8


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sgmem-checkpoint"]


def _join(threads: list[threading.Thread], timeout_s: float = 60.0) -> None:
    """Join ``threads`` (one deadline for all: a leaked thread never ends)."""
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _drop_unclosed(target: object, scope: str) -> None:
    mem = sgmem.Memory(target, embedder=FastEmbedder())
    mem.add({"role": "user", "content": f"unclosed store {scope}"}, scope=scope, thread="t")  # starts its checkpointer
    del mem


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd")
def test_dropped_memories_release_their_checkpointer_threads_and_files(tmp_path: Path) -> None:
    gc.collect()
    before, fds_before = set(_checkpoint_threads()), _open_fds()  # other tests' stores may still have theirs
    for i in range(N):
        _drop_unclosed(tmp_path / f"store-{i}", f"s{i}")
    gc.collect()
    ours = [t for t in _checkpoint_threads() if t not in before]
    _join(ours)
    assert [t for t in ours if t.is_alive()] == []
    assert _open_fds() <= fds_before + 2  # slack for descriptors the interpreter itself opens


def test_a_dropped_memory_gives_its_data_to_the_next_open(tmp_path: Path) -> None:
    """Dropping an unclosed Memory still leaves the store whole for the next one (nothing is lost)."""
    _drop_unclosed(tmp_path / "store", "alice")
    gc.collect()
    with sgmem.Memory(tmp_path / "store", embedder=FastEmbedder()) as mem:
        assert [m.content for m in mem.messages(scope="alice")] == ["unclosed store alice"]


@pytest.mark.postgres
@pytest.mark.integration
def test_a_dropped_postgres_memory_gives_its_pooled_connection_back(pg_url: str) -> None:
    psycopg_pool = pytest.importorskip("psycopg_pool")
    with psycopg_pool.ConnectionPool(pg_url, min_size=1, max_size=1, open=True, timeout=30) as pool:
        for i in range(3):  # a pool of one: the next Memory waits forever unless the last one gave it back
            _drop_unclosed(pool, f"s{i}")
            gc.collect()
        with sgmem.Memory(pool, embedder=FastEmbedder()) as mem:
            assert mem.scopes() == ["s0", "s1", "s2"]
