"""Exceptions raised by sgmem.

Every error a caller can trigger derives from :class:`SgmemError` and says what
was received, what was expected and what to do. Subclasses also inherit the
builtin they refine, so ``except ValueError`` keeps working for callers that
do not know sgmem::

    SgmemError
    ├── InvalidInputError (ValueError)      bad argument or message
    │   └── LimitExceededError              a configured size limit was hit
    ├── ConfigError (ValueError)            invalid configuration value
    ├── NotFoundError (KeyError)            unknown scope, thread or id
    ├── StoreError (RuntimeError)           the store cannot be used
    │   ├── EmbedderMismatchError           store built with another embedder
    │   ├── SchemaVersionError              store written by a newer sgmem
    │   ├── CorruptStoreError               the SQLite file is damaged
    │   └── StoreBusyError                  the database stayed locked
    └── DependencyError (ImportError)       an optional extra is missing
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = [
    "ConfigError",
    "CorruptStoreError",
    "DependencyError",
    "EmbedderMismatchError",
    "InvalidInputError",
    "LimitExceededError",
    "NotFoundError",
    "SchemaVersionError",
    "SgmemError",
    "StoreBusyError",
    "StoreError",
]


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 200, 200


def _short(value: Any, limit: int = 80) -> str:
    """A bounded repr of a received value, safe to put in an error message.

    Bounded in cost too: a huge or deeply nested value (or one whose
    ``__repr__`` fails) must not turn a clear error into a RecursionError.
    """
    if isinstance(value, str) and len(value) > limit:
        return repr(value[: limit - 20]) + f"... ({len(value)} chars)"
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a caller's object with a broken __repr__
        text = f"<{type(value).__name__} object>"
    if len(text) > limit:
        text = text[: limit - 20] + f"... ({len(text)} chars)"
    return text


class SgmemError(Exception):
    """Root of every error sgmem raises on purpose."""


class InvalidInputError(SgmemError, ValueError):
    """An argument or message does not have the expected shape or value.

    Attributes:
        field: the argument or message field at fault (``"messages[2].role"``).
        received: a bounded repr of what was passed.
    """

    def __init__(self, field: str, received: Any, expected: str, hint: str = "") -> None:
        self.field = field
        self.received = _short(received)
        self.expected = expected
        msg = f"{field}: received {self.received}, expected {expected}."
        if hint:
            msg += f" {hint}"
        super().__init__(msg)


class LimitExceededError(InvalidInputError):
    """A configured size limit (message size, sentences per add, query length) was exceeded."""

    def __init__(self, field: str, size: int, limit: int, unit: str, setting: str) -> None:
        self.size = size
        self.limit = limit
        self.setting = setting
        super().__init__(
            field,
            f"<{size} {unit}>",
            f"at most {limit} {unit}",
            f"Split the input, or raise Config(limits=Limits({setting}=...)).",
        )


class ConfigError(SgmemError, ValueError):
    """A configuration value is out of range or inconsistent."""


class NotFoundError(SgmemError, KeyError):
    """A scope, thread or id the caller named does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class StoreError(SgmemError, RuntimeError):
    """The store cannot be opened or used as asked."""


class EmbedderMismatchError(StoreError):
    """The store was built with a different embedder (name or dimension)."""


class SchemaVersionError(StoreError):
    """The store was written by a newer schema than this sgmem understands."""


class CorruptStoreError(StoreError):
    """The SQLite file is damaged; it is reported, never silently replaced."""


class StoreBusyError(StoreError):
    """The database stayed locked by another writer past the retry budget."""


class DependencyError(SgmemError, ImportError):
    """An optional dependency is missing; the message names the pip extra."""
