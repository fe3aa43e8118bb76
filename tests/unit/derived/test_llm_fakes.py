"""The LLM path through a framework's fake chat model (LangChain), wrapped by the adapter."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

import sgmem

pytestmark = pytest.mark.integration


def test_langchain_fake_chat_model_drives_fact_extraction(bag: sgmem.Embedder) -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    adapters = pytest.importorskip("langchain_sgmem")
    model = fake.FakeListChatModel(
        responses=[json.dumps([{"fact": "Caroline moved to Boston in 2023.", "sources": [1]}]), "not json"]
    )
    cfg = sgmem.Config(pyramid=sgmem.PyramidConfig(llm_keywords=False))
    at = datetime(2024, 1, 2, tzinfo=timezone.utc)
    with sgmem.Memory(embedder=bag, llm=adapters.LangChainLLM(model), config=cfg) as mem:
        r1 = mem.add([{"role": "user", "name": "Caroline", "content": "I moved to Boston last year."}], scope="s",
                     thread="t", at=at)
        r2 = mem.add([{"role": "user", "name": "Caroline", "content": "I work as a nurse at the hospital."}],
                     scope="s", thread="t", at=at)
        facts = sorted(h.text for h in mem.search("Caroline", scope="s", kinds=["fact"]))
    assert (r1.llm_calls, r1.llm_fallbacks, r2.llm_calls, r2.llm_fallbacks) == (1, 0, 1, 1)
    assert facts == ["Caroline moved to Boston in 2023.", "Caroline: I work as a nurse at the hospital."]
