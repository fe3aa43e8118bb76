"""What an agent's conversation stores: tool traffic only when asked, or only the user's messages.

``SGMemMemory`` stored a ``FunctionAgent``'s "[tool call: recall {...}]" and
the tool's output (recalled on the next turn above the fact), while LangChain's
``SGMemMiddleware`` left them out: one default now, with the same options
(``save_tool_messages``, ``save_only_user_messages``) in both frameworks.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM

import sgmem
from llama_index_sgmem import SGMemMemory, SGMemMemoryBlock, SGMemToolSpec

from .test_li_tools import function_calls

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect"),
]

FACT = "I am allergic to penicillin."


async def _turn_with_a_recall(memory: sgmem.Memory, **options: Any) -> SGMemMemory:
    """One agent turn in which the model calls the recall tool, with an SGMemMemory made with ``options``."""
    mem = SGMemMemory.from_defaults(memory=memory, scope="alice", thread="t2", **options)
    spec = SGMemToolSpec(memory, scope="alice", tools=["recall"])
    llm = MockFunctionCallingLLM(response_generator=function_calls(("recall", {"query": "What am I allergic to?"})))
    agent = FunctionAgent(tools=spec.to_tool_list(), llm=llm)
    await agent.run("What am I allergic to?", memory=mem)
    return mem


def _stored(memory: sgmem.Memory) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in memory.messages(scope="alice", thread="t2")]


async def test_tool_calls_and_outputs_are_not_stored_by_default(memory: sgmem.Memory) -> None:
    memory.add({"role": "user", "content": FACT}, scope="alice", thread="t1")
    mem = await _turn_with_a_recall(memory)
    stored = _stored(memory)
    assert [r for r, _ in stored] == ["user", "assistant"], stored
    assert not any("[tool call" in c or "penicillin" in c for _, c in stored)  # the tool's output is not a memory
    assert [m.role.value for m in mem.get_all()] == ["user", "assistant"]
    # the fact is what a later question recalls first
    assert memory.search("What am I allergic to?", scope="alice", k=1)[0].text == FACT


async def test_save_tool_messages_stores_and_replays_them(memory: sgmem.Memory) -> None:
    mem = await _turn_with_a_recall(memory, save_tool_messages=True)
    assert [r for r, _ in _stored(memory)] == ["user", "assistant", "tool", "assistant"]
    replay = mem.get_all()
    assert isinstance(replay[1].blocks[0], ToolCallBlock) and replay[1].blocks[0].tool_name == "recall"


async def test_save_only_user_messages_stores_the_users_turns(memory: sgmem.Memory) -> None:
    await _turn_with_a_recall(memory, save_only_user_messages=True)
    assert _stored(memory) == [("user", "What am I allergic to?")]


async def test_the_memory_block_follows_the_same_options(memory: sgmem.Memory) -> None:
    call = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="recall", tool_kwargs={"query": "allergy"})],
    )
    flushed = [
        ChatMessage(role="user", content="Remind me of my allergy."),
        call,
        ChatMessage(role="tool", content="1. I am allergic to penicillin.", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="assistant", content="Penicillin."),
    ]
    for scope, options, roles in (
        ("default", {}, ["user", "assistant"]),
        ("tools", {"save_tool_messages": True}, ["user", "assistant", "tool", "assistant"]),
        ("user", {"save_only_user_messages": True}, ["user"]),
    ):
        block = SGMemMemoryBlock(memory=memory, scope=scope, thread="t", **options)
        await block.aput(flushed)
        assert [m.role for m in memory.messages(scope=scope)] == roles, scope


def test_the_two_options_cannot_be_combined(memory: sgmem.Memory) -> None:
    for make in (
        lambda **o: SGMemMemory.from_defaults(memory=memory, scope="a", **o),
        lambda **o: SGMemMemoryBlock(memory=memory, scope="a", **o),
    ):
        with pytest.raises(sgmem.InvalidInputError, match="save_only_user_messages"):
            make(save_tool_messages=True, save_only_user_messages=True)
        with pytest.raises(sgmem.InvalidInputError, match="True or False"):
            make(save_tool_messages="yes")
