"""The ``sgmem mcp`` command as a user runs it: the default MiniLM embedder, the operator's scope, the transports."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

import sgmem  # noqa: E402
from tests.integration.mcp.client import (
    OFFLINE,
    PYTHON,
    ROOT,
    McpClient,
    http_server,
    server_params,
    test_server,
    text_of,
)  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.mark.slow
def test_sgmem_mcp_with_the_default_embedder(tmp_path: Path) -> None:
    """What a user gets: the real command, MiniLM, the default relevance cutoff."""
    store = tmp_path / "store"
    env = {"SGMEM_PATH": str(store)}  # the store from the environment, like the other commands
    client = McpClient(server_params(["-m", "sgmem.cli", "mcp", "--scope", "alice"], env))
    try:
        assert client.init.serverInfo.name == "sgmem"
        client.ok("remember", {"text": "Alice adopted a grey cat named Miso last spring."})
        client.ok("remember", {"text": "Alice is training for the Berlin marathon in September."})
        found = client.ok("recall", {"query": "What is the name of Alice's pet?"})["memories"]
        assert found[0]["text"] == "Alice adopted a grey cat named Miso last spring."
        assert found[0]["relevance"] >= 0.15  # MiniLM's calibrated cutoff (its relevance half)
        assert client.ok("recall", {"query": "How do I fix a flat bicycle tyre?"}) == {"memories": []}
        assert "Miso" in client.ok("context", {"query": "Alice's cat"})["context"]
    finally:
        client.close()
    with sgmem.Memory(store, read_only=True) as mem:
        assert mem.stats().embedder == "sentence-transformers/all-MiniLM-L6-v2"
        assert mem.scopes() == ["alice"] and mem.threads(scope="alice") == ["memories"]


def _sgmem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SGMEM_SCOPE", "SGMEM_PATH", "SGMEM_STORE")}
    return subprocess.run(
        [PYTHON, "-m", "sgmem.cli", *args],
        env={**clean, **OFFLINE, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_a_server_without_a_scope_or_with_a_bad_option_refuses_to_start_and_creates_nothing(tmp_path: Path) -> None:
    res = _sgmem("mcp", "--path", str(tmp_path / "store"), env={})
    assert res.returncode == 2
    assert "--scope" in res.stderr and "SGMEM_SCOPE" in res.stderr
    assert not (tmp_path / "store").exists()
    res = _sgmem("mcp", "--path", str(tmp_path / "store"), "--scope", " ", env={})
    assert res.returncode == 2 and "--scope" in res.stderr
    assert not (tmp_path / "store").exists()
    res = _sgmem("mcp", "--path", str(tmp_path / "store"), "--scope", "alice", "--thread", "", env={})
    assert res.returncode == 2 and "--thread" in res.stderr
    assert not (tmp_path / "store").exists()


def test_a_read_only_server_offers_only_the_reading_tools(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    writer = McpClient(test_server(store, "alice"))
    try:
        writer.ok("remember", {"text": "Alice's locker is number 112."})
    finally:
        writer.close()
    reader = McpClient(
        server_params(["-m", "tests.integration.mcp.server", "--path", store, "--read-only"], {"SGMEM_SCOPE": "alice"})
    )
    try:
        assert sorted(t.name for t in reader.list_tools().tools) == ["context", "list_threads", "recall"]
        assert reader.ok("recall", {"query": "locker number"})["memories"][0]["text"] == "Alice's locker is number 112."
        assert "Unknown tool" in reader.error("remember", {"text": "x"})
    finally:
        reader.close()


async def _over_http(url: str) -> dict[str, Any]:
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        names = sorted(t.name for t in (await session.list_tools()).tools)
        stored = await session.call_tool("remember", {"text": "Alice's passport expires in 2031."})
        found = await session.call_tool("recall", {"query": "passport expiry"})
        return {"names": names, "stored": stored, "found": found}


def test_streamable_http_transport(tmp_path: Path) -> None:
    with http_server(str(tmp_path / "store"), "alice") as url:
        out = asyncio.run(_over_http(url))
    assert out["names"] == ["context", "forget", "list_threads", "recall", "remember"]
    assert not out["stored"].isError and not out["found"].isError
    assert "passport expires in 2031" in text_of(out["found"])
