"""Per-scope caches are bounded by ``Config.cache_bytes`` (least recently used first), never stale,
and a small scope costs little on disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

import sgmem
from sgmem.cache import ByteLRU
from sgmem.gate.density import Density

from .helpers import FastEmbedder

EMB = FastEmbedder(dim=64)


class Blob:
    def __init__(self, size: int) -> None:
        self.size = size

    def nbytes(self) -> int:
        return self.size


def test_lru_evicts_least_recently_used_past_the_budget() -> None:
    lru = ByteLRU(100)
    for k in "abc":
        lru.put(k, Blob(30))
    assert lru.nbytes == 90 and len(lru) == 3
    lru.get("a")  # a is now the most recent: b goes first
    lru.put("d", Blob(30))
    assert lru.get("b") is None and all(lru.get(k) is not None for k in "acd")
    assert lru.nbytes == 90 and lru.evictions == 1
    lru.put("huge", Blob(500))  # alone past the budget: kept (it is in use), everything older goes
    assert len(lru) == 1 and lru.get("huge") is not None
    assert lru.pop("huge").size == 500 and lru.nbytes == 0


def _msgs(s: int, extra: str = "") -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"I am user{s} and my hobby is topic{s} with friends{extra}."},
        {"role": "assistant", "content": f"Nice, user{s}. Tell me about topic{s}."},
        {"role": "user", "content": f"Every weekend I practise topic{s} in town{s}."},
    ]


def _found(mem: sgmem.Memory, s: int, word: str) -> set[str]:
    return {h.text for h in mem.search(f"{word} topic{s}", scope=f"u{s}", k=10, mode="bm25")}


@pytest.mark.parametrize("budget", [150_000, 1])
def test_touching_many_scopes_keeps_the_cache_bounded_and_results_fresh(tmp_path: Path, budget: int) -> None:
    path = tmp_path / "store"
    n = 40
    with sgmem.Memory(path, embedder=EMB, config=sgmem.Config(cache_bytes=budget)) as mem:
        biggest = 0
        for s in range(n):
            mem.add(_msgs(s), scope=f"u{s}", thread="t")
            assert mem.search(f"hobby topic{s}", scope=f"u{s}", k=3)[0].message_ids
            mem.search(f"topic{s}", scope=f"u{s}", kinds=["fact"])
            entries = mem._caches.values()
            biggest = max([biggest] + [e.nbytes() for e in entries])
            # within the budget, or only what is in use right now (one scope's index and state)
            assert mem._caches.nbytes <= max(budget, 2 * biggest)
        assert len(mem._caches) < 2 * n and mem._caches.evictions > 0
        # every scope answers from its own data, evicted or not
        for s in range(n):
            texts = _found(mem, s, "hobby")
            assert texts and texts <= {m["content"] for m in _msgs(s)}
        # another connection (as another process would) writes to an evicted and a cached scope
        with sgmem.Memory(path, embedder=EMB) as other:
            for s in (0, n - 1):
                other.add(
                    [{"role": "user", "content": f"Breaking: user{s} now loves kitesurfing{s}."}],
                    scope=f"u{s}",
                    thread="t",
                )
            other.delete(scope="u5", thread="t")
        for s in (0, n - 1):
            assert any(f"kitesurfing{s}" in t for t in _found(mem, s, f"kitesurfing{s}"))
        assert mem.search("hobby topic5", scope="u5") == []
        # and its own writes after an eviction are seen too
        mem.add([{"role": "user", "content": "user3 also plays the banjo3 loudly."}], scope="u3", thread="t")
        assert any("banjo3" in t for t in _found(mem, 3, "banjo3"))


def test_an_unbounded_cache_keeps_every_scope(tmp_path: Path) -> None:
    """The bound is what keeps memory flat: without it every touched scope stays."""
    with sgmem.Memory(tmp_path / "s", embedder=EMB, config=sgmem.Config(cache_bytes=2**62)) as mem:
        for s in range(15):
            mem.add(_msgs(s), scope=f"u{s}", thread="t")
        assert len(mem._caches.values("index")) == 15 and mem._caches.evictions == 0


def test_cache_bytes_is_checked() -> None:
    with pytest.raises(sgmem.ConfigError, match="cache_bytes"):
        sgmem.Config(cache_bytes=-1)


def test_a_small_scope_costs_little_on_disk(tmp_path: Path) -> None:
    """The gate's state of a 5-fact scope is a few KB (it was ~55 KB: a float64 16×d basis however small)."""
    dim = 384
    with sgmem.Memory(tmp_path / "s", embedder=FastEmbedder(dim=dim, name="hash-384")) as mem:
        for i in range(3):
            mem.add(_msgs(i, extra=f" number {i}"), scope="small", thread="t")
        facts = mem.stats("small").scopes[0].facts
    assert facts >= 3
    conn = sqlite3.connect(tmp_path / "s" / "sgmem.db")
    blobs = conn.execute(
        "SELECT COALESCE(LENGTH(sum_vec),0) + COALESCE(LENGTH(pca_mean),0) + COALESCE(LENGTH(pca_basis),0) "
        "+ COALESCE(LENGTH(pca_lo),0) + COALESCE(LENGTH(pca_hi),0) FROM gate_state"
    ).fetchone()[0]
    conn.close()
    # the running sum (float64) + at most a float32 mean and one float32 row per fact fitted
    assert blobs <= 8 * dim + 4 * dim * (facts + 1) + 16 * 16


