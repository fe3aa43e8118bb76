"""Memory an agent manages itself: the operations behind every adapter's memory tools.

The LangChain tools (:mod:`langchain_sgmem.tools`), the LlamaIndex tool spec
(:mod:`llama_index_sgmem.tools`) and the MCP server (:mod:`sgmem.mcp`) all call
one :class:`MemoryTools`, so the five tools behave the same everywhere:

==============  ===========================================================
``remember``    store a note (text) in the scope, returns its id
``recall``      the memories most relevant to a query: text, when, who
                said it, the thread, the ids, and why each one matched
``context``     one dated, speaker-labelled prompt block within a token budget
``forget``      delete memories by id (from ``recall``) or a whole thread
``list_threads`` the scope's threads, oldest first
==============  ===========================================================

The scope is an argument of every method, passed by the adapter from what the
operator bound (a constructor argument, the run's config, a server flag), and
never a tool argument a model could set. Every input is checked before
anything is written or deleted: a bad call raises a :class:`sgmem.SgmemError`
that says what was wrong and changes nothing stored.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .errors import InvalidInputError, NotFoundError
from .memory import Memory
from .types import Hit
from .validate import check_int, check_mode, check_name, check_names, check_score, check_text

__all__ = ["DESCRIPTIONS", "TOOL_NAMES", "MemoryTools", "explain", "render_recall"]

#: The tools every adapter offers, in this order.
TOOL_NAMES = ("remember", "recall", "context", "forget", "list_threads")
_SHOWN_IDS = 5  # ids a "not found" error names (the rest are counted)

#: What each tool tells the model (the adapters' tool descriptions).
DESCRIPTIONS = {
    "remember": (
        "Save a note to long-term memory so it can be recalled in later conversations. Write one "
        "self-contained statement (who, what, when), e.g. 'Priya's manager is Tomasz (said 2024-03-04)'. "
        "Returns the id of the stored memory."
    ),
    "recall": (
        "Search long-term memory. Returns the most relevant memories, best first, each with its text, "
        "when it was said, who said it, its thread, its id (for forget) and why it matched. "
        "An empty list means memory holds nothing relevant."
    ),
    "context": (
        "Get one prompt-ready block of the memories relevant to a query: chronological, dated and "
        "speaker-labelled, at most budget_tokens tokens. Empty when nothing relevant is stored."
    ),
    "forget": (
        "Delete memories for good: either message_ids (the ids recall returned) or one whole thread. "
        "Everything derived from them goes too."
    ),
    "list_threads": "List the conversation threads stored in long-term memory, oldest first.",
}


def explain(hit: Hit) -> str:
    """Why ``hit`` was found, in one line a model can read (best sentence, matched words, graph hop)."""
    why = hit.why or {}
    parts = []
    sentence = why.get("sentence")
    if not sentence and why.get("sentences"):  # graph mode: its seed sentences
        sentence = why["sentences"][0].get("sentence")
    if sentence:
        parts.append(f"best sentence {sentence!r}")
    if why.get("matched"):
        parts.append("matched words: " + ", ".join(map(str, why["matched"])))
    graph = why.get("graph") or {}
    if graph.get("hop"):
        parts.append(f"reached through the sentence graph from {graph.get('via_seed')!r}")
    pyramid = why.get("pyramid")
    if pyramid and pyramid.get("keywords"):
        parts.append("keyword path: " + " > ".join(map(str, pyramid["keywords"])))
    if hit.memory_id:
        parts.append(f"generated {hit.kind} {hit.memory_id}")
    if not parts:
        parts.append(f"{why.get('mode', 'dense')} similarity")
    parts.append(f"relevance {hit.relevance:.2f}")
    return "; ".join(parts)


def _hit_dict(hit: Hit) -> dict[str, Any]:
    return {
        "text": hit.text,
        "when": hit.at.isoformat(),
        "who": hit.speaker,
        "thread": hit.thread,
        "message_ids": list(hit.message_ids),
        "relevance": round(float(hit.relevance), 4),
        "why": explain(hit),
    }


def render_recall(memories: list[dict[str, Any]]) -> str:
    """``recall``'s memories as numbered text lines (what the LangChain and LlamaIndex tools return)."""
    if not memories:
        return "No relevant memories."
    lines = []
    for i, m in enumerate(memories, 1):
        ids = ", ".join(m["message_ids"])
        lines.append(
            f"{i}. [{m['when'][:16].replace('T', ' ')} · {m['who']} · thread {m['thread']} · id {ids}] {m['text']}"
        )
        lines.append(f"   why: {m['why']}")
    return "\n".join(lines)


