"""Memory.add_many: many adds in one call, the same store as one add per item, one embedding pass."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sgmem

from .helpers import HashEmbedder

AT = datetime(2024, 3, 1, 12, tzinfo=timezone.utc)


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[str]] = []

    def embed(self, texts: Any) -> np.ndarray:
        self.seen.append(list(texts))
        return super().embed(texts)


def _items() -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for a in range(6):
        msgs = [
            {"role": "user", "content": f"I visited lake number {a} with my dog. It rained a lot.", "at": AT},
            {"role": "assistant", "content": f"Lake {a} sounds lovely! Did the dog swim?", "at": AT},
            {"role": "user", "content": "Yes, he swam every day. The water was cold.", "at": AT},
        ]
        out.append((f"thread-{a % 2}", msgs))
    return out


def _state(mem: sgmem.Memory) -> Any:
    st = mem.stats("s").scopes[0]
    msgs = [(m.thread, m.role, m.content, m.session) for m in mem.messages(scope="s")]
    hits = {mode: [h.text for h in mem.search("cold water dog", scope="s", mode=mode)] for mode in sgmem.MODES if mode != "entity"}  # entity: opt-in layer, off here
    return st.messages, st.sentences, st.similarity_edges, st.chronological_edges, msgs, hits


@pytest.mark.both_backends
def test_add_many_stores_what_one_add_per_item_stores(store_path: Path | str) -> None:
    with sgmem.Memory(embedder=HashEmbedder()) as one:
        for thread, msgs in _items():
            one.add(msgs, scope="s", thread=thread)
        want = _state(one)
    emb = CountingEmbedder()
    with sgmem.Memory(store_path, embedder=emb) as many:
        results = many.add_many(_items(), scope="s")
        calls = list(emb.seen)
        assert [r.messages for r in results] == [3] * 6
        assert _state(many) == want
    # every new text was embedded in one call, shortest first, each distinct text once
    assert len(calls) == 1
    texts = calls[0]
    assert len(texts) == len(set(texts)) and [len(t) for t in texts] == sorted(len(t) for t in texts)
    assert sum(r.embedded for r in results) == len(texts)


def test_dict_items_and_times() -> None:
    with sgmem.Memory(embedder=HashEmbedder()) as mem:
        mem.add_many(
            [
                {
                    "thread": "a",
                    "messages": [{"role": "user", "content": "First thing."}],
                    "at": "2024-01-02T00:00:00Z",
                },
                {"thread": "b", "messages": [{"role": "user", "content": "Second thing."}]},
            ],
            scope="s",
            at="2023-05-05T00:00:00Z",
        )
        got = {m.thread: m.at.year for m in mem.messages(scope="s")}
        assert got == {"a": 2024, "b": 2023}


@pytest.mark.parametrize(
    "items, name",
    [
        ([("t", [{"role": "user", "content": "ok"}]), ("t", [{"role": "nobody", "content": "bad role"}])], "role"),
        (
            [
                ("t", [{"role": "user", "content": "ok", "id": "x"}]),
                ("u", [{"role": "user", "content": "dup", "id": "x"}]),
            ],
            "id",
        ),
        ([("t", [{"role": "user", "content": "ok"}]), {"thread": "u"}], "items[1]"),
        ([("t", [{"role": "user", "content": "ok"}]), ("", [{"role": "user", "content": "no thread"}])], "thread"),
        ("not a list", "items"),
    ],
)
def test_bad_input_anywhere_stores_nothing(items: Any, name: str) -> None:
    with sgmem.Memory(embedder=HashEmbedder()) as mem:
        mem.add([{"role": "user", "content": "before", "id": "kept"}], scope="s", thread="t")
        with pytest.raises(sgmem.InvalidInputError, match=name.replace("[", r"\[").replace("]", r"\]")):
            mem.add_many(items, scope="s")
        assert [m.content for m in mem.messages(scope="s")] == ["before"]


def test_an_id_already_in_the_scope_stores_nothing() -> None:
    with sgmem.Memory(embedder=HashEmbedder()) as mem:
        mem.add([{"role": "user", "content": "before", "id": "x"}], scope="s", thread="t")
        with pytest.raises(sgmem.InvalidInputError, match="already stored"):
            mem.add_many(
                [("u", [{"role": "user", "content": "new"}]), ("v", [{"role": "user", "content": "x", "id": "x"}])],
                scope="s",
            )
        assert len(mem.messages(scope="s")) == 1


def test_texts_the_scope_already_holds_are_not_embedded_again() -> None:
    emb = CountingEmbedder()
    with sgmem.Memory(embedder=emb) as mem:
        mem.add([{"role": "user", "content": "The water was cold."}], scope="s", thread="t")
        emb.seen.clear()
        mem.add_many([("u", [{"role": "user", "content": "The water was cold. Brr."}])], scope="s")
        assert [t for c in emb.seen for t in c] == ["user: Brr."]
