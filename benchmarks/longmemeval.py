"""Quality on LongMemEval, a user–assistant chat: the ``longmemeval`` part of ``python -m benchmarks``.

The measurement is :mod:`sgmem.eval.longmemeval` (also ``sgmem eval longmemeval FILE``): each question's
haystack (~48 sessions, ~490 turns) in a fresh store, under two protocols — the user's turns only (the
paper's retrieval setting) and every turn of both roles (what a deployed memory stores) — with BM25,
dense sentences and their reciprocal rank fusion ranking the same store in the same run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["TITLE", "default_longmemeval_path", "render_part", "run_part", "summary_lines"]

TITLE = "Quality on LongMemEval: a user and an assistant"

HOW = (
    "LongMemEval_S (Wu et al., ICLR 2025), development portion: a stratified subset of up to `--lme-per-type` "
    "questions of each type (`--lme-seeds`, default 0; several seeds: the union of their draws), abstention "
    "questions skipped. Each question's haystack is ingested into a "
    "fresh in-memory store with its sessions' dates; every system ranks that store's turns with `min_score=0`. "
    "Metrics as LongMemEval's retrieval code computes them, at turn level (`has_answer` turns) and session level. "
    "sgmem runs its shipped defaults, chosen on LoCoMo except the two settings LoCoMo cannot decide alone "
    "(`HybridConfig.assistant_weight`: LoCoMo holds no assistant; `session_spread`), which the ablation part "
    "cross-validates on both benchmarks (its settings section; LongMemEval's question folds held out). "
    "Ingest times leave out embedding when the vectors come from the embedding cache (`--cache`). "
    "Same code: `sgmem eval longmemeval FILE --protocol user|all --per-type N`."
)


def default_longmemeval_path() -> Path:
    """``../shared/data/longmemeval/longmemeval_s_dev.json.gz`` beside the repository."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"


