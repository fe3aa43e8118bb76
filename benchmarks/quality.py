"""Quality on LoCoMo: evidence recall of every sgmem mode against the memories users pick instead.

All systems run in one process over the same turns with the same embedder:

* every sgmem retrieval mode (``sgmem.MODES``), one in-memory store per
  conversation (the ingestion of :mod:`sgmem.eval.locomo`: one thread per
  session, the session's date, speaker names kept);
* the baselines of :mod:`benchmarks.baselines` (BM25, LangChain
  ``InMemoryVectorStore``, LlamaIndex ``VectorStoreIndex``), over the same turns;
* reciprocal rank fusion (k = 60, :func:`sgmem.eval.chat.rrf`) of BM25 over
  turns and dense search over sentences (sgmem's ``bm25`` and ``vector``
  modes, no relevance cutoff, 100 deep): the strongest simple hybrid a user
  could assemble from the same parts.

Metrics (the definitions of ``sgmem eval locomo``):

* evidence recall@k — the share of a question's evidence turns among the
  first k distinct turns a system returns, per LoCoMo category;
* recall within a context budget — the share of evidence turns present in
  the prompt block. For sgmem that is ``Memory.context(..., budget_tokens=B)``;
  for a baseline, its ranked turns packed whole, best first, by the same
  renderer (``sgmem.context.fit``: dated, speaker-labelled, exact cl100k
  count ≤ B) — what a user would do with a retriever's output. Counted two
  ways for every system (``sgmem.eval.locomo.context_evidence``): *fragments*
  (a turn counts if any part of it is in the block — sgmem's digest keeps a
  long turn's sentences nearest the query) and *whole turns* (only if its
  full text is), the like-for-like comparison with whole-turn packing.

Ratios divide by the strongest baseline at that cut-off or budget, named in
the report: the best of every baseline above and sgmem's own ``mode="bm25"``
(same library as ``bm25s``, sgmem's analyser, turn texts without the
speaker's name), so no ratio leans on a weaker baseline.

The ``quality`` part of ``python -m benchmarks`` (:func:`run_part`); alone::

    python -m benchmarks --only quality --limit 2
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.baselines import BASELINES, Baseline, Turn, make_baselines

__all__ = [
    "BUDGETS",
    "KS",
    "RRF_NAME",
    "TITLE",
    "QualityRun",
    "Scores",
    "SystemResult",
    "default_locomo_path",
    "plot",
    "reference",
    "render",
    "render_part",
    "run_part",
    "run_quality",
    "summary_lines",
]

# the entity layer is opt-in (Config.entities) and not part of this comparison
def _modes() -> tuple[str, ...]:
    import sgmem

    return tuple(m for m in sgmem.MODES if m != "entity")


KS = (5, 10, 20)
BM25_MODE = "sgmem bm25"  # sgmem's own BM25 mode: a baseline for the ratios too
BUDGETS = (500, 1000, 2000, 4000)
CATS = (1, 2, 3, 4)
RRF_K = 60  # the constant of Cormack et al. (2009), "Reciprocal rank fusion outperforms Condorcet", eq. 1
RRF_DEPTH = 100  # how deep each ranking goes before fusion (as sgmem.eval.chat)
RRF_NAME = "RRF(BM25 turns, dense sentences), k = 60"


def default_locomo_path() -> Path:
    """``../shared/data/locomo/locomo-dev.json`` next to the repository (may not exist)."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"


