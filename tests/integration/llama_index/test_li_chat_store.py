"""SGMemChatStore beyond the shared contract: bad input, durability, scopes, recall."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, TextBlock

import sgmem
from llama_index_sgmem import SGMemChatStore
from tests.unit.helpers import LoopGate

from .helpers import FACT, assistant, user

pytestmark = pytest.mark.integration

WIZARD = ChatMessage.model_construct(role="wizard", blocks=[TextBlock(text="abracadabra")], additional_kwargs={})


def test_empty_key_is_a_clear_error_and_stores_nothing(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    for bad in ("", "   "):
        with pytest.raises(sgmem.InvalidInputError, match=r"key: received .*non-empty string"):
            store.add_message(bad, user("hi"))
        with pytest.raises(sgmem.InvalidInputError, match="key"):
            store.set_messages(bad, [user("hi")])
        with pytest.raises(sgmem.InvalidInputError, match="key"):
            store.get_messages(bad)
    with pytest.raises(sgmem.InvalidInputError, match="key"):
        store.add_message(None, user("hi"))  # type: ignore[arg-type]
    assert store.get_keys() == []
    assert memory.stats().messages == 0


def test_bad_message_in_set_messages_keeps_the_old_history(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    store.set_messages("k", [user("old question"), assistant("old answer")])
    with pytest.raises(sgmem.InvalidInputError, match=r"messages\[1\]\.role"):
        store.set_messages("k", [user("new"), WIZARD])
    with pytest.raises(sgmem.InvalidInputError, match=r"messages\[0\]"):
        store.set_messages("k", [ChatMessage(role="user", content="x" * (memory.config.limits.max_message_chars + 1))])
    assert [m.content for m in store.get_messages("k")] == ["old question", "old answer"]


def test_bad_position_is_a_clear_error(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    store.set_messages("k", [user("a"), user("b")])
    with pytest.raises(sgmem.InvalidInputError, match="idx"):
        store.delete_message("k", "1")  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="idx"):
        store.add_message("k", user("c"), idx=1.5)  # type: ignore[arg-type]
    assert [m.content for m in store.get_messages("k")] == ["a", "b"]


def test_constructor_checks_its_arguments(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="sgmem.Memory"):
        SGMemChatStore(memory="./memory", scope="alice")  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="scope"):
        SGMemChatStore(memory=memory, scope="")
    assert SGMemChatStore(memory=memory).scope == "llama_index"


def test_an_emptied_key_is_not_listed(memory: sgmem.Memory) -> None:
    # SimpleChatStore keeps an empty list under the key; sgmem has no empty threads.
    store = SGMemChatStore(memory=memory, scope="alice")
    store.set_messages("a", [user("one")])
    store.set_messages("b", [user("two")])
    store.delete_message("a", 0)
    store.set_messages("b", [])
    assert store.get_keys() == []
    assert store.delete_last_message("a") is None


def test_keys_are_threads_of_the_scope_only(memory: sgmem.Memory) -> None:
    alice = SGMemChatStore(memory=memory, scope="alice")
    bob = SGMemChatStore(memory=memory, scope="bob")
    alice.set_messages("chat", [user("alice speaking")])
    bob.set_messages("chat", [user("bob speaking")])
    assert [m.content for m in alice.get_messages("chat")] == ["alice speaking"]
    assert bob.delete_messages("chat") == [user("bob speaking")]
    assert alice.get_keys() == ["chat"] and bob.get_keys() == []
    assert memory.threads(scope="alice") == ["chat"]


def test_reset_with_the_same_head_keeps_ids_and_times(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    store.set_messages("k", [user("a"), assistant("b")])
    before = memory.messages(scope="alice", thread="k")
    store.set_messages("k", [user("a"), assistant("b"), user("c")])
    after = memory.messages(scope="alice", thread="k")
    assert [(m.id, m.at) for m in after[:2]] == [(m.id, m.at) for m in before]
    assert [m.content for m in after] == ["a", "b", "c"]


def test_history_survives_reopening_the_store(store_path: Path, embedder: sgmem.Embedder) -> None:
    history = [user(FACT, additional_kwargs={"source": "web"}), assistant("Noted.")]
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        SGMemChatStore(memory=mem, scope="alice").set_messages("chat-1", list(history))
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        store = SGMemChatStore(memory=mem, scope="alice")
        assert store.get_keys() == ["chat-1"]
        assert store.get_messages("chat-1") == history


def test_stored_chats_are_recalled_by_sgmem(memory: sgmem.Memory) -> None:
    SGMemChatStore(memory=memory, scope="alice").set_messages("chat-1", [user(FACT), assistant("Noted.")])
    hits = memory.search("Which food does my cat love?", scope="alice", k=1)
    assert hits[0].text == FACT and hits[0].thread == "chat-1"


def test_serialisation_leaves_the_store_object_out(memory: sgmem.Memory) -> None:
    store = SGMemChatStore(memory=memory, scope="alice")
    # the path (None: in memory) is what ChatMemoryBuffer.from_dict needs to reopen the store
    assert store.to_dict() == {
        "scope": "alice",
        "store_path": None,
        "store_url": None,
        "store_config": None,
        "class_name": "SGMemChatStore",
    }


async def test_async_writes_do_not_block_the_event_loop(embedder: sgmem.Embedder) -> None:
    gate = LoopGate(embedder)  # each embedding waits until the loop has ticked meanwhile (no clock)
    with sgmem.Memory(embedder=gate) as mem:
        store = SGMemChatStore(memory=mem, scope="alice")
        task = asyncio.create_task(gate.ticker())
        await store.async_add_message("k", user(FACT))
        task.cancel()
        assert gate.waits and all(gate.waits)  # the loop kept running during the embedding
        assert [m.content for m in await store.aget_messages("k")] == [FACT]
