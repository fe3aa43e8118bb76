"""LongMemEval retrieval evaluation, with no LLM.

LongMemEval (Wu et al., ICLR 2025, arXiv 2410.10813) gives each question its
own haystack of ~48 user–assistant sessions (~490 turns, the assistant's long);
the turns that hold the evidence carry ``"has_answer": true``. Each haystack is
ingested into a fresh memory (one thread per session, the session's date as
its messages' time) under one of two protocols:

* ``"user"``: only the user's turns are stored — the paper's retrieval setting
  (§5, "Indexing"); a question whose evidence lies only in assistant turns has
  nothing to find and is not scored;
* ``"all"``: every turn of both roles is stored, as a deployed memory stores
  the whole chat.

Every system ranks the same store's turns: sgmem's ``hybrid`` mode, BM25 over
whole turns (``mode="bm25"``), dense MiniLM over sentences mapped to turns
(``mode="vector"``), and the reciprocal rank fusion of the last two
(:func:`sgmem.eval.chat.rrf`, k = 60). Each question is asked at its
``question_date`` (``Memory.search(now=...)``: "last Saturday" is the one
before it). Abstention questions (ids ending in
``_abs``) are skipped, as the benchmark's retrieval evaluation does.

Metrics follow LongMemEval's own retrieval code (``src/retrieval/eval_utils.py``):
for K in ``ks``, ``recall_any@K`` (any evidence item among the first K),
``recall_all@K`` (every one) and ``ndcg_any@K`` — at turn level over the
``has_answer`` turns and at session level after mapping ranked turns to their
sessions in first-seen order — plus turn recall@K, the share of evidence turns
among the first K (the measure the LoCoMo evaluation reports).
"""

from __future__ import annotations

import gzip
import json
import math
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import Config
from ..embed.base import Embedder
from ..errors import InvalidInputError
from ..memory import Memory
from .chat import rrf
from .locomo import turns_of

__all__ = [
    "PROTOCOLS",
    "QUESTION_TYPES",
    "LMEQuestion",
    "LMEReport",
    "evaluate_longmemeval",
    "ingest_haystack",
    "load_longmemeval",
    "ndcg_any",
    "parse_lme_date",
    "render_longmemeval",
    "report_from_raw",
    "report_to_raw",
    "retrieval_metrics",
]

PROTOCOLS = ("user", "all")
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
#: the systems every run measures, in report order
SYSTEMS = ("sgmem hybrid", "BM25 turns", "dense sentences", "RRF(BM25, dense)")
_DEPTH = 100  # how deep each ranking goes (before fusion and metrics)


@dataclass
class LMEQuestion:
    """One LongMemEval question with its haystack.

    A haystack may hold the same session twice (its filler sessions are drawn with replacement): both copies are
    stored, each at its own date, as the chat held it twice; the second gets a thread key of its own
    (``"<id>~2"``) and the metrics count both copies as the one session and turn the benchmark names.
    """

    question_id: str
    question_type: str
    question: str
    question_date: datetime
    #: (thread key, date, [(turn id, role, content, has_answer), ...]) in haystack order; keys and turn ids are
    #: unique within the haystack
    sessions: list[tuple[str, datetime, list[tuple[str, str, str, bool]]]]
    #: thread key -> the benchmark's session id, for the keys that differ from it (a repeated session's copies)
    session_ids: dict[str, str] = field(default_factory=dict)

    def items(self, protocol: str) -> dict[str, tuple[str, str]]:
        """Stored turn id -> (the benchmark's turn id, its session id), for the turns ``protocol`` stores."""
        out = {}
        for key, _, turns in self.sessions:
            sid = self.session_ids.get(key, key)
            for i, (t, role, _, _) in enumerate(turns):
                if _stored(role, protocol):
                    out[t] = (f"{sid}#{i}", sid)
        return out

    def evidence(self, protocol: str) -> set[str]:
        """The benchmark's ids of the ``has_answer`` turns a protocol stores."""
        items = self.items(protocol)
        return {items[t][0] for _, _, turns in self.sessions for t, _, _, ans in turns if ans and t in items}

    def ranked(self, turns: Sequence[str], protocol: str) -> tuple[list[str], list[str]]:
        """A ranking of stored turn ids as the benchmark's turn ids and, in first-seen order, session ids."""
        items = self.items(protocol)
        found = [items[t] for t in turns if t in items]
        return list(dict.fromkeys(t for t, _ in found)), list(dict.fromkeys(s for _, s in found))


