"""Resource bounds: every per-call limit is configurable, enforced before any work is stored,
and reported with the size, the limit and the setting to raise; inputs at the default limits
finish in bounded time (no quadratic blow-up on adversarial text).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import sgmem

from .helpers import FastEmbedder, observable


def _mem(**limits: int) -> sgmem.Memory:
    mem = sgmem.Memory(embedder=FastEmbedder(), config=sgmem.Config(limits=sgmem.Limits(**limits)))
    mem.add({"role": "user", "content": "baseline", "id": "b"}, scope="s", thread="t")
    return mem


@pytest.mark.parametrize(
    ("limits", "call", "setting"),
    [
        (
            {"max_message_chars": 100},
            lambda m: m.add({"role": "user", "content": "y" * 101}, scope="s", thread="t"),
            "max_message_chars",
        ),
        (
            {"max_messages_per_add": 3},
            lambda m: m.add([{"role": "user", "content": f"m{i}"} for i in range(4)], scope="s", thread="t"),
            "max_messages_per_add",
        ),
        (
            {"max_sentences_per_add": 5},
            lambda m: m.add([{"role": "user", "content": "One. Two. Three."}] * 2, scope="s", thread="t"),
            "max_sentences_per_add",
        ),
        ({"max_query_chars": 50}, lambda m: m.search("q" * 51, scope="s"), "max_query_chars"),
        ({"max_query_chars": 50}, lambda m: m.context("q" * 51, scope="s"), "max_query_chars"),
        (
            {"max_name_chars": 8},
            lambda m: m.add({"role": "user", "content": "x"}, scope="s" * 9, thread="t"),
            "max_name_chars",
        ),
        (
            {"max_name_chars": 8},
            lambda m: m.add({"role": "user", "content": "x", "id": "i" * 9}, scope="s", thread="t"),
            "max_name_chars",
        ),
    ],
    ids=[
        "message-chars",
        "messages-per-add",
        "sentences-per-add",
        "query-chars",
        "context-query-chars",
        "scope-name",
        "message-id",
    ],
)
def test_each_limit_is_enforced_with_a_clear_error_and_nothing_stored(
    limits: dict[str, int], call: Any, setting: str
) -> None:
    with _mem(**limits) as mem:
        before = observable(mem)
        with pytest.raises(sgmem.LimitExceededError) as info:
            call(mem)
        err = info.value
        assert isinstance(err, sgmem.InvalidInputError) and isinstance(err, ValueError)
        assert err.setting == setting and err.size > err.limit == next(iter(limits.values()))
        assert setting in str(err) and str(err.limit) in str(err)
        assert observable(mem) == before


def test_inputs_exactly_at_the_limits_are_accepted() -> None:
    with _mem(
        max_message_chars=100, max_messages_per_add=3, max_sentences_per_add=6, max_query_chars=50, max_name_chars=8
    ) as mem:
        mem.add([{"role": "user", "content": "One. Two."}] * 3, scope="s" * 8, thread="t" * 8)
        mem.add({"role": "user", "content": "z" * 100, "id": "i" * 8}, scope="s", thread="t")
        assert mem.search("q" * 50, scope="s") is not None
        with pytest.raises(sgmem.InvalidInputError, match="k"):
            mem.search("q", scope="s", k=mem.config.limits.max_k + 1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "content",
    [
        ("The quick brown fox jumps over the lazy dog. " * 5000)[:200_000],  # 4,445 sentences
        "x" * 200_000,  # one 200k-character token (a base64 blob, minified JSON)
        "word " * 40_000,  # no punctuation at all
        "mail a.b@c.org now. " * 10_000,  # many e-mail addresses
    ],
    ids=["prose", "one-token", "no-punctuation", "e-mails"],
)
def test_a_message_at_the_default_size_limit_is_handled_in_bounded_time(content: str) -> None:
    assert len(content) <= sgmem.Limits().max_message_chars
    with sgmem.Memory(embedder=FastEmbedder()) as mem:
        # CPU seconds of this process, not wall time: other processes on a busy machine do not stretch it
        t0 = time.process_time()
        res = mem.add({"role": "tool", "content": content}, scope="s", thread="t")
        elapsed = time.process_time() - t0
        assert res.sentences >= 1
        assert "".join(mem.messages(scope="s")[0].content) == content
    assert elapsed < 20, f"{elapsed:.1f} CPU seconds for one {len(content)}-character message"


def test_an_oversized_add_is_refused_before_any_work() -> None:
    """The size checks run first: a refused 10 MB message costs no segmentation or embedding."""
    emb = FastEmbedder()
    calls: list[int] = []
    emb_embed = emb.embed
    emb.embed = lambda texts: calls.append(len(texts)) or emb_embed(texts)  # type: ignore[method-assign]
    with sgmem.Memory(embedder=emb) as mem:
        t0 = time.process_time()  # CPU seconds of this process (a busy machine does not stretch them)
        with pytest.raises(sgmem.LimitExceededError, match="max_message_chars"):
            mem.add({"role": "user", "content": "x" * 10_000_000}, scope="s", thread="t")
        assert time.process_time() - t0 < 1.0
        assert calls == [] and mem.stats().messages == 0