@dataclass
class SystemResult:
    """Per-question scores of one system."""

    name: str
    kind: str  # "sgmem" or "baseline"
    recall: dict[int, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    ctx: dict[int, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    ctx_whole: dict[int, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    ctx_tokens: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    index_s: float = 0.0

    def mean(self, k: int, cats: Sequence[int] = CATS) -> float:
        vals = [v for c in cats for v in self.recall[k][c]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")

    def ctx_mean(self, budget: int, cats: Sequence[int] = CATS, whole: bool = False) -> float:
        vals = [v for c in cats for v in (self.ctx_whole if whole else self.ctx)[budget][c]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")

    @property
    def is_reference(self) -> bool:
        """A system ratios may divide by: every baseline, and sgmem's plain BM25 mode (the stronger BM25 counts)."""
        return self.kind == "baseline" or self.name == BM25_MODE


@dataclass
class QualityRun:
    """Everything one quality run measured."""

    path: str
    conversations: int
    questions: int
    turns: int
    ks: tuple[int, ...]
    budgets: tuple[int, ...]
    systems: list[SystemResult]
    seconds: float

    def system(self, name: str) -> SystemResult:
        return next(s for s in self.systems if s.name == name)

    def raw(self) -> dict[str, Any]:
        """JSON-serialisable: per system, category and cut-off the sum of per-question scores and their count."""

        def acc(d: dict[int, dict[int, list[float]]]) -> dict[str, dict[str, list[float]]]:
            return {str(x): {str(c): [round(sum(v), 6), len(v)] for c, v in sorted(d[x].items())} for x in sorted(d)}

        return {
            "path": Path(self.path).name, "conversations": self.conversations, "questions": self.questions,
            "turns": self.turns, "ks": list(self.ks), "budgets": list(self.budgets), "seconds": round(self.seconds, 1),
            "systems": [
                {"name": s.name, "kind": s.kind, "index_s": round(s.index_s, 2), "recall": acc(s.recall),
                 "ctx": acc(s.ctx), "ctx_whole": acc(s.ctx_whole),
                 "ctx_tokens": {str(b): round(statistics.fmean(v), 1) for b, v in sorted(s.ctx_tokens.items()) if v}}
                for s in self.systems
            ],
        }


@dataclass
class Scores:
    """One system's stored scores (:meth:`QualityRun.raw`): means over questions, per category and cut-off."""

    name: str
    kind: str
    index_s: float
    recall: dict[int, dict[int, tuple[float, int]]]
    ctx: dict[int, dict[int, tuple[float, int]]]
    ctx_whole: dict[int, dict[int, tuple[float, int]]]
    ctx_tokens: dict[int, float]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Scores:
        def acc(d: dict[str, dict[str, list[float]]]) -> dict[int, dict[int, tuple[float, int]]]:
            return {int(x): {int(c): (float(v[0]), int(v[1])) for c, v in per.items()} for x, per in d.items()}

        return cls(raw["name"], raw["kind"], raw["index_s"], acc(raw["recall"]), acc(raw["ctx"]),
                   acc(raw["ctx_whole"]), {int(b): float(t) for b, t in raw["ctx_tokens"].items()})

    @staticmethod
    def _mean(per: dict[int, tuple[float, int]], cats: Sequence[int]) -> float:
        total = sum(per[c][0] for c in cats if c in per)
        n = sum(per[c][1] for c in cats if c in per)
        return 100.0 * total / n if n else float("nan")

    def mean(self, k: int, cats: Sequence[int] = CATS) -> float:
        return self._mean(self.recall.get(k, {}), cats)

    def ctx_mean(self, budget: int, cats: Sequence[int] = CATS, whole: bool = False) -> float:
        return self._mean((self.ctx_whole if whole else self.ctx).get(budget, {}), cats)

    @property
    def is_reference(self) -> bool:
        """A system ratios may divide by: every baseline, and sgmem's plain BM25 mode (the stronger BM25 counts)."""
        return self.kind == "baseline" or self.name == BM25_MODE


def _turns_of(hits: Sequence[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for h in hits:
        for mid in h.message_ids:
            seen.setdefault(mid, None)
    return list(seen)


def _score(res: SystemResult, ranked: list[str], evidence: set[str], category: int, ks: Sequence[int]) -> None:
    for k in ks:
        res.recall[k][category].append(len(evidence & set(ranked[:k])) / len(evidence))


def _score_ranked(res: Any, ranked: Any, q: Any, ev: Any, ks: Any, budgets: Any, info: Any, turn_text: Any) -> None:
    """A baseline's ranked turns: recall@k, and the evidence in each budget's block of those turns packed whole."""
    from sgmem.eval.locomo import context_evidence
    from sgmem.text.tokens import count_tokens

    _score(res, ranked, ev, q.category, ks)
    for b in budgets:
        text, ids = _pack(ranked, info, b)
        frag, whole = context_evidence(text, ids, ev, turn_text)
        res.ctx[b][q.category].append(frag)
        res.ctx_whole[b][q.category].append(whole)
        res.ctx_tokens[b].append(count_tokens(text))


def _pack(ranked: list[str], turns: dict[str, tuple[int, Any, str, str, str]], budget: int) -> tuple[str, list[str]]:
    """A baseline's ranked turns, whole, in sgmem's renderer within ``budget`` tokens."""
    from sgmem.context import ContextTurn, fit

    cands = []
    for tid in ranked:
        row, at, thread, speaker, text = turns[tid]
        cands.append(ContextTurn(row, at, thread, speaker, text))
    text, chosen = fit(cands, budget)
    by_row = {turns[t][0]: t for t in ranked}
    return text, [by_row[c.key] for c in chosen]


def _rrf_ranking(mem: Any, question: str, scope: str, depth: int) -> list[str]:
    """Turn ids by reciprocal rank fusion of BM25 turns and dense sentences (no relevance cutoff, ``depth`` deep)."""
    from sgmem.eval.chat import rrf

    rankings = [_turns_of(mem.search(question, scope=scope, k=depth, mode=m, min_score=0)) for m in ("bm25", "vector")]
    return rrf(rankings, RRF_K)


def run_quality(
    path: str | Path,
    embedder: Any,
    *,
    modes: Sequence[str] | None = None,
    baselines: Sequence[str] = BASELINES,
    rrf: bool = True,
    ks: Sequence[int] = KS,
    budgets: Sequence[int] = BUDGETS,
    limit: int | None = None,
    max_questions: int | None = None,
    only: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> QualityRun:
    """Run every system over the LoCoMo file at ``path``.

    Args:
        embedder: the one embedder every system uses (e.g. a
            :class:`sgmem.eval.CachingEmbedder` over MiniLM).
        modes: sgmem modes (default: all of ``sgmem.MODES``).
        baselines: keys of :data:`benchmarks.baselines.BASELINES`.
        rrf: also measure the reciprocal rank fusion of BM25 turns and dense
            sentences (:data:`RRF_NAME`).
        limit: only the first ``limit`` conversations.
        max_questions: only the first ``max_questions`` questions of each
            conversation (smoke runs).
        only: only the conversations with these sample ids.
    """
    import sgmem
    from sgmem.eval.locomo import context_evidence, load_locomo
    from sgmem.text.tokens import count_tokens

    t_start = time.perf_counter()
    modes = tuple(modes or _modes())
    convs = [c for c in load_locomo(path, limit) if only is None or c.sample_id in only]
    others: list[Baseline] = make_baselines(embedder, baselines)
    mine = [SystemResult(f"sgmem {m}", "sgmem") for m in modes]
    theirs = [SystemResult(b.name, "baseline") for b in others]
    fused = [SystemResult(RRF_NAME, "baseline")] if rrf else []
    systems = mine + theirs + fused
    kmax = max(ks)
    n_q = 0
    for conv in convs:
        questions = conv.questions[:max_questions]
        turns: list[Turn] = []
        info: dict[str, tuple[int, Any, str, str, str]] = {}
        turn_text: dict[str, str] = {}
        for key, at, msgs in conv.sessions:
            for m in msgs:
                info[m["id"]] = (len(info), at, key, m["name"], m["content"])
                turn_text[m["id"]] = f"{m['name']}: {m['content']}"
                turns.append(Turn(m["id"], m["name"], m["content"]))
        with sgmem.Memory(embedder=embedder) as mem:
            t0 = time.perf_counter()
            for key, at, msgs in conv.sessions:
                mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
            for res in mine:
                res.index_s += time.perf_counter() - t0
            for res, base in zip(theirs, others, strict=True):
                t0 = time.perf_counter()
                base.build(turns)
                res.index_s += time.perf_counter() - t0
            if progress:
                progress(f"{conv.sample_id}: {conv.n_turns} turns indexed, {len(questions)} questions")
            for q in questions:
                n_q += 1
                ev = set(q.evidence)
                for res, mode in zip(mine, modes, strict=True):
                    _score(res, _turns_of(mem.search(q.question, scope=conv.sample_id, k=kmax, mode=mode)), ev, q.category, ks)
                    for b in budgets:
                        text, ids = mem._context_with_ids(q.question, scope=conv.sample_id, budget_tokens=b, mode=mode)
                        frag, whole = context_evidence(text, ids, ev, turn_text)
                        res.ctx[b][q.category].append(frag)
                        res.ctx_whole[b][q.category].append(whole)
                        res.ctx_tokens[b].append(count_tokens(text))
                for res, base in zip(theirs, others, strict=True):
                    # enough ranked turns to fill the largest budget
                    depth = min(len(turns), max(kmax, max(budgets) // 8))
                    _score_ranked(res, base.search(q.question, depth), q, ev, ks, budgets, info, turn_text)
                for res in fused:
                    depth = min(len(turns), max(RRF_DEPTH, kmax, max(budgets) // 8))
                    ranked = _rrf_ranking(mem, q.question, conv.sample_id, depth)
                    _score_ranked(res, ranked, q, ev, ks, budgets, info, turn_text)
    save = getattr(embedder, "save", None)
    if callable(save):
        save()
    return QualityRun(
        str(path), len(convs), n_q, sum(c.n_turns for c in convs), tuple(ks), tuple(budgets), systems,
        time.perf_counter() - t_start,
    )


# ------------------------------------------------------------------ report
def _cell(v: float) -> str:
    return f"{v:.1f}" if v == v else "–"


def reference(run: Any, value: Callable[[Any], float]) -> tuple[str, float]:
    """The strongest baseline by ``value`` among ``run.systems`` (sgmem's own BM25 mode included): (name, value)."""
    base = [(s.name, value(s)) for s in run.systems if s.is_reference]
    base = [b for b in base if b[1] == b[1]]
    return max(base, key=lambda t: t[1]) if base else ("", float("nan"))


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b and b == b and a == a else "–"


@dataclass
class _Stored:
    systems: list[Scores]
    ks: tuple[int, ...] = KS
    budgets: tuple[int, ...] = BUDGETS


def merge_raw(raws: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One :meth:`QualityRun.raw` from the raws of disjoint conversation sets (sums and counts add up)."""
    first = raws[0]
    out = {**first, "conversations": sum(r["conversations"] for r in raws),
           "questions": sum(r["questions"] for r in raws), "turns": sum(r["turns"] for r in raws),
           "seconds": round(max(r["seconds"] for r in raws), 1), "systems": []}
    for i, sys0 in enumerate(first["systems"]):
        merged: dict[str, Any] = {"name": sys0["name"], "kind": sys0["kind"],
                                  "index_s": round(sum(r["systems"][i]["index_s"] for r in raws), 2)}
        for key in ("recall", "ctx", "ctx_whole"):
            acc: dict[str, dict[str, list[float]]] = {}
            for r in raws:
                for x, per in r["systems"][i][key].items():
                    for c, (total, n) in per.items():
                        cell = acc.setdefault(x, {}).setdefault(c, [0.0, 0])
                        cell[0] = round(cell[0] + total, 6)
                        cell[1] += n
            merged[key] = {x: dict(sorted(per.items(), key=lambda t: int(t[0]))) for x, per in
                           sorted(acc.items(), key=lambda t: int(t[0]))}
        tokens: dict[str, float] = {}
        for b in sys0["ctx_tokens"]:
            w = [(r["systems"][i]["ctx_tokens"][b], r["questions"]) for r in raws if b in r["systems"][i]["ctx_tokens"]]
            tokens[b] = round(sum(t * n for t, n in w) / max(sum(n for _, n in w), 1), 1)
        merged["ctx_tokens"] = tokens
        out["systems"].append(merged)
    return out


def _worker(path: str, cache: str, sample_id: str, max_questions: int | None) -> dict[str, Any]:
    """One conversation in a process of its own (the shared embedding cache is read, not written)."""
    from sgmem.embed import default_embedder
    from sgmem.eval import CachingEmbedder

    emb = CachingEmbedder(default_embedder(), cache)
    emb.save = lambda: None  # type: ignore[method-assign]  # the parent owns the cache file
    return run_quality(path, emb, max_questions=max_questions, only=[sample_id]).raw()


def render(raw: dict[str, Any]) -> str:
    """Markdown from :meth:`QualityRun.raw`: recall@k per category and system, evidence inside a context budget,
    each ratio to the strongest baseline at the same k or budget, named under each table."""
    from sgmem.eval.locomo import CATEGORY_NAMES

    run = _Stored([Scores.of(s) for s in raw["systems"]])
    ks, budgets = raw["ks"], raw["budgets"]
    n_conv = raw["conversations"]
    lines = [
        f"LoCoMo file `{raw['path']}`: {n_conv} conversation{'s' if n_conv != 1 else ''}, {raw['questions']:,} "
        f"questions with evidence, {raw['turns']:,} turns. Every system indexes the same turns with the same "
        "embedder (MiniLM). **In-sample**: sgmem's defaults were tuned on these conversations (the "
        "cross-validated figures are in their own section). Recall in % (cat 1–4 = categories 1–4 pooled; "
        "adversarial questions (5) have evidence too and are reported apart). Ratio = the system's cat 1–4 "
        "figure ÷ the strongest baseline's at the same k or budget, named under each table.",
        "",
        "### Evidence recall@k",
        "",
        "Share of a question's evidence turns among the first k distinct turns a system returns.",
        "",
        "| system | k | " + " | ".join(CATEGORY_NAMES[c] for c in CATS) + " | **cat 1–4** | ratio | adversarial (5) |",
        "|---|---|" + "---|" * (len(CATS) + 3),
    ]
    refs = []
    for k in ks:
        name, best = reference(run, partial(Scores.mean, k=k))
        refs.append(f"k = {k}: {name} ({best:.1f})")
        for s in run.systems:
            per = [_cell(s.mean(k, (c,))) for c in CATS]
            lines.append(
                f"| {s.name} | {k} | " + " | ".join(per) + f" | **{_cell(s.mean(k))}** | {_ratio(s.mean(k), best)} | "
                f"{_cell(s.mean(k, (5,)))} |"
            )
    lines += ["", "Ratios divide by " + "; ".join(refs) + "."]
    b_ref = 1000 if 1000 in budgets else budgets[min(1, len(budgets) - 1)]
    for whole in (True, False):
        how = "whole turns" if whole else "fragments"
        lines += [
            "",
            f"### Evidence inside a context budget, counting {how}",
            "",
            (
                "Share of evidence turns (cat 1–4) whose **full text** is in the prompt block: sgmem's "
                "`Memory.context(budget_tokens=B)`, a baseline's ranked turns packed whole, best first, by the same "
                "renderer (dated, speaker-labelled, exact cl100k count ≤ B). sgmem's digest cuts a turn over "
                "`context_turn_tokens` to its sentences nearest the query, which then does not count here"
                if whole
                else "Share of evidence turns (cat 1–4) **any part** of which is in the prompt block (a digest of "
                "the turn, or the source of a generated memory, counts)"
            )
            + "; in brackets the mean tokens used.",
            "",
            "| system | " + " | ".join(f"{b:,} tokens" for b in budgets) + f" | ratio at {b_ref:,} |",
            "|---|" + "---|" * (len(budgets) + 1),
        ]
        ref_name, best_ctx = reference(run, partial(Scores.ctx_mean, budget=b_ref, whole=whole))
        for s in run.systems:
            cells = [
                f"{_cell(s.ctx_mean(b, whole=whole))} ({s.ctx_tokens[b]:.0f})" if b in s.ctx_tokens else "–"
                for b in budgets
            ]
            lines.append(
                f"| {s.name} | " + " | ".join(cells) + f" | {_ratio(s.ctx_mean(b_ref, whole=whole), best_ctx)} |"
            )
        lines += ["", f"Ratio at {b_ref:,} tokens ÷ {ref_name} ({best_ctx:.1f}), counting {how}."]
    sg = next((s for s in run.systems if s.kind == "sgmem"), None)
    parts = [f"sgmem ingest (shared by its modes) {sg.index_s:.1f}"] if sg else []
    parts += [f"{s.name} {s.index_s:.1f}" for s in run.systems if s.kind == "baseline" and s.name != RRF_NAME]
    lines += ["", "Indexing time (s, all conversations): " + ", ".join(parts)
              + " (the fusion reuses sgmem's index). Indicative only: vectors may come from the embedding cache."]
    return "\n".join(lines)


def plot(run: Any, directory: Path) -> list[Path]:
    """``quality_recall.png`` (recall@k, cat 1–4) and ``quality_context.png`` (recall vs budget)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    out = []
    fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=100)
    width = 0.8 / max(len(run.systems), 1)
    for i, s in enumerate(run.systems):
        xs = [j + i * width for j in range(len(run.ks))]
        ax.bar(xs, [s.mean(k) for k in run.ks], width, label=s.name, hatch="" if s.kind == "sgmem" else "//")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(run.ks))], [f"recall@{k}" for k in run.ks])
    ax.set_ylabel("evidence recall, cat 1–4 (%)")
    ax.set_ylim(0, 100)
    ax.set_title("LoCoMo evidence recall (same turns, same embedder)")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    path = directory / "quality_recall.png"
    fig.savefig(path)
    plt.close(fig)
    out.append(path)

    fig, ax = plt.subplots(figsize=(6.5, 3.6), dpi=100)
    for s in run.systems:
        ax.plot(run.budgets, [s.ctx_mean(b, whole=True) for b in run.budgets], marker="o" if s.kind == "sgmem" else "s",
                linestyle="-" if s.kind == "sgmem" else "--", label=s.name)
    ax.set_xscale("log")
    ax.set_xticks(list(run.budgets), [f"{b:,}" for b in run.budgets])
    ax.set_xlabel("context budget (tokens)")
    ax.set_ylabel("evidence inside, whole turns, cat 1–4 (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Evidence inside the prompt block (whole turns)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = directory / "quality_context.png"
    fig.savefig(path)
    plt.close(fig)
    out.append(path)
    return out


# ------------------------------------------------------------------ the part
TITLE = "Quality: LoCoMo evidence recall, every system on the same turns"


def run_part(ctx: Any) -> dict[str, Any]:
    """Every sgmem mode and every baseline over the LoCoMo file (``--workers`` conversations at a time); the plots."""
    if not ctx.locomo.exists():
        return {"missing": str(ctx.locomo)}
    workers = getattr(ctx.args, "workers", 1) or 1
    if workers <= 1:
        run = run_quality(ctx.locomo, ctx.embedder(), limit=ctx.args.limit, max_questions=ctx.args.max_questions,
                          progress=ctx.progress)
        plot(run, ctx.plots)
        return run.raw()
    from concurrent.futures import ProcessPoolExecutor

    from sgmem.eval.locomo import load_locomo

    ids = [c.sample_id for c in load_locomo(ctx.locomo, ctx.args.limit)]
    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(_worker, str(ctx.locomo), ctx.args.cache, i, ctx.args.max_questions) for i in ids]
        raws = []
        for i, f in zip(ids, futures, strict=True):
            raws.append(f.result())
            ctx.progress(f"quality: {i} measured")
    raw = merge_raw(raws)
    raw["path"] = ctx.locomo.name
    stored = [Scores.of(x) for x in raw["systems"]]
    plot(_Stored(stored, tuple(raw["ks"]), tuple(raw["budgets"])), ctx.plots)
    return raw


def render_part(raw: dict[str, Any]) -> str:
    if "missing" in raw:
        return f"Not run: no LoCoMo file at `{raw['missing']}` (pass `--locomo PATH`)."
    return "\n\n".join([render(raw), "![recall@k](plots/quality_recall.png)\n![context budget](plots/quality_context.png)"])


def summary_lines(raw: dict[str, Any]) -> list[str]:
    if "missing" in raw:
        return []
    run = _Stored([Scores.of(s) for s in raw["systems"]])
    sg = next((s for s in run.systems if s.name == "sgmem hybrid"), None)
    if sg is None:
        return []
    k = 10 if 10 in raw["ks"] else raw["ks"][0]
    name, best = reference(run, partial(Scores.mean, k=k))
    out = [f"- LoCoMo evidence recall@{k} (cat 1–4, in-sample, sgmem's defaults): sgmem hybrid {sg.mean(k):.1f} % vs "
           f"the strongest baseline, {name}, {best:.1f} % — **{_ratio(sg.mean(k), best)}**."]
    b = 1000 if 1000 in raw["budgets"] else raw["budgets"][0]
    name, best = reference(run, partial(Scores.ctx_mean, budget=b, whole=True))
    mine = sg.ctx_mean(b, whole=True)
    frag = sg.ctx_mean(b)
    # with a context digest on, turns cut to their nearest sentences count as fragments only: say so
    why = (f" (sgmem's context digest cuts a long turn to its sentences nearest the query, which this count does not "
           f"credit; counting fragments, {frag:.1f} %)") if frag > mine + 0.05 else ""
    out.append(f"- Evidence inside a {b:,}-token prompt block, whole turns (in-sample, sgmem's defaults): sgmem hybrid "
               f"{mine:.1f} % vs {name} {best:.1f} % — **{_ratio(mine, best)}**{why}.")
    return out
