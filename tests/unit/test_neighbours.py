"""Memory.neighbours: a message's sentences and what each is linked to in the scope's sentence graph, and why."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

import sgmem

CAMPING = [
    {"role": "user", "name": "Ana", "content": "Where should we go this weekend?", "id": "a1"},
    {
        "role": "user",
        "name": "Ana",
        "content": "My sister bought a red tent for the camping trip in June. It sleeps four.",
        "id": "a2",
    },
    {"role": "assistant", "content": "Sounds fun, enjoy the mountains!", "id": "a3"},
]
COOKING = [
    {"role": "user", "name": "Ana", "content": "I baked sourdough bread with rye flour today.", "id": "b1"},
    {"role": "user", "name": "Ana", "content": "My sister bought a red tent for our camping trip in June.", "id": "b2"},
]


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as memory:
        memory.add(CAMPING, scope="ana", thread="trips", at="2024-06-01T10:00:00Z")
        memory.add(COOKING, scope="ana", thread="kitchen", at="2024-06-20T18:00:00Z")
        memory.add([{"role": "user", "content": "A private note of Bob's.", "id": "z1"}], scope="bob", thread="t")
        yield memory


def test_a_near_duplicate_in_another_thread_is_the_top_similarity_link(mem: sgmem.Memory) -> None:
    links = mem.neighbours("a2", scope="ana")
    tent = [link for link in links if link.sentence.startswith("My sister bought a red tent")]
    similar = [link for link in tent if link.kind == "similarity"]
    assert similar, "the near-duplicate sentence of the other thread is linked"
    best = similar[0]
    assert (best.message_id, best.thread) == ("b2", "kitchen")
    assert best.text == "My sister bought a red tent for our camping trip in June."
    assert best.speaker == "Ana" and best.at.date().isoformat() == "2024-06-20"
    assert best.cosine > 0.9 and not best.same_session
    assert [link.cosine for link in similar] == sorted((link.cosine for link in similar), reverse=True)
    assert best.position == 0 and best.direction is None


def test_chronological_and_same_turn_links_follow_the_thread(mem: sgmem.Memory) -> None:
    links = mem.neighbours("a2", scope="ana")
    chain = {(link.direction, link.message_id, link.text) for link in links if link.kind == "chronological"}
    assert chain == {
        ("previous", "a1", "Where should we go this weekend?"),  # the previous turn's last sentence
        ("next", "a3", "Sounds fun, enjoy the mountains!"),  # the next turn's first sentence
    }
    assert all(link.same_session and link.thread == "trips" for link in links if link.kind != "similarity")
    same = [link for link in links if link.kind == "same turn"]
    assert [(link.position, link.text) for link in same] == [(0, "It sleeps four.")]
    first = [link for link in links if link.kind == "chronological" and link.direction == "previous"][0]
    assert first.position == 0  # the chain joins the first sentence to the turn before
    last = [link for link in links if link.kind == "chronological" and link.direction == "next"][0]
    assert (last.position, last.sentence) == (1, "It sleeps four.")


def test_the_cosine_is_that_of_the_two_sentence_vectors(mem: sgmem.Memory, embedder: sgmem.Embedder) -> None:
    link = next(x for x in mem.neighbours("a2", scope="ana") if x.kind == "similarity")
    a, b = embedder.embed([link.sentence, link.text])
    assert link.cosine == pytest.approx(float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b)), abs=0.02)


def test_limit_caps_the_similarity_links_of_each_sentence(mem: sgmem.Memory) -> None:
    links = mem.neighbours("a2", scope="ana", limit=1)
    per_sentence = [sum(1 for x in links if x.kind == "similarity" and x.position == p) for p in (0, 1)]
    assert max(per_sentence) == 1
    assert {x.kind for x in links} == {"similarity", "chronological", "same turn"}


def test_another_scopes_message_is_not_found(mem: sgmem.Memory) -> None:
    with pytest.raises(sgmem.NotFoundError, match="'z1'"):
        mem.neighbours("z1", scope="ana")
    with pytest.raises(sgmem.NotFoundError, match="'a2'"):
        mem.neighbours("a2", scope="bob")
    with pytest.raises(sgmem.NotFoundError):
        mem.neighbours("a2", scope="nobody")
    assert mem.neighbours("z1", scope="bob") == []  # one sentence, no neighbour in its own scope


@pytest.mark.parametrize(
    ("args", "field"),
    [((None, "ana", 5), "message_id"), (("a2", "", 5), "scope"), (("a2", "ana", 0), "limit")],
)
def test_bad_arguments_name_the_argument(mem: sgmem.Memory, args: tuple, field: str) -> None:
    message_id, scope, limit = args
    with pytest.raises(sgmem.InvalidInputError, match=field):
        mem.neighbours(message_id, scope=scope, limit=limit)


def test_the_async_twin_returns_the_same(mem: sgmem.Memory) -> None:
    assert asyncio.run(mem.aneighbours("a2", scope="ana")) == mem.neighbours("a2", scope="ana")
