"""SGMemChatStore with two app hosts on one store (two ``sgmem.Memory`` objects), SQLite and PostgreSQL.

Issue 29 item 2: ``add_message(idx=)`` and ``set_messages`` read the thread,
then wrote what they planned on it: with two hosts a deleted message came back
(``['m0', 'inserted', 'm1', 'm2 SECRET to delete']``) and readers saw lists
that neither host had set. The first two tests put the other host's write
exactly between the read and the write (inside this host's embedding call:
no timing involved); the last races two writers and a reader for a bounded
number of rounds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from llama_index.core.base.llms.types import ChatMessage

import sgmem
from llama_index_sgmem import SGMemChatStore
from tests.reliability.helpers import FastEmbedder

from .helpers import user

pytestmark = pytest.mark.integration


class HookEmbedder(FastEmbedder):
    """Runs ``hook`` once, inside the next embedding call: after the host read the thread, before it writes."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().embed(texts)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    yield request.getfixturevalue("pg_url") if request.param == "postgres" else tmp_path / "store"


@pytest.fixture
def hosts(target: Any) -> Iterator[tuple[SGMemChatStore, SGMemChatStore, HookEmbedder]]:
    hooked = HookEmbedder()
    with sgmem.Memory(target, embedder=hooked) as a, sgmem.Memory(target, embedder=FastEmbedder()) as b:
        yield SGMemChatStore(memory=a, scope="alice"), SGMemChatStore(memory=b, scope="alice"), hooked


def _texts(store: SGMemChatStore, key: str) -> list[str]:
    return [str(m.content) for m in store.get_messages(key)]


def test_an_insert_never_brings_back_a_message_another_host_deleted(
    hosts: tuple[SGMemChatStore, SGMemChatStore, HookEmbedder],
) -> None:
    a, b, hooked = hosts
    a.set_messages("k", [user("m0"), user("m1"), user("m2 SECRET to delete")])
    deleted: list[ChatMessage | None] = []
    hooked.hook = lambda: deleted.append(b.delete_message("k", 2))
    a.add_message("k", user("inserted"), idx=1)
    assert deleted and deleted[0] is not None and deleted[0].content == "m2 SECRET to delete"
    assert _texts(a, "k") == _texts(b, "k") == ["m0", "inserted", "m1"]


def test_set_messages_leaves_the_list_it_set_when_another_host_replaced_the_thread_meanwhile(
    hosts: tuple[SGMemChatStore, SGMemChatStore, HookEmbedder],
) -> None:
    a, b, hooked = hosts
    a.set_messages("k", [user("x"), user("y")])
    # host a reads [x, y] and plans to append z; host b sets [p, q] before a writes
    hooked.hook = lambda: b.set_messages("k", [user("p"), user("q")])
    a.set_messages("k", [user("x"), user("y"), user("z")])
    assert _texts(b, "k") == ["x", "y", "z"]  # not ['p', 'q', 'z'], a list no host set


def test_two_hosts_setting_a_thread_and_a_reader_only_ever_see_lists_a_host_set(target: Any) -> None:
    rounds = 12
    lists = {
        "a": [["a0"], ["a0", "a1"], ["a0", "a1", "a2"], ["s0", "s1"], ["s0", "s1", "a3"]],
        "b": [["b0"], ["b0", "b1"], ["s0"], ["s0", "s1", "b2"], ["a0", "a1", "b3"]],
    }
    allowed = {()} | {tuple(x) for v in lists.values() for x in v}
    seen: list[tuple[str, ...]] = []
    errors: list[BaseException] = []
    with sgmem.Memory(target, embedder=FastEmbedder()) as ma, sgmem.Memory(target, embedder=FastEmbedder()) as mb:
        stores = {"a": SGMemChatStore(memory=ma, scope="s"), "b": SGMemChatStore(memory=mb, scope="s")}
        start = threading.Barrier(3)
        writing = [2]
        lock = threading.Lock()

        def writer(host: str) -> None:
            try:
                start.wait()
                for r in range(rounds):
                    stores[host].set_messages("k", [user(t) for t in lists[host][r % len(lists[host])]])
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                with lock:
                    writing[0] -= 1

        threads = [threading.Thread(target=writer, args=(h,)) for h in stores]
        for t in threads:
            t.start()
        start.wait()
        while True:
            with lock:
                last = writing[0] == 0
            seen.append(tuple(_texts(stores["b"], "k")))
            if last:
                break
        for t in threads:
            t.join(timeout=300)
    assert not errors
    assert set(seen) <= allowed, sorted(set(seen) - allowed)
    assert seen[-1] in allowed and seen[-1] != ()


def test_inserts_racing_deletes_on_two_hosts_never_bring_a_deleted_message_back(target: Any) -> None:
    rounds = 8
    with sgmem.Memory(target, embedder=FastEmbedder()) as ma, sgmem.Memory(target, embedder=FastEmbedder()) as mb:
        a, b = SGMemChatStore(memory=ma, scope="s"), SGMemChatStore(memory=mb, scope="s")
        for r in range(rounds):
            key = f"k{r}"
            a.set_messages(key, [user(f"{key} m{i}") for i in range(3)])
            start = threading.Barrier(2)
            deleted: list[ChatMessage | None] = []
            errors: list[BaseException] = []

            def insert(key: str, start: threading.Barrier, errors: list[BaseException]) -> None:
                try:
                    start.wait()
                    a.add_message(key, user(f"{key} inserted"), idx=1)
                except BaseException as exc:  # noqa: BLE001 - reported by the test
                    errors.append(exc)

            t = threading.Thread(target=insert, args=(key, start, errors))
            t.start()
            start.wait()
            deleted.append(b.delete_message(key, -1))
            t.join(timeout=300)
            assert not errors and not t.is_alive()
            final = _texts(b, key)
            gone = deleted[0]
            assert gone is not None and str(gone.content) not in final, (final, gone)
            # either order of the two calls: the delete took the last message before or after the insert
            assert final in ([f"{key} m0", f"{key} inserted", f"{key} m1"],), final
