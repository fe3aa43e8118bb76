"""Leave-one-conversation-out (LOO) figures for settings tuned on LoCoMo dev.

Settings chosen by measurement on the six dev conversations (the hybrid's
channel weights, ``w_pyramid``, the context digest, ...) flatter the figures
measured on those same six. This module reports them cross-validated: for each
conversation, the setting of a declared grid that scores best on the *other*
conversations is chosen, then measured on the held-out one; the held-out
values are pooled over all questions (question-weighted, as every LoCoMo
figure of sgmem).

Each conversation is ingested once (:func:`prepare`); a setting only swaps the
Memory's query-time configuration, so a grid costs one pass of queries per
setting. A setting is a dict of overrides on :class:`sgmem.Config` by dotted
path (``{"hybrid.w_lexical": 0.6}``), applied with :func:`dataclasses.replace`;
settings that only matter at ingest (e.g. the sentence graph's kNN) cannot be
varied this way — build one :func:`prepare` per ingest setting instead.

Example (a new channel's weight joins the grid)::

    with prepare(load_locomo(path), embedder) as prep:
        res = loo(prep, {**TUNED_GRID, "hybrid.w_entity": [0.0, 0.5, 1.0]})
        print(render_loo(res))
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Config, HybridConfig
from ..embed.base import Embedder
from ..errors import InvalidInputError
from ..memory import Memory
from ..retrieval.search import Retriever
from .locomo import Conversation, Question, context_evidence, recall_at_k, turns_of

__all__ = [
    "CONTEXT_GRID",
    "TUNED_GRID",
    "FoldResult",
    "LooResult",
    "Metric",
    "Prepared",
    "apply_overrides",
    "context_metric",
    "gate_loo",
    "loo",
    "prepare",
    "recall_metric",
    "render_gate_loo",
    "render_loo",
    "settings_of",
]

Setting = dict[str, Any]

#: The retrieval settings chosen on the dev split (HybridConfig: "chosen by
#: measurement on the LoCoMo dev split"), one at a time: off (0), half and twice
#: the default (the date slack in days: 0 and 2 around 1). The defaults
#: themselves are always a candidate.
TUNED_GRID: dict[str, list[Any]] = {
    f"hybrid.{name}": [0, 2] if name == "date_slack_days" else [0.0, round(v / 2, 4), round(v * 2, 4)]
    for name, v in dataclasses.asdict(HybridConfig()).items()
}

#: The context digest (``Config.context_turn_tokens``; 0, whole turns, by default,
#: as nested cross-validation chose it: :mod:`sgmem.eval.cv`): digests of several sizes.
CONTEXT_GRID: dict[str, list[Any]] = {"context_turn_tokens": [20, 30, 40, 60, 80]}


# --------------------------------------------------------------- settings
def apply_overrides(config: Config, overrides: Mapping[str, Any]) -> Config:
    """``config`` with dotted-path overrides applied (``"hybrid.w_lexical"``), by :func:`dataclasses.replace`.

    Raises:
        InvalidInputError: a path that names no field of the config.
    """
    for path, value in overrides.items():
        parts = path.split(".")
        chain: list[Any] = [config]
        for name in parts[:-1]:
            obj = chain[-1]
            if not dataclasses.is_dataclass(obj) or name not in {f.name for f in dataclasses.fields(obj)}:
                raise InvalidInputError(
                    "grid key", path, "a dotted path of sgmem.Config fields, e.g. 'hybrid.w_lexical'"
                )
            chain.append(getattr(obj, name))
        leaf = chain[-1]
        if not dataclasses.is_dataclass(leaf) or parts[-1] not in {f.name for f in dataclasses.fields(leaf)}:
            raise InvalidInputError("grid key", path, "a dotted path of sgmem.Config fields, e.g. 'hybrid.w_lexical'")
        new: Any = dataclasses.replace(leaf, **{parts[-1]: value})  # type: ignore[type-var]
        for obj, name in zip(reversed(chain[:-1]), reversed(parts[:-1]), strict=True):
            new = dataclasses.replace(obj, **{name: new})
        config = new
    return config


def settings_of(grid: Mapping[str, Sequence[Any]], *, joint: bool = False) -> list[Setting]:
    """The candidate settings of a grid; the first, ``{}``, is the defaults.

    One-at-a-time (default): each key takes each of its values while the rest
    keep their defaults. ``joint=True``: every combination (keep it small).
    """
    out: list[Setting] = [{}]
    if joint:
        keys = list(grid)
        for combo in itertools.product(*(list(grid[k]) for k in keys)):
            s = dict(zip(keys, combo, strict=True))
            if s not in out:
                out.append(s)
        return out
    for key, values in grid.items():
        for v in values:
            if {key: v} not in out:
                out.append({key: v})
    return out


def _label(setting: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in setting.items()) or "defaults"


# --------------------------------------------------------------- metrics
@dataclass(frozen=True)
class Metric:
    """Per-question values a setting is judged by.

    ``fn(mem, scope, question, turn_text)`` returns one value per name in
    ``names``; the first is the one a setting is chosen by, the others are
    reported for the same choice. ``turn_text`` maps a turn id to
    ``"Speaker: text"`` as rendered in a context.
    """

    names: tuple[str, ...]
    fn: Callable[[Memory, str, Question, Mapping[str, str]], Sequence[float]]


def recall_metric(ks: Sequence[int] = (10, 5, 20), mode: str = "hybrid") -> Metric:
    """Evidence recall@k (``sgmem eval locomo``'s formula), chosen by the first k."""

    def fn(mem: Memory, scope: str, q: Question, _: Mapping[str, str]) -> list[float]:
        # min_score=0 as in `sgmem eval locomo`: recall@k measures the ranking, not the relevance cutoff
        turns = turns_of(mem.search(q.question, scope=scope, k=max(ks), mode=mode, min_score=0))
        return [recall_at_k(turns, q.evidence, k) for k in ks]

    return Metric(tuple(f"recall@{k}" for k in ks), fn)


def context_metric(budget: int = 1000, mode: str = "hybrid") -> Metric:
    """Evidence inside ``Memory.context(budget)``: fragments (chosen by) and whole turns."""

    def fn(mem: Memory, scope: str, q: Question, turn_text: Mapping[str, str]) -> tuple[float, float]:
        text, ids = mem._context_with_ids(q.question, scope=scope, budget_tokens=budget, mode=mode)
        return context_evidence(text, ids, q.evidence, turn_text)

    return Metric((f"context@{budget} fragments", f"context@{budget} whole turns"), fn)


# --------------------------------------------------------------- prepared data
@dataclass
class Prepared:
    """Conversations ingested once, each in its own in-memory :class:`Memory` (close when done)."""

    conversations: list[Conversation]
    memories: dict[str, Memory]
    config: Config
    turn_text: dict[str, dict[str, str]]  # conversation -> turn id -> "Speaker: text"

    def close(self) -> None:
        for m in self.memories.values():
            m.close()

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare(
    conversations: Sequence[Conversation],
    embedder: Embedder | None = None,
    config: Config | None = None,
    progress: Callable[[str], None] | None = None,
) -> Prepared:
    """Ingest each conversation once (as ``sgmem eval locomo`` does), ready for :func:`loo`."""
    cfg = config or Config()
    mems: dict[str, Memory] = {}
    text: dict[str, dict[str, str]] = {}
    try:
        for conv in conversations:
            mem = Memory(embedder=embedder, config=cfg)
            mems[conv.sample_id] = mem
            own = text.setdefault(conv.sample_id, {})
            for key, at, msgs in conv.sessions:
                mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
                for msg in msgs:
                    own[msg["id"]] = f"{msg['name']}: {msg['content']}"
            if progress:
                progress(f"{conv.sample_id}: {conv.n_turns} turns ingested, {len(conv.questions)} questions")
    except BaseException:
        for opened in mems.values():
            opened.close()
        raise
    return Prepared(list(conversations), mems, cfg, text)


@contextmanager
def _configured(mem: Memory, config: Config) -> Iterator[None]:
    """The Memory answers queries under ``config`` (its stored data unchanged)."""
    own_cfg, own_ret = mem.config, mem._retriever
    mem.config, mem._retriever = config, Retriever(config)
    try:
        yield
    finally:
        mem.config, mem._retriever = own_cfg, own_ret


# --------------------------------------------------------------- LOO
@dataclass
class FoldResult:
    """One held-out conversation."""

    held_out: str
    questions: int
    chosen: Setting
    train: float  # chosen setting's selected value on the other conversations (%)
    held: list[float]  # chosen setting's metric values on the held-out conversation (%), per metric name
    default: list[float]  # the defaults' values on the held-out conversation (%)
    held_values: list[list[float]] = field(default_factory=list)  # per held-out question: the metric's values
    categories: list[int] = field(default_factory=list)  # per held-out question: its LoCoMo category


@dataclass
class LooResult:
    """Cross-validated figures of one grid and metric."""

    names: tuple[str, ...]
    settings: list[Setting]
    folds: list[FoldResult]
    pooled: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # setting label -> name -> per-question
    select: int = 0  # the metric value settings were chosen by

    def loo(self, i: int = 0) -> float:
        """Held-out value of metric ``i``, pooled over every question (question-weighted), in %."""
        n = sum(f.questions for f in self.folds)
        return sum(f.held[i] * f.questions for f in self.folds) / n if n else float("nan")

    def in_sample(self, i: int = 0, setting: Setting | None = None) -> float:
        """Metric ``i`` of one setting (default: the defaults) over every question, in %."""
        vals = self.pooled[_label(setting or {})][self.names[i]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")

    def best_in_sample(self, i: int = 0) -> tuple[str, float]:
        """The grid's best setting chosen and measured on all conversations (the optimistic figure)."""
        scored = [(_label(s), self.in_sample(i, s)) for s in self.settings]
        return max(scored, key=lambda t: t[1])

    def by_category(self, i: int = 0, setting: Setting | None = None) -> dict[int, tuple[float, float]]:
        """Per LoCoMo category: (held-out LOO value, in-sample value of ``setting``) of metric ``i``, in %."""
        held: dict[int, list[float]] = {}
        for f in self.folds:
            for c, row in zip(f.categories, f.held_values, strict=True):
                held.setdefault(c, []).append(row[i])
        cats = [c for f in self.folds for c in f.categories]
        vals = self.pooled[_label(setting or {})][self.names[i]]
        ins: dict[int, list[float]] = {}
        for c, v in zip(cats, vals, strict=True):
            ins.setdefault(c, []).append(v)
        return {
            c: (100.0 * statistics.fmean(held[c]), 100.0 * statistics.fmean(ins.get(c, [float("nan")])))
            for c in sorted(held)
        }


def loo(
    prepared: Prepared,
    grid: Mapping[str, Sequence[Any]] | Sequence[Setting],
    metric: Metric | None = None,
    *,
    base: Config | Mapping[str, Config] | None = None,
    joint: bool = False,
    categories: Sequence[int] = (1, 2, 3, 4),
    select: int = 0,
    cache: dict[tuple[str, str], np.ndarray] | None = None,
    progress: Callable[[str], None] | None = None,
) -> LooResult:
    """Leave-one-conversation-out selection over ``grid``.

    Args:
        prepared: the ingested conversations (:func:`prepare`).
        grid: ``{dotted config path: [values]}`` (expanded by :func:`settings_of`)
            or an explicit list of settings (include ``{}`` for the defaults).
        metric: what a setting is chosen by (default :func:`recall_metric`:
            recall@10, hybrid mode).
        base: the config the overrides apply to (default ``prepared.config``);
            a mapping from held-out conversation id to config gives each fold
            its own base (e.g. the retrieval setting that fold chose before).
        categories: LoCoMo categories scored (1–4; adversarial 5 apart).
        select: which of the metric's values a setting is chosen by (default the first).
        cache: per-(config, conversation) values kept between calls with the same
            ``prepared`` and metric (e.g. one grid chosen by two of a metric's values).

    For each conversation, the setting with the highest mean of the selected
    value over the other conversations' questions (pooled; ties → the earlier
    setting, so the defaults win ties) is measured on it.
    """
    metric = metric or recall_metric()
    settings = settings_of(grid, joint=joint) if isinstance(grid, Mapping) else [dict(s) for s in grid]
    if not settings:
        raise InvalidInputError("grid", grid, "at least one setting")
    ids = [c.sample_id for c in prepared.conversations]
    if len(ids) < 2:
        raise InvalidInputError("conversations", len(ids), "at least two conversations to leave one out")
    bases: dict[str, Config]
    if base is None or isinstance(base, Config):
        bases = {i: base or prepared.config for i in ids}
    else:
        bases = {i: base[i] for i in ids}
    convs = {c.sample_id: c for c in prepared.conversations}
    cats = set(categories)
    if not 0 <= select < len(metric.names):
        raise InvalidInputError("select", select, f"an index into the metric's values {metric.names}")
    cache = {} if cache is None else cache  # (config repr, conversation) -> questions × names

    def values(cfg: Config, conv_id: str) -> np.ndarray:
        key = (repr(cfg), conv_id)
        if key not in cache:
            conv, mem = convs[conv_id], prepared.memories[conv_id]
            qs = [q for q in conv.questions if q.category in cats]
            with _configured(mem, cfg):
                rows = [list(metric.fn(mem, conv_id, q, prepared.turn_text[conv_id])) for q in qs]
            cache[key] = np.asarray(rows, dtype=np.float64).reshape(len(qs), len(metric.names))
        return cache[key]

    folds: list[FoldResult] = []
    for held in ids:
        cfgs = [apply_overrides(bases[held], s) for s in settings]
        train_scores = []
        for s, cfg in zip(settings, cfgs, strict=True):
            vals = np.concatenate([values(cfg, o) for o in ids if o != held])
            train_scores.append(float(vals[:, select].mean()) if len(vals) else float("nan"))
            if progress:
                progress(f"fold {held}: {_label(s)} → {100 * train_scores[-1]:.2f} on the others")
        best = int(np.nanargmax(train_scores))
        h = values(cfgs[best], held)
        d = values(bases[held], held)
        held_cats = [q.category for q in convs[held].questions if q.category in cats]
        folds.append(
            FoldResult(
                held,
                len(h),
                settings[best],
                100.0 * train_scores[best],
                [100.0 * float(x) for x in h.mean(axis=0)] if len(h) else [float("nan")] * len(metric.names),
                [100.0 * float(x) for x in d.mean(axis=0)] if len(d) else [float("nan")] * len(metric.names),
                h.tolist(),
                held_cats,
            )
        )
    pooled: dict[str, dict[str, list[float]]] = {}
    common = base if isinstance(base, Config) else prepared.config  # in-sample figures: one config for all
    for s in settings:
        allv = np.concatenate([values(apply_overrides(common, s), i) for i in ids])
        pooled[_label(s)] = {n: allv[:, j].tolist() for j, n in enumerate(metric.names)}
    return LooResult(metric.names, settings, folds, pooled, select)


def render_loo(res: LooResult, title: str) -> str:
    """Markdown: the held-out figures first, then the in-sample ones, then the per-fold choices."""
    n = sum(f.questions for f in res.folds)
    lines = [
        f"### {title}",
        "",
        f"Leave-one-conversation-out over {len(res.settings)} settings, {len(res.folds)} folds, {n} questions "
        f"(cat 1–4); chosen by {res.names[res.select]} on the other conversations; held-out values pooled over "
        "questions (question-weighted).",
        "",
        "| figure | " + " | ".join(res.names) + " |",
        "|---|" + "---|" * len(res.names),
        "| **cross-validated (LOO)** | " + " | ".join(f"**{res.loo(i):.1f}**" for i in range(len(res.names))) + " |",
        "| in-sample, defaults | " + " | ".join(f"{res.in_sample(i):.1f}" for i in range(len(res.names))) + " |",
    ]
    sel = res.select
    cat_names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    for c, (held_v, in_v) in res.by_category(sel).items():
        lines.append(
            f"| {res.names[sel]}, {cat_names.get(c, c)} (cat {c}): LOO / in-sample defaults | "
            f"{held_v:.1f} / {in_v:.1f} |" + " |" * (len(res.names) - 1)
        )
    label, best = res.best_in_sample(sel)
    lines += [
        f"| in-sample, best of grid by {res.names[sel]} ({label}) | "
        + " | ".join(f"{best:.1f}" if i == sel else "" for i in range(len(res.names)))
        + " |",
        "",
        "| held out | questions | chosen on the others | others | held-out " + res.names[sel] + " | defaults there |",
        "|---|---|---|---|---|---|",
    ]
    for f in res.folds:
        lines.append(
            f"| {f.held_out} | {f.questions} | {_label(f.chosen)} | {f.train:.1f} | {f.held[sel]:.1f} "
            f"| {f.default[sel]:.1f} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------- the gate's tau_noop
def gate_loo(
    path: str,
    embedder: Embedder,
    quantile: float = 0.8,
    roles: tuple[str, ...] = ("user",),
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """τ_noop calibrated on the other conversations (§2.7), and its skip rate on the held-out one.

    Each LoCoMo conversation is a stream of LLM-free fact candidates (as
    ``sgmem calibrate`` reads a LoCoMo file); a fold's τ is the ``quantile`` of
    the other streams' ``s_vMF`` scores.
    """
    from ..gate.calibrate import calibrate, stream_scores
    from ..gate.config import GateConfig
    from .corpus import corpus_streams
    from .locomo import load_locomo

    ids = [c.sample_id for c in load_locomo(path, limit)]
    streams = corpus_streams(path, roles)[: len(ids)]
    scores = [stream_scores(embedder.embed(s)) if len(s) > 1 else np.zeros(0) for s in streams]
    default = GateConfig().tau_noop
    out = []
    for i, held in enumerate(ids):
        others = np.concatenate([s for j, s in enumerate(scores) if j != i])
        tau = calibrate(others, quantile).tau_noop
        h = scores[i][np.isfinite(scores[i])]
        out.append(
            {
                "held_out": held,
                "tau_noop": tau,
                "skip_held_out": float(np.mean(h > tau)) if h.size else float("nan"),
                "skip_held_out_default": float(np.mean(h > default)) if h.size else float("nan"),
                "candidates": int(h.size),
            }
        )
    return out


def render_gate_loo(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown table of :func:`gate_loo`."""
    from ..gate.config import GateConfig

    n = sum(r["candidates"] for r in rows)
    skip = sum(r["skip_held_out"] * r["candidates"] for r in rows) / n if n else float("nan")
    skip_d = sum(r["skip_held_out_default"] * r["candidates"] for r in rows) / n if n else float("nan")
    lines = [
        f"### Gate τ_noop, calibrated leave-one-conversation-out (default {GateConfig().tau_noop})",
        "",
        "| held out | τ_noop from the others | skipped on held-out | with the default τ | candidates |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['held_out']} | {r['tau_noop']:.4f} | {100 * r['skip_held_out']:.1f} % | "
        f"{100 * r['skip_held_out_default']:.1f} % | {r['candidates']} |"
        for r in rows
    ]
    lines.append(
        f"| **pooled** | {min(r['tau_noop'] for r in rows):.4f}–{max(r['tau_noop'] for r in rows):.4f} | "
        f"**{100 * skip:.1f} %** | {100 * skip_d:.1f} % | {n} |"
    )
    return "\n".join(lines)
