"""A process forked from one that has a SQLite store open (multiprocessing's fork start, a pre-forking server,
celery) can delete and scrub with the store it inherited.

A child forked while the parent's background checkpointer was inside a checkpoint
inherited SQLite's record that a connection of the process held the checkpoint
lock, and no thread to release it: every scrub in the child waited the whole
``busy_timeout_s`` and returned ``scrubbed=False``, leaving deleted text in the
log. The store now holds off a fork until the checkpoint in progress is over
(``os.register_at_fork``), and a child starts a checkpointer of its own.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest

import sgmem

from .helpers import FastEmbedder

pytestmark = pytest.mark.integration

N_FORKS = 12
#: long enough for a child's scrub to outwait, on a busy machine, a checkpoint its parent's thread runs
#: meanwhile; short enough that children stuck on the lock they inherited (the bug) fail the run in minutes
BUSY_S = 10.0


def _batch(i: int) -> list[dict[str, str]]:
    filler = " ".join(f"word{i}x{j}" for j in range(60))
    return [{"id": f"a{i}-m{j}", "role": "user", "content": f"Batch {i} message {j}. {filler}."} for j in range(40)]


def _child(mem: sgmem.Memory, i: int, out: Any) -> None:
    try:
        receipt = mem.delete(scope="s", message_ids=[f"a{i}-m0"])
        mem.add([{"role": "user", "content": f"child {i} was here"}], scope=f"child-{i}", thread="t")
        out.send((receipt.messages, receipt.scrubbed, ""))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.send((0, False, f"{type(exc).__name__}: {exc}"))


def test_children_forked_while_the_checkpointer_runs_delete_and_scrub(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    results = []
    config = sgmem.Config(busy_timeout_s=BUSY_S, wal_checkpoint_background=True)
    with sgmem.Memory(tmp_path / "store", embedder=FastEmbedder(), config=config) as mem:
        for i in range(N_FORKS):
            mem.add(_batch(i), scope="s", thread="t")  # kicks the checkpointer: a fork follows at once
            # another thread of the parent writes while it forks (a web server's other request)
            writer = threading.Thread(
                target=mem.add,
                args=([{"role": "user", "content": f"also {i}"}],),
                kwargs={"scope": "other", "thread": "t"},
            )
            writer.start()
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(mem, i, send))
            proc.start()
            writer.join(60)
            got = recv.recv() if recv.poll(60) else (0, False, "no answer from the child in 60 s")
            proc.join(30)
            if proc.is_alive():  # stuck on a lock it inherited (the bug this tests): not left behind
                proc.kill()
                proc.join(10)
            results.append(got)
        children = {s for s in mem.scopes() if s.startswith("child-")}
        left = {m.id for m in mem.messages(scope="s")}
    assert [r for r in results if r != (1, True, "")] == [], results
    assert children == {f"child-{i}" for i in range(N_FORKS)}
    assert not left & {f"a{i}-m0" for i in range(N_FORKS)}


#: a child that is fine answers in seconds; one stuck on a lock its parent's thread held (the bugs below) never does
CHILD_ANSWER_S = 60.0


def _add_in_child(mem: sgmem.Memory, out: Any) -> None:
    try:
        res = mem.add([{"role": "user", "content": "the child writes after the fork"}], scope="child", thread="t")
        out.send(("added", res.messages, os.getpid() in _SlowLoadingModel.loaded_in))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.send(("error", f"{type(exc).__name__}: {exc}"))


def _fork_and_add(mem: sgmem.Memory) -> tuple[str, Any]:
    """Fork now; the child adds a message with the Memory it inherited. Its answer, or why there is none."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_add_in_child, args=(mem, send))
    proc.start()
    got = recv.recv() if recv.poll(CHILD_ANSWER_S) else ("hang", f"no answer from the child in {CHILD_ANSWER_S} s")
    proc.join(30)
    if proc.is_alive():  # stuck on a lock it inherited: not left behind
        proc.kill()
        proc.join(10)
    return got


class _SlowLoadingModel:
    """Stands in for ``sentence_transformers.SentenceTransformer``: a model whose load takes a while."""

    started = threading.Event()
    loaded_in: list[int] = []  # the processes that loaded it

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).started.set()
        time.sleep(1.0)
        type(self).loaded_in.append(os.getpid())
        self._inner = FastEmbedder(dim=384)

    def get_sentence_embedding_dimension(self) -> int:
        return 384

    def encode(self, texts: list[str], **kwargs: Any) -> Any:
        if _SlowLoadingModel.lazy:  # the first encoding imports a module of the library (torch does, lazily)
            __import__(_SlowLoadingModel.lazy)
        return self._inner.embed(texts)

    lazy = ""  # the name of that module, when it has one


