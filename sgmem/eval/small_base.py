"""The baselines of the small-memory evaluation, over the same turns as sgmem and with the same embedder object.

Each is given everything that is not sgmem's own method:

* ``dense sentences``: every turn split into sentences (sgmem's splitter), the raw sentence texts (no speaker
  prefix) embedded by the same embedder, a turn scored by its best sentence's cosine to the question;
* ``BM25``: ``bm25s`` over the turns' texts, in the variant :data:`BM25_DEFAULT` (the better of
  :data:`BM25_VARIANTS` on the build pool; every run also reports them all, :func:`bm25_ranking`); a turn
  sharing no term with the question is not ranked;
* ``RRF``: reciprocal rank fusion of the two (Cormack et al., 2009; k = 60);
* ``RRF + role prior``: the same, each assistant turn's fused score times sgmem's
  ``HybridConfig.assistant_weight``.

None has a relevance cutoff: every turn is ranked, so none can answer "nothing" to an unrelated question.
Their context (:meth:`TurnBaselines.context`) is built like sgmem's default one: their turns in rank order, whole,
into sgmem's block format (:func:`sgmem.context.fit`) until the token budget is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import Config
from ..context import ContextTurn, fit
from ..text.segment import split_sentences
from .chat import RRF_K
from .suite import Chat

__all__ = [
    "BASELINES",
    "BM25_DEFAULT",
    "BM25_VARIANTS",
    "BM25Variant",
    "TurnBaselines",
    "bm25_ranking",
    "rrf_scores",
]

#: the baselines, in report order
BASELINES = ("dense sentences", "BM25", "RRF", "RRF + role prior")


@dataclass(frozen=True)
class BM25Variant:
    """One way to set ``bm25s`` up: its scoring method, Snowball stemming, and its English stop words (``"en"``:
    Lucene's 33, ``"en_plus"``: its longer list, ``None``: none)."""

    method: str = "lucene"
    stem: bool = True
    stopwords: str | None = "en"

    @property
    def label(self) -> str:
        return f"{self.method}{', stemmed' if self.stem else ''}{f', stop words {self.stopwords}' if self.stopwords else ''}"


#: the variants ``bm25s`` offers: its five scoring methods, stemming on or off, each stop-word list or none
BM25_VARIANTS = tuple(
    BM25Variant(m, stem, stop)
    for m in ("robertson", "lucene", "atire", "bm25l", "bm25+")
    for stem in (True, False)
    for stop in ("en", "en_plus", None)
)
#: [D] the variant the BM25 baseline runs: the best P@1 of :data:`BM25_VARIANTS` on the build pool (100 chats,
#: seed 0, 474 questions): 23.6 % with bm25s's longer stop-word list and no stemming, tied with ``atire`` and
#: ``bm25+``; ``lucene`` 23.4, stemmed 21.7–22.2, no stop words 17.5–19.4, Lucene's 33 stop words 13.3–16.0
BM25_DEFAULT = BM25Variant("robertson", False, "en_plus")


def _tokenize(texts: list[str], variant: BM25Variant) -> list[list[str]]:
    import bm25s

    stemmer = None
    if variant.stem:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
    out = bm25s.tokenize(
        texts,
        stopwords=variant.stopwords,
        stemmer=stemmer,
        return_ids=False,
        show_progress=False,
    )
    return [list(t) for t in out]


class _BM25Index:
    """``bm25s`` over some texts in one variant."""

    def __init__(self, texts: list[str], variant: BM25Variant) -> None:
        import bm25s

        self.variant, self.n = variant, len(texts)
        docs = _tokenize(texts, variant)
        self.model: Any = None
        if any(docs):
            self.model = bm25s.BM25(method=variant.method)
            self.model.index(docs, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self.model is None:
            return np.zeros(self.n)
        vocab = self.model.vocab_dict
        q = [t for t in _tokenize([query], self.variant)[0] if t in vocab]
        return np.asarray(self.model.get_scores(q), dtype=np.float64) if q else np.zeros(self.n)


def _order(scores: np.ndarray, positive: bool) -> list[int]:
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order if not positive or scores[i] > 0]


def bm25_ranking(texts: Sequence[str], ids: Sequence[str], query: str, variant: BM25Variant) -> list[str]:
    """The ids of the turns ``texts`` sharing a term with ``query``, best BM25 score first."""
    return [ids[i] for i in _order(_BM25Index(list(texts), variant).scores(query), positive=True)]


def rrf_scores(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: each item's Σ 1 / (k + rank) over the rankings (rank from 1)."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return score


class TurnBaselines:
    """The baselines over one chat's turns (every message of every session)."""

    def __init__(
        self,
        chat: Chat,
        embedder: Any,
        variant: BM25Variant = BM25_DEFAULT,
        assistant_weight: float | None = None,
    ) -> None:
        self.embedder = embedder
        self.variant = variant
        self.assistant_weight = Config().hybrid.assistant_weight if assistant_weight is None else assistant_weight
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.turns: dict[str, ContextTurn] = {}
        self.assistant: set[str] = set()
        for n, (thread, at, m) in enumerate(chat.messages()):
            mid = str(m["id"])
            self.ids.append(mid)
            self.texts.append(m["content"])
            self.turns[mid] = ContextTurn(n, m.get("at") or at, thread, str(m.get("name") or m["role"]), m["content"])
            if m["role"] == "assistant" and not m.get("name"):  # as sgmem reads the assistant's turns
                self.assistant.add(mid)
        sentences: list[str] = []
        starts: list[int] = []
        for text in self.texts:
            starts.append(len(sentences))
            sentences += [s for s in split_sentences(text) if s.strip()] or [text]
        self._starts = np.asarray(starts, dtype=np.int64)
        vecs = np.asarray(embedder.embed(sentences), dtype=np.float32)
        self._vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        self._bm25: dict[BM25Variant, Any] = {}

    def dense(self, query: str) -> list[str]:
        """Every turn, by its best sentence's cosine to ``query``."""
        q = np.asarray(self.embedder.embed([query]), dtype=np.float32)[0]
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        best = np.maximum.reduceat(self._vecs @ q, self._starts)
        return [self.ids[i] for i in _order(best.astype(np.float64), positive=False)]

    def bm25(self, query: str, variant: BM25Variant | None = None) -> list[str]:
        """The turns sharing a term with ``query``, by BM25 (``variant``, default this object's)."""
        variant = variant or self.variant
        if variant not in self._bm25:
            self._bm25[variant] = _BM25Index(self.texts, variant)
        return [self.ids[i] for i in _order(self._bm25[variant].scores(query), positive=True)]

    def rankings(self, query: str) -> dict[str, list[str]]:
        """Every baseline's ranking of the turns for ``query`` (:data:`BASELINES`)."""
        dense, lexical = self.dense(query), self.bm25(query)
        fused = rrf_scores([lexical, dense])
        prior = {t: s * (self.assistant_weight if t in self.assistant else 1.0) for t, s in fused.items()}
        return {
            BASELINES[0]: dense,
            BASELINES[1]: lexical,
            BASELINES[2]: sorted(fused, key=lambda t: -fused[t]),
            BASELINES[3]: sorted(prior, key=lambda t: -prior[t]),
        }

    def context(self, ranking: Sequence[str], budget_tokens: int) -> tuple[str, list[str]]:
        """The block of ``ranking``'s turns, whole and in rank order, within ``budget_tokens`` (sgmem's format);
        and the ids of the turns in it."""
        text, chosen = fit([self.turns[t] for t in ranking], budget_tokens)
        return text, [self.ids[c.key] for c in chosen]
