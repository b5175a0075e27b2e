"""Ray Data: protect and store documents on a cluster (``pip install 'private-vectors[ray]'``).

A job is ``read → protect_dataset(ds, config, sink)``::

    import ray
    from private_vectors.integrations.ray import ChromaDatasink, SecretRef, protect_dataset

    config = embedding.get_config()  # JSON: no key, no seed
    ds = ray.data.read_parquet("corpus/")  # columns: id, text
    protect_dataset(ds, config, ChromaDatasink("notes", host="chroma.internal", port=8000),
                    secret=SecretRef(env="PRIVATE_VECTORS_KEY"), batch_size=256, concurrency=2, num_cpus=1)

:func:`protect_dataset` runs the text stage's two steps as one job: ``map_batches(DetectDocuments)``
(detection, cached in the rows, and keyed facts), a commutative merge of the facts on the driver
into the job's frozen entity index, then ``map_batches(ProtectDocuments, job=...)`` (replacement,
encoding and noise against it) and the sink. The stored texts, vectors and entity index are those
of one process protecting the whole dataset in one call, whatever the partitioning and order.

**The key never travels through Ray.** :class:`ProtectDocuments` gets the embedding's JSON
configuration and a :class:`SecretRef` — the *name* of an environment variable set outside Ray
(in the shell or service that runs ``ray start`` on each node) or the *path* of a file readable
on the workers — and reads the key itself when its actor starts. Nothing that holds key
material, not even a derived subkey, is a task argument, an actor argument, an object in Ray's
object store or part of a ``runtime_env`` (which Ray keeps in its control store and shows on its
dashboard): pass a key through ``runtime_env={"env_vars": ...}`` and it is in all three places.

Per worker: one ``PrivateEmbedding`` per actor (model, text stage), built once from the
configuration. Global: the job's frozen entity index (HMACs and labels: an entity detected in
one document is replaced wherever it appears in the job; a word the job writes in lower case in
two texts is an ordinary word; a strong entry beats a weak one; of two labels, the one more
spans gave, then the first in sorted order), the store, and its entity index, which only the sink's driver-side
``on_write_complete`` writes (one writer). ``ProtectDocuments`` alone (one map, no ``job``)
makes each batch a job of its own: which occurrences of an entity *missed by the detectors* are
replaced then depends on partitioning.

Rows out of :class:`ProtectDocuments`: ``id``, ``document`` (the sanitized text; empty when no
text is stored), ``embedding`` (float32), ``metadata`` (JSON: the row's metadata and its
encrypted restore record under ``pv_restore``) and ``pv_index`` (the keyed index entries of the
batch's replaced spans, JSON, on the batch's first row). Sinks: :class:`ChromaDatasink` (a Chroma server
through ``HttpClient``, upsert by id), :class:`ParquetDatasink` and :class:`FaissShardDatasink`
(one file per block, named by a hash of its ids: a retried task rewrites the same file).
Writes are idempotent, so a failed job is resumed by running it again (the same documents: the
same job index, the same rows). Filtering out what a sink's :meth:`stored_ids` already holds
makes the rest a new job, which reads the stored entity index (``index_state``) and never
rewrites the documents already stored.

Raw text passes through Ray's object store (the input blocks, and the first step's materialized
rows with their cached spans) and may be spilled to the local
disk of a node (``/tmp/ray/session_*/ray_spilled_objects`` by default). Point spilling at an
encrypted volume with ``ray.init(_system_config={"object_spilling_config": json.dumps({"type":
"filesystem", "params": {"directory_path": "/encrypted/spill"}})})`` (or ``ray start
--system-config``), or keep raw text out of the object store by reading it inside the map.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Described, InvalidParameterError, InvalidTypeError, ModelNotAvailableError

__all__ = ["ChromaDatasink", "DetectDocuments", "FaissShardDatasink", "FaissShards", "ParquetDatasink",
           "ProtectDocuments", "SecretRef", "job_index_changes", "merge_index_changes", "protect_dataset"]

INDEX_COLUMN = "pv_index"
SPANS_COLUMN = "pv_spans"
META_SPANS_COLUMN = "pv_meta_spans"
FACTS_COLUMN = "pv_facts"
_UPSERT_ROWS = 1000
_WEAK = "~"  # the text stage's prefix of an index entry found on weak evidence


def _require_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ModelNotAvailableError("Ray is not installed: pip install 'private-vectors[ray]'") from exc
    return ray


def _datasink_base() -> type:
    try:
        from ray.data import Datasink
    except ImportError:  # pragma: no cover - optional dependency
        return object
    return Datasink


@dataclass(frozen=True)
class SecretRef:
    """Where a worker reads the key: an environment variable set outside Ray, or a file.

    Only the name or the path travels with the job. Exactly one of ``env`` and ``file``.

    Args:
        env: the variable's name (default ``PRIVATE_VECTORS_KEY``).
        file: a path readable on every worker (its whole content, surrounding whitespace
            stripped, is the key); e.g. a mounted secret.
    """

    env: str | None = "PRIVATE_VECTORS_KEY"
    file: str | None = None

    def __post_init__(self) -> None:
        if self.file is not None and self.env == "PRIVATE_VECTORS_KEY":
            object.__setattr__(self, "env", None)  # a file given: the default variable is not meant
        if (self.env is None) == (self.file is None):
            raise InvalidParameterError("secret", "exactly one of env= and file=", Described(f"env={self.env!r}, file={self.file!r}"))
        if self.env is not None and (not isinstance(self.env, str) or not self.env):
            raise InvalidTypeError("env", "a variable name", self.env)

    def read(self) -> Any:
        """The key as a :class:`~private_vectors.keys.SecretKey` (None when unset); on the worker."""
        from ..keys import SecretKey

        if self.env is not None:
            return SecretKey.resolve(None, env=self.env)
        path = Path(str(self.file))
        try:
            raw = path.read_bytes().strip()
        except OSError as exc:
            raise InvalidParameterError("secret", "a readable key file", Described(str(path)), note=type(exc).__name__) from None
        try:
            return SecretKey.resolve(raw, env=None)
        finally:
            raw = b""


def _blocks_rows(blocks: Iterable[Any]) -> Iterable[dict[str, list[Any]]]:
    """Each Ray block (Arrow table or pandas frame) as a dict of column lists."""
    for block in blocks:
        if hasattr(block, "to_pydict"):
            yield block.to_pydict()
        else:
            yield {c: list(block[c]) for c in block.columns}


def merge_index_changes(parts: Iterable[Mapping[str, str | None]]) -> dict[str, str | None]:
    """Merge keyed-index changes from many batches, independently of their order.

    For each HMAC: a removal (None: a batch writes the word in lower case, so it is an
    ordinary word) wins; otherwise a strong entry beats a weak one (``~`` prefix); among
    equals, the first label in sorted order.
    """
    out: dict[str, str | None] = {}
    for part in parts:
        for mac, label in part.items():
            if mac not in out:
                out[mac] = label
            else:
                out[mac] = _stronger(out[mac], label)
    return out


def _stronger(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return None
    weak_a, weak_b = a.startswith(_WEAK), b.startswith(_WEAK)
    if weak_a != weak_b:
        return b if weak_a else a
    return min(a, b)


def _batch_index(column: Sequence[Any]) -> dict[str, str | None]:
    return merge_index_changes(json.loads(v) for v in column if v)


class _Worker:
    """One PrivateEmbedding per actor, built from the JSON configuration and the key read on the worker."""

    def __init__(self, config: Mapping[str, Any], secret: SecretRef | None = None, *, id_column: str = "id",
                 text_column: str = "text", metadata_column: str | None = None,
                 index_state: Mapping[str, Any] | None = None) -> None:
        from ..embedding import rebuild
        from ..keys import key_scope

        if not isinstance(config, Mapping):
            raise InvalidTypeError("config", "a PrivateEmbedding.get_config() dict", config)
        ref = secret if secret is not None else SecretRef()
        if not isinstance(ref, SecretRef):
            raise InvalidTypeError("secret", "a SecretRef (an environment variable name or a file path)", Described("<other>"))
        key = ref.read()
        try:
            with key_scope(key):
                self.embedding = rebuild(dict(config), "the Ray job's store", use_cache=False)
        finally:
            key = None
        self.id_column, self.text_column, self.metadata_column = id_column, text_column, metadata_column
        if index_state:
            self.embedding.pipeline.load_query_index_state(dict(index_state))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.embedding!r})"

    @property
    def _job_sanitizer(self) -> Any:
        """The text stage when it runs a job in two steps (a keyed or unkeyed Sanitizer), else None."""
        from ..text.sanitizer import Sanitizer

        san = self.embedding.sanitizer
        return san if isinstance(san, Sanitizer) else None

    def _metas(self, batch: Mapping[str, Any]) -> list[dict[str, Any] | None] | None:
        if self.metadata_column is None:
            return None
        return [None if m is None else dict(m) if isinstance(m, Mapping) else json.loads(m) if m else None
                for m in batch[self.metadata_column]]


def _meta_slots(metas: Sequence[Mapping[str, Any] | None] | None) -> list[tuple[int, str]]:
    """The string metadata values the text stage sanitizes (as the Chroma add path does)."""
    return [(i, k) for i, m in enumerate(metas or []) if m for k, v in m.items() if isinstance(v, str) and v.strip()]


def _spans_json(spans: Sequence[Any] | None) -> str:
    return "null" if spans is None else json.dumps([[s.start, s.end, s.label, s.score, s.detector] for s in spans])


def _spans_of(value: str) -> list[Any] | None:
    from ..text.spans import Span

    rows = json.loads(value)
    return None if rows is None else [Span(int(a), int(b), str(lab), float(sc), str(d)) for a, b, lab, sc, d in rows]


class DetectDocuments(_Worker):
    """Ray Data callable class, the first step of a job: detection, cached, and keyed facts.

    Each output row is its input row plus ``pv_spans`` (the spans detected in the text, JSON;
    the second step reads them instead of detecting again) and, with ``metadata_column``,
    ``pv_meta_spans`` (those of its string metadata values); a batch's keyed facts
    (:class:`~private_vectors.text.entity_index.JobFacts`: HMACs, labels and counts, never
    words) are on its first row under ``pv_facts``. :func:`protect_dataset` merges them into the
    job's frozen index. Arguments as :class:`ProtectDocuments`.
    """

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        from ..guard import protected_path

        texts = [str(t) for t in batch[self.text_column]]
        out: dict[str, Any] = {k: np.asarray(v) if not isinstance(v, np.ndarray) else v for k, v in batch.items()}
        from ..text import job_steps

        san = self._job_sanitizer
        if san is None or not texts:
            out[SPANS_COLUMN] = np.array(["null"] * len(texts), dtype=object)
            out[FACTS_COLUMN] = np.array([""] * len(texts), dtype=object)
            return out
        metas = self._metas(batch)
        slots = _meta_slots(metas)
        values = [metas[i][k] for i, k in slots] if slots else []  # type: ignore[index]
        with protected_path():
            items, found = job_steps.detect(san, texts + values)
            facts = job_steps.job_facts(san, items, found) if found is not None else None
        spans = [None] * len(items) if found is None else found
        out[SPANS_COLUMN] = np.array([_spans_json(s) for s in spans[:len(texts)]], dtype=object)
        if self.metadata_column is not None:
            per_row: list[dict[str, str]] = [{} for _ in texts]
            for (i, k), s in zip(slots, spans[len(texts):], strict=True):
                per_row[i][k] = _spans_json(s)
            out[META_SPANS_COLUMN] = np.array([json.dumps(r) for r in per_row], dtype=object)
        first = json.dumps(facts.to_json(), sort_keys=True) if facts is not None else ""
        out[FACTS_COLUMN] = np.array([first] + [""] * (len(texts) - 1), dtype=object)
        return out


class ProtectDocuments(_Worker):
    """Ray Data callable class: raw rows → protected rows (built once per actor).

    With ``job`` (the frozen index of the job, from :func:`protect_dataset`) it is the second
    step: it reads the spans :class:`DetectDocuments` cached and replaces them, and every other
    occurrence of an entity of the job or of earlier jobs, against that index, so a document's
    stored text depends neither on partitioning nor on order. Without ``job`` each batch is a
    job of its own (the second pass sees the batch and earlier jobs only).

    Args:
        config: ``PrivateEmbedding.get_config()`` of the store (JSON; no key).
        secret: where the worker reads the key (:class:`SecretRef`); the key is checked against
            the configuration's check value, so a worker with another key fails at start.
        id_column: the column of document ids (str or int).
        text_column: the column of raw texts.
        metadata_column: optional column of per-document metadata (dicts or JSON strings); its
            string values go through the text stage.
        store_raw_text: keep the raw text as the stored document (default False).
        index_state: the keyed index of earlier jobs (``Sanitizer.get_state()`` dict: HMACs and
            labels, never names) for the second pass; a :class:`ChromaDatasink`'s
            :meth:`~ChromaDatasink.index_state` gives it.
        job: the job's frozen index (``JobIndex.to_json()``: HMACs and labels).
    """

    def __init__(self, config: Mapping[str, Any], secret: SecretRef | None = None, *, id_column: str = "id",
                 text_column: str = "text", metadata_column: str | None = None, store_raw_text: bool = False,
                 index_state: Mapping[str, Any] | None = None, job: Mapping[str, Any] | None = None) -> None:
        super().__init__(config, secret, id_column=id_column, text_column=text_column,
                         metadata_column=metadata_column, index_state=index_state)
        self.store_raw_text = bool(store_raw_text)
        from ..sealed.stores import sealer_of

        self._sealer = sealer_of(self.embedding)  # sealed rows (ray_sealed) under the store's data key
        self.job = None
        if job is not None:
            from ..text.entity_index import JobIndex

            self.job = JobIndex.from_json(job)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        from ..guard import protected_path
        from ..restore import prepare_with_restore, with_records
        from .chroma import _metadata_text

        ids = [str(i) for i in batch[self.id_column]]
        texts = [str(t) for t in batch[self.text_column]]
        metas = self._metas(batch)
        remembered: Mapping[str, str | None] = {}
        exact = refs = None
        with protected_path():
            if self.job is not None and self._job_sanitizer is not None and SPANS_COLUMN in batch:
                stored, vectors, records, metas, remembered, exact = self._second_step(batch, ids, texts, metas)
            else:
                if self._sealer is not None:  # sealed rows: the record needs the exact vectors
                    from ._sealed_prepare import prepare_sealed

                    got = prepare_sealed(self.embedding, texts, ids, store_raw_text=self.store_raw_text)
                    stored, vectors, records, exact, refs = got.kept, got.vectors, got.restores, got.exact, got.refs
                else:
                    stored, vectors, records = prepare_with_restore(self.embedding, texts, ids,
                                                                    store_raw_text=self.store_raw_text)
                if metas is not None:
                    metas = _metadata_text(self.embedding, metas, "sanitize")
                san = self.embedding.sanitizer
                remembered = san.take_changes() if san is not None and getattr(san, "keyed", False) else {}
        index = [json.dumps(remembered, sort_keys=True) if remembered else ""] + [""] * (len(ids) - 1)
        if self._sealer is not None and exact is not None:
            from .ray_sealed import sealed_columns

            return sealed_columns(self._sealer, ids, stored=stored, vectors=vectors, exact=exact, restores=records,
                                  metas=metas, refs=refs, index=index)
        metas = with_records(metas, records, len(ids))
        return {
            "id": np.array(ids, dtype=object),
            "document": np.array(stored if stored is not None else [""] * len(ids), dtype=object),
            "embedding": np.asarray(vectors, dtype=np.float32),
            "metadata": np.array([json.dumps(m, sort_keys=True) if m else "" for m in (metas or [None] * len(ids))],
                                 dtype=object),
            INDEX_COLUMN: np.array(index[: len(ids)], dtype=object),
        }

    def _second_step(self, batch: Mapping[str, Any], ids: list[str], texts: list[str],
                     metas: list[dict[str, Any] | None] | None) -> tuple[Any, Any, Any, Any, dict[str, str], Any]:
        from .._validation import check_stage_output
        from ..restore import seal_records, wants_restore
        from ..text import job_steps
        from ..text.entity_index import merge_values

        san, pipeline = self._job_sanitizer, self.embedding.pipeline
        found = [_spans_of(v) for v in batch[SPANS_COLUMN]]
        slots = _meta_slots(metas)
        if slots:
            cached = [json.loads(v) for v in batch[META_SPANS_COLUMN]]
            found += [_spans_of(cached[i][k]) for i, k in slots]
        values = [metas[i][k] for i, k in slots] if slots else []  # type: ignore[index]
        if any(f is None for f in found):  # a recognizer failed under on_error="redact_all" in the first step
            out, logs, remembered = san.apply(texts + values), None, dict(san.take_changes())
        else:
            out, logs, remembered = job_steps.apply_job(san, job_steps.escaped(texts + values), found, self.job)
        out = check_stage_output(out, texts + values, "job_steps.apply_job")
        sanitized = out[:len(texts)]
        for (i, k), v in zip(slots, out[len(texts):], strict=True):
            metas[i][k] = v  # type: ignore[index]
        got = pipeline.embed_sanitized(sanitized, raw=texts, exact=self._sealer is not None)
        vectors, exact = got if self._sealer is not None else (got, None)
        stored = pipeline.texts_to_store(texts, sanitized, store_raw_text=self.store_raw_text)
        records = None
        if logs is not None and wants_restore(self.embedding, store_raw_text=self.store_raw_text):
            records = seal_records(self.embedding, ids, texts, sanitized, logs[:len(texts)])
        merged: dict[str, str] = {}
        merge_values(merged, {k: v for k, v in remembered.items() if v is not None})
        return stored, vectors, records, metas, merged, exact


def protect_dataset(ds: Any, config: Mapping[str, Any], sink: Any = None, *, secret: SecretRef | None = None,
                    index_state: Mapping[str, Any] | None = None, batch_size: int = 256, concurrency: int = 2,
                    num_cpus: float = 1, id_column: str = "id", text_column: str = "text",
                    metadata_column: str | None = None, store_raw_text: bool = False,
                    protect_args: Mapping[str, Any] | None = None, **map_kwargs: Any) -> tuple[Any, Any]:
    """Protect a dataset as one job, in two steps, so the stored result depends neither on
    partitioning nor on order (the same as ``Sanitizer.apply`` on all its texts at once).

    1. ``map_batches(DetectDocuments)``: detection (cached in the rows) and keyed facts;
       the result is materialized, so nothing is detected twice;
    2. the driver merges the facts (commutatively) into the job's frozen index
       (:class:`~private_vectors.text.entity_index.JobIndex`: HMACs and labels);
    3. ``map_batches(ProtectDocuments, job=...)``: replacement, encoding and noise against it
       and ``index_state`` (earlier jobs); with ``sink``, written by ``write_datasink``, and the
       sink writes the entity index once, when every task has finished.

    ``batch_size``, ``concurrency``, ``num_cpus`` and ``map_kwargs`` size both maps;
    ``protect_args`` adds ``map_batches`` arguments of the second step only (e.g.
    ``{"num_gpus": 1}``: the encoder on GPUs, detection on CPUs).

    Returns:
        (the protected dataset, the job's :class:`~private_vectors.text.entity_index.JobIndex`)
    """
    from ..text.entity_index import JobFacts, JobIndex

    if protect_args is not None and not isinstance(protect_args, Mapping):
        raise InvalidTypeError("protect_args", "a dict of map_batches arguments for the second step", protect_args)
    _require_ray()
    if index_state is None and sink is not None and callable(getattr(sink, "index_state", None)):
        index_state = sink.index_state()
    kwargs = {"config": dict(config), "secret": secret if secret is not None else SecretRef(),
              "id_column": id_column, "text_column": text_column, "metadata_column": metadata_column,
              "index_state": index_state}
    sizing = {"batch_size": batch_size, "concurrency": concurrency, "num_cpus": num_cpus, **map_kwargs}
    detected = ds.map_batches(DetectDocuments, fn_constructor_kwargs=kwargs, **sizing).materialize()
    facts = JobFacts.merged(json.loads(v) for b in detected.select_columns([FACTS_COLUMN]).iter_batches(
        batch_size=4096, batch_format="numpy") for v in b[FACTS_COLUMN] if v)
    job = JobIndex.freeze(facts)
    protected = detected.map_batches(ProtectDocuments, fn_constructor_kwargs={
        **kwargs, "store_raw_text": store_raw_text, "job": job.to_json()}, **{**sizing, **dict(protect_args or {})})
    if sink is not None:
        sink.job, sink.stored_entries = job, dict((index_state or {}).get("entries") or {})
        protected.write_datasink(sink)
    return protected, job


def job_index_changes(remembered: Iterable[Mapping[str, str | None]], job: Any = None,
                      stored: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The entity index changes of a job: with its frozen ``job`` index, those of
    :func:`~private_vectors.text.entity_index.job_changes` (against ``stored``, the index of
    earlier jobs); without, the batches' changes merged (:func:`merge_index_changes`)."""
    merged = merge_index_changes(remembered)
    if job is None:
        return merged
    from ..text.entity_index import job_changes

    return job_changes(dict(stored or {}), job, {k: v for k, v in merged.items() if v is not None})


def _block_name(ids: Sequence[str]) -> str:
    """A block's file name: a hash of its ids, so a retried write task rewrites the same file."""
    h = hashlib.sha256()
    for i in sorted(ids):
        h.update(i.encode("utf-8") + b"\x00")
    return h.hexdigest()[:32]


class ChromaDatasink(_datasink_base()):  # type: ignore[misc]
    """Upsert protected rows into a collection of a Chroma server (``chroma run``), by id.

    The collection must exist and record the PrivateEmbedding the rows were made with
    (:func:`~private_vectors.integrations.chroma.create_collection`). Write tasks upsert
    documents only; the keyed entity index is written once, by the driver, when every task has
    finished (:meth:`on_write_complete`), from the merged entries of all batches.

    Args:
        collection: the collection's name.
        host, port, ssl, headers: the server (``chromadb.HttpClient``'s arguments).
        secret: where the *driver* reads the key to check the collection and write its index.
    """

    def __init__(self, collection: str, *, host: str = "localhost", port: int = 8000, ssl: bool = False,
                 headers: Mapping[str, str] | None = None, secret: SecretRef | None = None) -> None:
        self.collection = collection
        self.host, self.port, self.ssl = host, int(port), bool(ssl)
        self.headers = dict(headers or {})
        self.secret = secret if secret is not None else SecretRef()
        self.job: Any = None  # the job's frozen index, set by protect_dataset
        self.stored_entries: dict[str, str] = {}

    def _client(self) -> Any:
        import chromadb

        return chromadb.HttpClient(host=self.host, port=self.port, ssl=self.ssl, headers=self.headers or None)

    def _raw_collection(self) -> Any:
        """The collection without its embedding function (rows come with their vectors)."""
        from chromadb.api.models.Collection import Collection

        server = self._client()._server
        model = server.get_collection(name=self.collection)
        return Collection(client=server, model=model, embedding_function=None)

    def open(self) -> Any:
        """The collection opened with its PrivateEmbedding (key from :attr:`secret`); on the driver."""
        from .chroma import open_collection

        key = self.secret.read()
        try:
            return open_collection(self._client(), self.collection, key=key)
        finally:
            key = None

    def index_state(self) -> dict[str, Any] | None:
        """The collection's keyed entity index (HMACs and labels) for :class:`ProtectDocuments`."""
        from .chroma import _read_index, _sanitizer_of

        col = self.open()
        san = _sanitizer_of(col._embedding_function)
        return None if san is None else _read_index(col, san)

    def stored_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the collection already holds (to resume a job)."""
        col = self._raw_collection()
        out: set[str] = set()
        for start in range(0, len(ids), 5000):
            out.update(col.get(ids=list(ids[start:start + 5000]), include=[])["ids"])
        return out

    # -- Datasink ---------------------------------------------------------------------------
    def get_name(self) -> str:
        return "PrivateVectorsChroma"

    def on_write_start(self, schema: Any = None) -> None:
        self.open()  # the collection exists, records a PrivateEmbedding, and the driver's key matches it

    def write(self, blocks: Iterable[Any], ctx: Any) -> dict[str, str | None]:
        col = self._raw_collection()
        parts = []
        for rows in _blocks_rows(blocks):
            if not rows.get("id"):
                continue
            metas = [json.loads(m) if m else None for m in rows["metadata"]]
            vectors = np.asarray(rows["embedding"], dtype=np.float32)
            for a in range(0, len(rows["id"]), _UPSERT_ROWS):  # under the server's batch limit
                b = a + _UPSERT_ROWS
                kwargs: dict[str, Any] = {"ids": list(rows["id"][a:b]), "embeddings": vectors[a:b]}
                if any(rows["document"][a:b]):
                    kwargs["documents"] = list(rows["document"][a:b])
                if any(m is not None for m in metas[a:b]):
                    kwargs["metadatas"] = metas[a:b]
                col.upsert(**kwargs)
            parts.append(_batch_index(rows.get(INDEX_COLUMN, [])))
        return merge_index_changes(parts)

    def on_write_complete(self, write_result: Any) -> None:
        from .chroma import _sanitizer_of, write_query_index

        returns = getattr(write_result, "write_returns", write_result)
        changes = job_index_changes((r for r in returns if r), self.job, self.stored_entries)
        if not changes:
            return
        col = self.open()
        san = _sanitizer_of(col._embedding_function)
        if san is None:
            raise InvalidParameterError("rows", "no keyed index entries for a collection without a keyed text stage",
                                        Described(f"{len(changes)} entries"))
        write_query_index(col, san, changes)


class ParquetDatasink(_datasink_base()):  # type: ignore[misc]
    """Protected rows as Parquet files in ``path``, one per block (named by a hash of its ids).

    The index entries are written beside them as ``_index-<hash>.json`` per block (readers of
    the folder as a Parquet dataset skip names starting with ``_``); merge them
    with :meth:`index_changes`. Vectors are a fixed-size list column.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.job: Any = None  # the job's frozen index, set by protect_dataset
        self.stored_entries: dict[str, str] = {}

    def on_write_complete(self, write_result: Any) -> None:
        _write_job(self.path, self.job, self.stored_entries)

    def get_name(self) -> str:
        return "PrivateVectorsParquet"

    def on_write_start(self, schema: Any = None) -> None:
        Path(self.path).mkdir(parents=True, exist_ok=True)

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        written = 0
        for rows in _blocks_rows(blocks):
            if not rows.get("id"):
                continue
            name = _block_name(rows["id"])
            vectors = np.asarray(rows["embedding"], dtype=np.float32)
            table = pa.table({"id": rows["id"], "document": rows["document"], "metadata": rows["metadata"],
                              "embedding": pa.FixedSizeListArray.from_arrays(vectors.ravel(), vectors.shape[1])})
            _atomic(Path(self.path) / f"part-{name}.parquet", lambda p, t=table: pq.write_table(t, p))
            index = _batch_index(rows.get(INDEX_COLUMN, []))
            _atomic(Path(self.path) / f"_index-{name}.json",
                    lambda p, d=index: Path(p).write_text(json.dumps(d, sort_keys=True)))
            written += len(rows["id"])
        return written

    def index_changes(self) -> dict[str, str | None]:
        """The job's keyed index changes: its frozen index (``_job.json``, written when every
        task finished) and the entries of every block written, merged in an order-free way."""
        return _job_changes(self.path, (json.loads(p.read_text()) for p in sorted(Path(self.path).glob("_index-*.json"))))

    def stored_ids(self, ids: Sequence[str] | None = None) -> set[str]:
        """The ids already written (all, or those among ``ids``)."""
        import pyarrow.parquet as pq

        out: set[str] = set()
        for p in Path(self.path).glob("part-*.parquet"):
            out.update(pq.read_table(p, columns=["id"]).column("id").to_pylist())
        return out if ids is None else out & set(ids)


def _write_job(path: str, job: Any, stored: Mapping[str, str]) -> None:
    """The job's frozen index and the stored entries it was merged against, beside the rows."""
    if job is not None:
        data = {"job": job.to_json(), "stored": dict(stored)}
        _atomic(Path(path) / "_job.json", lambda p: Path(p).write_text(json.dumps(data, sort_keys=True)))


def _job_changes(path: str, parts: Iterable[Mapping[str, str | None]]) -> dict[str, str | None]:
    from ..text.entity_index import JobIndex

    job_file = Path(path) / "_job.json"
    if not job_file.exists():
        return merge_index_changes(parts)
    data = json.loads(job_file.read_text())
    return job_index_changes(parts, JobIndex.from_json(data["job"]), data.get("stored") or {})


def _atomic(path: Path, write: Any) -> None:
    """Write through a temporary file and rename: a retried or killed task leaves no torn file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(str(tmp))
    os.replace(tmp, path)


class FaissShardDatasink(_datasink_base()):  # type: ignore[misc]
    """Protected rows as FAISS shards in ``path``: one flat index (+ a JSON sidecar with ids,
    documents, metadata and index entries) per block, named by a hash of its ids.

    Search them with :class:`FaissShards` (fan-out over shards, merged top-k) or merge them
    into one index with :meth:`FaissShards.merged`.

    Args:
        path: the folder.
        metric: ``"ip"`` (default; also for ``cosine`` stores, whose vectors are normalised) or ``"l2"``.
    """

    def __init__(self, path: str | os.PathLike[str], *, metric: str = "ip") -> None:
        if metric not in ("ip", "l2"):
            raise InvalidParameterError("metric", "'ip' or 'l2'", metric)
        self.path, self.metric = str(path), metric
        self.job: Any = None  # the job's frozen index, set by protect_dataset
        self.stored_entries: dict[str, str] = {}

    def on_write_complete(self, write_result: Any) -> None:
        _write_job(self.path, self.job, self.stored_entries)

    def get_name(self) -> str:
        return "PrivateVectorsFaissShards"

    def on_write_start(self, schema: Any = None) -> None:
        Path(self.path).mkdir(parents=True, exist_ok=True)

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        from .faiss import _faiss

        faiss = _faiss()
        written = 0
        for rows in _blocks_rows(blocks):
            if not rows.get("id"):
                continue
            name = _block_name(rows["id"])
            X = np.ascontiguousarray(np.asarray(rows["embedding"], dtype=np.float32))
            index = faiss.IndexFlatIP(X.shape[1]) if self.metric == "ip" else faiss.IndexFlatL2(X.shape[1])
            index.add(X)
            _atomic(Path(self.path) / f"shard-{name}.faiss", lambda p, ix=index: faiss.write_index(ix, p))
            side = {"ids": rows["id"], "documents": rows["document"], "metadata": rows["metadata"],
                    "metric": self.metric, "index": _batch_index(rows.get(INDEX_COLUMN, []))}
            _atomic(Path(self.path) / f"shard-{name}.json",
                    lambda p, s=side: Path(p).write_text(json.dumps(s, ensure_ascii=False)))
            written += len(rows["id"])
        return written


class FaissShards:
    """Read the shards a :class:`FaissShardDatasink` wrote: fan-out search or one merged index."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from .faiss import _faiss

        faiss = _faiss()
        self.path = Path(path)
        self.shards: list[tuple[Any, dict[str, Any]]] = []
        for side in sorted(self.path.glob("shard-*.json")):
            index_file = side.with_suffix(".faiss")
            if index_file.exists():
                self.shards.append((faiss.read_index(str(index_file)), json.loads(side.read_text())))
        self.metric = self.shards[0][1]["metric"] if self.shards else "ip"

    def __len__(self) -> int:
        return sum(int(ix.ntotal) for ix, _ in self.shards)

    def stored_ids(self, ids: Sequence[str] | None = None) -> set[str]:
        out = {i for _, side in self.shards for i in side["ids"]}
        return out if ids is None else out & set(ids)

    def index_changes(self) -> dict[str, str | None]:
        """The job's keyed index changes (as :meth:`ParquetDatasink.index_changes`)."""
        return _job_changes(str(self.path), (side.get("index") or {} for _, side in self.shards))

    def search(self, Q: Any, k: int = 10) -> tuple[np.ndarray, list[list[str]]]:
        """Top-``k`` (scores, ids) per query vector over all shards (each shard searched, merged)."""
        Q = np.ascontiguousarray(np.atleast_2d(np.asarray(Q, dtype=np.float32)))
        rows: list[list[tuple[float, str]]] = [[] for _ in range(len(Q))]
        for index, side in self.shards:
            scores, idx = index.search(Q, min(k, int(index.ntotal)))
            for r in range(len(Q)):
                rows[r] += [(float(s), side["ids"][int(i)]) for s, i in zip(scores[r], idx[r], strict=True) if i >= 0]
        best = [sorted(r, key=lambda t: (-t[0] if self.metric == "ip" else t[0], t[1]))[:k] for r in rows]
        return (np.array([[s for s, _ in r] for r in best], dtype=np.float32), [[i for _, i in r] for r in best])

    def merged(self) -> tuple[Any, list[str]]:
        """One flat index of every shard (ids by position, in shard order)."""
        from .faiss import _faiss

        faiss = _faiss()
        if not self.shards:
            raise InvalidParameterError("path", "a folder with shards", Described(str(self.path)))
        d = self.shards[0][0].d
        out = faiss.IndexFlatIP(d) if self.metric == "ip" else faiss.IndexFlatL2(d)
        ids: list[str] = []
        for index, side in self.shards:
            out.add(index.reconstruct_n(0, int(index.ntotal)))
            ids += side["ids"]
        return out, ids
