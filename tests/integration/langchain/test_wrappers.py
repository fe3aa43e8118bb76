"""Model wrappers: LangChain models as sgmem's LLM and Embedder, sgmem's embedder as LangChain Embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models.fake import FakeListLLM

import sgmem
from langchain_sgmem import LangChainEmbedder, LangChainLLM, SGMemEmbeddings

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration


def test_chat_model_as_sgmem_llm(model: RecordingChatModel) -> None:
    model.reply = "Miso."
    llm = LangChainLLM(model)
    assert isinstance(llm, sgmem.LLM)
    assert llm.complete("What is the cat called?") == "Miso."
    assert model.calls[-1][0].type == "human" and model.calls[-1][0].content == "What is the cat called?"
    with sgmem.Memory(embedder=DeterministicFakeEmbeddingEmbedder(), llm=llm) as mem:
        assert mem.llm is llm


async def test_async_and_string_llms() -> None:
    llm = LangChainLLM(FakeListLLM(responses=["one", "two"]))
    assert llm.complete("a") == "one"
    assert await llm.acomplete("b") == "two"


def test_llm_wrapper_refuses_non_models() -> None:
    with pytest.raises(sgmem.InvalidInputError, match="BaseLanguageModel"):
        LangChainLLM(lambda prompt: prompt)  # type: ignore[arg-type]


class DeterministicFakeEmbeddingEmbedder(LangChainEmbedder):
    """The LangChain fake embedding as a sgmem embedder (a tiny, model-free embedder for tests)."""

    def __init__(self) -> None:
        super().__init__(DeterministicFakeEmbedding(size=16), name="fake-16")


def test_langchain_embeddings_as_sgmem_embedder(tmp_path: Path) -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=32))
    assert isinstance(embedder, sgmem.Embedder)
    assert embedder.dim == 32  # measured with one call
    assert embedder.name == "langchain:DeterministicFakeEmbedding"
    vecs = embedder.embed(["hello", "world", "hello"])
    assert vecs.shape == (3, 32) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0) and np.allclose(vecs[0], vecs[2])
    assert embedder.embed([]).shape == (0, 32)
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        mem.add({"role": "user", "content": "I adopted a cat named Miso."}, scope="alice", thread="t")
        # min_score=0: a fake embedding has no meaning, so its relevance says nothing
        (hit,) = mem.search("cat", scope="alice", mode="vector", min_score=0)
        assert hit.text == "I adopted a cat named Miso."
    # the name is the store's embedder identity: another model is refused
    other = LangChainEmbedder(DeterministicFakeEmbedding(size=32), name="another-model")
    with pytest.raises(sgmem.EmbedderMismatchError):
        sgmem.Memory(tmp_path, embedder=other)


class BrokenEmbeddings(Embeddings):
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:  # type: ignore[override]
        return [[1.0, 0.0]] * (len(texts) + 1)

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def test_embedder_wrapper_checks_what_it_gets() -> None:
    with pytest.raises(sgmem.InvalidInputError, match="Embeddings"):
        LangChainEmbedder("text-embedding-3-small")  # type: ignore[arg-type]
    with pytest.raises(sgmem.InvalidInputError, match="dim"):
        LangChainEmbedder(DeterministicFakeEmbedding(size=4), dim=0)
    broken = LangChainEmbedder(BrokenEmbeddings(), name="broken")
    assert broken.dim == 2
    with pytest.raises(sgmem.SgmemError, match="shape"):
        broken.embed(["a"])


async def test_sgmem_embedder_as_langchain_embeddings(embedder: sgmem.Embedder) -> None:
    emb = SGMemEmbeddings(embedder)
    assert emb.dim == embedder.dim
    docs = emb.embed_documents(["I adopted a cat.", "I run marathons."])
    assert len(docs) == 2 and len(docs[0]) == embedder.dim
    assert np.allclose(docs[0], embedder.embed(["I adopted a cat."])[0], atol=1e-6)
    query = emb.embed_query("Which pet do I have?")
    assert np.dot(query, docs[0]) > np.dot(query, docs[1])  # meaning, not hashing
    assert np.allclose(await emb.aembed_query("Which pet do I have?"), query, atol=1e-6)
    assert await emb.aembed_documents([]) == []
    with pytest.raises(sgmem.InvalidInputError, match="Embedder"):
        SGMemEmbeddings(object())  # type: ignore[arg-type]


class _DeviceEmbeddings(DeterministicFakeEmbedding):
    """A fake model that says where it runs, as ``HuggingFaceEmbeddings(model_kwargs={"device": ...})`` does."""

    model_kwargs: dict = {}  # noqa: RUF012 - a pydantic field, as in HuggingFaceEmbeddings


class _Client:
    def __init__(self, device: str) -> None:
        self.device = device


def test_embedder_wrapper_reports_the_models_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LangChainEmbedder.device: the wrapped model's device (its model_kwargs, or its loaded client's), so the
    default Config.dense_device="auto" scans where a GPU model runs; a model that does not say: None."""
    from sgmem.retrieval import device as device_mod

    assert LangChainEmbedder(DeterministicFakeEmbedding(size=16), name="f").device is None
    on = LangChainEmbedder(_DeviceEmbeddings(size=16, model_kwargs={"device": "cuda:1"}), name="f")
    assert on.device == "cuda:1"
    loaded = _DeviceEmbeddings(size=16)
    object.__setattr__(loaded, "_client", _Client("cuda:0"))
    assert LangChainEmbedder(loaded, name="f").device == "cuda:0"
    # a Memory follows it (PyTorch's CPU stands in for a GPU here)
    monkeypatch.setattr(device_mod, "ACCELERATORS", (*device_mod.ACCELERATORS, "cpu"))
    cpu = LangChainEmbedder(_DeviceEmbeddings(size=16, model_kwargs={"device": "cpu"}), name="f")
    with sgmem.Memory(tmp_path / "m", embedder=cpu) as mem:
        assert mem.config.dense_device == "cpu"
