"""The LLM seam: any text-completion model sgmem may call.

Optional everywhere: with no LLM every feature works through its LLM-free
rule. Adapters wrap LangChain chat models and LlamaIndex LLMs.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["LLM"]


@runtime_checkable
class LLM(Protocol):
    """A text-completion model."""

    def complete(self, prompt: str) -> str:
        """Return the model's completion of ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        ...
