"""Ablations that decide: each channel of the hybrid switched off in turn, on LoCoMo and on LongMemEval.

The benchmark part ``ablation`` (``python -m benchmarks --only ablation``). Every channel of sgmem's default
``hybrid`` mode (:data:`CHANNELS`: the dense sentence and turn channels, the lexical channel, the sentence
graph's expansion, the pyramid, the dialogue acts, the dates, the sessions, the chronological neighbours) is
switched off in turn, everything else at the shipped defaults, and every question is searched under each
configuration in the same run, with each search timed (query p50 with the channel off against all on).

Whether a channel is kept is itself a choice measured on data, so it is made by cross-validation: joint
folds hold out one LoCoMo conversation and one of three LongMemEval question folds (stratified by question
type) at once; a fold switches a channel off only if that scores strictly better on what it did not hold out
(:func:`objective`: the two benchmarks weigh one half each — LoCoMo recall@10, and LongMemEval turn recall@10
as the mean of its two protocols), and the choice is measured on what it held out. The settings a
user–assistant chat adds (:data:`SETTINGS`: the assistant's weight, the spread over sessions) are chosen the
same way over their full grid, and by LongMemEval's question folds alone against the baselines (BM25, dense, RRF). The shipped defaults were chosen on LoCoMo dev, so LoCoMo's on/off figures are
in-sample; nothing was tuned on LongMemEval, so its figures are held out.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

__all__ = [
    "CHANNELS",
    "SETTINGS",
    "TITLE",
    "lme_folds",
    "objective",
    "render_part",
    "run_part",
    "settings_cv",
    "settings_grid",
    "summary_lines",
]

TITLE = "Ablations: each channel switched off, on LoCoMo and LongMemEval"

#: [D] What switches each channel off (dotted ``Config`` overrides). The dialogue acts off: every sentence weighs
#: as a statement and the reply channel is off (a turn of filler alone is still set apart).
CHANNELS: dict[str, dict[str, Any]] = {
    "dense sentences": {"hybrid.w_sentence": 0.0},
    "dense turns": {"hybrid.w_turn": 0.0},
    "lexical": {"hybrid.w_lexical": 0.0},
    "graph expansion (SGMem)": {"hybrid.w_graph": 0.0},
    "pyramid (MGRetrieval)": {"hybrid.w_pyramid": 0.0},
    "dialogue acts": {
        "hybrid.question_weight": 1.0,
        "hybrid.echo_weight": 1.0,
        "hybrid.non_answer_weight": 1.0,
        "hybrid.reply_weight": 0.0,
    },
    "dates": {"hybrid.date_day_bonus": 0.0, "hybrid.date_month_bonus": 0.0},
    "sessions": {"hybrid.session_weight": 0.0},
    "chronological neighbours (SGRM chain)": {
        "hybrid.neighbour_weight": 0.0,
        "hybrid.neighbour_dense": 0.0,
        "hybrid.propagation": 0.0,
    },
}
ALL_ON = "all on (shipped defaults)"
#: [D] The settings a user–assistant chat adds to LoCoMo's, each around its shipped value: what the assistant's
#: turns count for (LoCoMo has no assistant: inert there) and how much a question that gathers several memories
#: spreads over sessions. Chosen jointly (the full grid) by the same folds as the channels.
SETTINGS: dict[str, tuple[float, ...]] = {
    "hybrid.assistant_weight": (0.25, 0.5, 0.75, 1.0),
    "hybrid.session_spread": (0.0, 0.05, 0.1, 0.2),
}
RRF = "RRF(BM25, dense)"
#: the baselines every LongMemEval question is also ranked by (the same store): each alone and their fusion
BASELINES = ("BM25 turns", "dense sentences", RRF)
CATS = (1, 2, 3, 4)
LME_FOLDS = 3
_DEPTH = 100  # LongMemEval: ranked turns per search, as the harness (sgmem.eval.longmemeval) ranks them


def lme_folds(questions: list[tuple[str, str]], n: int = LME_FOLDS) -> dict[str, int]:
    """Question id -> fold, stratified by type: within each type, in id order, round robin over ``n`` folds."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for qid, qtype in questions:
        by_type[qtype].append(qid)
    return {qid: i % n for ids in by_type.values() for i, qid in enumerate(sorted(ids))}


