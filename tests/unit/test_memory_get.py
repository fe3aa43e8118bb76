"""Memory.get: direct lookup of stored messages by id (used by the LangGraph store adapter)."""

from __future__ import annotations

import pytest

import sgmem

from .helpers import DAY1, add_sample


def test_get_returns_the_stored_messages_in_added_order(memory: sgmem.Memory) -> None:
    add_sample(memory)
    got = memory.get(scope="alice", message_ids=["r3", "c1", "c3"])
    assert [m.id for m in got] == ["c1", "c3", "r3"]  # order of addition, not of the request
    by_id = {m.id: m for m in memory.messages(scope="alice")}
    assert got == [by_id["c1"], by_id["c3"], by_id["r3"]]  # same replay as messages()


def test_get_skips_unknown_ids_and_scopes(memory: sgmem.Memory) -> None:
    add_sample(memory)
    assert [m.id for m in memory.get(scope="alice", message_ids=["nope", "c2"])] == ["c2"]
    assert memory.get(scope="alice", message_ids=[]) == []
    assert memory.get(scope="bob", message_ids=["c1"]) == []  # scopes never mix


def test_get_replays_metadata_exactly(memory: sgmem.Memory) -> None:
    meta = {"nested": {"a": [1, 2.5, None, "x"]}, "flag": True}
    memory.add({"role": "user", "content": "hello", "id": "m1", "metadata": meta}, scope="s", thread="t", at=DAY1)
    (m,) = memory.get(scope="s", message_ids=["m1"])
    assert m.metadata == meta and m.thread == "t" and m.at == DAY1


def test_get_handles_many_ids(memory: sgmem.Memory) -> None:
    ids = [f"m{i}" for i in range(3)]
    memory.add([{"role": "user", "content": f"note {i}", "id": i_} for i, i_ in enumerate(ids)], scope="s", thread="t")
    asked = [f"x{i}" for i in range(1200)] + ids  # more than one SQL chunk
    assert [m.id for m in memory.get(scope="s", message_ids=asked)] == ids


@pytest.mark.parametrize("message_ids", ["c1", None, 3, [""], [None]])
def test_get_rejects_bad_ids(memory: sgmem.Memory, message_ids: object) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="message_ids"):
        memory.get(scope="alice", message_ids=message_ids)  # type: ignore[arg-type]


async def test_aget_matches_get(memory: sgmem.Memory) -> None:
    add_sample(memory)
    assert await memory.aget(scope="alice", message_ids=["c1"]) == memory.get(scope="alice", message_ids=["c1"])


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