class _RRFBaseline:
    """The strongest baseline as a store of its own: dense vectors of the same speaker-prefixed sentences sgmem
    embeds (the same splitter), BM25 (``bm25s``) over whole turns, fused by reciprocal rank (k = 60)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    @staticmethod
    def sentences(turns: list[tuple[str, str, str]]) -> tuple[list[str], list[int]]:
        from sgmem.text.segment import sentence_spans

        texts, owner = [], []
        for i, (_, role, text) in enumerate(turns):
            for a, b in sentence_spans(text) or ((0, len(text)),):
                texts.append(f"{role}: {text[a:b]}")
                owner.append(i)
        return texts, owner

    def build(self, turns: list[tuple[str, str, str]]) -> None:
        import numpy as np

        from benchmarks.baselines import BM25Turns, Turn

        self.ids = [t for t, _, _ in turns]
        texts, owner = self.sentences(turns)
        self.vecs = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        self.owner = np.asarray(owner)
        self.starts = np.flatnonzero(np.r_[True, self.owner[1:] != self.owner[:-1]])
        self.bm25 = BM25Turns()
        self.bm25.build([Turn(t, role, text) for t, role, text in turns])

    def search(self, query: str, k: int) -> list[str]:
        import numpy as np

        from sgmem.eval.chat import rrf

        cos = self.vecs @ np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        per_turn = np.maximum.reduceat(cos, self.starts)
        order = np.argsort(-per_turn)[:k]
        dense = [self.ids[int(self.owner[self.starts[i]])] for i in order]
        return rrf([self.bm25.search(query, k), dense])[:k]


def cost(
    qs: list[Any], embedder: Any, protocol: str, progress: Any = None, repeats: int = 3, cold: bool = False
) -> dict[str, Any]:
    """Per haystack, both with every vector already in the embedding cache (warmed before the timings): sgmem's
    ingest of the whole chat (``Memory.add`` per session) against the RRF baseline's (:class:`_RRFBaseline`:
    the same sentences embedded, BM25 indexed), and each one's query time (the best of ``repeats``; the query
    vector cached too). Which goes first alternates per haystack. ``cold``: ``embedder`` is the model itself
    (no cache, nothing warmed): every sentence is embedded inside both timings."""
    from sgmem.eval.longmemeval import _stored, ingest_haystack
    from sgmem.memory import Memory
    from sgmem.text.segment import _cached_spans

    rows = []
    for n, q in enumerate(qs):
        turns = [(t, role, text) for _, _, ts in q.sessions for t, role, text, _ in ts if _stored(role, protocol)]
        turns = [t for t in turns if t[2].strip()]
        if not turns:
            continue
        if not cold:
            embedder.embed(_RRFBaseline.sentences(turns)[0] + [q.question])  # warm: both cached

        def sg(q: Any = q) -> tuple[float, float]:
            _cached_spans.cache_clear()
            with Memory(embedder=embedder) as mem:
                t0 = time.perf_counter()
                ingest_haystack(mem, q, protocol)
                ingest = time.perf_counter() - t0
                lat = []
                for _ in range(repeats):
                    t1 = time.perf_counter()
                    mem.search(q.question, scope="q", k=100, min_score=0)
                    lat.append(time.perf_counter() - t1)
            return ingest, 1e3 * min(lat)

        def base(q: Any = q, turns: list[tuple[str, str, str]] = turns) -> tuple[float, float]:
            _cached_spans.cache_clear()
            b = _RRFBaseline(embedder)
            t0 = time.perf_counter()
            b.build(turns)
            ingest = time.perf_counter() - t0
            lat = []
            for _ in range(repeats):
                t1 = time.perf_counter()
                b.search(q.question, 100)
                lat.append(time.perf_counter() - t1)
            return ingest, 1e3 * min(lat)

        if n % 2:
            b_ing, b_ms = base()
            s_ing, s_ms = sg()
        else:
            s_ing, s_ms = sg()
            b_ing, b_ms = base()
        rows.append({"turns": len(turns), "sgmem_ingest_s": s_ing, "base_ingest_s": b_ing,
                     "sgmem_query_ms": s_ms, "base_query_ms": b_ms})  # fmt: skip
        if progress:
            progress(f"longmemeval cost ({protocol}) {q.question_id}: ingest {s_ing:.2f} s vs {b_ing:.2f} s")
    return {"cache": "both cold" if cold else "both cached", "rows": rows}


def run_part(ctx: Any) -> dict[str, Any]:
    from sgmem.eval.longmemeval import evaluate_longmemeval, load_longmemeval, report_to_raw

    args = ctx.args
    path = Path(getattr(args, "longmemeval", None) or default_longmemeval_path())
    if not path.exists():
        return {"missing": str(path)}
    per_type = getattr(args, "lme_per_type", 6)
    smoke = bool(getattr(args, "smoke", False))
    qs = load_longmemeval(
        path,
        per_type=1 if smoke else per_type,
        seed=list(getattr(ctx.args, "lme_seeds", None) or [0]),
        limit=1 if smoke else None,
        max_sessions=3 if smoke else None,
    )
    raw: dict[str, Any] = {
        "path": path.name,
        "per_type": per_type,
        "seeds": list(getattr(args, "lme_seeds", None) or [0]),
        "smoke": smoke,
        "protocols": {},
    }
    for protocol in ("user", "all"):
        ctx.progress(f"longmemeval: protocol {protocol}, {len(qs)} questions")
        rep = evaluate_longmemeval(
            qs, protocol=protocol, embedder=ctx.embedder(), progress=ctx.progress, path=path.name
        )
        raw["protocols"][protocol] = report_to_raw(rep)
    raw["cost"] = {protocol: cost(qs, ctx.embedder(), protocol, ctx.progress) for protocol in ("user", "all")}
    model = getattr(ctx.embedder(), "base", None)  # the model under the embedding cache
    if model is not None and qs:  # one haystack of the whole chat, every sentence embedded by the model for both
        raw["cost"]["all, cold"] = cost(qs[:1], model, "all", ctx.progress, repeats=1, cold=True)
    return raw


def cost_lines(raw: dict[str, Any]) -> list[str]:
    """The cost section: sgmem against the RRF baseline, ingest and query, per protocol."""
    import statistics

    c = raw.get("cost")
    if not c:
        return []
    out = [
        "### Cost against the strongest baseline",
        "",
        "Each haystack ingested by sgmem (`Memory.add` per session: sentences split and embedded, lexical, "
        "graph and pyramid indexes built) and by the RRF baseline (the same speaker-prefixed sentences, same "
        "splitter, embedded; BM25 over turns indexed), embedding included with **both cached** (every vector "
        "in the embedding cache before the timings: the ratio is the indexing work beside the model), which "
        "goes first alternating per haystack; query: the best of three searches of 100 hits, the query vector "
        "cached for both. The *cold* row: one haystack with no cache at all, every sentence and the query "
        "embedded by the model inside both timings. Targets: ingest ≤ 1.2×, query ≤ 2× the baseline.",
        "",
        "| protocol | haystacks | turns (median) | sgmem ingest, total s | baseline ingest, total s | ingest ratio "
        "| sgmem query p50 ms | baseline query p50 ms | query ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for protocol, data in c.items():
        rows = data["rows"]
        if not rows:
            continue
        si = sum(r["sgmem_ingest_s"] for r in rows)
        bi = sum(r["base_ingest_s"] for r in rows)
        sq = statistics.median(r["sgmem_query_ms"] for r in rows)
        bq = statistics.median(r["base_query_ms"] for r in rows)
        label = {"user": "user turns only", "all": "every turn of both roles"}.get(
            protocol, "every turn of both roles, cold: every sentence embedded by the model inside both timings"
        )
        out.append(
            f"| {label} | {len(rows)} | {statistics.median(r['turns'] for r in rows):.0f} | {si:.1f} | {bi:.1f} | "
            f"**{si / bi:.2f}×** | {sq:.1f} | {bq:.1f} | **{sq / bq:.2f}×** |"
        )
    return out


def render_part(raw: dict[str, Any]) -> str:
    from sgmem.eval.longmemeval import render_longmemeval, report_from_raw

    if "missing" in raw:
        return f"Not measured: no LongMemEval file at `{raw['missing']}`.\n"
    parts = [HOW, ""]
    for protocol, rep in raw["protocols"].items():
        parts += [f"### Protocol: {'user turns only' if protocol == 'user' else 'every turn of both roles'}", ""]
        parts.append(render_longmemeval(report_from_raw(rep)))
    parts += cost_lines(raw)
    return "\n".join(parts)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    from sgmem.eval.longmemeval import SYSTEMS, report_from_raw

    if "missing" in raw:
        return []
    out = []
    for protocol, data in raw["protocols"].items():
        rep = report_from_raw(data)
        ours = rep.mean(SYSTEMS[0], "turn", "recall@10")
        base = max(SYSTEMS[1:], key=lambda s: rep.mean(s, "turn", "recall@10"))
        theirs = rep.mean(base, "turn", "recall@10")
        label = "user turns only" if protocol == "user" else "whole chat stored"
        out.append(
            f"- LongMemEval ({label}, {rep.n_questions} questions, one weight chosen on it): turn recall@10 "
            f"{ours:.1f} % vs {base} {theirs:.1f} % ({ours / theirs:.2f}×)"
        )
    return out
