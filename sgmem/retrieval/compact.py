"""Compact building blocks of a scope index: growable numpy columns and append-friendly CSR.

A scope of N sentences used to hold N Python lists (adjacency), N strings
(sentence texts) and a frozenset of term strings per turn; each Python
object costs 50–200 bytes. These structures keep the same information in
flat numpy arrays (a few bytes per entry), so a loaded scope stays near the
size of its vectors (≤ 3 KiB resident per sentence at 100k).

Rows appended after a structure was built go to a small *tail* that is
merged into the flat arrays once it outgrows a fraction of them, so an
append costs O(its entries) amortised and a lookup stays a slice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["Column", "Grow", "Lazy", "Names", "Neighbours", "Postings", "Strings", "csr"]


class Grow:
    """A 1-d numpy array that grows by doubling (amortised O(1) appends)."""

    __slots__ = ("_a", "_v", "n")

    def __init__(self, dtype: Any, data: np.ndarray | None = None) -> None:
        arr = np.asarray(data, dtype=dtype) if data is not None else np.empty(16, dtype=dtype)
        self._a = np.array(arr, dtype=dtype, copy=True) if data is not None else arr
        self.n = len(arr) if data is not None else 0
        self._v: np.ndarray | None = None

    def _room(self, extra: int) -> None:
        need = self.n + extra
        if need > len(self._a):
            new = np.empty(max(need, 2 * len(self._a), 16), dtype=self._a.dtype)
            new[: self.n] = self._a[: self.n]
            self._a = new

    def append(self, value: Any) -> None:
        self._room(1)
        self._a[self.n] = value
        self.n += 1
        self._v = None

    def extend(self, values: Any) -> None:
        vals = np.asarray(values, dtype=self._a.dtype)
        self._room(len(vals))
        self._a[self.n : self.n + len(vals)] = vals
        self.n += len(vals)
        self._v = None

    def adopt(self, arr: np.ndarray) -> None:
        """Hold ``arr`` (all filled, e.g. a column mapped from a snapshot file) without copying it; the first
        append past it moves the column to memory of its own."""
        self._a = arr
        self.n = len(arr)
        self._v = None

    def trim(self) -> None:
        """Give back the room kept for appends (a column loaded in full keeps no doubling slack)."""
        if len(self._a) > max(self.n, 16):
            self._a = self._a[: self.n].copy()
            self._v = None

    def view(self) -> np.ndarray:
        """The filled part (a read-only view; appends later never change it)."""
        v = self._v
        if v is None:
            v = self._v = self._a[: self.n]
            v.flags.writeable = False
        return v

    def set(self, i: int, value: Any) -> None:
        self._a[i] = value

    def __len__(self) -> int:
        return self.n

    @property
    def nbytes(self) -> int:
        return int(self._a.nbytes)


class Column(Sequence):  # type: ignore[type-arg]
    """A read-only sequence view of a :class:`Grow` column that yields Python scalars."""

    __slots__ = ("_g",)

    def __init__(self, g: Grow) -> None:
        self._g = g

    def __len__(self) -> int:
        return self._g.n

    def __getitem__(self, i: Any) -> Any:
        v = self._g.view()[i]
        return v.item() if isinstance(v, np.generic) else v.tolist()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._g.view().tolist())


class Names(Sequence):  # type: ignore[type-arg]
    """Strings stored once each, with an int code per row (threads, sessions, speakers)."""

    __slots__ = ("_codes", "_table", "_lookup", "_table_bytes")

    def __init__(self) -> None:
        self._codes = Grow(np.int32)
        self._table: list[Any] = []
        self._lookup: dict[Any, int] = {}
        self._table_bytes = 0  # kept as values are added: nbytes() runs on every add

    def code(self, value: Any) -> int:
        c = self._lookup.get(value)
        if c is None:
            c = self._lookup[value] = len(self._table)
            self._table.append(value)
            self._table_bytes += 64 + len(str(value))
        return c

    def append(self, value: Any) -> None:
        self._codes.append(self.code(value))

    def adopt(self, codes: np.ndarray, table: list[Any], table_bytes: int) -> None:
        """Hold ``codes`` (one per row) into ``table`` (the distinct values, in code order), as saved."""
        self._codes.adopt(codes)
        self._table = list(table)
        self._lookup = {v: i for i, v in enumerate(self._table)}
        self._table_bytes = table_bytes

    def codes(self) -> np.ndarray:
        return self._codes.view()

    def values(self) -> np.ndarray:
        """An object array of the row values (shared strings)."""
        table = np.empty(len(self._table), dtype=object)
        table[:] = self._table
        return table[self._codes.view()] if self._table else np.empty(0, dtype=object)

    def __len__(self) -> int:
        return self._codes.n

    def __getitem__(self, i: Any) -> Any:
        c = self._codes.view()[i]
        return self._table[int(c)] if np.ndim(c) == 0 else [self._table[int(x)] for x in c]

    @property
    def nbytes(self) -> int:
        return self._codes.nbytes + self._table_bytes


def csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of the pairs ``(rows[i], cols[i])``; each row keeps its pairs' order."""
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    if len(rows):
        np.cumsum(np.bincount(rows, minlength=n)[:n], out=indptr[1:])
    return indptr, np.ascontiguousarray(cols[order], dtype=np.int32)


