"""Agent middleware for ``langchain.agents.create_agent``: recall before the model, remember after the agent."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from sgmem import InvalidInputError, Memory, RecallTrace
from sgmem.parts import part_ids, split_message
from sgmem.validate import check_int, check_mode, check_name, check_saving, check_score, fit_query

from ._messages import render_text, role_of, to_sgmem
from ._util import check_memory

__all__ = ["SGMemMiddleware"]

logger = logging.getLogger(__name__)

#: A scope or thread given as a name or computed from the run's runtime.
NameSource = str | Callable[[Runtime[Any]], str] | None


def _latest_user_text(messages: Sequence[BaseMessage]) -> str | None:
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            text = m.text
            return text if text.strip() else None
    return None


def _with_memories(system: SystemMessage | None, block: str) -> SystemMessage:
    """The system message with the memory block appended (a new message; the original is untouched)."""
    if system is None:
        return SystemMessage(content=block)
    if isinstance(system.content, str):
        content: Any = f"{system.content}\n\n{block}" if system.content.strip() else block
    else:
        content = [*system.content, {"type": "text", "text": block}]
    return system.model_copy(update={"content": content})


class SGMemMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Long-term memory for ``create_agent``: relevant memories in, each exchange saved.

    Before every model call, the latest user message is the query:
    :meth:`sgmem.Memory.context` for the scope is appended to the system
    message the model receives — the agent's state (and checkpoints) are not
    changed. After the agent finishes, the run's new user and assistant
    messages are written to the scope, in the thread of the run (the
    checkpointer's ``thread_id``), so later runs — in any thread of the same
    scope — can recall them. Writes are idempotent per message id: messages
    already stored from an earlier run of the thread are skipped.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemMiddleware

            mem = sgmem.Memory("./memory")
            memory_middleware = SGMemMiddleware(mem, budget_tokens=800)   # scope from the run's context

    Use:
        .. code-block:: python

            from langchain.agents import create_agent
            from langgraph.checkpoint.memory import InMemorySaver

            # `model` is any LangChain chat model, e.g. init_chat_model("openai:gpt-4.1-mini")
            agent = create_agent(model, tools=[], middleware=[memory_middleware], checkpointer=InMemorySaver())
            agent.invoke(
                {"messages": [{"role": "user", "content": "I adopted a cat named Miso."}]},
                {"configurable": {"thread_id": "chat-1"}},
                context={"scope": "alice"},
            )
            # a new conversation: the model's system message now holds the memory about Miso
            agent.invoke(
                {"messages": [{"role": "user", "content": "What is my cat called?"}]},
                {"configurable": {"thread_id": "chat-2"}},
                context={"scope": "alice"},
            )

    Args:
        memory: the :class:`sgmem.Memory` to read and write.
        scope: whose memory: a name, a function of the run's ``Runtime``, or
            ``None`` (default) to read ``context_key`` from the run's context
            (a dict or an object: ``agent.invoke(..., context={"scope": "alice"})``).
        context_key: the context field holding the scope when ``scope`` is ``None``.
        thread: the thread exchanges are written to: a name, a function of the
            ``Runtime``, or ``None`` (default) for the checkpointer's
            ``thread_id`` (``"default"`` when the agent has no checkpointer).
        budget_tokens: the most tokens (cl100k_base) the memories may take.
        mode: the retrieval mode (default: the memory's configured mode).
        min_score: leave out memories whose relevance (:attr:`sgmem.Hit.relevance`,
            in [0, 1]) is below this; ``None``: the memory's
            ``Config.min_relevance``, so an unrelated question adds nothing.
        save_tool_messages: also store tool traffic: assistant messages that
            call a tool and tool results (default False: only user messages and
            assistant replies with text, as ``SGMemMemory`` in LlamaIndex).
        save_only_user_messages: store only the user's messages (default
            False); cannot be combined with ``save_tool_messages``.
        on_recall: called with each model call's :class:`sgmem.RecallTrace`
            (what was recalled, why, and the block injected); the last one is
            also kept as ``last_recall``. The ``langchain_sgmem.middleware``
            logger shows the same at DEBUG.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        scope: NameSource = None,
        context_key: str = "scope",
        thread: NameSource = None,
        budget_tokens: int = 1000,
        mode: str | None = None,
        min_score: float | None = None,
        save_tool_messages: bool = False,
        save_only_user_messages: bool = False,
        on_recall: Callable[[RecallTrace], Any] | None = None,
    ) -> None:
        super().__init__()
        self.memory = check_memory(memory)
        limits = self.memory.config.limits
        for field, value in (("scope", scope), ("thread", thread)):
            if isinstance(value, str):
                check_name(value, field, limits)
            elif value is not None and not callable(value):
                raise InvalidInputError(field, value, "a name, a function of the Runtime, or None")
        self.scope = scope
        self.thread = thread
        self.context_key = check_name(context_key, "context_key", limits)
        self.budget_tokens = check_int(budget_tokens, "budget_tokens", 1)
        self.mode = check_mode(mode)
        check_score(min_score, "min_score", 0.0)
        self.min_score = min_score
        self.save_tool_messages, self.save_only_user_messages = check_saving(
            save_tool_messages, save_only_user_messages
        )
        if on_recall is not None and not callable(on_recall):
            raise InvalidInputError("on_recall", on_recall, "a function taking a sgmem.RecallTrace, or None")
        self.on_recall = on_recall
        #: The last recall: query, scope, the block injected, the hits with their relevance and ``why``, what
        #: the cutoff removed (``None`` before the first model call).
        self.last_recall: RecallTrace | None = None
        self.tools = []

    # ------------------------------------------------------------ resolving
    def _scope(self, runtime: Runtime[Any] | None) -> str:
        if isinstance(self.scope, str):
            return self.scope
        if callable(self.scope):
            return check_name(self.scope(runtime), "scope(runtime)", self.memory.config.limits)  # type: ignore[arg-type]
        ctx = getattr(runtime, "context", None)
        value = ctx.get(self.context_key) if isinstance(ctx, Mapping) else getattr(ctx, self.context_key, None)
        if value is None:
            raise InvalidInputError(
                f"runtime.context.{self.context_key}",
                ctx,
                f"a run context with a {self.context_key!r} naming whose memory to use",
                f"Invoke the agent with context={{{self.context_key!r}: 'alice'}}, "
                "or create SGMemMiddleware(memory, scope=...).",
            )
        return check_name(value, f"runtime.context.{self.context_key}", self.memory.config.limits)

    def _thread(self, runtime: Runtime[Any] | None) -> str:
        if isinstance(self.thread, str):
            return self.thread
        if callable(self.thread):
            return check_name(self.thread(runtime), "thread(runtime)", self.memory.config.limits)  # type: ignore[arg-type]
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
        return str(thread_id) if thread_id else "default"

    # --------------------------------------------------------------- recall
    def _in_prompt(self, request: ModelRequest[Any]) -> list[str]:
        """sgmem ids of the messages the model already sees, each part of a long one included (they are
        stored as :func:`_pending` splits them), so memory does not repeat them."""
        thread, limits = self._thread(request.runtime), self.memory.config.limits
        out = []
        for m in request.messages:
            mid = self._message_id(thread, m) if isinstance(m, BaseMessage) else None
            if mid is not None:
                out += part_ids({"role": "user", "content": render_text(m), "id": mid}, limits)
        return out

    def _fit(self, query: str | None) -> str | None:
        """The query within the store's query limit: an over-long message never fails the turn."""
        return fit_query(query, self.memory.config.limits, logger) if query else query

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        """Append the scope's memories relevant to the latest user message to the system message."""
        query = self._fit(_latest_user_text(request.messages))
        if query:
            self.last_recall = self.memory.context_trace(
                query,
                scope=self._scope(request.runtime),
                budget_tokens=self.budget_tokens,
                mode=self.mode,
                exclude_message_ids=self._in_prompt(request),
                min_score=self.min_score,
            )
            block = self._injected(self.last_recall)
            if block:
                request = request.override(system_message=_with_memories(request.system_message, block))
        return handler(request)

    async def awrap_model_call(self, request: ModelRequest[Any], handler: Callable[..., Any]) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        query = self._fit(_latest_user_text(request.messages))
        if query:
            self.last_recall = await self.memory.acontext_trace(
                query,
                scope=self._scope(request.runtime),
                budget_tokens=self.budget_tokens,
                mode=self.mode,
                exclude_message_ids=self._in_prompt(request),
                min_score=self.min_score,
            )
            block = self._injected(self.last_recall)
            if block:
                request = request.override(system_message=_with_memories(request.system_message, block))
        return await handler(request)

    def _injected(self, recall: RecallTrace) -> str:
        """The block to inject for ``recall``, logged at DEBUG and passed to ``on_recall``."""
        logger.debug(
            "SGMemMiddleware injected %d memories for scope %r (%s) into the system message:\n%s",
            len(recall.message_ids),
            recall.scope,
            ", ".join(recall.message_ids) or "nothing passed the cutoff",
            recall.text,
        )
        if self.on_recall is not None:
            self.on_recall(recall)
        return recall.text

    # -------------------------------------------------------------- remember
    def _wanted(self, m: BaseMessage) -> bool:
        if type(m) is HumanMessage:
            return True
        if self.save_only_user_messages:
            return False
        if type(m) is AIMessage and (m.tool_calls or m.invalid_tool_calls):  # tool traffic, even with some text
            return self.save_tool_messages
        if type(m) is AIMessage:
            return bool(m.text.strip())
        return self.save_tool_messages and type(m) is ToolMessage

    @staticmethod
    def _message_id(thread: str, m: BaseMessage) -> str | None:
        """A stable sgmem id for a message of a thread, so re-runs do not store it twice."""
        if not m.id:
            return None
        digest = hashlib.blake2b(f"{thread}\x00{m.id}".encode(), digest_size=12).hexdigest()
        return f"lc_{digest}"

    def _pending(self, state: AgentState[Any], runtime: Runtime[Any]) -> tuple[str, str, list[dict[str, Any]]]:
        scope, thread = self._scope(runtime), self._thread(runtime)
        items = []
        for i, m in enumerate(state.get("messages", [])):
            if not isinstance(m, BaseMessage) or not self._wanted(m):
                continue
            try:
                item = to_sgmem(m, f"state.messages[{i}]", self.memory.config.limits)
            except InvalidInputError as exc:
                # the run is over: keep its text rather than fail it over fields sgmem cannot replay
                logger.warning("sgmem: storing message %s without exact replay: %s", m.id, exc)
                item = {"role": role_of(m), "content": render_text(m)}
            mid = self._message_id(thread, m)
            if mid is not None:
                item["id"] = mid
            items.extend(split_message(item, self.memory.config.limits))  # over max_message_chars: in parts
        return scope, thread, items

    def _new(self, stored: Sequence[Any], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        known = {m.id for m in stored}
        return [it for it in items if it.get("id") not in known]

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the run's new user and assistant messages in the scope."""
        scope, thread, items = self._pending(state, runtime)
        ids = [it["id"] for it in items if "id" in it]
        new = self._new(self.memory.get(scope=scope, message_ids=ids) if ids else [], items)
        if new:
            self.memory.add(new, scope=scope, thread=thread)
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        scope, thread, items = self._pending(state, runtime)
        ids = [it["id"] for it in items if "id" in it]
        new = self._new(await self.memory.aget(scope=scope, message_ids=ids) if ids else [], items)
        if new:
            await self.memory.aadd(new, scope=scope, thread=thread)
        return None
