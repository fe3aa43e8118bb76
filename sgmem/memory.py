"""The facade: :class:`Memory` is the one object users and adapters call."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .aio import AsyncMethods
from .config import Config
from .context import ContextTurn, digest_turn
from .derived.context import fit_with_derived
from .derived.engine import DerivedEngine
from .derived.reads import check_kinds
from .embed.base import Embedder, check_embeddings
from .embed.minilm import default_embedder
from .entities.extract import TypeModel
from .entities.index import EntityCache, EntityIndex
from .entities.retrieve import EntityTools
from .entities.store import apply_entities
from .entities.write import plan_entities
from .errors import InvalidInputError, NotFoundError, SgmemError
from .gate.blas import single_thread_blas
from .ingest import embed_texts, knn_edges, prepare, turn_vectors
from .llm import LLM
from .pyramid.retrieve import PyramidTools, WordVectors, ensure_keywords, plan_add
from .pyramid.vocabulary import apply_plan
from .retrieval.index import ScopeIndex, load_scope_index
from .retrieval.search import Ranked, Retriever, allowed_mask
from .store.schema import SCHEMA_VERSION
from .store.sqlite import SQLiteStore
from .types import AddResult, DeleteReceipt, Hit, MemoryVersion, Message, Stats
from .validate import (
    check_embedder_identity,
    check_int,
    check_mode,
    check_name,
    check_names,
    check_text,
    check_time,
    normalise_messages,
)
from .write import delete_rows, extend_index, place_messages, session_names

__all__ = ["Memory"]


class Memory(AsyncMethods):
    """Long-term memory for LLM agents, embedded, with no server and no LLM needed.

    Args:
        path: a directory for a durable store, or ``None`` to keep everything in
            this process's memory (tests, scratch work).
        embedder: any :class:`sgmem.Embedder`; default all-MiniLM-L6-v2.
        llm: optional :class:`sgmem.LLM` for LLM-backed features.
        config: a :class:`sgmem.Config`; default ``Config()``.

    Example:
        >>> with Memory() as mem:                                    # doctest: +SKIP
        ...     mem.add([{"role": "user", "content": "I adopted a cat named Miso."}],
        ...             scope="alice", thread="chat-1")
        ...     mem.search("What is my cat called?", scope="alice")[0].text
        'I adopted a cat named Miso.'
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        config: Config | None = None,
    ) -> None:
        if config is not None and not isinstance(config, Config):
            raise InvalidInputError("config", config, "a sgmem.Config or None")
        if embedder is not None and not all(hasattr(embedder, a) for a in ("embed", "name", "dim")):
            raise InvalidInputError("embedder", embedder, "an object with embed(texts), name and dim (sgmem.Embedder)")
        if path is not None and not isinstance(path, (str, Path)):
            raise InvalidInputError("path", path, "a directory path (str or pathlib.Path) or None")
        if embedder is not None:
            check_embedder_identity(embedder)
        self.config = config or Config()
        self.embedder: Embedder = embedder or default_embedder()
        self.llm = llm
        self.path = Path(path) if path is not None else None
        self._store = SQLiteStore(self.path, busy_timeout_s=self.config.busy_timeout_s)
        try:
            self._store.bind_embedder(self.embedder.name, int(self.embedder.dim))
        except BaseException:
            self._store.close()
            raise
        self._cache_dir = self.path / "faiss" if self.path is not None else None
        self._retriever = Retriever(self.config)
        self._words = WordVectors(self.embedder)  # keyword embeddings (MGRetrieval vocabulary)
        self._indexes: dict[int, ScopeIndex] = {}
        # LightGMEM entity layer: its own per-scope cache, keyed by the scope generation
        self._entities = EntityCache()
        self._types = TypeModel(self._words, self.config.entities)
        self._lock = threading.RLock()
        self._closed = False
        # generated memory (facts, summaries, insights) and the SAGE novelty gate
        self._derived = DerivedEngine(self._store, self.embedder, self.config, self.llm)

    # ------------------------------------------------------------- lifecycle
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Save index caches and close the store. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            dirty = [idx for idx in self._indexes.values() if idx.dirty]
            if self._cache_dir is not None and dirty:
                try:
                    # under the write lock no delete can slip between the check and the save: the
                    # vectors of a scope deleted (or changed) by another process are never written back
                    with self._store.write(timeout_s=1.0):
                        for idx in dirty:
                            if self._store.generation(idx.scope_id) == idx.generation:
                                idx.save(self._cache_dir)
                except Exception:  # noqa: BLE001 - caches are optional; SQLite holds the truth
                    pass
            self._indexes.clear()
            self._entities.clear()
            self._store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SgmemError("this Memory is closed; create a new sgmem.Memory(path=...) to reopen the store.")

    def __repr__(self) -> str:
        where = str(self.path) if self.path else "in-memory"
        return f"Memory({where!r}, embedder={self.embedder.name!r})"

    # ----------------------------------------------------------------- index
    def _index(self, scope_id: int) -> ScopeIndex:
        """The scope's in-memory index, rebuilt when SQLite has moved on."""
        with self._lock:
            gen = self._store.generation(scope_id)
            idx = self._indexes.get(scope_id)
            if idx is None or idx.generation != gen:
                idx = load_scope_index(self._store, scope_id, int(self.embedder.dim), self._cache_dir)
                self._indexes[scope_id] = idx
            return idx

    def _embed_query(self, query: str) -> np.ndarray:
        vec = check_embeddings(self.embedder, [query], self.embedder.embed([query]))
        return vec[0]

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

    def _add(self, messages: Any, scope: str, thread: str, at: datetime | str | None) -> AddResult:
        self._check_open()
        t0 = time.perf_counter()
        limits = self.config.limits
        scope = check_name(scope, "scope", limits)
        thread = check_name(thread, "thread", limits)
        default_at = check_time(at, "at") or datetime.now(timezone.utc)
        msgs = normalise_messages(messages, default_at, limits)
        ext_ids = [m["id"] or f"msg_{uuid.uuid4().hex[:20]}" for m in msgs]
        sessions = session_names(msgs, thread, self.config.session_by_day)
        prep = prepare(msgs, self.config, sessions, ext_ids)
        t_seg = time.perf_counter()
        texts = prep.sentence_texts
        with self._lock:  # the connection is shared: no read may interleave with another thread's write
            sid_known = self._store.scope_id(scope)
            known = self._store.vectors_by_hash(sid_known, [s.embed_hash for s in prep.sentences]) if sid_known else {}
        vecs, n_embedded = embed_texts(self.embedder, texts, known, self.config.embed_batch_size)
        for sent, vec in zip(prep.sentences, vecs, strict=False):
            sent.vec = vec
        turn_vectors(prep, int(self.embedder.dim))
        with self._lock:  # keywords are planned against the scope's vocabulary, outside the transaction
            kw_idx = self._index(sid_known) if sid_known else None
            kw_snapshot = ensure_keywords(self._store, kw_idx) if kw_idx is not None else None
        kw_plan = plan_add(
            kw_snapshot,
            kw_idx.n_turns if kw_idx else 0,
            prep.messages,
            self.config.pyramid,
            self._words,
            self.llm,
            int(self.embedder.dim),
        )
        words_before = self._words.sent
        with self._lock:
            ent_snap = self._entities.get(self._store, sid_known) if sid_known else EntityIndex(0, -1)
        ent_plan = plan_entities(
            ent_snap,
            prep.messages,
            prep.sentences,
            self._types,
            self.config.entities,
            self.llm if self.config.entities.llm else None,
            self._stored_texts,
        )
        kw_plan.usage.merge(ent_plan.usage)  # counted with the rest of the add's LLM calls
        n_embedded += self._words.sent - words_before  # mention surfaces and type descriptions
        d_plan = self._derived.plan(sid_known, thread, prep)  # LLM calls and gate routing, before the lock
        t_emb = time.perf_counter()

        with self._lock:
            self._check_open()
            with self._store.write() as conn:
                scope_id = self._store.scope_id(scope, create=True)
                assert scope_id is not None
                dup = self._store.existing_ext_ids(scope_id, [m["id"] for m in msgs if m["id"]])
                if dup:
                    raise InvalidInputError(
                        "messages[].id",
                        dup[:5],
                        "ids not already stored in this scope",
                        "Message ids are unique per scope; omit 'id' to let sgmem generate one.",
                    )
                gen_before = self._store.generation(scope_id)
                idx = self._indexes.get(scope_id)
                if idx is None or idx.generation != gen_before:
                    idx = load_scope_index(self._store, scope_id, int(self.embedder.dim), self._cache_dir)
                new_sent_vecs = (
                    np.stack([s.vec for s in prep.sentences]).astype(np.float32)
                    if prep.sentences
                    else np.zeros((0, idx.dim), dtype=np.float32)
                )
                g = self.config.graph
                pairs = knn_edges(idx, new_sent_vecs, g.knn_k, g.knn_min_cosine)
                t_graph = time.perf_counter()
                msg_ids, rounds, turn_edges = place_messages(self._store, scope_id, thread, prep.messages)
                sent_ids = self._store.insert_sentences(scope_id, [(msg_ids[s.msg], s) for s in prep.sentences])
                sedges = [(sent_ids[i], sent_ids[-t - 1] if t < 0 else idx.sent_ids[t], w) for i, t, w in pairs]
                n_sedges = self._store.insert_sentence_edges(scope_id, sedges)
                n_tedges = self._store.insert_turn_edges(scope_id, turn_edges)
                kw_applied = apply_plan(conn, scope_id, msg_ids, kw_plan)
                ent_applied = apply_entities(
                    conn, scope_id, ent_plan.new_entities, ent_plan.mentions, msg_ids, ent_plan.profiles
                )
                d_applied = self._derived.apply(conn, scope_id, thread, prep, msg_ids, d_plan, kw_plan)
                gen_after = self._store.bump_generation(scope_id)
            self._derived.committed(scope_id, d_applied)
            self._entities.committed(scope_id, gen_before, gen_after, ent_applied)
            # committed: extend the cache in place (or drop it if someone else wrote meanwhile)
            if gen_after == gen_before + 1:
                extend_index(
                    idx, prep, thread, msg_ids, rounds, sent_ids, new_sent_vecs, sedges, turn_edges, kw_applied
                )
                idx.generation = gen_after
                idx.dirty = self._cache_dir is not None
                self._indexes[scope_id] = idx
            else:
                self._indexes.pop(scope_id, None)
        t_end = time.perf_counter()
        return AddResult(
            message_ids=tuple(ext_ids),
            messages=len(msg_ids),
            sentences=len(sent_ids),
            edges=n_sedges + n_tedges,
            embedded=n_embedded + (d_plan.embedded if d_plan is not None else 0),
            timings_ms={
                "segment": (t_seg - t0) * 1e3,
                "embed": (t_emb - t_seg) * 1e3,
                "graph": (t_graph - t_emb) * 1e3,
                "store": (t_end - t_graph) * 1e3,
                "total": (t_end - t0) * 1e3,
                "derived": d_plan.ms if d_plan is not None else 0.0,
            },
            **self._derived.result(d_plan, d_applied, kw_plan),
        )

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
    ) -> tuple[list[Ranked], ScopeIndex | None, np.ndarray | None]:
        self._check_open()
        query, scope, k, thread_list, since_dt, until_dt, exclude = self._check_query(
            query, scope, k, threads, since, until, exclude_message_ids
        )
        mode = check_mode(mode) or self.config.default_mode
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
            )
        return ranked, idx, q

    def _check_query(self, query: Any, scope: Any, k: Any, threads: Any, since: Any, until: Any, exclude: Any) -> Any:
        """A search's arguments, checked in one place (``InvalidInputError`` names the bad one)."""
        limits = self.config.limits
        return (
            check_text(query, "query", limits.max_query_chars, "max_query_chars"),
            check_name(scope, "scope", limits),
            check_int(k, "k", 1, limits.max_k),
            check_names(threads, "threads", limits),
            check_time(since, "since"),
            check_time(until, "until"),
            check_names(exclude, "exclude_message_ids", limits),
        )

    def _turn_texts(self, idx: ScopeIndex, rows: list[int]) -> list[str]:
        details = self._details([idx.msg_ids[r] for r in rows])
        return [f"{d['speaker']}: {d['content']}" for d in (details[idx.msg_ids[r]] for r in rows)]

    def _stored_texts(self, message_ids: list[int]) -> list[str]:
        """Dated, speaker-labelled texts of stored messages (entity profiles' evidence)."""
        details = self._details(message_ids)
        return [
            f"({d['at'].date().isoformat()}) {d['speaker']}: {d['content']}"
            for d in (details[m] for m in message_ids if m in details)
        ]

    def _details(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        with self._lock:
            return self._store.message_details(ids)

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
        kinds: Iterable[str] | None = None,
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
            threads: only these threads.
            since, until: only messages said in this time window (inclusive).
            exclude_message_ids: never return these messages (e.g. the ones
                already in the prompt).
            kinds: ``None`` returns the mode's own hits (turns or chunks).
                Otherwise the kinds wanted: ``"chunk"`` (the mode's hits) and
                generated memory ``"summary"``, ``"fact"``, ``"insight"`` — up
                to ``k`` of each, in that order (SGMem §1.3 step 2: top-K of
                each table), scored ``cosine + 1``.

        Returns:
            Hits, best first (per kind); empty when the scope holds nothing that matches.
        """
        kind_list = check_kinds(kinds)
        if kind_list is not None and "chunk" not in kind_list:
            return self._derived_search(query, scope, k, kind_list, threads, since, until, exclude_message_ids)
        ranked, idx, q = self._ranked(query, scope, k, mode, threads, since, until, exclude_message_ids)
        if idx is None or q is None:
            return []
        details = self._details([idx.msg_ids[r] for rk in ranked for r in rk.rows])
        hits = []
        for rk in ranked:
            ds = [details[idx.msg_ids[r]] for r in rk.rows if idx.msg_ids[r] in details]
            if not ds:
                continue
            text = ds[0]["content"] if len(ds) == 1 else "\n".join(f"{d['speaker']}: {d['content']}" for d in ds)
            hits.append(
                Hit(
                    text=text,
                    score=rk.score,
                    kind=rk.kind,
                    message_ids=tuple(d["ext_id"] for d in ds),
                    thread=ds[0]["thread"],
                    at=ds[0]["at"],
                    why=rk.why,
                    speaker=ds[0]["speaker"],
                )
            )
        if kind_list:
            hits += self._derived.hits(
                idx.scope_id,
                kind_list,
                q,
                k,
                check_names(threads, "threads", self.config.limits),
                check_time(since, "since"),
                check_time(until, "until"),
                check_names(exclude_message_ids, "exclude_message_ids", self.config.limits),
            )
        return hits

    def _derived_search(
        self, query: str, scope: str, k: int, kinds: list[str], threads: Any, since: Any, until: Any, exclude: Any
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
            scope_id, kinds, self._embed_query(query), k, thread_list, since_dt, until_dt, excluded
        )

    def context(
        self,
        query: str,
        *,
        scope: str,
        budget_tokens: int = 2000,
        mode: str | None = None,
        exclude_message_ids: Iterable[str] | None = None,
    ) -> str:
        """A prompt block of the memories relevant to ``query``, within a token budget.

        The block is chronological, dated and speaker-labelled; its exact
        tiktoken (cl100k_base) count never exceeds ``budget_tokens``. An empty
        string means nothing relevant was found (or nothing fits).
        ``exclude_message_ids`` leaves out messages the prompt already holds
        (e.g. a chat memory's recent window).
        """
        return self._context_with_ids(
            query, scope=scope, budget_tokens=budget_tokens, mode=mode, exclude_message_ids=exclude_message_ids
        )[0]

    def _context_with_ids(
        self,
        query: str,
        *,
        scope: str,
        budget_tokens: int,
        mode: str | None,
        exclude_message_ids: Iterable[str] | None = None,
        with_generated: bool = True,
    ) -> tuple[str, list[str]]:
        """:meth:`context` plus the ids of the messages that made it in.

        The ids of turns in the block come first; with ``with_generated``, the
        source messages of the facts, summaries and insights in it follow.
        """
        budget_tokens = check_int(budget_tokens, "budget_tokens", 1)
        k = min(self.config.limits.max_k, max(10, budget_tokens // 12))
        ranked, idx, q = self._ranked(query, scope, k, mode, None, None, None, exclude_message_ids)
        if idx is None or q is None or not ranked:
            return "", []
        rows: list[int] = []
        for rk in ranked:
            for r in rk.rows:
                if r not in rows:
                    rows.append(r)
        details = self._details([idx.msg_ids[r] for r in rows])
        cands = []
        with self._lock:  # digest_turn reads FAISS storage that a concurrent add may reallocate
            for r in rows:
                d = details.get(idx.msg_ids[r])
                if d is not None:
                    text = digest_turn(idx, r, d["content"], q, self.config.context_turn_tokens)
                    cands.append(ContextTurn(idx.msg_ids[r], d["at"], d["thread"], d["speaker"], text))
        items = self._derived.context_items(
            idx.scope_id, q, check_names(exclude_message_ids, "exclude_message_ids", self.config.limits)
        )
        text, chosen, picked = fit_with_derived(cands, items, budget_tokens, self.config.derived.context_share)
        ids = [details[c.key]["ext_id"] for c in chosen]
        if with_generated:
            ids += [m for m in dict.fromkeys(m for i in picked for m in i.message_ids) if m not in ids]
        return text, ids

    def history(self, memory_id: str, *, scope: str) -> list[MemoryVersion]:
        """Every version of a generated memory (fact, summary, insight), oldest first.

        Args:
            memory_id: the memory's id, from :attr:`Hit.memory_id` (e.g. ``"fact:12"``).
            scope: the scope that holds it (memories of other scopes are never read).

        Returns:
            Its versions with their text, time, cause (``"add"``, ``"merge-rule"``,
            ``"merge-llm"``, ``"reverted"``…) and source messages.

        Raises:
            NotFoundError: the scope holds no memory with this id.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        with self._lock:
            scope_id = self._store.scope_id(scope)
        out = self._derived.history(scope_id, memory_id) if scope_id is not None else None
        if out is None:
            raise NotFoundError(
                f"scope {scope!r} holds no generated memory {memory_id!r}; take ids from Hit.memory_id."
            )
        return out

    def messages(self, *, scope: str, thread: str | None = None, limit: int | None = None) -> list[Message]:
        """Exact replay of what was added to ``scope`` (or one thread), in order.

        With ``limit``, the most recent ``limit`` messages, oldest first.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        if thread is not None:
            thread = check_name(thread, "thread", self.config.limits)
        if limit is not None:
            limit = check_int(limit, "limit", 1)
        with self._lock:
            scope_id = self._store.scope_id(scope)
            if scope_id is None:
                return []
            return self._store.messages(scope_id, thread, limit)

    def get(self, *, scope: str, message_ids: Sequence[str]) -> list[Message]:
        """The stored messages of ``scope`` with these ids, in the order they were added.

        Ids not stored in the scope are skipped, so ``len(result)`` tells how
        many were found. A direct lookup: it costs the same whatever the scope's size.
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        if isinstance(message_ids, str) or not isinstance(message_ids, Iterable):
            raise InvalidInputError("message_ids", message_ids, "a list of message ids")
        ids = [check_name(m, "message_ids[]", self.config.limits) for m in message_ids]
        with self._lock:
            scope_id = self._store.scope_id(scope)
            if scope_id is None or not ids:
                return []
            return self._store.messages_by_ext_ids(scope_id, ids)

    def threads(self, *, scope: str) -> list[str]:
        """The threads of ``scope``, in order of their first message."""
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        with self._lock:
            scope_id = self._store.scope_id(scope)
            return self._store.threads(scope_id) if scope_id is not None else []

    def scopes(self) -> list[str]:
        """Every scope that holds messages."""
        self._check_open()
        with self._lock:
            return self._store.scope_names()

    # ----------------------------------------------------------------- delete
    def delete(
        self, *, scope: str, thread: str | None = None, message_ids: Sequence[str] | None = None
    ) -> DeleteReceipt:
        """Delete a scope, a thread or given messages, with everything derived.

        Sentences, similarity and chronological edges, vectors and index caches
        go with the messages. Other scopes are never touched. Generated memory
        goes with the messages it came from: a fact left with no source is
        deleted, a merged fact that lost one source reverts to its last version
        without it (deleted text is purged from its history too), a summary is
        recomputed from what is left of its session (see :mod:`sgmem.derived.reads`).
        A scope left without messages is removed entirely, its name included,
        and deleted text is overwritten in the database file, not just unlinked.

        Returns:
            A receipt counting what was removed (all zero if nothing matched).
        """
        self._check_open()
        scope = check_name(scope, "scope", self.config.limits)
        if thread is not None:
            thread = check_name(thread, "thread", self.config.limits)
        ids = check_names(message_ids, "message_ids", self.config.limits)
        with self._lock:
            scope_id = self._store.scope_id(scope)
            if scope_id is None:
                return DeleteReceipt()
            counts = delete_rows(self._store, self._derived, self._cache_dir, scope_id, thread, ids)
            if counts["messages"]:
                self._indexes.pop(scope_id, None)
                self._entities.drop(scope_id)
        return DeleteReceipt(**counts)

    # ------------------------------------------------------------------ stats
    def stats(self, scope: str | None = None) -> Stats:
        """Counts per scope (or for one scope) plus the store's identity."""
        self._check_open()
        with self._lock, self._store.read():
            if scope is not None:
                scope = check_name(scope, "scope", self.config.limits)
                sid = self._store.scope_id(scope)
                names = [(sid, scope)] if sid is not None else []
            else:
                names = [(i, n) for n in self._store.scope_names() if (i := self._store.scope_id(n)) is not None]
            scopes = tuple(
                dataclasses.replace(self._store.scope_stats(sid, n), **self._derived.stats(self._store.conn, sid))
                for sid, n in names
                if sid is not None
            )
        return Stats(
            path=str(self.path) if self.path else None,
            schema_version=SCHEMA_VERSION,
            embedder=self.embedder.name,
            dim=int(self.embedder.dim),
            scopes=scopes,
        )
