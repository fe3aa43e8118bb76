"""SGRM's segment graph as mode='sgrm': token-window segments, a seed, a BFS to a depth."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

import sgmem
from sgmem.retrieval.sgrm import segments_of, sgrm_search

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
TOPICS = [
    "My sourdough starter finally bubbled and the bread rose beautifully.",
    "The bakery downtown sells rye loaves with caraway seeds.",
    "Our team shipped the new billing service to production today.",
    "The deployment pipeline failed twice because of flaky tests.",
    "We adopted a grey kitten from the animal shelter.",
    "The kitten sleeps on the radiator and chases string all day.",
]


def _fill(mem: sgmem.Memory) -> None:
    for i, text in enumerate(TOPICS):
        mem.add([{"role": "user", "content": text, "id": f"m{i}"}], scope="s", thread="t", at=T0 + timedelta(hours=i))


def test_segments_are_token_windows_of_whole_turns_with_chronological_links(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as mem:
        _fill(mem)
        idx = mem._index(mem._store.scope_id("s"))
        seg = segments_of(idx, 30, 1)
        tokens = idx.array("tokens")
    assert [r for rows in seg.rows for r in rows] == list(range(6))  # every turn once, in order
    assert all(sum(int(tokens[r]) for r in rows) <= 30 or len(rows) == 1 for rows in seg.rows)
    assert len(seg.rows) >= 3
    assert all(i + 1 in seg.adj[i] for i in range(len(seg.rows) - 1))  # chronological edges


def test_sgrm_seeds_on_the_closest_segment_and_walks_the_graph(embedder: sgmem.Embedder) -> None:
    cfg = sgmem.Config(min_relevance=0.0, sgrm=sgmem.SGRMConfig(segment_tokens=30, knn_k=1, depth=0, top_n=5))
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        _fill(mem)
        seed_only = mem.search("What did the kitten do?", scope="s", k=5, mode="sgrm")
        mem._retriever = type(mem._retriever)(
            cfg.with_(sgrm=sgmem.SGRMConfig(segment_tokens=30, knn_k=1, depth=2, top_n=5))
        )
        walked = mem.search("What did the kitten do?", scope="s", k=5, mode="sgrm")
    assert len(seed_only) == 1 and seed_only[0].kind == "segment" and seed_only[0].why["hop"] == 0
    assert set(seed_only[0].message_ids) & {"m4", "m5"}
    assert len(walked) > 1 and walked[0].message_ids == seed_only[0].message_ids
    assert {h.why["hop"] for h in walked} >= {0, 1}


def test_the_paper_preset_returns_three_chronological_segments(embedder: sgmem.Embedder) -> None:
    assert (sgmem.SGRM_PAPER.segment_tokens, sgmem.SGRM_PAPER.knn_k, sgmem.SGRM_PAPER.top_n) == (512, 3, 3)
    cfg = sgmem.Config(
        min_relevance=0.0, sgrm=sgmem.SGRMConfig(segment_tokens=20, knn_k=3, depth=2, top_n=3, order="chronological")
    )
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        _fill(mem)
        hits = mem.search("billing service deployment", scope="s", k=10, mode="sgrm")
    assert 1 <= len(hits) <= 3
    for h in hits:
        assert list(h.message_ids) == sorted(h.message_ids, key=lambda m: int(m[1:]))


def test_a_segment_hit_lists_its_messages_in_conversation_order_whatever_matched_best(
    embedder: sgmem.Embedder,
) -> None:
    # one segment of six turns where the query matches the later ones best: the old
    # similarity sort returned m5, m4, … instead of the conversation's m0 … m5
    cfg = sgmem.Config(min_relevance=0.0, sgrm=sgmem.SGRMConfig(segment_tokens=500, knn_k=1, depth=0, top_n=1))
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        _fill(mem)
        hits = mem.search("What did the kitten do on the radiator?", scope="s", k=5, mode="sgrm")
    assert len(hits) == 1
    ids = list(hits[0].message_ids)
    assert ids == [f"m{i}" for i in range(6)]
    assert hits[0].text.startswith("user: " + TOPICS[0])
    best = hits[0].why["best_turns"]
    assert sorted(best) == list(range(6)) and ids[best[0]] in {"m4", "m5"}


# ---------------------------------------------------------------- the graph as arrays, exact and approximate edges

THREADS = {
    "bake": ["I fed the sourdough starter twice today.", "The rye loaf came out dense.", "I bought a new banneton."],
    "work": [
        "The billing service went live.",
        "Tests were flaky again.",
        "We rolled back the deploy.",
        "The fix shipped.",
    ],
    "cat": ["We adopted a grey kitten.", "The kitten sleeps on the radiator.", "She chased string all day."],
}


def _reference(idx, window: int, k: int):  # type: ignore[no-untyped-def]
    """The former set-based build (lists of turn rows, a set of neighbours per segment), as the CSR's reference."""
    import numpy as np

    threads, tokens = idx.array("threads"), idx.array("tokens")
    order: dict[str, list[int]] = {}
    for r in range(idx.n_turns):
        order.setdefault(str(threads[r]), []).append(r)
    rows: list[list[int]] = []
    chrono = []
    for turns in order.values():
        cur: list[int] = []
        used, first = 0, len(rows)
        for r in turns:
            if cur and used + int(tokens[r]) > window:
                rows.append(cur)
                cur, used = [], 0
            cur.append(r)
            used += int(tokens[r])
        if cur:
            rows.append(cur)
        chrono += [(i, i + 1) for i in range(first, len(rows) - 1)]
    tv = idx.turn_vectors()
    vecs = np.zeros((len(rows), tv.shape[1]), dtype=np.float32)
    for i, rs in enumerate(rows):
        v = tv[rs].astype(np.float64).sum(axis=0)
        vecs[i] = v / np.linalg.norm(v)
    adj: list[set[int]] = [set() for _ in rows]
    for a, b in chrono:
        adj[a].add(b)
        adj[b].add(a)
    for i in range(1, len(rows)):
        for j in np.argsort(-(vecs[:i] @ vecs[i]))[:k]:
            adj[i].add(int(j))
            adj[int(j)].add(i)
    return rows, vecs, adj


