"""LangGraph ``BaseStore`` over sgmem: durable items, semantic search through sgmem."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from sgmem import InvalidInputError, Memory, Message
from sgmem.validate import check_mode, check_name

from ._store_query import (
    check_filter,
    matches_condition,
    matches_filter,
    namespace_to_scope,
    render_value,
    scope_to_namespace,
    tokenize_fields,
)
from ._util import check_memory

__all__ = ["STORE_THREAD", "SGMemStore"]

#: The thread of a scope that holds its store items (chat threads stay apart).
STORE_THREAD = "langgraph-store"
#: Prefix of an item's sgmem message id (the rest is its key).
_ID_PREFIX = "lgstore:"
#: Metadata key holding the item (key, value, timestamps, indexed flag).
_META = "langgraph_item"
#: Speaker label of items in sgmem context blocks.
_SPEAKER = "memory"
#: Items per ``Memory.add`` call when a batch writes many.
_ADD_CHUNK = 256


def _item_id(key: str) -> str:
    return _ID_PREFIX + key


class SGMemStore(BaseStore):
    """A LangGraph store kept in sgmem: items are durable and searchable by meaning.

    Each namespace maps to the sgmem scope of its labels joined by ``"."``
    (``("users", "alice")`` → scope ``"users.alice"``); its items are
    messages of that scope's ``"langgraph-store"`` thread, with the value in
    the message metadata (replayed exactly) and a text rendering of it as the
    content. ``search(query=...)`` ranks items with :meth:`sgmem.Memory.search`
    (``mode="vector"`` by default, so scores are cosines comparable across
    namespaces); ``filter`` supports exact match and ``$eq $ne $gt $gte $lt
    $lte``. Because items live in the scope, a
    :class:`~langchain_sgmem.SGMemRetriever` or
    :class:`~langchain_sgmem.SGMemMiddleware` on that scope sees them too.

    Within one ``batch``, reads see the store as it was before the batch's
    writes, and the last write to a key wins (as in ``InMemoryStore``). A
    search reads the namespaces under its prefix in full — sized for the
    thousands of items a memory store holds; ranking covers the best
    ``Limits.max_k`` items of each namespace, any others follow unscored.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemStore

            mem = sgmem.Memory("./memory")
            store = SGMemStore(mem)

    Use:
        .. code-block:: python

            store.put(("users", "alice"), "pet", {"text": "Alice has a cat named Miso.", "year": 2021})
            store.put(("users", "alice"), "job", {"text": "Alice is a nurse in Lyon.", "year": 2019})
            store.get(("users", "alice"), "pet").value      # {'text': 'Alice has a cat named Miso.', 'year': 2021}
            store.search(("users",), query="What pet does she have?", limit=1)[0].key   # 'pet'
            store.search(("users", "alice"), filter={"year": {"$gte": 2020}})            # the 'pet' item
            store.list_namespaces(prefix=("users",))                                   # [('users', 'alice')]
            store.delete(("users", "alice"), "job")

        In a LangGraph agent: ``create_agent(model, tools, store=store)`` (or
        ``graph.compile(store=store)``) and use ``runtime.store`` in tools and nodes.

    Args:
        memory: the :class:`sgmem.Memory` holding the items.
        fields: value paths to index by default (LangGraph path syntax;
            default ``["$"]``, the whole value). ``put(..., index=[...])``
            overrides them per item; ``index=False`` stores an item that
            ``search(query=...)`` returns only after the ranked ones, unscored.
        mode: the sgmem retrieval mode used to rank items (default ``"vector"``).
    """

    supports_ttl = False

    def __init__(self, memory: Memory, *, fields: list[str] | None = None, mode: str | None = "vector") -> None:
        self.memory = check_memory(memory)
        if fields is not None and (
            isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields) or not fields
        ):
            raise InvalidInputError("fields", fields, "a non-empty list of value paths, e.g. ['text'] or ['$']")
        self.fields = list(fields or ["$"])
        self._fields = tokenize_fields(self.fields)
        self.mode = check_mode(mode)
        self._write_lock = threading.RLock()

    def __repr__(self) -> str:
        return f"SGMemStore({self.memory!r}, fields={self.fields!r}, mode={self.mode!r})"

    # ---------------------------------------------------------------- batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run Get/Search/ListNamespaces/Put ops; results in the order given.

        Every op is validated first, so a bad op means nothing is written.
        """
        ops = list(ops)
        for i, op in enumerate(ops):
            self._validate(op, f"ops[{i}]")
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[i] = self._get(op)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            else:
                puts[(op.namespace, op.key)] = op  # the last write to a key wins
        if puts:
            self._apply_puts(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (runs in a worker thread, never blocking the loop)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ----------------------------------------------------------- validation
    def _validate(self, op: Any, field: str) -> None:
        limits = self.memory.config.limits
        if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
            raise InvalidInputError(field, op, "a GetOp, SearchOp, PutOp or ListNamespacesOp")
        validate_op_namespace(op)
        if isinstance(op, (GetOp, PutOp)):
            if not isinstance(op.key, str) or not op.key:
                raise InvalidInputError(f"{field}.key", op.key, "a non-empty string")
            check_name(_item_id(op.key), f"{field}.key", limits)
        if isinstance(op, SearchOp):
            check_filter(op.filter, f"{field}.filter")
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidInputError(f"{field}.query", op.query, "a string or None")
            for name in ("limit", "offset"):
                v = getattr(op, name)
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise InvalidInputError(f"{field}.{name}", v, "an int >= 0")
        if isinstance(op, ListNamespacesOp):
            for name in ("limit", "offset"):
                v = getattr(op, name)
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise InvalidInputError(f"{field}.{name}", v, "an int >= 0")
            if op.max_depth is not None and (
                isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1
            ):
                raise InvalidInputError(f"{field}.max_depth", op.max_depth, "an int >= 1 or None")
        if isinstance(op, PutOp):
            scope = namespace_to_scope(op.namespace)
            if op.namespace[0] == "langgraph":
                raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {op.namespace}')
            check_name(scope, f"{field}.namespace", limits)
            if op.ttl is not None:
                raise NotImplementedError("SGMemStore does not support TTL; pass ttl=None.")
            if op.value is None:
                return
            if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
                raise InvalidInputError(f"{field}.value", op.value, "a dict with string keys, or None to delete")
            try:
                json.dumps(dict(op.value), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(
                    f"{field}.value", op.value, "a dict of JSON-serialisable values", str(exc)
                ) from None
            if (
                op.index is not None
                and op.index is not False
                and (isinstance(op.index, str) or not all(isinstance(p, str) and p for p in op.index))
            ):
                raise InvalidInputError(f"{field}.index", op.index, "None, False or a list of value paths")
            content = self._content(op)[0]
            if len(content) > limits.max_message_chars:
                raise InvalidInputError(
                    f"{field}.value",
                    f"<{len(content)} characters of indexed text>",
                    f"at most {limits.max_message_chars} characters of indexed text",
                    "Index fewer fields with put(..., index=[...]).",
                )

    # ------------------------------------------------------------- helpers
    def _content(self, op: PutOp) -> tuple[str, bool]:
        """(text to index, whether search may rank the item)."""
        value = dict(op.value or {})
        if op.index is False:
            return op.key, False
        fields = self._fields if op.index is None else tokenize_fields(list(op.index))
        text = render_value(value, fields)
        return (text, True) if text.strip() else (op.key, False)

    @staticmethod
    def _is_item(m: Message) -> bool:
        return m.thread == STORE_THREAD and isinstance(m.metadata.get(_META), dict)

    @staticmethod
    def _item_fields(namespace: tuple[str, ...], m: Message) -> dict[str, Any]:
        meta = m.metadata[_META]
        return {
            "namespace": namespace,
            "key": meta["key"],
            "value": meta["value"],
            "created_at": datetime.fromisoformat(meta["created_at"]),
            "updated_at": datetime.fromisoformat(meta["updated_at"]),
        }

    def _item(self, namespace: tuple[str, ...], m: Message) -> Item:
        return Item(**self._item_fields(namespace, m))

    def _search_item(self, namespace: tuple[str, ...], m: Message, score: float | None = None) -> SearchItem:
        return SearchItem(**self._item_fields(namespace, m), score=score)

    def _store_scopes(self, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
        """(scope, namespace) of every namespace under ``prefix`` that holds items."""
        out = []
        for scope in self.memory.scopes():
            ns = scope_to_namespace(scope)
            if ns is None or ns[: len(prefix)] != prefix:
                continue
            if STORE_THREAD in self.memory.threads(scope=scope):
                out.append((scope, ns))
        return out

    # ------------------------------------------------------------------ ops
    def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        scope = namespace_to_scope(op.namespace)
        found = [m for m in self.memory.get(scope=scope, message_ids=[_item_id(op.key)]) if self._is_item(m)]
        return self._item(op.namespace, found[0]) if found else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        candidates: list[tuple[str, tuple[str, ...], Message]] = []
        ranked_scopes: dict[str, int] = {}
        for scope, ns in self._store_scopes(tuple(op.namespace_prefix)):
            items = [m for m in self.memory.messages(scope=scope, thread=STORE_THREAD) if self._is_item(m)]
            kept = [m for m in items if matches_filter(m.metadata[_META]["value"], op.filter)]
            candidates += [(scope, ns, m) for m in kept]
            if kept:
                ranked_scopes[scope] = len(items)
        if not op.query or not op.query.strip():
            page = candidates[op.offset : op.offset + op.limit]
            return [self._search_item(ns, m) for _, ns, m in page]
        limits = self.memory.config.limits
        scores: dict[tuple[str, str], float] = {}
        for scope, n_items in ranked_scopes.items():
            hits = self.memory.search(
                op.query, scope=scope, k=min(limits.max_k, n_items), mode=self.mode, threads=[STORE_THREAD]
            )
            for h in hits:
                for mid in h.message_ids:
                    scores[(scope, mid)] = max(scores.get((scope, mid), float("-inf")), h.score)
        scored: list[tuple[float, tuple[str, ...], Message]] = []
        unscored: list[tuple[float | None, tuple[str, ...], Message]] = []
        for scope, ns, m in candidates:
            s = scores.get((scope, m.id or "")) if m.metadata[_META].get("indexed", True) else None
            if s is None:
                unscored.append((None, ns, m))
            else:
                scored.append((s, ns, m))
        scored.sort(key=lambda t: -t[0])  # stable: ties keep store order
        ranked = [*scored, *unscored][op.offset : op.offset + op.limit]
        return [self._search_item(ns, m, score) for score, ns, m in ranked]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = [
            ns for _, ns in self._store_scopes(()) if all(matches_condition(c, ns) for c in (op.match_conditions or ()))
        ]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        else:
            found = sorted(found)
        return found[op.offset : op.offset + op.limit]

    def _apply_puts(self, puts: list[PutOp]) -> None:
        by_scope: dict[str, list[PutOp]] = {}
        for op in puts:
            by_scope.setdefault(namespace_to_scope(op.namespace), []).append(op)
        for scope, ops in by_scope.items():
            with self._write_lock:
                old = {
                    str(m.id): m
                    for m in self.memory.get(scope=scope, message_ids=[_item_id(op.key) for op in ops])
                    if self._is_item(m)
                }
                now = datetime.now(timezone.utc)
                new = []
                for op in ops:
                    if op.value is None:
                        continue
                    prev = old.get(_item_id(op.key))
                    content, indexed = self._content(op)
                    new.append(
                        {
                            "role": "system",
                            "name": _SPEAKER,
                            "content": content,
                            "id": _item_id(op.key),
                            # one session per item, so every hit kind maps to exactly one item
                            "session": _item_id(op.key),
                            "at": now,
                            "metadata": {
                                _META: {
                                    "key": op.key,
                                    "value": dict(op.value),
                                    "created_at": prev.metadata[_META]["created_at"] if prev else now.isoformat(),
                                    "updated_at": now.isoformat(),
                                    "indexed": indexed,
                                }
                            },
                        }
                    )
                if old:
                    self.memory.delete(scope=scope, message_ids=list(old))
                if new:  # one embedding pass for the whole batch, one transaction per chunk
                    chunks = [(STORE_THREAD, new[i : i + _ADD_CHUNK]) for i in range(0, len(new), _ADD_CHUNK)]
                    self.memory.add_many(chunks, scope=scope)
