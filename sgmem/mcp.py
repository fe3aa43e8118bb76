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
``/mcp``). Over HTTP every request's ``Host`` (and ``Origin``, when sent) must
name this server: the loopback names, the bind address, or a name given with
``--allow-host`` (a web page cannot reach it by DNS rebinding). With
``$SGMEM_MCP_TOKEN`` set, every request must carry ``Authorization: Bearer
<token>``; a bind address other than loopback is refused without one. Needs
the ``mcp`` extra: ``pip install 'sgmem[mcp]'``.

Example (what an MCP client runs)::

    sgmem mcp --path ~/.sgmem --scope alice
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import ipaddress
import logging
import os
import sys
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import DependencyError, InvalidInputError, SgmemError

if TYPE_CHECKING:
    from .memory import Memory
    from .tools import MemoryTools

__all__ = ["ROW_SECURITY_ENV", "SCOPE_ENV", "TOKEN_ENV", "add_arguments", "build_server", "main", "serve"]

#: The environment variable that names the served scope when ``--scope`` is not given.
SCOPE_ENV = "SGMEM_SCOPE"
#: The environment variable holding the bearer token HTTP clients must send (never a command-line option,
#: which other users of the machine can read in the process list).
TOKEN_ENV = "SGMEM_MCP_TOKEN"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: The environment variable that switches row security on for a PostgreSQL store (``1``/``true``), as
#: ``--row-security`` does (``Config.pg_row_security``).
ROW_SECURITY_ENV = "SGMEM_PG_ROW_SECURITY"
TRANSPORTS = ("stdio", "streamable-http")

INSTRUCTIONS = (
    "Long-term memory of the user you are talking to, kept across conversations. Call recall (or context) "
    "before answering anything that may depend on earlier conversations; call remember to keep a fact "
    "worth knowing later; forget deletes memories by the ids recall returns."
)


