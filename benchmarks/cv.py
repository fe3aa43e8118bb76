"""Cross-validated quality on LoCoMo: every setting tuned on the dev split chosen on five conversations, measured on the sixth.

The benchmark part ``cv`` (``python -m benchmarks --only cv``): nested
leave-one-conversation-out (:mod:`sgmem.eval.cv`) over the hybrid's channel
weights and priors, the graph and pyramid parameters, the memory unit, the
relevance cutoff and the context digest, searched around the shipped values
(the start), then the dialogue-act weights on the echo condition of
:mod:`sgmem.eval.chat`; each axis's verdict per fold says whether it was
chosen, kept on a tie or inert (its channel switched off); with the gate's τ_noop calibrated per fold; against BM25
over turns (the stronger of ``bm25s`` and sgmem's ``mode="bm25"``), dense
sentences and their reciprocal rank fusion (k = 60) on the same questions,
every ratio against the strongest of them.

Evaluations are memoised in ``benchmarks/out/cv-memo.jsonl`` (a rerun only
measures what is new). ``--smoke``: one conversation (its questions' halves
are the folds), a tiny grid.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TITLE = "Cross-validated quality on LoCoMo (nested leave-one-conversation-out)"

#: Why a shipped default differs from the folds' most frequent choice (setting -> reason); rendered in the table.
KEPT_BECAUSE: dict[str, str] = {
    "hybrid.speaker_match": "kept off: it costs adversarial questions (about one speaker, answered by what the "
    "other said; outside the objective) (HybridConfig.speaker_match)",
}
#: Settings measured in-sample beside the shipped defaults and the folds' choice: the defaults before this part's
#: first full run moved ``context_turn_tokens`` from 40 to the folds' choice, 0.
COMPARE: dict[str, dict[str, Any]] = {"defaults before (context_turn_tokens 40)": {"context_turn_tokens": 40}}

_METRICS = ("recall@5", "recall@10", "recall@20")
_CTX = "context whole turns"


def _bm25s(conv: Any) -> Callable[[str, int], list[str]]:
    from benchmarks.baselines import BM25Turns, Turn

    b = BM25Turns()
    b.build([Turn(m["id"], m["name"], m["content"]) for _, _, msgs in conv.sessions for m in msgs])
    return b.search


def run_part(ctx: Any) -> dict[str, Any]:
    """Measure (see the module docstring); JSON-ready raw results."""
    from sgmem.eval.cv import ACT_GRID, SEARCH_GRID, SMOKE_ACT_GRID, SMOKE_GRID, SWEEPS, run_cv
    from sgmem.eval.locomo import load_locomo
    from sgmem.eval.loo import gate_loo

    smoke = bool(getattr(ctx.args, "smoke", False))
    limit = 1 if smoke else getattr(ctx.args, "limit", None)
    max_q = getattr(ctx.args, "max_questions", None) or (6 if smoke else None)
    convs = load_locomo(ctx.locomo, limit)
    emb = ctx.embedder()
    extra = {} if smoke else {"BM25 turns (bm25s)": _bm25s}
    gate = None if len(convs) < 2 else (lambda: gate_loo(str(ctx.locomo), emb, limit=limit))
    raw = run_cv(
        convs,
        emb,
        memo=Path(ctx.out) / ("cv-memo-smoke.jsonl" if smoke else "cv-memo.jsonl"),
        grid=SMOKE_GRID if smoke else SEARCH_GRID,
        act_grid=SMOKE_ACT_GRID if smoke else ACT_GRID,
        sweeps=1 if smoke else SWEEPS,
        digest_grid=(0, 40) if smoke else (0, 20, 40, 80),
        cutoff_grid=(0.2, 0.275) if smoke else (0.15, 0.175, 0.2, 0.225, 0.25, 0.275, 0.3, 0.35),
        relative_grid=(0.0, 0.5) if smoke else (0.0, 0.25, 0.5, 0.75),
        max_questions=max_q,
        extra_baselines=extra,
        gate=gate,
        compare=COMPARE,
        progress=ctx.progress,
    )
    save = getattr(emb, "save", None)
    if callable(save):
        save()
    raw["smoke"] = smoke
    raw["kept_because"] = dict(KEPT_BECAUSE)
    import json

    Path(ctx.out).mkdir(parents=True, exist_ok=True)
    (Path(ctx.out) / ("cv-trace-smoke.json" if smoke else "cv-trace.json")).write_text(
        json.dumps([{"held_out": f["held_out"], "trace": f["trace"]} for f in raw["folds"]], indent=1), "utf-8"
    )
    raw["gaps"] = gaps(raw)
    for f in raw["folds"]:
        f.pop("trace", None)  # kept in the memo run's scratch output, too long for the committed results
    return raw


def gaps(raw: dict[str, Any]) -> dict[str, float | None]:
    """Per searched setting: how much the folds' choice beat the shipped value on the training conversations, in
    points of recall@10, at each fold's last visit of that axis (the others at that fold's values), averaged over
    folds; None when the shipped value is not in the grid."""
    out: dict[str, float | None] = {}
    for ax in (*raw["grid"], *raw.get("act_grid", [])):
        key, shipped = ax["key"], raw["shipped"].get(ax["key"])
        diffs = []
        for f in raw["folds"]:
            last = [t for t in f.get("trace", []) if t["axis"] == key]
            if not last or repr(shipped) not in last[-1]["scores"]:
                continue
            sc = last[-1]["scores"]
            diffs.append(100 * (sc[repr(last[-1]["value"])] - sc[repr(shipped)]))
        out[key] = statistics.fmean(diffs) if diffs else None
    # the digest: whole-turn context evidence on the training conversations, the choice minus the shipped value
    shipped_d = str(raw["shipped"].get("context_turn_tokens"))
    diffs = [
        f["train_context_whole"][str(f["context_turn_tokens"])] - f["train_context_whole"][shipped_d]
        for f in raw["folds"]
        if shipped_d in f["train_context_whole"]
    ]
    out["context_turn_tokens"] = statistics.fmean(diffs) if diffs else None
    return out


# --------------------------------------------------------------- rendering
def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _best_baseline(raw: dict[str, Any], metric: str) -> tuple[str, float]:
    name = max(raw["baselines"], key=lambda n: raw["baselines"][n][metric])
    return name, raw["baselines"][name][metric]


ECHO_LABEL = 'echo recall@10 (every question asked before and answered "I\'m not sure")'


def headline(raw: dict[str, Any]) -> list[tuple[str, float, str, float]]:
    """(metric label, held-out sgmem, strongest baseline, its value) for recall@5/10/20, the context and, with
    the act stage, the echo condition's recall@10."""
    rows = []
    for m in (*_METRICS, _CTX):
        name, v = _best_baseline(raw, m)
        label = f"evidence inside a {raw['budget']:,}-token context, whole turns" if m == _CTX else m
        rows.append((label, raw["held_out"][m], name, v))
    eb = raw.get("echo_baselines") or {}
    if eb and "echo recall@10" in raw["held_out"]:
        name = max(eb, key=lambda n: eb[n])
        rows.append((ECHO_LABEL, raw["held_out"]["echo recall@10"], name, eb[name]))
    return rows


