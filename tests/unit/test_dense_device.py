"""The exact dense scan on a PyTorch device (``Config.dense_device``), run on ``"cpu"`` (and on ``"cuda"``
where PyTorch sees a GPU).

What a user would notice if it went wrong: other hits or scores than the
default CPU scan (wrong per-turn reductions), hits missing the messages added
since the last search (a mirror not kept up to date), deleted messages still
found, or a Memory that opens with a device the machine does not have and
fails at the first search instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sgmem
from sgmem.errors import ConfigError
from sgmem.retrieval import device as device_mod
from sgmem.retrieval.dense import ScanJob, start_scan

from .helpers import HashEmbedder, topic_sessions

torch = pytest.importorskip("torch")

#: the devices the scan is checked on: PyTorch's CPU everywhere, a GPU where there is one
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]

DIM = 16
MODES = ("hybrid", "vector", "graph", "pyramid")
QUERIES = ("the cat and the tuna", "Berlin piano", "what came up on day 3", "keyboard river garden")


def _sessions(n: int, seed: int = 0) -> list[list[dict[str, Any]]]:
    """Turns of one, two and three sentences (runs of unequal length, which the reductions must respect)."""
    out = topic_sessions(n, per=10, seed=seed)
    for msgs in out:
        for t, m in enumerate(msgs):
            if t % 3 == 0:
                m["content"] = m["content"].split(". Then")[0] + "."
            elif t % 3 == 1:
                m["content"] += " Nobody expected the river."
    return out


def _results(mem: sgmem.Memory) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    return {
        (mode, q): [(tuple(h.message_ids), h.score) for h in mem.search(q, scope="u", k=8, mode=mode)]
        for mode in MODES
        for q in QUERIES
    }


def _same(got: dict[Any, Any], want: dict[Any, Any]) -> None:
    """The same hits in the same order, scores equal to float32 rounding (summed in another order)."""
    assert got.keys() == want.keys()
    for key in want:
        assert [ids for ids, _ in got[key]] == [ids for ids, _ in want[key]], key
        np.testing.assert_allclose([s for _, s in got[key]], [s for _, s in want[key]], atol=1e-5, err_msg=str(key))


def _scope_index(mem: sgmem.Memory) -> Any:
    return mem._index(mem._store.require_scope("u"))


@pytest.mark.parametrize("device", DEVICES)
def test_the_device_scan_finds_what_the_cpu_scan_finds_as_the_scope_grows_and_shrinks(
    tmp_path: Path, device: str
) -> None:
    sessions = _sessions(6)
    cpu = sgmem.Config(dense_scan_threads=2, dense_scan_min_sentences=0)  # the threaded CPU scan
    dev = sgmem.Config(dense_device=device, dense_scan_min_sentences=0)  # the device at any size
    with (
        sgmem.Memory(tmp_path / "cpu", embedder=HashEmbedder(dim=DIM), config=cpu) as a,
        sgmem.Memory(tmp_path / "dev", embedder=HashEmbedder(dim=DIM), config=dev) as b,
    ):
        for step, msgs in enumerate(sessions):
            for mem in (a, b):
                mem.add(msgs, scope="u", thread=f"t{step % 2}")
            if step in (2, 5):  # a search between adds: the mirror must take the rows added since
                _same(_results(b), _results(a))
                idx = _scope_index(b)
                assert device_mod.mirror(idx, device).rows == idx.n_sentences  # the device path ran
        for mem in (a, b):
            mem.delete(scope="u", thread="t0")  # a new index: a new mirror without the deleted rows
        got = _results(b)
        _same(got, _results(a))
        gone = {f"s0-{s}-{t}" for s in range(0, 6, 2) for t in range(10)}
        assert not gone & {i for hits in got.values() for ids, _ in hits for i in ids}


@pytest.mark.parametrize("device", DEVICES)
def test_the_scan_values_equal_the_cpu_scans_to_float32_rounding(tmp_path: Path, device: str) -> None:
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM)) as mem:
        for i, msgs in enumerate(_sessions(4, seed=3)):
            mem.add(msgs, scope="u", thread=f"t{i}")
        idx = _scope_index(mem)
        q = HashEmbedder(dim=DIM).embed(["the cat and the river"])[0]
        cos, (smax, ssum) = ScanJob(idx, q).result()
        job = start_scan(idx, q, sgmem.Config(dense_device=device, dense_scan_min_sentences=0))
        assert isinstance(job, device_mod.DeviceScanJob)
        dcos, (dmax, dsum) = job.result()
    assert dcos.dtype == np.float32 and dmax.dtype == np.float32 and dsum.dtype == np.float64
    assert dcos.shape == cos.shape and dmax.shape == smax.shape and dsum.shape == ssum.shape
    np.testing.assert_allclose(dcos, cos, atol=1e-6)
    np.testing.assert_allclose(dmax, smax, atol=1e-6)
    np.testing.assert_allclose(dsum, ssum, atol=1e-5)
    dcos[0] = 9.0  # the caller owns the arrays (the graph channel writes into its copy)


@pytest.mark.parametrize("device", DEVICES)
def test_a_mirror_copies_only_the_rows_appended_since_its_last_use(tmp_path: Path, device: str) -> None:
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM)) as mem:
        sessions = _sessions(3, seed=5)
        mem.add(sessions[0], scope="u", thread="t")
        idx = _scope_index(mem)
        m = device_mod.DeviceVectors(device, DIM)
        first = m.sync(idx)
        n0 = idx.n_sentences
        assert m.rows == n0 and first.shape == (n0, DIM)
        buf = m._buf
        head = first[:3].clone()
        mem.add(sessions[1], scope="u", thread="t")
        idx = _scope_index(mem)
        second = m.sync(idx)
        assert m.rows == idx.n_sentences > n0
        np.testing.assert_array_equal(second.cpu().numpy(), idx.sentence_vectors())
        assert (second[:3] == head).all()
        assert m._buf is not buf or m._buf.shape[0] >= idx.n_sentences  # grown by GROWTH when needed
        assert m.nbytes() >= idx.n_sentences * DIM * 4


@pytest.mark.parametrize("bad", ["", "  ", 3, ["cuda"]])
def test_a_malformed_device_is_a_config_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match="Config.dense_device"):
        sgmem.Config(dense_device=bad)


@pytest.mark.parametrize("device", ["cuda:7", "no-such-device", "xla"])
def test_a_device_this_machine_lacks_fails_when_the_memory_opens_and_creates_nothing(
    tmp_path: Path, device: str
) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.device_count() > 7:  # pragma: no cover - a large GPU host
        pytest.skip("this machine has that device")
    path = tmp_path / "m"
    with pytest.raises(ConfigError, match="Config.dense_device"):
        sgmem.Memory(path, embedder=HashEmbedder(dim=DIM), config=sgmem.Config(dense_device=device))
    assert not path.exists()


class _OnDevice(HashEmbedder):
    """An embedder that says which PyTorch device its model runs on (as SentenceTransformerEmbedder does)."""

    def __init__(self, device: str) -> None:
        super().__init__(dim=DIM)
        self.device = device


def test_auto_scans_on_the_embedders_accelerator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default ``dense_device="auto"`` follows an embedder whose model runs on a GPU: the Memory's
    config names that device and its searches scan there, with the CPU scan's hits. PyTorch's CPU stands
    in for the GPU here (taken as an accelerator for this test)."""
    monkeypatch.setattr(device_mod, "ACCELERATORS", (*device_mod.ACCELERATORS, "cpu"))
    sessions = _sessions(3, seed=7)
    with (
        sgmem.Memory(tmp_path / "gpu", embedder=_OnDevice("cpu"), config=sgmem.Config(dense_scan_min_sentences=0)) as b,
        sgmem.Memory(tmp_path / "ref", embedder=HashEmbedder(dim=DIM), config=sgmem.Config(dense_device=None)) as a,
    ):
        assert sgmem.Config().dense_device == "auto" and b.config.dense_device == "cpu"
        for i, msgs in enumerate(sessions):
            for mem in (a, b):
                mem.add(msgs, scope="u", thread=f"t{i}")
        _same(_results(b), _results(a))
        idx = _scope_index(b)
        assert device_mod.mirror(idx, "cpu").rows == idx.n_sentences  # the scan ran on the device


