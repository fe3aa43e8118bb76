"""Dialogue acts of chat sentences: the ``acts`` part of ``python -m benchmarks``.

Scores :mod:`sgmem.text.acts` on the held-out (``test``) split of the labelled chat sentences
(``sgmem/data/dialogue_acts.json``, written before any fitting): the word rules that rank by default, and the
:class:`sgmem.text.acts.ActClassifier` fitted on the ``train`` split only, each sentence embedded as ingest
embeds it ("user: …", "assistant: …", and a speaker name the classifier never saw). Beside it, the cost of the
rules on adversarial 200,000-character inputs (runs of whitespace or ")") against ordinary text of that length.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["TITLE", "render_part", "run_part", "summary_lines"]

TITLE = "Dialogue acts: held-out precision and recall per act"

HOW = (
    "Each labelled sentence's act as the ranking reads it, against its label, on the `test` split of "
    "`sgmem/data/dialogue_acts.json` (chat sentences labelled before any fitting: assistant non-answers "
    "and refusals in many wordings, short answers, unpunctuated chat, statements shaped like questions, "
    "question + fact in one sentence, commands, a few other languages; `test` is crc32(text) mod 4 = 0 and "
    "is never fitted on, nor are 91 later test items: non-answers in wordings the rules do not list, statements "
    'and filler that look like non-answers). *answer* is a reply fragment ("12.", "Yes, I am."): a statement in a reply to '
    "a question, filler elsewhere. *Facts lost* is the share of labelled statements marked filler or "
    "non-answer (what would push a fact under the cutoff); *non-answers kept down* counts a non-answer "
    "marked filler too (both weigh under the fact). Same code: `python -m benchmarks --only acts`."
)


def _score(truth: list[int], got: list[int]) -> dict[str, Any]:
    from sgmem.text.acts import ACT_NAMES, FILLER, NON_ANSWER, STATEMENT

    out: dict[str, Any] = {}
    for a, name in enumerate(ACT_NAMES):
        tp = sum(1 for t, g in zip(truth, got, strict=True) if t == a and g == a)
        marked = sum(1 for g in got if g == a)
        real = sum(1 for t in truth if t == a)
        out[name] = {"tp": tp, "marked": marked, "real": real}
    stated = [g for t, g in zip(truth, got, strict=True) if t == STATEMENT]
    out["facts_lost"] = [sum(1 for g in stated if g in (FILLER, NON_ANSWER)), len(stated)]
    na = [g for t, g in zip(truth, got, strict=True) if t == NON_ANSWER]
    out["non_answers_down"] = [sum(1 for g in na if g in (FILLER, NON_ANSWER)), len(na)]
    return out


def _linear(n: int = 200_000) -> dict[str, float]:
    from sgmem.text.acts import acts_of

    inputs = {
        "ordinary text": ("I moved to Leeds last week and I love it. " * (n // 42))[:n],
        "whitespace run": "a" + " " * n + "b",
        "')' run": "a" + ")" * n + "b",
        "' )' run": "a" + " )" * (n // 2) + "b",
    }
    out = {}
    for name, text in inputs.items():
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            acts_of([text])
            best = min(best, time.perf_counter() - t0)
        out[name] = best
    return out


def run_part(ctx: Any) -> dict[str, Any]:
    from sgmem.text.acts import HELD_OUT_SPEAKERS, ActClassifier, labelled_acts, raw_acts, shown

    data = labelled_acts("test")
    texts = [t for t, _ in data]
    truth = [a for _, a in data]
    raw: dict[str, Any] = {"n_test": len(data), "n_train": len(labelled_acts("train"))}
    raw["rules"] = _score(truth, [int(a) for a in raw_acts(texts)])
    if not ctx.args.smoke:  # (the fit embeds the train split once per speaker form)
        emb = ctx.embedder()
        model = ActClassifier(emb)
        t0 = time.perf_counter()
        model.probabilities(texts[:1], emb.embed(["user: " + texts[0]]))
        raw["fit_s"] = time.perf_counter() - t0
        raw["classifier"] = {}
        for label, speakers in (("user, assistant", ("user", "assistant")), ("held-out", HELD_OUT_SPEAKERS)):
            got = [int(a) for p in speakers for a in model.classify(texts, emb.embed([shown(p, t) for t in texts]))]
            raw["classifier"][label] = _score(truth * len(speakers), got)
    raw["linear_s"] = _linear()
    return raw


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}" if b else "–"


def _table(scores: dict[str, Any]) -> list[str]:
    from sgmem.text.acts import ACT_NAMES

    rows = ["| act | held-out sentences | precision % | recall % |", "|---|---|---|---|"]
    for name in ACT_NAMES:
        s = scores[name]
        rows.append(f"| {name} | {s['real']} | {_pct(s['tp'], s['marked'])} | {_pct(s['tp'], s['real'])} |")
    lost, n = scores["facts_lost"]
    down, m = scores["non_answers_down"]
    rows.append("")
    rows.append(
        f"Facts lost (statements marked filler or non-answer): {lost} of {n} ({_pct(lost, n)} %); "
        f"non-answers kept down (marked non-answer or filler): {down} of {m} ({_pct(down, m)} %)."
    )
    return rows


def render_part(raw: dict[str, Any]) -> str:
    out = [HOW, "", f"### Word rules (the default, `Config.acts=\"rules\"`), {raw['n_test']} held-out sentences", ""]
    out += _table(raw["rules"])
    if "classifier" in raw:
        out += [
            "",
            f"### ActClassifier (`Config.acts=\"auto\"`: logistic regression on the sentence vectors + 5 structural "
            f"cues, fitted on the {raw['n_train']} train sentences each said by 18 speakers: roles, names of several "
            "cultures, none)",
        ]
        for label, scores in raw["classifier"].items():
            said = (
                "Said by **user** and **assistant** (speakers it was fitted on)"
                if label.startswith("user")
                else "Said by **13 speakers it was never fitted on** (every LoCoMo speaker, Ingrid, Tariq)"
            )
            out += ["", said + ":", ""] + _table(scores)
        out += [
            "",
            f"The fit ships for MiniLM (`python -m sgmem.text.acts fit` regenerates it; {raw['fit_s']:.1f} s to "
            "load here); another sentence-transformers model is fitted once per process.",
        ]
    lin = raw["linear_s"]
    base = lin["ordinary text"]
    out += [
        "",
        "### Cost of the act rules on adversarial 200,000-character sentences",
        "",
        "| input | seconds | ÷ ordinary text |",
        "|---|---|---|",
    ]
    out += [f"| {name} | {s:.4f} | {s / base:.2f}× |" for name, s in lin.items()]
    return "\n".join(out)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    r = raw["classifier"]["held-out"] if "classifier" in raw else raw["rules"]
    lost, n = r["facts_lost"]
    na = r["non-answer"]
    who = "classifier, speakers never fitted on" if "classifier" in raw else "word rules"
    return [
        f"- Dialogue acts ({who}, {raw['n_test']} held-out chat sentences): facts lost to filler or non-answer "
        f"{_pct(lost, n)} %, non-answers recognised {_pct(na['tp'], na['real'])} % (precision "
        f"{_pct(na['tp'], na['marked'])} %); the act rules cost at most "
        f"{max(raw['linear_s'].values()) / raw['linear_s']['ordinary text']:.1f}× ordinary text on 200k-character "
        "adversarial inputs."
    ]
