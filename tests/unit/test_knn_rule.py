"""SGMem's similarity edges as the paper's kNN graph, kept as the scope grows (``GraphConfig.knn_rule``).

What a user would notice: a sentence whose close neighbour arrived later is
not linked to it (the graph expansion misses it), or a delete leaves lists
short of neighbours that are still there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

import sgmem

from .helpers import HashEmbedder, topic_sessions

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


class LookupEmbedder:
    """Fixed vectors for fixed texts (speaker-prefixed as sgmem embeds them)."""

    name = "lookup-knn"
    dim = 4

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in table.items()}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t.split(": ", 1)[-1]] for t in texts]).astype(np.float32)


# "anchor" is closest to "twin", which arrives last; "far" and "farther" arrive before it
TABLE = {
    "anchor": [1.0, 0.0, 0.0, 0.0],
    "far": [0.6, 0.8, 0.0, 0.0],
    "farther": [0.3, 0.0, 0.95, 0.0],
    "twin": [0.98, 0.0, 0.0, 0.2],
}


def _memory(target: Any, rule: str) -> sgmem.Memory:
    cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_k=1, knn_rule=rule))  # type: ignore[arg-type]
    return sgmem.Memory(target, embedder=LookupEmbedder(TABLE), config=cfg)


def _add_all(mem: sgmem.Memory) -> None:
    for i, text in enumerate(["anchor", "far", "farther", "twin"]):
        mem.add([{"role": "user", "content": text, "id": text}], scope="u", thread="t", at=T0 + timedelta(i))


def _list_of(mem: sgmem.Memory, text: str) -> list[str]:
    """The stored kNN list (out-edges) of the sentence ``text``, as the texts it links to."""
    rows = mem._store.conn.execute(
        "SELECT d.text FROM sentence_edges e JOIN sentences s ON s.id = e.src JOIN sentences d ON d.id = e.dst "
        "WHERE s.text = ? ORDER BY e.weight DESC",
        (text,),
    ).fetchall()
    return [r[0] for r in rows]


def test_a_later_sentence_becomes_an_earlier_sentences_nearest_neighbour(store_path: Any) -> None:
    with _memory(store_path, "knn") as mem:
        _add_all(mem)
        assert _list_of(mem, "anchor") == ["twin"]  # "far" was its nearest until "twin" came
        assert _list_of(mem, "far") == ["anchor"]
        assert _list_of(mem, "twin") == ["anchor"]
        idx = mem._index(mem._store.scope_id("u"))
        row = {t: idx.sent_row(i) for i, t in mem._store.conn.execute("SELECT id, text FROM sentences")}
        # the cached graph follows: "far" -> "anchor" stays, "anchor" -> "far" was replaced by "anchor" -> "twin"
        assert sorted(idx.adjacency[row["anchor"]]) == sorted([row["far"], row["farther"], row["twin"], row["twin"]])
    with _memory(store_path, "knn") as again:  # and the stored one
        idx = again._index(again._store.scope_id("u"))
        assert sorted(idx.adjacency[row["anchor"]]) == sorted([row["far"], row["farther"], row["twin"], row["twin"]])


def test_with_the_earlier_rule_a_sentence_never_gains_a_later_neighbour(store_path: Any) -> None:
    with _memory(store_path, "earlier") as mem:
        _add_all(mem)
        assert _list_of(mem, "anchor") == []  # it came first: it links to nothing, ever
        assert _list_of(mem, "twin") == ["anchor"]


def test_a_delete_repairs_the_lists_that_lost_a_member(store_path: Any) -> None:
    with _memory(store_path, "knn") as mem:
        _add_all(mem)
        mem.delete(scope="u", message_ids=["twin"])
        assert _list_of(mem, "anchor") == ["far"]  # its next nearest, present all along
        hits = mem.search("anchor", scope="u", k=4, mode="graph")
        assert "twin" not in {m for h in hits for m in h.message_ids}


def _recall(mem: sgmem.Memory, k: int) -> float:
    """Tie-aware recall of the stored lists against a global kNN of the stored vectors."""
    conn = mem._store.conn
    rows = conn.execute("SELECT id, vec FROM sentences ORDER BY id").fetchall()
    ids = [int(r[0]) for r in rows]
    vecs = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(ids), -1)
    sims = vecs @ vecs.T
    np.fill_diagonal(sims, -np.inf)
    kth = -np.sort(-sims, axis=1)[:, k - 1]
    pos = {sid: j for j, sid in enumerate(ids)}
    good = sum(
        1
        for src, dst in conn.execute("SELECT src, dst FROM sentence_edges").fetchall()
        if sims[pos[int(src)], pos[int(dst)]] >= kth[pos[int(src)]] - 1e-6
    )
    return good / (k * len(ids))


@pytest.mark.parametrize("knn_index", ["exact", "hnsw"])
def test_the_stored_lists_are_the_global_knn_graph_after_adds_and_deletes(store_path: Any, knn_index: str) -> None:
    sessions = topic_sessions(12)
    cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_index=knn_index, knn_rule="knn"))  # type: ignore[arg-type]
    with sgmem.Memory(store_path, embedder=HashEmbedder(dim=16), config=cfg) as mem:
        for i, msgs in enumerate(sessions):
            mem.add(msgs, scope="u", thread=f"t{i % 3}")
        mem.delete(scope="u", message_ids=[m["id"] for m in sessions[4][:5]])
        recall = _recall(mem, cfg.graph.knn_k)
        assert recall == pytest.approx(1.0) if knn_index == "exact" else recall >= 0.95
    old = cfg.with_(graph=sgmem.GraphConfig(knn_index=knn_index, knn_rule="earlier"))  # type: ignore[arg-type]
    with sgmem.Memory(embedder=HashEmbedder(dim=16), config=old) as mem:
        for i, msgs in enumerate(sessions):
            mem.add(msgs, scope="u", thread=f"t{i % 3}")
        assert _recall(mem, cfg.graph.knn_k) < 0.8  # the earlier rule is not the kNN graph


def test_another_processs_add_updates_the_cached_lists_in_place(store_path: Any) -> None:
    with _memory(store_path, "knn") as here, _memory(store_path, "knn") as there:
        for i, text in enumerate(["anchor", "far", "farther"]):
            here.add([{"role": "user", "content": text, "id": text}], scope="u", thread="t", at=T0 + timedelta(i))
        sid = here._store.scope_id("u")
        cached = here._index(sid)
        there.add([{"role": "user", "content": "twin", "id": "twin"}], scope="u", thread="t", at=T0 + timedelta(9))
        idx = here._index(sid)  # refreshed from the store: "anchor" took "twin" and dropped "far"
        assert idx is cached
        row = {t: idx.sent_row(i) for i, t in here._store.conn.execute("SELECT id, text FROM sentences")}
        assert [t for t, _ in idx.knn.row(row["anchor"])] == [row["twin"]]
        assert sorted(idx.adjacency[row["anchor"]]) == sorted([row["far"], row["farther"], row["twin"], row["twin"]])


def test_an_unknown_rule_is_a_clear_error() -> None:
    with pytest.raises(sgmem.ConfigError, match="knn_rule"):
        sgmem.GraphConfig(knn_rule="later")  # type: ignore[arg-type]


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
