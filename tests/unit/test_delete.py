"""Memory.delete: cascades to everything derived, re-links the chain, touches nothing else."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import sgmem
from sgmem.text import split_sentences

from .helpers import BY_ID, CAT_THREAD, DAY1, RUN_THREAD, add_sample

MODES = ["vector", "graph", "bm25", "hybrid"]


def _found(mem: sgmem.Memory, query: str, scope: str = "alice") -> set[str]:
    """Every message id (and hit text) any mode returns for ``query``."""
    hits = [h for mode in MODES for h in mem.search(query, scope=scope, k=50, mode=mode)]
    return {i for h in hits for i in h.message_ids} | {h.text for h in hits}


def test_deleted_message_is_not_found_by_its_own_text(sample_memory: sgmem.Memory) -> None:
    text = BY_ID["c3"]["content"]
    assert {"c3", text} <= _found(sample_memory, text)
    receipt = sample_memory.delete(scope="alice", message_ids=["c3"])
    assert receipt.messages == 1
    assert not {"c3", text} & _found(sample_memory, text)
    assert text not in sample_memory.context(text, scope="alice", budget_tokens=2000)
    assert "c3" not in [m.id for m in sample_memory.messages(scope="alice")]


def _similarity_edges(mem: sgmem.Memory) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in mem._store.conn.execute("SELECT src, dst FROM sentence_edges")}


def test_receipt_counts_match_what_disappeared(sample_memory: sgmem.Memory) -> None:
    before = sample_memory.stats("alice").scopes[0]
    edges_before = _similarity_edges(sample_memory)
    receipt = sample_memory.delete(scope="alice", message_ids=["c2", "c3"])
    after = sample_memory.stats("alice").scopes[0]
    # kNN lists that lost a member were repaired with edges to sentences still there (GraphConfig.knn_rule)
    repaired = len(_similarity_edges(sample_memory) - edges_before)
    n_sents = sum(len(split_sentences(BY_ID[i]["content"])) for i in ("c2", "c3"))
    assert receipt.messages == 2 == before.messages - after.messages
    assert receipt.sentences == n_sents == before.sentences - after.sentences
    assert receipt.vectors == receipt.messages + receipt.sentences
    assert receipt.threads == ("chat-1",)
    # removed: all similarity edges of the deleted sentences, and c1-c2, c2-c3, c3-c4; bridged: c1-c4
    assert before.similarity_edges - after.similarity_edges + repaired + 3 == receipt.edges
    assert after.chronological_edges == before.chronological_edges - 3 + 1
    assert receipt.total == receipt.messages + receipt.sentences + receipt.edges + receipt.vectors + receipt.derived


def test_unknown_ids_delete_nothing(sample_memory: sgmem.Memory) -> None:
    before = sample_memory.stats()
    receipt = sample_memory.delete(scope="alice", message_ids=["nope", "also-nope"])
    assert receipt == sgmem.DeleteReceipt()
    assert receipt.total == 0
    assert sample_memory.stats() == before


def test_delete_a_thread_leaves_the_other_threads(sample_memory: sgmem.Memory) -> None:
    run_before = sample_memory.messages(scope="alice", thread="chat-2")
    receipt = sample_memory.delete(scope="alice", thread="chat-1")
    assert receipt.messages == len(CAT_THREAD)
    assert receipt.threads == ("chat-1",)
    assert sample_memory.threads(scope="alice") == ["chat-2"]
    assert sample_memory.messages(scope="alice") == run_before
    found = _found(sample_memory, "grey cat Miso tuna keyboard")
    assert found and not found & ({m["id"] for m in CAT_THREAD} | {m["content"] for m in CAT_THREAD})


def test_ids_limited_to_a_thread_only_delete_in_that_thread(sample_memory: sgmem.Memory) -> None:
    receipt = sample_memory.delete(scope="alice", thread="chat-2", message_ids=["c1", "r1"])
    assert receipt.messages == 1
    ids = [m.id for m in sample_memory.messages(scope="alice")]
    assert "c1" in ids and "r1" not in ids


def test_delete_a_whole_scope(sample_memory: sgmem.Memory) -> None:
    sample_memory.add({"role": "user", "content": "Bob likes chess."}, scope="bob", thread="t")
    receipt = sample_memory.delete(scope="alice")
    assert receipt.messages == len(CAT_THREAD) + len(RUN_THREAD)
    assert receipt.threads == ("chat-1", "chat-2")
    assert sample_memory.scopes() == ["bob"]
    assert sample_memory.messages(scope="alice") == []
    for mode in MODES:
        assert sample_memory.search("grey cat named Miso", scope="alice", mode=mode) == []
    assert sample_memory.context("cat", scope="alice") == ""
    assert sample_memory.stats("bob").messages == 1


def test_the_scope_can_be_used_again_after_deleting_everything(sample_memory: sgmem.Memory) -> None:
    sample_memory.delete(scope="alice")
    sample_memory.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1")
    hits = sample_memory.search("grey cat", scope="alice", k=2)
    assert hits and hits[0].message_ids[0] in {"c1", "c2", "c3", "c4"}
    assert sample_memory.stats("alice").scopes[0].chronological_edges == len(CAT_THREAD) - 1


def test_a_deleted_id_can_be_reused(sample_memory: sgmem.Memory) -> None:
    sample_memory.delete(scope="alice", message_ids=["c1"])
    sample_memory.add({"role": "user", "content": "A new first message.", "id": "c1"}, scope="alice", thread="chat-1")
    assert sample_memory.messages(scope="alice", thread="chat-1")[-1].content == "A new first message."


def _chain(path: Path, scope: str = "alice") -> set[tuple[str, str]]:
    """The stored chronological edges as (src id, dst id) pairs."""
    sql = (
        "SELECT a.ext_id, b.ext_id FROM turn_edges e JOIN messages a ON a.id = e.src JOIN messages b ON b.id = e.dst "
        "JOIN scopes s ON s.id = e.scope_id WHERE s.name = ?"
    )
    if isinstance(path, str):  # the PostgreSQL backend: store_path is a URL
        import psycopg

        with psycopg.connect(path) as pg:
            return {(a, b) for a, b in pg.execute(sql.replace("?", "%s"), (scope,)).fetchall()}
    con = sqlite3.connect(path / "sgmem.db")
    try:
        rows = con.execute(sql, (scope,)).fetchall()
    finally:
        con.close()
    return {(a, b) for a, b in rows}


@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        (["c2"], {("c1", "c3"), ("c3", "c4")}),
        (["c2", "c3"], {("c1", "c4")}),
        (["c1"], {("c2", "c3"), ("c3", "c4")}),
        (["c4"], {("c1", "c2"), ("c2", "c3")}),
        (["c1", "c3"], {("c2", "c4")}),
    ],
)
def test_chronological_chain_is_relinked_over_the_gap(
    embedder: sgmem.Embedder, store_path: Path, deleted: list[str], expected: set[tuple[str, str]]
) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        mem.add([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
        mem.add([dict(m) for m in RUN_THREAD], scope="alice", thread="chat-2", at=DAY1)
        run_chain = {(a, b) for a, b in _chain(store_path) if a.startswith("r")}
        mem.delete(scope="alice", message_ids=deleted)
        chain = _chain(store_path)
        assert {(a, b) for a, b in chain if a.startswith("c")} == expected
        assert {(a, b) for a, b in chain if a.startswith("r")} == run_chain
        # the next message continues from the thread's last remaining one
        mem.add({"role": "user", "content": "One more thing.", "id": "c5"}, scope="alice", thread="chat-1")
        last = [m.id for m in mem.messages(scope="alice", thread="chat-1")][-2]
        assert (last, "c5") in _chain(store_path)


def test_relinked_neighbour_words_still_help_hybrid(embedder: sgmem.Embedder) -> None:
    """SGRM chaining after a delete: a turn gets partial lexical credit from its new neighbour."""
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(
            [
                {"role": "user", "content": "Which city should I visit?", "id": "q"},
                {"role": "assistant", "content": "Filler reply that will be deleted.", "id": "gap"},
                {"role": "user", "content": "Lisbon has great pastries.", "id": "a"},
            ],
            scope="s",
            thread="t",
        )
        mem.delete(scope="s", message_ids=["gap"])
        hits = {h.message_ids[0]: h for h in mem.search("Lisbon", scope="s", k=5, mode="hybrid")}
        assert hits["q"].why["channels"]["lexical"] > 0, "q is now next to the turn that says Lisbon"
        assert hits["a"].why["channels"]["lexical"] > hits["q"].why["channels"]["lexical"]


def test_delete_is_durable(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        add_sample(mem)
        mem.search("grey cat", scope="alice")  # build (and later save) the index cache
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        mem.delete(scope="alice", message_ids=["c1"])
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        assert "c1" not in _found(mem, BY_ID["c1"]["content"])
        assert "c1" not in [m.id for m in mem.messages(scope="alice")]


def test_an_empty_id_list_deletes_nothing(sample_memory: sgmem.Memory) -> None:
    before = sample_memory.stats()
    assert sample_memory.delete(scope="alice", message_ids=[]) == sgmem.DeleteReceipt()
    assert sample_memory.delete(scope="alice", thread="no-such-thread") == sgmem.DeleteReceipt()
    assert sample_memory.stats() == before


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
