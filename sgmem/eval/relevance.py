"""The relevance cutoff (``min_score``) measured on LoCoMo: what it costs and what it buys.

For every threshold of a grid, :func:`sgmem.eval.evaluate` builds each
question's 1,000-token context with ``min_score=t`` and records the share of
its evidence inside (cost), and builds the context of each question of
``sgmem/data/unrelated_questions.json`` (topics absent from the conversations:
tax law, car repair, snacks…) and records whether it is empty (benefit).

Because a threshold picked on the dev split is tuned on it, the report also
gives it leave-one-conversation-out: the threshold is chosen on five
conversations by :func:`choose` and measured on the sixth.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources

__all__ = ["DEFAULT_GRID", "MAX_DROP", "RelevanceSweep", "choose", "render_relevance", "unrelated_questions"]

#: thresholds measured by ``sgmem eval locomo --relevance``
DEFAULT_GRID = (0.0, 0.2, 0.25, 0.275, 0.3, 0.325, 0.35, 0.4)
#: the most evidence (points of cat 1–4 context recall) the cutoff may cost where it is chosen: half of
#: the 1 point allowed, the other half left for conversations it was not chosen on
MAX_DROP = 0.5


def unrelated_questions() -> list[str]:
    """The bundled questions about topics absent from LoCoMo's conversations."""
    text = resources.files("sgmem").joinpath("data/unrelated_questions.json").read_text(encoding="utf-8")
    return list(json.loads(text)["questions"])


@dataclass
class RelevanceSweep:
    """Per conversation and threshold: evidence recall in context, and empty contexts for unrelated questions."""

    grid: tuple[float, ...]
    budget: int
    recall: dict[str, dict[float, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    empty: dict[str, dict[float, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))

    def pooled(self, convs: list[str], t: float) -> tuple[float, float]:
        """(cat 1–4 evidence recall %, unrelated questions with an empty context %) over ``convs``."""
        rec = [v for c in convs for v in self.recall[c][t]]
        emp = [v for c in convs for v in self.empty[c][t]]
        return (
            100.0 * statistics.fmean(rec) if rec else float("nan"),
            100.0 * statistics.fmean(emp) if emp else float("nan"),
        )


def choose(sweep: RelevanceSweep, convs: list[str], max_drop: float = MAX_DROP) -> float:
    """The threshold that empties the most unrelated contexts while evidence drops at most ``max_drop`` points.

    Measured over ``convs``, against the same contexts without a cutoff; ties go to the lower threshold.
    """
    base, _ = sweep.pooled(convs, 0.0)
    best, best_empty = 0.0, -1.0
    for t in sorted(sweep.grid):
        rec, emp = sweep.pooled(convs, t)
        if base - rec <= max_drop + 1e-9 and emp > best_empty + 1e-9:
            best, best_empty = t, emp
    return best


def render_relevance(sweep: RelevanceSweep, default: float) -> str:
    """Markdown: the sweep in-sample, then the leave-one-conversation-out choice."""
    convs = sorted(sweep.recall)
    base, _ = sweep.pooled(convs, 0.0)
    lines = [
        f"Relevance cutoff (min_score) — context of {sweep.budget} tokens, {len(convs)} conversations, "
        f"{len(unrelated_questions())} unrelated questions per conversation:",
        "",
        "| min_score | cat 1–4 evidence inside | change (points) | unrelated questions with an empty context |",
        "|---|---|---|---|",
    ]
    for t in sweep.grid:
        rec, emp = sweep.pooled(convs, t)
        mark = " (default)" if abs(t - default) < 1e-9 else ""
        lines.append(f"| {t:g}{mark} | {rec:.1f} | {rec - base:+.1f} | {emp:.1f} % |")
    chosen = choose(sweep, convs)
    lines += [
        "",
        f"In-sample choice (most empty unrelated contexts, evidence down at most {MAX_DROP:g} point): {chosen:g}.",
        "",
        "Leave one conversation out (threshold chosen on the other conversations, measured on this one):",
        "",
        "| held out | chosen min_score | evidence change (points) | unrelated empty |",
        "|---|---|---|---|",
    ]
    drops: list[float] = []
    empties: list[float] = []
    weights: list[int] = []
    for held in convs:
        rest = [c for c in convs if c != held]
        t = choose(sweep, rest)
        b, _ = sweep.pooled([held], 0.0)
        rec, emp = sweep.pooled([held], t)
        lines.append(f"| {held} | {t:g} | {rec - b:+.1f} | {emp:.1f} % |")
        drops.append(rec - b)
        empties.append(emp)
        weights.append(len(sweep.recall[held][0.0]))
    if convs:
        w = sum(weights)
        lines.append(
            f"| **all (question-weighted)** | – | **{sum(d * n for d, n in zip(drops, weights, strict=True)) / w:+.1f}** | "
            f"**{statistics.fmean(empties):.1f} %** |"
        )
    return "\n".join(lines)
