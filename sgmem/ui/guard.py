"""The page's walls: the Host and Origin a request may carry, and the write token.

A page served on localhost can still be reached by any web site the
developer visits: a site can point a name it controls at 127.0.0.1 (DNS
rebinding) and then read the page as its own origin, or post a form to it
from its own origin. The first needs the browser to send the attacker's name
in ``Host``; the second sends the attacker's page in ``Origin``. Both are
refused here before any route runs. Writes also need the per-run token, which
only whoever reads the terminal that started the server knows.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Iterable
from typing import Any

__all__ = ["TOKEN_HEADER", "HostOriginGuard", "allowed_hosts", "new_token", "token_ok"]

#: The request header that may carry the write token instead of the ``token`` form field.
TOKEN_HEADER = "x-sgmem-token"

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` values (``name:port``, lower case) a server bound to ``host``:``port`` answers.

    The bound address itself and, for a loopback or wildcard bind, the loopback names; never a DNS name
    other than ``localhost`` (a rebound name is exactly what the check stops).
    """
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = {name.lower()}
    if _is_loopback(host) or host in ("0.0.0.0", "::"):
        names.update(_LOOPBACK_NAMES)
    out = {f"{n}:{port}" for n in names}
    if port == 80:
        out |= names
    return frozenset(out)


def new_token() -> str:
    """A fresh write token for one run of the server."""
    return secrets.token_urlsafe(18)


def token_ok(expected: str | None, given: str | None) -> bool:
    """Whether ``given`` is the run's write token (compared in constant time)."""
    if not expected or not isinstance(given, str):
        return False
    return secrets.compare_digest(given.encode(), expected.encode())


class HostOriginGuard:
    """ASGI middleware: answers 403 to a request whose ``Host`` or ``Origin`` names another site."""

    def __init__(self, app: Any, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "").lower()
        origin = headers.get("origin")
        reason = None
        if host not in self.hosts:
            reason = f"Host {host!r} is not this server's address (allowed: {', '.join(sorted(self.hosts))})"
        elif origin is not None and origin.lower() not in self.origins:
            reason = f"Origin {origin!r} is another site"
        if reason is None:
            await self.app(scope, receive, send)
            return
        body = f"403 Forbidden: {reason}.\n".encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
