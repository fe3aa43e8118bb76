"""Both backends accept and refuse the same inputs, with the same SgmemError (issue 29, item 5).

Run on the embedded SQLite store and on PostgreSQL (``both_backends``). A NUL
character (U+0000), which PostgreSQL's text cannot hold, is refused by
validation on both, before anything is written: messages replay verbatim, so
neither backend stores an altered copy of what was added.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import sgmem

from .helpers import HashEmbedder, snapshot

pytestmark = pytest.mark.both_backends


@pytest.fixture
def mem(store_path: Any) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(store_path, embedder=HashEmbedder(), config=sgmem.Config(min_relevance=0)) as m:
        m.add([{"role": "user", "content": "a message before", "id": "m0"}], scope="s", thread="t")
        yield m


NUL_CALLS = {
    "content": lambda m: m.add([{"role": "user", "content": "a\x00b"}], scope="s", thread="t"),
    "second message": lambda m: m.add(
        [{"role": "user", "content": "fine"}, {"role": "assistant", "content": "nul \x00 here"}], scope="s", thread="t"
    ),
    "new scope": lambda m: m.add([{"role": "user", "content": "\x00"}], scope="fresh", thread="t"),
    "replace": lambda m: m.replace([{"role": "user", "content": "x\x00"}], scope="s", thread="t"),
    "query": lambda m: m.search("a\x00b", scope="s"),
    "context": lambda m: m.context("a\x00b", scope="s"),
    "scope": lambda m: m.add([{"role": "user", "content": "ok"}], scope="s\x00", thread="t"),
    "id": lambda m: m.add([{"role": "user", "content": "ok", "id": "i\x00"}], scope="s", thread="t"),
}


@pytest.mark.parametrize("call", list(NUL_CALLS), ids=list(NUL_CALLS))
def test_a_nul_character_is_refused_and_nothing_is_stored(mem: sgmem.Memory, call: str) -> None:
    before = snapshot(mem)
    with pytest.raises(sgmem.InvalidInputError, match="NUL") as err:
        NUL_CALLS[call](mem)
    assert "received" in str(err.value) and "expected" in str(err.value)
    assert snapshot(mem) == before


def test_text_around_a_nul_s_neighbours_is_stored_verbatim(mem: sgmem.Memory) -> None:
    """Other control characters and escapes are stored and replayed exactly, on both backends."""
    text = "tab\there\r\nbell\x07 \\x00 literal \u2028 and \U0001f600"
    mem.add([{"role": "user", "content": text, "id": "m1", "metadata": {"k": "v\x00"}}], scope="s", thread="t")
    (got,) = mem.get(scope="s", message_ids=["m1"])
    assert got.content == text and got.metadata == {"k": "v\x00"}


def test_a_very_long_token_is_stored_on_both_backends(store_path: Any) -> None:
    """A 6,000-character token (a hash, a blob, a long URL) is no keyword or entity name: PostgreSQL's indexes
    would refuse it, so neither backend indexes it, and both store and replay the message."""
    import random
    import string

    rng = random.Random(1)  # random, so that PostgreSQL cannot compress it under its index's row size
    blob = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(6000))
    texts = [blob, f"Look at https://example.com/{blob} please", f"Meet {blob.capitalize()} Smith tomorrow"]
    config = sgmem.Config(min_relevance=0, entities=sgmem.EntityConfig(enabled=True))
    with sgmem.Memory(store_path, embedder=HashEmbedder(), config=config) as mem:
        mem.add([{"role": "user", "content": t} for t in texts], scope="s", thread="t")
        assert [m.content for m in mem.messages(scope="s")] == texts
        for mode in ("hybrid", "entity"):
            assert mem.search("Smith tomorrow", scope="s", mode=mode) is not None


def test_names_at_their_limit_in_four_byte_characters_are_stored_on_both_backends(store_path: Any) -> None:
    """Scope, thread, session, id and speaker of ``max_name_chars`` emoji (2 KB each): every index row still fits
    PostgreSQL's btree, so both backends store the add (its generated memory included) and replay it."""
    import random

    rng = random.Random(2)
    limit = sgmem.Limits().max_name_chars

    def name() -> str:  # random, so that PostgreSQL cannot compress an index row under its limit
        return "".join(chr(rng.randrange(0x1F300, 0x1F5FF)) for _ in range(limit))

    scope, thread, session, mid, speaker = name(), name(), name(), name(), name()
    config = sgmem.Config(min_relevance=0, entities=sgmem.EntityConfig(enabled=True))
    with sgmem.Memory(store_path, embedder=HashEmbedder(), config=config) as mem:
        for s in (session, None):  # an explicit session, and the thread's day (its name holds the thread's)
            mem.add(
                [
                    {"role": "user", "content": "I adopted a cat named Miso.", "session": s, "name": speaker},
                    {
                        "role": "assistant",
                        "content": "Miso is a lovely name.",
                        "session": s,
                        "id": str(s)[:1] + mid[1:],
                    },
                ],
                scope=scope,
                thread=thread,
            )
        got = mem.messages(scope=scope)
        assert [(m.thread, m.name) for m in got[::2]] == [(thread, speaker)] * 2 and got[1].id == session[:1] + mid[1:]
        assert mem.stats(scope=scope).scopes[0].facts >= 1


def test_a_table_dropped_by_hand_is_a_store_error_and_the_call_stores_nothing(store_path: Any, backend: str) -> None:
    """No driver error reaches a caller on either backend: a schema changed by hand is a StoreError."""
    with sgmem.Memory(store_path, embedder=HashEmbedder()) as mem:
        mem.add([{"role": "user", "content": "before"}], scope="s", thread="t")
        if backend == "postgres":
            import psycopg

            with psycopg.connect(store_path, autocommit=True) as other:
                other.execute("DROP TABLE turn_edges")
        else:
            import sqlite3

            other = sqlite3.connect(str(store_path / "sgmem.db"))
            other.execute("DROP TABLE turn_edges")
            other.commit()
            other.close()
        with pytest.raises(sgmem.StoreError, match="turn_edges") as err:
            mem.add([{"role": "user", "content": "after"}], scope="s", thread="t")
        assert type(err.value).__module__.startswith("sgmem")
        assert [m.content for m in mem.messages(scope="s")] == ["before"]
