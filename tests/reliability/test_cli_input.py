"""The ``sgmem`` command with hostile arguments and files: exit code 2, one clear line, no traceback,
and a store left as it was.

The CLI opens ``sgmem.Memory(path)`` with the default embedder; here ``sgmem.cli._memory`` is
pointed at the fast test embedder so hundreds of invocations stay quick (the embedder is not
what is under test).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sgmem
from sgmem import cli

from .conftest import record_figure
from .helpers import FastEmbedder, observable

EXAMPLES: Counter[str] = Counter()
SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=FastEmbedder()))
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        mem.add([{"role": "user", "content": "I keep bees on the roof.", "id": "m1"}], scope="base", thread="t")
    return store


def _observe(store: Path) -> Any:
    with sgmem.Memory(store, embedder=FastEmbedder()) as mem:
        return observable(mem)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _assert_clean_failure(code: int, err: str) -> None:
    assert code == 2, f"exit {code}: {err}"
    assert "Traceback" not in err
    assert err.startswith(("sgmem: error:", "usage:")), err
    assert len(err.strip()) > len("sgmem: error:")


cli_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)
argument = st.one_of(
    cli_text,
    st.sampled_from(
        [
            "--k",
            "--mode",
            "--budget",
            "--scope",
            "--json",
            "--thread",
            "-1",
            "0",
            "1e9",
            "nan",
            "",
            "hybrid",
            "pyramid",
            "--",
            "-",
            "--help-me",
        ]
    ),
    st.integers(-10, 10).map(str),
)


@pytest.mark.parametrize("cmd", ["search", "context", "stats"])
@SETTINGS
@given(args=st.lists(argument, max_size=6))
@example(args=["", "--scope", "base"])
@example(args=["bees", "--scope", "base", "--k", "0"])
@example(args=["bees", "--scope", "base", "--mode", "nonsense"])
@example(args=["bees", "--scope", "base", "--budget", "-5"])
@example(args=["bees", "--scope", " "])
@example(args=["bees", "--scope", "\u202e"])
def test_read_commands_answer_or_fail_cleanly(
    cli_store: Path, capsys: pytest.CaptureFixture[str], cmd: str, args: list[str]
) -> None:
    EXAMPLES[f"cli {cmd}"] += 1
    before = _observe(cli_store)
    code, out, err = _run([cmd, *args, "--path", str(cli_store)], capsys)
    if code != 0:
        _assert_clean_failure(code, err)
    assert _observe(cli_store) == before


_file_json = st.one_of(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | cli_text,
        lambda c: st.lists(c, max_size=3) | st.dictionaries(cli_text, c, max_size=3),
        max_leaves=10,
    ),
    st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "robot"]), "content": cli_text},
            optional={"id": st.sampled_from(["m1", "a", "a"]), "at": cli_text, "thread": cli_text},
        ),
        max_size=4,
    ),
)


@SETTINGS
@given(data=_file_json, suffix=st.sampled_from([".json", ".jsonl"]), thread=st.one_of(st.none(), cli_text))
@example(
    data={"threads": [{"thread": "x", "messages": [{"role": "user", "content": "ok"}]}, {"oops": 1}]},
    suffix=".json",
    thread=None,
)
@example(data={"threads": "nope"}, suffix=".json", thread=None)
@example(data=[{"role": "user", "content": "fine"}, 7], suffix=".jsonl", thread=None)
@example(
    data={"t1": [{"role": "user", "content": "first ok"}], "t2": [{"role": "user", "content": ""}]},
    suffix=".json",
    thread=None,
)
@example(
    data={"t1": [{"role": "user", "content": "dup", "id": "a"}], "t2": [{"role": "user", "content": "x", "id": "a"}]},
    suffix=".json",
    thread=None,
)
@example(data=[{"role": "user", "content": "clash with a stored id", "id": "m1"}], suffix=".json", thread=None)
def test_ingest_of_any_file_stores_all_or_nothing(
    cli_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Any, suffix: str, thread: Any
) -> None:
    EXAMPLES["cli ingest"] += 1
    f = tmp_path / f"input{suffix}"
    if suffix == ".jsonl" and isinstance(data, list):
        f.write_text("\n".join(json.dumps(r) for r in data), encoding="utf-8")
    else:
        f.write_text(json.dumps(data), encoding="utf-8")
    before = _observe(cli_store)
    argv = ["ingest", str(f), "--scope", "base", "--path", str(cli_store)]
    if thread is not None:
        argv += ["--thread", thread]
    code, out, err = _run(argv, capsys)
    if code != 0:
        _assert_clean_failure(code, err)
        assert _observe(cli_store) == before, "a failed ingest stored part of the file"
    else:
        assert "ingested" in out


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe not utf-8 \x80", b"", b"{", b"[1, 2", b"\x00\x00\x00"],
    ids=["binary", "empty", "open-brace", "truncated", "nul"],
)
def test_ingest_of_unreadable_files_fails_cleanly(
    cli_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    f = tmp_path / "bad.json"
    f.write_bytes(content)
    before = _observe(cli_store)
    code, _, err = _run(["ingest", str(f), "--scope", "base", "--path", str(cli_store)], capsys)
    _assert_clean_failure(code, err)
    assert _observe(cli_store) == before


def test_missing_files_and_directories_fail_cleanly(
    cli_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["ingest", str(tmp_path / "nope.json"), "--scope", "s", "--path", str(cli_store)],
        ["ingest", str(tmp_path), "--scope", "s", "--path", str(cli_store)],  # a directory, not a file
        ["eval", "locomo", str(tmp_path / "nope.json")],
        ["stats", "--path", str(cli_store / "sgmem.db")],  # a file where a store directory is expected
    ):
        code, _, err = _run(argv, capsys)
        _assert_clean_failure(code, err)


def test_a_damaged_store_is_reported_by_the_cli(cli_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (cli_store / "sgmem.db").write_bytes(b"not a database at all" * 50)
    code, _, err = _run(["stats", "--path", str(cli_store)], capsys)
    _assert_clean_failure(code, err)
    assert "backup" in err


def test_zz_record_examples() -> None:
    for name, n in sorted(EXAMPLES.items()):
        record_figure(f"hypothesis examples: {name}", n)
