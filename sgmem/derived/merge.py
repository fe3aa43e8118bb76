"""Merging a candidate into its nearest fact (the gate's Update, ALGORITHMS §2.5, §2.8).

With an LLM, SAGE's merge prompt; on unusable output (the model raised, or
answered nothing) the LLM-free rule of §2.8 is applied and the fallback is
counted:

1. if one text contains the other (after normalisation), keep the longer;
2. otherwise ``existing + " " + new`` with duplicate sentences removed, capped
   at 2 sentences / 400 characters. [D] When the cap bites, the existing
   memory's first sentence (its anchor) and the newest sentence are kept;
   the superseded text stays in the memory's history.
"""

from __future__ import annotations

import re
from typing import Any

from .. import prompts
from ..llm import LLMUsage, complete_text
from ..text.segment import split_sentences

__all__ = ["MAX_CHARS", "MAX_SENTENCES", "llm_merge", "normalise", "rule_merge"]

MAX_SENTENCES = 2
MAX_CHARS = 400
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower-case words joined by single spaces (punctuation and spacing ignored)."""
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def _cap_chars(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def rule_merge(existing: str, new: str, max_sentences: int = MAX_SENTENCES, max_chars: int = MAX_CHARS) -> str:
    """The LLM-free merge of §2.8 (see the module docstring)."""
    a, b = normalise(existing), normalise(new)
    if b in a:
        return existing
    if a in b:
        return new
    seen: set[str] = set()
    sents: list[str] = []
    for s in split_sentences(existing) + split_sentences(new):
        key = normalise(s)
        if key and key not in seen:
            seen.add(key)
            sents.append(s.strip())
    if len(sents) > max_sentences:
        sents = sents[: max_sentences - 1] + sents[-1:] if max_sentences > 1 else sents[-1:]
    return _cap_chars(" ".join(sents), max_chars)


def llm_merge(llm: Any, existing: str, new: str, usage: LLMUsage, strict: bool = False) -> str | None:
    """SAGE's merge prompt; ``None`` (a counted fallback) when the answer is unusable."""
    template = prompts.MERGE_STRICT if strict else prompts.MERGE
    text = complete_text(llm, template.format(existing=existing, new=new), usage, "merge")
    merged = _clean(text) if text is not None else ""
    if not merged:
        usage.task("merge").fallbacks += 1
        return None
    return _cap_chars(merged, 4 * MAX_CHARS)


def _clean(text: str) -> str:
    """Strip quotes, labels and fences a model wraps its answer in."""
    t = text.strip().strip("`").strip()
    t = re.sub(r"^(merged memory|merged|memory|answer)\s*:\s*", "", t, flags=re.IGNORECASE)
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t