class Neighbours(Sequence):  # type: ignore[type-arg]
    """Undirected adjacency lists as CSR plus a tail of edges added since the last merge.

    ``self[r]`` lists r's neighbours in the order the edges were added (the
    sentence graph's BFS visits them in that order, so results do not change
    with the representation).
    """

    def __init__(self) -> None:
        self.n = 0
        self._ptr = np.zeros(1, dtype=np.int64)
        self._idx = np.zeros(0, dtype=np.int32)
        self._tail: dict[int, list[int]] = {}
        self._tail_n = 0

    def grow(self, n: int) -> None:
        """Rows now number ``n`` (new rows have no neighbours yet)."""
        self.n = n

    def load(self, a: np.ndarray, b: np.ndarray, n: int) -> None:
        """Replace everything with the edges ``a[i] – b[i]``, added in that order."""
        self.n = n
        rows = np.stack([a, b], axis=1).ravel()
        cols = np.stack([b, a], axis=1).ravel()
        self._ptr, self._idx = csr(rows, cols, n)
        self._tail, self._tail_n = {}, 0

    def add(self, a: int, b: int) -> None:
        self._tail.setdefault(a, []).append(b)
        self._tail.setdefault(b, []).append(a)
        self._tail_n += 2
        if self._tail_n > max(65536, len(self._idx) // 4):
            self._merge()

    def remove(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Remove one ``a – b`` edge (both directions) per pair, e.g. kNN lists' evicted members.

        A tail edge goes at once; merged ones are cut out of the CSR in one
        pass (O(edges); only the kNN rule's evictions call this).
        """
        cut = np.zeros(len(self._idx), dtype=bool)
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                tail = self._tail.get(x)
                if tail is not None and y in tail:
                    tail.remove(y)
                    self._tail_n -= 1
                    continue
                if x + 1 < len(self._ptr):
                    lo, hi = int(self._ptr[x]), int(self._ptr[x + 1])
                    hit = np.flatnonzero((self._idx[lo:hi] == y) & ~cut[lo:hi])
                    if hit.size:
                        cut[lo + int(hit[0])] = True
        if cut.any():
            before = np.concatenate([[0], np.cumsum(cut)])  # cut entries before each position
            self._ptr = self._ptr - before[self._ptr]
            self._idx = self._idx[~cut]

    def _merge(self) -> None:
        base_n = len(self._ptr) - 1
        base_rows = np.repeat(np.arange(base_n, dtype=np.int64), np.diff(self._ptr))
        keys = np.fromiter(self._tail.keys(), dtype=np.int64, count=len(self._tail))
        lens = np.fromiter((len(v) for v in self._tail.values()), dtype=np.int64, count=len(self._tail))
        tail_rows = np.repeat(keys, lens)
        tail_cols = np.fromiter((c for v in self._tail.values() for c in v), dtype=np.int32, count=int(lens.sum()))
        rows = np.concatenate([base_rows, tail_rows])
        cols = np.concatenate([self._idx, tail_cols])
        self._ptr, self._idx = csr(rows, cols, self.n)
        self._tail, self._tail_n = {}, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, r: Any) -> list[int]:
        r = int(r)
        out: list[int] = self._idx[self._ptr[r] : self._ptr[r + 1]].tolist() if r < len(self._ptr) - 1 else []
        extra = self._tail.get(r)
        return out + extra if extra else out

    @property
    def nbytes(self) -> int:
        return int(self._ptr.nbytes + self._idx.nbytes) + 100 * len(self._tail) + 36 * self._tail_n


class Postings:
    """Lexical postings: for each term id, the ascending turn rows that hold it.

    Kept as CSR over the turns present at the last merge; rows appended since
    are found by a scan of the per-turn term ids of those rows only.
    """

    def __init__(self) -> None:
        self._ptr = np.zeros(1, dtype=np.int64)
        self._rows = np.zeros(0, dtype=np.int32)
        self._base_turns = 0  # turns covered by the CSR
        self._base_terms = 0

    def rebuild(self, turn_ptr: np.ndarray, term_ids: np.ndarray, n_terms: int) -> None:
        n_turns = len(turn_ptr) - 1
        owner = np.repeat(np.arange(n_turns, dtype=np.int32), np.diff(turn_ptr))
        self._ptr, self._rows = csr(term_ids.astype(np.int64), owner, n_terms)
        self._base_turns, self._base_terms = n_turns, n_terms

    def maybe_merge(self, turn_ptr: np.ndarray, term_ids: np.ndarray, n_terms: int) -> None:
        tail = len(term_ids) - int(turn_ptr[self._base_turns])
        if tail > max(32768, len(self._rows) // 4):
            self.rebuild(turn_ptr, term_ids, n_terms)

    def rows(self, tid: int, turn_ptr: np.ndarray, term_ids: np.ndarray) -> np.ndarray:
        """Ascending turn rows holding term ``tid``."""
        base = self._rows[self._ptr[tid] : self._ptr[tid + 1]] if tid < self._base_terms else self._rows[:0]
        start = int(turn_ptr[self._base_turns])
        if start == len(term_ids):
            return base
        hits = np.flatnonzero(term_ids[start:] == tid) + start
        if not hits.size:
            return base
        extra = (np.searchsorted(turn_ptr, hits, side="right") - 1).astype(np.int32)
        return np.concatenate([base, extra])

    @property
    def nbytes(self) -> int:
        return int(self._ptr.nbytes + self._rows.nbytes)


class Lazy(Sequence):  # type: ignore[type-arg]
    """A sequence whose items are computed by ``get`` (e.g. sentence texts read from SQLite)."""

    __slots__ = ("_len", "_get", "_many")

    def __init__(
        self, length: Callable[[], int], get: Callable[[int], Any], many: Callable[[list[int]], list[Any]]
    ) -> None:
        self._len, self._get, self._many = length, get, many

    def __len__(self) -> int:
        return self._len()

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self._many(list(range(*i.indices(len(self)))))
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._get(i)

    def many(self, rows: Sequence[int]) -> list[Any]:
        return self._many([int(r) for r in rows])


class Strings(Sequence):  # type: ignore[type-arg]
    """A list of strings saved as UTF-8 bytes end to end with their end offsets (e.g. a scope's message ids
    restored from a saved index): each decoded when read; appended ones are kept as strings."""

    __slots__ = ("_blob", "_ends", "_extra")

    def __init__(self, blob: np.ndarray, ends: np.ndarray) -> None:
        self._blob, self._ends = blob, ends
        self._extra: list[str] = []

    def __len__(self) -> int:
        return len(self._ends) + len(self._extra)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        base = len(self._ends)
        if i >= base:
            return self._extra[i - base]
        lo = int(self._ends[i - 1]) if i else 0
        return self._blob[lo : int(self._ends[i])].tobytes().decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        data = self._blob.tobytes()
        lo = 0
        for hi in self._ends.tolist():
            yield data[lo:hi].decode("utf-8", "surrogatepass")
            lo = hi
        yield from self._extra

    def append(self, value: str) -> None:
        self._extra.append(value)
