"""An add on PostgreSQL: one pipelined transaction, its ids drawn ahead; whatever fails, nothing of it stays.

The write transaction sends the statements whose results nothing reads with
the next read or with ``COMMIT`` (sgmem.store.postgres.PostgresStore.write):
an error in one of them surfaces at that later read or at the commit, and the
whole add must still be rolled back, the scope's earlier messages intact.
"""

from __future__ import annotations

from typing import Any

import pytest

import sgmem
from sgmem.store.postgres import PostgresStore

from .helpers import HashEmbedder

pytestmark = pytest.mark.postgres

TURN = [
    {"role": "user", "content": "I adopted a cat named Miso."},
    {"role": "assistant", "content": "Miso is a lovely name. How old is she?"},
]


def _fill(mem: sgmem.Memory) -> list[str]:
    mem.add(TURN, scope="alice", thread="t")
    mem.add([{"role": "user", "content": "She is two years old."}], scope="alice", thread="t")
    return [m.content for m in mem.messages(scope="alice")]


def _bad_turn_edges(self: PostgresStore, scope_id: int, edges: Any) -> int:
    # an edge to a message that does not exist: the foreign key fails on the server, and nothing reads the
    # statement's result before COMMIT
    self.conn.executemany(
        "INSERT INTO turn_edges (scope_id, src, dst) VALUES (?, ?, ?)", [(scope_id, a, -1) for a, _ in edges]
    )
    return len(edges)


def test_an_error_in_a_statement_nothing_reads_rolls_the_whole_add_back(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sgmem.Memory(pg_url, embedder=HashEmbedder(dim=16), config=sgmem.Config(min_relevance=0.0)) as mem:
        before = _fill(mem)
        stats = mem.stats("alice").scopes[0]
        with monkeypatch.context() as m:
            m.setattr(PostgresStore, "insert_turn_edges", _bad_turn_edges)
            with pytest.raises(sgmem.StoreError, match="nothing of this call was stored"):
                mem.add([{"role": "user", "content": "Miso caught a mouse in the garden."}], scope="alice", thread="t")
        assert [m.content for m in mem.messages(scope="alice")] == before
        assert mem.stats("alice").scopes[0] == stats
        assert all("mouse" not in h.text for h in mem.search("mouse garden", scope="alice", mode="bm25"))
        mem.add([{"role": "user", "content": "Miso sleeps on the sofa."}], scope="alice", thread="t")
        assert [m.content for m in mem.messages(scope="alice")] == [*before, "Miso sleeps on the sofa."]
    with sgmem.Memory(pg_url, embedder=HashEmbedder(dim=16), config=sgmem.Config(min_relevance=0.0)) as other:
        assert [m.content for m in other.messages(scope="alice")] == [*before, "Miso sleeps on the sofa."]
        assert other.search("sofa", scope="alice", mode="bm25")[0].text == "Miso sleeps on the sofa."


def test_an_add_that_fails_after_its_ids_were_drawn_leaves_gaps_not_reused_ids(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sgmem.Memory(pg_url, embedder=HashEmbedder(dim=16)) as mem:
        _fill(mem)
        ids = [int(r[0]) for r in mem._store.conn.execute("SELECT id FROM messages ORDER BY id")]
        with monkeypatch.context() as m:
            m.setattr(PostgresStore, "insert_turn_edges", _bad_turn_edges)
            with pytest.raises(sgmem.StoreError):
                mem.add(TURN, scope="alice", thread="t")
        mem.add(TURN, scope="bob", thread="t")
        new = [int(r[0]) for r in mem._store.conn.execute("SELECT id FROM messages ORDER BY id")]
        assert new[: len(ids)] == ids and min(new[len(ids) :]) > max(ids) + len(TURN)
        assert [m.content for m in mem.messages(scope="bob")] == [t["content"] for t in TURN]


def test_every_add_draws_a_new_stamp_for_the_saved_index_files(pg_url: str) -> None:
    # a host's saved index files (Config.pg_cache_dir) are trusted at the same generation only with the same stamp
    with sgmem.Memory(pg_url, embedder=HashEmbedder(dim=16)) as mem:
        stamps = []
        for text in ("Miso sleeps on the sofa.", "Miso caught a mouse.", "Miso is two years old."):
            mem.add([{"role": "user", "content": text}], scope="alice", thread="t")
            stamps.append(mem._store.conn.execute("SELECT stamp FROM scopes WHERE name = ?", ("alice",)).fetchone()[0])
        assert 0 not in stamps and len(set(stamps)) == len(stamps), stamps
