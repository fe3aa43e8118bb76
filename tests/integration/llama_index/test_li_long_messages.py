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


async def test_a_message_over_max_message_chars_is_stored_in_parts_and_replays_whole(small: sgmem.Memory) -> None:
    mem = small
    huge = LONG[:45_000] + "The end."  # over the store's max_message_chars (20,000 here: the default is 200,000)
    memory = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="big")
    script = Script([ChatMessage(role="assistant", content="Read it.")])
    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=script))
    await agent.run(huge, memory=memory)
    stored = mem.messages(scope="alice", thread="big")
    assert [len(m.content) for m in stored] == [20_000, 20_000, 5_008, len("Read it.")]  # verbatim slices
    replay = memory.get_all()
    assert replay == [ChatMessage(role="user", content=huge), ChatMessage(role="assistant", content="Read it.")]
    # with the whole message in the window, none of its parts comes back as a recalled memory
    window = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="big", token_limit=10**7).get()
    assert window[-2:] == replay and not any("The end." in str(m.content) for m in window[:-2])
    memory.set(replay)  # replacing the history with itself keeps it
    assert memory.get_all() == replay


async def test_the_memory_block_takes_a_100000_character_message(mem: sgmem.Memory, small: sgmem.Memory) -> None:
    block = SGMemMemoryBlock(memory=mem, scope="alice", thread="t")
    message = ChatMessage(role="user", content=LONG)
    assert "2am" in await block.aget(messages=[message])
    await block.aput([message])
    assert [m.content for m in mem.messages(scope="alice", thread="t")] == [LONG]
    # over the store's max_message_chars: stored in verbatim parts
    await SGMemMemoryBlock(memory=small, scope="alice", thread="t").aput(
        [ChatMessage(role="user", content=LONG[:45_000])]
    )
    assert "".join(m.content for m in small.messages(scope="alice", thread="t")) == LONG[:45_000]
    assert len(small.messages(scope="alice", thread="t")) == 3


def test_a_message_of_exactly_the_limit_and_a_newline_is_put(small: sgmem.Memory) -> None:
    """Cut at the limit, its last part was the newline alone: a blank message, which the store refuses."""
    text = LONG[:20_000] + "\n"
    memory = SGMemMemory.from_defaults(memory=small, scope="alice", thread="put")
    memory.put(ChatMessage(role="user", content=text))
    assert memory.get_all() == [ChatMessage(role="user", content=text)]


def test_a_long_message_in_the_window_is_not_recalled_into_it_again(small: sgmem.Memory) -> None:
    huge = LONG[:45_000] + "The end."  # three parts: lines 0 to about 560, to about 1120, the rest
    # a budget the log's last part (about 1,500 tokens) fits in: recalled, it would be injected a second time
    memory = SGMemMemory.from_defaults(
        memory=small, scope="alice", thread="big", token_limit=10**7, context_tokens=8000
    )
    memory.put(ChatMessage(role="user", content=huge))
    parts = {m.id for m in small.messages(scope="alice", thread="big")}
    assert len(parts) == 3
    window = memory.get(input="Did the nightly job 900 finish?")
    assert window[-1] == ChatMessage(role="user", content=huge)
    recall = memory.last_recall
    assert recall is not None and recall.message_ids, "recall ran and found the earlier thread"
    assert not {i for h in recall.hits for i in h.message_ids} & parts, "a part in the window was recalled"
    assert not any("The end." in str(m.content) for m in window[:-1])
