"""Async twins: same answers as the sync calls, and the event loop keeps running."""

from __future__ import annotations

import asyncio

import pytest

import sgmem

from .helpers import CAT_THREAD, DAY1, RUN_THREAD, HashEmbedder, LoopGate, add_sample


async def test_async_twins_return_what_the_sync_calls_return(embedder: sgmem.Embedder) -> None:
    off = sgmem.Config(min_relevance=0.0)  # the filtered search below looks for a cat where there is none
    with sgmem.Memory(embedder=embedder, config=off) as sync_mem, sgmem.Memory(embedder=embedder, config=off) as async_mem:
        add_sample(sync_mem)
        r1 = await async_mem.aadd([dict(m) for m in CAT_THREAD], scope="alice", thread="chat-1", at=DAY1)
        assert isinstance(r1, sgmem.AddResult) and r1.message_ids == tuple(m["id"] for m in CAT_THREAD)
        await async_mem.aadd([dict(m) for m in RUN_THREAD], scope="alice", thread="chat-2", at="2024-03-08T18:30:00Z")

        assert await async_mem.amessages(scope="alice") == sync_mem.messages(scope="alice")
        assert await async_mem.amessages(scope="alice", thread="chat-2", limit=2) == sync_mem.messages(
            scope="alice", thread="chat-2", limit=2
        )
        for mode in ("vector", "graph", "bm25", "hybrid"):
            a = await async_mem.asearch("what does my cat eat", scope="alice", k=3, mode=mode)
            s = sync_mem.search("what does my cat eat", scope="alice", k=3, mode=mode)
            assert [(h.message_ids, round(h.score, 5)) for h in a] == [(h.message_ids, round(h.score, 5)) for h in s]
        filtered = await async_mem.asearch("cat", scope="alice", threads=["chat-2"], mode="vector")
        assert filtered and all(h.thread == "chat-2" for h in filtered)
        assert await async_mem.acontext("cat", scope="alice", budget_tokens=300) == sync_mem.context(
            "cat", scope="alice", budget_tokens=300
        )
        assert (await async_mem.astats("alice")).scopes == sync_mem.stats("alice").scopes
        receipt = await async_mem.adelete(scope="alice", message_ids=["c1"])
        assert receipt == sync_mem.delete(scope="alice", message_ids=["c1"])
        assert await async_mem.amessages(scope="alice") == sync_mem.messages(scope="alice")


async def test_async_errors_are_the_sync_errors(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="content"):
        await memory.aadd([{"role": "user", "content": ""}], scope="s", thread="t")
    with pytest.raises(sgmem.InvalidInputError, match="k"):
        await memory.asearch("x", scope="s", k=0)
    with pytest.raises(sgmem.InvalidInputError, match="budget_tokens"):
        await memory.acontext("x", scope="s", budget_tokens=0)
    assert (await memory.astats()).messages == 0


async def test_the_event_loop_is_not_blocked_while_adding() -> None:
    gate = LoopGate(HashEmbedder())  # each embedding waits until the loop has ticked meanwhile (no clock)
    with sgmem.Memory(embedder=gate) as mem:
        task = asyncio.create_task(gate.ticker())
        try:
            await mem.aadd({"role": "user", "content": "slow to embed"}, scope="s", thread="t")
        finally:
            task.cancel()
        assert gate.waits and all(gate.waits), "the loop did not run while the add embedded"


async def test_concurrent_async_calls_are_consistent(memory: sgmem.Memory) -> None:
    await asyncio.gather(
        *(
            memory.aadd(
                {"role": "user", "content": f"Note number {i} about topic {i}.", "id": f"n{i}"},
                scope="s",
                thread=f"t{i % 2}",
            )
            for i in range(6)
        )
    )
    msgs = await memory.amessages(scope="s")
    assert sorted(m.id for m in msgs) == [f"n{i}" for i in range(6)]
    results = await asyncio.gather(*(memory.asearch(f"topic {i}", scope="s", k=6, mode="bm25") for i in range(6)))
    assert all(r for r in results)
    stats = await memory.astats("s")
    assert stats.scopes[0].chronological_edges == 6 - 2  # two threads of three


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