VERDICT_HOW = (
    "Each axis's verdict per fold: the value kept and how it was kept — **chosen** (it scored strictly best on "
    "the training conversations at the axis's last visit), *tie* (other values scored the same: the search keeps "
    "the current value on a tie, so a tie with the shipped start is no evidence for it; the tied values in "
    "brackets) or *inert* (the channel it belongs to is switched off in that fold's choice, e.g. the graph's "
    "parameters at `w_graph = 0`, or no value changed the score)."
)


def _cell(v: dict[str, Any]) -> str:
    if v["verdict"] == "inert":
        return f"inert ({v['inert']})"
    if v["verdict"] == "tie":
        return f"{_fmt(v['chosen'])} *tie* ({', '.join(_fmt(t) for t in v['tied'])})"
    return f"**{_fmt(v['chosen'])}**"


def verdict_table(raw: dict[str, Any]) -> list[str]:
    """Per searched axis and fold: the verdict (chosen / tie / inert), and the counts."""
    folds = [f for f in raw["folds"] if f.get("verdicts")]
    if not folds:
        return []
    axes = [ax["key"] for ax in (*raw["grid"], *raw.get("act_grid", []))]
    out = [
        VERDICT_HOW,
        "",
        "| setting | shipped | " + " | ".join(f["held_out"] for f in folds) + " | chosen / tie / inert |",
        "|---|---|" + "---|" * (len(folds) + 1),
    ]
    for k in axes:
        n = raw.get("verdict_counts", {}).get(k, {})
        out.append(
            f"| `{k}` | {_fmt(raw['shipped'].get(k))} | "
            + " | ".join(_cell(f["verdicts"][k]) for f in folds)
            + f" | {n.get('chosen', 0)} / {n.get('tie', 0)} / {n.get('inert', 0)} |"
        )
    return out


