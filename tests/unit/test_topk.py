"""Exact top-k by a sampled bound (sgmem.retrieval.topk): the rows a full sort gives, ties by row."""

from __future__ import annotations

import numpy as np
import pytest

from sgmem.retrieval import topk
from sgmem.retrieval.topk import top_k


def _reference(values: np.ndarray, k: int, finite: bool) -> np.ndarray:
    ok = np.isfinite(values) if finite else ~np.isnan(values)
    rows = np.flatnonzero(ok)
    return rows[np.lexsort((rows, -values[rows]))][:k]


def _cases(rng: np.random.Generator) -> list[np.ndarray]:
    n = 50_000
    normal = rng.normal(size=n)
    tied = rng.choice(np.array([0.1, 0.2, 0.3, 0.3, 0.9]), n)  # ties at every cut
    ascending = np.sort(rng.normal(size=n))  # the strided sample bounds poorly
    descending = ascending[::-1].copy()
    masked = normal.copy()
    masked[rng.random(n) < 0.7] = -np.inf  # filtered rows
    odd = normal.copy()
    odd[rng.choice(n, 200, replace=False)] = np.nan
    odd[rng.choice(n, 5, replace=False)] = np.inf
    constant = np.full(n, 0.5)
    small = rng.normal(size=300)
    return [normal, normal.astype(np.float32), tied, ascending, descending, masked, odd, constant, small]


@pytest.mark.parametrize("finite", [False, True])
def test_top_k_is_the_full_sort_prefix(finite: bool) -> None:
    rng = np.random.default_rng(3)
    for i, values in enumerate(_cases(rng)):
        for k in (1, 10, 15, 100, 999):
            np.testing.assert_array_equal(top_k(values, k, finite), _reference(values, k, finite), f"case {i}, k={k}")


def test_the_sampled_bound_leaves_few_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    select = topk._select

    def spy(values: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
        seen.append(rows.size)
        return select(values, rows, k)

    monkeypatch.setattr(topk, "_select", spy)
    values = np.random.default_rng(5).normal(size=100_000).astype(np.float32)
    np.testing.assert_array_equal(top_k(values, 10), _reference(values, 10, False))
    assert 10 <= seen[-1] < 2_000  # about k × STRIDE candidates, not 100k


def test_edges() -> None:
    assert top_k(np.zeros(0), 5).size == 0
    assert top_k(np.ones(5), 0).size == 0
    np.testing.assert_array_equal(top_k(np.array([1.0, np.nan, 3.0]), 5), [2, 0])
    np.testing.assert_array_equal(top_k(np.array([-np.inf, 2.0, np.inf]), 5, finite=True), [1])
    np.testing.assert_array_equal(top_k(np.array([-np.inf, 2.0, np.inf]), 5), [2, 1, 0])
