"""Another app host for the PostgreSQL tests: one add or delete, in its own process.

Usage: ``python pg_host.py URL add|delete|swap W I`` adds (or deletes) the messages
of ``workers.add_messages(W, I)`` in scope ``workers.SCOPE``, then prints ``OK``;
``swap`` deletes them and then adds those of ``add_messages(W, I + 1)`` (two changes).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import sgmem  # noqa: E402
from tests.reliability.helpers import FastEmbedder  # noqa: E402
from tests.reliability.workers import SCOPE, add_messages  # noqa: E402


def main() -> None:
    url, action, w, i = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with sgmem.Memory(url, embedder=FastEmbedder()) as mem:
        if action == "add":
            mem.add(add_messages(w, i), scope=SCOPE, thread=f"host-{w}")
        else:
            mem.delete(scope=SCOPE, message_ids=[m["id"] for m in add_messages(w, i)])
            if action == "swap":
                mem.add(add_messages(w, i + 1), scope=SCOPE, thread=f"host-{w}")
    print("OK", flush=True)


if __name__ == "__main__":
    main()
