"""Bulk ingest: many adds in one call (:meth:`sgmem.Memory.add_many`).

The input is a list of *items*, each one add to one thread: a dict
``{"messages": [...], "thread": "...", "at": optional}`` or a pair
``(thread, messages)``. Every item is validated and segmented before
anything is read or written, message ids are checked unique across the
call and against the scope, and then every new text of every item is
embedded in one pass, sorted by length (an embedder pads a batch to its
longest text, so sorting is what lets one pass run at the embedder's
floor). Each item is then written as its own transaction, in order, as
:meth:`~sgmem.Memory.add` would write it (same rounds, edges, keywords and
derived memory): an item is atomic and a later failure (a full disk) leaves
the earlier items stored, which the raised error reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .embed.base import Embedder, check_embeddings
from .errors import InvalidInputError
from .ingest import text_hash
from .validate import check_name, check_time
from .write import commit_add, plan_prepared, segment_add

__all__ = ["BULK_EMBED_CHUNK", "add_many", "embed_length_sorted", "split_items"]

#: [D] Texts per embedder call in the bulk pass: one call up to this many (the floor), bounded memory beyond.
BULK_EMBED_CHUNK = 4096


def split_items(items: Any) -> list[tuple[Any, Any, Any]]:
    """``(thread, messages, at)`` of each item; ``InvalidInputError`` names a malformed one."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Sequence):
        raise InvalidInputError(
            "items",
            items,
            "a list of adds: dicts {'messages': [...], 'thread': ..., 'at': optional} or (thread, messages) pairs",
        )
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            extra = set(item) - {"messages", "thread", "at"}
            if "messages" not in item or "thread" not in item or extra:
                raise InvalidInputError(
                    f"items[{i}]",
                    sorted(item),
                    "a dict with keys 'messages' and 'thread' (and optionally 'at')",
                    f"unexpected keys: {sorted(extra)}" if extra else "",
                )
            out.append((item["thread"], item["messages"], item.get("at")))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            out.append((item[0], item[1], None))
        else:
            raise InvalidInputError(
                f"items[{i}]", item, "a dict {'messages', 'thread', 'at'} or a (thread, messages) pair"
            )
    return out


def embed_length_sorted(
    embedder: Embedder, texts: Sequence[str], known: dict[str, np.ndarray], chunk: int = BULK_EMBED_CHUNK
) -> tuple[dict[str, np.ndarray], int]:
    """Vectors by text hash for ``texts``: each distinct text not in ``known`` embedded once,
    shortest first, ``chunk`` texts per call. Returns (vectors incl. ``known``, texts embedded)."""
    todo: dict[str, str] = {}
    for t in texts:
        h = text_hash(t)
        if h not in known and h not in todo:
            todo[h] = t
    order = sorted(todo.items(), key=lambda kv: len(kv[1]))
    out = dict(known)
    for i in range(0, len(order), chunk):
        part = order[i : i + chunk]
        got = check_embeddings(embedder, [t for _, t in part], embedder.embed([t for _, t in part]))
        for (h, _), v in zip(part, got, strict=True):
            out[h] = v
    return out, len(order)


def add_many(mem: Any, items: Any, scope: str, at: Any) -> list[Any]:
    """The body of :meth:`sgmem.Memory.add_many` (validate all, embed once, one transaction per item)."""
    mem._check_open()
    scope = check_name(scope, "scope", mem.config.limits, new=True)
    default_at = check_time(at, "at")
    pending = [segment_add(mem, m, scope, t, a or default_at) for t, m, a in split_items(items)]
    seen: set[str] = set()
    for p in pending:
        ids = [m["id"] for m in p.msgs if m["id"]]
        dup = seen.intersection(ids)
        if dup:
            raise InvalidInputError("items[].messages[].id", sorted(dup)[:5], "ids used once in the call")
        seen.update(ids)
    texts = [t for p in pending for t in p.prep.sentence_texts]
    with mem._lock:
        sid = mem._store.scope_id(scope)
        stored = mem._store.existing_ext_ids(sid, sorted(seen)) if sid is not None and seen else []
        known = mem._store.vectors_by_hash(sid, [text_hash(t) for t in texts]) if sid is not None else {}
    if stored:
        raise InvalidInputError(
            "items[].messages[].id",
            stored[:5],
            "ids not already stored in this scope",
            "Message ids are unique per scope; omit 'id' to let sgmem generate one.",
        )
    vectors, _ = embed_length_sorted(mem.embedder, texts, known)
    fresh = set(vectors) - set(known)
    out = []
    for p in pending:
        mine = {s.embed_hash for s in p.prep.sentences} & fresh
        fresh -= mine
        out.append(commit_add(mem, plan_prepared(mem, p, vectors, embedded=len(mine))))
    return out
