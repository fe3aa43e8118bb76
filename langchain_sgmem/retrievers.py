"""``BaseRetriever`` over :meth:`sgmem.Memory.search`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator, model_validator

from sgmem import Hit, InvalidInputError, Memory
from sgmem.validate import check_mode, check_score

from ._util import check_memory, check_name_arg

__all__ = ["SGMemRetriever", "hit_to_document"]

#: what ``search_kwargs`` (and ``invoke(query, **kwargs)``) may set: :meth:`sgmem.Memory.search`'s
#: arguments, plus LangChain's ``score_threshold`` (another name for ``min_score``)
SEARCH_KEYS = (
    "k",
    "mode",
    "threads",
    "since",
    "until",
    "min_score",
    "score_threshold",
    "kinds",
    "exclude_message_ids",
    "now",
)


def hit_to_document(hit: Hit) -> Document:
    """A :class:`sgmem.Hit` as a LangChain ``Document``.

    ``page_content`` is the memory's text; ``metadata`` holds ``score`` (the
    ranking score), ``relevance`` (in [0, 1], see :attr:`sgmem.Hit.relevance`),
    ``message_ids`` (list), ``thread``, ``at`` (ISO-8601 string), ``kind``,
    ``why`` and ``speaker`` — all JSON data.
    """
    return Document(
        page_content=hit.text,
        metadata={
            "score": hit.score,
            "relevance": hit.relevance,
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
            # asked in a replayed chat: "last week" is the week before its time
            retriever.invoke("Where did I hike last week?", now="2024-03-14T09:00:00Z")
            # LangChain's vector-store style works too:
            SGMemRetriever(memory=mem, scope="alice", search_kwargs={"k": 2, "score_threshold": 0.2})
            # or the embedder's calibrated cutoff: an unrelated question then gets []
            SGMemRetriever(memory=mem, scope="alice", min_score=mem.min_relevance)

    Args:
        memory: the :class:`sgmem.Memory` to search.
        scope: whose memories to search.
        k: how many documents to return (``invoke(query, k=...)`` overrides it).
        mode: ``"hybrid"`` (default), ``"vector"``, ``"graph"`` or ``"bm25"``.
        threads: only these threads (default: all).
        since, until: only messages said in this window.
        min_score: drop hits whose :attr:`sgmem.Hit.relevance` (in [0, 1]) is
            below this. ``None`` (the default) keeps the ``k`` best, as
            LangChain's ``VectorStoreRetriever`` does with no threshold; pass
            ``memory.min_relevance`` (the cutoff calibrated for the embedder,
            which ``Memory.search`` and the middleware apply) to get no
            documents for an unrelated question.
        score_threshold: another name for ``min_score`` (LangChain's vector
            store retrievers call it so); give one or the other.
        search_kwargs: any of the above as a dict, as LangChain's
            ``as_retriever(search_kwargs=...)`` takes them (``k``, ``mode``,
            ``threads``, ``since``, ``until``, ``min_score``/``score_threshold``,
            ``kinds``, ``exclude_message_ids``, ``now``: the moment of asking,
            which "last week" in the query is relative to, the clock by default;
            see :meth:`sgmem.Memory.search`); they override the fields.
            An unknown key (or field) is an error, never silently ignored.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory = Field(exclude=True)
    scope: str
    k: int = Field(default=4, ge=1)
    mode: str | None = None
    threads: list[str] | None = None
    since: datetime | str | None = None
    until: datetime | str | None = None
    min_score: float | None = None
    score_threshold: float | None = None
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields), key=str)
            if unknown:
                raise InvalidInputError(
                    "SGMemRetriever",
                    unknown,
                    f"only the fields {sorted(cls.model_fields)}",
                    "Search settings go in the fields or in search_kwargs={...}.",
                )
        return data

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
        self._search_kwargs({})  # a bad search_kwargs fails here, not at the first query
        return self

    def _search_kwargs(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The fields, then ``search_kwargs``, then the call's ``overrides``, as :meth:`Memory.search` arguments."""
        out: dict[str, Any] = {
            "k": self.k,
            "mode": self.mode,
            "threads": self.threads,
            "since": self.since,
            "until": self.until,
            "min_score": self.min_score,
        }
        if self.score_threshold is not None:
            out["score_threshold"] = self.score_threshold
        for where, extra in (("search_kwargs", self.search_kwargs), ("invoke", overrides)):
            unknown = sorted(set(extra) - set(SEARCH_KEYS), key=str)
            if unknown:
                raise InvalidInputError(
                    f"{where} keys", unknown, f"keys from {list(SEARCH_KEYS)}", "Other keys are not search settings."
                )
            if "min_score" in extra and "score_threshold" in extra:
                raise InvalidInputError(
                    where, extra, "min_score or score_threshold, not both", "They are the same setting."
                )
            if "min_score" in extra or "score_threshold" in extra:
                out.pop("min_score", None)
                out.pop("score_threshold", None)
            out.update({key: v for key, v in extra.items() if not (key == "k" and v is None)})
        if "score_threshold" in out:
            if out.get("min_score") is not None:
                raise InvalidInputError(
                    "score_threshold", out["score_threshold"], "min_score or score_threshold, not both"
                )
            out["min_score"] = out.pop("score_threshold")
        # no threshold asked for: the k best (LangChain's retriever convention), not Config.min_relevance
        out["min_score"] = check_score(out["min_score"], "min_score", 0.0)
        return {"scope": self.scope, **out}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return [hit_to_document(h) for h in self.memory.search(query, **self._search_kwargs(kwargs))]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return [hit_to_document(h) for h in await self.memory.asearch(query, **self._search_kwargs(kwargs))]
