"""Retrieval modes over one scope's index: vector, graph, bm25 and hybrid.

Each mode returns :class:`Ranked` results (turn rows plus a score and a
``why``); the facade turns them into :class:`sgmem.Hit` with texts from SQLite.
Everything is vectorised over the scope's turns and sentences with numpy, so a
query costs a few matrix-vector products whatever the mode.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..config import Config
from ..entities import retrieve as entity_retrieval
from ..pyramid import retrieve as pyramid
from ..text.acts import FILLER, NON_ANSWER, QUESTION, asks_in_form
from ..text.dates import query_windows
from ..text.lexical import analyze
from ..text.questions import asks_for_many
from . import speakers, units
from .dense import (
    Approx,
    TurnDense,
    _relevance,
    ann_cosines,
    approx_from_rows,
    scan_device,
    scan_pool,
    scan_threads,
    score_rows,
    start_scan,
    turn_relevance,
)
from .graph import EPSILON, chunk_rows, expand, hop_origins, rank_chunks, seed_partition, turn_means
from .heap import release_free_heap
from .index import ScopeIndex, idf
from .server import server_candidates, server_finds
from .topk import top_k

__all__ = [
    "Ranked",
    "Retriever",
    "act_weights",
    "exchange_relevance",
    "hybrid_relevance",
    "questions_answered",
    "repeat_cosines",
    "turn_relevance",
]

#: [D] a hybrid query cuts its scan into this many parts per scan thread. A pool thread that finishes its
#: part takes the next unclaimed one, so the part left for the calling thread (which first computes the
#: channels that need no cosines) is scanned by whichever thread is free first. More parts let the caller
#: share the work when it joins, but every part takes the GIL a few times: on a 16-core host, 4 parts per
#: thread made the hybrid slower than no overlap at all (benchmarks/RESULTS.md, host probe)
SCAN_PARTS_PER_THREAD = 1

#: what a turn of filler alone loses in the hybrid's fused score: more than any score differs between turns,
#: so it ranks after every turn with content, in its own order (never dropped: k turns come back)
FILLER_DROP = 1e6

log = logging.getLogger(__name__)


@dataclass
class Ranked:
    """One result before texts are attached."""

    kind: str
    rows: list[int]
    score: float
    why: dict[str, Any] = field(default_factory=dict)
    #: :func:`.dense.turn_relevance` of a one-turn result, when the mode's exact scan gave it (else None:
    #: the facade computes it for the hits)
    relevance: float | None = None
    #: the query's raw cosine to every sentence, when the mode's exact scan gave them (one array shared by
    #: the query's results): the facade reads its hits' exchange and echo cosines from it
    cosines: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: ``relevance`` is the measure the mode ranked by (the hybrid's fused score, squashed into [0, 1]:
    #: :func:`hybrid_relevance`), final: the facade cuts by it as it is, so the cut never reorders the hits
    measure: bool = False


def hybrid_relevance(score: np.ndarray | float, scale: float) -> np.ndarray:
    """[D] The hybrid's fused score as a relevance in [0, 1): ``score / (score + scale)`` (0 for a score <= 0).

    Monotone, so ranking by it is ranking by the score: one measure orders the hits and cuts them
    (``Config.min_relevance``), and a hit's fate never depends on ``k``. ``scale``
    (``HybridConfig.relevance_scale``) is the score that reads as relevance 0.5.
    """
    s = np.maximum(np.asarray(score, dtype=np.float64), 0.0)
    return s / (s + scale)


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest finite scores, best first, ties by row order (:func:`.topk.top_k`)."""
    return top_k(scores, k, finite=True)


