"""The mutation list stays in step with the code, and the machinery that runs it tells a caught mutant from a
survivor (``python -m tests.mutants``; its last report is ``tests/mutants/REPORT.md``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.mutants.catalog import MUTANTS
from tests.mutants.runner import Mutant, render, run_all

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutation_still_applies_to_the_code_and_names_tests_that_exist(mutant: Mutant) -> None:
    text = (ROOT / mutant.path).read_text(encoding="utf-8")
    assert text.count(mutant.original) == 1, f"{mutant.name}: its original text is not in {mutant.path} once"
    assert mutant.replacement != mutant.original and mutant.tests and mutant.check
    for test in mutant.tests:
        path, _, name = test.partition("::")
        assert (ROOT / path).is_file(), test
        if name:
            assert f"def {name.split('[')[0]}(" in (ROOT / path).read_text(encoding="utf-8"), test


def test_mutant_names_are_unique() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))


def _toy_repo(root: Path) -> None:
    (root / "toy").mkdir(parents=True)
    (root / "toy" / "__init__.py").write_text("def price(n):\n    # whole euros\n    return max(n, 0) * 2\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_toy.py").write_text(
        "from toy import price\n\n\ndef test_price():\n    assert price(3) == 6\n    assert price(-1) == 0\n"
    )
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True)


@pytest.mark.slow
def test_the_runner_tells_caught_from_survived_and_stale(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _toy_repo(repo)
    tests = ("tests/test_toy.py",)
    mutants = [
        Mutant("no-floor", "toy/__init__.py", "max(n, 0)", "n", tests, "a price is never negative"),
        Mutant("comment", "toy/__init__.py", "# whole euros", "# euros", tests, "nothing"),
        Mutant("gone", "toy/__init__.py", "no such text", "x", tests, "stale"),
        Mutant(
            "hangs",
            "toy/__init__.py",
            "    return max",
            "    while True:\n        pass\n    return max",
            tests,
            "a loop",
        ),
    ]
    results = run_all(mutants, repo, timeout_s=10)
    assert [(r.mutant.name, r.outcome) for r in results] == [
        ("no-floor", "caught"),
        ("comment", "survived"),
        ("gone", "stale"),
        ("hangs", "caught"),
    ]
    assert results[0].by == "tests/test_toy.py::test_price"
    assert (repo / "toy" / "__init__.py").read_text().count("max(n, 0)") == 1  # the repository is never touched
    report = render(results, "python -m tests.mutants", "abc123")
    assert "4 mutants: 2 caught, 1 survived, 1 stale" in report and "- `comment`: nothing" in report
    assert (
        "| `no-floor` | `toy/__init__.py` | a price is never negative | caught | tests/test_toy.py::test_price |"
        in report
    )


def test_the_command_lists_the_mutants() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tests.mutants", "--list"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert [line.split("\t")[0] for line in out.stdout.splitlines()] == [m.name for m in MUTANTS]
