"""Process entry points for the multi-process concurrency tests (importable under ``spawn``).

Each worker opens its own :class:`sgmem.Memory` on the shared path, as separate
application processes would, and returns what it saw instead of raising, so the
parent can report every failure.
"""

from __future__ import annotations

import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

import sgmem

from .helpers import FastEmbedder

SCOPE = "shared"
MSGS_PER_ADD = 3


def add_messages(w: int, i: int) -> list[dict[str, Any]]:
    """The messages of writer ``w``'s ``i``-th add (ids ``w{w}-a{i}-m{j}``, token ``w{w}a{i}x``)."""
    return [
        {
            "id": f"w{w}-a{i}-m{j}",
            "role": "user" if j % 2 == 0 else "assistant",
            "content": f"Writer {w} add {i} token w{w}a{i}x part {j}. Shared words for every writer.",
        }
        for j in range(MSGS_PER_ADD)
    ]


def writer(path: str, w: int, n_adds: int, busy_timeout_s: float) -> dict[str, Any]:
    """Add ``n_adds`` batches; return the ids that returned and any error."""
    out: dict[str, Any] = {"writer": w, "returned": [], "errors": []}
    try:
        with sgmem.Memory(path, embedder=FastEmbedder(), config=sgmem.Config(busy_timeout_s=busy_timeout_s)) as mem:
            for i in range(n_adds):
                try:
                    res = mem.add(add_messages(w, i), scope=SCOPE, thread=f"writer-{w}")
                    out["returned"].extend(res.message_ids)
                except Exception as exc:  # noqa: BLE001 - reported to the parent
                    out["errors"].append(f"{type(exc).__name__}: {exc}")
                if i % 10 == 9:  # searches interleave with other processes' writes
                    mem.search(f"w{w}a{i}x", scope=SCOPE, k=3)
    except Exception:  # noqa: BLE001
        out["errors"].append(traceback.format_exc())
    return out


def reader(path: str, stop_file: str, max_seconds: float) -> dict[str, Any]:
    """Read while writers write: every add must be seen whole or not at all."""
    out: dict[str, Any] = {"reads": 0, "searches": 0, "violations": [], "errors": []}
    deadline = time.monotonic() + max_seconds
    try:
        with sgmem.Memory(path, embedder=FastEmbedder()) as mem:
            # at least one round, however late this process started (a busy machine may start it after
            # the writers are done): the callers assert reads > 0
            first = True
            while first or (not Path(stop_file).exists() and time.monotonic() < deadline):
                first = False
                groups: dict[str, int] = defaultdict(int)
                ids = [m.id for m in mem.messages(scope=SCOPE)]
                if len(ids) != len(set(ids)):
                    out["violations"].append("duplicate ids in messages()")
                for mid in ids:
                    groups[mid.rsplit("-m", 1)[0]] += 1
                partial = {g: n for g, n in groups.items() if n != MSGS_PER_ADD}
                if partial:
                    out["violations"].append(f"partial adds visible: {partial}")
                out["reads"] += 1
                if ids:
                    w, a = ids[-1].split("-")[:2]
                    token = f"{w}{a}x"
                    hits = mem.search(token, scope=SCOPE, k=MSGS_PER_ADD, mode="bm25")
                    got = sorted(i for h in hits for i in h.message_ids)
                    if got != sorted(f"{w}-{a}-m{j}" for j in range(MSGS_PER_ADD)):
                        out["violations"].append(f"search for {token} returned {got}")
                    out["searches"] += 1
    except Exception:  # noqa: BLE001
        out["errors"].append(traceback.format_exc())
    return out
