"""The LLM seam: any text-completion model sgmem may call, and how calls are made safely.

Optional everywhere: with no LLM every feature works through its LLM-free
rule. Adapters wrap LangChain chat models and LlamaIndex LLMs.

Every call goes through :func:`complete_text` or :func:`complete_json`, which
time it, count its tokens (cl100k_base, exact for OpenAI models and a close
estimate for others) into an :class:`LLMUsage`, and turn a model that raises,
returns nothing or returns unparseable output into ``None`` — the caller then
applies its LLM-free rule and the fallback is counted. A bad model never fails
a write. Nothing is sent anywhere except to the model the caller gave.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .text.tokens import count_tokens

__all__ = ["LLM", "LLMUsage", "TaskUsage", "complete_json", "complete_text", "parse_json"]


@runtime_checkable
class LLM(Protocol):
    """A text-completion model."""

    def complete(self, prompt: str) -> str:
        """Return the model's completion of ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        ...


@dataclass
class TaskUsage:
    """Calls made for one task (``"facts"``, ``"merge"``, ``"summary"``, ``"insights"``…)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ms: float = 0.0
    fallbacks: int = 0

    def add(self, other: TaskUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.ms += other.ms
        self.fallbacks += other.fallbacks


@dataclass
class LLMUsage:
    """LLM calls of one operation (an add) or one scope, per task.

    ``fallbacks`` counts calls whose output could not be used (the model
    raised, returned nothing, or returned malformed output): the LLM-free rule
    was applied instead.
    """

    tasks: dict[str, TaskUsage] = field(default_factory=dict)

    def task(self, name: str) -> TaskUsage:
        return self.tasks.setdefault(name, TaskUsage())

    def merge(self, other: LLMUsage) -> None:
        for name, u in other.tasks.items():
            self.task(name).add(u)

    def _sum(self, attr: str) -> Any:
        return sum(getattr(u, attr) for u in self.tasks.values())

    @property
    def calls(self) -> int:
        return int(self._sum("calls"))

    @property
    def prompt_tokens(self) -> int:
        return int(self._sum("prompt_tokens"))

    @property
    def completion_tokens(self) -> int:
        return int(self._sum("completion_tokens"))

    @property
    def ms(self) -> float:
        return float(self._sum("ms"))

    @property
    def fallbacks(self) -> int:
        return int(self._sum("fallbacks"))


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")


def _loads(s: str) -> Any:
    try:
        return json.loads(s)
    except ValueError:
        pass
    try:  # trailing commas are the commonest slip of small models
        return json.loads(_TRAILING_COMMA.sub(r"\1", s))
    except ValueError:
        pass
    try:  # Python literals: single quotes, True/None
        value = ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (list, dict)) else None


def _top_level_opens(s: str) -> list[int]:
    """Positions of ``[``/``{`` not nested in another bracket (strings skipped).

    A value is only salvaged from a top-level bracket, so the ``[1]`` inside a
    truncated ``[{"fact": "…", "sources": [1]`` is never mistaken for the answer.
    """
    out: list[int] = []
    depth = 0
    in_str = False
    esc = False
    for i, ch in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch in "[{":
            if depth == 0:
                out.append(i)
            depth += 1
        elif ch in "]}" and depth > 0:
            depth -= 1
    return out


def parse_json(text: Any) -> Any:
    """The first JSON list or object in ``text``, or ``None``.

    Tolerates code fences, chatter before and after, trailing commas and
    Python-style literals (single quotes). Never raises.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    for cand in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        s = cand.strip()
        value = _loads(s)
        if isinstance(value, (list, dict)):
            return value
        for i in _top_level_opens(s)[:20]:
            close = "]" if s[i] == "[" else "}"
            ends = [j for j in range(len(s) - 1, i, -1) if s[j] == close][:20]
            for j in ends:
                value = _loads(s[i : j + 1])
                if isinstance(value, (list, dict)):
                    return value
    return None


def complete_text(llm: Any, prompt: str, usage: LLMUsage, task: str) -> str | None:
    """The model's text for ``prompt``, or ``None`` if it raised or returned no text.

    The call, its tokens and time are recorded under ``task``; a ``None``
    result is *not* yet counted as a fallback (the caller decides whether an
    empty answer is usable).
    """
    u = usage.task(task)
    u.calls += 1
    u.prompt_tokens += count_tokens(prompt)
    t0 = time.perf_counter()
    try:
        out = llm.complete(prompt)
    except Exception:  # noqa: BLE001 - any model failure falls back to the LLM-free rule
        u.ms += (time.perf_counter() - t0) * 1e3
        return None
    u.ms += (time.perf_counter() - t0) * 1e3
    text = out if isinstance(out, str) else getattr(out, "text", None) or getattr(out, "content", None)
    if not isinstance(text, str):
        return None
    u.completion_tokens += count_tokens(text)
    return text


def complete_json(
    llm: Any, prompt: str, usage: LLMUsage, task: str, validate: Callable[[Any], Any | None]
) -> Any | None:
    """Call the model and return ``validate(parsed JSON)``, or ``None`` (counted as a fallback).

    ``validate`` maps the parsed value to what the caller needs, or returns
    ``None`` when its shape is wrong.
    """
    text = complete_text(llm, prompt, usage, task)
    value = None
    if text is not None:
        try:
            value = validate(parse_json(text))
        except Exception:  # noqa: BLE001 - a validator choking on odd shapes is malformed output
            value = None
    if value is None:
        usage.task(task).fallbacks += 1
    return value