def settings_grid() -> dict[str, dict[str, Any]]:
    """Every point of :data:`SETTINGS` by name; the shipped point is :data:`ALL_ON`."""
    from itertools import product

    from sgmem.config import Config

    base = Config().hybrid
    out: dict[str, dict[str, Any]] = {}
    for values in product(*SETTINGS.values()):
        point = dict(zip(SETTINGS, values, strict=True))
        shipped = all(getattr(base, k.split(".")[1]) == v for k, v in point.items())
        out[ALL_ON if shipped else ", ".join(f"{k.split('.')[1]}={v:g}" for k, v in point.items())] = point
    return out


def _configs() -> dict[str, dict[str, Any]]:
    return {ALL_ON: {}, **CHANNELS, **{k: v for k, v in settings_grid().items() if k != ALL_ON}}


def _timed(name: str) -> bool:
    """The channels' configurations are timed (their cost is reported); the settings grid's are not."""
    return name == ALL_ON or name in CHANNELS


def _locomo(ctx: Any, smoke: bool) -> dict[str, Any]:
    from sgmem.config import Config
    from sgmem.eval.chat import _Memo
    from sgmem.eval.locomo import load_locomo, recall_at_k, turns_of
    from sgmem.eval.loo import _configured, apply_overrides, prepare

    if not ctx.locomo.exists():
        return {"missing": str(ctx.locomo)}
    convs = load_locomo(ctx.locomo, 2 if smoke else getattr(ctx.args, "limit", None))
    max_q = getattr(ctx.args, "max_questions", None) or (4 if smoke else None)
    emb = _Memo(ctx.embedder())
    base = Config()
    values: dict[str, dict[str, list[float]]] = {name: {} for name in _configs()}
    ms: dict[str, list[float]] = {name: [] for name in _configs()}
    with prepare(convs, emb, base, ctx.progress) as prep:
        for conv in convs:
            cid = conv.sample_id
            mem = prep.memories[cid]
            qs = [q for q in conv.questions[:max_q] if q.category in CATS]
            emb.embed([q.question for q in qs])  # query vectors outside the timings, alike for every configuration
            for name, overrides in _configs().items():
                with _configured(mem, apply_overrides(base, overrides)):
                    if qs and _timed(name):  # untimed: the first search of a configuration builds what it reads
                        mem.search(qs[0].question, scope=cid, k=10, min_score=0)
                    row = []
                    for q in qs:
                        t0 = time.perf_counter()
                        hits = mem.search(q.question, scope=cid, k=10, min_score=0)
                        ms[name].append((time.perf_counter() - t0) * 1e3)
                        row.append(recall_at_k(turns_of(hits), q.evidence, 10))
                values[name][cid] = row
            ctx.progress(f"ablation: LoCoMo {cid} measured")
    return {"path": ctx.locomo.name, "conversations": [c.sample_id for c in convs], "recall@10": values, "ms": ms}


