"""Measure where users are: sgmem at the defaults a user runs, on small memories, against the baselines.

Two sets of small memories (``sgmem eval small``, the ``small`` part of ``python -m benchmarks``):

* the generated personal-assistant chat suite (:mod:`sgmem.eval.suite`) from a wording pool
  (:mod:`sgmem.eval.pool`): ``build`` for the work of ranking, ``report`` only for the reported figure;
* LongMemEval reduced to each question's evidence sessions (:mod:`sgmem.eval.oracle`), in question folds.

Each chat goes into a fresh ``Memory()`` with the default configuration; each question is asked as a user asks
it: ``search(q, scope=, now=)`` at the default ``k`` and cutoff, ``context(q, scope=, now=)`` at the default
budget (through :meth:`sgmem.Memory.context_trace`, which returns the same block and names its turns), ``now``
the moment the question is asked. Per question (:func:`score_probe`):

* ``p1``: the first hit is an answer turn;
* ``ctx``: an answer turn is among the context's turns and, where the question has an ``answer`` string (the
  suite), that string is in the block (a long turn cut to its best sentences may have lost it);
* ``emptied`` (questions the chat does not answer): ``search`` returns nothing and the context is empty;
* ``prefix``: the hits of ``k=3`` are the first three of ``k=10`` (fewer only if ``k=10`` has fewer);
* ``rank``, ``deep_rank``: where the first answer turn is in the default hits, and in a ranking of 100 with
  no cutoff (diagnostics).

The baselines (:mod:`sgmem.eval.small_base`) rank the same turns; their ``p1`` and ``ctx`` are measured on the
same questions (their context: their top turns, whole, in rank order, up to the same budget). They have no
cutoff, so ``emptied`` is sgmem's only. Aggregates (:mod:`sgmem.eval.small_report`) carry 95 % bootstrap
intervals over chats (the suite) or questions (LongMemEval).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from ..embed.base import Embedder
from ..memory import Memory
from .oracle import load_oracle
from .pool import load_pool
from .small_base import BASELINES, BM25_DEFAULT, BM25_VARIANTS, BM25Variant, TurnBaselines
from .suite import Chat, Probe, generate_chats

__all__ = [
    "DEEP",
    "SCOPE",
    "SYSTEMS",
    "default_budget",
    "default_k",
    "measured_with",
    "run_small",
    "score_chat",
    "score_probe",
]

SCOPE = "user"
#: sgmem, then the baselines
SYSTEMS = ("sgmem", *BASELINES)
#: how deep the diagnostic ranking (no cutoff) goes
DEEP = 100
_SNIPPET = 240


def default_k() -> int:
    """The ``k`` of :meth:`sgmem.Memory.search` when a user gives none."""
    return int(inspect.signature(Memory.search).parameters["k"].default)


def default_budget() -> int:
    """The ``budget_tokens`` of :meth:`sgmem.Memory.context` when a user gives none."""
    return int(inspect.signature(Memory.context).parameters["budget_tokens"].default)


def measured_with() -> dict[str, Any]:
    """What every figure is measured at: the defaults a user gets and the BM25 baseline's variant."""
    cfg = Config()
    return {
        "defaults": {
            "k": default_k(),
            "budget_tokens": default_budget(),
            "min_relevance": cfg.min_relevance,
            "relative_relevance": cfg.relative_relevance,
            "assistant_weight": cfg.hybrid.assistant_weight,
        },
        "bm25": BM25_DEFAULT.label,
    }


def _norm(text: str) -> str:
    return " ".join(text.split())


def _first_rank(ranked: Sequence[Iterable[str]], answer: set[str]) -> int | None:
    return next((i for i, ids in enumerate(ranked, start=1) if answer & set(ids)), None)


def _snip(text: str) -> str:
    text = _norm(text)
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def score_probe(
    mem: Memory,
    base: TurnBaselines | None,
    probe: Probe,
    *,
    texts: bool = True,
    contents: dict[str, str] | None = None,
    variants: Sequence[BM25Variant] = (),
) -> dict[str, Any]:
    """One question asked of a filled ``mem`` (scope :data:`SCOPE`) at the defaults, and of the baselines.

    Returns:
        A JSON-ready record (see the module's docstring); with ``texts`` also the question, the expected turn
        (from ``contents``: message id -> text) and the first hit, for reading failures.
    """
    budget = default_budget()
    hits = mem.search(probe.text, scope=SCOPE, now=probe.now)
    short = mem.search(probe.text, scope=SCOPE, k=3, now=probe.now)
    trace = mem.context_trace(probe.text, scope=SCOPE, budget_tokens=budget, now=probe.now)
    ids = [list(h.message_ids) for h in hits]
    rec: dict[str, Any] = {
        "id": probe.id,
        "groups": list(probe.groups),
        "prefix": [list(h.message_ids) for h in short] == ids[:3],
        "hits": len(hits),
    }
    if texts:
        rec["question"] = probe.text
        if hits:
            rec["first"] = {"id": hits[0].message_ids[0], "speaker": hits[0].speaker, "text": _snip(hits[0].text),
                            "relevance": round(hits[0].relevance, 3)}  # fmt: skip
    if probe.unrelated:
        rec["emptied"] = not hits and not trace.text
        return rec
    answer = set(probe.answer_ids)
    in_block = probe.answer is None or _norm(probe.answer) in _norm(trace.text)
    rec["p1"] = {"sgmem": bool(ids) and bool(answer & set(ids[0]))}
    rec["ctx"] = {"sgmem": bool(answer & set(trace.message_ids)) and in_block}
    rec["rank"] = _first_rank(ids, answer)
    deep = mem.search(probe.text, scope=SCOPE, k=DEEP, min_score=0, now=probe.now)
    rec["deep_rank"] = _first_rank([h.message_ids for h in deep], answer)
    if texts and contents is not None:
        rec["expected"] = _snip(contents.get(probe.answer_ids[0], ""))
        rec["answer"] = probe.answer
    if base is not None:
        for name, ranking in base.rankings(probe.text).items():
            rec["p1"][name] = bool(ranking) and ranking[0] in answer
            block, turns = base.context(ranking, budget)
            rec["ctx"][name] = bool(answer & set(turns)) and (
                probe.answer is None or _norm(probe.answer) in _norm(block)
            )
        if variants:
            rec["bm25"] = {v.label: (lambda r: bool(r) and r[0] in answer)(base.bm25(probe.text, v)) for v in variants}
    return rec


