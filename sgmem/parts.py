"""A message longer than ``Limits.max_message_chars``, stored by an adapter as consecutive parts.

:meth:`sgmem.Memory.add` refuses such a message (``LimitExceededError``). An
adapter that writes an agent's conversation must not fail the turn over it,
so it stores the text in verbatim slices of at most ``max_message_chars``
characters: one sgmem message each, in order, the first carrying the
message's id and metadata, each marked ``metadata["sgmem_part"] = {"index",
"of"}``. Each part is indexed and recalled on its own; :func:`join_parts`
gives the one message back for replay, its text the parts' texts joined.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .config import Limits
from .types import Message

__all__ = ["PART_KEY", "join_parts", "split_message"]

#: Metadata key of a part: ``{"index": i, "of": n}``.
PART_KEY = "sgmem_part"


def split_message(item: dict[str, Any], limits: Limits) -> list[dict[str, Any]]:
    """``item`` (a message dict) as itself, or as parts when its content is over ``limits.max_message_chars``."""
    content, cap = item.get("content"), limits.max_message_chars
    if not isinstance(content, str) or len(content) <= cap:
        return [item]
    slices = [content[i : i + cap] for i in range(0, len(content), cap)]
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


def _part(message: Message) -> tuple[int, int] | None:
    mark = message.metadata.get(PART_KEY) if isinstance(message.metadata, dict) else None
    if isinstance(mark, dict) and isinstance(mark.get("index"), int) and isinstance(mark.get("of"), int):
        return mark["index"], mark["of"]
    return None


def join_parts(messages: list[Message]) -> list[Message]:
    """``messages`` with each complete run of parts (in order) joined into the message it was split from.

    A run that is not whole (a part deleted on its own) is left as its parts.
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        mark = _part(messages[i])
        if mark is None or mark[0] != 0:
            out.append(messages[i])
            i += 1
            continue
        n = mark[1]
        run = messages[i : i + n]
        if len(run) == n and all(_part(m) == (k, n) for k, m in enumerate(run)):
            first = run[0]
            metadata = {k: v for k, v in first.metadata.items() if k != PART_KEY}
            out.append(dataclasses.replace(first, content="".join(m.content for m in run), metadata=metadata))
            i += n
        else:
            out.append(messages[i])
            i += 1
    return out
