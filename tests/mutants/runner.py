"""Apply each mutation to a copy of the repository, run the tests that should notice it, report the survivors.

The copy holds the files git tracks (and untracked ones it does not ignore), so the working tree is never
touched; each mutation is applied to the copy, its tests run there with the copy first on ``sys.path`` and
``PYTHONPATH`` (subprocesses the tests start import the mutated code too), and the file is put back. A mutation
whose original text is not found exactly once in its file is reported *stale*, and so is one whose tests fail
without it (the baseline): neither says anything about the tests.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Mutant", "Result", "copy_repo", "render", "run_all"]

#: per mutant, the most its tests may run: a mutation that makes a test hang counts as caught by it
DEFAULT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Mutant:
    """One change no test should miss.

    Attributes:
        name: a short unique name (``--only`` takes it).
        path: the file changed, relative to the repository root.
        original: text that occurs exactly once in that file.
        replacement: what it becomes.
        tests: pytest node ids (files or ``file::test``) that must fail with the change.
        check: what the original text makes sure of, in a few words (the report's column).
    """

    name: str
    path: str
    original: str
    replacement: str
    tests: tuple[str, ...]
    check: str


@dataclass(frozen=True)
class Result:
    """What became of one mutant: ``caught`` (by ``by``), ``survived``, or ``stale`` (``by`` says why)."""

    mutant: Mutant
    outcome: str
    by: str
    seconds: float


def copy_repo(src: Path, dst: Path) -> None:
    """Copy the files of the repository at ``src`` that git tracks or would track into ``dst``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=src,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = raw.decode("utf-8", "surrogateescape")
        source = src / rel
        if not source.is_file():  # deleted in the working tree, or a submodule
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
        env.setdefault(key, value)
    return env


_FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.M)


def run_tests(root: Path, tests: Sequence[str], timeout_s: float) -> tuple[str, str]:
    """Run ``tests`` in ``root``: ``("pass", "")``, ``("fail", first failing test)``, ``("timeout", "")`` or
    ``("error", what pytest said)`` (nothing collected, a usage error)."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", *tests]
    # a session of its own: a hung run is ended with every process it started (forked children included)
    proc = subprocess.Popen(
        cmd, cwd=root, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", ""
    if proc.returncode == 0:
        return "pass", ""
    if proc.returncode == 1:
        found = _FAILED.search(out)
        return "fail", found.group(1) if found else "a test"
    return "error", (out.strip().splitlines() or [f"exit {proc.returncode}"])[-1]


def _apply(root: Path, m: Mutant) -> str | None:
    """Write the mutation into the copy; returns the original file text (None: the original is not there once)."""
    path = root / m.path
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if text.count(m.original) != 1 or m.original == m.replacement:
        return None
    path.write_text(text.replace(m.original, m.replacement), encoding="utf-8")
    return text


def run_all(
    mutants: Iterable[Mutant],
    src: Path,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    baseline: bool = True,
    progress: Callable[[str], None] = lambda line: None,
) -> list[Result]:
    """Each mutant applied to a fresh copy of ``src``'s files, in turn; its tests' verdict."""
    results = []
    with tempfile.TemporaryDirectory(prefix="sgmem-mutants-") as tmp:
        root = Path(tmp) / "repo"
        copy_repo(src, root)
        passing: dict[tuple[str, ...], tuple[str, str]] = {}
        for m in mutants:
            t0 = time.monotonic()
            if baseline and m.tests not in passing:
                passing[m.tests] = run_tests(root, m.tests, timeout_s)
            if baseline and passing[m.tests][0] != "pass":
                verdict, detail = passing[m.tests]
                result = Result(m, "stale", f"its tests do not pass unchanged ({verdict} {detail})".strip(), 0.0)
            else:
                original = _apply(root, m)
                if original is None:
                    result = Result(m, "stale", f"the original text is not in {m.path} exactly once", 0.0)
                else:
                    try:
                        verdict, detail = run_tests(root, m.tests, timeout_s)
                    finally:
                        (root / m.path).write_text(original, encoding="utf-8")
                    outcome = {"pass": "survived", "fail": "caught", "timeout": "caught"}.get(verdict, "stale")
                    by = {"timeout": f"{' '.join(m.tests)} (hung past {timeout_s:.0f} s)"}.get(verdict, detail)
                    result = Result(m, outcome, by, time.monotonic() - t0)
            results.append(result)
            progress(f"{result.outcome:8} {m.name} ({result.seconds:.0f} s){': ' + result.by if result.by else ''}")
    return results


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(results: Sequence[Result], command: str, commit: str) -> str:
    """The report: one row per mutant, the survivors and stale ones listed first."""
    counts = {k: sum(r.outcome == k for r in results) for k in ("caught", "survived", "stale")}
    lines = [
        "# Mutation report",
        "",
        f"Written by `{command}` at commit `{commit}`: each mutation applied alone to a copy of the repository,",
        "the tests named for it run there (`pytest -x`). *Caught*: a test failed (or hung); *survived*: every test",
        "passed with the check removed; *stale*: the mutation no longer applies (its text changed) or its tests",
        "fail without it. The list is `tests/mutants/catalog.py`; add a mutant with each new check on a",
        "consistency or security path.",
        "",
        f"**{len(results)} mutants: {counts['caught']} caught, {counts['survived']} survived, "
        f"{counts['stale']} stale.**",
        "",
    ]
    for kind in ("survived", "stale"):
        bad = [r for r in results if r.outcome == kind]
        if bad:
            lines += [f"{kind.capitalize()}:", ""] + [f"- `{r.mutant.name}`: {r.by or r.mutant.check}" for r in bad]
            lines.append("")
    lines += ["| mutant | file | the check it removes | result | caught by | s |", "|---|---|---|---|---|---|"]
    for r in results:
        m = r.mutant
        lines.append(
            f"| `{m.name}` | `{m.path}` | {_cell(m.check)} | {r.outcome} | "
            f"{_cell(r.by) if r.outcome == 'caught' else ''} | {r.seconds:.0f} |"
        )
    return "\n".join(lines) + "\n"
