"""A message longer than ``Limits.max_message_chars``, stored by an adapter as consecutive parts.

:meth:`sgmem.Memory.add` refuses such a message (``LimitExceededError``). An
adapter that writes an agent's conversation must not fail the turn over it,
so it stores the text in verbatim slices of at most ``max_message_chars``
characters, none blank (a slice ends early where the next would hold only
white space): one sgmem message each, in order, the first carrying the
message's id and metadata, each marked ``metadata["sgmem_part"] = {"index",
"of"}``. A message that cannot be cut so, which takes a run of white space
at least half ``max_message_chars`` long, is refused (``InvalidInputError``). Each part is indexed and recalled on its own; :func:`join_parts`
gives the one message back for replay, its text the parts' texts joined.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .config import Limits
from .errors import InvalidInputError
from .types import Message

__all__ = ["PART_KEY", "join_parts", "joined", "part_ids", "part_runs", "split_message"]

#: Metadata key of a part: ``{"index": i, "of": n}``.
PART_KEY = "sgmem_part"


def _cuts(content: str, cap: int) -> list[int] | None:
    """Where to cut ``content`` into slices of at most ``cap`` characters, none of them blank (the store
    refuses a blank message), each as long as it can be from the start while what follows still holds a
    character that is not white space; None when that fails."""
    last = len(content.rstrip()) - 1  # the last character that is not white space: the last part keeps it
    cuts, s = [], 0
    while len(content) - s > cap:
        e = min(s + cap, last)
        if not content[s:e].strip():
            return None
        cuts.append(e)
        s = e
    return cuts


def _slices(content: str, cap: int) -> list[str]:
    """``content`` in slices of at most ``cap`` characters, none blank: cut from the start, else (white space
    near the end) from the end; refused when neither works, which takes a run of white space at least half
    as long as ``cap``."""
    cuts = _cuts(content, cap)
    if cuts is None:  # the same from the end, on the reversed text
        back = _cuts(content[::-1], cap)
        cuts = None if back is None else [len(content) - c for c in reversed(back)]
    if cuts is None:
        raise InvalidInputError(
            "content",
            f"<{len(content)} characters>",
            f"a message that can be cut into parts of at most {cap} characters (Limits.max_message_chars) "
            "that each hold something other than white space",
            f"It holds runs of white space too long for that (at least {cap // 2} characters): strip or shorten them.",
        )
    bounds = [0, *cuts, len(content)]
    return [content[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def split_message(item: dict[str, Any], limits: Limits) -> list[dict[str, Any]]:
    """``item`` (a message dict) as itself, or as parts when its content is over ``limits.max_message_chars``.

    Raises:
        InvalidInputError: the content holds white space too long to cut into parts that each hold something
            (it takes a run of at least half ``max_message_chars`` blank characters).
    """
    content, cap = item.get("content"), limits.max_message_chars
    if not isinstance(content, str) or len(content) <= cap or not content.strip():
        return [item]  # (a blank message is refused as such by the store)
    slices = _slices(content, cap)
    parts = []
    for i, text in enumerate(slices):
        part = {k: v for k, v in item.items() if k not in ("content", "metadata", "id")}
        metadata = dict(item.get("metadata") or {}) if i == 0 else {}
        metadata[PART_KEY] = {"index": i, "of": len(slices)}
        part.update(content=text, metadata=metadata)
        if isinstance(item.get("id"), str):
            part["id"] = item["id"] if i == 0 else f"{item['id']}~part{i}"
        parts.append(part)
    return parts


def part_ids(item: dict[str, Any], limits: Limits) -> list[str]:
    """The ids :func:`split_message` gives ``item``'s parts (``[id]`` when it is not split; ``[]`` without an
    id): an adapter that shows the message leaves them all out of recall."""
    mid = item.get("id")
    if not isinstance(mid, str):
        return []
    try:
        return [p["id"] for p in split_message(item, limits)]
    except InvalidInputError:  # a message no adapter could store in parts: only its own id
        return [mid]


def _part(message: Message) -> tuple[int, int] | None:
    mark = message.metadata.get(PART_KEY) if isinstance(message.metadata, dict) else None
    if isinstance(mark, dict) and isinstance(mark.get("index"), int) and isinstance(mark.get("of"), int):
        return mark["index"], mark["of"]
    return None


def part_runs(messages: list[Message]) -> list[list[Message]]:
    """``messages`` grouped as :func:`join_parts` joins them: each complete run of parts (in order) one group,
    every other message a group of its own (an adapter that shows a joined message leaves out all of its
    parts' ids from recall)."""
    out: list[list[Message]] = []
    i = 0
    while i < len(messages):
        mark = _part(messages[i])
        if mark is not None and mark[0] == 0:
            n = mark[1]
            run = messages[i : i + n]
            if len(run) == n and all(_part(m) == (k, n) for k, m in enumerate(run)):
                out.append(run)
                i += n
                continue
        out.append([messages[i]])
        i += 1
    return out


def joined(run: list[Message]) -> Message:
    """One group of :func:`part_runs` as the one message it stands for."""
    if len(run) == 1 and _part(run[0]) is None:
        return run[0]
    if _part(run[0]) != (0, len(run)):  # a part left alone (its run is not whole)
        return run[0]
    first = run[0]
    metadata = {k: v for k, v in first.metadata.items() if k != PART_KEY}
    return dataclasses.replace(first, content="".join(m.content for m in run), metadata=metadata)


def join_parts(messages: list[Message]) -> list[Message]:
    """``messages`` with each complete run of parts (in order) joined into the message it was split from.

    A run that is not whole (a part deleted on its own) is left as its parts.
    """
    return [joined(run) for run in part_runs(messages)]
