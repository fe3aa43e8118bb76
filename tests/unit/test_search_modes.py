"""Memory.search in every mode: relevance, Hit fields, why, filters, chunk levels."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

import sgmem
from sgmem.text import analyze, split_sentences

from .helpers import BY_ID, CAT_IDS, CAT_THREAD, DAY1, DAY2, RUN_IDS, RUN_THREAD, add_sample

MODES = ["vector", "graph", "bm25", "hybrid"]


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    """Read-only sample store shared by the module."""
    # no relevance cutoff: these tests look at each mode's ranking, k and why, down to the weakest hit
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as m:
        add_sample(m)
        yield m


@pytest.mark.parametrize("mode", MODES)
def test_hit_fields_describe_the_source_message(mem: sgmem.Memory, mode: str) -> None:
    hits = mem.search("grey cat that eats tuna", scope="alice", k=5, mode=mode)
    assert hits
    for h in hits:
        assert h.kind == "turn"
        [mid] = h.message_ids
        src = BY_ID[mid]
        assert h.text == src["content"]
        assert h.speaker == (src.get("name") or src["role"])
        assert h.thread == ("chat-1" if mid in CAT_IDS else "chat-2")
        assert h.at == (DAY1 if mid in CAT_IDS else DAY2)
        assert isinstance(h.score, float)
        assert h.why["mode"] == mode
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({h.message_ids for h in hits}) == len(hits), "a message was returned twice"


@pytest.mark.parametrize("mode", ["vector", "graph", "hybrid"])
def test_paraphrase_finds_the_right_thread(mem: sgmem.Memory, mode: str) -> None:
    assert mem.search("What is the name of my pet?", scope="alice", k=1, mode=mode)[0].message_ids[0] in CAT_IDS
    assert mem.search("long distance running race", scope="alice", k=1, mode=mode)[0].message_ids[0] in RUN_IDS


@pytest.mark.parametrize("mode", MODES)
def test_keyword_query_finds_the_message_that_has_it(mem: sgmem.Memory, mode: str) -> None:
    top = mem.search("Berlin", scope="alice", k=1, mode=mode)[0]
    assert top.message_ids == ("r1",)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_caps_the_number_of_hits(mem: sgmem.Memory, mode: str, k: int) -> None:
    assert len(mem.search("cat keyboard tuna marathon", scope="alice", k=k, mode=mode)) == k


@pytest.mark.parametrize("mode", MODES)
def test_search_is_deterministic(mem: sgmem.Memory, mode: str) -> None:
    a = mem.search("what does Miso like", scope="alice", mode=mode)
    b = mem.search("what does Miso like", scope="alice", mode=mode)
    assert [(h.message_ids, h.score) for h in a] == [(h.message_ids, h.score) for h in b]


def test_default_mode_is_hybrid_and_configurable(mem: sgmem.Memory, embedder: sgmem.Embedder) -> None:
    assert mem.search("cat", scope="alice")[0].why["mode"] == "hybrid"
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(default_mode="bm25", min_relevance=0.0)) as other:
        add_sample(other)
        assert all(h.why["mode"] == "bm25" for h in other.search("cat keyboard", scope="alice"))


def test_bm25_without_any_known_word_finds_nothing(mem: sgmem.Memory) -> None:
    assert mem.search("xylophone quasar", scope="alice", mode="bm25") == []


# ------------------------------------------------------------------ why
def test_vector_why_names_the_best_sentence(mem: sgmem.Memory) -> None:
    for h in mem.search("Miso eats tuna", scope="alice", k=4, mode="vector"):
        assert h.why["sentence"] in split_sentences(h.text)
        assert h.why["cosine"] == pytest.approx(h.score)


def test_bm25_and_hybrid_why_list_the_matched_words(mem: sgmem.Memory) -> None:
    query = "keyboard tuna"
    q_terms = set(analyze(query))
    for mode in ("bm25", "hybrid"):
        top = mem.search(query, scope="alice", k=1, mode=mode)[0]
        assert top.message_ids == ("c3",)
        assert set(top.why["matched"]) == q_terms


def test_hybrid_why_reports_each_channel(mem: sgmem.Memory) -> None:
    hits = mem.search("Berlin marathon", scope="alice", k=8, mode="hybrid")
    for h in hits:
        ch = h.why["channels"]
        assert {"sentence", "turn", "lexical", "graph"} <= set(ch)
        assert h.why["sentence"] in split_sentences(h.text)
    by_id = {h.message_ids[0]: h for h in hits}
    # r1 has both words; c1 has neither word and no neighbour with them
    assert by_id["r1"].why["channels"]["lexical"] > 0
    assert by_id["c1"].why["channels"]["lexical"] == 0
    assert by_id["r1"].why["matched"] and not by_id["c1"].why["matched"]


def test_graph_why_shows_seed_sentences(mem: sgmem.Memory) -> None:
    for h in mem.search("grey cat", scope="alice", k=3, mode="graph"):
        assert h.why["chunk_level"] == "turn"
        sents = h.why["sentences"]
        assert sents
        for s in sents:
            assert s["sentence"] in split_sentences(h.text)
            assert s["hop"] in (0, 1)
            assert (s["hop"] == 0) == ("via_seed" not in s)


def _expanding_memory(embedder: sgmem.Embedder, **graph: object) -> sgmem.Memory:
    mem = sgmem.Memory(embedder=embedder, config=sgmem.Config(graph=sgmem.GraphConfig(**graph), min_relevance=0.0))  # type: ignore[arg-type]
    mem.add(
        [
            {"role": "user", "content": c}
            for c in [
                "I adopted a grey cat named Miso.",
                "Miso loves tuna fish.",
                "I run marathons every weekend.",
                "My sister lives in Berlin.",
            ]
        ],
        scope="s",
        thread="t",
    )
    return mem


def test_graph_expansion_explains_the_hop_and_the_seed(embedder: sgmem.Embedder) -> None:
    with _expanding_memory(embedder, seeds=1, hops=1) as mem:
        hits = mem.search("what does the cat eat", scope="s", k=10, mode="graph")
        assert len(hits) > 1, "one seed with one hop must reach its neighbours"
        seeds = [s for h in hits for s in h.why["sentences"] if s["hop"] == 0]
        assert len(seeds) == 1
        expanded = [s for h in hits for s in h.why["sentences"] if s["hop"] > 0]
        assert expanded
        assert all(s["hop"] == 1 and s["via_seed"] == seeds[0]["sentence"] for s in expanded)
        assert hits[0].why["seed_count"] == 1


def test_graph_without_hops_returns_only_seed_chunks(embedder: sgmem.Embedder) -> None:
    with _expanding_memory(embedder, seeds=1, hops=0) as mem:
        hits = mem.search("what does the cat eat", scope="s", k=10, mode="graph")
        assert len(hits) == 1
        assert hits[0].why["expanded_count"] == 0


def test_graph_gamma_drops_weak_seeds(embedder: sgmem.Embedder) -> None:
    with _expanding_memory(embedder, gamma=1.9) as mem:
        assert mem.search("quantum chromodynamics on a lattice", scope="s", mode="graph") == []


# --------------------------------------------------------------- filters
@pytest.mark.parametrize("mode", MODES)
def test_thread_filter(mem: sgmem.Memory, mode: str) -> None:
    hits = mem.search("cat tuna keyboard marathon Berlin", scope="alice", k=10, mode=mode, threads=["chat-2"])
    assert hits and all(h.thread == "chat-2" for h in hits)
    assert mem.search("cat", scope="alice", mode=mode, threads=[]) == []
    assert mem.search("cat", scope="alice", mode=mode, threads=["no-such-thread"]) == []


@pytest.mark.parametrize("mode", MODES)
def test_time_filters_are_inclusive(mem: sgmem.Memory, mode: str) -> None:
    query = "cat tuna keyboard marathon Berlin"
    late = mem.search(query, scope="alice", k=10, mode=mode, since=DAY2)
    assert late and {h.message_ids[0] for h in late} <= RUN_IDS
    early = mem.search(query, scope="alice", k=10, mode=mode, until=DAY1)
    assert early and {h.message_ids[0] for h in early} <= CAT_IDS
    between = mem.search(
        query, scope="alice", k=10, mode=mode, since=DAY1 + timedelta(seconds=1), until=DAY2 - timedelta(seconds=1)
    )
    assert between == []
    iso = mem.search(query, scope="alice", k=10, mode=mode, since=DAY2.isoformat())
    assert [h.message_ids for h in iso] == [h.message_ids for h in late]


# ----------------------------------------------------------- chunk levels
def _chunked(embedder: sgmem.Embedder, level: str) -> sgmem.Memory:
    mem = sgmem.Memory(
        embedder=embedder, config=sgmem.Config(graph=sgmem.GraphConfig(chunk_level=level), min_relevance=0.0)
    )  # type: ignore[arg-type]
    mem.add([dict(m) for m in CAT_THREAD], scope="s", thread="t", at=DAY1)
    mem.add([dict(m) for m in RUN_THREAD], scope="s", thread="t", at=DAY2)
    return mem


def _chunk_text(ids: tuple[str, ...]) -> str:
    if len(ids) == 1:
        return str(BY_ID[ids[0]]["content"])
    return "\n".join(f"{BY_ID[i].get('name') or BY_ID[i]['role']}: {BY_ID[i]['content']}" for i in ids)


def test_round_chunks_are_user_turn_plus_replies(embedder: sgmem.Embedder) -> None:
    order = [m["id"] for m in CAT_THREAD + RUN_THREAD]
    with _chunked(embedder, "round") as mem:
        hits = mem.search("what does the cat eat", scope="s", k=10, mode="graph")
        assert hits and all(h.kind == "round" for h in hits)
        for h in hits:
            ids = h.message_ids
            assert BY_ID[ids[0]]["role"] == "user"
            assert all(BY_ID[i]["role"] != "user" for i in ids[1:])
            start = order.index(ids[0])
            assert list(ids) == order[start : start + len(ids)], "a round is consecutive, in order"
            assert h.text == _chunk_text(ids)
        assert any(len(h.message_ids) == 2 for h in hits)
        seen = [i for h in hits for i in h.message_ids]
        assert len(seen) == len(set(seen)), "rounds overlap"


def test_round_continues_across_adds(embedder: sgmem.Embedder) -> None:
    cfg = sgmem.Config(graph=sgmem.GraphConfig(chunk_level="round"), min_relevance=0.0)
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        mem.add(dict(CAT_THREAD[0]), scope="s", thread="t", at=DAY1)
        mem.add(dict(CAT_THREAD[1]), scope="s", thread="t", at=DAY1)
        hits = mem.search("grey cat named Miso", scope="s", k=1, mode="graph")
        assert hits[0].message_ids == ("c1", "c2")


def test_session_chunks_hold_a_whole_day_of_the_thread(embedder: sgmem.Embedder) -> None:
    with _chunked(embedder, "session") as mem:
        hits = mem.search("what does the cat eat", scope="s", k=10, mode="graph")
        assert hits and all(h.kind == "session" for h in hits)
        days = {tuple(m["id"] for m in CAT_THREAD), tuple(m["id"] for m in RUN_THREAD)}
        assert {h.message_ids for h in hits} <= days
        assert hits[0].message_ids == tuple(m["id"] for m in CAT_THREAD)
        for h in hits:
            assert h.text == _chunk_text(h.message_ids)
            assert h.at == (DAY1 if h.message_ids[0] in CAT_IDS else DAY2)


def test_chunk_level_only_changes_graph_mode(embedder: sgmem.Embedder) -> None:
    with _chunked(embedder, "session") as mem:
        for mode in ("vector", "bm25", "hybrid"):
            assert all(h.kind == "turn" for h in mem.search("cat tuna", scope="s", mode=mode))


def test_max_plus_rest_ranks_a_chunk_by_its_best_sentence(embedder: sgmem.Embedder) -> None:
    cfg = sgmem.Config(
        graph=replace(sgmem.GraphConfig(), chunk_score="max_plus_rest", rest_weight=0.0), min_relevance=0.0
    )
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        add_sample(mem)
        for h in mem.search("grey cat", scope="alice", k=4, mode="graph"):
            assert h.score == pytest.approx(max(s["sim"] for s in h.why["sentences"]), abs=1e-3)


def test_turn_cosines_from_sentence_cosines_equal_a_scan_of_the_turn_vectors(
    embedder: sgmem.Embedder, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from sgmem.retrieval.search import Retriever

    q = embedder.embed(["grey cat that eats tuna"])[0]

    def check(m: sgmem.Memory) -> None:
        idx = m._index(m._store.scope_id("alice"))
        cos = Retriever.sentence_cosines(idx, q)
        derived = Retriever.turn_cosines_from_sentences(idx, cos)
        assert derived.shape == (idx.n_turns,)
        # the turn vectors the write path stored (the index holds none: it derives them)
        with m._store.read() as conn:
            blobs = conn.execute("SELECT vec FROM messages WHERE scope_id = ? ORDER BY id", (idx.scope_id,)).fetchall()
        stored = np.stack([np.frombuffer(b[0], dtype=np.float32) for b in blobs])
        np.testing.assert_array_equal(idx.turn_vectors(), stored)
        assert abs(derived - stored.astype(np.float64) @ q).max() < 1e-5
        assert abs(Retriever.turn_cosines(idx, q) - stored.astype(np.float64) @ q).max() < 1e-5

    with sgmem.Memory(tmp_path, embedder=embedder) as m:
        add_sample(m)
        check(m)  # computed in one go
        m.add([{"role": "user", "content": "My cat also likes salmon. And naps."}], scope="alice", thread="t9")
        check(m)  # extended by the new turn
        m.delete(scope="alice", message_ids=[sorted(CAT_IDS)[0]])
        check(m)  # recomputed after the reload a delete causes
    with sgmem.Memory(tmp_path, embedder=embedder) as m:
        check(m)  # from the saved caches


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
