"""The exact dense scan on a PyTorch device (``Config.dense_device``), run here on ``"cpu"``.

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

pytest.importorskip("torch")

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


def test_the_device_scan_finds_what_the_cpu_scan_finds_as_the_scope_grows_and_shrinks(tmp_path: Path) -> None:
    sessions = _sessions(6)
    cpu = sgmem.Config(dense_scan_threads=2, dense_scan_min_sentences=0)  # the threaded CPU scan
    dev = sgmem.Config(dense_device="cpu")
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
                assert device_mod.mirror(idx, "cpu").rows == idx.n_sentences  # the device path ran
        for mem in (a, b):
            mem.delete(scope="u", thread="t0")  # a new index: a new mirror without the deleted rows
        got = _results(b)
        _same(got, _results(a))
        gone = {f"s0-{s}-{t}" for s in range(0, 6, 2) for t in range(10)}
        assert not gone & {i for hits in got.values() for ids, _ in hits for i in ids}


def test_the_scan_values_equal_the_cpu_scans_to_float32_rounding(tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM)) as mem:
        for i, msgs in enumerate(_sessions(4, seed=3)):
            mem.add(msgs, scope="u", thread=f"t{i}")
        idx = _scope_index(mem)
        q = HashEmbedder(dim=DIM).embed(["the cat and the river"])[0]
        cos, (smax, ssum) = ScanJob(idx, q).result()
        job = start_scan(idx, q, sgmem.Config(dense_device="cpu"))
        assert isinstance(job, device_mod.DeviceScanJob)
        dcos, (dmax, dsum) = job.result()
    assert dcos.dtype == np.float32 and dmax.dtype == np.float32 and dsum.dtype == np.float64
    assert dcos.shape == cos.shape and dmax.shape == smax.shape and dsum.shape == ssum.shape
    np.testing.assert_allclose(dcos, cos, atol=1e-6)
    np.testing.assert_allclose(dmax, smax, atol=1e-6)
    np.testing.assert_allclose(dsum, ssum, atol=1e-5)
    dcos[0] = 9.0  # the caller owns the arrays (the graph channel writes into its copy)


def test_a_mirror_copies_only_the_rows_appended_since_its_last_use(tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "m", embedder=HashEmbedder(dim=DIM)) as mem:
        sessions = _sessions(3, seed=5)
        mem.add(sessions[0], scope="u", thread="t")
        idx = _scope_index(mem)
        m = device_mod.DeviceVectors("cpu", DIM)
        first = m.sync(idx)
        n0 = idx.n_sentences
        assert m.rows == n0 and first.shape == (n0, DIM)
        buf = m._buf
        head = first[:3].clone()
        mem.add(sessions[1], scope="u", thread="t")
        idx = _scope_index(mem)
        second = m.sync(idx)
        assert m.rows == idx.n_sentences > n0
        np.testing.assert_array_equal(second.numpy(), idx.sentence_vectors())
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
