"""Integration tests of the LlamaIndex adapters (offline: LlamaIndex's mock LLMs)."""
