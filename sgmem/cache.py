"""A byte-bounded, least-recently-used cache for per-scope state kept in memory.

A :class:`sgmem.Memory` caches, per scope it touches, the retrieval index
(:class:`sgmem.retrieval.index.ScopeIndex`), the derived-memory state
(:class:`sgmem.derived.index.ScopeCache`) and, with the entity layer on, the
entity graph (:class:`sgmem.entities.index.EntityIndex`). All are caches of
the store, checked against the scope's generation (or derived-memory version)
on every use, so dropping one is always safe: the next use rebuilds it from
the store (and the FAISS cache files, when valid). One :class:`ByteLRU` holds
every kind under one budget, ``Config.cache_bytes``; entries estimate their
own size with ``nbytes()``.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

__all__ = ["ByteLRU", "CacheView"]


class ByteLRU:
    """``key → value`` with values evicted least recently used first once their bytes pass ``budget``.

    The entry just stored is never evicted by its own insertion, nor are the
    other entries of its *group* (the scope of a ``(kind, scope_id)`` key), so
    a single scope larger than the budget keeps its index and its derived
    state cached while it is in use. (Evicting by key alone, a scope past the
    budget dropped its derived state when its index was stored and its index
    when its derived state was stored: every add reloaded both from SQLite,
    an O(scope) rebuild per add, measured as a stall of the
    100k-sentence ingest once the scope passed 256 MiB.)
    Thread-safe; values must have an ``nbytes()`` method (re-read on each
    :meth:`put`, so a value that grew in place is re-counted when stored again).
    """

    def __init__(self, budget: int, on_evict: Callable[[Hashable, Any], None] | None = None) -> None:
        self.budget = int(budget)
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.evictions = 0
        #: called with each evicted ``(key, value)`` after the cache's own lock is released
        self.on_evict = on_evict

    def get(self, key: Hashable) -> Any:
        """The value (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` as the most recently used; evict the oldest entries past the budget."""
        size = int(value.nbytes())
        gone: list[tuple[Hashable, Any]] = []
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, size)
            self._bytes += size
            if self._bytes <= self.budget:
                return
            group = _group(key)
            for k in [k for k in self._items if _group(k) != group]:  # least recently used first
                v, n = self._items.pop(k)
                self._bytes -= n
                self.evictions += 1
                gone.append((k, v))
                if self._bytes <= self.budget:
                    break
        if self.on_evict is not None:
            for k, v in gone:
                self.on_evict(k, v)

    def pop(self, key: Hashable) -> Any:
        """Remove ``key``; its value or None."""
        with self._lock:
            item = self._items.pop(key, None)
            if item is None:
                return None
            self._bytes -= item[1]
            return item[0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def values(self, kind: str | None = None) -> list[Any]:
        """The cached values (of keys ``(kind, …)`` when ``kind`` is given), least recently used first."""
        with self._lock:
            return [v for k, (v, _) in self._items.items() if kind is None or (isinstance(k, tuple) and k[0] == kind)]

    @property
    def nbytes(self) -> int:
        """The estimated bytes of everything cached."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


def _group(key: Hashable) -> Hashable:
    """The scope of a ``(kind, scope_id)`` key (other keys are their own group)."""
    return key[1] if isinstance(key, tuple) and len(key) == 2 else key


@dataclass
class _Pending:
    scope_id: int
    value: Any
    work: Future[Any]
    check: Callable[[Any], bool]
    pid: int


class CacheView:
    """The entries of one kind (``"index"``, ``"derived"``) of a shared :class:`ByteLRU`, keyed by scope id.

    A scope's entry may be *pending* (:meth:`defer`): a value that a
    background step is still writing into (an add's HNSW insertion, which
    appends to the index's vector storage). Every access to that scope
    through the view first settles it — waits for the step, then caches the
    value, or drops the scope's entry if the step failed — so no reader ever
    sees a value while it is being written, and the step's time overlaps
    whatever the caller does before its next access (the next add's
    segmenting and embedding). Other scopes do not wait for it (a search of
    one user's memory while another user's add finishes); :meth:`values`
    settles every scope.
    """

    def __init__(self, lru: ByteLRU, kind: str) -> None:
        self.lru = lru
        self.kind = kind
        self._pending: dict[int, _Pending] = {}
        self._settling = threading.Lock()

    def defer(self, scope_id: int, value: Any, work: Future[Any], check: Callable[[Any], bool]) -> None:
        """Cache ``value`` for ``scope_id`` once ``work`` is done and ``check(value)`` holds (else drop it).

        Until then the view holds it back: the next :meth:`get`, :meth:`put`
        or :meth:`pop` of ``scope_id``, :meth:`values` or :meth:`settle`
        waits for ``work`` first. A process forked before ``work`` finished
        never waits for it (the thread doing it is not in the child): the
        child drops the entry.
        """
        with self._settling:
            self._settle(scope_id)
            self._pending[scope_id] = _Pending(scope_id, value, work, check, os.getpid())

    def settle(self, scope_id: int | None = None) -> None:
        """Finish the pending entry of ``scope_id``, or with ``None`` every pending entry (see :meth:`defer`)."""
        with self._settling:
            for sid in list(self._pending) if scope_id is None else [scope_id]:
                self._settle(sid)

    def _settle(self, scope_id: int) -> None:
        p = self._pending.get(scope_id)
        if p is None:
            return
        key = (self.kind, scope_id)
        try:
            ok = p.pid == os.getpid()
            if ok:
                try:
                    p.work.result()
                    ok = bool(p.check(p.value))
                except Exception:  # noqa: BLE001 - the value is a cache: rebuilt from the store at the next use
                    ok = False
        except BaseException:  # interrupted while waiting: the step may still be writing, never serve it
            del self._pending[scope_id]
            self.lru.pop(key)
            raise
        del self._pending[scope_id]
        if ok:
            self.lru.put(key, p.value)
        else:
            self.lru.pop(key)

    def get(self, scope_id: int) -> Any:
        self.settle(scope_id)
        return self.lru.get((self.kind, scope_id))

    def put(self, scope_id: int, value: Any) -> None:
        self.settle(scope_id)
        self.lru.put((self.kind, scope_id), value)

    __setitem__ = put

    def pop(self, scope_id: int, default: Any = None) -> Any:
        self.settle(scope_id)
        out = self.lru.pop((self.kind, scope_id))
        return default if out is None else out

    def values(self) -> list[Any]:
        self.settle()
        return self.lru.values(self.kind)

    def __len__(self) -> int:
        return len(self.values())
