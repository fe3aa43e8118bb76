"""``Memory.insert``, ``set_thread``, ``pop`` and ``clear_thread``: thread edits planned on what they read, on both
backends.

(Races between two hosts, through the LlamaIndex chat store that uses them:
tests/integration/llama_index/test_li_chat_store_hosts.py and, with processes,
tests/reliability/test_chat_store_hosts.py.)
"""

from __future__ import annotations

import pytest

import sgmem

pytestmark = pytest.mark.both_backends


def _say(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": t} for t in texts]


def _texts(mem: sgmem.Memory, thread: str = "t") -> list[str]:
    return [m.content for m in mem.messages(scope="s", thread=thread)]


def test_insert_places_messages_like_list_insert(memory: sgmem.Memory) -> None:
    memory.add(_say("m0", "m1", "m2"), scope="s", thread="t")
    before = {m.id: m for m in memory.messages(scope="s", thread="t")}
    memory.insert(_say("a"), scope="s", thread="t", position=1)
    assert _texts(memory) == ["m0", "a", "m1", "m2"]
    after = memory.messages(scope="s", thread="t")
    for m in after[2:]:  # the moved tail keeps its ids, times and metadata
        assert (m.id, m.at, m.metadata) == (before[m.id].id, before[m.id].at, before[m.id].metadata)
    assert after[1].at == after[2].at  # dated like the message it precedes
    memory.insert(_say("b"), scope="s", thread="t", position=-1)
    memory.insert(_say("c"), scope="s", thread="t", position=99)
    memory.insert(_say("d"), scope="s", thread="t", position=-99)
    assert _texts(memory) == ["d", "m0", "a", "m1", "b", "m2", "c"]
    memory.insert(_say("e"), scope="s", thread="new", position=3)
    assert _texts(memory, "new") == ["e"]


def test_set_thread_keeps_the_stored_head_and_replaces_otherwise(memory: sgmem.Memory) -> None:
    memory.set_thread(_say("x", "y"), scope="s", thread="t")
    ids = [m.id for m in memory.messages(scope="s", thread="t")]
    memory.set_thread(_say("x", "y", "z"), scope="s", thread="t")
    after = memory.messages(scope="s", thread="t")
    assert [m.content for m in after] == ["x", "y", "z"] and [m.id for m in after[:2]] == ids
    memory.set_thread(_say("x", "y", "z"), scope="s", thread="t")  # already so: nothing changes
    assert memory.messages(scope="s", thread="t") == after
    memory.set_thread(_say("p"), scope="s", thread="t")
    assert _texts(memory) == ["p"]
    memory.set_thread([], scope="s", thread="t")
    assert _texts(memory) == [] and memory.threads(scope="s") == []


def test_bad_input_changes_nothing(memory: sgmem.Memory) -> None:
    memory.add(_say("m0", "m1"), scope="s", thread="t")
    before = memory.messages(scope="s")
    for call in (
        lambda: memory.insert([{"role": "wizard", "content": "x"}], scope="s", thread="t", position=0),
        lambda: memory.insert(_say("x"), scope="s", thread="t", position="1"),  # type: ignore[arg-type]
        lambda: memory.insert(_say("x"), scope="s", thread="t", position=True),
        lambda: memory.set_thread([{"role": "user"}], scope="s", thread="t"),
        lambda: memory.set_thread("not a list", scope="s", thread="t"),  # type: ignore[arg-type]
        lambda: memory.set_thread(_say("x"), scope="", thread="t"),
        lambda: memory.pop(scope="s", thread="t", position="0"),  # type: ignore[arg-type]
        lambda: memory.pop(scope="s", thread="t", position=False),
        lambda: memory.clear_thread(scope="s", thread=""),
    ):
        with pytest.raises(sgmem.InvalidInputError):
            call()
    assert memory.messages(scope="s") == before


def test_pop_and_clear_thread_delete_and_return_like_a_list(memory: sgmem.Memory) -> None:
    memory.add(_say("m0", "m1", "m2", "m3", "m4"), scope="s", thread="t")
    memory.add(_say("other"), scope="s", thread="u")
    popped = memory.pop(scope="s", thread="t")
    assert popped is not None and popped.content == "m4"
    assert [m.content for m in (memory.pop(scope="s", thread="t", position=p) for p in (0, 1, -2))] == [
        "m0",
        "m2",
        "m1",
    ]
    assert _texts(memory) == ["m3"]
    assert memory.pop(scope="s", thread="t", position=1) is None and _texts(memory) == ["m3"]
    assert memory.pop(scope="s", thread="none") is None and memory.pop(scope="nobody", thread="t") is None
    assert [m.content for m in memory.clear_thread(scope="s", thread="t")] == ["m3"]
    assert memory.clear_thread(scope="s", thread="t") == [] and memory.threads(scope="s") == ["u"]
    assert all(h.thread == "u" for h in memory.search("m2 m3", scope="s", k=5, min_score=0))


async def test_async_twins(memory: sgmem.Memory) -> None:
    await memory.aset_thread(_say("x", "z"), scope="s", thread="t")
    await memory.ainsert(_say("y"), scope="s", thread="t", position=1)
    assert _texts(memory) == ["x", "y", "z"]
    assert (await memory.apop(scope="s", thread="t", position=1)).content == "y"  # type: ignore[union-attr]
    assert [m.content for m in await memory.aclear_thread(scope="s", thread="t")] == ["x", "z"]
