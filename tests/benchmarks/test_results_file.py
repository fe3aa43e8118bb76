"""``benchmarks/RESULTS.md`` is what the generator writes from the stored results, and every section says how
it was measured (fast: renders the committed ``benchmarks/results/*.json``, runs no benchmark)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks.parts import PARTS, load, module, render_results, run_command

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _sections(text: str) -> dict[str, str]:
    """``## `` heading → its body."""
    out = {}
    for chunk in re.split(r"(?m)^## ", text)[1:]:
        head, _, body = chunk.partition("\n")
        out[head] = body
    return out


def test_the_committed_results_file_is_what_the_generator_writes_from_the_committed_results() -> None:
    expected = render_results(load(BENCH))
    assert (BENCH / "RESULTS.md").read_text(encoding="utf-8") == expected, (
        "benchmarks/RESULTS.md differs from the stored results: run `python -m benchmarks report`"
    )


def test_every_section_names_the_command_and_date_that_produced_it() -> None:
    text = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    records = load(BENCH)
    sections = _sections(text)
    titles = {}
    for part in PARTS:
        mod = module(part)
        titles[part] = getattr(mod, "TITLE", part) if mod else part
        assert titles[part] in sections, part
    assert set(sections) <= {*titles.values(), "Summary"}
    for part, title in titles.items():
        body = sections[title]
        rec = records.get(part)
        if rec is None:
            assert body.strip().startswith(f"Not run yet: `{run_command(part)}`"), part
            continue
        assert rec["command"].startswith("python -m benchmarks") and rec["commit"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", rec["date"])
        assert f"*Measured {rec['date']} by `{rec['command']}`" in body, part
        assert "Machine:" in body and "load average" in body, part


def test_the_results_file_reads_as_a_report_not_a_lab_notebook() -> None:
    text = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    assert not re.search(r"(?i)\bissue \d+", text)
    assert not re.search(r"(?i)\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) pass\b", text)


def test_report_rewrites_the_file_from_stored_results_and_an_absent_part_says_how_to_run_it(tmp_path: Path) -> None:
    stored = sorted((BENCH / "results").glob("*.json"))
    assert stored, "no stored results"
    keep = stored[0]
    (tmp_path / "results").mkdir()
    shutil.copy(keep, tmp_path / "results" / keep.name)
    assert main(["report", "--dir", str(tmp_path)]) == 0
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    rec = json.loads(keep.read_text(encoding="utf-8"))
    assert f"by `{rec['command']}`" in text
    for part in PARTS:
        if part != rec["part"]:
            assert f"Not run yet: `python -m benchmarks --only {part}`" in text
    # the same stored results give the same file, byte for byte
    first = text
    assert main(["report", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "RESULTS.md").read_text(encoding="utf-8") == first
