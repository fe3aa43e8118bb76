"""Single-threaded BLAS for sgmem's linear algebra (writes, queries, the gate).

The gate's matrices are small (a PCA of a few thousand 384-d rows, one
matrix-vector product per candidate). Multi-threaded OpenBLAS gains nothing
on them and, next to PyTorch's OpenMP threads on a machine with few cores,
loses up to 100× to oversubscription (measured: a 500×24 QR took 80–250 ms
multi-threaded, 0.3–1 ms single-threaded). When ``threadpoolctl`` is
installed (it comes with the ``embeddings`` extra), these sections run with
one BLAS thread; without it, nothing changes. ``Memory.add`` and every
search run this way too: measured on 2 cores with MiniLM, ingest went from
0.59× to 0.87× the raw embedding rate (numpy's idle BLAS threads had been
competing with PyTorch's during the embedding calls).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

__all__ = ["SMALL_FAISS_BATCH", "faiss_single_thread", "single_thread_blas"]


@lru_cache(maxsize=1)
def _controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - optional
        return None
    try:
        return ThreadpoolController()
    except Exception:  # noqa: BLE001 - an odd runtime must never break a write
        return None


@lru_cache(maxsize=1)
def _blas_libs() -> tuple[Any, ...]:
    """The BLAS libraries ``threadpoolctl`` found when first asked (as ``ThreadpoolController.limit`` uses)."""
    ctl = _controller()
    if ctl is None:
        return ()
    try:
        return tuple(ctl.select(user_api="blas").lib_controllers)
    except Exception:  # noqa: BLE001 - an odd runtime must never break a write
        return ()


@contextlib.contextmanager
def single_thread_blas() -> Iterator[None]:
    """Run the block with one BLAS thread (a no-op without ``threadpoolctl``).

    Sets each library's thread count directly (a few µs) rather than through
    ``ThreadpoolController.limit``, which re-reads every library's state on
    each call (~0.15 ms; a search enters this twice).
    """
    libs = _blas_libs()
    if not libs:
        yield
        return
    orig = [lib.get_num_threads() for lib in libs]
    for lib in libs:
        lib.set_num_threads(1)
    try:
        yield
    finally:
        for lib, n in zip(libs, orig, strict=True):
            lib.set_num_threads(n)


#: [D] below this many vectors a FAISS add or search runs on one OpenMP thread (see :func:`faiss_single_thread`)
SMALL_FAISS_BATCH = 1024


@contextlib.contextmanager
def faiss_single_thread(small: bool = True) -> Iterator[None]:
    """Run FAISS calls of the block on one OpenMP thread when ``small`` (a no-op otherwise).

    An add grows the HNSW graph of the kNN edges and the gate's inverted
    lists by a few dozen vectors; FAISS splits even such small batches over
    its OpenMP threads, whose start and barrier cost more than the work:
    measured on 2 shared cores at 50k sentences, one thread cut the HNSW add
    from 25 to 8 ms per add and the inverted-list add from 26 ms to under 1 ms.
    Large batches (a first build, a rebuild) keep every thread. The setting
    is the calling thread's own (OpenMP's per-thread ``nthreads`` value) and
    is restored on exit.
    """
    if not small:
        yield
        return
    import faiss

    before = faiss.omp_get_max_threads()
    if before <= 1:
        yield
        return
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)
