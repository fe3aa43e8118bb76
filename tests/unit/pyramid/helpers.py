"""Hand-built keyword indexes and scripted LLMs for the pyramid tests."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np

from sgmem.pyramid.vocabulary import Applied, KeywordIndex


def index_of(turns: list[list[str]], dim: int = 4) -> KeywordIndex:
    """A KeywordIndex whose turn row ``i`` holds the keywords ``turns[i]``."""
    kwi = KeywordIndex(dim)
    applied = Applied()
    ids: dict[str, int] = {}
    for words in turns:
        for w in words:
            if w not in ids:
                ids[w] = len(ids) + 1
                applied.entries.append((ids[w], w, None, None))
    for row, words in enumerate(turns):
        applied.postings.append((row, [ids[w] for w in dict.fromkeys(words)]))
    kwi.extend(applied, lambda mid: mid)
    return kwi


class ScriptedLLM:
    """An LLM whose replies are chosen by prompt kind; records every prompt.

    ``replies`` maps a kind (``extract``, ``group``, ``select``, ``reflect``,
    ``other``) to a string or to a function of the prompt returning one; a
    reply that is an Exception instance is raised.
    """

    KINDS = {
        "extract": "index a conversation memory",
        "group": "file a conversation memory under",
        "select": "Select up to",
        "reflect": "reading them in rounds",
    }

    def __init__(self, **replies: object) -> None:
        self.replies = replies
        self.prompts: list[tuple[str, str]] = []

    def kind(self, prompt: str) -> str:
        return next((k for k, marker in self.KINDS.items() if marker in prompt), "other")

    def complete(self, prompt: str) -> str:
        kind = self.kind(prompt)
        self.prompts.append((kind, prompt))
        reply = self.replies.get(kind, "[]")
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(prompt)
        return str(reply)

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.prompts if k == kind)


def extract_capitalised_and_nouns(prompt: str) -> str:
    """Extraction reply: the words of 4+ letters of the quoted message."""
    text = prompt.split('"""')[1]
    return json.dumps([w for w in re.findall(r"[A-Za-z]{4,}", text)][:6])


def reflect_keep_all(sufficient: bool) -> Callable[[str], str]:
    """Reflection reply: every memory id shown is critical."""

    def reply(prompt: str) -> str:
        ids = re.findall(r"\[(M\d+)\]", prompt)
        return json.dumps({"answer": "a draft", "sufficient": sufficient, "critical": ids})

    return reply


def rel_of(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)