def test_density_reads_the_earlier_float64_format() -> None:
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(6, 8)).astype(np.float32)
    d = Density(dim=8, k=4)
    d.fit(vecs, 100)
    old = (  # what earlier versions wrote: float64 mean and a k-row float64 basis (zero rows padded)
        d.mean.astype(np.float64).tobytes(),
        np.vstack([d.basis, np.zeros((4 - len(d.basis), 8))]).astype(np.float64).tobytes(),
        np.r_[d.lo, np.zeros(4 - len(d.lo))].tobytes(),
        np.r_[d.hi, np.zeros(4 - len(d.hi))].tobytes(),
    )
    back = Density.from_blobs(8, 4, *old, n_fit=d.n_fit, stale=d.stale)
    assert back.volume(6, 1e-3) == pytest.approx(d.volume(6, 1e-3))
    assert Density.from_blobs(8, 4, None, None, None, None, n_fit=1, stale=False).n_fit == 1


def test_a_scope_past_the_budget_keeps_its_index_and_derived_state_while_in_use() -> None:
    """Storing one kind of a scope's state never evicts its other kind (issue 14: a scope larger than
    Config.cache_bytes reloaded its index and its derived state from SQLite at every add)."""
    lru = ByteLRU(100)
    lru.put(("index", 2), Blob(30))
    lru.put(("index", 1), Blob(80))
    lru.put(("derived", 1), Blob(80))  # scope 1 alone is past the budget: scope 2 goes, scope 1 stays whole
    assert lru.get(("index", 2)) is None
    assert lru.get(("index", 1)) is not None and lru.get(("derived", 1)) is not None
    lru.put(("index", 1), Blob(90))  # grown by an add, stored again
    assert lru.get(("derived", 1)) is not None and lru.evictions == 1
    lru.put(("index", 3), Blob(10))  # another scope in use now: scope 1's least recently used entry goes
    assert lru.get(("index", 3)) is not None and lru.get(("index", 1)) is None and lru.get(("derived", 1)) is not None
    assert lru.nbytes == 90 and lru.evictions == 2


def test_adds_to_a_scope_larger_than_the_cache_budget_never_reload_it(tmp_path: Path) -> None:
    from sgmem.retrieval import index as index_mod

    loads = []
    real = index_mod.load_scope_index

    def counting(*args: object, **kwargs: object) -> object:
        loads.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    with sgmem.Memory(tmp_path / "s", embedder=EMB, config=sgmem.Config(cache_bytes=1)) as mem:
        import sgmem.write as write_mod

        old_w, old_m = write_mod.load_scope_index, sgmem.memory.load_scope_index  # type: ignore[attr-defined]
        write_mod.load_scope_index = counting  # type: ignore[assignment]
        sgmem.memory.load_scope_index = counting  # type: ignore[attr-defined]
        try:
            for s in range(12):
                mem.add(_msgs(s), scope="big", thread=f"t{s}")
            assert len(loads) <= 1  # the first add of the scope builds it; the others extend it in place
            assert mem.search("topic3 weekend", scope="big", k=3, mode="hybrid")
            assert len(loads) <= 1
        finally:
            write_mod.load_scope_index, sgmem.memory.load_scope_index = old_w, old_m  # type: ignore[attr-defined]


_ENTITIES = sgmem.Config(entities=sgmem.EntityConfig(enabled=True))


def _entity_msgs(s: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"Yesterday I met Marta{s} Oliveira in Lisbon with Jonas{s} Berg."},
        {"role": "assistant", "content": f"How is Marta{s} doing?"},
    ]


def test_the_entity_layer_is_held_under_the_same_byte_budget(tmp_path: Path) -> None:
    """Issue 29 item 7: each scope's entity index was a plain dict entry outside ``Config.cache_bytes``
    (2,000 scopes grew the process while the LRU stayed at its budget)."""
    n, budget = 30, 60_000
    with sgmem.Memory(tmp_path / "s", embedder=EMB, config=_ENTITIES.with_(cache_bytes=budget)) as mem:
        biggest = 0
        for s in range(n):
            mem.add(_entity_msgs(s), scope=f"u{s}", thread="t")
            assert mem.search(f"Marta{s}", scope=f"u{s}", k=3, mode="entity")
            ents = mem._caches.values("entities")
            assert ents, "the scope's entity index is cached in the LRU"
            biggest = max([biggest] + [e.nbytes() for e in mem._caches.values()])
            assert mem._caches.nbytes <= max(budget, 3 * biggest)
        assert len(mem._caches.values("entities")) < n and mem._caches.evictions > 0
        for s in (0, n // 2):  # an evicted scope's entity index is rebuilt from the store
            hits = mem.search(f"Jonas{s} Berg", scope=f"u{s}", k=3, mode="entity")
            assert hits and all(f"{s} " in h.text or h.text.endswith(f"{s}?") for h in hits)


def _counted(mem: sgmem.Memory, kind: str) -> dict[int, int]:
    """The bytes the LRU counts for each cached entry of ``kind``, by scope id."""
    return {k[1]: size for k, (_, size) in mem._caches._items.items() if k[0] == kind}


def test_entity_indexes_count_their_bytes_in_the_cache(tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "s", embedder=EMB, config=_ENTITIES.with_(cache_bytes=2**62)) as mem:
        for s in range(5):
            mem.add(_entity_msgs(s), scope=f"u{s}", thread="t")
            mem.search(f"Marta{s}", scope=f"u{s}", k=3, mode="entity")
        counted = _counted(mem, "entities")
        assert len(counted) == 5 and all(size > 0 for size in counted.values())
        assert mem._caches.nbytes == sum(size for k, (_, size) in mem._caches._items.items())
        sid = mem._store.scope_id("u0")
        mem.add(
            [{"role": "user", "content": "Marta0 and Pedro0 Alves flew to Porto together."}], scope="u0", thread="t"
        )
        assert _counted(mem, "entities")[sid] > counted[sid]  # extended in place after the add, and re-counted
