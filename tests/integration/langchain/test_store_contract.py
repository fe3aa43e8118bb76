"""One LangGraph store contract, run against ``InMemoryStore(index=...)`` (the reference) and ``SGMemStore``.

Every behaviour runs on both stores; where a result can be compared, the two
must agree — semantic search included: same order, same scores. Known, deliberate differences (not tested as agreement):

- ``InMemoryStore`` keeps listing a namespace after its last item is deleted
  (or after a mere ``get`` on it); ``SGMemStore`` lists namespaces holding items.
- Without ``query``, order across namespaces is the reference's insertion
  order and SGMemStore's namespace order: compared as sets.
- ``SGMemStore`` keeps ``created_at`` when an item is updated.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

import sgmem
from langchain_sgmem import SGMemEmbeddings, SGMemStore

pytestmark = pytest.mark.integration

ALICE, BOB, BOB_NOTES, DOCS = ("users", "alice"), ("users", "bob"), ("users", "bob", "notes"), ("docs",)

ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (ALICE, "pet", {"text": "Alice adopted a grey cat named Miso.", "kind": "fact", "year": 2021,
                    "tags": ["pet"], "meta": {"source": "chat", "confidence": 0.9}}),
    (ALICE, "job", {"text": "Alice works as a nurse at a hospital in Lyon.", "kind": "fact", "year": 2019,
                    "tags": ["work"], "meta": {"source": "profile", "confidence": 0.7}}),
    (ALICE, "drink", {"text": "Alice prefers green tea to coffee.", "kind": "preference", "year": 2023,
                      "tags": ["food"], "meta": {"source": "chat", "confidence": 0.5}}),
    (BOB, "pet", {"text": "Bob has a parrot called Kiwi.", "kind": "fact", "year": 2020,
                  "tags": ["pet"], "meta": {"source": "chat", "confidence": 0.8}}),
    (BOB_NOTES, "n1", {"text": "Bob is learning to play the cello.", "kind": "note", "year": 2024,
                       "tags": [], "meta": {"source": "notes", "confidence": 0.6}}),
    (DOCS, "install", {"text": "How to install the application on Linux.", "kind": "doc", "year": 2022,
                       "tags": ["install"], "meta": {"source": "repo", "confidence": 1.0}}),
]  # fmt: skip

KINDS = ["InMemoryStore", "SGMemStore"]


def make_store(kind: str, embedder: sgmem.Embedder, memory: sgmem.Memory | None = None) -> BaseStore:
    if kind == "InMemoryStore":
        return InMemoryStore(index={"dims": embedder.dim, "embed": SGMemEmbeddings(embedder)})
    assert memory is not None
    return SGMemStore(memory)


def fill(store: BaseStore) -> BaseStore:
    store.batch([PutOp(ns, key, value) for ns, key, value in ITEMS])
    return store


@pytest.fixture(scope="module")
def filled_pair(embedder: sgmem.Embedder) -> Iterator[dict[str, BaseStore]]:
    """Both stores holding ITEMS, shared by the read-only tests."""
    with sgmem.Memory(embedder=embedder) as mem:
        yield {kind: fill(make_store(kind, embedder, mem)) for kind in KINDS}


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, embedder: sgmem.Embedder) -> Iterator[BaseStore]:
    """A fresh, empty store of each kind."""
    with sgmem.Memory(embedder=embedder) as mem:
        yield make_store(request.param, embedder, mem)


def keys(items: list[Any]) -> set[tuple[tuple[str, ...], str]]:
    return {(it.namespace, it.key) for it in items}


# ------------------------------------------------------------------ get/put/delete
def test_put_get_round_trip(store: BaseStore) -> None:
    value = {"text": "hello", "n": 1, "f": 2.5, "ok": True, "none": None, "nested": {"list": [1, "two", {"x": []}]}}
    store.put(ALICE, "k", value)
    item = store.get(ALICE, "k")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ALICE, "k", value)
    assert isinstance(item.created_at, datetime) and item.created_at.tzinfo is not None
    assert item.updated_at >= item.created_at
    assert store.get(ALICE, "missing") is None
    assert store.get(BOB, "k") is None  # keys are per namespace


def test_put_overwrites_and_delete_removes(store: BaseStore) -> None:
    store.put(ALICE, "k", {"text": "old"})
    before = store.get(ALICE, "k")
    store.put(ALICE, "k", {"text": "new", "v": 2})
    after = store.get(ALICE, "k")
    assert before is not None and after is not None
    assert after.value == {"text": "new", "v": 2} and after.updated_at >= before.updated_at
    assert len(store.search(ALICE)) == 1
    store.delete(ALICE, "k")
    assert store.get(ALICE, "k") is None
    store.delete(ALICE, "k")  # deleting twice is fine
    assert store.search(ALICE) == []


def test_batch_results_in_order_reads_before_writes_last_put_wins(store: BaseStore) -> None:
    store.put(ALICE, "a", {"v": 0})
    results = store.batch(
        [
            PutOp(ALICE, "a", {"v": 1}),
            GetOp(ALICE, "a"),  # sees the store as it was before the batch
            PutOp(ALICE, "b", {"v": 1}),
            PutOp(ALICE, "b", {"v": 2}),  # the last write to a key wins
            SearchOp(("users",)),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[2] is None and results[3] is None
    assert results[1].value == {"v": 0}
    assert [it.key for it in results[4]] == ["a"]
    assert results[5] == [ALICE]
    assert store.get(ALICE, "a").value == {"v": 1}
    assert store.get(ALICE, "b").value == {"v": 2}


async def test_async_twins(store: BaseStore) -> None:
    await store.aput(ALICE, "pet", {"text": "Alice adopted a grey cat named Miso."})
    await store.aput(BOB, "pet", {"text": "Bob has a parrot called Kiwi."})
    assert (await store.aget(ALICE, "pet")).value == {"text": "Alice adopted a grey cat named Miso."}
    found = await store.asearch(("users",), query="Which bird does Bob own?", limit=1)
    assert [(it.namespace, it.key) for it in found] == [(BOB, "pet")]
    assert await store.alist_namespaces(prefix=("users",)) == [ALICE, BOB]
    await store.adelete(BOB, "pet")
    assert await store.aget(BOB, "pet") is None


# ------------------------------------------------------------------------ search
@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (("users",), {ALICE, BOB, BOB_NOTES}),
        (("users", "bob"), {BOB, BOB_NOTES}),
        (("users", "bo"), set()),  # labels match whole, never as string prefixes
        ((), {ALICE, BOB, BOB_NOTES, DOCS}),
        (("nobody",), set()),
    ],
)
def test_search_by_namespace_prefix(filled_pair: dict[str, BaseStore], prefix: tuple[str, ...], expected: set) -> None:
    want = {(ns, k) for ns, k, _ in ITEMS if ns in expected}
    for store in filled_pair.values():
        assert keys(store.search(prefix, limit=100)) == want


def test_search_without_query_keeps_insertion_order_and_paginates(filled_pair: dict[str, BaseStore]) -> None:
    in_alice = [k for ns, k, _ in ITEMS if ns == ALICE]
    for store in filled_pair.values():
        assert [it.key for it in store.search(ALICE)] == in_alice
        assert all(it.score is None for it in store.search(ALICE))
        everything = store.search((), limit=100)
        pages = [store.search((), limit=2, offset=o) for o in range(0, len(ITEMS) + 2, 2)]
        assert [len(p) for p in pages] == [2, 2, 2, 0]
        assert [keys(p) for p in pages[:3]] == [keys(everything[i : i + 2]) for i in (0, 2, 4)]


FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({"kind": "fact"}, {"alice/pet", "alice/job", "bob/pet"}),
    ({"kind": {"$eq": "preference"}}, {"alice/drink"}),
    ({"kind": {"$ne": "fact"}}, {"alice/drink", "notes/n1", "docs/install"}),
    ({"year": {"$gt": 2021}}, {"alice/drink", "notes/n1", "docs/install"}),
    ({"year": {"$gte": 2021}}, {"alice/pet", "alice/drink", "notes/n1", "docs/install"}),
    ({"year": {"$lt": 2020}}, {"alice/job"}),
    ({"year": {"$lte": 2020}}, {"alice/job", "bob/pet"}),
    ({"year": {"$gte": 2020, "$lt": 2022}}, {"alice/pet", "bob/pet"}),
    ({"kind": "fact", "year": {"$ne": 2019}}, {"alice/pet", "bob/pet"}),
    ({"meta": {"source": "chat"}}, {"alice/pet", "alice/drink", "bob/pet"}),
    ({"meta": {"confidence": {"$gte": 0.8}}}, {"alice/pet", "bob/pet", "docs/install"}),
    ({"tags": ["pet"]}, {"alice/pet", "bob/pet"}),
    ({"tags": []}, {"notes/n1"}),
    ({"missing": "x"}, set()),
]


def _label(ns: tuple[str, ...], key: str) -> str:
    return f"{ns[-1]}/{key}"


@pytest.mark.parametrize(("flt", "expected"), FILTERS, ids=[str(f) for f, _ in FILTERS])
def test_filters_agree(filled_pair: dict[str, BaseStore], flt: dict[str, Any], expected: set[str]) -> None:
    results = {kind: store.search((), filter=flt, limit=100) for kind, store in filled_pair.items()}
    for kind, found in results.items():
        assert {_label(it.namespace, it.key) for it in found} == expected, kind
    assert keys(results["InMemoryStore"]) == keys(results["SGMemStore"])


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("What pet does Alice have?", (ALICE, "pet")),
        ("Where does she work?", (ALICE, "job")),
        ("favourite hot drink", (ALICE, "drink")),
        ("musical instrument lessons", (BOB_NOTES, "n1")),
        ("setting up the software on a computer", (DOCS, "install")),
    ],
)
def test_semantic_search_agrees_on_the_best_match(
    filled_pair: dict[str, BaseStore], query: str, best: tuple[tuple[str, ...], str]
) -> None:
    for store in filled_pair.values():
        found = store.search((), query=query, limit=len(ITEMS))
        assert (found[0].namespace, found[0].key) == best
        assert len(found) == len(ITEMS)  # every item is ranked
        scores = [it.score for it in found]
        assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "query", ["What pet does Alice have?", "favourite hot drink", '{"kind": "doc", "text": "How to install"}']
)
def test_semantic_search_scores_agree(filled_pair: dict[str, BaseStore], query: str) -> None:
    ref, ours = (filled_pair[k].search((), query=query, limit=len(ITEMS)) for k in KINDS)
    assert [(it.namespace, it.key) for it in ours] == [(it.namespace, it.key) for it in ref]
    assert [it.score for it in ours] == pytest.approx([it.score for it in ref], abs=1e-5)


def test_semantic_search_with_filter_prefix_and_offset(filled_pair: dict[str, BaseStore]) -> None:
    for store in filled_pair.values():
        found = store.search(("users",), query="an animal companion", filter={"tags": ["pet"]})
        assert keys(found) == {(ALICE, "pet"), (BOB, "pet")}
        ranked = store.search((), query="an animal companion", limit=len(ITEMS))
        page = store.search((), query="an animal companion", limit=2, offset=1)
        assert [(it.namespace, it.key) for it in page] == [(it.namespace, it.key) for it in ranked[1:3]]


def test_unindexed_items_come_last_unscored(store: BaseStore) -> None:
    store.put(ALICE, "pet", {"text": "Alice adopted a grey cat named Miso."})
    store.put(ALICE, "secret", {"text": "Alice's cat is called Miso."}, index=False)
    store.put(ALICE, "job", {"text": "Alice is a nurse.", "title": "A cat named Miso"}, index=["text"])
    found = store.search(ALICE, query="What is the cat called?", limit=10)
    assert [it.key for it in found] == ["pet", "job", "secret"]
    assert found[-1].score is None and found[0].score is not None
    assert store.get(ALICE, "secret").value == {"text": "Alice's cat is called Miso."}


# --------------------------------------------------------------- list namespaces
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"prefix": ("users",)},
        {"prefix": ("users", "*")},
        {"suffix": ("notes",)},
        {"suffix": ("*", "bob")},
        {"prefix": ("users",), "suffix": ("alice",)},
        {"max_depth": 1},
        {"prefix": ("users",), "max_depth": 2},
        {"limit": 2},
        {"limit": 2, "offset": 2},
        {"prefix": ("nobody",)},
    ],
    ids=str,
)
def test_list_namespaces_agree(filled_pair: dict[str, BaseStore], kwargs: dict[str, Any]) -> None:
    results = {kind: store.list_namespaces(**kwargs) for kind, store in filled_pair.items()}
    assert results["InMemoryStore"] == results["SGMemStore"]


def test_list_namespaces_examples(filled_pair: dict[str, BaseStore]) -> None:
    for store in filled_pair.values():
        assert store.list_namespaces() == sorted({ns for ns, _, _ in ITEMS})
        assert store.list_namespaces(prefix=("users",), max_depth=2) == [ALICE, BOB]
        assert store.list_namespaces(suffix=("notes",)) == [BOB_NOTES]
        assert store.list_namespaces(max_depth=1) == [("docs",), ("users",)]


# --------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("namespace", "needle"),
    [
        ((), "empty"),
        (("users", "a.b"), "'.'"),
        (("users", ""), "empty"),
        (("langgraph", "x"), "langgraph"),
    ],
)
def test_bad_namespaces_are_refused_and_nothing_is_stored(
    store: BaseStore, namespace: tuple[str, ...], needle: str
) -> None:
    with pytest.raises(InvalidNamespaceError, match=needle):
        store.put(namespace, "k", {"text": "hello"})
    assert store.search((), limit=100) == []
    assert store.list_namespaces() == []


def test_bad_prefix_labels_are_refused(store: BaseStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="'.'"):
        store.search(("users.alice",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("a.b",))
