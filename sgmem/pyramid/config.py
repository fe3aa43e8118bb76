"""PyramidConfig: the frozen parameters of reflective keyword-pyramid retrieval.

Kept free of other sgmem imports (except errors) so ``sgmem.config`` can embed it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from ..errors import ConfigError

__all__ = ["PyramidConfig"]


def _check(cond: bool, name: str, value: object, expected: str, hint: str = "") -> None:
    if not cond:
        raise ConfigError(f"PyramidConfig.{name}: received {value!r}, expected {expected}.{' ' + hint if hint else ''}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class PyramidConfig:
    """MGRetrieval, reflective keyword-pyramid retrieval (ALGORITHMS §3, arXiv 2605.27437).

    A memory is one raw dialogue turn (§3.1 [C]). Each turn gets keywords,
    mapped onto a per-scope canonical vocabulary and kept in an inverted index
    ``keyword → turns``. A query selects ``n`` keywords from the vocabulary;
    the pyramid holds every combination of them from ``min(depth, n)`` words
    (most specific) down to single words; traversal runs top-down, one unit per
    round, removing memories already shown (RMR), carrying only the critical
    memories forward and stopping when they are judged sufficient.

    Tags follow ALGORITHMS.md: [R] recovered from the paper, [C] reconstructed,
    [D] our choice. Every [C]/[D] default was chosen by measurement on the
    LoCoMo dev split with no LLM: evidence recall@10 over categories 1–4 of
    ``mode="pyramid"`` (``sgmem eval locomo … --pyramid``). At these defaults
    it is 69.4 (multi-hop 47.1; BM25 over turns: 60.4, dense sentences: 58.4).
    One change at a time: ``keywords_per_turn`` 8 → 63.1, 12 → 66.2;
    ``speaker_keyword=False`` → 66.7; ``stem_match=False`` → 69.2; the §3.7
    cosines (``match_cosine=0.85, query_cosine=0.6``) → 69.8, but embedding
    each add's new keywords costs +31–71 % embedding work at ingest, so they
    are off; ``level_weight=0`` → 62.5; ``critical=10`` → 68.6;
    ``sufficient_full=False`` (the literal §3.7 rule) → 68.9; ``unit="node"``
    → 66.5; ``depth`` 2 → 67.0, 3 → 69.0; ``query_keywords`` 3 → 69.4, 5 →
    69.3; ``rounds`` 2 → 69.1, 8 → 69.4.

    Attributes:
        depth: l, the pyramid depth (§3.6 [R] l = 4). Must be ≥ 1: a pyramid
            without levels has nothing to traverse (use ``mode="vector"``).
        rounds: R, the most reflective rounds per query (§3.6 [R] R = 4). Must
            be ≥ 1. A round consumes one non-empty pyramid unit; empty units
            cost no round (§3.5 [C]).
        query_keywords: n, keywords selected for a query (§3.3 [D] n = 4), the
            rarest first (highest IDF). At most 12.
        unit: what a round consumes (§3.5 [U]): ``"level"`` (every node of one
            level, [C] default, measured better) or ``"node"`` (one keyword
            combination).
        keywords_per_turn: without an LLM, the top keywords of a turn by TF-IDF
            within the scope (§3.7 says 8; [D] 24, measured better: short chat
            turns rarely hold more, so this keeps nearly every content word).
            The speaker's name is added on top when ``speaker_keyword`` is set.
        speaker_keyword: [D] the speaker's name is a keyword of each of their
            turns, so "What did Melanie…" intersects with Melanie's turns.
        stem_match: [D] a keyword whose lemma is new joins the entry sharing its
            Snowball stem ("passionate" → "passion"), at write and query time;
            costs no embedding.
        match_cosine: write side, without an LLM: a keyword whose lemma and stem
            are new joins the existing vocabulary entry whose embedding cosine
            is at least this (§3.7 suggests 0.85); ``None`` (default) turns
            merging off.
        query_cosine: a query word that is not in the vocabulary maps to its
            nearest vocabulary entry at or above this cosine (§3.7 suggests
            0.6); ``None`` (default) turns it off. When either cosine is set (or
            an LLM groups keywords), each add embeds its new keywords, in one
            batch; entries stored without a vector are never cosine-matched.
        group_cosine: keyword grouping as published (§3.2 step 2, ALGORITHMS §3.7
            revised): a memory keeps all its keywords and is also filed under
            existing vocabulary keywords one of them can be grouped under
            (a broader category: "Chicago" under "city"). With LLM keyword
            calls (``llm_keywords``, on by default with an LLM) grouping is
            always on and the model chooses; this cosine is then only the rule
            for output it cannot use. [D] Without
            an LLM, "can be grouped under" is keyword-embedding cosine ≥ this;
            ``None`` (default) turns the rule off (each add then embeds no keyword).
        group_max: at most this many vocabulary keywords a memory is filed under.
        critical: c, critical memories kept per round without an LLM: the top-c
            of ``C ∪ N_r`` (§3.7 says 10; [D] 20, measured better).
        level_weight: [D] without an LLM, critical memories are ranked by
            cosine + ``level_weight`` · ℓ / L_top, where ℓ is the most specific
            pyramid level holding the memory (the paper ranks by level, §3.4)
            and the cosine is the turn vector's.
        sufficient_cosine, sufficient_min: the LLM-free sufficiency rule (§3.7
            [D]): stop when the critical memories cover every query keyword, or
            when the best cosine is ≥ ``sufficient_cosine`` and at least
            ``sufficient_min`` memories are critical.
        sufficient_full: [D] the rule may stop only once ``critical`` memories
            are held (a top-level node covers every keyword by construction,
            so the literal §3.7 rule stops after its first memory).
        max_new_per_round: at most this many new memories are shown in a round
            (the closest to the query; the rest stay unseen) (§3.6 [U], [D] 40).
        token_budget: tokens the reflective loop may spend per query. With an
            LLM: every prompt (exact cl100k count, template included) plus
            ``completion_reserve`` per call; a call that would not fit is not
            made, and memories are dropped from a round until it fits. Without
            an LLM: tokens of memory text read over all rounds. Never exceeded.
        completion_reserve: tokens reserved for each LLM completion inside
            ``token_budget``.
        llm_keywords: the paper's write path (§3.2), two LLM calls per added
            turn: extraction (words copied as written) and grouping under
            broader existing keywords (the first turn of a scope, with nothing
            to group under, makes only the first). ``None`` (default): on
            wherever the Memory has an LLM, off without one (the lexical rule
            of §3.7 writes the keyword index, no call). ``True`` asks for it
            (still a no-op without an LLM); ``False`` keeps the lexical rule
            even with an LLM: the write path then costs no keyword call, where
            the paper's path costs two per turn, several times a Mem0-style
            write path's calls (``python -m benchmarks.write_cost``), and the
            lexical index already beats BM25 by 9 points in pyramid mode.
            Queries in ``mode="pyramid"`` use the LLM to select keywords and
            reflect either way; grouping needs no other setting.
        llm_in_hybrid: [D] whether the hybrid mode's pyramid channel may call
            the LLM (one call per round and query). Off by default: hybrid stays
            fast and offline; ``mode="pyramid"`` uses the LLM when one is given.
        llm_candidates: vocabulary entries shown to the LLM when it selects
            query keywords or groups a memory's keywords (the closest to them;
            the full vocabulary would not fit a prompt).
    """

    depth: int = 4
    rounds: int = 4
    query_keywords: int = 4
    unit: Literal["level", "node"] = "level"
    keywords_per_turn: int = 24
    speaker_keyword: bool = True
    stem_match: bool = True
    match_cosine: float | None = None
    query_cosine: float | None = None
    group_cosine: float | None = None
    group_max: int = 3
    critical: int = 20
    level_weight: float = 0.2
    sufficient_cosine: float = 0.6
    sufficient_full: bool = True
    sufficient_min: int = 3
    max_new_per_round: int = 40
    token_budget: int = 8000
    completion_reserve: int = 400
    llm_keywords: bool | None = None
    llm_in_hybrid: bool = False
    llm_candidates: int = 40

    def __post_init__(self) -> None:
        _check(
            _is_int(self.depth) and self.depth >= 1,
            "depth",
            self.depth,
            "an int >= 1 (the pyramid depth l)",
            "With no level there is nothing to traverse; use mode='vector' for pure similarity.",
        )
        _check(
            _is_int(self.rounds) and self.rounds >= 1,
            "rounds",
            self.rounds,
            "an int >= 1 (the most reflective rounds R)",
            "With no round nothing is read; use mode='vector' for pure similarity.",
        )
        _check(
            _is_int(self.query_keywords) and 1 <= self.query_keywords <= 12,
            "query_keywords",
            self.query_keywords,
            "an int in 1..12 (the pyramid has 2**n - 1 nodes at most)",
        )
        _check(
            self.group_cosine is None or (_is_number(self.group_cosine) and 0.0 < self.group_cosine <= 1.0),
            "group_cosine",
            self.group_cosine,
            "a cosine in (0, 1] or None (no grouping)",
        )
        for name in (
            "keywords_per_turn",
            "group_max",
            "critical",
            "sufficient_min",
            "max_new_per_round",
            "llm_candidates",
        ):
            v = getattr(self, name)
            _check(_is_int(v) and v >= 1, name, v, "an int >= 1")
        _check(self.unit in ("level", "node"), "unit", self.unit, "'level' or 'node'")
        _check(
            _is_number(self.level_weight) and self.level_weight >= 0, "level_weight", self.level_weight, "a number >= 0"
        )
        for name in ("speaker_keyword", "stem_match", "sufficient_full", "llm_in_hybrid"):
            _check(isinstance(getattr(self, name), bool), name, getattr(self, name), "True or False")
        _check(
            self.llm_keywords is None or isinstance(self.llm_keywords, bool),
            "llm_keywords",
            self.llm_keywords,
            "True, False or None (on wherever the Memory has an LLM)",
        )
        _check(
            self.match_cosine is None or (_is_number(self.match_cosine) and 0.0 < self.match_cosine <= 1.0),
            "match_cosine",
            self.match_cosine,
            "a cosine in (0, 1] or None (no merging)",
        )
        _check(
            self.query_cosine is None or (_is_number(self.query_cosine) and -1.0 <= self.query_cosine <= 1.0),
            "query_cosine",
            self.query_cosine,
            "a cosine in [-1, 1] or None",
        )
        _check(
            _is_number(self.sufficient_cosine) and -1.0 <= self.sufficient_cosine <= 1.0,
            "sufficient_cosine",
            self.sufficient_cosine,
            "a cosine in [-1, 1]",
        )
        _check(
            _is_int(self.completion_reserve) and self.completion_reserve >= 0,
            "completion_reserve",
            self.completion_reserve,
            "an int >= 0",
        )
        _check(
            _is_int(self.token_budget) and self.token_budget >= 1,
            "token_budget",
            self.token_budget,
            "an int >= 1 (tokens per query)",
        )

    def as_dict(self) -> dict[str, object]:
        """The parameters as a plain dict (for reports)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