class Retriever:
    """Runs the retrieval modes for a :class:`sgmem.Memory`."""

    def __init__(self, config: Config, replies: Callable[[ScopeIndex, list[int]], np.ndarray] | None = None) -> None:
        self.config = config
        #: [D] what reads whether a reply answers (the dialogue-act classifier, :meth:`sgmem.Memory._answers`):
        #: for reply turns, True where some sentence says something; None: every reply the acts let inherit does
        self.replies = replies
        self._bm25: dict[tuple[int, int], Any] = {}
        self._bm25_lock = threading.Lock()

    # -------------------------------------------------------------- channels
    @staticmethod
    def sentence_cosines(idx: ScopeIndex, q: np.ndarray) -> np.ndarray:
        return idx.sentence_cosines(q)

    def _dense(self, idx: ScopeIndex, q: np.ndarray, turns: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """Sentence cosines (see :meth:`_dense_turns`) and the approximate index's state, if any."""
        d, approx = self._dense_turns(idx, q, turns, reduce=False)
        return d.cos, approx

    def _dense_turns(
        self, idx: ScopeIndex, q: np.ndarray, turns: np.ndarray | None = None, reduce: bool = True
    ) -> tuple[TurnDense, Approx | None]:
        """Sentence cosines and per-turn reductions: one scan of every sentence (:func:`.dense.scan`), or of
        the server's (``Config.pg_dense``) or HNSW's (``Config.dense_index``) candidates' turns and ``turns``."""
        rows = server_candidates(idx, q, self.config)
        approx = approx_from_rows(idx, q, rows, turns) if rows is not None else ann_cosines(idx, q, self.config, turns)
        if approx is not None:
            return TurnDense(idx, approx.cos), approx
        cos, seg = start_scan(idx, q, self.config, reduce).result()
        return TurnDense(idx, cos, seg), None

    def _scans_exactly(self, idx: ScopeIndex) -> bool:
        """Whether :meth:`_dense_turns` scans every sentence (neither the server nor the HNSW index picks)."""
        c = self.config
        if c.dense_index == "hnsw" and idx.n_sentences >= c.dense_ann_min_sentences:
            return False
        return not server_finds(idx)

    @staticmethod
    def _graph_sim(
        idx: ScopeIndex,
        q: np.ndarray,
        sim: np.ndarray,
        approx: Approx | None,
        exp: Any,
        weights: np.ndarray | None = None,
    ) -> None:
        """Under the approximate index, give the sentences the expansion reached their exact ``sim``
        (times their dialogue-act ``weights``, when the caller weighs the cosines)."""
        if approx is not None:
            done = approx.complete(idx, q, exp.rows)
            c = approx.cos[done].astype(np.float64)
            sim[done] = (c * weights[done] if weights is not None else c) + EPSILON

    @staticmethod
    def turn_cosines(idx: ScopeIndex, q: np.ndarray) -> np.ndarray:
        return idx.turn_cosines(q)

    @staticmethod
    def turn_cosines_from_sentences(idx: ScopeIndex, cos: np.ndarray) -> np.ndarray:
        """Turn cosines from sentence cosines (see :meth:`ScopeIndex.turn_sum_norms`); no vector scan."""
        out = np.zeros(idx.n_turns, dtype=np.float64)
        if cos.size == 0:
            return out
        owner = idx.array("sent_msg")
        starts = idx.array("sent_starts")
        turns = owner[starts]
        norms = idx.turn_sum_norms()[turns]
        sums = np.add.reduceat(cos.astype(np.float64), starts)
        out[turns] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    @staticmethod
    def per_turn_sentence_scores(idx: ScopeIndex, cos: np.ndarray, rest_weight: float) -> tuple[np.ndarray, np.ndarray]:
        """Best sentence cosine per turn plus ``rest_weight`` × mean of the others.

        Sentence rows are contiguous per turn and in turn order, so the
        per-turn reductions are segment reductions (``reduceat``).

        Returns (scores, best sentence row per turn; -1 where a turn has none).
        """
        n = idx.n_turns
        best = np.full(n, -np.inf, dtype=np.float64)
        best_row = np.full(n, -1)
        if cos.size == 0:
            return best, best_row
        owner = idx.array("sent_msg")
        starts = idx.array("sent_starts")
        turns = owner[starts]
        cos64 = cos.astype(np.float64)
        seg_max = np.maximum.reduceat(cos64, starts)
        seg_sum = np.add.reduceat(cos64, starts)
        seg_cnt = np.diff(np.r_[starts, cos.size])
        rest = np.where(seg_cnt > 1, (seg_sum - seg_max) / np.maximum(seg_cnt - 1, 1), 0.0)
        best[turns] = seg_max + rest_weight * rest
        # best sentence row per turn: first row of the segment holding the max
        is_max = cos64 >= np.repeat(seg_max, seg_cnt) - 1e-12
        rows = np.flatnonzero(is_max)
        seg_of_row = np.searchsorted(starts, rows, side="right") - 1
        first = np.full(starts.size, -1)
        first[seg_of_row[::-1]] = rows[::-1]
        best_row[turns] = first
        return best, best_row

    @staticmethod
    def lexical_scores(
        idx: ScopeIndex,
        terms: list[str],
        neighbour_weight: float,
        speaker_match: float = 0.0,
        context: np.ndarray | None = None,
        reference_turns: int = 0,
    ) -> tuple[np.ndarray, float]:
        """The lexical channel: each matched query term counts once, IDF-weighted.

        A term found only in the previous or next turn of the thread counts at
        ``neighbour_weight`` (SGRM chronological chaining). No length
        normalisation (BM25 with k1 → 0, b = 0). Scores are divided by the
        query's total IDF, so they lie in [0, 1]. With ``speaker_match`` > 0 a
        term naming a speaker of the scope matches the turns that speaker said
        and no other (:mod:`sgmem.retrieval.speakers`), weighted
        ``speaker_match`` × its IDF over those turns.

        ``context``: what each turn's words count for in its neighbours (its
        dialogue-act and role weight, a question counting as a statement:
        :class:`_ActTable` ``context_w``), or None for 1 everywhere. A word
        found only in a neighbour then counts ``neighbour_weight`` × that
        neighbour's weight (the larger of the two neighbours holding it): the
        words of "I don't remember." or of a greeting say nothing about the
        turns around them, so they lift them as little as their own turn,
        while a question's words are the topic of its reply.
        """
        n = idx.n_turns
        out = np.zeros(n)
        if not terms or n == 0:
            return out, 0.0
        prev = idx.array("prev_row")
        nxt = idx.array("next_row")
        spoken = speakers.speaker_rows(idx)
        total = 0.0
        for t in dict.fromkeys(terms):
            said = spoken.get(t)
            if (
                said is not None and speaker_match > 0
            ):  # a speaker's name: the turns she said (sgmem.retrieval.speakers)
                w = speaker_match * math.log1p((n - said.size + 0.5) / (said.size + 0.5))
                total += w
                out[said] += w
                continue
            rows = idx.term_rows(t)  # (one look-up for the IDF and the postings)
            w = idf(idx.n_turns, 0 if rows is None else len(rows))
            if said is not None and rows is not None:
                # a speaker's own name is not what her turns say ("Two weeks." said by Marco holds no "Marco"): it
                # matches the turns that name her, not the turns she said (a turn's terms include its speaker's name)
                rows = np.setdiff1d(rows, said, assume_unique=True)
                rows = rows if rows.size else None
            total += w
            if rows is None:
                continue
            # sparse over the term's postings (ascending rows): 1 where it occurs, neighbour_weight
            # in a chronological neighbour turn where it does not
            out[rows] += w * 1.0  # (a repeated index adds once, as a mask would)
            if neighbour_weight:
                near = np.concatenate([prev[rows], nxt[rows]])
                keep = near >= 0
                pos = np.minimum(np.searchsorted(rows, near), len(rows) - 1)
                keep &= rows[pos] != near
                if not keep.any():
                    continue
                if context is None:
                    out[near[keep]] += w * neighbour_weight
                    continue
                # each turn holding the term lifts its neighbours by its own weight; a turn with two such
                # neighbours takes the larger
                near, at = np.unique(near[keep], return_inverse=True)
                lift = np.zeros(near.size)
                np.maximum.at(lift, at, np.tile(context[rows], 2)[keep])
                out[near] += w * neighbour_weight * lift
        # [D] a word held by one turn in ten is rare in a memory of ten turns and says little: the query's
        # evidence counts fully only once it weighs what one word held by one turn of ``reference_turns`` would
        mass = max(total, idf(reference_turns, 1)) if reference_turns else total
        return (out / mass if mass > 0 else out), total

    # ----------------------------------------------------------------- modes
    def search(
        self,
        idx: ScopeIndex,
        mode: str,
        q: np.ndarray,
        query: str,
        k: int,
        allowed: np.ndarray | None,
        texts: Callable[[list[int]], list[str]],
        tools: pyramid.PyramidTools | None = None,
        entities: entity_retrieval.EntityTools | None = None,
        now: datetime | None = None,
        said: Said | None = None,
    ) -> list[Ranked]:
        """Rank the scope for ``query`` (embedded as ``q``) in ``mode``.

        Args:
            allowed: boolean mask over turn rows (filters), or None for all.
            texts: loads turn texts by row (used by the BM25 mode's index and
                by the pyramid's LLM prompts).
            tools: word embeddings and LLM for the pyramid (mode ``pyramid``
                and the hybrid's pyramid channel); ``idx.keywords`` must be
                loaded for either (see :func:`sgmem.pyramid.retrieve.ensure_keywords`).
            entities: the scope's entity index and typer (mode ``entity`` and
                the hybrid's entity channel; see :mod:`sgmem.entities`).
            now: the moment of asking (aware): the hybrid's date channel reads
                "last week", "three days ago", "in May" relative to it; ``None``
                reads only absolute dates.
            said: the query embedded as a speaker would have said it (``"Marco: Where do I work?"``, as ingest
                embeds a stored sentence), so that a stored question is judged a repeat of the query on its
                text (:func:`repeat_cosines`); ``None``: on the plain cosine.
        """
        if idx.n_turns == 0:
            return []
        if self.config.memory_unit == "exchange" and mode in units.TURN_MODES:
            # MGRetrieval's memory unit: rank turns, then group them into exchanges (sgmem.retrieval.units)
            turns = self._search(
                idx, mode, q, query, units.turns_wanted(k, idx.n_turns), allowed, texts, tools, entities, now, said
            )
            return units.exchanges(turns, idx.array("round_ids"), k, allowed, Ranked)
        out = self._search(idx, mode, q, query, k, allowed, texts, tools, entities, now, said)
        if mode in ACT_MODES:
            out = _by_act(idx, out, self.config.hybrid, q, said)
        return out

    def _search(
        self,
        idx: ScopeIndex,
        mode: str,
        q: np.ndarray,
        query: str,
        k: int,
        allowed: np.ndarray | None,
        texts: Callable[[list[int]], list[str]],
        tools: pyramid.PyramidTools | None,
        entities: entity_retrieval.EntityTools | None,
        now: datetime | None = None,
        said: Said | None = None,
    ) -> list[Ranked]:
        if mode == "entity":
            return self._entity(idx, q, query, k, allowed, entities)
        if mode == "sgrm":
            from .sgrm import sgrm_search

            return [
                Ranked(kind, rows, score, why)
                for kind, rows, score, why in sgrm_search(idx, q, k, allowed, self.config.sgrm)
            ]
        if mode == "pyramid":
            return self._pyramid(idx, q, query, k, allowed, texts, tools)
        if mode == "vector":
            return self._vector(idx, q, k, allowed)
        if mode == "graph":
            return self._graph(idx, q, k, allowed)
        if mode == "bm25":
            return self._bm25_mode(idx, query, k, allowed, texts)
        return self._hybrid(idx, q, query, k, allowed, tools, texts, entities, now, said)

    def needs_entities(self, mode: str) -> bool:
        """Whether ``mode`` reads the entity layer (never while it is off: no entity work then)."""
        if not self.config.entities.enabled:
            return False
        return mode == "entity" or (mode == "hybrid" and self.config.hybrid.w_entity > 0)

    def _entity(
        self,
        idx: ScopeIndex,
        q: np.ndarray,
        query: str,
        k: int,
        allowed: np.ndarray | None,
        entities: entity_retrieval.EntityTools | None,
    ) -> list[Ranked]:
        # LightGMEM eq. 15: λ_sem·s_sem + λ_lex·s_lex + λ_graph·s_graph over anchored candidates
        ec = self.config.entities
        cos = self.sentence_cosines(idx, q)
        s_sem, best_row = self.per_turn_sentence_scores(idx, cos, 0.0)
        s_sem = np.where(np.isfinite(s_sem), s_sem, 0.0)
        terms = analyze(query, idx.analyzer)
        s_lex, _ = self.lexical_scores(
            idx, terms, self.config.hybrid.neighbour_weight, context=_context(idx, self.config.hybrid)
        )
        s_graph = np.zeros(idx.n_turns)
        why_of: dict[int, dict[str, Any]] = {}
        cand = np.zeros(idx.n_turns, dtype=bool)
        eq = None
        if entities is not None:
            eq = entity_retrieval.read_query(entities, query)
            s_graph, why_of, cand = entity_retrieval.graph_scores(entities, idx, eq, q)
        cand[_top(s_sem, ec.candidates)] = True
        total = np.where(cand, ec.w_sem * s_sem + ec.w_lex * s_lex + ec.w_graph * s_graph, -np.inf)
        if allowed is not None:
            total[~allowed] = -np.inf
        qset = set(terms)
        out = []
        for r in _top(total, k):
            r = int(r)
            srow = int(best_row[r])
            why: dict[str, Any] = {
                "mode": "entity",
                "scores": {
                    "semantic": round(float(s_sem[r]), 4),
                    "lexical": round(float(s_lex[r]), 4),
                    "graph": round(float(s_graph[r]), 4),
                },
                "sentence": idx.sent_text[srow] if srow >= 0 else None,
                "matched": sorted(qset & idx.terms[r]),
                "query_entities": list(eq.anchors.values()) if eq else [],
                "query_types": {t: w for t, (w, _) in eq.categories.items()} if eq else {},
            }
            if r in why_of:
                why["entity"] = why_of[r]
            out.append(Ranked("turn", [r], float(total[r]), why))
        return out

    def needs_keywords(self, mode: str) -> bool:
        """Whether ``mode`` reads the pyramid's keyword index."""
        return mode == "pyramid" or (mode == "hybrid" and self.config.hybrid.w_pyramid > 0)

    def _pyramid(
        self,
        idx: ScopeIndex,
        q: np.ndarray,
        query: str,
        k: int,
        allowed: np.ndarray | None,
        texts: Callable[[list[int]], list[str]],
        tools: pyramid.PyramidTools | None,
    ) -> list[Ranked]:
        # a memory is a turn (§3.1 [C]); its cosine is the turn vector's (measured
        # better than the best sentence's as the pyramid's relevance, see PyramidConfig)
        cos, seg = start_scan(idx, q, self.config).result()  # the turn cosines, by one scan
        rel = TurnDense(idx, cos, seg).whole()
        out = pyramid.run(idx, self.config.pyramid, query, q, rel, allowed, tools, texts, use_llm=True)
        return [Ranked("turn", [r], score, why) for r, score, why in pyramid.rank(out, rel, k, allowed)]

    def _vector(self, idx: ScopeIndex, q: np.ndarray, k: int, allowed: np.ndarray | None) -> list[Ranked]:
        d = self._dense_turns(idx, q)[0]
        best = d.best(0.0)
        if allowed is not None:
            best[~allowed] = -np.inf
        top = [int(r) for r in _top(best, k)]
        # the why's sentence: never filler where the turn has content
        srows = _Acts.content_rows(idx, self.config.hybrid, d, top)
        texts = idx.sent_text.many([s for s in srows if s >= 0])
        text_of = dict(zip([s for s in srows if s >= 0], texts, strict=True))
        return [
            Ranked(
                "turn",
                [r],
                float(best[r]),
                {"mode": "vector", "sentence": text_of.get(s) if s >= 0 else None, "cosine": float(best[r])},
            )
            for r, s in zip(top, srows, strict=True)
        ]

    def _graph(self, idx: ScopeIndex, q: np.ndarray, k: int, allowed: np.ndarray | None) -> list[Ranked]:
        g = self.config.graph
        d, approx = self._dense_turns(idx, q, reduce=False)
        cos = d.cos
        sim = cos.astype(np.float64) + EPSILON
        sent_allowed = allowed[idx.array("sent_msg")] if allowed is not None and sim.size else None
        exp = expand(idx, sim, g, sent_allowed, cos)
        self._graph_sim(idx, q, sim, approx, exp)
        ranked = rank_chunks(idx, sim, exp, g.chunk_level, g.chunk_score, g.rest_weight)[:k]
        shown = [sorted(srows, key=lambda r: (exp.hop[r], -sim[r]))[:5] for _, _, srows in ranked]
        want = list(dict.fromkeys(x for rs in shown for r in rs for x in (r, exp.origin[r])))
        text_of = dict(zip(want, idx.sent_text.many(want), strict=True))
        out = []
        for (key, score, srows), first5 in zip(ranked, shown, strict=True):
            rows = chunk_rows(idx, key, g.chunk_level)
            if allowed is not None:
                rows = [r for r in rows if allowed[r]]
            why = {
                "mode": "graph",
                "chunk_level": g.chunk_level,
                "sentences": [
                    {
                        "sentence": text_of[r],
                        "sim": round(float(sim[r]), 4),
                        "hop": exp.hop[r],
                        **({"via_seed": text_of[exp.origin[r]]} if exp.hop[r] else {}),
                    }
                    for r in first5
                ],
                "seed_count": sum(1 for r in srows if exp.hop[r] == 0),
                "expanded_count": sum(1 for r in srows if exp.hop[r] > 0),
            }
            out.append(Ranked(g.chunk_level, rows, float(score), why))
        return out

    def _bm25_index(self, idx: ScopeIndex, texts: Callable[[list[int]], list[str]]) -> Any:
        key = (idx.scope_id, idx.generation, idx.n_turns)  # type: ignore[assignment]
        with self._bm25_lock:
            hit = self._bm25.get(key[:2])  # type: ignore[index]
            if hit is not None and hit[0] == idx.n_turns:
                return hit[1]
            import bm25s

            corpus = [analyze(t, idx.analyzer) or [""] for t in texts(list(range(idx.n_turns)))]
            model = bm25s.BM25()  # Lucene BM25, k1 = 1.5, b = 0.75
            model.index(corpus, show_progress=False)
            self._bm25 = {key[:2]: (idx.n_turns, model)}  # type: ignore[index]
            del corpus
            release_free_heap()  # the texts and token lists were temporaries
            return model

    def _bm25_mode(
        self,
        idx: ScopeIndex,
        query: str,
        k: int,
        allowed: np.ndarray | None,
        texts: Callable[[list[int]], list[str]],
    ) -> list[Ranked]:
        model = self._bm25_index(idx, texts)
        terms = [t for t in dict.fromkeys(analyze(query, idx.analyzer)) if t in model.vocab_dict]
        if not terms:
            return []
        scores = np.asarray(model.get_scores(terms), dtype=np.float64)
        scores[scores <= 0] = -np.inf
        if allowed is not None:
            scores[~allowed] = -np.inf
        return [
            Ranked(
                "turn",
                [int(r)],
                float(scores[r]),
                {"mode": "bm25", "bm25": float(scores[r]), "matched": sorted(set(terms) & idx.terms[r])},
            )
            for r in _top(scores, k)
        ]

    def _hybrid(
        self,
        idx: ScopeIndex,
        q: np.ndarray,
        query: str,
        k: int,
        allowed: np.ndarray | None,
        tools: pyramid.PyramidTools | None = None,
        texts: Callable[[list[int]], list[str]] | None = None,
        entities: entity_retrieval.EntityTools | None = None,
        now: datetime | None = None,
        said: Said | None = None,
    ) -> list[Ranked]:
        h = self.config.hybrid
        n = idx.n_turns
        threads = scan_threads(self.config, idx.n_sentences)
        exact = self._scans_exactly(idx)
        # an exact scan on the CPU reduces the cosines times their dialogue-act weights as it goes (the
        # reductions the channels rank by); the raw cosines' reductions are then taken for the hits alone
        table = _ActTable.of(idx, h) if exact and idx.n_sentences else None
        weights = table.sent_w if table is not None and table.active else None
        # the exact scan starts on the scan pool now; the channels that need no cosines (lexical, the
        # pyramid's keywords and levels) run here meanwhile, and the scan's result joins it after them
        job = (  # on an accelerator (Config.dense_device) too
            start_scan(idx, q, self.config, parts_per_thread=SCAN_PARTS_PER_THREAD, weights=weights)
            if (threads > 1 or scan_device(self.config, idx.n_sentences) is not None) and exact
            else None
        )
        use_pyramid = h.w_pyramid > 0 and idx.keywords is not None
        llm_pyr = self.config.pyramid.llm_in_hybrid
        try:
            terms = analyze(query, idx.analyzer)
            s_lex, _ = self.lexical_scores(
                idx, terms, h.neighbour_weight, h.speaker_match, _context(idx, h), h.lexical_reference_turns
            )
            pyr_prep = (
                pyramid.prepare(idx, self.config.pyramid, query, q, allowed, tools, texts, llm_pyr)
                if use_pyramid
                else None
            )
        except BaseException:
            if job is not None:  # (an LLM's error in the keyword selection, an interrupt): no scan outlives the query
                job.cancel()
            raise
        if job is None and exact:  # one scan thread: the scan runs in result()
            job = start_scan(idx, q, self.config, weights=weights)
        weighted = None  # the cosines times their act weights, when the scan computed them
        if job is not None:
            cos, seg = job.result()
            weighted = getattr(job, "weighted", None)
            d, approx = (TurnDense(idx, cos) if weighted is not None else TurnDense(idx, cos, seg)), None
        else:
            lex_turns = (  # under the approximate index, lexical matches get their exact dense scores too
                _top(np.where(s_lex > 0, s_lex, -np.inf), self.config.dense_ann_candidates)
                if self.config.dense_index == "hnsw"
                else None
            )
            d, approx = self._dense_turns(idx, q, lex_turns)  # one scan of the sentence vectors
        # dialogue acts (sgmem.text.acts): questions, non-answers and filler weigh less than statements in
        # every channel of their turn; ``d`` keeps the raw cosines for Hit.relevance and the reply channel
        acts = _Acts(idx, h, d.cos, said)
        d_raw, d = d, (acts.weighted_scan(d.cos, weighted, seg) if weighted is not None else acts.weighted(d))
        cos = d.cos  # every dense channel reduces this one scan
        seeds = None  # the graph seeds' selection, on a scan thread while this one works on the other channels
        if h.w_graph > 0 and cos.size and allowed is None and threads > 1:
            seeds = scan_pool(threads).submit(seed_partition, cos, min(self.config.graph.seeds, cos.size))
        s_sent = d.best(h.rest_weight, missing=0.0)
        s_turn = d.whole()
        prev, nxt = idx.array("prev_row"), idx.array("next_row")
        # pyramid channel: MGRetrieval's critical memories, by rank and pyramid level
        s_pyr = np.zeros(n)
        pyr_out = None
        if use_pyramid:
            pyr_out = pyramid.run(
                idx, self.config.pyramid, query, q, s_turn, allowed, tools, texts, use_llm=llm_pyr, prepared=pyr_prep
            )
            s_pyr = pyramid.channel(pyr_out, n, self.config.pyramid)
        # graph channel: SGMem seeds + h-hop expansion, mean sim of C* per turn, minus ε
        s_graph = np.zeros(n)
        exp = None
        g_turns = np.zeros(0, dtype=np.int64)  # the turns the graph channel scores (0 elsewhere)
        if h.w_graph > 0 and cos.size:
            sim = d.sim(EPSILON)
            sent_allowed = allowed[idx.array("sent_msg")] if allowed is not None else None
            part = seeds.result() if seeds is not None else None
            exp = expand(idx, sim, self.config.graph, sent_allowed, cos, part)
            self._graph_sim(idx, q, sim, approx, exp, acts.sent_w if acts.active else None)
            g_turns, means = turn_means(idx, sim, exp)
            s_graph[g_turns] = means - EPSILON
        # entity channel: turns mentioning an entity of a type the query names (LightGMEM, sgmem.entities)
        s_ent = np.zeros(n)
        ent_why: dict[int, dict[str, Any]] = {}
        if h.w_entity > 0 and entities is not None:
            s_ent, ent_why, _ = entity_retrieval.type_channel(
                entities, idx, entity_retrieval.read_query(entities, query)
            )
        prior = idx.derived(
            f"length_prior:{h.length_prior!r}",
            lambda: h.length_prior * np.log1p(idx.array("tokens").astype(np.float64)) / math.log1p(64),
        )
        # dense + lexical + graph + pyramid + entity + prior, in that order; the graph and pyramid channels
        # are 0 outside a few turns and x + 0 = x, so they are added where they are not 0 (the same sums)
        lex_w = s_lex * acts.turn_w if acts.active else s_lex
        exchange = _Exchange.of(acts, h) if acts.active else None
        own = (s_sent, s_turn, lex_w)  # each turn's channels before any reply inherits
        if exchange is not None:  # a reply read with the turn it answers: it inherits its question's topic
            s_sent, s_turn, lex_w = exchange.inherit(d_raw, h.rest_weight, s_sent, s_turn, s_lex, lex_w)
        total = h.w_sentence * s_sent
        total += h.w_turn * s_turn
        if h.neighbour_dense:
            total += h.neighbour_dense * _neighbour_max(s_sent, prev, nxt, 0.0, idx, _links(idx))
        total += h.w_lexical * lex_w
        total[g_turns] += h.w_graph * s_graph[g_turns]
        p_turns = np.flatnonzero(s_pyr) if pyr_out is not None else np.zeros(0, dtype=np.intp)
        if acts.active:
            s_pyr *= acts.turn_w
            s_ent = s_ent * acts.turn_w
            prior = prior * (acts.turn_w > 0)
        total[p_turns] += h.w_pyramid * s_pyr[p_turns]
        if h.w_entity > 0 and entities is not None:
            total += h.w_entity * s_ent
        total += prior
        if h.speaker_weight:  # the speaker the query names: her turns by what they say (speakers.without_names)
            spoken = speakers.speaker_rows(idx)
            named = [spoken[t] for t in dict.fromkeys(terms) if t in spoken]
            if named:
                by_named = np.zeros(n, dtype=bool)
                for said_rows in named:
                    by_named[said_rows] = True
                total += h.speaker_weight * np.maximum(s_sent, 0.0) * by_named
        date_bonus: np.ndarray | None = None
        windows = query_windows(query, h.date_slack_days, now) if (h.date_day_bonus or h.date_month_bonus) else []
        if windows:
            date_bonus = np.zeros(n)
            ts = idx.array("at_ts")
            for start, end, precision in windows:
                inside = (ts >= start.timestamp()) & (ts < end.timestamp())
                bonus = h.date_day_bonus if precision == "day" else h.date_month_bonus
                date_bonus = np.maximum(date_bonus, bonus * inside)
            total = total + date_bonus
        if allowed is not None:
            total[~allowed] = -np.inf
        if h.propagation:
            total = total + h.propagation * _neighbour_max(total, prev, nxt, 0.0, idx, _links(idx))
        if h.session_weight:
            total = total + h.session_weight * _group_max(idx, total, "session_codes", relative=True)
        if exchange is not None and exchange.lifted and self.replies is not None:
            # a reply that answers nothing, in any wording ("Let me check."), inherits nothing: the replies that
            # inherited and now stand among the candidates are read by the act classifier
            lift = h.w_sentence * (s_sent - own[0]) + h.w_turn * (s_turn - own[1]) + h.w_lexical * (lex_w - own[2])
            total, mute = exchange.veto(idx, total, lift, _top(total, max(4 * k, VETO_CANDIDATES)), self.replies)
            if mute.size:  # their channels (and hits' why) are their own again
                s_sent[mute], s_turn[mute], lex_w[mute] = own[0][mute], own[1][mute], own[2][mute]
        if exchange is not None:  # a stored question never outranks the reply that answers it
            total = exchange.below_answers(total)
        if acts.active:  # a turn of filler alone comes after every turn with content (in the same order)
            total = np.where(acts.turn_w > 0, total, total - FILLER_DROP)
        # everything below concerns the k hits only
        if h.session_spread and asks_for_many(query):  # a count, a list, two events: spread over sessions
            top, spread = _spread_over_sessions(idx, total, k, h.session_spread)
            total = total.copy()
            total[top] = spread  # the order it ranks by is the score and the measure its hits are cut by
        else:
            top = [int(r) for r in _top(total, k)]
        srows = acts.best_rows(d, top)
        hops = hop_origins(idx, exp, top) if exp is not None else {}
        # the question each hit that inherited its topic answers: its best sentence by the raw cosines
        asked = {r: exchange.lifted[r] for r in top if r in exchange.lifted} if exchange is not None else {}
        asked_rows = dict(zip(asked, acts.best_rows(d_raw, list(asked.values())), strict=True)) if asked else {}
        want = [s for s in srows if s >= 0] + [o for hop, o in hops.values() if hop]
        want += [s for s in asked_rows.values() if s >= 0]
        text_of = dict(zip(want, idx.sent_text.many(want), strict=True))
        qset = set(terms)
        # one measure ranks and cuts: the fused score itself, squashed into [0, 1) (filler alone is 0)
        rel = hybrid_relevance(total[top], h.relevance_scale).tolist() if top else []
        out = []
        for r, s, r_rel in zip(top, srows, rel, strict=True):
            why: dict[str, Any] = {
                "mode": "hybrid",
                "channels": {
                    "sentence": round(float(s_sent[r]), 4),
                    "turn": round(float(s_turn[r]), 4),
                    "lexical": round(float(s_lex[r]), 4),
                    "graph": round(float(s_graph[r]), 4),
                    "pyramid": round(float(s_pyr[r]), 4),
                    "entity": round(float(s_ent[r]), 4),
                    "length_prior": round(float(prior[r]), 4),
                    "date": round(float(date_bonus[r]) if date_bonus is not None else 0.0, 4),
                },
                "sentence": text_of[s] if s >= 0 else None,
                "matched": idx.matched_terms(r, qset),
            }
            if pyr_out is not None and r in pyr_out.seen:
                f = pyr_out.seen[r]
                why["pyramid"] = {"keywords": list(f.path), "level": f.level, "round": f.round}
            if r in ent_why:
                why["entity"] = ent_why[r]
            if asked_rows.get(r, -1) >= 0:  # found as the answer to this question ("Two weeks." to "How long...?")
                why["answers"] = text_of[asked_rows[r]]
            if r in hops:
                hop, origin = hops[r]
                why["graph"] = {"hop": hop, **({"via_seed": text_of[origin]} if hop else {})}
            out.append(
                Ranked("turn", [r], float(total[r]), why, r_rel, d_raw.cos if approx is None else None, measure=True)
            )
        return out


class _ActTable:
    """What the dialogue-act weights need that no query changes, built once per index version.

    Kept among the index's derived arrays (:meth:`ScopeIndex.derived`), so an
    add, a new turn edge or a reload builds it anew. ``sent_w``: each
    sentence's weight before the query's echoes (statement and filler 1,
    question, non-answer, times ``tool_weight`` in a tool's output and ``assistant_weight`` in the
    assistant's text);
    ``turn_w``: each turn's best weight of a sentence that is not filler (0:
    filler alone, or no sentence); ``context_w``: the same with a question counting as a statement, what the
    turn's words count for in its neighbours' lexical score. ``w_runs``: the runs of sentences
    (``sent_starts``) holding a sentence whose weight is not 1 or may become
    another (a question: an echo of the query), ``w_rows``/``w_local`` their
    rows and where each run starts among them: every other run's weighted
    reductions are its raw ones. ``q_rows``: the question rows;
    ``ask_turns``/``ask_replies``: the turns with a question whose next turn
    in the thread is by another speaker, and that reply, ``ask_rows``/``ask_local``
    their question rows grouped per turn.
    """

    __slots__ = (
        "acts", "active", "any_act", "any_tool", "has_filler", "tool_turn", "sent_w", "turn_w",
        "w_runs", "w_rows", "w_local", "w_sub", "q_rows", "q_tool", "q_said", "ask_turns", "ask_replies",
        "ask_rows", "ask_local", "context_w", "act_turn_w",
    )  # fmt: skip

    @staticmethod
    def of(idx: ScopeIndex, h: Any) -> _ActTable:
        """The table of ``idx`` for the weights of ``h`` (built at the first query after a change)."""
        key = f"act_table:{h.question_weight!r}:{h.non_answer_weight!r}:{h.tool_weight!r}:{h.assistant_weight!r}"
        holder = idx.derived(key, lambda: np.array(_ActTable(idx, h), dtype=object))
        return holder.item()  # type: ignore[no-any-return]

    def __init__(self, idx: ScopeIndex, h: Any) -> None:
        n = idx.n_sentences
        self.acts = acts = idx.sentence_acts() if n else np.zeros(0, dtype=np.int8)
        self.tool_turn = idx.array("tool")
        self.any_act = bool(acts.any())
        self.any_tool = bool(self.tool_turn.any())
        self.has_filler = bool((acts == FILLER).any())
        tool = (
            self.tool_turn[idx.array("sent_msg")].astype(bool) if n and h.tool_weight != 1.0 and self.any_tool else None
        )
        said = _assistant_sentences(idx, h) if n else None
        self.active = bool(n and (self.any_act or tool is not None or said is not None))
        empty = np.zeros(0, dtype=np.intp)
        self.sent_w = np.ones(0, dtype=np.float32)
        self.turn_w = self.context_w = self.act_turn_w = np.ones(0, dtype=np.float64)
        self.w_runs = self.w_rows = self.w_local = self.q_rows = empty
        self.w_sub = np.ones(0, dtype=np.float32)
        self.q_tool = self.q_said = np.zeros(0, dtype=bool)
        self.ask_turns = self.ask_replies = self.ask_rows = self.ask_local = empty
        if not self.active:
            return
        # filler counts as it is inside a turn with content (its cosines change little there, and leaving them
        # out of a whole-turn cosine would skew it); a turn of filler alone gets turn weight 0
        table = np.array([1.0, h.question_weight, h.non_answer_weight, 1.0], dtype=np.float32)
        sent_w = table[acts]
        # what a sentence's words tell its neighbours (Retriever.lexical_scores): a question's are its reply's
        # topic, so it counts as a statement there; a non-answer's, the tool's and the assistant's weigh as here
        ctx_w = np.array([1.0, 1.0, h.non_answer_weight, 1.0], dtype=np.float32)[acts]
        if tool is not None:  # a tool's output weighs under what was said (HybridConfig.tool_weight)
            sent_w[tool] *= np.float32(h.tool_weight)
            ctx_w[tool] *= np.float32(h.tool_weight)
        if said is not None:  # the assistant's text weighs under the user's (HybridConfig.assistant_weight)
            sent_w[said] *= np.float32(h.assistant_weight)
            ctx_w[said] *= np.float32(h.assistant_weight)
        starts, run_turns = idx.array("sent_starts"), idx.array("sent_turns")
        filler = acts == FILLER
        self.turn_w = np.zeros(idx.n_turns, dtype=np.float64)
        self.turn_w[run_turns] = np.maximum.reduceat(np.where(filler, np.float32(0.0), sent_w), starts)
        # the act alone (no role, no tool): whether a turn says something (1), only asks, or only says it does not know
        self.act_turn_w = np.zeros(idx.n_turns, dtype=np.float64)
        self.act_turn_w[run_turns] = np.maximum.reduceat(np.where(filler, np.float32(0.0), table[acts]), starts)
        self.context_w = np.zeros(idx.n_turns, dtype=np.float64)
        self.context_w[run_turns] = np.maximum.reduceat(np.where(filler, np.float32(0.0), ctx_w), starts)
        is_q = acts == QUESTION
        self.q_rows = np.flatnonzero(is_q)
        self.q_tool = tool[self.q_rows] if tool is not None else np.zeros(self.q_rows.size, dtype=bool)
        self.q_said = said[self.q_rows] if said is not None else np.zeros(self.q_rows.size, dtype=bool)
        run_of = np.searchsorted(starts, np.flatnonzero((sent_w != 1.0) | is_q), side="right") - 1
        self.w_runs = np.unique(run_of)
        self.w_rows, self.w_local = _runs_rows(idx, self.w_runs)
        self.w_sub = sent_w[self.w_rows]
        self.sent_w = sent_w
        # the exchanges a turn that asks opens (a question, or filler or a non-answer in a question's form: "How
        # can I help?", "I don't know that yet, would you like to tell me?"): the next turn of its thread, by
        # another speaker; who replies answers, whatever the asking sentence carries itself
        ask_all = np.flatnonzero(_asking(idx))
        q_turns = idx.array("sent_msg")[ask_all]
        asked = np.unique(q_turns)
        reply = idx.array("next_row")[asked]
        spk = idx.array("speakers")
        ok = reply >= 0
        ok[ok] = spk[reply[ok]] != spk[asked[ok]]
        self.ask_turns, self.ask_replies = asked[ok], reply[ok]
        keep = np.isin(q_turns, self.ask_turns)
        self.ask_rows = ask_all[keep]
        kept_turns = q_turns[keep]
        self.ask_local = np.flatnonzero(np.r_[True, kept_turns[1:] != kept_turns[:-1]]) if kept_turns.size else empty
        for arr in (self.sent_w, self.turn_w, self.context_w, self.act_turn_w):
            arr.flags.writeable = False

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, a).nbytes for a in self.__slots__ if isinstance(getattr(self, a), np.ndarray))


