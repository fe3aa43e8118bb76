"""SGMemStore behaves like LangGraph's own stores: field-path vectors, cosine scores, index config, key-value mode."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

import sgmem
from langchain_sgmem import SGMemEmbeddings, SGMemRetriever, SGMemStore
from langchain_sgmem.store import _META

pytestmark = pytest.mark.integration

ALICE = ("users", "alice")


def record(memory: sgmem.Memory, store: SGMemStore, ns: tuple[str, ...], key: str) -> dict[str, Any]:
    """The item's stored record (what sgmem holds for it)."""
    (msg,) = memory.get(scope=store.scope_of(ns), message_ids=[f"lgstore:{key}"])
    return dict(msg.metadata[_META])


def test_identical_text_scores_one_like_inmemorystore(memory: sgmem.Memory, embedder: sgmem.Embedder) -> None:
    text = "Alice adopted a grey cat named Miso."
    store = SGMemStore(memory, index={"fields": ["text"]})
    ref = InMemoryStore(index={"dims": embedder.dim, "embed": SGMemEmbeddings(embedder), "fields": ["text"]})
    for s in (store, ref):
        s.put(ALICE, "pet", {"text": text, "year": 2021})
        s.put(ALICE, "job", {"text": "Alice works as a nurse in Lyon."})
    ours, theirs = store.search(ALICE, query=text), ref.search(ALICE, query=text)
    assert ours[0].key == "pet" and ours[0].score == pytest.approx(1.0, abs=1e-5)
    assert [(it.key, it.score) for it in ours] == [(it.key, pytest.approx(it.score, abs=1e-5)) for it in theirs]


def test_each_field_path_has_its_own_vector(memory: sgmem.Memory, embedder: sgmem.Embedder) -> None:
    index = {"fields": ["title", "tags[*]"]}
    store = SGMemStore(memory, index=index)
    ref = InMemoryStore(index={"dims": embedder.dim, "embed": SGMemEmbeddings(embedder), **index})
    value = {"title": "Weekend trip to Kyoto", "tags": ["temples", "green tea"], "body": "not indexed"}
    other = {"title": "Quarterly tax return", "tags": ["finance"], "body": "green tea"}
    for s in (store, ref):
        s.put(ALICE, "trip", value)
        s.put(ALICE, "tax", other)
    # a query equal to one path's text scores 1.0: that path was embedded alone, not joined with the others
    for query in ("Weekend trip to Kyoto", "green tea", "temples"):
        found = store.search(ALICE, query=query)
        assert found[0].key == "trip" and found[0].score == pytest.approx(1.0, abs=1e-5), query
        want = ref.search(ALICE, query=query)
        assert [(it.key, it.score) for it in found] == [(it.key, pytest.approx(it.score, abs=1e-5)) for it in want]
    assert [p for p, _ in record(memory, store, ALICE, "trip")["vectors"]] == ["title", "tags[*].0", "tags[*].1"]
    # the unindexed body never counts
    assert store.search(ALICE, query="not indexed")[0].score < 0.6


def test_per_put_index_overrides_the_fields(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory, index={"fields": ["text"]})
    store.put(ALICE, "a", {"text": "Alice is a nurse.", "note": "She keeps bees on the roof."}, index=["note"])
    store.put(ALICE, "b", {"text": "She keeps bees on the roof."})
    found = store.search(ALICE, query="She keeps bees on the roof.")
    assert {it.key for it in found} == {"a", "b"} and all(it.score == pytest.approx(1.0, abs=1e-5) for it in found)
    assert store.search(ALICE, query="Alice is a nurse.", limit=1)[0].score < 0.9  # "text" of "a" is not embedded


def test_index_false_items_are_stored_not_searchable(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory, index={"fields": ["text"]})
    store.put(ALICE, "public", {"text": "Alice has a cat named Miso."})
    store.put(ALICE, "private", {"text": "Alice has a cat named Miso."}, index=False)
    found = store.search(ALICE, query="Alice has a cat named Miso.")
    assert [(it.key, it.score is None) for it in found] == [("public", False), ("private", True)]
    assert store.get(ALICE, "private").value == {"text": "Alice has a cat named Miso."}
    assert "vectors" not in record(memory, store, ALICE, "private")


def test_key_value_mode_embeds_nothing(embedder: sgmem.Embedder) -> None:
    texts: list[list[str]] = []

    class Counting:
        name, dim = embedder.name, embedder.dim

        def embed(self, batch: list[str]) -> np.ndarray:
            texts.append(list(batch))
            return embedder.embed(batch)

    with sgmem.Memory(embedder=Counting()) as mem:
        store = SGMemStore(mem, index=None)
        assert store.index_config is None and store.embeddings is None
        for i in range(5):
            store.put(ALICE, f"k{i}", {"text": f"Fact number {i} about Alice's garden."})
        store.put(("users", "bob"), "k", {"text": "Bob's fact."})
        found = store.search(("users",), query="Fact number 3", limit=10)
        assert len(found) == 6 and all(it.score is None for it in found)
        assert all("vectors" not in record(mem, store, ns, k) for ns, k in [(ALICE, "k0"), (("users", "bob"), "k")])
        # no item text and no query ever reaches the embedder (sgmem's one constant per namespace aside)
        seen = {t for batch in texts for t in batch}
        assert not any("Fact" in t or "garden" in t for t in seen), seen
        assert len(seen) <= 1
    with pytest.raises(sgmem.InvalidInputError, match="fields"):
        SGMemStore(mem, index=None, fields=["text"])


