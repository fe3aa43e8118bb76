"""The PCA density proxy ρ (ALGORITHMS §2.4)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmem.gate.density import Density, rho, top_components


def test_fewer_than_two_memories_have_unit_volume() -> None:
    d = Density(dim=4, k=2)
    d.fit(np.zeros((1, 4), dtype=np.float32), 100)
    assert d.volume(1, 1e-3) == 1.0
    assert rho(0, 1.0) == 0.0


def test_volume_by_hand_with_floored_components() -> None:
    # two points on a line: the first component spans 2, the second has range 0 → floored to 1e-3
    d = Density(dim=2, k=2)
    d.fit(np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32), 100)
    assert d.volume(2, 1e-3) == pytest.approx(2.0 * 1e-3)
    assert rho(2, d.volume(2, 1e-3)) == pytest.approx(1000.0)


def test_missing_components_count_as_zero_range() -> None:
    # 16 components asked of 2-d data: 14 rows are zero, each floored
    d = Density(dim=2, k=16)
    d.fit(np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32), 100)
    assert d.volume(2, 1e-3) == pytest.approx(2.0 * 1e-3**15)


def test_new_vectors_widen_the_ranges_until_the_next_fit() -> None:
    d = Density(dim=2, k=1)
    d.fit(np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32), 100)
    d.extend(np.array([3.0, 0.0], dtype=np.float32))
    assert d.volume(3, 1e-3) == pytest.approx(4.0)


def test_state_round_trips_exactly() -> None:
    rng = np.random.default_rng(0)
    d = Density(dim=8, k=4)
    d.fit(rng.normal(size=(30, 8)).astype(np.float32), 100)
    back = Density.from_blobs(8, 4, *d.to_blobs(), n_fit=d.n_fit, stale=d.stale)
    assert back.volume(30, 1e-3) == d.volume(30, 1e-3)
    assert np.array_equal(back.basis, d.basis) and np.array_equal(back.lo, d.lo)


def test_randomized_components_span_the_exact_top_subspace() -> None:
    rng = np.random.default_rng(1)
    # low-rank signal plus noise: the top 4 directions are well separated
    x = rng.normal(size=(400, 4)) @ (rng.normal(size=(4, 64)) * 5) + 0.01 * rng.normal(size=(400, 64))
    xc = x - x.mean(axis=0)
    exact = np.linalg.svd(xc, full_matrices=False)[2][:4]
    approx = top_components(xc, 4)
    # the principal angles between the two subspaces are ~0
    s = np.linalg.svd(exact @ approx.T, compute_uv=False)
    assert s.min() > 0.999
