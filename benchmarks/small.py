"""Small memories at the defaults: the ``small`` part of ``python -m benchmarks``.

The measurement is :mod:`sgmem.eval.small` (also ``sgmem eval small``): a user's own chat of 10 to 120 turns,
asked at the defaults (``search``'s ``k`` and cutoff, ``context``'s budget, ``now=`` the question's date),
against dense sentences, BM25, their RRF and the RRF with sgmem's role prior on the same turns. Three sets:
the generated chat suite on the ``report`` wording pool (written independently, used only for this figure),
the same on the ``build`` pool (the one ranking work looks at: in-sample), and LongMemEval reduced to each
question's evidence sessions, every dev question, with a per-fold table for question-fold cross-validation.
The results keep no wording: per question only its categories and outcomes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["TITLE", "render_part", "run_part", "summary_lines"]

TITLE = "Small memories at the defaults: a user's own chat"

HOW = (
    "Each chat is stored in a fresh `Memory()` with the default configuration and asked as a user asks: "
    "`search(q)` and `context(q)` with no other argument than the scope and the question's time. The chat suite "
    "(`sgmem.eval.suite`) composes personal-assistant chats of 10–120 turns over a few dated sessions from a "
    "wording pool: facts of many kinds stated, given as short replies to the assistant's questions, updated, "
    "said by the assistant, said in another language, the user's earlier unanswered questions, the assistant's "
    "questions left unanswered, noise episodes, greetings and thanks, long pasted texts (some ~45,000 "
    "characters); each fact is asked once in paraphrase, and 2–3 questions ask about kinds of facts the chat does "
    "not hold (their context must come back empty). Two pools by different writers: `build`, which ranking "
    "work may look at (in-sample), and `report`, used only for the reported figure. Same code: "
    "`sgmem eval small --pool report --longmemeval`."
)


def _strip(raw: dict[str, Any]) -> dict[str, Any]:
    """Results without texts (question wordings, hit texts): only categories and outcomes are stored."""
    keep = ("id", "chat", "fold", "groups", "prefix", "hits", "p1", "ctx", "emptied", "rank", "deep_rank", "bm25")
    return {**raw, "records": [{k: r[k] for k in keep if k in r} for r in raw["records"]]}


def run_part(ctx: Any) -> dict[str, Any]:
    from sgmem.eval.oracle import default_longmemeval_path
    from sgmem.eval.pool import packaged_pool
    from sgmem.eval.small import measured_with, run_small

    args = ctx.args
    smoke = bool(getattr(args, "smoke", False))
    chats = 1 if smoke else int(getattr(args, "small_chats", None) or 100)
    lme = Path(getattr(args, "longmemeval", None) or default_longmemeval_path())
    raw: dict[str, Any] = {"smoke": smoke, **measured_with(), "folds": None}
    for pool in ("report", "build"):
        if packaged_pool(pool) is None and not smoke:  # never the development test pool under a pool's name
            raw[pool] = {"missing": f"sgmem/data/small_pool_{pool}.json"}
            continue
        ctx.progress(f"small: pool {pool}, {chats} chats")
        out = run_small(pool=pool, chats=chats, embedder=ctx.embedder(), texts=False, progress=ctx.progress)
        raw.update({k: v for k, v in out.items() if k != "suite"})
        raw[pool] = _strip(out["suite"])
    if lme.is_file():
        out = run_small(
            pool=None,
            longmemeval=lme,
            embedder=ctx.embedder(),
            texts=False,
            lme_limit=2 if smoke else None,
            bm25_variants=not smoke,
            progress=ctx.progress,
        )
        raw["longmemeval"] = _strip(out["longmemeval"])
    else:
        raw["longmemeval_missing"] = str(lme)
    return raw


def render_part(raw: dict[str, Any]) -> str:
    from sgmem.eval.small_report import render_intro, render_lme, render_suite

    parts = [HOW, render_intro(raw)]
    for pool, title in (
        ("report", "Chat suite, `report` pool (held out: used only for this figure)"),
        ("build", "Chat suite, `build` pool (in-sample: ranking work looks at it)"),
    ):
        if "missing" in raw.get(pool, {}):
            parts.append(f"### {title}\n\nNot measured: no pool file at `{raw[pool]['missing']}`.")
        elif pool in raw:
            parts.append(render_suite(raw[pool], 0, title))
    if "longmemeval" in raw:
        parts.append(render_lme(raw["longmemeval"]))
    elif "longmemeval_missing" in raw:
        parts.append(f"LongMemEval not measured: no file at `{raw['longmemeval_missing']}`.")
    return "\n\n".join(parts)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    from sgmem.eval.small_report import summarize

    out = []
    for key, label in (("report", "chat suite, report pool"), ("longmemeval", "LongMemEval evidence sessions")):
        if key not in raw or not raw[key].get("records"):
            continue
        s = summarize(raw[key]["records"])
        allc = s["categories"]["all"]
        if "p1" not in allc:
            continue
        best, ratio = s["best"], s["ratio"]
        unrel = [r for c, r in s["categories"].items() if c.startswith("form: unrelated") and "emptied" in r]
        emptied = (
            f", unrelated questions emptied {100 * sum(r['emptied'][0] * r['n'] for r in unrel) / sum(r['n'] for r in unrel):.1f} %"
            if unrel
            else ""
        )
        out.append(
            f"- Small memories at the defaults ({label}, {allc['n']} questions): P@1 "
            f"**{100 * allc['p1']['sgmem'][0]:.1f}** vs {best} {100 * allc['p1'][best][0]:.1f} "
            f"(**{ratio[0]:.2f}×**, 95 % interval {ratio[1]:.2f}–{ratio[2]:.2f}); answer inside the default "
            f"context {100 * allc['ctx']['sgmem'][0]:.1f} %{emptied}; k=3 not a prefix of k=10 for "
            f"{s['prefix_broken']} of {s['questions']}."
        )
    return out
