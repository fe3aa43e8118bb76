"""The reflective loop over the pyramid (ALGORITHMS §3.3, §3.5; LLM-free rule §3.7).

::

    seen = ∅; C = ∅; a = None
    for each pyramid unit, top level first, at most R rounds:
        N_r = memories(unit) − seen          # redundant-memory removal (RMR)
        if N_r is empty: next unit           # [C] costs no round, no LLM call
        seen |= N_r
        a, sufficient, C = reflect(q, N_r, C, a)   # LLM, or the §3.7 rule
        if sufficient: stop

Only the critical memories ``C`` are carried into the next round (critical
memory propagation). The LLM's answer rewriting step (§3.5) is skipped: sgmem
retrieves, it does not answer; the draft answer is reported in ``why``.

Without an LLM (§3.7 [D]): ``C`` = the top-``critical`` memories of
``C ∪ N_r`` by cosine to the query (the turn vector's) plus
``level_weight · ℓ / L_top`` (ℓ: the most specific level holding the
memory); once ``C`` is full (``sufficient_full``), the round is sufficient
when ``C`` covers every query keyword, or when the best cosine ≥
``sufficient_cosine`` and ``|C| ≥ sufficient_min``. A malformed LLM reply
falls back to this rule for its round; an unusable keyword selection falls
back to the rule's keywords. Every LLM call is counted in ``Outcome.usage``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..prompts import PYRAMID_QUERY_KEYWORDS, PYRAMID_REFLECT
from ..text.tokens import count_tokens
from .config import PyramidConfig
from .keywords import candidates, keyword_key
from .llmio import Usage, call_json
from .pyramid import build_pyramid, units
from .vocabulary import KeywordIndex

__all__ = ["Found", "Outcome", "reflective_search", "select_keywords"]


@dataclass(frozen=True)
class Found:
    """How a memory was first shown: its keyword path, pyramid level and round."""

    row: int
    path: tuple[str, ...]
    level: int
    round: int


@dataclass
class Outcome:
    """The result of one reflective retrieval.

    Attributes:
        query_keywords: Q, the canonical keywords selected for the query.
        critical: the critical memories (turn rows), most important first.
        seen: every memory shown, in the order shown, with its path.
        later: memories the traversal had not shown when it stopped, in
            traversal order (level, then node, then time), with their path.
        rounds: rounds run.
        stop: ``"sufficient"``, ``"rounds"`` (R reached), ``"exhausted"``
            (pyramid traversed), ``"budget"`` (token budget reached) or
            ``"no-keywords"`` (no query keyword in the vocabulary).
        reflection: ``"llm"``, ``"rule"`` or ``"mixed"`` (some rounds fell back).
        answer: the LLM's draft answer, if any.
        tokens: tokens the loop spent (prompts + reserve with an LLM; memory
            text read without); never above the budget.
        usage: LLM calls of this query (keyword selection and rounds).
        selection: how Q was chosen, ``"llm"`` or ``"rule"``.
        top_level: L_top, the most specific level of the pyramid.
    """

    query_keywords: list[str] = field(default_factory=list)
    critical: list[int] = field(default_factory=list)
    seen: dict[int, Found] = field(default_factory=dict)
    rounds: int = 0
    stop: str = "exhausted"
    reflection: str = "rule"
    answer: str | None = None
    tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    selection: str = "rule"
    top_level: int = 0
    _pending: list[tuple[int, Any]] = field(default_factory=list, repr=False)
    _later: dict[int, Found] | None = field(default=None, repr=False)

    @property
    def later(self) -> dict[int, Found]:
        """Memories not shown, in traversal order (computed on first use: only
        ``mode="pyramid"`` ranks them, and the keyword postings can be long)."""
        if self._later is None:
            later: dict[int, Found] = {}
            for size, nodes in self._pending:
                for node in nodes:
                    for r in node.rows.tolist():
                        if r not in self.seen and r not in later:
                            later[r] = Found(r, tuple(self._words[w] for w in node.keywords), size, 0)
            self._later = later
        return self._later

    _words: list[str] = field(default_factory=list, repr=False)

    def later_ranked(self, rel: np.ndarray) -> Iterator[Found]:
        """:attr:`later` ordered by level (most specific first), then ``rel``, then traversal order.

        ``sorted(later, key=lambda r: (-later[r].level, -rel[r]))`` without a
        :class:`Found` per unread memory: the postings of a large scope's
        pyramid hold thousands of turns, and a ranking reads the first few.
        """
        parts = [(size, node) for size, nodes in self._pending for node in nodes if len(node.rows)]
        if not parts:
            return
        rows = np.concatenate([np.asarray(node.rows, dtype=np.int64) for _, node in parts])
        part = np.repeat(np.arange(len(parts)), [len(node.rows) for _, node in parts])
        if self.seen:
            keep = ~np.isin(rows, np.fromiter(self.seen, dtype=np.int64, count=len(self.seen)))
            rows, part = rows[keep], part[keep]
        rows, first = np.unique(rows, return_index=True)  # a memory's first node in traversal order
        part = part[first]
        level = np.array([size for size, _ in parts], dtype=np.int64)[part]
        for i in np.lexsort((first, -rel[rows], -level)).tolist():
            node = parts[int(part[i])][1]
            yield Found(int(rows[i]), tuple(self._words[w] for w in node.keywords), int(level[i]), 0)


# ----------------------------------------------------------- query keywords
def _rule_keywords(
    kwi: KeywordIndex, query: str, cfg: PyramidConfig, embed: Callable[[list[str]], np.ndarray] | None
) -> list[int]:
    """§3.7: query words in V, else their nearest entry at cosine ≥ ``query_cosine``; by IDF."""
    words = list(dict.fromkeys(candidates(query)))
    found: list[int] = []
    missing: list[str] = []
    for w in words:
        loc = kwi.find(w, cfg.stem_match)
        if loc is None:
            missing.append(w)
        elif loc not in found:
            found.append(loc)
    if missing and embed is not None and cfg.query_cosine is not None and len(kwi.matrix()):
        vecs = embed(missing)
        for i in range(len(missing)):
            hit = kwi.nearest(vecs[i], cfg.query_cosine)
            if hit is not None and hit[0] not in found:
                found.append(hit[0])
    # rarest first (highest IDF); ties keep query order
    order = {loc: i for i, loc in enumerate(found)}
    return sorted(found, key=lambda loc: (kwi.df(loc), order[loc]))


def select_keywords(
    kwi: KeywordIndex,
    query: str,
    q: np.ndarray,
    cfg: PyramidConfig,
    embed: Callable[[list[str]], np.ndarray] | None,
    llm: Any,
    usage: Usage,
    budget: int | None = None,
) -> tuple[list[int], str]:
    """Q for ``query``: ``(local keyword indexes, "llm" | "rule")``, at most ``query_keywords``.

    The LLM is asked only when its prompt plus ``completion_reserve`` fits ``budget``.
    """
    rule = _rule_keywords(kwi, query, cfg, embed)
    if llm is None or not len(kwi):
        return rule[: cfg.query_keywords], "rule"
    shown = [kwi.words[i] for i in rule]
    mat = kwi.matrix()
    if len(mat):
        for j in np.argsort(-(mat @ q))[: cfg.llm_candidates]:
            w = kwi.words[kwi.entry_local[int(j)]]
            if w not in shown:
                shown.append(w)
    shown = shown[: max(cfg.llm_candidates, len(rule))]
    prompt = PYRAMID_QUERY_KEYWORDS.format(
        question=query, vocabulary="\n".join(f"- {w}" for w in shown), n=cfg.query_keywords
    )
    if budget is not None and count_tokens(prompt) + cfg.completion_reserve > budget:
        return rule[: cfg.query_keywords], "rule"
    raw = call_json(llm, prompt, usage, "select")
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        picked: list[int] = []
        for x in raw:
            loc = kwi.lookup.get(keyword_key(x))
            if loc is not None and loc not in picked:
                picked.append(loc)
        if picked:
            return picked[: cfg.query_keywords], "llm"
        usage.malformed += 1  # nothing usable: no listed keyword is in the vocabulary
    elif raw is not None:
        usage.malformed += 1
    return rule[: cfg.query_keywords], "rule"


# ------------------------------------------------------------------- loop
def _covers(kwi: KeywordIndex, rows: Sequence[int], query: Sequence[int]) -> bool:
    have: set[int] = set()
    for r in rows:
        have.update(kwi.turn_kws.get(r, ()))
    return all(w in have for w in query)


def _rule_round(
    kwi: KeywordIndex,
    critical: list[int],
    new: list[int],
    rel: np.ndarray,
    level: np.ndarray,
    top: int,
    query: Sequence[int],
    cfg: PyramidConfig,
) -> tuple[list[int], bool]:
    """§3.7 [D]: C = the top-c of ``C ∪ N_r`` by cosine + ``level_weight`` · level / L_top; sufficiency rule."""

    def score(r: int) -> float:
        return float(rel[r]) + cfg.level_weight * int(level[r]) / max(top, 1)

    pool = list(dict.fromkeys(critical + new))
    pool.sort(key=lambda r: -score(r))  # stable: ties keep earlier memories first
    crit = pool[: cfg.critical]
    if cfg.sufficient_full and len(crit) < cfg.critical:
        return crit, False
    sufficient = _covers(kwi, crit, query) or (
        bool(crit) and float(rel[crit[0]]) >= cfg.sufficient_cosine and len(crit) >= cfg.sufficient_min
    )
    return crit, sufficient


def _render(label: str, row: int, at_ts: float, text: str) -> str:
    day = datetime.fromtimestamp(at_ts, tz=timezone.utc).strftime("%Y-%m-%d")
    return f"[{label}] ({day}) {text}"


def _llm_round(
    llm: Any,
    query: str,
    answer: str | None,
    critical: list[int],
    new: list[int],
    label: dict[int, str],
    line: Callable[[int], str],
    remaining: int,
    cfg: PyramidConfig,
    usage: Usage,
) -> tuple[list[int], bool | None, str | None, list[int], int] | None:
    """One reflective call. Returns (critical, sufficient, answer, shown, tokens) or None if nothing fits.

    ``sufficient`` is None when the reply was unusable (the caller applies the
    rule to ``shown``); memories are dropped from the end of ``new`` (the least
    similar) until the prompt fits ``remaining``.
    """

    def prompt_for(rows: list[int]) -> str:
        return PYRAMID_REFLECT.format(
            question=query,
            answer=answer or "(none yet)",
            critical="\n".join(line(r) for r in critical) or "(none)",
            new="\n".join(line(r) for r in rows),
        )

    shown = list(new)
    prompt = prompt_for(shown)
    cost = count_tokens(prompt) + cfg.completion_reserve
    while cost > remaining and len(shown) > 1:
        # shrink proportionally, then one by one near the limit
        keep = max(1, min(len(shown) - 1, int(len(shown) * remaining / cost)))
        shown = shown[:keep]
        prompt = prompt_for(shown)
        cost = count_tokens(prompt) + cfg.completion_reserve
    if cost > remaining:
        return None
    raw = call_json(llm, prompt, usage, "reflect")
    by_label = {label[r]: r for r in critical + shown}
    if not isinstance(raw, dict):
        if raw is not None:
            usage.malformed += 1  # JSON, but not the object asked for
        return critical, None, answer, shown, cost
    crit_raw = raw.get("critical")
    suff = raw.get("sufficient")
    ans = raw.get("answer")
    if not isinstance(crit_raw, list) or not isinstance(suff, bool):
        usage.malformed += 1
        return critical, None, answer, shown, cost
    crit: list[int] = []
    for x in crit_raw:
        r = by_label.get(str(x).strip().strip("[]"))
        if r is not None and r not in crit:
            crit.append(r)
    return crit, suff, ans if isinstance(ans, str) else answer, shown, cost


@dataclass
class Prepared:
    """The query side of :func:`reflective_search`, which needs no turn relevance: the selected
    keywords Q and the pyramid built from their postings (:func:`prepare`)."""

    out: Outcome
    keywords: list[int]
    levels: list[Any]
    use_llm: bool


def prepare(
    kwi: KeywordIndex,
    query: str,
    q: np.ndarray,
    allowed: np.ndarray | None,
    cfg: PyramidConfig,
    *,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    llm: Any = None,
    texts: Callable[[list[int]], list[str]] | None = None,
) -> Prepared:
    """Select the query's keywords and build the pyramid (§3.2–3.3): everything of
    :func:`reflective_search` before the rounds. A hybrid query runs it while its dense scan runs."""
    out = Outcome()
    if not len(kwi):
        out.stop = "no-keywords"
        return Prepared(out, [], [], False)
    use_llm = llm is not None and texts is not None
    Q, out.selection = select_keywords(kwi, query, q, cfg, embed, llm if use_llm else None, out.usage, cfg.token_budget)
    if use_llm:
        out.tokens = out.usage.prompt_tokens + out.usage.calls * cfg.completion_reserve
    out.query_keywords = [kwi.words[i] for i in Q]
    if not Q:
        out.stop = "no-keywords"
        return Prepared(out, Q, [], use_llm)
    return Prepared(out, Q, build_pyramid(kwi, Q, cfg.depth, allowed), use_llm)


def reflective_search(
    kwi: KeywordIndex,
    query: str,
    q: np.ndarray,
    rel: np.ndarray,
    tokens: np.ndarray,
    at_ts: np.ndarray,
    allowed: np.ndarray | None,
    cfg: PyramidConfig,
    *,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    llm: Any = None,
    texts: Callable[[list[int]], list[str]] | None = None,
    prepared: Prepared | None = None,
) -> Outcome:
    """Run MGRetrieval for one query over one scope.

    Args:
        kwi: the scope's vocabulary and postings.
        q: the query's embedding.
        rel: relevance of every turn row to the query (cosine); ranks memories
            inside a round and chooses the LLM-free critical memories.
        tokens: tokens of every turn (the LLM-free budget counts them).
        at_ts: time of every turn (dates in LLM prompts).
        allowed: boolean mask over turn rows, or None.
        embed: embeds words (query words not in the vocabulary).
        llm: optional; keyword selection and the rounds then ask it.
        texts: ``"speaker: content"`` of turn rows (needed with an LLM).
        prepared: :func:`prepare` of the same arguments, already run (used once: its outcome is returned).
    """
    p = prepared if prepared is not None else prepare(kwi, query, q, allowed, cfg, embed=embed, llm=llm, texts=texts)
    out, Q, levels, use_llm = p.out, p.keywords, p.levels, p.use_llm
    if out.stop == "no-keywords":
        return out
    top = levels[0].size if levels else 1
    out.top_level = top if levels else 0
    level_of = np.zeros(len(rel), dtype=np.int64)  # the most specific level holding each memory
    for lv in reversed(levels):  # least specific first: a more specific level overwrites
        for node in lv.nodes:
            level_of[node.rows] = lv.size
    shown_mask = np.zeros(len(rel), dtype=bool)
    budget = cfg.token_budget
    label: dict[int, str] = {}
    text_of: dict[int, str] = {}

    def line(r: int) -> str:
        return _render(label[r], r, float(at_ts[r]), text_of[r])

    critical: list[int] = []
    answer: str | None = None
    modes: set[str] = set()
    pending = list(units(levels, cfg.unit))
    stopped = False
    for size, nodes in pending:
        if out.rounds >= cfg.rounds:
            out.stop = "rounds"
            stopped = True
            break
        new, path_of = _unseen(nodes, shown_mask, rel, cfg.max_new_per_round)
        if not new:
            continue  # RMR left nothing new: no round
        remaining = budget - out.tokens
        if use_llm:
            missing = [r for r in new if r not in text_of]
            for r, t in zip(missing, texts(missing) if missing else [], strict=False):  # type: ignore[misc]
                text_of[r] = t
            for r in new:
                label.setdefault(r, f"M{len(label) + 1}")
            res = _llm_round(llm, query, answer, critical, new, label, line, remaining, cfg, out.usage)
            if res is None:
                out.stop = "budget"
                stopped = True
                break
            crit, suff, answer, shown, cost = res
            out.tokens += cost
        else:
            shown, cost = [], 0
            for r in new:
                t = int(tokens[r]) + 4  # "speaker: " and a line break
                if cost + t <= remaining:
                    shown.append(r)
                    cost += t
            if not shown:
                out.stop = "budget"
                stopped = True
                break
            out.tokens += cost
            crit, suff = critical, None
        out.rounds += 1
        for r in shown:
            out.seen[r] = Found(r, tuple(kwi.words[w] for w in path_of[r]), size, out.rounds)
            shown_mask[r] = True
        if suff is None:
            crit, suff = _rule_round(kwi, critical, shown, rel, level_of, top, Q, cfg)
            modes.add("rule")
        else:
            modes.add("llm")
        critical = crit
        if suff:
            out.stop = "sufficient"
            stopped = True
            break
    if not stopped:
        out.stop = "exhausted"
    out.critical = critical
    out.answer = answer
    out.reflection = "mixed" if len(modes) > 1 else (modes.pop() if modes else ("llm" if use_llm else "rule"))
    # what the traversal had not shown, in traversal order (``Outcome.later``, for ranking past C)
    out._pending, out._words = pending, kwi.words
    return out


def _unseen(
    nodes: Sequence[Any], shown: np.ndarray, rel: np.ndarray, limit: int
) -> tuple[list[int], dict[int, tuple[int, ...]]]:
    """The unit's memories not shown yet, the ``limit`` most relevant first, with the
    keyword path of the first node holding each (vectorised: postings can be long)."""
    if not nodes:
        return [], {}
    rows = np.concatenate([node.rows for node in nodes]).astype(np.int64, copy=False)
    which = np.concatenate([np.full(len(node.rows), i) for i, node in enumerate(nodes)])
    fresh = ~shown[rows]
    rows, which = rows[fresh], which[fresh]
    if rows.size == 0:
        return [], {}
    rows, first = np.unique(rows, return_index=True)  # first occurrence: the earliest node
    which = which[first]
    scores = rel[rows]
    if rows.size > limit:
        part = np.argpartition(-scores, limit - 1)[:limit]
        rows, which, scores = rows[part], which[part], scores[part]
    order = sorted(range(rows.size), key=lambda i: (-scores[i], int(rows[i])))
    new = [int(rows[i]) for i in order]
    return new, {int(rows[i]): nodes[int(which[i])].keywords for i in order}
