"""What SGMemMiddleware stores of a run: tool traffic only when asked, or only the user's messages.

The same options, with the same defaults, as LlamaIndex's ``SGMemMemory`` and ``SGMemMemoryBlock``.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

import sgmem
from langchain_sgmem import SGMemMiddleware

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration


@tool
def recall(query: str) -> str:
    """Search long-term memory."""
    return "1. I am allergic to penicillin."


def _run(memory: sgmem.Memory, scope: str, **options: Any) -> list[tuple[str, str]]:
    call = {"name": "recall", "args": {"query": "allergy"}, "id": "c1"}
    # a tool call that also carries text is tool traffic all the same
    model = RecordingChatModel(script=[AIMessage("Let me check.", tool_calls=[call]), AIMessage("Penicillin.")])
    agent = create_agent(model, tools=[recall], middleware=[SGMemMiddleware(memory, scope=scope, **options)])
    agent.invoke({"messages": [{"role": "user", "content": "What am I allergic to?"}]})
    return [(m.role, m.content) for m in memory.messages(scope=scope)]


def test_tool_traffic_is_left_out_by_default_even_with_text(memory: sgmem.Memory) -> None:
    stored = _run(memory, "plain")
    assert stored == [("user", "What am I allergic to?"), ("assistant", "Penicillin.")]
    assert [r for r, _ in _run(memory, "tools", save_tool_messages=True)] == ["user", "assistant", "tool", "assistant"]


def test_save_only_user_messages_stores_the_users_turns(memory: sgmem.Memory) -> None:
    assert _run(memory, "user", save_only_user_messages=True) == [("user", "What am I allergic to?")]


def test_the_two_options_cannot_be_combined(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="save_only_user_messages"):
        SGMemMiddleware(memory, save_tool_messages=True, save_only_user_messages=True)
    with pytest.raises(sgmem.InvalidInputError, match="True or False"):
        SGMemMiddleware(memory, save_only_user_messages=1)  # type: ignore[arg-type]


def test_the_options_have_the_same_names_and_defaults_in_both_frameworks() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index_sgmem import SGMemMemory, SGMemMemoryBlock

    for name in ("save_tool_messages", "save_only_user_messages"):
        defaults = {
            cls.__name__: inspect.signature(cls.__init__).parameters[name].default
            for cls in (SGMemMiddleware, SGMemMemory, SGMemMemoryBlock)
        }
        assert set(defaults.values()) == {False}, (name, defaults)
