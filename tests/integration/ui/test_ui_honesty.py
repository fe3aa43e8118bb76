"""The inspector's search page does not mislead (the frictions a new user met, each as what they now see).

Channel bars were scaled within each hit (a lexical 0.5 drew a full bar where it was the hit's largest); hits
came in the ranking score's order under a gauge of relevance (hit 4 at 0.230 above hit 5 at 0.394); a broad
question's hits showed in red "-0.055 above the cutoff" with no word why; "14 hits" when k was 10; generated
facts listed beside the turns they came from. The page shows hits in the order ``Memory.search`` returns them,
with the gauge on the measure that orders them, whichever it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from starlette.testclient import TestClient  # noqa: E402

import sgmem  # noqa: E402
from sgmem.ui import create_app  # noqa: E402
from sgmem.ui.guard import allowed_hosts  # noqa: E402
from tests.integration.ui.sample import fill  # noqa: E402

BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as memory:
        yield fill(memory)


@pytest.fixture
def client(mem: sgmem.Memory) -> TestClient:
    return TestClient(create_app(mem, hosts=allowed_hosts("127.0.0.1", 8765)), base_url=BASE)


def _hits(html: str) -> list[str]:
    body = html.split('<ol class="hits" id="hits">', 1)[1].split("</ol>", 1)[0]
    return body.split('<li class="hit')[1:]


def _gauge(hit: str) -> float:
    return float(re.search(r'class="rel-meter order-meter"[^>]*value="([0-9.e-]+)"', hit).group(1))  # type: ignore[union-attr]


def test_channel_bars_share_one_scale_across_hits(client: TestClient) -> None:
    html = client.get("/search", params={"s": "alice", "q": "balcony", "min_score": "0"}).text
    rows = re.findall(
        r'<td class="num">(-?[0-9.]+)</td><td class="barcell"><meter min="0" max="1" value="([0-9.]+)"', html
    )
    assert len(rows) > 10
    ratios = {round(float(share) / abs(float(value)), 3) for value, share in rows if abs(float(value)) > 1e-3}
    assert len(ratios) == 1, ratios  # one scale: a bar's length is its value over the same number everywhere
    half = [float(share) for value, share in rows if 0.0 < float(value) <= 0.5]
    assert half and all(s < 0.75 for s in half), "a channel at 0.5 or less must not draw a (nearly) full bar"


def test_hits_keep_search_order_and_the_gauge_shows_what_orders_them(client: TestClient, mem: sgmem.Memory) -> None:
    for q in ("balcony", "What is my cat called?", "brother"):
        expected = mem.search(q, scope="alice", min_score=0)
        html = client.get("/search", params={"s": "alice", "q": q, "min_score": "0"}).text
        hits = _hits(html)
        ids = [re.search(r"m=([^&\"]+)", h).group(1) for h in hits]  # type: ignore[union-attr]
        assert ids == [h.message_ids[0] for h in expected], q  # the order search returned
        gauges = [_gauge(h) for h in hits]
        assert gauges == sorted(gauges, reverse=True), (q, gauges)  # the gauge falls down the list
        order = re.search(r'data-order="([a-z]+)"', hits[0]).group(1)  # type: ignore[union-attr]
        assert order in ("relevance", "score")
        assert ("by relevance" if order == "relevance" else "by the mode's ranking score") in html


def test_a_page_of_hits_ordered_by_relevance_gauges_relevance() -> None:
    """What the page shows once search orders by relevance (the measure that cuts): the gauge is relevance."""
    from sgmem.ui.app import _arrange

    hits = [
        sgmem.Hit(text=t, score=s, kind="turn", message_ids=(i,), thread="t", at=None, why={}, relevance=r)  # type: ignore[arg-type]
        for t, s, r, i in (("a", 1.0, 0.6, "m1"), ("b", 2.0, 0.5, "m2"), ("c", 0.5, 0.4, "m3"))
    ]
    view = _arrange(hits, 10, lambda ids: [])
    assert view["order"] == "relevance"
    assert [e["gauge"] for e in view["hits"]] == [0.6, 0.5, 0.4]


def test_a_broad_question_is_labelled_and_its_kept_hits_are_not_shown_as_failures(client: TestClient) -> None:
    html = client.get("/search", params={"s": "alice", "q": "What do you know about me?"}).text
    assert 'id="broad"' in html and "broad question about you" in html
    hits = _hits(html)
    assert hits
    for hit in hits:
        rel = float(re.search(r'class="rel">([0-9.]+)<', hit).group(1))  # type: ignore[union-attr]
        cutoff = float(re.search(r"cutoff: relevance ≥ ([0-9.]+)", html).group(1))  # type: ignore[union-attr]
        if rel < cutoff:
            assert "kept: broad question" in hit and "above the cutoff" not in hit


def test_k_is_respected_and_generated_memory_sits_with_its_turns(client: TestClient, mem: sgmem.Memory) -> None:
    html = client.get("/search", params={"s": "alice", "q": "balcony", "kinds": "all", "k": "3", "min_score": "0"}).text
    top = _hits(html) + (
        html.split('<ol class="hits" id="alone">', 1)[1].split('<li class="hit"')[1:] if 'id="alone"' in html else []
    )
    assert len(top) <= 3
    assert re.search(r"\d+ hits of at most k = 3", html)
    facts = mem.search("balcony", scope="alice", kinds="fact", min_score=0)
    own = next(f for f in facts if f.message_ids == ("c1-3",))
    first = _hits(html)[0]
    assert "m=c1-3" in first  # the balcony turn...
    assert f"{own.memory_id}: versions" in first and "generated from this turn" in first  # ...with its fact
    assert html.count(f"{own.memory_id}: versions") == 1  # not listed again beside it
