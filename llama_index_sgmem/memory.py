"""``SGMemMemory``: sgmem as the ``memory=`` of LlamaIndex chat engines and agents."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import BaseMemory
from llama_index.core.utils import get_tokenizer

import sgmem
from sgmem.errors import InvalidInputError
from sgmem.parts import join_parts, joined, part_runs
from sgmem.validate import check_int, check_mode, check_saving, check_score, fit_query

from . import _persist
from ._messages import check_key, check_memory, check_messages, from_sgmem, query_text, to_keep
from .chat_store import SGMemChatStore

__all__ = ["DEFAULT_CONTEXT_TEMPLATE", "DEFAULT_CONTEXT_TOKENS", "DEFAULT_TOKEN_LIMIT", "SGMemMemory"]

logger = logging.getLogger(__name__)

#: Tokens of recent thread messages :meth:`SGMemMemory.get` returns by default (as ``ChatMemoryBuffer``).
DEFAULT_TOKEN_LIMIT = 3000
#: Token budget of the long-term context system message by default.
DEFAULT_CONTEXT_TOKENS = 1000
#: The system message that carries long-term context; ``{context}`` is replaced by sgmem's block.
DEFAULT_CONTEXT_TEMPLATE = (
    "Memories from earlier conversations with this user follow. Use them when they are relevant.\n\n{context}"
)
_TOKEN_LIMIT_RATIO = 0.75  # of an LLM's context window, as ChatMemoryBuffer.from_defaults
_FROM_DEFAULTS_EXTRAS = (
    "context_tokens",
    "mode",
    "context_template",
    "tokenizer_fn",
    "min_score",
    "reset_deletes",
    "save_tool_messages",
    "save_only_user_messages",
)


logger = logging.getLogger(__name__)


def _new_thread() -> str:
    return f"thread-{uuid.uuid4().hex}"


class SGMemMemory(BaseMemory):
    """Chat memory for LlamaIndex engines and agents: the thread's recent messages plus long-term recall.

    :meth:`get` returns the most recent messages of ``thread`` that fit in
    ``token_limit`` (dropped from the oldest, never starting on an assistant or
    tool message, as ``ChatMemoryBuffer``) and, first, a system message with
    what sgmem recalls from the whole ``scope`` - every earlier thread, and the
    parts of this one that no longer fit - for the query: ``input`` when the
    caller gives it, else the thread's latest user message (chat engines such
    as ``SimpleChatEngine`` and agents call ``get()`` without ``input``).
    Messages already in the window are not repeated in the recalled context.
    Other scopes are never read. The two budgets are separate: at most
    ``token_limit`` tokens of thread messages plus ``context_tokens`` of
    recalled context.

    Writes go straight to sgmem (``put``, ``put_messages``); ``set`` replaces
    the thread's history. ``reset`` (a chat engine's ``reset()``) starts a new
    thread and forgets nothing: the old conversation stays in long-term
    memory and is recalled when relevant. To delete it, call :meth:`forget`,
    or create the memory with ``reset_deletes=True``. Async twins run in a
    worker thread and never block the event loop.

    Setup:
        ``pip install 'sgmem[llama-index]'``

    Instantiate:
        >>> import sgmem                                              # doctest: +SKIP
        >>> from llama_index_sgmem import SGMemMemory
        >>> memory = SGMemMemory.from_defaults(memory=sgmem.Memory("./memory"), scope="alice", thread="chat-2")

    Use:
        >>> from llama_index.core.chat_engine import SimpleChatEngine   # doctest: +SKIP
        >>> engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
        >>> engine.chat("What is my cat called?")  # recalls what Alice said in chat-1

    Args:
        memory: the sgmem store.
        scope: whose memory this is (a user, a tenant); scopes never mix.
        thread: this conversation (default: a new unique name).
        token_limit: tokens of recent thread messages returned by :meth:`get`.
        context_tokens: token budget of the recalled context (0 disables it).
        mode: sgmem retrieval mode (``None``: the store's default).
        context_template: the system message; ``{context}`` is replaced by the
            recalled block.
        tokenizer_fn: counts tokens for ``token_limit`` (LlamaIndex's default tokenizer).
        min_score: leave recalled memories whose :attr:`sgmem.Hit.relevance`
            is below this out (``None``: the store's ``Config.min_relevance``).
        reset_deletes: make :meth:`reset` delete the thread for good
            (default False: it starts a new thread, the old one stays recallable).
        save_tool_messages: also store tool traffic: assistant messages that
            call a tool and tool results (default False, as LangChain's
            ``SGMemMiddleware``: an agent's tool calls and their outputs are
            neither kept in the thread nor recalled).
        save_only_user_messages: store only the user's messages (default
            False); cannot be combined with ``save_tool_messages``.
    """

    scope: str = Field(description="The sgmem scope (user or tenant) of this memory.")
    thread: str = Field(default_factory=_new_thread, description="The sgmem thread of this conversation.")
    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, description="Tokens of recent thread messages returned.")
    context_tokens: int = Field(default=DEFAULT_CONTEXT_TOKENS, description="Token budget of recalled context.")
    mode: str | None = Field(default=None, description="sgmem retrieval mode; None for the store's default.")
    context_template: str = Field(default=DEFAULT_CONTEXT_TEMPLATE, description="System message; {context} is filled.")
    tokenizer_fn: Callable[[str], list] = Field(default_factory=get_tokenizer, exclude=True)
    min_score: float | None = Field(default=None, description="Relevance cutoff of recall; None for the store's.")
    reset_deletes: bool = Field(default=False, description="reset() deletes the thread instead of starting anew.")
    save_tool_messages: bool = Field(default=False, description="Also store tool calls and tool results.")
    save_only_user_messages: bool = Field(default=False, description="Store only the user's messages.")
    _store: SGMemChatStore = PrivateAttr()
    _last_recall: sgmem.RecallTrace | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        memory: sgmem.Memory,
        scope: str,
        thread: str | None = None,
        token_limit: int = DEFAULT_TOKEN_LIMIT,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        mode: str | None = None,
        context_template: str = DEFAULT_CONTEXT_TEMPLATE,
        tokenizer_fn: Callable[[str], list] | None = None,
        min_score: float | None = None,
        reset_deletes: bool = False,
        save_tool_messages: bool = False,
        save_only_user_messages: bool = False,
    ) -> None:
        memory = check_memory(memory)
        check_saving(save_tool_messages, save_only_user_messages)
        check_score(min_score, "min_score", 0.0)
        if not isinstance(reset_deletes, bool):
            raise InvalidInputError("reset_deletes", reset_deletes, "True or False")
        if not isinstance(context_template, str) or "{context}" not in context_template:
            raise InvalidInputError("context_template", context_template, "a string containing '{context}'")
        super().__init__(  # type: ignore[call-arg]  # pydantic fields; mypy runs without the pydantic plugin
            scope=check_key(scope, "scope", memory),
            thread=check_key(thread, "thread", memory) if thread is not None else _new_thread(),
            token_limit=check_int(token_limit, "token_limit", 1),
            context_tokens=check_int(context_tokens, "context_tokens", 0),
            mode=check_mode(mode),
            context_template=context_template,
            tokenizer_fn=tokenizer_fn or get_tokenizer(),
            min_score=min_score,
            reset_deletes=reset_deletes,
            save_tool_messages=save_tool_messages,
            save_only_user_messages=save_only_user_messages,
        )
        self._store = SGMemChatStore(memory=memory, scope=self.scope)
        _persist.remember(memory)

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "SGMemMemory"

    # ------------------------------------------------------------ saving
    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings plus the store's reference: enough for :meth:`from_dict` (and a workflow ``Context``)
        to rebuild it.

        The store is saved as ``store_path`` (a directory) or ``store_url`` (a
        PostgreSQL store's URL with its password removed), with ``config``,
        the ``sgmem.Config`` it was opened with (restored with it; secrets are
        never saved: see :mod:`sgmem.saved` for how a password or
        ``pg_scope_key`` is found again). ``tokenizer_fn``, the store's
        embedder and LLM are not saved (defaults are used again, or pass
        ``memory=`` to :meth:`from_dict`).

        Raises:
            sgmem.SgmemError: the store is in memory (no path), so it could not be rebuilt.
        """
        ref = _persist.reference(self.memory, "SGMemMemory")
        data = super().to_dict(**kwargs)
        data.update(ref)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> SGMemMemory:  # type: ignore[override]
        """Rebuild a memory saved by :meth:`to_dict`, opening its store (or reusing it when already open)."""
        data = {**data, **kwargs}
        data.pop("class_name", None)
        memory = data.pop("memory", None) or _persist.open_store(data, "SGMemMemory")
        for key in ("store_path", "store_url", "config"):
            data.pop(key, None)
        return cls(memory=memory, **data)

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled as its saved form: the store's connection and caches are reopened, not copied;
        # an in-memory store fails here, at pickling time, with the reason
        return (_restore_memory, (self.to_dict(),))

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        memory: sgmem.Memory | None = None,
        scope: str | None = None,
        thread: str | None = None,
        token_limit: int | None = None,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        **kwargs: Any,
    ) -> SGMemMemory:
        """Build the memory from what LlamaIndex engines pass.

        With an ``llm``, recent messages plus recalled context take at most 75%
        of its context window (as ``ChatMemoryBuffer``), leaving the rest for
        the system prompt and the answer: ``context_tokens`` (default 1000) is
        capped at a third of that share and ``token_limit`` gets what is left
        (a 4,096-token model: 1,000 + 2,072). Without an LLM, ``token_limit``
        is 3000. ``chat_history`` replaces the thread's stored history. Other
        keyword arguments: ``context_tokens``, ``mode``, ``context_template``,
        ``tokenizer_fn``, ``min_score``, ``reset_deletes``, ``save_tool_messages``,
        ``save_only_user_messages``.
        """
        if memory is None or scope is None:
            raise InvalidInputError(
                "memory" if memory is None else "scope",
                None,
                "an sgmem.Memory and a scope name",
                "Pass both: SGMemMemory.from_defaults(memory=sgmem.Memory('./memory'), scope='user-42').",
            )
        unknown = sorted(set(kwargs) - set(_FROM_DEFAULTS_EXTRAS))
        if unknown:
            raise InvalidInputError("from_defaults(**kwargs)", unknown, f"only {', '.join(_FROM_DEFAULTS_EXTRAS)}")
        if llm is not None:
            share = int(llm.metadata.context_window * _TOKEN_LIMIT_RATIO)
            ctx = check_int(kwargs.get("context_tokens", DEFAULT_CONTEXT_TOKENS), "context_tokens", 0)
            kwargs["context_tokens"] = min(ctx, share // 3)
            if token_limit is None:
                token_limit = max(1, share - kwargs["context_tokens"])
        elif token_limit is None:
            token_limit = DEFAULT_TOKEN_LIMIT
        mem = cls(memory=memory, scope=scope, thread=thread, token_limit=token_limit, **kwargs)
        if chat_history is not None:
            mem.set(chat_history)
        return mem

    @property
    def memory(self) -> sgmem.Memory:
        """The sgmem store behind this memory."""
        return self._store.memory

    @property
    def chat_store(self) -> SGMemChatStore:
        """This memory's thread as a chat store (key = ``thread``)."""
        return self._store

    # ------------------------------------------------------------------- read
    def _tokens(self, message: ChatMessage) -> int:
        return len(self.tokenizer_fn(str(message.content or "")))

    def _window(self, msgs: list[ChatMessage], budget: int) -> int:
        """Where the newest messages within ``budget`` tokens start, as ``ChatMemoryBuffer.get`` picks them."""
        tokens = [self._tokens(m) for m in msgs]
        start, total = 0, sum(tokens)
        while total > budget and start < len(msgs) - 1:
            total -= tokens[start]
            start += 1
            # a window never opens on an assistant or tool message (its user turn is gone)
            while start < len(msgs) - 1 and msgs[start].role in (MessageRole.ASSISTANT, MessageRole.TOOL):
                total -= tokens[start]
                start += 1
        return len(msgs) - 1 if total > budget else start

    def get(
        self, input: str | ChatMessage | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Recalled context (a system message, when any) plus the thread's recent messages.

        Args:
            input: the query for long-term recall; default the thread's latest
                user message.
            initial_token_count: tokens the caller already spends (prefix
                messages); taken from ``token_limit``.
        """
        initial_token_count = check_int(initial_token_count, "initial_token_count", 0, self.token_limit)
        mem, scope = self.memory, self.scope
        runs = part_runs(mem.messages(scope=scope, thread=self.thread))
        msgs = [from_sgmem(joined(run)) for run in runs]
        start = self._window(msgs, self.token_limit - initial_token_count) if msgs else 0
        out = msgs[start:]
        # every stored message of the window, each part of a long one included, is left out of recall
        in_window = [m.id for run in runs[start:] for m in run if m.id]
        query = query_text(input)
        if not query:
            query = next((query_text(m) for m in reversed(msgs) if m.role == MessageRole.USER), "")
        if query and self.context_tokens > 0:
            query = fit_query(query, mem.config.limits, logger)  # an over-long message never fails the turn
            self._last_recall = mem.context_trace(
                query,
                scope=scope,
                budget_tokens=self.context_tokens,
                mode=self.mode,
                exclude_message_ids=in_window,
                min_score=self.min_score,
            )
            recalled = self._last_recall.text
            logger.debug(
                "SGMemMemory injected %d memories for scope %r (%s) as a system message:\n%s",
                len(self._last_recall.message_ids),
                scope,
                ", ".join(self._last_recall.message_ids) or "nothing passed the cutoff",
                recalled,
            )
            if recalled:
                out.insert(
                    0,
                    ChatMessage(role=MessageRole.SYSTEM, content=self.context_template.replace("{context}", recalled)),
                )
        return out

    @property
    def last_recall(self) -> sgmem.RecallTrace | None:
        """What the last :meth:`get` recalled: the query, the block injected, the hits with their
        relevance and ``why``, what the cutoff removed (``None`` before the first recall)."""
        return self._last_recall

    def get_all(self) -> list[ChatMessage]:
        """Every message of the thread, oldest first."""
        return [from_sgmem(m) for m in join_parts(self.memory.messages(scope=self.scope, thread=self.thread))]

    # ------------------------------------------------------------------ write
    def _kept(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        return to_keep(messages, self.save_tool_messages, self.save_only_user_messages)

    def _items(self, messages: Any) -> list[dict[str, Any]]:
        # a message over max_message_chars is stored in parts (sgmem.parts), joined again on replay
        kept = self._kept(messages) if isinstance(messages, list) else messages
        return check_messages(kept, "messages", self.memory, split=True)

    def put(self, message: ChatMessage) -> None:
        """Store one message in the thread (and index it for recall); tool traffic only with ``save_tool_messages``."""
        self.put_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store several messages in one transaction (all or none), leaving out what the options leave out."""
        items = self._items(messages)
        if items:
            self.memory.add(items, scope=self.scope, thread=self.thread)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the thread's history with ``messages`` (less what the options leave out)."""
        self.memory.set_thread(self._items(messages), scope=self.scope, thread=self.thread)

    def reset(self) -> None:
        """Start a new, empty thread; the old one stays in long-term memory (see :meth:`forget`).

        With ``reset_deletes=True`` the thread is deleted instead, as :meth:`forget` does.
        """
        if self.reset_deletes:
            self.forget()
        else:
            self.thread = _new_thread()

    def forget(self) -> None:
        """Delete this thread's messages and everything derived, for good (other threads stay)."""
        self._store.delete_messages(self.thread)


def _restore_memory(data: dict[str, Any]) -> SGMemMemory:
    """Unpickle an :class:`SGMemMemory` (see ``SGMemMemory.__reduce__``)."""
    return SGMemMemory.from_dict(data)
