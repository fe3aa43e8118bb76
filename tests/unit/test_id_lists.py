"""Lists of ids: capped per call with a short error, and a dict is refused rather than taken as its keys.

``forget`` with 100,000 unknown ids returned a 1.09 MB error text to the model
(every missing id listed, no cap), and ids given as a dict were read as its keys.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sgmem
from sgmem.tools import MemoryTools

from .helpers import HashEmbedder

UNKNOWN = [f"no-such-id-{i:06d}" for i in range(100_000)]


@pytest.fixture
def mem() -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=HashEmbedder()) as m:
        m.add(
            [{"role": "user", "content": "I adopted a cat named Miso.", "id": "c1"},
             {"role": "user", "content": "My sister lives in Porto.", "id": "c2"}],
            scope="alice",
            thread="t",
        )  # fmt: skip
        yield m


def _stored(mem: sgmem.Memory) -> list[str | None]:
    return [m.id for m in mem.messages(scope="alice")]


def test_the_core_refuses_more_ids_than_the_limit_naming_the_setting(mem: sgmem.Memory) -> None:
    with pytest.raises(sgmem.LimitExceededError, match="max_ids_per_call") as err:
        mem.delete(scope="alice", message_ids=["c1", *UNKNOWN])
    assert len(str(err.value)) < 500 and "100001" in str(err.value)
    with pytest.raises(sgmem.LimitExceededError, match="max_ids_per_call"):
        mem.get(scope="alice", message_ids=iter(UNKNOWN))  # an iterator is not read through either
    assert _stored(mem) == ["c1", "c2"]
    small = sgmem.Config(limits=sgmem.Limits(max_ids_per_call=1))
    with sgmem.Memory(embedder=HashEmbedder(), config=small) as m:
        m.add({"role": "user", "content": "x", "id": "a"}, scope="s", thread="t")
        assert m.delete(scope="s", message_ids=["a"]).messages == 1


@pytest.mark.parametrize("ids", [{"c1": "anything"}, {"c1": 1, "c2": 2}])
def test_ids_given_as_a_dict_are_refused_not_taken_as_its_keys(mem: sgmem.Memory, ids: dict[str, object]) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="dict is not taken as its keys"):
        mem.delete(scope="alice", message_ids=ids)
    with pytest.raises(sgmem.InvalidInputError, match="message_ids"):
        MemoryTools(mem).forget("alice", ids)  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="message_ids"):
        mem.get(scope="alice", message_ids=ids)
    assert _stored(mem) == ["c1", "c2"]


@pytest.mark.parametrize("ids", [[b"c1"], [1, 2], [("c1",)], [None]])
def test_ids_of_other_types_are_refused(mem: sgmem.Memory, ids: list[object]) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="message_ids"):
        mem.delete(scope="alice", message_ids=ids)
    assert _stored(mem) == ["c1", "c2"]


def test_forget_with_100000_unknown_ids_answers_in_a_few_lines(mem: sgmem.Memory) -> None:
    tools = MemoryTools(mem)
    with pytest.raises(sgmem.LimitExceededError) as err:
        tools.forget("alice", ["c1", *UNKNOWN])
    assert len(str(err.value)) < 500 and "max_ids_per_call" in str(err.value)
    # under the cap, the ids not found are counted and a few are named
    with pytest.raises(sgmem.NotFoundError) as missing:
        tools.forget("alice", ["c1", *UNKNOWN[:9_000]])
    text = str(missing.value)
    assert len(text) < 600, len(text)
    assert "9000 of the 9001" in text and "no-such-id-000000" in text and "nothing was deleted" in text
    assert _stored(mem) == ["c1", "c2"]
