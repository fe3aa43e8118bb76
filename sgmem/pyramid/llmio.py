"""Calling an :class:`sgmem.LLM` for JSON, with usage accounting and safe fallback.

Every call is counted (calls, exact cl100k prompt and completion tokens). A
call that raises, or whose output holds no JSON of the expected shape, returns
``None``; callers then use their LLM-free rule, so a bad model never fails a
query or an add.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..llm import parse_json
from ..text.tokens import count_tokens

__all__ = ["Usage", "call_json"]


@dataclass
class Usage:
    """LLM calls made for one operation (an add, a query).

    Attributes:
        calls: calls made (including ones that raised).
        prompt_tokens, completion_tokens: exact cl100k_base counts.
        malformed: calls whose output could not be used (the rule was used).
        errors: calls that raised (the rule was used); the last error's class
            name is in ``last_error``.
        ms: milliseconds spent waiting for the model.
        by_kind: calls per purpose (``"extract"``, ``"group"``, ``"match"``, ``"select"``, ``"reflect"``).

    The field names match what :mod:`sgmem.derived` reads to add the keyword
    calls of an add to ``AddResult.llm_*`` and the scope's LLM totals.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    errors: int = 0
    last_error: str | None = None
    ms: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def merge(self, other: Usage) -> None:
        """Add another usage's counts to this one."""
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.malformed += other.malformed
        self.errors += other.errors
        self.ms += other.ms
        self.last_error = other.last_error or self.last_error
        for k, v in other.by_kind.items():
            self.by_kind[k] = self.by_kind.get(k, 0) + v

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (for ``Hit.why``)."""
        out: dict[str, Any] = {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens": self.tokens,
            "ms": round(self.ms, 1),
        }
        if self.malformed:
            out["malformed"] = self.malformed
        if self.errors:
            out["errors"] = self.errors
            out["last_error"] = self.last_error
        return out


def call_json(llm: Any, prompt: str, usage: Usage, kind: str) -> Any:
    """Send ``prompt``; return its parsed JSON, or None (counted as malformed/error)."""
    usage.by_kind[kind] = usage.by_kind.get(kind, 0) + 1
    p_tokens = count_tokens(prompt)
    usage.calls += 1
    usage.prompt_tokens += p_tokens
    t0 = time.perf_counter()
    try:
        out = llm.complete(prompt)
    except Exception as exc:  # noqa: BLE001 - any model failure falls back to the rule
        usage.ms += (time.perf_counter() - t0) * 1e3
        usage.errors += 1
        usage.last_error = type(exc).__name__
        return None
    usage.ms += (time.perf_counter() - t0) * 1e3
    text = out if isinstance(out, str) else getattr(out, "text", None) or getattr(out, "content", None)
    if not isinstance(text, str):
        usage.malformed += 1
        return None
    usage.completion_tokens += count_tokens(text)
    value = parse_json(text)
    if value is None:
        usage.malformed += 1
    return value
