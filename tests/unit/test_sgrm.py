"""SGRM's segment graph as mode='sgrm': token-window segments, a seed, a BFS to a depth."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import sgmem
from sgmem.retrieval.sgrm import segments_of

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
    cfg = sgmem.Config(min_relevance=0.0, sgrm=sgmem.SGRMConfig(segment_tokens=20, knn_k=3, depth=2, top_n=3, order="chronological"))
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
