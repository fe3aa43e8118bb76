"""Quality inside a chat: the ``chat`` part of ``python -m benchmarks``.

The measurement is :mod:`sgmem.eval.chat` (also ``sgmem eval locomo FILE --chat``): a deployed agent stores
its whole chat, so a question asked before, an "I'm not sure" reply or a greeting must not crowd out the
turn that answers. Beside it, :mod:`sgmem.eval.answers` (``sgmem eval locomo FILE --cutoffs``): how many
answer-bearing hits each relevance threshold keeps and how many unrelated questions it leaves with an
empty context, the measurement behind ``Config.min_relevance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TITLE", "render_part", "run_part", "summary_lines"]

TITLE = "Quality inside a chat: questions asked before, non-answers, filler"

HOW = (
    "A deployed agent stores its whole chat. In the *echo* condition every evaluation question of a "
    "conversation was asked once before, after the last session, each in a chat of its own, and answered "
    "\"I'm not sure, I don't remember.\"; in *answered* it was answered with the reference answer, and a hit "
    "on that reply counts as finding the answer; *clean* is LoCoMo as published. sgmem's dialogue-act "
    "weights (`HybridConfig.question_weight`, `echo_weight`, `reply_weight`) are chosen "
    "leave-one-conversation-out from the grid below (only they are held out: the rest of the hybrid runs the "
    "shipped defaults, chosen on the same conversations; the cv part holds out every setting, these included, "
    "`echo_cosine` and `non_answer_weight` too); the baselines have nothing to tune. Baselines: BM25 "
    "over turns, dense search over sentences, and their reciprocal rank fusion (k = 60). Same code: "
    "`sgmem eval locomo FILE --chat`."
)

CUTOFF_HOW = (
    "Answer-bearing hits: the answering turn of each question → answer pair of `sgmem/data/answer_pairs.json` "
    "(stored as one chat with greetings and thanks) and LoCoMo's evidence turns, among each question's first "
    "10 hits; unrelated questions: questions no stored turn answers, whose `Memory.context()` should come back "
    "empty. Same code: `sgmem eval locomo FILE --cutoffs`."
)


def _acc(values: dict[str, dict[str, dict[str, list[float]]]]) -> dict[str, Any]:
    return {
        cond: {label: {conv: [round(sum(v), 6), len(v)] for conv, v in per.items()} for label, per in labels.items()}
        for cond, labels in values.items()
    }


def run_part(ctx: Any) -> dict[str, Any]:
    from sgmem.config import MIN_RELEVANCE, Config
    from sgmem.eval.answers import sweep_cutoffs
    from sgmem.eval.chat import evaluate_chat
    from sgmem.eval.locomo import load_locomo

    if not ctx.locomo.exists():
        return {"missing": str(ctx.locomo)}
    convs = load_locomo(ctx.locomo, max(ctx.args.limit, 2) if ctx.args.limit else None)
    res = evaluate_chat(convs, ctx.embedder(), max_questions=ctx.args.max_questions, progress=ctx.progress)
    raw: dict[str, Any] = {
        "path": ctx.locomo.name,
        "k": res.k,
        "settings": res.settings,
        "values": _acc(res.values),
        "chosen": res.chosen,
        "conversations": res.conversations,
        "filler_why": {c: list(v) for c, v in res.filler_why.items()},
    }
    sweep = sweep_cutoffs(convs, ctx.embedder(), progress=ctx.progress)
    raw["cutoffs"] = {
        "grid": list(sweep.grid),
        "k": sweep.k,
        "answers": [None if a is None else [round(a[0], 6), round(a[1], 6)] for a in sweep.answers],
        "evidence": [[round(r, 6), round(b, 6)] for r, b in sweep.evidence],
        "empty": {scope: {repr(t): [sum(v), len(v)] for t, v in per.items()} for scope, per in sweep.empty.items()},
        "default": MIN_RELEVANCE.get(ctx.embedder().name, 0.0),
        "relative": Config().relative_relevance,
    }
    return raw


def _chat_result(raw: dict[str, Any]) -> Any:
    from sgmem.eval.chat import ChatResult, _label

    @dataclass
    class Stored(ChatResult):  # per conversation (sum, count) instead of per-question lists
        def pooled(self, condition: str, label: str) -> float:
            per = self.values[condition][label]
            n = sum(per[c][1] for c in self.conversations)
            return 100.0 * sum(per[c][0] for c in self.conversations) / n if n else float("nan")

        def loo(self, condition: str) -> float:
            cells = [self.values[condition][_label(self.chosen[c])][c] for c in self.conversations]
            n = sum(int(c[1]) for c in cells)
            return 100.0 * sum(c[0] for c in cells) / n if n else float("nan")

    return Stored(
        raw["k"],
        raw["settings"],
        raw["values"],
        raw["chosen"],
        raw["conversations"],
        {c: (int(v[0]), int(v[1])) for c, v in raw["filler_why"].items()},
    )


def _sweep(raw: dict[str, Any]) -> Any:
    from sgmem.eval.answers import CutoffSweep

    grid = tuple(float(t) for t in raw["grid"])
    sweep = CutoffSweep(grid, raw["k"])
    sweep.answers = [None if a is None else (a[0], a[1]) for a in raw["answers"]]
    sweep.evidence = [(r, b) for r, b in raw["evidence"]]
    # per scope and threshold the count of emptied contexts among n questions, as the 0/1 list it summarises
    sweep.empty = {
        scope: {float(t): [1.0] * int(v[0]) + [0.0] * (int(v[1]) - int(v[0])) for t, v in per.items()}
        for scope, per in raw["empty"].items()
    }
    return sweep


def render_part(raw: dict[str, Any]) -> str:
    from sgmem.eval.answers import render_cutoffs
    from sgmem.eval.chat import render_chat

    if "missing" in raw:
        return f"Not run: no LoCoMo file at `{raw['missing']}` (pass `--locomo PATH`)."
    out = [HOW, render_chat(_chat_result(raw))]
    if "cutoffs" in raw:
        c = raw["cutoffs"]
        out += [
            "### The relevance cutoff: answers kept, unrelated questions emptied",
            CUTOFF_HOW + f" The default for MiniLM: `Config.min_relevance` {c['default']:g} with `relative_relevance` "
            f"{c['relative']:g}.",
            render_cutoffs(_sweep(c), c["default"], c["relative"]),
        ]
    return "\n\n".join(out)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    if "missing" in raw:
        return []
    res = _chat_result(raw)
    conds = [c for c in ("clean", "echo") if c in res.values]
    if "echo" not in conds:
        return []
    names = ("BM25 turns", "dense sentences", "RRF(BM25, dense)")

    def best(cond: str) -> tuple[str, float]:
        return max(((n, res.pooled(cond, n)) for n in names), key=lambda t: t[1])

    name, echo_base = best("echo")
    held = res.loo("echo")
    line = (
        f'- Inside a real chat, every question also asked before and answered "I\'m not sure" (echo), '
        f"recall@{res.k} (cat 1–4; held out: sgmem's dialogue-act weights only, chosen leave-one-conversation-out, "
        f"the rest of the hybrid at its defaults chosen on the same conversations): sgmem hybrid "
        f"{held:.1f} % vs {name} {echo_base:.1f} % — **{held / echo_base:.2f}×**"
    )
    if "clean" in conds:
        _, clean_base = best("clean")
        line += f" (without the echoes {res.loo('clean'):.1f} % vs {clean_base:.1f} %, {res.loo('clean') / clean_base:.2f}×)"
    return [line + "."]
