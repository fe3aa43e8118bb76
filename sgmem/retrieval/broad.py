"""Broad questions about the user: "What do you know about me?", "Summarise what you remember about my family".

The default relevance cutoff (``Config.min_relevance``) empties the context of
a question that nothing stored matches closely, so that an unrelated question
gets nothing. A broad question about the user matches nothing closely either:
it names no fact, only the user and perhaps a topic ("my family", "my work").
Without this rule it got an empty context whatever the memory held.

[D] A query is *broad* when its cosine to the nearest of a few generic
requests about the user (:data:`BROAD_PROMPTS`, embedded once per memory) is
at least ``Config.broad_cosine`` (0.5 with all-MiniLM-L6-v2): the question is
read by its meaning, not its words, and no fact it names can be matched. A
broad question gets, beside the hits that pass the cutoff, the user's own
statements among the ranked hits, in the hybrid's order
(which ranks what the user said over the assistant's restatements,
``HybridConfig.assistant_weight``). When the query names a topic beyond the
user ("my family"), only the statements about it are kept: those whose
relevance to the query exceeds their relevance to the nearest generic request
by at least ``Config.relative_relevance`` × the largest such lift
(:func:`user_statements`). The
user's statements are the turns of every speaker but the assistant and tools
with at least one sentence that is neither a question, a non-answer nor filler
(:mod:`sgmem.text.acts`).

How 0.5 was chosen: nine broad requests written apart from the prototypes
score 0.36–0.90 against them (seven reach 0.5), while none of LongMemEval's
393 development questions (specific questions about the user: "What was my
previous occupation?", at most 0.45), none of the first 400 LoCoMo questions
(at most 0.36) and none of the 50 bundled unrelated questions (at most 0.13)
does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..text.acts import FILLER, NON_ANSWER, QUESTION
from .dense import relevance_of_rows
from .speakers import assistant_turns

__all__ = ["BROAD_PROMPTS", "TOPIC_LIFT", "BroadPrompts", "user_statements"]

#: [D] the least topical lift (relevance to the query less relevance to the nearest generic request) by which a
#: broad query names a topic ("Summarise what you remember about my family"); below it, every statement is kept.
#: On a written chat the statements a named topic ("my family", "my work") is about lift 0.08–0.16, a rewording
#: without a topic ("What have you learned about me so far?") lifts any statement by at most 0.05
TOPIC_LIFT = 0.07

#: generic requests for what the memory knows about the user; a query near one of them by meaning is broad
BROAD_PROMPTS = (
    "What do you know about me?",
    "Tell me everything you remember about me.",
    "Summarise what you know about my life.",
    "What have I told you about myself?",
    "Give me an overview of what you remember about me.",
)


class BroadPrompts:
    """:data:`BROAD_PROMPTS` embedded by one embedder (lazily, once), and a query's nearness to them."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._vecs: np.ndarray | None = None
        self._lock = threading.Lock()

    def nearest(self, q: np.ndarray) -> tuple[float, np.ndarray]:
        """The query vector's best cosine against the prompts, and that prompt's vector."""
        with self._lock:
            if self._vecs is None:
                v = np.asarray(self._embedder.embed(list(BROAD_PROMPTS)), dtype=np.float32)
                self._vecs = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        qv = np.asarray(q, dtype=np.float32)
        norm = float(np.linalg.norm(qv))
        cos = self._vecs @ qv / norm if norm > 0 else np.zeros(len(self._vecs), dtype=np.float32)
        best = int(np.argmax(cos))
        return float(cos[best]), self._vecs[best]


def user_statements(idx: Any, rows: Iterable[int], q: np.ndarray, prompt: np.ndarray, share: float) -> list[int]:
    """The turns of ``rows`` (in their order) that are the user's statements, kept to the topic the query names.

    A statement's *topical lift* is its relevance to the query less its relevance to the generic request
    ``prompt`` nearest the query: what the query asks beyond "about me". When the best lift reaches
    :data:`TOPIC_LIFT` the query names a topic ("my family"), and the statements whose lift is at least
    ``share`` × the best are kept; otherwise every statement is.
    """
    said = assistant_turns(idx)
    tool = idx.array("tool")
    acts = idx.sentence_acts()
    first = idx.array("turn_first")
    no_content = np.array([QUESTION, NON_ANSWER, FILLER])
    cands = [
        r
        for r in dict.fromkeys(rows)
        if not said[r] and not tool[r] and (~np.isin(acts[int(first[r]) : int(first[r + 1])], no_content)).any()
    ]
    if not cands:
        return []
    asked, generic = relevance_of_rows(idx, q, cands), relevance_of_rows(idx, prompt, cands)
    lift = {r: asked[r] - generic[r] for r in cands}
    best = max(lift.values())
    if best < TOPIC_LIFT:
        return cands
    return [r for r in cands if lift[r] >= share * best]
