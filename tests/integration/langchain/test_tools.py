"""sgmem's own memory tools in a LangChain agent loop: a fake model calls them, the scope is the operator's."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage

import sgmem
from langchain_sgmem import create_memory_tools
from sgmem.tools import TOOL_NAMES

from .conftest import RecordingChatModel

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL

SECRET = "Bob's bank password is pumpernickel."


def calls(*steps: tuple[str, dict[str, Any]]) -> list[AIMessage]:
    """One model turn per tool call, then the final answer comes from the model's ``reply``."""
    return [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{i}", "type": "tool_call"}])
        for i, (name, args) in enumerate(steps)
    ]


def run(memory: sgmem.Memory, model: RecordingChatModel, steps: list[tuple[str, dict[str, Any]]], **kw: Any) -> Any:
    """Run an agent whose model makes ``steps``; returns its ToolMessages, in order."""
    tool_kw = {k: kw.pop(k) for k in ("scope", "tools") if k in kw}
    model.script = calls(*steps)
    agent = create_agent(model, tools=create_memory_tools(memory, **tool_kw))
    out = agent.invoke({"messages": [{"role": "user", "content": "Go."}]}, **kw)
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def stored(memory: sgmem.Memory) -> dict[str, list[tuple[str | None, str]]]:
    return {s: [(m.id, m.content) for m in memory.messages(scope=s)] for s in memory.scopes()}


def test_an_agent_remembers_recalls_and_forgets_through_its_tools(
    memory: sgmem.Memory, model: RecordingChatModel
) -> None:
    msgs = run(
        memory,
        model,
        [
            ("remember", {"text": "Alice is allergic to penicillin."}),
            ("recall", {"query": "What is Alice allergic to?", "k": 3}),
            ("context", {"query": "allergies"}),
            ("list_threads", {}),
        ],
        context={"scope": "alice"},
    )
    assert [m.status for m in msgs] == ["success"] * 4
    note_id = msgs[0].artifact["stored"]
    assert [m.content for m in memory.messages(scope="alice")] == ["Alice is allergic to penicillin."]
    top = msgs[1].artifact["memories"][0]
    assert top["text"] == "Alice is allergic to penicillin." and top["message_ids"] == [note_id]
    assert top["who"] == "memory" and top["when"] and top["thread"] == "memories" and "penicillin" in top["why"]
    assert "penicillin" in msgs[1].content and note_id in msgs[1].content and "why:" in msgs[1].content
    assert "penicillin" in msgs[2].content
    assert msgs[3].content == "memories"
    # the model saw each tool's output before its next call
    assert "penicillin" in model.calls[2][-1].content

    later = run(memory, model, [("forget", {"message_ids": [note_id]})], config={"configurable": {"scope": "alice"}})
    assert later[0].status == "success" and later[0].artifact == {"forgot": 1, "message_ids": [note_id]}
    assert memory.messages(scope="alice") == []


def test_a_scope_the_model_supplies_never_reaches_another_scope(
    memory: sgmem.Memory, model: RecordingChatModel
) -> None:
    memory.add({"role": "user", "content": SECRET}, scope="bob", thread="t")
    memory.add({"role": "user", "content": "Alice keeps her bank card in a drawer."}, scope="alice", thread="t")
    before = stored(memory)
    bob_id = before["bob"][0][0]
    msgs = run(
        memory,
        model,
        [
            ("recall", {"query": "bank password", "scope": "bob", "k": 50}),
            ("context", {"query": "bank password", "scope": "bob", "config": {"configurable": {"scope": "bob"}}}),
            ("list_threads", {"scope": "bob"}),
            ("forget", {"message_ids": [bob_id], "scope": "bob"}),
            ("remember", {"text": "planted", "scope": "bob"}),
        ],
        context={"scope": "alice"},
    )
    assert all("pumpernickel" not in str(m.content) and "pumpernickel" not in str(m.artifact) for m in msgs)
    assert "drawer" in msgs[0].content  # the call ran, on alice's scope
    assert msgs[3].status == "error" and bob_id in msgs[3].content  # not alice's id: nothing deleted
    after = stored(memory)
    assert after["bob"] == before["bob"]
    assert [c for _, c in after["alice"]] == ["Alice keeps her bank card in a drawer.", "planted"]


