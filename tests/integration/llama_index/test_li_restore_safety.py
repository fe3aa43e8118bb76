"""Restoring saved adapter state never connects to, or creates, a store the application did not name.

Saved state (``to_dict``, a pickle, a workflow ``Context``, a chat buffer's
JSON) may come from elsewhere. A ``store_url`` naming another host must not
make the process connect there (libpq would send ``PGPASSWORD`` to it), and a
``store_path`` must not create a directory and a ``sgmem.db`` wherever it says.
Every route refuses with an :class:`sgmem.SgmemError` saying how to allow a store.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import select
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sgmem
import sgmem.saved
from llama_index_sgmem import SGMemChatStore, SGMemMemory
from llama_index_sgmem.memory import _restore_memory

from .helpers import FACT, user

pytestmark = pytest.mark.integration


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A local listening socket: a connection to it shows as a readable socket."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield sock
    finally:
        sock.close()


def _connected(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0.3)[0])


class _Crafted:
    """What a crafted pickle does: call the adapter's own restore function with chosen data."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_memory, (self.data,))


def _nested(pair: dict[str, str]) -> str:
    """``"key": "value"`` as it reads inside a JSON string inside JSON (how a Context holds a component)."""
    return json.dumps(json.dumps(pair)[1:-1])[1:-1]


def _workflow_restore(memory: SGMemMemory, old: dict[str, str], new: dict[str, str]) -> Any:
    from workflows import Context, Workflow, step
    from workflows.events import StartEvent, StopEvent

    class Remember(Workflow):
        @step
        async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await ctx.store.set("memory", ev.memory)
            return StopEvent(result="ok")

    async def run() -> Any:
        wf = Remember()
        handler = wf.run(memory=memory)
        await handler
        text = json.dumps(handler.ctx.to_dict())
        assert _nested(old) in text
        data = json.loads(text.replace(_nested(old), _nested(new)))
        return await Context.from_dict(wf, data).store.get("memory")

    return asyncio.run(run())


@pytest.fixture
def saved(embedder: sgmem.Embedder, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The saved forms of a memory, a chat store and a chat buffer on a path store (closed afterwards)."""
    from llama_index.core.memory import ChatMemoryBuffer

    store = sgmem.Memory(tmp_path / "m", embedder=embedder)
    mem = SGMemMemory.from_defaults(memory=store, scope="alice", thread="t1")
    mem.put(user(FACT))
    chat = SGMemChatStore(store, scope="alice")
    buf = ChatMemoryBuffer.from_defaults(chat_store=chat, chat_store_key="t1")
    yield {"memory": mem, "chat": chat.to_dict(), "buffer": buf.to_string(), "path": str(tmp_path / "m")}
    store.close()


def _routes(saved: dict[str, Any], key: str, value: str) -> dict[str, Callable[[], Any]]:
    """Each way of restoring, with the saved store replaced by ``key``: ``value``."""
    from llama_index.core.memory import ChatMemoryBuffer

    mem = saved["memory"].to_dict()
    crafted = {k: v for k, v in mem.items() if k not in ("store_path", "store_url")}
    crafted[key] = value
    chat = {k: v for k, v in saved["chat"].items() if k not in ("store_path", "store_url")}
    chat[key] = value
    buffer = json.loads(saved["buffer"])
    buffer["chat_store"] = {**{k: v for k, v in buffer["chat_store"].items() if k != "store_path"}, key: value}
    return {
        "SGMemMemory.from_dict": lambda: SGMemMemory.from_dict(crafted),
        "pickle": lambda: pickle.loads(pickle.dumps(_Crafted(crafted))),
        "SGMemChatStore.from_dict": lambda: SGMemChatStore.from_dict(chat),
        "ChatMemoryBuffer.from_string": lambda: ChatMemoryBuffer.from_string(json.dumps(buffer)),
        "workflow Context": lambda: _workflow_restore(saved["memory"], {"store_path": saved["path"]}, {key: value}),
    }


def _refused(route: str) -> Any:
    # a workflow Context wraps what a value's restore raises in its own ValueError, with the message kept
    return pytest.raises(
        ValueError if route == "workflow Context" else sgmem.SgmemError, match="has not opened or allowed"
    )


ROUTES = ["SGMemMemory.from_dict", "pickle", "SGMemChatStore.from_dict", "ChatMemoryBuffer.from_string",
          "workflow Context"]  # fmt: skip


@pytest.mark.parametrize("route", ROUTES)
def test_a_saved_url_naming_another_host_is_never_connected_to(
    route: str, saved: dict[str, Any], listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = listener.getsockname()[1]
    monkeypatch.setenv("PGPASSWORD", "the-deployments-password")
    # the application's own store is allowed by the environment: another one still is not
    monkeypatch.setenv("SGMEM_STORE_URL", saved["path"])
    url = f"postgresql://app:leaked-in-state@127.0.0.1:{port}/db?connect_timeout=2"
    with _refused(route) as err:
        _routes(saved, "store_url", url)[route]()
    assert not _connected(listener), "restoring connected to the host the saved state named"
    assert "sgmem.saved.allow" in str(err.value) and "leaked-in-state" not in str(err.value)


@pytest.mark.parametrize("route", ROUTES)
def test_a_saved_path_the_application_did_not_name_creates_nothing(
    route: str, saved: dict[str, Any], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere" / "store"
    with _refused(route):
        _routes(saved, "store_path", str(elsewhere))[route]()
    assert not (tmp_path / "elsewhere").exists()


def test_a_store_the_application_allows_is_reopened(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    store = sgmem.Memory(tmp_path / "allowed", embedder=embedder)
    mem = SGMemMemory.from_defaults(memory=store, scope="alice", thread="t1")
    mem.put(user(FACT))
    data = mem.to_dict()
    assert SGMemMemory.from_dict(data).memory is store  # open in this process: reused
    store.close()
    with pytest.raises(sgmem.SgmemError, match="has not opened or allowed"):
        SGMemMemory.from_dict(data)
    sgmem.saved.allow(tmp_path / "allowed")
    back = SGMemMemory.from_dict(data)
    assert back.get_all() == [user(FACT)]
    back.memory.close()
