"""The LlamaIndex forget tool refuses ids given as a dict (it deleted the dict's keys) and answers 100,000 ids briefly."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent

import sgmem
from llama_index_sgmem import SGMemToolSpec

from .test_li_tools import function_calls, run, stored

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect"),
]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"message_ids": {"c1": "delete", "c2": "these"}}, "dict"),
        ({"message_ids": ["c1"] + [f"unknown-{i}" for i in range(100_000)]}, "max_ids_per_call"),
        ({"message_ids": ["c1"] + [f"unknown-{i}" for i in range(5_000)]}, "5000 of the 5001"),
    ],
    ids=["dict", "100000-ids", "5000-unknown"],
)
async def test_the_forget_tool_refuses_in_a_short_error_and_deletes_nothing(
    memory: sgmem.Memory, args: dict[str, Any], named: str
) -> None:
    memory.add(
        [{"role": "user", "content": "I adopted a cat named Miso.", "id": "c1"},
         {"role": "user", "content": "My sister lives in Porto.", "id": "c2"}],
        scope="alice",
        thread="t",
    )  # fmt: skip
    before = stored(memory)
    out = await run(FunctionAgent, SGMemToolSpec(memory, scope="alice"), function_calls(("forget", args)))
    assert out[0].is_error and named in out[0].content, out[0].content[:500]
    assert len(out[0].content) < 1000
    assert stored(memory) == before