def score_chat(
    chat: Chat,
    embedder: Embedder | None = None,
    *,
    config: Config | None = None,
    baselines: bool = True,
    texts: bool = True,
    variant: BM25Variant = BM25_DEFAULT,
    variants: Sequence[BM25Variant] = (),
) -> list[dict[str, Any]]:
    """Store ``chat`` in a fresh in-memory ``Memory`` (``config``: default ``Config()``) and score its probes."""
    out = []
    with Memory(embedder=embedder, config=config) as mem:
        for thread, at, msgs in chat.sessions:
            mem.add(msgs, scope=SCOPE, thread=thread, at=at)
        base = TurnBaselines(chat, mem.embedder, variant) if baselines else None
        contents = {str(m["id"]): m["content"] for _, _, m in chat.messages()} if texts else None
        for probe in chat.probes:
            rec = score_probe(mem, base, probe, texts=texts, contents=contents, variants=variants)
            rec["chat"], rec["fold"] = chat.id, chat.fold
            out.append(rec)
    return out


def _score_all(
    chats: Sequence[Chat],
    embedder: Embedder | None,
    label: str,
    progress: Callable[[str], None] | None,
    **kw: Any,
) -> tuple[list[dict[str, Any]], float]:
    records: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for n, chat in enumerate(chats, start=1):
        records += score_chat(chat, embedder, **kw)
        if progress and (n % 10 == 0 or n == len(chats)):
            progress(f"{label}: {n}/{len(chats)} chats scored ({time.perf_counter() - t0:.0f} s)")
        save = getattr(embedder, "save", None)
        if callable(save) and n % 50 == 0:
            save()  # a long first run keeps its vectors if interrupted
    return records, time.perf_counter() - t0


def run_small(
    *,
    pool: str | Path | None = "build",
    longmemeval: str | Path | None = None,
    chats: int = 100,
    seed: int = 0,
    folds: Iterable[int] | None = None,
    embedder: Embedder | None = None,
    texts: bool | None = None,
    bm25_variants: bool = False,
    lme_limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score the suite on ``pool`` and/or LongMemEval reduced to its evidence sessions; the raw results.

    Args:
        pool: ``"build"``, ``"report"``, a pool file, or ``None`` to skip the suite.
        longmemeval: a LongMemEval file, or ``None`` to skip it.
        chats: how many chats the suite composes (before ``folds``).
        seed: the suite's seed.
        folds: score only the chats and questions of these folds (of 5); ``None``: all.
        texts: keep the questions' and hits' texts in the records (to read failures); ``None``: for every pool
            but ``report``, whose wordings stay unread, and not for LongMemEval (its data).
        bm25_variants: also score every ``bm25s`` variant's first hit (:data:`BM25_VARIANTS`).
        lme_limit: only the first N LongMemEval questions (quick runs).

    Returns:
        JSON-ready raw results: the defaults measured at, and per set its records (:func:`score_probe`)
        and what was left out; :func:`sgmem.eval.small_report.render_small` writes the report from them.
    """
    fold_list = sorted(set(folds)) if folds is not None else None
    variants = BM25_VARIANTS if bm25_variants else ()
    raw: dict[str, Any] = {**measured_with(), "folds": fold_list}
    if pool is not None:
        p = load_pool(pool)
        keep_texts = texts if texts is not None else p.name != "report"
        suite = [c for c in generate_chats(p, chats, seed) if fold_list is None or c.fold in fold_list]
        if progress:
            progress(f"suite: pool {p.name} ({p.source}, {p.sha}), {len(suite)} chats, seed {seed}")
        records, secs = _score_all(suite, embedder, "suite", progress, texts=keep_texts, variants=variants)
        raw["suite"] = {
            "pool": p.name,
            "source": p.source,
            "sha": p.sha,
            "about": p.about,
            "chats": len(suite),
            "composed": chats,
            "seed": seed,
            "turns": sorted(c.n_turns for c in suite),
            "texts": keep_texts,
            "seconds": round(secs, 1),
            "records": records,
        }
    if longmemeval is not None:
        red = load_oracle(longmemeval, fold_list, lme_limit)
        if progress:
            progress(f"longmemeval: {len(red.chats)} questions reduced to their evidence sessions")
        # the benchmark's texts stay out of the results (they are its data), unless asked for
        records, secs = _score_all(red.chats, embedder, "longmemeval", progress, texts=bool(texts), variants=variants)
        raw["longmemeval"] = {
            "path": red.path,
            "questions": len(red.chats),
            "abstention": red.abstention,
            "no_evidence": red.no_evidence,
            "other_folds": red.other_folds,
            "turns": sorted(c.n_turns for c in red.chats),
            "seconds": round(secs, 1),
            "records": records,
        }
    return raw
