"""SGMemMemory as the ``memory=`` of LlamaIndex chat engines and agents.

In each: a fact told in one thread reaches the LLM's input in a later thread
of the same scope, and never in another scope.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import MessageRole, ToolCallBlock
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine, SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLMWithChatMemoryOfLastCall
from llama_index.core.tools import FunctionTool

import sgmem
from llama_index_sgmem import SGMemMemory

from .helpers import FACT, QUESTION, SECRET, StaticRetriever, rendered

pytestmark = [
    pytest.mark.integration,
    # llama-index workflows run inspect.getmembers over pydantic models (ChatMemoryBuffer too): not ours
    pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect"),
]

ENGINES = ["simple", "context", "condense_plus_context"]


def _engine(kind: str, memory: SGMemMemory, llm: Any) -> Any:
    if kind == "simple":
        return SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="You are helpful.")
    if kind == "context":
        return ContextChatEngine.from_defaults(retriever=StaticRetriever(), llm=llm, memory=memory)
    return CondensePlusContextChatEngine.from_defaults(retriever=StaticRetriever(), llm=llm, memory=memory)


async def _chat(engine: Any, text: str, how: str) -> str:
    if how == "sync":
        return str(engine.chat(text))
    if how == "async":
        return str(await engine.achat(text))
    if how == "stream":
        return "".join(engine.stream_chat(text).response_gen)  # the generator waits for the history write
    response = await engine.astream_chat(text)
    return "".join([token async for token in response.async_response_gen()])  # awaits the history write


@pytest.mark.parametrize("how", ["sync", "async", "stream", "astream"])
@pytest.mark.parametrize("kind", ENGINES)
async def test_chat_engine_recalls_across_threads_not_scopes(memory: sgmem.Memory, kind: str, how: str) -> None:
    def mem(scope: str, thread: str) -> SGMemMemory:
        return SGMemMemory.from_defaults(memory=memory, scope=scope, thread=thread)

    await _chat(_engine(kind, mem("alice", "monday"), MockLLM(max_tokens=3)), FACT, how)

    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    await _chat(_engine(kind, mem("alice", "tuesday"), llm), QUESTION, how)
    seen = rendered(llm.last_chat_messages)
    assert FACT in seen
    assert any(m.role == MessageRole.SYSTEM and FACT in (m.content or "") for m in llm.last_chat_messages or [])

    other = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    await _chat(_engine(kind, mem("bob", "tuesday"), other), QUESTION, how)
    assert other.last_chat_messages and QUESTION in rendered(other.last_chat_messages)
    assert SECRET not in rendered(other.last_chat_messages)

    # the engines wrote both turns of each thread through to sgmem
    for scope in ("alice", "bob"):
        assert [m.role for m in memory.messages(scope=scope, thread="tuesday")] == ["user", "assistant"]


def _clock() -> FunctionTool:
    def what_time_is_it() -> str:
        """Tell the current time."""
        return "It is noon."

    return FunctionTool.from_defaults(fn=what_time_is_it)


def _agent(kind: str, llm: Any) -> Any:
    agent = FunctionAgent(name="helper", description="Helps the user.", tools=[_clock()], llm=llm)
    return agent if kind == "function_agent" else AgentWorkflow(agents=[agent], root_agent="helper")


@pytest.mark.parametrize("kind", ["function_agent", "agent_workflow"])
async def test_agent_recalls_across_threads_not_scopes(memory: sgmem.Memory, kind: str) -> None:
    def mem(scope: str, thread: str) -> SGMemMemory:
        return SGMemMemory.from_defaults(memory=memory, scope=scope, thread=thread)

    await _agent(kind, MockFunctionCallingLLMWithChatMemoryOfLastCall()).run(
        user_msg=FACT, memory=mem("alice", "monday")
    )
    # tool traffic is not stored by default; with save_tool_messages the run's tool call and result replay exactly
    assert [m.role for m in mem("alice", "monday").get_all()] == ["user", "assistant"]
    tools = SGMemMemory.from_defaults(memory=memory, scope="carol", thread="monday", save_tool_messages=True)
    await _agent(kind, MockFunctionCallingLLMWithChatMemoryOfLastCall()).run(user_msg=FACT, memory=tools)
    monday = tools.get_all()
    assert [m.role for m in monday] == ["user", "assistant", "tool", "assistant"]
    assert isinstance(monday[1].blocks[0], ToolCallBlock) and monday[1].blocks[0].tool_name == "what_time_is_it"
    assert monday[2].content == "It is noon." and "tool_call_id" in monday[2].additional_kwargs

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    await _agent(kind, llm).run(user_msg=QUESTION, memory=mem("alice", "tuesday"))
    assert FACT in rendered(llm.last_chat_messages)

    other = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    await _agent(kind, other).run(user_msg=QUESTION, memory=mem("bob", "tuesday"))
    assert QUESTION in rendered(other.last_chat_messages)
    assert SECRET not in rendered(other.last_chat_messages)
