"""Replace is one transaction: a bad value, a limit, a failing embedder or a SIGKILL leaves the old
messages exactly as they were (the rows of every table, byte for byte), or the new ones: never neither.

The kill test reuses the crash tests' writer (``crash_writer.py`` in its ``replace`` mode) and
their kill-and-check helpers.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sgmem

from . import strategies as s
from .conftest import record_figure
from .crash_writer import REPLACE_SCOPE, REPLACE_THREAD, rbatch
from .helpers import FastEmbedder, observable, raw_dump
from .test_crash import _check_sqlite, _run_and_kill

EMB = FastEmbedder()
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
OLD = [
    {"id": "existing", "role": "user", "name": "Ann", "content": "I keep bees on the roof.", "metadata": {"n": 1}},
    {"id": "m0", "role": "assistant", "content": "How many hives do you have? Three, I think."},
    {"id": "m1", "role": "user", "content": "Four hives now, and a small honey press."},
]
OTHER = [{"id": "o1", "role": "user", "content": "A different thread about sailing."}]
LIMITS = sgmem.Limits(max_message_chars=300, max_messages_per_add=4, max_sentences_per_add=6, max_name_chars=40)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class FailingEmbedder(FastEmbedder):
    """The fast embedder, failing on any text that contains ``EXPLODE`` (a model or network error)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("EXPLODE" in t for t in texts):
            raise RuntimeError("embedding service unavailable")
        return super().embed(texts)


def _open(path: Path, embedder: Any = EMB) -> sgmem.Memory:
    return sgmem.Memory(path, embedder=embedder, config=sgmem.Config(limits=LIMITS))


def _filled(path: Path, embedder: Any = EMB) -> sgmem.Memory:
    mem = _open(path, embedder)
    mem.add(OLD, scope="base", thread="t", at=T0)
    mem.add(OTHER, scope="base", thread="u", at=T0)
    mem.search("bees", scope="base")  # a warm cache the failed call must not disturb
    return mem


def _state(mem: sgmem.Memory, path: Path) -> tuple[Any, ...]:
    return observable(mem), mem.messages(scope="base", thread="t"), raw_dump(path)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[sgmem.Memory, Path]]:
    path = tmp_path / "store"
    with _filled(path) as mem:
        yield mem, path


