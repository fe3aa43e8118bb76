"""Lexical analysis shared by the BM25 and lexical channels.

Lower-cased word tokens, English stopwords removed (the list bm25s ships,
plus chat fillers), each word reduced to its term by one of two analyzers. No downloaded data.

- ``"lemma"`` (new stores): the word's dictionary form (simplemma's English tables): "managers" and
  "manager" meet, "manageable" and "manager" do not, "working" and "worked" meet "work".
- ``"snowball"`` (stores written before the analyzer was recorded): the Snowball English stem (PyStemmer),
  which also strips derivational endings, so "manageable", "managing" and "manager" all become "manag" and a
  shared stem counted as a shared word.

A store records the analyzer its terms were written with (``SQLiteStore.bind_analyzer``) and every query of
it is analyzed the same way.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from functools import lru_cache

__all__ = ["ANALYZERS", "DEFAULT_ANALYZER", "STOPWORDS", "analyze", "has_word", "stem_terms", "term_forms", "tokenize"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

# Function words and conversational fillers: they match every turn and carry
# no evidence. Question words are included because questions always have them.
_EXTRA_STOPWORDS = """
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they'd they'll they're they've this those through
to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
where where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
you're you've your yours yourself yourselves yeah yes oh ok okay hey hi hello wow thanks thank really
just also got get gets lot lots thing things much many like s t d ll re ve m
"""


def import_bm25s():  # type: ignore[no-untyped-def]
    """``import bm25s`` without the progress-bar warning its ``tqdm.auto`` import prints in Jupyter."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*IProgress not found.*")
        warnings.filterwarnings("ignore", module="tqdm.*")
        import bm25s

    return bm25s


def _bm25s_stopwords() -> tuple[str, ...]:
    """bm25s's English stopword list, read from its ``bm25s/stopwords.py`` without importing the package:
    ``import bm25s`` costs SciPy's import (0.2–0.4 s), and a command-line search never ranks with BM25."""
    spec = importlib.util.find_spec("bm25s")
    where = spec.submodule_search_locations if spec is not None else None
    if where:
        for folder in where:
            file = importlib.util.spec_from_file_location("_sgmem_bm25s_stopwords", f"{folder}/stopwords.py")
            if file is None or file.loader is None:
                continue
            module = importlib.util.module_from_spec(file)
            try:
                file.loader.exec_module(module)
            except (OSError, ImportError):
                continue
            words = getattr(module, "STOPWORDS_EN", None)
            if words:
                return tuple(words)
    import_bm25s()  # a layout this does not know: the package's own import
    from bm25s.stopwords import STOPWORDS_EN

    return tuple(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    words = set(_EXTRA_STOPWORDS.split())
    try:
        words.update(_bm25s_stopwords())
    except ImportError:  # pragma: no cover - bm25s is a core dependency
        pass
    return frozenset(words)


STOPWORDS = _stopwords()


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits; apostrophes kept inside)."""
    low = text.lower()
    words: list[str] = _WORD.findall(low)  # the pattern has no groups: whole matches
    return [w.replace("’", "'") for w in words] if "’" in low else words


def has_word(text: str) -> bool:
    """Whether :func:`tokenize` finds any token in ``text`` (without building the list)."""
    return _WORD.search(text.lower()) is not None


#: the analyzers a store's terms may be written with (module docstring)
ANALYZERS = ("lemma", "snowball")
#: [D] what a new store is written with: lemmas count a shared word, not a shared stem. Measured on the
#: LoCoMo dev split (in-sample recall@10, cat 1-4): 81.95 against 82.08 with Snowball stems (R@5 74.30 / 74.34)
DEFAULT_ANALYZER = "lemma"


def stem_terms(words: list[str]) -> list[str]:
    """Stem words with the Snowball English stemmer."""
    return list(_stemmer().stemWords(words))


@lru_cache(maxsize=1 << 16)
def _lemma(word: str) -> str:
    from ..pyramid.lemmas import lemmatize  # simplemma's, through its decoded dictionary once the CLI cached it

    return lemmatize(word).lower()


def term_forms(words: list[str], analyzer: str = DEFAULT_ANALYZER) -> list[str]:
    """Each word's term under ``analyzer`` (:data:`ANALYZERS`): its lemma or its Snowball stem."""
    if analyzer == "snowball":
        return stem_terms(words)
    return [_lemma(w) for w in words]


def as_written(text: str, terms: list[str], analyzer: str = DEFAULT_ANALYZER) -> list[str]:
    """The words of ``text`` whose :func:`analyze` term is in ``terms``, as written there, in its order.

    Shows a user which of their words matched ("Alice", "managing") rather than the stems ("alic",
    "manag"); a term no word of ``text`` gives is kept as it is.
    """
    wanted = set(terms)
    out: dict[str, None] = {}
    found: set[str] = set()
    for word, stem in _written_stems(text, analyzer):
        if stem in wanted:
            out.setdefault(word, None)
            found.add(stem)
    return list(out) + [t for t in terms if t not in found]


@lru_cache(maxsize=64)
def _written_stems(text: str, analyzer: str = DEFAULT_ANALYZER) -> tuple[tuple[str, str], ...]:
    """Each content word of ``text`` as written (a possessive cut off) and its stem, in order: one query's
    hits each show their matched words, and the query is stemmed once for all of them."""
    words, bare_words = [], []
    for word in _WORD.findall(text):
        low = word.lower().replace("’", "'")
        bare = low[:-2] if low.endswith("'s") else low
        if bare and bare not in STOPWORDS:
            words.append(word[: len(bare)])
            bare_words.append(bare)
    return tuple(zip(words, term_forms(bare_words, analyzer), strict=True))


def analyze(text: str, analyzer: str = DEFAULT_ANALYZER) -> list[str]:
    """Content terms of ``text``: tokenised, stopwords dropped, each word reduced by ``analyzer``.

    Possessives are reduced ("Caroline's" → "caroline"; Snowball: "carolin").
    """
    words = []
    for w in tokenize(text):
        if w.endswith("'s"):
            w = w[:-2]
        if w and w not in STOPWORDS:
            words.append(w)
    return term_forms(words, analyzer)
