"""One contract, two chat stores: SimpleChatStore (the reference) and SGMemChatStore agree.

Every behaviour is exercised on a key that already holds messages, so a store
that appends where it should replace, or deletes by row id where it should
delete by position, fails here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

import sgmem
from llama_index_sgmem import SGMemChatStore

from .helpers import assistant, user

pytestmark = pytest.mark.integration


@pytest.fixture(params=["simple", "sgmem"])
def store(request: pytest.FixtureRequest, embedder: sgmem.Embedder) -> Iterator[BaseChatStore]:
    if request.param == "simple":
        yield SimpleChatStore()
    else:
        with sgmem.Memory(embedder=embedder) as mem:
            yield SGMemChatStore(memory=mem, scope="alice")


M = [user("I adopted a cat."), assistant("What is her name?"), user("Miso."), assistant("Lovely name!")]
# SimpleChatStore keeps the very list it is given (and pops from it): always pass a copy.


def test_unknown_key_reads_as_empty(store: BaseChatStore) -> None:
    assert store.get_messages("nobody") == []
    assert store.get_keys() == []


def test_add_message_appends_in_order(store: BaseChatStore) -> None:
    for m in M:
        store.add_message("k", m)
    assert store.get_messages("k") == M


def test_set_messages_replaces_an_existing_history(store: BaseChatStore) -> None:
    store.set_messages("k", list(M[:2]))
    store.set_messages("k", list(M[2:]))
    assert store.get_messages("k") == M[2:]
    store.set_messages("k", [M[3], M[2], M[1]])  # reorder (a new list)
    assert store.get_messages("k") == [M[3], M[2], M[1]]


def test_set_messages_with_a_longer_history_keeps_the_head_and_adds_the_rest(store: BaseChatStore) -> None:
    store.set_messages("k", list(M[:2]))
    store.set_messages("k", list(M))
    assert store.get_messages("k") == M


def test_add_message_after_set_messages_appends(store: BaseChatStore) -> None:
    store.set_messages("k", list(M[:3]))
    store.add_message("k", M[3])
    assert store.get_messages("k") == M


def test_keys_are_independent(store: BaseChatStore) -> None:
    store.set_messages("k1", list(M[:2]))
    store.set_messages("k2", list(M[2:]))
    store.delete_message("k1", 0)
    store.add_message("k2", M[0])
    assert store.get_messages("k1") == [M[1]]
    assert store.get_messages("k2") == [*M[2:], M[0]]
    assert sorted(store.get_keys()) == ["k1", "k2"]


@pytest.mark.parametrize(
    ("idx", "remaining"), [(0, [1, 2, 3]), (1, [0, 2, 3]), (3, [0, 1, 2]), (-1, [0, 1, 2]), (-4, [1, 2, 3])]
)
def test_delete_message_deletes_by_position_and_returns_it(
    store: BaseChatStore, idx: int, remaining: list[int]
) -> None:
    store.set_messages("k", list(M))
    assert store.delete_message("k", idx) == M[idx]
    assert store.get_messages("k") == [M[i] for i in remaining]


def test_delete_message_twice_at_the_same_position_deletes_the_next_one(store: BaseChatStore) -> None:
    store.set_messages("k", list(M))
    assert store.delete_message("k", 1) == M[1]
    assert store.delete_message("k", 1) == M[2]
    assert store.get_messages("k") == [M[0], M[3]]


def test_delete_message_out_of_range_returns_none_and_deletes_nothing(store: BaseChatStore) -> None:
    store.set_messages("k", list(M))
    assert store.delete_message("k", len(M)) is None
    assert store.delete_message("k", 99) is None
    assert store.get_messages("k") == M


def test_delete_message_of_an_unknown_key_returns_none(store: BaseChatStore) -> None:
    store.set_messages("k", list(M))
    assert store.delete_message("other", 0) is None
    assert store.get_messages("k") == M


def test_delete_last_message_returns_it(store: BaseChatStore) -> None:
    store.set_messages("k", list(M))
    assert store.delete_last_message("k") == M[-1]
    assert store.delete_last_message("k") == M[-2]
    assert store.get_messages("k") == M[:2]
    assert store.delete_last_message("other") is None


def test_delete_messages_returns_them_and_forgets_the_key(store: BaseChatStore) -> None:
    store.set_messages("k", list(M))
    store.set_messages("keep", list(M[:1]))
    assert store.delete_messages("k") == M
    assert store.get_messages("k") == []
    assert store.get_keys() == ["keep"]
    assert store.delete_messages("k") is None
    assert store.get_messages("keep") == M[:1]


@pytest.mark.parametrize(("idx", "order"), [(0, "x0123"), (2, "01x23"), (-1, "012x3"), (4, "0123x"), (10, "0123x")])
def test_add_message_at_a_position_inserts_like_list_insert(store: BaseChatStore, idx: int, order: str) -> None:
    new = user("Inserted message.")
    store.set_messages("k", list(M))
    store.add_message("k", new, idx=idx)  # type: ignore[call-arg]  # SimpleChatStore's signature
    assert store.get_messages("k") == [new if c == "x" else M[int(c)] for c in order]


def test_rich_messages_round_trip(store: BaseChatStore) -> None:
    rich = [
        ChatMessage(
            role="user", blocks=[TextBlock(text="Look:"), ImageBlock(image=b"img", image_mimetype="image/png")]
        ),
        ChatMessage(
            role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": 1})]
        ),
        ChatMessage(role="tool", content="found", additional_kwargs={"tool_call_id": "c1"}),
    ]
    store.set_messages("k", list(rich))
    assert store.get_messages("k") == rich
    assert store.delete_message("k", 1) == rich[1]


async def test_async_twins_behave_like_the_sync_methods(store: BaseChatStore) -> None:
    await store.aset_messages("k", list(M[:2]))
    await store.aset_messages("k", list(M[1:3]))
    await store.async_add_message("k", M[3])
    assert await store.aget_messages("k") == M[1:]
    assert await store.adelete_message("k", 0) == M[1]
    assert await store.adelete_message("k", 5) is None
    assert await store.adelete_last_message("k") == M[3]
    assert await store.aget_keys() == ["k"]
    assert await store.adelete_messages("k") == [M[2]]
    assert await store.aget_keys() == []
    assert await store.adelete_messages("k") is None
