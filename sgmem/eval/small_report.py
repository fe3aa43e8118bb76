"""Aggregates and the Markdown report of the small-memory evaluation (:mod:`sgmem.eval.small`).

Every figure is a share of questions with a 95 % percentile bootstrap interval that resamples the independent
units (the suite's chats, whose questions share a memory; LongMemEval's questions, one memory each), 2,000
draws, seeded. sgmem's P@1 over the strongest baseline's (the baseline with the highest P@1 on the same
questions) is a ratio of sums, with a paired bootstrap interval (both systems on the same resampled units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "TARGETS",
    "bootstrap_mean",
    "bootstrap_ratio",
    "categories",
    "render_intro",
    "render_lme",
    "render_small",
    "render_suite",
    "summarize",
    "worst_failures",
]

BOOT = 2000
#: the targets the report marks (issue-free wording: what the defaults must reach on held-out questions)
TARGETS = {"ratio": 1.10, "ctx": 0.95, "ctx_assistant": 0.90, "emptied": 0.90}


def _units(units: Sequence[str]) -> tuple[np.ndarray, int]:
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(u, len(index)) for u in units), dtype=np.int64, count=len(units))
    return codes, len(index)


def _draws(n_units: int, boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_units, size=(boot, n_units))


def bootstrap_mean(
    values: Sequence[float], units: Sequence[str], boot: int = BOOT, seed: int = 0
) -> tuple[float, float, float]:
    """The mean of ``values`` and a 95 % interval from resampling their ``units`` (clusters) with replacement."""
    if not values:
        return (math.nan, math.nan, math.nan)
    codes, n = _units(units)
    sums = np.bincount(codes, weights=np.asarray(values, dtype=np.float64), minlength=n)
    counts = np.bincount(codes, minlength=n).astype(np.float64)
    idx = _draws(n, boot, seed)
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(np.mean(values)), float(lo), float(hi)


def bootstrap_ratio(
    a: Sequence[float], b: Sequence[float], units: Sequence[str], boot: int = BOOT, seed: int = 0
) -> tuple[float, float, float]:
    """Σa / Σb and a paired 95 % interval (``a`` and ``b`` are two systems' scores of the same questions)."""
    if not a or sum(b) == 0:
        return (math.nan, math.nan, math.nan)
    codes, n = _units(units)
    sa = np.bincount(codes, weights=np.asarray(a, dtype=np.float64), minlength=n)
    sb = np.bincount(codes, weights=np.asarray(b, dtype=np.float64), minlength=n)
    idx = _draws(n, boot, seed)
    num, den = sa[idx].sum(axis=1), sb[idx].sum(axis=1)
    ratios = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    lo, hi = np.nanpercentile(ratios, [2.5, 97.5])
    return float(sum(a) / sum(b)), float(lo), float(hi)


def categories(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every category the records count in, in report order ("all" first, then by family and name)."""
    seen = {g for r in records for g in r["groups"]}
    order = ("form: ", "type: ", "about: ", "lang: ")
    rank = {g: (next((i for i, p in enumerate(order) if g.startswith(p)), len(order)), g) for g in seen}
    return ["all", *sorted(seen, key=lambda g: rank[g])]


def _in(rec: dict[str, Any], cat: str) -> bool:
    return cat in rec["groups"] or (cat == "all" and "p1" in rec)


def summarize(records: Sequence[dict[str, Any]], boot: int = BOOT, seed: int = 0) -> dict[str, Any]:
    """Per category: the questions, each system's P@1 and answer-in-context (sgmem's with intervals), sgmem's
    unrelated-emptied share; overall: the strongest baseline and sgmem's P@1 ratio to it, the k-prefix count."""
    answerable = [r for r in records if "p1" in r]
    systems = list(answerable[0]["p1"]) if answerable else ["sgmem"]
    out: dict[str, Any] = {"systems": systems, "categories": {}}
    for cat in categories(records):
        rs = [r for r in records if _in(r, cat)]
        units = [r["chat"] for r in rs]
        row: dict[str, Any] = {"n": len(rs)}
        ans = [r for r in rs if "p1" in r]
        if ans:
            au = [r["chat"] for r in ans]
            for metric in ("p1", "ctx"):
                row[metric] = {s: bootstrap_mean([float(r[metric][s]) for r in ans], au, boot, seed) for s in systems}
        unrel = [r for r in rs if "emptied" in r]
        if unrel:
            row["emptied"] = bootstrap_mean(
                [float(r["emptied"]) for r in unrel], [r["chat"] for r in unrel], boot, seed
            )
        row["prefix_broken"] = sum(not r["prefix"] for r in rs)
        row["units"] = len(set(units))
        out["categories"][cat] = row
    if answerable and len(systems) > 1:
        p1 = out["categories"]["all"]["p1"]
        best = max(systems[1:], key=lambda s: p1[s][0])
        units = [r["chat"] for r in answerable]
        out["best"] = best
        out["ratio"] = bootstrap_ratio(
            [float(r["p1"]["sgmem"]) for r in answerable], [float(r["p1"][best]) for r in answerable], units, boot, seed
        )
        ctx = out["categories"]["all"]["ctx"]
        out["best_ctx"] = max(systems[1:], key=lambda s: ctx[s][0])
    out["prefix_broken"] = sum(not r["prefix"] for r in records)
    out["questions"] = len(records)
    return out


def worst_failures(records: Sequence[dict[str, Any]], n: int = 20) -> list[dict[str, Any]]:
    """sgmem's ``n`` worst misses: wrong first hit, worst first (answer outside the context, then the answer turn
    ranked lowest or not at all), then unrelated questions that got hits; only records that kept their texts."""
    missed = [r for r in records if "p1" in r and not r["p1"]["sgmem"] and "question" in r]
    missed.sort(key=lambda r: (r["ctx"]["sgmem"], -(r.get("deep_rank") or 10_000), r["id"]))
    leaked = [r for r in records if r.get("emptied") is False and "question" in r]
    return (missed + leaked)[:n]


def _pct(v: tuple[float, float, float] | None, ci: bool = True) -> str:
    if v is None or math.isnan(v[0]):
        return "–"
    return f"{100 * v[0]:.1f} [{100 * v[1]:.1f}–{100 * v[2]:.1f}]" if ci else f"{100 * v[0]:.1f}"


def _headline(summary: dict[str, Any], assistant_cat: str) -> list[str]:
    cats = summary["categories"]
    allc = cats["all"]
    lines = ["| figure | sgmem (95 % interval) | strongest baseline | target |", "|---|---|---|---|"]
    if "p1" in allc:
        best = summary.get("best")
        ratio = summary.get("ratio")
        base = f"{best} {_pct(allc['p1'][best], False)}" if best else "–"
        lines.append(f"| P@1 ({allc['n']} questions) | **{_pct(allc['p1']['sgmem'])}** | {base} | |")
        if ratio and not math.isnan(ratio[0]):
            lines.append(
                f"| P@1 ÷ strongest baseline | **{ratio[0]:.2f}×** [{ratio[1]:.2f}–{ratio[2]:.2f}] | {best} "
                f"| ≥ {TARGETS['ratio']:.2f}× |"
            )
        bc = summary.get("best_ctx")
        base = f"{bc} {_pct(allc['ctx'][bc], False)}" if bc else "–"
        lines.append(f"| answer inside the default context | **{_pct(allc['ctx']['sgmem'])}** | {base} "
                     f"| ≥ {100 * TARGETS['ctx']:.0f} % |")  # fmt: skip
        if assistant_cat in cats and "ctx" in cats[assistant_cat]:
            row = cats[assistant_cat]
            lines.append(
                f"| … about what the assistant said ({row['n']}) | **{_pct(row['ctx']['sgmem'])}** "
                f"| {bc} {_pct(row['ctx'][bc], False) if bc else '–'} | ≥ {100 * TARGETS['ctx_assistant']:.0f} % |"
            )
    unrel = [r for c, r in cats.items() if "emptied" in r and c.startswith("form: unrelated")]
    if unrel:
        n = sum(r["n"] for r in unrel)
        mean = sum(r["emptied"][0] * r["n"] for r in unrel) / n
        parts = "; ".join(f"{c.split(', ')[-1]} {_pct(r['emptied'])}" for c, r in cats.items()
                          if "emptied" in r and c.startswith("form: unrelated"))  # fmt: skip
        lines.append(f"| unrelated questions emptied ({n}) | **{100 * mean:.1f}** ({parts}) | no cutoff: never "
                     f"| ≥ {100 * TARGETS['emptied']:.0f} % |")  # fmt: skip
    lines.append(
        f"| hits of k=3 not the first three of k=10 | **{summary['prefix_broken']}** of {summary['questions']} | "
        "– | 0 |"
    )
    return lines


def _tables(summary: dict[str, Any], unit: str) -> list[str]:
    systems = summary["systems"]
    cats = summary["categories"]
    out = []
    for metric, title in (("p1", "P@1"), ("ctx", "Answer inside the default context")):
        out += [
            "",
            f"{title} per category, % of questions (sgmem with its 95 % interval over {unit}):",
            "",
            "| category | questions | " + " | ".join(systems) + " |",
            "|---|---|" + "---|" * len(systems),
        ]
        for cat, row in cats.items():
            if metric in row:
                vals = [_pct(row[metric][s], s == "sgmem") for s in systems]
                out.append(f"| {cat} | {row['n']} | " + " | ".join(vals) + " |")
    rows = [(c, r) for c, r in cats.items() if "emptied" in r or r["prefix_broken"]]
    if rows:
        out += [
            "",
            "| category | questions | unrelated emptied (sgmem) | k=3 not a prefix of k=10 |",
            "|---|---|---|---|",
        ]
        out += [f"| {c} | {r['n']} | {_pct(r.get('emptied'))} | {r['prefix_broken']} |" for c, r in rows]
    return out


def _variants(records: Sequence[dict[str, Any]]) -> list[str]:
    rs = [r for r in records if "bm25" in r]
    if not rs:
        return []
    labels = list(rs[0]["bm25"])
    p1 = {v: sum(r["bm25"][v] for r in rs) / len(rs) for v in labels}
    out = ["", f"BM25 variants (`bm25s`), P@1 on these {len(rs)} questions:", "", "| variant | P@1 |", "|---|---|"]
    out += [f"| {v} | {100 * p:.1f} |" for v, p in sorted(p1.items(), key=lambda x: -x[1])]
    return out


def _failures(records: Sequence[dict[str, Any]], n: int) -> list[str]:
    worst = worst_failures(records, n)
    if not worst:
        return []
    out = ["", f"sgmem's {len(worst)} worst failures:", "",
           "| question | expected turn | first hit | answer rank (default / no cutoff) | in context |",
           "|---|---|---|---|---|"]  # fmt: skip

    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    for r in worst:
        first = r.get("first")
        got = f"{first['speaker']}: {first['text']} (rel {first['relevance']})" if first else "nothing"
        if "p1" in r:
            exp = f"{r.get('expected', '')} — answer “{r.get('answer') or '(evidence turn)'}”"
            where = f"{r.get('rank') or '–'} / {r.get('deep_rank') or '–'}"
            ctx = "yes" if r["ctx"]["sgmem"] else "no"
        else:
            exp, where, ctx = "nothing (unrelated)", "–", "–"
        out.append(f"| {cell(r['question'])} | {cell(exp)} | {cell(got)} | {where} | {ctx} |")
    return out


def _fold_table(records: Sequence[dict[str, Any]], best: str | None) -> list[str]:
    folds = sorted({r["fold"] for r in records if "p1" in r})
    if len(folds) < 2:
        return []
    systems = ["sgmem", *([best] if best else [])]
    out = ["", "Per question fold (P@1 / answer inside the context, %):", "",
           "| fold | questions | " + " | ".join(systems) + " |", "|---|---|" + "---|" * len(systems)]  # fmt: skip
    for f in folds:
        rs = [r for r in records if "p1" in r and r["fold"] == f]
        cells = [f"{100 * sum(r['p1'][s] for r in rs) / len(rs):.1f} / {100 * sum(r['ctx'][s] for r in rs) / len(rs):.1f}"
                 for s in systems]  # fmt: skip
        out.append(f"| {f} | {len(rs)} | " + " | ".join(cells) + " |")
    return out


def render_intro(raw: dict[str, Any]) -> str:
    """What every set was measured with: the defaults and the baselines."""
    d = raw["defaults"]
    return (
        f"At the defaults a user runs: `search(q, scope=, now=)` with k={d['k']} and the default relevance cutoff, "
        f"`context(q, scope=, now=)` at its default budget of {d['budget_tokens']} tokens, a fresh `Memory()` per "
        "chat. Baselines rank the same turns with the same embedder: dense sentences (raw sentence texts, a turn by "
        f"its best sentence), BM25 (`bm25s`, {raw['bm25']}), their reciprocal rank fusion (k = 60), and the fusion "
        f"with sgmem's role prior (assistant turns' fused score × {d['assistant_weight']}); their context is their "
        "top turns, whole, in rank order, up to the same budget. Baselines have no cutoff, so they never come back "
        "empty: unrelated-emptied is sgmem's only."
        + (f" Folds scored: {', '.join(map(str, raw['folds']))} of 5." if raw.get("folds") is not None else "")
    )


def render_suite(suite: dict[str, Any], failures: int = 20, title: str = "") -> str:
    """The chat suite's section: headline, per-category tables, BM25 variants, sgmem's worst failures (only for
    records that kept their texts: never the report pool's)."""
    s = summarize(suite["records"])
    turns = suite["turns"]
    heading = title or f"Personal-assistant chat suite, pool `{suite['pool']}`"
    lines = [
        f"### {heading}",
        "",
        f"Pool file `{suite['source']}` (sha256 {suite['sha']}): {suite['about']} {suite['chats']} chats "
        f"(seed {suite['seed']}), {min(turns) if turns else 0}–{max(turns) if turns else 0} turns "
        f"(median {turns[len(turns) // 2] if turns else 0}), {s['questions']} questions; intervals over chats.",
        "",
        *_headline(s, "about: assistant"),
        *_tables(s, "chats"),
        *_variants(suite["records"]),
    ]
    if suite.get("texts") and failures:
        lines += _failures(suite["records"], failures)
    return "\n".join(lines)


def render_lme(lme: dict[str, Any]) -> str:
    """LongMemEval's section: headline, per-category and per-fold tables (no question texts)."""
    s = summarize(lme["records"])
    turns = lme["turns"]
    left = (
        f"{lme['abstention']} abstention questions not scored"
        + (f", {len(lme['no_evidence'])} with no marked evidence turn" if lme["no_evidence"] else "")
        + (f", {lme['other_folds']} in other folds" if lme["other_folds"] else "")
    )
    lines = [
        "### LongMemEval, each question's evidence sessions only",
        "",
        f"`{lme['path']}`: {lme['questions']} questions ({left}), each its own memory of its evidence sessions "
        f"({min(turns) if turns else 0}–{max(turns) if turns else 0} turns, median "
        f"{turns[len(turns) // 2] if turns else 0}), both roles, asked at its date; evidence: the turns marked "
        "`has_answer`; intervals over questions. About what the assistant said: every evidence turn is the "
        "assistant's.",
        "",
        *_headline(s, "about: assistant"),
        *_tables(s, "questions"),
        *_fold_table(lme["records"], s.get("best")),
        *_variants(lme["records"]),
    ]
    return "\n".join(lines)


def render_small(raw: dict[str, Any], failures: int = 20) -> str:
    """The Markdown report of :func:`sgmem.eval.small.run_small`'s raw results (``failures``: how many of sgmem's
    worst misses to list, for a pool whose texts were kept)."""
    parts = [render_intro(raw)]
    if raw.get("suite"):
        parts.append(render_suite(raw["suite"], failures))
    if raw.get("longmemeval"):
        parts.append(render_lme(raw["longmemeval"]))
    return "\n\n".join(parts) + "\n"