#: a module whose import takes a second, and says when it has begun
LAZY_MODULE = """
import builtins, time
builtins.sgmem_test_importing.set()
time.sleep(1.0)
"""


@pytest.mark.parametrize(
    "when", ["loading the model", "first encoding", "loading longer than a fork waits", "a first add loading it"]
)
def test_a_child_forked_while_warmup_runs_can_add(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """The docs suggest ``Memory.warmup()`` on a thread at start-up; a pre-forking server forks meanwhile. The
    fork waits for the warm-up, so the child neither loads the model again nor finds a lock or an import held
    by a thread it does not have; a load longer than a fork waits (``FORK_WAIT_S``) is done again by the child."""
    import builtins

    from sgmem import forks

    if when == "loading longer than a fork waits":
        monkeypatch.setattr(forks, "FORK_WAIT_S", 0.05)
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = _SlowLoadingModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    monkeypatch.setattr(_SlowLoadingModel, "loaded_in", [])
    monkeypatch.setattr(_SlowLoadingModel, "started", threading.Event())
    importing = threading.Event()
    monkeypatch.setattr(builtins, "sgmem_test_importing", importing, raising=False)
    if when == "first encoding":
        name = f"sgmem_test_lazy_{os.getpid()}_{time.monotonic_ns()}"
        (tmp_path / f"{name}.py").write_text(LAZY_MODULE)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setattr(_SlowLoadingModel, "lazy", name)
    embedder = sgmem.SentenceTransformerEmbedder(dim=384)  # the default model, loaded lazily
    with sgmem.Memory(tmp_path / "store", embedder=embedder) as mem:
        if when == "a first add loading it":  # no warm-up: the model loads inside a request's first add
            first = [{"role": "user", "content": "I keep bees."}]
            warm = threading.Thread(target=mem.add, args=(first,), kwargs={"scope": "parent", "thread": "t"})
        else:
            warm = threading.Thread(target=mem.warmup)
        warm.start()
        began = importing if when == "first encoding" else _SlowLoadingModel.started
        assert began.wait(60)
        got = _fork_and_add(mem)
        warm.join(30)
    # the child loads the model again only when the fork could not wait for the parent's load
    assert got == ("added", 1, when == "loading longer than a fork waits"), got


class _LockThatLetsAnotherThreadIn:
    """A guarded lock (as a store's) whose taking by the fork lets another thread start opening a Memory: the
    fork then happens while that thread registers its locks (``guard_at_fork``), which in a real process is a
    matter of timing (about 1 in 300 forks while another thread opens Memories)."""

    def __init__(self, registering: threading.Event, inside: threading.Event) -> None:
        self._lock = threading.Lock()
        self.registering, self.inside = registering, inside

    def acquire(self, timeout: float = -1) -> bool:
        if self.registering.is_set():  # once: the fork's own acquisition
            return self._lock.acquire(timeout=timeout)
        self.registering.set()
        self.inside.wait(10)
        return self._lock.acquire(timeout=timeout)

    def release(self) -> None:
        self._lock.release()


class _Holder:
    _lock: _LockThatLetsAnotherThreadIn


def test_a_child_forked_while_another_thread_opens_a_memory_can_add(tmp_path: Path) -> None:
    from sgmem import forks

    registering, inside = threading.Event(), threading.Event()
    holder = _Holder()
    holder._lock = _LockThatLetsAnotherThreadIn(registering, inside)
    with sgmem.Memory(tmp_path / "store", embedder=FastEmbedder()) as mem:
        mem.add([{"role": "user", "content": "the parent was here"}], scope="parent", thread="t")
        forks.guard_at_fork(holder, "_lock", rank=9)

        def opener() -> None:  # another thread opening a Memory: inside guard_at_fork's registration
            registering.wait(30)
            with forks._registry_lock:
                inside.set()
                time.sleep(0.5)

        other = threading.Thread(target=opener)
        other.start()
        got = _fork_and_add(mem)
        other.join(10)
    assert got[:2] == ("added", 1), got
