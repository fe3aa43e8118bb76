"""Generated memory: SGMem's facts, session summaries and insights (ALGORITHMS §1.5–§1.6).

With an LLM each kind uses SGMem's prompt (:mod:`sgmem.prompts`); without
one, its LLM-free rule. Facts pass through the SAGE novelty gate
(:mod:`sgmem.gate`) before they are stored; every memory keeps links to the
messages it came from and a version history (``Memory.history``).

- :mod:`.config` — :class:`DerivedConfig`
- :mod:`.extract` — candidates, summaries, insights (LLM and LLM-free)
- :mod:`.merge` — the Update merge (LLM prompt, or the LLM-free rule)
- :mod:`.engine` — the write path: plan (outside the lock), apply, commit
- :mod:`.reads` — hits, context items, history, the delete policy
- :mod:`.store`, :mod:`.sessions`, :mod:`.index`, :mod:`.context` — storage, caches, rendering

Kept light: importing this package loads only the configuration, so
:mod:`sgmem.config` can embed it.
"""

from __future__ import annotations

from .config import DERIVED_KINDS, LLM_TASKS, DerivedConfig

__all__ = ["DERIVED_KINDS", "LLM_TASKS", "DerivedConfig"]
