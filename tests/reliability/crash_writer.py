"""Writer process for the crash tests: ingests numbered batches until killed.

Usage: ``python crash_writer.py STORE FIRST_BATCH N_BATCHES BATCH_SIZE REOPEN_EVERY [FAULT]``

Batch ``b`` holds ``BATCH_SIZE`` messages with ids ``b{b:06d}-m{j}`` and one
search token ``tok{b}x`` each, alternating between two scopes. After each add
returns, the batch number is printed (flushed) as ``ADDED <b>``: the parent
knows exactly which adds returned before it sent SIGKILL. Every
``REOPEN_EVERY`` batches the Memory is closed (saving its FAISS caches, so
kills also land inside cache writes) and opened again.

``FAULT`` widens a window so the parent can kill inside it on purpose:

- ``tx:N``: inside the N-th add's transaction, after its messages are
  inserted and before its sentences are, the writer prints ``INTX <b>`` and
  sleeps;
- ``save:N``: during the N-th FAISS cache file replacement, after the turn
  index is replaced and before the sentence index and metadata are, it prints
  ``INSAVE`` and sleeps.
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
import sgmem.retrieval.index as index_module  # noqa: E402
from sgmem.store.sqlite import SQLiteStore  # noqa: E402
from tests.reliability.helpers import FastEmbedder  # noqa: E402

SCOPES = ("tenant-a", "tenant-b")
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


def scope_of(b: int) -> str:
    """The scope batch ``b`` is written to."""
    return SCOPES[b % len(SCOPES)]


class _SlowReplaceOS:
    """``os`` for the index module, pausing after the N-th turn-index replacement."""

    def __init__(self, nth: int) -> None:
        self.left = nth

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def replace(self, src: Any, dst: Any) -> None:
        os.replace(src, dst)
        if str(dst).endswith(".turns.faiss"):
            self.left -= 1
            if self.left == 0:
                print("INSAVE", flush=True)
                time.sleep(PAUSE_S)


def _inject(fault: str, current: list[int]) -> None:
    kind, _, nth = fault.partition(":")
    if kind == "tx":
        original = SQLiteStore.insert_sentences
        left = [int(nth)]

        def slow_insert(self: SQLiteStore, scope_id: int, rows: Any) -> list[int]:
            left[0] -= 1
            if left[0] == 0:
                print(f"INTX {current[0]}", flush=True)
                time.sleep(PAUSE_S)
            return original(self, scope_id, rows)

        SQLiteStore.insert_sentences = slow_insert  # type: ignore[method-assign]
    elif kind == "save":
        index_module.os = _SlowReplaceOS(int(nth))  # type: ignore[assignment]


def main() -> None:
    store, first, n, size, reopen = sys.argv[1], *map(int, sys.argv[2:6])
    fault = sys.argv[6] if len(sys.argv) > 6 else ""
    current = [first]
    _inject(fault, current)
    emb = FastEmbedder()
    mem = sgmem.Memory(store, embedder=emb)
    print("READY", flush=True)
    for b in range(first, first + n):
        current[0] = b
        mem.add(batch(b, size), scope=scope_of(b), thread=f"thread-{b % 3}")
        print(f"ADDED {b}", flush=True)
        if reopen and (b - first + 1) % reopen == 0:
            mem.close()
            mem = sgmem.Memory(store, embedder=emb)
    mem.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
