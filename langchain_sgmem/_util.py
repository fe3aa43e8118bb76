"""Argument checks shared by the adapters (they raise sgmem's own errors)."""

from __future__ import annotations

from typing import Any

from sgmem import InvalidInputError, Memory
from sgmem.validate import check_name

__all__ = ["check_memory", "check_name_arg"]


def check_memory(memory: Any, field: str = "memory") -> Memory:
    """``memory`` if it is a :class:`sgmem.Memory`, else a clear error."""
    if not isinstance(memory, Memory):
        raise InvalidInputError(field, memory, "a sgmem.Memory", "Create one with sgmem.Memory('./memory').")
    return memory


def check_name_arg(memory: Memory, value: Any, field: str) -> str:
    """A scope or thread name, checked against the memory's limits."""
    return check_name(value, field, memory.config.limits)
