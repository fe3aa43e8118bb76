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
from langgraph.checkpoint.memory import InMemorySaver

import sgmem
from langchain_sgmem import SGMemChatMessageHistory, SGMemMemory, SGMemMiddleware
from tests.unit.helpers import HashEmbedder

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration

LONG = "Please summarise this log.\n" + "".join(f"Line {i}: the nightly job {i} finished.\n" for i in range(3000))
LONG = LONG[:99_987] + "\nWhat failed?"


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


def test_the_legacy_memory_takes_a_100000_character_input(mem: sgmem.Memory) -> None:
    legacy = SGMemMemory(memory=mem, scope="alice", thread="t")
    block = legacy.load_memory_variables({"input": LONG})[legacy.memory_key]
    assert "2am" in block
