"""``BaseChatMessageHistory`` over one sgmem thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from sgmem import Memory
from sgmem.parts import join_parts, split_message

from ._messages import from_sgmem, to_sgmem_all
from ._util import check_memory, check_name_arg

__all__ = ["SGMemChatMessageHistory"]


class SGMemChatMessageHistory(BaseChatMessageHistory):
    """Chat history stored in sgmem: one thread of one scope, replayed exactly.

    Every message added is also indexed, so what a user says in one chat is
    found later by :class:`~langchain_sgmem.SGMemRetriever`,
    :class:`~langchain_sgmem.SGMemMiddleware` or ``Memory.search`` in any other
    thread of the same scope.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemChatMessageHistory

            mem = sgmem.Memory("./memory")
            history = SGMemChatMessageHistory(mem, scope="alice", thread="chat-1")

    Use:
        .. code-block:: python

            from langchain_core.messages import AIMessage, HumanMessage

            history.add_messages([HumanMessage("I adopted a cat named Miso."), AIMessage("Lovely name!")])
            history.messages          # [HumanMessage(...), AIMessage(...)], exactly as added
            history.clear()           # removes the thread and everything derived from it

        With ``RunnableWithMessageHistory`` (deprecated upstream, still common):

        .. code-block:: python

            from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
            from langchain_core.runnables.history import RunnableWithMessageHistory

            # `model` is any LangChain chat model, e.g. init_chat_model("openai:gpt-4.1-mini")
            prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{input}")])
            chain_with_history = RunnableWithMessageHistory(
                prompt | model,
                lambda session_id: SGMemChatMessageHistory(mem, scope="alice", thread=session_id),
                input_messages_key="input",
                history_messages_key="history",
            )
            chain_with_history.invoke({"input": "Hi!"}, {"configurable": {"session_id": "chat-1"}})

    Args:
        memory: the :class:`sgmem.Memory` to write through.
        scope: whose memory this is (a user or tenant id).
        thread: the conversation; ``messages`` replays only this thread.

    Raises:
        sgmem.InvalidInputError: ``memory`` is not a ``sgmem.Memory`` or a
            name is empty; later, a message type that cannot be mapped (nothing
            of that call is stored).
    """

    def __init__(self, memory: Memory, *, scope: str, thread: str) -> None:
        self.memory = check_memory(memory)
        self.scope = check_name_arg(self.memory, scope, "scope")
        self.thread = check_name_arg(self.memory, thread, "thread")

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # the base declares a plain attribute
        """The thread's messages, in order, exactly as they were added."""
        return [from_sgmem(m) for m in join_parts(self.memory.messages(scope=self.scope, thread=self.thread))]

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        return [from_sgmem(m) for m in join_parts(await self.memory.amessages(scope=self.scope, thread=self.thread))]

    def _items(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        # a message over max_message_chars is stored in parts (sgmem.parts), joined again by `messages`
        limits = self.memory.config.limits
        return [part for item in to_sgmem_all(messages, limits=limits) for part in split_message(item, limits)]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages (one transaction; all or nothing) and index them."""
        items = self._items(messages)
        if items:
            self.memory.add(items, scope=self.scope, thread=self.thread)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages`."""
        items = self._items(messages)
        if items:
            await self.memory.aadd(items, scope=self.scope, thread=self.thread)

    def clear(self) -> None:
        """Delete the thread with everything derived from it (other threads stay)."""
        self.memory.delete(scope=self.scope, thread=self.thread)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await self.memory.adelete(scope=self.scope, thread=self.thread)

    def __repr__(self) -> str:
        return f"SGMemChatMessageHistory({self.memory!r}, scope={self.scope!r}, thread={self.thread!r})"
