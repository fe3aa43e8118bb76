"""Decoded copies of the libraries' lookup tables, kept between processes for one-shot commands.

Two tables are decoded from their packed form on every process's first use:
simplemma's English dictionary (~180,000 entries, front-coded and
lzma-compressed: 0.3–0.7 s) for the keyword channel's lemmas, and tiktoken's
cl100k_base ranks (100,000 base64 lines, hashed and decoded: 0.2–0.5 s) for
token budgets. A long-running application pays that once; a command-line call
pays it every time. :func:`enable` (which ``sgmem`` commands call) keeps each
decoded table as a :mod:`marshal` file in :func:`cache_dir`, named by the
library's version and the packed file's size and time, and reads it back in
a few tens of milliseconds. The tables are the same dicts, so lemmas and token
counts are the same (``tests/unit/test_cli_latency.py``); anything unexpected
(another library layout, an unwritable directory, a damaged file) decodes
the packed table as before.
"""

from __future__ import annotations

import logging
import marshal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CACHE_ENV", "cache_dir", "cached", "enable"]

log = logging.getLogger(__name__)

#: The environment variable naming the directory of these copies.
CACHE_ENV = "SGMEM_CACHE_DIR"


def cache_dir() -> Path:
    """``$SGMEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/sgmem``, else ``~/.cache/sgmem``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sgmem"


def cached(name: str, source: Path, version: str, build: Callable[[], Any], directory: Path | None = None) -> Any:
    """``build()``'s value (marshal-able), read from its copy in ``directory`` when one was written for this
    ``source`` file (same size and modification time) and library ``version``; else built and written."""
    st = source.stat()
    where = directory or cache_dir()
    file = where / f"{name}-{version}-{st.st_size}-{int(st.st_mtime)}.marshal"
    try:
        value = marshal.loads(file.read_bytes())
        if value:
            return value
    except (OSError, ValueError, EOFError, TypeError):
        pass
    value = build()
    try:
        where.mkdir(parents=True, exist_ok=True)
        part = file.with_name(f"{file.name}.{os.getpid()}.part")
        part.write_bytes(marshal.dumps(value))
        os.replace(part, file)  # a reader sees the whole file or none
    except (OSError, ValueError) as exc:
        log.debug("could not keep %s in %s: %s", name, where, exc)
    return value


def enable(directory: Path | None = None) -> None:
    """Read simplemma's English dictionary and tiktoken's ranks from their decoded copies from now on."""
    from .pyramid.lemmas import use_cache as lemmas_cache
    from .text.tokens import use_cache as tokens_cache

    lemmas_cache(directory)
    tokens_cache(directory)
