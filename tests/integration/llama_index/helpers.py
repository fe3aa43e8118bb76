"""Fakes shared by the LlamaIndex adapter tests."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import sgmem

FACT = "My cat is called Miso and she loves tuna."
QUESTION = "What is my cat called?"
SECRET = "Miso"


class StaticRetriever(BaseRetriever):
    """Always returns one unrelated document, so context engines always call the LLM."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="The public library opens at nine."), score=1.0)]


class SlowEmbedder:
    """A real embedder (same name and dim) that sleeps on every call, to show async never blocks."""

    def __init__(self, inner: sgmem.Embedder, delay_s: float = 0.3) -> None:
        self.inner, self.name, self.dim, self.delay_s = inner, inner.name, inner.dim, delay_s

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.delay_s)
        return self.inner.embed(texts)


def rendered(messages: Sequence[ChatMessage] | None) -> str:
    """Everything an LLM call received, as one string."""
    return "\n".join(f"{m.role.value}: {m.content or ''}" for m in messages or [])


def user(text: str, **kwargs: Any) -> ChatMessage:
    return ChatMessage(role="user", content=text, **kwargs)


def assistant(text: str, **kwargs: Any) -> ChatMessage:
    return ChatMessage(role="assistant", content=text, **kwargs)
