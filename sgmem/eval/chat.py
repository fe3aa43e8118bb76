"""LoCoMo inside a real chat: the evaluation questions are stored too, as a deployed agent stores them.

LoCoMo's protocol never stores its questions. A deployed agent stores
everything said in its chats, its user's earlier questions and its own
unhelpful replies included. Three conditions, each over the same conversations:

- ``clean``: LoCoMo's protocol.
- ``echo``: after the last session, every question of the conversation was
  asked once before, each in a thread of its own, and the assistant replied
  :data:`ECHO_REPLY`; then each question is searched again. The stored
  question matches the query almost exactly and holds no answer.
- ``answered``: the same, but the assistant replied with the reference answer
  (categories 1–4; adversarial questions keep :data:`ECHO_REPLY`). The earlier
  exchange is then good evidence: a hit on that reply counts as finding all of
  the question's evidence.

Systems are searched over the same stores: sgmem's hybrid under candidate
settings (the dialogue-act weights, :class:`sgmem.HybridConfig`), BM25 over
turns, dense MiniLM over sentences, and reciprocal rank fusion of the two
(k = 60, the strongest simple fused baseline). The hybrid's settings are chosen
leave-one-conversation-out by the mean recall@10 (categories 1–4) of the
clean and echo conditions (:data:`CHOOSE_BY`); the held-out figures are
pooled over questions.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from ..config import Config
from ..embed.base import Embedder
from ..memory import Memory
from ..text.acts import FILLER, act_of
from .locomo import Conversation, Question, recall_at_k, turns_of
from .loo import Prepared, _configured, _label, apply_overrides, prepare

__all__ = [
    "ACTS_OFF",
    "CHAT_GRID",
    "CHOOSE_BY",
    "CONDITIONS",
    "ECHO_REPLY",
    "ChatResult",
    "chat_conversation",
    "choose_left_out",
    "evaluate_chat",
    "render_chat",
    "rrf",
]

CONDITIONS = ("clean", "echo", "answered")
ECHO_REPLY = "I'm not sure, I don't remember."
#: the reciprocal-rank-fusion constant (Cormack et al., 2009)
RRF_K = 60
#: Acts switched off: every sentence weighs as a statement (a turn of filler alone is still set apart), no reply
#: channel.
ACTS_OFF: dict[str, Any] = {
    "hybrid.question_weight": 1.0,
    "hybrid.echo_weight": 1.0,
    "hybrid.non_answer_weight": 1.0,
    "hybrid.reply_weight": 0.0,
}
#: The candidate settings of the hybrid's dialogue-act weights: the defaults first, the acts switched off, then
#: every combination of a question's, an echo's and the reply channel's weights.
CHAT_GRID: list[dict[str, Any]] = [
    {},
    ACTS_OFF,
    *(
        {"hybrid.question_weight": qw, "hybrid.echo_weight": ew, "hybrid.reply_weight": rw}
        for qw, ew, rw in itertools.product((0.25, 0.5, 0.75, 1.0), (0.25, 0.5), (0.25, 0.5, 1.0))
    ),
]
#: [D] the conditions a setting is chosen by: those measuring evidence recall (in ``answered`` a hit on the
#: earlier reply counts as finding everything, another measure, reported beside them)
CHOOSE_BY = ("clean", "echo")


def chat_conversation(conv: Conversation, condition: str) -> tuple[Conversation, dict[int, str]]:
    """``conv`` as ``condition`` stores it, and, for ``answered``, each question's answering reply id.

    The echo threads follow the last session: one per question (in question
    order, an hour apart, from a day after the last session), a user turn
    asking it and the assistant's reply.
    """
    if condition not in CONDITIONS:
        raise ValueError(f"condition {condition!r}: expected one of {CONDITIONS}")
    if condition == "clean":
        return conv, {}
    last = max(at for _, at, _ in conv.sessions)
    sessions = list(conv.sessions)
    answers: dict[int, str] = {}
    for i, q in enumerate(conv.questions):
        at = last + timedelta(days=1, hours=i)
        reply = q.answer if condition == "answered" and q.category != 5 and q.answer else ECHO_REPLY
        if reply != ECHO_REPLY:
            answers[i] = f"E{i}:a"
        sessions.append(
            (
                f"echo-{i}",
                at,
                [
                    {"role": "user", "name": "User", "content": q.question, "id": f"E{i}:q", "at": at},
                    {"role": "assistant", "name": "Assistant", "content": reply, "id": f"E{i}:a", "at": at},
                ],
            )
        )
    return dataclasses.replace(conv, sessions=sessions), answers


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion: each item scores Σ 1 / (k + rank) over the rankings (rank from 1)."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda t: -score[t])


def _recall(turns: Sequence[str], q: Question, answer_id: str | None, k: int) -> float:
    if answer_id is not None and answer_id in list(dict.fromkeys(turns))[:k]:
        return 1.0  # the earlier exchange's reply states the answer
    return recall_at_k(turns, q.evidence, k)


@dataclass
class ChatResult:
    """What :func:`evaluate_chat` measured; figures in % of categories 1–4 questions, recall@``k``."""

    k: int
    settings: list[dict[str, Any]]
    #: condition -> system or setting label -> conversation -> per-question recall
    values: dict[str, dict[str, dict[str, list[float]]]]
    #: held-out conversation -> the setting its fold chose
    chosen: dict[str, dict[str, Any]]
    conversations: list[str]
    #: condition -> (hybrid hits whose ``why`` sentence is filler, hybrid hits)
    filler_why: dict[str, tuple[int, int]] = field(default_factory=dict)

    def pooled(self, condition: str, label: str) -> float:
        vals = [v for c in self.conversations for v in self.values[condition][label][c]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")

    def loo(self, condition: str) -> float:
        """The hybrid's held-out recall: each conversation under the setting chosen on the others."""
        vals = [v for c in self.conversations for v in self.values[condition][_label(self.chosen[c])][c]]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")


