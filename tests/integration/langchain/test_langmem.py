"""LangMem's memory tools (``create_manage_memory_tool``, ``create_search_memory_tool``) over SGMemStore.

A LangGraph agent (``create_agent``) with a fake model that calls LangMem's
tools creates, searches, updates and deletes memories kept in sgmem; the
namespace's user comes from the run's config, so one user's search never
returns another's memories.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage

import sgmem
from langchain_sgmem import SGMemStore

from .conftest import RecordingChatModel

langmem = pytest.importorskip("langmem")

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL

NAMESPACE = ("memories", "{langgraph_user_id}")


def agent_with_langmem(model: RecordingChatModel, store: SGMemStore) -> Any:
    tools = [langmem.create_manage_memory_tool(namespace=NAMESPACE), langmem.create_search_memory_tool(NAMESPACE)]
    return create_agent(model, tools=tools, store=store)


def run(agent: Any, model: RecordingChatModel, user: str, *steps: tuple[str, dict[str, Any]]) -> list[ToolMessage]:
    model.script = [
        AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}])
        for i, (n, a) in enumerate(steps)
    ]
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "Go."}]}, {"configurable": {"langgraph_user_id": user}}
    )
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def found(message: ToolMessage) -> list[dict[str, Any]]:
    return json.loads(message.content)  # type: ignore[arg-type]


def test_langmem_tools_create_search_update_delete_on_sgmem(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    store = SGMemStore(memory)
    agent = agent_with_langmem(model, store)
    msgs = run(
        agent,
        model,
        "alice",
        ("manage_memory", {"content": "Alice is vegetarian.", "action": "create"}),
        ("manage_memory", {"content": "Alice works night shifts at a hospital.", "action": "create"}),
        ("search_memory", {"query": "What does Alice eat?", "limit": 1}),
    )
    assert all(m.status == "success" for m in msgs)
    key = msgs[0].content.removeprefix("created memory ")
    assert store.get(("memories", "alice"), key).value == {"content": "Alice is vegetarian."}  # type: ignore[union-attr]
    hits = found(msgs[2])
    assert [h["value"]["content"] for h in hits] == ["Alice is vegetarian."] and hits[0]["key"] == key
    assert hits[0]["namespace"] == ["memories", "alice"] and hits[0]["score"] is not None

    msgs = run(
        agent,
        model,
        "alice",
        ("manage_memory", {"content": "Alice is vegan since 2024.", "action": "update", "id": key}),
        ("search_memory", {"query": "What does Alice eat?", "limit": 1}),
        ("manage_memory", {"action": "delete", "id": key}),
        ("search_memory", {"query": "What does Alice eat?"}),
    )
    assert [h["value"]["content"] for h in found(msgs[1])] == ["Alice is vegan since 2024."]
    assert msgs[2].content == f"Deleted memory {key}"
    assert store.get(("memories", "alice"), key) is None
    assert [h["value"]["content"] for h in found(msgs[3])] == ["Alice works night shifts at a hospital."]
    # the items are sgmem records: durable, in their own scope, out of the user's chat recall
    assert store.scope_of(("memories", "alice")) in memory.scopes()


def test_one_users_langmem_search_never_returns_anothers(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    agent = agent_with_langmem(model, SGMemStore(memory))
    run(agent, model, "bob", ("manage_memory", {"content": "Bob's bank password is pumpernickel."}))
    msgs = run(agent, model, "alice", ("search_memory", {"query": "bank password", "limit": 10}))
    assert found(msgs[0]) == []
    msgs = run(agent, model, "bob", ("search_memory", {"query": "bank password"}))
    assert [h["value"]["content"] for h in found(msgs[0])] == ["Bob's bank password is pumpernickel."]
