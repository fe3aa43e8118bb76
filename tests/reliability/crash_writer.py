"""Writer process for the crash tests: ingests numbered batches until killed.

Usage: ``python crash_writer.py STORE FIRST_BATCH N_BATCHES BATCH_SIZE REOPEN_EVERY [FAULT]``

Batch ``b`` holds ``BATCH_SIZE`` messages with ids ``b{b:06d}-m{j}`` and one
search token ``tok{b}x`` each, alternating between two scopes. After each add
returns, the batch number is printed (flushed) as ``ADDED <b>``: the parent
knows exactly which adds returned before it sent SIGKILL. Every
``REOPEN_EVERY`` batches the Memory is closed (saving its FAISS caches, so
kills also land inside cache writes) and opened again.

``FAULT`` starting with ``replace`` (``replace`` or ``replace,tx:N``) switches to the
replace loop: batch ``b`` replaces the whole of one thread with :func:`rbatch` ``(b)``
(even ``b``: by thread; odd ``b``: by message ids, which the new value reuses), and
``ADDED <b>`` is printed once that replace returned.

``FAULT`` widens a window so the parent can kill inside it on purpose:

- ``tx:N``: inside the N-th add's transaction, after its messages are
  inserted and before its sentences are (for a replace: after its delete), the
  writer prints ``INTX <b>`` and sleeps;
- ``save:N``: during the N-th save of the index cache files, after the
  sentence index is replaced and before the columns and metadata are, it
  prints ``INSAVE`` and sleeps.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import sgmem  # noqa: E402
import sgmem.retrieval.cachefiles as cachefiles_module  # noqa: E402
from sgmem.store.sqlite import SQLiteStore  # noqa: E402
from tests.reliability.helpers import FastEmbedder  # noqa: E402

# the entity layer is opt-in: on here, so a crash is checked against its tables too
ENTITIES = sgmem.Config(entities=sgmem.EntityConfig(enabled=True))

SCOPES = ("tenant-a", "tenant-b")
REPLACE_SCOPE, REPLACE_THREAD = "tenant-r", "profile"
REPLACE_SIZE = 3
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
PAUSE_S = 5.0


def batch(b: int, size: int) -> list[dict[str, Any]]:
    """The messages of batch ``b`` (deterministic: the parent rebuilds them to compare)."""
    return [
        {
            "id": f"b{b:06d}-m{j}",
            "role": "user" if j % 2 == 0 else "assistant",
            # "Lake Topic…" is an entity mention: the entity layer's rows are written by every add
            "content": f"Batch tok{b}x message {j}. It mentions Lake Topic{b % 7} and item {j}. Done here!",
            "at": T0 + timedelta(minutes=b * size + j),
            "metadata": {"batch": b, "pos": j},
        }
        for j in range(size)
    ]


def rbatch(v: int) -> list[dict[str, Any]]:
    """Value ``v`` of the replaced thread: the same ids every time, the value in every text."""
    return [
        {
            "id": f"r-m{j}",
            "role": "user" if j % 2 == 0 else "assistant",
            "content": f"Value val{v}x line {j}. Kept whole or not at all!",
            "at": T0 + timedelta(minutes=v),
            "metadata": {"value": v, "pos": j},
        }
        for j in range(REPLACE_SIZE)
    ]


def scope_of(b: int) -> str:
    """The scope batch ``b`` is written to."""
    return SCOPES[b % len(SCOPES)]


class _SlowReplaceOS:
    """``os`` for the cache files module, pausing after the N-th sentence-index replacement."""

    def __init__(self, nth: int) -> None:
        self.left = nth

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def replace(self, src: Any, dst: Any) -> None:
        os.replace(src, dst)
        if str(dst).endswith(".sentences.faiss"):
            self.left -= 1
            if self.left == 0:
                print("INSAVE", flush=True)
                time.sleep(PAUSE_S)


def _inject(fault: str, current: list[int]) -> None:
    kind, _, nth = fault.partition(":")
    if kind == "tx":
        from sgmem.store.postgres import PostgresStore

        left = [int(nth)]

        def slowed(original: Any) -> Any:
            def slow_insert(self: SQLiteStore, scope_id: int, rows: Any) -> list[int]:
                left[0] -= 1
                if left[0] == 0:
                    if getattr(self.conn, "pipe", None) is not None:
                        self.conn.pipe.sync()  # the add's rows so far reach the server before the pause
                    print(f"INTX {current[0]}", flush=True)
                    time.sleep(PAUSE_S)
                return original(self, scope_id, rows)  # type: ignore[no-any-return]

            return slow_insert

        SQLiteStore.insert_sentences = slowed(SQLiteStore.insert_sentences)  # type: ignore[method-assign]
        PostgresStore.insert_sentences = slowed(PostgresStore.insert_sentences)  # type: ignore[method-assign]
    elif kind == "save":
        cachefiles_module.os = _SlowReplaceOS(int(nth))  # type: ignore[assignment]


def main() -> None:
    store, first, n, size, reopen = sys.argv[1], *map(int, sys.argv[2:6])
    fault = sys.argv[6] if len(sys.argv) > 6 else ""
    mode, fault = ("replace", fault.partition(",")[2]) if fault.startswith("replace") else ("", fault)
    current = [first]
    _inject(fault, current)
    emb = FastEmbedder()
    mem = sgmem.Memory(store, embedder=emb, config=ENTITIES)
    print("READY", flush=True)
    for b in range(first, first + n):
        current[0] = b
        if mode == "replace":
            ids = None if b % 2 == 0 else [m["id"] for m in rbatch(b)]
            mem.replace(rbatch(b), scope=REPLACE_SCOPE, thread=REPLACE_THREAD, message_ids=ids)
        else:
            mem.add(batch(b, size), scope=scope_of(b), thread=f"thread-{b % 3}")
        print(f"ADDED {b}", flush=True)
        if reopen and (b - first + 1) % reopen == 0:
            mem.close()
            mem = sgmem.Memory(store, embedder=emb, config=ENTITIES)
    mem.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
