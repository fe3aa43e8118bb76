"""SGMemStore.put on an existing key is one transaction: a refused value, a limit or a SIGKILL
leaves the old value exactly as it was (every row of every table, byte for byte), or the new one.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp

import sgmem
from langchain_sgmem import SGMemStore
from langchain_sgmem._store_query import MAX_VALUE_DEPTH

from .conftest import record_figure
from .helpers import FastEmbedder, raw_dump
from .store_writer import KEYS, NAMESPACE, value
from .test_crash import _check_sqlite

EMB = FastEmbedder()
ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("store_writer.py")
LIMITS = sgmem.Limits(max_message_chars=300, max_messages_per_add=3, max_name_chars=60)
OLD = {"text": "Alice keeps bees on the roof.", "tags": ["bees", "roof"], "n": 1}


def _open(path: Path, **kw: Any) -> tuple[sgmem.Memory, SGMemStore]:
    mem = sgmem.Memory(path, embedder=EMB, config=sgmem.Config(limits=LIMITS))
    return mem, SGMemStore(mem, index={"fields": ["text", "tags[*]"]}, **kw)


@pytest.fixture(params=[False, True], ids=["own-scope", "recall-in-chat"])
def filled(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[SGMemStore, Path]]:
    path = tmp_path / "store"
    mem, store = _open(path, recall_in_chat=request.param)
    store.put(NAMESPACE, "k", OLD)
    store.put(NAMESPACE, "other", {"text": "Another item."})
    store.search(NAMESPACE, query="bees")  # a warm cache the refused put must not disturb
    try:
        yield store, path
    finally:
        mem.close()


def _nested(depth: int) -> Any:
    v: Any = "text"
    for _ in range(depth):
        v = [v]
    return v


BAD: dict[str, Any] = {
    "tuple": {"text": ("a", "tuple")},
    "nested tuple": {"a": [1, {"b": (1, 2)}]},
    "int key nested": {"a": {"b": {2: "int key"}}},
    "int key": {1: "x"},
    "lone surrogate": {"text": "bad \ud800 text"},
    "lone surrogate in a key": {"a": {"bad \udfff": 1}},
    "NaN": {"v": float("nan")},
    "infinity": {"v": [1.0, float("inf")]},
    "set": {"v": {1, 2}},
    "object": {"v": object()},
    "bytes": {"v": b"raw"},
    "too deep": {"v": _nested(MAX_VALUE_DEPTH + 5)},
    "not a dict": ["a", "list"],
}
LIMIT_CALLS: dict[str, list[PutOp]] = {
    "max_name_chars (key)": [PutOp(NAMESPACE, "k" * 60, {"text": "x"})],
    "max_name_chars (namespace)": [PutOp(("users", "a" * 60), "k", {"text": "x"})],
    "max_messages_per_add": [PutOp(NAMESPACE, f"k{i}", {"text": "x"}) for i in range(3)]
    + [PutOp(NAMESPACE, "k", {"text": "new"})],
}


def _state(store: SGMemStore, path: Path) -> tuple[Any, ...]:
    item = store.get(NAMESPACE, "k")
    return (item.value, item.created_at, item.updated_at) if item else None, raw_dump(path)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_refused_value_leaves_the_old_value_byte_for_byte(filled: tuple[SGMemStore, Path], name: str) -> None:
    store, path = filled
    before = _state(store, path)
    with pytest.raises(sgmem.InvalidInputError) as info:
        store.put(NAMESPACE, "k", BAD[name])
    assert str(info.value).startswith("value"), str(info.value)  # the user's field, not internal metadata
    # in a batch with a good put before it: nothing of the batch is written
    with pytest.raises(sgmem.InvalidInputError) as info:
        store.batch([PutOp(NAMESPACE, "other", {"text": "changed"}), PutOp(NAMESPACE, "k", BAD[name])])
    assert str(info.value).startswith("ops[1].value"), str(info.value)
    assert _state(store, path) == before
    assert store.search(NAMESPACE, query="Alice keeps bees on the roof.")[0].value == OLD


@pytest.mark.parametrize("name", sorted(LIMIT_CALLS))
def test_a_limit_leaves_the_old_value_byte_for_byte(filled: tuple[SGMemStore, Path], name: str) -> None:
    store, path = filled
    before = _state(store, path)
    with pytest.raises(sgmem.LimitExceededError if "name" in name else sgmem.InvalidInputError) as info:
        store.batch(LIMIT_CALLS[name])
    assert name.split(" ")[0] in str(info.value)
    assert _state(store, path) == before


def test_an_indexed_text_over_the_message_limit_keeps_the_old_value(tmp_path: Path) -> None:
    """With recall_in_chat the indexed text is the message: too long for max_message_chars, refused up front."""
    mem, store = _open(tmp_path / "store", recall_in_chat=True)
    with mem:
        store.put(NAMESPACE, "k", OLD)
        before = _state(store, tmp_path / "store")
        with pytest.raises(sgmem.LimitExceededError, match="max_message_chars") as info:
            store.put(NAMESPACE, "k", {"text": "word " * 70})
        assert str(info.value).startswith("value")
        assert _state(store, tmp_path / "store") == before


def test_a_failing_embedder_keeps_the_old_value(tmp_path: Path) -> None:
    class Failing(FastEmbedder):
        def embed(self, texts: Any) -> Any:
            if any("EXPLODE" in t for t in texts):
                raise RuntimeError("embedding service unavailable")
            return super().embed(texts)

    with sgmem.Memory(tmp_path / "store", embedder=Failing()) as mem:
        store = SGMemStore(mem, index={"fields": ["text"]})
        store.put(NAMESPACE, "k", OLD)
        before = _state(store, tmp_path / "store")
        with pytest.raises(sgmem.SgmemError, match="unavailable"):
            store.put(NAMESPACE, "k", {"text": "EXPLODE"})
        assert _state(store, tmp_path / "store") == before


def test_a_batch_is_one_replace_per_namespace(tmp_path: Path) -> None:
    mem, store = _open(tmp_path / "store")
    with mem:
        store.put(NAMESPACE, "a", {"text": "old a"})
        store.put(NAMESPACE, "b", {"text": "old b"})
        gen_calls: list[Any] = []
        real = mem.replace

        def spy(*a: Any, **kw: Any) -> Any:
            gen_calls.append(kw["scope"])
            return real(*a, **kw)

        mem.replace = spy  # type: ignore[method-assign]
        store.batch(
            [PutOp(NAMESPACE, "a", {"text": "new a"}), PutOp(NAMESPACE, "b", None), PutOp(("x",), "c", {"t": 1})]
        )
        assert sorted(gen_calls) == sorted([store.scope_of(NAMESPACE), store.scope_of(("x",))])
        assert store.get(NAMESPACE, "a").value == {"text": "new a"} and store.get(NAMESPACE, "b") is None


# ---------------------------------------------------------------------- SIGKILL
def _run_and_kill(store: Path, first: int, fault: str, delay: float, log: Path) -> tuple[list[int], str]:
    """Start a store writer at value ``first``; SIGKILL it; return the values it reported and the kill marker."""
    cmd = [sys.executable, str(WRITER), str(store), str(first), "100000", fault]
    with open(log, "a") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
    lines: list[str] = []
    ready, marked = threading.Event(), threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.strip()
            lines.append(line)
            if line == "READY":
                ready.set()
            elif line.startswith("INTX"):
                proc.send_signal(signal.SIGKILL)
                marked.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(120), f"writer never became ready; see {log}: {log.read_text()[-2000:]}"
        if fault:
            assert marked.wait(60), f"writer never reached the {fault!r} window; output {lines[-5:]}"
        else:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    assert proc.returncode == -signal.SIGKILL, f"writer ended on its own ({proc.returncode}): {log.read_text()[-2000:]}"
    added = [int(x.split()[1]) for x in lines if x.startswith("PUT")]
    marker = next((x for x in reversed(lines) if x.startswith("INTX")), "")
    return added, marker


@pytest.mark.slow
def test_a_put_killed_at_random_points_leaves_the_old_or_the_new_value(tmp_path: Path) -> None:
    """After each SIGKILL the key holds the last value reported or the next one, whole, never none."""
    store, log = tmp_path / "store", tmp_path / "writer.log"
    rng = random.Random(20240603)
    plan = [("", rng.uniform(0.05, 1.0)) for _ in range(10)] + [(f"tx:{rng.randint(2, 4)}", 0.0) for _ in range(4)]
    rng.shuffle(plan)
    first, kills, in_tx, last = 0, 0, 0, -1
    for fault, delay in plan:
        added, marker = _run_and_kill(store, first, fault, delay, log)
        # a run that reported nothing started after the value now stored (first - 1), which it may
        # have replaced by one commit it was killed before reporting
        last = max(added, default=first - 1)
        if not (store / "sgmem.db").exists():
            continue
        _check_sqlite(store)
        with sgmem.Memory(store, embedder=EMB) as mem:
            st = SGMemStore(mem, index={"fields": ["text", "tags[*]"]})
            items = [st.get(NAMESPACE, k) for k in KEYS]
            if last < 0 and items == [None, None]:
                continue  # killed before the first put committed
            assert None not in items, f"a key lost its value after a kill (last reported {last})"
            vs = {it.value["v"] for it in items if it is not None}
            assert len(vs) == 1, f"the batch's two keys were committed apart: {vs}"
            v = vs.pop()
            if marker:
                in_tx += 1
                assert v == last, "a put killed inside its transaction was committed"
            assert v in (last, last + 1), (v, last)
            assert all(it is not None and it.value == value(v) for it in items)
            found = st.search(NAMESPACE, query=f"Profile version val{v}x of Alice.")
            assert [it.value["v"] for it in found] == [v, v] and found[0].score == pytest.approx(1.0, abs=1e-5)
        first = v + 1
        kills += 1
    assert kills >= 10 and in_tx >= 3
    record_figure(
        "crash: store put kill points survived", f"{kills} (inside the transaction {in_tx}); never a key without value"
    )
