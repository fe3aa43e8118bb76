"""Fakes for the derived-memory tests: a scripted LLM that answers by prompt kind."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class ScriptedLLM:
    """Answers each sgmem prompt by its kind; every prompt is recorded.

    ``answers`` maps a kind (``"facts"``, ``"summary"``, ``"insights"``,
    ``"merge"``) to a string or to a function of the prompt. A kind without
    an answer gets ``""``. ``raises`` makes every call raise.
    """

    def __init__(self, answers: dict[str, str | Callable[[str], str]] | None = None, raises: bool = False) -> None:
        self.answers = answers or {}
        self.raises = raises
        self.prompts: list[tuple[str, str]] = []

    @staticmethod
    def kind(prompt: str) -> str:
        if prompt.startswith("You extract memories"):
            return "facts"
        if prompt.startswith("Summarize this dialogue"):
            return "summary"
        if "Merge related facts into higher-level insights" in prompt:
            return "insights"
        if prompt.startswith("Existing memory:"):
            return "merge"
        return "other"

    def complete(self, prompt: str) -> str:
        kind = self.kind(prompt)
        self.prompts.append((kind, prompt))
        if self.raises:
            raise RuntimeError("model unavailable")
        ans = self.answers.get(kind, "")
        return ans(prompt) if callable(ans) else ans

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)

    def calls(self, kind: str) -> int:
        return sum(1 for k, _ in self.prompts if k == kind)


def facts_json(*facts: str, sources: list[int] | None = None) -> str:
    """A well-formed fact-extraction answer."""
    return json.dumps([{"fact": f, **({"sources": sources} if sources else {})} for f in facts])


def decisions(mem: Any, scope: str) -> list[tuple[str, str, int | None]]:
    """The gate's decision log of a scope: (action, candidate, memory id)."""
    sid = mem._store.scope_id(scope)
    return [
        (a, c, m)
        for a, c, m in mem._store.conn.execute(
            "SELECT action, candidate, memory_id FROM gate_decisions WHERE scope_id = ? ORDER BY id", (sid,)
        )
    ]


class BagEmbedder:
    """A fast deterministic embedder: the normalised sum of per-word random vectors.

    Sentences sharing most words get close vectors, so the gate's Noop /
    Update / Add behave as with a real model, at no model cost.
    """

    def __init__(self, dim: int = 64, name: str = "bag-of-words-64") -> None:
        self.dim = dim
        self.name = name

    def _word(self, w: str) -> Any:
        import hashlib

        import numpy as np

        seed = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
        return np.random.default_rng(seed).normal(size=self.dim)

    def embed(self, texts: Any) -> Any:
        import re

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            words = re.findall(r"\w+", t.lower()) or ["<empty>"]
            v = sum(self._word(w) for w in words)
            out[i] = v / np.linalg.norm(v)
        return out
