"""Per-scope in-memory index: a cache of SQLite, never the system of record.

Holds the FAISS indexes of sentence and turn vectors, the sentence graph's
adjacency, the chronological chain and the lexical postings of one scope.
It is built from SQLite (or from FAISS files saved next to the database when
their recorded generation still matches) and extended in place after each
add of this process. Any other change — a delete, or a write by another
process — bumps the scope's generation and the cache is rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DependencyError
from ..store.sqlite import SQLiteStore

__all__ = ["ScopeIndex", "load_scope_index"]


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss-cpu is a core dependency
        raise DependencyError("sgmem needs faiss-cpu: pip install sgmem") from exc
    return faiss


def _new_flat(dim: int) -> Any:
    return _faiss().IndexFlatIP(dim)


def _view(index: Any) -> np.ndarray:
    """Zero-copy float32 view of a flat index's vectors (rows = insertion order)."""
    n, d = index.ntotal, index.d
    if n == 0:
        return np.zeros((0, d), dtype=np.float32)
    return _faiss().rev_swig_ptr(index.get_xb(), n * d).reshape(n, d)


#: Python objects per turn, per sentence and per keyword entry of a ScopeIndex, in bytes (measured, see nbytes)
TURN_BYTES, SENTENCE_BYTES, KEYWORD_BYTES = 2000, 1000, 400


