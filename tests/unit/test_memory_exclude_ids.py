"""``exclude_message_ids`` on search and context: leave out what the prompt already holds."""

from __future__ import annotations

import pytest

import sgmem

from .helpers import CAT_IDS, add_sample

QUERY = "What is the name of my cat?"


@pytest.mark.parametrize("mode", sgmem.MODES)
def test_search_never_returns_excluded_messages(memory: sgmem.Memory, mode: str) -> None:
    add_sample(memory)
    before = memory.search(QUERY, scope="alice", k=8, mode=mode)
    assert before, "the sample must match the query"
    top = before[0].message_ids[0]
    after = memory.search(QUERY, scope="alice", k=8, mode=mode, exclude_message_ids=[top])
    assert all(top not in h.message_ids for h in after)
    excluded_all = memory.search(QUERY, scope="alice", k=8, mode=mode, exclude_message_ids=sorted(CAT_IDS))
    assert all(not set(h.message_ids) & CAT_IDS for h in excluded_all)


def test_context_leaves_out_excluded_messages(memory: sgmem.Memory) -> None:
    add_sample(memory)
    full = memory.context(QUERY, scope="alice", budget_tokens=400)
    assert "named Miso" in full
    without = memory.context(QUERY, scope="alice", budget_tokens=400, exclude_message_ids=["c1"])
    assert "named Miso" not in without and "tuna" in without
    assert (
        memory.context(QUERY, scope="alice", exclude_message_ids=["c1", "c2", "c3", "c4", "r1", "r2", "r3", "r4"]) == ""
    )


async def test_async_context_takes_the_exclusion_too(memory: sgmem.Memory) -> None:
    add_sample(memory)
    assert "named Miso" not in await memory.acontext(QUERY, scope="alice", exclude_message_ids=["c1"])
    hits = await memory.asearch(QUERY, scope="alice", exclude_message_ids=["c1"])
    assert all("c1" not in h.message_ids for h in hits)


def test_unknown_or_empty_exclusions_change_nothing(memory: sgmem.Memory) -> None:
    add_sample(memory)
    base = [h.message_ids for h in memory.search(QUERY, scope="alice", k=5)]
    assert [h.message_ids for h in memory.search(QUERY, scope="alice", k=5, exclude_message_ids=[])] == base
    assert [h.message_ids for h in memory.search(QUERY, scope="alice", k=5, exclude_message_ids=["nope"])] == base


@pytest.mark.parametrize("bad", ["c1", [""], [3], 7])
def test_bad_exclusions_are_clear_errors(memory: sgmem.Memory, bad: object) -> None:
    add_sample(memory)
    with pytest.raises(sgmem.InvalidInputError, match="exclude_message_ids"):
        memory.search(QUERY, scope="alice", exclude_message_ids=bad)  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="exclude_message_ids"):
        memory.context(QUERY, scope="alice", exclude_message_ids=bad)  # type: ignore[arg-type]


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
