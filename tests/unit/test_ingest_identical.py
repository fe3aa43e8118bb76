"""Every ingest path stores the same rows and serves the same graph.

One add per item and :meth:`sgmem.Memory.add_many` (one length-sorted
embedding pass for every item) must store exactly the same sentences (text,
vector bytes, act), similarity edges (with weights) and turn edges; and the
kNN lists and adjacency an add extends in memory must be the ones a fresh
load of the store builds from those rows (the rows of each edge's two ends
are looked up in one vectorised pass).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

import sgmem
from sgmem.retrieval.index import load_scope_index

from .helpers import HashEmbedder

AT = datetime(2024, 3, 1, 12, tzinfo=timezone.utc)


def _items() -> list[tuple[str, list[dict[str, Any]]]]:
    """Adds of different lengths, repeated sentences across adds, two threads."""
    out = []
    for a in range(7):
        msgs = [
            {
                "role": "user",
                "name": "Ann",
                "content": f"We hiked trail {a} today. It rained. The dog loved it.",
                "at": AT,
            },
            {"role": "assistant", "content": f"Trail {a} is steep! Did the dog keep up?", "at": AT},
        ]
        msgs += [
            {"role": "user", "name": "Ann", "content": f"Step {i} of the climb was hard.", "at": AT} for i in range(a)
        ]
        out.append((f"thread-{a % 2}", msgs))
    return out


def _rows(mem: sgmem.Memory) -> dict[str, list[Any]]:
    conn = mem._store.conn
    return {
        "sentences": conn.execute(
            "SELECT id, message_id, idx, start, end, text, embed_hash, vec, act FROM sentences ORDER BY id"
        ).fetchall(),
        "sentence_edges": conn.execute("SELECT src, dst, weight FROM sentence_edges ORDER BY src, dst").fetchall(),
        "turn_edges": conn.execute("SELECT * FROM turn_edges ORDER BY 1, 2, 3").fetchall(),
        "messages": conn.execute("SELECT id, thread, role, name, content, vec FROM messages ORDER BY id").fetchall(),
    }


def _graph(idx: Any) -> tuple[list[Any], list[Any]]:
    knn = [sorted(idx.knn.row(r)) for r in range(idx.n_sentences)]
    adj = [sorted(idx.adjacency[r]) for r in range(idx.n_sentences)]
    return knn, adj


@pytest.mark.parametrize("rule", ["earlier", "knn"])
def test_one_add_per_item_and_add_many_store_the_same_rows_and_graph(rule: str) -> None:
    # a short list per sentence, so that later adds evict earlier edges under the "knn" rule
    cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_k=2, knn_min_cosine=-1.0, knn_rule=rule))
    with (
        sgmem.Memory(embedder=HashEmbedder(), config=cfg) as one,
        sgmem.Memory(embedder=HashEmbedder(), config=cfg) as many,
    ):
        for thread, msgs in _items():
            one.add(msgs, scope="s", thread=thread)
        many.add_many(_items(), scope="s")
        stored = _rows(one)
        assert stored["sentence_edges"] and stored["sentences"]
        assert _rows(many) == stored
        for mem in (one, many):
            sid = mem._store.scope_id("s")
            live = _graph(mem._index(sid))
            fresh = _graph(load_scope_index(mem._store, sid, 8, None))
            assert live == fresh
            assert any(live[0]) and any(live[1])