@dataclass
class ScopeIndex:
    """Everything retrieval needs for one scope, row-aligned with SQLite ids."""

    scope_id: int
    dim: int
    generation: int = -1
    # turns (messages), in id order
    msg_ids: list[int] = field(default_factory=list)
    ext_ids: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    round_ids: list[int] = field(default_factory=list)
    at_ts: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    terms: list[frozenset[str]] = field(default_factory=list)
    prev_row: list[int] = field(default_factory=list)
    next_row: list[int] = field(default_factory=list)
    # sentences, in id order (contiguous per message)
    sent_ids: list[int] = field(default_factory=list)
    sent_msg: list[int] = field(default_factory=list)
    sent_idx: list[int] = field(default_factory=list)
    sent_text: list[str] = field(default_factory=list)
    msg_sents: list[list[int]] = field(default_factory=list)
    adjacency: list[list[int]] = field(default_factory=list)
    postings: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    turn_index: Any = None
    sent_index: Any = None
    # MGRetrieval vocabulary + postings (sgmem.pyramid.vocabulary.KeywordIndex),
    # loaded lazily from SQLite by sgmem.pyramid.retrieve.ensure_keywords
    keywords: Any = None
    dirty: bool = False
    _msg_row: dict[int, int] = field(default_factory=dict)
    _sent_row: dict[int, int] = field(default_factory=dict)
    _np_cache: dict[str, np.ndarray] = field(default_factory=dict)
    _turn_norms: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.turn_index is None:
            self.turn_index = _new_flat(self.dim)
        if self.sent_index is None:
            self.sent_index = _new_flat(self.dim)

    # ---------------------------------------------------------------- views
    @property
    def n_turns(self) -> int:
        return len(self.msg_ids)

    @property
    def n_sentences(self) -> int:
        return len(self.sent_ids)

    def turn_vectors(self) -> np.ndarray:
        """(n_turns, dim) view of the turn vectors."""
        return _view(self.turn_index)

    def sentence_vectors(self) -> np.ndarray:
        """(n_sentences, dim) view of the sentence vectors."""
        return _view(self.sent_index)

    def turn_sum_norms(self) -> np.ndarray:
        """‖Σ of each turn's sentence vectors‖ (0 for a turn without sentences).

        A turn's vector is that sum normalised (:func:`sgmem.ingest.turn_vectors`),
        so its cosine to a query is the sum of its sentences' cosines divided
        by this norm: the hybrid mode gets turn cosines from the sentence
        cosines it already has, without a second scan of the vectors. Kept up
        to date as turns are appended; recomputed after a reload.
        """
        n = self.n_turns
        cur = self._turn_norms
        vecs = self.sentence_vectors()
        if cur is None or len(cur) > n:
            cur = np.zeros(n, dtype=np.float64)
            if self.n_sentences:
                owner = self.array("sent_msg")
                starts = self.array("sent_starts")
                sums = np.add.reduceat(vecs, starts, axis=0).astype(np.float64)
                cur[owner[starts]] = np.linalg.norm(sums, axis=1)
        elif len(cur) < n:
            extra = np.zeros(n - len(cur), dtype=np.float64)
            for i, r in enumerate(range(len(cur), n)):
                rows = self.msg_sents[r]
                if rows:
                    extra[i] = float(np.linalg.norm(vecs[rows].astype(np.float64).sum(axis=0)))
            cur = np.concatenate([cur, extra])
        self._turn_norms = cur
        return cur

    def array(self, name: str) -> np.ndarray:
        """A numpy copy of a per-turn column (cached until the next change).

        Derived columns: ``session_codes``, a small int per (thread, session);
        ``sent_starts``, the first sentence row of each run of one turn's
        sentences (rows are contiguous per turn), for segment reductions.
        """
        arr = self._np_cache.get(name)
        if arr is None:
            if name == "session_codes":
                codes: dict[tuple[str, str], int] = {}
                arr = np.array(
                    [codes.setdefault((t, s), len(codes)) for t, s in zip(self.threads, self.sessions, strict=False)],
                    dtype=np.int64,
                )
            elif name == "sent_starts":
                owner = self.array("sent_msg")
                arr = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if owner.size else owner
            else:
                arr = np.asarray(getattr(self, name))
            self._np_cache[name] = arr
        return arr

    def nbytes(self) -> int:
        """Estimated memory of this index (for the cache budget, ``Config.cache_bytes``).

        Vectors exactly; Python lists, dicts, texts and edges by per-row
        constants measured with ``tracemalloc`` (benchmarks/scopes.py).
        """
        n, s = self.n_turns, self.n_sentences
        size = (n + s) * self.dim * 4 + 2048 + n * TURN_BYTES + s * SENTENCE_BYTES
        size += sum(a.nbytes for a in self._np_cache.values())
        kw = self.keywords
        if kw is not None:
            # canonical entries and their postings; entry vectors twice (the list and the stacked matrix)
            size += len(kw.ids) * KEYWORD_BYTES + len(kw.entry_keys) * self.dim * 8 + len(kw.turn_kws) * 120
        return size

    def msg_row(self, message_id: int) -> int | None:
        return self._msg_row.get(message_id)

    def sent_row(self, sentence_id: int) -> int | None:
        return self._sent_row.get(sentence_id)

    def idf(self, term: str) -> float:
        """Robertson–Spärck Jones IDF with +1 smoothing (never negative)."""
        df = len(self.postings.get(term, ()))
        n = max(self.n_turns, 1)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    # --------------------------------------------------------------- append
    def append_turn(
        self,
        message_id: int,
        ext_id: str,
        thread: str,
        session: str,
        round_id: int,
        at_ts: float,
        tokens: int,
        speaker: str,
        terms: frozenset[str],
        vec: np.ndarray,
    ) -> int:
        row = len(self.msg_ids)
        self.msg_ids.append(message_id)
        self.ext_ids.append(ext_id)
        self.threads.append(thread)
        self.sessions.append(session)
        self.round_ids.append(round_id)
        self.at_ts.append(at_ts)
        self.tokens.append(tokens)
        self.speakers.append(speaker)
        self.terms.append(terms)
        self.prev_row.append(-1)
        self.next_row.append(-1)
        self.msg_sents.append([])
        self._msg_row[message_id] = row
        for t in terms:
            self.postings[t].append(row)
        self.turn_index.add(np.asarray(vec, dtype=np.float32).reshape(1, -1))
        self._np_cache.clear()
        return row

    def append_sentences(self, rows: list[tuple[int, int, int, str]], vecs: np.ndarray) -> None:
        """Append sentences ``(sentence_id, message_id, idx, text)`` with their vectors."""
        for sid, mid, idx, text in rows:
            srow = len(self.sent_ids)
            mrow = self._msg_row[mid]
            self.sent_ids.append(sid)
            self.sent_msg.append(mrow)
            self.sent_idx.append(idx)
            self.sent_text.append(text)
            self.adjacency.append([])
            self.msg_sents[mrow].append(srow)
            self._sent_row[sid] = srow
        if len(rows):
            self.sent_index.add(np.ascontiguousarray(vecs, dtype=np.float32))
        self._np_cache.clear()

    def add_sentence_edge(self, src_id: int, dst_id: int) -> None:
        a, b = self._sent_row.get(src_id), self._sent_row.get(dst_id)
        if a is None or b is None or a == b:
            return
        self.adjacency[a].append(b)
        self.adjacency[b].append(a)

    def add_turn_edge(self, src_id: int, dst_id: int) -> None:
        a, b = self._msg_row.get(src_id), self._msg_row.get(dst_id)
        if a is None or b is None:
            return
        self.next_row[a] = b
        self.prev_row[b] = a
        self._np_cache.clear()

    # ----------------------------------------------------------- persistence
    def save(self, directory: Path) -> None:
        """Write the FAISS indexes next to the database (atomic renames, user-only files).

        The metadata file is replaced last and records a digest of each index
        file, so a save torn by a crash, or interleaved with another process's
        save, is detected on load instead of serving the wrong vectors.
        """
        faiss = _faiss()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        stem = directory / f"scope-{self.scope_id}"
        digests = {}
        for suffix, index in (("turns", self.turn_index), ("sentences", self.sent_index)):
            data = faiss.serialize_index(index)
            digests[suffix] = _digest(data)
            tmp = Path(f"{stem}.{suffix}.faiss.tmp")
            _write_private(tmp, data)
            os.replace(tmp, f"{stem}.{suffix}.faiss")
        meta = {
            "generation": self.generation,
            "n_turns": self.n_turns,
            "n_sentences": self.n_sentences,
            "last_turn_id": self.msg_ids[-1] if self.msg_ids else 0,
            "last_sentence_id": self.sent_ids[-1] if self.sent_ids else 0,
            "dim": self.dim,
            "digests": digests,
        }
        tmp = Path(f"{stem}.json.tmp")
        _write_private(tmp, json.dumps(meta).encode())
        os.replace(tmp, f"{stem}.json")
        self.dirty = False


