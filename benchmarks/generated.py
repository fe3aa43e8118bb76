"""Generated memory without an LLM: the evidence inside the default context block with and without it.

The ``generated`` part of ``python -m benchmarks``; alone, ``python -m benchmarks.generated [--lme-per-type 3]``.

With no LLM, sgmem's facts and session summaries are extractive (:mod:`sgmem.derived.extract`): the user's
statements ("the user's own fact sentences"), and a summary made of the ones closest to their session's centroid.
Before, every user sentence of four or more words was a fact (questions, "Do you like cats?", included) and a
summary took the three sentences of either speaker nearest the centroid ("Marco: Busy. Marco: My manager is...
assistant: That's a great commute."). The default context (``Memory.context``, ``DerivedConfig.context_kinds=()``)
holds no generated memory; this part measures, in one run and on the same stores, what putting it in the block
(``context_kinds=("summary", "fact")``, a quarter of the budget) does to the evidence the block holds:

* **none**: the default block;
* **extractive**: the block with today's LLM-free facts and summaries;
* **previous rule**: the block with the rule it replaced (emulated here by patching the two rules back).

Evidence counts a turn inside the block (turns only) and, second figure, also the source turns of the generated
memories in it. LoCoMo dev (conversations, categories 1–4) and LongMemEval small memories (each question's
evidence sessions plus filler sessions up to six, both roles stored: a chat of ~60–120 turns; a stratified subset,
``--lme-per-type`` questions of each type, seed 0) at the default budget (2,000 tokens) and at 1,000. No setting is
fitted on these figures: the rules have no parameter chosen here (four words and three sentences are the paper's),
and the only decision they inform, whether the default block should hold generated memory, is read off LoCoMo dev;
LongMemEval is held out for it.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .env import command_line, environment, render_environment

VARIANTS = ("none", "extractive", "previous rule")
BUDGETS = (2000, 1000)
KINDS = ("summary", "fact")
SHARE = 0.25
LME_SESSIONS = 6


@contextlib.contextmanager
def previous_rule() -> Iterator[None]:
    """The LLM-free rules as they were: every fact-role sentence of 4+ words is a fact; a summary takes the
    sentences of every speaker nearest the session centroid, each with its speaker's label."""
    from sgmem.derived import engine, extract, sessions
    from sgmem.text.lexical import tokenize

    saved = (extract.is_fact_sentence, sessions.is_fact_sentence, sessions._labelled, engine.upsert_summary)
    every_role = ("user", "assistant", "system", "tool")

    def upsert(*args: Any, **kw: Any) -> Any:
        kw["roles"] = every_role
        return saved[3](*args, **kw)

    extract.is_fact_sentence = lambda text, act, n: len(tokenize(text)) >= n  # type: ignore[assignment]
    sessions.is_fact_sentence = lambda text, act, n: True  # type: ignore[assignment]
    sessions._labelled = lambda lines: " ".join(f"{s}: {t}" for s, t in lines)  # type: ignore[assignment]
    engine.upsert_summary = upsert  # type: ignore[assignment]
    try:
        yield
    finally:
        extract.is_fact_sentence, sessions.is_fact_sentence, sessions._labelled, engine.upsert_summary = saved


def _config(variant: str) -> Any:
    import sgmem

    kinds = () if variant == "none" else KINDS
    return sgmem.Config(derived=sgmem.DerivedConfig(context_kinds=kinds, context_share=SHARE))


def _blocks(mem: Any, scope: str, question: str, budget: int, now: Any = None) -> tuple[list[str], list[str], str]:
    """The block's turn ids, its ids with the generated memories' sources, and its text."""
    text, ids = mem._context_with_ids(question, scope=scope, budget_tokens=budget, mode=None, now=now)
    _, turns = mem._context_with_ids(
        question, scope=scope, budget_tokens=budget, mode=None, with_generated=False, now=now
    )
    return turns, ids, text


def _score(evidence: set[str], ids: Sequence[str]) -> float:
    return len(evidence & set(ids)) / len(evidence)