def _lme(ctx: Any, smoke: bool) -> dict[str, Any]:
    from benchmarks.longmemeval import default_longmemeval_path
    from sgmem.config import Config
    from sgmem.eval.chat import _Memo, rrf
    from sgmem.eval.locomo import turns_of
    from sgmem.eval.longmemeval import PROTOCOLS, ingest_haystack, load_longmemeval, retrieval_metrics
    from sgmem.eval.loo import _configured, apply_overrides
    from sgmem.memory import Memory

    path = Path(getattr(ctx.args, "longmemeval", None) or default_longmemeval_path())
    if not path.exists():
        return {"missing": str(path)}
    per_type = getattr(ctx.args, "lme_per_type", 3)
    qs = load_longmemeval(
        path,
        per_type=1 if smoke else per_type,
        seed=list(getattr(ctx.args, "lme_seeds", None) or [0]),
        limit=2 if smoke else None,
        max_sessions=3 if smoke else None,
    )
    emb = _Memo(ctx.embedder())
    base = Config()
    out: dict[str, Any] = {
        "path": path.name,
        "per_type": per_type,
        "seeds": list(getattr(ctx.args, "lme_seeds", None) or [0]),
        "types": {q.question_id: q.question_type for q in qs},
        "protocols": {},
    }
    for protocol in PROTOCOLS:
        vals: dict[str, dict[str, list[float]]] = {name: {} for name in _configs()}
        ms: dict[str, list[float]] = {name: [] for name in _configs()}
        for q in qs:
            evidence = q.evidence(protocol)
            if not evidence:
                continue
            items = q.items(protocol)
            ev_sessions = {s for t, s in items.values() if t in evidence}
            n_turns, n_sessions = len(set(items.values())), len({s for _, s in items.values()})
            with Memory(embedder=emb, config=base) as mem:
                ingest_haystack(mem, q, protocol)
                emb.embed([q.question])
                rankings = {}
                for name, overrides in _configs().items():
                    with _configured(mem, apply_overrides(base, overrides)):
                        hits = mem.search(q.question, scope="q", k=_DEPTH, min_score=0, now=q.question_date)
                        if _timed(name):  # the first search was untimed (lazy builds): the best of two more
                            best = math.inf
                            for _ in range(2):
                                t0 = time.perf_counter()
                                hits = mem.search(q.question, scope="q", k=_DEPTH, min_score=0, now=q.question_date)
                                best = min(best, time.perf_counter() - t0)
                            ms[name].append(best * 1e3)
                    rankings[name] = turns_of(hits)
                alone = [
                    turns_of(mem.search(q.question, scope="q", k=_DEPTH, mode=mode, min_score=0, now=q.question_date))
                    for mode in ("bm25", "vector")
                ]
                rankings.update(zip(BASELINES, [*alone, rrf(alone)], strict=True))
                for name, stored in rankings.items():
                    turns, sessions = q.ranked(stored, protocol)
                    tm = retrieval_metrics(turns, evidence, n_turns, (5, 10))
                    sm = retrieval_metrics(sessions, ev_sessions, n_sessions, (5,))
                    vals.setdefault(name, {})[q.question_id] = [tm["recall@5"], tm["recall@10"], sm["recall_any@5"]]
            ctx.progress(f"ablation: LongMemEval {protocol} {q.question_id} measured")
        out["protocols"][protocol] = {"values": vals, "ms": ms}
    save = getattr(ctx.embedder(), "save", None)
    if callable(save):
        save()
    return out


def run_part(ctx: Any) -> dict[str, Any]:
    """Measure (see the module docstring); JSON-ready raw results."""
    smoke = bool(getattr(ctx.args, "smoke", False))
    t0 = time.perf_counter()
    raw = {"smoke": smoke, "channels": {k: dict(v) for k, v in CHANNELS.items()}}
    raw["locomo"] = _locomo(ctx, smoke)
    raw["longmemeval"] = _lme(ctx, smoke)
    raw["seconds"] = time.perf_counter() - t0
    return raw


# --------------------------------------------------------------- analysis (from the raw results alone)
def _diff(on: list[float], off: list[float]) -> tuple[float, float, int]:
    """Mean of on − off in points, its standard error, the number of questions (paired)."""
    d = [100 * (a - b) for a, b in zip(on, off, strict=True)]
    if not d:
        return float("nan"), float("nan"), 0
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return statistics.fmean(d), se, len(d)


