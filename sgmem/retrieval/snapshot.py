"""A scope index's columns saved next to the database, so that reopening a store does not rebuild them.

Loading a scope from SQLite reads every turn, sentence and edge row into
Python and rebuilds the postings (about 2 s per 100k sentences). What it
builds is saved instead, beside the FAISS files (:mod:`sgmem.retrieval.cachefiles`),
as one file ``scope-<id>.columns``: a JSON header (format, library version,
scope, generation, row counts, the small tables: thread, session and speaker
names, the keyword pyramid's vocabulary when it was loaded) followed by the numpy columns, each at a 64-byte aligned offset.
Loading maps the file copy-on-write (:class:`numpy.memmap` mode ``"c"``): no
column is read until used, an append or an in-place edit copies the page it
touches and never writes the file.

It is a cache of SQLite: raw messages stay the system of record, and the file
is trusted only when :func:`sgmem.retrieval.cachefiles.load_cached` finds it
current (same generation and stamp, same file as the metadata recorded, probe rows equal
to SQLite's); anything else is ignored and the index rebuilt from the rows.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from .compact import Strings

if TYPE_CHECKING:
    from .index import ScopeIndex

__all__ = ["FORMAT", "read_columns", "write_columns"]

#: bumped whenever the layout below changes: a file of another format is ignored (rebuilt)
FORMAT = 2
_MAGIC = b"SGMEMCOLS\n"
_ALIGN = 64

# Grow columns of ScopeIndex, by attribute
_GROW = (
    "_msg_ids", "_round_ids", "_at_ts", "_tokens", "_prev", "_next", "_tool", "_term_ptr", "_term_ids",
    "_sent_ids", "_sent_msg", "_sent_idx", "_raw_acts",
)  # fmt: skip
_NAMES = ("_threads", "_sessions", "_speakers")


def _strings(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of ``values`` end to end and the offsets that cut them (no separator to escape)."""
    enc = [v.encode("utf-8", "surrogatepass") for v in values]
    ends = np.cumsum([len(b) for b in enc], dtype=np.int64) if enc else np.zeros(0, dtype=np.int64)
    return np.frombuffer(b"".join(enc), dtype=np.uint8), ends


def _unstrings(blob: np.ndarray, ends: np.ndarray) -> list[str]:
    data = blob.tobytes()
    starts = [0, *ends[:-1].tolist()] if len(ends) else []
    return [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends.tolist(), strict=True)]


