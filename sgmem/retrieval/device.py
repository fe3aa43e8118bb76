"""The exact dense scan on an accelerator (``Config.dense_device``): the sentence vectors mirrored there.

A query's exact scan multiplies the query by every sentence vector and
reduces the cosines per run of one turn's sentences (max and float64 sum,
:func:`sgmem.retrieval.dense.scan`). On a CPU it reads every vector from
memory: at 100k sentences on a 16-core GPU host, the
scan and its reductions took 4.8–5.1 ms on 8 threads, against 1.6 ms for
FAISS's whole flat search on 16, while the query's embedding ran on the GPU. With ``Config.dense_device`` set
(``"cuda"``, ``"cuda:1"``, ``"mps"``; ``"cpu"`` runs the same code on the
CPU through PyTorch, slower than the default scan) the vectors of each
cached scope index are kept in that device's memory (4 bytes × dimension per
sentence: 1.5 GB for a million 384-d sentences) and the scan and its
reductions run there:

* the mirror (:class:`DeviceVectors`) belongs to one :class:`ScopeIndex`
  (a weak reference: dropping the index frees it). An index's sentence rows
  are only ever appended (a delete, or another process's change, loads a new
  index), so a query first copies the rows appended since the last one;
* :class:`DeviceScanJob` launches the product and the two segment reductions
  when it is created (the kernels run while a hybrid query computes its
  lexical and keyword channels) and copies the results back in
  :meth:`DeviceScanJob.result`: the cosines (one float32 per sentence, which
  the graph channel needs), the runs' max and float64 sum.

Values are those of the device's float32 matrix-vector product, equal to the
CPU scan's up to float32 rounding (the same products summed in another
order); rankings can differ only between sentences whose cosines tie to that
precision.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from ..errors import ConfigError, DependencyError

__all__ = ["ACCELERATORS", "DeviceScanJob", "DeviceVectors", "check_device", "mirror", "resolve_device"]

#: [D] a mirror grows its device buffer by this factor when rows are appended past it
GROWTH = 1.5

#: [D] the device types that ``Config.dense_device="auto"`` follows the embedder to
ACCELERATORS = ("cuda", "mps")


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch comes with the embeddings extra
        raise DependencyError(
            "Config.dense_device needs PyTorch: pip install 'sgmem[offline]' (or torch), or leave "
            "Config.dense_device=None for the CPU scan"
        ) from exc
    return torch


def resolve_device(setting: str | None, embedder: Any) -> str | None:
    """The device a Memory scans on for ``Config.dense_device`` = ``setting`` (resolved when it opens).

    ``"auto"``: the embedder's device (its ``device`` attribute, e.g.
    ``SentenceTransformerEmbedder(device="cuda")``) when that is an
    accelerator (:data:`ACCELERATORS`) PyTorch can use here, else ``None``
    (the CPU scan): a host whose model runs on a GPU scans there too, with no
    setting, and a CPU host is unchanged. It never raises. Any other value is
    returned as it is (:func:`check_device` checks it).
    """
    if setting != "auto":
        return setting
    dev = getattr(embedder, "device", None)
    if dev is None:
        return None
    name = str(dev).strip()
    if name.split(":", 1)[0].lower() not in ACCELERATORS:
        return None
    try:
        check_device(name)
    except (ConfigError, DependencyError):  # an embedder on a device PyTorch lacks here: the CPU scan
        return None
    return name


def check_device(device: str) -> None:
    """Raise :class:`ConfigError` unless PyTorch can use ``device`` here (checked when a Memory opens)."""
    torch = _torch()
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"Config.dense_device: received {device!r}, expected a PyTorch device such as 'cuda', 'cuda:1', "
            "'mps' or 'cpu' (or None for the CPU scan)."
        ) from exc
    available = {
        "cpu": lambda: True,
        "cuda": lambda: torch.cuda.is_available() and (dev.index is None or dev.index < torch.cuda.device_count()),
        "mps": lambda: torch.backends.mps.is_available(),
    }.get(dev.type)
    if available is None or not available():
        raise ConfigError(
            f"Config.dense_device: received {device!r}, but PyTorch has no such device on this machine. "
            "Use a device it lists (torch.cuda.is_available()), or None for the CPU scan."
        )


class DeviceVectors:
    """One scope index's sentence vectors as a float32 tensor on ``device``, kept up to date by appending."""

    def __init__(self, device: str, dim: int) -> None:
        self.torch = _torch()
        self.device = self.torch.device(device)
        self.dim = dim
        self.rows = 0  # rows copied so far
        self._buf: Any = None
        self._runs: tuple[int, int, Any] | None = None  # (sentences, runs, run lengths on the device)

    def sync(self, idx: Any) -> Any:
        """The device tensor of ``idx``'s ``n_sentences`` vectors (rows appended since the last call copied)."""
        torch = self.torch
        vecs = idx.sentence_vectors()
        n = len(vecs)
        if n < self.rows:  # never expected (rows are only appended): start over rather than serve stale rows
            self.rows, self._buf = 0, None
        if n > self.rows:
            new = torch.from_numpy(np.ascontiguousarray(vecs[self.rows : n], dtype=np.float32)).to(self.device)
            cap = 0 if self._buf is None else self._buf.shape[0]
            if n > cap:
                buf = torch.empty((max(n, int(cap * GROWTH)), self.dim), dtype=torch.float32, device=self.device)
                if self.rows:
                    buf[: self.rows] = self._buf[: self.rows]
                self._buf = buf
            self._buf[self.rows : n] = new
            self.rows = n
        return self._buf[:n]

    def run_lengths(self, starts: np.ndarray, n: int) -> Any:
        """The lengths of the runs starting at ``starts`` (a tensor on the device, cached per shape)."""
        if self._runs is None or self._runs[:2] != (n, len(starts)):
            lengths = np.diff(np.append(np.asarray(starts, dtype=np.int64), n))
            self._runs = (n, len(starts), self.torch.from_numpy(lengths).to(self.device))
        return self._runs[2]

    def nbytes(self) -> int:
        """Device memory held (the buffer, not host memory)."""
        return 0 if self._buf is None else int(self._buf.numel()) * 4