def _word(delta: float, se: float) -> str:
    if math.isnan(delta):
        return "–"
    if se > 0 and delta > 2 * se:
        return "helps"
    if se > 0 and delta < -2 * se:
        return "hurts"
    return "within noise" if delta or se else "no effect"


def _sources(raw: dict[str, Any]) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Per source (LoCoMo; LongMemEval per protocol): configuration -> group -> per-question recall@10."""
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    loc = raw.get("locomo", {})
    if "recall@10" in loc:
        out["LoCoMo"] = loc["recall@10"]
    lme = raw.get("longmemeval", {})
    for protocol, data in lme.get("protocols", {}).items():
        out[f"LongMemEval {protocol}"] = {
            name: {qid: [v[1]] for qid, v in per.items()} for name, per in data["values"].items()
        }
    return out


def objective(src: dict[str, dict[str, dict[str, list[float]]]], name: str, keep: Any) -> float:
    """[D] What a fold maximises: the mean over the two benchmarks of the recall@10 of configuration ``name`` on the
    groups ``keep(source, group)`` admits — LongMemEval's being the mean of its two protocols'. Each benchmark
    weighs one half whatever its size (883 LoCoMo questions against a few dozen LongMemEval ones): a setting has
    to hold on both kinds of chat, and a pooled mean would let the larger one decide alone."""
    per: dict[str, list[float]] = defaultdict(list)
    for s, cfgs in src.items():
        vals = [v for g, row in cfgs[name].items() if keep(s, g) for v in row]
        if vals:
            per[s.split(" ")[0]].append(statistics.fmean(vals))
    return statistics.fmean(statistics.fmean(v) for v in per.values()) if per else float("nan")


def _joint_folds(raw: dict[str, Any]) -> tuple[list[str], dict[str, int], int]:
    convs = raw.get("locomo", {}).get("conversations", [])
    fold_of = lme_folds(list(raw.get("longmemeval", {}).get("types", {}).items()))
    return convs, fold_of, max(len(convs), LME_FOLDS if fold_of else 0)


def _held(src: dict[str, Any], name: str, i: int, convs: list[str], fold_of: dict[str, int]) -> dict[str, list[float]]:
    """Joint fold ``i``'s held-out values under configuration ``name``: its conversation; its question fold (for
    the first fold holding it out)."""
    out: dict[str, list[float]] = {}
    for s, cfgs in src.items():
        if s == "LoCoMo":
            out[s] = list(cfgs[name][convs[i]]) if i < len(convs) else []
        else:
            out[s] = [v for g, row in cfgs[name].items() if fold_of.get(g) == i for v in row] if i < LME_FOLDS else []
    return out


def decisions(raw: dict[str, Any]) -> dict[str, Any]:
    """The joint folds' choices per channel and their held-out figures.

    Joint fold ``i`` holds out LoCoMo conversation ``i`` and LongMemEval question fold ``i mod 3``; it switches
    a channel off only if the training :func:`objective` is strictly higher off than on (a tie keeps it on,
    reported as a tie). Held out: each conversation under its fold's choice; each LongMemEval question fold
    under the choice of the first joint fold holding it out.
    """
    src = _sources(raw)
    convs, fold_of, n_joint = _joint_folds(raw)
    out: dict[str, Any] = {}
    for ch in CHANNELS:
        choices, held = [], {s: [] for s in src}
        for i in range(n_joint):
            held_conv = convs[i] if i < len(convs) else None

            def train(s: str, g: str, held_conv: str | None = held_conv, i: int = i) -> bool:
                return g != held_conv if s == "LoCoMo" else fold_of.get(g) != i % LME_FOLDS

            gap = objective(src, ch, train) - objective(src, ALL_ON, train)
            choice = "off" if gap > 1e-9 else ("tie" if abs(gap) <= 1e-9 else "on")
            choices.append(choice)
            for s, v in _held(src, ch if choice == "off" else ALL_ON, i, convs, fold_of).items():
                held[s] += v
        out[ch] = {
            "choices": choices,
            "held_out": {s: 100 * statistics.fmean(v) if v else float("nan") for s, v in held.items()},
        }
    return out


def settings_cv(raw: dict[str, Any]) -> dict[str, Any]:
    """:data:`SETTINGS` chosen by cross-validation, two ways.

    ``joint``: each joint fold (as :func:`decisions`) takes the grid point of the highest training
    :func:`objective` — both benchmarks — moving from the shipped point only when strictly better; held out as
    there. ``questions``: LongMemEval alone, each of its question folds held out in turn and the point chosen on
    the other two (the mean of both protocols' turn recall@10), held-out turn recall@5 / @10 and session
    recall_any@5 per protocol beside each baseline's on the same questions (:data:`BASELINES`, nothing tuned for
    them; a run that did not rank one leaves it out), overall (``held_out``) and per question type (``by_type``).
    """
    grid = [n for n in settings_grid() if n in raw.get("longmemeval", {}).get("protocols", {}).get("all", {}).get(
        "values", {})] or [ALL_ON]  # fmt: skip
    src = _sources(raw)
    grid = [n for n in grid if all(n in cfgs for cfgs in src.values())]
    convs, fold_of, n_joint = _joint_folds(raw)

    def best(keep: Any, sources: dict[str, Any]) -> str:
        scores = {n: objective(sources, n, keep) for n in grid}
        top = max(grid, key=lambda n: scores[n])
        return top if scores[top] > scores[ALL_ON] + 1e-9 else ALL_ON

    joint_choices, joint_held = [], {s: [] for s in src}
    for i in range(n_joint):
        held_conv = convs[i] if i < len(convs) else None
        pick = best(lambda s, g, h=held_conv, i=i: g != h if s == "LoCoMo" else fold_of.get(g) != i % LME_FOLDS, src)
        joint_choices.append(pick)
        for s, v in _held(src, pick, i, convs, fold_of).items():
            joint_held[s] += v
    lme_src = {s: c for s, c in src.items() if s != "LoCoMo"}
    protocols = raw.get("longmemeval", {}).get("protocols", {})
    q_choices: list[str] = []
    types = raw.get("longmemeval", {}).get("types", {})
    systems = {p: ["sgmem", *(b for b in BASELINES if b in d["values"])] for p, d in protocols.items()}
    q_held: dict[str, dict[str, list[list[float]]]] = {p: {s: [] for s in systems[p]} for p in protocols}
    q_typed: dict[str, dict[str, dict[str, list[list[float]]]]] = {
        p: {s: defaultdict(list) for s in systems[p]} for p in protocols
    }
    for f in range(LME_FOLDS if fold_of and lme_src else 0):
        pick = best(lambda s, g, f=f: fold_of.get(g) != f, lme_src)
        q_choices.append(pick)
        for p, data in protocols.items():
            for system in systems[p]:
                held = {g: v for g, v in data["values"].get(pick if system == "sgmem" else system, {}).items()
                        if fold_of.get(g) == f}  # fmt: skip
                q_held[p][system] += held.values()
                for g, v in held.items():
                    q_typed[p][system][types.get(g, "?")].append(v)

    def means(rows: list[list[float]]) -> list[float]:
        return [100 * statistics.fmean(col) for col in zip(*rows, strict=True)] if rows else []

    return {
        "joint": {
            "choices": joint_choices,
            "held_out": {s: 100 * statistics.fmean(v) if v else float("nan") for s, v in joint_held.items()},
        },
        "questions": {
            "choices": q_choices,
            "held_out": {p: {sys: means(rows) for sys, rows in d.items()} for p, d in q_held.items()},
            "by_type": {
                p: {sys: {t: means(rows) for t, rows in by.items()} for sys, by in d.items()}
                for p, d in q_typed.items()
            },
            "counts": {p: {t: len(rows) for t, rows in d["sgmem"].items()} for p, d in q_typed.items()},
        },
    }


def _p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def render_part(raw: dict[str, Any]) -> str:
    """The section's markdown body, from the raw results alone."""
    src = _sources(raw)
    if not src:
        return "Not measured: neither LoCoMo nor LongMemEval was found.\n"
    loc = raw.get("locomo", {})
    lme = raw.get("longmemeval", {})
    n_loc = sum(len(r) for r in loc.get("recall@10", {}).get(ALL_ON, {}).values())
    out = [
        "Each channel of the default `hybrid` mode switched off in turn, everything else at the shipped defaults; "
        "every question searched under every configuration in the same run, each search timed after an untimed "
        "one per configuration and store (query vectors cached: the timings are ranking alone; LongMemEval: the "
        "best of two searches per question). recall@10 in % (LoCoMo: evidence turns, categories 1–4, "
        f"{n_loc} questions of {len(loc.get('conversations', []))} conversations; LongMemEval: turn recall@10, "
        f"{len(lme.get('types', {}))} questions, up to {lme.get('per_type', '?')} per type, under each protocol). "
        "Δ = on − off in points, paired over the same questions, ± its standard error; *helps* / *hurts* when "
        "|Δ| exceeds two standard errors. LoCoMo's figures are in-sample (the shipped defaults were chosen on "
        "these conversations); nothing was tuned on LongMemEval, so its figures are held out.",
        "",
        "### Each channel off: recall@10 and query cost",
        "",
        "| channel switched off | what is set | "
        + " | ".join(f"{s}: off (Δ on − off)" for s in src)
        + " | query p50 ms, LoCoMo: on / off | query p50 ms, LongMemEval all turns: on / off |",
        "|---|---|" + "---|" * len(src) + "---|---|",
    ]
    base_row = ["**all on** (shipped)", "–"]
    for cfgs in src.values():
        vals = [v for row in cfgs[ALL_ON].values() for v in row]
        base_row.append(f"**{100 * statistics.fmean(vals):.1f}**" if vals else "–")
    lat_loc = loc.get("ms", {})
    lat_all = lme.get("protocols", {}).get("all", {}).get("ms", {})
    base_row += [f"{_p50(lat_loc.get(ALL_ON, [])):.1f}", f"{_p50(lat_all.get(ALL_ON, [])):.1f}"]
    out.append("| " + " | ".join(base_row) + " |")
    verdicts: dict[str, dict[str, str]] = {}
    for ch, overrides in raw["channels"].items():
        setting = ", ".join(f"`{k.split('.')[-1]}={v:g}`" for k, v in overrides.items())
        cells = [ch, setting]
        for s, cfgs in src.items():
            groups = list(cfgs[ALL_ON])
            on = [v for g in groups for v in cfgs[ALL_ON][g]]
            off = [v for g in groups for v in cfgs[ch][g]]
            d, se, _ = _diff(on, off)
            verdicts.setdefault(ch, {})[s] = _word(d, se)
            cells.append(f"{100 * statistics.fmean(off):.1f} ({d:+.1f} ± {se:.1f}, {_word(d, se)})" if off else "–")
        cells += [
            f"{_p50(lat_loc.get(ALL_ON, [])):.1f} / {_p50(lat_loc.get(ch, [])):.1f}",
            f"{_p50(lat_all.get(ALL_ON, [])):.1f} / {_p50(lat_all.get(ch, [])):.1f}",
        ]
        out.append("| " + " | ".join(cells) + " |")
    # the joint folds
    dec = decisions(raw)
    n_joint = len(next(iter(dec.values()))["choices"]) if dec else 0
    out += [
        "",
        "### Kept or not, cross-validated",
        "",
        f"{n_joint} joint folds, each holding out one LoCoMo conversation and one of {LME_FOLDS} LongMemEval "
        "question folds (stratified by question type; fold *i* holds out conversation *i* and question fold "
        f"*i* mod {LME_FOLDS}). A fold switches the channel off only if the training recall@10 is strictly "
        "higher without it, the two benchmarks weighing one half each (LongMemEval: the mean of its two "
        "protocols); a tie keeps it on and is counted as a tie. Held out: each conversation under its fold's "
        "choice, each question fold under the choice of "
        "the first fold holding it out — every figure measured on data its choice did not see.",
        "",
        "| channel | folds: on / off / tie | "
        + " | ".join(f"{s}, held out: folds' choice (all on)" for s in src)
        + " | where it helps | where it hurts |",
        "|---|---|" + "---|" * len(src) + "---|---|",
    ]
    all_on = {}
    for s, cfgs in src.items():
        vals = [v for row in cfgs[ALL_ON].values() for v in row]
        all_on[s] = 100 * statistics.fmean(vals) if vals else float("nan")
    for ch, d in dec.items():
        c = d["choices"]
        helps = [s for s, w in verdicts[ch].items() if w == "helps"]
        hurts = [s for s, w in verdicts[ch].items() if w == "hurts"]
        out.append(
            f"| {ch} | {c.count('on')} / {c.count('off')} / {c.count('tie')} | "
            + " | ".join(f"{d['held_out'][s]:.1f} ({all_on[s]:.1f})" for s in src)
            + f" | {', '.join(helps) or '–'} | {', '.join(hurts) or '–'} |"
        )
    out += settings_lines(raw)
    out += [
        "",
        "The dialogue acts are for a chat that stores its own questions and non-answers (the cv part's echo "
        "condition); LoCoMo and LongMemEval hold neither, so their effect here is the ranking of ordinary "
        "questions in the data.",
    ]
    if raw.get("seconds") is not None:
        out += ["", f"(Measured in {raw['seconds'] / 60:.1f} minutes.)"]
    return "\n".join(out)


