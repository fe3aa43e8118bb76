"""The summaries an add writes reach the derived memory's cache as stored, without being read back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sgmem
from sgmem.derived.index import load_tables

from ..helpers import HashEmbedder

pytestmark = pytest.mark.both_backends


def test_the_cached_summaries_are_the_stored_ones_after_every_add(store_path: Any) -> None:
    with sgmem.Memory(store_path, embedder=HashEmbedder(dim=16)) as mem:
        for i in range(9):
            mem.add(
                [
                    {"role": "user", "content": f"On day {i} I bought apples at the market with Anna."},
                    {"role": "assistant", "content": f"Lovely. What did you cook on day {i}?"},
                ],
                scope="a",
                thread=f"t{i % 2}",
                at=f"2024-05-0{1 + i % 3}T10:00:00+00:00",
            )
            sid = mem._store.scope_id("a")
            cached = mem._derived.cache(sid).tables["summary"]
            with mem._store.read() as conn:
                stored = load_tables(conn, sid, 16, ("summary",))["summary"]
            assert cached.ids == stored.ids and list(cached.threads) == list(stored.threads)
            assert list(cached.at_ts) == list(stored.at_ts)
            assert np.array_equal(np.asarray(cached.vecs), stored.vecs)
        assert len(stored.ids) >= 3, "sessions of two threads over three days were summarised"
