"""Memory tools for LlamaIndex agents: a ``BaseToolSpec`` with remember, recall, context, forget, list_threads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.tools.tool_spec.base import BaseToolSpec

from sgmem import InvalidInputError, Memory
from sgmem.tools import DESCRIPTIONS, TOOL_NAMES, MemoryTools, render_recall
from sgmem.validate import check_name

__all__ = ["SGMemToolSpec"]

#: The arguments of each tool, as the model reads them (appended to its description).
_ARGS = {
    "remember": "\n\nArgs:\n    text: the note to keep, one self-contained statement.\n"
    "    thread: optional topic or conversation to file it under.",
    "recall": "\n\nArgs:\n    query: what to look for, a question or a topic.\n"
    "    k: how many memories to return (default 5).",
    "context": "\n\nArgs:\n    query: what the block should be relevant to.\n"
    "    budget_tokens: the most tokens the block may take.",
    "forget": "\n\nArgs:\n    message_ids: ids of memories to delete, from recall.\n"
    "    thread: or a whole thread to delete.",
    "list_threads": "",
}


class SGMemToolSpec(BaseToolSpec):
    """Tools a LlamaIndex agent calls to manage its own long-term memory, on one scope fixed at construction.

    The tools have no scope argument and the scope cannot be changed after
    construction, so a model cannot reach another user's memory: make one spec
    per user (or per request). A bad call raises a :class:`sgmem.SgmemError`
    that the agent hands back to the model as the tool's output (with
    ``is_error``), and changes nothing stored. The work is
    :class:`sgmem.tools.MemoryTools`, shared with the LangChain tools and the
    MCP server.

    Example::

        import sgmem
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index_sgmem import SGMemToolSpec

        mem = sgmem.Memory("./memory")
        tools = SGMemToolSpec(mem, scope="alice").to_tool_list()
        agent = FunctionAgent(tools=tools, llm=llm)      # or ReActAgent
        await agent.run("Remember that I'm vegetarian.")

    Args:
        memory: the :class:`sgmem.Memory` to read and write.
        scope: whose memory every tool acts on.
        tools: which of ``remember``, ``recall``, ``context``, ``forget``,
            ``list_threads`` ``to_tool_list()`` returns (e.g. leave out ``forget``).
        thread: the thread ``remember`` writes to when the model names none.
        k: how many memories ``recall`` returns by default.
        budget_tokens: ``context``'s default budget.
        mode: the retrieval mode (default: the memory's configured mode).
        min_score: the relevance cutoff (default: ``Config.min_relevance``).
    """

    def __init__(
        self,
        memory: Memory,
        *,
        scope: str,
        tools: Sequence[str] = TOOL_NAMES,
        thread: str = "memories",
        k: int = 5,
        budget_tokens: int = 800,
        mode: str | None = None,
        min_score: float | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError("memory", memory, "a sgmem.Memory", "Create one with sgmem.Memory('./memory').")
        self._scope = check_name(scope, "scope", memory.config.limits)
        wanted = list(tools)
        if not wanted or any(t not in TOOL_NAMES for t in wanted):
            raise InvalidInputError("tools", list(tools), f"a non-empty list of {', '.join(TOOL_NAMES)}")
        self._ops = MemoryTools(memory, thread=thread, k=k, budget_tokens=budget_tokens, mode=mode, min_score=min_score)
        self.spec_functions = [(name, f"a{name}") for name in wanted]

    @property
    def scope(self) -> str:
        """The scope every tool acts on (read-only)."""
        return self._scope

    def remember(self, text: str, thread: str | None = None) -> str:
        r = self._ops.remember(self._scope, text, thread)
        return f"Stored memory {r['stored']} in thread {r['thread']!r}."

    async def aremember(self, text: str, thread: str | None = None) -> str:
        r = await self._ops.aremember(self._scope, text, thread)
        return f"Stored memory {r['stored']} in thread {r['thread']!r}."

    def recall(self, query: str, k: int | None = None) -> str:
        return render_recall(self._ops.recall(self._scope, query, k)["memories"])

    async def arecall(self, query: str, k: int | None = None) -> str:
        return render_recall((await self._ops.arecall(self._scope, query, k))["memories"])

    def context(self, query: str, budget_tokens: int | None = None) -> str:
        return self._ops.context(self._scope, query, budget_tokens)["context"] or "No relevant memories."

    async def acontext(self, query: str, budget_tokens: int | None = None) -> str:
        return (await self._ops.acontext(self._scope, query, budget_tokens))["context"] or "No relevant memories."

    def forget(self, message_ids: list[str] | None = None, thread: str | None = None) -> str:
        return _forgot(self._ops.forget(self._scope, message_ids, thread))

    async def aforget(self, message_ids: list[str] | None = None, thread: str | None = None) -> str:
        return _forgot(await self._ops.aforget(self._scope, message_ids, thread))

    def list_threads(self) -> str:
        return ", ".join(self._ops.list_threads(self._scope)["threads"]) or "No threads."

    async def alist_threads(self) -> str:
        return ", ".join((await self._ops.alist_threads(self._scope))["threads"]) or "No threads."


def _forgot(r: dict[str, Any]) -> str:
    what = f"thread {r['thread']!r}" if "thread" in r else ", ".join(r["message_ids"])
    return f"Forgot {r['forgot']} message(s): {what}."


# one text per tool for every adapter (sgmem.tools.DESCRIPTIONS); FunctionTool reads it from the docstring
for _name in TOOL_NAMES:
    for _fn in (getattr(SGMemToolSpec, _name), getattr(SGMemToolSpec, f"a{_name}")):
        _fn.__doc__ = DESCRIPTIONS[_name] + _ARGS[_name]
del _name, _fn
