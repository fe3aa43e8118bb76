"""Shared data and fakes for the core unit tests: a sample conversation and tiny fake embedders.

The real MiniLM embedder comes from the session fixture in ``tests/conftest.py``;
the fakes here exist only where a test needs an embedder with another identity
(store mismatch) or a controllable speed (async never blocks the loop).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

import sgmem

DAY1 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
DAY2 = datetime(2024, 3, 8, 18, 30, tzinfo=timezone.utc)

#: Two threads of one user's memory: a cat (chat-1, DAY1) and marathon training (chat-2, DAY2).
CAT_THREAD: list[dict[str, Any]] = [
    {"id": "c1", "role": "user", "name": "Alice", "content": "I adopted a grey cat named Miso last spring."},
    {"id": "c2", "role": "assistant", "content": "Miso is a lovely name! What does she like to eat?"},
    {"id": "c3", "role": "user", "name": "Alice", "content": "She loves tuna and sleeps on my keyboard."},
    {"id": "c4", "role": "assistant", "content": "Cats love warm keyboards."},
]
RUN_THREAD: list[dict[str, Any]] = [
    {"id": "r1", "role": "user", "name": "Alice", "content": "I am training for the Berlin marathon in September."},
    {"id": "r2", "role": "assistant", "content": "How many kilometres do you run each week?"},
    {"id": "r3", "role": "user", "name": "Alice", "content": "About sixty kilometres, mostly on weekends."},
    {"id": "r4", "role": "assistant", "content": "That is solid preparation for a marathon."},
]
CAT_IDS = {m["id"] for m in CAT_THREAD}
RUN_IDS = {m["id"] for m in RUN_THREAD}
BY_ID = {m["id"]: m for m in CAT_THREAD + RUN_THREAD}


def add_sample(mem: sgmem.Memory, scope: str = "alice") -> None:
    """Add both sample threads to ``scope`` (cat on DAY1, marathon on DAY2)."""
    mem.add([dict(m) for m in CAT_THREAD], scope=scope, thread="chat-1", at=DAY1)
    mem.add([dict(m) for m in RUN_THREAD], scope=scope, thread="chat-2", at=DAY2)


def snapshot(mem: sgmem.Memory) -> tuple[Any, ...]:
    """Everything a user can observe about what is stored, for before/after checks."""
    stats = mem.stats()
    return (
        stats.scopes,
        tuple(mem.scopes()),
        tuple((s, tuple(mem.messages(scope=s))) for s in mem.scopes()),
    )


class HashEmbedder:
    """A deterministic fake embedder: a unit vector seeded by a hash of the text."""

    def __init__(self, name: str = "fake-hash", dim: int = 8, delay_s: float = 0.0) -> None:
        self.name = name
        self.dim = dim
        self.delay_s = delay_s
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.delay_s:
            time.sleep(self.delay_s)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).normal(size=self.dim)
            out[i] = v / np.linalg.norm(v)
        return out


class CountingEmbedder:
    """Wraps a real embedder (same name and dim) and records every text it is sent."""

    def __init__(self, inner: sgmem.Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def topic_sessions(n: int, per: int = 12, seed: int = 0) -> list[list[dict[str, Any]]]:
    """``n`` sessions of ``per`` turns, each turn two sentences drawn from a small vocabulary (many near ties)."""
    rng = np.random.default_rng(seed)
    words = ["cat", "tuna", "marathon", "Berlin", "keyboard", "garden", "piano", "recipe", "train", "river"]
    out = []
    for s in range(n):
        msgs = []
        for t in range(per):
            a, b, c = rng.choice(words, 3)
            msgs.append(
                {
                    "id": f"s{seed}-{s}-{t}",
                    "role": "user" if t % 2 == 0 else "assistant",
                    "content": f"We talked about the {a} and the {b} on day {s}. Then the {c} came up again.",
                }
            )
        out.append(msgs)
    return out


class LoopGate:
    """An embedder whose every call waits until the event loop has run ``ticks`` more times.

    Shows that an async twin does not block the loop by causality, not by a
    clock: the embedding (on a worker thread) cannot finish until the loop's
    :meth:`ticker` has ticked meanwhile. A call made on the loop's own thread
    waits ``timeout_s`` for ticks that never come and is recorded as blocked.
    """

    def __init__(self, inner: Any, ticks: int = 5, timeout_s: float = 60.0) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.ticks, self.timeout_s = ticks, timeout_s
        self._cv = threading.Condition()
        self._count = 0
        self.waits: list[bool] = []  # one per embed call: True if the loop ticked meanwhile

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._cv:
            goal = self._count + self.ticks
            self.waits.append(self._cv.wait_for(lambda: self._count >= goal, self.timeout_s))
        return self.inner.embed(texts)

    async def ticker(self) -> None:
        """Run on the event loop (``asyncio.create_task``) while the async call under test runs."""
        while True:
            await asyncio.sleep(0.001)
            with self._cv:
                self._count += 1
                self._cv.notify_all()
