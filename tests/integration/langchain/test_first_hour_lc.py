"""LangChain adapters and the relevance cutoff, search_kwargs and unknown roles (issue 12, items 4 and 7)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ChatMessage, HumanMessage

import sgmem
from langchain_sgmem import SGMemChatMessageHistory, SGMemMemory, SGMemMiddleware, SGMemRetriever

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration

FACT = "I adopted a grey cat named Miso last spring."
HIKE = "I love hiking in the Alps every summer."
RELATED = "What is my cat called?"
UNRELATED = "How do I deduct home office expenses on my income tax return?"


@pytest.fixture
def filled(default_memory: sgmem.Memory) -> sgmem.Memory:
    memory = default_memory  # the default configuration: relevance cutoff on
    memory.add([{"role": "user", "content": FACT}, {"role": "user", "content": HIKE}], scope="alice", thread="old")
    return memory


# ------------------------------------------------------------------ min_score per adapter
def test_retriever_min_score(filled: sgmem.Memory) -> None:
    # a retriever returns k documents unless a threshold is asked for (LangChain's convention)
    loose = SGMemRetriever(memory=filled, scope="alice").invoke(UNRELATED)
    assert len(loose) == 2 and all(0 <= d.metadata["relevance"] <= 1 for d in loose)
    assert SGMemRetriever(memory=filled, scope="alice", min_score=filled.min_relevance).invoke(UNRELATED) == []
    assert SGMemRetriever(memory=filled, scope="alice", min_score=0.99).invoke(RELATED) == []
    assert SGMemRetriever(memory=filled, scope="alice").invoke(UNRELATED, min_score=0.3) == []  # per call


def test_retriever_honours_search_kwargs_and_score_threshold(filled: sgmem.Memory) -> None:
    one = SGMemRetriever(memory=filled, scope="alice", search_kwargs={"k": 1, "min_score": 0}).invoke(UNRELATED)
    assert len(one) == 1
    assert SGMemRetriever(memory=filled, scope="alice", score_threshold=0.99).invoke(RELATED) == []
    assert SGMemRetriever(memory=filled, scope="alice", search_kwargs={"score_threshold": 0.99}).invoke(RELATED) == []
    assert len(SGMemRetriever(memory=filled, scope="alice", score_threshold=0).invoke(UNRELATED)) == 2
    threads = SGMemRetriever(memory=filled, scope="alice", search_kwargs={"threads": ["nope"]}).invoke(RELATED)
    assert threads == []


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"search_kwargs": {"fetch_k": 20}}, "fetch_k"),
        ({"search_kwargs": {"min_score": 0.1, "score_threshold": 0.2}}, "not both"),
        ({"min_score": 0.1, "score_threshold": 0.2}, "not both"),
        ({"search_type": "similarity_score_threshold"}, "search_type"),
        ({"min_score": 1.5}, "min_score"),
    ],
)
def test_retriever_refuses_what_it_would_ignore(filled: sgmem.Memory, kwargs: dict[str, Any], needle: str) -> None:
    # pydantic wraps sgmem's InvalidInputError in a ValidationError; both are ValueErrors
    with pytest.raises(ValueError, match=needle):
        SGMemRetriever(memory=filled, scope="alice", **kwargs)
    with pytest.raises(sgmem.InvalidInputError, match="fetch_k"):
        SGMemRetriever(memory=filled, scope="alice").invoke(RELATED, fetch_k=3)


def test_legacy_memory_min_score(filled: sgmem.Memory) -> None:
    assert SGMemMemory(memory=filled, scope="alice").load_memory_variables({"input": UNRELATED})["history"] == ""
    loose = SGMemMemory(memory=filled, scope="alice", min_score=0)
    assert "Alps" in loose.load_memory_variables({"input": UNRELATED})["history"]
    strict = SGMemMemory(memory=filled, scope="alice", min_score=0.99)
    assert strict.load_memory_variables({"input": RELATED})["history"] == ""


async def test_legacy_memory_min_score_async(filled: sgmem.Memory) -> None:
    loose = SGMemMemory(memory=filled, scope="alice", min_score=0)
    assert "Alps" in (await loose.aload_memory_variables({"input": UNRELATED}))["history"]


def _system_after(memory: sgmem.Memory, model: RecordingChatModel, question: str, **kw: Any) -> str:
    agent = create_agent(model, tools=[], middleware=[SGMemMiddleware(memory, scope="alice", **kw)], system_prompt="Hi.")
    agent.invoke({"messages": [{"role": "user", "content": question}]})
    return model.system_text()


def test_middleware_min_score(filled: sgmem.Memory, model: RecordingChatModel) -> None:
    assert _system_after(filled, model, UNRELATED) == "Hi."  # nothing unrelated added
    assert "Alps" in _system_after(filled, model, UNRELATED, min_score=0)
    assert "Miso" not in _system_after(filled, model, RELATED, min_score=0.99)
    with pytest.raises(sgmem.InvalidInputError, match="min_score"):
        SGMemMiddleware(filled, scope="alice", min_score=2)


# ------------------------------------------------------------------ item 7: unknown roles
def test_a_message_with_an_unknown_role_is_stored_and_replayed_exactly(memory: sgmem.Memory) -> None:
    history = SGMemChatMessageHistory(memory=memory, scope="alice", thread="t")
    msgs = [HumanMessage(content="Review my essay."), ChatMessage(role="critic", content="The ending is weak.")]
    history.add_messages(msgs)
    assert history.messages == msgs
    assert memory.messages(scope="alice", thread="t")[1].content == "The ending is weak."
