"""Async twins of :class:`sgmem.Memory`'s calls: each runs the sync call in a worker thread.

SQLite and the embedder block; ``asyncio.to_thread`` keeps the event loop free
while they work. The Memory's own lock orders calls from many tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from .types import (
    AddResult,
    DeleteReceipt,
    Hit,
    MemoryVersion,
    Message,
    MessageVersion,
    RecallTrace,
    SentenceLink,
    Stats,
)

__all__ = ["AsyncMethods"]


class AsyncMethods:
    """``aadd``, ``asearch``, ``acontext``, … for :class:`sgmem.Memory`."""

    async def aadd(self: Any, messages: Any, *, scope: str, thread: str, at: datetime | str | None = None) -> AddResult:
        """Async :meth:`add`; runs in a worker thread, never blocking the loop."""
        return await asyncio.to_thread(self.add, messages, scope=scope, thread=thread, at=at)

    async def areplace(
        self: Any,
        messages: Any,
        *,
        scope: str,
        thread: str,
        message_ids: Sequence[str] | None = None,
        at: datetime | str | None = None,
    ) -> AddResult:
        """Async :meth:`replace`; runs in a worker thread, never blocking the loop."""
        return await asyncio.to_thread(
            self.replace, messages, scope=scope, thread=thread, message_ids=message_ids, at=at
        )

    async def ainsert(self: Any, messages: Any, *, scope: str, thread: str, position: int) -> AddResult:
        """Async :meth:`insert`; runs in a worker thread, never blocking the loop."""
        return await asyncio.to_thread(self.insert, messages, scope=scope, thread=thread, position=position)

    async def aset_thread(self: Any, messages: Any, *, scope: str, thread: str) -> AddResult:
        """Async :meth:`set_thread`; runs in a worker thread, never blocking the loop."""
        return await asyncio.to_thread(self.set_thread, messages, scope=scope, thread=thread)

    async def aedit(self: Any, edits: Any, *, scope: str, thread: str, append: Sequence[Any] = ()) -> AddResult:
        """Async :meth:`edit`; runs in a worker thread, never blocking the loop."""
        return await asyncio.to_thread(self.edit, edits, scope=scope, thread=thread, append=append)

    async def apop(self: Any, *, scope: str, thread: str, position: int = -1) -> Message | None:
        """Async :meth:`pop`."""
        return await asyncio.to_thread(self.pop, scope=scope, thread=thread, position=position)

    async def aclear_thread(self: Any, *, scope: str, thread: str) -> list[Message]:
        """Async :meth:`clear_thread`."""
        return await asyncio.to_thread(self.clear_thread, scope=scope, thread=thread)

    async def aneighbours(self: Any, message_id: str, *, scope: str, limit: int = 20) -> list[SentenceLink]:
        """Async :meth:`neighbours`."""
        return await asyncio.to_thread(self.neighbours, message_id, scope=scope, limit=limit)

    async def aadd_many(
        self: Any, items: Sequence[Any], *, scope: str, at: datetime | str | None = None
    ) -> list[AddResult]:
        """Async :meth:`add_many`."""
        return await asyncio.to_thread(self.add_many, items, scope=scope, at=at)

    async def asearch(
        self: Any, query: str, *, scope: str, k: int = 10, mode: str | None = None, **filters: Any
    ) -> list[Hit]:
        """Async :meth:`search` (``filters``: its keyword arguments, ``min_score`` among them)."""
        return await asyncio.to_thread(lambda: self.search(query, scope=scope, k=k, mode=mode, **filters))

    async def acontext(
        self: Any,
        query: str,
        *,
        scope: str,
        budget_tokens: int = 2000,
        mode: str | None = None,
        exclude_message_ids: Iterable[str] | None = None,
        min_score: float | None = None,
        now: datetime | str | None = None,
    ) -> str:
        """Async :meth:`context`."""
        return await asyncio.to_thread(
            self.context,
            query,
            scope=scope,
            budget_tokens=budget_tokens,
            mode=mode,
            exclude_message_ids=exclude_message_ids,
            min_score=min_score,
            now=now,
        )

    async def acontext_trace(
        self: Any,
        query: str,
        *,
        scope: str,
        budget_tokens: int = 2000,
        mode: str | None = None,
        exclude_message_ids: Iterable[str] | None = None,
        min_score: float | None = None,
        now: datetime | str | None = None,
    ) -> RecallTrace:
        """Async :meth:`context_trace`."""
        return await asyncio.to_thread(
            self.context_trace,
            query,
            scope=scope,
            budget_tokens=budget_tokens,
            mode=mode,
            exclude_message_ids=exclude_message_ids,
            min_score=min_score,
            now=now,
        )

    async def amessages(self: Any, *, scope: str, thread: str | None = None, limit: int | None = None) -> list[Message]:
        """Async :meth:`messages`."""
        return await asyncio.to_thread(self.messages, scope=scope, thread=thread, limit=limit)

    async def aget(self: Any, *, scope: str, message_ids: Sequence[str]) -> list[Message]:
        """Async :meth:`get`."""
        return await asyncio.to_thread(self.get, scope=scope, message_ids=message_ids)

    async def ahistory(self: Any, memory_id: str, *, scope: str) -> list[MemoryVersion]:
        """Async :meth:`history`."""
        return await asyncio.to_thread(self.history, memory_id, scope=scope)

    async def aversions(self: Any, message_id: str, *, scope: str) -> list[MessageVersion]:
        """Async :meth:`versions`."""
        return await asyncio.to_thread(self.versions, message_id, scope=scope)

    async def adelete(
        self: Any, *, scope: str, thread: str | None = None, message_ids: Sequence[str] | None = None
    ) -> DeleteReceipt:
        """Async :meth:`delete`."""
        return await asyncio.to_thread(self.delete, scope=scope, thread=thread, message_ids=message_ids)

    async def astats(self: Any, scope: str | None = None) -> Stats:
        """Async :meth:`stats`."""
        return await asyncio.to_thread(self.stats, scope)
