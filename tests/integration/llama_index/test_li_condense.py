"""``CondensePlusContextChatEngine`` with ``SGMemMemory``: each memory reaches the LLM's prompt once."""

from __future__ import annotations

import pytest
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

import sgmem
from llama_index_sgmem import SGMemMemory, SGMemRetriever

from .helpers import StaticRetriever

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")]

FACT = "I adopted a grey cat named Miso last spring."


def _prompt(memory: sgmem.Memory, retriever: object, context_tokens: int) -> str:
    mem = SGMemMemory.from_defaults(memory=memory, scope="alice", thread="today", context_tokens=context_tokens)
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    engine = CondensePlusContextChatEngine.from_defaults(retriever=retriever, llm=llm, memory=mem)
    engine.chat("What is my cat called?")
    return "\n".join(str(m.content) for m in llm.last_chat_messages)


@pytest.mark.parametrize("how", ["sgmem retriever, context_tokens=0", "another retriever, default memory"])
def test_each_memory_is_in_the_prompt_once(memory: sgmem.Memory, how: str) -> None:
    memory.add({"role": "user", "content": FACT}, scope="alice", thread="last-year")
    if how.startswith("sgmem"):
        prompt = _prompt(memory, SGMemRetriever(memory=memory, scope="alice", k=4), 0)
    else:
        prompt = _prompt(memory, StaticRetriever(), 1000)
    assert prompt.count(FACT) == 1
