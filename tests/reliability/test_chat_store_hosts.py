"""LlamaIndex's chat store on one store shared by several hosts (processes): deletes that read first.

``delete_last_message`` and ``delete_message(key, idx)`` choose a message by
position and then delete it: two hosts that read the same thread at once chose
the same message, both returned it and one delete was lost. Each is now a
compare-and-swap on the thread (:meth:`sgmem.Memory.pop`), like ``set_messages``
and ``add_message(idx=)``: every call deletes and returns a different message.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import sgmem

from .helpers import FastEmbedder

pytest.importorskip("llama_index.core")

pytestmark = pytest.mark.integration

N_MESSAGES, N_HOSTS, N_CALLS = 40, 2, 10
SCOPE, KEY = "shared", "chat"


def _host(target: str, w: int, call: str, folder: str) -> list[str]:
    """One host: open the store, wait for the others, make ``N_CALLS`` deletes; the texts they returned."""
    from llama_index_sgmem import SGMemChatStore

    got: list[str] = []
    with sgmem.Memory(target, embedder=FastEmbedder(), config=sgmem.Config(busy_timeout_s=60)) as mem:
        store = SGMemChatStore(memory=mem, scope=SCOPE)
        Path(folder, f"ready-{w}").touch()
        deadline = time.monotonic() + 60
        while not Path(folder, "go").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        for _ in range(N_CALLS):
            msg = store.delete_last_message(KEY) if call == "last" else store.delete_message(KEY, 0)
            got.append("" if msg is None else str(msg.content))
    return got


def _hosts_delete(target: str, call: str, folder: Path) -> list[list[str]]:
    with sgmem.Memory(target, embedder=FastEmbedder()) as mem:
        mem.add([{"role": "user", "content": f"message {i}"} for i in range(N_MESSAGES)], scope=SCOPE, thread=KEY)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=N_HOSTS, mp_context=ctx) as pool:
        futures = [pool.submit(_host, target, w, call, str(folder)) for w in range(N_HOSTS)]
        deadline = time.monotonic() + 120
        while len(list(folder.glob("ready-*"))) < N_HOSTS and time.monotonic() < deadline:
            if any(f.done() for f in futures):
                break  # a host failed before it was ready: its result raises below
            time.sleep(0.01)
        (folder / "go").touch()
        return [f.result(timeout=240) for f in futures]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "store")


@pytest.mark.parametrize("call", ["last", "first"])
def test_hosts_deleting_from_one_key_each_get_a_different_message(target: str, call: str, tmp_path: Path) -> None:
    folder = tmp_path / "sync"
    folder.mkdir()
    returned = _hosts_delete(target, call, folder)
    with sgmem.Memory(target, embedder=FastEmbedder()) as mem:
        left = [m.content for m in mem.messages(scope=SCOPE, thread=KEY)]
    got = [t for host in returned for t in host]
    assert len(left) == N_MESSAGES - N_HOSTS * N_CALLS, f"{len(left)} messages left: a delete was lost"
    assert "" not in got and len(set(got)) == len(got) == N_HOSTS * N_CALLS, f"returned twice or not at all: {got}"
    assert sorted(got + left) == sorted(f"message {i}" for i in range(N_MESSAGES))
    for host in returned:  # each host's calls return messages in the order they were in the thread
        order = [int(t.split()[1]) for t in host]
        assert order == sorted(order, reverse=call == "last")