def locomo(convs: Sequence[Any], embedder: Any, progress: Any) -> dict[str, Any]:
    """Evidence in the block per variant and budget over LoCoMo's questions (categories 1–4)."""
    import sgmem

    out: dict[str, Any] = {v: {str(b): {"turns": [], "sources": []} for b in BUDGETS} for v in VARIANTS}
    counts: dict[str, list[int]] = {v: [0, 0] for v in VARIANTS}
    for conv in convs:
        for variant in VARIANTS:
            patch = previous_rule() if variant == "previous rule" else contextlib.nullcontext()
            with patch, sgmem.Memory(embedder=embedder, config=_config(variant)) as mem:
                for key, at, msgs in conv.sessions:
                    mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
                st = mem.stats(conv.sample_id).scopes[0]
                counts[variant][0] += st.facts
                counts[variant][1] += st.summaries
                for q in conv.questions:
                    if q.category == 5:
                        continue
                    ev = set(q.evidence)
                    for b in BUDGETS:
                        turns, ids, _ = _blocks(mem, conv.sample_id, q.question, b)
                        out[variant][str(b)]["turns"].append(_score(ev, turns))
                        out[variant][str(b)]["sources"].append(_score(ev, ids))
        progress(f"generated: LoCoMo {conv.sample_id} done")
    return {"evidence": _means(out), "facts_summaries": counts, "questions": len(out["none"]["2000"]["turns"])}


def longmemeval(questions: Sequence[Any], embedder: Any, progress: Any) -> dict[str, Any]:
    """The same on LongMemEval small memories (both roles stored)."""
    import sgmem
    from sgmem.eval.longmemeval import ingest_haystack

    out: dict[str, Any] = {v: {str(b): {"turns": [], "sources": []} for b in BUDGETS} for v in VARIANTS}
    turns_n: list[int] = []
    counts: dict[str, list[int]] = {v: [0, 0] for v in VARIANTS}
    for q in questions:
        evidence = q.evidence("all")
        if not evidence:
            continue
        items = q.items("all")
        for variant in VARIANTS:
            patch = previous_rule() if variant == "previous rule" else contextlib.nullcontext()
            with patch, sgmem.Memory(embedder=embedder, config=_config(variant)) as mem:
                ingest_haystack(mem, q, "all")
                st = mem.stats("q").scopes[0]
                counts[variant][0] += st.facts
                counts[variant][1] += st.summaries
                if variant == "none":
                    turns_n.append(st.messages)
                for b in BUDGETS:
                    turns, ids, _ = _blocks(mem, "q", q.question, b, now=q.question_date)
                    for key, found in (("turns", turns), ("sources", ids)):
                        got = {items[t][0] for t in found if t in items}
                        out[variant][str(b)][key].append(len(evidence & got) / len(evidence))
        progress(f"generated: LongMemEval {q.question_id} done")
    return {
        "evidence": _means(out),
        "facts_summaries": counts,
        "questions": len(turns_n),
        "turns_mean": statistics.fmean(turns_n) if turns_n else 0.0,
    }


def _means(out: dict[str, Any]) -> dict[str, Any]:
    return {
        v: {b: {k: 100 * statistics.fmean(xs) if xs else 0.0 for k, xs in by.items()} for b, by in per.items()}
        for v, per in out.items()
    }


def run(
    locomo_path: Path,
    lme_path: Path | None,
    per_type: int,
    embedder: Any,
    limit: int | None,
    progress: Any,
    smoke: bool = False,
) -> dict[str, Any]:
    from sgmem.eval.locomo import load_locomo

    res: dict[str, Any] = {"locomo": locomo(load_locomo(locomo_path, limit), embedder, progress)}
    if lme_path is not None and lme_path.exists():
        from sgmem.eval.longmemeval import load_longmemeval

        sessions, first = (2, 1) if smoke else (LME_SESSIONS, None)  # a smoke run: one question, two sessions
        qs = load_longmemeval(lme_path, per_type=per_type, seed=0, max_sessions=sessions, limit=first)
        res["longmemeval"] = longmemeval(qs, embedder, progress)
        res["longmemeval"]["per_type"] = per_type
    return res


TITLE = "Generated memory without an LLM: evidence in the context with and without it"


