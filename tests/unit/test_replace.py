"""Memory.replace: delete then add in one transaction, equal to the two calls one after the other."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

import pytest

import sgmem

T = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
OLD = [
    {"id": "o1", "role": "user", "content": "My favourite tea is a smoky lapsang souchong."},
    {"id": "o2", "role": "assistant", "content": "Lapsang souchong is pine-smoked black tea."},
    {"id": "o3", "role": "user", "content": "I keep bees on the roof of my flat in Leeds."},
]
NEW = [
    {"id": "n1", "role": "user", "content": "I switched to drinking green sencha every morning."},
    {"id": "n2", "role": "assistant", "content": "Sencha is a steamed Japanese green tea."},
]


def _texts(mem: sgmem.Memory, **kw: str) -> list[str]:
    return [m.content for m in mem.messages(**kw)]


def _found(mem: sgmem.Memory, query: str) -> set[str]:
    return {
        i
        for mode in ("vector", "graph", "bm25", "hybrid")
        for h in mem.search(query, scope="a", mode=mode)
        for i in h.message_ids
    }


def test_replace_a_thread(memory: sgmem.Memory) -> None:
    memory.add(OLD, scope="a", thread="t", at=T)
    memory.add([{"id": "x1", "role": "user", "content": "Another thread about sailing boats."}], scope="a", thread="u")
    res = memory.replace(NEW, scope="a", thread="t", at=T)
    assert _texts(memory, scope="a", thread="t") == [m["content"] for m in NEW]
    assert _texts(memory, scope="a", thread="u") == ["Another thread about sailing boats."]
    assert res.message_ids == ("n1", "n2") and res.messages == 2 and res.sentences >= 2
    assert res.replaced is not None and res.replaced.messages == 3 and res.replaced.threads == ("t",)
    assert not {"o1", "o2", "o3"} & _found(memory, "smoky lapsang souchong bees Leeds")
    assert {"n1", "n2"} & _found(memory, "green sencha")
    assert memory.add(OLD[:1], scope="a", thread="t").messages == 1  # the deleted id is free again


def test_replace_given_ids_reusing_them(memory: sgmem.Memory) -> None:
    memory.add(OLD, scope="a", thread="t", at=T)
    res = memory.replace(
        [{"id": "o2", "role": "assistant", "content": "Corrected: lapsang is smoked over pinewood fires."}],
        scope="a",
        thread="t",
        message_ids=["o2", "o3"],
    )
    assert res.replaced is not None and res.replaced.messages == 2
    got = memory.messages(scope="a", thread="t")
    assert [(m.id, m.content) for m in got] == [
        ("o1", OLD[0]["content"]),
        ("o2", "Corrected: lapsang is smoked over pinewood fires."),
    ]
    assert "o3" not in _found(memory, "bees on the roof Leeds")


def test_replace_with_nothing_is_an_atomic_delete(memory: sgmem.Memory) -> None:
    memory.add(OLD, scope="a", thread="t", at=T)
    res = memory.replace([], scope="a", thread="t")
    assert res.messages == 0 and res.message_ids == ()
    assert res.replaced is not None and res.replaced.messages == 3
    assert memory.scopes() == [] and memory.messages(scope="a") == []
    # a scope that never existed: nothing happens, nothing is created
    assert memory.replace([], scope="nobody", thread="t").replaced == sgmem.DeleteReceipt()
    assert memory.scopes() == []


def test_replace_into_a_new_scope_is_an_add(memory: sgmem.Memory) -> None:
    res = memory.replace(NEW, scope="fresh", thread="t")
    assert res.replaced == sgmem.DeleteReceipt()
    assert _texts(memory, scope="fresh") == [m["content"] for m in NEW]


def test_replace_equals_delete_then_add(embedder: sgmem.Embedder) -> None:
    """Same messages, same search results, same generated facts as the two calls in sequence;
    with the kNN edges found by HNSW (issue 14) too, which on a scope this small finds the exact edges."""

    def run(atomic: bool, knn: str = "exact") -> tuple[object, ...]:
        cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_index=knn))
        with sgmem.Memory(embedder=embedder, config=cfg) as mem:
            mem.add(OLD, scope="a", thread="t", at=T)
            mem.add(NEW, scope="a", thread="keep", at=T)
            repl = [{"id": "r1", "role": "user", "content": "My favourite tea is now a green sencha, not lapsang."}]
            if atomic:
                mem.replace(repl, scope="a", thread="t", message_ids=["o1", "o3"], at=T)
            else:
                mem.delete(scope="a", message_ids=["o1", "o3"])
                mem.add(repl, scope="a", thread="t", at=T)
            stats = mem.stats("a").scopes[0]
            if knn == "hnsw":
                assert mem._index(mem._store.require_scope("a")).ann is not None
            hits = [(h.message_ids, round(h.score, 5)) for h in mem.search("favourite tea", scope="a", mode="hybrid")]
            facts = sorted(h.text for h in mem.search("tea", scope="a", kinds=["fact", "summary"], k=20))
            return (
                [(m.id, m.content) for m in mem.messages(scope="a")],
                (stats.messages, stats.sentences, stats.facts, stats.summaries, stats.chronological_edges),
                stats.similarity_edges,
                hits,
                facts,
            )

    want = run(False)
    assert run(True) == want
    assert run(True, "hnsw") == run(False, "hnsw") == want


def test_areplace(memory: sgmem.Memory) -> None:
    memory.add(OLD, scope="a", thread="t")
    res = asyncio.run(memory.areplace(NEW, scope="a", thread="t"))
    assert res.replaced is not None and res.replaced.messages == 3
    assert _texts(memory, scope="a") == [m["content"] for m in NEW]


def test_replace_on_disk_survives_reopen(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "s", embedder=embedder) as mem:
        mem.add(OLD, scope="a", thread="t")
        mem.search("tea", scope="a")  # a cached index that the replace must not serve stale
        mem.replace(NEW, scope="a", thread="t")
        assert not {"o1", "o2", "o3"} & _found(mem, "lapsang souchong")
    with sgmem.Memory(tmp_path / "s", embedder=embedder) as mem:
        assert _texts(mem, scope="a") == [m["content"] for m in NEW]
        assert not {"o1", "o2", "o3"} & _found(mem, "lapsang souchong")


@pytest.mark.parametrize("bad", ["t", 5, ["ok", 3]])
def test_replace_checks_message_ids(memory: sgmem.Memory, bad: object) -> None:
    memory.add(OLD, scope="a", thread="t")
    with pytest.raises(sgmem.InvalidInputError, match="message_ids"):
        memory.replace(NEW, scope="a", thread="t", message_ids=bad)  # type: ignore[arg-type]
    assert _texts(memory, scope="a") == [m["content"] for m in OLD]
