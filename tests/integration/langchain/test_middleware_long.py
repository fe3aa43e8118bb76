"""A 100,000-character user message never fails an agent turn, and its history replays it verbatim.

The recall before the model call used to raise ``LimitExceededError`` (the
query limit is 20,000 characters), and storing it failed on the size of its
replay copy.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import sgmem
from langchain_sgmem import SGMemChatMessageHistory, SGMemMemory, SGMemMiddleware
from tests.unit.helpers import HashEmbedder

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration

LONG = "Please summarise this log.\n" + "".join(f"Line {i}: the nightly job {i} finished.\n" for i in range(3000))
LONG = LONG[:99_987] + "\nWhat failed?"


@pytest.fixture
def small() -> Iterator[sgmem.Memory]:
    """A store whose messages may hold 20,000 characters (a quick stand-in for the default 200,000)."""
    config = sgmem.Config(min_relevance=0.0, limits=sgmem.Limits(max_message_chars=20_000))
    with sgmem.Memory(embedder=HashEmbedder(), config=config) as m:
        m.add({"role": "user", "content": "The nightly job runs at 2am."}, scope="alice", thread="earlier")
        yield m


@pytest.fixture
def mem() -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(min_relevance=0.0)) as m:
        m.add({"role": "user", "content": "The nightly job runs at 2am."}, scope="alice", thread="earlier")
        yield m


def test_an_agent_turn_with_a_100000_character_message_completes_and_replays(
    mem: sgmem.Memory, caplog: pytest.LogCaptureFixture
) -> None:
    assert len(LONG) == 100_000
    model = RecordingChatModel(reply="Nothing failed.")
    agent = create_agent(
        model, tools=[], middleware=[SGMemMiddleware(mem, scope="alice")], checkpointer=InMemorySaver()
    )
    with caplog.at_level(logging.WARNING, logger="langchain_sgmem"):
        out = agent.invoke({"messages": [{"role": "user", "content": LONG}]}, {"configurable": {"thread_id": "t"}})
    assert out["messages"][-1].content == "Nothing failed."
    assert "2am" in model.system_text()  # recall ran, with the query cut
    assert any("max_query_chars" in r.getMessage() for r in caplog.records)
    replay = SGMemChatMessageHistory(mem, scope="alice", thread="t").messages
    assert [m.content for m in replay] == [LONG, "Nothing failed."]


def test_a_message_over_max_message_chars_is_stored_in_parts_and_replays_whole(small: sgmem.Memory) -> None:
    mem = small
    huge = LONG[:45_000] + "The end."  # over the store's max_message_chars (20,000 here: the default is 200,000)
    model = RecordingChatModel(reply="Read it.")
    agent = create_agent(
        model, tools=[], middleware=[SGMemMiddleware(mem, scope="alice")], checkpointer=InMemorySaver()
    )
    for _ in range(2):  # a second run of the thread stores nothing twice
        agent.invoke({"messages": [{"role": "user", "content": huge}]}, {"configurable": {"thread_id": "big"}})
    parts = [m for m in mem.messages(scope="alice", thread="big") if m.role == "user"]
    assert [len(p.content) for p in parts[:3]] == [20_000, 20_000, 5_008]  # verbatim slices, each indexed
    history = SGMemChatMessageHistory(mem, scope="alice", thread="big")
    replay = history.messages
    assert replay[0].content == huge and replay[1].content == "Read it." and replay[2].content == huge
    history.add_messages(replay[:1])  # the history's own writes split it the same way
    assert history.messages[-1].content == huge


def test_the_legacy_memory_takes_a_100000_character_input(mem: sgmem.Memory) -> None:
    legacy = SGMemMemory(memory=mem, scope="alice", thread="t")
    block = legacy.load_memory_variables({"input": LONG})[legacy.memory_key]
    assert "2am" in block


def test_a_message_of_exactly_the_limit_and_a_newline_never_fails_a_turn(small: sgmem.Memory) -> None:
    """Cut at the limit, its last part was the newline alone: a blank message, which the store refuses."""
    text = LONG[:20_000] + "\n"
    history = SGMemChatMessageHistory(small, scope="alice", thread="history")
    history.add_messages([HumanMessage(content=text)])
    assert [m.content for m in history.messages] == [text]
    model = RecordingChatModel(reply="Got it.")
    agent = create_agent(
        model, tools=[], middleware=[SGMemMiddleware(small, scope="alice")], checkpointer=InMemorySaver()
    )
    out = agent.invoke({"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": "turn"}})
    assert out["messages"][-1].content == "Got it."
    replay = SGMemChatMessageHistory(small, scope="alice", thread="turn").messages
    assert [m.content for m in replay] == [text, "Got it."]


def test_a_long_message_in_the_prompt_is_not_recalled_into_it_again(small: sgmem.Memory) -> None:
    huge = LONG[:45_000] + "The end."  # three parts: lines 0 to about 560, to about 1120, the rest
    recalls: list[sgmem.RecallTrace] = []
    model = RecordingChatModel(reply="Read it.")
    # a budget the log's last part (about 1,500 tokens) fits in: recalled, it would be injected a second time
    middleware = SGMemMiddleware(small, scope="alice", on_recall=recalls.append, budget_tokens=8000)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "big"}}
    agent.invoke({"messages": [{"role": "user", "content": huge}]}, config)
    parts = {m.id for m in small.messages(scope="alice", thread="big") if m.role == "user"}
    assert len(parts) == 3
    # the next turn of the thread: the whole log is in the prompt, a question about its middle
    agent.invoke({"messages": [{"role": "user", "content": "Did the nightly job 900 finish?"}]}, config)
    recall = recalls[-1]
    assert recall.message_ids, "recall ran and found the earlier thread"
    assert not {i for h in recall.hits for i in h.message_ids} & parts, "a part the model already sees was recalled"
    assert "The end." not in model.system_text()
