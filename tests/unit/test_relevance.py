"""The relevance cutoff: ``Hit.relevance`` in [0, 1] and ``min_score`` on search and context (issue 12, item 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sgmem
from sgmem.config import MIN_RELEVANCE, MODES
from sgmem.eval.relevance import RelevanceSweep, choose, render_relevance, unrelated_questions

from .helpers import CAT_IDS, add_sample

UNRELATED = [
    "How do I bleed the air out of hydraulic brake lines?",
    "How do I deduct home office expenses on my income tax return?",
    "Why does my car's check engine light flash when I accelerate?",
]
RELATED = "What is the name of my cat?"


@pytest.mark.parametrize("query", UNRELATED)
def test_an_unrelated_question_gets_no_hits_and_an_empty_context(sample_default: sgmem.Memory, query: str) -> None:
    assert sample_default.search(query, scope="alice") == []
    assert sample_default.context(query, scope="alice", budget_tokens=500) == ""


def test_a_related_question_still_gets_its_evidence(sample_default: sgmem.Memory) -> None:
    hits = sample_default.search(RELATED, scope="alice")
    assert hits and hits[0].message_ids == ("c1",)
    # calibrated for the default MiniLM (sgmem eval locomo --cutoffs), on by default
    assert sample_default.min_relevance == MIN_RELEVANCE[sample_default.embedder.name] > 0
    assert all(h.relevance >= sample_default.min_relevance for h in hits)
    assert "Miso" in sample_default.context(RELATED, scope="alice", budget_tokens=500)


def test_min_score_zero_restores_filling_the_budget(sample_default: sgmem.Memory) -> None:
    query = UNRELATED[0]
    hits = sample_default.search(query, scope="alice", k=5, min_score=0)
    assert len(hits) == 5  # the five least bad turns, as before the cutoff
    assert sample_default.context(query, scope="alice", budget_tokens=500, min_score=0) != ""
    off = sgmem.Memory(embedder=sample_default.embedder, config=sgmem.Config(min_relevance=0.0))
    with off:
        from .helpers import add_sample

        add_sample(off)
        assert [h.message_ids for h in off.search(query, scope="alice", k=5)] == [h.message_ids for h in hits]


def test_relevance_is_in_unit_range_the_same_for_a_turn_across_modes_and_the_hybrids_own_order(
    embedder: sgmem.Embedder,
) -> None:
    # default configuration (relevance cutoff on) with the opt-in entity layer, so that every mode runs
    config = sgmem.Config(entities=sgmem.EntityConfig(enabled=True))
    with sgmem.Memory(embedder=embedder, config=config) as sample_default:
        add_sample(sample_default)
        per_mode = {}
        for mode in MODES:
            hits = sample_default.search("Where does Miso sleep?", scope="alice", k=8, mode=mode, min_score=0)
            assert hits, mode
            for h in hits:
                assert 0.0 <= h.relevance <= 1.0
            per_mode[mode] = {h.message_ids: h.relevance for h in hits if len(h.message_ids) == 1}
        # the hybrid's relevance is its own fused score squashed: one measure orders and cuts its hits
        hybrid = sample_default.search("Where does Miso sleep?", scope="alice", k=8, min_score=0)
        assert [h.relevance for h in hybrid] == sorted((h.relevance for h in hybrid), reverse=True)
        scale = sample_default.config.hybrid.relevance_scale
        assert all(math.isclose(h.relevance, max(h.score, 0) / (max(h.score, 0) + scale)) for h in hybrid)
        # the other modes that read a turn's relevance off its cosines agree on it
        vector = per_mode["vector"]
        for mode, rel in per_mode.items():
            if mode == "hybrid":
                continue
            for ids, value in rel.items():
                if ids in vector:
                    assert math.isclose(value, vector[ids], abs_tol=1e-6), (mode, ids)
        # the ranking score is not a relevance: hybrid's sum exceeds 1 for a good match
        top = sample_default.search(RELATED, scope="alice", k=1)[0]
        assert top.score > 1.0 >= top.relevance


def test_min_score_filters_each_hit_by_its_relevance(sample_default: sgmem.Memory) -> None:
    hits = sample_default.search("Where does Miso sleep?", scope="alice", k=8, min_score=0)
    cut = sorted(h.relevance for h in hits)[len(hits) // 2]
    kept = sample_default.search("Where does Miso sleep?", scope="alice", k=8, min_score=cut)
    assert kept and [h.message_ids for h in kept] == [h.message_ids for h in hits if h.relevance >= cut]


async def test_async_twins_take_min_score(sample_default: sgmem.Memory) -> None:
    query = UNRELATED[1]
    assert await sample_default.asearch(query, scope="alice") == []
    assert len(await sample_default.asearch(query, scope="alice", k=3, min_score=0)) == 3
    assert await sample_default.acontext(query, scope="alice", budget_tokens=300) == ""
    assert await sample_default.acontext(query, scope="alice", budget_tokens=300, min_score=0) != ""


def test_generated_memory_is_cut_by_its_cosine(sample_default: sgmem.Memory) -> None:
    facts = sample_default.search(RELATED, scope="alice", kinds=["fact"], min_score=0)
    assert facts and all(math.isclose(h.relevance, max(0.0, min(1.0, h.score - 1.0)), abs_tol=1e-6) for h in facts)
    assert sample_default.search(UNRELATED[2], scope="alice", kinds="fact") == []
    assert sample_default.search(RELATED, scope="alice", kinds="fact")[0].message_ids[0] in CAT_IDS


@pytest.mark.parametrize("bad", [1.5, -0.1, "0.3", float("nan"), True])
def test_a_bad_min_score_is_refused(sample_default: sgmem.Memory, bad: object) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="min_score"):
        sample_default.search(RELATED, scope="alice", min_score=bad)  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="min_score"):
        sample_default.context(RELATED, scope="alice", min_score=bad)  # type: ignore[arg-type]


def test_numpy_scores_are_accepted(sample_default: sgmem.Memory) -> None:
    assert sample_default.search(RELATED, scope="alice", min_score=np.float32(0.2))


def test_config_refuses_a_relevance_outside_unit_range() -> None:
    with pytest.raises(sgmem.ConfigError, match="min_relevance"):
        sgmem.Config(min_relevance=2.3)


def test_another_embedder_gets_no_cutoff_unless_configured() -> None:
    from .helpers import HashEmbedder

    with sgmem.Memory(embedder=HashEmbedder()) as mem:  # its cosines are not MiniLM's: 0.3 would mean nothing
        assert mem.min_relevance == 0.0
    with sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(min_relevance=0.5)) as mem:
        assert mem.min_relevance == 0.5


def test_the_bundled_unrelated_questions_are_many_and_distinct() -> None:
    qs = unrelated_questions()
    assert len(qs) >= 50 and len(set(qs)) == len(qs)


def test_choose_keeps_evidence_within_the_allowed_drop() -> None:
    sweep = RelevanceSweep((0.0, 0.2, 0.4), 1000)
    for conv, (r0, r2, r4) in {"a": (1.0, 0.996, 0.9), "b": (0.8, 0.8, 0.7)}.items():
        sweep.recall[conv][0.0] = [r0] * 10
        sweep.recall[conv][0.2] = [r2] * 10
        sweep.recall[conv][0.4] = [r4] * 10
        sweep.empty[conv][0.0] = [0.0] * 4
        sweep.empty[conv][0.2] = [1.0, 1.0, 0.0, 0.0]
        sweep.empty[conv][0.4] = [1.0] * 4
    # 0.4 empties more but costs 10 points; 0.2 costs 0.2 points
    assert choose(sweep, ["a", "b"]) == 0.2
    report = render_relevance(sweep, 0.2)
    assert "| 0.2 (default) |" in report and "Leave one conversation out" in report
