"""Smoke run of the row-security cost benchmark at toy size (``pytest -m benchmark``, needs the test server).

It runs end to end as an ordinary role, reports every form against "none" from
the same run, and leaves no schema or role behind. No figure is asserted.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.benchmark, pytest.mark.postgres]


def test_the_three_forms_are_measured_in_one_run_and_cleaned_up() -> None:
    import psycopg

    from benchmarks.row_security import FORMS, render, run
    from tests.pg import server_url

    url = server_url()
    res = run(url, scopes=2, turns=3, rounds=3)
    for form in FORMS:
        assert set(res[form]) == {"add", "search", "messages"} and all(v > 0 for v in res[form].values())
    assert res["signed/plain"]["add"] == pytest.approx(res["signed"]["add"] / res["plain"]["add"])
    assert "signed/none" in render(res)
    with psycopg.connect(url) as c:
        left = c.execute(
            "SELECT (SELECT COUNT(*) FROM pg_namespace WHERE nspname LIKE 'bench_rls_%'), "
            "(SELECT COUNT(*) FROM pg_roles WHERE rolname LIKE 'bench_app_%')"
        ).fetchone()
    assert left == (0, 0)
