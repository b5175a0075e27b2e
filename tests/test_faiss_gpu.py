"""PrivateFaissIndex on a GPU: built and trained on the CPU, then copied, so it answers like the CPU index.

The real-GPU test needs the FAISS GPU build (``faiss-gpu-cu12``) and a visible GPU and is skipped
without them; the others run the GPU code path with FAISS's GPU copy functions stood in by
recorders (the "GPU" index is the CPU one), to check the order of operations here.
"""

from __future__ import annotations

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

import private_vectors.integrations.faiss as pv_faiss  # noqa: E402
from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.errors import InvalidParameterError  # noqa: E402
from private_vectors.integrations.faiss import PrivateFaissIndex  # noqa: E402

KEY = "faiss-gpu-test-key-8Hq2Lw0v"
TEXTS = [f"note {i}: the {w} of sample {i % 7} was measured twice" for i, w in
         enumerate(["weight", "height", "length", "volume", "density", "colour"] * 20)]
QUERIES = ["weight of sample 3", "colour measured", "volume twice"]


def _embedding() -> PrivateEmbedding:
    return PrivateEmbedding(model="fake:32", eps=10, key=KEY, sanitize=None, key_salt=bytes(range(16)))


def _search(index: PrivateFaissIndex) -> tuple[np.ndarray, np.ndarray]:
    return index.search(QUERIES, k=5)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """FAISS's GPU entry points as recorders: the copy records whether the index was trained."""
    calls: dict[str, list[bool]] = {"to_gpu": [], "to_cpu": []}

    def to_gpu(res: object, device: int, index: object) -> object:
        calls["to_gpu"].append(bool(index.is_trained))  # type: ignore[attr-defined]
        return index

    def to_cpu(index: object) -> object:
        calls["to_cpu"].append(True)
        return index

    monkeypatch.setattr(faiss, "StandardGpuResources", lambda: object(), raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu", to_gpu, raising=False)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", to_cpu, raising=False)
    monkeypatch.setattr(pv_faiss, "gpu_available", lambda: True)
    return calls


@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_the_gpu_path_copies_a_trained_index_and_answers_like_the_cpu(kind: str, fake_gpu: dict[str, list[bool]],
                                                                      tmp_path: object) -> None:
    cpu = PrivateFaissIndex(_embedding(), kind=kind, nlist=4, use_gpu=False)
    cpu.add_texts(TEXTS)
    gpu = PrivateFaissIndex(_embedding(), kind=kind, nlist=4, use_gpu=True)
    gpu.add_texts(TEXTS)
    assert fake_gpu["to_gpu"] == [True]  # copied once, after training
    (cs, ci), (gs, gi) = _search(cpu), _search(gpu)
    np.testing.assert_array_equal(ci, gi)
    np.testing.assert_allclose(cs, gs, rtol=1e-5)
    gpu.save(tmp_path)  # type: ignore[arg-type]
    assert fake_gpu["to_cpu"]  # written from a CPU copy
    again = PrivateFaissIndex.load(tmp_path, _embedding(), use_gpu=True)  # type: ignore[arg-type]
    assert fake_gpu["to_gpu"] == [True, True]
    np.testing.assert_array_equal(_search(again)[1], ci)


def test_hnsw_stays_on_the_cpu(fake_gpu: dict[str, list[bool]]) -> None:
    with pytest.raises(InvalidParameterError, match="use_gpu"):
        PrivateFaissIndex(_embedding(), kind="hnsw", use_gpu=True)
    auto = PrivateFaissIndex(_embedding(), kind="hnsw", use_gpu="auto")
    auto.add_texts(TEXTS[:20])
    assert not auto.use_gpu and fake_gpu["to_gpu"] == []


@pytest.mark.skipif(not pv_faiss.gpu_available() if hasattr(faiss, "StandardGpuResources") else True,
                    reason="needs the FAISS GPU build (pip install 'private-vectors[faiss-gpu]') and a visible GPU")
@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_a_real_gpu_index_answers_like_the_cpu_index(kind: str) -> None:  # pragma: no cover - no GPU here
    cpu = PrivateFaissIndex(_embedding(), kind=kind, nlist=4, use_gpu=False)
    gpu = PrivateFaissIndex(_embedding(), kind=kind, nlist=4, use_gpu=True)
    cpu.add_texts(TEXTS)
    gpu.add_texts(TEXTS)
    (cs, ci), (gs, gi) = _search(cpu), _search(gpu)
    np.testing.assert_allclose(cs, gs, rtol=1e-4, atol=1e-5)
    assert (ci == gi).mean() > 0.95  # equal up to ties
    np.testing.assert_allclose(gpu.stored_vectors(), cpu.stored_vectors(), atol=1e-6)
