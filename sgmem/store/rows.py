"""Rows an add inserts, prepared outside the write transaction (:mod:`sgmem.ingest`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

__all__ = ["MessageRow", "SentenceRow"]


@dataclass
class MessageRow:
    """A message ready to be inserted (placement already computed)."""

    ext_id: str
    role: str
    name: str | None
    content: str
    at: datetime
    session: str
    tokens: int
    terms: str
    metadata: dict[str, Any]
    vec: np.ndarray


@dataclass
class SentenceRow:
    """A sentence ready to be inserted; ``msg`` indexes the add's messages."""

    msg: int
    idx: int
    start: int
    end: int
    text: str
    embed_hash: str
    vec: np.ndarray
    act: int | None = None  # its dialogue act out of context (sgmem.text.acts.stored_acts); None: not yet read
