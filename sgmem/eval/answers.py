"""Does the relevance cutoff keep answers? Choosing ``Config.min_relevance`` on answers and on unrelated questions.

Two sets of answer-bearing hits, each found among a question's first ``k``
hits (``min_score=0``):

- **answer pairs** (``sgmem/data/answer_pairs.json``): questions a user asks
  about themselves, each with the chat turn that answers it, often short or
  paraphrased and sometimes a reply to the assistant's own question ("And
  what's the dog's name?" — "Pepper."); all pairs are stored in one scope as
  a chat, with a greeting before and thanks after each;
- **LoCoMo evidence**: the evidence turns of the dev questions (categories 1–4).

A hit survives a threshold when its :attr:`sgmem.Hit.relevance` reaches it.
The questions of ``sgmem/data/unrelated_questions.json`` (tax, car repair,
chemistry…) are asked of every LoCoMo conversation, and their
``Memory.context()`` must come back empty. The pairs' scope is reported apart:
its everyday topics (a football team, green tea "no sugar") do touch some of
those questions.

:func:`choose_cutoff`: the lowest threshold of the grid that empties at
least :data:`EMPTY` of the unrelated LoCoMo contexts; the report gives what
each threshold keeps, as a plain threshold and with the relative rule of the
default cutoff (``Config.relative_relevance``).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from importlib import resources

from ..config import Config
from ..embed.base import Embedder
from ..memory import Memory
from .locomo import Conversation
from .relevance import unrelated_questions

__all__ = ["CUTOFF_GRID", "EMPTY", "CutoffSweep", "answer_pairs", "choose_cutoff", "render_cutoffs", "sweep_cutoffs"]

#: thresholds measured
CUTOFF_GRID = (0.15, 0.175, 0.2, 0.225, 0.25, 0.275, 0.3, 0.35)
#: [D] the share of unrelated questions' contexts the default cutoff must empty
EMPTY = 0.95
_T0 = datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc)
#: the answer pairs' scope
PAIRS = "answer pairs"


def answer_pairs() -> list[dict[str, str]]:
    """The bundled question → answer pairs (``question``, ``answer``, optional ``asked``)."""
    text = resources.files("sgmem").joinpath("data/answer_pairs.json").read_text(encoding="utf-8")
    return list(json.loads(text)["pairs"])


def store_pairs(mem: Memory, scope: str, pairs: Sequence[dict[str, str]]) -> list[str]:
    """Store ``pairs`` as a chat in ``scope`` (one thread a day each); the answering messages' ids, in order."""
    ids = []
    for i, p in enumerate(pairs):
        msgs = [{"role": "user", "content": "Hi!", "id": f"p{i}:hi"}]
        if p.get("asked"):
            msgs.append({"role": "assistant", "content": p["asked"], "id": f"p{i}:asked"})
        msgs.append({"role": "user", "content": p["answer"], "id": f"p{i}:answer"})
        msgs.append({"role": "assistant", "content": "Thanks for telling me!", "id": f"p{i}:thanks"})
        mem.add(msgs, scope=scope, thread=f"chat-{i}", at=_T0 + timedelta(days=i))
        ids.append(f"p{i}:answer")
    return ids


@dataclass
class CutoffSweep:
    """Relevance of answer-bearing hits, and empty contexts for unrelated questions, per threshold."""

    grid: tuple[float, ...]
    k: int
    #: (relevance, the best hit's relevance) of each pair's answering turn among its question's first k hits
    #: (None: not among them)
    answers: list[tuple[float, float] | None] = field(default_factory=list)
    #: (relevance, the best hit's relevance) of each LoCoMo evidence turn found among its question's first k hits
    evidence: list[tuple[float, float]] = field(default_factory=list)
    #: scope ("answer pairs" or a LoCoMo conversation) -> threshold -> per unrelated question: 1.0 if its
    #: context is empty
    empty: dict[str, dict[float, list[float]]] = field(default_factory=dict)

    def kept(self, t: float, which: str = "both", relative: float = 0.0) -> float:
        """% of answer-bearing hits that survive the cutoff ``t`` (``"pairs"``, ``"locomo"`` or ``"both"``): their
        relevance reaches ``t``, or ``relative`` × the best hit's when the best hit reaches ``t``."""
        pairs = [a for a in self.answers if a is not None]
        vals = pairs if which == "pairs" else self.evidence if which == "locomo" else pairs + self.evidence
        ok = [r >= t or (relative > 0 and best >= t and r >= relative * best) for r, best in vals]
        return 100.0 * statistics.fmean(ok) if ok else float("nan")

    def emptied(self, t: float, scopes: Sequence[str] | str | None = None) -> float:
        """% of unrelated questions whose context is empty at ``t``, over ``scopes`` (default: every LoCoMo one)."""
        if scopes is None:
            scopes = [c for c in self.empty if c != PAIRS]
        elif isinstance(scopes, str):
            scopes = [scopes]
        vals = [v for c in scopes for v in self.empty.get(c, {}).get(t, [])]
        return 100.0 * statistics.fmean(vals) if vals else float("nan")


