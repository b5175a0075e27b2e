"""The FAISS side of a :class:`~private_vectors.integrations.faiss.PrivateFaissIndex`: the
library, the GPU, and a FAISS index of the store's kind and metric.

An index is built and, for IVF, trained on the CPU and then copied to the GPU (flat and IVF
only: FAISS has no GPU HNSW), so a GPU index holds the same centroids and vectors as the CPU
index of the same data. The functions take the PrivateFaissIndex (``store``) whose kind,
metric and options they read and whose FAISS objects they keep alive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidParameterError, require


def _faiss() -> Any:
    return require("faiss", "FAISS is not installed: pip install 'private-vectors[faiss]'")


def gpu_available() -> bool:
    """Whether the FAISS GPU build is installed and sees a GPU."""
    faiss = _faiss()
    return hasattr(faiss, "StandardGpuResources") and getattr(faiss, "get_num_gpus", lambda: 0)() > 0


def new_index(store: Any, train: np.ndarray) -> Any:
    """A new (CPU-built, IVF: CPU-trained on ``train``) index, copied to the GPU when in use."""
    index = new_cpu_index(store, len(train))
    if not index.is_trained:
        index.train(train)
    return to_gpu(store, index)


def to_gpu(store: Any, index: Any) -> Any:
    if not store.use_gpu:
        return index
    faiss = _faiss()
    store._gpu_res = faiss.StandardGpuResources()
    return faiss.index_cpu_to_gpu(store._gpu_res, 0, index)


def new_cpu_index(store: Any, n_train: int) -> Any:
    faiss = _faiss()
    metric = faiss.METRIC_L2 if store.metric == "l2" else faiss.METRIC_INNER_PRODUCT
    if store.kind == "flat":
        base = faiss.IndexFlatL2(store.dim) if store.metric == "l2" else faiss.IndexFlatIP(store.dim)
    elif store.kind == "hnsw":
        base = faiss.IndexHNSWFlat(store.dim, store.hnsw_m, metric)
    else:
        if store.nlist is None:
            store.nlist = int(min(4096, max(1, round(math.sqrt(n_train)))))
        if n_train < store.nlist:
            raise InvalidParameterError("texts", f"at least nlist={store.nlist} texts in the first batch of an "
                                        "IVF index (it is trained on them)", n_train)
        quantizer = faiss.IndexFlatL2(store.dim) if store.metric == "l2" else faiss.IndexFlatIP(store.dim)
        base = faiss.IndexIVFFlat(quantizer, store.dim, store.nlist, metric)
        base.nprobe = store.nprobe or min(store.nlist, 16)
        store._quantizer = quantizer  # keep alive
    index = faiss.IndexIDMap2(base)
    store._base = base
    return index


def remove_vectors(store: Any, internal: list[int]) -> None:
    """Drop ``internal`` from the FAISS index (HNSW cannot remove: rebuilt from the rest)."""
    index = store._cpu_index()
    gone = np.asarray(internal, dtype=np.int64)
    if store.kind != "hnsw":
        index.remove_ids(gone)
        store._index = to_gpu(store, index) if store.use_gpu else index
        return
    keep = np.array([i for i in sorted(store.texts) if i not in set(internal)], dtype=np.int64)
    vectors = np.vstack([index.reconstruct(int(i)) for i in keep]) if len(keep) else np.zeros((0, store.dim), np.float32)
    fresh = new_cpu_index(store, len(keep))
    if len(keep):
        fresh.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), keep)
    store._index = fresh
