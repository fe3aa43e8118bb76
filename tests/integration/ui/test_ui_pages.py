"""The inspector's pages and walls through Starlette's test client (no browser): what each page shows, what
a foreign Host or Origin gets, and that writes exist only with ``write=True`` and the run's token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from starlette.testclient import TestClient  # noqa: E402

import sgmem  # noqa: E402
from sgmem.text.tokens import count_tokens  # noqa: E402
from sgmem.ui import create_app  # noqa: E402
from sgmem.ui.guard import allowed_hosts  # noqa: E402
from tests.integration.ui.sample import ANSWER, QUESTION, fill, make_store  # noqa: E402

BASE = "http://127.0.0.1:8765"
HOSTS = allowed_hosts("127.0.0.1", 8765)
TOKEN = "run-token-0123456789"


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as memory:
        yield fill(memory)


@pytest.fixture
def client(mem: sgmem.Memory) -> TestClient:
    return TestClient(create_app(mem, hosts=HOSTS), base_url=BASE)


def text(html: str) -> str:
    """The page's visible text, tags dropped and whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_scopes_page_lists_every_scope_with_counts(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200
    assert "alice" in r.text and "bob" in r.text
    row = re.search(r"alice (\d+) \d+ (\d+) ", text(r.text))  # scope, threads, sessions, messages
    assert row is not None and row.groups() == ("2", "5")
    assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_scope_page_is_a_timeline_of_its_threads(client: TestClient) -> None:
    page = text(client.get("/scope", params={"s": "alice"}).text)
    assert "2024-03-02 chat-1 3 messages" in page
    assert "2024-05-20 chat-2 2 messages" in page
    assert page.index("chat-1") < page.index("chat-2")
    assert "Rex" not in page  # another scope's message


def test_thread_page_marks_each_sentence_with_its_dialogue_act(client: TestClient) -> None:
    html = client.get("/thread", params={"s": "alice", "t": "chat-1"}).text
    assert 'title="filler">Hi there!</span>' in html
    assert 'title="statement">I adopted a grey cat named Miso.</span>' in html
    assert 'title="question">Do you like cats?</span>' in html
    assert "2024-03-02 10:00" in html and "<b>Alice</b>" in html
    assert "forget" not in html.lower()  # read-only: no write form


def test_search_shows_the_answer_first_with_its_channels_and_the_cutoff(client: TestClient, mem: sgmem.Memory) -> None:
    html = client.get("/search", params={"s": "alice", "q": QUESTION}).text
    hits = html.split('<li class="hit"')[1:]
    expected = mem.search(QUESTION, scope="alice")
    assert len(hits) == len(expected) >= 1
    first = hits[0]
    assert f'<mark class="why-sentence">{ANSWER}</mark>' in first
    channels = re.findall(r'data-channel="([a-z_]+)"', first)
    assert set(channels) == set(expected[0].why["channels"])
    assert f"{expected[0].relevance:.3f}" in first
    assert "thread=chat-1" not in first and "t=chat-1" in first  # the link to its thread
    assert re.search(r"cutoff: relevance ≥ 0\.\d{3}", html)


def test_min_score_is_the_cutoff_and_can_empty_the_result(client: TestClient) -> None:
    html = client.get("/search", params={"s": "alice", "q": QUESTION, "min_score": "0.99"}).text
    assert "cutoff: relevance ≥ 0.990" in html
    assert "No hit reaches the cutoff." in html


def test_bad_search_input_is_a_clear_error_page(client: TestClient) -> None:
    r = client.get("/search", params={"s": "alice", "q": QUESTION, "mode": "magic"})
    assert r.status_code == 400 and "mode must be one of hybrid" in r.text
    r = client.get("/search", params={"s": "alice", "q": QUESTION, "min_score": "high"})
    assert r.status_code == 400 and "min_score must be a number" in r.text


def test_context_page_shows_the_block_exactly_with_its_token_count(client: TestClient, mem: sgmem.Memory) -> None:
    html = client.get("/context", params={"s": "alice", "q": QUESTION, "budget": "300"}).text
    block = mem.context(QUESTION, scope="alice", budget_tokens=300)
    assert block
    from html import escape

    assert f'<pre class="context" id="context">{escape(block)}</pre>' in html
    assert f"{count_tokens(block)} tokens (cl100k_base) of a 300-token budget" in html


