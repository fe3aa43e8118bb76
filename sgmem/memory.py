"""The facade: :class:`Memory` is the one object users and adapters call."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from .aio import AsyncMethods
from .bulk import add_many
from .cache import ByteLRU, CacheView
from .config import CUTOFF_HITS, MIN_DENSE_RELEVANCE, MIN_RELEVANCE, Config
from .context import LONG_TURN_MIN_TOKENS, ContextTurn, digest_turn, window_turn
from .deletes import DeleteMethods
from .derived.context import fit_with_derived
from .derived.engine import DerivedEngine
from .derived.reads import check_kinds
from .embed.base import Embedder, check_embeddings
from .embed.minilm import default_embedder
from .entities.extract import TypeModel
from .entities.index import EntityCache
from .entities.retrieve import EntityTools
from .errors import ConfigError, InvalidInputError, SgmemError, StoreError
from .forks import guard_at_fork
from .gate.blas import single_thread_blas
from .llm import LLM
from .neighbours import NeighbourMethods
from .pyramid.retrieve import PyramidTools, WordVectors, ensure_keywords
from .records import RecordMethods
from .retrieval.broad import BroadPrompts, user_statements
from .retrieval.dense import relevance_of_rows
from .retrieval.index import ScopeIndex, load_scope_index
from .retrieval.refresh import refresh_index
from .retrieval.search import (
    Ranked,
    Retriever,
    act_weights,
    allowed_mask,
    exchange_relevance,
    questions_answered,
)
from .retrieval.speakers import PLAIN_MODES, without_names
from .store.paths import resolve_store_path
from .store.pgsql import redact
from .store.postgres import PostgresStore, server_dense
from .store.sqlite import SQLiteStore
from .targets import is_postgres_target, is_url
from .text.acts import FILLER, NON_ANSWER, ActClassifier, act_model, acts_identity, shown
from .text.lexical import DEFAULT_ANALYZER, as_written
from .text.tokens import count_tokens
from .threads import ThreadMethods
from .types import AddResult, Hit, Message, RecallTrace
from .validate import (
    check_embedder_identity,
    check_int,
    check_mode,
    check_name,
    check_names,
    check_now,
    check_score,
    check_text,
    check_time,
)
from .write import commit_add, prepare_add, replace_messages

__all__ = ["Memory"]

log = logging.getLogger(__name__)


def _host_cache_dir(store: Any, root: str) -> Path | None:
    """Where a PostgreSQL host keeps its saved indexes of ``store`` (``Config.pg_cache_dir``): one directory per
    store (its :meth:`~sgmem.store.postgres.PostgresStore.store_id`), so that scope ids of two databases never
    meet; None when the store has no id (a role that may not record one)."""
    sid = store.store_id()
    return Path(root).expanduser() / f"store-{sid}" if sid else None


def _close_quietly(store: Any) -> None:
    """Close the store of a Memory that was dropped without ``close()`` (a finalizer: never raises)."""
    with contextlib.suppress(Exception):
        store.close()


class Memory(RecordMethods, NeighbourMethods, DeleteMethods, ThreadMethods, AsyncMethods):
    """Long-term memory for LLM agents, embedded, with no server and no LLM needed.

    Args:
        path: a directory for a durable store, ``None`` to keep everything in
            this process's memory (tests, scratch work), or a PostgreSQL store
            shared by many hosts: a ``postgresql://`` URL, a libpq
            ``"host=... dbname=..."`` string or a ``psycopg_pool.ConnectionPool``
            (``pip install 'sgmem[postgres]'``). A ``str`` that looks like
            another URI (``file:``...) is refused; a ``pathlib.Path`` is always
            a directory.
        embedder: any :class:`sgmem.Embedder`; default all-MiniLM-L6-v2.
        llm: optional :class:`sgmem.LLM` for LLM-backed features.
        config: a :class:`sgmem.Config`; default ``Config()``.
        preload: load the embedding model and the tokenizer now (see
            :meth:`warmup`) instead of inside the first ``add`` or ``search``.
        read_only: open an existing store without writing to it (searches
            and reads work; ``add``/``delete`` raise :class:`sgmem.StoreError`).
            The files' permissions are never changed, no index cache is saved, and
            closing leaves the directory as it was (SQLite's log files included).

    ``path`` may start with ``~`` (expanded); ``""`` is refused rather than
    taken as the current directory.

    Example:
        >>> with Memory() as mem:                                    # doctest: +SKIP
        ...     mem.add([{"role": "user", "content": "I adopted a cat named Miso."}],
        ...             scope="alice", thread="chat-1")
        ...     mem.search("What is my cat called?", scope="alice")[0].text
        'I adopted a cat named Miso.'
    """

    def __init__(
        self,
        path: str | Path | Any | None = None,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        config: Config | None = None,
        preload: bool = False,
        read_only: bool = False,
    ) -> None:
        for flag, value in (("preload", preload), ("read_only", read_only)):
            if not isinstance(value, bool):
                raise InvalidInputError(flag, value, "True or False")
        if config is not None and not isinstance(config, Config):
            raise InvalidInputError("config", config, "a sgmem.Config or None")
        if embedder is not None and not all(hasattr(embedder, a) for a in ("embed", "name", "dim")):
            raise InvalidInputError("embedder", embedder, "an object with embed(texts), name and dim (sgmem.Embedder)")
        shared = is_postgres_target(path)
        if path is not None and not shared and not isinstance(path, (str, Path)):
            raise InvalidInputError(
                "path", path, "a directory path (str or pathlib.Path), a postgresql:// URL, a psycopg pool or None"
            )
        if not shared and is_url(path):  # a URL is never taken for a directory
            raise InvalidInputError(
                "path",
                redact(str(path)),
                "a directory, or a postgresql:// (or postgres://) URL: other URL schemes are not supported",
            )
        store_path = None if shared else resolve_store_path(path)
        if read_only and (shared or store_path is None):
            raise InvalidInputError(
                "read_only",
                read_only,
                "False for an in-memory or PostgreSQL store (read-only opening is for a store directory)",
            )
        if embedder is not None:
            check_embedder_identity(embedder)
        self.config = config or Config()
        self._config_given = self.config  # before "auto" settings are resolved for this host (sgmem.saved)
        self.embedder: Embedder = embedder or default_embedder()
        # what reads the dialogue acts (Config.acts, sgmem.text.acts): a classifier on the sentence vectors,
        # or word rules (None)
        self._act_model: ActClassifier | None = act_model(self.embedder, self.config.acts)
        if self.config.dense_device is not None:  # before the store opens: a bad device changes nothing
            from .retrieval.device import check_device, resolve_device

            dense_device = resolve_device(self.config.dense_device, self.embedder)  # "auto": the embedder's
            if dense_device != self.config.dense_device:
                self.config = self.config.with_(dense_device=dense_device)
            if dense_device is not None:
                check_device(dense_device)
        self.llm = llm
        cut = self.config.min_relevance
        #: the default ``min_score``: ``Config.min_relevance``, else the value calibrated for this embedder
        self.min_relevance: float = cut if cut is not None else MIN_RELEVANCE.get(self.embedder.name, 0.0)
        dense_cut = self.config.min_dense_relevance
        #: the dense half of the default cutoff: ``Config.min_dense_relevance``, else the embedder's calibrated value
        self.min_dense_relevance: float = (
            dense_cut if dense_cut is not None else MIN_DENSE_RELEVANCE.get(self.embedder.name, 0.0)
        )
        self.path = store_path
        self.read_only = read_only
        self._store: SQLiteStore = (
            PostgresStore(
                path,
                busy_timeout_s=self.config.busy_timeout_s,
                vector_index=self.config.pg_vector_index,
                row_security=self.config.pg_row_security,
                scope_key=self.config.pg_scope_key,
            )
            if shared
            else SQLiteStore(
                self.path,
                busy_timeout_s=self.config.busy_timeout_s,
                read_only=read_only,
                wal_checkpoint_pages=self.config.wal_checkpoint_pages,
                wal_checkpoint_background=self.config.wal_checkpoint_background,
            )
        )
        self._where = getattr(self._store, "where", None) if shared else None
        # dropped without close(): the store's connection (a pooled one goes back to its pool) and its
        # checkpoint thread are released all the same; the finalizer holds the store, never this Memory
        self._finalizer = weakref.finalize(self, _close_quietly, self._store)
        try:
            self._store.bind_embedder(self.embedder.name, int(self.embedder.dim))
            self._store.bind_acts(acts_identity(self._act_model))
            #: the lexical analyzer of this store's terms (sgmem.text.lexical): every add and query uses it
            self.analyzer: str = self._store.bind_analyzer(DEFAULT_ANALYZER)
            if shared:
                self._store.dense = server_dense(self.config, self._store)  # type: ignore[attr-defined,arg-type]
        except BaseException:
            self._store.close()
            raise
        self._cache_dir = self.path / "faiss" if self.path is not None and not read_only else None
        # a read-only Memory maps the index cache files when they are current (it never writes them)
        self._cache_read = self.path / "faiss" if self.path is not None else None
        if shared and self.config.pg_cache_dir is not None:  # a PostgreSQL host's own saved indexes
            self._cache_dir = self._cache_read = _host_cache_dir(self._store, self.config.pg_cache_dir)
        self._retriever = Retriever(self.config, replies=self._answers)
        self._answer_model: ActClassifier | None | bool = False  # (read on first use: see _answers)
        self._names: dict[str, np.ndarray] = {}  # speakers' names embedded (Memory._name_vectors)
        self._query_vectors: dict[str, np.ndarray] = {}  # the last queries embedded (Memory._embed_query)
        self._broad = BroadPrompts(self.embedder)  # generic requests about the user (sgmem.retrieval.broad)
        word_bytes = int(self.embedder.dim) * 4 + 200
        # keyword embeddings (MGRetrieval vocabulary), bounded by a quarter of the cache budget
        self._words = WordVectors(self.embedder, capacity=max(1000, self.config.cache_bytes // 4 // word_bytes))
        # per-scope caches (retrieval indexes here, derived-memory state in the engine): one LRU, one budget
        # a PostgreSQL host saves a scope's index as it leaves the cache: its next use loads the files
        evicted = self._save_evicted if shared and self._cache_dir is not None else None
        self._evicted: list[ScopeIndex] = []
        self._caches = ByteLRU(self.config.cache_bytes, on_evict=evicted)
        self._indexes = CacheView(self._caches, "index")
        # LightGMEM entity layer (opt-in, Config.entities): per-scope, keyed by the scope generation, same LRU
        self._entities = EntityCache(self._caches)
        self._entity_scopes: set[int] = set()  # scopes this Memory wrote entities to: close() flushes them
        self._types = TypeModel(self._words, self.config.entities)
        self._lock = threading.RLock()
        guard_at_fork(self, "_lock", rank=0)  # held across a fork, before its store's (sgmem.forks)
        # held by warmup(): a fork waits for it, so a child never inherits a load or an import half done
        self._warming = threading.Lock()
        guard_at_fork(self, "_warming", rank=0)
        self._closed = False
        # a delete's checkpoint could not complete yet (see scrub()); or one a killed process left undone
        self._unscrubbed = bool(getattr(self._store, "scrub_pending", False))
        # generated memory (facts, summaries, insights) and the SAGE novelty gate
        self._derived = DerivedEngine(self._store, self.embedder, self.config, self.llm, self._caches)
        if preload:
            try:
                self.warmup()
            except BaseException:
                self.close()
                raise

    def warmup(self) -> float:
        """Load the embedding model and the tokenizer now, so the first request does not pay for them.

        The default MiniLM loads lazily: without a warm-up the first ``add`` or
        ``search`` takes the model's load time (1–3 s on an idle laptop, tens
        of seconds on a busy machine) on top of its own. Runs one tiny embedding
        and one token count; calling it again costs a few milliseconds.
        ``Memory(path, preload=True)`` calls it from the constructor. Run on a
        thread at start-up, it holds off a ``fork()`` until it is done, so a
        child process never inherits a model or an import half loaded.

        Returns:
            Seconds it took.
        """
        self._check_open()
        t0 = time.perf_counter()
        with self._warming:
            load = getattr(self.embedder, "load", None)
            if callable(load):
                load()
            check_embeddings(self.embedder, ["warm-up"], self.embedder.embed(["warm-up"]))
            count_tokens("warm-up")
        return time.perf_counter() - t0

    # ------------------------------------------------------------- lifecycle
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush_profiles(self, scope: str | None = None) -> int:
        """Write every deferred entity profile now (LightGMEM's final flush, seed §3.2.3); the profiles written.

        With the entity layer on and an LLM (``EntityConfig.llm``), an entity's
        profile is otherwise updated only once ``profile_batch`` new turns
        mention it; this updates every entity with unabsorbed turns, in
        ``scope`` or in every scope. :meth:`close` does it for the scopes this
        Memory wrote to. Without an LLM (profiles are then extractive, built
        at query time) it does nothing.
        """
        cfg = self.config.entities
        if not (cfg.enabled and cfg.llm and self.llm is not None) or self.read_only:
            return 0
        self._check_open()
        return self._flush_profiles([scope] if scope is not None else list(self.scopes()))

    def _flush_profiles(self, names: list[str] | None) -> int:
        """:meth:`flush_profiles` over scope ``names``, or (None) the scopes this Memory wrote entities to."""
        from .entities.store import apply_entities
        from .entities.write import plan_flush
        from .pyramid.llmio import Usage

        cfg = self.config.entities
        with self._lock:
            if names is None:
                ids = sorted(self._entity_scopes)
            else:
                ids = [sid for sid in (self._store.scope_id(n) for n in names) if sid is not None]
        written = 0
        for sid in ids:
            with self._lock:
                if not self._store.has_messages(sid):
                    continue
                snap = self._entities.get(self._store, sid)
            texts = functools.partial(self._stored_texts, sid)
            profiles = plan_flush(snap, cfg, self.llm, texts, Usage())  # LLM calls outside the lock
            if not profiles:
                continue
            with self._lock:
                with self._store.write() as conn:
                    apply_entities(conn, sid, [], [], [], profiles)
                    self._store.bump_generation(sid)
                self._entities.drop(sid)
            written += len(profiles)
        return written

    def close(self) -> None:
        """Flush deferred entity profiles (with an LLM), save index caches and close the store. Safe to call twice."""
        if not self._closed:
            cfg = self.config.entities
            if cfg.enabled and cfg.llm and self.llm is not None and not self.read_only:
                try:
                    self._flush_profiles(None)  # the scopes written in this session
                except Exception:  # noqa: BLE001, S110 - a failing model or store never blocks closing
                    pass
        with self._lock:
            if self._closed:
                return
            self._closed = True
            dirty = [idx for idx in self._indexes.values() if idx.dirty] + self._evicted
            if self._cache_dir is not None and dirty:
                try:
                    # under the write lock (PostgreSQL: the scope's row lock) no delete can slip between the
                    # check and the save: the vectors of a scope deleted (or changed) by another process are
                    # never written back
                    with self._store.write(timeout_s=1.0):
                        for idx in dirty:
                            self._store.lock_scope(idx.scope_id)
                            if self._store.generation(idx.scope_id) == idx.generation:
                                idx.save(self._cache_dir)
                except Exception:  # noqa: BLE001 - caches are optional; SQLite holds the truth
                    pass
            if self._unscrubbed:
                with contextlib.suppress(Exception):
                    self._store.scrub(timeout_s=1.0)
            self._caches.clear()
            self._entities.clear()
            self._store.close()
            self._finalizer.detach()

    def _save_evicted(self, key: Any, value: Any) -> None:
        """A PostgreSQL host: a scope's index left the memory cache; it is saved (``Config.pg_cache_dir``) once
        no transaction is open (:meth:`_flush_evicted`), the cache may evict inside one."""
        if isinstance(key, tuple) and key[0] == "index" and getattr(value, "dirty", False):
            self._evicted.append(value)

    def _flush_evicted(self) -> None:
        """Save the indexes evicted since the last call, each under its scope's row lock, so that no other host's
        delete slips between the generation check and the save (under ``_lock``, outside any transaction)."""
        while self._evicted and self._cache_dir is not None:
            idx = self._evicted.pop()
            try:
                with self._store.write(timeout_s=1.0):
                    self._store.lock_scope(idx.scope_id)
                    if self._store.generation(idx.scope_id) == idx.generation:
                        idx.save(self._cache_dir)
            except Exception as exc:  # noqa: BLE001 - a cache: the server holds the truth
                log.debug("index of scope %d not saved on eviction: %s", idx.scope_id, exc)

    def _check_open(self) -> None:
        if self._closed:
            raise SgmemError("this Memory is closed; create a new sgmem.Memory(path=...) to reopen the store.")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise StoreError(
                f"this Memory was opened read-only (sgmem.Memory({str(self.path)!r}, read_only=True)): searches "
                "and reads work, writes do not. Open the store without read_only to add or delete."
            )

    def __repr__(self) -> str:
        where = self._where or (str(self.path) if self.path else "in-memory")
        return f"Memory({where!r}, embedder={self.embedder.name!r})"

    # ----------------------------------------------------------------- index
    def _index(self, scope_id: int) -> ScopeIndex:
        """The scope's in-memory index, rebuilt when SQLite has moved on."""
        with self._lock:
            gen = self._store.generation(scope_id)
            idx = self._indexes.get(scope_id)
            if idx is not None and idx.generation != gen:  # another process wrote: append its rows if it only added
                try:
                    fresh = refresh_index(self._store, idx)
                except BaseException:
                    self._indexes.pop(scope_id)  # possibly half-extended: never served
                    raise
                if fresh:
                    idx.dirty = self._cache_dir is not None
                    self._indexes.put(scope_id, idx)  # re-counts its bytes
                    return idx
            if idx is None or idx.generation != gen:
                idx = load_scope_index(self._store, scope_id, int(self.embedder.dim), self._cache_read, self._act_model)
                idx.analyzer = self.analyzer
                self._indexes.put(scope_id, idx)
            if self._evicted and not self._store.conn.in_transaction:
                self._flush_evicted()
            return idx

    def _name_vectors(self, names: list[str]) -> np.ndarray:
        """The embeddings of speakers' names (:func:`sgmem.retrieval.speakers.without_names`), remembered: a
        scope's names recur in its queries."""
        todo = [n for n in names if n not in self._names]
        if todo:
            vecs = check_embeddings(self.embedder, todo, self.embedder.embed(todo))
            if len(self._names) > 4096:  # bounded: a store of many speakers keeps the names asked for lately
                self._names.clear()
            self._names.update(zip(todo, vecs, strict=True))
        return np.stack([self._names[n] for n in names])

    def _said(self, query: str) -> Callable[[Sequence[str]], np.ndarray] | None:
        """``query`` embedded as each of some speakers would have said it, as ingest embeds a stored sentence
        (one embedding call per search that needs them): a stored question is judged a repeat of the query
        on its text (:func:`sgmem.retrieval.search.repeat_cosines`)."""
        if not self.config.speaker_prefix:
            return None
        seen: dict[str, np.ndarray] = {}

        def said(speakers: Sequence[str]) -> np.ndarray:
            todo = [s for s in speakers if s not in seen]
            if todo:
                texts = [shown(s, query) for s in todo]
                seen.update(zip(todo, check_embeddings(self.embedder, texts, self.embedder.embed(texts)), strict=True))
            return np.stack([seen[s] for s in speakers])

        return said

    def _answers(self, idx: ScopeIndex, rows: list[int]) -> np.ndarray:
        """[D] For reply turns that inherited their question's topic: True where the turn says something.

        Read by the dialogue-act classifier whatever ``Config.acts`` stores (the word rules catch few wordings
        of a non-answer: "Let me check.", "Hmm, no idea"), each sentence as ingest embedded it; a turn answers
        nothing when every sentence of it is a sure non-answer or filler (the classifier's uncertain band stays a
        statement, so a fact is not read as nothing on a guess). Without a classifier for the embedder (a test
        embedder's vectors mean nothing), every reply answers.
        """
        model = self._answer_model
        if model is False:
            model = self._act_model if self._act_model is not None else act_model(self.embedder, "auto")
            self._answer_model = model
        if model is None or not rows:
            return np.ones(len(rows), dtype=bool)
        sents = [idx.turn_sentences(r) for r in rows]
        flat = [s for ss in sents for s in ss]
        if not flat:
            return np.ones(len(rows), dtype=bool)
        acts = model.classify(idx.sent_text.many(flat), idx.sentence_vectors()[flat])
        says = ~np.isin(acts, (FILLER, NON_ANSWER))
        out, at = np.ones(len(rows), dtype=bool), 0
        for i, ss in enumerate(sents):
            out[i] = bool(says[at : at + len(ss)].any()) if ss else True
            at += len(ss)
        return out

    def _embed_query(self, query: str) -> np.ndarray:
        """The query's vector; the last few are kept (a search embeds its query once, and its default cutoff
        reads the same vector again: :meth:`_default_cut`)."""
        cached = self._query_vectors.get(query)
        if cached is not None:
            return cached.copy()
        vec = check_embeddings(self.embedder, [query], self.embedder.embed([query]))[0]
        if len(self._query_vectors) >= 16:
            self._query_vectors.pop(next(iter(self._query_vectors)), None)
        self._query_vectors[query] = vec
        return vec.copy()

    # ------------------------------------------------------------------ write
    def add(
        self,
        messages: Sequence[dict[str, Any] | Message] | dict[str, Any] | Message,
        *,
        scope: str,
        thread: str,
        at: datetime | str | None = None,
    ) -> AddResult:
        """Store messages verbatim and index them for retrieval, in one transaction.

        Args:
            messages: dicts ``{"role", "content"}`` with optional ``"name"``
                (speaker), ``"id"`` (your id, unique in the scope), ``"at"``
                (datetime or ISO-8601), ``"session"`` and ``"metadata"``; or
                :class:`sgmem.Message` objects. One message alone is accepted too.
            scope: whose memory this is (user, tenant); scopes never mix.
            thread: the conversation the messages belong to.
            at: default time for messages without their own (default: now, UTC).

        Returns:
            AddResult with the stored ids, counts and timings.

        Raises:
            InvalidInputError: bad messages or arguments; nothing is stored.
        """
        with single_thread_blas():  # numpy's BLAS threads would contend with the embedder's
            return self._add(messages, scope, thread, at)

    def add_many(self, items: Sequence[Any], *, scope: str, at: datetime | str | None = None) -> list[AddResult]:
        """Store many adds (threads, sessions) in one call, embedding all their texts in one pass.

        Args:
            items: each one add: ``{"messages": [...], "thread": "...", "at": optional}``
                or a ``(thread, messages)`` pair; messages as for :meth:`add`.
            scope: whose memory they all go to.
            at: default time for items and messages without their own.

        Every item is validated before anything is written; all new texts are
        embedded in one length-sorted pass; each item is then written as its
        own transaction, in order, exactly as :meth:`add` would (:mod:`sgmem.bulk`).

        Returns:
            One AddResult per item, in order.

        Raises:
            InvalidInputError: a malformed item or message; nothing is stored.
        """
        self._check_writable()
        with single_thread_blas():
            return add_many(self, items, scope, at)

    def _add(self, messages: Any, scope: str, thread: str, at: datetime | str | None) -> AddResult:
        self._check_writable()
        return commit_add(self, prepare_add(self, messages, scope, thread, at))

    def replace(
        self,
        messages: Sequence[dict[str, Any] | Message] | dict[str, Any] | Message,
        *,
        scope: str,
        thread: str,
        message_ids: Sequence[str] | None = None,
        at: datetime | str | None = None,
    ) -> AddResult:
        """Delete messages and add others in their place, in one transaction.

        Deletes the messages of ``scope`` whose ids are in ``message_ids``
        (``None``: every message of ``thread``) with everything derived from
        them, exactly as :meth:`delete`, then adds ``messages`` to ``thread``
        exactly as :meth:`add`. New messages may reuse the deleted ids.
        Everything is validated, segmented and embedded before the store is
        touched, and both steps commit together: after any error (bad input,
        a limit, a failing embedder, a crash) the store holds either the old
        messages or the new ones, never neither. ``messages=[]`` is an atomic
        delete that returns an :class:`AddResult` too.

        Returns:
            The add's :class:`AddResult`, with ``replaced`` holding the delete's receipt.

        Raises:
            InvalidInputError: bad messages or arguments; nothing changes.
        """
        with single_thread_blas():
            self._check_writable()
            return replace_messages(self, messages, scope, thread, message_ids, at)

    # ------------------------------------------------------------------- read
    def _ranked(
        self,
        query: str,
        scope: str,
        k: int,
        mode: str | None,
        threads: Any,
        since: Any,
        until: Any,
        exclude_message_ids: Any = None,
        now: Any = None,
    ) -> tuple[list[Ranked], ScopeIndex | None, np.ndarray | None]:
        self._check_open()
        query, scope, k, thread_list, since_dt, until_dt, exclude = self._check_query(
            query, scope, k, threads, since, until, exclude_message_ids
        )
        asked_at = check_now(now)
        mode = check_mode(mode) or self.config.default_mode
        if mode == "entity" and not self.config.entities.enabled:
            raise ConfigError(
                "mode='entity' needs the entity layer, which is off by default (Config.entities.enabled=False). "
                "Open the Memory with sgmem.Config(entities=sgmem.EntityConfig(enabled=True)) and add the "
                "messages again (entities are extracted at write time), or use another mode."
            )
        with self._lock:
            scope_id = self._store.scope_id(scope)
        if scope_id is None:
            return [], None, None
        q = self._embed_query(query)
        with self._lock, single_thread_blas():  # see sgmem.gate.blas: next to torch, one BLAS thread is faster
            idx = self._index(scope_id)
            allowed = allowed_mask(idx, thread_list, since_dt, until_dt, exclude)
            if self._retriever.needs_keywords(mode):
                ensure_keywords(self._store, idx)
            ents = (
                EntityTools(self._entities.get(self._store, scope_id), self._types, self._words, self.config.entities)
                if self._retriever.needs_entities(mode)
                else None
            )
            if mode not in PLAIN_MODES:  # a speaker's name in the query is not what her turns say
                q = without_names(idx, query, q, self._name_vectors)
            ranked = self._retriever.search(
                idx,
                mode,
                q,
                query,
                k,
                allowed,
                lambda rows: self._turn_texts(idx, rows),
                PyramidTools(self._words, self.llm),
                ents,
                asked_at,
                self._said(query),
            )
        return ranked, idx, q

    def _check_query(self, query: Any, scope: Any, k: Any, threads: Any, since: Any, until: Any, exclude: Any) -> Any:
        """A search's arguments, checked in one place (``InvalidInputError`` names the bad one)."""
        limits = self.config.limits
        return (
            check_text(query, "query", limits.max_query_chars, "max_query_chars"),
            check_name(scope, "scope", limits),
            check_int(k, "k", 1, limits.max_k),
            check_names(threads, "threads", limits, one=True),
            check_time(since, "since"),
            check_time(until, "until"),
            check_names(exclude, "exclude_message_ids", limits),
        )

    def _turn_texts(self, idx: ScopeIndex, rows: list[int]) -> list[str]:
        """The speaker-labelled texts of the index's turn ``rows``; ``""`` for a turn the store no longer
        holds (another host or process deleted it after the index's generation check: it matches nothing,
        and :meth:`search` drops it like any turn whose details are gone)."""
        details = self._details(idx.scope_id, [idx.msg_ids[r] for r in rows])
        return [
            f"{d['speaker']}: {d['content']}" if d is not None else ""
            for d in (details.get(idx.msg_ids[r]) for r in rows)
        ]

    def _stored_texts(self, scope_id: int | None, message_ids: list[int]) -> list[str]:
        """Dated, speaker-labelled texts of a scope's stored messages (entity profiles' evidence)."""
        if scope_id is None:  # a scope not stored yet holds no message
            return []
        details = self._details(scope_id, message_ids)
        return [
            f"({d['at'].date().isoformat()}) {d['speaker']}: {d['content']}"
            for d in (details[m] for m in message_ids if m in details)
        ]

    def _details(self, scope_id: int, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        with self._lock:
            return self._store.message_details(scope_id, ids)

    @staticmethod
    def _turn_hit(
        idx: ScopeIndex, rk: Ranked, details: dict[int, dict[str, Any]], rel: dict[int, float], query: str
    ) -> Hit | None:
        """The :class:`Hit` of one ranked turn or chunk (``None`` when its messages were deleted meanwhile);
        its ``why["matched"]`` holds the query's words as the user wrote them, not their stems."""
        ds = [details[idx.msg_ids[r]] for r in rk.rows if idx.msg_ids[r] in details]
        if not ds:
            return None
        why = rk.why
        if why.get("matched"):
            why = {**why, "matched": as_written(query, list(why["matched"]), idx.analyzer)}
        text = ds[0]["content"] if len(ds) == 1 else "\n".join(f"{d['speaker']}: {d['content']}" for d in ds)
        return Hit(
            text=text,
            score=rk.score,
            kind=rk.kind,
            message_ids=tuple(d["ext_id"] for d in ds),
            thread=ds[0]["thread"],
            at=ds[0]["at"],
            why=why,
            speaker=ds[0]["speaker"],
            relevance=max((float(rel[r]) for r in rk.rows), default=0.0),
        )

    def search(
        self,
        query: str,
        *,
        scope: str,
        k: int = 10,
        mode: str | None = None,
        threads: Iterable[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        exclude_message_ids: Iterable[str] | None = None,
        kinds: Iterable[str] | str | None = None,
        min_score: float | None = None,
        now: datetime | str | None = None,
    ) -> list[Hit]:
        """Find the memories of ``scope`` most relevant to ``query``.

        Args:
            query: what to look for (a question, a topic, the user's message).
            scope: whose memories to search; other scopes are never read.
            k: how many hits to return.
            mode: ``"hybrid"`` (default), ``"vector"``, ``"graph"`` (SGMem),
                ``"bm25"`` or ``"pyramid"`` (MGRetrieval: keyword paths, with
                the LLM when the Memory has one; ``Hit.why`` shows each hit's
                keyword path, pyramid level and round); see :class:`sgmem.Config`.
            threads: only these threads (a list, or one thread's name).
            since, until: only messages said in this time window (inclusive).
            exclude_message_ids: never return these messages (e.g. the ones
                already in the prompt).
            kinds: ``None`` returns the mode's own hits (turns or chunks).
                Otherwise the kinds wanted: ``"chunk"`` (the mode's hits) and
                generated memory ``"summary"``, ``"fact"``, ``"insight"`` — up
                to ``k`` of each, in that order (SGMem §1.3 step 2: top-K of
                each table), scored ``cosine + 1``. One kind may be given as a string.
            min_score: drop hits whose :attr:`Hit.relevance` (in [0, 1], the
                same measure in every mode) is below this; ``0`` keeps every
                hit. ``None`` applies the default cutoff, read on the first 10
                hits whatever ``k``: nothing unless the best hit's relevance over
                :attr:`min_relevance` plus the best dense relevance over
                :attr:`min_dense_relevance` reaches 2 (0.15 and 0.45 with the
                default MiniLM, so an unrelated question gets no hits; no cutoff
                with other embedders), then every hit that reaches
                ``min_relevance`` or ``Config.relative_relevance`` (0.5) × the
                best hit's. Hits are ranked first and cut after, so fewer than
                ``k`` may come back, and ``k=3`` gets the first three of ``k=10``.
            now: the moment of asking, which time in the query is relative to:
                turns said "last week", "three days ago", "last Saturday" or
                "in May" (the latest May) before it rank higher. A datetime
                (naive is taken as UTC; an aware one's own time zone decides
                the calendar day) or an ISO-8601 string; ``None``: the clock.
                An agent replaying an older chat passes that chat's time.

        Returns:
            Hits, best first (per kind); empty when the scope holds nothing relevant.
        """
        t0 = time.perf_counter()
        kind_list = check_kinds(kinds)
        floor = check_score(min_score, "min_score", self.min_relevance)
        check_now(now)
        if kind_list is not None and "chunk" not in kind_list:
            derived = self._dense_floor() if min_score is None else floor
            return self._derived_search(query, scope, k, kind_list, threads, since, until, exclude_message_ids, derived)
        # the default cutoff reads the first CUTOFF_HITS hits whatever k: k=3 gets the first three of k=10
        k = self._check_query(query, scope, k, threads, since, until, exclude_message_ids)[2]  # (before k is used)
        depth = max(k, min(CUTOFF_HITS, self.config.limits.max_k)) if min_score is None and floor else k
        ranked, idx, q = self._ranked(query, scope, depth, mode, threads, since, until, exclude_message_ids, now)
        if idx is None or q is None:
            return []
        rel = self._hit_relevance(idx, q, ranked)
        derived_floor = floor
        if min_score is None:
            floor, derived_floor = self._default_cut(idx, q, ranked, rel, floor, query)
        ranked = ranked[:k]
        broad = self._broad_rows(idx, q, ranked, rel, self.min_relevance) if min_score is None else set()
        if broad:  # a broad question has no one best answer to be near: its statements, and what reaches the floor
            floor = max(floor, self.min_relevance)
        details = self._details(idx.scope_id, [idx.msg_ids[r] for rk in ranked for r in rk.rows])
        hits: list[Hit] = []
        cut: list[Hit] = []
        for rk in ranked:
            hit = self._turn_hit(idx, rk, details, rel, query)
            if hit is None:
                continue
            if hit.relevance >= floor:
                hits.append(hit)
            elif broad.intersection(rk.rows):  # kept below the cutoff for a broad question: its why says so
                hits.append(dataclasses.replace(hit, why={**hit.why, "broad": True}))
            else:
                cut.append(hit)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("search %s", _describe(query, scope, hits, cut, floor, time.perf_counter() - t0))
        if kind_list:
            hits += self._derived.hits(
                idx.scope_id,
                kind_list,
                q,
                k,
                check_names(threads, "threads", self.config.limits, one=True),
                check_time(since, "since"),
                check_time(until, "until"),
                check_names(exclude_message_ids, "exclude_message_ids", self.config.limits),
                derived_floor,
            )
        return hits

    def _broad_rows(
        self, idx: ScopeIndex, q: np.ndarray, ranked: list[Ranked], rel: dict[int, float], floor: float
    ) -> set[int]:
        """The user's statements a broad question about the user gets beside the hits that reach the cutoff
        ``floor`` (:mod:`sgmem.retrieval.broad`); empty for any other question, or with the cutoff off."""
        if not floor or not rel or self.config.broad_cosine >= 1.0:
            return set()
        cos, prompt = self._broad.nearest(q)
        if cos < self.config.broad_cosine:
            return set()
        with self._lock, single_thread_blas():
            rows = [r for rk in ranked for r in rk.rows]
            return set(user_statements(idx, rows, q, prompt, self.config.relative_relevance))

    def _dense_floor(self) -> float:
        """The default cutoff on one dense reading alone (generated memory, a mode that ranks by the cosine):
        the relevance at which the two halves of the default cutoff (``Config.min_relevance`` and
        ``Config.min_dense_relevance``) pass together, ``2 / (1/min_relevance + 1/min_dense_relevance)``."""
        a, b = self.min_relevance, self.min_dense_relevance
        return 2.0 / (1.0 / a + 1.0 / b) if a > 0 and b > 0 else a

    def _default_cut(
        self, idx: ScopeIndex, q: np.ndarray, ranked: list[Ranked], rel: dict[int, float], floor: float, query: str
    ) -> tuple[float, float]:
        """The default cutoff for one query: (the turns' cutoff, generated memory's).

        Reads the first :data:`~sgmem.config.CUTOFF_HITS` hits of ``ranked`` (the same for every ``k``): the
        best hit's relevance against ``floor`` (``Config.min_relevance``) and the best dense relevance among
        them against ``Config.min_dense_relevance``; the query gets hits when the two reach their values on
        average (``best / floor + dense / min_dense >= 2``, see ``Config.min_relevance``).
        """
        derived = self._dense_floor()
        if not floor:
            return floor, derived
        first = [r for rk in ranked[:CUTOFF_HITS] for r in rk.rows]
        best = max((rel[r] for r in first if r in rel), default=0.0)
        gate = self.min_dense_relevance
        dense_best = 0.0
        if gate and first:  # the plain dense relevance of the first hits, from the mode's own scan when it had one
            # the query as written: a speaker's name it holds says whose memory it asks about (the ranking leaves
            # the name out of its vector, sgmem.retrieval.speakers.without_names)
            plain = self._embed_query(query)
            cos = next((rk.cosines for rk in ranked if rk.cosines is not None), None)
            if cos is not None and not np.array_equal(plain, q):
                cos = None
            with self._lock, single_thread_blas():  # reads FAISS storage that a concurrent add may reallocate
                dense_best = max(relevance_of_rows(idx, plain, first, cos).values(), default=0.0)
        passed = best / floor + dense_best / gate >= 2.0 if gate else best >= floor
        share = self.config.relative_relevance
        if passed and share:
            derived = min(derived, share * dense_best)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "cutoff: best relevance %.3f / %.3f + best dense relevance %.3f / %.3f %s 2: %s",
                best,
                floor,
                dense_best,
                gate,
                ">=" if passed else "<",
                "hits" if passed else "nothing",
            )
        return self._default_floor([best], floor, passed), derived

    def _default_floor(self, relevances: Iterable[float], floor: float, passed: bool | None = None) -> float:
        """The turns' cutoff once the query's evidence is judged: ``floor`` (``Config.min_relevance``) or
        ``Config.relative_relevance`` × the best hit's relevance, whichever is lower, when the query ``passed``
        (``None``: when its best hit reaches ``floor``); else just above the best hit (nothing comes back)."""
        best = max(relevances, default=0.0)
        if not floor:
            return floor
        if passed is None:
            passed = best >= floor
        if not passed:
            return max(floor, math.nextafter(best, math.inf))
        share = self.config.relative_relevance
        return min(floor, share * best if share else best)

    def _hit_relevance(
        self, idx: ScopeIndex, q: np.ndarray, ranked: list[Ranked], lifted: set[int] | None = None
    ) -> dict[int, float]:
        """:attr:`Hit.relevance` of every turn row of ``ranked``: the one a mode read off its own exact scan
        (:attr:`Ranked.relevance`), else computed for those rows (:meth:`_relevance`)."""
        final = {
            rk.rows[0]: rk.relevance for rk in ranked if rk.measure and rk.relevance is not None and len(rk.rows) == 1
        }
        if len(final) == sum(len(rk.rows) for rk in ranked):  # the mode ranked by relevance itself: cut by it as it is
            if lifted is not None:  # the replies it read as their exchange ("answers": the question they answer)
                lifted.update(rk.rows[0] for rk in ranked if rk.why.get("answers"))
            return final
        known = {rk.rows[0]: rk.relevance for rk in ranked if rk.relevance is not None and len(rk.rows) == 1}
        # the exact scan's cosines, when the mode had one: the exchanges' and echoes' cosines are read from it
        cos = next((rk.cosines for rk in ranked if rk.cosines is not None), None)
        rest = [r for rk in ranked for r in rk.rows if r not in known]
        if rest:
            known.update(self._relevance(idx, q, rest))
        with self._lock, single_thread_blas():  # reads FAISS storage that a concurrent add may reallocate
            # a reply read as its exchange ("What's the dog's name?" — "Pepper."), then times the turn's
            # dialogue-act weight: "Thanks!" is relevant to no query, an echo of the query hardly
            for r, v in exchange_relevance(idx, q, known, cos).items():
                if v > known[r] and lifted is not None:
                    lifted.add(r)  # found through its question: it reads as the exchange
                known[r] = max(known[r], v)
            for r, w in act_weights(idx, known, self.config.hybrid, q, cos).items():
                known[r] *= w
        return known

    def _relevance(self, idx: ScopeIndex, q: np.ndarray, rows: list[int]) -> dict[int, float]:
        """:attr:`Hit.relevance` of the turn ``rows`` for the query vector ``q`` (only theirs is computed)."""
        with self._lock, single_thread_blas():  # reads FAISS storage that a concurrent add may reallocate
            return relevance_of_rows(idx, q, rows)

    def _derived_search(
        self,
        query: str,
        scope: str,
        k: int,
        kinds: list[str],
        threads: Any,
        since: Any,
        until: Any,
        exclude: Any,
        floor: float,
    ) -> list[Hit]:
        """:meth:`search` over generated memory only (no turn retrieval)."""
        self._check_open()
        query, scope, k, thread_list, since_dt, until_dt, excluded = self._check_query(
            query, scope, k, threads, since, until, exclude
        )
        with self._lock:
            scope_id = self._store.scope_id(scope)
        if scope_id is None:
            return []
        return self._derived.hits(
            scope_id, kinds, self._embed_query(query), k, thread_list, since_dt, until_dt, excluded, floor
        )

    def context(
        self,
        query: str,
        *,
        scope: str,
        budget_tokens: int = 2000,
        mode: str | None = None,
        exclude_message_ids: Iterable[str] | None = None,
        min_score: float | None = None,
        now: datetime | str | None = None,
    ) -> str:
        """A prompt block of the memories relevant to ``query``, within a token budget.

        The block is chronological, dated and speaker-labelled; its exact
        tiktoken (cl100k_base) count never exceeds ``budget_tokens``. An empty
        string means nothing relevant was found (or nothing fits).
        ``exclude_message_ids`` leaves out messages the prompt already holds
        (e.g. a chat memory's recent window). ``min_score`` leaves out
        memories whose :attr:`Hit.relevance` is below it (``None``:
        ``Config.min_relevance``; ``0``: fill the budget whatever the question).
        ``now`` is the moment of asking ("last week" is the week before it;
        ``None``: the clock), as in :meth:`search`.
        """
        return self._context_with_ids(
            query,
            scope=scope,
            budget_tokens=budget_tokens,
            mode=mode,
            exclude_message_ids=exclude_message_ids,
            min_score=min_score,
            now=now,
        )[0]

    def context_trace(
        self,
        query: str,
        *,
        scope: str,
        budget_tokens: int = 2000,
        mode: str | None = None,
        exclude_message_ids: Iterable[str] | None = None,
        min_score: float | None = None,
        now: datetime | str | None = None,
    ) -> RecallTrace:
        """:meth:`context` with what it recalled: the block, the hits with their ``why``, what the cutoff removed.

        Takes the same arguments and returns the same block (``.text``); the
        adapters keep the last one as ``last_recall``.
        """
        trace: dict[str, Any] = {}
        text, ids = self._context_with_ids(
            query,
            scope=scope,
            budget_tokens=budget_tokens,
            mode=mode,
            exclude_message_ids=exclude_message_ids,
            min_score=min_score,
            trace=trace,
            now=now,
        )
        return RecallTrace(query=query, scope=scope, text=text, message_ids=tuple(ids), **trace)

    def _context_with_ids(
        self,
        query: str,
        *,
        scope: str,
        budget_tokens: int,
        mode: str | None,
        exclude_message_ids: Iterable[str] | None = None,
        with_generated: bool = True,
        min_score: float | None = None,
        trace: dict[str, Any] | None = None,
        now: Any = None,
    ) -> tuple[str, list[str]]:
        """:meth:`context` plus the ids of the messages that made it in.

        The ids of turns in the block come first; with ``with_generated``, the
        source messages of the facts, summaries and insights in it follow.
        ``trace``, when given, receives :class:`RecallTrace`'s ``hits``, ``cut``,
        ``cutoff`` and ``ms`` (also computed when the DEBUG log is on).
        """
        t0 = time.perf_counter()
        budget_tokens = check_int(budget_tokens, "budget_tokens", 1)
        floor = check_score(min_score, "min_score", self.min_relevance)
        k = min(self.config.limits.max_k, max(10, budget_tokens // 12))
        ranked, idx, q = self._ranked(query, scope, k, mode, None, None, None, exclude_message_ids, now)
        tracing = trace is not None or log.isEnabledFor(logging.DEBUG)
        if idx is None or q is None or not ranked:
            if tracing:
                ms = (time.perf_counter() - t0) * 1e3
                if trace is not None:
                    trace.update(cutoff=floor, ms=ms)
                why = "the scope holds no memories" if idx is None else "nothing ranked"
                log.debug("context scope=%r query=%r: %s (%.1f ms)", scope, query, why, ms)
            return "", []
        lifted: set[int] = set()
        rel = self._hit_relevance(idx, q, ranked, lifted)
        broad = self._broad_rows(idx, q, ranked, rel, floor) if min_score is None else set()
        derived_floor = floor
        if min_score is None:
            floor, derived_floor = self._default_cut(idx, q, ranked, rel, floor, query)
            if broad:  # a broad question has no one best answer to be near: its statements, and what reaches the floor
                floor = max(floor, self.min_relevance)
        if tracing:
            all_details = self._details(idx.scope_id, [idx.msg_ids[r] for rk in ranked for r in rk.rows])
            pairs = [(rk, self._turn_hit(idx, rk, all_details, rel, query)) for rk in ranked]
            found = [(h, h.relevance >= floor or bool(broad.intersection(rk.rows))) for rk, h in pairs if h is not None]
            kept = tuple(h for h, keep in found if keep)
            cut = tuple(h for h, keep in found if not keep)
        rows: list[int] = []
        for rk in ranked:
            for r in rk.rows:
                if r not in rows and (rel[r] >= floor or r in broad):
                    rows.append(r)
        with self._lock:
            asked = questions_answered(idx, [r for r in rows if r in lifted])
        if asked:  # a reply found through its question comes with it ("How old is your son?" — "12.")
            rows = [x for r in rows for x in ((r, asked[r]) if r in asked else (r,))]
            rows = list(dict.fromkeys(rows))
        details = self._details(idx.scope_id, [idx.msg_ids[r] for r in rows])
        cands = []
        with self._lock:  # digest_turn reads FAISS storage that a concurrent add may reallocate
            for r in rows:
                d = details.get(idx.msg_ids[r])
                if d is not None:
                    text = digest_turn(idx, r, d["content"], q, self.config.context_turn_tokens)
                    # [D] a long turn (a pasted report) takes at most half the budget: the window around what matched
                    text = window_turn(idx, r, text, q, max(LONG_TURN_MIN_TOKENS, budget_tokens // 2))
                    cands.append(ContextTurn(idx.msg_ids[r], d["at"], d["thread"], d["speaker"], text))
        items = self._derived.context_items(
            idx.scope_id, q, check_names(exclude_message_ids, "exclude_message_ids", self.config.limits), derived_floor
        )
        text, chosen, picked = fit_with_derived(cands, items, budget_tokens, self.config.derived.context_share)
        ids = [details[c.key]["ext_id"] for c in chosen]
        if with_generated:
            ids += [m for m in dict.fromkeys(m for i in picked for m in i.message_ids) if m not in ids]
        if tracing:
            ms = (time.perf_counter() - t0) * 1e3
            if trace is not None:
                trace.update(hits=kept, cut=cut, cutoff=floor, ms=ms)
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "context %s; block of %d tokens holds %s:\n%s",
                    _describe(query, scope, kept, cut, floor, ms / 1e3),
                    count_tokens(text),
                    ", ".join(ids) or "nothing",
                    text,
                )
        return text, ids


def _describe(query: str, scope: str, hits: Sequence[Hit], cut: Sequence[Hit], floor: float, seconds: float) -> str:
    """One recall for the DEBUG log: the query, each hit with its relevance and ``why``, what the cutoff removed."""
    lines = [
        f"scope={scope!r} query={query!r}: {len(hits)} hits, {len(cut)} cut below relevance {floor:.3f} "
        f"({seconds * 1e3:.1f} ms)"
    ]
    for tag, group in (("hit", hits), ("cut", cut)):
        for h in group:
            lines.append(
                f"  {tag} {','.join(h.message_ids)} relevance {h.relevance:.3f} score {h.score:.3f} "
                f"{h.speaker}: {h.text[:80]!r} why {h.why}"
            )
    return "\n".join(lines)
