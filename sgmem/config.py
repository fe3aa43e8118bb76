"""Configuration: frozen dataclasses, one per concern, with named presets.

Defaults that come from a paper cite it; choices that are ours are marked
``[D]`` (as in ALGORITHMS.md) and say how they were chosen. Presets are module
constants; a call never mutates them — use :func:`dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Literal

import numpy as np

from .derived.config import DerivedConfig
from .entities.config import EntityConfig
from .errors import ConfigError
from .gate.config import GateConfig
from .pyramid.config import PyramidConfig

__all__ = [
    "MODES",
    "Config",
    "DerivedConfig",
    "EntityConfig",
    "GateConfig",
    "GraphConfig",
    "HybridConfig",
    "Limits",
    "PyramidConfig",
    "SGMEM_PAPER_LOCOMO",
    "SGMEM_PAPER_LONGMEMEVAL",
    "SGRMConfig",
    "SGRM_PAPER",
]

#: [D] The relevance cutoff calibrated for all-MiniLM-L6-v2, by embedder name (see ``Config.min_relevance``).
MIN_RELEVANCE = {"sentence-transformers/all-MiniLM-L6-v2": 0.15}
#: [D] The dense half of the default cutoff, by embedder name (see ``Config.min_dense_relevance``).
MIN_DENSE_RELEVANCE = {"sentence-transformers/all-MiniLM-L6-v2": 0.45}
#: How many of a query's first hits the default cutoff reads (the same for every ``k``: a hit's fate never
#: depends on how many were asked for).
CUTOFF_HITS = 10

#: Retrieval modes :meth:`sgmem.Memory.search` accepts.
MODES = ("hybrid", "vector", "graph", "bm25", "pyramid", "entity", "sgrm")

ChunkLevel = Literal["turn", "round", "session"]


def _check(cond: bool, name: str, value: object, expected: str) -> None:
    if not cond:
        raise ConfigError(f"{name}: received {value!r}, expected {expected}.")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _plain_numbers(obj: object) -> None:
    """Store numpy scalars given to a frozen config as Python ints and floats (they are persisted as JSON)."""
    for f in fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        if isinstance(v, np.integer) and not isinstance(v, np.bool_):
            object.__setattr__(obj, f.name, int(v))
        elif isinstance(v, np.floating):
            object.__setattr__(obj, f.name, float(v))


@dataclass(frozen=True)
class GraphConfig:
    """SGMem sentence-graph retrieval (ALGORITHMS §1, arXiv 2509.21212).

    Defaults follow the paper's LongMemEval row of Table §1.4 (k=3, h=1, n=15,
    γ=1.0, K=5) except where marked [D].

    Attributes:
        knn_k: similarity edges per sentence (§1.2 step 4): the length of each
            sentence's list (see ``knn_rule``); edges are traversed undirected
            (symmetrised kNN, §1.2 [C]).
        knn_rule: which ``knn_k`` sentences a sentence is linked to.
            ``"knn"``: the paper's global kNN graph, kept as the scope grows
            (:mod:`sgmem.retrieval.knn`): each sentence's list is its ``knn_k``
            nearest among all sentences of the scope present now: a new
            sentence also enters the list of an earlier sentence it is closer
            to than that sentence's ``knn_k``-th neighbour (which is dropped),
            and a delete recomputes the lists that lost a member. Exact below
            ``knn_ann_min_sentences``, from the HNSW graph above.
            ``"earlier"`` (default): SGRM's incremental rule: a new sentence is
            linked to its ``knn_k`` most similar *earlier* sentences and lists
            never change afterwards; it is not the paper's kNN graph (on LoCoMo
            dev vectors, k=3, about two thirds of the true kNN edges). It stays
            the default because the hybrid measured the same under both rules
            (LoCoMo dev evidence recall@10, cat 1–4, its graph weight chosen
            leave-one-conversation-out: 79.1 earlier vs 79.2 knn; shipped
            weights in-sample 79.9 vs 79.8) while ``"knn"`` costs more per add;
            ``mode="graph"`` alone gains (54.0 → 55.0). Edge recall against the
            global kNN of the stored vectors (k=3): ``"knn"`` 1.000 at 10k
            (exact), 0.921 at 100k (HNSW); ``"earlier"`` 0.52 and 0.47; the kNN
            step costs 1.2–1.9× more with ``"knn"``. Measured by ``python -m
            benchmarks.knn_recall``.
        knn_min_cosine: [D] minimum cosine for a similarity edge. The paper uses
            none (0.0 keeps every top-k neighbour).
        hops: h, the BFS depth over similarity edges (§1.3 step 4); 0 disables.
        seeds: n, the number of seed sentences (§1.3 step 3).
        gamma: γ, the seed threshold on ``sim = cos + 1`` ∈ [0, 2] (§1.3 step 3).
        chunk_level: the chunk granularity K (§1.1): turn, round or session.
        chunk_score: ``"mean"`` is the paper's eq. in §1.3 step 6. ``"max_plus_rest"``
            [D] scores ``max + rest_weight · mean(others)``, which ranks a chunk by
            its best sentence and measured better on LoCoMo.
        rest_weight: weight of the non-max sentences in ``max_plus_rest``.
        knn_index: [D] how the kNN edges' neighbours are found: ``"exact"``
            (every earlier sentence is compared), ``"hnsw"`` (always
            approximate) or ``"auto"``: exact below ``knn_ann_min_sentences``
            sentences in the scope, HNSW from there on
            (:mod:`sgmem.retrieval.ann`; exact cosines, approximate neighbour
            sets; edge recall vs exact kNN measured ≥ 0.95 by ``python -m
            benchmarks.scale``).
        knn_ann_min_sentences: [D] scope size (sentences) from which ``"auto"``
            uses HNSW: exact kNN costs ``N·d`` per new sentence, HNSW about
            log N (measured on 2 cores: exact 1.3 ms per new sentence at 10k and
            14 ms at 100k, HNSW search 0.1–0.4 ms plus its insertion); below
            this size exact costs about as much and needs no index.
        knn_hnsw_m, knn_hnsw_ef_construction, knn_hnsw_ef_search: [D] HNSW's M
            (links per node), build and search beam widths (FAISS defaults
            are 32/40/16; these were chosen for edge recall ≥ 0.95 at
            384-d MiniLM vectors).
        knn_background: [D] find an add's kNN neighbours and insert its
            sentences into the HNSW graph on a worker thread while the add's
            rows go into SQLite (FAISS and BLAS release the GIL;
            :func:`sgmem.retrieval.ann.in_background`). The edges and the
            graph are the same either way; False runs both on the calling
            thread. The insertion is waited for at the next use of the
            scope's index (the next add's keyword planning, a search), so it
            overlaps the next add's segmenting and embedding.
        knn_early: [D] with ``knn_background``, start the kNN search as soon
            as the add's vectors are known, before its keyword and derived
            memory plans and its transaction; used only if the scope's index
            is unchanged when the transaction opens (else searched again), so
            the edges are the same. False starts it inside the transaction,
            on all the scan threads.
        knn_early_threads: [D] threads of the early kNN search (its queries
            split over the scan pool; the same edges). None: the scan threads
            but one (``Config.dense_scan_threads``), the adding thread keeping
            a core for its plans meanwhile: one on 2 cores, where two slowed
            the adds (:func:`sgmem.write._early_knn_threads`).
    """

    knn_k: int = 3
    knn_rule: Literal["knn", "earlier"] = "earlier"
    knn_min_cosine: float = 0.0
    hops: int = 1
    seeds: int = 15
    gamma: float = 1.0
    chunk_level: ChunkLevel = "turn"
    chunk_score: Literal["mean", "max_plus_rest"] = "mean"
    rest_weight: float = 0.1
    knn_index: Literal["auto", "exact", "hnsw"] = "auto"
    knn_ann_min_sentences: int = 20_000
    knn_hnsw_m: int = 16
    knn_hnsw_ef_construction: int = 40
    knn_hnsw_ef_search: int = 48
    knn_background: bool = True
    knn_early: bool = True
    knn_early_threads: int | None = None

    def __post_init__(self) -> None:
        _plain_numbers(self)
        for name in ("knn_background", "knn_early"):
            value = getattr(self, name)
            _check(isinstance(value, bool), f"GraphConfig.{name}", value, "True or False")
        _check(
            self.knn_rule in ("knn", "earlier"),
            "GraphConfig.knn_rule",
            self.knn_rule,
            "'knn' (each sentence's k nearest, kept up to date) or 'earlier' (k most similar earlier sentences)",
        )
        _check(
            self.knn_early_threads is None or (_is_int(self.knn_early_threads) and self.knn_early_threads >= 1),
            "GraphConfig.knn_early_threads",
            self.knn_early_threads,
            "None or an int >= 1",
        )
        _check(
            self.knn_index in ("auto", "exact", "hnsw"),
            "GraphConfig.knn_index",
            self.knn_index,
            "'auto', 'exact' or 'hnsw'",
        )
        for name in ("knn_ann_min_sentences", "knn_hnsw_m", "knn_hnsw_ef_construction", "knn_hnsw_ef_search"):
            value = getattr(self, name)
            _check(
                _is_int(value) and value >= (0 if name == "knn_ann_min_sentences" else 2),
                f"GraphConfig.{name}",
                value,
                "an int >= 2" if name != "knn_ann_min_sentences" else "an int >= 0",
            )
        _check(_is_int(self.knn_k) and self.knn_k >= 0, "GraphConfig.knn_k", self.knn_k, "an int >= 0")
        _check(
            _is_number(self.knn_min_cosine) and -1.0 <= self.knn_min_cosine <= 1.0,
            "GraphConfig.knn_min_cosine",
            self.knn_min_cosine,
            "a cosine in [-1, 1]",
        )
        _check(_is_int(self.hops) and 0 <= self.hops <= 5, "GraphConfig.hops", self.hops, "an int in 0..5")
        _check(_is_int(self.seeds) and self.seeds >= 1, "GraphConfig.seeds", self.seeds, "an int >= 1")
        _check(
            _is_number(self.gamma) and 0.0 <= self.gamma <= 2.0,
            "GraphConfig.gamma",
            self.gamma,
            "a value in [0, 2] (sim = cos + 1)",
        )
        _check(
            _is_number(self.rest_weight) and self.rest_weight >= 0,
            "GraphConfig.rest_weight",
            self.rest_weight,
            "a number >= 0",
        )
        _check(
            self.chunk_level in ("turn", "round", "session"),
            "GraphConfig.chunk_level",
            self.chunk_level,
            "'turn', 'round' or 'session'",
        )
        _check(
            self.chunk_score in ("mean", "max_plus_rest"),
            "GraphConfig.chunk_score",
            self.chunk_score,
            "'mean' or 'max_plus_rest'",
        )


#: SGMem's published LoCoMo row (§1.4): k=1, h=1, n=15, γ=1.2, session chunks.
SGMEM_PAPER_LOCOMO = GraphConfig(knn_k=1, hops=1, seeds=15, gamma=1.2, chunk_level="session")
#: SGMem's published LongMemEval row (§1.4): k=3, h=1, n=15, γ=1.0, turn chunks.
SGMEM_PAPER_LONGMEMEVAL = GraphConfig(knn_k=3, hops=1, seeds=15, gamma=1.0, chunk_level="turn")


@dataclass(frozen=True)
class SGRMConfig:
    """SGRM, segment-graph retrieval memory (ALGORITHMS §5; Sharma 2025), as ``mode="sgrm"``.

    Each thread's turns are cut into token-window segments (§3.1), each a node
    with chronological edges to the next segment (§3.3) and directed
    similarity edges to its ``knn_k`` most similar earlier segments; a query
    takes the most similar segment as its seed (§3.5), walks the graph by BFS
    up to ``depth`` hops (§3.6) and returns the ``top_n`` reachable segments
    most similar to the query.

    Attributes:
        segment_tokens: C, the window in tokens (paper: 512 GPT-2 tokens; here
            cl100k). [D] A segment holds whole turns (a turn longer than the
            window is a segment alone), so every hit maps to its messages.
        knn_k: similarity edges per segment (paper: k = 3).
        depth: L, the BFS depth ([U] in the paper; [D] 2).
        top_n: segments returned per query (paper: top_n = 3); ``k`` caps it.
        order: a segment hit's messages are always in conversation order
            (:attr:`Hit.message_ids`, the paper's ordering of R_q); with
            ``"similarity"`` ([D]) its ``why["best_turns"]`` also lists their
            positions best sentence cosine first; ``"chronological"`` omits it.
        knn_index: [D] how the similarity edges' earlier segments are found:
            ``"exact"`` (every earlier segment compared: O(segments²)),
            ``"hnsw"`` (an HNSW index built in segment order, so only earlier
            segments are found; about segments · log segments) or ``"auto"``:
            exact below ``knn_ann_min_segments`` segments, HNSW from there on
            (:mod:`sgmem.retrieval.sgrm`; its tests check the HNSW edges'
            tie-aware recall against the exact path).
        knn_ann_min_segments: [D] segments from which ``"auto"`` uses HNSW
            (about 5.6 sentences per segment on LoCoMo-like chat).
        knn_hnsw_m, knn_hnsw_ef_construction, knn_hnsw_ef_search: [D] HNSW's M,
            build and search beam widths for the segment edges.
    """

    segment_tokens: int = 128
    knn_k: int = 3
    depth: int = 2
    top_n: int = 10
    order: Literal["chronological", "similarity"] = "similarity"
    knn_index: Literal["auto", "exact", "hnsw"] = "auto"
    knn_ann_min_segments: int = 10_000
    knn_hnsw_m: int = 16
    knn_hnsw_ef_construction: int = 40
    knn_hnsw_ef_search: int = 48

    def __post_init__(self) -> None:
        for name in ("segment_tokens", "knn_k", "top_n"):
            v = getattr(self, name)
            _check(_is_int(v) and v >= 1, f"SGRMConfig.{name}", v, "an int >= 1")
        _check(_is_int(self.depth) and 0 <= self.depth <= 10, "SGRMConfig.depth", self.depth, "an int in 0..10")
        _check(
            self.order in ("chronological", "similarity"),
            "SGRMConfig.order",
            self.order,
            "'chronological' or 'similarity'",
        )
        _check(
            self.knn_index in ("auto", "exact", "hnsw"),
            "SGRMConfig.knn_index",
            self.knn_index,
            "'auto', 'exact' or 'hnsw'",
        )
        for name in ("knn_ann_min_segments", "knn_hnsw_m", "knn_hnsw_ef_construction", "knn_hnsw_ef_search"):
            v = getattr(self, name)
            low = 0 if name == "knn_ann_min_segments" else 2
            _check(_is_int(v) and v >= low, f"SGRMConfig.{name}", v, f"an int >= {low}")


#: SGRM's published defaults (``main.py``): 512-token segments, k = 3 similarity
#: edges, top_n = 3 segments, in chronological order; depth [U] → 2.
SGRM_PAPER = SGRMConfig(segment_tokens=512, knn_k=3, depth=2, top_n=3, order="chronological")


@dataclass(frozen=True)
class HybridConfig:
    """[D] The default ``hybrid`` mode: channels fused by a weighted score sum.

    Every channel scores turns; the weights were chosen by measurement on the
    LoCoMo dev split (``sgmem eval locomo``, see docs/evaluation.md). The lexical channel is
    the strongest single signal on conversational recall, the dense channels
    carry paraphrase, the graph channel (SGMem expansion) adds neighbours of
    the seeds, and three structural priors use the conversation's shape: the
    chronological chain (SGRM), the session (SGMem's session chunk) and the
    dates a question names.

    Nested leave-one-conversation-out (``python -m benchmarks --only cv``:
    each fold searches every weight and prior, from all channels equal, on five
    conversations) held out 80.2 recall@10 (cat 1–4); the folds' most frequent
    values, taken together, measured no better than these in-sample (80.7 vs
    81.1) nor inside a chat (echo condition 80.3 vs 80.8), so these stay.

    Attributes:
        w_sentence: dense sentence channel (speaker-prefixed sentences; a turn
            scores its best sentence + ``rest_weight`` · mean of the others).
        w_turn: dense turn channel (turn vector = normalised mean of its
            sentence vectors, so turns cost no extra embedding).
        w_lexical: lexical channel — each matched stemmed query word counts once,
            weighted by IDF share, no length normalisation (BM25 with k1 → 0,
            b = 0); words of the chronological neighbour turns count at
            ``neighbour_weight``.
        w_graph: SGMem h-hop expansion channel (GraphConfig's seeds and hops).
        w_pyramid: MGRetrieval channel (``Config.pyramid``; LLM-free unless
            ``PyramidConfig.llm_in_hybrid``): the i-th of the pyramid's critical
            memories gains ``w_pyramid · (ℓ / L_top) / (1 + i / 10)``, ℓ being
            the pyramid level it was found at. 0 turns the channel (and its
            cost, ~1 ms per query) off. 0.4 measured best on the dev split
            (recall@10 cat 1–4 79.9 vs 79.6 without; multi-hop 51.4 vs 49.8, no
            category down by more than 0.3; weights 0.35–0.5 measure alike).
        w_entity: LightGMEM entity channel (``Config.entities``): a turn that
            mentions an entity of a type the query names by a category word
            ("Which cities…" → a place) gains ``w_entity``, or
            ``anchor_gate · w_entity`` when it is not linked to a person the
            query names. [D] Off by default (0.0), like the entity layer itself:
            on LoCoMo dev ``w_entity=0.3`` gave cat 1–4 recall@10 80.1 vs 79.9
            (within noise) while ingest ran ~3.8× slower (every name typed with
            the embedder) and hybrid queries ~3× slower. To use it:
            ``Config(entities=EntityConfig(enabled=True), hybrid=HybridConfig(w_entity=0.3))``;
            without ``entities.enabled`` the channel does nothing.
        length_prior: bonus ``length_prior · log(1 + tokens) / log(1 + 64)`` for
            turns with content over one-line acknowledgements.
        neighbour_weight: weight of a query word found only in the previous or
            next turn of the thread (SGRM chronological chaining), times the
            act and role weight of the turn that holds it, a question counting
            as a statement (its words are its reply's topic): a greeting's
            words lift no neighbour, a non-answer's or the assistant's only by
            ``non_answer_weight`` or ``assistant_weight``.
        neighbour_dense: adds this share of the best neighbour turn's sentence
            score (an answer often only makes sense after the question before it).
        propagation: adds this share of the best neighbour's fused score.
        session_weight: adds this share of the best fused score in the turn's
            session (SGMem's session-level chunk as a prior), less the weakest
            session's: [D] the order is the same, but a chat of one session
            lifts no turn, so a weak turn's relevance is not raised toward the
            best one's.
        session_spread: for a question that gathers several memories (a count,
            a total, a list, two events compared: :mod:`sgmem.text.questions`),
            each turn loses this much for every better turn of its own session,
            so that one well-matching session does not fill the top ranks.
        date_day_bonus: bonus for turns said inside a day the query names
            ("on 13 October 2023", widened by ``date_slack_days``), or inside a
            window of up to a week named relative to the moment of asking
            ("yesterday", "last Saturday", "last week"; ``search(now=...)``).
        date_month_bonus: bonus for turns said inside a month the query names,
            or a wider relative window ("last month", "in May").
        date_slack_days: days added on each side of a named day.
        rest_weight: see ``w_sentence``.
        speaker_match: in the lexical channel, a query word that names a
            speaker of the scope ("What activities does *Melanie* partake
            in?") matches only the turns that speaker said, at
            ``speaker_match`` × its IDF over them, instead of every turn
            holding the name — mostly lines said *to* her ("Thanks,
            Melanie!") (:mod:`sgmem.retrieval.speakers`). [D] Off (0.0) by
            default: on the LoCoMo dev split 1.0 gave recall@10 multi-hop
            52.6 vs 51.4 and cat 1–4 80.2 vs 79.9, but adversarial questions
            (about one speaker, answered by what the other said) 77.4 vs 79.2;
            leave-one-conversation-out five folds of six chose it, yet held out
            it gained nothing (cat 1–4 79.8, multi-hop 51.1); the nested
            cross-validation keeps it off (benchmarks/RESULTS.md). Turn it on for memories where questions are about what
            each person said themselves.
        speaker_weight: [D] a turn said by a speaker the query names gains
            ``speaker_weight`` × its sentence score: the name says whose turns
            to prefer, and only by what they say. The query's dense channels
            leave the name out (:func:`sgmem.retrieval.speakers.without_names`),
            so "What is Marco allergic to?" no longer finds every short line
            Marco said. On the LoCoMo dev split (in-sample recall@10, cat 1–4):
            the name left out alone 80.1, with this weight 0.5 80.8, 1.0 80.9
            (81.0 before either).
        question_weight: [D] what a stored question counts for, against a
            statement's 1, in every channel of the turn it is in (its sentence
            cosines, its lexical, pyramid and entity scores): a question is
            weak evidence for a question, whose answer is the reply or a later
            statement (:mod:`sgmem.text.acts`). Without it, the same question
            asked earlier outranks its answer (relevance 0.89 against 0.50).
        echo_cosine, echo_weight: [D] a stored question whose cosine to the
            query is at least ``echo_cosine`` is the query asked before (an
            echo): it holds no evidence of its own and weighs ``echo_weight``
            (its reply still gains through ``reply_weight``).
        non_answer_weight: [D] the same for a sentence that only says its
            speaker does not know ("I'm not sure, I don't remember.").
            Filler (greetings, thanks, "ok", emoji) counts 0, a turn of filler
            alone ranks after every turn with content and has relevance 0.
        reply_weight: [D] the exchange a stored question opens: the turn that
            replies to it (the next turn of the thread, by another speaker)
            gains ``reply_weight`` × the question's best sentence cosine ×
            the reply's own act weight, so an informative answer to a question
            like the query's ranks high and "I'm not sure." does not.
            ``question_weight`` 0.75, ``echo_weight`` 0.25 and ``reply_weight``
            0.5 are what every fold chose, leave-one-conversation-out, from a
            joint grid (question 0.25–1, echo 0.25/0.5, reply 0.25–1) by LoCoMo
            dev recall@10 in the clean and echo chat conditions
            (``sgmem eval locomo FILE --chat``): held out 81.1 clean, 80.8
            echo, against 79.9 and 73.4 with the acts off.
            ``non_answer_weight`` 0.2: 0.2 and 1 measured alike there (the
            echo replies are rarely ranked); it keeps "I'm not sure." out of
            contexts (its relevance is weighted the same way).
        tool_weight: [D] the same for a tool's message (role ``"tool"``: a
            tool call's output). It repeats what the tool was given or found —
            a recall tool returns the memories themselves — and is never new
            evidence about the user, so it weighs under what was said: 0.5
            keeps a stored recall output, a verbatim copy of the fact, below
            the fact, and a tool's output still ranks where nothing else holds
            its words. (LoCoMo holds no tool messages: not measured there.)
        assistant_weight: [D] the same for the assistant's turns (role
            ``"assistant"`` stored without a name; a named speaker is a person,
            :func:`sgmem.retrieval.speakers.assistant_turns`), in every channel
            of the hybrid and in the modes weighed by act afterwards. What the
            user said is the evidence about the user; the assistant's long
            replies mostly restate it or advise, and filled the top ranks. A
            question about what the assistant said ("What was the book you
            recommended me?") still finds its turn, whose content nothing the
            user said matches as well. ``Hit.relevance`` is not weighted by
            the role. On LongMemEval with every turn of both roles stored (3
            questions per type, all six types), turn recall@10: 1 (no role
            weight) 87.0, 0.75 91.2, 0.5 95.8, 0.35 and 0.25 94.0, against
            89.8 for RRF(BM25, dense); leave-one-question-out chose 0.5 in
            every fold (held out 95.8); the ablation part's joint folds (one
            LoCoMo conversation and one LongMemEval question fold held out,
            each benchmark one half of the objective) chose 0.5 in 4 of 6 and
            0.25 in 2 (RESULTS.md, Ablations); single-session-assistant questions
            100 at every weight, also on the 6 of the 6-per-type subset; of
            its preference questions one moved from 0 to 100 (RRF 0), three
            stayed at 100. LoCoMo stores no
            unnamed assistant (its two people are named): unchanged there.
        relevance_scale: [D] the fused score that reads as ``Hit.relevance``
            0.5: the hybrid ranks and cuts by one measure,
            ``score / (score + relevance_scale)``
            (:func:`sgmem.retrieval.search.hybrid_relevance`), so the hits of
            ``k=3`` are the first three of ``k=10`` and the default cutoff
            (``Config.min_relevance``) applies to the order the hits come in.
        lexical_reference_turns: [D] the memory size at which one matched
            word can be the whole lexical evidence: a query's matched IDF is
            divided by its own total IDF, but never by less than the IDF of a
            word held by one turn in this many. In a chat of ten turns every
            word is rare, so "work" in "it can work for her" no longer counts
            as much as the query itself; from about this size on nothing
            changes. 0 divides by the query's total alone.
    """

    w_sentence: float = 1.0
    w_turn: float = 0.5
    w_lexical: float = 1.2
    w_graph: float = 0.0
    w_pyramid: float = 0.0
    w_entity: float = 0.0
    length_prior: float = 0.1
    neighbour_weight: float = 0.5
    neighbour_dense: float = 0.2
    propagation: float = 0.1
    session_weight: float = 0.2
    session_spread: float = 0.1
    date_day_bonus: float = 0.4
    date_month_bonus: float = 0.2
    date_slack_days: int = 1
    rest_weight: float = 0.1
    speaker_match: float = 0.0
    speaker_weight: float = 1.0
    question_weight: float = 0.75
    echo_cosine: float = 0.8
    echo_weight: float = 0.25
    non_answer_weight: float = 0.2
    reply_weight: float = 1.0
    tool_weight: float = 0.5
    assistant_weight: float = 0.5
    relevance_scale: float = 3.55
    lexical_reference_turns: int = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            _check(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
                f"HybridConfig.{f.name}",
                v,
                "a number >= 0",
            )


@dataclass(frozen=True)
class Limits:
    """Per-call resource bounds; exceeding one raises :class:`LimitExceededError`.

    Attributes:
        max_message_chars: characters in one message's content.
        max_messages_per_add: messages in one :meth:`Memory.add` call.
        max_sentences_per_add: sentences produced by one add.
        max_query_chars: characters in one query.
        max_k: largest ``k`` a search accepts.
        max_name_chars: characters in a scope, thread, speaker name or message id.
        max_metadata_chars: characters of one message's ``metadata`` as JSON.
        max_ids_per_call: message ids (or thread names) in one call's list, e.g. ``delete(message_ids=...)``.
    """

    max_message_chars: int = 200_000
    max_messages_per_add: int = 10_000
    max_sentences_per_add: int = 50_000
    max_query_chars: int = 20_000
    max_k: int = 1_000
    max_name_chars: int = 512
    max_metadata_chars: int = 100_000
    max_ids_per_call: int = 10_000

    def __post_init__(self) -> None:
        _plain_numbers(self)
        for f in fields(self):
            v = getattr(self, f.name)
            _check(_is_int(v) and v >= 1, f"Limits.{f.name}", v, "an int >= 1")


@dataclass(frozen=True)
class Config:
    """Everything :class:`sgmem.Memory` can be tuned with.

    Attributes:
        default_mode: mode used when ``search(mode=None)``; ``hybrid`` measures
            best on the LoCoMo dev split.
        graph: SGMem parameters (used by ``graph`` mode and hybrid's graph channel).
        hybrid: fusion weights of the default mode.
        pyramid: MGRetrieval parameters (``pyramid`` mode, the hybrid's
            pyramid channel, and the keywords indexed by every add).
        gate: the SAGE novelty gate on derived facts (ALGORITHMS §2).
        derived: generated memory — facts, session summaries, insights (§1.5–§1.6).
        entities: the LightGMEM entity layer (``entity`` mode and the hybrid's
            entity channel; ALGORITHMS §4).
        sgrm: SGRM's segment graph (``sgrm`` mode).
        limits: per-call bounds.
        speaker_prefix: [D] embed sentences as ``"Name: sentence"``; without it,
            short lines such as "Wow, Caroline!" match every question naming her.
        acts: [D] what reads each sentence's dialogue act (:mod:`sgmem.text.acts`):
            ``"model"`` a classifier on the sentence vectors ingest computed
            (by meaning: non-answers and filler in any wording, any speaker
            name), ``"rules"`` word rules (listed wordings), ``"auto"`` the
            classifier when a fit ships for the embedder (the default MiniLM)
            or it is a sentence-transformers model, else the rules (a toy or
            test embedder). Held out, said by speakers it was never fitted on,
            the classifier recognises 66 % of non-answers in unlisted wordings
            (the rules 10 %) and marks 4 % of statements non-answer or filler
            (the rules none). Read once at ingest and stored with each sentence.
            Not yet the default: on LoCoMo (in-sample recall@10, cat 1–4) it
            measured 80.6 against the rules' 81.1, on LongMemEval (whole chat)
            89.8 against 87.0.
        embed_batch_size: [D] at most this many texts per embedder call inside
            one add. The embedder batches its own forward passes
            (``SentenceTransformerEmbedder(batch_size=...)``); 256 lets a typical
            add's new texts go in one call, which the embedder sorts by length
            (less padding), and a GPU pays its per-call overhead once per add
            (64, the former default, split an add of 70 sentences in two calls).
        busy_timeout_s: how long a writer waits for another process's lock
            before :class:`StoreBusyError`.
        wal_checkpoint_pages: [D] SQLite stores: the write-ahead log is copied
            into the database file (a checkpoint, with an fsync) once it holds
            this many 4 KiB pages (SQLite's default is 1,000). An add to a large
            scope dirties a few hundred scattered index pages, so at 1,000 every
            second or third add paid a checkpoint; 8,192 (32 MiB of log) makes
            them rarer and lets pages written by several adds be copied once
            (commit time per add at 50k sentences about halved).
            Durability is unchanged (WAL, ``synchronous = NORMAL``).
        wal_checkpoint_background: [D] SQLite stores: after each commit, a
            thread of the store's own (with its own connection) copies the
            log into the database (SQLite's ``PASSIVE`` checkpoint, which
            never blocks a writer), so an add does not pay a 32 MiB copy and
            fsync every few dozen adds (about 110 ms at 50k sentences on this
            project's 2-core machine); ``wal_checkpoint_pages`` stays the
            bound if it falls behind. False: checkpoints run inside commits.
        session_by_day: [D] without an explicit ``session``, a thread's messages
            are grouped into one session per calendar day (UTC).
        context_turn_tokens: [D] in :meth:`Memory.context`, a turn longer than
            this keeps only its sentences closest to the query (marked "…"), so
            the budget holds more distinct memories; 0 (default) keeps turns
            whole. 0 is what every fold chose, nested leave-one-conversation-out
            on LoCoMo dev (``python -m benchmarks --only cv``), by the evidence
            inside a 1,000-token context counted as whole turns: in-sample 84.9 %
            whole turns with 0 against 30.9 % with the former default 40, which
            keeps more turns in part (86.1 % counted as fragments, against 84.9 %).
        pg_vector_index: [D] PostgreSQL stores with pgvector: ``"hnsw"`` builds an
            HNSW index (cosine) on the stored vectors; ``"none"`` (default) keeps
            nearest-neighbour queries exact (``<=>`` over the scope's rows).
            Untested here: pgvector's index builds die with SIGILL on the CPU
            the test suite runs on; exact ``<=>`` is what the tests cover.
        pg_dense: [D] PostgreSQL stores: where the dense channel's nearest
            sentences and the gate's nearest facts are found. ``"host"``: every
            host scores its in-RAM copy of the scope's vectors (FAISS); the
            only path without pgvector. ``"server"``: the server returns the
            ``dense_ann_candidates`` nearest sentences (``approx_k`` facts for
            the gate's approximate scorer) by ``ORDER BY emb <=> q`` filtered by
            scope; the host scores those exactly and counts every other
            sentence as cosine −1 (as ``dense_index="hnsw"`` does), so results
            equal the host path's whenever the candidates cover the scope's
            relevant sentences. The host still caches the vectors (it scores
            the candidates, and the graph's kNN edges are found at write time). Needs pgvector (a :class:`ConfigError` at
            opening otherwise). ``"auto"`` (default): ``"server"`` when the
            server has pgvector *and* an HNSW index (``pg_vector_index="hnsw"``),
            else ``"host"``: without an index the server scans every row of the
            scope per query, measured slower than the host's RAM scan
            (``python -m benchmarks.postgres``).
        pg_row_security: [D] PostgreSQL stores: row-level security as a second
            wall between scopes for shared databases (off by default: every
            query is already filtered by scope). On, each table holding scope
            rows gets a policy that shows only the scope named by the session
            setting ``sgmem.scope``, which the store sets per scope it touches;
            any other client of the database without that setting sees no rows.
            With it, :meth:`Memory.scopes` and whole-store ``stats()`` see only
            the scope the calling thread last used. Superusers and ``BYPASSRLS``
            roles are exempt. Any client of the same role may set
            ``sgmem.scope`` itself: see ``pg_scope_key`` for the form that
            stops it.
        pg_scope_key: [D] PostgreSQL stores with ``pg_row_security``: the
            signed form. ``None`` (default): the policy trusts ``sgmem.scope``.
            A secret string (at least 16 characters, the same on every host):
            ``sgmem.scope`` must carry the scope's tag under this key, checked
            in the database by a security-definer function against keys no
            other role can read, so a client of the role without the key sees
            no scope's rows whatever it sets. Open the store once with it as
            the tables' owner (creates the keys and switches the policies).
            Left out of ``repr``; it is a credential: keep it out of logs.
        pg_cache_dir: [D] PostgreSQL stores: a local directory where this host
            keeps the saved indexes of the scopes it served (the files that
            serve a reopened SQLite store, :mod:`sgmem.retrieval.cachefiles`),
            written when a scope leaves the memory cache (``cache_bytes``) and
            at :meth:`Memory.close`, in a subdirectory per store. A scope this
            process does not hold in memory is then loaded from its files,
            checked against the server (the scope's generation, probe rows)
            and brought up to date with the rows other hosts added since;
            after anything was deleted it is rebuilt from the server and its
            files removed. ``None`` (default): nothing is written to the
            host's disk, and every cold scope is read from the server. The
            files hold the scope's vectors: see docs/privacy.md.
        cache_bytes: [D] memory for per-scope caches (each touched scope's
            retrieval index, derived-memory state and entity graph, estimated in bytes);
            past it the least recently used scopes are dropped and rebuilt
            from the store when touched again. A quarter of it (at least 1,000
            words) bounds the cache of keyword embeddings. Default 256 MiB.
        min_relevance: [D] the default cutoff of :meth:`Memory.search` and
            :meth:`Memory.context` (``min_score=None``) weighs two readings of
            the query's first :data:`CUTOFF_HITS` (10) hits, whatever ``k``:
            the best hit's :attr:`sgmem.Hit.relevance` (the hybrid's fused
            score, squashed) against ``min_relevance``, and the best dense
            relevance among them (the query's cosine to the turns, calibrated)
            against ``min_dense_relevance``. The query gets hits when
            ``best / min_relevance + dense / min_dense_relevance >= 2`` (the
            two reach their values on average: a strong word match with a weak
            cosine passes, and so does a close paraphrase without shared
            words), so an unrelated question gets nothing rather than the
            least bad memories; then every hit that reaches ``min_relevance``
            or ``relative_relevance`` × the best hit's relevance comes back.
            ``None`` (default): the values calibrated for the embedder,
            :data:`MIN_RELEVANCE` (0.15) and :data:`MIN_DENSE_RELEVANCE`
            (0.45) for the default all-MiniLM-L6-v2 and 0 (no cutoff) for any
            other, whose cosines mean something else. Chosen on the small
            chats of ``sgmem eval small``'s build pool and LongMemEval
            development questions (folds 0–2) and on the LoCoMo dev split with
            its 50 unrelated questions (docs/chat.md, "How the default was
            chosen"). 0 turns the cutoff off. An explicit ``min_score`` is a
            plain threshold on ``Hit.relevance``.
        min_dense_relevance: [D] see ``min_relevance``; ``None``: the
            embedder's calibrated value; 0 leaves the dense half out (the
            best hit's relevance alone must reach ``min_relevance``).
        relative_relevance: [D] see ``min_relevance`` (0 turns the relative rule off).
        broad_cosine: [D] a query whose cosine to the nearest generic request
            about the user ("What do you know about me?") reaches this is
            broad: beside what passes the default cutoff, it gets the user's
            own statements, best first (a topic it names, "my family", keeps
            the statements about it)
            (:mod:`sgmem.retrieval.broad`). 0.5 separates nine broad requests
            written apart from the prototypes (seven of them) from every
            specific development question of LongMemEval and LoCoMo and every
            bundled unrelated question. Applies only while the cutoff is on;
            1 turns the rule off.
        dense_index: [D] ``"exact"`` (default) scores every sentence of the scope
            against the query (one SIMD scan, the work of a FAISS flat search);
            ``"hnsw"`` makes scopes of at least ``dense_ann_min_sentences``
            sentences ask the HNSW index (:mod:`sgmem.retrieval.ann`, the one
            the kNN edges use, sharing the flat index's vectors) for the
            ``dense_ann_candidates`` nearest sentences (``efSearch`` twice
            that), then score exactly every sentence of those sentences' turns,
            of their chronological neighbours and (hybrid) of the best lexical
            matches; every other sentence counts as cosine −1
            (:func:`sgmem.retrieval.dense.ann_cosines`). Its vector work no
            longer grows with the scope (the channels' cheap per-turn passes
            still do). When to use it: scopes of several hundred thousand
            sentences and up, where the exact scan dominates a query; below
            that the exact scan is fast and exact. Overlap with the exact top-10
            is measured by ``python -m benchmarks.scale`` (see benchmarks/RESULTS.md;
            on real MiniLM vectors at 100k it was 0.94 for the vector mode and 0.99
            for the hybrid).
        dense_scan_threads: [D] threads that scan the sentence vectors of a
            scope of at least ``dense_scan_min_sentences`` sentences (each a
            part of the rows, cut at turn boundaries; results do not depend on
            it: :func:`sgmem.retrieval.dense.scan`). ``None`` (default): the
            machine's cores, at most 8. Below the size a search scans on its own
            thread: starting threads costs more than a small scan, and a search
            never competes with the embedder's threads (BLAS stays on one
            thread, :func:`sgmem.gate.blas.single_thread_blas`; the scan threads
            run only while the query's embedding is done). 1 turns it off.
        dense_scan_min_sentences: [D] see ``dense_scan_threads``; also the
            size from which ``dense_device`` takes the scan.
        dense_device: [D] where the exact dense scan runs. ``"auto"``
            (default): on the embedder's device when that is a GPU (its
            ``device`` attribute is ``"cuda…"`` or ``"mps"``, e.g.
            ``SentenceTransformerEmbedder(device="cuda")``, and PyTorch can
            use it), else on the CPU; the Memory's ``config`` shows what it
            resolved to. ``None``: always the CPU (FAISS's kernel, on
            ``dense_scan_threads``). A PyTorch device (``"cuda"``,
            ``"cuda:1"``, ``"mps"``): there, checked when the Memory opens.
            On a device, the vectors of each cached scope of at least
            ``dense_scan_min_sentences`` sentences are mirrored in its memory
            (4 bytes × dimension per sentence) and the scan and its per-turn
            reductions run there (:mod:`sgmem.retrieval.device`): the same
            cosines up to float32 rounding. Smaller scopes scan on the CPU, on
            the search's own thread: a device's fixed cost per scan (0.49 ms
            on an H200 host) is more than their scan's. On a 16-core GPU host
            (100k sentences) it took the hybrid query from 1.65× to
            1.15× GPU query embedding + FAISS flat. ``"cpu"`` runs that code
            through PyTorch on the CPU, slower than the default. The
            approximate index (``dense_index="hnsw"``) and a PostgreSQL
            server's scoring (``pg_dense``) take precedence where they apply.
        memory_unit: [D] what one hit of the turn-level modes (hybrid, vector,
            bm25, pyramid, entity) is: ``"turn"`` (default; one message) or
            ``"exchange"`` (MGRetrieval's memory unit, §3.1: one exchange, both
            speakers — a user message and the reply to it, ``Hit.kind ==
            "round"``). An exchange scores as its best turn
            (:mod:`sgmem.retrieval.units`). ``"turn"`` measured better on the
            LoCoMo dev split at an equal number of turns: recall@10 cat 1–4
            79.9 vs 74.2, multi-hop 51.4 vs 40.2 (leave-one-conversation-out,
            every fold chose the turn; the nested cross-validation in
            benchmarks/RESULTS.md chooses it too).
    """

    default_mode: str = "hybrid"
    graph: GraphConfig = field(default_factory=GraphConfig)
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    pyramid: PyramidConfig = field(default_factory=PyramidConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    derived: DerivedConfig = field(default_factory=DerivedConfig)
    entities: EntityConfig = field(default_factory=EntityConfig)
    sgrm: SGRMConfig = field(default_factory=SGRMConfig)
    limits: Limits = field(default_factory=Limits)
    speaker_prefix: bool = True
    embed_batch_size: int = 256
    busy_timeout_s: float = 30.0
    wal_checkpoint_pages: int = 8192
    wal_checkpoint_background: bool = True
    session_by_day: bool = True
    context_turn_tokens: int = 0
    pg_vector_index: str = "none"
    pg_dense: str = "auto"
    pg_row_security: bool = False
    pg_scope_key: str | None = field(default=None, repr=False)
    pg_cache_dir: str | None = None
    cache_bytes: int = 256 * 1024 * 1024
    min_relevance: float | None = None
    min_dense_relevance: float | None = None
    relative_relevance: float = 0.5
    broad_cosine: float = 0.5
    dense_index: Literal["exact", "hnsw"] = "exact"
    dense_ann_min_sentences: int = 200_000
    dense_ann_candidates: int = 256
    dense_scan_threads: int | None = None
    dense_device: str | None = "auto"
    dense_scan_min_sentences: int = 50_000
    memory_unit: Literal["turn", "exchange"] = "turn"
    acts: Literal["auto", "model", "rules"] = "rules"

    def __post_init__(self) -> None:
        _plain_numbers(self)
        _check(
            self.acts in ("auto", "model", "rules"),
            "Config.acts",
            self.acts,
            "'auto' (the classifier for a real embedder), 'model' or 'rules'",
        )
        _check(
            self.min_relevance is None or (_is_number(self.min_relevance) and 0.0 <= self.min_relevance <= 1.0),
            "Config.min_relevance",
            self.min_relevance,
            "None (the embedder's calibrated value) or a relevance in [0, 1] (0 turns the cutoff off)",
        )
        _check(
            self.min_dense_relevance is None
            or (_is_number(self.min_dense_relevance) and 0.0 <= self.min_dense_relevance <= 1.0),
            "Config.min_dense_relevance",
            self.min_dense_relevance,
            "None (the embedder's calibrated value) or a relevance in [0, 1] (0 leaves the dense half out)",
        )
        _check(
            _is_number(self.relative_relevance) and 0.0 <= self.relative_relevance <= 1.0,
            "Config.relative_relevance",
            self.relative_relevance,
            "a share of the best hit's relevance in [0, 1] (0 turns the relative rule off)",
        )
        _check(
            _is_number(self.broad_cosine) and 0.0 <= self.broad_cosine <= 1.0,
            "Config.broad_cosine",
            self.broad_cosine,
            "a cosine in [0, 1] (1 turns the broad-question rule off)",
        )
        _check(
            self.pg_vector_index in ("none", "hnsw"), "Config.pg_vector_index", self.pg_vector_index, "'none' or 'hnsw'"
        )
        _check(isinstance(self.pg_row_security, bool), "Config.pg_row_security", self.pg_row_security, "True or False")
        _check(
            self.pg_scope_key is None or (isinstance(self.pg_scope_key, str) and len(self.pg_scope_key) >= 16),
            "Config.pg_scope_key",
            "<a str of fewer than 16 characters>" if isinstance(self.pg_scope_key, str) else self.pg_scope_key,
            "None or a secret string of at least 16 characters (e.g. secrets.token_urlsafe(32))",
        )
        _check(
            self.pg_scope_key is None or self.pg_row_security,
            "Config.pg_scope_key",
            "<set>",
            "None unless pg_row_security=True (the key signs the scope that row security checks)",
        )
        _check(
            self.pg_dense in ("auto", "host", "server"), "Config.pg_dense", self.pg_dense, "'auto', 'host' or 'server'"
        )
        _check(
            self.pg_cache_dir is None
            or (
                isinstance(self.pg_cache_dir, str)
                and self.pg_cache_dir.strip() != ""
                and "\x00" not in self.pg_cache_dir
            ),
            "Config.pg_cache_dir",
            self.pg_cache_dir,
            "None or a local directory path (str) this host may write",
        )
        _check(self.dense_index in ("exact", "hnsw"), "Config.dense_index", self.dense_index, "'exact' or 'hnsw'")
        _check(
            self.dense_device is None or (isinstance(self.dense_device, str) and self.dense_device.strip() != ""),
            "Config.dense_device",
            self.dense_device,
            "'auto', None or a PyTorch device name such as 'cuda'",
        )
        _check(
            self.memory_unit in ("turn", "exchange"),
            "Config.memory_unit",
            self.memory_unit,
            "'turn' (one message per hit) or 'exchange' (a message and its reply)",
        )
        _check(
            _is_int(self.dense_ann_min_sentences) and self.dense_ann_min_sentences >= 0,
            "Config.dense_ann_min_sentences",
            self.dense_ann_min_sentences,
            "an int >= 0",
        )
        _check(
            self.dense_scan_threads is None or (_is_int(self.dense_scan_threads) and self.dense_scan_threads >= 1),
            "Config.dense_scan_threads",
            self.dense_scan_threads,
            "None (the machine's cores, at most 8) or an int >= 1",
        )
        _check(
            _is_int(self.dense_scan_min_sentences) and self.dense_scan_min_sentences >= 0,
            "Config.dense_scan_min_sentences",
            self.dense_scan_min_sentences,
            "an int >= 0",
        )
        _check(
            _is_int(self.dense_ann_candidates) and self.dense_ann_candidates >= 1,
            "Config.dense_ann_candidates",
            self.dense_ann_candidates,
            "an int >= 1",
        )
        _check(self.default_mode in MODES, "Config.default_mode", self.default_mode, f"one of {MODES}")
        _check(
            self.default_mode != "entity" or self.entities.enabled,
            "Config.default_mode",
            self.default_mode,
            "a mode other than 'entity' unless the entity layer is on (entities=EntityConfig(enabled=True))",
        )
        _check(
            _is_int(self.embed_batch_size) and self.embed_batch_size >= 1,
            "Config.embed_batch_size",
            self.embed_batch_size,
            "an int >= 1",
        )
        _check(
            _is_number(self.busy_timeout_s) and self.busy_timeout_s > 0,
            "Config.busy_timeout_s",
            self.busy_timeout_s,
            "a positive number of seconds",
        )
        _check(
            _is_int(self.wal_checkpoint_pages) and self.wal_checkpoint_pages >= 1,
            "Config.wal_checkpoint_pages",
            self.wal_checkpoint_pages,
            "an int >= 1 (pages of write-ahead log between checkpoints)",
        )
        _check(
            isinstance(self.wal_checkpoint_background, bool),
            "Config.wal_checkpoint_background",
            self.wal_checkpoint_background,
            "True or False",
        )
        _check(
            _is_int(self.cache_bytes) and self.cache_bytes >= 0,
            "Config.cache_bytes",
            self.cache_bytes,
            "an int >= 0 (bytes of per-scope caches; 0 keeps only the scope in use)",
        )
        for name in ("speaker_prefix", "session_by_day"):
            _check(isinstance(getattr(self, name), bool), f"Config.{name}", getattr(self, name), "True or False")
        for name, typ in (
            ("graph", GraphConfig),
            ("hybrid", HybridConfig),
            ("pyramid", PyramidConfig),
            ("limits", Limits),
            ("gate", GateConfig),
            ("derived", DerivedConfig),
            ("entities", EntityConfig),
            ("sgrm", SGRMConfig),
        ):
            _check(isinstance(getattr(self, name), typ), f"Config.{name}", getattr(self, name), f"a {typ.__name__}")

    def with_(self, **changes: object) -> Config:
        """Return a copy with ``changes`` applied (the preset is left untouched)."""
        return replace(self, **changes)  # type: ignore[arg-type]
