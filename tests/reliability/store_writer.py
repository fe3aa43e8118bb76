"""Writer process for the store crash test: puts new values to one LangGraph store key until killed.

Usage: ``python store_writer.py STORE FIRST N [FAULT]``

Put ``v`` writes :func:`value` ``(v)`` to key ``"profile"`` of :data:`NAMESPACE` (and, in the
same batch, ``value(v)`` to key ``"mirror"``, so a batch commits as one replace of the
namespace), then prints ``PUT <v>`` (flushed). ``FAULT`` ``tx:N`` pauses inside the N-th
put's transaction (after its delete, before its sentences) and prints ``INTX <v>``, as the
crash writer does.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langgraph.store.base import PutOp  # noqa: E402

import sgmem  # noqa: E402
from langchain_sgmem import SGMemStore  # noqa: E402
from tests.reliability.crash_writer import _inject  # noqa: E402
from tests.reliability.helpers import FastEmbedder  # noqa: E402

NAMESPACE = ("users", "alice")
KEYS = ("profile", "mirror")


def value(v: int) -> dict[str, Any]:
    """Value ``v`` of the key (deterministic: the parent rebuilds it to compare)."""
    return {"text": f"Profile version val{v}x of Alice.", "v": v, "tags": [f"t{v}", "profile"], "nested": {"n": v}}


def main() -> None:
    store, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fault = sys.argv[4] if len(sys.argv) > 4 else ""
    current = [first]
    if fault:
        _inject(fault, current)
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        st = SGMemStore(mem, index={"fields": ["text", "tags[*]"]})
        print("READY", flush=True)
        for v in range(first, first + n):
            current[0] = v
            st.batch([PutOp(NAMESPACE, k, value(v)) for k in KEYS])
            print(f"PUT {v}", flush=True)


if __name__ == "__main__":
    main()
