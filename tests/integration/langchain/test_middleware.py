"""SGMemMiddleware in create_agent: recall into the system message, remember after the agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

import sgmem
from langchain_sgmem import SGMemMiddleware

from .conftest import RecordingChatModel

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL

FACT = "I adopted a grey cat named Miso last spring."
QUESTION = "What is my cat called?"


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def agent_for(model: RecordingChatModel, middleware: SGMemMiddleware, **kwargs: Any) -> Any:
    return create_agent(
        model, tools=[], middleware=[middleware], checkpointer=InMemorySaver(), system_prompt="Be brief.", **kwargs
    )


def test_a_fact_from_thread_a_reaches_thread_b_of_the_same_scope_only(
    memory: sgmem.Memory, model: RecordingChatModel
) -> None:
    agent = agent_for(model, SGMemMiddleware(memory))
    agent.invoke(say(FACT), thread("A"), context={"scope": "alice"})
    assert "Miso" not in model.system_text()  # nothing to recall yet
    agent.invoke(say(QUESTION), thread("B"), context={"scope": "alice"})
    system = model.system_text()
    assert system.startswith("Be brief.") and "Miso" in system  # appended to the agent's own prompt
    agent.invoke(say(QUESTION), thread("C"), context={"scope": "bob"})
    assert "Miso" not in model.system_text()
    assert model.system_text() == "Be brief."


def test_memories_join_a_system_prompt_of_content_blocks_or_none(
    memory: sgmem.Memory, model: RecordingChatModel
) -> None:
    memory.add({"role": "user", "content": FACT}, scope="alice", thread="old")
    blocks = SystemMessage(content=[{"type": "text", "text": "Be brief."}], id="sys")
    agent = create_agent(model, tools=[], middleware=[SGMemMiddleware(memory, scope="alice")], system_prompt=blocks)
    agent.invoke(say(QUESTION))
    sent = model.calls[-1][0]
    assert sent.content[0] == {"type": "text", "text": "Be brief."} and sent.id == "sys"
    assert "Miso" in sent.content[-1]["text"]
    bare = create_agent(model, tools=[], middleware=[SGMemMiddleware(memory, scope="alice")])
    bare.invoke(say(QUESTION))
    assert model.calls[-1][0].type == "system" and "Miso" in model.system_text()


def test_memories_are_not_written_into_agent_state(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    agent = agent_for(model, SGMemMiddleware(memory, scope="alice"))
    agent.invoke(say(FACT), thread("A"))
    out = agent.invoke(say(QUESTION), thread("B"))
    assert "Miso" in model.system_text()
    assert [m.type for m in out["messages"]] == ["human", "ai"]  # no system or memory message in state
    assert all("Relevant memories" not in m.text for m in out["messages"])
    checkpoint = agent.get_state(thread("B")).values["messages"]
    assert all(not isinstance(m, SystemMessage) for m in checkpoint)


def test_each_exchange_is_written_once_to_the_runs_thread(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    agent = agent_for(model, SGMemMiddleware(memory, scope="alice"))
    model.reply = "What a lovely name."
    agent.invoke(say(FACT), thread("A"))
    model.reply = "Noted."
    agent.invoke(say("I also have a dog."), thread("A"))  # the checkpoint replays the first exchange
    stored = memory.messages(scope="alice")
    assert [(m.role, m.content, m.thread) for m in stored] == [
        ("user", FACT, "A"),
        ("assistant", "What a lovely name.", "A"),
        ("user", "I also have a dog.", "A"),
        ("assistant", "Noted.", "A"),
    ]


def test_without_a_checkpointer_the_thread_is_default(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    agent = create_agent(model, tools=[], middleware=[SGMemMiddleware(memory, scope="alice")])
    agent.invoke(say(FACT))
    assert memory.threads(scope="alice") == ["default"]


@dataclass
class Ctx:
    user_id: str


def test_scope_and_thread_from_the_runtime(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    mw = SGMemMiddleware(memory, context_key="user_id", thread=lambda runtime: f"run-{runtime.context.user_id}")
    agent = agent_for(model, mw, context_schema=Ctx)
    agent.invoke(say(FACT), thread("A"), context=Ctx(user_id="u1"))
    assert memory.threads(scope="u1") == ["run-u1"]
    by_fn = SGMemMiddleware(memory, scope=lambda runtime: runtime.context.user_id)
    agent_for(model, by_fn, context_schema=Ctx).invoke(say(QUESTION), thread("B"), context=Ctx(user_id="u1"))
    assert "Miso" in model.system_text()


def test_a_missing_scope_is_a_clear_error(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    agent = agent_for(model, SGMemMiddleware(memory))
    with pytest.raises(sgmem.InvalidInputError, match=r"context=\{'scope'"):
        agent.invoke(say(QUESTION), thread("A"))
    assert memory.scopes() == []


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18°C and sunny in {city}"


def test_tool_traffic_is_kept_out_unless_asked(memory: sgmem.Memory) -> None:
    def scripted() -> RecordingChatModel:
        call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}
        return RecordingChatModel(script=[AIMessage("", tool_calls=[call]), AIMessage("It is sunny in Paris.")])

    for scope, save_tools in (("plain", False), ("tools", True)):
        mw = SGMemMiddleware(memory, scope=scope, save_tool_messages=save_tools)
        agent = create_agent(scripted(), tools=[get_weather], middleware=[mw])
        out = agent.invoke(say("Weather in Paris?"))
        assert any(isinstance(m, ToolMessage) for m in out["messages"])
    assert [m.role for m in memory.messages(scope="plain")] == ["user", "assistant"]
    assert [m.role for m in memory.messages(scope="tools")] == ["user", "assistant", "tool", "assistant"]
    assert "[tool call get_weather" in memory.messages(scope="tools")[1].content


async def test_async_agent(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    agent = agent_for(model, SGMemMiddleware(memory))
    await agent.ainvoke(say(FACT), thread("A"), context={"scope": "alice"})
    await agent.ainvoke(say(QUESTION), thread("B"), context={"scope": "alice"})
    assert "Miso" in model.system_text()
    await agent.ainvoke(say(QUESTION), thread("C"), context={"scope": "bob"})
    assert "Miso" not in model.system_text()
    assert memory.threads(scope="alice") == ["A", "B"]


def test_bad_construction(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="sgmem.Memory"):
        SGMemMiddleware(None)  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="scope"):
        SGMemMiddleware(memory, scope="")
    with pytest.raises(sgmem.InvalidInputError, match="budget_tokens"):
        SGMemMiddleware(memory, budget_tokens=0)
    with pytest.raises(sgmem.InvalidInputError, match="thread"):
        SGMemMiddleware(memory, thread=42)  # type: ignore[arg-type]


def test_messages_already_in_the_prompt_are_not_repeated_as_memories(
    memory: sgmem.Memory, model: RecordingChatModel
) -> None:
    agent = agent_for(model, SGMemMiddleware(memory, scope="alice"))
    agent.invoke(say(FACT), thread("A"))
    agent.invoke(say(QUESTION), thread("A"))  # same thread: the fact is already in the conversation
    assert any("Miso" in m.text for m in model.calls[-1][1:])
    assert "Miso" not in model.system_text()
    agent.invoke(say(QUESTION), thread("B"))  # another thread: the fact comes from memory
    assert "Miso" in model.system_text()
