"""One very long add (a message of tens of thousands of lines) links its sentences through an HNSW graph past
``EXACT_NEW_SENTENCES``: the same kind of edges (earlier sentences, exact cosines), nearly the same ones."""

from __future__ import annotations

import numpy as np

from sgmem.ingest import EXACT_NEW_SENTENCES, knn_edges
from sgmem.retrieval.index import ScopeIndex


def _vectors(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    v = centres[rng.integers(0, 40, n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_a_long_add_finds_nearly_the_exact_edges() -> None:
    vecs = _vectors(3000)
    idx = ScopeIndex(1, vecs.shape[1])
    exact = knn_edges(idx, vecs, 3, 0.0, block=256, exact_new=10**9)
    fast = knn_edges(idx, vecs, 3, 0.0, block=256, exact_new=512)
    head = [e for e in fast if e[0] < 512]
    assert head == [e for e in exact if e[0] < 512]  # the first sentences exactly as before
    for i, t, cos in fast:
        j = -t - 1
        assert 0 <= j < i  # an earlier sentence of the same add
        assert abs(cos - float(vecs[i] @ vecs[j])) < 1e-5
    tail_fast = {(i, t) for i, t, _ in fast if i >= 512}
    tail_exact = {(i, t) for i, t, _ in exact if i >= 512}
    assert len(tail_fast & tail_exact) / len(tail_exact) >= 0.95
    assert len(fast) == len(exact)  # k edges for every sentence that has k earlier ones


def test_ordinary_adds_stay_exact() -> None:
    assert EXACT_NEW_SENTENCES >= 4096
    vecs = _vectors(700, seed=1)
    idx = ScopeIndex(1, vecs.shape[1])
    assert knn_edges(idx, vecs, 3, 0.0, block=128) == knn_edges(idx, vecs, 3, 0.0, block=128, exact_new=10**9)
