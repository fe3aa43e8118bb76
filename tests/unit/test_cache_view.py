"""The per-scope cache view's pending entry (an index an add's background HNSW insertion still writes into).

What a user would notice if it went wrong: a search reading an index while
its vectors are being appended (wrong hits or a crash), an index whose
insertion failed being served, or a forked worker process hanging on a
thread it does not have.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from typing import Any

import pytest

from sgmem.cache import ByteLRU, CacheView


class _Value:
    def __init__(self, n: int = 100) -> None:
        self.n = n

    def nbytes(self) -> int:
        return self.n


def test_a_pending_value_is_served_only_after_its_work_and_check() -> None:
    view = CacheView(ByteLRU(10_000), "index")
    old, new = _Value(), _Value(200)
    view.put(1, old)
    work: Future[None] = Future()
    view.defer(1, new, work, lambda v: v is new)
    threading.Timer(0.2, work.set_result, (None,)).start()
    assert view.get(1) is new  # waited for the work
    assert work.done()
    assert view.lru.nbytes == 200  # counted once done, at its final size


@pytest.mark.parametrize("how", ["work fails", "check fails"])
def test_a_pending_value_whose_work_or_check_fails_is_dropped(how: str) -> None:
    view = CacheView(ByteLRU(10_000), "index")
    view.put(1, _Value())
    view.put(2, _Value())
    work: Future[None] = Future()
    if how == "work fails":
        work.set_exception(RuntimeError("insertion failed"))
    else:
        work.set_result(None)
    view.defer(1, _Value(), work, lambda v: how != "check fails")
    assert view.get(1) is None  # rebuilt from the store by the caller
    assert view.get(2) is not None  # other scopes untouched


def test_every_access_settles_the_pending_value_first() -> None:
    for access in ("get", "put", "pop", "values", "len"):
        view = CacheView(ByteLRU(10_000), "index")
        value = _Value()
        work: Future[None] = Future()
        view.defer(7, value, work, lambda v: True)
        threading.Timer(0.1, work.set_result, (None,)).start()
        if access == "get":
            view.get(3)
        elif access == "put":
            view.put(3, _Value())
        elif access == "pop":
            view.pop(3)
        elif access == "values":
            assert value in view.values()
        else:
            assert len(view) == 1
        assert work.done(), access
        assert view.lru.get(("index", 7)) is value, access


def test_a_forked_child_drops_a_pending_value_instead_of_waiting(monkeypatch: Any) -> None:
    view = CacheView(ByteLRU(10_000), "index")
    view.put(1, _Value())
    never: Future[None] = Future()  # the thread that would finish it is not in the child
    view.defer(1, _Value(), never, lambda v: True)
    pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: pid + 1)
    assert view.get(1) is None


def test_an_interrupted_wait_never_serves_the_value() -> None:
    view = CacheView(ByteLRU(10_000), "index")
    value = _Value()
    view.put(1, value)

    class _Interrupting(Future):  # type: ignore[type-arg]
        def result(self, timeout: float | None = None) -> Any:
            raise KeyboardInterrupt

    view.defer(1, value, _Interrupting(), lambda v: True)
    with pytest.raises(KeyboardInterrupt):
        view.get(1)
    assert view.get(1) is None
