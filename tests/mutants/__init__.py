"""Mutation checks: each check on a consistency or security path removed in turn, and the tests that must notice.

``python -m tests.mutants`` applies every mutation of :mod:`tests.mutants.catalog` to a copy of the repository,
runs the tests named for it there, and writes ``tests/mutants/REPORT.md``: which mutants the tests caught and
which survived. It needs no service; run it before a release or after changing a check (about an hour on two
busy cores for the whole list; ``--only NAME`` for one). ``tests/unit/test_mutants.py`` keeps the list in step
with the code and tests the machinery on a toy repository. Tests that read LoCoMo's dev data find it beside the
clone or at ``$SGMEM_LOCOMO_DEV``; PostgreSQL tests need ``$SGMEM_TEST_PG_URL``: without them those tests skip,
and a mutant only they catch is reported surviving.
"""
