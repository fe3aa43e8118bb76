"""A 100,000-character user message never fails an agent turn, and the thread replays it verbatim.

``SGMemMemory`` and ``SGMemMemoryBlock`` used to raise ``LimitExceededError``:
the recall query is limited to 20,000 characters, and the message's replay copy
to ``max_metadata_chars``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM

import sgmem
from llama_index_sgmem import SGMemMemory, SGMemMemoryBlock
from tests.unit.helpers import HashEmbedder

from .test_li_tools import Script

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect"),
]

LONG = "Please summarise this log.\n" + "".join(f"Line {i}: the nightly job {i} finished.\n" for i in range(3000))
LONG = LONG[:99_987] + "\nWhat failed?"


@pytest.fixture
def mem() -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(min_relevance=0.0)) as m:
        m.add({"role": "user", "content": "The nightly job runs at 2am."}, scope="alice", thread="earlier")
        yield m


async def test_an_agent_turn_with_a_100000_character_message_completes_and_replays(
    mem: sgmem.Memory, caplog: pytest.LogCaptureFixture
) -> None:
    assert len(LONG) == 100_000
    memory = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="t")
    script = Script([ChatMessage(role="assistant", content="Nothing failed.")])
    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=script))
    with caplog.at_level(logging.WARNING, logger="llama_index_sgmem"):
        answer = await agent.run(LONG, memory=memory)
    assert "Nothing failed." in str(answer)
    assert any("2am" in str(m.content) for m in script.seen[0])  # recall ran, with the query cut
    assert any("max_query_chars" in r.getMessage() for r in caplog.records)
    replay = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="t").get_all()
    assert [m.content for m in replay] == [LONG, "Nothing failed."]
    assert replay[0] == ChatMessage(role="user", content=LONG)


async def test_the_memory_block_takes_a_100000_character_message(mem: sgmem.Memory) -> None:
    block = SGMemMemoryBlock(memory=mem, scope="alice", thread="t")
    message = ChatMessage(role="user", content=LONG)
    assert "2am" in await block.aget(messages=[message])
    await block.aput([message])
    assert [m.content for m in mem.messages(scope="alice", thread="t")] == [LONG]
