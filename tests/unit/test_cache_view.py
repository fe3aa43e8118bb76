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


def test_every_access_to_the_scope_settles_its_pending_value_first() -> None:
    for access in ("get", "put", "pop", "values", "len", "settle"):
        view = CacheView(ByteLRU(10_000), "index")
        value = _Value()
        work: Future[None] = Future()
        view.defer(7, value, work, lambda v: True)
        threading.Timer(0.1, work.set_result, (None,)).start()
        if access == "get":
            assert view.get(7) is value
        elif access == "put":
            view.put(7, value)
        elif access == "pop":
            assert view.pop(7) is value
            value = None
        elif access == "values":
            assert value in view.values()
        elif access == "len":
            assert len(view) == 1
        else:
            view.settle()
        assert work.done(), access
        assert view.lru.get(("index", 7)) is value, access


def test_other_scopes_do_not_wait_for_a_pending_value() -> None:
    """One user's add finishing in the background never delays a search of another user's memory."""
    view = CacheView(ByteLRU(10_000), "index")
    other = _Value()
    view.put(3, other)
    slow: Future[None] = Future()
    safety = threading.Timer(5.0, slow.set_result, (None,))  # a view that waits anyway fails, not hangs
    safety.start()
    view.defer(7, _Value(), slow, lambda v: True)
    quick: Future[None] = Future()
    quick.set_result(None)
    view.defer(8, _Value(), quick, lambda v: True)  # a second scope's pending entry alongside
    assert view.get(3) is other
    view.put(4, _Value())
    assert view.pop(4) is not None
    assert view.get(8) is not None  # its own work was done
    assert not slow.done() and view.lru.get(("index", 7)) is None  # scope 7 still held back
    safety.cancel()
    threading.Timer(0.1, slow.set_result, (None,)).start()
    assert view.get(7) is not None and slow.done()


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
