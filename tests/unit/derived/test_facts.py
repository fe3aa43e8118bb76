"""LLM-free facts through the gate: what is stored, skipped and linked (ALGORITHMS §1.6, §2.8)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import pytest

import sgmem
from sgmem.derived.config import DerivedConfig

from ..helpers import CountingEmbedder
from .helpers import ScriptedLLM, decisions

DAY = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
CAT = "I adopted a grey cat named Miso last spring."
RUN = "I am training for the Berlin marathon in September."


def test_user_sentences_become_facts_with_their_source_and_time(bag: sgmem.Embedder) -> None:
    counting = CountingEmbedder(bag)
    with sgmem.Memory(embedder=counting) as mem:
        mem.add(
            [
                {"id": "u1", "role": "user", "name": "Alice", "content": f"{CAT} Ok."},
                {"id": "a1", "role": "assistant", "content": "That is a lovely name for a cat."},
            ],
            scope="s",
            thread="t",
            at=DAY,
        )
        hits = mem.search("What is the cat called?", scope="s", kinds=["fact"])
    # the 2-word "Ok." and the assistant's turn give no fact (§1.6: user turns, 4+ tokens)
    assert [h.text for h in hits] == [f"Alice: {CAT}"]
    h = hits[0]
    assert h.kind == "fact" and h.message_ids == ("u1",) and h.at == DAY and h.speaker == "Alice"
    assert h.memory_id is not None and h.memory_id.startswith("fact:")
    # the fact's vector is the sentence vector the core computed: its text was embedded once
    assert Counter(counting.texts)[f"Alice: {CAT}"] == 1


def test_a_repeated_candidate_is_skipped_and_logged_with_the_memory_that_covers_it(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        r1 = mem.add([{"id": "m1", "role": "user", "content": CAT}], scope="s", thread="t", at=DAY)
        r2 = mem.add([{"id": "m2", "role": "user", "content": CAT}], scope="s", thread="t", at=DAY)
        assert (r1.facts_added, r1.facts_skipped) == (1, 0)
        assert (r2.facts_added, r2.facts_updated, r2.facts_skipped) == (0, 0, 1)
        log = decisions(mem, "s")
        assert [a for a, _, _ in log] == ["add", "noop"]
        assert log[1][2] == log[0][2]  # the Noop names the fact that covers it
        hits = mem.search("cat", scope="s", kinds=["fact"])
        assert len(hits) == 1
        assert hits[0].message_ids == ("m1",) and hits[0].why["also_in"] == ["m2"]
        # raw messages are never gated: both stay in history and in turn retrieval
        assert [m.id for m in mem.messages(scope="s")] == ["m1", "m2"]
        assert {i for h in mem.search("cat named Miso", scope="s") for i in h.message_ids} == {"m1", "m2"}


def test_an_unrelated_candidate_is_added(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        mem.add([{"role": "user", "content": CAT}], scope="s", thread="t", at=DAY)
        r = mem.add([{"role": "user", "content": RUN}], scope="s", thread="t", at=DAY)
        assert r.facts_added == 1
        assert mem.stats("s").scopes[0].facts == 2


def test_fact_roles_choose_whose_turns_give_facts(bag: sgmem.Embedder) -> None:
    cfg = sgmem.Config(derived=DerivedConfig(fact_roles=("user", "assistant")))
    with sgmem.Memory(embedder=bag, config=cfg) as mem:
        mem.add([{"role": "assistant", "name": "Bob", "content": RUN}], scope="s", thread="t", at=DAY)
        assert [h.speaker for h in mem.search("marathon", scope="s", kinds=["fact"])] == ["Bob"]


def test_gate_off_stores_every_candidate(bag: sgmem.Embedder) -> None:
    cfg = sgmem.Config(gate=sgmem.GateConfig(mode="off"))
    with sgmem.Memory(embedder=bag, config=cfg) as mem:
        for _ in range(3):
            mem.add([{"role": "user", "content": CAT}], scope="s", thread="t", at=DAY)
        assert mem.stats("s").scopes[0].facts == 3


def test_binary_gate_skips_what_scores_above_tau_noop(bag: sgmem.Embedder) -> None:
    cfg = sgmem.Config(gate=sgmem.GateConfig(mode="binary", tau_noop=0.9))
    with sgmem.Memory(embedder=bag, config=cfg) as mem:
        r = mem.add([{"role": "user", "content": c} for c in (CAT, CAT, RUN)], scope="s", thread="t", at=DAY)
        assert (r.facts_added, r.facts_updated, r.facts_skipped) == (2, 0, 1)


def test_stats_report_the_gate_state(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        mem.add([{"role": "user", "content": c} for c in (CAT, CAT, RUN)], scope="s", thread="t", at=DAY)
        s = mem.stats("s").scopes[0]
        assert s.gate["adds"] == 2 and s.gate["noops"] == 1 and s.gate["step"] == 1
        assert s.gate["tau"] == 0.275  # first step: N = 0, ρ = 0, τ = τ_min + τ_0
        assert 0 < s.gate["kappa"] <= 50
        assert s.summaries == 1 and s.llm_calls == 0


def test_cluster_insights_are_the_medoid_fact_of_each_close_group(bag: sgmem.Embedder) -> None:
    cfg = sgmem.Config(
        gate=sgmem.GateConfig(mode="off"), derived=sgmem.DerivedConfig(insights="cluster", insight_min_cosine=0.7)
    )
    hiking = [
        "I love hiking in the mountains every weekend.",
        "I love hiking in the mountains every summer weekend.",
        "I love hiking in the snowy mountains every weekend.",
    ]
    with sgmem.Memory(embedder=bag, config=cfg) as mem:
        for i, text in enumerate([*hiking, "My favourite food is spicy ramen from Osaka."]):
            mem.add([{"id": f"m{i}", "role": "user", "content": text}], scope="s", thread="t", at=DAY)
        insights = mem.search("hiking", scope="s", kinds=["insight"])
    assert len(insights) == 1
    (ins,) = insights
    assert ins.text in {f"user: {t}" for t in hiking} and ins.why["method"] == "rule"
    assert set(ins.message_ids) == {"m0", "m1", "m2"}


def test_without_an_llm_the_default_gate_is_the_portable_one_and_with_one_it_is_sage(bag: sgmem.Embedder) -> None:
    msgs = [{"role": "user", "content": c} for c in (CAT, CAT, RUN)]
    with sgmem.Memory(embedder=bag) as mem:
        r = mem.add(msgs, scope="s", thread="t", at=DAY)
        g = mem.stats("s").scopes[0].gate
    assert g["mode"] == "binary" and g["tau_noop"] == sgmem.GateConfig().tau_noop
    assert (r.facts_added, r.facts_updated, r.facts_skipped) == (2, 0, 1)  # the repeat is skipped, never merged
    llm = ScriptedLLM()  # empty answers: every task falls back to its rule, but merges could use the LLM
    with sgmem.Memory(embedder=bag, llm=llm) as mem:
        mem.add(msgs, scope="s", thread="t", at=DAY)
        g = mem.stats("s").scopes[0].gate
    assert g["mode"] == "adaptive" and "tau_noop" not in g


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
