"""Fakes shared by the LlamaIndex adapter tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

FACT = "My cat is called Miso and she loves tuna."
QUESTION = "What is my cat called?"
SECRET = "Miso"


class StaticRetriever(BaseRetriever):
    """Always returns one unrelated document, so context engines always call the LLM."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="The public library opens at nine."), score=1.0)]


def rendered(messages: Sequence[ChatMessage] | None) -> str:
    """Everything an LLM call received, as one string."""
    return "\n".join(f"{m.role.value}: {m.content or ''}" for m in messages or [])


def user(text: str, **kwargs: Any) -> ChatMessage:
    return ChatMessage(role="user", content=text, **kwargs)


def assistant(text: str, **kwargs: Any) -> ChatMessage:
    return ChatMessage(role="assistant", content=text, **kwargs)
