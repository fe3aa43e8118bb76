"""SGMemRetriever: sgmem hits as LlamaIndex nodes, sync and async."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

import sgmem
from llama_index_sgmem import SGMemRetriever

from .helpers import FACT, QUESTION, SECRET, rendered

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL

MONDAY = datetime(2024, 3, 4, 9, 30, tzinfo=timezone.utc)
CAT = [
    {"id": "m1", "role": "user", "content": FACT},
    {"id": "m2", "role": "assistant", "content": "Tuna is a classic favourite."},
]
RUN = [
    {"id": "r1", "role": "user", "content": "I am training for the Berlin marathon."},
    {"id": "r2", "role": "assistant", "content": "How far do you run each week?"},
]


@pytest.fixture
def alice(memory: sgmem.Memory) -> sgmem.Memory:
    memory.add(CAT, scope="alice", thread="chat-1", at=MONDAY)
    memory.add(RUN, scope="alice", thread="chat-2", at=MONDAY)
    return memory


def test_retrieve_returns_scored_text_nodes_with_provenance(alice: sgmem.Memory) -> None:
    nodes = SGMemRetriever(memory=alice, scope="alice", k=2).retrieve(QUESTION)
    assert 1 <= len(nodes) <= 2 and all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    top = nodes[0]
    meta = top.node.metadata
    assert top.node.get_content() == FACT
    assert meta["message_ids"] == ["m1"] and meta["thread"] == "chat-1" and meta["scope"] == "alice"
    assert meta["at"] == MONDAY.isoformat() and meta["kind"] == "turn" and meta["speaker"] == "user"
    assert top.score == meta["score"] and meta["why"]["mode"] == "hybrid"
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
    hits = alice.search(QUESTION, scope="alice", k=2)
    assert [n.node.get_content() for n in nodes] == [h.text for h in hits]


def test_llm_sees_the_date_and_speaker_but_not_the_bookkeeping(alice: sgmem.Memory) -> None:
    node = SGMemRetriever(memory=alice, scope="alice", k=1).retrieve(QUESTION)[0].node
    for_llm = node.get_content(metadata_mode=MetadataMode.LLM)
    assert FACT in for_llm and MONDAY.isoformat() in for_llm and "speaker: user" in for_llm
    assert "message_ids" not in for_llm and "why" not in for_llm
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == FACT


async def test_async_retrieve_agrees_with_sync(alice: sgmem.Memory) -> None:
    retriever = SGMemRetriever(memory=alice, scope="alice", k=3)
    sync = retriever.retrieve(QUESTION)
    asynchronous = await retriever.aretrieve(QUESTION)
    assert [(n.node.node_id, n.node.get_content(), n.score) for n in asynchronous] == [
        (n.node.node_id, n.node.get_content(), n.score) for n in sync
    ]


def test_k_mode_and_threads_are_passed_to_sgmem(alice: sgmem.Memory) -> None:
    assert len(SGMemRetriever(memory=alice, scope="alice", k=1).retrieve("cat tuna marathon")) == 1
    bm25 = SGMemRetriever(memory=alice, scope="alice", k=4, mode="bm25").retrieve("Berlin marathon")
    assert bm25[0].node.metadata["message_ids"] == ["r1"] and bm25[0].node.metadata["why"]["mode"] == "bm25"
    # min_score=0: the thread filter alone decides (the cat question matches nothing in chat-2)
    only_runs = SGMemRetriever(memory=alice, scope="alice", k=4, threads=["chat-2"], min_score=0).retrieve(QUESTION)
    assert only_runs and {n.node.metadata["thread"] for n in only_runs} == {"chat-2"}


def test_node_ids_are_stable_and_distinct(alice: sgmem.Memory) -> None:
    retriever = SGMemRetriever(memory=alice, scope="alice", k=4)
    first = [n.node.node_id for n in retriever.retrieve(QUESTION)]
    assert first == [n.node.node_id for n in retriever.retrieve(QUESTION)]
    assert len(set(first)) == len(first)


def test_other_scopes_are_never_returned(alice: sgmem.Memory) -> None:
    alice.add([{"role": "user", "content": "Bob's dog is named Rex."}], scope="bob", thread="chat-1")
    assert all(SECRET not in n.node.get_content() for n in SGMemRetriever(memory=alice, scope="bob").retrieve(QUESTION))
    assert SGMemRetriever(memory=alice, scope="carol").retrieve(QUESTION) == []


def test_works_as_a_context_chat_engine_retriever(alice: sgmem.Memory) -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    engine = ContextChatEngine.from_defaults(retriever=SGMemRetriever(memory=alice, scope="alice"), llm=llm)
    response = engine.chat(QUESTION)
    assert FACT in rendered(llm.last_chat_messages)
    assert response.source_nodes[0].node.metadata["message_ids"] == ["m1"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scope": ""}, "scope"),
        ({"scope": "alice", "k": 0}, "k"),
        ({"scope": "alice", "mode": "psychic"}, "mode"),
        ({"scope": "alice", "threads": "chat-1"}, "threads"),
        ({"scope": "alice", "threads": ["chat-1", ""]}, "threads"),
    ],
)
def test_bad_arguments_are_clear_errors(memory: sgmem.Memory, kwargs: dict, field: str) -> None:
    with pytest.raises(sgmem.InvalidInputError, match=field):
        SGMemRetriever(memory=memory, **kwargs)


def test_blank_query_is_a_clear_error(alice: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="query"):
        SGMemRetriever(memory=alice, scope="alice").retrieve("   ")


def test_top_k_nodes_come_back_unless_a_threshold_is_asked_for(embedder: sgmem.Embedder) -> None:
    # LlamaIndex's retriever convention: similarity_top_k nodes; a relevance cutoff only when asked for
    unrelated = "How do I bleed the air out of hydraulic brake lines?"
    with sgmem.Memory(embedder=embedder) as mem:  # the default config: Memory.search's cutoff is on
        mem.add(CAT + RUN, scope="alice", thread="chat-1", at=MONDAY)
        assert mem.search(unrelated, scope="alice") == []
        assert len(SGMemRetriever(memory=mem, scope="alice", similarity_top_k=3).retrieve(unrelated)) == 3
        assert len(SGMemRetriever(memory=mem, scope="alice", k=2).retrieve(unrelated)) == 2
        assert SGMemRetriever(memory=mem, scope="alice", similarity_top_k=3).similarity_top_k == 3
        cut = SGMemRetriever(memory=mem, scope="alice", similarity_top_k=3, min_score=mem.min_relevance)
        assert cut.retrieve(unrelated) == []
        with pytest.raises(sgmem.InvalidInputError, match="k or similarity_top_k"):
            SGMemRetriever(memory=mem, scope="alice", k=2, similarity_top_k=3)