_MIRRORS: weakref.WeakKeyDictionary[Any, dict[str, DeviceVectors]] = weakref.WeakKeyDictionary()
_MIRRORS_LOCK = threading.Lock()


def mirror(idx: Any, device: str) -> DeviceVectors:
    """The device mirror of ``idx`` (created on first use; freed with ``idx``)."""
    with _MIRRORS_LOCK:
        per = _MIRRORS.setdefault(idx, {})
        m = per.get(device)
        if m is None:
            m = per[device] = DeviceVectors(device, int(idx.dim))
        return m


class DeviceScanJob:
    """One query's scan on ``device``, launched at construction; :meth:`result` as :class:`ScanJob`'s.

    Must be created under the Memory's lock (it reads the index's vectors to
    copy the new rows); after that it reads only its device's own memory, so
    nothing needs waiting for if the query fails before :meth:`result`.
    """

    def __init__(self, idx: Any, q: np.ndarray, device: str, reduce: bool = True) -> None:
        self.n = n = idx.n_sentences
        self._parts: list[Any] = []
        if not n:
            return
        m = mirror(idx, device)
        torch = m.torch
        with torch.inference_mode():
            vecs = m.sync(idx)
            qv = torch.from_numpy(np.ascontiguousarray(q, dtype=np.float32).reshape(-1)).to(m.device)
            cos = torch.mv(vecs, qv)
            self._parts = [cos]
            if reduce:
                lengths = m.run_lengths(idx.array("sent_starts"), n)
                self._parts.append(torch.segment_reduce(cos, "max", lengths=lengths))
                self._parts.append(torch.segment_reduce(cos.double(), "sum", lengths=lengths))

    def result(self) -> tuple[np.ndarray, Any]:
        """``(cos, seg)``: the cosines (float32) and, if reduced, the runs' (max float32, sum float64)."""
        if not self.n:
            return np.zeros(0, dtype=np.float32), None
        # waits for the device; a copy back from an accelerator is the caller's own array already, a CPU
        # tensor's numpy view is copied (the caller writes into its arrays)
        out = [p.cpu().numpy() if p.device.type != "cpu" else p.numpy().copy() for p in self._parts]
        return out[0], ((out[1], out[2]) if len(out) == 3 else None)

    def cancel(self) -> None:
        """Nothing to wait for: the kernels read the device's copy, never the index's host memory."""
