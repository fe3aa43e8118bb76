"""The tutorial notebooks run top to bottom, offline, with no API key, and are stored clean.

Each notebook is executed with ``nbclient`` in a kernel started from this
test's own interpreter (a temporary kernelspec pointing at ``sys.executable``,
so the kernel sees exactly the packages under test); any cell error fails the
test. The notebooks check their own key claims with ``assert`` cells.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NAMES = [
    "01_quickstart.ipynb",
    "02_langchain_agent.ipynb",
    "03_llamaindex.ipynb",
    "04_inside_the_memory.ipynb",
    "05_agent_tools.ipynb",
]
KERNEL = "sgmem-notebook-test"


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sgmem_notebook_build", NOTEBOOK_DIR / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernelspec that runs ipykernel in this very interpreter (the venv under test)."""
    root = tmp_path_factory.mktemp("jupyter")
    spec_dir = root / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "sgmem (tests)",
        "language": "python",
        "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", os.pathsep.join([str(root), os.environ.get("JUPYTER_PATH", "")]).rstrip(os.pathsep))
        yield KERNEL


def test_every_notebook_is_stored_without_outputs_and_matches_its_source() -> None:
    build = _build_module()
    assert sorted(build.NOTEBOOKS) == NAMES
    for name in NAMES:
        text = (NOTEBOOK_DIR / name).read_text(encoding="utf-8")
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, name
        assert all(c.outputs == [] and c.execution_count is None for c in code), f"{name} holds outputs"
        assert text == build.render(name), f"{name} differs from notebooks/build.py: run python notebooks/build.py"


def test_the_kernel_is_the_interpreter_under_test(kernel_name: str) -> None:
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys, sgmem; print(sys.executable)")])
    nbclient.NotebookClient(probe, kernel_name=kernel_name, timeout=120).execute()
    out = [o["text"] for o in probe.cells[0].outputs if o.get("name") == "stdout"]
    assert "".join(out).strip() == sys.executable


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom(name: str, kernel_name: str, tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name=kernel_name, timeout=600, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors
