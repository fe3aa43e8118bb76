"""Per-scope cache of derived memory: the gate's state and a searchable table per kind.

A cache of SQLite, never the system of record. Facts share the gate's vector
matrix (rows in id order); summaries and insights are small tables of their
own. Each table is searched by cosine (SGMem §1.3 step 2: top-K from each of
the summary, fact and insight tables, no threshold), with the thread and time
filters of :meth:`sgmem.Memory.search` applied to each memory's newest source.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..gate.gate import GateState, NoveltyGate
from .store import load_state, state_version

__all__ = ["KindTable", "ScopeCache", "load_cache", "load_summaries", "load_tables"]


@dataclass
class KindTable:
    """Search metadata of one kind; ``vecs`` is None for facts (they use the gate's matrix)."""

    ids: list[int] = field(default_factory=list)
    at_ts: list[float] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    vecs: np.ndarray | None = None
    row: dict[int, int] = field(default_factory=dict)
    _buf: np.ndarray | None = field(default=None, repr=False)  # ``vecs`` with room to grow (doubling)

    def append(self, mid: int, at_ts: float, thread: str) -> None:
        self.row[mid] = len(self.ids)
        self.ids.append(mid)
        self.at_ts.append(at_ts)
        self.threads.append(thread)

    def put(self, mid: int, at_ts: float, thread: str, vec: np.ndarray) -> bool:
        """A memory stored or updated since the load, in place (amortised O(d)).

        Rows stay in id order, as :func:`load_tables` reads them: a new id
        must be above every id held (SQLite's row ids only grow); False, and
        nothing changed, otherwise.
        """
        r = self.row.get(mid)
        if r is None and self.ids and mid < self.ids[-1]:
            return False
        n = len(self.ids)
        need = n + (r is None)
        buf = self._buf
        if buf is None or self.vecs is None or self.vecs.base is not buf or len(buf) < need:
            buf = np.empty((max(need, 2 * n, 16), len(vec)), dtype=np.float32)
            if n:
                buf[:n] = self.vecs
            self._buf = buf
        if r is None:
            self.append(mid, at_ts, thread)
            r = n
        else:
            self.at_ts[r], self.threads[r] = at_ts, thread
        buf[r] = vec
        self.vecs = buf[:need]
        return True


@dataclass
class ScopeCache:
    """Everything derived memory keeps in memory for one scope."""

    scope_id: int
    version: int
    state: GateState
    tables: dict[str, KindTable]

    def nbytes(self) -> int:
        """Estimated memory of this cache (for ``Config.cache_bytes``): arrays exactly, rows by a constant."""
        st = self.state
        size = 4096 + st._buf.nbytes + st.sum_vec.nbytes + st.n * 150
        if st.density is not None:
            size += st.density.nbytes()
        if st.ivf is not None:
            size += st.ivf.centroids.nbytes + st.n * (self.state.dim * 4 + 32)
        for t in self.tables.values():
            size += len(t.ids) * 200 + (t.vecs.nbytes if t.vecs is not None else 0)
        return size

    def vectors(self, kind: str) -> np.ndarray:
        t = self.tables[kind]
        if kind == "fact":
            return self.state.vectors
        return t.vecs if t.vecs is not None else np.zeros((0, self.state.dim), dtype=np.float32)

    def search(
        self,
        kind: str,
        q: np.ndarray,
        threads: list[str] | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[tuple[int, float]]:
        """Every memory of ``kind`` passing the filters, ``(memory id, cosine)`` best first."""
        t = self.tables.get(kind)
        if t is None or not t.ids:
            return []
        vecs = self.vectors(kind)
        if len(vecs) != len(t.ids):  # pragma: no cover - a cache out of step is rebuilt by the caller
            return []
        cos = (vecs @ np.asarray(q, dtype=np.float32)).astype(np.float64)
        mask = np.ones(len(t.ids), dtype=bool)
        if threads is not None:
            mask &= np.isin(np.asarray(t.threads), threads)
        ts = np.asarray(t.at_ts)
        if since is not None:
            mask &= ts >= since.timestamp()
        if until is not None:
            mask &= ts <= until.timestamp()
        rows = np.flatnonzero(mask)
        order = rows[np.lexsort((rows, -cos[rows]))]
        return [(t.ids[int(r)], float(cos[r])) for r in order]


def load_tables(conn: sqlite3.Connection, scope_id: int, dim: int, kinds: tuple[str, ...]) -> dict[str, KindTable]:
    """Search tables of ``kinds`` from SQLite (facts without vectors)."""
    tables = {k: KindTable() for k in kinds}
    vecs: dict[str, list[bytes]] = {k: [] for k in kinds}
    marks = ",".join("?" * len(kinds))
    for mid, kind, at_ts, thread, blob in conn.execute(
        f"SELECT id, kind, at_ts, thread, CASE WHEN kind = 'fact' THEN NULL ELSE vec END FROM derived "
        f"WHERE scope_id = ? AND kind IN ({marks}) ORDER BY id",
        (scope_id, *kinds),
    ):
        tables[kind].append(int(mid), float(at_ts), thread)
        if blob is not None:
            vecs[kind].append(blob)
    for k in kinds:
        if k != "fact":
            n = len(vecs[k])
            tables[k].vecs = (
                np.frombuffer(b"".join(vecs[k]), dtype=np.float32).reshape(n, dim).copy()
                if n
                else np.zeros((0, dim), dtype=np.float32)
            )
    return tables


def load_summaries(
    conn: sqlite3.Connection, scope_id: int, dim: int, keys: list[tuple[str, str]]
) -> list[tuple[int, float, str, np.ndarray]]:
    """``(id, at_ts, thread, vector)`` of the summaries of the ``(thread, session)`` pairs in ``keys``."""
    out = []
    for thread, session in dict.fromkeys(keys):
        for mid, at_ts, th, blob in conn.execute(
            "SELECT id, at_ts, thread, vec FROM derived WHERE scope_id = ? AND kind = 'summary' AND thread = ? "
            "AND session = ? ORDER BY id",
            (scope_id, thread, session),
        ):
            out.append((int(mid), float(at_ts), th, np.frombuffer(blob, dtype=np.float32).reshape(dim)))
    return sorted(out, key=lambda r: r[0])


def load_cache(conn: sqlite3.Connection, scope_id: int | None, dim: int, gate: NoveltyGate) -> ScopeCache:
    """The scope's cache, built from SQLite (an empty one for a scope not stored yet)."""
    pca_dim = gate.config.pca_dim
    if scope_id is None:
        st = GateState(dim=dim, pca_dim=pca_dim)
        return ScopeCache(-1, 0, st, {k: KindTable() for k in ("fact", "summary", "insight")})
    st, centroids, n_train = load_state(conn, scope_id, dim, pca_dim)
    st.version = state_version(conn, scope_id)
    gate.attach_index(st, centroids, n_train)
    tables = load_tables(conn, scope_id, dim, ("fact", "summary", "insight"))
    return ScopeCache(scope_id, st.version, st, tables)
