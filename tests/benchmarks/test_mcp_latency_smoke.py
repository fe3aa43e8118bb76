"""``python -m benchmarks.mcp_latency`` at toy size, on the test server (HashEmbedder), so it cannot rot.

The full run (the real ``sgmem mcp`` with MiniLM, and cold ``sgmem search``
processes as the baseline) loads the model four times: it is the ``mcp`` part of
``python -m benchmarks``, its figures in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from benchmarks.env import environment  # noqa: E402
from benchmarks.mcp_latency import report, server_run  # noqa: E402
from tests.integration.mcp.client import ROOT  # noqa: E402

pytestmark = pytest.mark.benchmark


def test_mcp_latency_measures_the_calls_and_reports_the_ratio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the test server is a module of the repository's tests
    args = ["-m", "tests.integration.mcp.server", "--path", str(tmp_path / "store"), "--scope", "bench"]
    res = asyncio.run(server_run(args, ["Priya's manager is Tomasz.", "Priya is vegetarian."], ["manager?"], 3))
    assert len(res["remember_ms"]) == 2 and len(res["recall_ms"]) == 3 and len(res["context_ms"]) == 3
    assert res["startup_s"] > 0 and res["first_recall_ms"] > 0
    res["cli_s"] = [2.0]
    text = report(res, "python -m benchmarks.mcp_latency", environment())
    assert "| later `recall`, median of 3 |" in text
    assert "less than a cold `sgmem search` (2.00 s)" in text