def evaluate_chat(
    conversations: Sequence[Conversation],
    embedder: Embedder | None = None,
    *,
    config: Config | None = None,
    settings: Sequence[Mapping[str, Any]] = CHAT_GRID,
    k: int = 10,
    conditions: Sequence[str] = CONDITIONS,
    max_questions: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> ChatResult:
    """Measure every condition, the baselines and the hybrid's settings; choose the settings LOO.

    ``max_questions``: only the first questions of each conversation are
    searched (all of them are still stored in the echo conditions). With one
    conversation there is nothing to leave out: the defaults are reported.
    """
    base = config or Config()
    if embedder is not None:  # every question is embedded once, not once per system, setting and condition
        embedder = _Memo(embedder)
    settings = [dict(s) for s in settings]
    ids = [c.sample_id for c in conversations]
    values: dict[str, dict[str, dict[str, list[float]]]] = {}
    filler_why: dict[str, tuple[int, int]] = {}
    depth = max(k, 100)  # how deep each baseline ranking goes before fusion
    for cond in conditions:
        built = [chat_conversation(c, cond) for c in conversations]
        answers = {c.sample_id: a for c, a in built}
        vals: dict[str, dict[str, list[float]]] = {}
        with prepare([c for c, _ in built], embedder, base, progress) as prep:
            for conv, _ in built:
                mem = prep.memories[conv.sample_id]
                qs = [(i, q) for i, q in enumerate(conv.questions[:max_questions]) if q.category in (1, 2, 3, 4)]
                bm = [turns_of(mem.search(q.question, scope=conv.sample_id, k=depth, mode="bm25", min_score=0))
                      for _, q in qs]  # fmt: skip
                vec = [turns_of(mem.search(q.question, scope=conv.sample_id, k=depth, mode="vector", min_score=0))
                       for _, q in qs]  # fmt: skip
                ans = answers[conv.sample_id]
                for name, rankings in (("BM25 turns", bm), ("dense sentences", vec)):
                    vals.setdefault(name, {})[conv.sample_id] = [
                        _recall(t, q, ans.get(i), k) for t, (i, q) in zip(rankings, qs, strict=True)
                    ]
                vals.setdefault("RRF(BM25, dense)", {})[conv.sample_id] = [
                    _recall(rrf([b, v]), q, ans.get(i), k) for b, v, (i, q) in zip(bm, vec, qs, strict=True)
                ]
                for s in settings:
                    hits_all = _hybrid(prep, mem, conv.sample_id, apply_overrides(base, s), [q for _, q in qs], k)
                    vals.setdefault(_label(s), {})[conv.sample_id] = [
                        _recall(turns_of(h), q, ans.get(i), k) for h, (i, q) in zip(hits_all, qs, strict=True)
                    ]
                    if not s:  # the defaults: is filler ever a hit's best sentence?
                        bad, n = filler_why.get(cond, (0, 0))
                        for hits in hits_all:
                            for hit in hits:
                                sent = hit.why.get("sentence")
                                n += 1
                                bad += int(sent is not None and act_of(sent) == FILLER)
                        filler_why[cond] = (bad, n)
                if progress:
                    progress(f"{cond}: {conv.sample_id} measured")
        values[cond] = vals
    chosen = choose_left_out(values, settings, ids, conditions)
    return ChatResult(k, [dict(s) for s in settings], values, chosen, ids, filler_why)


def choose_left_out(
    values: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]],
    settings: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    conditions: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """For each conversation, the setting with the best mean recall over the *other* conversations
    (``values[condition][label][conversation]``: per-question recall), in the :data:`CHOOSE_BY` conditions;
    ties go to the earlier setting (the defaults first). With one conversation, the first setting."""
    chosen: dict[str, dict[str, Any]] = {}
    by = [c for c in conditions if c in CHOOSE_BY or not set(CHOOSE_BY) & set(conditions)]
    for held in ids:
        best: dict[str, Any] = dict(settings[0])
        best_score = -np.inf
        if len(ids) < 2:
            chosen[held] = best
            continue
        for s in settings:
            score = statistics.fmean(
                statistics.fmean([v for c in ids if c != held for v in values[cond][_label(s)][c]]) for cond in by
            )
            if score > best_score + 1e-12:
                best, best_score = dict(s), score
        chosen[held] = best
    return chosen


