"""A ``sgmem mcp`` server on the small test embedder: ``python -m tests.integration.mcp.server --path P --scope S``.

The same :func:`sgmem.mcp.serve` as the ``sgmem mcp`` command, with
``tests.unit.helpers.HashEmbedder`` instead of MiniLM, so the tests start
server processes in a second rather than a model load (one test runs the real
command with the default embedder).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import sgmem  # noqa: E402
from sgmem.mcp import SCOPE_ENV, TOKEN_ENV, serve  # noqa: E402
from tests.unit.helpers import HashEmbedder  # noqa: E402

EMBEDDER = {"name": "fake-hash", "dim": 8}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--path", required=True)
    p.add_argument("--scope", default=os.environ.get(SCOPE_ENV))
    p.add_argument("--transport", default="stdio")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--allow-host", action="append", default=[])
    p.add_argument("--read-only", action="store_true")
    args = p.parse_args()
    embedder = HashEmbedder(**EMBEDDER)
    with sgmem.Memory(args.path, embedder=embedder, preload=True, read_only=args.read_only) as mem:  # type: ignore[arg-type]
        serve(
            mem,
            args.scope,
            transport=args.transport,
            host=args.host,
            port=args.port,
            allow_hosts=args.allow_host,
            token=os.environ.get(TOKEN_ENV),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
