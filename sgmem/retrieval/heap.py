"""Hand freed heap memory back to the operating system after a large one-off build.

Building a scope's caches (the index from SQLite, the BM25 model, the
keyword index, SGRM's segment graph) allocates and frees hundreds of MB of
temporaries: texts, token lists, similarity blocks. glibc keeps freed heap
pages mapped (its mmap threshold grows to 32 MB after the first large free,
so later temporaries come from the heap), and the process's resident size
stays at the build's high-water mark. ``malloc_trim(0)`` returns every free
page; measured at 100k sentences, 42 MB after the index load, 25 MB after
the BM25 build and 65 MB after SGRM's.
It changes no data. Elsewhere than glibc (macOS, Windows, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = ["release_free_heap"]

_TRIM: Any = None


def release_free_heap() -> bool:
    """``malloc_trim(0)`` where glibc provides it; True when memory was returned."""
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
                fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
                _TRIM = fn
            except (OSError, AttributeError):  # not glibc
                pass
    return bool(_TRIM(0)) if _TRIM else False
