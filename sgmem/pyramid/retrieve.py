"""Glue between MGRetrieval and the rest of sgmem: loading, planning, ranking.

- :class:`WordVectors`: keyword embeddings with an in-process LRU cache.
- :func:`ensure_keywords`: the scope's :class:`KeywordIndex`, loaded from
  SQLite onto its :class:`~sgmem.retrieval.index.ScopeIndex` when missing.
- :func:`run` / :func:`rank`: one query's :class:`Outcome` and its ranked
  turns for ``mode="pyramid"``; :func:`channel` its scores for hybrid fusion.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..embed.base import Embedder, check_embeddings
from ..retrieval.heap import release_free_heap
from ..store.sqlite import SQLiteStore
from .config import PyramidConfig
from .reflect import Found, Outcome, Prepared, reflective_search
from .reflect import prepare as prepare_query
from .vocabulary import KeywordIndex, KeywordPlan, load_keywords, plan_keywords

__all__ = ["PyramidTools", "WordVectors", "channel", "ensure_keywords", "plan_add", "prepare", "rank", "run"]


class WordVectors:
    """Embeds keywords, remembering up to ``capacity`` of them (words recur a lot)."""

    def __init__(self, embedder: Embedder, capacity: int = 50_000, batch_size: int = 256) -> None:
        self.embedder = embedder
        self.capacity = capacity
        self.batch_size = batch_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.sent = 0  # texts sent to the embedder so far (an add reports its share in AddResult.embedded)

    def __call__(self, words: list[str]) -> np.ndarray:
        todo = [w for w in dict.fromkeys(words) if w not in self._cache]
        for i in range(0, len(todo), self.batch_size):
            batch = todo[i : i + self.batch_size]
            vecs = check_embeddings(self.embedder, batch, self.embedder.embed(batch))
            self.sent += len(batch)
            for w, v in zip(batch, vecs, strict=False):
                self._cache[w] = np.asarray(v, dtype=np.float32)
        out = np.zeros((len(words), int(self.embedder.dim)), dtype=np.float32)
        for i, w in enumerate(words):
            out[i] = self._cache[w]
            self._cache.move_to_end(w)
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return out


@dataclass
class PyramidTools:
    """What a pyramid query may use beyond the index: word embeddings and an LLM."""

    embed: Callable[[list[str]], np.ndarray] | None = None
    llm: Any = None


def ensure_keywords(store: SQLiteStore, idx: Any) -> KeywordIndex:
    """The scope's keyword index, loaded from SQLite if the ScopeIndex has none."""
    kwi = getattr(idx, "keywords", None)
    if kwi is None:
        with store.read() as conn:
            kwi = load_keywords(conn, idx.scope_id, idx.dim, idx.msg_row)
        idx.keywords = kwi
        idx.dirty = True  # worth saving with the index's cache files (Memory.close), so the next process maps it
        release_free_heap()  # the fetched postings were temporaries
    return kwi


def prepare(
    idx: Any,
    cfg: PyramidConfig,
    query: str,
    q: np.ndarray,
    allowed: np.ndarray | None,
    tools: PyramidTools | None,
    texts: Callable[[list[int]], list[str]] | None,
    use_llm: bool,
) -> Prepared | None:
    """The query side of :func:`run` (keywords and pyramid; no turn relevance needed), or None
    when the scope's keywords are not loaded. Pass it to :func:`run` with the same arguments."""
    kwi: KeywordIndex | None = getattr(idx, "keywords", None)
    if kwi is None:
        return None
    tools = tools or PyramidTools()
    return prepare_query(
        kwi, query, q, allowed, cfg, embed=tools.embed, llm=tools.llm if use_llm else None, texts=texts
    )


def run(
    idx: Any,
    cfg: PyramidConfig,
    query: str,
    q: np.ndarray,
    rel: np.ndarray,
    allowed: np.ndarray | None,
    tools: PyramidTools | None,
    texts: Callable[[list[int]], list[str]] | None,
    use_llm: bool,
    prepared: Prepared | None = None,
) -> Outcome:
    """MGRetrieval over a scope index whose ``keywords`` are loaded (empty outcome otherwise).

    ``prepared``: :func:`prepare` of the same arguments, already run (a hybrid query runs it during its scan).
    """
    kwi: KeywordIndex | None = getattr(idx, "keywords", None)
    if kwi is None:
        return Outcome(stop="no-keywords")
    tools = tools or PyramidTools()
    return reflective_search(
        kwi,
        query,
        q,
        rel,
        idx.array("tokens"),
        idx.array("at_ts"),
        allowed,
        cfg,
        embed=tools.embed,
        llm=tools.llm if use_llm else None,
        texts=texts,
        prepared=prepared,
    )


