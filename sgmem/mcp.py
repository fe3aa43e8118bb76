"""``sgmem mcp``: one store's memory for every MCP client, through the official ``mcp`` SDK.

A server process serves one store (a directory or a ``postgresql://`` URL)
and one scope, fixed by the operator (``--scope`` or ``$SGMEM_SCOPE``): the
tools take no scope argument, so a client, or the model behind it, cannot read
or change another scope's memory. Run one process per user (or per
connection, started by the client) to serve several.

Tools (see :mod:`sgmem.tools`): ``remember``, ``recall``, ``context``,
``forget``, ``list_threads``. A bad call returns an MCP tool error whose text
says what was wrong; nothing is stored or deleted by it.

The embedding model is loaded once, when the server starts (before it answers
``initialize``), so a tool call costs a search, not a model load
(``python -m benchmarks.mcp_latency`` measures both).

Transports: stdio (default: the client starts the process) or streamable
HTTP (``--transport streamable-http --host 127.0.0.1 --port 8000``, path
``/mcp``). The HTTP transport has no authentication of its own: whoever
reaches the port reads the scope's memory, so keep it on localhost or behind
a proxy that authenticates. Needs the ``mcp`` extra: ``pip install 'sgmem[mcp]'``.

Example (what an MCP client runs)::

    sgmem mcp --path ~/.sgmem --scope alice
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from .errors import DependencyError, InvalidInputError, SgmemError

if TYPE_CHECKING:
    from .memory import Memory
    from .tools import MemoryTools

__all__ = ["SCOPE_ENV", "add_arguments", "build_server", "main", "serve"]

#: The environment variable that names the served scope when ``--scope`` is not given.
SCOPE_ENV = "SGMEM_SCOPE"
TRANSPORTS = ("stdio", "streamable-http")

INSTRUCTIONS = (
    "Long-term memory of the user you are talking to, kept across conversations. Call recall (or context) "
    "before answering anything that may depend on earlier conversations; call remember to keep a fact "
    "worth knowing later; forget deletes memories by the ids recall returns."
)


def _sdk() -> tuple[Any, int, Any, type[Exception]]:
    """The SDK's high-level server class, its major version, ``ToolAnnotations`` and ``ToolError``."""
    try:
        from mcp.types import ToolAnnotations
    except ImportError as exc:
        raise DependencyError(
            f"sgmem mcp needs the official MCP SDK, which is not installed ({exc}). "
            "Install the extra: pip install 'sgmem[mcp]'"
        ) from exc
    try:  # mcp 2.x renamed FastMCP to MCPServer (and moved the HTTP settings to run())
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError as V1ToolError

        return FastMCP, 1, ToolAnnotations, V1ToolError
    return MCPServer, 2, ToolAnnotations, ToolError


def build_server(
    tools: MemoryTools,
    scope: str,
    *,
    read_only: bool = False,
    host: str = "127.0.0.1",
    port: int = 8000,
) -> Any:
    """An MCP server (the SDK's ``FastMCP`` / ``MCPServer``) whose tools act on ``scope`` of ``tools.memory``.

    Args:
        tools: the memory operations (a :class:`sgmem.tools.MemoryTools`).
        scope: the one scope every tool call acts on.
        read_only: offer only ``recall``, ``context`` and ``list_threads``.
        host, port: where the streamable HTTP transport listens (ignored on stdio).
    """
    from .tools import DESCRIPTIONS
    from .validate import check_name

    scope = check_name(scope, "scope", tools.memory.config.limits)
    server_cls, major, annotations, tool_error = _sdk()
    http = {} if major == 2 else {"host": host, "port": port}
    server = server_cls("sgmem", instructions=INSTRUCTIONS, **http)
    reading = annotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)

    async def call(op: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        # the SDK's ToolError is a failure the model should read: mcp 2.x shows any other exception's text
        # to nobody but the server's log
        try:
            return await op
        except SgmemError as exc:
            raise tool_error(str(exc)) from exc

    async def recall(query: str, k: int | None = None) -> dict[str, Any]:
        return await call(tools.arecall(scope, query, k))

    async def context(query: str, budget_tokens: int | None = None) -> dict[str, Any]:
        return await call(tools.acontext(scope, query, budget_tokens))

    async def list_threads() -> dict[str, Any]:
        return await call(tools.alist_threads(scope))

    async def remember(text: str, thread: str | None = None) -> dict[str, Any]:
        return await call(tools.aremember(scope, text, thread))

    async def forget(message_ids: list[str] | None = None, thread: str | None = None) -> dict[str, Any]:
        return await call(tools.aforget(scope, message_ids, thread))

    if not read_only:
        server.tool(
            name="remember",
            description=DESCRIPTIONS["remember"],
            annotations=annotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False),
        )(remember)
    server.tool(name="recall", description=DESCRIPTIONS["recall"], annotations=reading)(recall)
    server.tool(name="context", description=DESCRIPTIONS["context"], annotations=reading)(context)
    if not read_only:
        server.tool(
            name="forget",
            description=DESCRIPTIONS["forget"],
            annotations=annotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False),
        )(forget)
    server.tool(name="list_threads", description=DESCRIPTIONS["list_threads"], annotations=reading)(list_threads)
    return server


def serve(
    memory: Memory,
    scope: str,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    thread: str = "memories",
) -> None:
    """Serve ``scope`` of ``memory`` until the client disconnects (stdio) or the process is stopped (HTTP).

    The caller owns ``memory`` (and closes it); load its model first
    (``Memory(..., preload=True)``) so the first call does not pay for it.
    """
    from .tools import MemoryTools

    if transport not in TRANSPORTS:
        raise InvalidInputError("transport", transport, f"one of {', '.join(TRANSPORTS)}")
    server = build_server(MemoryTools(memory, thread=thread), scope, read_only=memory.read_only, host=host, port=port)
    if transport == "stdio" or _sdk()[1] == 1:
        server.run(transport)
    else:
        server.run(transport, host=host, port=port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sgmem mcp`` options (the store's ``--path`` / ``--store`` are the CLI's own)."""
    parser.add_argument(
        "--scope",
        default=None,
        help=f"the one scope this server reads and writes (default ${SCOPE_ENV}); clients cannot choose another",
    )
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio", help="stdio (default) or streamable-http")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="streamable-http: the address to listen on (127.0.0.1; there is no authentication: keep it local)",
    )
    parser.add_argument("--port", type=int, default=8000, help="streamable-http: the port (8000); path /mcp")
    parser.add_argument("--thread", default="memories", help="the thread remember writes to by default (memories)")
    parser.add_argument(
        "--read-only", action="store_true", help="open the store read-only: only recall, context and list_threads"
    )


def main(args: argparse.Namespace) -> int:
    """``sgmem mcp``: check the options, load the model, then serve (see the module docstring)."""
    from .memory import Memory
    from .validate import check_name

    scope = args.scope if args.scope is not None else os.environ.get(SCOPE_ENV)
    if scope is None:
        raise InvalidInputError(
            "--scope",
            None,
            "the scope this server serves",
            f"Pass --scope NAME or set {SCOPE_ENV}; the server never lets a client pick the scope.",
        )
    from .config import Limits

    check_name(scope, "--scope", Limits())
    check_name(args.thread, "--thread", Limits())
    _sdk()  # a missing SDK is reported before the model loads
    # the model's loading must not write to stdout, which is the stdio transport's channel
    with contextlib.redirect_stdout(sys.stderr):
        memory = Memory(args.path, preload=True, read_only=bool(args.read_only))
    with memory:
        serve(memory, scope, transport=args.transport, host=args.host, port=args.port, thread=args.thread)
    return 0
