"""The compact scope index: built in place by adds or loaded from SQLite, it holds the same
rows, terms, postings, graph and texts, and answers the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sgmem
from sgmem.config import GraphConfig
from sgmem.ingest import knn_edges
from sgmem.retrieval.ann import AnnIndex
from sgmem.retrieval.compact import Neighbours, Postings
from sgmem.retrieval.index import ScopeIndex, load_scope_index

from .helpers import HashEmbedder

WORDS = "cat dog trip lake paris museum violin bread garden storm river piano coffee chess".split()


def _adds(n: int, seed: int = 0) -> list[tuple[str, list[dict]]]:
    rng = np.random.default_rng(seed)
    out = []
    for a in range(n):
        msgs = []
        for t in range(6):
            k = int(rng.integers(1, 4))
            text = " ".join(f"{' '.join(rng.choice(WORDS, 3))} number {int(rng.integers(0, 50))}." for _ in range(k))
            msgs.append({"role": "user" if t % 2 == 0 else "assistant", "content": text.capitalize()})
        out.append((f"thread-{a % 3}", msgs))
    return out


def _snapshot(idx: ScopeIndex) -> dict:
    return {
        "msg_ids": list(idx.msg_ids),
        "ext_ids": list(idx.ext_ids),
        "threads": list(idx.threads),
        "sessions": list(idx.sessions),
        "rounds": list(idx.round_ids),
        "prev": list(idx.prev_row),
        "next": list(idx.next_row),
        "terms": [sorted(t) for t in idx.terms],
        "postings": {w: idx.postings.get(w, np.zeros(0)).tolist() for w in WORDS},
        "idf": [round(idx.idf(w), 9) for w in WORDS],
        "sent_ids": list(idx.sent_ids),
        "msg_sents": [idx.msg_sents[r] for r in range(idx.n_turns)],
        "adjacency": [sorted(idx.adjacency[r]) for r in range(idx.n_sentences)],  # SQL returns edges by key
        "texts": idx.sent_text.many(range(idx.n_sentences)),
        "session_codes": idx.array("session_codes").tolist(),
        "norms": np.round(idx.turn_sum_norms(), 5).tolist(),
    }


@pytest.mark.both_backends  # sentence texts are read back from the store: SQLite or PostgreSQL
def test_an_index_grown_by_adds_equals_one_loaded_from_sqlite(store_path: Path | str) -> None:
    emb = HashEmbedder()
    with sgmem.Memory(store_path, embedder=emb) as mem:
        for thread, msgs in _adds(30):
            mem.add(msgs, scope="a", thread=thread)
        grown = mem._index(mem._store.require_scope("a"))
        loaded = load_scope_index(mem._store, grown.scope_id, emb.dim, None)
        a, b = _snapshot(grown), _snapshot(loaded)
        assert a == b
        assert grown.n_sentences > 300 and any(a["adjacency"]) and all(a["texts"])
        # texts come from SQLite, as stored
        stored = [m.content for m in mem.messages(scope="a")]
        assert " ".join(a["texts"][r] for r in a["msg_sents"][0]) == stored[0]
        q = emb.embed(["cat trip to paris"])[0]
        for mode in (m for m in sgmem.MODES if m != "entity"):  # entity: opt-in layer, off here
            assert [h.message_ids for h in mem.search("cat trip to paris", scope="a", mode=mode)]
        assert np.array_equal(grown.sentence_vectors() @ q, loaded.sentence_vectors() @ q)


def test_neighbours_keep_insertion_order_through_merges() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    nb = Neighbours()
    nb.grow(n)
    ref: list[list[int]] = [[] for _ in range(n)]
    base = rng.integers(0, n, size=(5000, 2))
    nb.load(base[:, 0], base[:, 1], n)
    for a, b in base.tolist():
        ref[a].append(b)
        ref[b].append(a)
    for a, b in rng.integers(0, n, size=(40000, 2)).tolist():  # > 65536 tail entries: merged at least once
        nb.add(a, b)
        ref[a].append(b)
        ref[b].append(a)
    assert [nb[r] for r in range(n)] == ref


def test_postings_find_rows_added_before_and_after_a_merge() -> None:
    rng = np.random.default_rng(4)
    turns = [rng.choice(200, size=int(rng.integers(1, 12)), replace=False).tolist() for _ in range(9000)]
    ptr = np.r_[0, np.cumsum([len(t) for t in turns])]
    ids = np.concatenate([np.asarray(t) for t in turns]).astype(np.int32)
    post = Postings()
    post.rebuild(ptr[:3001], ids[: ptr[3000]], 200)
    post.maybe_merge(ptr, ids, 200)  # 6000 more turns: over the tail limit, merged
    for tid in (0, 7, 199):
        want = [r for r, t in enumerate(turns) if tid in t]
        assert post.rows(tid, ptr, ids).tolist() == want
    post.rebuild(ptr[:8001], ids[: ptr[8000]], 200)  # a tail of 1000 turns, scanned
    for tid in (0, 7, 199):
        assert post.rows(tid, ptr, ids).tolist() == [r for r, t in enumerate(turns) if tid in t]


def test_nbytes_counts_vectors_and_grows_with_the_scope(tmp_path: Path) -> None:
    emb = HashEmbedder()
    with sgmem.Memory(embedder=emb) as mem:
        mem.add(_adds(1)[0][1], scope="a", thread="t")
        idx = mem._index(mem._store.require_scope("a"))
        small = idx.nbytes()
        for thread, msgs in _adds(20, seed=1):
            mem.add(msgs, scope="a", thread=thread)
        idx = mem._index(mem._store.require_scope("a"))
        vectors = 4 * emb.dim * (idx.n_sentences + idx.n_turns)
        assert vectors <= idx.nbytes() <= vectors + 2000 * idx.n_sentences
        assert idx.nbytes() > small


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n // 20 + 1, dim))
    x = centres[rng.integers(0, len(centres), n)] + 0.7 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("dim", [64, 384])
def test_hnsw_knn_edges_recall_exact_edges(dim: int) -> None:
    vecs = _clustered(4000, dim, seed=dim)
    idx = ScopeIndex(scope_id=1, dim=dim)
    idx.sent_index.add(vecs[:3600])
    cfg = GraphConfig(knn_k=3)
    ann = AnnIndex(dim, cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
    ann.extend(idx.sentence_vectors())
    new = vecs[3600:]
    exact = knn_edges(idx, new, 3, 0.0)
    approx = knn_edges(idx, new, 3, 0.0, ann=ann)
    e, a = {(i, t) for i, t, _ in exact}, {(i, t) for i, t, _ in approx}
    assert len(e & a) / len(e) >= 0.95
    # weights are exact cosines, whichever way the neighbour was found
    for i, t, w in approx:
        other = new[-t - 1] if t < 0 else vecs[t]
        assert abs(w - float(new[i] @ other)) < 1e-5


def test_the_hnsw_path_is_used_past_the_configured_size(tmp_path: Path) -> None:
    emb = HashEmbedder()
    for knn_index, min_n, want in (
        ("auto", 10**9, False),
        ("auto", 50, True),
        ("hnsw", 10**9, True),
        ("exact", 0, False),
    ):
        cfg = sgmem.Config(graph=GraphConfig(knn_index=knn_index, knn_ann_min_sentences=min_n))
        with sgmem.Memory(embedder=emb, config=cfg) as mem:
            for thread, msgs in _adds(12):
                mem.add(msgs, scope="a", thread=thread)
            idx = mem._index(mem._store.require_scope("a"))
            assert (idx.ann is not None) == want, (knn_index, min_n)
            if want:
                assert idx.ann.ntotal == idx.n_sentences
                assert mem.search("cat trip", scope="a", mode="graph")


def test_the_approximate_dense_index_scores_only_hnsw_candidates() -> None:
    emb = HashEmbedder()
    exact_cfg = sgmem.Config()
    approx_cfg = sgmem.Config(dense_index="hnsw", dense_ann_min_sentences=0, dense_ann_candidates=50)
    queries = ["cat trip to paris", "violin storm river", "chess and coffee number 7"]
    got = {}
    for name, cfg in (("exact", exact_cfg), ("approx", approx_cfg)):
        with sgmem.Memory(embedder=emb, config=cfg) as mem:
            for thread, msgs in _adds(30):
                mem.add(msgs, scope="a", thread=thread)
            idx = mem._index(mem._store.require_scope("a"))
            assert idx.ann is None  # far below the kNN edges' HNSW size
            got[name] = [[h.text for h in mem.search(q, scope="a", k=5, mode="vector")] for q in queries]
            if name == "approx":
                assert idx.ann is not None and idx.ann.ntotal == idx.n_sentences  # built by the query
                from sgmem.retrieval.dense import ann_cosines

                q0 = emb.embed([queries[0]])[0]
                approx = ann_cosines(idx, q0, approx_cfg)
                assert approx is not None
                cos, scored = approx.cos, approx.scored
                # only the candidates' turns and their chronological neighbours were scored, exactly
                turns = np.unique(idx.array("sent_msg")[scored])
                assert 0 < scored.sum() < idx.n_sentences and len(turns) <= 3 * 50
                exact = idx.sentence_cosines(q0)
                assert np.allclose(cos[scored], exact[scored], atol=1e-6)
                assert (cos[~scored] == -1).all()
                # every sentence of a scored turn is scored (its dense channels are the exact ones)
                assert scored[np.isin(idx.array("sent_msg"), turns)].all()
    same = sum(a == b for qa, qb in zip(got["exact"], got["approx"], strict=True) for a, b in zip(qa, qb, strict=True))
    assert same >= 0.8 * 5 * len(queries)


def test_sentence_ids_out_of_row_order_are_still_found() -> None:
    """A message rewritten in place (new sentence ids for old rows) must not break id → row lookups."""
    idx = ScopeIndex(scope_id=1, dim=4)
    for mid in (10, 20):
        idx.append_turn(mid, f"m{mid}", "t", "s", mid, 0.0, 3, "user", ["cat"], np.ones(4, np.float32) / 2)
    vecs = np.eye(4, dtype=np.float32)[:3]
    idx.append_sentences([(500, 10, 0, ""), (100, 20, 0, ""), (300, 20, 1, "")], vecs)
    assert [idx.sent_row(i) for i in (500, 100, 300, 7)] == [0, 1, 2, None]
    idx.add_sentence_edge(300, 500)
    assert idx.adjacency[0] == [2] and idx.adjacency[2] == [0]
    assert idx.msg_sents[1] == [1, 2]


class _Recording:
    """A FAISS index whose adds and searches record how many OpenMP threads they could use."""

    def __init__(self, index: object, seen: list[tuple[str, int, int]]) -> None:
        self._index, self._seen = index, seen

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._index, name)
        if name not in ("add", "add_with_ids", "search"):
            return attr
        import faiss

        def call(x: np.ndarray, *args: object) -> object:
            self._seen.append((name, len(x), faiss.omp_get_max_threads()))
            return attr(x, *args)

        return call


def test_an_adds_few_vectors_go_to_faiss_on_one_thread_and_a_build_on_all() -> None:
    """Small FAISS batches (an add's kNN edges, the gate's new facts) run single-threaded: OpenMP's
    start-up cost more than their work (issue 14); a first build keeps every thread; the setting is restored."""
    import faiss

    from sgmem.gate.approx import IVFScorer

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    try:
        rng = np.random.default_rng(0)
        vecs = rng.normal(size=(2600, 32)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        seen: list[tuple[str, int, int]] = []
        ann = AnnIndex(32, 8, 40, 16)
        ann.index = _Recording(ann.index, seen)
        ann.extend(vecs[:2000])  # a first build
        ann.extend(vecs[:2050])  # an add's 50 sentences
        ann.top_k(vecs[2050:2100], vecs[:2050], 3)  # their kNN edges
        ann.add_rows(vecs[2050:2090])  # the next add's 40, appended to the shared storage (ScopeIndex.append)
        ivf = IVFScorer.train(vecs[:2000], nprobe=4)
        ivf.index = _Recording(ivf.index, seen)
        ivf.add(np.arange(2000), vecs[:2000])  # attached to a loaded gate state
        ivf.add(np.arange(2000, 2020), vecs[2000:2020])  # an add's new facts
        assert seen == [
            ("add", 2000, 2),
            ("add", 50, 1),
            ("search", 50, 1),
            ("add", 40, 1),
            ("add_with_ids", 2000, 2),
            ("add_with_ids", 20, 1),
        ]
        assert faiss.omp_get_max_threads() == 2  # restored
    finally:
        faiss.omp_set_num_threads(before)