def _digest(data: Any) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _write_private(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` readable by the owner only (vectors leak what was said)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a leftover file keeps its old mode through O_CREAT
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(memoryview(data))
    finally:
        os.close(fd)


def _read_index(path: str, digest: Any) -> Any:
    """A FAISS index from ``path`` if its bytes match ``digest``, else None."""
    data = Path(path).read_bytes()
    if not isinstance(digest, str) or _digest(data) != digest:
        return None
    return _faiss().deserialize_index(np.frombuffer(data, dtype=np.uint8))


def _same_rows(index: Any, vecs: dict[int, np.ndarray]) -> bool:
    """Spot-check: the cached index holds SQLite's vectors at these rows."""
    return all(np.array_equal(index.reconstruct(row), vec) for row, vec in vecs.items())


def _load_cached(
    directory: Path | None, idx: ScopeIndex, probes: tuple[dict[int, np.ndarray], dict[int, np.ndarray]]
) -> tuple[Any, Any] | None:
    """FAISS indexes from disk if they match the scope exactly, else None.

    ``probes`` holds SQLite's vectors at a few rows of each index: a cache
    saved from another history of the database (a restored backup) has the
    right counts and generation but not those vectors.
    """
    if directory is None:
        return None
    stem = directory / f"scope-{idx.scope_id}"
    try:
        meta = json.loads(Path(f"{stem}.json").read_text())
        if (
            meta.get("generation") != idx.generation
            or meta.get("n_turns") != idx.n_turns
            or meta.get("n_sentences") != idx.n_sentences
            or meta.get("dim") != idx.dim
            or meta.get("last_turn_id") != (idx.msg_ids[-1] if idx.msg_ids else 0)
            or meta.get("last_sentence_id") != (idx.sent_ids[-1] if idx.sent_ids else 0)
        ):
            return None
        digests = meta.get("digests") or {}
        turns = _read_index(f"{stem}.turns.faiss", digests.get("turns"))
        sents = _read_index(f"{stem}.sentences.faiss", digests.get("sentences"))
        if turns is None or sents is None:
            return None
        if turns.ntotal != idx.n_turns or sents.ntotal != idx.n_sentences or turns.d != idx.dim or sents.d != idx.dim:
            return None
        if not (_same_rows(turns, probes[0]) and _same_rows(sents, probes[1])):
            return None
    except Exception:  # missing, torn or corrupt cache files: rebuild from SQLite
        return None
    return turns, sents


def _probes(conn: Any, idx: ScopeIndex) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """SQLite's vectors at the first, middle and last row of each index."""

    def at(table: str, ids: list[int]) -> dict[int, np.ndarray]:
        rows = sorted({0, len(ids) // 2, len(ids) - 1}) if ids else []
        return {
            r: np.frombuffer(conn.execute(f"SELECT vec FROM {table} WHERE id = ?", (ids[r],)).fetchone()[0], np.float32)
            for r in rows
        }

    return at("messages", idx.msg_ids), at("sentences", idx.sent_ids)


def discard_cache(directory: Path | None, scope_id: int) -> None:
    """Remove a scope's cache files (after a delete)."""
    if directory is None:
        return
    for suffix in (".json", ".turns.faiss", ".sentences.faiss"):
        with contextlib.suppress(OSError):
            os.remove(directory / f"scope-{scope_id}{suffix}")


def load_scope_index(store: SQLiteStore, scope_id: int, dim: int, cache_dir: Path | None) -> ScopeIndex:
    """Build a scope's index from SQLite, reusing valid FAISS files in ``cache_dir``."""
    with store.read() as conn:
        idx = ScopeIndex(scope_id=scope_id, dim=dim, generation=store.generation(scope_id))
        msgs = conn.execute(
            "SELECT id, ext_id, thread, session, round_id, at_ts, tokens, COALESCE(name, role), terms "
            "FROM messages WHERE scope_id = ? ORDER BY id",
            (scope_id,),
        ).fetchall()
        for r in msgs:
            row = len(idx.msg_ids)
            idx.msg_ids.append(int(r[0]))
            idx.ext_ids.append(r[1])
            idx.threads.append(r[2])
            idx.sessions.append(r[3])
            idx.round_ids.append(int(r[4]))
            idx.at_ts.append(float(r[5]))
            idx.tokens.append(int(r[6]))
            idx.speakers.append(r[7])
            terms = frozenset(r[8].split())
            idx.terms.append(terms)
            idx.prev_row.append(-1)
            idx.next_row.append(-1)
            idx.msg_sents.append([])
            idx._msg_row[int(r[0])] = row
            for t in terms:
                idx.postings[t].append(row)
        sents = conn.execute(
            "SELECT id, message_id, idx, text FROM sentences WHERE scope_id = ? ORDER BY message_id, idx",
            (scope_id,),
        ).fetchall()
        for sid, mid, sidx, text in sents:
            srow = len(idx.sent_ids)
            mrow = idx._msg_row[int(mid)]
            idx.sent_ids.append(int(sid))
            idx.sent_msg.append(mrow)
            idx.sent_idx.append(int(sidx))
            idx.sent_text.append(text)
            idx.adjacency.append([])
            idx.msg_sents[mrow].append(srow)
            idx._sent_row[int(sid)] = srow
        probes = _probes(conn, idx) if cache_dir is not None else ({}, {})
        cached = _load_cached(cache_dir, idx, probes)
        if cached is not None:
            idx.turn_index, idx.sent_index = cached
        else:
            blobs = [r[0] for r in conn.execute("SELECT vec FROM messages WHERE scope_id = ? ORDER BY id", (scope_id,))]
            if blobs:
                idx.turn_index.add(np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim))
            blobs = [
                r[0]
                for r in conn.execute(
                    "SELECT vec FROM sentences WHERE scope_id = ? ORDER BY message_id, idx", (scope_id,)
                )
            ]
            if blobs:
                idx.sent_index.add(np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim))
            idx.dirty = cache_dir is not None
        for src, dst in conn.execute("SELECT src, dst FROM sentence_edges WHERE scope_id = ?", (scope_id,)):
            idx.add_sentence_edge(int(src), int(dst))
        for src, dst in conn.execute("SELECT src, dst FROM turn_edges WHERE scope_id = ?", (scope_id,)):
            idx.add_turn_edge(int(src), int(dst))
    return idx