class MemoryTools:
    """The five agent tools over one :class:`sgmem.Memory`; each call names the scope it acts on.

    Args:
        memory: the store.
        thread: the thread ``remember`` writes to when the call names none.
        speaker: the speaker label of remembered notes (``recall``'s ``who``).
        k: how many memories ``recall`` returns when the call does not say.
        max_k: the most a call may ask for (a model asking for more gets an error).
        budget_tokens: ``context``'s default budget.
        max_budget_tokens: the largest budget a call may ask for.
        mode: the retrieval mode (default: the memory's configured mode).
        min_score: the relevance cutoff (default: the memory's ``Config.min_relevance``).
    """

    def __init__(
        self,
        memory: Memory,
        *,
        thread: str = "memories",
        speaker: str = "memory",
        k: int = 5,
        max_k: int = 50,
        budget_tokens: int = 800,
        max_budget_tokens: int = 8000,
        mode: str | None = None,
        min_score: float | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError("memory", memory, "a sgmem.Memory", "Create one with sgmem.Memory('./memory').")
        self.memory = memory
        limits = memory.config.limits
        self.thread = check_name(thread, "thread", limits, new=True)
        self.speaker = check_name(speaker, "speaker", limits, new=True)
        self.max_k = check_int(max_k, "max_k", 1, limits.max_k)
        self.k = check_int(k, "k", 1, self.max_k)
        self.max_budget_tokens = check_int(max_budget_tokens, "max_budget_tokens", 1)
        self.budget_tokens = check_int(budget_tokens, "budget_tokens", 1, self.max_budget_tokens)
        self.mode = check_mode(mode)
        check_score(min_score, "min_score", 0.0)
        self.min_score = min_score

    def _scope(self, scope: Any) -> str:
        return check_name(scope, "scope", self.memory.config.limits)

    # ------------------------------------------------------------------ tools
    def remember(self, scope: str, text: str, thread: str | None = None) -> dict[str, Any]:
        """Store ``text`` as one note of ``scope``; returns its id, thread and time."""
        scope = self._scope(scope)
        text = check_text(text, "text", self.memory.config.limits.max_message_chars, "max_message_chars")
        thread = self.thread if thread is None else check_name(thread, "thread", self.memory.config.limits, new=True)
        res = self.memory.add(
            [{"role": "assistant", "name": self.speaker, "content": text}], scope=scope, thread=thread
        )
        stored = self.memory.get(scope=scope, message_ids=list(res.message_ids))
        return {
            "stored": res.message_ids[0],
            "thread": thread,
            "when": stored[0].at.isoformat() if stored and stored[0].at else None,
        }

    def recall(self, scope: str, query: str, k: int | None = None, now: str | None = None) -> dict[str, Any]:
        """The memories of ``scope`` most relevant to ``query``, best first (see :func:`explain`).

        ``now``: the moment of asking, which "last week" or "three days ago" in the query is
        relative to (an ISO-8601 string; ``None``: the clock), as in :meth:`sgmem.Memory.search`.
        """
        scope = self._scope(scope)
        k = self.k if k is None else check_int(k, "k", 1, self.max_k)
        hits = self.memory.search(query, scope=scope, k=k, mode=self.mode, min_score=self.min_score, now=now)
        return {"memories": [_hit_dict(h) for h in hits]}

    def context(
        self, scope: str, query: str, budget_tokens: int | None = None, now: str | None = None
    ) -> dict[str, Any]:
        """A prompt block of ``scope``'s memories relevant to ``query`` (``""`` when none are; ``now`` as in
        :meth:`recall`)."""
        scope = self._scope(scope)
        budget = (
            self.budget_tokens
            if budget_tokens is None
            else check_int(budget_tokens, "budget_tokens", 1, self.max_budget_tokens)
        )
        block = self.memory.context(
            query, scope=scope, budget_tokens=budget, mode=self.mode, min_score=self.min_score, now=now
        )
        return {"context": block}

    def forget(self, scope: str, message_ids: list[str] | None = None, thread: str | None = None) -> dict[str, Any]:
        """Delete the messages ``message_ids`` of ``scope``, or its whole ``thread`` (exactly one of the two).

        Every id must be stored in the scope (and the thread must exist):
        otherwise nothing is deleted and :class:`sgmem.NotFoundError` names
        what was not found. Forgetting the whole scope is not a tool's call.
        """
        scope = self._scope(scope)
        limits = self.memory.config.limits
        ids = check_names(message_ids, "message_ids", limits)
        if thread is not None:
            thread = check_name(thread, "thread", limits)
        if (ids is None) == (thread is None) or ids == []:
            given = "both message_ids and thread" if ids is not None and thread is not None else "neither"
            raise InvalidInputError(
                "forget",
                {"message_ids": message_ids, "thread": thread},
                f"exactly one of message_ids (a non-empty list of ids from recall) or thread (one thread name); "
                f"got {given if ids != [] else 'an empty message_ids'}",
                "Call recall first to find the ids of the memories to forget, or list_threads for the threads.",
            )
        if ids is not None:
            found = {m.id for m in self.memory.get(scope=scope, message_ids=ids)}
            missing = [i for i in dict.fromkeys(ids) if i not in found]
            if missing:
                # a few of them, and how many: the text goes back to a model, so it stays short
                shown = ", ".join(repr(i if len(i) <= 40 else i[:40] + "...") for i in missing[:_SHOWN_IDS])
                more = f" and {len(missing) - _SHOWN_IDS} more" if len(missing) > _SHOWN_IDS else ""
                raise NotFoundError(
                    f"forget: no stored memory has {len(missing)} of the {len(set(ids))} id(s) given ({shown}{more}), "
                    "so nothing was deleted; take ids from recall's message_ids."
                )
            receipt = self.memory.delete(scope=scope, message_ids=ids)
            return {"forgot": receipt.messages, "message_ids": list(dict.fromkeys(ids))}
        if thread not in self.memory.threads(scope=scope):
            raise NotFoundError(
                f"forget: there is no thread {thread!r}, so nothing was deleted; list_threads names the threads."
            )
        receipt = self.memory.delete(scope=scope, thread=thread)
        return {"forgot": receipt.messages, "thread": thread}

    def list_threads(self, scope: str) -> dict[str, Any]:
        """The threads of ``scope``, in order of their first message."""
        return {"threads": self.memory.threads(scope=self._scope(scope))}

    # ------------------------------------------------------------ async twins
    async def aremember(self, scope: str, text: str, thread: str | None = None) -> dict[str, Any]:
        """Async :meth:`remember` (runs in a worker thread)."""
        return await asyncio.to_thread(self.remember, scope, text, thread)

    async def arecall(self, scope: str, query: str, k: int | None = None, now: str | None = None) -> dict[str, Any]:
        """Async :meth:`recall`."""
        return await asyncio.to_thread(self.recall, scope, query, k, now)

    async def acontext(
        self, scope: str, query: str, budget_tokens: int | None = None, now: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`context`."""
        return await asyncio.to_thread(self.context, scope, query, budget_tokens, now)

    async def aforget(
        self, scope: str, message_ids: list[str] | None = None, thread: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`forget`."""
        return await asyncio.to_thread(self.forget, scope, message_ids, thread)

    async def alist_threads(self, scope: str) -> dict[str, Any]:
        """Async :meth:`list_threads`."""
        return await asyncio.to_thread(self.list_threads, scope)