@pytest.mark.parametrize(
    ("embedder_device", "want"),
    [
        (None, None),  # no device attribute: an API or ONNX embedder
        ("cpu", None),  # a model on the CPU: FAISS's CPU scan, as before
        ("cuda:0", "cuda:0" if torch.cuda.is_available() else None),  # a GPU PyTorch lacks here: the CPU scan
        ("tpu", None),
    ],
)
def test_auto_keeps_the_cpu_scan_unless_the_embedder_runs_on_a_usable_gpu(
    tmp_path: Path, embedder_device: str | None, want: str | None
) -> None:
    emb = HashEmbedder(dim=DIM) if embedder_device is None else _OnDevice(embedder_device)
    with sgmem.Memory(tmp_path / "m", embedder=emb, config=sgmem.Config(dense_scan_min_sentences=0)) as mem:
        assert mem.config.dense_device == want
        mem.add(_sessions(1)[0], scope="u", thread="t")
        assert mem.search("the cat and the tuna", scope="u", k=3)
        idx = _scope_index(mem)
        assert (idx in device_mod._MIRRORS) == (want is not None)


def test_the_default_embedder_reports_its_device() -> None:
    from sgmem.embed.minilm import SentenceTransformerEmbedder

    assert SentenceTransformerEmbedder(dim=384).device == "cpu"
    assert SentenceTransformerEmbedder(dim=384, device="cuda:1").device == "cuda:1"


