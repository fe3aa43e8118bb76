"""Generated memory in the prompt context (SGMem §1.3 step 8).

The context block is the retrieved turns (chronological, dated, as
:func:`sgmem.context.render` writes them) followed by the selected summaries,
facts and insights, each dated — chunks, then summaries, facts, insights, as
§1.3 step 8 [C] orders them. The whole block's exact token count never
exceeds the budget: generated memory takes at most ``context_share`` of it
and the turns get everything it leaves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..context import ContextTurn, fit
from ..text.tokens import count_tokens

__all__ = ["DerivedItem", "fit_with_derived", "render_derived"]

_TITLES = {"summary": "Session summaries:", "fact": "Facts:", "insight": "Insights:"}


@dataclass(frozen=True)
class DerivedItem:
    """One generated memory that may go into a context block."""

    key: int
    kind: str
    at: datetime
    text: str
    label: str | None
    message_ids: tuple[str, ...]


def render_derived(items: list[DerivedItem]) -> str:
    """Summaries, facts and insights, one dated line each, grouped by kind."""
    lines: list[str] = []
    for kind in ("summary", "fact", "insight"):
        group = [i for i in items if i.kind == kind]
        if not group:
            continue
        if lines:
            lines.append("")
        lines.append(_TITLES[kind])
        for i in sorted(group, key=lambda i: (i.at, i.key)):
            label = f" ({i.label})" if i.label else ""
            lines.append(f"- {i.at.strftime('%Y-%m-%d')}{label}: {i.text}")
    return "\n".join(lines)


def fit_with_derived(
    turns: list[ContextTurn], derived: list[DerivedItem], budget: int, share: float
) -> tuple[str, list[ContextTurn], list[DerivedItem]]:
    """Generated memory within ``share`` of the budget, then turns in everything left.

    Derived items are taken in order (summaries, facts, insights; best first
    within each) while their block fits ``share · budget``; the turns then
    get the rest, so no budget is left unused by a reserve.
    """
    if not derived or share <= 0:
        text, chosen = fit(turns, budget)
        return text, chosen, []
    cap = int(budget * share)
    picked: list[DerivedItem] = []
    seen: set[int] = set()
    for item in derived:
        if item.key in seen:
            continue
        if count_tokens(render_derived(picked + [item])) <= cap:
            picked.append(item)
            seen.add(item.key)
    block = render_derived(picked)
    room = budget - count_tokens(block) - 1 if block else budget
    while True:
        text, chosen = fit(turns, room) if turns and room > 0 else ("", [])
        out = f"{text}\n\n{block}" if text and block else (text or block)
        if count_tokens(out) <= budget or room <= 0:
            break
        room -= 1  # the joint may tokenise differently: give the turns one token less
    if count_tokens(out) > budget:  # pragma: no cover - the block alone fits its share
        out, chosen = fit(turns, budget)
        picked = []
    return out, chosen, picked
