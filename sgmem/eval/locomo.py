"""LoCoMo evidence-recall evaluation, with no LLM.

Each conversation is ingested into its own scope (one thread per session, its
date as the messages' time, speaker names kept). Every question is then
searched; a system's ranked hits are mapped to the turns (``dia_id``) they
contain, and evidence recall@k is the share of a question's evidence turns
found among the first k distinct turns (the data folder's README). Baselines
run in the same process over the same store: BM25 over whole turns
(``mode="bm25"``) and dense MiniLM over sentences mapped to turns
(``mode="vector"``).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import Config
from ..embed.base import Embedder
from ..errors import InvalidInputError
from ..memory import Memory
from ..retrieval.search import Retriever
from ..text.tokens import count_tokens
from .relevance import RelevanceSweep, render_relevance, unrelated_questions

__all__ = [
    "CATEGORY_NAMES",
    "Conversation",
    "EvalReport",
    "context_evidence",
    "evaluate",
    "load_locomo",
    "recall_at_k",
    "render_report",
    "turns_of",
]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]
    #: the reference answer (categories 1–4), or None
    answer: str | None = None


@dataclass
class Conversation:
    """One LoCoMo sample: its sessions (as sgmem messages) and questions."""

    sample_id: str
    sessions: list[tuple[str, datetime, list[dict[str, Any]]]]
    questions: list[Question]

    @property
    def n_turns(self) -> int:
        return sum(len(m) for _, _, m in self.sessions)


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware UTC datetime."""
    m = _DATE.search(text)
    if not m:
        raise InvalidInputError("session date", text, "LoCoMo's 'h:mm am on D Month, YYYY'")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), _MONTHS[month.lower()], int(day), h, int(minute), tzinfo=timezone.utc)


def _evidence(raw: Iterable[str]) -> list[str]:
    out: list[str] = []
    for e in raw:
        for part in re.split(r"[;,\s]+", str(e)):
            if re.fullmatch(r"D\d+:\d+", part) and part not in out:
                out.append(part)
    return out