def _summary(out: Outcome) -> dict[str, Any]:
    s: dict[str, Any] = {
        "query_keywords": list(out.query_keywords),
        "rounds": out.rounds,
        "stop": out.stop,
        "reflection": out.reflection,
        "selection": out.selection,
        "tokens": out.tokens,
    }
    if out.usage.calls or out.usage.errors:
        s["llm"] = out.usage.as_dict()
    if out.answer is not None:
        s["draft_answer"] = out.answer
    return s


def _why(f: Found | None, tier: str, cos: float, summary: dict[str, Any]) -> dict[str, Any]:
    why: dict[str, Any] = {"mode": "pyramid", "tier": tier}
    if f is not None:
        why["keywords"] = list(f.path)
        why["level"] = f.level
        why["round"] = f.round or None
    why["critical"] = tier == "critical"
    why["cosine"] = round(cos, 4)
    why["pyramid"] = summary
    return why


def rank(out: Outcome, rel: np.ndarray, k: int, allowed: np.ndarray | None) -> list[tuple[int, float, dict[str, Any]]]:
    """Ranked turns ``(row, score, why)`` for ``mode="pyramid"``.

    Order: the critical memories (as the reflection ranked them), the other
    memories shown (by cosine), memories the traversal did not reach (by
    level, then cosine), then — when keywords found too little — the closest
    turns by cosine (``why["tier"] == "vector"``). Scores decrease down the list.
    """
    summary = _summary(out)
    res: list[tuple[int, float, dict[str, Any]]] = []
    taken: set[int] = set()

    def push(r: int, score: float, f: Found | None, tier: str) -> None:
        if r in taken or len(res) >= k:
            return
        taken.add(r)
        res.append((r, score, _why(f, tier, float(rel[r]), summary)))

    def unit(x: float) -> float:
        return min(max((x + 1.0) / 2.0, 0.0), 0.999)

    n_c = len(out.critical)
    for i, r in enumerate(out.critical):
        push(r, 3.0 + 1.0 - (i + 1) / (n_c + 1), out.seen.get(r), "critical")
    for r in sorted((r for r in out.seen if r not in taken), key=lambda r: -rel[r]):
        push(r, 2.0 + unit(float(rel[r])), out.seen[r], "seen")
    if len(res) < k:
        for f in out.later_ranked(rel):
            push(f.row, 1.0 + unit(float(rel[f.row])), f, "unread")
            if len(res) >= k:
                break
    if len(res) < k:
        cand = rel.astype(np.float64).copy()
        if allowed is not None:
            cand[~allowed] = -np.inf
        for r in _best_first(cand, k + len(taken)):
            if len(res) >= k or not np.isfinite(cand[r]):
                break
            if int(r) not in taken:
                push(int(r), unit(float(cand[r])), None, "vector")
        for _, _, why in res:
            if why["tier"] == "vector":
                why["fallback"] = (
                    "no query keyword in the vocabulary" if out.stop == "no-keywords" else "keyword paths exhausted"
                )
    return res


def _best_first(vals: np.ndarray, m: int) -> np.ndarray:
    """The first ``m`` rows of ``np.argsort(-vals, kind="stable")`` without sorting every row.

    Every row whose value reaches the m-th largest is kept (ties included),
    then those are ordered as the stable sort orders them: by value, then row.
    """
    if m >= vals.size:
        return np.argsort(-vals, kind="stable")
    kth = np.partition(-vals, m - 1)[m - 1]
    rows = np.flatnonzero(-vals <= kth)
    return rows[np.argsort(-vals[rows], kind="stable")][:m]


def channel(out: Outcome, n: int, cfg: PyramidConfig) -> np.ndarray:
    """Hybrid channel: the critical memories, by rank and pyramid level.

    [D] The i-th critical memory (0-based) scores ``(ℓ / L_top) / (1 + i / 10)``
    where ℓ is the pyramid level it was found at; other turns score 0.
    Chosen on the LoCoMo dev split over flat, rank-only and level-only
    variants (see :class:`sgmem.HybridConfig`).
    """
    s = np.zeros(n)
    top = max(out.top_level, 1)
    for i, r in enumerate(out.critical[: cfg.critical]):
        f = out.seen.get(r)
        level = f.level if f is not None else 1
        s[r] = (level / top) / (1.0 + i / 10.0)
    return s


def plan_add(
    snapshot: KeywordIndex | None,
    n_turns: int,
    messages: list[Any],
    cfg: PyramidConfig,
    words: Callable[[list[str]], np.ndarray] | None,
    llm: Any,
    dim: int,
) -> KeywordPlan:
    """Keywords of an add's messages (``MessageRow``s), planned outside the store lock."""
    return plan_keywords(
        snapshot if snapshot is not None else KeywordIndex(dim),
        n_turns if snapshot is not None else 0,
        [m.content for m in messages],
        [m.name for m in messages],
        [m.at.date().isoformat() for m in messages],
        cfg,
        words,
        llm if cfg.llm_keywords is not False else None,  # None: on wherever there is an LLM
    )
