"""``BaseRetriever`` over :meth:`sgmem.Memory.search`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator, model_validator

from sgmem import Hit, Memory
from sgmem.validate import check_mode

from ._util import check_memory, check_name_arg

__all__ = ["SGMemRetriever", "hit_to_document"]


def hit_to_document(hit: Hit) -> Document:
    """A :class:`sgmem.Hit` as a LangChain ``Document``.

    ``page_content`` is the memory's text; ``metadata`` holds ``score``,
    ``message_ids`` (list), ``thread``, ``at`` (ISO-8601 string), ``kind``,
    ``why`` and ``speaker`` — all JSON data.
    """
    return Document(
        page_content=hit.text,
        metadata={
            "score": hit.score,
            "message_ids": list(hit.message_ids),
            "thread": hit.thread,
            "at": hit.at.isoformat(),
            "kind": hit.kind,
            "why": hit.why,
            "speaker": hit.speaker,
        },
    )


class SGMemRetriever(BaseRetriever):
    """Retrieve a scope's memories (turns, rounds, sentences) from sgmem.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemRetriever

            mem = sgmem.Memory("./memory")
            mem.add(
                [{"role": "user", "content": "I adopted a cat named Miso."},
                 {"role": "user", "content": "I work as a nurse in Lyon."}],
                scope="alice", thread="chat-1",
            )
            retriever = SGMemRetriever(memory=mem, scope="alice", k=4)

    Use:
        .. code-block:: python

            docs = retriever.invoke("What is my cat called?")
            docs[0].page_content          # 'I adopted a cat named Miso.'
            docs[0].metadata["thread"]    # 'chat-1'
            retriever.invoke("Where do I work?", k=1)   # k per call

    Args:
        memory: the :class:`sgmem.Memory` to search.
        scope: whose memories to search.
        k: how many documents to return (``invoke(query, k=...)`` overrides it).
        mode: ``"hybrid"`` (default), ``"vector"``, ``"graph"`` or ``"bm25"``.
        threads: only these threads (default: all).
        since, until: only messages said in this window.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory = Field(exclude=True)
    scope: str
    k: int = Field(default=4, ge=1)
    mode: str | None = None
    threads: list[str] | None = None
    since: datetime | str | None = None
    until: datetime | str | None = None

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Memory:
        return check_memory(value)

    @field_validator("mode")
    @classmethod
    def _check_mode(cls, value: Any) -> str | None:
        return check_mode(value)

    @model_validator(mode="after")
    def _check_names(self) -> Any:
        for field in ("scope",):
            check_name_arg(self.memory, getattr(self, field), field)
        return self

    def _search_kwargs(self, k: int | None) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "k": self.k if k is None else k,
            "mode": self.mode,
            "threads": self.threads,
            "since": self.since,
            "until": self.until,
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return [hit_to_document(h) for h in self.memory.search(query, **self._search_kwargs(k))]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return [hit_to_document(h) for h in await self.memory.asearch(query, **self._search_kwargs(k))]