def load_locomo(path: str | Path, limit: int | None = None) -> list[Conversation]:
    """Read a LoCoMo JSON file (the released format) into conversations."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    convs: list[Conversation] = []
    for sample in data[:limit]:
        conv = sample["conversation"]
        speaker_a = conv["speaker_a"]
        keys = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        sessions = []
        for key in keys:
            turns = conv[key]
            if not turns:
                continue
            at = parse_locomo_date(conv[f"{key}_date_time"])
            msgs = []
            for t in turns:
                text = t["text"]
                if t.get("blip_caption"):
                    # the photo is part of what was said; its caption is the only text of it we have
                    text = f"{text} [shares a photo: {t['blip_caption']}]"
                msgs.append(
                    {
                        "role": "user" if t["speaker"] == speaker_a else "assistant",
                        "name": t["speaker"],
                        "content": text,
                        "id": t["dia_id"],
                        "at": at,
                        "session": key,
                    }
                )
            sessions.append((key, at, msgs))
        questions = [
            Question(
                q["question"],
                int(q["category"]),
                _evidence(q.get("evidence", [])),
                str(q["answer"]) if q.get("answer") not in (None, "") else None,
            )
            for q in sample["qa"]
        ]
        convs.append(Conversation(sample["sample_id"], sessions, [q for q in questions if q.evidence]))
    return convs


@dataclass
class SystemScores:
    """Per-question recall of one system."""

    name: str
    recall: dict[int, list[list[float]]] = field(default_factory=lambda: defaultdict(list))  # k -> per-cat lists
    by_cat: dict[int, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    all_hit10: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    ctx_recall: dict[int, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    ctx_whole: dict[int, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    ctx_tokens: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    latency_ms: list[float] = field(default_factory=list)


@dataclass
class EvalReport:
    """Everything an evaluation measured."""

    systems: list[SystemScores]
    ks: tuple[int, ...]
    budgets: tuple[int, ...]
    n_questions: int
    n_turns: int
    ingest_s: float
    path: str
    relevance: RelevanceSweep | None = None
    min_relevance: float = 0.0

    def recall(self, system: str, k: int, cats: Sequence[int] = (1, 2, 3, 4)) -> float:
        s = next(x for x in self.systems if x.name == system)
        vals = [v for c in cats for v in s.by_cat[k][c]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")


def turns_of(hits: Sequence[Any]) -> list[str]:
    """The distinct turns (message ids) of ranked hits, in rank order."""
    seen: dict[str, None] = {}
    for h in hits:
        for mid in h.message_ids:
            seen.setdefault(mid, None)
    return list(seen)


def recall_at_k(turns: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """Evidence recall@k: the share of the evidence turns among the first ``k`` distinct ``turns``.

    ``turns`` are distinct ranked turn ids (:func:`turns_of`); ``evidence`` must
    not be empty (a question without evidence is not scored).
    """
    ev = set(evidence)
    if not ev:
        raise InvalidInputError("evidence", evidence, "at least one evidence turn id")
    return len(ev & set(list(dict.fromkeys(turns))[:k])) / len(ev)


def context_evidence(
    text: str, ids: Iterable[str], evidence: Iterable[str], turn_text: Mapping[str, str]
) -> tuple[float, float]:
    """Shares of evidence turns inside a context block: (fragments, whole turns).

    *Fragments* counts a turn whose id made it into the block in any form (a
    digest of its sentences, or the source of a generated memory); *whole
    turns* counts it only if its full rendered line ``"Speaker: text"``
    (``turn_text``) is in ``text`` — the like-for-like comparison with a
    baseline that packs whole turns.
    """
    ev = set(evidence)
    if not ev:
        raise InvalidInputError("evidence", evidence, "at least one evidence turn id")
    inside = ev & set(ids)
    whole = {e for e in inside if e in turn_text and turn_text[e] in text}
    return len(inside) / len(ev), len(whole) / len(ev)


def evaluate(
    path: str | Path,
    *,
    systems: Sequence[tuple[Any, ...]] = (
        ("sgmem hybrid", "hybrid"),
        ("BM25 turns", "bm25"),
        ("dense sentences", "vector"),
    ),
    ks: Sequence[int] = (5, 10, 20),
    budgets: Sequence[int] = (1000,),
    config: Config | None = None,
    embedder: Embedder | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    memory_factory: Callable[[], Memory] | None = None,
    relevance: Sequence[float] = (),
) -> EvalReport:
    """Run the evidence-recall evaluation on a LoCoMo file.

    Args:
        systems: (label, mode) pairs, all searched over the same store; a
            third element, a :class:`Config`, gives that system its own
            retrieval settings (e.g. hybrid without a channel) over the same store.
        ks: cut-offs for recall@k.
        budgets: token budgets for recall within ``Memory.context``; the first
            system's mode is used for context.
        limit: only the first ``limit`` conversations.
        relevance: ``min_score`` thresholds to sweep (see
            :mod:`sgmem.eval.relevance`), with the first budget; empty skips it.

    Recall@k is measured with ``min_score=0`` (it measures the ranking); the
    context rows use the Memory's default cutoff (``Config.min_relevance``),
    as a user gets it.
    """
    convs = load_locomo(path, limit)
    scores = [SystemScores(spec[0]) for spec in systems]
    retrievers = [Retriever(spec[2]) if len(spec) > 2 and spec[2] is not None else None for spec in systems]
    kmax = max(ks)
    ingest_s = 0.0
    n_q = 0
    sweep = RelevanceSweep(tuple(relevance), budgets[0]) if relevance else None
    unrelated = unrelated_questions() if relevance else []
    min_relevance = 0.0
    for conv in convs:
        mem = memory_factory() if memory_factory else Memory(embedder=embedder, config=config)
        with mem:
            t0 = time.perf_counter()
            for key, at, msgs in conv.sessions:
                mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
            ingest_s += time.perf_counter() - t0
            turn_text = {m["id"]: f"{m['name']}: {m['content']}" for _, _, msgs in conv.sessions for m in msgs}
            if progress:
                progress(f"{conv.sample_id}: {conv.n_turns} turns ingested, {len(conv.questions)} questions")
            for q in conv.questions:
                n_q += 1
                ev = set(q.evidence)
                for sys_scores, spec, retriever in zip(scores, systems, retrievers, strict=True):
                    mode = spec[1]
                    own = mem._retriever
                    if retriever is not None:
                        mem._retriever = retriever
                    try:
                        t1 = time.perf_counter()
                        hits = mem.search(q.question, scope=conv.sample_id, k=kmax, mode=mode, min_score=0)
                        sys_scores.latency_ms.append((time.perf_counter() - t1) * 1e3)
                    finally:
                        mem._retriever = own
                    turns = turns_of(hits)
                    for k in ks:
                        sys_scores.by_cat[k][q.category].append(recall_at_k(turns, ev, k))
                    sys_scores.all_hit10[q.category].append(float(ev <= set(turns[:10])))
                first = scores[0]
                for b in budgets:
                    text, ids = mem._context_with_ids(
                        q.question, scope=conv.sample_id, budget_tokens=b, mode=systems[0][1]
                    )
                    frag, whole = context_evidence(text, ids, ev, turn_text)
                    first.ctx_recall[b][q.category].append(frag)
                    first.ctx_whole[b][q.category].append(whole)
                    first.ctx_tokens[b].append(count_tokens(text))
                if sweep is not None and q.category in (1, 2, 3, 4):
                    for t in sweep.grid:
                        _, ids = mem._context_with_ids(
                            q.question,
                            scope=conv.sample_id,
                            budget_tokens=sweep.budget,
                            mode=systems[0][1],
                            min_score=t,
                        )
                        sweep.recall[conv.sample_id][t].append(len(ev & set(ids)) / len(ev))
            if sweep is not None:
                for uq in unrelated:
                    for t in sweep.grid:
                        text = mem.context(uq, scope=conv.sample_id, budget_tokens=sweep.budget, min_score=t)
                        sweep.empty[conv.sample_id][t].append(float(text == ""))
            min_relevance = mem.min_relevance
    return EvalReport(
        scores,
        tuple(ks),
        tuple(budgets),
        n_q,
        sum(c.n_turns for c in convs),
        ingest_s,
        str(path),
        sweep,
        min_relevance,
    )


def _pct(vals: list[float]) -> str:
    return f"{100.0 * statistics.fmean(vals):.1f}" if vals else "–"


def render_report(rep: EvalReport) -> str:
    """A Markdown report: recall@k per category per system, and context recall."""
    cats = (1, 2, 3, 4)
    lines = [
        f"LoCoMo evidence recall — {rep.path}: {rep.n_questions} questions, {rep.n_turns} turns, "
        f"ingest {rep.ingest_s:.1f}s",
        "",
        "| system | k | " + " | ".join(CATEGORY_NAMES[c] for c in cats) + " | cat 1–4 | adversarial (5) |",
        "|---|---|" + "---|" * (len(cats) + 2),
    ]
    for s in rep.systems:
        for k in rep.ks:
            per = [_pct(s.by_cat[k][c]) for c in cats]
            all14 = [v for c in cats for v in s.by_cat[k][c]]
            lines.append(f"| {s.name} | {k} | " + " | ".join(per) + f" | **{_pct(all14)}** | {_pct(s.by_cat[k][5])} |")
    lines += ["", "| system | all-evidence hit@10 (cat 1–4) | query p50 ms | query p95 ms |", "|---|---|---|---|"]
    for s in rep.systems:
        allh = [v for c in cats for v in s.all_hit10[c]]
        lat = sorted(s.latency_ms)
        p50 = lat[len(lat) // 2] if lat else float("nan")
        p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))] if lat else float("nan")
        lines.append(f"| {s.name} | {_pct(allh)} | {p50:.1f} | {p95:.1f} |")
    first = rep.systems[0]
    if first.ctx_recall:
        lines += [
            "",
            f"Recall inside Memory.context() ({first.name}, default min_score={rep.min_relevance:g}):",
            "",
            "| budget tokens | mean tokens used | cat 1–4 evidence inside: fragments | whole turns "
            "| adversarial (5): fragments | whole turns |",
            "|---|---|---|---|---|---|",
        ]
        for b in rep.budgets:
            vals = [v for c in cats for v in first.ctx_recall[b][c]]
            whole = [v for c in cats for v in first.ctx_whole[b][c]]
            lines.append(
                f"| {b} | {statistics.fmean(first.ctx_tokens[b]):.0f} | {_pct(vals)} | {_pct(whole)} "
                f"| {_pct(first.ctx_recall[b][5])} | {_pct(first.ctx_whole[b][5])} |"
            )
        lines += [
            "",
            "Fragments: a turn counts if any part of it (a digest of its sentences, or the source of a "
            "generated memory) is in the block; whole turns: only if its full text is.",
        ]
    if rep.relevance is not None:
        lines += ["", render_relevance(rep.relevance, rep.min_relevance)]
    return "\n".join(lines)
