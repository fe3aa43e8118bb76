"""``SGMemRetriever``: sgmem search as a LlamaIndex ``BaseRetriever``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import sgmem
from sgmem.validate import check_int, check_mode, check_score, check_time

from ._messages import check_key, check_memory

__all__ = ["SGMemRetriever"]

_NODE_NAMESPACE = uuid.UUID("6d1c3a52-3f7e-4c8e-9a55-0b7e9f1f6a10")
#: Metadata the LLM sees with each node (the rest is for code: ids, scores, provenance).
_LLM_KEYS = ("at", "speaker")


class SGMemRetriever(BaseRetriever):
    """Retrieve a scope's memories with sgmem, as LlamaIndex nodes.

    Each :class:`sgmem.Hit` becomes a ``NodeWithScore`` whose ``TextNode``
    carries the memory's text and, in ``metadata``: ``score``, ``message_ids``
    (the source messages), ``thread``, ``at`` (ISO-8601), ``kind`` (turn,
    round, session, sentence), ``speaker``, ``why`` (how it was found) and
    ``scope``. Only ``at`` and ``speaker`` are shown to the LLM. Node ids are
    stable: the same memory gets the same id on every call.

    Setup:
        ``pip install 'sgmem[llama-index]'``

    Instantiate:
        >>> import sgmem                                              # doctest: +SKIP
        >>> retriever = SGMemRetriever(memory=sgmem.Memory("./memory"), scope="alice", k=4)

    Use:
        >>> nodes = retriever.retrieve("What is my cat called?")      # doctest: +SKIP
        >>> nodes[0].node.metadata["thread"]
        'chat-1'

    Args:
        memory: the sgmem store.
        scope: whose memories to search; other scopes are never read.
        k: how many nodes to return (``similarity_top_k``, LlamaIndex's name
            for it, is accepted too; give one or the other).
        mode: ``"hybrid"``, ``"vector"``, ``"graph"`` or ``"bm25"`` (``None``:
            the store's default).
        threads: only search these threads (default: all of the scope).
        now: the moment of asking, which "last week" or "three days ago" in
            a query is relative to (see :meth:`sgmem.Memory.search`): give
            the chat's time when retrieving for an older chat; ``None`` (the
            default) reads the clock at each query.
        min_score: drop hits whose :attr:`sgmem.Hit.relevance` (in [0, 1],
            also in each node's ``metadata["relevance"]``) is below this.
            ``None`` (the default) returns the ``k`` best, as LlamaIndex's
            vector retrievers do; pass ``memory.min_relevance`` (the cutoff
            calibrated for the embedder, which the memory block and chat
            memory apply) to get no nodes for an unrelated query. The node
            score stays the ranking score.
    """

    def __init__(
        self,
        memory: sgmem.Memory,
        scope: str,
        k: int | None = None,
        mode: str | None = None,
        threads: Iterable[str] | None = None,
        min_score: float | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        similarity_top_k: int | None = None,
        now: datetime | str | None = None,
    ) -> None:
        self._memory = check_memory(memory)
        self.scope = check_key(scope, "scope", memory)
        if k is not None and similarity_top_k is not None:
            raise sgmem.InvalidInputError(
                "similarity_top_k", similarity_top_k, "k or similarity_top_k, not both", "They are the same setting."
            )
        top = similarity_top_k if similarity_top_k is not None else k
        self.k = check_int(4 if top is None else top, "k", 1, memory.config.limits.max_k)
        self.mode = check_mode(mode)
        if threads is not None and (isinstance(threads, str) or not isinstance(threads, Iterable)):
            raise sgmem.InvalidInputError("threads", threads, "a list of thread names or None")
        self.threads = [check_key(t, "threads[]", memory) for t in threads] if threads is not None else None
        # no threshold asked for: the k best (LlamaIndex's retriever convention), not Config.min_relevance
        self.min_score = check_score(min_score, "min_score", 0.0)
        self.now = check_time(now, "now")
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def similarity_top_k(self) -> int:
        """LlamaIndex's name for :attr:`k`."""
        return self.k

    @property
    def memory(self) -> sgmem.Memory:
        """The sgmem store searched."""
        return self._memory

    def _search_kwargs(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "k": self.k,
            "mode": self.mode,
            "threads": self.threads,
            "min_score": self.min_score,
            "now": self.now,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [self._node(h) for h in self._memory.search(query_bundle.query_str, **self._search_kwargs())]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self._memory.asearch(query_bundle.query_str, **self._search_kwargs())
        return [self._node(h) for h in hits]

    def _node(self, hit: sgmem.Hit) -> NodeWithScore:
        metadata = {
            "score": hit.score,
            "relevance": hit.relevance,
            "message_ids": list(hit.message_ids),
            "thread": hit.thread,
            "at": hit.at.isoformat(),
            "kind": hit.kind,
            "speaker": hit.speaker,
            "why": hit.why,
            "scope": self.scope,
        }
        key = "\x1f".join((self.scope, hit.kind, *hit.message_ids, hit.text))
        node = TextNode(
            id_=str(uuid.uuid5(_NODE_NAMESPACE, key)),
            text=hit.text,
            metadata=metadata,
            excluded_embed_metadata_keys=list(metadata),
            excluded_llm_metadata_keys=[k for k in metadata if k not in _LLM_KEYS],
        )
        return NodeWithScore(node=node, score=hit.score)
