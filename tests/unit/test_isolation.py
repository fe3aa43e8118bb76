"""Scopes never see each other's data, in any mode or call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import sgmem

from .helpers import CAT_THREAD, DAY1

MODES = ["vector", "graph", "bm25", "hybrid"]

# Two users with near-identical memories: the easiest case to leak across.
ALICE = [dict(m, id=f"alice-{m['id']}") for m in CAT_THREAD]
BOB = [dict(m, id=f"bob-{m['id']}", content=m["content"].replace("Miso", "Pixel")) for m in CAT_THREAD]


def _fill(mem: sgmem.Memory) -> None:
    mem.add([dict(m) for m in ALICE], scope="alice", thread="chat", at=DAY1)
    mem.add([dict(m) for m in BOB], scope="bob", thread="chat", at=DAY1)


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as m:
        _fill(m)
        yield m


@pytest.mark.parametrize("mode", MODES)
def test_search_only_returns_the_scope_s_messages(mem: sgmem.Memory, mode: str) -> None:
    for scope, own in (("alice", "alice-"), ("bob", "bob-")):
        for query in ("grey cat named Pixel", "tuna keyboard Miso"):
            hits = mem.search(query, scope=scope, k=50, mode=mode)
            assert all(i.startswith(own) for h in hits for i in h.message_ids), (scope, query, hits)
    # a word only Bob said is not found in Alice's memory at all
    assert all("Pixel" not in h.text for h in mem.search("Pixel", scope="alice", k=50, mode=mode))


def test_graph_chunks_never_cross_scopes(embedder: sgmem.Embedder) -> None:
    for level in ("round", "session"):
        cfg = sgmem.Config(graph=sgmem.GraphConfig(chunk_level=level, hops=2))  # type: ignore[arg-type]
        with sgmem.Memory(embedder=embedder, config=cfg) as m:
            _fill(m)
            for h in m.search("grey cat named Pixel", scope="alice", k=50, mode="graph"):
                assert all(i.startswith("alice-") for i in h.message_ids)
                assert "Pixel" not in h.text


def test_context_only_holds_the_scope_s_messages(mem: sgmem.Memory) -> None:
    block = mem.context("grey cat named Pixel", scope="alice", budget_tokens=2000)
    assert "Miso" in block and "Pixel" not in block
    block = mem.context("grey cat named Miso", scope="bob", budget_tokens=2000)
    assert "Pixel" in block and "Miso" not in block


def test_messages_threads_and_stats_are_per_scope(mem: sgmem.Memory) -> None:
    assert [m.id for m in mem.messages(scope="alice")] == [m["id"] for m in ALICE]
    assert [m.id for m in mem.messages(scope="bob", thread="chat")] == [m["id"] for m in BOB]
    assert mem.threads(scope="alice") == ["chat"]
    [a] = mem.stats("alice").scopes
    [b] = mem.stats("bob").scopes
    assert (a.scope, a.messages, b.scope, b.messages) == ("alice", len(ALICE), "bob", len(BOB))
    # one chain per scope, not one running through both
    assert a.chronological_edges == len(ALICE) - 1 and b.chronological_edges == len(BOB) - 1
    assert {s.scope for s in mem.stats().scopes} == {"alice", "bob"}


def test_same_caller_id_in_two_scopes_is_fine(memory: sgmem.Memory) -> None:
    memory.add({"role": "user", "content": "mine", "id": "m1"}, scope="a", thread="t")
    memory.add({"role": "user", "content": "yours", "id": "m1"}, scope="b", thread="t")
    assert memory.messages(scope="a")[0].content == "mine"
    assert memory.messages(scope="b")[0].content == "yours"
    memory.delete(scope="a", message_ids=["m1"])
    assert memory.messages(scope="a") == []
    assert memory.messages(scope="b")[0].content == "yours"


def test_similarity_edges_stay_inside_a_scope(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as m:
        m.add([dict(x) for x in ALICE], scope="alice", thread="chat", at=DAY1)
        alice_edges = m.stats("alice").scopes[0].similarity_edges
        # Bob's first sentence has nothing earlier in his own scope to link to
        m.add([dict(BOB[0])], scope="bob", thread="chat", at=DAY1)
        assert m.stats("bob").scopes[0].similarity_edges == 0
        assert m.stats("alice").scopes[0].similarity_edges == alice_edges


@pytest.mark.parametrize("how", ["scope", "thread", "ids"])
def test_delete_never_touches_another_scope(embedder: sgmem.Embedder, store_path: Path, how: str) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as m:
        _fill(m)
        bob_msgs = m.messages(scope="bob")
        bob_stats = m.stats("bob")
        bob_hits = [h.message_ids for h in m.search("grey cat", scope="bob", k=10)]
        if how == "scope":
            m.delete(scope="alice")
        elif how == "thread":
            m.delete(scope="alice", thread="chat")
        else:
            # ids that exist only in Bob's scope are not found in Alice's
            receipt = m.delete(scope="alice", message_ids=[x["id"] for x in BOB] + [ALICE[0]["id"]])
            assert receipt.messages == 1
        assert m.messages(scope="bob") == bob_msgs
        assert m.stats("bob") == bob_stats
        assert [h.message_ids for h in m.search("grey cat", scope="bob", k=10)] == bob_hits


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
