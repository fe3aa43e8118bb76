"""The memories a user would pick instead of sgmem, over the same turns and embedder.

Each baseline indexes one conversation's turns as ``"Speaker: text"``
documents (the speaker's name is part of what was said, as in sgmem's
sentences) and returns the ids of its top turns for a query:

* ``BM25Turns`` — BM25 over turns with ``bm25s`` (Lucene BM25, k1 = 1.5,
  b = 0.75; English stop words and Snowball stemming), as a user of
  ``bm25s`` would set it up;
* ``LangChainTurns`` — LangChain's ``InMemoryVectorStore`` retriever, embedding
  with sgmem's embedder through :class:`langchain_sgmem.SGMemEmbeddings`;
* ``LlamaIndexTurns`` — a LlamaIndex ``VectorStoreIndex`` retriever (the
  default ``SimpleVectorStore``, one ``TextNode`` per turn), embedding with
  sgmem's embedder through :func:`llama_embedding`.

The same embedder object (and so the same vectors, through any cache it has)
serves sgmem and the dense baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

__all__ = [
    "BASELINES",
    "BM25Turns",
    "Baseline",
    "LangChainTurns",
    "LlamaIndexTurns",
    "Turn",
    "llama_embedding",
    "make_baselines",
]


@dataclass(frozen=True)
class Turn:
    """One conversation turn as the baselines see it."""

    id: str
    speaker: str
    text: str

    @property
    def document(self) -> str:
        return f"{self.speaker}: {self.text}"


class Baseline(Protocol):
    """A retriever over one conversation's turns."""

    name: str

    def build(self, turns: Sequence[Turn]) -> None:
        """Index these turns (replacing any previous conversation)."""
        ...

    def search(self, query: str, k: int) -> list[str]:
        """Ids of the top ``k`` turns for ``query``, best first."""
        ...


class BM25Turns:
    """BM25 over whole turns (``bm25s``)."""

    name = "BM25 (bm25s) over turns"

    def __init__(self) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._model: Any = None
        self._ids: list[str] = []

    def _tokens(self, texts: list[str]) -> Any:
        return self._bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)

    def build(self, turns: Sequence[Turn]) -> None:
        self._ids = [t.id for t in turns]
        self._model = self._bm25s.BM25()
        self._model.index(self._tokens([t.document for t in turns]), show_progress=False)

    def search(self, query: str, k: int) -> list[str]:
        k = min(k, len(self._ids))
        if not k:
            return []
        tokens = self._tokens([query])
        if not tokens.vocab:  # only stop words
            return []
        rows, scores = self._model.retrieve(tokens, k=k, show_progress=False)
        return [self._ids[int(r)] for r, s in zip(rows[0], scores[0], strict=True) if s > 0]


class LangChainTurns:
    """LangChain ``InMemoryVectorStore`` retriever over turns, sgmem's embedder."""

    name = "LangChain InMemoryVectorStore over turns"

    def __init__(self, embedder: Any) -> None:
        from langchain_sgmem import SGMemEmbeddings

        self._embeddings = SGMemEmbeddings(embedder)
        self._store: Any = None

    def build(self, turns: Sequence[Turn]) -> None:
        from langchain_core.vectorstores import InMemoryVectorStore

        self._store = InMemoryVectorStore(embedding=self._embeddings)
        self._store.add_texts([t.document for t in turns], ids=[t.id for t in turns])

    def search(self, query: str, k: int) -> list[str]:
        docs = self._store.as_retriever(search_kwargs={"k": k}).invoke(query)
        return [str(d.id) for d in docs]


def _llama_embedding_class() -> type:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    class SgmemLlamaEmbedding(BaseEmbedding):  # type: ignore[misc, valid-type]
        """A :class:`sgmem.Embedder` as a LlamaIndex ``BaseEmbedding`` (queries and texts alike)."""

        _embedder: Any = PrivateAttr()

        def __init__(self, embedder: Any, **kwargs: Any) -> None:
            super().__init__(model_name=str(embedder.name), embed_batch_size=64, **kwargs)
            self._embedder = embedder

        @classmethod
        def class_name(cls) -> str:
            return "SgmemLlamaEmbedding"

        def _vecs(self, texts: list[str]) -> list[list[float]]:
            return np.asarray(self._embedder.embed(texts), dtype=np.float32).tolist()

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vecs([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vecs([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._vecs(list(texts))

    return SgmemLlamaEmbedding


def llama_embedding(embedder: Any) -> Any:
    """A LlamaIndex ``BaseEmbedding`` over a :class:`sgmem.Embedder`.

    Uses ``llama_index_sgmem.SGMemEmbedding`` when the adapter package has one,
    else the small adapter above.
    """
    try:
        from llama_index_sgmem import SGMemEmbedding  # type: ignore[attr-defined]
    except ImportError:
        return _llama_embedding_class()(embedder)
    return SGMemEmbedding(embedder)


class LlamaIndexTurns:
    """LlamaIndex ``VectorStoreIndex`` retriever over turns, sgmem's embedder."""

    name = "LlamaIndex VectorStoreIndex over turns"

    def __init__(self, embedder: Any) -> None:
        self._embed_model = llama_embedding(embedder)
        self._index: Any = None

    def build(self, turns: Sequence[Turn]) -> None:
        from llama_index.core import VectorStoreIndex
        from llama_index.core.schema import TextNode

        nodes = [TextNode(text=t.document, id_=t.id) for t in turns]
        self._index = VectorStoreIndex(nodes, embed_model=self._embed_model, show_progress=False)

    def search(self, query: str, k: int) -> list[str]:
        found = self._index.as_retriever(similarity_top_k=k).retrieve(query)
        return [n.node.node_id for n in found]


#: Baseline keys accepted by :func:`make_baselines`.
BASELINES = ("bm25", "langchain", "llama_index")


def make_baselines(embedder: Any, names: Sequence[str] = BASELINES) -> list[Baseline]:
    """The requested baselines; a framework that is not installed is skipped with a message."""
    out: list[Baseline] = []
    for name in names:
        try:
            if name == "bm25":
                out.append(BM25Turns())
            elif name == "langchain":
                out.append(LangChainTurns(embedder))
            elif name == "llama_index":
                out.append(LlamaIndexTurns(embedder))
            else:
                raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")
        except ImportError as exc:
            print(f"baseline {name} skipped: {exc}")
    return out
