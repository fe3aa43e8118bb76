"""Storage: SQLite system of record plus rebuildable per-scope caches."""

from .schema import SCHEMA_VERSION
from .sqlite import DB_FILENAME, SQLiteStore

__all__ = ["DB_FILENAME", "SCHEMA_VERSION", "SQLiteStore"]
