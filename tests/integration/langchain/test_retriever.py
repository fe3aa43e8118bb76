"""SGMemRetriever: documents with provenance, k, filters — and LangChain's standard retriever suite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

import sgmem
from langchain_sgmem import SGMemRetriever

pytestmark = pytest.mark.integration

DAY1 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
DAY2 = datetime(2024, 3, 8, 18, 30, tzinfo=timezone.utc)

CAT = [
    {"role": "user", "name": "Alice", "content": "I adopted a grey cat named Miso last spring."},
    {"role": "assistant", "content": "Miso is a lovely name! What does she like to eat?"},
    {"role": "user", "name": "Alice", "content": "She loves tuna and sleeps on my keyboard."},
]
RUN = [
    {"role": "user", "name": "Alice", "content": "I am training for the Berlin marathon in September."},
    {"role": "assistant", "content": "How many kilometres do you run each week?"},
    {"role": "user", "name": "Alice", "content": "About sixty kilometres, mostly on weekends."},
]


@pytest.fixture(scope="module")
def filled(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(CAT, scope="alice", thread="chat-1", at=DAY1)
        mem.add(RUN, scope="alice", thread="chat-2", at=DAY2)
        mem.add([{"role": "user", "content": "My cat is called Pixel."}], scope="bob", thread="b", at=DAY1)
        yield mem


def test_documents_carry_provenance(filled: sgmem.Memory) -> None:
    docs = SGMemRetriever(memory=filled, scope="alice", mode="vector").invoke("What is my cat called?")
    assert docs and "Miso" in docs[0].page_content
    meta = docs[0].metadata
    assert set(meta) == {"score", "relevance", "message_ids", "thread", "at", "kind", "why", "speaker"}
    assert meta["thread"] == "chat-1" and meta["kind"] == "turn" and meta["speaker"] == "Alice"
    assert datetime.fromisoformat(meta["at"]) == DAY1
    stored = {m.id: m.content for m in filled.messages(scope="alice")}
    assert stored[meta["message_ids"][0]] == docs[0].page_content
    assert meta["why"]["mode"] == "vector"
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    json.dumps([d.metadata for d in docs])  # metadata is plain JSON data


def test_scopes_never_mix(filled: sgmem.Memory) -> None:
    docs = SGMemRetriever(memory=filled, scope="bob").invoke("What is my cat called?")
    assert [d.page_content for d in docs] == ["My cat is called Pixel."]
    assert SGMemRetriever(memory=filled, scope="nobody").invoke("cat") == []


def test_k_in_constructor_and_per_call(filled: sgmem.Memory) -> None:
    retriever = SGMemRetriever(memory=filled, scope="alice", k=2, mode="vector", min_score=0)  # no relevance cut
    assert len(retriever.invoke("running")) == 2
    assert len(retriever.invoke("running", k=5)) == 5
    assert len(retriever.batch(["cat", "marathon"], k=1)[1]) == 1


def test_k_documents_come_back_unless_a_threshold_is_asked_for(filled: sgmem.Memory) -> None:
    # LangChain's retriever convention (VectorStoreRetriever): k results; a threshold only when asked for
    unrelated = "How do I bleed the air out of hydraulic brake lines?"
    assert len(SGMemRetriever(memory=filled, scope="alice", k=3).invoke(unrelated)) == 3
    assert filled.search(unrelated, scope="alice", k=3) == []  # Memory.search keeps its calibrated cutoff
    cut = SGMemRetriever(memory=filled, scope="alice", k=3, min_score=filled.min_relevance)
    assert cut.invoke(unrelated) == []
    by_kwargs = SGMemRetriever(memory=filled, scope="alice", search_kwargs={"k": 3, "score_threshold": 0.3})
    assert by_kwargs.invoke(unrelated) == []
    assert SGMemRetriever(memory=filled, scope="alice", k=3).invoke(unrelated, score_threshold=0.3) == []
    # the docstring's own example: a short answer survives a threshold a user would pick
    docs = SGMemRetriever(memory=filled, scope="alice", search_kwargs={"k": 2, "score_threshold": 0.2}).invoke(
        "How far do I run each week?"
    )
    assert any("sixty kilometres" in d.page_content for d in docs)


def test_threads_and_time_filters(filled: sgmem.Memory) -> None:
    # min_score=0: the filters alone decide (no cat is mentioned in chat-2)
    by_thread = SGMemRetriever(memory=filled, scope="alice", threads=["chat-2"], k=10, min_score=0).invoke("cat")
    assert by_thread and {d.metadata["thread"] for d in by_thread} == {"chat-2"}
    since = SGMemRetriever(memory=filled, scope="alice", since=DAY2, k=10, min_score=0).invoke("cat")
    assert since and all(datetime.fromisoformat(d.metadata["at"]) >= DAY2 for d in since)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "graph", "bm25"])
def test_every_mode_returns_documents(filled: sgmem.Memory, mode: str) -> None:
    docs = SGMemRetriever(memory=filled, scope="alice", mode=mode).invoke("Berlin marathon training")
    assert docs and all(isinstance(d, Document) for d in docs)
    assert any("marathon" in d.page_content for d in docs)


async def test_ainvoke_matches_invoke(filled: sgmem.Memory) -> None:
    retriever = SGMemRetriever(memory=filled, scope="alice", k=3)
    sync_docs = retriever.invoke("tuna")
    assert await retriever.ainvoke("tuna") == sync_docs
    assert len(await retriever.ainvoke("tuna", k=1)) == 1


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"k": 0}, "greater than or equal to 1"),
        ({"mode": "magic"}, "mode: received 'magic'"),
        ({"memory": "not a memory"}, "sgmem.Memory"),
    ],
)
def test_bad_construction_is_refused(filled: sgmem.Memory, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        SGMemRetriever(**{"memory": filled, "scope": "alice", **kwargs})


def test_bad_calls_are_refused(filled: sgmem.Memory) -> None:
    retriever = SGMemRetriever(memory=filled, scope="alice")
    with pytest.raises(sgmem.InvalidInputError, match="^query: "):
        retriever.invoke("   ")
    with pytest.raises(sgmem.InvalidInputError, match="^k: received 0"):
        retriever.invoke("cat", k=0)
    with pytest.raises(sgmem.InvalidInputError, match="top_n"):  # never silently ignored
        retriever.invoke("cat", top_n=3)


class TestSGMemRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever suite (k in the constructor and per call, invoke/ainvoke)."""

    @pytest.fixture(autouse=True)
    def _memory(self, embedder: sgmem.Embedder) -> Iterator[None]:
        with sgmem.Memory(embedder=embedder) as mem:
            mem.add(CAT + RUN, scope="alice", thread="chat-1", at=DAY1)
            self.mem = mem
            yield

    @property
    def retriever_constructor(self) -> type[SGMemRetriever]:
        return SGMemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.mem, "scope": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "What does Alice's cat like to eat?"


class TestSGMemRetrieverStandardDefaults(TestSGMemRetrieverStandard):
    """The same suite on ``sgmem.Memory()`` exactly as a user makes it: the default embedder and config."""

    @pytest.fixture(autouse=True)
    def _memory(self, embedder: sgmem.Embedder) -> Iterator[None]:  # (the fixture loads the shared model once)
        with sgmem.Memory() as mem:
            assert mem.embedder.name == embedder.name and mem.min_relevance > 0  # the calibrated cutoff is on
            mem.add(CAT + RUN, scope="alice", thread="chat-1", at=DAY1)
            self.mem = mem
            yield