def test_generated_memory_shows_its_versions_and_sources(client: TestClient, mem: sgmem.Memory) -> None:
    facts = mem.search("hiking in the Alps", scope="alice", kinds="fact", min_score=0)
    assert facts and facts[0].memory_id
    html = client.get(
        "/search", params={"s": "alice", "q": "hiking in the Alps", "kinds": "all", "min_score": "0"}
    ).text
    assert f"{facts[0].memory_id}: versions" in html
    page = text(client.get("/memory", params={"s": "alice", "id": facts[0].memory_id}).text)
    assert "version 1 · add" in page and facts[0].message_ids[0] in page


def test_a_pinned_scope_hides_the_others(mem: sgmem.Memory) -> None:
    client = TestClient(create_app(mem, hosts=HOSTS, scope="alice"), base_url=BASE)
    assert "bob" not in client.get("/").text
    r = client.get("/thread", params={"s": "bob", "t": "pets"})
    assert r.status_code == 404 and "Rex" not in r.text


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1:9999", "localhost.evil.example:8765", ""])
def test_a_foreign_host_is_refused(client: TestClient, host: str) -> None:
    r = client.get("/search", params={"s": "alice", "q": QUESTION}, headers={"host": host})
    assert r.status_code == 403
    assert ANSWER not in r.text


def test_a_foreign_origin_is_refused_and_a_local_one_answered(client: TestClient) -> None:
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    assert client.get("/", headers={"origin": "null"}).status_code == 403
    assert client.get("/", headers={"origin": "http://localhost:8765"}).status_code == 200
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_read_only_has_no_write_route(client: TestClient, mem: sgmem.Memory) -> None:
    r = client.post("/forget", data={"s": "alice", "message_id": "c1-1", "token": TOKEN})
    assert r.status_code == 404
    assert len(mem.get(scope="alice", message_ids=["c1-1"])) == 1