BAD_CALLS: dict[str, dict[str, Any]] = {
    "role": {"messages": [{"role": "critic?", "content": "x"}]},
    "content type": {"messages": [{"role": "user", "content": 42}]},
    "empty content": {"messages": [{"role": "user", "content": "   "}]},
    "lone surrogate": {"messages": [{"role": "user", "content": "bad \ud800 text"}]},
    "int metadata key": {"messages": [{"role": "user", "content": "x", "metadata": {"a": {2: "b"}}}]},
    "tuple in metadata": {"messages": [{"role": "user", "content": "x", "metadata": {"a": {1, 2}}}]},
    "NaN metadata": {"messages": [{"role": "user", "content": "x", "metadata": {"v": float("nan")}}]},
    "a string": {"messages": "just a string"},
    "bad time": {"messages": [{"role": "user", "content": "x", "at": "2024-02-30"}]},
    "bad at": {"messages": [{"role": "user", "content": "x"}], "at": "yesterday"},
    "dup ids in the call": {
        "messages": [{"role": "user", "content": "x", "id": "d"}, {"role": "user", "content": "y", "id": "d"}]
    },
    "id of a kept message": {"messages": [{"role": "user", "content": "x", "id": "o1"}]},
    "id kept by message_ids": {"messages": [{"role": "user", "content": "x", "id": "m0"}], "message_ids": ["m1"]},
    "scope": {"messages": [{"role": "user", "content": "x"}], "scope": ""},
    "thread": {"messages": [{"role": "user", "content": "x"}], "thread": None},
    "message_ids a string": {"messages": [{"role": "user", "content": "x"}], "message_ids": "m0"},
    "message_ids junk": {"messages": [{"role": "user", "content": "x"}], "message_ids": [None]},
    # sgmem.Limits
    "max_message_chars": {"messages": [{"role": "user", "content": "word " * 70}]},
    "max_messages_per_add": {"messages": [{"role": "user", "content": f"m{i}"} for i in range(5)]},
    "max_sentences_per_add": {"messages": [{"role": "user", "content": "One. Two. Three. Four. Five. Six. Seven."}]},
    "max_name_chars (id)": {"messages": [{"role": "user", "content": "x", "id": "i" * 41}]},
    "max_name_chars (thread)": {"messages": [{"role": "user", "content": "x"}], "thread": "t" * 41},
    "max_name_chars (message_ids)": {"messages": [{"role": "user", "content": "x"}], "message_ids": ["i" * 41]},
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_a_refused_replace_leaves_the_old_messages_byte_for_byte(store: tuple[sgmem.Memory, Path], name: str) -> None:
    mem, path = store
    call = {"scope": "base", "thread": "t", **BAD_CALLS[name]}
    before = _state(mem, path)
    with pytest.raises(sgmem.SgmemError) as info:
        mem.replace(call.pop("messages"), **call)
    assert str(info.value).strip()
    if name.startswith("max_"):
        assert name.split(" ")[0] in str(info.value)
    assert _state(mem, path) == before
    assert {i for h in mem.search("bees hives honey", scope="base", k=10) for i in h.message_ids} >= {"existing", "m1"}


@pytest.mark.parametrize("message_ids", [None, ["m0", "m1"]])
def test_a_failing_embedder_leaves_the_old_messages(tmp_path: Path, message_ids: Any) -> None:
    path = tmp_path / "store"
    with _filled(path, FailingEmbedder()) as mem:
        before = _state(mem, path)
        new = [{"role": "user", "content": "fine"}, {"role": "user", "content": "EXPLODE now"}]
        with pytest.raises(RuntimeError, match="unavailable"):
            mem.replace(new, scope="base", thread="t", message_ids=message_ids)
        assert _state(mem, path) == before


@SETTINGS
@given(messages=s.messages, thread=st.one_of(st.just("t"), s.names), ids=st.one_of(st.just(["m0"]), s.name_lists))
@example(messages=[{"role": "user", "content": "x", "id": "m0"}], thread="t", ids=["m0"])
@example(messages=[], thread="t", ids=None)
def test_replace_stores_the_new_messages_or_refuses_and_changes_nothing(messages: Any, thread: Any, ids: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp, _filled(Path(tmp) / "s") as mem:
        before = _state(mem, Path(tmp) / "s")
        try:
            res = mem.replace(messages, scope="base", thread=thread, message_ids=ids)
        except Exception as exc:  # noqa: BLE001 - the property is about which exceptions
            assert isinstance(exc, sgmem.SgmemError), f"{type(exc).__name__} escaped: {exc!r}"
            assert _state(mem, Path(tmp) / "s") == before
            return
        stored = mem.messages(scope="base", thread=thread)
        assert res.messages == len(res.message_ids)
        assert [m.id for m in stored][len(stored) - res.messages :] == list(res.message_ids)
        gone = {m.id for m in before[1]} if ids is None and thread == "t" else set(ids or ()) & {"existing", "m0", "m1"}
        left = {m.id for m in mem.messages(scope="base")} - set(res.message_ids)
        assert not gone & left
        assert res.replaced is not None and res.replaced.messages == len(gone)


# ------------------------------------------------------------------------ adapters
li_llms = pytest.importorskip("llama_index.core.llms")
llama_index_sgmem = pytest.importorskip("llama_index_sgmem")


def _chat(mem: sgmem.Memory) -> Any:
    store = llama_index_sgmem.SGMemChatStore(memory=mem, scope="base")
    store.set_messages("k", [li_llms.ChatMessage(role="user", content=f"Note {i}: bees and hives.") for i in range(3)])
    return store


ADAPTER_CALLS: dict[str, Any] = {
    "set_messages over max_messages_per_add": lambda st_: st_.set_messages(
        "k", [li_llms.ChatMessage(role="user", content=f"n{i}") for i in range(5)]
    ),
    "set_messages over max_message_chars": lambda st_: st_.set_messages(
        "k", [li_llms.ChatMessage(role="user", content="word " * 70)]
    ),
    "set_messages over max_sentences_per_add": lambda st_: st_.set_messages(
        "k", [li_llms.ChatMessage(role="user", content="One. Two. Three. Four. Five. Six. Seven.")]
    ),
    "set_messages with a bad value": lambda st_: st_.set_messages(
        "k", [li_llms.ChatMessage(role="user", content="ok"), li_llms.ChatMessage(role="user", content="bad \ud800")]
    ),
    "add_message(idx) over max_sentences_per_add": lambda st_: st_.add_message(
        "k", li_llms.ChatMessage(role="user", content="One. Two. Three. Four."), idx=0
    ),
    "add_message(idx) with a bad value": lambda st_: st_.add_message(
        "k", li_llms.ChatMessage(role="user", content="bad \ud800"), idx=1
    ),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(ADAPTER_CALLS))
def test_a_refused_chat_store_rewrite_keeps_the_history(tmp_path: Path, name: str) -> None:
    path = tmp_path / "store"
    with _open(path) as mem:
        chat = _chat(mem)
        before = (chat.get_messages("k"), raw_dump(path))
        with pytest.raises(sgmem.SgmemError):
            ADAPTER_CALLS[name](chat)
        assert (chat.get_messages("k"), raw_dump(path)) == before


@pytest.mark.integration
def test_an_insert_that_makes_the_tail_too_long_keeps_the_history(tmp_path: Path) -> None:
    """add_message(idx=0) rewrites the 4 stored messages plus the new one: 5 > max_messages_per_add."""
    path = tmp_path / "store"
    with _open(path) as mem:
        chat = _chat(mem)
        chat.add_message("k", li_llms.ChatMessage(role="assistant", content="Noted."))
        before = (chat.get_messages("k"), raw_dump(path))
        with pytest.raises(sgmem.LimitExceededError, match="max_messages_per_add"):
            chat.add_message("k", li_llms.ChatMessage(role="user", content="First!"), idx=0)
        assert (chat.get_messages("k"), raw_dump(path)) == before
        chat.add_message("k", li_llms.ChatMessage(role="user", content="Inserted."), idx=3)
        assert [m.content for m in chat.get_messages("k")][3:] == ["Inserted.", "Noted."]


# ---------------------------------------------------------------------- SIGKILL
@pytest.mark.slow
def test_a_replace_killed_at_random_points_leaves_the_old_or_the_new_value(tmp_path: Path) -> None:
    """The writer replaces one thread again and again (by thread, and by ids reusing the same ids); after
    each SIGKILL the thread holds exactly the last value reported or the next one, whole."""
    store, log = tmp_path / "store", tmp_path / "writer.log"
    rng = random.Random(20240602)
    plan = [("replace", rng.uniform(0.05, 1.0)) for _ in range(10)] + [("replace,tx:2", 0.0) for _ in range(5)]
    rng.shuffle(plan)
    first, kills, in_tx, t0 = 0, 0, 0, time.monotonic()
    last_reported = -1
    for fault, delay in plan:
        added, marker = _run_and_kill(store, first, fault, delay, log)
        # a run that reported nothing started after the value now stored (first - 1), which it may
        # have replaced by one commit it was killed before reporting
        last_reported = max(added, default=first - 1)
        if not (store / "sgmem.db").exists():
            continue
        _check_sqlite(store)
        with sgmem.Memory(store, embedder=EMB) as mem:
            got = mem.messages(scope=REPLACE_SCOPE, thread=REPLACE_THREAD)
            values = {int(m.content.split("val")[1].split("x")[0]) for m in got}
            if last_reported < 0 and not got:
                continue  # killed before the first replace committed
            assert len(values) == 1, f"a mix of values (or none) after a kill: {sorted(values)}"
            v = values.pop()
            if marker.startswith("INTX"):
                in_tx += 1
                assert v == last_reported, "a replace killed inside its transaction was committed"
            assert v in (last_reported, last_reported + 1), (v, last_reported)
            want = rbatch(v)
            assert [(m.id, m.content, m.metadata) for m in got] == [
                (w["id"], w["content"], w["metadata"]) for w in want
            ]
            hits = mem.search(f"val{v}x", scope=REPLACE_SCOPE, k=10, mode="bm25")
            assert {i for h in hits for i in h.message_ids} == {w["id"] for w in want}
            stale = mem.search(f"val{v - 1}x", scope=REPLACE_SCOPE, k=10, mode="bm25") if v > 0 else []
            assert not [h for h in stale if f"val{v - 1}x" in h.text]
        first = v + 1
        kills += 1
    assert kills >= 12 and in_tx >= 4
    record_figure(
        "crash: replace kill points survived",
        f"{kills} (inside the transaction, after its delete {in_tx}); never an empty or mixed thread; "
        f"{time.monotonic() - t0:.1f}s",
    )
