"""``python -m benchmarks.ui_latency`` at toy size, so it cannot rot (its figures: the ``ui`` part of RESULTS.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

import sgmem  # noqa: E402
from benchmarks.ui_latency import TARGET, render, summary_lines  # noqa: E402
from benchmarks.ui_latency import run as run_ui  # noqa: E402

pytestmark = pytest.mark.benchmark


def test_ui_latency_times_both_paths_and_reports_the_ratio(embedder: sgmem.Embedder) -> None:
    res = run_ui(embedder, 1)
    assert len(res["view_ms"]) == len(res["search_ms"]) == res["queries"] >= 3
    assert min(res["view_ms"]) > 0 and min(res["search_ms"]) > 0 and res["messages"] > 10
    text = render(res)
    assert f"| ratio view ÷ search (target ≤ {TARGET}) | **" in text
    assert summary_lines(res)[0].startswith("- The `sgmem ui` search view:")
