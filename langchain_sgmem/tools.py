"""Memory tools for LangChain and LangGraph agents: remember, recall, context, forget, list_threads.

The model calls the tools; the scope they act on is the operator's: bound at
construction, or read from the run (``config["configurable"]["scope"]``, or
the LangGraph run context ``context={"scope": ...}``). No tool has a scope
argument, and arguments a model adds are dropped, so a model cannot reach
another user's memory. The work is :class:`sgmem.tools.MemoryTools`, shared
with the LlamaIndex tool spec and the MCP server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from sgmem import InvalidInputError, Memory, SgmemError
from sgmem.tools import DESCRIPTIONS, TOOL_NAMES, MemoryTools, render_recall
from sgmem.validate import check_name

from ._util import check_memory

__all__ = ["create_memory_tools"]


class _Remember(BaseModel):
    text: str = Field(description="The note to keep: one self-contained statement.")
    thread: str | None = Field(default=None, description="Optional topic or conversation to file it under.")


class _Recall(BaseModel):
    query: str = Field(description="What to look for: a question or a topic.")
    k: int | None = Field(default=None, description="How many memories to return (default 5).")


class _Context(BaseModel):
    query: str = Field(description="What the block should be relevant to.")
    budget_tokens: int | None = Field(default=None, description="The most tokens the block may take.")


class _Forget(BaseModel):
    message_ids: list[str] | None = Field(default=None, description="Ids of memories to delete, from recall.")
    thread: str | None = Field(default=None, description="Or: a whole thread to delete.")


class _Nothing(BaseModel):
    pass


def _invalid_arguments(exc: ValidationError) -> str:
    return f"Invalid arguments: {exc}"


def create_memory_tools(
    memory: Memory,
    *,
    scope: str | None = None,
    scope_key: str = "scope",
    tools: Sequence[str] = TOOL_NAMES,
    thread: str = "memories",
    k: int = 5,
    budget_tokens: int = 800,
    mode: str | None = None,
    min_score: float | None = None,
) -> list[BaseTool]:
    """LangChain tools that let an agent manage its own long-term memory in ``memory``.

    Each returns text for the model (``recall``: numbered memories with when,
    who said it, thread, id and why it matched) and the structured result as
    the ``ToolMessage``'s artifact. A bad call returns an error message to the
    model (the ``ToolMessage`` has ``status="error"``) and changes nothing stored.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import create_memory_tools

            mem = sgmem.Memory("./memory")
            tools = create_memory_tools(mem)                 # scope read from each run
            alice_tools = create_memory_tools(mem, scope="alice")   # or bound now

    Use:
        .. code-block:: python

            from langchain.agents import create_agent

            agent = create_agent(model, tools=tools)         # any tool-calling chat model
            agent.invoke({"messages": [{"role": "user", "content": "Remember that I'm vegetarian."}]},
                         {"configurable": {"scope": "alice"}})   # or context={"scope": "alice"}

    Args:
        memory: the :class:`sgmem.Memory` to read and write.
        scope: whose memory, fixed; ``None`` (default) reads ``scope_key`` from
            the run: ``config["configurable"]``, then the LangGraph run context.
        scope_key: the key naming the scope in the run's config or context.
        tools: which of ``remember``, ``recall``, ``context``, ``forget``,
            ``list_threads`` to create (e.g. leave out ``forget``).
        thread: the thread ``remember`` writes to when the model names none.
        k: how many memories ``recall`` returns by default.
        budget_tokens: ``context``'s default budget.
        mode: the retrieval mode (default: the memory's configured mode).
        min_score: the relevance cutoff (default: ``Config.min_relevance``).
    """
    memory = check_memory(memory)
    limits = memory.config.limits
    if scope is not None:
        scope = check_name(scope, "scope", limits)
    scope_key = check_name(scope_key, "scope_key", limits)
    wanted = list(tools)
    unknown = [t for t in wanted if t not in TOOL_NAMES]
    if unknown or not wanted:
        raise InvalidInputError("tools", list(tools), f"a non-empty list of {', '.join(TOOL_NAMES)}")
    ops = MemoryTools(memory, thread=thread, k=k, budget_tokens=budget_tokens, mode=mode, min_score=min_score)

    def scope_of(config: RunnableConfig | None) -> str:
        if scope is not None:
            return scope
        value = ((config or {}).get("configurable") or {}).get(scope_key)
        if value is None:
            value = _context_value(scope_key)
        if value is None:
            raise ToolException(
                str(
                    InvalidInputError(
                        f"configurable.{scope_key}",
                        None,
                        "the scope (whose memory) in the run's config or context",
                        f"Invoke the agent with {{'configurable': {{{scope_key!r}: 'alice'}}}} or "
                        f"context={{{scope_key!r}: 'alice'}}, or create_memory_tools(memory, scope='alice').",
                    )
                )
            )
        return check_name(value, f"configurable.{scope_key}", limits)

    def run(call: Callable[..., dict[str, Any]], render: Callable[[dict[str, Any]], str]) -> Any:
        try:
            out = call()
        except SgmemError as exc:
            raise ToolException(str(exc)) from exc
        return render(out), out

    def remember(text: str, thread: str | None = None, *, config: RunnableConfig) -> Any:
        return run(lambda: ops.remember(scope_of(config), text, thread), _render_remember)

    def recall(query: str, k: int | None = None, *, config: RunnableConfig) -> Any:
        return run(lambda: ops.recall(scope_of(config), query, k), lambda r: render_recall(r["memories"]))

    def context(query: str, budget_tokens: int | None = None, *, config: RunnableConfig) -> Any:
        return run(
            lambda: ops.context(scope_of(config), query, budget_tokens),
            lambda r: r["context"] or "No relevant memories.",
        )

    def forget(message_ids: list[str] | None = None, thread: str | None = None, *, config: RunnableConfig) -> Any:
        return run(lambda: ops.forget(scope_of(config), message_ids, thread), _render_forget)

    def list_threads(*, config: RunnableConfig) -> Any:
        return run(lambda: ops.list_threads(scope_of(config)), lambda r: ", ".join(r["threads"]) or "No threads.")

    specs: dict[str, tuple[Callable[..., Any], type[BaseModel]]] = {
        "remember": (remember, _Remember),
        "recall": (recall, _Recall),
        "context": (context, _Context),
        "forget": (forget, _Forget),
        "list_threads": (list_threads, _Nothing),
    }
    return [
        StructuredTool.from_function(
            func=specs[name][0],
            name=name,
            description=DESCRIPTIONS[name],
            args_schema=specs[name][1],
            response_format="content_and_artifact",
            handle_tool_error=True,
            handle_validation_error=_invalid_arguments,
        )
        for name in wanted
    ]


def _context_value(key: str) -> Any:
    """``key`` of the LangGraph run context (``agent.invoke(..., context={...})``), or None outside a run."""
    try:
        from langgraph.runtime import get_runtime

        ctx = get_runtime().context
    except Exception:  # noqa: BLE001 - not inside a LangGraph run: no context
        return None
    return ctx.get(key) if isinstance(ctx, Mapping) else getattr(ctx, key, None)


def _render_remember(r: dict[str, Any]) -> str:
    return f"Stored memory {r['stored']} in thread {r['thread']!r}."


def _render_forget(r: dict[str, Any]) -> str:
    what = f"thread {r['thread']!r}" if "thread" in r else ", ".join(r["message_ids"])
    return f"Forgot {r['forgot']} message(s): {what}."
