"""LangChain ⇄ sgmem message mapping: exact replay, indexable text, clear refusals."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

import sgmem
from langchain_sgmem import SGMemChatMessageHistory
from langchain_sgmem._messages import from_sgmem, render_text, to_sgmem

pytestmark = pytest.mark.integration


class CustomMessage(BaseMessage):
    """A user-defined message type the adapters cannot replay as itself."""

    type: str = "custom"


class MyHuman(HumanMessage):
    """A subclass of a known type: it would replay as a plain HumanMessage, so it is refused."""


TOOL_CALL = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}

#: Every kind of message the adapters accept, with the fields that must survive.
MESSAGES: list[BaseMessage] = [
    HumanMessage("I adopted a cat named Miso.", id="h1", name="alice", additional_kwargs={"lang": "en"}),
    AIMessage(
        "Lovely name!",
        id="a1",
        response_metadata={"model_name": "fake", "finish_reason": "stop"},
        usage_metadata={"input_tokens": 5, "output_tokens": 3, "total_tokens": 8},
    ),
    AIMessage("", id="a2", tool_calls=[TOOL_CALL]),  # empty content, a tool call only
    ToolMessage("18°C and sunny", tool_call_id="call_1", name="get_weather", artifact={"raw": [18, "sunny"]}),
    SystemMessage("Be brief.", id="s1"),
    HumanMessage(
        content=[
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]
    ),
    HumanMessage(content=[{"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}}]),
    AIMessage(content=""),  # nothing at all
    ChatMessage(role="user", content="a generic chat message"),
    ChatMessage(role="developer", content="a developer instruction"),
    FunctionMessage(name="lookup", content='{"found": true}'),
    AIMessageChunk(content="streamed ", id="chunk-1"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: f"{type(m).__name__}")
def test_mapping_round_trips_exactly(message: BaseMessage) -> None:
    item = to_sgmem(message)
    assert item["content"].strip()  # sgmem indexes non-blank text
    replayed = from_sgmem(sgmem.Message(role=item["role"], content=item["content"], metadata=item["metadata"]))
    assert type(replayed) is type(message)
    assert replayed == message  # every field: content (str or blocks), id, name, kwargs, metadata, tool calls


def test_history_replays_every_kind_in_order(memory: sgmem.Memory) -> None:
    history = SGMemChatMessageHistory(memory, scope="alice", thread="t1")
    history.add_messages(MESSAGES)
    assert history.messages == MESSAGES
    assert [type(m) for m in history.messages] == [type(m) for m in MESSAGES]


@pytest.mark.parametrize(
    ("message", "role"),
    [
        (HumanMessage("x"), "user"),
        (AIMessage("x"), "assistant"),
        (SystemMessage("x"), "system"),
        (ToolMessage("x", tool_call_id="c"), "tool"),
        (ChatMessage(role="assistant", content="x"), "assistant"),
    ],
)
def test_roles(message: BaseMessage, role: str) -> None:
    assert to_sgmem(message)["role"] == role


def test_text_renderings_index_what_the_message_says() -> None:
    assert render_text(MESSAGES[0]) == "I adopted a cat named Miso."
    assert render_text(MESSAGES[2]) == '[tool call get_weather {"city": "Paris"}]'
    assert render_text(MESSAGES[5]) == "What is in this picture?"
    assert render_text(MESSAGES[6]) == "[image_url]"
    assert render_text(MESSAGES[7]) == "[empty ai message]"


def test_name_becomes_the_speaker_label(memory: sgmem.Memory) -> None:
    SGMemChatMessageHistory(memory, scope="alice", thread="t").add_messages([MESSAGES[0]])
    (stored,) = memory.messages(scope="alice")
    assert stored.name == "alice" and stored.role == "user"


def test_messages_added_without_langchain_replay_by_role(memory: sgmem.Memory) -> None:
    memory.add(
        [
            {"role": "user", "content": "hi", "id": "u1", "name": "Bob"},
            {"role": "assistant", "content": "hello", "id": "a1"},
            {"role": "system", "content": "be nice", "id": "s1"},
            {"role": "tool", "content": "42", "id": "t1"},
        ],
        scope="bob",
        thread="t",
    )
    got = SGMemChatMessageHistory(memory, scope="bob", thread="t").messages
    assert got == [
        HumanMessage("hi", id="u1", name="Bob"),
        AIMessage("hello", id="a1"),
        SystemMessage("be nice", id="s1"),
        ChatMessage(role="tool", content="42", id="t1"),
    ]


BAD: list[tuple[Any, str]] = [
    (CustomMessage(content="hello"), "CustomMessage"),
    (MyHuman(content="hello"), "MyHuman"),
    (ChatMessage(role=" ", content="Once upon a time"), "role"),  # a role of its own is a named turn; blank is not
    (RemoveMessage(id="h1"), "RemoveMessage"),
    ("just a string", "str"),
    (AIMessage("x", additional_kwargs={"when": object()}), "JSON"),
]


@pytest.mark.parametrize(("bad", "needle"), BAD, ids=[n for _, n in BAD])
def test_unmappable_messages_are_refused_and_nothing_is_stored(memory: sgmem.Memory, bad: Any, needle: str) -> None:
    history = SGMemChatMessageHistory(memory, scope="alice", thread="t")
    history.add_messages([HumanMessage("kept")])
    with pytest.raises(sgmem.InvalidInputError) as info:
        history.add_messages([HumanMessage("fine"), bad])  # the good one must not be stored either
    assert needle in str(info.value)
    assert "messages[1]" in str(info.value)
    assert [m.content for m in history.messages] == ["kept"]
    assert memory.stats("alice").messages == 1


async def test_unmappable_messages_are_refused_async(memory: sgmem.Memory) -> None:
    history = SGMemChatMessageHistory(memory, scope="alice", thread="t")
    with pytest.raises(sgmem.InvalidInputError, match="CustomMessage"):
        await history.aadd_messages([HumanMessage("fine"), CustomMessage(content="x")])
    assert await history.aget_messages() == []
    assert memory.scopes() == []
