"""LlamaIndex models behind sgmem's seams: an ``LLM`` as :class:`sgmem.LLM`, a ``BaseEmbedding`` as :class:`sgmem.Embedder`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.base import BaseLLM

from sgmem.embed.base import model_device
from sgmem.errors import InvalidInputError, SgmemError

__all__ = ["LlamaIndexEmbedder", "LlamaIndexLLM"]

_DIM_PROBE = "sgmem dimension probe"


class LlamaIndexLLM:
    """Any LlamaIndex LLM (``OpenAI``, ``Ollama``, ``MockLLM``...) as an :class:`sgmem.LLM`.

    Example:
        >>> from llama_index.core.llms import MockLLM                 # doctest: +SKIP
        >>> mem = sgmem.Memory("./memory", llm=LlamaIndexLLM(MockLLM()))

    Args:
        llm: the LlamaIndex model; ``complete`` is used (chat models answer it too).
    """

    def __init__(self, llm: BaseLLM) -> None:
        if not isinstance(llm, BaseLLM):
            raise InvalidInputError("llm", llm, "a LlamaIndex LLM (llama_index.core.llms.LLM)")
        self.llm = llm

    def complete(self, prompt: str) -> str:
        """The model's completion of ``prompt``."""
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete`, through the model's own async client."""
        return (await self.llm.acomplete(prompt)).text

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({self.llm.class_name()})"


class LlamaIndexEmbedder:
    """Any LlamaIndex embedding model as an :class:`sgmem.Embedder`.

    sgmem embeds stored sentences and queries with one method, so the model's
    text embedding is used for both. The store records ``name`` and ``dim``:
    reopening it needs the same model.

    Example:
        >>> from llama_index.embeddings.huggingface import HuggingFaceEmbedding   # doctest: +SKIP
        >>> mem = sgmem.Memory("./memory", embedder=LlamaIndexEmbedder(HuggingFaceEmbedding("BAAI/bge-small-en-v1.5")))

    Args:
        embed_model: the LlamaIndex embedding model.
        name: identity recorded in the store (default
            ``"llama_index/<class>/<model_name>"``).
        dim: vector dimension (default: measured once by embedding a short probe).
    """

    def __init__(self, embed_model: BaseEmbedding, *, name: str | None = None, dim: int | None = None) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise InvalidInputError("embed_model", embed_model, "a LlamaIndex BaseEmbedding")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidInputError("name", name, "a non-empty string or None")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
            raise InvalidInputError("dim", dim, "an int >= 1 or None (measure it)")
        self.embed_model = embed_model
        self.name = name or f"llama_index/{type(embed_model).__name__}/{embed_model.model_name}"
        self.dim = dim if dim is not None else len(embed_model.get_text_embedding(_DIM_PROBE))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as an ``(len(texts), dim)`` float32 array of unit rows."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = np.asarray(self.embed_model.get_text_embedding_batch(texts), dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise SgmemError(
                f"{self.name} returned embeddings of shape {vecs.shape}, expected ({len(texts)}, {self.dim}). "
                "Pass the model's real dim= (or leave it None to measure it)."
            )
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return vecs / norms

    @property
    def device(self) -> str | None:
        """The device the wrapped model runs on, where it says (``Config.dense_device="auto"`` follows a GPU)."""
        return model_device(self.embed_model)

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.name!r}, dim={self.dim})"
