"""Hostile input at every public entry point of the core: a clear SgmemError, and nothing changed.

Property-based: for any input hypothesis can build, a call either succeeds (and then did
exactly what it says: an add replays verbatim) or raises :class:`sgmem.SgmemError` with a
message — never ``TypeError``, ``OverflowError``, ``sqlite3.Error``... — and the store reads
the same as before. The number of examples tried per entry point is recorded for the report.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sgmem

from . import strategies as s
from .conftest import record_figure
from .helpers import FastEmbedder, observable

EXAMPLES: Counter[str] = Counter()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EMB = FastEmbedder()
EDGE_TIMES = [
    datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),  # after the last UTC instant
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),  # before the first UTC instant
]


def _deep(n: int) -> dict[str, object]:
    d: dict[str, object] = {}
    for _ in range(n):
        d = {"d": d}
    return d


DEEP = _deep(5000)
BASE = [
    {"id": "existing", "role": "user", "name": "Ann", "content": "I keep bees on the roof.", "metadata": {"n": 1}},
    {"id": "m0", "role": "assistant", "content": "How many hives do you have?"},
]


def _fresh() -> sgmem.Memory:
    mem = sgmem.Memory(embedder=EMB)
    mem.add(BASE, scope="base", thread="t", at=datetime(2024, 1, 1, tzinfo=timezone.utc))
    return mem


@pytest.fixture(scope="module")
def shared() -> Iterator[sgmem.Memory]:
    """One populated store for the read-only entry points (they must never change it)."""
    mem = _fresh()
    yield mem
    mem.close()


def _as_list(messages: Any) -> list[Any]:
    return [messages] if isinstance(messages, (dict, sgmem.Message)) else list(messages)


def _field(m: Any, key: str) -> Any:
    return getattr(m, key) if isinstance(m, sgmem.Message) else m.get(key)


def _expect_error(exc: BaseException) -> None:
    assert isinstance(exc, sgmem.SgmemError), f"{type(exc).__name__} escaped: {exc!r}"
    assert str(exc).strip(), "an error without a message"


# ----------------------------------------------------------------------------- add
@SETTINGS
@given(messages=s.messages, scope=st.one_of(st.just("base"), s.names), thread=s.names, at=s.times)
@example(messages={"role": "user", "content": "x", 1: 2, "extra": 3}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "x", "metadata": {1: "a", "1": "b"}}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "x", "metadata": {"a": {2: "b"}}}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "x"}, scope="s", thread="t", at=EDGE_TIMES[0])
@example(messages={"role": "user", "content": "x", "at": EDGE_TIMES[1]}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "x"}, scope="s", thread="t", at="9999-12-31T23:00:00-05:00")
@example(messages={"role": "user", "content": "x"}, scope="s", thread="t", at=datetime(9999, 12, 31, 23, 59))
@example(messages={"role": "user", "content": "x"}, scope="s", thread="t", at=datetime(1, 1, 1))
@example(messages={"role": "user", "content": "x", "metadata": {"v": float("nan")}}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "x", "metadata": {"v": [math.inf]}}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "lone \ud800 surrogate"}, scope="s", thread="t", at=None)
@example(messages={"role": "user", "content": "x"}, scope="s\udfff", thread="t", at=None)
@example(messages={"role": "user", "content": "a\x00b"}, scope="s", thread="t", at=None)
@example(
    messages=[{"role": "user", "content": "x", "id": "dup"}, {"role": "user", "content": "y", "id": "dup"}],
    scope="s",
    thread="t",
    at=None,
)
@example(messages=[{"role": "user", "content": "x", "id": "existing"}], scope="base", thread="t", at=None)
@example(messages={"role": "user", "content": "x"}, scope="s", thread="t", at=float("nan"))
def test_add_stores_verbatim_or_refuses_and_changes_nothing(messages: Any, scope: Any, thread: Any, at: Any) -> None:
    EXAMPLES["Memory.add"] += 1
    with _fresh() as mem:
        before = observable(mem)
        try:
            res = mem.add(messages, scope=scope, thread=thread, at=at)
        except Exception as exc:  # noqa: BLE001 - the property is about which exceptions
            _expect_error(exc)
            assert observable(mem) == before
            return
        sent = _as_list(messages)
        stored = mem.messages(scope=scope)[-len(sent) :]
        assert res.messages == len(sent) == len(stored)
        for m, got in zip(sent, stored, strict=True):
            assert got.content == _field(m, "content") and got.role == _field(m, "role")
            assert got.name == _field(m, "name") and got.thread == thread
            if _field(m, "id") is not None:
                assert got.id == _field(m, "id")
            # metadata comes back exactly as JSON says it went in
            assert got.metadata == json.loads(json.dumps(_field(m, "metadata") or {}))
            assert got.at.tzinfo is not None
        assert len({m.id for m in mem.messages(scope=scope)}) == len(mem.messages(scope=scope))
        mem.search(str(_field(sent[0], "content")), scope=scope)


def test_deeply_nested_metadata_is_refused_clearly() -> None:
    """Too deep for JSON: a clear error (whose own message stays short), not a RecursionError."""
    with _fresh() as mem:
        before = observable(mem)
        with pytest.raises(sgmem.InvalidInputError, match="metadata") as info:
            mem.add({"role": "user", "content": "x", "metadata": DEEP}, scope="s", thread="t")
        assert len(str(info.value)) < 400
        assert observable(mem) == before


# -------------------------------------------------------------------------- reads
@SETTINGS
@given(
    query=st.one_of(s.any_text, s.valid_text, s.junk),
    scope=st.one_of(st.just("base"), s.names),
    k=s.ints,
    mode=s.modes,
    threads=s.name_lists,
    since=s.times,
    until=s.times,
    exclude=s.name_lists,
)
def test_search_returns_hits_of_the_scope_or_refuses(
    shared: sgmem.Memory, query: Any, scope: Any, k: Any, mode: Any, threads: Any, since: Any, until: Any, exclude: Any
) -> None:
    EXAMPLES["Memory.search"] += 1
    before = observable(shared)
    try:
        hits = shared.search(
            query, scope=scope, k=k, mode=mode, threads=threads, since=since, until=until, exclude_message_ids=exclude
        )
    except Exception as exc:  # noqa: BLE001
        _expect_error(exc)
    else:
        assert len(hits) <= k
        for h in hits:
            assert isinstance(h, sgmem.Hit) and math.isfinite(h.score)
            assert set(h.message_ids) <= ({"existing", "m0"} if scope == "base" else set())
    assert observable(shared) == before


@SETTINGS
@given(
    query=st.one_of(s.any_text, s.valid_text, s.junk),
    scope=st.one_of(st.just("base"), s.names),
    budget=s.ints,
    mode=s.modes,
    exclude=s.name_lists,
)
def test_context_fits_its_budget_or_refuses(
    shared: sgmem.Memory, query: Any, scope: Any, budget: Any, mode: Any, exclude: Any
) -> None:
    EXAMPLES["Memory.context"] += 1
    from sgmem.text.tokens import count_tokens

    before = observable(shared)
    try:
        text = shared.context(query, scope=scope, budget_tokens=budget, mode=mode, exclude_message_ids=exclude)
    except Exception as exc:  # noqa: BLE001
        _expect_error(exc)
    else:
        assert isinstance(text, str) and count_tokens(text) <= budget
    assert observable(shared) == before


@pytest.mark.parametrize("call", ["messages", "get", "threads", "stats"])
@SETTINGS
@given(
    scope=st.one_of(st.just("base"), s.names),
    thread=st.one_of(st.none(), st.just("t"), s.names),
    limit=st.one_of(st.none(), s.ints),
    ids=s.name_lists,
)
def test_read_calls_answer_or_refuse(
    shared: sgmem.Memory, call: str, scope: Any, thread: Any, limit: Any, ids: Any
) -> None:
    EXAMPLES[f"Memory.{call}"] += 1
    before = observable(shared)
    try:
        if call == "messages":
            out: Any = shared.messages(scope=scope, thread=thread, limit=limit)
            assert all(isinstance(m, sgmem.Message) for m in out)
        elif call == "get":
            out = shared.get(scope=scope, message_ids=ids)
            assert {m.id for m in out} <= set(ids if isinstance(ids, list) else [])
        elif call == "threads":
            out = shared.threads(scope=scope)
            assert out == (["t"] if scope == "base" else [])
        else:
            out = shared.stats(scope)
            assert out.messages == (2 if scope in ("base", None) else 0)
    except Exception as exc:  # noqa: BLE001
        _expect_error(exc)
    assert observable(shared) == before


# ------------------------------------------------------------------------- delete
@SETTINGS
@given(
    scope=st.one_of(st.just("base"), s.names),
    thread=st.one_of(st.none(), st.just("t"), s.names),
    ids=st.one_of(st.just(["existing"]), s.name_lists),
)
def test_delete_removes_only_what_it_names_or_refuses(scope: Any, thread: Any, ids: Any) -> None:
    EXAMPLES["Memory.delete"] += 1
    with _fresh() as mem:
        before = observable(mem)
        try:
            receipt = mem.delete(scope=scope, thread=thread, message_ids=ids)
        except Exception as exc:  # noqa: BLE001
            _expect_error(exc)
            assert observable(mem) == before
            return
        left = {m.id for m in mem.messages(scope="base")}
        assert receipt.messages == 2 - len(left)
        if receipt.messages == 0:
            assert observable(mem) == before
        else:
            assert scope == "base" and thread in (None, "t")
            assert ids is None or left == {"existing", "m0"} - set(ids)


# -------------------------------------------------------------------- construction
class _Emb:
    def __init__(self, name: Any, dim: Any, out: Any) -> None:
        self.name, self.dim, self._out = name, dim, out

    def embed(self, texts: Any) -> Any:
        return self._out(len(texts)) if callable(self._out) else self._out


_outputs = st.sampled_from(
    [
        lambda n: np.ones((n, 8), dtype=np.float32),
        lambda n: np.full((n, 8), np.nan, dtype=np.float32),
        lambda n: np.ones((n, 7), dtype=np.float32),
        lambda n: np.ones((n + 1, 8)),
        lambda n: [[1.0] * 8] * n,
        lambda n: "not an array",
        None,
        lambda n: np.zeros((n, 8)),
    ]
)


@SETTINGS
@given(name=st.one_of(st.just("ok-embedder"), s.names), dim=st.one_of(st.just(8), s.ints), out=_outputs)
def test_a_misbehaving_embedder_gives_a_clear_error(name: Any, dim: Any, out: Any) -> None:
    EXAMPLES["Memory(embedder=...)"] += 1
    try:
        mem = sgmem.Memory(embedder=_Emb(name, dim, out))
    except Exception as exc:  # noqa: BLE001
        _expect_error(exc)
        return
    with mem:
        try:
            mem.add({"role": "user", "content": "hello there"}, scope="s", thread="t")
        except Exception as exc:  # noqa: BLE001
            _expect_error(exc)
            assert mem.stats().messages == 0
            return
        assert mem.search("hello", scope="s", mode="vector")


_config_fields = st.sampled_from(
    [
        "default_mode",
        "embed_batch_size",
        "busy_timeout_s",
        "speaker_prefix",
        "session_by_day",
        "context_turn_tokens",
        "graph",
        "hybrid",
        "limits",
    ]
)


@SETTINGS
@given(
    field=_config_fields,
    value=st.one_of(s.junk, st.integers(-3, 3), st.floats(allow_nan=True), s.modes),
    limit=st.sampled_from(
        [
            "max_message_chars",
            "max_messages_per_add",
            "max_sentences_per_add",
            "max_query_chars",
            "max_k",
            "max_name_chars",
        ]
    ),
    limit_value=s.ints,
)
def test_bad_configuration_is_refused_when_built(field: str, value: Any, limit: str, limit_value: Any) -> None:
    EXAMPLES["Config / Limits"] += 1
    for build in (lambda: sgmem.Config(**{field: value}), lambda: sgmem.Limits(**{limit: limit_value})):
        try:
            build()
        except Exception as exc:  # noqa: BLE001
            _expect_error(exc)
            assert isinstance(exc, sgmem.ConfigError)


@pytest.mark.parametrize(
    "path",
    [42, b"bytes-path", ["a"], "bad\x00path", "x" * 5000],
    ids=["int", "bytes", "list", "nul", "too-long"],
)
def test_a_bad_store_path_gives_a_clear_error(tmp_path: Any, path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sgmem.SgmemError, match="path"):
        sgmem.Memory(path, embedder=EMB)
    assert list(tmp_path.iterdir()) == []


def test_zz_record_examples() -> None:
    for name, n in sorted(EXAMPLES.items()):
        record_figure(f"hypothesis examples: {name}", n)
    assert EXAMPLES["Memory.add"] >= 100


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.aadd({"role": "robot", "content": "x"}, scope="s", thread="t"),
        lambda m: m.aadd({"role": "user", "content": "x"}, scope="s", thread="t", at=float("nan")),
        lambda m: m.asearch("", scope="base"),
        lambda m: m.asearch("bees", scope="base", k=0),
        lambda m: m.acontext("bees", scope="base", budget_tokens=-1),
        lambda m: m.amessages(scope=None),
        lambda m: m.aget(scope="base", message_ids="existing"),
        lambda m: m.adelete(scope="base", message_ids="existing"),
        lambda m: m.astats(scope=""),
    ],
    ids=[
        "aadd-role",
        "aadd-nan-time",
        "asearch-empty",
        "asearch-k",
        "acontext-budget",
        "amessages-scope",
        "aget-ids-str",
        "adelete-ids-str",
        "astats-scope",
    ],
)
async def test_async_twins_refuse_bad_input_the_same_way(call: Any) -> None:
    with _fresh() as mem:
        before = observable(mem)
        with pytest.raises(sgmem.InvalidInputError):
            await call(mem)
        assert observable(mem) == before
