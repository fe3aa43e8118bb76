"""Memory.messages / threads / scopes: exact replay of what was added."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import sgmem

from .helpers import CAT_THREAD, DAY1, RUN_THREAD


def test_replay_is_exact_and_in_order(memory: sgmem.Memory) -> None:
    cest = timezone(timedelta(hours=2))
    sent = [
        {
            "role": "user",
            "content": "  Leading spaces, ünïcödé, emoji 🐈 and a trailing newline\n",
            "name": "Ålice",
            "id": "u-1",
            "at": datetime(2024, 7, 1, 12, 30, 15, 123456, tzinfo=cest),
            "metadata": {"nested": {"list": [1, 2.5, None, True, "x"]}, "ünï": "cödé", "empty": {}},
        },
        {"role": "assistant", "content": "Second.", "id": "a-1", "at": "2024-07-01T10:31:00Z"},
        {"role": "tool", "content": '{"result": 42}', "name": "calculator", "id": "t-1", "at": DAY1},
        {"role": "system", "content": "Be brief.", "id": "s-1", "at": DAY1},
    ]
    memory.add(sent, scope="s", thread="chat")
    got = memory.messages(scope="s")
    assert [m.id for m in got] == ["u-1", "a-1", "t-1", "s-1"]
    for m, g in zip(sent, got, strict=True):
        assert g.role == m["role"]
        assert g.content == m["content"]
        assert g.name == m.get("name")
        assert g.metadata == m.get("metadata", {})
        assert g.thread == "chat"
    assert got[0].at == sent[0]["at"] and got[0].at.utcoffset() == timedelta(hours=2)
    assert got[1].at == datetime(2024, 7, 1, 10, 31, tzinfo=timezone.utc)


def test_replayed_messages_can_be_added_again_elsewhere(memory: sgmem.Memory) -> None:
    memory.add([dict(m) for m in CAT_THREAD], scope="a", thread="t", at=DAY1)
    memory.add(memory.messages(scope="a"), scope="b", thread="t")
    strip = [(m.role, m.content, m.name, m.id, m.at, m.metadata) for m in memory.messages(scope="a")]
    assert [(m.role, m.content, m.name, m.id, m.at, m.metadata) for m in memory.messages(scope="b")] == strip


def test_thread_filter(sample_memory: sgmem.Memory) -> None:
    assert [m.id for m in sample_memory.messages(scope="alice", thread="chat-2")] == [m["id"] for m in RUN_THREAD]
    assert sample_memory.messages(scope="alice", thread="no-such-thread") == []


@pytest.mark.parametrize("limit", [1, 3, 8, 50])
def test_limit_returns_the_most_recent_oldest_first(sample_memory: sgmem.Memory, limit: int) -> None:
    everything = [m.id for m in sample_memory.messages(scope="alice")]
    assert [m.id for m in sample_memory.messages(scope="alice", limit=limit)] == everything[-limit:]


def test_limit_with_a_thread(sample_memory: sgmem.Memory) -> None:
    got = sample_memory.messages(scope="alice", thread="chat-1", limit=2)
    assert [m.id for m in got] == [m["id"] for m in CAT_THREAD[-2:]]


def test_replay_follows_insertion_order_not_timestamps(memory: sgmem.Memory) -> None:
    memory.add({"role": "user", "content": "later", "at": "2024-02-01"}, scope="s", thread="t")
    memory.add({"role": "user", "content": "earlier", "at": "2024-01-01"}, scope="s", thread="t")
    assert [m.content for m in memory.messages(scope="s")] == ["later", "earlier"]


def test_threads_in_order_of_first_message(memory: sgmem.Memory) -> None:
    memory.add({"role": "user", "content": "x"}, scope="s", thread="zeta")
    memory.add({"role": "user", "content": "y"}, scope="s", thread="alpha")
    memory.add({"role": "user", "content": "z"}, scope="s", thread="zeta")
    assert memory.threads(scope="s") == ["zeta", "alpha"]


def test_scopes_lists_scopes_with_messages(memory: sgmem.Memory) -> None:
    assert memory.scopes() == []
    memory.add({"role": "user", "content": "x"}, scope="bob", thread="t")
    memory.add({"role": "user", "content": "y"}, scope="alice", thread="t")
    assert sorted(memory.scopes()) == ["alice", "bob"]


def test_to_dict_round_trip_fields() -> None:
    m = sgmem.Message(role="user", content="hi", name="A", id="1", at=DAY1, thread="t", session="s", metadata={"k": 1})
    d = m.to_dict()
    assert d == {
        "role": "user",
        "content": "hi",
        "name": "A",
        "id": "1",
        "at": DAY1.isoformat(),
        "thread": "t",
        "session": "s",
        "metadata": {"k": 1},
    }
    d["metadata"]["k"] = 2
    assert m.metadata == {"k": 1}


def test_stats_count_what_was_added(sample_memory: sgmem.Memory, backend: str) -> None:
    stats = sample_memory.stats()
    if backend == "postgres":  # the server's URL (any password masked)
        assert stats.path is not None and stats.path.startswith("postgresql://")
    else:
        assert stats.path is None
    assert stats.embedder == sample_memory.embedder.name
    assert stats.dim == sample_memory.embedder.dim
    assert stats.schema_version >= 1
    [alice] = stats.scopes
    assert alice.scope == "alice"
    assert alice.messages == stats.messages == len(CAT_THREAD) + len(RUN_THREAD)
    assert alice.threads == 2
    assert alice.sentences == stats.sentences > 0


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
