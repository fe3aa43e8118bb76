"""Bad input through the facade: a clear SgmemError, and nothing stored by the failing call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import sgmem

from .helpers import HashEmbedder, add_sample, snapshot

OK = {"role": "user", "content": "a perfectly fine message"}


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    """One store for the module: every test checks it is unchanged by a failing call."""
    with sgmem.Memory(embedder=embedder) as m:
        add_sample(m)
        yield m


def assert_rejected(mem: sgmem.Memory, call: Callable[[], Any], *needles: str) -> sgmem.SgmemError:
    before = snapshot(mem)
    with pytest.raises(sgmem.SgmemError) as err:
        call()
    msg = str(err.value)
    assert "received" in msg and "expected" in msg, msg
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    assert snapshot(mem) == before, "a failing call changed what is stored"
    return err.value


ADD_CASES: list[tuple[str, Any, dict[str, Any], tuple[str, ...]]] = [
    ("empty content", [{"role": "user", "content": ""}], {}, ("messages[0].content", "''")),
    ("blank content", [{"role": "user", "content": "   \n"}], {}, ("messages[0].content",)),
    ("non-string content", [{"role": "user", "content": 42}], {}, ("messages[0].content", "42")),
    ("None content", [{"role": "user", "content": None}], {}, ("messages[0].content", "None")),
    ("list content", [{"role": "user", "content": ["a", "b"]}], {}, ("messages[0].content",)),
    ("missing content", [{"role": "user"}], {}, ("messages[0].content",)),
    ("missing role", [{"content": "hi"}], {}, ("messages[0].role",)),
    ("unknown role", [{"role": "human", "content": "hi"}], {}, ("messages[0].role", "'human'")),
    ("unknown key", [{"role": "user", "content": "hi", "extra": 1}], {}, ("messages[0]", "metadata")),
    ("string instead of list", "hello", {}, ("messages",)),
    ("empty batch", [], {}, ("messages",)),
    ("int batch", 5, {}, ("messages",)),
    ("lone surrogate content", [{"role": "user", "content": "\ud800"}], {}, ("messages[0].content", "surrogate")),
    ("lone surrogate name", [{"role": "user", "content": "hi", "name": "A\udc00"}], {}, ("messages[0].name",)),
    ("lone surrogate metadata", [{"role": "user", "content": "hi", "metadata": {"k": "\ud800"}}], {}, ("metadata",)),
    ("metadata not a dict", [{"role": "user", "content": "hi", "metadata": [1]}], {}, ("messages[0].metadata",)),
    ("metadata not json", [{"role": "user", "content": "hi", "metadata": {"s": {1, 2}}}], {}, ("metadata",)),
    ("bad message time", [{"role": "user", "content": "hi", "at": "last tuesday"}], {}, ("messages[0].at",)),
    ("5 MB message", [{"role": "user", "content": "x" * 5_000_000}], {}, ("messages[0].content", "max_message_chars")),
    ("empty scope", [OK], {"scope": ""}, ("scope",)),
    ("blank scope", [OK], {"scope": "   "}, ("scope",)),
    ("None scope", [OK], {"scope": None}, ("scope",)),
    ("int scope", [OK], {"scope": 3}, ("scope",)),
    ("surrogate scope", [OK], {"scope": "\ud800"}, ("scope",)),
    ("empty thread", [OK], {"thread": ""}, ("thread",)),
    ("int thread", [OK], {"thread": 1}, ("thread",)),
    ("bad default time", [OK], {"at": "not a date"}, ("at",)),
    ("bad default time type", [OK], {"at": 1700000000}, ("at",)),
    (
        "bad message in the middle of a batch",
        [OK, {"role": "user", "content": "also fine"}, {"role": "user", "content": ""}, OK],
        {},
        ("messages[2].content",),
    ),
    (
        "duplicate ids within a batch",
        [{"role": "user", "content": "one", "id": "dup"}, {"role": "user", "content": "two", "id": "dup"}],
        {},
        ("messages[1].id", "'dup'"),
    ),
    (
        "id already stored in the scope",
        [{"role": "user", "content": "new one", "id": "new-1"}, {"role": "user", "content": "clash", "id": "c1"}],
        {},
        ("messages[].id", "c1"),
    ),
    (
        "id already stored in another thread of the scope",
        [{"role": "user", "content": "clash", "id": "r2"}],
        {"thread": "chat-9"},
        ("messages[].id", "r2"),
    ),
]


@pytest.mark.parametrize(("messages", "kwargs", "needles"), [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES])
def test_bad_add_raises_and_stores_nothing(
    mem: sgmem.Memory, messages: Any, kwargs: dict[str, Any], needles: tuple[str, ...]
) -> None:
    args = {"scope": "alice", "thread": "chat-1", **kwargs}
    assert_rejected(mem, lambda: mem.add(messages, **args), *needles)


def test_bad_input_into_a_new_scope_does_not_create_it(mem: sgmem.Memory) -> None:
    batch = [{"role": "user", "content": "ok", "id": "x"}, {"role": "user", "content": "ok", "id": "x"}]
    assert_rejected(mem, lambda: mem.add(batch, scope="brand-new", thread="t"))
    assert "brand-new" not in mem.scopes()
    assert mem.stats("brand-new").scopes == ()


def test_a_failed_add_leaves_the_store_usable(mem: sgmem.Memory) -> None:
    assert_rejected(mem, lambda: mem.add([{"role": "user", "content": "clash", "id": "c1"}], scope="alice", thread="t"))
    hits = mem.search("grey cat", scope="alice", k=3)
    assert hits and all(h.message_ids[0] != "clash" for h in hits)
    assert not any("clash" == h.text for h in mem.search("clash", scope="alice", k=20, mode="bm25"))


def test_a_huge_message_reports_its_size_and_the_limit(mem: sgmem.Memory) -> None:
    err = assert_rejected(mem, lambda: mem.add([{"role": "user", "content": "y" * 5_000_000}], scope="s", thread="t"))
    assert isinstance(err, sgmem.LimitExceededError)
    assert err.size == 5_000_000
    assert err.limit == sgmem.Limits().max_message_chars
    assert len(str(err)) < 500, "the error message must not echo the whole input"


SEARCH_CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("empty query", {"query": ""}, ("query",)),
    ("non-string query", {"query": 7}, ("query",)),
    ("surrogate query", {"query": "cat \ud800"}, ("query",)),
    ("k zero", {"k": 0}, ("k", "0")),
    ("k negative", {"k": -1}, ("k", "-1")),
    ("k float", {"k": 2.5}, ("k",)),
    ("k string", {"k": "3"}, ("k",)),
    ("k bool", {"k": True}, ("k",)),
    ("k above max_k", {"k": 10**9}, ("k",)),
    ("unknown mode", {"mode": "semantic"}, ("mode", "'semantic'")),
    ("mode wrong type", {"mode": 2}, ("mode",)),
    ("empty scope", {"scope": ""}, ("scope",)),
    ("threads as a number", {"threads": 5}, ("threads",)),  # a string is one thread (issue 12)
    ("threads with a number", {"threads": [1]}, ("threads[]",)),
    ("bad since", {"since": "whenever"}, ("since",)),
    ("bad until type", {"until": 3.0}, ("until",)),
    ("query too long", {"query": "q" * 20_001}, ("query", "max_query_chars")),
]


@pytest.mark.parametrize(("kwargs", "needles"), [c[1:] for c in SEARCH_CASES], ids=[c[0] for c in SEARCH_CASES])
def test_bad_search_raises(mem: sgmem.Memory, kwargs: dict[str, Any], needles: tuple[str, ...]) -> None:
    args = {"query": "cat", "scope": "alice", **kwargs}
    query = args.pop("query")
    assert_rejected(mem, lambda: mem.search(query, **args), *needles)


@pytest.mark.parametrize("budget", [0, -5, "100", 1.5, None, True])
def test_bad_context_budget_raises(mem: sgmem.Memory, budget: Any) -> None:
    assert_rejected(mem, lambda: mem.context("cat", scope="alice", budget_tokens=budget), "budget_tokens")


@pytest.mark.parametrize(
    "kwargs",
    [{"query": ""}, {"scope": ""}, {"mode": "fuzzy"}],
    ids=["empty query", "empty scope", "unknown mode"],
)
def test_bad_context_arguments_raise(mem: sgmem.Memory, kwargs: dict[str, Any]) -> None:
    args = {"query": "cat", "scope": "alice", **kwargs}
    query = args.pop("query")
    assert_rejected(mem, lambda: mem.context(query, **args))


@pytest.mark.parametrize(
    "kwargs",
    [{"limit": 0}, {"limit": -1}, {"limit": "2"}, {"scope": ""}, {"thread": ""}, {"thread": 3}],
)
def test_bad_messages_arguments_raise(mem: sgmem.Memory, kwargs: dict[str, Any]) -> None:
    args = {"scope": "alice", **kwargs}
    assert_rejected(mem, lambda: mem.messages(**args))


@pytest.mark.parametrize(
    "kwargs",
    [{"scope": ""}, {"scope": None}, {"thread": ""}, {"message_ids": "c1"}, {"message_ids": [1]}, {"message_ids": 5}],
    ids=["empty scope", "None scope", "empty thread", "ids as a string", "int id", "ids not a list"],
)
def test_bad_delete_raises_and_deletes_nothing(mem: sgmem.Memory, kwargs: dict[str, Any]) -> None:
    args = {"scope": "alice", **kwargs}
    assert_rejected(mem, lambda: mem.delete(**args))


def test_bad_threads_and_stats_scope_raise(mem: sgmem.Memory) -> None:
    assert_rejected(mem, lambda: mem.threads(scope=""))
    assert_rejected(mem, lambda: mem.stats(""))


def test_valid_queries_on_unknown_scopes_are_empty_not_errors(mem: sgmem.Memory) -> None:
    assert mem.search("cat", scope="nobody") == []
    assert mem.context("cat", scope="nobody") == ""
    assert mem.messages(scope="nobody") == []
    assert mem.threads(scope="nobody") == []
    assert mem.delete(scope="nobody").total == 0


def test_configured_limits_are_enforced_through_the_facade() -> None:
    limits = sgmem.Limits(
        max_sentences_per_add=3, max_k=5, max_query_chars=10, max_name_chars=8, max_messages_per_add=2
    )
    with sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(limits=limits)) as m:
        m.add({"role": "user", "content": "One. Two."}, scope="s", thread="t")
        five = {"role": "user", "content": "One. Two. Three. Four. Five."}
        err = assert_rejected(m, lambda: m.add(five, scope="s", thread="t"), "max_sentences_per_add")
        assert isinstance(err, sgmem.LimitExceededError)
        assert_rejected(m, lambda: m.add([OK] * 3, scope="s", thread="t"), "max_messages_per_add")
        assert_rejected(m, lambda: m.add(OK, scope="s", thread="t" * 9), "max_name_chars")
        assert_rejected(m, lambda: m.search("one", scope="s", k=6), "k")
        assert_rejected(m, lambda: m.search("x" * 11, scope="s"), "max_query_chars")
        assert len(m.search("one", scope="s", k=5)) == 1
