"""Fixtures and fakes for the LangChain adapter tests (offline: LangChain's fake models)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field


class RecordingChatModel(GenericFakeChatModel):
    """A fake chat model that records every input it receives.

    It answers with the next message of ``script`` while there is one, then
    with ``reply``; ``bind_tools`` is accepted (and ignored) so agents with
    tools can use it.
    """

    reply: str = "OK."
    script: list[AIMessage] = Field(default_factory=list)
    messages: Any = None  # GenericFakeChatModel's iterator, refilled per call
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls.append(list(messages))
        self.messages = iter([self.script.pop(0) if self.script else AIMessage(content=self.reply)])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingChatModel:
        return self

    @property
    def _llm_type(self) -> str:
        return "recording-fake-chat-model"

    def system_text(self, call: int = -1) -> str:
        """The text of the system message of a recorded call ('' when there was none)."""
        first = self.calls[call][0]
        return first.text if first.type == "system" else ""


@pytest.fixture
def model() -> RecordingChatModel:
    """A fresh recording fake chat model."""
    return RecordingChatModel()
