"""Dialogue acts of chat sentences, for ranking: statement, question, non-answer, filler.

A memory holds an agent's whole chat, not only statements of fact. Ranking
weighs a sentence by what it does in the dialogue (ARCHITECTURE.md, read path):

- **statement**: says something; full evidence.
- **question**: asks; weak evidence for a question (an earlier "What is my cat
  called?" matches the same question asked again better than the answer
  does), whose answer is the reply or a later statement.
- **non-answer**: says the speaker does not know ("I'm not sure, I don't
  remember."), with no other content.
- **filler**: no content at all (greetings, thanks, acknowledgements, "ok",
  emoji); never outranks content and is never a hit's best sentence.

Rules, not a model: word lists and a few patterns, no downloaded data. The
acts only weigh ranking and context assembly; every message is still stored
and replayed verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from .lexical import STOPWORDS

__all__ = ["ACT_NAMES", "FILLER", "NON_ANSWER", "QUESTION", "STATEMENT", "act_of", "acts_of"]

STATEMENT, QUESTION, NON_ANSWER, FILLER = 0, 1, 2, 3
ACT_NAMES = ("statement", "question", "non-answer", "filler")

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)

# Words that carry no content in chat on their own: greetings, thanks, assent, interjections, praise that
# acknowledges what the other said. A sentence of these (and function words) alone is filler.
_FILLER_WORDS = frozenset(
    """
    hi hello hey heya hiya yo howdy morning evening afternoon night goodnight bye goodbye cya later soon
    thanks thank thx ty cheers welcome appreciate appreciated pleasure please sorry apologies
    ok okay k kk alright right sure yes yeah yep yup yea no nope nah nay indeed absolutely definitely totally
    exactly certainly course agreed agree true fair enough same too either
    cool nice great awesome good fine fantastic amazing wonderful lovely perfect excellent brilliant neat
    sweet super terrific splendid superb glad haha hahaha hah hehe heh lol lmao rofl wow whoa omg gosh oh ah
    aha ahh ooh oops hmm hm hmmm um umm uh uhh mhm er huh yay woohoo hooray meh ugh phew
    congrats congratulations bravo kudos sounds sound seems looks
    """.split()
)

# What someone says when they do not know; with these (and function words) alone a sentence is a non-answer.
_NON_ANSWER_WORDS = frozenset(
    """
    sure know knew remember recall idea clue certain unsure forget forgot forgotten tell say said
    information info memory record records dunno afraid mean understand question answer unfortunately
    honestly think hmm sorry
    """.split()
)
_NON_ANSWER = re.compile(
    r"\b(?:not\s+(?:sure|certain)|no\s+(?:idea|clue)|(?:do\s*n[o']t|does\s*n[o']t|did\s*n[o']t|can\s*n?[o']?t|"
    r"could\s*n[o']t|ca\s*n't)\s+(?:know|remember|recall|say|tell)|dunno|unsure|(?:i|i've|i\s+have)\s+forg[eo]t"
    r"|no\s+(?:information|info|memory|record))\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|is|are|am|was|were|do|does|did|can|could|would|will|"
    r"should|shall|may|might|have|has|had|ca\s*n't|wo\s*n't|do\s*n't|does\s*n't|did\s*n't|is\s*n't|"
    r"are\s*n't|was\s*n't)\b",
    re.IGNORECASE,
)
# Acknowledgements made of a praise word and a general noun ("Good idea!", "That's a great point.", "Take care.")
_ACK = re.compile(
    r"^(?:(?:that|it)(?:'s|\s+is|\s+was)\s+|what\s+an?\s+|such\s+an?\s+|sounds\s+like\s+an?\s+)?(?:an?\s+)?"
    r"(?:(?:really|very|so|pretty)\s+)?(?:good|great|nice|cool|fair|excellent|brilliant|lovely|wonderful|amazing|"
    r"interesting|fun|awesome|smart|best)\s+(?:idea|point|job|one|call|question|thought|plan|choice|work|news|luck)"
    r"|^(?:take\s+care|good\s+luck|me\s+too|you\s+too|same\s+here|of\s+course|no\s+problem|no\s+worries|"
    r"my\s+pleasure|see\s+you|talk\s+(?:to\s+you\s+)?soon)",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"[\s\"'’”)\]}*_~]+$")


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def act_of(sentence: str) -> int:
    """The dialogue act of one sentence (:data:`STATEMENT`, :data:`QUESTION`, :data:`NON_ANSWER`, :data:`FILLER`)."""
    words = _words(sentence)
    content = [w for w in words if w not in STOPWORDS and w not in _FILLER_WORDS]
    if not content:  # nothing but greetings, thanks, assent, function words, emoji or punctuation
        return FILLER
    if len(content) <= 2 and _ACK.match(" ".join(words)) and _ACK.sub("", " ".join(words)).strip() == "":
        return FILLER
    if _NON_ANSWER.search(sentence) and all(w in _NON_ANSWER_WORDS for w in content):
        return NON_ANSWER
    end = _TRAILING.sub("", sentence)
    if end.endswith("?") or (not end.endswith((".", "!")) and _QUESTION_START.match(sentence.lstrip())):
        return QUESTION
    return STATEMENT


def acts_of(sentences: Iterable[str]) -> np.ndarray:
    """:func:`act_of` of each sentence, as an int8 array."""
    return np.fromiter((act_of(s) for s in sentences), dtype=np.int8)
