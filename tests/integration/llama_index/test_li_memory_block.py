"""SGMemMemoryBlock inside LlamaIndex's recommended ``Memory``: flushed messages stored, recall in the system message."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.sql import MessageStatus

import sgmem
from llama_index_sgmem import SGMemMemoryBlock
from sgmem.text import count_tokens

from .helpers import FACT, QUESTION, SECRET, assistant, user

pytestmark = pytest.mark.integration

FILLER = [
    user("I spent the weekend hiking in the mountains near Sintra."),
    assistant("That sounds lovely. Was the weather good?"),
    user("Sunny on Saturday, foggy on Sunday morning."),
    assistant("Fog in the hills is common there."),
    user("Next month I am visiting my sister in Porto."),
    assistant("Porto is beautiful in spring."),
]


def _li_memory(block: SGMemMemoryBlock, session_id: str) -> Memory:
    # a small short-term queue so that a few messages overflow into the block
    return Memory.from_defaults(session_id=session_id, token_limit=100, token_flush_size=30, memory_blocks=[block])


async def test_flushed_messages_are_stored_and_recalled_in_the_system_message(memory: sgmem.Memory) -> None:
    block = SGMemMemoryBlock(memory=memory, scope="alice")
    monday = _li_memory(block, "monday")
    await monday.aput_messages([user(FACT), assistant("Noted!"), *FILLER])

    stored = memory.messages(scope="alice", thread="monday")
    active = await monday.aget_all(status=MessageStatus.ACTIVE)
    assert stored, "the Memory flushed nothing: make the queue smaller"
    assert [m.content for m in stored] == [FACT, "Noted!", *[m.content for m in FILLER]][: len(stored)]
    assert [m.content for m in active] == [m.content for m in FILLER][len(stored) - 2 :]  # the rest stayed short-term

    tuesday = _li_memory(block, "tuesday")
    await tuesday.aput(user(QUESTION))
    got = await tuesday.aget()
    assert got[0].role == MessageRole.SYSTEM
    system = got[0].content or ""
    assert "<sgmem_memory>" in system and FACT in system
    assert got[1:] == [user(QUESTION)]


def test_block_content_reaches_the_llm_through_a_chat_engine(memory: sgmem.Memory) -> None:
    block = SGMemMemoryBlock(memory=memory, scope="alice", name="long_term")
    block_memory = _li_memory(block, "monday")
    block_memory.put_messages([user(FACT), assistant("Noted!"), *FILLER])
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    SimpleChatEngine.from_defaults(llm=llm, memory=_li_memory(block, "tuesday")).chat(QUESTION)
    system = next(m for m in llm.last_chat_messages or [] if m.role == MessageRole.SYSTEM)
    assert "<long_term>" in (system.content or "") and SECRET in (system.content or "")

    other = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    bob_block = SGMemMemoryBlock(memory=memory, scope="bob", name="long_term")
    SimpleChatEngine.from_defaults(llm=other, memory=_li_memory(bob_block, "tuesday")).chat(QUESTION)
    assert all(SECRET not in (m.content or "") for m in other.last_chat_messages or [])


async def test_explicit_thread_and_no_user_message(memory: sgmem.Memory) -> None:
    block = SGMemMemoryBlock(memory=memory, scope="alice", thread="archive")
    await block.aput([user(FACT)], from_short_term_memory=True, session_id="s1")
    assert memory.threads(scope="alice") == ["archive"]
    assert await block.aget([assistant("Hello!")]) == ""  # no user message: nothing to ask
    assert await block.aget([]) == ""


async def test_atruncate_asks_again_with_the_smaller_budget(memory: sgmem.Memory) -> None:
    # min_score=0: the unrelated filler fills the budget too, so truncation has something to drop
    block = SGMemMemoryBlock(memory=memory, scope="alice", budget_tokens=500, min_score=0)
    await block.aput([user(FACT), assistant("Noted!"), *FILLER], session_id="monday")
    content = await block.aget([user(QUESTION)])
    full = count_tokens(content)
    assert FACT in content and "Porto" in content

    shorter = await block.atruncate(content, full - 40)
    assert shorter is not None and count_tokens(shorter) <= 40
    assert FACT in shorter  # the most relevant memory is what stays
    assert await block.atruncate(content, 0) == content
    assert await block.atruncate(content, full) is None
    assert await block.atruncate("text this block never produced", 1) is None


async def test_bad_input_is_a_clear_error_and_stores_nothing(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="scope"):
        SGMemMemoryBlock(memory=memory, scope="")
    with pytest.raises(sgmem.InvalidInputError, match="memory"):
        SGMemMemoryBlock(memory=None, scope="alice")  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="budget_tokens"):
        SGMemMemoryBlock(memory=memory, scope="alice", budget_tokens=0)
    block = SGMemMemoryBlock(memory=memory, scope="alice")
    with pytest.raises(sgmem.InvalidInputError, match=r"messages\[1\]"):
        await block.aput([user(FACT), "not a message"])  # type: ignore[list-item]
    assert memory.stats().messages == 0
