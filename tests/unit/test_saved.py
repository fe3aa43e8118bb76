"""Saved adapter state names a store; reopening it connects with what the application gave, never the saved text."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sgmem
import sgmem.memory
import sgmem.saved


class _Opened:
    """Stands in for :class:`sgmem.Memory`: records what a reopening connects with (no server is needed)."""

    targets: list[Any] = []

    def __init__(self, target: Any, **kwargs: Any) -> None:
        type(self).targets.append(target)
        self._closed = False


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(sgmem.memory, "Memory", _Opened)
    monkeypatch.setattr(_Opened, "targets", [])
    monkeypatch.setattr(sgmem.saved, "_ALLOWED", {})
    monkeypatch.setattr(sgmem.saved, "_OPEN", {})
    monkeypatch.delenv(sgmem.saved.URL_ENV, raising=False)
    return _Opened.targets


APP_URL = "postgresql://app:the-apps-password@db.example/agents?sslmode=require"
SAVED = {"store_url": "postgresql://app@db.example/agents?sslmode=require", "config": None}


def test_an_allowed_store_is_opened_with_the_applications_url_password_included(opened: list[Any]) -> None:
    assert SAVED["store_url"] == sgmem.saved.without_passwords(APP_URL)  # what saved state holds
    sgmem.saved.allow(APP_URL)
    sgmem.saved.reopen(SAVED, "SGMemMemory")
    assert opened == [APP_URL]


def test_a_store_named_by_the_environment_is_opened_with_its_url(
    opened: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sgmem.saved.URL_ENV, APP_URL)
    sgmem.saved.reopen(SAVED, "SGMemMemory")
    assert opened == [APP_URL]


def test_a_store_neither_open_nor_allowed_is_not_connected_to(opened: list[Any]) -> None:
    with pytest.raises(sgmem.SgmemError, match="has not opened or allowed"):
        sgmem.saved.reopen(SAVED, "SGMemMemory")
    assert opened == []


def test_the_scope_key_is_never_saved_and_comes_back_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "the-stores-scope-key-0001"
    config = sgmem.Config(pg_row_security=True, pg_scope_key=key)
    saved = sgmem.saved.config_to_dict(config)
    assert key not in json.dumps(saved) and saved["pg_scope_key"] is None
    monkeypatch.delenv(sgmem.saved.SCOPE_KEY_ENV, raising=False)
    with pytest.raises(sgmem.SgmemError, match=sgmem.saved.SCOPE_KEY_ENV):
        sgmem.saved.config_from_dict(saved)
    monkeypatch.setenv(sgmem.saved.SCOPE_KEY_ENV, key)
    assert sgmem.saved.config_from_dict(saved) == config
