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
import threading
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
