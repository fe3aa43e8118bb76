"""``SGMemChatStore``: a LlamaIndex ``BaseChatStore`` kept in an sgmem store."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.storage.chat_store.base import BaseChatStore

import sgmem
from sgmem.errors import InvalidInputError

from ._messages import check_key, check_memory, check_message, check_messages, from_sgmem
from ._persist import open_store, reference
from ._persist import remember as remember_store

__all__ = ["DEFAULT_SCOPE", "SGMemChatStore"]

#: The scope a chat store uses when none is given.
DEFAULT_SCOPE = "llama_index"


class SGMemChatStore(BaseChatStore):
    """LlamaIndex chat histories stored, indexed and searchable in sgmem.

    Each chat-store key is a thread of one sgmem scope, so everything written
    here is also long-term memory that :class:`SGMemRetriever`,
    :class:`SGMemMemory` and ``sgmem.Memory.search`` can recall. Messages are
    replayed exactly (role, blocks, ``additional_kwargs``).

    Semantics follow ``SimpleChatStore`` (a shared contract test proves it):
    ``set_messages`` replaces, ``add_message`` appends (or inserts at ``idx``),
    ``delete_message(key, idx)`` deletes by *position* (negative positions
    count from the end) and returns the message, or ``None`` when the key or
    position does not exist. Differences: keys must be non-empty strings (an
    empty key is an :class:`sgmem.InvalidInputError`, nothing is stored), and a
    key whose messages were all deleted, or set to ``[]``, no longer appears in
    :meth:`get_keys` (sgmem has no empty threads).

    Setup:
        ``pip install 'sgmem[llama-index]'``

    Instantiate:
        >>> import sgmem                                             # doctest: +SKIP
        >>> store = SGMemChatStore(memory=sgmem.Memory("./memory"), scope="alice")

    Use:
        >>> from llama_index.core.llms import ChatMessage            # doctest: +SKIP
        >>> store.add_message("chat-1", ChatMessage(role="user", content="Hi, I'm Alice."))
        >>> store.get_messages("chat-1")[0].content
        "Hi, I'm Alice."

    Args:
        memory: the sgmem store.
        scope: whose memory the keys belong to (default ``"llama_index"``).
    """

    scope: str = Field(default=DEFAULT_SCOPE, description="The sgmem scope whose threads are the chat-store keys.")
    store_path: str | None = Field(default=None, description="The sgmem store's path (None: in memory).")
    store_url: str | None = Field(default=None, description="A PostgreSQL store's URL, without its password.")
    store_config: dict[str, Any] | None = Field(default=None, description="The store's sgmem.Config, as saved.")
    _memory: sgmem.Memory = PrivateAttr()

    def __init__(self, memory: sgmem.Memory, scope: str = DEFAULT_SCOPE, **saved: Any) -> None:
        memory = check_memory(memory)
        unknown = sorted(set(saved) - {"store_path", "store_url", "store_config"})
        if unknown:
            raise InvalidInputError("SGMemChatStore(**kwargs)", unknown, "only memory and scope")
        try:  # the store's reference (sgmem.saved): how from_dict reopens it; none for an in-memory store
            ref = reference(memory, "SGMemChatStore")
        except sgmem.SgmemError:
            ref = {}
        super().__init__(  # type: ignore[call-arg]  # pydantic fields; mypy runs without the pydantic plugin
            scope=check_key(scope, "scope", memory),
            store_path=ref.get("store_path"),
            store_url=ref.get("store_url"),
            store_config=ref.get("config"),
        )
        self._memory = memory
        remember_store(memory)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> SGMemChatStore:  # type: ignore[override]
        """Rebuild a saved chat store (``ChatMemoryBuffer.from_dict`` calls this), reopening its store
        (by path, or a PostgreSQL store by its URL: see :mod:`sgmem.saved` for the password) with its Config.

        Raises:
            sgmem.InvalidInputError: it was saved from an in-memory store, which cannot be rebuilt.
        """
        data = {**data, **kwargs}
        ref = {"store_path": data.get("store_path"), "store_url": data.get("store_url")}
        memory = data.get("memory") or open_store({**ref, "config": data.get("store_config")}, "SGMemChatStore")
        return cls(memory=memory, scope=data.get("scope", DEFAULT_SCOPE))

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "SGMemChatStore"

    @property
    def memory(self) -> sgmem.Memory:
        """The sgmem store behind this chat store."""
        return self._memory

    def _key(self, key: Any) -> str:
        return check_key(key, "key", self._memory)

    def _stored(self, key: str) -> list[sgmem.Message]:
        return self._memory.messages(scope=self.scope, thread=key)

    # ------------------------------------------------------------------ write
    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the messages of ``key`` (``[]`` clears it).

        Messages already stored as the head of the new list are kept as they
        are (same ids and times), so re-setting a history with new messages at
        the end only adds those. Otherwise the thread is replaced in one
        transaction: bad input, a limit or a crash leaves the old messages as
        they were. With many hosts on one store, each call applies to the
        thread as it is when it commits (:meth:`sgmem.Memory.set_thread`).
        """
        key = self._key(key)
        new = check_messages(messages, "messages", self._memory)
        self._memory.set_thread(new, scope=self.scope, thread=key)

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` to ``key``, or insert it before position ``idx`` (as ``list.insert``).

        An insert rewrites the messages after ``idx`` in the same transaction,
        checked against concurrent writers on any host
        (:meth:`sgmem.Memory.insert`): if it fails, nothing changed.
        """
        key = self._key(key)
        if idx is not None and (isinstance(idx, bool) or not isinstance(idx, int)):
            raise InvalidInputError("idx", idx, "an int position or None (append)")
        new = check_message(message, "message", self._memory)
        if idx is None:
            self._memory.add([new], scope=self.scope, thread=key)
            return
        self._memory.insert([new], scope=self.scope, thread=key, position=idx)

    def add_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Append several messages to ``key`` in one transaction (all or none)."""
        key = self._key(key)
        new = check_messages(messages, "messages", self._memory)
        if new:
            self._memory.add(new, scope=self.scope, thread=key)

    async def async_add_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Async :meth:`add_messages`."""
        await asyncio.to_thread(self.add_messages, key, messages)

    # ------------------------------------------------------------------- read
    def get_messages(self, key: str) -> list[ChatMessage]:
        """The messages of ``key``, oldest first (``[]`` for an unknown key)."""
        return [from_sgmem(m) for m in self._stored(self._key(key))]

    def get_keys(self) -> list[str]:
        """The keys (threads) holding messages, in order of their first message."""
        return self._memory.threads(scope=self.scope)

    # ----------------------------------------------------------------- delete
    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete every message of ``key``; return them, or ``None`` for an unknown key.

        What is returned is what was deleted, even while other hosts add to the
        key (:meth:`sgmem.Memory.clear_thread`).
        """
        gone = self._memory.clear_thread(scope=self.scope, thread=self._key(key))
        return [from_sgmem(m) for m in gone] if gone else None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` of ``key`` and return it.

        Negative positions count from the end. Returns ``None`` (and deletes
        nothing) when the key or the position does not exist. With many hosts
        on one store, each call deletes and returns a different message
        (:meth:`sgmem.Memory.pop`).
        """
        key = self._key(key)
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise InvalidInputError("idx", idx, "an int position in the key's messages")
        gone = self._memory.pop(scope=self.scope, thread=key, position=idx)
        return from_sgmem(gone) if gone is not None else None

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the last message of ``key`` and return it (``None`` for an unknown key)."""
        gone = self._memory.pop(scope=self.scope, thread=self._key(key))
        return from_sgmem(gone) if gone is not None else None
