"""Versions of merged facts, and what a delete does to generated memory."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import sgmem

DAY = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
A = "Alice adopted a grey cat named Miso."
B = "Alice adopted a grey cat named Miso and she loves tuna fish."

# a wide Update band and a near-zero threshold: related sentences merge, identical ones are skipped
MERGING = sgmem.Config(gate=sgmem.GateConfig(mode="adaptive", tau0=0.0, tau_min=0.01, delta=0.49))


def _fact(mem: sgmem.Memory) -> sgmem.Hit:
    hits = mem.search("cat", scope="s", kinds=["fact"])
    assert len(hits) == 1
    return hits[0]


def test_an_update_merges_and_history_keeps_every_version(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag, config=MERGING) as mem:
        mem.add([{"id": "m1", "role": "user", "content": A}], scope="s", thread="t", at=DAY)
        r = mem.add([{"id": "m2", "role": "user", "content": B}], scope="s", thread="t", at=DAY + timedelta(days=1))
        assert r.facts_updated == 1
        fact = _fact(mem)
        # the LLM-free rule: B contains A after normalisation → the longer text is kept
        assert fact.text == f"user: {B}"
        assert fact.message_ids == ("m1", "m2") and fact.at == DAY + timedelta(days=1)
        versions = mem.history(fact.memory_id, scope="s")
        assert [(v.version, v.cause) for v in versions] == [(1, "add"), (2, "merge-rule")]
        assert versions[0].text == f"user: {A}" and versions[0].message_ids == ("m1",)
        assert versions[1].message_ids == ("m1", "m2") and versions[1].detail["candidate"] == f"user: {B}"
        assert versions[0].at == DAY and versions[0].recorded_at <= versions[1].recorded_at


def test_history_is_scoped_and_refuses_unknown_ids(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        mem.add([{"role": "user", "content": A}], scope="s", thread="t", at=DAY)
        fid = _fact(mem).memory_id
        assert fid is not None
        with pytest.raises(sgmem.NotFoundError):
            mem.history(fid, scope="other")
        with pytest.raises(sgmem.NotFoundError):
            mem.history("fact:999999", scope="s")
        with pytest.raises(sgmem.InvalidInputError):
            mem.history("cat", scope="s")


def test_deleting_the_merged_in_source_reverts_to_the_version_before_it(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag, config=MERGING) as mem:
        mem.add([{"id": "m1", "role": "user", "content": A}], scope="s", thread="t", at=DAY)
        mem.add([{"id": "m2", "role": "user", "content": B}], scope="s", thread="t", at=DAY)
        fid = _fact(mem).memory_id
        receipt = mem.delete(scope="s", message_ids=["m2"])
        assert receipt.derived_revised >= 1 and receipt.derived == 0
        fact = _fact(mem)
        assert fact.memory_id == fid and fact.text == f"user: {A}" and fact.message_ids == ("m1",)
        versions = mem.history(fid, scope="s")
        # the version holding m2's words is gone from the history too
        assert all("tuna" not in v.text for v in versions)
        assert [v.cause for v in versions] == ["add", "reverted"]


def test_a_fact_goes_when_its_last_source_goes(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        mem.add([{"id": "m1", "role": "user", "content": A}], scope="s", thread="t", at=DAY)
        mem.add([{"id": "m2", "role": "user", "content": "I am training for the Berlin marathon."}], scope="s", thread="u", at=DAY)
        before = mem.stats("s").scopes[0]
        receipt = mem.delete(scope="s", message_ids=["m1"])
        assert receipt.derived == 2  # its fact and its session's summary
        after = mem.stats("s").scopes[0]
        assert (before.facts, after.facts) == (2, 1)
        assert after.summaries == before.summaries - 1
        assert all("cat" not in h.text for h in mem.search("cat", scope="s", kinds=["fact", "summary"]))


def test_deleting_a_skipped_repeat_only_drops_its_link(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        mem.add([{"id": "m1", "role": "user", "content": A}], scope="s", thread="t", at=DAY)
        mem.add([{"id": "m2", "role": "user", "content": A}], scope="s", thread="t", at=DAY)
        assert _fact(mem).why["also_in"] == ["m2"]
        receipt = mem.delete(scope="s", message_ids=["m2"])
        fact = _fact(mem)
        assert fact.message_ids == ("m1",) and "also_in" not in fact.why
        assert receipt.derived == 0


def test_deleting_a_scope_removes_its_generated_memory_and_gate_state(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag) as mem:
        mem.add([{"role": "user", "content": A}], scope="s", thread="t", at=DAY)
        mem.add([{"role": "user", "content": A}], scope="keep", thread="t", at=DAY)
        receipt = mem.delete(scope="s")
        assert receipt.derived == 2 and receipt.total >= receipt.messages + 2
        assert mem.search("cat", scope="s", kinds=["fact"]) == []
        # a new stream in the emptied scope starts from a fresh gate (N = 0: the first fact is added)
        r = mem.add([{"role": "user", "content": A}], scope="s", thread="t", at=DAY)
        assert r.facts_added == 1
        assert mem.stats("s").scopes[0].gate["step"] == 1
        assert mem.stats("keep").scopes[0].facts == 1


@pytest.mark.parametrize("how", ["mean", "embed"])
def test_a_rule_merged_fact_gets_the_configured_vector(bag: sgmem.Embedder, how: str) -> None:
    import numpy as np

    cfg = MERGING.with_(derived=sgmem.DerivedConfig(rule_merge_vector=how))  # type: ignore[arg-type]
    a, b = "Alice adopted a grey cat named Miso.", "Her cat Miso loves tuna fish every single day."
    with sgmem.Memory(embedder=bag, config=cfg) as mem:
        mem.add([{"role": "user", "content": a}], scope="s", thread="t", at=DAY)
        r = mem.add([{"role": "user", "content": b}], scope="s", thread="t", at=DAY)
        fact = _fact(mem)
        state = mem._derived.cache(mem._store.scope_id("s")).state
    assert r.facts_updated == 1 and fact.text == f"user: {a} user: {b}"
    va, vb = bag.embed([f"user: {a}", f"user: {b}"])
    expected = bag.embed([fact.text])[0] if how == "embed" else (va + vb) / np.linalg.norm(va + vb)
    assert np.allclose(state.vectors[0], expected, atol=1e-5)
    assert r.embedded == (1 if how == "embed" else 0) + 1  # + the new sentence itself


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
