"""sgmem.tools.MemoryTools, the core of every adapter's memory tools: results, why, and refusals."""

from __future__ import annotations

import pytest

import sgmem
from sgmem.tools import MemoryTools, explain, render_recall

from .helpers import add_sample, snapshot


def test_recall_returns_text_when_who_thread_ids_and_why(memory: sgmem.Memory) -> None:
    add_sample(memory)
    tools = MemoryTools(memory)
    [top, *_] = tools.recall("alice", "What is the cat called?", k=3)["memories"]
    assert top["text"] == "I adopted a grey cat named Miso last spring."
    assert top["who"] == "Alice" and top["thread"] == "chat-1" and top["message_ids"] == ["c1"]
    assert top["when"].startswith("2024-03-01") and 0 < top["relevance"] <= 1
    assert "best sentence" in top["why"] and "cat" in top["why"]
    text = render_recall([top])
    assert text.startswith("1. [2024-03-01 09:00 · Alice · thread chat-1 · id c1] I adopted")


@pytest.mark.parametrize("mode", ["graph", "vector", "bm25"])
def test_every_mode_explains_its_hits(memory: sgmem.Memory, mode: str) -> None:
    add_sample(memory)
    hits = memory.search("marathon training", scope="alice", k=2, mode=mode)
    assert hits
    for hit in hits:
        why = explain(hit)
        assert why.endswith(f"relevance {hit.relevance:.2f}") and len(why) > len("relevance 0.00") + 2


def test_remember_then_forget_by_thread_and_by_id(memory: sgmem.Memory) -> None:
    tools = MemoryTools(memory, thread="notes", speaker="agent")
    a = tools.remember("alice", "Alice's dentist is Dr Okafor.")
    b = tools.remember("alice", "Alice is allergic to penicillin.", thread="health")
    assert a["thread"] == "notes" and b["thread"] == "health"
    assert [(m.name, m.role) for m in memory.messages(scope="alice")] == [("agent", "assistant")] * 2
    assert tools.list_threads("alice") == {"threads": ["notes", "health"]}
    assert tools.forget("alice", thread="health") == {"forgot": 1, "thread": "health"}
    assert tools.forget("alice", message_ids=[a["stored"], a["stored"]]) == {"forgot": 1, "message_ids": [a["stored"]]}
    assert memory.scopes() == []


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda t: t.remember("alice", "bad \ud800 text"), "surrogate"),
        (lambda t: t.remember("", "text"), "scope"),
        (lambda t: t.remember("alice", None), "text"),
        (lambda t: t.recall("alice", "cat", k=51), "k"),
        (lambda t: t.context("alice", "cat", budget_tokens=8001), "budget_tokens"),
        (lambda t: t.forget("alice"), "message_ids"),
        (lambda t: t.forget("alice", message_ids=["c1"], thread="chat-1"), "both message_ids and thread"),
        (lambda t: t.forget("alice", message_ids=["c1", "zz"]), "zz"),
        (lambda t: t.forget("bob", message_ids=["c1"]), "c1"),  # alice's id, asked of another scope
        (lambda t: t.forget("alice", thread="nope"), "nope"),
    ],
)
def test_a_bad_call_raises_a_clear_error_and_changes_nothing(memory: sgmem.Memory, call, named: str) -> None:  # type: ignore[no-untyped-def]
    add_sample(memory)
    before = snapshot(memory)
    with pytest.raises(sgmem.SgmemError, match=named):
        call(MemoryTools(memory))
    assert snapshot(memory) == before


def test_bad_settings_are_refused(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="memory"):
        MemoryTools("./memory")  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="k"):
        MemoryTools(memory, k=60)  # above max_k (50)
    with pytest.raises(sgmem.InvalidInputError, match="mode"):
        MemoryTools(memory, mode="fuzzy")
    with pytest.raises(sgmem.InvalidInputError, match="min_score"):
        MemoryTools(memory, min_score=2)
