"""Entity mentions per turn, LLM-free: rules for spans, the embedder for types.

LightGMEM extracts mentions with GLiNER2 (seed §3.2.1), whose weights come from
a model hub that sgmem never downloads from. [D] Instead (ALGORITHMS §4.3):

- **spans** by rule: quoted titles ("Inception"), runs of capitalised words
  that are not a sentence's first word (a first word counts when the run goes
  on: "New York is…"), words with inner capitals or digits ("CS:GO", "iPhone"),
  month and weekday names, and numbers;
- **types** zero-shot with the embedder already loaded: the cosine of the
  mention's surface and of its sentence to short type descriptions
  (:data:`~sgmem.entities.config.ENTITY_TYPES`); dates and numbers by rule.

A mention is the enriched tuple of eq. 4: surface ``s(m)``, type ``τ(m)``,
local context ``κ(m)`` (its sentence and the other names of its turn) and
time ``δ(m)`` (the turn's time).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..text.lexical import STOPWORDS
from .config import ENTITY_TYPES, EntityConfig

__all__ = ["Mention", "TypeModel", "find_spans", "norm_name", "query_categories"]

_MONTHS = (
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday"
).split()
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,60})[\"”]")
# a capitalised word (letters, inner apostrophes, hyphens, colons, digits, dots as in "St.")
_CAP = r"(?:[A-Z][\w'’:\-\.&]*[\w])|(?:[A-Z])"
_WORD = re.compile(r"[A-Za-z0-9][\w'’:\-\.&]*[\w]|[A-Za-z0-9]")
_JOINERS = {"of", "the", "de", "la", "von", "van", "&"}  # not "and": "Anna and Ben" are two people
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?(?:st|nd|rd|th|%|k)?\b")
_SENT_END = re.compile(r"[.!?]\s*$|^\s*$")
# first words of a sentence that are never names on their own
_NOT_NAMES = set(STOPWORDS) | {
    "hey",
    "hi",
    "hello",
    "wow",
    "yeah",
    "yes",
    "no",
    "thanks",
    "thank",
    "sure",
    "cool",
    "great",
    "awesome",
    "nice",
    "oh",
    "ok",
    "okay",
    "haha",
    "lol",
    "omg",
    "congrats",
    "congratulations",
    "definitely",
    "absolutely",
    "totally",
    "sounds",
    "good",
    "glad",
    "happy",
    "sorry",
    "love",
    "well",
    "so",
    "also",
    "by",
    "speaking",
    "anyway",
    "btw",
    "last",
    "next",
    "this",
    "that",
    "check",
    "take",
    "here",
    "there",
    "it",
    "i",
    "im",
    "i'm",
    "yesterday",
    "today",
    "tomorrow",
    "tonight",
    "later",
    "lately",
    "recently",
    "now",
    "finally",
    "actually",
    "honestly",
    "maybe",
    "plus",
    "guess",
    "aww",
    "yep",
    "nope",
    "hmm",
    "ah",
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
}


def norm_name(text: str) -> str:
    """The normalised key of a name: casefolded, punctuation and leading articles stripped (§4.2 step 2)."""
    words = re.findall(r"[^\W_]+", re.sub(r"['’]s\b", "", text.casefold()))
    while words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


@dataclass
class Mention:
    """One entity mention (seed eq. 4)."""

    surface: str
    start: int
    end: int
    kind: str  # "name", "title", "date", "number", "speaker"
    sentence: int = -1  # index of its sentence within the add (context κ)
    type: str = "other"
    type_score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    cue: str | None = None  # a type the words around the name state ("my dog Biscuit"), see _cue_type

    @property
    def norm(self) -> str:
        return norm_name(self.surface)


def _sentence_starts(text: str) -> set[int]:
    """Offsets where a sentence begins (after . ! ? or a line break, or at 0; not after "Dr." or "Mrs.")."""
    starts = {len(text) - len(text.lstrip())}
    for m in re.finditer(r"[.!?…]+[\"”')\]]*\s+|\n+\s*", text):
        if not re.search(r"\b(?:mr|mrs|ms|dr|prof|st)\.$", text[max(0, m.start() - 5) : m.start() + 1].lower()):
            starts.add(m.end())
    return starts


def find_spans(text: str, known: set[str] | frozenset[str] = frozenset()) -> list[Mention]:
    """Candidate entity mentions of one turn, by rule (no types yet).

    ``known``: normalised names of the scope's entities; a sentence's first
    word that is one of them counts ("Valorant rocks").
    """
    out: list[Mention] = []
    taken = np.zeros(len(text) + 1, dtype=bool)

    def push(a: int, b: int, kind: str) -> None:
        if b <= a or taken[a:b].any():
            return
        surface = text[a:b].strip(" '’-:.")
        if not surface or not norm_name(surface):
            return
        a = text.find(surface, a)
        out.append(Mention(surface, a, a + len(surface), kind))
        taken[a : a + len(surface)] = True

    for m in _QUOTED.finditer(text):
        inner = m.group(1).strip()
        if inner and len(inner.split()) <= 8 and not _SENT_END.search(inner[-1:] + " ") or inner[:1].isupper():
            push(m.start(1), m.end(1), "title")
    starts = _sentence_starts(text)
    words = list(_WORD.finditer(text))
    i = 0
    while i < len(words):
        w = words[i]
        tok = w.group(0)
        low = tok.lower()
        if low in _MONTHS and tok[0].isupper():
            push(w.start(), w.end(), "date")
            i += 1
            continue
        if not tok[0].isupper() and not (any(c.isupper() for c in tok[1:]) and tok[0].isalpha()):
            i += 1
            continue
        # a run of capitalised words, allowing joiners inside ("Lord of the Rings")
        j = i + 1
        while j < len(words):
            nxt = words[j].group(0)
            gap = text[words[j - 1].end() : words[j].start()]
            if gap.strip() not in ("", "-", "&", ":") or "\n" in gap:
                break
            if nxt[0].isupper() and nxt.lower() not in _MONTHS:
                j += 1
            elif nxt.lower() in _JOINERS and j + 1 < len(words) and words[j + 1].group(0)[0].isupper():
                j += 2
            else:
                break
        run = words[i:j]
        first_of_sentence = run[0].start() in starts
        if first_of_sentence:
            # a sentence's first word is capitalised anyway: keep it only inside a longer name
            lone = (
                len(run) == 1
                and norm_name(run[0].group(0)) not in known
                and _cue_type(text, run[0].start(), run[0].end()) is None  # "Shelly the turtle is…"
            )
            rest = norm_name(text[run[1].start() : run[-1].end()]) if len(run) > 1 else ""
            # "Bye Jon": an opener before a known name is not part of it
            if (
                lone
                or run[0].group(0).lower() in _NOT_NAMES
                or (rest in known and norm_name(run[0].group(0)) not in known)
            ):
                run = run[1:]
        while run and run[-1].group(0).lower() in _JOINERS:
            run = run[:-1]
        if run and not (len(run) == 1 and (run[0].group(0).lower() in _NOT_NAMES or run[0].group(0) == "I")):
            push(run[0].start(), run[-1].end(), "name")
        i = max(j, i + 1)
    for m in _NUMBER.finditer(text):
        push(m.start(), m.end(), "number")
    out.sort(key=lambda x: x.start)
    for x in out:
        if x.kind == "name":
            x.cue = _cue_type(text, x.start, x.end)
    return out


#: [D] words that state a name's type when they stand right before it ("my dog Biscuit", "Dr. Patel",
#: "a puppy and named him Rocket") or right after it ("Shelly the turtle", "Luna, my cat")
_PET_WORDS = frozenset(
    "dog dogs puppy pup cat cats kitten kitty turtle tortoise hamster parrot bird bunny rabbit horse pony "
    "pet pets goldfish fish guinea pig lizard snake ferret".split()
)
_PERSON_WORDS = frozenset(
    "brother sister mom mother dad father son daughter wife husband friend cousin aunt uncle grandma grandpa "
    "grandmother grandfather niece nephew boss coworker colleague teacher coach neighbor neighbour partner "
    "boyfriend girlfriend fiance fiancee roommate mr mrs ms dr prof".split()
)
_CUE_WORD = re.compile(r"[a-z]+")


def _cue_type(text: str, start: int, end: int) -> str | None:
    """The type the nearby words state for the name at ``text[start:end]``, or None."""
    head = text[max(0, start - 40) : start].lower()
    before = _CUE_WORD.findall(head)[-5:]
    after = _CUE_WORD.findall(text[end : end + 20].lower())[:3]
    if before and before[-1] in _PERSON_WORDS and re.search(r"[a-z]\.?\s+$", head):  # "my brother Jonah", "Dr. Patel"
        return "person"
    if any(w in _PET_WORDS for w in before) or (
        after[:1] in (["the"], ["my"], ["our"]) and after[1:2] and after[1] in _PET_WORDS
    ):
        return "animal"
    return None


class TypeModel:
    """Zero-shot entity typing with the memory's embedder (cached type vectors).

    Args:
        embed: embeds short texts to unit rows (e.g. :class:`sgmem.pyramid.retrieve.WordVectors`).
        cfg: weights and thresholds.
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray], cfg: EntityConfig) -> None:
        self.embed = embed
        self.cfg = cfg
        self.names = [t for t in ENTITY_TYPES if t not in ("date", "number")]
        self._mat: np.ndarray | None = None

    def matrix(self) -> np.ndarray:
        """(types, dim) unit vectors of the type descriptions."""
        if self._mat is None:
            self._mat = self.embed([ENTITY_TYPES[t] for t in self.names])
        return self._mat

    @staticmethod
    def _by_cue(m: Mention) -> bool:
        """Type a name its surrounding words type (:func:`_cue_type`): a rule, confidence 1."""
        if m.cue is None:
            return False
        m.type, m.type_score = m.cue, 1.0
        return True

    def assign(self, mentions: Sequence[Mention], sentence_vecs: np.ndarray) -> None:
        """Type ``mentions`` in place: rules for dates and numbers, cosines for names."""
        named = [m for m in mentions if m.kind in ("name", "title")]
        for m in mentions:
            if m.kind in ("date", "number"):
                m.type, m.type_score = m.kind, 1.0
            elif m.kind == "speaker":
                m.type, m.type_score = "person", 1.0
        named = [m for m in named if not self._by_cue(m)]
        if not named:
            return
        mat = self.matrix()
        surf = self.embed([m.surface for m in named]) @ mat.T
        a = self.cfg.type_surface_weight
        for i, m in enumerate(named):
            ctx = sentence_vecs[m.sentence] @ mat.T if 0 <= m.sentence < len(sentence_vecs) else surf[i]
            sc = a * surf[i] + (1.0 - a) * ctx
            j = int(np.argmax(sc))
            m.scores = {t: round(float(s), 4) for t, s in zip(self.names, sc, strict=True)}
            # [D] confidence = the best type's lead over the mean of all types: bare names score
            # low against every description, so an absolute cosine threshold would type none
            margin = float(sc[j] - sc.mean())
            m.type, m.type_score = (self.names[j] if margin >= self.cfg.min_type_score else "other"), margin


def query_categories(
    words: Sequence[str], embed: Callable[[list[str]], np.ndarray], types: TypeModel, min_cosine: float
) -> dict[str, tuple[str, float]]:
    """Entity types a query names by a category word: type → (word, cosine).

    "Which cities has John been to?" → {"place": ("cities", 0.6)}. Person is
    never a category here (a question names people as anchors, not as a type).
    """
    if not words:
        return {}
    sims = embed(list(words)) @ types.matrix().T
    out: dict[str, tuple[str, float]] = {}
    for i, w in enumerate(words):
        for j, t in enumerate(types.names):
            s = float(sims[i, j])
            if t != "person" and s >= min_cosine and s > out.get(t, ("", -1.0))[1]:
                out[t] = (w, s)
    return out