class _Memo:
    """An :class:`Embedder` that embeds each distinct text once per evaluation."""

    def __init__(self, base: Embedder) -> None:
        self.base, self.name, self.dim = base, base.name, base.dim
        self._vecs: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self._vecs]
        if new:
            self._vecs.update(zip(new, self.base.embed(new), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vecs[t] for t in texts]).astype(np.float32, copy=False)


def _hybrid(prep: Prepared, mem: Memory, scope: str, cfg: Config, qs: Sequence[Question], k: int) -> list[Any]:
    with _configured(mem, cfg):
        return [mem.search(q.question, scope=scope, k=k, min_score=0) for q in qs]


def render_chat(res: ChatResult) -> str:
    """A Markdown report: recall@k (categories 1–4) per condition, sgmem against the baselines."""
    conds = [c for c in CONDITIONS if c in res.values]
    baselines = ("BM25 turns", "dense sentences", "RRF(BM25, dense)")
    off = _label(res.settings[1]) if len(res.settings) > 1 else None
    lines = [
        f"LoCoMo inside a chat: recall@{res.k}, categories 1–4, % of questions "
        f"({len(res.conversations)} conversations). Held out here: only the dialogue-act settings, each "
        "conversation under the setting chosen on the others; the rest of the hybrid runs its shipped defaults, "
        "chosen on these same conversations (in-sample). The figure with every setting chosen on the other "
        "conversations is the cross-validation's echo recall (`python -m benchmarks --only cv`).",
        "",
        "| condition | sgmem hybrid (act settings held out, the rest in-sample) | sgmem, defaults (in-sample) "
        + (f"| sgmem, acts off ({off}) " if off else "")
        + "| "
        + " | ".join(baselines)
        + " | sgmem ÷ best baseline |",
        "|---|---|---|" + ("---|" if off else "") + "---|" * len(baselines) + "---|",
    ]
    for cond in conds:
        held = res.loo(cond)
        base_vals = [res.pooled(cond, b) for b in baselines]
        row = [cond, f"**{held:.1f}**", f"{res.pooled(cond, _label({})):.1f}"]
        if off:
            row.append(f"{res.pooled(cond, off):.1f}")
        row += [f"{v:.1f}" for v in base_vals]
        row.append(f"{held / max(base_vals):.2f}×" if max(base_vals) > 0 else "–")
        lines.append("| " + " | ".join(row) + " |")
    if "clean" in res.values:
        clean = res.loo("clean")
        for cond in conds:
            if cond != "clean":
                lines.append("")
                lines.append(f"{cond} ÷ clean (held out): " + (f"{res.loo(cond) / clean:.3f}" if clean else "–"))
    lines += [
        "",
        "Every candidate setting in-sample (all conversations; the folds choose by the mean of "
        + " and ".join(CHOOSE_BY)
        + "):",
        "",
        "| setting | " + " | ".join(conds) + " | mean of " + " and ".join(CHOOSE_BY) + " |",
        "|---|" + "---|" * (len(conds) + 1),
    ]
    for s in res.settings:
        vals = [res.pooled(c, _label(s)) for c in conds]
        by = [v for c, v in zip(conds, vals, strict=True) if c in CHOOSE_BY] or vals
        lines.append(f"| {_label(s)} | " + " | ".join(f"{v:.1f}" for v in vals) + f" | {statistics.fmean(by):.1f} |")
    lines += ["", "Settings the folds chose (held-out conversation: setting):", ""]
    lines += [f"- {c}: {_label(s)}" for c, s in res.chosen.items()]
    if res.filler_why:
        lines += ["", "Hits whose `why` sentence is filler (defaults): " + ", ".join(
            f"{cond} {bad} of {n}" for cond, (bad, n) in res.filler_why.items()
        )]  # fmt: skip
    return "\n".join(lines)
