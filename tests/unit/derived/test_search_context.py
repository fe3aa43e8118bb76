"""Generated memory in search (``kinds``) and in the context block (SGMem §1.3 steps 2 and 8)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import sgmem
from sgmem.text import count_tokens

DAY = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
CAT = [
    {"id": "c1", "role": "user", "name": "Alice", "content": "I adopted a grey cat named Miso last spring."},
    {"id": "c2", "role": "assistant", "content": "What does Miso like to eat?"},
    {"id": "c3", "role": "user", "name": "Alice", "content": "Miso loves tuna and sleeps on my warm keyboard."},
]
RUN = [
    {"id": "r1", "role": "user", "name": "Alice", "content": "I am training for the Berlin marathon in September."},
    {"id": "r2", "role": "assistant", "content": "How far do you run each week?"},
]


def _fill(mem: sgmem.Memory) -> None:
    mem.add(CAT, scope="a", thread="cats", at=DAY)
    mem.add(RUN, scope="a", thread="runs", at=DAY + timedelta(days=7))


@pytest.mark.parametrize("kinds", ["bogus", [], ["fact", "turns"], 3])
def test_unknown_kinds_are_refused(bag: sgmem.Embedder, kinds: object) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        _fill(mem)
        with pytest.raises(sgmem.InvalidInputError, match="kinds"):
            mem.search("cat", scope="a", kinds=kinds)  # type: ignore[arg-type]


def test_default_search_is_unchanged_and_kinds_add_generated_memory(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        _fill(mem)
        assert {h.kind for h in mem.search("cat", scope="a")} == {"turn"}
        hits = mem.search("cat", scope="a", k=2, kinds=["chunk", "summary", "fact"])
        kinds = [h.kind for h in hits]
        # the mode's hits first, then up to k of each table in SGMem's order
        assert kinds == sorted(kinds, key=["turn", "summary", "fact"].index)
        assert kinds.count("turn") == 2 and kinds.count("summary") == 2 and kinds.count("fact") == 2
        assert all(h.memory_id for h in hits if h.kind != "turn")
        assert mem.search("cat", scope="a", kinds="fact")[0].kind == "fact"
        facts = mem.search("cat", scope="a", kinds=["fact"], k=10)
        assert facts[0].score == pytest.approx(facts[0].why["cosine"] + 1.0, abs=1e-4)


def test_generated_memory_never_crosses_scopes(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        _fill(mem)
        mem.add([{"role": "user", "content": "Bob keeps bees in his garden."}], scope="b", thread="t", at=DAY)
        texts = [h.text for h in mem.search("cat", scope="b", kinds=["fact", "summary"], k=50)]
        assert texts and all("Miso" not in t for t in texts)
        assert mem.search("cat", scope="nobody", kinds=["fact"]) == []


def test_filters_apply_to_generated_memory(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        _fill(mem)
        only_runs = mem.search("anything", scope="a", kinds=["fact"], threads=["runs"], k=50)
        assert only_runs and {h.thread for h in only_runs} == {"runs"}
        late = mem.search("anything", scope="a", kinds=["fact"], since=DAY + timedelta(days=1), k=50)
        assert {h.message_ids for h in late} == {("r1",)}
        not_c1 = mem.search("cat", scope="a", kinds=["fact"], exclude_message_ids=["c1"], k=50)
        assert all(h.message_ids != ("c1",) for h in not_c1)


def test_context_adds_dated_generated_memory_within_the_exact_budget(bag: sgmem.Embedder) -> None:
    cfg = sgmem.Config(derived=sgmem.DerivedConfig(context_kinds=("summary", "fact", "insight"), context_share=0.6))
    with sgmem.Memory(embedder=bag) as plain, sgmem.Memory(embedder=bag, config=cfg) as rich:
        _fill(plain)
        _fill(rich)
        assert "Facts:" not in plain.context("Tell me about the cat", scope="a", budget_tokens=400)
        block = rich.context("Tell me about the cat", scope="a", budget_tokens=400)
        assert "Session summaries:" in block and "Facts:" in block
        assert block.index("Relevant memories") < block.index("Session summaries:") < block.index("Facts:")
        assert "- 2024-03-01: Alice: I adopted a grey cat named Miso last spring." in block
        for budget in (30, 60, 120, 400):
            assert count_tokens(rich.context("Tell me about the cat", scope="a", budget_tokens=budget)) <= budget


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