def _fill_threads(mem: sgmem.Memory, rounds: int = 3) -> None:
    n = 0
    for rnd in range(rounds):
        for thread, texts in THREADS.items():
            for text in texts:
                content = f"{text} (week {rnd})"
                mem.add(
                    [{"role": "user", "content": content, "id": f"m{n}"}],
                    scope="s",
                    thread=thread,
                    at=T0 + timedelta(hours=n),
                )
                n += 1


def test_the_array_graph_equals_the_former_set_based_graph(embedder: sgmem.Embedder) -> None:
    import numpy as np

    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as mem:
        _fill_threads(mem)
        idx = mem._index(mem._store.scope_id("s"))
        for window, k in ((12, 1), (25, 3), (60, 2)):
            seg = segments_of(idx, sgmem.SGRMConfig(segment_tokens=window, knn_k=k, knn_index="exact"))
            rows, vecs, adj = _reference(idx, window, k)
            assert seg.rows == rows and not seg.approximate
            assert np.array_equal(seg.vecs, vecs)
            assert seg.adj == adj
            assert sum(len(a) for a in adj) == len(seg.indices)  # no duplicate neighbour in the CSR


def _minilm_vectors(embedder: sgmem.Embedder, n: int):  # type: ignore[no-untyped-def]
    import numpy as np

    subjects = ["the kitten", "my sister", "the bakery", "our team", "the landlord", "a neighbour", "the coach"]
    verbs = ["visited", "painted", "repaired", "photographed", "sold", "cleaned", "booked"]
    things = ["the old bridge", "a red bicycle", "the garden shed", "a concert hall", "the harbour", "a tiny cafe"]
    texts = [f"{s} {v} {t} on day {d}" for d in range(3) for s in subjects for v in verbs for t in things][:n]
    return np.asarray(embedder.embed(texts), dtype=np.float32)


def _tied_recall(vecs: np.ndarray, exact: np.ndarray, approx: np.ndarray) -> float:
    """Share of the exact (i, j) edges matched by ``approx`` edges, tie-aware: an approximate edge counts when its
    cosine reaches the smallest cosine of segment i's exact edges."""
    n = len(vecs)
    cos_e = np.einsum("ij,ij->i", vecs[exact[:, 0]], vecs[exact[:, 1]])
    kth = np.full(n, np.inf, dtype=np.float64)
    np.minimum.at(kth, exact[:, 0], cos_e)
    cos_a = np.einsum("ij,ij->i", vecs[approx[:, 0]], vecs[approx[:, 1]])
    tied = int((cos_a >= kth[approx[:, 0]] - 1e-6).sum())
    return min(tied, len(exact)) / max(len(exact), 1)


def test_approximate_edges_link_only_earlier_segments_and_find_the_exact_ones(embedder: sgmem.Embedder) -> None:
    from sgmem.retrieval.sgrm import approximate_edges, exact_edges

    vecs = _minilm_vectors(embedder, 600)
    exact = exact_edges(vecs, 3)
    approx = approximate_edges(vecs, 3, 16, 40, 48, block=64)  # ten blocks: most neighbours come from the HNSW
    assert (approx[:, 1] < approx[:, 0]).all()  # §3.3: only earlier segments, whatever the index holds
    per = np.bincount(approx[:, 0], minlength=len(vecs))
    assert per[0] == 0 and per[1] == 1 and per[2] == 2 and (per[3:] == 3).all()
    assert len(np.unique(approx[:, 0] * len(vecs) + approx[:, 1])) == len(approx)
    assert _tied_recall(vecs, exact, approx) >= 0.95
    # the edges the block's own segments supply (j in the same block) are exact, so the first block is exact
    first = approx[approx[:, 0] < 64]
    assert sorted(map(tuple, first.tolist())) == sorted(map(tuple, exact[exact[:, 0] < 64].tolist()))