def _stored(role: str, protocol: str) -> bool:
    return protocol == "all" or role == "user"


def ingest_haystack(mem: Any, q: Any, protocol: str) -> None:
    """Add question ``q``'s haystack to ``mem`` (scope ``"q"``), one thread per session, with the sessions'
    dates: the turns ``protocol`` stores, empty ones left out."""
    for sid, at, turns in q.sessions:
        msgs = [
            {"role": role, "content": text, "id": tid, "at": at}
            for tid, role, text, _ in turns
            if _stored(role, protocol) and text.strip()
        ]
        if msgs:
            mem.add(msgs, scope="q", thread=sid, at=at)


def parse_lme_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` → an aware UTC datetime."""
    try:
        day, _, hm = text.split(" ")
        return datetime.strptime(f"{day} {hm}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)
    except ValueError as exc:
        raise InvalidInputError("haystack date", text, "a LongMemEval date like '2023/05/20 (Sat) 02:21'") from exc


def load_longmemeval(
    path: str | Path,
    *,
    limit: int | None = None,
    per_type: int | None = None,
    seed: int | Sequence[int] = 0,
    max_sessions: int | None = None,
) -> list[LMEQuestion]:
    """Read a LongMemEval file (official JSON list, optionally gzipped); abstention questions are skipped.

    Args:
        limit: keep the first ``limit`` questions (after ``per_type``).
        per_type: keep at most this many questions of each type, drawn with ``seed``
            (a stratified subset for quick runs); several seeds keep the union of their draws (a subset
            grown without redrawing the first).
        max_sessions: trim each haystack to its evidence sessions and the first others up to this
            many sessions (toy runs only: a smaller haystack is an easier question).
    """
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(
            "path", str(p), "an existing LongMemEval JSON file (official format, .json or .json.gz)"
        )
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as f:
        data = json.load(f)
    out: list[LMEQuestion] = []
    for rec in data:
        qid = str(rec["question_id"])
        if qid.endswith("_abs"):
            continue
        sessions, session_ids = [], {}
        ids = [str(sid) for sid in rec["haystack_session_ids"]]
        taken = set(ids)
        seen: dict[str, int] = defaultdict(int)
        for sid, date, turns in zip(ids, rec["haystack_dates"], rec["haystack_sessions"], strict=True):
            seen[sid] += 1
            key = sid
            if seen[sid] > 1:  # the same session drawn again: a copy of its own, counted as the one session
                n = seen[sid]
                while (key := f"{sid}~{n}") in taken:
                    n += 1
                taken.add(key)
                session_ids[key] = sid
            sessions.append(
                (
                    key,
                    parse_lme_date(date),
                    [
                        (f"{key}#{i}", t["role"], t["content"], bool(t.get("has_answer", False)))
                        for i, t in enumerate(turns)
                    ],
                )
            )
        if max_sessions is not None:
            evidence = [s for s in sessions if any(t[3] for t in s[2])]
            others = [s for s in sessions if s not in evidence][: max(0, max_sessions - len(evidence))]
            sessions = [s for s in sessions if s in evidence or s in others]
        out.append(
            LMEQuestion(
                qid, rec["question_type"], rec["question"], parse_lme_date(rec["question_date"]), sessions, session_ids
            )
        )
    if per_type is not None:
        by_type: dict[str, list[LMEQuestion]] = defaultdict(list)
        for q in out:
            by_type[q.question_type].append(q)
        keep = set()
        for one in [seed] if isinstance(seed, int) else seed:
            rng = random.Random(one)
            keep |= {q.question_id for qs in by_type.values() for q in rng.sample(qs, min(per_type, len(qs)))}
        out = [q for q in out if q.question_id in keep]
    return out[:limit]


def _dcg(rel: Sequence[float], k: int) -> float:
    # LongMemEval's eval_utils.dcg: the first item undiscounted, item i (from 2) divided by log2(i)
    rel = list(rel)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def ndcg_any(ranked: Sequence[str], relevant: set[str], n_items: int, k: int) -> float:
    """nDCG@k with binary relevance, as LongMemEval's ``ndcg`` (ideal: every relevant item first)."""
    ideal = _dcg([1.0] * min(len(relevant), n_items), k)
    if ideal == 0:
        return 0.0
    return _dcg([1.0 if r in relevant else 0.0 for r in ranked], k) / ideal


def retrieval_metrics(ranked: Sequence[str], relevant: set[str], n_items: int, ks: Sequence[int]) -> dict[str, float]:
    """``recall_any@K``, ``recall_all@K``, ``ndcg_any@K`` and ``recall@K`` (share of relevant) for each K."""
    if not relevant:
        raise InvalidInputError("relevant", relevant, "at least one evidence item")
    ranked = list(dict.fromkeys(ranked))
    out: dict[str, float] = {}
    for k in ks:
        top = set(ranked[:k])
        found = len(relevant & top)
        out[f"recall_any@{k}"] = float(found > 0)
        out[f"recall_all@{k}"] = float(found == len(relevant))
        out[f"ndcg_any@{k}"] = ndcg_any(ranked, relevant, n_items, k)
        out[f"recall@{k}"] = found / len(relevant)
    return out


@dataclass
class LMEReport:
    """Per-question metrics of every system under one protocol."""

    protocol: str
    ks: tuple[int, ...]
    #: system -> level ("turn" / "session") -> question type -> metric -> per-question values
    values: dict[str, dict[str, dict[str, dict[str, list[float]]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    )
    latency_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    ingest_s: list[float] = field(default_factory=list)
    n_questions: int = 0
    skipped: int = 0
    path: str = ""

    def mean(self, system: str, level: str, metric: str, qtype: str | None = None) -> float:
        by_type = self.values[system][level]
        vals = [v for t, m in by_type.items() if qtype in (None, t) for v in m[metric]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")


def evaluate_longmemeval(
    questions: Sequence[LMEQuestion],
    *,
    protocol: str = "all",
    ks: Sequence[int] = (5, 10),
    embedder: Embedder | None = None,
    config: Config | None = None,
    progress: Callable[[str], None] | None = None,
    path: str = "",
) -> LMEReport:
    """Ingest each question's haystack into a fresh in-memory store and score every system's ranking.

    Recall is measured with ``min_score=0`` (it measures the ranking, as the LoCoMo evaluation does).
    """
    if protocol not in PROTOCOLS:
        raise InvalidInputError("protocol", protocol, f"one of {PROTOCOLS}")
    rep = LMEReport(protocol, tuple(ks), path=path)
    kmax = max(max(ks), _DEPTH)
    for n, q in enumerate(questions, start=1):
        evidence = q.evidence(protocol)
        if not evidence:
            rep.skipped += 1  # its evidence is in turns this protocol does not store
            continue
        items = q.items(protocol)
        ev_sessions = {s for t, s in items.values() if t in evidence}
        n_turns, n_sessions = len(set(items.values())), len({s for _, s in items.values()})
        with Memory(embedder=embedder, config=config) as mem:
            t0 = time.perf_counter()
            ingest_haystack(mem, q, protocol)
            rep.ingest_s.append(time.perf_counter() - t0)
            rankings: dict[str, list[str]] = {}
            for system, mode in zip(SYSTEMS[:3], ("hybrid", "bm25", "vector"), strict=True):
                t1 = time.perf_counter()
                # asked at the question's date: "last Saturday" is the one before it
                hits = mem.search(q.question, scope="q", k=kmax, mode=mode, min_score=0, now=q.question_date)
                rep.latency_ms[system].append((time.perf_counter() - t1) * 1e3)
                rankings[system] = turns_of(hits)
            rankings[SYSTEMS[3]] = rrf([rankings["BM25 turns"], rankings["dense sentences"]])
            # the fusion runs both of its rankings
            rep.latency_ms[SYSTEMS[3]].append(rep.latency_ms[SYSTEMS[1]][-1] + rep.latency_ms[SYSTEMS[2]][-1])
        for system, stored in rankings.items():
            turns, sessions = q.ranked(stored, protocol)
            for level, ranked, relevant, n_items in (
                ("turn", turns, evidence, n_turns),
                ("session", sessions, ev_sessions, n_sessions),
            ):
                for metric, v in retrieval_metrics(ranked, relevant, n_items, ks).items():
                    rep.values[system][level][q.question_type][metric].append(v)
        rep.n_questions += 1
        if progress:
            progress(
                f"[{n}/{len(questions)}] {q.question_id} ({q.question_type}): {len(items)} turns, "
                f"ingest {rep.ingest_s[-1]:.1f} s"
            )
    return rep


def render_longmemeval(rep: LMEReport) -> str:
    """A Markdown report: the headline table, then per question type."""
    k1, k2 = rep.ks[0], rep.ks[-1]
    cols = [
        ("turn", f"recall@{k1}"),
        ("turn", f"recall@{k2}"),
        ("turn", f"recall_all@{k2}"),
        ("turn", f"ndcg_any@{k2}"),
        ("session", f"recall_any@{k1}"),
        ("session", f"recall_all@{k2}"),
        ("session", f"ndcg_any@{k2}"),
    ]
    head = "| system | " + " | ".join(f"{lvl} {m}" for lvl, m in cols) + " | query p50 ms |"
    lines = [
        f"LongMemEval, protocol **{rep.protocol}** ({'user turns only' if rep.protocol == 'user' else 'every turn of both roles'}): "
        f"{rep.n_questions} questions scored, {rep.skipped} skipped (no evidence in the stored turns), "
        f"ingest p50 {statistics.median(rep.ingest_s) if rep.ingest_s else float('nan'):.1f} s per haystack. "
        "sgmem at its shipped defaults (the settings LongMemEval adds, `assistant_weight` and `session_spread`, "
        f"are cross-validated in the benchmarks' ablation part). Source: {rep.path}",
        "",
        head,
        "|" + "---|" * (len(cols) + 2),
    ]
    for s in SYSTEMS:
        lat = statistics.median(rep.latency_ms[s]) if rep.latency_ms.get(s) else float("nan")
        lines.append(f"| {s} | " + " | ".join(f"{rep.mean(s, lvl, m):.1f}" for lvl, m in cols) + f" | {lat:.1f} |")
    lines += ["", f"Per question type, turn recall@{k2} / session recall_any@{k1}:", ""]
    types = [t for t in QUESTION_TYPES if any(rep.values[s]["turn"].get(t) for s in SYSTEMS)]
    lines.append("| system | " + " | ".join(types) + " |")
    lines.append("|" + "---|" * (len(types) + 1))
    for s in SYSTEMS:
        cells = [
            f"{rep.mean(s, 'turn', f'recall@{k2}', t):.1f} / {rep.mean(s, 'session', f'recall_any@{k1}', t):.1f}"
            for t in types
        ]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    counts = {t: len(rep.values[SYSTEMS[0]]["turn"][t][f"recall@{k2}"]) for t in types}
    lines += ["", "Questions per type: " + ", ".join(f"{t} {c}" for t, c in counts.items()) + "."]
    return "\n".join(lines) + "\n"


def report_to_raw(rep: LMEReport) -> dict[str, Any]:
    """The report as JSON-serialisable data (what the benchmark part stores)."""
    return {
        "path": rep.path,
        "protocol": rep.protocol,
        "ks": list(rep.ks),
        "n_questions": rep.n_questions,
        "skipped": rep.skipped,
        "ingest_s": rep.ingest_s,
        "latency_ms": dict(rep.latency_ms),
        "values": {
            s: {lvl: {t: dict(m) for t, m in bt.items()} for lvl, bt in lv.items()} for s, lv in rep.values.items()
        },
    }


def report_from_raw(raw: dict[str, Any]) -> LMEReport:
    """The inverse of :func:`report_to_raw`."""
    rep = LMEReport(raw["protocol"], tuple(raw["ks"]), path=raw.get("path", ""))
    rep.n_questions, rep.skipped, rep.ingest_s = raw["n_questions"], raw["skipped"], list(raw["ingest_s"])
    for s, lat in raw["latency_ms"].items():
        rep.latency_ms[s] = list(lat)
    for s, lv in raw["values"].items():
        for lvl, bt in lv.items():
            for t, m in bt.items():
                for metric, vals in m.items():
                    rep.values[s][lvl][t][metric] = list(vals)
    return rep
