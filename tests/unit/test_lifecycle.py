"""Memory construction, context manager and close()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sgmem


def test_in_memory_stores_are_private_to_their_instance(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as a, sgmem.Memory(embedder=embedder) as b:
        a.add({"role": "user", "content": "only in a"}, scope="s", thread="t")
        assert a.stats().messages == 1
        assert b.stats().messages == 0
        assert a.path is None and a.stats().path is None


def test_context_manager_closes(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add({"role": "user", "content": "hello"}, scope="s", thread="t")
    with pytest.raises(sgmem.SgmemError, match="closed"):
        mem.search("hello", scope="s")


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.add({"role": "user", "content": "x"}, scope="s", thread="t"),
        lambda m: m.search("x", scope="s"),
        lambda m: m.context("x", scope="s"),
        lambda m: m.messages(scope="s"),
        lambda m: m.threads(scope="s"),
        lambda m: m.scopes(),
        lambda m: m.delete(scope="s"),
        lambda m: m.stats(),
    ],
    ids=["add", "search", "context", "messages", "threads", "scopes", "delete", "stats"],
)
def test_every_call_on_a_closed_memory_raises(embedder: sgmem.Embedder, call: Any) -> None:
    mem = sgmem.Memory(embedder=embedder)
    mem.close()
    with pytest.raises(sgmem.SgmemError, match="closed"):
        call(mem)


def test_close_twice_is_harmless(embedder: sgmem.Embedder, store_path: Path) -> None:
    mem = sgmem.Memory(store_path, embedder=embedder)
    mem.close()
    mem.close()


def test_durable_store_is_created_at_a_string_or_path(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(str(store_path), embedder=embedder) as mem:
        mem.add({"role": "user", "content": "x"}, scope="s", thread="t")
        assert mem.stats().path == str(store_path)
    assert (store_path / "sgmem.db").is_file()
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        assert mem.stats().messages == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"path": 42}, "path"),
        ({"embedder": object()}, "embedder"),
        ({"config": "hybrid"}, "config"),
    ],
)
def test_constructor_rejects_wrong_types(embedder: sgmem.Embedder, kwargs: dict[str, Any], field: str) -> None:
    args = {"embedder": embedder, **kwargs}
    path = args.pop("path", None)
    with pytest.raises(sgmem.InvalidInputError, match=field):
        sgmem.Memory(path, **args)


def test_a_file_path_is_refused(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    f = tmp_path / "not-a-dir"
    f.write_text("hello")
    with pytest.raises(sgmem.StoreError, match="directory"):
        sgmem.Memory(f, embedder=embedder)
    assert f.read_text() == "hello"


def test_repr_names_the_location_and_embedder(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        assert "in-memory" in repr(mem) and embedder.name in repr(mem)
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        assert str(store_path) in repr(mem)


def test_embedder_protocol_is_runtime_checkable(embedder: sgmem.Embedder) -> None:
    assert isinstance(embedder, sgmem.Embedder)
    vecs = embedder.embed(["a cat", "a dog"])
    assert vecs.shape == (2, embedder.dim)
    assert abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-4


def test_an_embedder_returning_the_wrong_shape_is_reported(tmp_path: Path) -> None:
    class Broken:
        name = "broken"
        dim = 4

        def embed(self, texts: Any) -> Any:
            import numpy as np

            return np.zeros((len(texts), 3), dtype=np.float32)

    with sgmem.Memory(embedder=Broken()) as mem:
        with pytest.raises(sgmem.SgmemError, match="shape"):
            mem.add({"role": "user", "content": "x"}, scope="s", thread="t")
        assert mem.stats().messages == 0
