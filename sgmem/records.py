"""The record reads of :class:`sgmem.Memory`: replay, lookup, listings, history and stats.

A mixin, like :mod:`sgmem.aio`: these calls read the system of record (the
store) and run no retrieval, so they live apart from the facade's write and
search paths.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .errors import InvalidInputError, NotFoundError
from .store import versions as stored_versions
from .store.schema import SCHEMA_VERSION
from .types import MemoryVersion, Message, MessageVersion, Stats
from .validate import check_int, check_name, check_names

__all__ = ["RecordMethods"]


class RecordMethods:
    """``history``, ``versions``, ``messages``, ``get``, ``threads``, ``scopes`` and ``stats`` for :class:`sgmem.Memory`."""

    def history(self: Any, memory_id: str, *, scope: str) -> list[MemoryVersion]:
        """Every version of a generated memory (fact, summary, insight), oldest first.

        Args:
            memory_id: the memory's id, from :attr:`Hit.memory_id` (e.g. ``"fact:12"``).
            scope: the scope that holds it (memories of other scopes are never read).

        Returns:
            Its versions with their text, time, cause (``"add"``, ``"merge-rule"``,
            ``"merge-llm"``, ``"reverted"``…) and source messages.

        Raises:
            NotFoundError: the scope holds no memory with this id.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        with self._lock:
            scope_id = self._store.scope_id(scope)
        out = self._derived.history(scope_id, memory_id) if scope_id is not None else None
        if out is None:
            raise NotFoundError(
                f"scope {scope!r} holds no generated memory {memory_id!r}; take ids from Hit.memory_id."
            )
        return out

    def versions(self: Any, message_id: str, *, scope: str) -> list[MessageVersion]:
        """Every text of a stored message, oldest first; the last one is the current text.

        A message that was never edited has one version. Edits
        (:meth:`sgmem.Memory.edit`, ``sgmem ingest`` of a file whose message
        changed) keep the texts they replaced; forgetting the message forgets
        them too.

        Raises:
            NotFoundError: the scope holds no message with this id.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        message_id = check_name(message_id, "message_id", self.config.limits)
        with self._lock, self._store.read():
            sid = self._store.scope_id(scope)
            found = stored_versions.of_message(self._store.conn, sid, message_id) if sid is not None else None
            current = self._store.messages_by_ext_ids(sid, [message_id]) if found is not None else []
        if found is None or not current:
            raise NotFoundError(
                f"scope {scope!r} holds no message {message_id!r}; take ids from Hit.message_ids or Memory.messages."
            )
        out = [
            MessageVersion(
                message_id=message_id,
                version=n,
                id=v.ext_id,
                role=v.role,
                content=v.content,
                name=v.name,
                at=datetime.fromisoformat(v.at),
                metadata=json.loads(v.metadata),
                replaced_at=datetime.fromisoformat(v.replaced_at),
            )
            for n, v in enumerate(found[1], 1)
        ]
        m = current[0]
        out.append(
            MessageVersion(
                message_id=message_id,
                version=len(out) + 1,
                id=message_id,
                role=m.role,
                content=m.content,
                name=m.name,
                at=m.at,  # type: ignore[arg-type]  # stored messages always have a time
                metadata=dict(m.metadata),
            )
        )
        return out

    def messages(self: Any, *, scope: str, thread: str | None = None, limit: int | None = None) -> list[Message]:
        """Exact replay of what was added to ``scope`` (or one thread), in order.

        With ``limit``, the most recent ``limit`` messages, oldest first.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        if thread is not None:
            thread = check_name(thread, "thread", self.config.limits)
        if limit is not None:
            limit = check_int(limit, "limit", 1, 2**63 - 1)  # SQLite INTEGER range
        with self._lock:
            scope_id = self._store.scope_id(scope)
            if scope_id is None:
                return []
            return self._store.messages(scope_id, thread, limit)

    def get(self: Any, *, scope: str, message_ids: Sequence[str]) -> list[Message]:
        """The stored messages of ``scope`` with these ids, in the order they were added.

        Ids not stored in the scope are skipped, so ``len(result)`` tells how
        many were found. A direct lookup: it costs the same whatever the scope's size.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        if message_ids is None:
            raise InvalidInputError("message_ids", message_ids, "a list of message ids")
        ids = check_names(message_ids, "message_ids", self.config.limits) or []
        with self._lock:
            scope_id = self._store.scope_id(scope)
            if scope_id is None or not ids:
                return []
            return self._store.messages_by_ext_ids(scope_id, ids)

    def threads(self: Any, *, scope: str) -> list[str]:
        """The threads of ``scope``, in order of their first message."""
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        with self._lock:
            scope_id = self._store.scope_id(scope)
            return self._store.threads(scope_id) if scope_id is not None else []

    def scopes(self: Any) -> list[str]:
        """Every scope that holds messages."""
        self._check_open()
        with self._lock:
            return self._store.scope_names()

    # ------------------------------------------------------------------ stats
    def stats(self: Any, scope: str | None = None) -> Stats:
        """Counts per scope (or for one scope) plus the store's identity."""
        self._check_open()
        with self._lock, self._store.read():
            if scope is not None:
                scope = check_name(scope, "scope", self.config.limits)
                sid = self._store.scope_id(scope)
                names = [(sid, scope)] if sid is not None else []
            else:
                names = [(i, n) for n in self._store.scope_names() if (i := self._store.scope_id(n)) is not None]
            scopes = tuple(
                dataclasses.replace(self._store.scope_stats(sid, n), **self._derived.stats(self._store.conn, sid))
                for sid, n in names
                if sid is not None
            )
        return Stats(
            path=self._where or (str(self.path) if self.path else None),
            schema_version=SCHEMA_VERSION,
            embedder=self.embedder.name,
            dim=int(self.embedder.dim),
            scopes=scopes,
        )
