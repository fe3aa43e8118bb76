"""A blocking MCP client for tests: the SDK's own ``stdio_client`` + ``ClientSession``, on a thread of its own.

The session (its subprocess and anyio task group) lives in one task of a
private event loop, so a module-scoped fixture can keep one server process for
many synchronous tests; each call is submitted to that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[3]
#: The interpreter that runs the servers: this one, unless ``SGMEM_TEST_MCP_PYTHON`` names another (e.g. an
#: environment with the other major version of the mcp SDK, to check the server against it with this client).
PYTHON = os.environ.get("SGMEM_TEST_MCP_PYTHON") or sys.executable
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def server_params(args: Sequence[str], env: dict[str, str] | None = None) -> StdioServerParameters:
    """``python ARGS`` in the repository root, with this environment (plus ``env``) and offline model hubs."""
    return StdioServerParameters(
        command=PYTHON, args=list(args), env={**os.environ, **OFFLINE, **(env or {})}, cwd=str(ROOT)
    )


def test_server(path: str, scope: str | None = None, env: dict[str, str] | None = None) -> StdioServerParameters:
    """The test server (:mod:`tests.integration.mcp.server`, HashEmbedder) on store ``path``."""
    args = ["-m", "tests.integration.mcp.server", "--path", path]
    if scope is not None:
        args += ["--scope", scope]
    return server_params(args, env)


test_server.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


class McpClient:
    """One server process and one initialised session; ``call`` blocks until the tool's result."""

    def __init__(self, params: StdioServerParameters, timeout_s: float = 600.0, errlog: Path | None = None) -> None:
        self.timeout_s = timeout_s
        self._errlog = errlog  # where the server's stderr goes (default: nowhere)
        self._loop = asyncio.new_event_loop()
        self._ready: Future[Any] = Future()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, args=(params,), daemon=True)
        self._thread.start()
        self.init = self._ready.result(timeout_s)  # the InitializeResult, or the start-up error raised here

    def _run(self, params: StdioServerParameters) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main(params))

    async def _main(self, params: StdioServerParameters) -> None:
        self._stop = asyncio.Event()
        try:
            # the server's log (stderr) is not the test's output
            with open(self._errlog or os.devnull, "w") as devnull:
                async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as s:
                    self.session = s
                    self._ready.set_result(await s.initialize())
                    await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting constructor
            if not self._ready.done():
                self._ready.set_exception(exc)

    def _submit(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout_s)

    def list_tools(self) -> Any:
        return self._submit(self.session.list_tools())

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """The raw ``CallToolResult``."""
        return self._submit(self.session.call_tool(name, arguments or {}))

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A successful call's result as a dict (fails the test on a tool error)."""
        res = self.call(name, arguments)
        assert not res.isError, f"{name}({arguments}) failed: {text_of(res)}"
        return dict(res.structuredContent or json.loads(text_of(res)))

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """A failing call's error text (fails the test if the call succeeded)."""
        res = self.call(name, arguments)
        assert res.isError, f"{name}({arguments}) should have failed but returned {text_of(res)}"
        return text_of(res)

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(path: str, scope: str, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """The test server on the streamable HTTP transport; yields its URL (``http://127.0.0.1:PORT/mcp``).

    ``extra``: more options of the test server (``--host``, ``--allow-host``); ``env``: its environment's additions.
    """
    port = _free_port()
    params = test_server(path, scope, env)
    proc = subprocess.Popen(
        [params.command, *params.args, "--transport", "streamable-http", "--port", str(port), *extra],
        env=params.env,
        cwd=params.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(3000):  # until it listens (or exits)
            assert proc.poll() is None, "the server exited"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(30)