def test_auto_switches_to_the_approximate_edges_at_the_configured_size(
    embedder: sgmem.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgmem.retrieval import sgrm

    calls: list[int] = []
    real = sgrm.approximate_edges

    def counted(vecs, *args, **kw):  # type: ignore[no-untyped-def]
        calls.append(len(vecs))
        return real(vecs, *args, **kw)

    monkeypatch.setattr(sgrm, "approximate_edges", counted)  # the real HNSW build, counted
    cfg = sgmem.Config(min_relevance=0.0, sgrm=sgmem.SGRMConfig(segment_tokens=12, knn_k=2, knn_ann_min_segments=0))
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        _fill_threads(mem)
        idx = mem._index(mem._store.scope_id("s"))
        auto_small = segments_of(idx, cfg.sgrm)
        n = len(auto_small)
        auto_large = segments_of(idx, sgmem.SGRMConfig(segment_tokens=12, knn_k=2, knn_ann_min_segments=n + 1))
        built = list(calls)
        hits = mem.search("What does the kitten do?", scope="s", k=5, mode="sgrm")
        exact_hits = _search_with(
            mem, embedder, cfg.with_(sgrm=sgmem.SGRMConfig(segment_tokens=12, knn_k=2, knn_index="exact"))
        )
    assert auto_small.approximate and not auto_large.approximate
    assert n > 20 and built == [n]  # built once with HNSW (auto at 0 segments), never for the exact graphs
    # a few dozen segments: HNSW finds the same neighbours, so the walk and the hits are the same
    assert auto_small.adj == auto_large.adj
    assert [h.message_ids for h in hits] == [h.message_ids for h in exact_hits]


def _search_with(mem: sgmem.Memory, embedder: sgmem.Embedder, cfg: sgmem.Config) -> list[sgmem.Hit]:
    mem._retriever = type(mem._retriever)(cfg)
    return mem.search("What does the kitten do?", scope="s", k=5, mode="sgrm")


def test_the_segment_graph_follows_new_turns_and_a_reopened_store(embedder: sgmem.Embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = sgmem.Config(min_relevance=0.0, sgrm=sgmem.SGRMConfig(segment_tokens=12, knn_k=2, depth=1))
    path = tmp_path / "store"
    with sgmem.Memory(path, embedder=embedder, config=cfg) as mem:
        _fill_threads(mem, rounds=2)
        before = mem.search("a parrot that sings opera", scope="s", k=5, mode="sgrm")
        idx = mem._index(mem._store.scope_id("s"))
        graph_before = segments_of(idx, cfg.sgrm)
        mem.add(
            [{"role": "user", "content": "Our parrot sings opera every morning.", "id": "p1"}],
            scope="s",
            thread="bird",
            at=T0 + timedelta(days=3),
        )
        after = mem.search("a parrot that sings opera", scope="s", k=5, mode="sgrm")
    with sgmem.Memory(path, embedder=embedder, config=cfg) as mem:
        reopened = mem.search("a parrot that sings opera", scope="s", k=5, mode="sgrm")
        graph_reopened = segments_of(mem._index(mem._store.scope_id("s")), cfg.sgrm)
    assert "p1" not in {m for h in before for m in h.message_ids}
    assert after[0].message_ids == ("p1",) or list(after[0].message_ids) == ["p1"]
    assert [h.message_ids for h in reopened] == [h.message_ids for h in after]
    assert len(graph_reopened) == len(graph_before) + 1


def test_sgrm_edge_settings_are_checked() -> None:
    with pytest.raises(sgmem.SgmemError, match="SGRMConfig.knn_index"):
        sgmem.SGRMConfig(knn_index="ivf")  # type: ignore[arg-type]
    with pytest.raises(sgmem.SgmemError, match="SGRMConfig.knn_hnsw_m"):
        sgmem.SGRMConfig(knn_hnsw_m=1)


def test_the_walk_reaches_exactly_the_segments_within_depth_hops(embedder: sgmem.Embedder) -> None:
    from collections import deque

    import numpy as np

    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as mem:
        _fill_threads(mem)
        idx = mem._index(mem._store.scope_id("s"))
        for depth in (0, 1, 2, 3):
            cfg = sgmem.SGRMConfig(segment_tokens=12, knn_k=1, depth=depth, top_n=100)
            seg = segments_of(idx, cfg)
            adj = seg.adj
            q = np.asarray(embedder.embed(["the kitten on the radiator"])[0], dtype=np.float32)
            hits = sgrm_search(idx, q, 100, None, cfg)
            seed = next(h[3]["segment"] for h in hits if h[3]["seed"])
            hop = {seed: 0}  # the former BFS over Python sets
            todo = deque([seed])
            while todo:
                u = todo.popleft()
                if hop[u] < depth:
                    for v in adj[u]:
                        if v not in hop:
                            hop[v] = hop[u] + 1
                            todo.append(v)
            assert {h[3]["segment"]: h[3]["hop"] for h in hits} == hop
            assert [h[2] for h in hits] == sorted((h[2] for h in hits), reverse=True)
    assert max(hop.values()) == 3  # the graph is deep enough for the deepest walk to matter
