"""PostgreSQL gives the embedded store's answers: a LoCoMo conversation, ingested into both.

Issue 16's bar: the same top-10 turns for at least 95 % of the conversation's
questions (hybrid, the default mode; all-MiniLM-L6-v2). conv-30 is the dev
split's smallest conversation (369 turns); the data is located as in
``test_locomo_regression.py`` and the test is skipped, saying so, where it is
absent. Texts are embedded once: the second store reuses the first's vectors
(:class:`sgmem.eval.CachingEmbedder`), so the two stores see identical vectors.
The same measurement on conv-26 is ``python -m benchmarks.postgres --skip throughput langgraph dense refresh``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sgmem
from benchmarks.postgres import agreement
from tests.pg import server_url

from .test_locomo_regression import DATA

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.postgres]

CONVERSATION = "conv-30"


@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo dev data not found at {DATA} (not shipped: CC BY-NC)")
def test_postgres_and_sqlite_give_the_same_top10_turns(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    from sgmem.eval import CachingEmbedder

    samples = [s for s in json.loads(DATA.read_text(encoding="utf-8")) if s["sample_id"] == CONVERSATION]
    assert samples, f"{CONVERSATION} is missing from the dev split"
    one = tmp_path / f"{CONVERSATION}.json"
    one.write_text(json.dumps(samples))
    cached = CachingEmbedder(embedder, tmp_path / "embeddings")
    out = agreement(server_url(), one, cached, conv=0)  # in a schema of its own, dropped afterwards
    assert out["questions"] >= 80
    assert out["same_top10"] >= 0.95, (
        f"same top-10 turns for only {out['same_top10']:.1%} of {out['questions']} questions"
    )
    assert out["postgres"]["recall10"] == pytest.approx(out["sqlite"]["recall10"], abs=0.02)
