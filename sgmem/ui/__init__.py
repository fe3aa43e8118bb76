"""``sgmem ui``: a memory inspector in the browser, over one store.

A local web page, server-rendered (Starlette and Jinja2, one stylesheet, no
script and nothing from another site), that shows what :class:`sgmem.Memory`
holds and why it recalls what it does: scopes with their counts, a scope's
threads on a timeline, a thread's messages with each sentence's dialogue act,
a search with each hit's relevance against the cutoff and every channel's
contribution (``Hit.why``), the context block exactly as ``Memory.context``
returns it with its token count, and a generated memory's versions and sources.

Safe by default: it binds 127.0.0.1, answers 403 to any request whose ``Host``
or ``Origin`` is not the bound address (DNS rebinding, cross-site forms), and
opens a store directory read-only. With ``--write`` it can forget a message, a
thread or a scope, and each write needs the token printed in the terminal.
Needs the ``ui`` extra: ``pip install "sgmem[ui]"``.

Example::

    sgmem ui --path ~/.sgmem            # then open http://127.0.0.1:8765/
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import DependencyError, InvalidInputError

if TYPE_CHECKING:
    from ..embed import Embedder
    from ..memory import Memory

__all__ = ["DEFAULT_PORT", "add_arguments", "create_app", "main", "open_memory"]

#: The port ``sgmem ui`` listens on unless ``--port`` says otherwise.
DEFAULT_PORT = 8765


def create_app(memory: Memory, **kwargs: Any) -> Any:
    """The inspector as an ASGI app (see :func:`sgmem.ui.app.create_app`); needs the ``ui`` extra."""
    from .app import create_app as _create

    return _create(memory, **kwargs)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sgmem ui`` options (the store's ``--path`` / ``--store`` are the CLI's own)."""
    parser.add_argument("--scope", default=None, help="show only this scope (needed with --row-security)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port ({DEFAULT_PORT})")
    parser.add_argument(
        "--write",
        action="store_true",
        help="allow forgetting messages, threads and scopes; each write needs the token printed at start",
    )
    parser.add_argument(
        "--row-security",
        action="store_true",
        help="a PostgreSQL store with row security: open it as the app does (Config.pg_row_security; the signed "
        "form's key from $SGMEM_PG_SCOPE_KEY); needs --scope",
    )


def open_memory(
    path: Any, *, scope: str | None, write: bool, row_security: bool = False, embedder: Embedder | None = None
) -> Memory:
    """The store as the inspector opens it, its model loaded.

    A directory opens read-only unless ``write``. A PostgreSQL store opens as an app host opens it: with
    ``row_security``, ``Config(pg_row_security=True)`` and, when ``$SGMEM_PG_SCOPE_KEY`` is set, the signed
    form's key; row security shows a session one scope, so ``scope`` is then required.
    """
    from ..config import Config
    from ..memory import Memory
    from ..saved import SCOPE_KEY_ENV
    from ..targets import is_postgres_target

    if not is_postgres_target(path):
        if row_security:
            raise InvalidInputError("--row-security", True, "a PostgreSQL store (--store postgresql://...)")
        return Memory(path, embedder=embedder, read_only=not write, preload=True)
    if not row_security:
        return Memory(path, embedder=embedder, preload=True)
    if scope is None:
        raise InvalidInputError(
            "--scope", None, "the one scope to show", "Row security shows a session one scope: pass --scope NAME."
        )
    config = Config(pg_row_security=True, pg_scope_key=os.environ.get(SCOPE_KEY_ENV) or None)
    return Memory(path, embedder=embedder, config=config, preload=True)


def main(args: argparse.Namespace) -> int:
    """``sgmem ui``: open the store, print the address (and the write token), serve until interrupted."""
    try:
        import uvicorn

        from .app import create_app as _create
    except ImportError as exc:
        raise DependencyError('sgmem ui needs Starlette, uvicorn and Jinja2: pip install "sgmem[ui]"') from exc
    from ..config import Limits
    from ..validate import check_int, check_name
    from .guard import allowed_hosts, new_token

    if args.scope is not None:
        check_name(args.scope, "--scope", Limits())
    port = check_int(args.port, "--port", 1, 65535)
    memory = open_memory(args.path, scope=args.scope, write=bool(args.write), row_security=bool(args.row_security))
    with memory:
        token = new_token() if args.write else None
        app = _create(
            memory, hosts=allowed_hosts(args.host, port), scope=args.scope, write=bool(args.write), token=token
        )
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(f"sgmem ui: http://{shown}:{port}/  ({'write' if args.write else 'read-only'}; Ctrl-C stops it)")
        if token:
            print(f"sgmem ui: write token (paste it into a form to forget anything): {token}")
        sys.stdout.flush()
        uvicorn.run(app, host=args.host, port=port, log_level="warning")
    return 0
