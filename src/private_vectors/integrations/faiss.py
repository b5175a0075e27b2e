"""FAISS integration: indexes built from texts through :class:`~private_vectors.PrivateEmbedding`.

Index kinds: ``"flat"`` (exact), ``"ivf"`` (inverted lists; trained on the first batch added)
and ``"hnsw"`` (graph). The metric follows the embedding's collection space: ``"ip"`` →
inner product (the default; see benchmarks/space.py), ``"l2"`` → L2, ``"cosine"`` →
inner product on L2-normalised vectors. Every index is wrapped in ``IndexIDMap2`` so ids are
stable 64-bit integers; string ids are mapped onto them and come back in results.
:meth:`PrivateFaissIndex.search_documents` returns plain :class:`StoredDocument` objects
(id, score, calibrated relevance, kept text, kept metadata).

Persistence without pickle: ``faiss.write_index`` for the index and a JSON sidecar
(``private_vectors.json``) with the PrivateEmbedding config, the index kind and metric and the ids.
**No raw document text** is kept, in memory or in the sidecar, unless ``store_raw_text=True`` (the raw
texts then sit in clear next to the protected index: see the README's threat model). When the
PrivateEmbedding has a text stage, the *sanitized* texts are kept (sanitized once: the text
embedded is the text kept), never the raw values it replaced. Loading with a
conflicting PrivateEmbedding raises :class:`~private_vectors.errors.ConfigMismatchError`.

A GPU index is used when the FAISS GPU build is present and a GPU is visible (``use_gpu="auto"``)
for the flat and IVF kinds; FAISS has no GPU HNSW, so an HNSW index stays on the CPU (and
``use_gpu=True`` with ``kind="hnsw"`` is refused). An index is built and, for IVF, trained on the
CPU and then copied to the GPU, so a GPU index holds the same centroids and vectors as the CPU
index of the same data and answers alike (up to ties and float rounding in the distances);
saves and :meth:`PrivateFaissIndex.stored_vectors` copy it back to the CPU.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._files import fsync_path as _fsync
from .._progress import counts_documents
from .._validation import check_int, check_texts
from ..embedding import PrivateEmbedding
from ..errors import (
    ArtefactError,
    Described,
    InvalidParameterError,
    InvalidTypeError,
    ModelNotAvailableError,
)
from ..guard import protected_path
from ..restore import RESTORE_KEY, sanitize_recorded, seal_records
from ..sealed.stores import document_refs, require_key, seal_rows, sealer_of
from ._stored import (
    check_metadata_text,
    check_metadatas,
    check_unique_ids,
    positions,
    sanitize_metadatas,
    stored_embedding,
)
from .scores import relevance_score_fn as calibrated_relevance_score_fn

__all__ = ["INDEX_FILE", "KINDS", "SIDECAR", "PrivateFaissIndex", "StoredDocument", "build_index", "gpu_available"]

KINDS = ("flat", "ivf", "hnsw")
INDEX_FILE = "index.faiss"
SIDECAR = "private_vectors.json"
_TMP = ".tmp"  # suffix of a save in progress (see PrivateFaissIndex.save)
FORMAT = "private_vectors.faiss/1"


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ModelNotAvailableError("FAISS is not installed: pip install 'private-vectors[faiss]'") from exc
    return faiss


@dataclass(frozen=True)
class StoredDocument:
    """One search result of :class:`PrivateFaissIndex` (a plain object: no LangChain needed).

    Attributes:
        id: the id given at add time (str or int).
        score: the index's score (inner product, or squared L2 for an ``l2`` index).
        relevance: the score calibrated to the stored noise, in [0, 1].
        text: the kept text (sanitized; empty when no text is kept).
        metadata: the kept metadata (string values sanitized).
    """

    id: Any
    score: float
    relevance: float
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def gpu_available() -> bool:
    """Whether the FAISS GPU build is installed and sees a GPU."""
    faiss = _faiss()
    return hasattr(faiss, "StandardGpuResources") and getattr(faiss, "get_num_gpus", lambda: 0)() > 0


class PrivateFaissIndex:
    """A FAISS index whose stored vectors went through a PrivateEmbedding.

    Args:
        embedding: the PrivateEmbedding (documents perturbed, queries per its policy).
        kind: ``"flat"``, ``"ivf"`` or ``"hnsw"``.
        nlist: IVF lists (default: √(first batch size), between 1 and 4096).
        nprobe: IVF lists searched (default: min(nlist, 16)).
        hnsw_m: HNSW neighbours per node (default 32).
        store_raw_text: keep the raw texts by id (in memory and in clear in the sidecar) for search
            results (default False: only ids; privacy-first).
        store_texts: deprecated alias of ``store_raw_text``.
        use_gpu: ``"auto"`` (GPU when the GPU build sees one), True or False.
        metadata_text: ``"sanitize"`` (default: string metadata values through the text stage)
            or ``"keep"`` (as given, for metadata you know holds no personal data).
    """

    def __init__(self, embedding: PrivateEmbedding, *, kind: str = "flat", nlist: int | None = None,
                 nprobe: int | None = None, hnsw_m: int = 32, store_raw_text: bool = False,
                 use_gpu: Any = "auto", store_texts: bool | None = None, metadata_text: str = "sanitize") -> None:
        if not isinstance(embedding, PrivateEmbedding):
            raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
        if not isinstance(kind, str) or kind not in KINDS:
            raise InvalidParameterError("kind", f"one of {KINDS}", kind)
        self.embedding = embedding
        self.kind = kind
        self.nlist = None if nlist is None else check_int(nlist, "nlist", minimum=1)
        self.nprobe = None if nprobe is None else check_int(nprobe, "nprobe", minimum=1)
        self.hnsw_m = check_int(hnsw_m, "hnsw_m", minimum=2)
        if not isinstance(store_raw_text, bool):
            raise InvalidTypeError("store_raw_text", "True or False", store_raw_text)
        if store_texts is not None:
            warnings.warn("store_texts is deprecated; use store_raw_text", DeprecationWarning, stacklevel=2)
            store_raw_text = bool(store_texts)
        self.store_raw_text = store_raw_text
        if use_gpu not in ("auto", True, False):
            raise InvalidParameterError("use_gpu", "'auto', True or False", use_gpu)
        if use_gpu is True and kind == "hnsw":
            raise InvalidParameterError("use_gpu", "False or 'auto' for kind='hnsw' (FAISS has no GPU HNSW index)",
                                        use_gpu)
        self.use_gpu = (gpu_available() and kind != "hnsw") if use_gpu == "auto" else bool(use_gpu)
        if self.use_gpu and not gpu_available():
            raise ModelNotAvailableError("use_gpu=True but the FAISS GPU build or a GPU is not available")
        self.space = embedding.space
        self.dim = embedding.out_dim
        embedding.get_config()  # the sidecar records the config: a keyed embedding gets its own random salt
        self._sealer = sealer_of(embedding)  # sealed (a key, seal not False): records, markers, exact re-rank
        self.texts: dict[int, str] = {}
        self.restore_records: dict[int, str] = {}  # encrypted, per id (private_vectors.restore)
        self.metadata: dict[int, dict[str, Any]] = {}
        self.metadata_text = check_metadata_text(metadata_text)
        self._keys: dict[int, str] = {}  # internal id -> the caller's string id
        self._by_key: dict[str, int] = {}
        self._metadata_warned = False
        self._index: Any = None
        self._next_id = 0

    # -- index construction -------------------------------------------------------------------
    @property
    def metric(self) -> str:
        """``"ip"`` or ``"l2"`` (cosine is inner product on normalised vectors)."""
        return "l2" if self.space == "l2" else "ip"

    def _new_index(self, train: np.ndarray) -> Any:
        """A new (CPU-built, IVF: CPU-trained on ``train``) index, copied to the GPU when in use."""
        index = self._new_cpu_index(len(train))
        if not index.is_trained:
            index.train(train)
        return self._to_gpu(index)

    def _to_gpu(self, index: Any) -> Any:
        if not self.use_gpu:
            return index
        faiss = _faiss()
        self._gpu_res = faiss.StandardGpuResources()
        return faiss.index_cpu_to_gpu(self._gpu_res, 0, index)

    def _new_cpu_index(self, n_train: int) -> Any:
        faiss = _faiss()
        metric = faiss.METRIC_L2 if self.metric == "l2" else faiss.METRIC_INNER_PRODUCT
        if self.kind == "flat":
            base = faiss.IndexFlatL2(self.dim) if self.metric == "l2" else faiss.IndexFlatIP(self.dim)
        elif self.kind == "hnsw":
            base = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, metric)
        else:
            if self.nlist is None:
                self.nlist = int(min(4096, max(1, round(math.sqrt(n_train)))))
            if n_train < self.nlist:
                raise InvalidParameterError("texts", f"at least nlist={self.nlist} texts in the first batch of an "
                                            "IVF index (it is trained on them)", n_train)
            quantizer = faiss.IndexFlatL2(self.dim) if self.metric == "l2" else faiss.IndexFlatIP(self.dim)
            base = faiss.IndexIVFFlat(quantizer, self.dim, self.nlist, metric)
            base.nprobe = self.nprobe or min(self.nlist, 16)
            self._quantizer = quantizer  # keep alive
        index = faiss.IndexIDMap2(base)
        self._base = base
        return index

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=np.float32)
        if self.space == "cosine":
            _faiss().normalize_L2(X)
        return X

    # -- verbs --------------------------------------------------------------------------------
    @counts_documents("texts")
    def add_texts(self, texts: Sequence[str], ids: Sequence[int] | Sequence[str] | None = None,
                  metadatas: Sequence[dict[str, Any] | None] | None = None) -> list[Any]:
        """Embed (perturb) and add ``texts``; returns their ids. A failed batch adds nothing.

        Args:
            texts: the raw texts (sanitized once by the embedding's text stage; that text is
                embedded and kept).
            ids: integer ids, string ids (mapped to internal integers, returned by searches),
                or None (consecutive integers).
            metadatas: one JSON-able dict (or None) per text; string values go through the text
                stage (without one: kept, with one PrivacyWarning per index).
        """
        texts = check_texts(texts, "texts")  # None, a lone str, non-str items: refused by name
        if self._hmac_ids and ids is not None and not isinstance(ids, (str, bytes)):
            ids = [str(i) for i in ids]  # keyed ids: every id is held as an HMAC string
        keys = self._check_ids(ids, len(texts))
        check_metadatas(metadatas, len(texts))  # (refused before any work)
        sealed = self._sealer is not None
        with protected_path():  # one pass: each text is sanitized once; that text is embedded and kept
            sanitized, logs = sanitize_recorded(self.embedding, texts, store_raw_text=self.store_raw_text)
            metas = sanitize_metadatas(self.embedding, metadatas, len(texts), store_raw_text=self.store_raw_text,
                                       warn=self._warn_metadata_once, metadata_text=self.metadata_text)
            got = self.embedding.pipeline.embed_sanitized(sanitized, raw=texts, exact=sealed)
            Z, exact = (self._prepare(got[0]), got[1]) if sealed else (self._prepare(got), None)
        if len(Z) == 0:
            return []
        string_ids = self._hmac_ids or (keys is not None and isinstance(keys[0], str))
        if keys is None or isinstance(keys[0], str):
            id_arr = np.arange(self._next_id, self._next_id + len(Z), dtype=np.int64)
        else:
            id_arr = np.asarray(keys, dtype=np.int64)
        public = keys if keys is not None and isinstance(keys[0], str) else id_arr.tolist()
        if self._hmac_ids:
            public = [str(p) for p in public]
        records = seal_records(self.embedding, public, texts, sanitized, logs)  # keyed text stage: by public id
        kept = self.embedding.pipeline.texts_to_store(texts, sanitized, store_raw_text=self.store_raw_text)
        held = public
        if sealed:  # the record holds what an unsealed index keeps; markers and readable metadata stay
            rows = seal_rows(self._sealer, public, texts=kept, metadatas=metas, vectors=exact, restores=records,
                             refs=document_refs(self.embedding, texts, logs))
            kept, metas, records, held = rows.markers, rows.metadatas, None, rows.stored_ids
        if self._index is None:
            self._index = self._new_index(Z)
        self._index.add_with_ids(Z, id_arr)
        self._next_id = max(self._next_id, int(id_arr.max()) + 1)
        for n, i in enumerate(id_arr.tolist()):
            self.texts[int(i)] = kept[n] if kept is not None else ""
            if metas[n]:
                self.metadata[int(i)] = metas[n]
            if records is not None:
                self.restore_records[int(i)] = records[n]
            if string_ids:
                self._keys[int(i)] = held[n]
                self._by_key[held[n]] = int(i)
        return list(public) if self._hmac_ids else [self._public_id(int(i)) for i in id_arr]

    @property
    def sealed(self) -> bool:
        """Whether this index seals (a keyed PrivateEmbedding, ``seal`` not False)."""
        return self._sealer is not None

    @property
    def _hmac_ids(self) -> bool:
        return self._sealer is not None and self._sealer.sealing.ids == "hmac"

    def _held_key(self, doc_id: Any) -> Any:
        """The key ``_by_key`` holds for a caller's id (its keyed HMAC with ``ids="hmac"``)."""
        return self._sealer.stored_id(doc_id) if self._hmac_ids and self._sealer is not None else doc_id

    def _check_ids(self, ids: Any, count: int) -> list[Any] | None:
        """``ids`` as a list of all-int or all-str ids, unique and new, or None."""
        if ids is None:
            return None
        if isinstance(ids, (str, bytes)):
            raise InvalidTypeError("ids", f"{count} ids (a list)", ids, note="wrap a single id in a list")
        items = list(ids)
        if len(items) != count:
            raise InvalidParameterError("ids", f"{count} ids (one per text)", Described(f"{len(items)} ids"))
        if not items:
            return None
        if all(isinstance(i, str) for i in items):
            if any(not i for i in items):
                raise InvalidParameterError("ids", "non-empty ids", Described(f"an empty id at position {items.index('')}"))
            check_unique_ids(items, "the index")
            _refuse_held([n for n, i in enumerate(items) if self._held_key(i) in self._by_key])
            return items
        if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
            raise InvalidTypeError("ids", f"{count} integer ids or {count} string ids",
                                   Described(f"ids of types {sorted({type(i).__name__ for i in items})}"))
        ints = [int(i) for i in items]
        if self._keys:
            raise InvalidParameterError("ids", "string ids (this index already uses string ids)",
                                        Described(f"{len(ints)} integer ids"))
        check_unique_ids(ints, "the index")
        _refuse_held([n for n, i in enumerate(ints) if i in self.texts])
        return ints

    def _public_id(self, internal: int) -> Any:
        return self._keys.get(internal, internal)

    def _warn_metadata_once(self) -> bool:
        first = not self._metadata_warned
        self._metadata_warned = True
        return first

    def __repr__(self) -> str:
        return (f"PrivateFaissIndex(kind={self.kind!r}, documents={len(self)}, space={self.space!r}, "
                f"store_raw_text={self.store_raw_text}, embedding={self.embedding!r})")

    def __len__(self) -> int:
        return 0 if self._index is None else int(self._index.ntotal)

    def search(self, queries: Sequence[str], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, ids) per query; ids are -1 where fewer than k exist.

        Scores: inner product (``ip``/``cosine``, higher is closer) or squared L2 (``l2``, lower).
        A sealed index ranks K noisy candidates again by their exact vectors (see
        :mod:`~private_vectors.integrations.faiss_sealed`): scores are then the exact ones.
        """
        k = check_int(k, "k", minimum=1)
        if self._sealer is not None:
            from .faiss_sealed import as_arrays, sealed_hits

            return as_arrays(sealed_hits(self, check_texts(queries, "queries"), k), k, self.space)
        Q = self._prepare(self.embedding.embed_query_array(check_texts(queries, "queries")))
        if self._index is None or len(self) == 0:
            return np.zeros((len(Q), 0), dtype=np.float32), np.zeros((len(Q), 0), dtype=np.int64)
        return self._index.search(Q, min(k, len(self)))

    def search_texts(self, query: str, k: int = 5) -> list[tuple[Any, float, str]]:
        """``(id, score, text)`` for one query (text empty when texts are not stored)."""
        return [(d.id, d.score, d.text) for d in self.search_documents(query, k)]

    def search_documents(self, query: str, k: int = 5) -> list[StoredDocument]:
        """The top-``k`` documents for one query, best first, as :class:`StoredDocument`.

        ``score`` is the index's own (inner product, higher is closer; squared L2 for ``l2``,
        lower is closer); ``relevance`` is calibrated to the stored noise
        (:mod:`private_vectors.integrations.scores`), in [0, 1] for every space.
        """
        if not isinstance(query, str):
            raise InvalidTypeError("query", "a str", query)
        if self._sealer is not None:
            return self._sealed_documents(query, check_int(k, "k", minimum=1))
        scores, ids = self.search([query], k)
        relevance = calibrated_relevance_score_fn(self.embedding,
                                                  "l2_squared" if self.metric == "l2" else "inner_product")
        return [StoredDocument(id=self._public_id(int(i)), score=float(s), relevance=relevance(float(s)),
                               text=self.texts.get(int(i), ""), metadata=self._result_metadata(int(i)))
                for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def _sealed_documents(self, query: str, k: int) -> list[StoredDocument]:
        """A sealed index's results: the records' sanitized text and metadata, exact scores."""
        from ..sealed.stores import exact_relevance, exact_score
        from .faiss_sealed import sealed_hits

        out = []
        for i, payload, dist in sealed_hits(self, [query], k)[0]:
            meta = dict(payload.metadata)
            if payload.restore is not None:
                meta[RESTORE_KEY] = payload.restore
            doc_id = payload.doc_id if self._hmac_ids else self._public_id(i)
            out.append(StoredDocument(id=doc_id, score=exact_score(dist, self.space),
                                      relevance=exact_relevance(dist, self.space), text=payload.text or "",
                                      metadata=meta))
        return out

    def _internal(self, ids: Sequence[Any], name: str = "ids") -> list[int]:
        """Internal ids of the caller's ``ids`` (str ids through the id map).

        Raises:
            InvalidParameterError: naming ``name``, for ids the index does not hold (by position).
        """
        if isinstance(ids, (str, bytes)):
            raise InvalidTypeError(name, "a list of ids", ids, note="wrap a single id in a list")
        out, missing = [], []
        for n, i in enumerate(ids):
            key = self._held_key(str(i) if self._hmac_ids else i)
            if isinstance(key, str):
                got = self._by_key.get(key)
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and not self._keys:
                got = int(key) if int(key) in self.texts else None
            else:
                got = None
            if got is None:
                missing.append(n)
            else:
                out.append(got)
        if missing:
            raise InvalidParameterError(name, "ids the index holds", Described(positions(missing, "not held")))
        return out

    def delete(self, ids: Sequence[Any]) -> int:
        """Remove the documents ``ids``: vectors, kept text, metadata and restore records; in a
        sealed index also their sealed records, the query-index entries no remaining document
        holds and, with a keyring, their document keys (so no copy saved before opens them).
        Returns how many were removed; save to make it durable.

        Raises:
            InvalidParameterError: naming ``ids``, for an id the index does not hold (nothing removed).
        """
        internal = list(dict.fromkeys(self._internal(ids)))
        if not internal:
            return 0
        if self._sealer is not None:
            from .faiss_sealed import forget_sealed

            forget_sealed(self, internal, list(ids))
        self._remove_vectors(internal)
        for i in internal:
            self.texts.pop(i, None)
            self.metadata.pop(i, None)
            self.restore_records.pop(i, None)
            key = self._keys.pop(i, None)
            if key is not None:
                self._by_key.pop(key, None)
        return len(internal)

    def _remove_vectors(self, internal: list[int]) -> None:
        """Drop ``internal`` from the FAISS index (HNSW cannot remove: rebuilt from the rest)."""
        index = self._cpu_index()
        gone = np.asarray(internal, dtype=np.int64)
        if self.kind != "hnsw":
            index.remove_ids(gone)
            self._index = self._to_gpu(index) if self.use_gpu else index
            return
        keep = np.array([i for i in sorted(self.texts) if i not in set(internal)], dtype=np.int64)
        vectors = np.vstack([index.reconstruct(int(i)) for i in keep]) if len(keep) else np.zeros((0, self.dim), np.float32)
        fresh = self._new_cpu_index(len(keep))
        if len(keep):
            fresh.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), keep)
        self._index = fresh

    def _result_metadata(self, internal: int) -> dict[str, Any]:
        """A result's metadata: the kept metadata plus its encrypted restore record, if any."""
        meta = dict(self.metadata.get(internal, {}))
        if internal in self.restore_records:
            meta[RESTORE_KEY] = self.restore_records[internal]
        return meta

    def restore_texts(self, ids: Sequence[Any]) -> list[str]:
        """The original texts of ``ids`` for the key holder, from their stored sanitized text and
        encrypted restore records (:mod:`private_vectors.restore`).

        Raises:
            RestoreError: an id without a record, a wrong key, or an edited record or text.
        """
        from ..restore import Restorer

        if self._sealer is not None:
            from .faiss_sealed import sealed_payloads

            opened = sealed_payloads(self, self._internal(ids))
            docs = [(p.doc_id, p.text or "", p.restore) for p in opened]
            return [t for _, t, _ in Restorer.for_embedding(self.embedding).restore_documents(docs)]
        internal = [self._by_key[i] if isinstance(i, str) and i in self._by_key else int(i) for i in ids]
        docs = [(p, self.texts.get(i, ""), self.restore_records.get(i)) for p, i in zip(ids, internal, strict=True)]
        return [t for _, t, _ in Restorer.for_embedding(self.embedding).restore_documents(docs)]

    def stored_vectors(self) -> np.ndarray:
        """The perturbed vectors as stored (flat and HNSW only), ordered by id."""
        if self._index is None:
            return np.zeros((0, self.dim), dtype=np.float32)
        index = self._cpu_index()
        ids = np.array(sorted(self.texts), dtype=np.int64)
        return np.vstack([index.reconstruct(int(i)) for i in ids])

    def _cpu_index(self) -> Any:
        faiss = _faiss()
        if self.use_gpu:
            return faiss.index_gpu_to_cpu(self._index)
        return self._index

    # -- persistence --------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Write ``index.faiss`` + ``private_vectors.json`` into ``folder`` (no pickle).

        Crash-safe: both files are written to ``*.tmp`` and synced first, then moved into place
        index first; :meth:`load` finishes or discards an interrupted save. A failure or a kill
        at any point leaves the previous save or this one — never an unreadable folder.
        """
        faiss = _faiss()
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        if self._index is None:
            raise ArtefactError("the index is empty; add texts before saving")
        index_tmp, sidecar_tmp = path / (INDEX_FILE + _TMP), path / (SIDECAR + _TMP)
        for stale in (index_tmp, sidecar_tmp):
            stale.unlink(missing_ok=True)
        faiss.write_index(self._cpu_index(), str(index_tmp))
        _fsync(index_tmp)
        sidecar = {
            "format": FORMAT,
            "embedding": self.embedding.get_config(),
            "kind": self.kind, "space": self.space, "metric": self.metric, "dim": self.dim,
            "nlist": self.nlist, "nprobe": self.nprobe, "hnsw_m": self.hnsw_m,
            "store_raw_text": self.store_raw_text, "next_id": self._next_id, "ntotal": len(self),
            "ids": sorted(self.texts),
            "string_ids": {str(i): key for i, key in self._keys.items()},
            "metadata_text": self.metadata_text,
            "metadata": {str(i): m for i, m in self.metadata.items()},
            "query_index": self.embedding.pipeline.query_index_state(),  # keyed HMACs of ingested entities, no names
        }
        if self.store_raw_text or self.embedding.sanitizer is not None or self._sealer is not None:
            # raw (opt-in) or sanitized texts; a sealed index's markers (the texts are in the records)
            sidecar["texts"] = {str(i): t for i, t in self.texts.items()}
        if self.restore_records:
            sidecar["restore"] = {str(i): r for i, r in self.restore_records.items()}
        sidecar_tmp.write_text(json.dumps(sidecar, ensure_ascii=False))
        _fsync(sidecar_tmp)
        os.replace(index_tmp, path / INDEX_FILE)  # from here on, load() completes the save
        os.replace(sidecar_tmp, path / SIDECAR)
        _fsync(path)
        return path

    @classmethod
    def load(cls, folder: str | Path, embedding: PrivateEmbedding | None = None, *,
             use_gpu: Any = "auto", key: Any = None, seal: Any = None) -> PrivateFaissIndex:
        """Load a saved index; without ``embedding`` the stored PrivateEmbedding is rebuilt, its
        key from ``key`` or env ``PRIVATE_VECTORS_KEY`` (both given and different: an error), and
        ``seal`` (a sealed index's keyring: ``Sealing(keyring=...)``; default: the index's own).

        Raises:
            ArtefactError: missing or foreign files.
            ConfigMismatchError: ``embedding`` differs from the one the index was written with.
            SealedStoreError: naming ``key``, for a sealed index and no key.
        """
        faiss = _faiss()
        path = Path(folder)
        _recover_interrupted_save(path)
        try:
            sidecar = json.loads((path / SIDECAR).read_text())
        except (OSError, ValueError) as exc:
            raise ArtefactError(f"{path}: no readable {SIDECAR} ({exc})") from exc
        if sidecar.get("format") != FORMAT:
            raise ArtefactError(f"{path / SIDECAR}: format {sidecar.get('format')!r}, expected {FORMAT!r}")
        where = f"FAISS index {str(path)!r}"
        keyed = embedding is not None and bool(getattr(embedding.pipeline.keying, "keyed", False))
        require_key(sidecar["embedding"], where, given=key is not None or keyed)
        embedding = stored_embedding(sidecar["embedding"], where, embedding, key, seal=seal)
        self = cls(embedding, kind=sidecar["kind"], nlist=sidecar.get("nlist"), nprobe=sidecar.get("nprobe"),
                   hnsw_m=sidecar.get("hnsw_m", 32), store_raw_text=bool(sidecar.get("store_raw_text", False)),
                   use_gpu=use_gpu, metadata_text=sidecar.get("metadata_text", "sanitize"))
        if "store_raw_text" not in sidecar and any(sidecar.get("texts", {}).values()):
            warnings.warn(f"{path / SIDECAR} was saved with raw texts (the old default); they are loaded for search "
                          "results but a new save drops them unless store_raw_text=True is set on the index",
                          UserWarning, stacklevel=2)
        try:
            index = faiss.read_index(str(path / INDEX_FILE))
        except Exception as exc:
            raise ArtefactError(f"{path / INDEX_FILE}: not a readable FAISS index ({exc})") from exc
        if index.d != self.dim:
            raise ArtefactError(f"{path / INDEX_FILE}: dimension {index.d}, the embedding gives {self.dim}")
        if int(sidecar.get("ntotal", index.ntotal)) != int(index.ntotal):
            raise ArtefactError(f"{path / INDEX_FILE} holds {index.ntotal} vectors, {SIDECAR} expects "
                                f"{sidecar.get('ntotal')}: the two files come from different saves")
        self._index = self._to_gpu(index)
        stored_texts = sidecar.get("texts", {})
        ids = sidecar.get("ids", list(stored_texts))
        self.texts = {int(i): stored_texts.get(str(i), "") for i in ids}
        self._next_id = int(sidecar.get("next_id", len(self.texts)))
        self.restore_records = {int(i): str(r) for i, r in (sidecar.get("restore") or {}).items()}
        self._keys = {int(i): str(key) for i, key in (sidecar.get("string_ids") or {}).items()}
        self._by_key = {key: i for i, key in self._keys.items()}
        self.metadata = {int(i): m for i, m in (sidecar.get("metadata") or {}).items()}
        self.embedding.pipeline.load_query_index_state(sidecar.get("query_index"))
        return self




def _recover_interrupted_save(path: Path) -> None:
    """Finish or discard a :meth:`PrivateFaissIndex.save` that was interrupted.

    ``index.faiss.tmp`` still present: the save stopped before its index was moved into place,
    so the previous pair is intact — drop the temporaries. Only ``private_vectors.json.tmp``
    present: the new index is in place and its (synced) sidecar is complete — move it in.
    """
    index_tmp, sidecar_tmp = path / (INDEX_FILE + _TMP), path / (SIDECAR + _TMP)
    if index_tmp.exists():
        index_tmp.unlink()
        sidecar_tmp.unlink(missing_ok=True)
    elif sidecar_tmp.exists():
        os.replace(sidecar_tmp, path / SIDECAR)


def build_index(texts: Sequence[str], embedding: PrivateEmbedding, *, kind: str = "flat",
                ids: Sequence[int] | None = None, **options: Any) -> PrivateFaissIndex:
    """Build a :class:`PrivateFaissIndex` of ``kind`` from ``texts`` (see the class for options)."""
    index = PrivateFaissIndex(embedding, kind=kind, **options)
    index.add_texts(texts, ids=ids)
    return index


def _refuse_held(held: list[int]) -> None:
    """An id the index holds is refused, by its position in the batch (a FAISS id map would keep
    both vectors under it)."""
    if held:
        raise InvalidParameterError("ids", "ids not already in the index (delete them first)",
                                    Described(positions(held, "held")))
