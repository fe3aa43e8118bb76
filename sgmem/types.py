"""Public value types: what goes into and comes out of :class:`sgmem.Memory`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "AddResult",
    "DeleteReceipt",
    "Hit",
    "MemoryVersion",
    "MessageVersion",
    "Message",
    "RecallTrace",
    "ScopeStats",
    "SentenceLink",
    "Stats",
]


@dataclass(frozen=True)
class Message:
    """One chat message, as added and as replayed.

    Attributes:
        role: ``"user"``, ``"assistant"``, ``"system"`` or ``"tool"``.
        content: the text, stored verbatim.
        name: the speaker's name, if any (used to label context and embeddings).
        id: the caller's id (e.g. LoCoMo's ``"D3:7"``) or one sgmem generated.
        at: when it was said (timezone-aware; naive input is taken as UTC).
        thread: the thread it belongs to (filled on replay).
        session: the session it was grouped into (filled on replay).
        metadata: JSON-serialisable extras, replayed exactly (adapters keep
            framework fields here, e.g. LangChain's ``additional_kwargs``).
    """

    role: str
    content: str
    name: str | None = None
    id: str | None = None
    at: datetime | None = None
    thread: str | None = None
    session: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The message as a plain dict (``at`` as ISO-8601)."""
        return {
            "role": self.role,
            "content": self.content,
            "name": self.name,
            "id": self.id,
            "at": self.at.isoformat() if self.at else None,
            "thread": self.thread,
            "session": self.session,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class Hit:
    """One retrieved memory.

    Attributes:
        text: the memory's text (a turn, a chunk of turns, a sentence…),
            speaker-labelled when it spans several messages.
        score: the mode's ranking score (higher is better). It orders one
            result list and nothing more: hybrid sums several channels (values
            up to ~2.5), BM25 is unbounded, generated memory scores ``cos + 1``.
            Do not threshold it; threshold :attr:`relevance`.
        kind: ``"turn"``, ``"round"``, ``"session"`` or ``"sentence"``; for
            generated memory ``"fact"``, ``"summary"`` or ``"insight"``.
        message_ids: ids of the source messages, in conversation order (for
            generated memory: the messages its text came from).
        thread: the thread of the (first) source message.
        at: time of the (first) source message.
        why: how it was found — the mode, the channel scores, the seed sentence
            and hop count for graph expansion, matched words for lexical hits;
            ``"broad": True`` on a hit kept below the relevance cutoff because
            the question is a broad one about the user (:mod:`sgmem.retrieval.broad`).
        speaker: speaker name or role of the (first) source message.
        memory_id: the id of a generated memory (``"fact:12"``), for
            :meth:`sgmem.Memory.history`; ``None`` for raw turns and chunks.
        relevance: how close the hit is to the query, in [0, 1]; the hits of
            one search are in its order. In the default hybrid mode it is the
            fused score squashed (``score / (score + relevance_scale)``,
            :func:`sgmem.retrieval.search.hybrid_relevance`: one measure orders
            and cuts). In the other modes, for turns, the mean of the query's
            dense cosine to the turn's best sentence and to the whole turn (a
            reply to a question is also read with that question, as the
            exchange: "What's the dog's name?" — "Pepper."), times the turn's
            dialogue-act weight (``HybridConfig``: 1 for a statement, less for a
            question or "I'm not sure.", 0 for filler such as "Thanks!"); a
            chunk takes its best turn, generated memory its own cosine. The
            default cutoff of :meth:`sgmem.Memory.search` and
            :meth:`sgmem.Memory.context` (``Config.min_relevance`` with its
            dense half ``Config.min_dense_relevance``, calibrated for the
            default MiniLM embedder, none for other embedders, plus a rule
            relative to the best hit) drops hits below it.
    """

    text: str
    score: float
    kind: str
    message_ids: tuple[str, ...]
    thread: str
    at: datetime
    why: dict[str, Any] = field(default_factory=dict)
    speaker: str | None = None
    memory_id: str | None = None
    relevance: float = 0.0


@dataclass(frozen=True)
class AddResult:
    """What one :meth:`sgmem.Memory.add` stored.

    Attributes:
        message_ids: ids of the stored messages, in order.
        messages, sentences: how many of each were stored.
        edges: similarity plus chronological edges created.
        embedded: texts sent to the embedder (identical texts are embedded once).
        timings_ms: milliseconds per stage (``segment``, ``embed``, ``graph``,
            ``store``, ``total``; ``derived`` for generated memory).
        facts_added, facts_updated, facts_skipped: how the novelty gate routed
            this add's fact candidates (Add / Update / Noop).
        summaries, insights: session summaries and insights written.
        llm_calls: LLM calls made by this add (0 without an LLM).
        llm_prompt_tokens, llm_completion_tokens: their tokens (cl100k_base counts).
        llm_ms: milliseconds spent waiting for the LLM.
        llm_fallbacks: calls whose output was unusable, so the LLM-free rule
            was applied instead.
        replaced: for :meth:`sgmem.Memory.replace`, what the same transaction
            deleted first (``None`` for a plain add).
    """

    message_ids: tuple[str, ...]
    messages: int
    sentences: int
    edges: int
    embedded: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    facts_added: int = 0
    facts_updated: int = 0
    facts_skipped: int = 0
    summaries: int = 0
    insights: int = 0
    llm_calls: int = 0
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    llm_ms: float = 0.0
    llm_fallbacks: int = 0
    replaced: DeleteReceipt | None = None


@dataclass(frozen=True)
class DeleteReceipt:
    """What one :meth:`sgmem.Memory.delete` removed (counts per record kind).

    ``derived`` counts generated memories (facts, summaries, insights) deleted
    because every message they came from went; ``derived_revised`` those that
    lost some of their sources and were reverted or recomputed.

    ``scrubbed`` is True when no file of the store holds the deleted text any
    more (checked before the call returned). False only when another
    connection kept reading an older snapshot for longer than
    ``Config.busy_timeout_s``: the text is gone from every query but older
    copies of its pages are still in the write-ahead log; call
    :meth:`sgmem.Memory.scrub` to finish (the next delete and ``close`` retry too).
    """

    messages: int = 0
    sentences: int = 0
    edges: int = 0
    vectors: int = 0
    threads: tuple[str, ...] = ()
    derived: int = 0
    derived_revised: int = 0
    scrubbed: bool = True

    @property
    def total(self) -> int:
        """All records removed."""
        return self.messages + self.sentences + self.edges + self.vectors + self.derived


@dataclass(frozen=True)
class MemoryVersion:
    """One version of a generated memory, as :meth:`sgmem.Memory.history` returns it.

    Attributes:
        memory_id: the memory (``"fact:12"``).
        version: 1 for the first text, then one more per change.
        text: the text of this version (superseded texts are kept).
        cause: why it was written: ``"add"`` (a new fact), ``"merge-llm"`` /
            ``"merge-rule"`` (the gate's Update merged a candidate in),
            ``"summarised-llm"`` / ``"summarised-rule"`` (summaries),
            ``"insight-llm"`` / ``"insight-rule"``, ``"reverted"`` (a source
            was deleted, the last version without it was restored).
        at: when the newest information in it was said.
        recorded_at: when this version was written.
        message_ids: the messages this version was built from.
        detail: extras (the merged candidate, the gate's score).
    """

    memory_id: str
    version: int
    text: str
    cause: str
    at: datetime
    recorded_at: datetime
    message_ids: tuple[str, ...]
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MessageVersion:
    """One text of a stored message, as :meth:`sgmem.Memory.versions` returns it.

    Attributes:
        message_id: the message's id now.
        version: 1 for the first text, then one more per edit; the highest is the current text.
        id: the id the message had with this text (``sgmem ingest`` gives an edited message the id of its
            new text; an edit through :meth:`sgmem.Memory.edit` keeps the id unless it names another).
        role, content, name, metadata: the message as it was.
        at: when it was said.
        replaced_at: when an edit replaced this text; ``None`` for the current one.
    """

    message_id: str
    version: int
    id: str
    role: str
    content: str
    name: str | None
    at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    replaced_at: datetime | None = None


@dataclass(frozen=True)
class ScopeStats:
    """Counts for one scope.

    Generated memory: ``facts``, ``summaries``, ``insights``; ``gate`` holds
    the novelty gate's state and counters (κ, τ, step, adds / updates /
    noops). ``llm_*`` total the LLM calls of every add to the scope.
    """

    scope: str
    threads: int
    sessions: int
    messages: int
    sentences: int
    similarity_edges: int
    chronological_edges: int
    tokens: int
    facts: int = 0
    summaries: int = 0
    insights: int = 0
    gate: dict[str, Any] = field(default_factory=dict)
    llm_calls: int = 0
    llm_prompt_tokens: int = 0
    llm_completion_tokens: int = 0
    llm_ms: float = 0.0
    llm_fallbacks: int = 0


@dataclass(frozen=True)
class Stats:
    """Counts for a store (or one scope of it) plus its identity."""

    path: str | None
    schema_version: int
    embedder: str
    dim: int
    scopes: tuple[ScopeStats, ...]

    @property
    def messages(self) -> int:
        """Messages over the scopes reported."""
        return sum(s.messages for s in self.scopes)

    @property
    def sentences(self) -> int:
        """Sentences over the scopes reported."""
        return sum(s.sentences for s in self.scopes)


@dataclass(frozen=True)
class RecallTrace:
    """What one :meth:`sgmem.Memory.context_trace` recalled, and why: the trace adapters keep as ``last_recall``.

    Attributes:
        query: the text memories were recalled for.
        scope: whose memories were read.
        text: the context block (``""`` when nothing relevant was found).
        message_ids: the messages whose text is in the block, in its order.
        hits: the memories that passed the relevance cutoff, best first, each
            with its :attr:`Hit.relevance` and :attr:`Hit.why` (some may not
            fit the token budget: ``message_ids`` says which did).
        cut: the memories ranked but left out by the relevance cutoff.
        cutoff: the relevance below which a memory was cut.
        ms: milliseconds the recall took.
    """

    query: str
    scope: str
    text: str
    message_ids: tuple[str, ...] = ()
    hits: tuple[Hit, ...] = ()
    cut: tuple[Hit, ...] = ()
    cutoff: float = 0.0
    ms: float = 0.0


@dataclass(frozen=True)
class SentenceLink:
    """One link of a message's sentence in the scope's sentence graph, as :meth:`sgmem.Memory.neighbours` returns it.

    Attributes:
        sentence: the text of the message's own sentence (the link's near end).
        position: that sentence's place in the message (0 for the first).
        kind: why the two sentences are linked: ``"similarity"`` (a kNN edge
            of the sentence graph, ``GraphConfig.knn_k`` and ``knn_rule``; the
            graph and hybrid modes expand along it), ``"chronological"`` (the
            previous or next turn of the thread, SGRM's chain; the hybrid's
            neighbour channel reads it) or ``"same turn"`` (the next sentence
            of the same message).
        direction: ``"previous"`` or ``"next"`` for a chronological link,
            ``"next"`` for a same-turn one, ``None`` for similarity.
        cosine: the cosine of the two sentence vectors (a similarity edge's
            weight; given for every kind).
        text: the linked sentence.
        message_id: the id of the linked sentence's message.
        thread, session, speaker, at: that message's thread, session, speaker
            (name or role) and time.
        same_session: whether the linked message is in the same session of
            the same thread as the message asked about.
    """

    sentence: str
    position: int
    kind: str
    direction: str | None
    cosine: float
    text: str
    message_id: str
    thread: str
    session: str | None
    speaker: str | None
    at: datetime
    same_session: bool
