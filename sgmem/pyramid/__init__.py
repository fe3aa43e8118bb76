"""MGRetrieval: reflective keyword-pyramid retrieval (ALGORITHMS §3, arXiv 2605.27437).

Every added turn gets keywords (an LLM's, or the offline lexical rule),
mapped onto a per-scope canonical vocabulary with an inverted index
``keyword → turns`` stored in SQLite. A query selects keywords, builds the
pyramid of their combinations and reads it top-down in reflective rounds.
Use it with ``Memory.search(..., mode="pyramid")`` or as the hybrid mode's
pyramid channel (``HybridConfig.w_pyramid``).
"""

from __future__ import annotations

from .config import PyramidConfig
from .keywords import candidates, keyword_key
from .llmio import Usage
from .pyramid import Level, Node, build_pyramid
from .reflect import Found, Outcome, reflective_search
from .vocabulary import KeywordIndex

__all__ = [
    "Found",
    "KeywordIndex",
    "Level",
    "Node",
    "Outcome",
    "PyramidConfig",
    "Usage",
    "build_pyramid",
    "candidates",
    "keyword_key",
    "reflective_search",
]