def _runs_rows(idx: ScopeIndex, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sentence rows of the runs ``runs`` (ascending; concatenated) and where each run starts among them."""
    starts = idx.array("sent_starts")
    if not runs.size:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    lo = starts[runs]
    hi = np.where(runs + 1 < starts.size, starts[np.minimum(runs + 1, starts.size - 1)], idx.n_sentences)
    counts = hi - lo
    local = np.r_[0, np.cumsum(counts)[:-1]].astype(np.intp)
    rows = np.repeat(lo - local, counts) + np.arange(int(counts.sum()))
    return rows.astype(np.intp), local


class _Acts:
    """The dialogue acts of one query's sentences as ranking weights (:mod:`sgmem.text.acts`,
    ``HybridConfig.question_weight`` / ``non_answer_weight`` / ``reply_weight``).

    ``sent_w``: each sentence's weight (statement 1, question, non-answer,
    filler 1 (a turn of filler alone is set apart by ``turn_w``); a question whose cosine to the query is at least ``echo_cosine``
    is an echo of it and weighs ``echo_weight``); ``turn_w``: each turn's best sentence weight (0: filler alone,
    or no sentence). ``active`` is False when every sentence is a statement
    (nothing to weigh: the channels are used as they are). What no query changes comes from the index's
    :class:`_ActTable`; a query adds its echoes, and only the runs holding a weighted sentence are reduced again.
    """

    __slots__ = ("idx", "acts", "sent_w", "turn_w", "active", "table", "echo", "_w_sub")

    def __init__(self, idx: ScopeIndex, h: Any, cos: np.ndarray, said: Said | None = None) -> None:
        self.idx = idx
        t = self.table = _ActTable.of(idx, h) if cos.size else None
        self.acts = t.acts if t is not None else np.zeros(0, dtype=np.int8)
        self.active = bool(t is not None and t.active)
        self.sent_w = np.ones(0, dtype=np.float32)  # (set below when any sentence is not a statement)
        self.turn_w = np.ones(0, dtype=np.float64)
        self._w_sub = np.ones(0, dtype=np.float32)
        self.echo = np.zeros(0, dtype=np.intp)  # the sentence rows that echo the query
        if not self.active or t is None:
            return
        self.sent_w, self.turn_w, self._w_sub = t.sent_w, t.turn_w, t.w_sub
        # a stored question (nearly) the query itself: the query asked before, no evidence of its own
        hit = repeat_cosines(idx, t.q_rows, cos[t.q_rows], said) >= h.echo_cosine
        if not hit.any():
            return
        self.echo = echo = t.q_rows[hit]
        echo_tool = t.q_tool[hit]
        w = np.full(echo.size, h.echo_weight, dtype=np.float32)
        w[echo_tool] *= np.float32(h.tool_weight)
        w[t.q_said[hit]] *= np.float32(h.assistant_weight)
        self.sent_w = t.sent_w.copy()
        self.sent_w[echo] = w
        self._w_sub = self.sent_w[t.w_rows]
        # the turns of the echoes: their best weight again, over their own sentences
        starts = idx.array("sent_starts")
        runs = np.unique(np.searchsorted(starts, echo, side="right") - 1)
        rows, local = _runs_rows(idx, runs)
        content = np.where(self.acts[rows] == FILLER, np.float32(0.0), self.sent_w[rows])
        self.turn_w = t.turn_w.copy()
        self.turn_w[idx.array("sent_turns")[runs]] = np.maximum.reduceat(content, local)

    def weighted(self, d: TurnDense) -> TurnDense:
        """``d`` with each sentence cosine times its act weight, its reductions redone only for the runs that
        hold a weighted sentence (a run of statements and filler keeps the raw values: x × 1 = x)."""
        if not self.active or self.table is None:
            return d
        t = self.table
        cos = d.cos * self.sent_w
        seg_max, seg_sum = d._reduced()
        seg_max, seg_sum = seg_max.copy(), seg_sum.copy()
        if t.w_runs.size:
            sub = d.cos[t.w_rows] * self._w_sub
            seg_max[t.w_runs] = np.maximum.reduceat(sub, t.w_local)
            seg_sum[t.w_runs] = np.add.reduceat(sub, t.w_local, dtype=np.float64)
        return TurnDense(self.idx, cos, (seg_max, seg_sum))

    def weighted_scan(self, cos: np.ndarray, weighted: np.ndarray, seg: Any) -> TurnDense:
        """:meth:`weighted` from a scan that weighed the sentences by the table's weights as it reduced them
        (``weighted`` = ``cos`` × the table's weights, ``seg`` their reductions; both the scan's own, changed
        in place): the query's echoes get their weight, and only their runs are reduced again."""
        echo = self.echo
        if echo.size:
            weighted[echo] = cos[echo] * self.sent_w[echo]
            runs = np.unique(np.searchsorted(self.idx.array("sent_starts"), echo, side="right") - 1)
            rows, local = _runs_rows(self.idx, runs)
            sub = weighted[rows]
            seg[0][runs] = np.maximum.reduceat(sub, local)
            seg[1][runs] = np.add.reduceat(sub, local, dtype=np.float64)
        return TurnDense(self.idx, weighted, seg)

    def best_rows(self, d: TurnDense, turns: Sequence[int]) -> list[int]:
        """Each turn's best sentence by ``d``; never filler (-1 for a turn of filler alone)."""
        rows = d.best_rows(turns)
        if not self.active:
            return rows
        return [self._content_row(d.cos, t, r) for t, r in zip(turns, rows, strict=True)]

    def _content_row(self, cos: np.ndarray, turn: int, row: int) -> int:
        if row < 0 or self.acts[row] != FILLER:
            return row
        first = self.idx.array("turn_first")
        lo, hi = int(first[turn]), int(first[turn + 1])
        keep = np.flatnonzero(self.acts[lo:hi] != FILLER)
        return lo + int(keep[np.argmax(cos[lo:hi][keep])]) if keep.size else -1  # (filler alone: no sentence)

    @staticmethod
    def content_rows(idx: ScopeIndex, h: Any, d: TurnDense, turns: Sequence[int]) -> list[int]:
        """:meth:`best_rows` by the raw cosines (modes that rank without the act weights)."""
        acts = _Acts.__new__(_Acts)
        acts.idx = idx
        t = _ActTable.of(idx, h) if d.cos.size else None
        acts.acts = t.acts if t is not None else np.zeros(0, dtype=np.int8)
        acts.active = bool(t is not None and t.has_filler)
        return acts.best_rows(d, turns)

    def reply_channel(self, cos: np.ndarray, weight: float) -> np.ndarray:
        """The exchange a stored question opens: the turn replying to a question (the next turn of its
        thread, by another speaker) gains ``weight`` × the question's best sentence cosine (``cos``, raw) ×
        the reply's own turn weight (an informative answer gains, "I'm not sure." hardly, filler not)."""
        out = np.zeros(self.idx.n_turns)
        t = self.table
        if not weight or t is None or not t.ask_turns.size:
            return out
        q_best = np.maximum.reduceat(cos[t.ask_rows].astype(np.float64), t.ask_local)
        reply = t.ask_replies
        np.maximum.at(out, reply, weight * np.maximum(q_best, 0.0) * self.turn_w[reply])
        return out


