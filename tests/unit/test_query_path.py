"""The bounded query path (issue 14) answers as the full-scope reference computations do.

A search scans the sentence vectors once and computes what only the hits
need (their best sentence, relevance, graph hop) for the hits alone; the
reference here recomputes every channel over the whole scope, straight from
the definitions, and the hits must agree with it. The approximate dense index
(``Config(dense_index="hnsw")``) must find what the exact scan finds on a
modest scope, and share the sentence vectors instead of copying them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sgmem
from sgmem.retrieval.dense import relevance_of_rows, turn_relevance
from sgmem.retrieval.graph import EPSILON, expand, rank_chunks
from sgmem.retrieval.index import idf
from sgmem.retrieval.search import Retriever, _group_max
from sgmem.text.lexical import analyze

from .helpers import HashEmbedder
from .test_scope_index import _adds

QUERIES = ["cat trip to paris", "violin storm river", "chess and coffee number 7", "garden bread", "lake museum"]


def _reference_lexical(idx, terms, nw, reference_turns=0):  # type: ignore[no-untyped-def]
    """The lexical channel from its definition: a mask per term over every turn, divided by the query's IDF
    mass, but never by less than one word held by one turn in ``reference_turns``."""
    n = idx.n_turns
    out, total = np.zeros(n), 0.0
    prev, nxt = np.array(list(idx.prev_row)), np.array(list(idx.next_row))
    for t in dict.fromkeys(terms):
        w = idx.idf(t)
        total += w
        here = np.array([t in idx.terms[r] for r in range(n)])
        near = np.zeros(n, dtype=bool)
        for r in np.flatnonzero(here):
            for x in (prev[r], nxt[r]):
                if x >= 0:
                    near[x] = True
        out += w * np.where(here, 1.0, np.where(near, nw, 0.0))
    mass = max(total, idf(reference_turns, 1)) if reference_turns else total
    return out / mass if mass > 0 else out


@pytest.fixture(scope="module")
def memory():  # type: ignore[no-untyped-def]
    # the reference computes each channel unweighted: the assistant's role weight off (its turns weigh half in
    # every channel by default, HybridConfig.assistant_weight)
    # every default (the graph and pyramid channels are off the default path: turned on here to check them too)
    cfg = sgmem.Config(min_relevance=0.0, hybrid=sgmem.HybridConfig(assistant_weight=1.0, w_graph=0.15, w_pyramid=0.4))
    with sgmem.Memory(embedder=HashEmbedder(), config=cfg) as mem:
        for thread, msgs in _adds(25):
            mem.add(msgs, scope="a", thread=thread)
        yield mem


def test_hybrid_hits_carry_the_channels_the_full_scope_reference_computes(memory) -> None:  # type: ignore[no-untyped-def]
    emb, h, g = memory.embedder, memory.config.hybrid, memory.config.graph
    idx = memory._index(memory._store.require_scope("a"))
    checked = 0
    for query in QUERIES:
        q = emb.embed([query])[0]
        cos = idx.sentence_cosines(q)
        s_sent, best_row = Retriever.per_turn_sentence_scores(idx, cos, h.rest_weight)
        stored_turns = idx.turn_vectors().astype(np.float64)
        s_turn = stored_turns @ q
        s_lex = _reference_lexical(idx, analyze(query), h.neighbour_weight, h.lexical_reference_turns)
        sim = cos.astype(np.float64) + EPSILON
        exp = expand(idx, sim, g, None)
        s_graph = {int(key): score - EPSILON for key, score, _ in rank_chunks(idx, sim, exp, "turn", "mean", 0.0)}
        rel = turn_relevance(idx, q)
        hits = memory.search(query, scope="a", k=8, mode="hybrid")
        assert hits
        for hit in hits:
            r = [i for i in range(idx.n_turns) if idx.ext_ids[i] == hit.message_ids[0]][0]
            ch = hit.why["channels"]
            assert ch["sentence"] == pytest.approx(s_sent[r], abs=1e-4)
            assert ch["turn"] == pytest.approx(s_turn[r], abs=1e-4)
            assert ch["lexical"] == pytest.approx(s_lex[r], abs=1e-4)
            assert ch["graph"] == pytest.approx(s_graph.get(r, 0.0), abs=1e-4)
            assert ch["length_prior"] == pytest.approx(
                h.length_prior * math.log1p(idx.tokens[r]) / math.log1p(64), abs=1e-4
            )
            assert hit.why["sentence"] == idx.sent_text[int(best_row[r])]
            # the hybrid's relevance is its own fused score squashed (one measure orders and cuts)
            assert 0.0 <= rel[r] <= 1.0
            assert hit.relevance == pytest.approx(max(hit.score, 0) / (max(hit.score, 0) + h.relevance_scale))
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("mode", ["vector", "graph", "bm25", "pyramid"])
def test_every_mode_reports_the_relevance_of_a_full_scan(memory, mode: str) -> None:  # type: ignore[no-untyped-def]
    idx = memory._index(memory._store.require_scope("a"))
    for query in QUERIES:
        rel = turn_relevance(idx, memory.embedder.embed([query])[0])
        for hit in memory.search(query, scope="a", k=6, mode=mode):
            rows = [i for i in range(idx.n_turns) if idx.ext_ids[i] in hit.message_ids]
            assert hit.relevance == pytest.approx(max(rel[r] for r in rows), abs=1e-6)


def test_vector_mode_ranks_by_the_best_sentence_of_every_turn(memory) -> None:  # type: ignore[no-untyped-def]
    idx = memory._index(memory._store.require_scope("a"))
    for query in QUERIES:
        q = memory.embedder.embed([query])[0]
        best, best_row = Retriever.per_turn_sentence_scores(idx, idx.sentence_cosines(q), 0.0)
        order = sorted(range(idx.n_turns), key=lambda r: (-best[r], r))[:7]
        hits = memory.search(query, scope="a", k=7, mode="vector")
        assert [h.message_ids[0] for h in hits] == [idx.ext_ids[r] for r in order]
        assert [h.why["sentence"] for h in hits] == [idx.sent_text[int(best_row[r])] for r in order]


def test_relevance_of_rows_equals_the_full_scan_on_any_rows(memory) -> None:  # type: ignore[no-untyped-def]
    idx = memory._index(memory._store.require_scope("a"))
    q = memory.embedder.embed(["river piano"])[0]
    full = turn_relevance(idx, q)
    rows = [0, 3, 3, idx.n_turns - 1, idx.n_turns // 2, 7]
    got = relevance_of_rows(idx, q, rows)
    assert set(got) == set(rows)
    for r in rows:
        assert got[r] == pytest.approx(full[r], abs=1e-6)


def test_session_maximum_equals_a_per_session_loop(memory) -> None:  # type: ignore[no-untyped-def]
    idx = memory._index(memory._store.require_scope("a"))
    rng = np.random.default_rng(3)
    vals = rng.normal(size=idx.n_turns)
    vals[rng.random(idx.n_turns) < 0.2] = -np.inf
    codes = idx.array("session_codes")
    want = np.zeros(idx.n_turns)
    for r in range(idx.n_turns):
        group = vals[codes == codes[r]]
        finite = group[np.isfinite(group)]
        want[r] = finite.max() if finite.size else 0.0
    assert len(set(codes.tolist())) >= 3 and (np.diff(codes) < 0).any()  # sessions interleave in row order
    np.testing.assert_array_equal(_group_max(idx, vals, "session_codes"), want)


def test_the_approximate_index_finds_the_exact_top_10_and_shares_the_vectors() -> None:
    emb = HashEmbedder()
    queries = [
        f"{a} {b} number {n}"
        for a, b, n in zip(
            ["cat", "lake", "violin", "bread", "chess"] * 4,
            ["trip", "museum", "storm", "garden", "coffee"] * 4,
            range(20),
            strict=True,
        )
    ]
    exact: dict[str, list] = {}
    cfgs = {
        "exact": sgmem.Config(min_relevance=0.0),
        "hnsw": sgmem.Config(min_relevance=0.0, dense_index="hnsw", dense_ann_min_sentences=0, dense_ann_candidates=64),
    }
    overlap: dict[str, list[float]] = {"vector": [], "hybrid": []}
    for name, cfg in cfgs.items():
        with sgmem.Memory(embedder=emb, config=cfg) as mem:
            for thread, msgs in _adds(60, seed=5):
                mem.add(msgs, scope="a", thread=thread)
            for mode in overlap:
                for q in queries:
                    hits = mem.search(q, scope="a", k=10, mode=mode)
                    if name == "exact":
                        exact[mode + q] = hits
                        continue
                    want = exact[mode + q]
                    kth = min(h.score for h in want)
                    ids = {h.message_ids for h in want}
                    overlap[mode].append(sum(h.message_ids in ids or h.score >= kth - 1e-6 for h in hits) / len(want))
            if name == "hnsw":
                idx = mem._index(mem._store.require_scope("a"))
                assert idx.ann is not None and idx.ann.ntotal == idx.n_sentences
                assert idx.ann.storage() is idx.sent_index  # one copy of the vectors
    assert np.mean(overlap["vector"]) >= 0.9, overlap
    assert np.mean(overlap["hybrid"]) >= 0.9, overlap
