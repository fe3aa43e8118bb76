"""Smoke run of benchmarks.knn_recall: both rules through Memory.add and through the kNN step alone."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import knn_recall

pytestmark = pytest.mark.benchmark


def _vectors(n: int) -> np.ndarray:
    base = np.random.default_rng(3).normal(size=(n // 2, 16)).astype(np.float32)
    return knn_recall.lookup_vectors(base, n, noise=0.5)


def test_the_kNN_rule_keeps_the_global_kNN_graph_and_the_earlier_rule_does_not() -> None:
    vecs = _vectors(300)
    rows = {r["rule"]: r for r in knn_recall.measure(vecs[: len(vecs) // 2], [300])}
    assert rows["knn"]["recall"] == pytest.approx(1.0) and rows["earlier"]["recall"] < 0.9
    direct = {r["rule"]: r for r in knn_recall.direct(vecs)}
    assert direct["knn"]["recall"] == pytest.approx(1.0) and direct["earlier"]["recall"] < 0.9
    assert "| 300 | – | knn | 1.000 |" in knn_recall.render(list(rows.values()))