#: [D] the replies read for an answer per query: those that inherited their question's topic among this many
#: best turns (or 4 × k); the classifier reads a few dozen sentences, not the scope
VETO_CANDIDATES = 50


class _Exchange:
    """[D] Replies read with the turn they answer (``HybridConfig.reply_weight``).

    A reply (the next turn of the thread, by another speaker, after a turn that asks: :class:`_ActTable`
    ``ask_turns``/``ask_replies``) means what its question asked: "Two weeks." after "How long will you stay
    in Japan?" is about the trip. It inherits ``reply_weight`` × its own act and role weight × the question's
    topic (the question turn's raw dense and lexical scores, whoever asked it): an answer, however short,
    inherits it; "I'm not sure." (a non-answer) hardly; filler not at all. And a turn that only asks never
    ranks above the reply that answers it.
    """

    __slots__ = ("asked", "replies", "share", "answered", "lifted")

    @staticmethod
    def of(acts: _Acts, h: Any) -> _Exchange | None:
        t = acts.table
        if t is None or not h.reply_weight or not t.ask_turns.size:
            return None
        return _Exchange(t, acts.turn_w, h.reply_weight)

    def __init__(self, t: _ActTable, turn_w: np.ndarray, weight: float) -> None:
        self.asked, self.replies = t.ask_turns, t.ask_replies
        # a reply inherits only when it says something: a non-answer, filler or a counter-question ("Shall we look
        # at the weather instead?") answers nothing, whatever its question asked
        says = t.act_turn_w[self.replies] >= 1.0
        self.share = weight * turn_w[self.replies] * says
        # the pairs whose question turn only asks (no statement in it) and whose reply says something
        only_asks = t.act_turn_w[self.asked] < 1.0
        self.answered = only_asks & says
        self.lifted: dict[int, int] = {}  # reply turn -> the question turn it inherited from (set by inherit)

    def inherit(
        self,
        raw: TurnDense,
        rest_weight: float,
        s_sent: np.ndarray,
        s_turn: np.ndarray,
        s_lex: np.ndarray,
        lex_w: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The channels with each reply's raised to its share of its question's raw scores."""
        q, r, share = self.asked, self.replies, self.share
        best = raw.best(rest_weight, missing=0.0)[q]
        whole = raw.whole()[q]
        s_sent, s_turn, lex_w = s_sent.copy(), s_turn.copy(), lex_w.copy()
        up = (share * best > s_sent[r]) | (share * whole > s_turn[r]) | (share * s_lex[q] > lex_w[r])
        self.lifted = dict(zip(r[up].tolist(), q[up].tolist(), strict=True))
        s_sent[r] = np.maximum(s_sent[r], share * best)
        s_turn[r] = np.maximum(s_turn[r], share * whole)
        lex_w[r] = np.maximum(lex_w[r], share * s_lex[q])
        return s_sent, s_turn, lex_w

    def veto(
        self,
        idx: ScopeIndex,
        total: np.ndarray,
        lift: np.ndarray,
        candidates: np.ndarray,
        answers: Callable[[ScopeIndex, list[int]], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """``total`` with the inherited ``lift`` taken back from each reply among ``candidates`` that
        ``answers`` reads as saying nothing (such a reply no longer holds its question below it either), and
        those replies' rows."""
        none = np.zeros(0, dtype=np.int64)
        suspects = [r for r in candidates.tolist() if r in self.lifted]
        if not suspects:
            return total, none
        says = np.asarray(answers(idx, suspects), dtype=bool)
        mute = [r for r, ok in zip(suspects, says.tolist(), strict=True) if not ok]
        if not mute:
            return total, none
        out = total.copy()
        rows = np.asarray(mute, dtype=np.int64)
        out[rows] -= lift[rows]
        for r in mute:
            del self.lifted[r]
        self.answered = self.answered & ~np.isin(self.replies, rows)
        log.debug("replies read as answering nothing (inherit nothing): %s", mute)
        return out, rows

    def below_answers(self, total: np.ndarray) -> np.ndarray:
        """``total`` with each question turn that only asks put just under the reply that answers it."""
        if not self.answered.any():
            return total
        q, r = self.asked[self.answered], self.replies[self.answered]
        out = total.copy()
        out[q] = np.minimum(out[q], np.nextafter(out[r], -np.inf))
        return out


#: the modes whose own scores know nothing of dialogue acts: their hits are weighed by them afterwards
#: (the hybrid weighs every channel itself; ``vector`` and ``bm25`` are the plain dense and lexical baselines
#: that every evaluation compares against, and stay so)
ACT_MODES = frozenset({"graph", "pyramid", "entity", "sgrm"})


def _by_act(idx: ScopeIndex, ranked: list[Ranked], h: Any, q: np.ndarray, said: Said | None = None) -> list[Ranked]:
    """``ranked`` reordered by each hit's score times its best turn's act weight (:func:`act_weights`: 0 for
    filler alone, less for a question, an echo of the query, a non-answer or a tool's output), so filler
    comes after every hit with content in every mode. Scores below 0 are divided by the weight instead."""
    rows = {r for rk in ranked for r in rk.rows}
    w = act_weights(idx, rows, h, q, said=said) if rows else {}
    if h.assistant_weight != 1.0 and rows:  # the assistant's turns weigh under the user's, as in the hybrid
        said = speakers.assistant_turns(idx)
        for r in rows:
            if said[r]:
                w[r] = w.get(r, 1.0) * h.assistant_weight
    if not w:
        return ranked

    def key(rk: Ranked) -> tuple[bool, float]:
        weight = max(w.get(r, 1.0) for r in rk.rows) if rk.rows else 1.0
        if weight <= 0:
            return (False, rk.score)
        return (True, rk.score * weight if rk.score >= 0 else rk.score / weight)

    return sorted(ranked, key=key, reverse=True)


def _context(idx: ScopeIndex, h: Any) -> np.ndarray | None:
    """What each turn's words count for in its neighbours' lexical score (:meth:`Retriever.lexical_scores`): its
    act and role weight, a question counting as a statement (:class:`_ActTable` ``context_w``, 0 for filler
    alone), or None when every turn weighs 1."""
    if not idx.n_sentences:
        return None
    t = _ActTable.of(idx, h)
    return t.context_w if t.active else None


def _sentence_acts(idx: ScopeIndex) -> np.ndarray:
    """``idx.sentence_acts()``, looked up once per index version (a view: the index counts its bytes once)."""
    return idx.derived("sentence_acts", lambda: idx.sentence_acts()[:])


def _asking(idx: ScopeIndex) -> np.ndarray:
    """[D] Which sentence rows ask, for the exchange they open (a mask, once per index version): every question,
    and filler or a non-answer in a question's form ("Hello! How can I help?" carries nothing itself, by
    meaning, yet the turn after it replies). Whether the next turn is a reply is read from the exchange's form,
    not from what the asking sentence is worth as evidence."""

    def build() -> np.ndarray:
        acts = _sentence_acts(idx)
        out = acts == QUESTION
        maybe = np.flatnonzero((acts == FILLER) | (acts == NON_ANSWER))
        if maybe.size:
            texts = idx.sentence_texts(maybe.tolist())
            out[maybe[np.array([asks_in_form(t) for t in texts], dtype=bool)]] = True
        out.flags.writeable = False
        return out

    return idx.derived("asking", build)  # type: ignore[no-any-return]


def _assistant_sentences(idx: ScopeIndex, h: Any) -> np.ndarray | None:
    """The sentence rows the assistant said (a mask, :func:`.speakers.assistant_turns`), or None when there are
    none or they weigh 1."""
    if h.assistant_weight == 1.0:
        return None
    said = speakers.assistant_turns(idx)
    if not said.any():
        return None
    return said[idx.array("sent_msg")]


def act_weights(
    idx: ScopeIndex,
    rows: Iterable[int],
    h: Any,
    q: np.ndarray,
    cos: np.ndarray | None = None,
    said: Said | None = None,
) -> dict[int, float]:
    """The dialogue-act weight of each turn of ``rows`` that is not 1, as the hybrid weighs it for the query
    vector ``q`` (``HybridConfig`` ``h``: the turn's best sentence weight, echoes of the query included; 0 for
    filler alone). :attr:`sgmem.Hit.relevance` is the dense relevance times it. ``cos``: the query's cosine
    to every sentence, when an exact scan gave them (else the rows needed are scored)."""
    rows = list(rows)
    if not rows or not idx.n_sentences:
        return {}
    t = _ActTable.of(idx, h)
    acts, tool = t.acts, t.tool_turn
    if not t.any_act and not (h.tool_weight != 1.0 and t.any_tool):
        return {}
    table = np.array([1.0, h.question_weight, h.non_answer_weight, 0.0])
    first = idx.array("turn_first")
    out = {}
    for r in rows:
        lo, hi = int(first[r]), int(first[r + 1])
        if hi <= lo:
            continue
        a = acts[lo:hi]
        w = table[a]
        asks = np.flatnonzero(a == QUESTION)
        if asks.size:  # echoes of the query (see _Acts)
            asked = cos[lo + asks] if cos is not None else score_rows(idx, q, lo + asks)
            w[asks[repeat_cosines(idx, lo + asks, asked, said) >= h.echo_cosine]] = h.echo_weight
        best = float(w.max()) * (h.tool_weight if tool[r] else 1.0)
        if best != 1.0:
            out[r] = best
    return out


#: the query embedded as each of some speakers would have said it (:meth:`Retriever.search` ``said``): one row each
Said = Callable[[Sequence[str]], np.ndarray]
#: [D] a stored question whose plain cosine to the query is below this is no repeat of it, whoever said it
#: (the speaker's name in front of a stored sentence lowers an exact repeat's plain cosine to about 0.5-0.6)
REPEAT_PREFILTER = 0.35


def repeat_cosines(idx: ScopeIndex, rows: np.ndarray, plain: np.ndarray, said: Said | None) -> np.ndarray:
    """The cosine of each stored sentence of ``rows`` to the query as its own speaker would have said it.

    Ingest embeds a sentence as ``"Marco: Where do I work?"`` (``Config.speaker_prefix``), so the plain query
    "Where do I work?" meets its exact repeat at a cosine of about 0.57, and whether a stored question is the
    query asked again must be judged on the text: the query is embedded with the speaker's name in front too
    (``said``) and compared with the rows ``plain`` already finds close. ``plain``: the rows' plain cosines.
    """
    out = np.asarray(plain, dtype=np.float64).copy()
    rows = np.asarray(rows)
    if said is None or not rows.size:
        return out
    near = np.flatnonzero(out >= REPEAT_PREFILTER)
    if not near.size:
        return out
    turns = idx.array("sent_msg")[rows[near]]
    names = [str(idx.speakers[int(t)]) for t in turns]
    distinct = list(dict.fromkeys(names))
    vecs = said(distinct)  # one embedding call for every speaker asked for
    for name, vec in zip(distinct, vecs, strict=True):
        at = near[[i for i, nm in enumerate(names) if nm == name]]
        out[at] = score_rows(idx, vec, rows[at])
    return out


def questions_answered(idx: ScopeIndex, rows: Iterable[int]) -> dict[int, int]:
    """For each turn of ``rows`` that replies to a question (the previous turn of its thread, by another
    speaker, asks one), that question's turn row: a reply such as "12." means nothing without it."""
    out: dict[int, int] = {}
    rows = list(rows)
    if not rows or not idx.n_sentences:
        return out
    asking = _asking(idx)
    prev, first, spk = idx.array("prev_row"), idx.array("turn_first"), idx.array("speakers")
    for r in rows:
        p = int(prev[r])
        if p >= 0 and spk[p] != spk[r] and asking[int(first[p]) : int(first[p + 1])].any():
            out[r] = p
    return out


def exchange_relevance(
    idx: ScopeIndex, q: np.ndarray, rows: Iterable[int], cos: np.ndarray | None = None
) -> dict[int, float]:
    """[D] The relevance of each turn of ``rows`` that replies to a question, read as that exchange.

    A reply's meaning is often the exchange's ("And what's the dog's name?" —
    "Pepper."): its relevance is also measured over the question's sentences
    and its own together (best sentence and whole exchange, as
    :func:`.dense.turn_relevance` measures a turn), and the larger value is
    kept. A reply is the next turn of the thread by another speaker after a
    turn with a question (:mod:`sgmem.text.acts`). ``cos``: the query's cosine to every sentence, when an
    exact scan gave them (else the exchanges' sentences are scored).
    """
    out: dict[int, float] = {}
    rows = list(rows)
    if not rows or not idx.n_sentences:
        return out
    asking = _asking(idx)
    prev, first = idx.array("prev_row"), idx.array("turn_first")
    spk = idx.array("speakers")
    vecs = idx.sentence_vectors()
    for r in rows:
        p = int(prev[r])
        if p < 0 or spk[p] == spk[r]:
            continue
        plo, phi, lo, hi = int(first[p]), int(first[p + 1]), int(first[r]), int(first[r + 1])
        if hi <= lo or not asking[plo:phi].any():
            continue
        sel = np.r_[plo:phi, lo:hi]
        c = (cos[sel] if cos is not None else score_rows(idx, q, sel)).astype(np.float64)
        norm = float(np.linalg.norm(vecs[sel].sum(axis=0, dtype=np.float64)))
        whole = float(c.sum() / norm) if norm > 0 else 0.0
        out[r] = float(_relevance(np.array([c.max()]), np.array([whole]))[0])
    return out


def _links(idx: ScopeIndex) -> tuple[np.ndarray, np.ndarray]:
    """Each turn's cosine to its previous and next turn (:meth:`ScopeIndex.chain_links`): a neighbour's score
    lifts a turn only as far as the two are about one thing ("Good tip." beside "I'm allergic to shellfish")."""
    return idx.chain_links()


def _neighbour_max(
    values: np.ndarray, prev: np.ndarray, nxt: np.ndarray, missing: float, idx: ScopeIndex, links: Any = None
) -> np.ndarray:
    """The larger of each turn's previous and next turn values (``missing`` at chain ends, for non-finite
    values too), by one gather each from ``values`` extended by ``missing`` (chain ends point past the end)."""
    n = len(values)
    at_prev = idx.derived("chain_prev", lambda: np.where(prev >= 0, prev, n).astype(np.intp))
    at_next = idx.derived("chain_next", lambda: np.where(nxt >= 0, nxt, n).astype(np.intp))
    ext = np.empty(n + 1, dtype=np.result_type(values.dtype, np.float32))
    ext[:n] = values
    ext[n] = missing
    bad = ~np.isfinite(ext[:n])
    if bad.any():
        ext[:n][bad] = missing
    out = ext[at_prev]
    if links is not None:
        return np.maximum(out * links[0], ext[at_next] * links[1])
    return np.maximum(out, ext[at_next], out=out)


def _group_max(idx: ScopeIndex, values: np.ndarray, codes: str, relative: bool = False) -> np.ndarray:
    """For each turn, the best finite value in its group (``idx.array(codes)``: sessions).

    ``relative``: less the weakest group's best (of the groups with a finite value), so the prior only
    says which sessions match better than others: the order is the same, but in a chat of one session
    it lifts no turn (a constant lift would raise every weak turn's relevance toward the best one's).
    """
    if values.size == 0:
        return values
    groups = idx.array(codes)
    # the turns sorted by group (cached until the index changes): a segment max instead of ufunc.at
    order = idx.derived(f"order:{codes}", lambda: np.argsort(groups, kind="stable"))
    starts = idx.derived(f"starts:{codes}", lambda: np.flatnonzero(np.r_[True, np.diff(groups[order]) != 0]))
    # each turn's group, numbered as the segments are (cached): one gather spreads the maxima back
    seg_of = idx.derived(f"segment:{codes}", lambda: _segment_of(order, starts))
    best = np.maximum.reduceat(values[order], starts)
    finite = np.isfinite(best)
    if relative and finite.any():
        best = best - best[finite].min()
    best[~finite] = 0.0
    return best[seg_of]


def _spread_over_sessions(idx: ScopeIndex, total: np.ndarray, k: int, spread: float) -> tuple[list[int], np.ndarray]:
    """The ``k`` best turns when each loses ``spread`` for every better turn of its own session.

    For a question whose answer gathers one memory per item (``asks_for_many``), the turns of one
    session that matches well would otherwise fill the top ranks (the session prior lifts them all),
    and the other items' sessions fall below ``k``. The penalty by rank within the session equals the
    greedy pick that charges a session for each of its turns already picked (a session's order is kept).
    Returns the rows and their adjusted scores (what they are ranked, and cut, by).
    """
    cand = _top(total, min(total.size, 4 * k))
    if cand.size <= 1:
        return [int(r) for r in cand], total[cand]
    sess = idx.array("session_codes")[cand]
    by_sess = np.argsort(sess, kind="stable")  # within a session, still best first
    starts = np.flatnonzero(np.r_[True, np.diff(sess[by_sess]) != 0])
    rank = np.empty(cand.size, dtype=np.float64)
    rank[by_sess] = np.arange(cand.size) - np.repeat(starts, np.diff(np.append(starts, cand.size)))
    adjusted = total[cand] - spread * rank
    order = np.argsort(-adjusted, kind="stable")[:k]
    return [int(r) for r in cand[order]], adjusted[order]


def _segment_of(order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For each row, the number of its segment in ``order`` cut at ``starts``."""
    out = np.empty(order.size, dtype=np.intp)
    out[order] = np.repeat(np.arange(starts.size), np.diff(np.append(starts, order.size)))
    return out


def allowed_mask(
    idx: ScopeIndex,
    threads: Iterable[str] | None,
    since: datetime | None,
    until: datetime | None,
    exclude: list[str] | None = None,
) -> np.ndarray | None:
    """Turns a search may return under its filters; ``None`` when nothing is filtered."""
    if threads is None and since is None and until is None and not exclude:
        return None
    mask = np.ones(idx.n_turns, dtype=bool)
    if exclude:
        mask &= ~np.isin(idx.array("ext_ids"), exclude)
    if threads is not None:
        mask &= np.isin(idx.array("threads"), list(threads))
    ts = idx.array("at_ts")
    if since is not None:
        mask &= ts >= since.timestamp()
    if until is not None:
        mask &= ts <= until.timestamp()
    return mask
