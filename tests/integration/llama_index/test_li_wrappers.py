"""LlamaIndex models behind sgmem's seams: LlamaIndexLLM and LlamaIndexEmbedder."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from pydantic import PrivateAttr

import sgmem
from llama_index_sgmem import LlamaIndexEmbedder, LlamaIndexLLM

from .helpers import FACT, QUESTION

pytestmark = pytest.mark.integration


class SgmemBackedEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model running the session's MiniLM (no download, real vectors)."""

    _inner: Any = PrivateAttr()

    def __init__(self, inner: sgmem.Embedder, **kwargs: Any) -> None:
        super().__init__(model_name="minilm-test", **kwargs)
        self._inner = inner

    def _get_text_embedding(self, text: str) -> list[float]:
        return (self._inner.embed([text])[0] * 3.0).tolist()  # not unit length: the wrapper normalises

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def test_llm_wrapper_completes_through_the_llama_index_model() -> None:
    llm = LlamaIndexLLM(MockLLM())
    assert isinstance(llm, sgmem.LLM)
    assert llm.complete("Summarise: the cat is called Miso.") == "Summarise: the cat is called Miso."
    assert LlamaIndexLLM(MockLLM(max_tokens=2)).complete("anything") == "text text"


async def test_llm_wrapper_async() -> None:
    assert await LlamaIndexLLM(MockLLM()).acomplete("hello") == "hello"


def test_llm_wrapper_is_accepted_by_memory(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, llm=LlamaIndexLLM(MockLLM())) as mem:
        assert isinstance(mem.llm, LlamaIndexLLM)


def test_embedder_wrapper_drives_sgmem(embedder: sgmem.Embedder) -> None:
    wrapped = LlamaIndexEmbedder(SgmemBackedEmbedding(embedder))
    assert isinstance(wrapped, sgmem.Embedder)
    assert wrapped.dim == embedder.dim  # measured with one probe
    assert wrapped.name == "llama_index/SgmemBackedEmbedding/minilm-test"
    vecs = wrapped.embed(["one", "two"])
    assert vecs.shape == (2, embedder.dim) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert wrapped.embed([]).shape == (0, embedder.dim)
    with sgmem.Memory(embedder=wrapped) as mem:
        mem.add(
            [{"role": "user", "content": FACT}, {"role": "user", "content": "I run every Sunday."}],
            scope="a",
            thread="t",
        )
        assert mem.search(QUESTION, scope="a", k=1)[0].text == FACT
        assert mem.stats().embedder == wrapped.name


def test_embedder_wrapper_with_explicit_name_and_dim() -> None:
    wrapped = LlamaIndexEmbedder(MockEmbedding(embed_dim=8), name="mock-8", dim=8)
    assert (wrapped.name, wrapped.dim) == ("mock-8", 8)
    assert wrapped.embed(["x"]).shape == (1, 8)


def test_embedder_wrapper_reports_a_wrong_dim() -> None:
    wrapped = LlamaIndexEmbedder(MockEmbedding(embed_dim=8), dim=16)
    with pytest.raises(sgmem.SgmemError, match=r"shape \(1, 8\), expected \(1, 16\)"):
        wrapped.embed(["x"])


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: LlamaIndexLLM("gpt-4"), "llm"),  # type: ignore[arg-type]
        (lambda: LlamaIndexEmbedder("minilm"), "embed_model"),  # type: ignore[arg-type]
        (lambda: LlamaIndexEmbedder(MockEmbedding(embed_dim=8), dim=0), "dim"),
        (lambda: LlamaIndexEmbedder(MockEmbedding(embed_dim=8), name=""), "name"),
    ],
)
def test_bad_arguments_are_clear_errors(make: Any, field: str) -> None:
    with pytest.raises(sgmem.InvalidInputError, match=field):
        make()


class _DeviceEmbedding(MockEmbedding):
    """A mock model with a loaded sentence-transformers model that says where it runs."""

    _model: Any = PrivateAttr(default=None)


class _Loaded:
    def __init__(self, device: str) -> None:
        self.device = device


def test_embedder_wrapper_reports_the_models_device(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """LlamaIndexEmbedder.device: the device of the model it wraps (HuggingFaceEmbedding's loaded model), so
    the default Config.dense_device="auto" scans where a GPU model runs; a model that does not say: None."""
    from sgmem.retrieval import device as device_mod

    assert LlamaIndexEmbedder(MockEmbedding(embed_dim=8)).device is None
    model = _DeviceEmbedding(embed_dim=8)
    model._model = _Loaded("cuda:0")
    assert LlamaIndexEmbedder(model).device == "cuda:0"
    monkeypatch.setattr(device_mod, "ACCELERATORS", (*device_mod.ACCELERATORS, "cpu"))
    model._model = _Loaded("cpu")  # PyTorch's CPU stands in for a GPU here
    with sgmem.Memory(tmp_path / "m", embedder=LlamaIndexEmbedder(model)) as mem:
        assert mem.config.dense_device == "cpu"