def render_part(raw: dict[str, Any]) -> str:
    """The section's markdown body, from the raw results alone."""
    folds = raw["folds"]
    n_q = raw["questions"]
    unit = "question halves of one conversation (smoke run)" if raw.get("smoke") else "conversations"
    new = bool(raw.get("act_grid")) or any(f.get("verdicts") for f in folds)
    search = (
        "The search starts at the shipped values and tries values around them (channel weights at 0, half, the "
        "shipped value and double; priors at 0, the shipped value and double): coordinate descent over the grid "
        f"below, {raw['sweeps']} sweeps, one axis at a time (ties keep the current value), by evidence "
        "recall@10. Then, on top of each fold's retrieval choice, the dialogue-act weights by the same search on "
        "the *echo* condition (the fold's training conversations with every question asked before and answered "
        '"I\'m not sure", `sgmem.eval.chat.chat_conversation`), what they are for. '
        if new
        else "The search does not start at the shipped defaults: every channel weight starts at 1 (all channels "
        "equal), every prior and optional term at 0 (off), the graph's and pyramid's parameters at their grid's "
        f"centre; coordinate descent over the grid below, {raw['sweeps']} sweeps, one axis at a time (ties keep "
        "the current value), by evidence recall@10. "
    )
    out = [
        f"Every setting tuned on the LoCoMo dev split is chosen inside each fold: for each of the {len(folds)} "
        f"{unit}, on the others only, then measured on it; the held-out values are pooled over the {n_q} "
        "questions of categories 1–4 (question-weighted). "
        + search
        + "Then, on top of each fold's retrieval choice, the relevance cutoff (`min_relevance`) by its own "
        f"objective — the lowest threshold that empties {raw['cutoff']['target']:g} % of the contexts of "
        "unrelated questions asked of the training conversations — and the context digest "
        f"(`context_turn_tokens`) by the evidence inside a {raw['budget']:,}-token context counted as whole "
        "turns. Baselines on the same questions have nothing to tune; every ratio is against the strongest.",
        "",
        "### Held-out figures against the strongest baseline",
        "",
        "| figure (cat 1–4) | sgmem, cross-validated | strongest baseline | baseline | ratio |",
        "|---|---|---|---|---|",
    ]
    for label, v, name, b in headline(raw):
        ratio = f"{v / b:.2f}×" if b else "–"
        out.append(f"| {label} | **{v:.1f}** | {name} | {b:.1f} | {ratio} |")
    frag = raw["held_out"]["context fragments"]
    out += [
        "",
        f"Counted as fragments (a turn counts if any part of it is in the block), the held-out context figure "
        f"is {frag:.1f}.",
        "",
        "Every baseline (same questions; the RRF fuses dense sentences with the stronger BM25 of each "
        "conversation, each ranking as deep as a 1,000-token context needs):",
        "",
        "| baseline | " + " | ".join(_METRICS) + f" | context {raw['budget']:,}, whole turns |",
        "|---|" + "---|" * (len(_METRICS) + 1),
    ]
    for name, vals in raw["baselines"].items():
        out.append(f"| {name} | " + " | ".join(f"{vals[m]:.1f}" for m in (*_METRICS, _CTX)) + " |")
    # the grid
    out += [
        "",
        "### The grid",
        "",
        "| setting | values | start | |",
        "|---|---|---|---|",
    ]
    for ax in (*raw["grid"], *raw.get("act_grid", [])):
        notes = ["ingest-time (one ingestion per value)"] if ax["ingest"] else []
        if ax.get("needs"):
            notes.append(f"inert at `{ax['needs']}` = 0")
        if ax in raw.get("act_grid", []):
            notes.append("act stage, echo condition")
        note = "; ".join(notes)
        out.append(f"| `{ax['key']}` | {', '.join(_fmt(v) for v in ax['values'])} | {_fmt(ax['start'])} | {note} |")
    not_searched = (
        "Not searched: `w_entity` needs the entity layer, off by default; `relative_relevance` is not chosen — "
        "every objective measured here is monotone in it (a lower share keeps more evidence hits and lets more "
        "weak hits follow a relevant one alike); its held-out effect is below."
        if raw.get("act_grid")
        else "Not searched: the dialogue-act weights (`question_weight`, `echo_cosine`, `echo_weight`, "
        "`non_answer_weight`, `reply_weight`) are chosen leave-one-conversation-out by the chat evaluation "
        "(`sgmem eval locomo FILE --chat`), whose echo condition is what they are for; `w_entity` needs the "
        "entity layer, off by default; `relative_relevance` is not chosen — every objective measured here is "
        "monotone in it (a lower share keeps more evidence hits and lets more weak hits follow a relevant one "
        "alike); its held-out effect is below."
    )
    out += [
        f"| `min_relevance` | {', '.join(_fmt(v) for v in raw['cutoff_grid'])} | – | own objective (above) |",
        f"| `context_turn_tokens` | {', '.join(_fmt(v) for v in raw['digest_grid'])} | – | all tried |",
        "",
        not_searched,
        f"Evaluations (one configuration on one conversation): {raw['evaluations']['memoised']} in all, "
        f"{raw['evaluations']['computed']} of them computed by the run above ({raw['seconds'] / 60:.1f} minutes), "
        "the rest read from its memo (`benchmarks/out/cv-memo.jsonl`).",
    ]
    # per fold
    grid_all = [*raw["grid"], *raw.get("act_grid", [])]
    keys = [ax["key"] for ax in grid_all]
    echo_col = any("echo recall@10" in f["held"] for f in folds)
    out += [
        "",
        "### Per-fold choices",
        "",
        "| held out | questions | recall@10 on the others | held-out recall@10 | settings that differ from the "
        "start"
        + (" (chosen strictly; ties and inert axes in the verdict table)" if new else "")
        + " | min_relevance | context_turn_tokens | held-out context, whole turns |"
        + (" held-out echo recall@10 |" if echo_col else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|" if echo_col else ""),
    ]
    start = {ax["key"]: ax["start"] for ax in grid_all}
    for f in folds:
        decided = {k for k, v in f.get("verdicts", {}).items() if v["verdict"] == "chosen"}
        diff = ", ".join(
            f"{k.split('.')[-1]}={_fmt(f['retrieval'][k])}"
            for k in keys
            if f["retrieval"][k] != start[k] and (not new or k in decided)
        )
        echo_cell = (
            f" {100 * statistics.fmean(f['held']['echo recall@10']):.1f} |"
            if echo_col and f["held"].get("echo recall@10")
            else (" – |" if echo_col else "")
        )
        out.append(
            f"| {f['held_out']} | {f['questions']} | {f['train_recall@10']:.1f} | "
            f"{100 * statistics.fmean(f['held']['recall@10']) if f['held']['recall@10'] else float('nan'):.1f} | "
            f"{diff or '(none)'} | {_fmt(f['min_relevance'])} | {f['context_turn_tokens']} | "
            f"{100 * statistics.fmean(f['held'][_CTX]) if f['held'][_CTX] else float('nan'):.1f} |" + echo_cell
        )
    verdict = verdict_table(raw)
    if verdict:
        out += ["", "### Verdicts per setting and fold", "", *verdict]
    # cutoff
    c = raw["cutoff"]
    out += [
        "",
        "### Relevance cutoff, held out",
        "",
        f"Each fold's `min_relevance` (above) measured on its held-out conversation: **{c['emptied']:.1f} %** of "
        f"the unrelated questions' contexts come back empty (target {c['target']:g} %), and of the evidence "
        "turns among each question's first 10 hits, these are kept (answers kept), per relative rule:",
        "",
        "| relative_relevance | " + " | ".join(_fmt(float(r)) for r in c["kept"]) + " |",
        "|---|" + "---|" * len(c["kept"]),
        "| evidence hits kept, held out | " + " | ".join(f"{v:.1f} %" for v in c["kept"].values()) + " |",
    ]
    if "pairs_kept" in c:
        out += [
            "| answer pairs kept (answering turn found among the first 10 hits) | "
            + " | ".join(f"{v:.1f} %" for v in c["pairs_kept"].values())
            + " |",
            "",
            f"The answer pairs are the bundled question → answer pairs ({c['pairs']}, `sgmem/data/answer_pairs.json`: "
            "short, paraphrased, often a reply to the assistant's own question), stored as a chat of their own; no "
            "choice reads them, each fold's cutoff is applied to them under that fold's retrieval settings "
            f"(on average {c['pairs_found']:.1f} answering turns found among the first 10 hits).",
        ]
    out += [
        "",
        f"(The shipped relative rule is {_fmt(c['relative_default'])}.)",
    ]
    # gate
    if raw.get("gate"):
        rows = raw["gate"]
        n = sum(r["candidates"] for r in rows)
        skip = sum(r["skip_held_out"] * r["candidates"] for r in rows) / n if n else float("nan")
        skip_d = sum(r["skip_held_out_default"] * r["candidates"] for r in rows) / n if n else float("nan")
        taus = [r["tau_noop"] for r in rows]
        out += [
            "",
            "### Gate τ_noop, calibrated on the other conversations",
            "",
            "| held out | τ_noop from the others | skipped on held-out | with the shipped τ | candidates |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {r['held_out']} | {r['tau_noop']:.4f} | {100 * r['skip_held_out']:.1f} % | "
            f"{100 * r['skip_held_out_default']:.1f} % | {r['candidates']} |"
            for r in rows
        ]
        out.append(
            f"| **pooled** | {min(taus):.4f}–{max(taus):.4f} (median {statistics.median(taus):.4f}) | "
            f"**{100 * skip:.1f} %** | {100 * skip_d:.1f} % | {n} |"
        )
    # defaults vs choice
    out += [
        "",
        "### Shipped default vs the folds' most frequent choice",
        "",
        "| setting | shipped default | folds' most frequent choice | folds | gain over the shipped value "
        "(recall@10 points, training) | why they differ |" + (" verdicts: chosen / tie / inert |" if new else ""),
        "|---|---|---|---|---|---|" + ("---|" if new else ""),
    ]
    counts = raw.get("verdict_counts", {})
    gap = raw.get("gaps", {})
    why = raw.get("kept_because", {})
    for k, (v, n) in raw["modal"].items():
        shipped = raw["shipped"].get(k)
        same = shipped == v or (
            isinstance(v, (int, float)) and isinstance(shipped, (int, float)) and abs(v - shipped) < 1e-9
        )
        reason = "–" if same else why.get(k, "(no reason recorded)")
        g = gap.get(k)
        if same or (g is None and k not in gap):
            g_txt = "–"
        elif g is None:
            g_txt = "not in the grid"
        else:
            g_txt = f"{g:+.2f}" + (" (context points)" if k == "context_turn_tokens" else "")
        vc = counts.get(k)
        tail = (
            (f" {vc.get('chosen', 0)} / {vc.get('tie', 0)} / {vc.get('inert', 0)} |" if vc else " – |") if new else ""
        )
        if new and vc and not vc.get("chosen") and not same:
            reason = "no fold chose it strictly (ties or inert): no evidence against the shipped value"
        out.append(f"| `{k}` | {_fmt(shipped)} | {_fmt(v)} | {n} of {len(folds)} | {g_txt} | {reason} |" + tail)
    if raw.get("gate"):
        taus = sorted(r["tau_noop"] for r in raw["gate"])
        out.append(
            f"| `gate.tau_noop` | {_fmt(raw['tau_noop_default'])} | {statistics.median(taus):.3f} (median) | "
            f"{len(taus)} calibrations | – | {why.get('gate.tau_noop', '–')} |" + (" – |" if new else "")
        )
    ins = raw["in_sample"]
    out += [
        "",
        "The gain column: at each fold's last visit of the setting (the others at that fold's values), recall@10 "
        "on its training conversations under its choice minus under the shipped value, averaged over folds"
        + (" (the dialogue-act settings: echo recall@10)." if raw.get("act_grid") else "."),
        "",
        f"In-sample (all {unit}, not cross-validated), for comparison:",
        "",
        "| configuration | " + " | ".join(_METRICS) + " | context, whole turns | context, fragments |",
        "|---|" + "---|" * (len(_METRICS) + 2),
    ]
    for name, vals in ins.items():
        out.append(
            f"| {name} | "
            + " | ".join(f"{vals[m]:.1f}" for m in _METRICS)
            + f" | {vals[_CTX]:.1f} | {vals['context fragments']:.1f} |"
        )
    return "\n".join(out)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    """Headline bullets for the Summary."""
    lines = []
    for label, v, name, b in headline(raw):
        if label in ("recall@10", ECHO_LABEL) or label.startswith("evidence inside"):
            ratio = f"{v / b:.2f}×" if b else "–"
            lines.append(
                f"- LoCoMo dev, cat 1–4, {label}: sgmem **{v:.1f}** nested-cross-validated (every tuned setting "
                f"chosen on the other conversations) vs {b:.1f} for {name}, the strongest baseline ({ratio})."
            )
    return lines


if __name__ == "__main__":
    # outside the suite: python -m benchmarks.cv [--smoke] [--limit N]; writes benchmarks/results/cv.json in the
    # suite's record format (part, command, date, commit, environment, wall_s, raw)
    import argparse
    import json
    import subprocess
    import time
    from types import SimpleNamespace

    from benchmarks import env
    from sgmem.embed import default_embedder
    from sgmem.eval import CachingEmbedder

    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(prog="python -m benchmarks.cv")
    p.add_argument("--locomo", default=str(here.parents[1] / "shared" / "data" / "locomo" / "locomo-dev.json"))
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--max-questions", type=int, default=None)
    p.add_argument("--cache", default=str(here / "out" / "cache"))
    p.add_argument("--json", default=str(here / "results" / "cv.json"))
    args = p.parse_args()
    info = env.environment()
    code = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=here, capture_output=True, text=True).stdout
    emb = CachingEmbedder(default_embedder(), args.cache)
    ctx = SimpleNamespace(
        args=args,
        locomo=Path(args.locomo),
        embedder=lambda: emb,
        out=here / "out",
        plots=here / "plots",
        progress=lambda s: print(s, file=sys.stderr, flush=True),
    )
    t0 = time.perf_counter()
    result = run_part(ctx)
    rec = {
        "part": "cv",
        "command": env.command_line("benchmarks.cv"),
        "date": info["date"],
        "commit": code.strip() or "unknown",
        "environment": info,
        "wall_s": round(time.perf_counter() - t0, 1),
        "raw": result,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(render_part(result))