def test_index_config_is_exposed_and_honoured(memory: sgmem.Memory) -> None:
    default = SGMemStore(memory)
    assert default.index_config is not None
    assert default.index_config["dims"] == memory.embedder.dim and default.index_config["fields"] == ["$"]
    assert isinstance(default.index_config["embed"], SGMemEmbeddings)
    fake = DeterministicFakeEmbedding(size=16)
    store = SGMemStore(memory, index={"dims": 16, "embed": fake, "fields": ["text"]})
    assert store.index_config == {"dims": 16, "embed": fake, "fields": ["text"]}
    store.put(ALICE, "a", {"text": "exactly this"})
    store.put(ALICE, "b", {"text": "something else"})
    assert store.search(ALICE, query="exactly this")[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(record(memory, store, ALICE, "a")["vectors"][0][1]) == len(_b64_of_zeros(16))
    # an embedding function works too (LangGraph's ensure_embeddings)
    fn_store = SGMemStore(memory, index={"dims": 16, "embed": fake.embed_documents})
    fn_store.put(("fn",), "x", {"text": "hello"})
    assert fn_store.search(("fn",), query="hello")[0].score is not None


def _b64_of_zeros(dims: int) -> str:
    """What a ``dims``-wide float32 vector of zeros encodes to (its length is every such vector's)."""
    return base64.b64encode(b"\0" * 4 * dims).decode()


@pytest.mark.parametrize(
    ("index", "needle"),
    [
        ({"dims": 0, "embed": DeterministicFakeEmbedding(size=4)}, "dims"),
        ({"embed": DeterministicFakeEmbedding(size=4)}, "dims"),
        ({"fields": "text"}, "fields"),
        ({"fields": []}, "fields"),
        ({"distance_type": "l2"}, "only the keys"),
        ("text", "index"),
    ],
)
def test_bad_index_config_is_refused(memory: sgmem.Memory, index: Any, needle: str) -> None:
    with pytest.raises(sgmem.InvalidInputError, match=needle):
        SGMemStore(memory, index=index)


def test_wrong_dims_refuse_the_put_and_store_nothing(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory, index={"dims": 8, "embed": DeterministicFakeEmbedding(size=16)})
    with pytest.raises(sgmem.InvalidInputError, match="dims"):
        store.put(ALICE, "a", {"text": "hello"})
    assert memory.scopes() == []


def test_embedder_failure_stores_nothing(memory: sgmem.Memory) -> None:
    class Broken(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("provider down")

        def embed_query(self, text: str) -> list[float]:
            raise RuntimeError("provider down")

    store = SGMemStore(memory, index={"dims": 4, "embed": Broken()})
    with pytest.raises(sgmem.SgmemError, match="provider down"):
        store.batch([PutOp(ALICE, "a", {"text": "hello"}), PutOp(("users", "bob"), "b", {"text": "hi"})])
    assert memory.scopes() == []


def test_store_items_stay_out_of_every_chat_recall_path(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory)
    store.put(("alice",), "pin", {"text": "The vault code is quartzfalcon88."})
    memory.add({"role": "user", "content": "I like hiking in the Alps."}, scope="alice", thread="chat")
    for mode in (m for m in sgmem.MODES if m != "entity"):  # entity: the opt-in layer is off
        assert all("quartzfalcon88" not in h.text for h in memory.search("vault code", scope="alice", mode=mode))
    assert "quartzfalcon88" not in memory.context("vault code", scope="alice")
    assert all(
        "quartzfalcon88" not in d.page_content for d in SGMemRetriever(memory=memory, scope="alice").invoke("vault")
    )
    assert store.search(("alice",), query="vault code")[0].key == "pin"


def test_search_reads_a_namespace_again_only_after_it_changed(memory: sgmem.Memory) -> None:
    store = SGMemStore(memory, index={"fields": ["text"]})
    store.put(ALICE, "a", {"text": "first"})
    assert [it.key for it in store.search(ALICE, query="first")] == ["a"]
    other = SGMemStore(memory, index={"fields": ["text"]})  # another writer on the same Memory
    other.put(ALICE, "b", {"text": "second"})
    assert [it.key for it in store.search(ALICE, query="second")] == ["b", "a"]
    other.delete(ALICE, "b")
    assert [it.key for it in store.search(ALICE, query="second")] == ["a"]
    found = store.search(ALICE, query="first")
    found[0].value["text"] = "mutated by the caller"
    assert store.search(ALICE, query="first")[0].value == {"text": "first"}
