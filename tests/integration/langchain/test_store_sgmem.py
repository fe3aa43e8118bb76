"""SGMemStore beyond the shared contract: durability, scopes, bad input, use in a LangGraph graph."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

import sgmem
from langchain_sgmem import SGMemChatMessageHistory, SGMemRetriever, SGMemStore
from langchain_sgmem.store import STORE_SCOPE_PREFIX, STORE_THREAD

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL

ALICE = ("users", "alice")


@pytest.fixture
def store(memory: sgmem.Memory) -> SGMemStore:
    return SGMemStore(memory)


def test_items_are_durable(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    value = {"text": "Alice adopted a grey cat named Miso.", "year": 2021}
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        store = SGMemStore(mem)
        store.put(ALICE, "pet", value)
        created = store.get(ALICE, "pet")
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        store = SGMemStore(mem)
        assert store.get(ALICE, "pet") == created
        assert store.list_namespaces() == [ALICE]
        assert store.search(("users",), query="What is the cat called?")[0].value == value


def test_items_stay_out_of_chat_recall_by_default(memory: sgmem.Memory, store: SGMemStore) -> None:
    store.put(ALICE, "pet", {"text": "Alice adopted a grey cat named Miso."})
    SGMemChatMessageHistory(memory, scope="users.alice", thread="chat-1").add_user_message("I run marathons.")
    memory.add({"role": "user", "content": "chat only"}, scope="bob", thread="t")
    memory.add({"role": "user", "content": "odd name"}, scope="a..b", thread="t")
    # chat recall of the user's scope never returns the item ...
    assert memory.threads(scope="users.alice") == ["chat-1"]
    assert all("Miso" not in h.text for h in memory.search("What is the cat called?", scope="users.alice"))
    assert "Miso" not in memory.context("What is the cat called?", scope="users.alice")
    docs = SGMemRetriever(memory=memory, scope="users.alice", k=5).invoke("What is the cat called?")
    assert all("Miso" not in d.page_content for d in docs)
    # ... while the store finds it, and lists only namespaces that hold items
    assert [it.key for it in store.search(ALICE, query="What is the cat called?")] == ["pet"]
    assert store.list_namespaces() == [ALICE]
    assert store.scope_of(ALICE) == STORE_SCOPE_PREFIX + "users.alice" and store.scope_of(ALICE) in memory.scopes()
    store.delete(ALICE, "pet")
    assert store.list_namespaces() == [] and store.scope_of(ALICE) not in memory.scopes()
    assert [m.content for m in memory.messages(scope="users.alice")] == ["I run marathons."]


def test_recall_in_chat_shares_the_namespace_scope(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory, index={"fields": ["text"]}, recall_in_chat=True)
    store.put(ALICE, "pet", {"text": "Alice adopted a grey cat named Miso.", "year": 2021})
    SGMemChatMessageHistory(memory, scope="users.alice", thread="chat-1").add_user_message("I run marathons.")
    memory.add({"role": "user", "content": "odd name"}, scope="a..b", thread="t")
    assert memory.threads(scope="users.alice") == [STORE_THREAD, "chat-1"]
    docs = SGMemRetriever(memory=memory, scope="users.alice", k=1).invoke("What is the cat called?")
    assert docs[0].page_content == "Alice adopted a grey cat named Miso."  # the indexed field is the text
    assert [it.key for it in store.search(ALICE, query="marathon running")] == ["pet"]
    assert store.list_namespaces() == [ALICE]
    # the two layouts never see each other's items
    assert SGMemStore(memory).get(ALICE, "pet") is None
    store.delete(ALICE, "pet")
    assert store.list_namespaces() == []
    assert [m.content for m in memory.messages(scope="users.alice")] == ["I run marathons."]


def test_update_keeps_created_at(store: SGMemStore) -> None:
    store.put(ALICE, "k", {"v": 1})
    first = store.get(ALICE, "k")
    store.put(ALICE, "k", {"v": 2})
    second = store.get(ALICE, "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at > first.updated_at


def test_keys_are_free_text(store: SGMemStore) -> None:
    for key in ["a/b", "with space", "ünïcode ☃", "lgstore:x", "."]:
        store.put(ALICE, key, {"k": key})
    assert {it.key for it in store.search(ALICE, limit=50)} == {"a/b", "with space", "ünïcode ☃", "lgstore:x", "."}
    assert store.get(ALICE, "ünïcode ☃").value == {"k": "ünïcode ☃"}


def test_configured_fields_choose_what_is_indexed(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory, fields=["summary"])
    store.put(ALICE, "a", {"summary": "A trip to Japan in April.", "body": "cats cats cats"})
    store.put(ALICE, "b", {"summary": "Adopting a cat from the shelter.", "body": "travel"})
    assert store.search(ALICE, query="holiday abroad", limit=1)[0].key == "a"
    assert store.search(ALICE, query="cats cats cats", limit=1)[0].key == "b"  # body is not indexed


BAD_BATCHES: list[tuple[list[Any], type[Exception], str]] = [
    ([PutOp(("a.b",), "k", {"v": 1})], InvalidNamespaceError, "'.'"),
    ([PutOp((), "k", {"v": 1})], InvalidNamespaceError, "empty"),
    ([PutOp(("ok",), "k", {"v": 1}), PutOp(("x", ""), "k", {"v": 1})], InvalidNamespaceError, "empty"),
    ([PutOp(("ok",), "k", {"v": object()})], sgmem.InvalidInputError, "value['v']"),
    ([PutOp(("ok",), "k", {"v": math.nan})], sgmem.InvalidInputError, "finite"),
    ([PutOp(("ok",), "k", {1: "int key"})], sgmem.InvalidInputError, "keys that are strings"),
    ([PutOp(("ok",), "k", ["not", "a", "dict"])], sgmem.InvalidInputError, "dict"),
    ([PutOp(("ok",), "", {"v": 1})], sgmem.InvalidInputError, "key"),
    ([PutOp(("ok",), "k" * 600, {"v": 1})], sgmem.InvalidInputError, "key"),
    ([PutOp(("ok",), "k", {"v": 1}, index="v")], sgmem.InvalidInputError, "index"),
    (
        [PutOp(("ok",), "k", {"v": 1}), SearchOp(("ok",), filter={"v": {"$regex": "x"}})],
        sgmem.InvalidInputError,
        "$regex",
    ),
    ([PutOp(("ok",), "k", {"v": 1}), SearchOp(("ok",), limit=-1)], sgmem.InvalidInputError, "limit"),
    ([PutOp(("ok",), "k", {"v": 1}), GetOp(("ok",), 3)], sgmem.InvalidInputError, "key"),  # type: ignore[arg-type]
    ([PutOp(("ok",), "k", {"v": 1}), "get me"], sgmem.InvalidInputError, "GetOp"),
    ([PutOp(("ok",), "k", {"v": 1}, ttl=5.0)], NotImplementedError, "TTL"),
]


@pytest.mark.parametrize(
    ("ops", "error", "needle"), BAD_BATCHES, ids=lambda v: str(v)[:40] if isinstance(v, list) else ""
)
def test_bad_ops_are_refused_and_nothing_is_stored(
    store: SGMemStore, memory: sgmem.Memory, ops: list[Any], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error) as info:
        store.batch(ops)
    assert needle in str(info.value)
    assert memory.scopes() == []


async def test_bad_ops_are_refused_async(store: SGMemStore, memory: sgmem.Memory) -> None:
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("ok",), "k", {"v": 1}), PutOp(("a.b",), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "k", {"v": 1})
    assert memory.scopes() == []


def test_bad_construction(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="sgmem.Memory"):
        SGMemStore("memory")  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="fields"):
        SGMemStore(memory, fields="text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SGMemStore(memory, mode="vector")  # type: ignore[call-arg]  # the store ranks by its own vectors
    with pytest.raises(sgmem.InvalidInputError, match="recall_in_chat"):
        SGMemStore(memory, recall_in_chat="yes")  # type: ignore[arg-type]


class State(TypedDict, total=False):
    user: str
    fact: str
    recalled: str


def remember(state: State, runtime: Runtime[Any]) -> State:
    runtime.store.put(("memories", state["user"]), "fact-1", {"text": state["fact"]})  # type: ignore[union-attr]
    return {}


def recall(state: State, runtime: Runtime[Any]) -> State:
    found = runtime.store.search(("memories", state["user"]), query="What pet is there?", limit=1)  # type: ignore[union-attr]
    return {"recalled": found[0].value["text"] if found else ""}


def test_in_a_langgraph_graph(memory: sgmem.Memory, store: SGMemStore) -> None:
    graph = (
        StateGraph(State)
        .add_node("remember", remember)
        .add_node("recall", recall)
        .add_edge(START, "remember")
        .add_edge("remember", "recall")
        .add_edge("recall", END)
        .compile(store=store)
    )
    out = graph.invoke({"user": "alice", "fact": "Alice adopted a grey cat named Miso."})
    assert out["recalled"] == "Alice adopted a grey cat named Miso."
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "alice")]