def sweep_cutoffs(
    conversations: Sequence[Conversation],
    embedder: Embedder | None = None,
    *,
    grid: Sequence[float] = CUTOFF_GRID,
    k: int = 10,
    budget: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> CutoffSweep:
    """Measure every threshold of ``grid`` on the answer pairs and the LoCoMo ``conversations``."""
    out = CutoffSweep(tuple(grid), k)
    unrelated = unrelated_questions()
    cfg = Config(min_relevance=0.0)

    def emptied(mem: Memory, scope: str) -> None:
        table = out.empty.setdefault(scope, {t: [] for t in grid})
        for uq in unrelated:
            for t in grid:
                table[t].append(float(mem.context(uq, scope=scope, budget_tokens=budget, min_score=t) == ""))

    with Memory(embedder=embedder, config=cfg) as mem:
        pairs = answer_pairs()
        ids = store_pairs(mem, PAIRS, pairs)
        for p, mid in zip(pairs, ids, strict=True):
            hits = mem.search(p["question"], scope=PAIRS, k=k, min_score=0)
            best = max((h.relevance for h in hits), default=0.0)
            out.answers.append(next(((h.relevance, best) for h in hits if mid in h.message_ids), None))
        emptied(mem, PAIRS)
    if progress:
        progress(f"answer pairs: {len(pairs)} questions measured")
    for conv in conversations:
        with Memory(embedder=embedder, config=cfg) as mem:
            for key, at, msgs in conv.sessions:
                mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
            for q in conv.questions:
                if q.category not in (1, 2, 3, 4):
                    continue
                hits = mem.search(q.question, scope=conv.sample_id, k=k, min_score=0)
                best = max((h.relevance for h in hits), default=0.0)
                out.evidence += [(h.relevance, best) for h in hits if set(h.message_ids) & set(q.evidence)]
            emptied(mem, conv.sample_id)
        if progress:
            progress(f"{conv.sample_id}: evidence and unrelated questions measured")
    return out


def choose_cutoff(sweep: CutoffSweep, target: float = EMPTY, scopes: Sequence[str] | None = None) -> float:
    """The lowest threshold of the grid that empties at least ``target`` of the unrelated questions' contexts
    in the LoCoMo conversations ``scopes`` (default all; the highest of the grid when none does)."""
    ok = [t for t in sweep.grid if sweep.emptied(t, scopes) >= 100.0 * target - 1e-9]
    return min(ok) if ok else max(sweep.grid)


def render_cutoffs(sweep: CutoffSweep, default: float, relative: float) -> str:
    """Markdown: answer-bearing hits kept (plain and with the relative rule) and unrelated contexts emptied."""
    found = sum(a is not None for a in sweep.answers)
    lines = [
        f"Relevance cutoff: answer-bearing hits kept (among the first {sweep.k} hits; {found} of "
        f"{len(sweep.answers)} answer pairs found there, {len(sweep.evidence)} LoCoMo evidence hits), plain "
        f"threshold and with the relative rule ({relative:g} × the best hit's relevance, once the best reaches "
        f"the threshold), and unrelated questions ({len(unrelated_questions())}) whose context comes back empty:",
        "",
        "| min_relevance | answer pairs kept | with the relative rule | LoCoMo evidence kept | with the relative "
        "rule | unrelated emptied, LoCoMo | unrelated emptied, answer pairs' scope |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in sweep.grid:
        mark = " (default)" if abs(t - default) < 1e-9 else ""
        lines.append(
            f"| {t:g}{mark} | {sweep.kept(t, 'pairs'):.1f} % | {sweep.kept(t, 'pairs', relative):.1f} % "
            f"| {sweep.kept(t, 'locomo'):.1f} % | {sweep.kept(t, 'locomo', relative):.1f} % "
            f"| {sweep.emptied(t):.1f} % | {sweep.emptied(t, PAIRS):.1f} % |"
        )
    lines += [
        "",
        f"Lowest threshold emptying {100 * EMPTY:g} % of the unrelated LoCoMo contexts: {choose_cutoff(sweep):g}.",
    ]
    convs = [c for c in sweep.empty if c != PAIRS]
    if len(convs) > 1:
        held = []
        for c in convs:
            t = choose_cutoff(sweep, scopes=[o for o in convs if o != c])
            held.append((c, t, sweep.emptied(t, c)))
        lines += [
            "",
            "Chosen leave-one-conversation-out (on the other conversations, measured on this one): "
            + ", ".join(f"{c}: {t:g} → {e:.0f} %" for c, t, e in held)
            + f"; all: **{statistics.fmean(e for _, _, e in held):.1f} %** emptied.",
        ]
    return "\n".join(lines)
