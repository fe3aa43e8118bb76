"""Budgeted prompt context: retrieved turns, chronological, dated, speaker-labelled.

Turns are taken in rank order while the rendered block still fits; the block
is then rendered oldest first, one header per session day. The exact tiktoken
count of the returned string never exceeds the budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from .text.acts import FILLER
from .text.tokens import count_tokens, truncate_to_tokens

if TYPE_CHECKING:
    from .retrieval.index import ScopeIndex

__all__ = ["LONG_TURN_MIN_TOKENS", "ContextTurn", "digest_turn", "fit", "render", "window_turn"]


HEADER = "Relevant memories (oldest first):"
#: [D] the least room a long turn's window gets in a context (:func:`window_turn`), whatever the budget
LONG_TURN_MIN_TOKENS = 48
_CONTINUATION = "\n    "  # how a stored text's own later lines are written in the block


@dataclass(frozen=True)
class ContextTurn:
    """One turn that may go into a context block."""

    key: int  # message row id, used for ordering and dedup
    at: datetime
    thread: str
    speaker: str
    text: str


def _inline(text: str) -> str:
    """``text`` with its own line breaks kept but each later line indented.

    A line of the block that sgmem writes never starts with white space, so a
    stored note or name holding a line break cannot pass for a dated turn
    (``09:00 user: ...``) or a ``[day · thread]`` header.
    """
    return _CONTINUATION.join(text.splitlines()) if text else text


def _label(name: str) -> str:
    """A thread or speaker name on one line (names are checked for line breaks; older stores may hold some)."""
    return " ".join(name.splitlines())


def _day(at: datetime) -> str:
    return at.strftime("%Y-%m-%d (%a)")


def render(turns: list[ContextTurn]) -> str:
    """The block for ``turns``: grouped by day and thread, oldest first."""
    if not turns:
        return ""
    lines = [HEADER]
    last: tuple[str, str] | None = None
    last_time = ""
    for t in sorted(turns, key=lambda t: (t.at, t.key)):
        group = (_day(t.at), t.thread)
        clock = t.at.strftime("%H:%M")
        if group != last:
            lines.append(f"[{group[0]} · {_label(t.thread)}]")
            last = group
            last_time = ""
        # the time is written when it changes: turns of one sitting share it
        lines.append(f"{clock + ' ' if clock != last_time else ''}{_label(t.speaker)}: {_inline(t.text)}")
        last_time = clock
    return "\n".join(lines)


def fit(candidates: list[ContextTurn], budget_tokens: int) -> tuple[str, list[ContextTurn]]:
    """Greedily add candidates (in rank order) while the block fits the budget.

    A candidate that does not fit is skipped, so a later, shorter one can still
    enter; when nothing fits whole, the best candidate is truncated to fit.
    """
    chosen: list[ContextTurn] = []
    seen: set[int] = set()
    # Counting the whole block for every candidate is quadratic in the budget (a
    # 4,000-token block re-tokenised ~100 times). Below the budget by a margin, a
    # candidate's cost is estimated from its own line; near the budget the block is
    # counted exactly; at the end the exact count is enforced (lowest-ranked turns
    # dropped if the estimates were short), so the budget is never exceeded.
    margin = max(16, budget_tokens // 50)
    used, exact = 0, True  # the block's token count; an over-estimate while not exact
    for c in candidates:
        if c.key in seen:
            continue
        text_tokens = count_tokens(c.text)
        estimate = text_tokens + count_tokens(c.speaker) + 14  # time, ": ", newline, a group header
        if chosen and used + estimate <= budget_tokens - margin:
            chosen.append(c)
            seen.add(c.key)
            used, exact = used + estimate, False
            continue
        if not exact:
            used, exact = count_tokens(render(chosen)), True
        if chosen and used + text_tokens > budget_tokens:  # cheap lower bound: cannot fit
            continue
        n = count_tokens(render(chosen + [c]))
        if n <= budget_tokens:
            chosen.append(c)
            seen.add(c.key)
            used = n
    while chosen and count_tokens(render(chosen)) > budget_tokens:
        seen.discard(chosen.pop().key)
    if not chosen and candidates:
        best = candidates[0]
        overhead = count_tokens(render([ContextTurn(best.key, best.at, best.thread, best.speaker, "")]))
        room = budget_tokens - overhead - 1
        cut = truncate_to_tokens(best.text, room) if room > 0 else ""
        if cut:
            one = [ContextTurn(best.key, best.at, best.thread, best.speaker, cut)]
            while cut and count_tokens(render(one)) > budget_tokens:
                room -= 1
                cut = truncate_to_tokens(best.text, room) if room > 0 else ""
                one = [ContextTurn(best.key, best.at, best.thread, best.speaker, cut)]
            if cut:
                chosen = one
    text = render(chosen)
    return text, chosen


def digest_turn(idx: ScopeIndex, row: int, content: str, q: np.ndarray, max_tokens: int) -> str:
    """A long turn cut to its sentences most similar to the query.

    [D] Turns over ``max_tokens`` keep their best sentences (by cosine to the
    query, at least one; filler such as "Hi!" last) in their original order, joined by " … " where text
    was left out, up to ``max_tokens``; shorter turns are kept whole. This lets
    a budget hold more distinct memories. ``max_tokens = 0`` keeps every turn whole.
    """
    if max_tokens <= 0 or count_tokens(content) <= max_tokens:
        return content
    srows = idx.msg_sents[row]
    if len(srows) < 2:
        return content
    sims = idx.sentence_vectors()[srows] @ q
    sims = np.where(idx.sentence_acts()[srows] == FILLER, sims - 10.0, sims)  # filler only where room is left
    texts = idx.sent_text.many(srows)
    keep: list[int] = []
    used = 0
    for i in np.argsort(-sims, kind="stable"):
        n = count_tokens(texts[i]) + 1
        if keep and used + n > max_tokens:
            continue
        keep.append(int(i))
        used += n
    keep.sort()
    parts: list[str] = []
    for j, i in enumerate(keep):
        if j == 0 and i > 0:
            parts.append("…")
        elif j > 0 and i != keep[j - 1] + 1:
            parts.append("…")
        parts.append(texts[i])
    if keep[-1] < len(texts) - 1:
        parts.append("…")
    return " ".join(parts)


def window_turn(idx: ScopeIndex, row: int, content: str, q: np.ndarray, max_tokens: int) -> str:
    """[D] A turn longer than ``max_tokens`` cut to the window around what matched the query.

    A long pasted text (a report, a lease, meeting notes) is recalled for one
    passage; its start rarely holds it. The window opens on the turn's sentence
    most similar to the query (filler last) and grows by the better of its two
    neighbours at a time while it fits, so a section keeps its own order and
    line breaks; "…" marks what was left out at either end. A turn that fits, or
    whose sentences cannot be found in ``content``, is returned whole (the block's
    own fit then truncates it).
    """
    if max_tokens <= 0 or count_tokens(content) <= max_tokens:
        return content
    srows = idx.msg_sents[row]
    if len(srows) < 2:
        return content
    texts = idx.sent_text.many(srows)
    spans: list[tuple[int, int]] = []
    pos = 0
    for t in texts:  # the stored sentences in order: their offsets in the text (punctuation-only parts were left out)
        at = content.find(t, pos)
        if at < 0:
            return content
        spans.append((at, at + len(t)))
        pos = at + len(t)
    sims = idx.sentence_vectors()[srows] @ q
    sims = np.where(idx.sentence_acts()[srows] == FILLER, sims - 10.0, sims)
    best = int(np.argmax(sims))
    room = max_tokens - 2 * count_tokens(" …")
    lo = hi = best
    if count_tokens(texts[best]) > room:  # one sentence longer than the room: its start
        return truncate_to_tokens(texts[best], max_tokens)
    while True:
        options = [i for i in (lo - 1, hi + 1) if 0 <= i < len(spans)]
        options.sort(key=lambda i: -float(sims[i]))
        grown = False
        for i in options:
            a, b = min(lo, i), max(hi, i)
            n = count_tokens(content[spans[a][0] : spans[b][1]])
            if n <= room:
                lo, hi, grown = a, b, True
                break
        if not grown:
            break
    text = content[spans[lo][0] : spans[hi][1]]
    return ("… " if lo > 0 else "") + text + (" …" if hi < len(spans) - 1 else "")