#: the recall and context tools' optional ``now`` argument, in their descriptions
_NOW = (
    " Times in the query ('last week', 'three days ago', 'in May') are read relative to the present, "
    "or to now (an ISO-8601 time) when given: pass the conversation's present time when it is not today."
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
    log_level: str = "WARNING",
) -> Any:
    """An MCP server (the SDK's ``FastMCP`` / ``MCPServer``) whose tools act on ``scope`` of ``tools.memory``.

    Args:
        tools: the memory operations (a :class:`sgmem.tools.MemoryTools`).
        scope: the one scope every tool call acts on.
        read_only: offer only ``recall``, ``context`` and ``list_threads``.
        host, port: where the streamable HTTP transport listens (ignored on stdio).
        log_level: what the SDK logs on stderr. ``"WARNING"`` (the default) leaves out its INFO line per
            request ("Processing request of type CallToolRequest"); ``sgmem --debug mcp`` passes ``"DEBUG"``.
    """
    from .tools import DESCRIPTIONS
    from .validate import check_name

    scope = check_name(scope, "scope", tools.memory.config.limits)
    server_cls, major, annotations, tool_error = _sdk()
    http = {} if major == 2 else {"host": host, "port": port, "log_level": log_level}
    server = server_cls("sgmem", instructions=INSTRUCTIONS, **http)
    # 1.x configures logging from log_level; the SDK's own loggers are set for 2.x too
    logging.getLogger("mcp").setLevel(log_level)
    low = getattr(server, "_mcp_server", None)
    if low is not None and hasattr(low, "version"):  # the SDK reports its own version otherwise
        low.version = __version__
    reading = annotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)

    async def call(op: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        # the SDK's ToolError is a failure the model should read: mcp 2.x shows any other exception's text
        # to nobody but the server's log
        try:
            return await op
        except SgmemError as exc:
            raise tool_error(str(exc)) from exc

    async def recall(query: str, k: int | None = None, now: str | None = None) -> dict[str, Any]:
        return await call(tools.arecall(scope, query, k, now))

    async def context(query: str, budget_tokens: int | None = None, now: str | None = None) -> dict[str, Any]:
        return await call(tools.acontext(scope, query, budget_tokens, now))

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
    server.tool(name="recall", description=DESCRIPTIONS["recall"] + _NOW, annotations=reading)(recall)
    server.tool(name="context", description=DESCRIPTIONS["context"] + _NOW, annotations=reading)(context)
    if not read_only:
        server.tool(
            name="forget",
            description=DESCRIPTIONS["forget"],
            annotations=annotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False),
        )(forget)
    server.tool(name="list_threads", description=DESCRIPTIONS["list_threads"], annotations=reading)(list_threads)
    return server


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http(host: str, port: int, token: str | None) -> None:
    """Refuse an HTTP bind that anyone on the network could use: a port out of range, or a non-loopback
    address without a bearer token (``$SGMEM_MCP_TOKEN``)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise InvalidInputError("--port", port, "a TCP port from 1 to 65535, e.g. 8000")
    if not _is_loopback(host) and not token:
        raise InvalidInputError(
            "--host",
            host,
            "a loopback address (127.0.0.1, localhost, ::1), or a bearer token for clients to send",
            f"Whoever reaches {host}:{port} could read and change the scope's memory: set {TOKEN_ENV} to a long "
            "random secret (clients send 'Authorization: Bearer <secret>'), or keep the default 127.0.0.1.",
        )


class HttpGuard:
    """ASGI middleware in front of the streamable HTTP app: checks ``Host``, ``Origin`` and the bearer token.

    A request whose ``Host`` is not one of ``hosts`` (with or without the port), or whose ``Origin`` names
    another host, gets 403 (a web page the user visits cannot reach the server by DNS rebinding); with a
    ``token``, a request without ``Authorization: Bearer <token>`` gets 401.
    """

    def __init__(self, app: Any, hosts: list[str], port: int, token: str | None) -> None:
        self.app = app
        self.hosts = {h.strip("[]").lower() for h in hosts}
        self.port = port
        self.token = token.encode() if token else None

    def _host_ok(self, value: str) -> bool:
        """Whether a ``Host`` value (``name``, ``name:port``, ``[v6]:port``) names this server."""
        if value.startswith("["):
            name, _, rest = value[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else rest
        elif value.count(":") == 1:
            name, port = value.split(":")
        else:  # a name without a port, or a bare IPv6 address
            name, port = value, ""
        return bool(name) and name.lower() in self.hosts and port in ("", str(self.port))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        origin = headers.get("origin")
        if not self._host_ok(headers.get("host", "")) or (
            origin is not None and not self._host_ok(origin.split("://", 1)[-1].rstrip("/"))
        ):
            return await _reply(send, 403, "Forbidden: this server does not answer to that Host or Origin\n", {})
        if self.token is not None:
            got = headers.get("authorization", "")
            scheme, _, value = got.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
                return await _reply(send, 401, "Unauthorized\n", {"www-authenticate": "Bearer"})
        return await self.app(scope, receive, send)


async def _reply(send: Any, status: int, text: str, extra: dict[str, str]) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve(
    memory: Memory,
    scope: str,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    thread: str = "memories",
    allow_hosts: list[str] | None = None,
    token: str | None = None,
    ready: str | None = None,
    log_level: str = "WARNING",
) -> None:
    """Serve ``scope`` of ``memory`` until the client disconnects (stdio) or the process is stopped (HTTP).

    The caller owns ``memory`` (and closes it); load its model first
    (``Memory(..., preload=True)``) so the first call does not pay for it.
    Over HTTP, requests are checked by :class:`HttpGuard`: ``Host`` and ``Origin`` must name the loopback
    names, ``host`` or one of ``allow_hosts``; with ``token``, the bearer token is required (and a
    non-loopback ``host`` is refused without one). ``ready`` is printed on stderr once the server is set up.
    ``log_level`` is the SDK's (:func:`build_server`): by default no line per request.
    """
    from .tools import MemoryTools

    if transport not in TRANSPORTS:
        raise InvalidInputError("transport", transport, f"one of {', '.join(TRANSPORTS)}")
    if transport != "stdio":
        check_http(host, port, token)
    server = build_server(
        MemoryTools(memory, thread=thread), scope, read_only=memory.read_only, host=host, port=port, log_level=log_level
    )
    if ready:
        print(ready, file=sys.stderr, flush=True)
    if transport == "stdio":
        server.run(transport)
        return
    import uvicorn

    wildcard = host in ("0.0.0.0", "::", "")
    hosts = [*LOOPBACK, *([] if wildcard else [host]), *(allow_hosts or [])]
    app = HttpGuard(server.streamable_http_app(), hosts, port, token)
    uvicorn.run(app, host=host, port=port, log_level=log_level.lower())


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
        help=f"streamable-http: the address to listen on (127.0.0.1); any other needs ${TOKEN_ENV}",
    )
    parser.add_argument("--port", type=int, default=8000, help="streamable-http: the port (8000); path /mcp")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="streamable-http: another name clients reach the server by (Host and Origin checks); repeatable",
    )
    parser.add_argument(
        "--row-security",
        action="store_true",
        help=f"a PostgreSQL store with row-level security (Config.pg_row_security; or ${ROW_SECURITY_ENV}=1); "
        "its signed form's key is read from $SGMEM_PG_SCOPE_KEY, which implies this",
    )
    parser.add_argument("--thread", default="memories", help="the thread remember writes to by default (memories)")
    parser.add_argument(
        "--read-only", action="store_true", help="open the store read-only: only recall, context and list_threads"
    )


def store_config(path: str, row_security: bool) -> Any:
    """The :class:`sgmem.Config` for the served store: row security from ``--row-security`` or
    ``$SGMEM_PG_ROW_SECURITY``, its signed form's key from ``$SGMEM_PG_SCOPE_KEY`` (``None``: the defaults)."""
    from .config import Config
    from .saved import SCOPE_KEY_ENV

    flag = os.environ.get(ROW_SECURITY_ENV, "").strip().lower()
    if flag not in ("", "0", "1", "true", "false", "yes", "no"):
        raise InvalidInputError(ROW_SECURITY_ENV, flag, "1 (or true, yes) to switch row security on, 0 or unset")
    key = os.environ.get(SCOPE_KEY_ENV) or None
    wanted = row_security or flag in ("1", "true", "yes") or key is not None
    if not wanted:
        return None
    if "://" not in str(path):
        raise InvalidInputError(
            "--row-security",
            True,
            "a PostgreSQL store (--store postgresql://... or $SGMEM_STORE)",
            f"Row security is a PostgreSQL feature; unset {ROW_SECURITY_ENV} and {SCOPE_KEY_ENV} for a directory.",
        )
    return Config(pg_row_security=True, pg_scope_key=key)


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
    check_name(args.thread, "--thread", Limits(), new=True)
    token = os.environ.get(TOKEN_ENV) or None
    if args.transport != "stdio":
        check_http(args.host, args.port, token)  # before the model loads
    _sdk()  # a missing SDK is reported before the model loads
    # FAISS logs which optional CPU builds it could not load (at INFO, which the SDK shows): noise, not a failure
    logging.getLogger("faiss").setLevel(logging.WARNING)
    config = store_config(args.path, bool(args.row_security))
    t0 = time.perf_counter()
    # the model's loading must not write to stdout, which is the stdio transport's channel
    with contextlib.redirect_stdout(sys.stderr):
        memory = Memory(args.path, preload=True, read_only=bool(args.read_only), config=config)
    where = "stdio" if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp"
    ready = (
        f"sgmem {__version__} mcp: serving scope {scope!r} of {memory!r} over {where}"
        f"{' (read-only)' if args.read_only else ''}; model loaded in {time.perf_counter() - t0:.1f} s, ready"
    )
    with memory:
        serve(
            memory,
            scope,
            transport=args.transport,
            host=args.host,
            port=args.port,
            thread=args.thread,
            allow_hosts=list(args.allow_host),
            token=token,
            ready=ready,
            log_level="DEBUG" if getattr(args, "debug", False) else "WARNING",
        )
    return 0
