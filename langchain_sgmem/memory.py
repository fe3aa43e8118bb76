"""Legacy-chain memory (``langchain_classic`` ``BaseMemory``) over sgmem."""

from __future__ import annotations

import logging
from typing import Any

from langchain_classic.base_memory import BaseMemory
from langchain_classic.memory.utils import get_prompt_input_key
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from sgmem import InvalidInputError, Memory, RecallTrace
from sgmem.validate import check_mode, check_score, fit_query

from ._messages import to_sgmem
from ._util import check_memory, check_name_arg

logger = logging.getLogger(__name__)

__all__ = ["SGMemMemory"]


class SGMemMemory(BaseMemory):
    """Memory for legacy chains: recalls what is relevant to the input, saves each exchange.

    On each call the chain's input is the query: the scope's relevant memories
    come back under ``memory_key`` as one dated, speaker-labelled block that
    fits ``budget_tokens`` (a string, or with ``return_messages=True`` a single
    ``SystemMessage`` holding it; an empty string or list when nothing is
    relevant). After the call, the input and output are stored in ``thread``
    as a ``HumanMessage`` and an ``AIMessage``.

    Setup:
        .. code-block:: bash

            pip install 'sgmem[langchain]'

    Instantiate:
        .. code-block:: python

            import sgmem
            from langchain_sgmem import SGMemMemory

            mem = sgmem.Memory("./memory")
            memory = SGMemMemory(memory=mem, scope="alice", thread="chat-1", budget_tokens=500)

    Use:
        .. code-block:: python

            memory.save_context({"input": "I adopted a cat named Miso."}, {"output": "Lovely!"})
            memory.load_memory_variables({"input": "What is my cat called?"})["history"]
            # 'Relevant memories (oldest first):\\n[... · chat-1]\\n... user: I adopted a cat named Miso.\\n...'

        In a legacy chain (``model`` is any LangChain chat model):

        .. code-block:: python

            from langchain_classic.chains import ConversationChain

            chain = ConversationChain(llm=model, memory=memory)
            chain.invoke({"input": "What is my cat called?"})

    Args:
        memory: the :class:`sgmem.Memory` to read and write.
        scope: whose memories to use.
        thread: the thread each exchange is saved to.
        memory_key: the prompt variable the memories are returned under.
        input_key, output_key: which input is the query / which output is the
            reply (default: the only one).
        return_messages: return a list of messages instead of a string.
        budget_tokens: the most tokens (cl100k_base) the memories may take.
        mode: the retrieval mode (default: the memory's configured mode).
        min_score: leave out memories whose :attr:`sgmem.Hit.relevance` is
            below this (``None``: the memory's ``Config.min_relevance``; 0: none).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory = Field(exclude=True)
    scope: str
    thread: str = "default"
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    budget_tokens: int = Field(default=2000, ge=1)
    mode: str | None = None
    min_score: float | None = None
    _last_recall: RecallTrace | None = PrivateAttr(default=None)

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Memory:
        return check_memory(value)

    @field_validator("mode")
    @classmethod
    def _check_mode(cls, value: Any) -> str | None:
        return check_mode(value)

    @field_validator("min_score", mode="before")
    @classmethod
    def _check_min_score(cls, value: Any) -> float | None:
        return None if value is None else check_score(value, "min_score", 0.0)

    @model_validator(mode="after")
    def _check_names(self) -> Any:
        for field in ("scope", "thread"):
            check_name_arg(self.memory, getattr(self, field), field)
        return self

    @property
    def last_recall(self) -> RecallTrace | None:
        """What the last :meth:`load_memory_variables` recalled: the query, the block, the hits with their
        relevance and ``why``, what the cutoff removed (``None`` before the first recall)."""
        return self._last_recall

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory fills: ``memory_key``."""
        return [self.memory_key]

    # ------------------------------------------------------------------ read
    def _query(self, inputs: dict[str, Any]) -> str | None:
        key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        value = inputs.get(key)
        if isinstance(value, BaseMessage):
            value = value.text
        if not (isinstance(value, str) and value.strip()):
            return None
        return fit_query(value, self.memory.config.limits, logger)  # an over-long input never fails the chain

    def _variables(self, block: str) -> dict[str, Any]:
        if self.return_messages:
            return {self.memory_key: [SystemMessage(content=block)] if block else []}
        return {self.memory_key: block}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The scope's memories relevant to the chain's input, within the budget."""
        query = self._query(inputs)
        if query:
            self._last_recall = self.memory.context_trace(
                query, scope=self.scope, budget_tokens=self.budget_tokens, mode=self.mode, min_score=self.min_score
            )
        return self._variables(self._last_recall.text if query and self._last_recall else "")

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        query = self._query(inputs)
        if query:
            self._last_recall = await self.memory.acontext_trace(
                query, scope=self.scope, budget_tokens=self.budget_tokens, mode=self.mode, min_score=self.min_score
            )
        return self._variables(self._last_recall.text if query and self._last_recall else "")

    # ----------------------------------------------------------------- write
    def _exchange(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[dict[str, Any]]:
        in_key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        if self.output_key is not None:
            out_key = self.output_key
        elif len(outputs) == 1:
            out_key = next(iter(outputs))
        elif "output" in outputs:
            out_key = "output"
        else:
            raise InvalidInputError(
                "outputs", sorted(outputs), "one output key", "Set SGMemMemory(output_key=...) to say which to save."
            )
        messages: list[BaseMessage] = []
        for value, cls in ((inputs.get(in_key), HumanMessage), (outputs.get(out_key), AIMessage)):
            if isinstance(value, BaseMessage):
                value = value.text
            if isinstance(value, str) and value.strip():
                messages.append(cls(content=value))
        return [to_sgmem(m, f"messages[{i}]") for i, m in enumerate(messages)]

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Store the exchange (input as a user turn, output as an assistant turn)."""
        items = self._exchange(inputs, outputs)
        if items:
            self.memory.add(items, scope=self.scope, thread=self.thread)

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Async :meth:`save_context`."""
        items = self._exchange(inputs, outputs)
        if items:
            await self.memory.aadd(items, scope=self.scope, thread=self.thread)

    def clear(self) -> None:
        """Delete this memory's thread (and everything derived); other threads stay."""
        self.memory.delete(scope=self.scope, thread=self.thread)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await self.memory.adelete(scope=self.scope, thread=self.thread)
