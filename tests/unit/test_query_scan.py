"""The query path's shortcuts (issue 14) answer exactly as the plain computations do.

- the dense scan in parts on a thread pool (``Config.dense_scan_threads``)
  gives the cosines and per-turn reductions of one whole-array scan, and
  every mode the same hits, scores and ``why``;
- the graph seeds selected over the float32 cosines are the rows and order
  of the selection over ``sim``;
- the neighbour maxima by cached gathers equal the masked computation;
- the pyramid ranks its unread memories and its vector fallback as the full
  sorts did.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import time

import numpy as np
import pytest

import sgmem
import sgmem.retrieval.dense as dense
import sgmem.retrieval.search as search_mod
from sgmem.errors import ConfigError
from sgmem.pyramid import retrieve as pyramid
from sgmem.pyramid.retrieve import PyramidTools, _best_first
from sgmem.retrieval.graph import EPSILON, expand, seed_partition
from sgmem.retrieval.search import _neighbour_max

from .helpers import HashEmbedder
from .test_scope_index import _adds

QUERIES = ["cat trip to paris", "violin storm river", "chess and coffee number 7", "garden bread", "lake museum"]
MODES = ["hybrid", "vector", "graph", "bm25", "pyramid", "sgrm"]


def _memory(**kw):  # type: ignore[no-untyped-def]
    mem = sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(min_relevance=0.0, **kw))
    for thread, msgs in _adds(25):
        mem.add(msgs, scope="a", thread=thread)
    return mem


@pytest.fixture(scope="module")
def memory():  # type: ignore[no-untyped-def]
    mem = _memory(dense_scan_threads=1)
    yield mem
    mem.close()


def _answers(mem, mode: str, **kw):  # type: ignore[no-untyped-def]
    return [
        [(h.message_ids, h.score, h.relevance, h.why, h.text) for h in mem.search(q, scope="a", k=12, mode=mode, **kw)]
        for q in QUERIES
    ]


def test_the_scan_in_parts_gives_the_whole_scan_and_its_reductions(memory) -> None:  # type: ignore[no-untyped-def]
    mem = memory
    idx = mem._index(mem._store.require_scope("a"))
    starts = idx.array("sent_starts")
    for query in QUERIES:
        q = mem.embedder.embed([query])[0]
        want = idx.sentence_cosines(q)
        for threads in (1, 2, 3, 7):
            # the plain scan, and the hybrid's job (more parts; the caller joins after other work)
            for cos, (seg_max, seg_sum) in (dense.scan(idx, q, threads), _late_join(idx, q, threads)):
                np.testing.assert_array_equal(cos, want)
                np.testing.assert_array_equal(seg_max, np.maximum.reduceat(want, starts))
                np.testing.assert_array_equal(seg_sum, np.add.reduceat(want.astype(np.float64), starts))


def _late_join(idx, q, threads):  # type: ignore[no-untyped-def]
    job = dense.ScanJob(idx, q, threads, parts_per_thread=4)
    assert len(job.bounds) - 1 == (min(4 * threads, idx.n_sentences // dense.SCAN_ALIGN + 1) if threads > 1 else 1)
    time.sleep(0.002)  # the pool's threads take parts meanwhile
    return job.result()


def test_every_mode_answers_the_same_with_the_threaded_scan(memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    one = {mode: _answers(memory, mode) for mode in MODES}
    one["filtered"] = _answers(memory, "hybrid", threads=["thread-0", "thread-2"])
    three = dataclasses.replace(memory.config, dense_scan_threads=3, dense_scan_min_sentences=0)
    monkeypatch.setattr(memory._retriever, "config", three)
    submitted = []
    pool = dense.scan_pool

    class Counting:
        def __init__(self, real: concurrent.futures.ThreadPoolExecutor) -> None:
            self.real = real

        def submit(self, fn, *args):  # type: ignore[no-untyped-def]
            submitted.append(fn)
            return self.real.submit(fn, *args)

    monkeypatch.setattr(dense, "scan_pool", lambda n: Counting(pool(n)))
    monkeypatch.setattr(search_mod, "scan_pool", lambda n: Counting(pool(n)))
    for mode in MODES:
        assert _answers(memory, mode) == one[mode], mode
    assert _answers(memory, "hybrid", threads=["thread-0", "thread-2"]) == one["filtered"]
    # the parts did run on the pool (two of three per scan), and the hybrid's seeds beside the other channels
    assert len(submitted) >= 2 * len(QUERIES) * 4
    assert seed_partition in submitted or memory.config.hybrid.w_graph == 0  # (the graph channel is off by default)


def test_scan_threads_follow_the_config() -> None:
    cfg = sgmem.Config(dense_scan_threads=4, dense_scan_min_sentences=1000)
    assert dense.scan_threads(cfg, 999) == 1
    assert dense.scan_threads(cfg, 1000) == 4
    auto = sgmem.Config(dense_scan_min_sentences=0)
    assert dense.scan_threads(auto, 10) == min(8, os.cpu_count() or 1)  # the cores, at most 8
    for bad in (0, -2, 2.5, "4"):
        with pytest.raises(ConfigError, match="dense_scan_threads"):
            sgmem.Config(dense_scan_threads=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="dense_scan_min_sentences"):
        sgmem.Config(dense_scan_min_sentences=-1)


def _best_rows(values: np.ndarray, n: int) -> np.ndarray:
    """The reference selection: sort every row, best first, ties by row."""
    return np.lexsort((np.arange(values.size), -values))[:n]


def test_seeds_over_float32_cosines_are_the_rows_and_order_over_sim(memory) -> None:  # type: ignore[no-untyped-def]
    mem = memory
    idx = mem._index(mem._store.require_scope("a"))
    g = mem.config.graph
    for query in QUERIES:
        cos = idx.sentence_cosines(mem.embedder.embed([query])[0])
        sim = cos.astype(np.float64) + EPSILON
        np.testing.assert_array_equal(seed_partition(cos, g.seeds), _best_rows(sim, g.seeds))
        plain, fast = expand(idx, sim, g, None), expand(idx, sim, g, None, cos)
        assert (fast.seeds, fast.rows, fast.hop, fast.origin) == (plain.seeds, plain.rows, plain.hop, plain.origin)
    # cosines within 2e-9 of 0 may tie once + 1 in float64: when the n-th best is one of them,
    # the selection runs over sim
    tiny = np.array([0.5, 1e-12, 2e-12, 0.25, -1e-12, 0.75], dtype=np.float32)
    np.testing.assert_array_equal(seed_partition(tiny, 3), [5, 0, 3])  # the tiny ones lie below the cut
    assert seed_partition(tiny, 4) is None
    assert seed_partition(tiny, 6) is None  # every row wanted: nothing to select
    # heavy ties at the cut: the very rows and order the selection over sim gives
    rng = np.random.default_rng(7)
    fast_path = 0
    for trial in range(200):
        vals = rng.choice(np.array([0.0, -0.0, 0.25, 0.5, -0.125, 0.75, 3e-9, -3e-9], dtype=np.float32), 400)
        n = int(rng.integers(1, 60))
        got = seed_partition(vals, n)
        want = _best_rows(vals.astype(np.float64) + EPSILON, n)
        if got is None:
            assert vals[want[-1]] < 2e-9, trial
            continue
        fast_path += 1
        np.testing.assert_array_equal(got, want)
    assert fast_path > 100


def test_neighbour_maximum_by_gathers_equals_the_masked_one(memory) -> None:  # type: ignore[no-untyped-def]
    mem = memory
    idx = mem._index(mem._store.require_scope("a"))
    prev, nxt = idx.array("prev_row"), idx.array("next_row")
    assert (prev < 0).any() and (nxt < 0).any() and (prev >= 0).any()
    rng = np.random.default_rng(1)
    for missing in (0.0, -1.0):
        vals = rng.normal(size=idx.n_turns)
        vals[rng.random(idx.n_turns) < 0.2] = -np.inf
        safe = np.where(np.isfinite(vals), vals, missing)
        want = np.maximum(
            np.where(prev >= 0, safe[np.maximum(prev, 0)], missing),
            np.where(nxt >= 0, safe[np.maximum(nxt, 0)], missing),
        )
        np.testing.assert_array_equal(_neighbour_max(vals, prev, nxt, missing, idx), want)


def test_pyramid_ranks_unread_memories_and_its_fallback_as_the_full_sorts(memory) -> None:  # type: ignore[no-untyped-def]
    mem = memory
    idx = mem._index(mem._store.require_scope("a"))
    pyramid.ensure_keywords(mem._store, idx)
    checked = 0
    for query in [*QUERIES, "cat", "storm"]:
        q = mem.embedder.embed([query])[0]
        rel = idx.turn_cosines(q)
        out = pyramid.run(idx, mem.config.pyramid, query, q, rel, None, PyramidTools(mem._words, None), None, False)
        for scores in (rel, np.zeros_like(rel)):  # (all tied: by level, then in traversal order)
            want = sorted(out.later, key=lambda r: (-out.later[r].level, -scores[r]))
            got = list(out.later_ranked(scores))
            assert [f.row for f in got] == want
            assert got == [out.later[r] for r in want]
            checked += len(want)
    assert checked >= 20
    rng = np.random.default_rng(2)
    vals = np.round(rng.normal(size=300), 1)  # many ties
    vals[rng.random(300) < 0.1] = -np.inf
    for m in (1, 5, 40, 299, 300, 400):
        np.testing.assert_array_equal(_best_first(vals, m), np.argsort(-vals, kind="stable")[:m])


def test_hybrid_hits_take_their_relevance_from_the_scan(memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    mem = memory
    idx = mem._index(mem._store.require_scope("a"))
    ext = idx.array("ext_ids")

    def no_recompute(*a):  # type: ignore[no-untyped-def]
        raise AssertionError("the hybrid's exact scan already gave the hits' relevance")

    monkeypatch.setattr(mem, "_relevance", no_recompute)
    for runs_are_turns in (True, False):  # False: the run of each hit's turn is looked up
        monkeypatch.setattr(dense.TurnDense, "_all_turns", lambda self, v=runs_are_turns: v)
        for query in QUERIES:
            want = dense.turn_relevance(idx, mem.embedder.embed([query])[0])
            hits = mem.search(query, scope="a", k=12, mode="hybrid")
            assert hits
            scale = mem.config.hybrid.relevance_scale
            for h in hits:  # the hybrid's own measure (its fused score squashed), no sentence scored again
                (row,) = np.flatnonzero(ext == h.message_ids[0])
                assert 0.0 <= want[row] <= 1.0
                assert h.relevance == pytest.approx(max(h.score, 0.0) / (max(h.score, 0.0) + scale))
    # a mode without the scan's reductions still computes them for its hits
    monkeypatch.undo()
    assert mem.search(QUERIES[0], scope="a", k=5, mode="bm25")


def test_a_failed_hybrid_query_leaves_no_part_of_its_scan_running(memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the parts read the vector storage in place: one still running after the query failed (and released the
    # Memory's lock) could read storage that the next add reallocates
    three = dataclasses.replace(memory.config, dense_scan_threads=3, dense_scan_min_sentences=0)
    monkeypatch.setattr(memory._retriever, "config", three)
    jobs = []
    init, part = dense.ScanJob.__init__, dense.ScanJob._part

    def recording(self, *a, **kw):  # type: ignore[no-untyped-def]
        init(self, *a, **kw)
        jobs.append(self)

    def slow(self, i):  # type: ignore[no-untyped-def]
        time.sleep(0.05)
        part(self, i)

    def down(*a, **kw):  # type: ignore[no-untyped-def]
        raise RuntimeError("the LLM is down")

    monkeypatch.setattr(dense.ScanJob, "__init__", recording)
    monkeypatch.setattr(dense.ScanJob, "_part", slow)
    # the lexical channel fails while the scan runs (as the pyramid's keyword selection can, when it is on)
    monkeypatch.setattr(memory._retriever, "lexical_scores", down)
    with pytest.raises(RuntimeError, match="LLM is down"):
        memory.search(QUERIES[0], scope="a", k=5, mode="hybrid")
    assert len(jobs) == 1 and jobs[0]._futures
    assert all(f.done() for f in jobs[0]._futures)
    monkeypatch.undo()
    assert memory.search(QUERIES[0], scope="a", k=5, mode="hybrid")  # the pool serves the next query


def test_turn_means_are_the_turn_level_chunk_scores(memory) -> None:  # type: ignore[no-untyped-def]
    from sgmem.retrieval.graph import rank_chunks, turn_means

    mem = memory
    idx = mem._index(mem._store.require_scope("a"))
    g = dataclasses.replace(mem.config.graph, hops=2)
    for query in QUERIES:
        cos = idx.sentence_cosines(mem.embedder.embed([query])[0])
        sim = cos.astype(np.float64) + EPSILON
        exp = expand(idx, sim, g, None, cos)
        turns, means = turn_means(idx, sim, exp)
        want = {int(key): score for key, score, _ in rank_chunks(idx, sim, exp, "turn", "mean", 0.0)}
        assert len(want) > 5 and dict(zip(turns.tolist(), means.tolist(), strict=True)) == want


def _chat_with_acts() -> sgmem.Memory:
    """A chat of questions, answers, non-answers and filler by a user and an assistant (every act weighs)."""
    mem = sgmem.Memory(embedder=HashEmbedder(dim=16), config=sgmem.Config(min_relevance=0.0))
    rng = np.random.default_rng(7)
    things = ["violin", "garden", "passport", "kayak", "recipe", "ticket", "camera", "novel"]
    kinds = [
        lambda a, b: f"Where did you put the {a}?",
        lambda a, b: f"I put the {a} next to the {b}. It was raining.",
        lambda a, b: "I don't know.",
        lambda a, b: "Thanks!",
        lambda a, b: f"Did you bring the {a}? I forgot the {b}.",
        lambda a, b: f"The {a} is in the car.",
    ]
    for t in range(6):
        msgs = []
        for i in range(30):
            a, b = rng.choice(things, 2, replace=False)
            msgs.append({"role": ("user", "assistant")[i % 2], "content": kinds[int(rng.integers(len(kinds)))](a, b)})
        mem.add(msgs, scope="a", thread=f"t{t}")
    return mem


@pytest.fixture(scope="module")
def acts_chat():  # type: ignore[no-untyped-def]
    mem = _chat_with_acts()
    yield mem
    mem.close()


def test_the_scan_weighed_by_the_acts_equals_weighing_its_cosines_after(acts_chat) -> None:  # type: ignore[no-untyped-def]
    mem = acts_chat
    idx = mem._index(mem._store.require_scope("a"))
    h = mem.config.hybrid
    table = search_mod._ActTable.of(idx, h)
    assert table.active and table.q_rows.size and table.w_runs.size
    # a stored question asked again (its own vector: an echo, weighed again after the scan) and two others
    asked = idx.sentence_vectors()[int(table.q_rows[0])].copy()
    queries = [asked, *mem.embedder.embed(["kayak garden", "Did you bring the camera? I forgot the novel."])]
    echoed = 0
    for q in queries:
        for threads in (1, 3):
            raw_cos, raw_seg = dense.ScanJob(idx, q, threads).result()
            job = dense.ScanJob(idx, q, threads, weights=table.sent_w)
            cos, seg = job.result()
            np.testing.assert_array_equal(cos, raw_cos)
            acts = search_mod._Acts(idx, h, cos)
            echoed += acts.echo.size
            want = acts.weighted(dense.TurnDense(idx, raw_cos, raw_seg))
            got = acts.weighted_scan(cos, job.weighted, seg)
            np.testing.assert_array_equal(got.cos, want.cos)
            np.testing.assert_array_equal(got.seg_max, want.seg_max)
            np.testing.assert_array_equal(got.seg_sum, want.seg_sum)
            # the hits' raw relevance without the whole scan's reductions: the same values
            turns = list(range(idx.n_turns))
            assert dense.TurnDense(idx, cos).relevance(turns) == dense.TurnDense(idx, cos, raw_seg).relevance(turns)
            # each turn's best sentence, gathered at once, is the one found turn by turn
            picked = [*turns[::-1], *turns[:7]]
            assert got.best_rows(picked) == [got.best_row(t) for t in picked]
    assert echoed  # a query asked before: its echoes were weighed again after the scan


def test_hits_read_their_exchange_and_echo_cosines_from_the_scan(acts_chat) -> None:  # type: ignore[no-untyped-def]
    mem = acts_chat
    idx = mem._index(mem._store.require_scope("a"))
    h = mem.config.hybrid
    turns = list(range(idx.n_turns))
    asked = idx.sentence_vectors()[int(search_mod._ActTable.of(idx, h).q_rows[0])].copy()
    for q in [asked, *mem.embedder.embed(["kayak garden", "Where did you put the ticket?"])]:
        cos = idx.sentence_cosines(q)
        exchanges = search_mod.exchange_relevance(idx, q, turns)
        weights = search_mod.act_weights(idx, turns, h, q)
        assert exchanges and weights
        assert search_mod.exchange_relevance(idx, q, turns, cos) == exchanges
        assert search_mod.act_weights(idx, turns, h, q, cos) == weights
    # the hybrid hands its scan's cosines to the facade, which then scores no sentence again
    hits = mem.search("Where did you put the camera?", scope="a", k=10, mode="hybrid")
    ranked, _, _ = mem._ranked("Where did you put the camera?", "a", 10, "hybrid", None, None, None)
    assert all(rk.cosines is not None for rk in ranked)
    original = search_mod.score_rows
    try:
        q = mem._embed_query("Where did you put the camera?")

        def guarded(idx, vec, rows):  # type: ignore[no-untyped-def]
            # (a stored question is judged a repeat against the query as its speaker would say it: another vector)
            if np.allclose(vec, q):
                raise AssertionError("scored again")
            return original(idx, vec, rows)

        search_mod.score_rows = guarded
        assert mem.search("Where did you put the camera?", scope="a", k=10, mode="hybrid") == hits
    finally:
        search_mod.score_rows = original
