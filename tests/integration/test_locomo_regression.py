"""Ranking regression on one LoCoMo dev conversation (conv-30, the smallest: 369 turns, 81 cat 1–4 questions).

The data is not shipped: it is read from ``../shared/data/locomo/locomo-dev.json``
relative to the repository root (CI keeps ``shared/`` beside the clone); the
test is skipped, saying so, where it is absent. The threshold is the measured
figure minus 2 points: ``sgmem eval locomo`` gives conv-30 a recall@10 (cat
1–4) of 81.8 with the defaults (all-MiniLM-L6-v2).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sgmem
from sgmem.eval.locomo import evaluate

# $SGMEM_LOCOMO_DEV overrides the location (e.g. for a worktree that is not beside shared/)
DATA = Path(
    os.environ.get("SGMEM_LOCOMO_DEV")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo-dev.json"
)
MEASURED_RECALL_AT_10 = 81.8

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo dev data not found at {DATA} (not shipped: CC BY-NC)")
def test_conv30_recall_at_10_holds(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    samples = [s for s in json.loads(DATA.read_text(encoding="utf-8")) if s["sample_id"] == "conv-30"]
    assert samples, "conv-30 is missing from the dev split"
    one = tmp_path / "conv-30.json"
    one.write_text(json.dumps(samples))
    rep = evaluate(one, systems=[("hybrid", "hybrid")], ks=(10,), budgets=(), embedder=embedder)
    got = rep.recall("hybrid", 10)
    assert got >= MEASURED_RECALL_AT_10 - 2.0, f"recall@10 (cat 1–4) on conv-30 fell to {got:.1f}"