def settings_lines(raw: dict[str, Any]) -> list[str]:
    """The settings section: :data:`SETTINGS` chosen by the joint folds and by LongMemEval's question folds."""
    cv = settings_cv(raw)
    if not cv["joint"]["choices"]:
        return []
    src = _sources(raw)
    axes = ", ".join(f"`{k.split('.')[1]}` ∈ {{{', '.join(f'{v:g}' for v in vals)}}}" for k, vals in SETTINGS.items())
    out = [
        "",
        "### Settings a user–assistant chat adds, cross-validated",
        "",
        f"The full grid {axes}, every point searched on every question in the same run. What a fold maximises: the "
        "mean over the two benchmarks of the training recall@10, LongMemEval's being the mean of its two protocols "
        "— each benchmark weighs one half whatever its number of questions; a fold leaves the shipped point only "
        "for a strictly better one.",
        "",
        "| folds | choices (count) | " + " | ".join(f"{s}, held out (shipped)" for s in src) + " |",
        "|---|---|" + "---|" * len(src),
    ]
    shipped = {s: 100 * statistics.fmean([v for row in c[ALL_ON].values() for v in row]) for s, c in src.items()}
    joint = cv["joint"]
    counts = ", ".join(f"{n} ({c})" for n, c in Counter(joint["choices"]).most_common())
    out.append(
        f"| joint (LoCoMo conversation + question fold) | {counts} | "
        + " | ".join(f"{joint['held_out'][s]:.1f} ({shipped[s]:.1f})" for s in src)
        + " |"
    )
    q = cv["questions"]
    counts = ", ".join(f"{n} ({c})" for n, c in Counter(q["choices"]).most_common())
    out += [
        "",
        f"LongMemEval alone, {LME_FOLDS} question folds (stratified by type), each chosen on the other two: "
        f"{counts}. Held out, on the same questions, against the RRF baseline (nothing tuned for it):",
        "",
        "| protocol | sgmem turn recall@5 | RRF turn recall@5 | ratio | sgmem turn recall@10 | RRF turn recall@10 "
        "| ratio | sgmem session recall_any@5 | RRF session recall_any@5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p, d in q["held_out"].items():
        a, b = d.get("sgmem"), d.get(RRF)
        if not a or not b:
            continue
        out.append(
            f"| {p} | {a[0]:.1f} | {b[0]:.1f} | {a[0] / b[0]:.3f}× | {a[1]:.1f} | {b[1]:.1f} | {a[1] / b[1]:.3f}× "
            f"| {a[2]:.1f} | {b[2]:.1f} |"
        )
    return out + strongest_lines(q)


_MEASURES = ("turn recall@5", "turn recall@10", "session recall_any@5")


def strongest_lines(q: dict[str, Any]) -> list[str]:
    """Held out against the strongest baseline of each measure (BM25, dense or their fusion, whichever scores
    highest on those questions), with what a ratio target asks of sgmem — recall cannot pass 100, so a target
    above it cannot be met on these questions — then the same per question type."""
    from sgmem.eval.longmemeval import QUESTION_TYPES

    rows = []
    for p, d in q["held_out"].items():
        ours = d.get("sgmem")
        for i, measure in enumerate(_MEASURES):
            base = {b: v[i] for b, v in d.items() if b != "sgmem" and v}
            if not ours or not base:
                continue
            top = max(base, key=lambda b: base[b])
            need = ", ".join(
                f"{r:.2f}× needs {r * base[top]:.1f}" + (" (past 100)" if r * base[top] > 100 else "")
                for r in (1.05, 1.10)
            )
            rows.append(
                f"| {p} | {measure} | {ours[i]:.1f} | {top} {base[top]:.1f} | {ours[i] / base[top]:.3f}× | {need} |"
            )
    if not rows:
        return []
    out = [
        "",
        "Against the strongest baseline of each measure on the same held-out questions:",
        "",
        "| protocol | measure | sgmem | strongest baseline | ratio | what a target needs |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    by_type = q.get("by_type", {})
    for p, d in by_type.items():
        order = {t: i for i, t in enumerate(QUESTION_TYPES)}  # the benchmark's order, then any other type
        types = sorted(d.get("sgmem", {}), key=lambda t: (order.get(t, len(order)), t))
        if not types:
            continue
        out += [
            "",
            f"Protocol {p}, per question type (held out, questions): sgmem / the strongest baseline of each measure",
            "",
            "| question type | n | " + " | ".join(_MEASURES) + " |",
            "|---|---|" + "---|" * len(_MEASURES),
        ]
        for t in types:
            cells = []
            for i in range(len(_MEASURES)):
                base = max(v[t][i] for b, v in d.items() if b != "sgmem" and t in v)
                cells.append(f"{d['sgmem'][t][i]:.1f} / {base:.1f}")
            out.append(f"| {t} | {q.get('counts', {}).get(p, {}).get(t, '–')} | " + " | ".join(cells) + " |")
    return out


def summary_lines(raw: dict[str, Any]) -> list[str]:
    """One bullet: which channels help where."""
    src = _sources(raw)
    if not src:
        return []
    helps: dict[str, list[str]] = defaultdict(list)
    for ch in raw["channels"]:
        for s, cfgs in src.items():
            groups = list(cfgs[ALL_ON])
            on = [v for g in groups for v in cfgs[ALL_ON][g]]
            off = [v for g in groups for v in cfgs[ch][g]]
            d, se, _ = _diff(on, off)
            if _word(d, se) == "helps":
                helps[s].append(ch)
    parts = [f"{s}: {', '.join(chs)}" for s, chs in helps.items() if chs]
    return [
        "- Channels whose removal costs recall@10 by more than two standard errors (ablation part) — "
        + ("; ".join(parts) if parts else "none")
        + "."
    ]
