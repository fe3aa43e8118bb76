"""The derived-memory cache follows each add in place: its summary and insight tables equal
the ones read back from SQLite, without reloading every summary at every add (issue 14)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import sgmem
from sgmem.derived.index import KindTable, load_tables

from .helpers import BagEmbedder

TOPICS = ["hiking in the alps", "baking sourdough bread", "learning the violin", "chess openings", "garden tomatoes"]


def _session(i: int) -> list[dict[str, str]]:
    topic = TOPICS[i % len(TOPICS)]
    return [
        {"role": "user", "content": f"I spent the weekend {topic} with Ana number {i}."},
        {"role": "assistant", "content": f"How did the {topic} go this time?"},
        {"role": "user", "content": f"Really well, we want to keep {topic} every month. It is fun."},
    ]


def _same(a: KindTable, b: KindTable) -> None:
    assert a.ids == b.ids
    assert a.at_ts == b.at_ts
    assert a.threads == b.threads
    va = a.vecs if a.vecs is not None else np.zeros((0, 0))
    vb = b.vecs if b.vecs is not None else np.zeros((0, 0))
    assert va.shape[0] == vb.shape[0] == len(a.ids)
    assert np.array_equal(va, vb)


def test_summary_and_insight_tables_follow_adds_without_a_reload(tmp_path: Path) -> None:
    emb = BagEmbedder()
    cfg = sgmem.Config(derived=sgmem.DerivedConfig(insights="cluster"))
    with sgmem.Memory(tmp_path / "m", embedder=emb, config=cfg) as mem:
        mem.add(_session(0), scope="s", thread="t0", at="2024-01-01T10:00:00Z")
        sid = mem._store.require_scope("s")
        table = mem._derived.cache(sid).tables["summary"]
        updated_in_place = appended = 0
        for i in range(1, 40):
            # sessions of three threads; every third add continues the thread's previous session
            thread = f"t{i % 3}"
            session = f"s{i // 6}"
            before = {mid: table.vecs[r].copy() for mid, r in table.row.items()}
            msgs = [{**m, "session": session} for m in _session(i)]
            mem.add(msgs, scope="s", thread=thread, at=f"2024-01-{1 + i % 28:02d}T10:00:00Z")
            cache = mem._derived.cache(sid)
            assert cache.tables["summary"] is table  # grown in place, not reloaded
            with mem._store.read() as conn:
                stored = load_tables(conn, sid, emb.dim, ("summary", "insight"))
            _same(cache.tables["summary"], stored["summary"])
            _same(cache.tables["insight"], stored["insight"])
            appended += len(table.ids) > len(before)
            updated_in_place += any(
                mid in table.row and not np.array_equal(table.vecs[table.row[mid]], v) for mid, v in before.items()
            )
        assert appended >= 5 and updated_in_place >= 5
        assert len(mem._derived.cache(sid).tables["insight"].ids) > 0  # cluster insights were written and followed
        # what a search returns from the cache is what a fresh process returns
        q = "how was the violin practice"
        hits = [(h.text, round(h.relevance, 6)) for h in mem.search(q, scope="s", k=10, mode="hybrid")]
    with sgmem.Memory(tmp_path / "m", embedder=emb, config=cfg) as mem:
        again = [(h.text, round(h.relevance, 6)) for h in mem.search(q, scope="s", k=10, mode="hybrid")]
    assert hits == again
