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

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._progress import counts_documents
from .._validation import check_int, check_texts
from ..embedding import PrivateEmbedding
from ..errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from ..guard import protected_path
from ..restore import RESTORE_KEY, sanitize_recorded, seal_records
from ..sealed.stores import document_refs, seal_rows, sealer_of
from ._stored import check_metadata_text, check_metadatas, opened_metadata, sanitize_metadatas
from .faiss_build import _faiss, gpu_available, new_index, remove_vectors
from .faiss_files import INDEX_FILE, SIDECAR, read_folder, write_folder
from .faiss_ids import check_ids, internal_ids
from .scores import relevance_score_fn as calibrated_relevance_score_fn

__all__ = ["INDEX_FILE", "KINDS", "SIDECAR", "PrivateFaissIndex", "StoredDocument", "build_index", "gpu_available"]

KINDS = ("flat", "ivf", "hnsw")


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
        self._index: Any = None
        self._next_id = 0

    # -- the FAISS index (built in faiss_build) ----------------------------------------------
    @property
    def metric(self) -> str:
        """``"ip"`` or ``"l2"`` (cosine is inner product on normalised vectors)."""
        return "l2" if self.space == "l2" else "ip"

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
        keys = check_ids(self, ids, len(texts))
        check_metadatas(metadatas, len(texts))  # (refused before any work)
        sealed = self._sealer is not None
        with protected_path():  # one pass: each text is sanitized once; that text is embedded and kept
            sanitized, logs = sanitize_recorded(self.embedding, texts, store_raw_text=self.store_raw_text)
            metas = sanitize_metadatas(self.embedding, metadatas, len(texts), store_raw_text=self.store_raw_text,
                                       once=self, metadata_text=self.metadata_text)
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
            self._index = new_index(self, Z)
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


    def _public_id(self, internal: int) -> Any:
        return self._keys.get(internal, internal)

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
            doc_id = payload.doc_id if self._hmac_ids else self._public_id(i)
            out.append(StoredDocument(id=doc_id, score=exact_score(dist, self.space),
                                      relevance=exact_relevance(dist, self.space), text=payload.text or "",
                                      metadata=opened_metadata(payload)))
        return out


    def delete(self, ids: Sequence[Any]) -> int:
        """Remove the documents ``ids``: vectors, kept text, metadata and restore records; in a
        sealed index also their sealed records, the query-index entries no remaining document
        holds and, with a keyring, their document keys (so no copy saved before opens them).
        Returns how many were removed; save to make it durable.

        Raises:
            InvalidParameterError: naming ``ids``, for an id the index does not hold (nothing removed).
        """
        internal = list(dict.fromkeys(internal_ids(self, ids)))
        if not internal:
            return 0
        if self._sealer is not None:
            from .faiss_sealed import forget_sealed

            forget_sealed(self, internal, list(ids))
        remove_vectors(self, internal)
        for i in internal:
            self.texts.pop(i, None)
            self.metadata.pop(i, None)
            self.restore_records.pop(i, None)
            key = self._keys.pop(i, None)
            if key is not None:
                self._by_key.pop(key, None)
        return len(internal)

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

            opened = sealed_payloads(self, internal_ids(self, ids))
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
        return write_folder(self, folder)

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
        return read_folder(cls, folder, embedding, use_gpu=use_gpu, key=key, seal=seal)


def build_index(texts: Sequence[str], embedding: PrivateEmbedding, *, kind: str = "flat",
                ids: Sequence[int] | None = None, **options: Any) -> PrivateFaissIndex:
    """Build a :class:`PrivateFaissIndex` of ``kind`` from ``texts`` (see the class for options)."""
    index = PrivateFaissIndex(embedding, kind=kind, **options)
    index.add_texts(texts, ids=ids)
    return index
