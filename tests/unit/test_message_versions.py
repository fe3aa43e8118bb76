"""``Memory.edit`` and ``Memory.versions``: an edited message is replaced in place and its earlier text is kept,
on both backends; forgetting the message forgets its earlier texts too."""

from __future__ import annotations

import pytest

import sgmem
from sgmem.errors import InvalidInputError, NotFoundError

pytestmark = pytest.mark.both_backends

CHAT = [
    {"role": "user", "content": "We found a flat in Lyon.", "id": "m1", "at": "2024-03-01T09:00:00Z"},
    {"role": "assistant", "content": "What is the deposit?", "id": "m2", "at": "2024-03-01T09:01:00Z"},
    {"role": "user", "content": "The deposit is 6000 euros.", "id": "m3", "at": "2024-03-01T09:02:00Z"},
    {"role": "assistant", "content": "Noted.", "id": "m4", "at": "2024-03-01T09:03:00Z"},
    {"role": "user", "content": "Thanks!", "id": "m5", "at": "2024-03-01T09:04:00Z", "metadata": {"k": 1}},
]


def _rows(mem: sgmem.Memory) -> list[tuple[str | None, str]]:
    return [(m.id, m.content) for m in mem.messages(scope="s", thread="t")]


def test_an_edit_replaces_the_text_in_place_and_keeps_the_old_one(memory: sgmem.Memory) -> None:
    memory.add(CHAT, scope="s", thread="t")
    before = memory.messages(scope="s", thread="t")
    memory.edit({"m3": {"content": "The deposit is 7000 euros."}}, scope="s", thread="t")
    after = memory.messages(scope="s", thread="t")
    assert [m.content for m in after] == [m["content"] for m in CHAT[:2]] + [
        "The deposit is 7000 euros.",
        "Noted.",
        "Thanks!",
    ]
    # in place: the order, the ids, the times, sessions and metadata are the stored ones
    assert [(m.id, m.at, m.session, m.metadata) for m in after] == [(m.id, m.at, m.session, m.metadata) for m in before]
    versions = memory.versions("m3", scope="s")
    assert [(v.version, v.content, v.replaced_at is None) for v in versions] == [
        (1, "The deposit is 6000 euros.", False),
        (2, "The deposit is 7000 euros.", True),
    ]
    assert versions[0].at == before[2].at and versions[0].id == "m3"
    hits = memory.search("How much is the deposit?", scope="s", k=3)
    assert any("7000" in h.text for h in hits) and not any("6000" in h.text for h in hits)
    assert [v.content for v in memory.versions("m1", scope="s")] == ["We found a flat in Lyon."]


def test_edits_chain_and_survive_later_thread_edits(memory: sgmem.Memory) -> None:
    memory.add(CHAT, scope="s", thread="t")
    memory.edit({"m3": {"content": "The deposit is 7000 euros."}}, scope="s", thread="t")
    memory.edit({"m3": {"content": "The deposit is 8000 euros.", "id": "m3b"}}, scope="s", thread="t")
    memory.insert([{"role": "user", "content": "Hello."}], scope="s", thread="t", position=0)  # re-adds every row
    memory.edit({"m1": {"content": "We found a flat in Lyon, near the river."}}, scope="s", thread="t")
    v = memory.versions("m3b", scope="s")
    assert [(x.id, x.content) for x in v] == [
        ("m3", "The deposit is 6000 euros."),
        ("m3", "The deposit is 7000 euros."),
        ("m3b", "The deposit is 8000 euros."),
    ]
    with pytest.raises(NotFoundError):
        memory.versions("m3", scope="s")
    assert [x.content for x in memory.versions("m1", scope="s")][0] == "We found a flat in Lyon."


def test_edit_appends_in_the_same_call_and_refuses_bad_input(memory: sgmem.Memory) -> None:
    memory.add(CHAT, scope="s", thread="t")
    memory.edit(
        {"m4": {"content": "Noted: 7000."}}, scope="s", thread="t", append=[{"role": "user", "content": "Bye."}]
    )
    assert _rows(memory)[-3:] == [("m4", "Noted: 7000."), ("m5", "Thanks!"), (_rows(memory)[-1][0], "Bye.")]
    before = _rows(memory)
    with pytest.raises(InvalidInputError, match="nope"):
        memory.edit({"nope": {"content": "x"}}, scope="s", thread="t")
    with pytest.raises(InvalidInputError):
        memory.edit({"m1": {"content": ""}}, scope="s", thread="t")
    with pytest.raises(InvalidInputError):
        memory.edit({"m1": {"text": "typo'd field"}}, scope="s", thread="t")
    assert _rows(memory) == before
    assert len(memory.versions("m1", scope="s")) == 1


def test_forgetting_a_message_forgets_its_earlier_texts(memory: sgmem.Memory) -> None:
    memory.add(CHAT, scope="s", thread="t")
    memory.add(CHAT[:1], scope="other", thread="t")
    memory.edit({"m3": {"content": "The deposit is 7000 euros."}}, scope="s", thread="t")
    memory.edit({"m1": {"content": "A flat in Paris."}}, scope="other", thread="t")
    memory.delete(scope="s", message_ids=["m3"])
    with pytest.raises(NotFoundError):
        memory.versions("m3", scope="s")
    conn = memory._store.conn
    left = conn.execute("SELECT content FROM message_versions").fetchall()
    assert [r[0] for r in left] == ["We found a flat in Lyon."]  # the other scope's; none of the deleted one's
    memory.delete(scope="other")
    assert conn.execute("SELECT COUNT(*) FROM message_versions").fetchone()[0] == 0