def test_writes_need_the_token(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    store = make_store(tmp_path / "store", embedder)
    with sgmem.Memory(store, embedder=embedder) as mem:
        client = TestClient(create_app(mem, hosts=HOSTS, write=True, token=TOKEN), base_url=BASE)
        for bad in ({}, {"token": ""}, {"token": "guess"}):
            r = client.post("/forget", data={"s": "alice", "message_id": "c1-1", **bad})
            assert r.status_code == 403
        assert len(mem.get(scope="alice", message_ids=["c1-1"])) == 1
        # the token in a cross-site form is refused too
        r = client.post(
            "/forget",
            data={"s": "alice", "message_id": "c1-1", "token": TOKEN},
            headers={"origin": "http://evil.example"},
        )
        assert r.status_code == 403 and len(mem.get(scope="alice", message_ids=["c1-1"])) == 1
        r = client.post("/forget", data={"s": "alice", "message_id": "c1-1", "token": TOKEN})
        assert r.status_code == 200 and "Forgot message c1-1" in r.text
        assert re.search(r"<th>messages</th><td>1</td>", r.text) and "Scrubbed" in r.text
        assert mem.get(scope="alice", message_ids=["c1-1"]) == []
        r = client.post("/forget", data={"s": "alice", "thread": "chat-2"}, headers={"x-sgmem-token": TOKEN})
        assert r.status_code == 200 and re.search(r"<th>messages</th><td>2</td>", r.text)
        assert mem.threads(scope="alice") == ["chat-1"]


def test_forgetting_a_scope_asks_for_its_name_first(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    store = make_store(tmp_path / "store", embedder)
    with sgmem.Memory(store, embedder=embedder) as mem:
        client = TestClient(create_app(mem, hosts=HOSTS, write=True, token=TOKEN), base_url=BASE)
        r = client.post("/forget", data={"s": "bob", "token": TOKEN})
        assert "Forget the whole scope bob?" in r.text and mem.scopes() == ["alice", "bob"]
        r = client.post("/forget", data={"s": "bob", "token": TOKEN, "confirm": "alice"})
        assert "does not match" in r.text and mem.scopes() == ["alice", "bob"]
        r = client.post("/forget", data={"s": "bob", "token": TOKEN, "confirm": "bob"})
        assert "Forgot scope bob" in r.text and mem.scopes() == ["alice"]


def test_stored_markup_is_shown_as_text(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        evil = 'My cat is <b>Miso</b><script>alert("x")</script> <img src=x onerror=alert(1)>.'
        mem.add(
            [
                {"role": "user", "content": evil, "id": "e-1"},
                {"role": "user", "content": "Miso <b>naps</b>.", "id": "e-2"},
            ],
            scope="eve",
            thread="<i>t</i>",
        )
        client = TestClient(create_app(mem, hosts=HOSTS), base_url=BASE)
        for r in (
            client.get("/thread", params={"s": "eve", "t": "<i>t</i>"}),
            client.get("/search", params={"s": "eve", "q": "cat", "min_score": "0"}),
            client.get("/scope", params={"s": "eve"}),
            client.get("/graph", params={"s": "eve", "m": "e-1"}),
        ):
            assert r.status_code == 200
            assert "<script>" not in r.text and "<img" not in r.text and "<i>t</i>" not in r.text
        assert "&lt;script&gt;" in client.get("/thread", params={"s": "eve", "t": "<i>t</i>"}).text
        graph = client.get("/graph", params={"s": "eve", "m": "e-1"}).text
        assert "<svg" in graph and "Miso &lt;b&gt;naps&lt;/b&gt;." in graph and "<b>naps" not in graph


def test_without_the_extra_the_error_names_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "import sgmem.cli\n"
        "sys.exit(sgmem.cli.main(['ui', '--path', 'unused']))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and 'pip install "sgmem[ui]"' in r.stderr


def test_graph_page_draws_a_hits_links_and_lists_them(client: TestClient, mem: sgmem.Memory) -> None:
    search = client.get("/search", params={"s": "alice", "q": QUESTION}).text
    link = re.search(r'class="graph-link" href="([^"]+)"', search)
    assert link is not None and "m=c1-1" in link.group(1)  # the best hit links to its sentence graph
    r = client.get(link.group(1).replace("&amp;", "&"))
    assert r.status_code == 200
    html = r.text
    assert "<svg" in html and "<script" not in html
    expected = mem.neighbours("c1-1", scope="alice", limit=8)
    rows = html.split('<tr class="link"')[1:]
    assert len(rows) == len(expected) >= 3
    assert {re.search(r'data-kind="([a-z ]+)"', row).group(1) for row in rows} == {  # type: ignore[union-attr]
        "similarity",
        "chronological",
        "same turn",
    }
    chrono = next(x for x in expected if x.kind == "chronological")
    assert chrono.text in text(html) and "c1-2" in html  # the next turn of the thread, drawn and listed
    assert f"{expected[0].cosine:.2f}" in html  # a similarity edge is labelled with its cosine
    assert "Rex" not in html  # another scope's sentence
    assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_graph_page_refuses_another_scopes_message(client: TestClient) -> None:
    r = client.get("/graph", params={"s": "alice", "m": "b-1"})
    assert r.status_code == 400 and "b-1" in r.text and "<svg" not in r.text


def test_thread_page_shows_the_acts_ranking_weighs_in_the_exchange_not_the_word_rules_alone(
    embedder: sgmem.Embedder,
) -> None:
    # "12." alone carries nothing (the word rules: filler); as the reply to "How old is your son?" it is the
    # answer, and ranking weighs it as a statement: the page shows what ranking uses
    with sgmem.Memory(embedder=embedder) as memory:
        memory.add(
            [
                {"role": "assistant", "content": "How old is your son?", "id": "q"},
                {"role": "user", "content": "12.", "id": "a"},
                {"role": "assistant", "content": "Nice. 12.", "id": "b"},
            ],
            scope="s",
            thread="t",
        )
        client = TestClient(create_app(memory, hosts=HOSTS), base_url=BASE)
        html = client.get("/thread", params={"s": "s", "t": "t"}).text
    assert 'title="statement">12.</span>' in html  # the reply
    assert 'title="filler">Nice.</span> <span class="act act-filler" title="filler">12.</span>' in html  # no reply
