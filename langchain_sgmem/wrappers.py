"""Model wrappers: LangChain models as sgmem seams, and sgmem's embedder as LangChain ``Embeddings``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage

from sgmem import Embedder, InvalidInputError, SgmemError
from sgmem.embed.base import model_device

__all__ = ["LangChainEmbedder", "LangChainLLM", "SGMemEmbeddings"]


def _as_text(output: Any) -> str:
    if isinstance(output, BaseMessage):
        return output.text
    if isinstance(output, str):
        return output
    raise SgmemError(f"the LangChain model returned {type(output).__name__}, expected a message or a string.")


class LangChainLLM:
    """A LangChain chat model (or LLM) as a :class:`sgmem.LLM`.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import LangChainLLM

            # `model` is any LangChain chat model, e.g. init_chat_model("openai:gpt-4.1-mini")
            llm = LangChainLLM(model)

    Use:
        .. code-block:: python

            llm.complete("Say hello.")          # the reply's text
            mem = sgmem.Memory("./memory", llm=llm)

    Args:
        model: a ``BaseChatModel`` or ``BaseLLM``; the prompt is sent as one
            user message and the reply's text is returned.
    """

    def __init__(self, model: BaseLanguageModel[Any]) -> None:
        if not isinstance(model, BaseLanguageModel):
            raise InvalidInputError("model", model, "a LangChain chat model or LLM (BaseLanguageModel)")
        self.model = model

    def complete(self, prompt: str) -> str:
        """The model's reply to ``prompt``, as text."""
        return _as_text(self.model.invoke(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete`."""
        return _as_text(await self.model.ainvoke(prompt))

    def __repr__(self) -> str:
        return f"LangChainLLM({type(self.model).__name__})"


class LangChainEmbedder:
    """LangChain ``Embeddings`` as a :class:`sgmem.Embedder`.

    ``name`` is recorded in the store: a store built with one embedding model
    refuses another, so give the same ``name`` whenever you load the same
    model (the default derives it from the class and its ``model`` /
    ``model_name`` attribute).

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_core.embeddings import DeterministicFakeEmbedding
            from langchain_sgmem import LangChainEmbedder

            embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=64), name="fake-64")

    Use:
        .. code-block:: python

            embedder.embed(["hello", "world"]).shape     # (2, 64), unit rows
            mem = sgmem.Memory(embedder=embedder)

    Args:
        embeddings: any LangChain ``Embeddings``.
        name: a stable identity for the model (see above).
        dim: the vector size; measured with one call when omitted.
    """

    def __init__(self, embeddings: Embeddings, *, name: str | None = None, dim: int | None = None) -> None:
        if not isinstance(embeddings, Embeddings):
            raise InvalidInputError("embeddings", embeddings, "a LangChain Embeddings instance")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidInputError("name", name, "a non-empty string or None")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
            raise InvalidInputError("dim", dim, "a positive int or None")
        self.embeddings = embeddings
        model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        self.name = name or f"langchain:{type(embeddings).__name__}" + (f":{model}" if model else "")
        self.dim = dim if dim is not None else len(embeddings.embed_query("dimension probe"))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        arr = np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)
        if arr.ndim != 2 or arr.shape != (len(texts), self.dim):
            raise SgmemError(
                f"{type(self.embeddings).__name__} returned vectors of shape {arr.shape}, "
                f"expected ({len(texts)}, {self.dim}). Pass the right dim=."
            )
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return arr / norms

    @property
    def device(self) -> str | None:
        """The device the wrapped model runs on, where it says (``Config.dense_device="auto"`` follows a GPU)."""
        return model_device(self.embeddings)

    def __repr__(self) -> str:
        return f"LangChainEmbedder(name={self.name!r}, dim={self.dim})"


class SGMemEmbeddings(Embeddings):
    """A :class:`sgmem.Embedder` (default: sgmem's MiniLM) as LangChain ``Embeddings``.

    Share one model between sgmem and LangChain components — a vector store,
    ``InMemoryStore(index=...)`` or a semantic cache.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemEmbeddings

            mem = sgmem.Memory("./memory")
            embeddings = SGMemEmbeddings(mem.embedder)

    Use:
        .. code-block:: python

            from langgraph.store.memory import InMemoryStore

            vector = embeddings.embed_query("What is my cat called?")    # 384 floats
            store = InMemoryStore(index={"dims": embeddings.dim, "embed": embeddings})

    Args:
        embedder: the sgmem embedder (default: :func:`sgmem.embed.default_embedder`).
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        if embedder is None:
            from sgmem.embed import default_embedder

            embedder = default_embedder()
        if not all(hasattr(embedder, a) for a in ("embed", "name", "dim")):
            raise InvalidInputError("embedder", embedder, "a sgmem.Embedder (embed(texts), name, dim)")
        self.embedder = embedder

    @property
    def dim(self) -> int:
        """The vector size."""
        return int(self.embedder.dim)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        if not texts:
            return []
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        """The vector of one text."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_query, text)

    def __repr__(self) -> str:
        return f"SGMemEmbeddings({self.embedder.name!r})"
