"""Nested leave-one-conversation-out cross-validation of every setting tuned on LoCoMo dev.

A setting chosen by measurement on the six dev conversations flatters the
figures measured on those same six. Here every such setting is chosen
*inside* each fold: for each conversation, the settings are chosen on the
other conversations only, by a search that does not start at the shipped
defaults, and the chosen settings are then measured on the held-out
conversation. Held-out values are pooled over all questions
(question-weighted, as every LoCoMo figure of sgmem).

Per fold, in this order (each stage on top of the fold's earlier choices):

1. **retrieval** (:data:`SEARCH_GRID`: the hybrid's channel weights and
   priors, the graph and pyramid parameters, the memory unit): coordinate
   descent from a neutral start (every channel weight 1, every prior and
   optional term 0, the graph's and pyramid's parameters at the centre of
   their grids), :data:`SWEEPS` sweeps over the axes in order, each axis set
   to its best value on the training conversations with the others held;
   chosen by evidence recall@10, categories 1–4. Ingest-time axes
   (``graph.knn_k``, ``pyramid.keywords_per_turn``) ingest the conversations
   once per value.
2. **relevance cutoff** (``Config.min_relevance``): its own objective
   (:mod:`sgmem.eval.answers`): the lowest threshold of :data:`CUTOFF_GRID`
   that empties at least 95 % of the contexts of the unrelated questions
   asked of the training conversations. Held out: the share emptied on the
   held-out conversation and the share of its evidence hits the cutoff keeps.
3. **context digest** (``Config.context_turn_tokens``, :data:`DIGEST_GRID`):
   chosen by the evidence inside a 1,000-token :meth:`Memory.context`,
   counted as whole turns.

The gate's τ_noop is calibrated per fold by :func:`sgmem.eval.loo.gate_loo`.

Every evaluated (configuration, conversation) pair's per-question values are
memoised in a JSON-lines file, so folds share evaluations and a rerun
measures only what is new. :func:`coordinate_descent` and :func:`nested_cv`
are the generic machinery (any per-group scorer); :func:`run_cv` applies them
to LoCoMo.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..context import ContextTurn, fit
from ..embed.base import Embedder
from ..errors import InvalidInputError
from ..memory import Memory
from .answers import EMPTY, PAIRS, answer_pairs, store_pairs
from .chat import RRF_K, _Memo, chat_conversation, rrf
from .locomo import Conversation, Question, context_evidence, recall_at_k, turns_of
from .loo import _configured, apply_overrides
from .relevance import unrelated_questions

__all__ = [
    "CUTOFF_GRID",
    "DIGEST_GRID",
    "RELATIVE_GRID",
    "SEARCH_GRID",
    "ACT_GRID",
    "SMOKE_ACT_GRID",
    "SMOKE_GRID",
    "SWEEPS",
    "TIE_EPS",
    "Axis",
    "Evaluator",
    "Fold",
    "coordinate_descent",
    "modal_choices",
    "nested_cv",
    "run_cv",
    "verdicts",
]

Setting = dict[str, Any]
CATS = (1, 2, 3, 4)
#: bump when what a memoised value means changes (the memo file is keyed by it)
MEMO_VERSION = 1
#: fields a search with ``min_score=0`` does not read, fixed in the memo keys of the recall and relevance values
_UNREAD_BY_SEARCH: dict[str, Any] = {"context_turn_tokens": 40, "min_relevance": None}


def _llm_free_repr(cfg: Config) -> str:
    """``repr(cfg)`` without the settings that only an LLM path reads (the evaluation runs with no LLM).

    A memo key stays valid when such a setting is added or its default changes: the LightGMEM relation
    edges' ``EntityConfig.relations``/``relation_batch``/``relation_bonus`` and ``PyramidConfig.llm_keywords``
    (``None`` = on with an LLM, so off here, written as ``False`` as the first memos had it).
    """
    c = repr(replace(cfg, pyramid=replace(cfg.pyramid, llm_keywords=False)))
    return re.sub(r", relations=\w+, relation_batch=\d+, relation_bonus=[0-9.e-]+", "", c)


@dataclass(frozen=True)
class Axis:
    """One setting searched: a dotted :class:`sgmem.Config` path, its candidate values and the search's start.

    ``needs``: the key of another setting that must be non-zero for this one to change anything (the graph's
    parameters need ``hybrid.w_graph`` > 0, the pyramid's ``hybrid.w_pyramid`` > 0): where a fold chooses 0
    for it, this axis is reported as inert in that fold, not as a verdict (:func:`verdicts`).
    """

    key: str
    values: tuple[Any, ...]
    start: Any
    ingest: bool = False  # read at ingest: each value needs its own ingestion
    needs: str | None = None

    def __post_init__(self) -> None:
        if self.start not in self.values:
            raise InvalidInputError(f"{self.key} start", self.start, f"one of its values {self.values}")


def _shipped_value(key: str) -> Any:
    obj: Any = Config()
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _around(key: str, *, half: bool = True, needs: str | None = None) -> Axis:
    """A weight or prior searched around its shipped value ``s``: 0 (off), ``s/2`` (when ``half``), ``s``, ``2s``."""
    s = float(_shipped_value(key))
    vals = sorted({0.0, *((round(s / 2, 6),) if half else ()), s, round(2 * s, 6)} if s else {0.0, 0.1, 0.2, 0.4})
    return Axis(key, tuple(vals), s, needs=needs)


def _discrete(key: str, values: Sequence[Any], *, ingest: bool = False, needs: str | None = None) -> Axis:
    """An axis over ``values`` (and the shipped value, added when missing), starting at the shipped value."""
    s = _shipped_value(key)
    vals = list(values) if s in values else sorted([*values, s])
    return Axis(key, tuple(vals), s, ingest=ingest, needs=needs)


_G, _PY = "hybrid.w_graph", "hybrid.w_pyramid"

#: [D] The retrieval search (stage 1), around the shipped values (the start): the hybrid's channel weights at 0,
#: half, the shipped value and double, its priors and optional terms at 0, the shipped value and double, the
#: sentence graph's and the pyramid's parameters (inert where their channel weight is 0), the memory unit.
#: Ingest-time axes have two or three values. The dialogue-act weights are searched in a stage of their own
#: (:data:`ACT_GRID`, on the echo condition); ``w_entity`` needs the entity layer (off by default).
SEARCH_GRID: tuple[Axis, ...] = (
    _around("hybrid.w_lexical"),
    _around("hybrid.w_sentence"),
    _around("hybrid.w_turn"),
    _around("hybrid.w_graph"),
    _around("hybrid.w_pyramid"),
    _around("hybrid.length_prior", half=False),
    _around("hybrid.neighbour_weight", half=False),
    _around("hybrid.neighbour_dense", half=False),
    _around("hybrid.propagation", half=False),
    _around("hybrid.session_weight", half=False),
    _around("hybrid.session_spread", half=False),
    _around("hybrid.date_day_bonus", half=False),
    _around("hybrid.date_month_bonus", half=False),
    _discrete("hybrid.date_slack_days", (0, 1, 2), needs="hybrid.date_day_bonus"),
    _around("hybrid.rest_weight", half=False),
    _discrete("hybrid.speaker_match", (0.0, 0.5, 1.0)),
    _discrete("memory_unit", ("turn", "exchange")),
    _discrete("graph.hops", (0, 1, 2), needs=_G),
    _discrete("graph.seeds", (5, 15, 30), needs=_G),
    _discrete("graph.gamma", (0.8, 1.0, 1.2), needs=_G),
    _discrete("graph.knn_k", (1, 3, 5), ingest=True, needs=_G),
    # the sentence graph's edge rule (GraphConfig.knn_rule): incremental "earlier" neighbours or the paper's true kNN
    _discrete("graph.knn_rule", ("earlier", "knn"), ingest=True, needs=_G),
    _discrete("pyramid.depth", (2, 3, 4), needs=_PY),
    _discrete("pyramid.rounds", (2, 4, 8), needs=_PY),
    _discrete("pyramid.query_keywords", (3, 4, 5), needs=_PY),
    _discrete("pyramid.critical", (10, 20, 40), needs=_PY),
    _discrete("pyramid.level_weight", (0.0, 0.2, 0.4), needs=_PY),
    _discrete("pyramid.keywords_per_turn", (12, 24, 36), ingest=True, needs=_PY),
)
#: [D] The dialogue-act stage (on top of each fold's retrieval choice), chosen on the *echo* condition of
#: :mod:`sgmem.eval.chat` (every question asked before and answered "I'm not sure"), which is what these weights
#: are for: a stored question's weight, an echo's (a stored question at cosine >= ``echo_cosine`` to the query),
#: the reply channel's and a non-answer's, around the shipped values.
ACT_GRID: tuple[Axis, ...] = (
    _discrete("hybrid.question_weight", (0.5, 0.75, 1.0)),
    _discrete("hybrid.echo_cosine", (0.7, 0.8, 0.9)),
    _discrete("hybrid.echo_weight", (0.0, 0.25, 0.5)),
    _discrete("hybrid.reply_weight", (0.25, 0.5, 1.0)),
    _discrete("hybrid.non_answer_weight", (0.0, 0.2, 1.0)),
)
#: a tiny search for smoke runs
SMOKE_GRID: tuple[Axis, ...] = (
    _discrete("hybrid.w_lexical", (0.0,)),
    _discrete("graph.knn_k", (1,), ingest=True, needs=_G),
)
#: a tiny act stage for smoke runs
SMOKE_ACT_GRID: tuple[Axis, ...] = (_discrete("hybrid.echo_weight", (1.0,)),)
#: coordinate-descent sweeps over the axes
SWEEPS = 2
#: thresholds for ``Config.min_relevance`` (those of :data:`sgmem.eval.answers.CUTOFF_GRID`)
CUTOFF_GRID: tuple[float, ...] = (0.15, 0.175, 0.2, 0.225, 0.25, 0.275, 0.3, 0.35)
#: ``Config.relative_relevance`` values whose held-out effect is reported (not chosen: see :func:`run_cv`)
RELATIVE_GRID: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
#: ``Config.context_turn_tokens``: whole turns (0) and digests
DIGEST_GRID: tuple[int, ...] = (0, 20, 40, 80)


def _label(setting: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in setting.items()) or "(none)"


# --------------------------------------------------------------- the generic machinery
def coordinate_descent(
    axes: Sequence[Axis],
    score: Callable[[Setting], float],
    *,
    sweeps: int = SWEEPS,
    start: Mapping[str, Any] | None = None,
) -> tuple[Setting, float, list[dict[str, Any]]]:
    """Maximise ``score`` one axis at a time from ``start`` (default: each axis's ``start``).

    Each sweep visits the axes in order; an axis moves to the value with the
    highest score, the others held; a tie keeps the current value. Returns
    the setting, its score and the trace (per axis visit: the scores seen).
    """
    cur: Setting = dict(start) if start is not None else {a.key: a.start for a in axes}
    best = score(cur)
    trace: list[dict[str, Any]] = []
    for sweep in range(sweeps):
        moved = False
        for ax in axes:
            seen = {}
            for v in ax.values:
                cand = {**cur, ax.key: v}
                s = best if v == cur[ax.key] else score(cand)
                seen[repr(v)] = s
                if s > best + 1e-12:
                    cur, best, moved = cand, s, True
            trace.append({"sweep": sweep + 1, "axis": ax.key, "scores": seen, "value": cur[ax.key]})
        if not moved:
            break
    return cur, best, trace


#: two scores closer than this are a tie (the same rankings give the same pooled mean)
TIE_EPS = 1e-9


def verdicts(
    axes: Sequence[Axis], chosen: Mapping[str, Any], trace: Sequence[Mapping[str, Any]], *, eps: float = TIE_EPS
) -> dict[str, dict[str, Any]]:
    """What a search says about each axis, from its trace: per axis key, ``chosen`` (the value kept), ``tied``
    (the other values that scored the same at the axis's last visit) and ``verdict``:

    * ``"inert"``: the setting it ``needs`` is 0 in ``chosen`` (``inert`` names it), or every value scored the
      same at its last visit (``inert``: ``"no value changed the score"``) — the search says nothing of it;
    * ``"tie"``: the value kept ties with others (the search keeps the current value on a tie, so a tie with
      the start value is no evidence for it);
    * ``"chosen"``: the value scored strictly best.
    """
    last = {t["axis"]: t for t in trace}
    out: dict[str, dict[str, Any]] = {}
    for ax in axes:
        v = chosen[ax.key]
        rec: dict[str, Any] = {"chosen": v, "tied": [], "inert": None, "verdict": "chosen"}
        scores = last[ax.key]["scores"] if ax.key in last else {}
        ref = scores.get(repr(v))
        if ref is not None:
            rec["tied"] = [w for w in ax.values if w != v and repr(w) in scores and abs(scores[repr(w)] - ref) <= eps]
        if ax.needs is not None and ax.needs in chosen and not chosen[ax.needs]:
            rec["inert"], rec["verdict"] = f"{ax.needs} = {chosen[ax.needs]}", "inert"
        elif len(scores) > 1 and len(rec["tied"]) == len(scores) - 1:
            rec["inert"], rec["verdict"] = "no value changed the score", "inert"
        elif rec["tied"]:
            rec["verdict"] = "tie"
        out[ax.key] = rec
    return out


def pooled(values: Sequence[np.ndarray]) -> float:
    """Question-weighted mean of per-group per-question values (NaN when there are no questions)."""
    vals = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in values]) if values else np.zeros(0)
    return float(vals.mean()) if vals.size else float("nan")


@dataclass
class Fold:
    """One held-out group: what was chosen on the others, and its values there."""

    held_out: str
    chosen: Setting
    train: float
    held: np.ndarray  # the held-out group's per-question values under ``chosen``
    trace: list[dict[str, Any]] = field(default_factory=list)
    #: per axis: the value kept, the values tied with it, inert or not (:func:`verdicts`)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)


def nested_cv(
    groups: Sequence[str],
    axes: Sequence[Axis],
    values: Callable[[Setting, str], np.ndarray],
    *,
    sweeps: int = SWEEPS,
    start: Mapping[str, Any] | Callable[[str], Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Fold]:
    """Leave one group out: choose a setting by :func:`coordinate_descent` on the others, measure it on it.

    ``values(setting, group)`` gives the per-question values a setting is
    chosen by (1-d). A fold's selection only ever reads the other groups'
    values; the held-out group's are read once, for the chosen setting.
    ``start``: where each fold's search starts (a setting, or a function of the held-out group; default: each
    axis's ``start``); the chosen setting holds the start's keys too.
    """
    if len(groups) < 2:
        raise InvalidInputError("groups", list(groups), "at least two groups to leave one out")
    folds: list[Fold] = []
    for held in groups:
        train = [g for g in groups if g != held]

        def on_train(s: Setting, train: list[str] = train) -> float:
            return pooled([values(s, g) for g in train])

        first = start(held) if callable(start) else start
        begin = None if first is None else {**dict(first), **{a.key: a.start for a in axes if a.key not in first}}
        chosen, score, trace = coordinate_descent(axes, on_train, sweeps=sweeps, start=begin)
        folds.append(
            Fold(
                held,
                chosen,
                score,
                np.asarray(values(chosen, held), dtype=np.float64),
                trace,
                verdicts(axes, chosen, trace),
            )
        )
        if progress:
            progress(f"fold {len(folds)}/{len(groups)} (held out {held}): {100 * score:.2f} on the others")
    return folds


def modal_choices(choices: Sequence[Mapping[str, Any]]) -> dict[str, tuple[Any, int]]:
    """Per key: the value most folds chose and how many chose it (ties: the value chosen first)."""
    out: dict[str, tuple[Any, int]] = {}
    keys = list(dict.fromkeys(k for c in choices for k in c))
    for k in keys:
        counts = Counter(json.dumps(c[k]) for c in choices if k in c)
        top = max(counts.values())
        first = next(json.dumps(c[k]) for c in choices if k in c and counts[json.dumps(c[k])] == top)
        out[k] = (json.loads(first), top)
    return out


# --------------------------------------------------------------- LoCoMo evaluations, memoised
class Evaluator:
    """Per-(configuration, conversation) per-question values on LoCoMo, memoised on disk.

    Conversations are ingested lazily, once per ingest-time setting (the two
    most recent kept open). ``groups`` are the units folds leave out: the
    conversations, or (one conversation) its questions' halves.
    """

    def __init__(
        self,
        conversations: Sequence[Conversation],
        embedder: Embedder | None,
        memo: Path | None,
        *,
        base: Config | None = None,
        ingest_keys: Sequence[str] = (),
        max_questions: int | None = None,
        budget: int = 1000,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.base = base or Config()
        # each text (a question asked under many settings, a turn ingested once per ingest-time setting) is
        # embedded once per run
        self.embedder = _Memo(embedder) if embedder is not None else None
        self.budget = budget
        self.progress = progress
        self.ingest_keys = tuple(ingest_keys)
        self.convs = {c.sample_id: c for c in conversations}
        self.questions: dict[str, list[Question]] = {
            c.sample_id: [q for q in c.questions[:max_questions] if q.category in CATS] for c in conversations
        }
        self.turn_text = {
            c.sample_id: {m["id"]: f"{m['name']}: {m['content']}" for _, _, msgs in c.sessions for m in msgs}
            for c in conversations
        }
        # groups: conversation ids, or halves of the only conversation's questions
        if len(conversations) == 1:
            cid = conversations[0].sample_id
            n = len(self.questions[cid])
            self.groups = {f"{cid}[:{n // 2}]": (cid, slice(0, n // 2)), f"{cid}[{n // 2}:]": (cid, slice(n // 2, n))}
        else:
            self.groups = {c.sample_id: (c.sample_id, slice(None)) for c in conversations}
        # what a memoised value depends on besides the configuration: the embedder and the conversation's data
        self.fingerprint = {
            c.sample_id: hashlib.sha1(
                json.dumps(
                    [
                        getattr(embedder, "name", repr(embedder)),
                        [
                            [k, str(at), [[m["id"], m["name"], m["content"]] for m in msgs]]
                            for k, at, msgs in c.sessions
                        ],
                        [[q.question, q.category, q.evidence] for q in self.questions[c.sample_id]],
                    ]
                ).encode()
            ).hexdigest()
            for c in conversations
        }
        self._mems: OrderedDict[str, dict[str, Memory]] = OrderedDict()
        self.memo_path = memo
        self._warmed = False
        self.memo: dict[str, Any] = {}
        self.evaluated = 0  # evaluations computed in this run (not read from the memo)
        if memo is not None and memo.exists():
            for line in memo.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    self.memo[rec["key"]] = rec["value"]

    # ---- memory and memo
    def config(self, setting: Mapping[str, Any]) -> Config:
        return apply_overrides(self.base, setting)

    def _memory(self, setting: Mapping[str, Any], cid: str) -> Memory:
        ingest = {k: setting[k] for k in self.ingest_keys if k in setting}
        ikey = json.dumps(ingest, sort_keys=True)
        if ikey in self._mems:
            self._mems.move_to_end(ikey)
        else:
            self._mems[ikey] = {}
            while len(self._mems) > 2:
                _, old = self._mems.popitem(last=False)
                for m in old.values():
                    m.close()
        mems = self._mems[ikey]
        if cid not in mems:
            conv = self.convs[cid]
            mem = Memory(embedder=self.embedder, config=apply_overrides(self.base, ingest))
            for key, at, msgs in conv.sessions:
                mem.add(msgs, scope=cid, thread=key, at=at)
            mems[cid] = mem
            if self.progress:
                self.progress(f"{cid} ingested ({_label(ingest)})")
        return mems[cid]

    def _key(self, kind: str, cfg: Config | str, cid: str) -> str:
        if isinstance(cfg, Config) and kind in ("recall", "relevance", "pairs"):
            # searches with min_score=0 read neither the cutoff nor the digest: a key without them stays valid
            # when their defaults change (any fixed value would do; these are the ones the first memos used)
            cfg = replace(cfg, **_UNREAD_BY_SEARCH)
        c = _llm_free_repr(cfg) if isinstance(cfg, Config) else cfg
        h = hashlib.sha1(f"{MEMO_VERSION}|{kind}|{c}|{self.fingerprint.get(cid, cid)}|{self.budget}".encode())
        return h.hexdigest()

    def _warm(self) -> None:
        """Embed every query of the run in one batch (one model call, not one per query and setting)."""
        if self._warmed or self.embedder is None:
            return
        self._warmed = True
        texts = [q.question for qs in self.questions.values() for q in qs] + unrelated_questions()
        texts += [p["question"] for p in answer_pairs()]
        self.embedder.embed(list(dict.fromkeys(texts)))

    def _memoised(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self.memo:
            self._warm()
            value = compute()
            self.memo[key] = value
            self.evaluated += 1
            if self.memo_path is not None:
                self.memo_path.parent.mkdir(parents=True, exist_ok=True)
                with self.memo_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({"key": key, "value": value}) + "\n")
        return self.memo[key]

    def _slice(self, group: str, rows: Any) -> np.ndarray:
        _, sl = self.groups[group]
        return np.asarray(rows, dtype=np.float64)[sl]

    def close(self) -> None:
        for mems in self._mems.values():
            for m in mems.values():
                m.close()
        self._mems.clear()

    # ---- metrics
    def recall(self, setting: Mapping[str, Any], group: str) -> np.ndarray:
        """Per question: evidence recall@5, @10, @20 of the hybrid (``min_score=0``)."""
        cid, _ = self.groups[group]
        cfg = self.config(setting)

        def compute() -> list[list[float]]:
            mem = self._memory(setting, cid)
            rows = []
            with _configured(mem, cfg):
                for q in self.questions[cid]:
                    turns = turns_of(mem.search(q.question, scope=cid, k=20, mode="hybrid", min_score=0))
                    rows.append([recall_at_k(turns, q.evidence, k) for k in (5, 10, 20)])
            return rows

        return self._slice(group, self._memoised(self._key("recall", cfg, cid), compute)).reshape(-1, 3)

    def context(self, setting: Mapping[str, Any], group: str) -> np.ndarray:
        """Per question: evidence inside the ``budget``-token context as (fragments, whole turns)."""
        cid, _ = self.groups[group]
        cfg = self.config(setting)

        def compute() -> list[list[float]]:
            mem = self._memory(setting, cid)
            rows = []
            own = mem.min_relevance
            with _configured(mem, cfg):
                mem.min_relevance = own if cfg.min_relevance is None else float(cfg.min_relevance)
                try:
                    for q in self.questions[cid]:
                        text, ids = mem._context_with_ids(
                            q.question, scope=cid, budget_tokens=self.budget, mode="hybrid"
                        )
                        rows.append(list(context_evidence(text, ids, q.evidence, self.turn_text[cid])))
                finally:
                    mem.min_relevance = own
            return rows

        return self._slice(group, self._memoised(self._key("context", cfg, cid), compute)).reshape(-1, 2)

    def relevance(self, setting: Mapping[str, Any], group: str) -> dict[str, Any]:
        """The cutoff's inputs: each unrelated question's best relevance in the ``budget``-token context's
        candidates (its context is empty under a threshold above it), and (relevance, best relevance) of each
        evidence hit among the first 10 hits of the group's questions."""
        cid, sl = self.groups[group]
        cfg = self.config(setting)

        def compute() -> dict[str, Any]:
            mem = self._memory(setting, cid)
            k = min(cfg.limits.max_k, max(10, self.budget // 12))  # as Memory.context ranks
            with _configured(mem, cfg):
                best = []
                for uq in unrelated_questions():
                    ranked, idx, qv = mem._ranked(uq, cid, k, "hybrid", None, None, None, None)
                    rel = mem._hit_relevance(idx, qv, ranked) if idx is not None and qv is not None and ranked else {}
                    best.append(max(rel.values(), default=0.0))
                evidence = []
                for q in self.questions[cid]:
                    hits = mem.search(q.question, scope=cid, k=10, min_score=0)
                    top = max((h.relevance for h in hits), default=0.0)
                    evidence.append([[h.relevance, top] for h in hits if set(h.message_ids) & set(q.evidence)])
            return {"unrelated": best, "evidence": evidence}

        raw = self._memoised(self._key("relevance", cfg, cid), compute)
        # the unrelated questions belong to the conversation; halves of one conversation share them
        return {"unrelated": raw["unrelated"], "evidence": raw["evidence"][sl]}

    def pairs(self, setting: Mapping[str, Any]) -> list[list[float] | None]:
        """Per bundled answer pair (:func:`sgmem.eval.answers.answer_pairs`, stored as a chat in a scope of its
        own): (relevance, best hit's relevance) of its answering turn among its question's first 10 hits, or
        None when it is not among them."""
        cfg = self.config(setting)
        pairs = answer_pairs()

        def compute() -> list[list[float] | None]:
            ingest = {k: setting[k] for k in self.ingest_keys if k in setting}
            out: list[list[float] | None] = []
            with Memory(embedder=self.embedder, config=apply_overrides(self.base, ingest)) as mem:
                ids = store_pairs(mem, PAIRS, pairs)
                with _configured(mem, cfg):
                    for p, mid in zip(pairs, ids, strict=True):
                        hits = mem.search(p["question"], scope=PAIRS, k=10, min_score=0)
                        best = max((h.relevance for h in hits), default=0.0)
                        out.append(next(([h.relevance, best] for h in hits if mid in h.message_ids), None))
            return out

        data = hashlib.sha1(json.dumps([getattr(self.embedder, "name", ""), pairs]).encode()).hexdigest()
        return list(self._memoised(self._key("pairs", cfg, f"{PAIRS}:{data}"), compute))

    def baselines(self, group: str, extra: Mapping[str, Callable[[Conversation], Callable[[str, int], list[str]]]]
                  ) -> dict[str, np.ndarray]:  # fmt: skip
        """Per baseline, per question: recall@5, @10, @20 and whole-turn / fragment evidence in the budget
        (its ranked turns packed whole)."""
        cid, _ = self.groups[group]
        conv = self.convs[cid]

        def compute() -> dict[str, list[list[float]]]:
            mem = self._memory({}, cid)
            info: dict[str, tuple[int, datetime, str, str, str]] = {}
            for key, at, msgs in conv.sessions:
                for m in msgs:
                    info[m["id"]] = (len(info), at, key, m["name"], m["content"])
            depth = min(len(info), max(20, self.budget // 8))
            rankings: dict[str, list[list[str]]] = {}
            for name, mode in (("BM25 turns (sgmem bm25)", "bm25"), ("dense sentences", "vector")):
                rankings[name] = [
                    turns_of(mem.search(q.question, scope=cid, k=depth, mode=mode, min_score=0))
                    for q in self.questions[cid]
                ]
            for name, make in extra.items():
                search = make(conv)
                rankings[name] = [search(q.question, depth) for q in self.questions[cid]]
            bm25 = [n for n in rankings if n.startswith("BM25")]
            best_bm25 = max(bm25, key=lambda n: statistics.fmean(
                recall_at_k(r, q.evidence, 10) for r, q in zip(rankings[n], self.questions[cid], strict=True)
            ) if self.questions[cid] else 0.0)  # fmt: skip
            rankings[f"RRF(BM25, dense), k={RRF_K}"] = [
                rrf([b, v]) for b, v in zip(rankings[best_bm25], rankings["dense sentences"], strict=True)
            ]
            out: dict[str, list[list[float]]] = {}
            for name, ranks in rankings.items():
                rows = []
                for ranked, q in zip(ranks, self.questions[cid], strict=True):
                    text, ids = _pack(ranked, info, self.budget)
                    frag, whole = context_evidence(text, ids, q.evidence, self.turn_text[cid])
                    rows.append([recall_at_k(ranked, q.evidence, k) for k in (5, 10, 20)] + [frag, whole])
                out[name] = rows
            return out

        key = self._key("baselines:" + ",".join(sorted(extra)), "-", cid)
        raw = self._memoised(key, compute)
        return {n: self._slice(group, rows).reshape(-1, 5) for n, rows in raw.items()}


def _pack(ranked: Sequence[str], info: Mapping[str, tuple[int, datetime, str, str, str]], budget: int
          ) -> tuple[str, list[str]]:  # fmt: skip
    """Ranked turns packed whole, best first, by sgmem's renderer within ``budget`` tokens."""
    cands = [ContextTurn(*info[t]) for t in ranked if t in info]
    text, chosen = fit(cands, budget)
    by_row = {info[t][0]: t for t in ranked if t in info}
    return text, [by_row[c.key] for c in chosen]


# --------------------------------------------------------------- the cutoff's own objective
def emptied(unrelated_best: Sequence[float], t: float) -> float:
    """Share of unrelated questions whose context is empty under threshold ``t`` (their best relevance < t)."""
    return float(np.mean([b < t for b in unrelated_best])) if unrelated_best else float("nan")


def kept(evidence: Sequence[Sequence[Sequence[float]]], t: float, relative: float) -> tuple[int, int]:
    """(evidence hits kept, evidence hits) under threshold ``t`` with the relative rule (``Memory``'s default)."""
    n = ok = 0
    for hits in evidence:
        for r, best in hits:
            n += 1
            floor = min(t, relative * best) if relative and best >= t else t
            ok += int(r >= floor)
    return ok, n


def choose_cutoff(unrelated_best: Sequence[float], grid: Sequence[float] = CUTOFF_GRID, target: float = EMPTY
                  ) -> float:  # fmt: skip
    """The lowest threshold of ``grid`` emptying at least ``target`` of the unrelated contexts (else the highest)."""
    ok = [t for t in grid if emptied(unrelated_best, t) >= target - 1e-9]
    return min(ok) if ok else max(grid)


# --------------------------------------------------------------- the whole run
def run_cv(
    conversations: Sequence[Conversation],
    embedder: Embedder | None,
    *,
    memo: Path | None = None,
    grid: Sequence[Axis] = SEARCH_GRID,
    act_grid: Sequence[Axis] = ACT_GRID,
    sweeps: int = SWEEPS,
    cutoff_grid: Sequence[float] = CUTOFF_GRID,
    relative_grid: Sequence[float] = RELATIVE_GRID,
    digest_grid: Sequence[int] = DIGEST_GRID,
    budget: int = 1000,
    max_questions: int | None = None,
    extra_baselines: Mapping[str, Callable[[Conversation], Callable[[str, int], list[str]]]] | None = None,
    gate: Callable[[], list[dict[str, Any]]] | None = None,
    base: Config | None = None,
    compare: Mapping[str, Setting] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Nested leave-one-conversation-out selection of every dev-tuned setting; JSON-ready raw results.

    ``relative_relevance`` is not chosen: every objective measured here is
    monotone in it (a lower share keeps more evidence and lets more unrelated
    hits follow a relevant one alike); its held-out effect is reported per
    value. ``gate`` (e.g. ``lambda: gate_loo(path, embedder)``) adds the
    gate's τ_noop folds. ``compare``: more named settings measured in-sample
    beside the shipped defaults and the folds' most frequent choice (e.g. the
    defaults before a change). ``act_grid``: the dialogue-act stage, searched on the echo condition
    (:func:`sgmem.eval.chat.chat_conversation`) on top of each fold's retrieval choice; empty: no act stage.
    """
    t_start = time.perf_counter()
    base = base or Config()
    extra = dict(extra_baselines or {})
    ingest = [a.key for a in grid if a.ingest]
    ev = Evaluator(conversations, embedder, memo, base=base, ingest_keys=ingest, max_questions=max_questions,
                   budget=budget, progress=progress)  # fmt: skip
    echo: Evaluator | None = None
    try:
        groups = list(ev.groups)

        def recall10(s: Setting, g: str) -> np.ndarray:
            return ev.recall(s, g)[:, 1]

        # 1. retrieval settings by recall@10, each fold on the other groups only
        ret_folds = nested_cv(groups, grid, recall10, sweeps=sweeps, progress=progress)
        # 1b. the dialogue-act weights, on the echo condition, from each fold's retrieval choice
        act_folds: dict[str, Fold] = {}
        if act_grid:
            echo_convs = [chat_conversation(c, "echo")[0] for c in conversations]
            # the same texts' vectors and the same memo as the clean conversations'
            echo = Evaluator(echo_convs, ev.embedder, None, base=base, ingest_keys=ingest,
                             max_questions=max_questions, budget=budget, progress=progress)  # fmt: skip
            echo.memo, echo.memo_path, echo._warmed = ev.memo, memo, True
            by_held = {f.held_out: f.chosen for f in ret_folds}

            def echo10(s: Setting, g: str, echo: Evaluator = echo) -> np.ndarray:
                return echo.recall(s, g)[:, 1]

            act_folds = {
                f.held_out: f
                for f in nested_cv(
                    groups, act_grid, echo10, sweeps=sweeps, start=by_held.__getitem__, progress=progress
                )  # fmt: skip
            }
        folds: list[dict[str, Any]] = []
        for fold in ret_folds:
            held, score, trace = fold.held_out, fold.train, fold.trace
            act = act_folds.get(held)
            chosen = act.chosen if act is not None else fold.chosen
            train = [g for g in groups if g != held]
            # 2. the cutoff, by its own objective, under the fold's retrieval setting
            rel_train = [ev.relevance(chosen, g) for g in train]
            t = choose_cutoff([b for r in rel_train for b in r["unrelated"]], cutoff_grid)
            rel_held = ev.relevance(chosen, held)
            pair_vals = ev.pairs(chosen)
            # 3. the digest, by whole-turn evidence in the context, under both
            ctx_train = {d: pooled([ev.context({**chosen, "min_relevance": t, "context_turn_tokens": d}, g)[:, 1]
                                    for g in train]) for d in digest_grid}  # fmt: skip
            digest = max(digest_grid, key=lambda d: (ctx_train[d], -digest_grid.index(d)))
            final = {**chosen, "min_relevance": t, "context_turn_tokens": digest}
            rec = ev.recall(chosen, held)
            ctx = ev.context(final, held)
            folds.append(
                {
                    "held_out": held,
                    "questions": int(len(rec)),
                    "retrieval": chosen,
                    "train_recall@10": 100 * score,
                    "train_echo_recall@10": 100 * act.train if act is not None else None,
                    "trace": trace + (act.trace if act is not None else []),
                    "verdicts": {**fold.verdicts, **(act.verdicts if act is not None else {})},
                    "min_relevance": t,
                    "train_emptied": 100 * emptied([b for r in rel_train for b in r["unrelated"]], t),
                    "context_turn_tokens": digest,
                    "train_context_whole": {str(d): 100 * v for d, v in ctx_train.items()},
                    "held": {
                        "recall@5": rec[:, 0].tolist(),
                        "recall@10": rec[:, 1].tolist(),
                        "recall@20": rec[:, 2].tolist(),
                        "context fragments": ctx[:, 0].tolist(),
                        "context whole turns": ctx[:, 1].tolist(),
                        **({"echo recall@10": echo.recall(chosen, held)[:, 1].tolist()} if echo is not None else {}),
                    },
                    "cutoff_held": {
                        "unrelated": len(rel_held["unrelated"]),
                        "emptied": 100 * emptied(rel_held["unrelated"], t),
                        "kept": {str(r): list(kept(rel_held["evidence"], t, r)) for r in relative_grid},
                        # the bundled answer pairs: used by no choice, measured under each fold's
                        "pairs_found": sum(a is not None for a in pair_vals),
                        "pairs": len(pair_vals),
                        "pairs_kept": {
                            str(r): list(kept([[a] for a in pair_vals if a is not None], t, r)) for r in relative_grid
                        },
                    },
                }
            )
        # baselines on the same questions
        base_vals: dict[str, list[np.ndarray]] = {}
        for g in groups:
            for name, rows in ev.baselines(g, extra).items():
                base_vals.setdefault(name, []).append(rows)
        metric_names = ("recall@5", "recall@10", "recall@20", "context fragments", "context whole turns")
        baselines = {
            name: {m: 100 * pooled([r[:, j] for r in rows]) for j, m in enumerate(metric_names)}
            for name, rows in base_vals.items()
        }
        held_out = {m: 100 * pooled([np.asarray(f["held"][m]) for f in folds]) for m in metric_names}
        echo_baselines: dict[str, float] = {}
        if echo is not None:
            held_out["echo recall@10"] = 100 * pooled([np.asarray(f["held"]["echo recall@10"]) for f in folds])
            echo_vals: dict[str, list[np.ndarray]] = {}
            for g in groups:
                for name, rows in echo.baselines(g, extra).items():
                    echo_vals.setdefault(name, []).append(rows[:, 1])
            echo_baselines = {name: 100 * pooled(rows) for name, rows in echo_vals.items()}
        verdict_counts = {
            a.key: dict(Counter(f["verdicts"][a.key]["verdict"] for f in folds)) for a in (*grid, *act_grid)
        }
        # the folds' most frequent choices, and the shipped defaults, in-sample on every group
        full_choices = [{**f["retrieval"], "min_relevance": f["min_relevance"],
                         "context_turn_tokens": f["context_turn_tokens"]} for f in folds]  # fmt: skip
        modal = modal_choices(full_choices)
        modal_setting = {k: v for k, (v, _) in modal.items()}
        shipped = {k: _shipped(base, k, ev) for k in modal}
        in_sample = {}
        named = {"shipped defaults": {}, **dict(compare or {}), "folds' most frequent choice": modal_setting}
        for name, s in named.items():
            retrieval = {k: v for k, v in s.items() if k not in ("min_relevance", "context_turn_tokens")}
            rec_all = [ev.recall(retrieval, g) for g in groups]
            ctx_all = [ev.context(s, g) for g in groups]
            in_sample[name] = {
                **{m: 100 * pooled([r[:, j] for r in rec_all]) for j, m in enumerate(metric_names[:3])},
                "context fragments": 100 * pooled([c[:, 0] for c in ctx_all]),
                "context whole turns": 100 * pooled([c[:, 1] for c in ctx_all]),
            }
        # the cutoff held out, pooled
        n_unrel = sum(f["cutoff_held"]["unrelated"] for f in folds)
        cutoff = {
            "emptied": sum(f["cutoff_held"]["emptied"] * f["cutoff_held"]["unrelated"] for f in folds) / n_unrel
            if n_unrel
            else float("nan"),
            "kept": {
                str(r): 100
                * sum(f["cutoff_held"]["kept"][str(r)][0] for f in folds)
                / max(1, sum(f["cutoff_held"]["kept"][str(r)][1] for f in folds))
                for r in relative_grid
            },
            "pairs_kept": {
                str(r): 100
                * sum(f["cutoff_held"]["pairs_kept"][str(r)][0] for f in folds)
                / max(1, sum(f["cutoff_held"]["pairs_kept"][str(r)][1] for f in folds))
                for r in relative_grid
            },
            "pairs_found": sum(f["cutoff_held"]["pairs_found"] for f in folds) / max(1, len(folds)),
            "pairs": len(answer_pairs()),
            "relative_default": base.relative_relevance,
            "target": 100 * EMPTY,
        }
        gate_rows = gate() if gate is not None else []
        return {
            "conversations": [c.sample_id for c in conversations],
            "groups": groups,
            "questions": int(sum(len(f["held"]["recall@10"]) for f in folds)),
            "grid": [
                {"key": a.key, "values": list(a.values), "start": a.start, "ingest": a.ingest, "needs": a.needs}
                for a in grid
            ],  # fmt: skip
            "act_grid": [
                {"key": a.key, "values": list(a.values), "start": a.start, "ingest": a.ingest, "needs": a.needs}
                for a in act_grid
            ],  # fmt: skip
            "verdict_counts": verdict_counts,
            "echo_baselines": echo_baselines,
            "sweeps": sweeps,
            "cutoff_grid": list(cutoff_grid),
            "relative_grid": list(relative_grid),
            "digest_grid": list(digest_grid),
            "budget": budget,
            "folds": folds,
            "held_out": held_out,
            "baselines": baselines,
            "cutoff": cutoff,
            "modal": {k: [v, n] for k, (v, n) in modal.items()},
            "shipped": shipped,
            "in_sample": in_sample,
            "gate": gate_rows,
            "tau_noop_default": base.gate.tau_noop,
            "evaluations": {"computed": ev.evaluated, "memoised": len(ev.memo)},
            "seconds": time.perf_counter() - t_start,
        }
    finally:
        ev.close()
        if echo is not None:
            echo.close()


def _shipped(base: Config, key: str, ev: Evaluator) -> Any:
    """The shipped value of a dotted setting (``min_relevance`` None → the embedder's calibrated value)."""
    obj: Any = base
    for part in key.split("."):
        obj = getattr(obj, part)
    if key == "min_relevance" and obj is None:
        from ..config import MIN_RELEVANCE

        name = getattr(ev.embedder, "name", "")
        return MIN_RELEVANCE.get(name, 0.0)
    return obj
