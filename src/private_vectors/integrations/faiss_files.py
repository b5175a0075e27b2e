"""Saving and loading a :class:`~private_vectors.integrations.faiss.PrivateFaissIndex` folder, without pickle.

``faiss.write_index`` writes the index, and a JSON sidecar (``private_vectors.json``) holds the
PrivateEmbedding's config, the index kind and metric, the ids, the kept (sanitized, or opt-in
raw) texts, metadata and restore records. A save is crash-safe: both files are written to
``*.tmp`` and synced, then moved into place index first, and a load finishes or discards an
interrupted save.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from .._files import TMP, commit_pair, finish_pair
from .._files import fsync_path as _fsync
from ..embedding import PrivateEmbedding
from ..errors import ArtefactError
from ._stored import stored_embedding
from .faiss_build import _faiss, to_gpu

INDEX_FILE = "index.faiss"
SIDECAR = "private_vectors.json"
FORMAT = "private_vectors.faiss/1"


def write_folder(store: Any, folder: str | Path) -> Path:
    """``store.save(folder)``: see :meth:`PrivateFaissIndex.save`."""
    faiss = _faiss()
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    if store._index is None:
        raise ArtefactError("the index is empty; add texts before saving")
    index_tmp, sidecar_tmp = path / (INDEX_FILE + TMP), path / (SIDECAR + TMP)
    for stale in (index_tmp, sidecar_tmp):
        stale.unlink(missing_ok=True)
    faiss.write_index(store._cpu_index(), str(index_tmp))
    _fsync(index_tmp)
    sidecar = {
        "format": FORMAT,
        "embedding": store.embedding.get_config(),
        "kind": store.kind, "space": store.space, "metric": store.metric, "dim": store.dim,
        "nlist": store.nlist, "nprobe": store.nprobe, "hnsw_m": store.hnsw_m,
        "store_raw_text": store.store_raw_text, "next_id": store._next_id, "ntotal": len(store),
        "ids": sorted(store.texts),
        "string_ids": {str(i): key for i, key in store._keys.items()},
        "metadata_text": store.metadata_text,
        "metadata": {str(i): m for i, m in store.metadata.items()},
        "query_index": store.embedding.pipeline.query_index_state(),  # keyed HMACs of ingested entities, no names
    }
    if store.store_raw_text or store.embedding.sanitizer is not None or store._sealer is not None:
        # raw (opt-in) or sanitized texts; a sealed index's markers (the texts are in the records)
        sidecar["texts"] = {str(i): t for i, t in store.texts.items()}
    if store.restore_records:
        sidecar["restore"] = {str(i): r for i, r in store.restore_records.items()}
    sidecar_tmp.write_text(json.dumps(sidecar, ensure_ascii=False))
    _fsync(sidecar_tmp)
    commit_pair(path, INDEX_FILE, SIDECAR)  # from the first move on, load() completes the save
    return path


def read_folder(cls: type, folder: str | Path, embedding: PrivateEmbedding | None, *,
                use_gpu: Any, key: Any, seal: Any) -> Any:
    """``cls.load(folder, ...)``: see :meth:`PrivateFaissIndex.load`."""
    faiss = _faiss()
    path = Path(folder)
    finish_pair(path, INDEX_FILE, SIDECAR)  # an interrupted save: finished or discarded
    try:
        sidecar = json.loads((path / SIDECAR).read_text())
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"{path}: no readable {SIDECAR} ({exc})") from exc
    if sidecar.get("format") != FORMAT:
        raise ArtefactError(f"{path / SIDECAR}: format {sidecar.get('format')!r}, expected {FORMAT!r}")
    where = f"FAISS index {str(path)!r}"
    embedding = stored_embedding(sidecar["embedding"], where, embedding, key, seal=seal)
    store = cls(embedding, kind=sidecar["kind"], nlist=sidecar.get("nlist"), nprobe=sidecar.get("nprobe"),
               hnsw_m=sidecar.get("hnsw_m", 32), store_raw_text=bool(sidecar.get("store_raw_text", False)),
               use_gpu=use_gpu, metadata_text=sidecar.get("metadata_text", "sanitize"))
    if "store_raw_text" not in sidecar and any(sidecar.get("texts", {}).values()):
        warnings.warn(f"{path / SIDECAR} was saved with raw texts (the old default); they are loaded for search "
                      "results but a new save drops them unless store_raw_text=True is set on the index",
                      UserWarning, stacklevel=3)
    try:
        index = faiss.read_index(str(path / INDEX_FILE))
    except Exception as exc:
        raise ArtefactError(f"{path / INDEX_FILE}: not a readable FAISS index ({exc})") from exc
    if index.d != store.dim:
        raise ArtefactError(f"{path / INDEX_FILE}: dimension {index.d}, the embedding gives {store.dim}")
    if int(sidecar.get("ntotal", index.ntotal)) != int(index.ntotal):
        raise ArtefactError(f"{path / INDEX_FILE} holds {index.ntotal} vectors, {SIDECAR} expects "
                            f"{sidecar.get('ntotal')}: the two files come from different saves")
    store._index = to_gpu(store, index)
    stored_texts = sidecar.get("texts", {})
    ids = sidecar.get("ids", list(stored_texts))
    store.texts = {int(i): stored_texts.get(str(i), "") for i in ids}
    store._next_id = int(sidecar.get("next_id", len(store.texts)))
    store.restore_records = {int(i): str(r) for i, r in (sidecar.get("restore") or {}).items()}
    store._keys = {int(i): str(key) for i, key in (sidecar.get("string_ids") or {}).items()}
    store._by_key = {key: i for i, key in store._keys.items()}
    store.metadata = {int(i): m for i, m in (sidecar.get("metadata") or {}).items()}
    store.embedding.pipeline.load_query_index_state(sidecar.get("query_index"))
    return store
