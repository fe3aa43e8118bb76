"""LangGraph ``BaseStore`` over sgmem: durable items, semantic search with LangGraph's own semantics."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import copy
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    validate_op_namespace,
)

from sgmem import InvalidInputError, Memory, SgmemError
from sgmem.gate.blas import single_thread_blas
from sgmem.validate import check_name, normalise_messages

from ._store_query import (
    DEFAULT_INDEX,
    check_filter,
    check_value,
    decode_vectors,
    encode_vector,
    field_texts,
    matches_condition,
    matches_filter,
    namespace_to_scope,
    render_value,
    resolve_index,
    scope_to_namespace,
    tokenize_fields,
)
from ._util import check_memory
from .wrappers import SGMemEmbeddings

__all__ = ["STORE_SCOPE_PREFIX", "STORE_THREAD", "SGMemStore"]

#: The thread that holds store items in their scope.
STORE_THREAD = "langgraph-store"
#: Prefix of the sgmem scope of a namespace's items when they stay out of chat recall.
#: ``".."`` never occurs in a namespace's own scope (labels are non-empty), so the two never collide.
STORE_SCOPE_PREFIX = "langgraph-store.."
#: Prefix of an item's sgmem message id (the rest is its key).
_ID_PREFIX = "lgstore:"
#: Metadata key holding the item (key, value, timestamps, vectors).
_META = "langgraph_item"
#: Speaker label of items in sgmem context blocks (chat recall only).
_SPEAKER = "memory"
#: The text sgmem indexes for an item kept out of chat recall: one constant, so sgmem
#: embeds it once per namespace and never again (the store ranks by its own vectors).
_PLACEHOLDER = "(LangGraph store item)"
#: [D] Embedding calls run on these worker threads, as InMemoryStore's query embeddings do: with
#: torch's OpenMP pool, one short text embedded from the main thread measured 16x slower than from a
#: worker thread on a busy 2-core machine (the pool's spinning threads; 763 vs 46 ms per query).
_EMBED_POOL = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="sgmem-store-embed")


@dataclass
class _ScopeItems:
    """A namespace's items as last read, with their vectors decoded (a cache of the scope)."""

    key: tuple[int, int]  # (scope id, generation): every write to the scope bumps the generation
    metas: list[dict[str, Any]]
    vectors: np.ndarray  # (n_vectors, dims) float32, unit rows; n_vectors may be 0
    owner: np.ndarray  # item index of each vector row
    nbytes: int


def _item_id(key: str) -> str:
    return _ID_PREFIX + key


def _renamed(exc: InvalidInputError, field: str) -> InvalidInputError:
    """``exc`` (same type, same limits) about the user's ``field`` instead of sgmem's message field."""
    exc.args = (field + str(exc)[len(exc.field) :],)
    exc.field = field
    return exc


