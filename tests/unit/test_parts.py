"""Parts of a message over ``max_message_chars``: verbatim slices, joined only when the whole run is there."""

from __future__ import annotations

import dataclasses

import sgmem
from sgmem.parts import PART_KEY, join_parts, split_message


def test_parts_are_verbatim_slices_and_join_back_to_the_message() -> None:
    limits = sgmem.Limits(max_message_chars=10)
    item = {"role": "user", "content": "abcdefghij" * 2 + "xyz", "id": "m1", "metadata": {"k": 1}}
    parts = split_message(item, limits)
    assert [p["content"] for p in parts] == ["abcdefghij", "abcdefghij", "xyz"]
    assert [p.get("id") for p in parts] == ["m1", "m1~part1", "m1~part2"]
    assert parts[0]["metadata"]["k"] == 1 and "k" not in parts[1]["metadata"]
    assert split_message({"role": "user", "content": "short"}, limits) == [{"role": "user", "content": "short"}]
    stored = [sgmem.Message(role=p["role"], content=p["content"], id=p["id"], metadata=p["metadata"]) for p in parts]
    other = sgmem.Message(role="assistant", content="ok")
    [joined, after] = join_parts([*stored, other])
    assert (joined.content, joined.id, joined.metadata, after) == (item["content"], "m1", {"k": 1}, other)


def test_a_run_missing_a_part_stays_as_its_parts() -> None:
    parts = split_message({"role": "user", "content": "x" * 25}, sgmem.Limits(max_message_chars=10))
    stored = [sgmem.Message(role="user", content=p["content"], metadata=p["metadata"]) for p in parts]
    assert join_parts([stored[0], stored[2]]) == [stored[0], stored[2]]
    assert PART_KEY in dataclasses.asdict(join_parts(stored[:2])[0])["metadata"]