def columns_of(idx: ScopeIndex) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header fields and arrays that rebuild ``idx`` without SQLite (vectors and HNSW links aside)."""
    arrays: dict[str, np.ndarray] = {name: getattr(idx, name).view() for name in _GROW}
    header: dict[str, Any] = {"names": {}}
    for name in _NAMES:
        names = getattr(idx, name)
        arrays[f"{name}.codes"] = names.codes()
        header["names"][name] = [list(v) if isinstance(v, tuple) else v for v in names._table]
        header["names"][f"{name}.bytes"] = names._table_bytes
    arrays["ext_ids.bytes"], arrays["ext_ids.ends"] = _strings(list(idx.ext_ids))
    arrays["words.bytes"], arrays["words.ends"] = _strings(idx._words)
    post = idx._postings
    arrays["postings.ptr"], arrays["postings.rows"] = post._ptr, post._rows
    header["postings"] = [post._base_turns, post._base_terms]
    adj = idx.adjacency
    if adj._tail:
        adj._merge()  # the same lists, in the same order, as one CSR
    arrays["adjacency.ptr"], arrays["adjacency.idx"] = adj._ptr, adj._idx
    header["adjacency_n"] = adj.n
    knn = idx.knn
    arrays["knn.tgt"], arrays["knn.cos"] = knn.tgt, knn.cos
    header["knn_n"] = knn.n
    ids, acts = idx._acts
    if len(acts) == idx.n_sentences and np.array_equal(ids, idx._sent_ids.view()):
        arrays["acts"] = acts  # resolved in context: the first query need not resolve them again
    if idx.n_turns:
        arrays["turn_norms"] = idx.turn_sum_norms()
    if idx.keywords is not None:  # the pyramid's vocabulary, when this process loaded it
        fields, kw = idx.keywords.to_arrays(idx.n_turns)
        header["keywords"] = fields
        arrays.update({f"kw.{k}": v for k, v in kw.items()})
    header["str_bytes"] = idx._str_bytes
    header["sent_ids_sorted"] = idx._sent_ids_sorted
    return header, arrays


def write_columns(path: Path, idx: ScopeIndex, write: Any) -> None:
    """Write ``idx``'s columns to ``path`` with ``write(path, data)`` (the caller renames it into place)."""
    header, arrays = columns_of(idx)
    table: dict[str, list[Any]] = {}
    offset = 0
    for name, arr in arrays.items():
        table[name] = [arr.dtype.str, list(arr.shape), offset]
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    header.update(
        format=FORMAT,
        library=__version__,
        scope_id=idx.scope_id,
        generation=idx.generation,
        dim=idx.dim,
        n_turns=idx.n_turns,
        n_sentences=idx.n_sentences,
        arrays=table,
    )
    head = json.dumps(header).encode()
    start = -(-(len(_MAGIC) + 8 + len(head)) // _ALIGN) * _ALIGN
    buf = bytearray(start + offset)
    buf[: len(_MAGIC)] = _MAGIC
    buf[len(_MAGIC) : len(_MAGIC) + 8] = struct.pack("<Q", len(head))
    buf[len(_MAGIC) + 8 : len(_MAGIC) + 8 + len(head)] = head
    for name, arr in arrays.items():
        at = start + table[name][2]
        buf[at : at + arr.nbytes] = np.ascontiguousarray(arr).tobytes()
    write(path, buf)


def read_columns(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and arrays of a columns file, the arrays mapped copy-on-write (ValueError if malformed)."""
    size = os.path.getsize(path)
    mm = np.memmap(path, dtype=np.uint8, mode="c") if size else np.zeros(0, dtype=np.uint8)
    if size < len(_MAGIC) + 8 or mm[: len(_MAGIC)].tobytes() != _MAGIC:
        raise ValueError(f"{path} is not a columns file")
    (n,) = struct.unpack("<Q", mm[len(_MAGIC) : len(_MAGIC) + 8].tobytes())
    header = json.loads(mm[len(_MAGIC) + 8 : len(_MAGIC) + 8 + n].tobytes())
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: format {header.get('format')}, expected {FORMAT}")
    from .cachefiles import populate

    populate(mm)  # every column is read by a first query or two: map them at once
    start = -(-(len(_MAGIC) + 8 + n) // _ALIGN) * _ALIGN
    arrays = {}
    for name, (dtype, shape, offset) in header["arrays"].items():
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        lo = start + int(offset)
        if lo + count * dt.itemsize > size:
            raise ValueError(f"{path} is truncated")
        arrays[name] = mm[lo : lo + count * dt.itemsize].view(dt).reshape(shape)
    return header, arrays


def restore_columns(idx: ScopeIndex, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Fill a fresh ``idx`` (no rows) from :func:`read_columns`' output."""
    for name in _GROW:
        getattr(idx, name).adopt(arrays[name])
    for name in _NAMES:
        table = header["names"][name]
        values = [tuple(v) if isinstance(v, list) else v for v in table]
        getattr(idx, name).adopt(arrays[f"{name}.codes"], values, int(header["names"][f"{name}.bytes"]))
    idx.ext_ids = Strings(arrays["ext_ids.bytes"], arrays["ext_ids.ends"])  # type: ignore[assignment]
    idx._words = _unstrings(arrays["words.bytes"], arrays["words.ends"])
    idx._vocab = dict(zip(idx._words, range(len(idx._words)), strict=True))
    post = idx._postings
    post._ptr, post._rows = arrays["postings.ptr"], arrays["postings.rows"]
    post._base_turns, post._base_terms = header["postings"]
    idx.adjacency.n = int(header["adjacency_n"])
    idx.adjacency._ptr, idx.adjacency._idx = arrays["adjacency.ptr"], arrays["adjacency.idx"]
    knn = idx.knn
    knn.n, knn.tgt, knn.cos = int(header["knn_n"]), arrays["knn.tgt"], arrays["knn.cos"]
    if "acts" in arrays:
        acts = np.array(arrays["acts"])  # read-only like every resolved table
        acts.flags.writeable = False
        idx._acts = (idx._sent_ids.view().copy(), acts)
    if "turn_norms" in arrays:
        idx._turn_norms = np.array(arrays["turn_norms"])
    if "keywords" in header:
        from ..pyramid.vocabulary import KeywordIndex

        kw = {k[3:]: v for k, v in arrays.items() if k.startswith("kw.")}
        idx.keywords = KeywordIndex.from_arrays(idx.dim, header["keywords"], kw)
    idx._str_bytes = int(header["str_bytes"])
    idx._sent_ids_sorted = bool(header["sent_ids_sorted"])
