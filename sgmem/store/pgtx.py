"""The write and read transactions of the PostgreSQL store: pipelined, ids drawn ahead, the scope locked once.

A part of :class:`~sgmem.store.postgres.PostgresStore`, like
:mod:`sgmem.store.rowsecurity`. An add used to cost a round trip per statement
(48 for a user turn and a reply, measured by ``python -m benchmarks --only
service``); now:

* a write runs in a psycopg pipeline: a statement whose result nothing reads
  (an ``INSERT``, an ``UPDATE``) goes to the server with the next read or with
  ``COMMIT``; an error in it still rolls the whole transaction back;
* the scope's row lock returns its generation, which the transaction then
  counts itself (no other writer can change it while the lock is held);
* an add's new rows get ids drawn ahead in one statement (:meth:`PgConn.reserve`),
  sent with the add's first read, so that no ``INSERT`` waits for its id;
* a read transaction begins with its first statement (and a block that reads
  nothing costs nothing).

The commit is as durable as before: one ``COMMIT`` per add, flushed as the
server's ``synchronous_commit`` says.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .batch import INSERT_MESSAGE_ID, INSERT_SENTENCE_ID, message_values, plan_rounds
from .rows import MessageRow, SentenceRow
from .sqlite import SQLiteStore

__all__ = ["PgTransactions"]


class PgTransactions(SQLiteStore):
    """Transactions, scope locks and an add's rows of :class:`~sgmem.store.postgres.PostgresStore`."""

    _raw: Any
    _psycopg: Any
    _pipelined: bool
    _locked: dict[int, int]

    if TYPE_CHECKING:  # PostgresStore's

        def _alive(self) -> None: ...

        def _scope_again(self) -> None: ...

        def _use_scope(self, name: str) -> None: ...

    # ------------------------------------------------------------ transactions
    @contextlib.contextmanager
    def write(self, timeout_s: float | None = None) -> Iterator[Any]:
        """One write transaction; everything inside commits together or not at all.

        Writers of one scope are serialised by the row lock that
        :meth:`scope_id` and :meth:`lock_scope` take inside it. The transaction
        runs in a psycopg pipeline: a statement whose result nothing reads
        goes to the server with the next one that is read, or with ``COMMIT``,
        so an add costs one round trip per read it needs, not one per statement.
        The commit is as durable as without it (the server's
        ``synchronous_commit``); an error in any statement rolls all of it back.
        """
        with self._lock:
            if self._writing:  # nested: the outer transaction decides
                yield self.conn
                return
            self._alive()
            raw = self._raw
            pipeline: Any = raw.pipeline() if self._pipelined else contextlib.nullcontext()
            try:
                self.conn.pipe = pipeline.__enter__()
                raw.execute("BEGIN")
                self._scope_again()
                if timeout_s is not None:
                    raw.execute(f"SET LOCAL lock_timeout = {max(1, int(timeout_s * 1000))}")
            except self._psycopg.Error as exc:
                self._end_pipeline(pipeline, exc)
                raise self.conn.translate(exc) from exc
            self._writing = True
            self._locked = {}
            try:
                yield self.conn
                raw.execute("COMMIT")
                # the commit's result, and the error of any statement nothing read, come back here
                self._end_pipeline(pipeline, None)
            except BaseException as exc:
                self._end_pipeline(pipeline, exc)
                if isinstance(exc, self._psycopg.Error):
                    raise self.conn.translate(exc) from exc
                raise
            finally:
                self._writing = False
                self._locked = {}
                self.conn.end_transaction()

    def _end_pipeline(self, pipeline: Any, exc: BaseException | None) -> None:
        """Leave a transaction's pipeline: with ``exc`` None, reading every result still due (raising the first
        error); else quietly, and the transaction is rolled back."""
        conn = self.conn
        if conn.pipe is not None:
            conn.pipe = None
            if exc is None:
                try:
                    pipeline.__exit__(None, None, None)
                finally:
                    conn.settle()  # the row counts of statements nothing read
                return
            conn._unsettled.clear()
            with contextlib.suppress(Exception):
                pipeline.__exit__(type(exc), exc, exc.__traceback__)
        if exc is not None and self._raw.info.transaction_status != 0:  # 0: idle
            with contextlib.suppress(Exception):
                self._raw.execute("ROLLBACK")

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        """A consistent read snapshot (one ``REPEATABLE READ`` read-only transaction).

        The transaction starts with the block's first statement, in a pipeline
        (``BEGIN`` goes with it: one round trip) and ends with one more; a block
        that reads nothing costs nothing.
        """
        with self._lock:
            if self.conn.in_transaction:  # already inside write(): same transaction
                yield self.conn
                return
            self._alive()
            raw = self._raw
            pipeline: Any = raw.pipeline() if self._pipelined else contextlib.nullcontext()
            begun = False

            def begin() -> None:
                nonlocal begun
                begun = True
                self.conn.pipe = pipeline.__enter__()
                raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                self._scope_again()

            self.conn.begin = begin
            try:
                yield self.conn
            finally:
                self.conn.begin = None
                if begun:
                    with contextlib.suppress(Exception):
                        raw.execute("COMMIT")
                    try:
                        self._end_pipeline(pipeline, None)
                    except Exception:  # noqa: BLE001 - a read's end: its rows were read (or its error raised)
                        self._end_pipeline(pipeline, RuntimeError("the read's transaction did not end cleanly"))

    # ------------------------------------------------------------------ scopes
    def scope_id(self, name: str, *, create: bool = False) -> int | None:
        """The scope's row id; inside a write, with the scope's row locked (see :meth:`lock_scope`).

        A new scope's row is inserted first (two hosts creating it at once: the
        second waits for the first to commit, then locks the row it made).
        """
        self._use_scope(name)
        if not self._writing:
            if create:
                return super().scope_id(name, create=create)
            row = self.conn.execute("SELECT id, generation FROM scopes WHERE name = ?", (name,)).fetchone()
            if row is None:
                return None
            self.conn.remember_generation(int(row[0]), int(row[1]))  # see generation()
            return int(row[0])
        lock = "SELECT id, generation FROM scopes WHERE name = ? FOR NO KEY UPDATE"
        row = self.conn.execute(lock, (name,)).fetchone()
        if row is None and create:
            self.conn.execute("INSERT INTO scopes (name) VALUES (?) ON CONFLICT (name) DO NOTHING", (name,))
            row = self.conn.execute(lock, (name,)).fetchone()
        if row is None:
            return None
        self._locked[int(row[0])] = int(row[1])
        return int(row[0])

    def lock_scope(self, scope_id: int) -> None:
        """Serialise this write with every other writer of the scope (on any host): lock its row.

        ``FOR NO KEY UPDATE`` (the lock the generation bump takes anyway) waits
        for the scope's other writers and lets foreign-key checks through. It is
        no advisory lock: ``pg_locks`` shows no key derived from the scope, and
        under row security only a client allowed to see the row can lock it.
        """
        if scope_id in self._locked:
            return
        row = self.conn.execute("SELECT generation FROM scopes WHERE id = ? FOR NO KEY UPDATE", (scope_id,)).fetchone()
        if row is not None:
            self._locked[scope_id] = int(row[0])

    def generation(self, scope_id: int) -> int:
        """How many changes the scope has seen; inside a write that locked the scope, without asking the server
        (no other writer can change it while the lock is held; this one's bumps are counted here); right after
        :meth:`scope_id` looked the scope up, the value read with its id."""
        if self._writing and scope_id in self._locked:
            return self._locked[scope_id]
        # outside a write: the value the scope's look-up by name read with its id, if this thread sent no
        # statement since (a search looks the scope up, embeds the query, then checks its index: one round trip)
        remembered = self.conn.remembered_generation(scope_id)
        return remembered if remembered is not None else super().generation(scope_id)

    def bump_generation(self, scope_id: int) -> int:
        """Mark the scope changed (a new generation and a new random stamp); return the new generation (sent
        with the transaction's next read or commit)."""
        if not (self._writing and scope_id in self._locked):
            return super().bump_generation(scope_id)
        self.conn.execute(
            "UPDATE scopes SET generation = generation + 1, stamp = ? WHERE id = ?",
            (secrets.randbits(62) + 1, scope_id),  # a new random stamp, as SQLiteStore.bump_generation draws
        )
        self._locked[scope_id] += 1
        return self._locked[scope_id]

    # ------------------------------------------------------------ an add's rows
    def reserve_ids(self, counts: dict[str, int]) -> None:
        """Draw the ids of an add's new rows (``{table: n}``) in one statement, sent with the add's next read."""
        self.conn.reserve(counts)

    def insert_messages(
        self, scope_id: int, thread: str, rows: Sequence[tuple[MessageRow, int, int]]
    ) -> tuple[list[int], list[int]]:
        """Insert ``(message, round ref, turn_idx)`` rows with ids drawn ahead, in one ``executemany`` (no round
        trip of its own); their ids and round ids (see :meth:`SQLiteStore.insert_messages`)."""
        if not rows:
            return [], []
        ids = self.conn.new_ids("messages", len(rows))
        rounds = plan_rounds([ref for _, ref, _ in rows], ids)
        self.conn.executemany(
            INSERT_MESSAGE_ID,
            [
                (mid, *message_values(scope_id, thread, m, rid, t))
                for (m, _, t), mid, rid in zip(rows, ids, rounds, strict=True)
            ],
        )
        return ids, rounds

    def insert_sentences(self, scope_id: int, rows: Sequence[tuple[int, SentenceRow]]) -> list[int]:
        """Insert sentences ``(message_id, row)`` with ids drawn ahead, in one ``executemany``; their ids."""
        if not rows:
            return []
        ids = self.conn.new_ids("sentences", len(rows))
        self.conn.executemany(
            INSERT_SENTENCE_ID,
            [
                (
                    sid,
                    scope_id,
                    mid,
                    s.idx,
                    s.start,
                    s.end,
                    s.text,
                    s.embed_hash,
                    s.vec.astype(np.float32).tobytes(),
                    s.act,
                )
                for sid, (mid, s) in zip(ids, rows, strict=True)
            ],
        )
        return ids

    def insert_sentence_edges(self, scope_id: int, edges: Sequence[tuple[int, int, float]]) -> int:
        """Insert similarity edges; return how many (without asking the server: an add's edges each touch a
        sentence it adds, so none was stored before; repeats within ``edges`` count once)."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO sentence_edges (scope_id, src, dst, weight) VALUES (?, ?, ?, ?)",
            [(scope_id, a, b, w) for a, b, w in edges],
        )
        return len({(int(a), int(b)) for a, b, _ in edges})

    def insert_turn_edges(self, scope_id: int, edges: Sequence[tuple[int, int]]) -> int:
        """Insert chronological edges; their number, as :meth:`insert_sentence_edges` counts."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO turn_edges (scope_id, src, dst) VALUES (?, ?, ?)",
            [(scope_id, a, b) for a, b in edges],
        )
        return len({(int(a), int(b)) for a, b in edges})