def test_a_scope_bound_at_construction_wins_over_the_run(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    memory.add({"role": "user", "content": SECRET}, scope="bob", thread="t")
    msgs = run(
        memory,
        model,
        [("remember", {"text": "Carol likes tea."}), ("recall", {"query": "bank password"})],
        scope="carol",
        config={"configurable": {"scope": "bob"}},
        context={"scope": "bob"},
    )
    assert "pumpernickel" not in msgs[1].content
    assert [m.content for m in memory.messages(scope="carol")] == ["Carol likes tea."]


def test_no_scope_anywhere_is_an_error_the_model_reads(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    msgs = run(memory, model, [("remember", {"text": "Nobody's note."})])
    assert msgs[0].status == "error"
    assert "configurable" in msgs[0].content and "scope" in msgs[0].content
    assert memory.scopes() == []


BAD = [
    ("remember", {"text": ""}, "non-blank"),
    ("remember", {}, "text"),
    ("recall", {"query": "cat", "k": 0}, "k"),
    ("recall", {"query": "cat", "k": "many"}, "k"),
    ("context", {"query": "cat", "budget_tokens": -5}, "budget_tokens"),
    ("forget", {}, "message_ids"),
    ("forget", {"thread": "no-such-thread"}, "no-such-thread"),
    ("forget", {"message_ids": "c1"}, "message_ids"),
]


@pytest.mark.parametrize(("tool", "args", "named"), BAD, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD)])
def test_bad_input_to_every_tool_is_an_error_message_and_changes_nothing(
    memory: sgmem.Memory, model: RecordingChatModel, tool: str, args: dict[str, Any], named: str
) -> None:
    memory.add({"role": "user", "content": "I adopted a cat named Miso.", "id": "c1"}, scope="alice", thread="t")
    before = stored(memory)
    msgs = run(memory, model, [(tool, args)], context={"scope": "alice"})
    assert msgs[0].status == "error" and named in msgs[0].content, msgs[0].content
    assert stored(memory) == before


def test_tool_selection_and_bad_construction(memory: sgmem.Memory) -> None:
    assert [t.name for t in create_memory_tools(memory)] == list(TOOL_NAMES)
    assert [t.name for t in create_memory_tools(memory, tools=["recall"])] == ["recall"]
    for t in create_memory_tools(memory):
        assert "scope" not in t.tool_call_schema.model_json_schema().get("properties", {})
    with pytest.raises(sgmem.InvalidInputError, match="tools"):
        create_memory_tools(memory, tools=["recall", "drop_database"])
    with pytest.raises(sgmem.InvalidInputError, match="scope"):
        create_memory_tools(memory, scope="")
    with pytest.raises(sgmem.InvalidInputError, match="memory"):
        create_memory_tools("./memory")  # type: ignore[arg-type]


async def test_the_async_agent_loop_takes_the_scope_from_the_run_too(
    memory: sgmem.Memory, model: RecordingChatModel
) -> None:
    memory.add({"role": "user", "content": SECRET}, scope="bob", thread="t")
    model.script = calls(("remember", {"text": "Alice likes oolong tea."}), ("recall", {"query": "bank password"}))
    agent = create_agent(model, tools=create_memory_tools(memory))
    out = await agent.ainvoke({"messages": [{"role": "user", "content": "Go."}]}, context={"scope": "alice"})
    msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in msgs] == ["success", "success"]
    assert "pumpernickel" not in msgs[1].content and "oolong" in msgs[1].content
    assert [m.content for m in memory.messages(scope="alice")] == ["Alice likes oolong tea."]
