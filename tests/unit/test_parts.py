"""Parts of a message over ``max_message_chars``: verbatim slices, joined only when the whole run is there."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgmem
from sgmem.parts import PART_KEY, join_parts, split_message

from .helpers import HashEmbedder


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


def _parts_of(content: str, cap: int) -> list[str]:
    return [
        p["content"] for p in split_message({"role": "user", "content": content}, sgmem.Limits(max_message_chars=cap))
    ]


def test_no_part_is_blank_so_every_part_can_be_stored() -> None:
    """A message of exactly max_message_chars plus a newline made a last part "\\n", which ``Memory.add`` refuses
    (a blank message); so did any slice that fell inside white space."""
    for content in ("x" * 10 + "\n", "x" * 10 + "\n\n \t", "abc   " + " " * 5 + "defghijklmnop", " " * 9 + "x" * 12):
        parts = _parts_of(content, 10)
        assert "".join(parts) == content
        assert all(p.strip() and len(p) <= 10 for p in parts), parts
        with sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(limits=sgmem.Limits(max_message_chars=10))) as m:
            m.add([{"role": "user", "content": p} for p in parts], scope="s", thread="t")  # each part stores


def test_white_space_as_long_as_a_part_is_a_documented_limit() -> None:
    """White space about twice max_message_chars long leaves a part with nothing: such a message is refused, saying
    so, rather than stored with a blank part (which the store would refuse half-way)."""
    with pytest.raises(sgmem.InvalidInputError, match="white space") as err:
        _parts_of("start" + " " * 20 + "end", 10)
    assert not _can_be_cut("start" + " " * 20 + "end", 10)
    assert "max_message_chars" in str(err.value)


def _can_be_cut(content: str, cap: int) -> bool:
    """Whether ``content`` splits into consecutive non-blank parts of at most ``cap`` characters (every way tried)."""
    n = len(content)
    ok = [False] * n + [True]  # ok[i]: content[i:] can be cut so
    for i in range(n - 1, -1, -1):
        ok[i] = any(ok[j] and content[i:j].strip() for j in range(i + 1, min(i + cap, n) + 1))
    return ok[0]


@given(st.text(alphabet="ab \n\t", min_size=1, max_size=60))
@settings(max_examples=400, deadline=None)
def test_parts_join_back_are_never_blank_and_only_impossible_cuts_are_refused(content: str) -> None:
    cap = 7
    if not content.strip():
        return
    try:
        parts = _parts_of(content, cap)
    except sgmem.InvalidInputError:
        # only white space half as long as a part can make it refused (the documented limit)
        assert re.search(rf"\s{{{cap // 2}}}", content), content
        return
    assert "".join(parts) == content
    assert all(p.strip() for p in parts) and all(len(p) <= cap for p in parts)
