"""SGMemToolSpec in LlamaIndex agent loops (FunctionAgent, ReActAgent) with a scripted mock model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent, ToolCallResult
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM

import sgmem
from llama_index_sgmem import SGMemToolSpec
from sgmem.tools import DESCRIPTIONS, TOOL_NAMES

pytestmark = [
    pytest.mark.integration,
    pytest.mark.both_backends,  # both: SQLite and PostgreSQL
    # the agent workflow's inspect.getmembers reads pydantic's deprecated attributes of the mock model
    pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect"),
]

SECRET = "Bob's bank password is pumpernickel."


class Script:
    """A mock model's replies, one per call (then a final answer), and the messages each call saw."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        self.replies = replies
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Any, **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        return self.replies.pop(0) if self.replies else ChatMessage(role="assistant", content="Done.")


def function_calls(*steps: tuple[str, dict[str, Any]]) -> Script:
    return Script(
        [
            ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id=f"c{i}", tool_name=n, tool_kwargs=a)])
            for i, (n, a) in enumerate(steps)
        ]
    )


def react_calls(*steps: tuple[str, dict[str, Any]]) -> Script:
    return Script(
        [
            ChatMessage(
                role="assistant",
                content=f"Thought: I need a tool.\nAction: {n}\nAction Input: {json.dumps(a)}",
            )
            for n, a in steps
        ]
        + [ChatMessage(role="assistant", content="Thought: I can answer.\nAnswer: Done.")]
    )


async def run(agent_cls: type, spec: SGMemToolSpec, script: Script) -> list[Any]:
    """Run an agent with the spec's tools and the scripted model; its tool outputs, in order."""
    agent = agent_cls(tools=spec.to_tool_list(), llm=MockFunctionCallingLLM(response_generator=script))
    handler = agent.run("Go.")
    outputs = [ev.tool_output async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    await handler
    return outputs


def stored(memory: sgmem.Memory) -> dict[str, list[tuple[str | None, str]]]:
    return {s: [(m.id, m.content) for m in memory.messages(scope=s)] for s in memory.scopes()}


@pytest.mark.parametrize("agent_cls", [FunctionAgent, ReActAgent])
async def test_an_agent_remembers_recalls_and_forgets(memory: sgmem.Memory, agent_cls: type) -> None:
    calls = function_calls if agent_cls is FunctionAgent else react_calls
    spec = SGMemToolSpec(memory, scope="alice")
    script = calls(
        ("remember", {"text": "Alice is allergic to penicillin."}),
        ("recall", {"query": "What is Alice allergic to?", "k": 3}),
        ("context", {"query": "allergies"}),
        ("list_threads", {}),
    )
    out = await run(agent_cls, spec, script)
    assert [o.is_error for o in out] == [False] * 4, [o.content for o in out]
    [note] = memory.messages(scope="alice")
    assert note.content == "Alice is allergic to penicillin." and note.name == "memory"
    assert out[0].content == f"Stored memory {note.id} in thread 'memories'."
    assert out[1].content.startswith("1. [") and "penicillin" in out[1].content and note.id in out[1].content
    assert "· memory · thread memories" in out[1].content and "why:" in out[1].content
    assert "penicillin" in out[2].content
    assert out[3].content == "memories"
    assert any("penicillin" in str(m.content) for m in script.seen[2])  # the model read the tool's output

    out = await run(agent_cls, spec, calls(("forget", {"message_ids": [note.id]})))
    assert not out[0].is_error and out[0].content == f"Forgot 1 message(s): {note.id}."
    assert memory.messages(scope="alice") == []


async def test_a_scope_the_model_supplies_never_reaches_another_scope(memory: sgmem.Memory) -> None:
    memory.add({"role": "user", "content": SECRET}, scope="bob", thread="t")
    memory.add({"role": "user", "content": "Alice keeps her bank card in a drawer."}, scope="alice", thread="t")
    before = stored(memory)
    bob_id = before["bob"][0][0]
    spec = SGMemToolSpec(memory, scope="alice")
    out = await run(
        FunctionAgent,
        spec,
        function_calls(
            ("recall", {"query": "bank password", "scope": "bob"}),
            ("recall", {"query": "bank password", "k": 50}),
            ("context", {"query": "bank password", "scope": "bob"}),
            ("forget", {"message_ids": [bob_id]}),
            ("remember", {"text": "planted", "scope": "bob"}),
        ),
    )
    assert all("pumpernickel" not in o.content for o in out)
    assert out[0].is_error and "scope" in out[0].content  # an argument the tool does not have
    assert not out[1].is_error and "drawer" in out[1].content
    assert out[3].is_error and bob_id in out[3].content  # not alice's id: nothing deleted
    assert stored(memory) == before
    assert spec.scope == "alice"
    with pytest.raises(AttributeError):
        spec.scope = "bob"  # type: ignore[misc]


BAD = [
    ("remember", {"text": ""}, "non-blank"),
    ("remember", {"text": "x", "thread": ""}, "thread"),
    ("recall", {"query": "cat", "k": 0}, "k"),
    ("recall", {"query": "   "}, "non-blank"),
    ("context", {"query": "cat", "budget_tokens": 0}, "budget_tokens"),
    ("forget", {}, "message_ids"),
    ("forget", {"message_ids": ["c1", "nope"]}, "nope"),
    ("forget", {"thread": "no-such-thread"}, "no-such-thread"),
]


@pytest.mark.parametrize(("tool", "args", "named"), BAD, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD)])
async def test_bad_input_to_every_tool_is_an_error_output_and_changes_nothing(
    memory: sgmem.Memory, tool: str, args: dict[str, Any], named: str
) -> None:
    memory.add({"role": "user", "content": "I adopted a cat named Miso.", "id": "c1"}, scope="alice", thread="t")
    before = stored(memory)
    out = await run(FunctionAgent, SGMemToolSpec(memory, scope="alice"), function_calls((tool, args)))
    assert out[0].is_error and named in out[0].content, out[0].content
    assert stored(memory) == before


def test_tool_list_descriptions_and_bad_construction(memory: sgmem.Memory) -> None:
    tools = SGMemToolSpec(memory, scope="alice").to_tool_list()
    assert [t.metadata.name for t in tools] == list(TOOL_NAMES)
    for t in tools:
        assert DESCRIPTIONS[t.metadata.name] in t.metadata.description
        assert "scope" not in t.metadata.get_parameters_dict()["properties"]
    only = SGMemToolSpec(memory, scope="alice", tools=["recall", "context"]).to_tool_list()
    assert [t.metadata.name for t in only] == ["recall", "context"]
    with pytest.raises(sgmem.InvalidInputError, match="scope"):
        SGMemToolSpec(memory, scope="")
    with pytest.raises(sgmem.InvalidInputError, match="tools"):
        SGMemToolSpec(memory, scope="alice", tools=["drop"])
    with pytest.raises(sgmem.InvalidInputError, match="memory"):
        SGMemToolSpec("./memory", scope="alice")  # type: ignore[arg-type]
