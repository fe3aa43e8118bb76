"""Keywords of a turn or a query (ALGORITHMS §3.2 step 1, §3.3; LLM-free rule §3.7).

Without an LLM: offline word tokens lemmatised with ``simplemma`` (its
dictionaries ship inside the wheel; nothing is downloaded), lower-cased,
stopwords and light chat words dropped. There is no offline part-of-speech
tagger, so "keep nouns, proper nouns, numbers and dates" (§3.7) is
approximated [D] by dropping the stopword list of :mod:`sgmem.text.lexical`
plus :data:`LIGHT_WORDS` (generic verbs, adjectives and adverbs of chat);
proper nouns keep their form (simplemma leaves capitalised names alone),
numbers and month names are kept. A turn keeps its top keywords by TF-IDF
within the scope.

With an LLM: the extraction prompt of :mod:`sgmem.prompts`; output that is not
a JSON list of strings falls back to the lexical rule for that turn.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from ..text.lexical import STOPWORDS, stem_terms
from .lemmas import lemmatize

__all__ = ["LIGHT_WORDS", "candidates", "keyword_key", "select_top", "stem_key", "turn_keywords"]

#: the longest keyword kept (rule and LLM alike): a longer token is no keyword, and the vocabulary's
#: unique index must hold it on PostgreSQL too (a btree row holds at most ~2,700 bytes)
MAX_KEY_CHARS = 64
_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*", re.UNICODE)

#: [D] Generic words of chat that carry no topic; with no POS tagger they stand
#: in for "keep nouns" (§3.7). Lemmas, lower-case.
LIGHT_WORDS = frozenset(
    """
    be have do go get make know think feel want see say tell look come take give try need seem sound mean
    happen keep let put use find bring start begin talk ask guess hope wish glad happy great good awesome
    amazing nice cool wonderful fantastic incredible lovely beautiful super pretty totally definitely
    absolutely sure bit kind sort stuff thing way lot time day today yesterday tomorrow now recently
    always never ever still even though although maybe probably actually literally especially already
    soon later also too well right new old big little lot lots much many more most really truly
    hey hi hello wow yeah yep yes oh ok okay thanks thank haha lol gonna wanna gotta omg btw
    one something anything everything nothing someone anyone everyone somebody anybody everybody
    able sorry true real whole own same different other another every each such last next first
    """.split()
)

# simplemma quirks on common words
_LEMMA_FIXES = {"gone": "go", "felt": "feel", "means": "mean"}

_MONTHS = frozenset("january february march april may june july august september october november december".split())


@lru_cache(maxsize=65536)
def _lemma(token: str) -> str:
    fixed = _LEMMA_FIXES.get(token.lower())
    if fixed is not None:
        return fixed
    try:
        return lemmatize(token)
    except ImportError:  # pragma: no cover - simplemma is a core dependency
        return token.lower()
    except Exception:  # noqa: BLE001 - a lemmatiser failure must not fail an add
        return token


@lru_cache(maxsize=32768)  # a pure function of the word, called for every token of every add
def keyword_key(word: str) -> str:
    """The lookup form of a keyword: lemma, lower-case, quotes removed.

    Multi-word keywords (an LLM may return "pottery class", "self-care") keep
    one space between their lemmatised words.
    """
    keys = []
    for part in word.replace("’", "'").replace("-", " ").split():
        if part.endswith("'s") or part.endswith("'S"):
            part = part[:-2]
        part = part.strip('.,;:!?"()[]{}+*')
        if not part:
            continue
        lem = part if part.isdigit() else _lemma(part)
        key = lem.lower().replace("'", "")
        if key:
            keys.append(key)
    return " ".join(keys)


@lru_cache(maxsize=65536)
def stem_key(key: str) -> str:
    """The Snowball stem of a keyword's words ("passionate" and "passion" → "passion")."""
    return " ".join(stem_terms(key.split()))


def candidates(text: str) -> list[str]:
    """Keyword candidates of ``text`` with repeats (for term frequency), in order.

    Lemmas of content words; numbers and capitalised month names are kept,
    stopwords and :data:`LIGHT_WORDS` are dropped.
    """
    out: list[str] = []
    for m in _WORD.finditer(text):
        for tok in m.group(0).split("-"):
            key = _candidate(tok)
            if key:
                out.append(key)
    return out


@lru_cache(maxsize=65536)  # a pure function of the token, called for every token of every add
def _candidate(tok: str) -> str:
    """The keyword candidate of one token of :func:`candidates`, or "" when it is none."""
    tok = tok.replace("’", "'")
    if tok.endswith("'s") or tok.endswith("'S"):
        tok = tok[:-2]
    low = tok.lower()
    if not tok or low in STOPWORDS:
        return ""
    if low in _MONTHS:
        return low if tok[0].isupper() else ""
    if tok.isdigit():
        return tok
    key = keyword_key(tok)
    if not key or key in STOPWORDS or key in LIGHT_WORDS or low in LIGHT_WORDS:
        return ""
    if len(key) < 2 and not key.isdigit():
        return ""
    if len(key) > MAX_KEY_CHARS:  # a hash or an encoded blob, not a keyword (and past an index's row size)
        return ""
    return key


def select_top(cands: Sequence[str], k: int, idf: Callable[[str], float]) -> list[str]:
    """The ``k`` distinct candidates with the highest TF-IDF (ties: first seen)."""
    tf = Counter(cands)
    order = {w: i for i, w in reversed(list(enumerate(cands)))}
    ranked = sorted(tf, key=lambda w: (-tf[w] * idf(w), order[w]))
    return ranked[:k]


def turn_keywords(
    texts: Sequence[str],
    speakers: Sequence[str | None],
    k: int,
    df: Callable[[str], int],
    n_docs: int,
    speaker_keyword: bool,
) -> list[list[str]]:
    """§3.7 keywords of each turn: top-``k`` by TF-IDF, plus the speaker's name.

    Args:
        texts: the turns' contents.
        speakers: each turn's speaker name (or None).
        df: the scope's document frequency of a keyword before this add.
        n_docs: the scope's turns before this add.
    """
    cands = [candidates(t) for t in texts]
    batch_df: Counter[str] = Counter()
    for c in cands:
        batch_df.update(set(c))
    n = max(n_docs + len(texts), 1)

    def idf(w: str) -> float:
        d = df(w) + batch_df[w]
        return math.log(1.0 + (n - d + 0.5) / (d + 0.5))

    out: list[list[str]] = []
    for c, spk in zip(cands, speakers, strict=False):
        kws = select_top(c, k, idf)
        if speaker_keyword and spk:
            for w in speaker_words(spk):
                if w not in kws:
                    kws.append(w)
        out.append(kws)
    return out


def speaker_words(name: str) -> list[str]:
    """Keywords of a speaker's name ("Caroline" → ["caroline"])."""
    return [keyword_key(t) for t in _WORD.findall(name) if t.lower() not in STOPWORDS]


def clean_llm_keywords(raw: Iterable[object], limit: int) -> list[str] | None:
    """Keywords from an LLM's JSON list, as lookup keys; None when malformed."""
    if not isinstance(raw, list):
        return None
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            return None
        key = keyword_key(item)
        if key and key not in STOPWORDS and key not in out and len(key) <= MAX_KEY_CHARS:
            out.append(key)
        if len(out) >= limit:
            break
    return out