def test_an_unresolved_auto_setting_scans_on_the_cpu(tmp_path: Path) -> None:
    """A retriever built from a fresh ``Config()`` (``dense_device="auto"``, which only a Memory resolves)
    runs the CPU scan, with the CPU scan's hits."""
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM)) as mem:
        for i, msgs in enumerate(_sessions(2, seed=9)):
            mem.add(msgs, scope="u", thread=f"t{i}")
        want = _results(mem)
        idx = _scope_index(mem)
        q = HashEmbedder(dim=DIM).embed(["Berlin piano"])[0]
        assert isinstance(start_scan(idx, q, sgmem.Config()), ScanJob)
        mem._retriever = type(mem._retriever)(sgmem.Config())
        assert _results(mem) == want
        assert idx not in device_mod._MIRRORS


@pytest.mark.parametrize("device", DEVICES)
def test_a_scope_below_the_scan_threshold_scans_on_the_cpu(tmp_path: Path, device: str) -> None:
    """[D] The device takes the scan from ``dense_scan_min_sentences`` sentences on: a small scope's CPU
    scan costs less than a device's launch and copy back, and keeps no device copy of its vectors."""
    config = sgmem.Config(dense_device=device)  # the default threshold (50k) is far above this scope
    with (
        sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM), config=config) as mem,
        sgmem.Memory(tmp_path / "ref", embedder=HashEmbedder(dim=DIM), config=sgmem.Config(dense_device=None)) as ref,
    ):
        for i, msgs in enumerate(_sessions(2, seed=11)):
            for m in (mem, ref):
                m.add(msgs, scope="u", thread=f"t{i}")
        assert _results(mem) == _results(ref)  # the CPU scan's very scores
        idx = _scope_index(mem)
        assert idx not in device_mod._MIRRORS
        n = idx.n_sentences
        q = HashEmbedder(dim=DIM).embed(["keyboard river"])[0]
        assert isinstance(
            start_scan(idx, q, sgmem.Config(dense_device=device, dense_scan_min_sentences=n + 1)), ScanJob
        )
        job = start_scan(idx, q, sgmem.Config(dense_device=device, dense_scan_min_sentences=n))
        assert isinstance(job, device_mod.DeviceScanJob)
        job.result()