class SGMemStore(BaseStore):
    """A LangGraph store kept in sgmem: durable items, searched like LangGraph's own stores.

    Items are sgmem messages (the value replayed exactly from the record), so
    they are durable, kept per scope, and leave the disk when deleted. Semantic
    search follows ``InMemoryStore`` and ``PostgresStore``: each configured
    field path of a value is embedded on its own (the text alone, no speaker
    label), an item scores the best cosine of its vectors with the query
    (identical text → 1.0), and items with no vector follow unscored.

    With the same ``index`` config, scores, ranking, filters, pagination and
    namespaces agree with ``InMemoryStore(index=...)``; the differences are
    listed under *Differences from InMemoryStore* below.

    Layout: a namespace ``("users", "alice")`` keeps its items in the sgmem
    scope ``"langgraph-store..users.alice"`` (:data:`STORE_SCOPE_PREFIX`),
    thread ``"langgraph-store"``, so chat recall of the user's scope
    ``"users.alice"`` (``Memory.search``/``context``, the middleware,
    retrievers) never returns store items. With ``recall_in_chat=True`` items
    live in the scope ``"users.alice"`` itself, with their indexed fields as
    message text, and chat recall finds them too. A store opened with one
    setting does not see the items written with the other. To delete a user's
    store items with sgmem directly, delete the scope
    ``SGMemStore.scope_of(namespace)``.

    Writes: every op of a ``batch`` is validated, and every text embedded,
    before anything is written, so a bad op (a value JSON would not replay
    equal, a lone surrogate, a size limit, an embedder error) changes nothing.
    The puts of one namespace are one transaction (:meth:`sgmem.Memory.replace`):
    an update replaces the old value atomically, and a crash leaves the old or
    the new value, never none. A batch spanning several namespaces commits
    them one after another. Within a batch, reads see the store as it was
    before the batch's writes, and the last write to a key wins.

    LangGraph's own store tests (``libs/checkpoint/tests/test_store.py`` of the
    langgraph repository, run through ``tests/integration/langchain/lg_store_shim.py``)
    pass on this store as on ``InMemoryStore`` (24 of 24 each); none of them
    exercises the differences below, which the contract tests
    (``test_store_contract.py``) pin instead.

    Differences from InMemoryStore:

    - ``list_namespaces`` lists namespaces that hold items (``InMemoryStore``
      keeps listing a namespace after its last item is deleted).
    - ``created_at`` is kept when an item is updated.
    - Without ``query``, namespaces are read in namespace order, items in
      insertion order (``InMemoryStore``: namespaces in first-write order).
    - Namespace labels may not contain ``"."`` or NUL (LangGraph's ``put``
      refuses ``"."`` too, ``batch`` does not); values must be JSON that replays
      equal (no tuples, non-string keys, NaN, lone surrogates, sets, bytes),
      where ``InMemoryStore`` keeps any Python object.
    - With ``query`` and ``offset``, unscored items page after the scored ones
      (``InMemoryStore`` repeats them on every page).
    - TTL is not supported (``supports_ttl = False``; a ``ttl`` is refused).
    - ``embed`` must be usable synchronously (``abatch`` runs ``batch`` in a thread).
    - A put refused or failing to embed raises, and nothing of its batch is
      written (``InMemoryStore`` may have applied earlier ops).

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemStore

            mem = sgmem.Memory("./memory")
            store = SGMemStore(mem, index={"fields": ["text"]})   # embeds with mem's embedder
            kv = SGMemStore(mem, index=None)                       # key-value only, no vectors

    Use:
        .. code-block:: python

            store.put(("users", "alice"), "pet", {"text": "Alice has a cat named Miso.", "year": 2021})
            store.put(("users", "alice"), "job", {"text": "Alice is a nurse in Lyon.", "year": 2019})
            store.get(("users", "alice"), "pet").value      # {'text': 'Alice has a cat named Miso.', 'year': 2021}
            store.search(("users",), query="Alice has a cat named Miso.", limit=1)[0].score   # 1.0
            store.search(("users", "alice"), filter={"year": {"$gte": 2020}})                 # the 'pet' item
            store.put(("users", "alice"), "note", {"text": "private"}, index=False)          # stored, not embedded
            store.list_namespaces(prefix=("users",))                                        # [('users', 'alice')]
            store.delete(("users", "alice"), "job")

        In a LangGraph agent: ``create_agent(model, tools, store=store)`` (or
        ``graph.compile(store=store)``) and use ``runtime.store`` in tools and nodes.

    Args:
        memory: the :class:`sgmem.Memory` holding the items.
        index: LangGraph's ``IndexConfig``: ``{"dims", "embed", "fields"}``.
            ``embed`` is LangChain ``Embeddings``, an embedding function, a
            provider string or a :class:`sgmem.Embedder`; left out, the
            Memory's own embedder is used (and ``dims`` may be left out too).
            ``fields`` are value paths in LangGraph's syntax (``"text"``,
            ``"tags[*]"``, ``"a.{b,c}"``; default ``["$"]``, the whole value
            as JSON, as in LangGraph). Not given: the Memory's embedder and
            ``fields``. ``None``: a plain key-value store, nothing is embedded,
            ``search(query=...)`` returns items unscored.
        fields: shorthand for ``index={"fields": fields}`` with the Memory's embedder.
        recall_in_chat: also let chat recall of the namespace's scope find the items (see above).
        cache_bytes: [D] bound on the items and vectors kept decoded between searches
            (least recently searched namespaces go first; default 64 MiB). A
            namespace is read again only after it changed, in this process or another.

    Attributes:
        index_config: the resolved index config (``None`` in key-value mode), as
            on LangGraph's stores; ``embed`` is what was given, or an
            :class:`~langchain_sgmem.SGMemEmbeddings` of the Memory's embedder.
        embeddings: the LangChain ``Embeddings`` items are embedded with (``None`` without index).
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        index: Mapping[str, Any] | None = DEFAULT_INDEX,
        fields: list[str] | None = None,
        recall_in_chat: bool = False,
        cache_bytes: int = 64 << 20,
    ) -> None:
        self.memory = check_memory(memory)
        if not isinstance(recall_in_chat, bool):
            raise InvalidInputError("recall_in_chat", recall_in_chat, "True or False")
        self.recall_in_chat = recall_in_chat
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int) or cache_bytes < 0:
            raise InvalidInputError("cache_bytes", cache_bytes, "an int >= 0 (bytes of decoded items kept per store)")
        self.cache_bytes = cache_bytes
        self.index_config: dict[str, Any] | None = resolve_index(self.memory, index, fields)
        self.embeddings: Embeddings | None = self.index_config["embed"] if self.index_config else None
        self._own_embedder = None
        if self.index_config is not None:
            embed = self.index_config["embed"]
            self.embeddings = embed if isinstance(embed, SGMemEmbeddings) else ensure_embeddings(embed)
            if isinstance(self.embeddings, SGMemEmbeddings):
                self._own_embedder = self.embeddings.embedder  # numpy in, numpy out: no list round trip
        self._fields = tokenize_fields(self.index_config["fields"]) if self.index_config else []
        self._scope_prefix = "" if recall_in_chat else STORE_SCOPE_PREFIX
        self._write_lock = threading.RLock()
        self._cache: OrderedDict[str, _ScopeItems] = OrderedDict()
        self._cache_lock = threading.Lock()

    def __repr__(self) -> str:
        fields = self.index_config["fields"] if self.index_config else None
        return f"SGMemStore({self.memory!r}, index_fields={fields!r}, recall_in_chat={self.recall_in_chat})"

    # ----------------------------------------------------------------- layout
    def scope_of(self, namespace: tuple[str, ...]) -> str:
        """The sgmem scope holding ``namespace``'s items (delete it to forget them all)."""
        return self._scope_prefix + namespace_to_scope(tuple(namespace))

    def _namespace_of(self, scope: str) -> tuple[str, ...] | None:
        if self._scope_prefix:
            return (
                scope_to_namespace(scope[len(self._scope_prefix) :]) if scope.startswith(self._scope_prefix) else None
            )
        return scope_to_namespace(scope)  # a prefixed scope has an empty label: never a namespace

    def _store_scopes(self, prefix: tuple[str, ...], *, check_thread: bool) -> list[tuple[str, tuple[str, ...]]]:
        """(scope, namespace) of the namespaces under ``prefix`` (that hold items, with ``check_thread``)."""
        out = []
        for scope in self.memory.scopes():
            ns = self._namespace_of(scope)
            if ns is None or ns[: len(prefix)] != prefix:
                continue
            # an out-of-chat scope holds nothing but items; a chat scope may hold none
            if check_thread and self.recall_in_chat and STORE_THREAD not in self.memory.threads(scope=scope):
                continue
            out.append((scope, ns))
        return out

    # ------------------------------------------------------------------ batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run Get/Search/ListNamespaces/Put ops; results in the order given.

        Every op is validated and every put's text embedded first, so a bad op
        means nothing is written.
        """
        ops = list(ops)
        fields = [("" if len(ops) == 1 else f"ops[{i}].") for i in range(len(ops))]
        for op, f in zip(ops, fields, strict=True):
            self._validate(op, f)
        puts: dict[tuple[tuple[str, ...], str], tuple[PutOp, str]] = {}
        for op, f in zip(ops, fields, strict=True):
            if isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = (op, f)  # the last write to a key wins
        plan = self._plan_puts(list(puts.values())) if puts else {}
        results: list[Result] = [None] * len(ops)
        queries = self._embed_queries([op for op in ops if isinstance(op, SearchOp)])
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[i] = self._get(op)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op, queries)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
        if plan:
            self._apply(plan)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (runs in a worker thread, never blocking the loop)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------- validation
    def _validate(self, op: Any, f: str) -> None:
        limits = self.memory.config.limits
        if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
            raise InvalidInputError(f.rstrip(".") or "op", op, "a GetOp, SearchOp, PutOp or ListNamespacesOp")
        validate_op_namespace(op)
        if isinstance(op, (GetOp, PutOp)):
            if not isinstance(op.key, str) or not op.key:
                raise InvalidInputError(f"{f}key", op.key, "a non-empty string")
            check_name(_item_id(op.key), f"{f}key", limits)
        if isinstance(op, SearchOp):
            check_filter(op.filter, f"{f}filter")
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidInputError(f"{f}query", op.query, "a string or None")
            if op.query is not None and len(op.query) > limits.max_query_chars:
                raise InvalidInputError(
                    f"{f}query", f"<{len(op.query)} characters>", f"at most {limits.max_query_chars} characters"
                )
        if isinstance(op, (SearchOp, ListNamespacesOp)):
            for name in ("limit", "offset"):
                v = getattr(op, name)
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise InvalidInputError(f"{f}{name}", v, "an int >= 0")
        if (
            isinstance(op, ListNamespacesOp)
            and op.max_depth is not None
            and (isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1)
        ):
            raise InvalidInputError(f"{f}max_depth", op.max_depth, "an int >= 1 or None")
        if isinstance(op, PutOp):
            # refuses empty namespaces; a "langgraph" root is refused by put(), allowed in batch() (as LangGraph does)
            check_name(self.scope_of(op.namespace), f"{f}namespace", limits)
            if op.ttl is not None:
                raise NotImplementedError("SGMemStore does not support TTL; pass ttl=None.")
            if op.value is None:
                return
            check_value(op.value, f"{f}value")
            if op.index is not None and op.index is not False and (
                isinstance(op.index, str) or not isinstance(op.index, (list, tuple))
                or not all(isinstance(p, str) and p for p in op.index)
            ):  # fmt: skip
                raise InvalidInputError(f"{f}index", op.index, "None, False or a list of value paths")

    # ------------------------------------------------------------------ writes
    def _texts(self, op: PutOp) -> list[tuple[str, str]]:
        """(path, text) pairs to embed for a put (none without index or with ``index=False``)."""
        if self.index_config is None or op.index is False or op.value is None:
            return []
        fields = self._fields if op.index is None else tokenize_fields(list(op.index))
        return field_texts(op.value, fields)

    def _embed_texts(self, texts: list[str], queries: bool) -> np.ndarray:
        """Vectors of ``texts`` as a float32 matrix (runs on an embedding worker thread)."""
        assert self.embeddings is not None
        with single_thread_blas():
            if self._own_embedder is not None:
                return np.asarray(self._own_embedder.embed(texts), dtype=np.float32)
            if queries:
                return np.asarray([self.embeddings.embed_query(t) for t in texts], dtype=np.float32)
            return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)

    def _embed_documents(self, texts: list[str]) -> np.ndarray:
        assert self.embeddings is not None and self.index_config is not None
        dims = self.index_config["dims"]
        try:
            out = _EMBED_POOL.submit(self._embed_texts, texts, False).result()
        except SgmemError:
            raise
        except Exception as exc:  # noqa: BLE001 - any embedder failure: nothing was written
            raise SgmemError(
                f"the store's embedder failed on {len(texts)} texts, so nothing was written: {exc!r}"
            ) from exc
        if out.shape != (len(texts), dims) or not np.isfinite(out).all():
            raise InvalidInputError(
                "index['embed']",
                f"<vectors of shape {out.shape}>",
                f"{len(texts)} finite vectors of {dims} floats (index['dims'])",
                "Set index['dims'] to the embedding model's dimension.",
            )
        return out

    def _plan_puts(self, puts: list[tuple[PutOp, str]]) -> dict[str, list[tuple[PutOp, dict[str, Any] | None]]]:
        """Per scope, each put with the message that will hold it (``None``: delete). Writes nothing."""
        limits = self.memory.config.limits
        texts: list[str] = []
        owners: list[tuple[int, str]] = []
        for n, (op, _) in enumerate(puts):
            for path, text in self._texts(op):
                owners.append((n, path))
                texts.append(text)
        vecs = self._embed_documents(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        per_put: list[list[list[str]]] = [[] for _ in puts]
        for (n, path), vec in zip(owners, vecs, strict=True):
            per_put[n].append([path, encode_vector(vec)])
        now = datetime.now(timezone.utc)
        plan: dict[str, list[tuple[PutOp, dict[str, Any] | None]]] = {}
        for n, (op, f) in enumerate(puts):
            scope = self.scope_of(op.namespace)
            msg = None if op.value is None else self._message(op, per_put[n], now)
            if msg is not None:
                try:  # exactly the checks Memory.add runs, before anything is written
                    normalise_messages([msg], now, limits)
                except InvalidInputError as exc:  # name the user's field, not the item's internal record
                    raise _renamed(exc, f"{f}value") from None
            plan.setdefault(scope, []).append((op, msg))
        for scope, group in plan.items():
            n_new = sum(1 for _, m in group if m is not None)
            if n_new > limits.max_messages_per_add:
                raise InvalidInputError(
                    "ops",
                    f"<{n_new} puts to {scope!r}>",
                    f"at most {limits.max_messages_per_add} puts to one namespace per batch (Limits.max_messages_per_add)",
                    "Split the batch.",
                )
        return plan

    def _message(self, op: PutOp, vectors: list[list[str]], now: datetime) -> dict[str, Any]:
        value = dict(op.value or {})
        content = _PLACEHOLDER
        if self.recall_in_chat:
            shown = self._fields if (op.index is None or op.index is False) else tokenize_fields(list(op.index))
            content = render_value(value, shown or tokenize_fields(["$"])) or op.key
            if not content.strip():
                content = op.key
        record: dict[str, Any] = {
            "key": op.key,
            "value": value,
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
        }
        if vectors:
            record["vectors"] = vectors
        return {
            "role": "system",
            "name": _SPEAKER,
            "content": content,
            "id": _item_id(op.key),
            # one session per item, so every sgmem hit kind maps to exactly one item
            "session": _item_id(op.key),
            "at": now,
            "metadata": {_META: record},
        }

    def _apply(self, plan: dict[str, list[tuple[PutOp, dict[str, Any] | None]]]) -> None:
        """Per namespace, one :meth:`sgmem.Memory.replace`: its puts and deletes commit together."""
        for scope, group in plan.items():
            with self._write_lock:
                ids = [_item_id(op.key) for op, _ in group]
                old = {str(m.id): m for m in self.memory.get(scope=scope, message_ids=ids) if self._is_item(m)}
                new = []
                for _, msg in group:
                    if msg is None:
                        continue
                    prev = old.get(msg["id"])
                    if prev is not None:
                        msg["metadata"][_META]["created_at"] = prev.metadata[_META]["created_at"]
                    new.append(msg)
                # every key of the group, present or not: an item another process put meanwhile is replaced too
                self.memory.replace(new, scope=scope, thread=STORE_THREAD, message_ids=ids)

    # ------------------------------------------------------------------- reads
    @staticmethod
    def _is_item(m: Any) -> bool:
        return m.thread == STORE_THREAD and isinstance(m.metadata.get(_META), dict)

    @staticmethod
    def _fields_of(namespace: tuple[str, ...], meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "namespace": namespace,
            "key": meta["key"],
            "value": copy.deepcopy(meta["value"]),  # the cache's copy stays as stored
            "created_at": datetime.fromisoformat(meta["created_at"]),
            "updated_at": datetime.fromisoformat(meta["updated_at"]),
        }

    def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        scope = self.scope_of(op.namespace)
        found = [m for m in self.memory.get(scope=scope, message_ids=[_item_id(op.key)]) if self._is_item(m)]
        return Item(**self._fields_of(op.namespace, found[0].metadata[_META])) if found else None

    def _embed_queries(self, ops: list[SearchOp]) -> dict[str, np.ndarray]:
        """Each distinct query of the batch embedded once, as a unit vector."""
        if self.embeddings is None:
            return {}
        queries = list(dict.fromkeys(op.query for op in ops if op.query))
        if not queries:
            return {}
        vecs = _EMBED_POOL.submit(self._embed_texts, queries, True).result()
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return dict(zip(queries, vecs / norms, strict=True))

    def _scope_items(self, scope: str) -> _ScopeItems | None:
        """The scope's items, read again only when the scope changed since the last read.

        The key is the one :class:`sgmem.Memory` keys its own indexes by (scope id and
        generation, bumped by every write, in any process), read under the Memory's lock.
        """
        mem = self.memory
        with mem._lock:  # noqa: SLF001 - the facade's cache key; see the docstring
            sid = mem._store.scope_id(scope)  # noqa: SLF001
            key = (sid, mem._store.generation(sid)) if sid is not None else None  # noqa: SLF001
        if key is None:
            return None
        with self._cache_lock:
            hit = self._cache.get(scope)
            if hit is not None and hit.key == key:
                self._cache.move_to_end(scope)
                return hit
        dims = self.index_config["dims"] if self.index_config else 0
        metas: list[dict[str, Any]] = []
        blocks: list[np.ndarray] = []
        owner: list[int] = []
        for m in mem.messages(scope=scope, thread=STORE_THREAD):
            meta = m.metadata.get(_META)
            if not isinstance(meta, dict):
                continue
            vecs = meta.get("vectors") if dims else None
            mat = decode_vectors([v[1] for v in vecs], dims) if vecs else None
            if mat is not None:
                blocks.append(mat)
                owner.extend([len(metas)] * len(mat))
            metas.append(meta)
        vectors = np.concatenate(blocks) if blocks else np.zeros((0, max(dims, 1)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1.0, norms)  # cosine, as InMemoryStore
        entry = _ScopeItems(key, metas, vectors.astype(np.float32), np.asarray(owner, dtype=np.int64), 0)
        entry.nbytes = entry.vectors.nbytes + 2048 * len(metas)
        with self._cache_lock:
            self._cache[scope] = entry
            total = sum(e.nbytes for e in self._cache.values())
            while total > self.cache_bytes and len(self._cache) > 1:  # least recently used first
                total -= self._cache.popitem(last=False)[1].nbytes
        return entry

    def _search(self, op: SearchOp, queries: dict[str, np.ndarray]) -> list[SearchItem]:
        q = queries.get(op.query) if op.query else None
        candidates: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        blocks, owners = [], []
        for scope, ns in self._store_scopes(tuple(op.namespace_prefix), check_thread=False):
            entry = self._scope_items(scope)
            if entry is None:
                continue
            keep = [n for n, meta in enumerate(entry.metas) if matches_filter(meta["value"], op.filter)]
            if q is not None and len(entry.owner):
                renumber = np.full(len(entry.metas), -1, dtype=np.int64)
                renumber[keep] = np.arange(len(candidates), len(candidates) + len(keep))
                rows = renumber[entry.owner] >= 0
                blocks.append(entry.vectors[rows])
                owners.append(renumber[entry.owner][rows])
            candidates += [(ns, entry.metas[n]) for n in keep]
        if q is None:
            page = candidates[op.offset : op.offset + op.limit]
            return [SearchItem(**self._fields_of(ns, meta)) for ns, meta in page]
        best = np.full(len(candidates), -np.inf, dtype=np.float64)
        if blocks and sum(len(b) for b in blocks):
            mat = np.concatenate(blocks)
            if mat.shape[1] == len(q):
                with single_thread_blas():
                    sims = mat @ q
                np.maximum.at(best, np.concatenate(owners), sims.astype(np.float64))  # best vector of each item
        order = np.argsort(-best, kind="stable")  # ties keep store order; unscored (-inf) last
        ranked = order[op.offset : op.offset + op.limit]
        return [
            SearchItem(**self._fields_of(*candidates[n]), score=float(best[n]) if np.isfinite(best[n]) else None)
            for n in ranked
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = [
            ns
            for _, ns in self._store_scopes((), check_thread=True)
            if all(matches_condition(c, ns) for c in (op.match_conditions or ()))
        ]
        found = sorted({ns[: op.max_depth] for ns in found}) if op.max_depth is not None else sorted(found)
        return found[op.offset : op.offset + op.limit]