def _table(name: str, r: dict[str, Any]) -> list[str]:
    lines = [
        f"{name}: {r['questions']} questions"
        + (f", memories of {r['turns_mean']:.0f} turns on average" if r.get("turns_mean") else "")
        + ". Evidence inside the block (%): turns in it / with the source turns of the generated memory in it.",
        "",
        "| generated memory in the block | facts / summaries stored | "
        + " | ".join(f"budget {b}: turns | Δ | with sources" for b in BUDGETS)
        + " |",
        "|---|---|" + "---|---|---|" * len(BUDGETS),
    ]
    base = r["evidence"]["none"]
    labels = {
        "none": "none (the default)",
        "extractive": "facts + summaries, extractive (today's rule)",
        "previous rule": "facts + summaries, the previous rule",
    }
    for v in VARIANTS:
        e = r["evidence"][v]
        f, s = r["facts_summaries"][v]
        cells = [
            f"{e[str(b)]['turns']:.2f} | {e[str(b)]['turns'] - base[str(b)]['turns']:+.2f} | {e[str(b)]['sources']:.2f}"
            for b in BUDGETS
        ]
        lines.append(f"| {labels[v]} | {f} / {s} | " + " | ".join(cells) + " |")
    return lines


def render(res: dict[str, Any]) -> str:
    lines = _table("LoCoMo dev", res["locomo"])
    if "longmemeval" in res:
        lines += [
            "",
            *_table(f"LongMemEval_S small memories ({res['longmemeval']['per_type']} per type)", res["longmemeval"]),
        ]
    return "\n".join(lines)


HOW = (
    "What the LLM-free facts and summaries (the user's statements, extractive) do to the evidence inside "
    "`Memory.context` when they are put in the block (`DerivedConfig.context_kinds`), against the default block "
    "(none) and the rule they replaced (every user sentence of 4+ words a fact, summaries from either speaker), "
    "in one run on the same conversations. Nothing here is fitted; LongMemEval is held out for the one decision "
    "it informs (the default block keeps no generated memory)."
)


def run_part(ctx: Any) -> dict[str, Any]:
    from benchmarks.longmemeval import default_longmemeval_path

    lme = Path(ctx.args.longmemeval) if ctx.args.longmemeval else default_longmemeval_path()
    per_type = 1 if ctx.args.smoke else ctx.args.lme_per_type
    return run(ctx.locomo, lme, per_type, ctx.embedder(), ctx.args.limit, ctx.progress, bool(ctx.args.smoke))


def render_part(raw: dict[str, Any]) -> str:
    return HOW + "\n\n" + render(raw)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    e = raw["locomo"]["evidence"]
    return [
        f"- LLM-free generated memory in the context block (LoCoMo dev, 2,000 tokens): evidence "
        f"{e['extractive']['2000']['turns']:.2f} % with today's extractive facts and summaries, "
        f"{e['previous rule']['2000']['turns']:.2f} % with the previous rule, {e['none']['2000']['turns']:.2f} % "
        "without (the default)."
    ]


def main(argv: list[str] | None = None) -> int:
    from benchmarks.longmemeval import default_longmemeval_path
    from benchmarks.quality import default_locomo_path

    p = argparse.ArgumentParser(prog="python -m benchmarks.generated", description=__doc__.splitlines()[0])
    p.add_argument("--locomo", default=None)
    p.add_argument("--longmemeval", default=None)
    p.add_argument("--lme-per-type", type=int, default=3)
    p.add_argument("--limit", type=int, default=None, help="LoCoMo: only the first N conversations")
    p.add_argument("--cache", default=None, help="embedding cache directory")
    args = p.parse_args(argv)
    from sgmem.embed import default_embedder
    from sgmem.eval import CachingEmbedder

    embedder: Any = default_embedder()
    if args.cache:
        embedder = CachingEmbedder(embedder, args.cache)
    env = environment()
    res = run(
        Path(args.locomo) if args.locomo else default_locomo_path(),
        Path(args.longmemeval) if args.longmemeval else default_longmemeval_path(),
        args.lme_per_type,
        embedder,
        args.limit,
        lambda s: print(s, file=sys.stderr, flush=True),
    )
    if isinstance(embedder, CachingEmbedder):
        embedder.save()
    print(
        "\n".join(
            [f"## {TITLE}", "", render_environment(env, command_line("benchmarks.generated", argv)), "", render(res)]
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
