"""``SGMemMemoryBlock``: sgmem as a long-term block of LlamaIndex's ``Memory``."""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock

import sgmem
from sgmem.errors import InvalidInputError
from sgmem.text import count_tokens
from sgmem.validate import check_int, check_mode, check_saving, check_score, fit_query

from ._messages import check_key, check_memory, check_messages, query_text, to_keep

__all__ = ["DEFAULT_BLOCK_THREAD", "SGMemMemoryBlock"]

logger = logging.getLogger(__name__)

#: Thread for flushed messages that carry no ``session_id`` when the block has no ``thread``.
DEFAULT_BLOCK_THREAD = "llama_index_memory"
_REMEMBERED_QUERIES = 32  # recent (content -> query) pairs kept so atruncate can re-ask sgmem


class SGMemMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``llama_index.core.memory.Memory``, recalled by sgmem.

    When LlamaIndex's ``Memory`` flushes messages out of its short-term queue,
    this block stores them in sgmem (thread: the block's ``thread``, else the
    ``Memory``'s ``session_id``). When the ``Memory`` is read, the block
    returns sgmem's context for the latest user message (or the ``input`` the
    caller passed), from every thread of ``scope``; ``Memory`` puts it in the
    system message inside ``<{name}>`` tags.

    Setup:
        ``pip install 'sgmem[llama-index]'``

    Instantiate:
        >>> import sgmem                                              # doctest: +SKIP
        >>> from llama_index.core.memory import Memory
        >>> block = SGMemMemoryBlock(memory=sgmem.Memory("./memory"), scope="alice")
        >>> memory = Memory.from_defaults(session_id="chat-2", memory_blocks=[block])

    Use:
        >>> agent.run("What is my cat called?", memory=memory)         # doctest: +SKIP

    Args:
        memory: the sgmem store.
        scope: whose memory this is.
        thread: where flushed messages go (default: the ``Memory``'s session id).
        budget_tokens: token budget of the recalled block.
        mode: sgmem retrieval mode (``None``: the store's default).
        min_score: leave out memories whose :attr:`sgmem.Hit.relevance` is
            below this (``None``: the store's ``Config.min_relevance``).
        priority: as ``BaseMemoryBlock``, but 1 by default (LlamaIndex never
            truncates priority 0, so the block would overrun the ``Memory``'s
            token budget): the block is shrunk, asking sgmem again with a
            smaller budget, before short-term messages are dropped.
        save_tool_messages: also store tool traffic flushed by the ``Memory``
            (assistant messages that call a tool, tool results); default False,
            as ``SGMemMemory`` and LangChain's ``SGMemMiddleware``.
        save_only_user_messages: store only the user's messages (default False).
        name, description, accept_short_term_memory: as ``BaseMemoryBlock``.
    """

    name: str = Field(default="sgmem_memory", description="The name of the memory block.")
    scope: str = Field(description="The sgmem scope (user or tenant).")
    thread: str | None = Field(default=None, description="Thread for flushed messages; default the session id.")
    budget_tokens: int = Field(default=1000, description="Token budget of the recalled context.")
    mode: str | None = Field(default=None, description="sgmem retrieval mode; None for the store's default.")
    min_score: float | None = Field(default=None, description="Relevance cutoff in [0, 1]; None for the store's.")
    priority: int = Field(default=1, description="Truncation priority; 0 would never be truncated.")
    save_tool_messages: bool = Field(default=False, description="Also store tool calls and tool results.")
    save_only_user_messages: bool = Field(default=False, description="Store only the user's messages.")
    _memory: sgmem.Memory = PrivateAttr()
    _queries: OrderedDict[str, str] = PrivateAttr(default_factory=OrderedDict)
    _last_recall: sgmem.RecallTrace | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        memory: sgmem.Memory,
        scope: str,
        thread: str | None = None,
        budget_tokens: int = 1000,
        mode: str | None = None,
        min_score: float | None = None,
        save_tool_messages: bool = False,
        save_only_user_messages: bool = False,
        **kwargs: Any,
    ) -> None:
        memory = check_memory(memory)
        check_score(min_score, "min_score", 0.0)
        check_saving(save_tool_messages, save_only_user_messages)
        super().__init__(  # type: ignore[call-arg]  # pydantic fields; mypy runs without the pydantic plugin
            scope=check_key(scope, "scope", memory),
            thread=check_key(thread, "thread", memory) if thread is not None else None,
            budget_tokens=check_int(budget_tokens, "budget_tokens", 1),
            mode=check_mode(mode),
            min_score=min_score,
            save_tool_messages=save_tool_messages,
            save_only_user_messages=save_only_user_messages,
            **kwargs,
        )
        self._memory = memory

    @property
    def memory(self) -> sgmem.Memory:
        """The sgmem store behind this block."""
        return self._memory

    @property
    def last_recall(self) -> sgmem.RecallTrace | None:
        """What the block last recalled: the query, the block, the hits with their relevance and ``why``,
        what the cutoff removed (``None`` before the first recall)."""
        return self._last_recall

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """sgmem's context for the latest user message ("" when there is none or nothing is relevant)."""
        query = next((query_text(m) for m in reversed(messages or []) if m.role == MessageRole.USER), "")
        if not query:
            return ""
        query = fit_query(query, self._memory.config.limits, logger)  # an over-long message never fails the turn
        self._last_recall = await self._memory.acontext_trace(
            query, scope=self.scope, budget_tokens=self.budget_tokens, mode=self.mode, min_score=self.min_score
        )
        text = self._last_recall.text
        logger.debug(
            "SGMemMemoryBlock %r recalled %d memories for scope %r (%s):\n%s",
            self.name,
            len(self._last_recall.message_ids),
            self.scope,
            ", ".join(self._last_recall.message_ids) or "nothing passed the cutoff",
            text,
        )
        if text:
            self._queries[text] = query
            self._queries.move_to_end(text)
            while len(self._queries) > _REMEMBERED_QUERIES:
                self._queries.popitem(last=False)
        return text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store flushed messages in sgmem, one transaction per thread (tool traffic only when asked)."""
        if isinstance(messages, list):
            messages = to_keep(messages, self.save_tool_messages, self.save_only_user_messages)
        if not messages:
            return
        groups: dict[str, list[ChatMessage]] = {}
        for m in messages:
            session = m.additional_kwargs.get("session_id") if isinstance(m, ChatMessage) else None
            thread = self.thread or (session if isinstance(session, str) and session.strip() else DEFAULT_BLOCK_THREAD)
            groups.setdefault(thread, []).append(m)
        # validate every group before writing any, so bad input stores nothing
        batches = [
            (thread, check_messages(msgs, "messages", self._memory, split=True)) for thread, msgs in groups.items()
        ]
        await self._memory.aadd_many(batches, scope=self.scope)  # one embedding pass, one transaction per thread

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Shrink the block by ``tokens_to_truncate`` tokens.

        sgmem is asked again for the same query with the smaller budget, so
        the most relevant memories stay. ``None`` (drop the block) when nothing
        would be left or the content is not one this block produced.
        """
        if isinstance(tokens_to_truncate, bool) or not isinstance(tokens_to_truncate, (int, float)):
            raise InvalidInputError("tokens_to_truncate", tokens_to_truncate, "a number of tokens")
        if tokens_to_truncate <= 0:
            return content
        target = count_tokens(content) - math.ceil(tokens_to_truncate)
        query = self._queries.get(content)
        if target <= 0 or query is None:
            return None
        text = await self._memory.acontext(
            query, scope=self.scope, budget_tokens=target, mode=self.mode, min_score=self.min_score
        )
        return text or None
