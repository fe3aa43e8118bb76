"""ChatMessage <-> sgmem translation: role mapping, exact replay, what gets indexed, bad input."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)

import sgmem
from llama_index_sgmem import SGMemChatStore

pytestmark = pytest.mark.integration

EXPECTED_ROLE = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.TOOL: "tool",
    MessageRole.FUNCTION: "tool",
}


def test_every_llama_index_role_is_mapped() -> None:
    assert set(EXPECTED_ROLE) == set(MessageRole)


@pytest.mark.parametrize("role", list(MessageRole))
def test_role_is_mapped_for_sgmem_and_replayed_exactly(memory: sgmem.Memory, role: MessageRole) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    msg = ChatMessage(role=role, content=f"A message said as {role.value}.")
    store.add_message("chat", msg)
    [stored] = memory.messages(scope="alice", thread="chat")
    assert stored.role == EXPECTED_ROLE[role]
    assert stored.content == msg.content
    assert store.get_messages("chat") == [msg]
    assert store.get_messages("chat")[0].role is role


def test_blocks_and_additional_kwargs_are_replayed_exactly(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    msgs = [
        ChatMessage(
            role="user",
            blocks=[
                TextBlock(text="What is in this picture?"),
                ImageBlock(image=b"\x89PNG fake", image_mimetype="image/png"),
            ],
        ),
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(content="The user wants the weather."),
                ToolCallBlock(tool_call_id="call-1", tool_name="get_weather", tool_kwargs={"city": "Paris"}),
            ],
            additional_kwargs={"usage": {"tokens": 12}, "flags": [1, 2.5, None, True]},
        ),
        ChatMessage(
            role="tool", content="Sunny, 24 °C.", additional_kwargs={"tool_call_id": "call-1", "name": "get_weather"}
        ),
    ]
    store.set_messages("chat", msgs)
    assert store.get_messages("chat") == msgs


def test_messages_without_text_are_indexed_by_a_description(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    store.set_messages(
        "chat",
        [
            ChatMessage(role="user", content="What's the weather in Paris?"),
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="c1", tool_name="get_weather", tool_kwargs={"city": "Paris"})],
            ),
            ChatMessage(role="user", blocks=[ImageBlock(image=b"fake", image_mimetype="image/png")]),
            ChatMessage(role="assistant", content=""),
        ],
    )
    contents = [m.content for m in memory.messages(scope="alice", thread="chat")]
    assert contents[1] == '[tool call: get_weather {"city": "Paris"}]'
    assert contents[2] == "[image]"
    assert contents[3] == "[empty assistant message]"
    hits = memory.search("get_weather tool call", scope="alice", k=2, mode="bm25")
    assert hits and hits[0].text == contents[1]


def test_messages_stored_through_the_core_replay_with_their_role_and_text(memory: sgmem.Memory) -> None:
    memory.add(
        [{"role": "user", "content": "Hello from the core."}, {"role": "tool", "content": "42"}],
        scope="alice",
        thread="chat",
    )
    got = SGMemChatStore(memory=memory, scope="alice").get_messages("chat")
    assert [(m.role, m.content) for m in got] == [(MessageRole.USER, "Hello from the core."), (MessageRole.TOOL, "42")]


def test_unknown_role_is_a_clear_error_and_stores_nothing(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    odd = ChatMessage.model_construct(role="wizard", blocks=[TextBlock(text="abracadabra")], additional_kwargs={})
    with pytest.raises(sgmem.InvalidInputError, match=r"message\.role: received 'wizard'.*user") as info:
        store.add_message("chat", odd)
    assert info.value.field == "message.role"
    assert memory.messages(scope="alice") == []


def test_not_a_chat_message_is_a_clear_error(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    with pytest.raises(sgmem.InvalidInputError, match="ChatMessage"):
        store.add_message("chat", {"role": "user", "content": "a dict"})  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="list of llama_index ChatMessage"):
        store.set_messages("chat", ChatMessage(role="user", content="not in a list"))  # type: ignore[arg-type]
    assert memory.messages(scope="alice") == []


def test_unserialisable_additional_kwargs_are_a_clear_error(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    msg = ChatMessage(role="user", content="hi", additional_kwargs={"handle": object()})
    with pytest.raises(sgmem.InvalidInputError, match=r"additional_kwargs.*JSON-serialisable"):
        store.add_message("chat", msg)
    assert memory.messages(scope="alice") == []
