"""Ray Data: protect and store documents on a cluster (``pip install 'private-vectors[ray]'``).

A job is ``read → map_batches(ProtectDocuments) → write_datasink(sink)``::

    import ray
    from private_vectors.integrations.ray import ChromaDatasink, ProtectDocuments, SecretRef

    config = embedding.get_config()  # JSON: no key, no seed
    ds = ray.data.read_parquet("corpus/")  # columns: id, text
    protected = ds.map_batches(ProtectDocuments, fn_constructor_kwargs={
        "config": config, "secret": SecretRef(env="PRIVATE_VECTORS_KEY")},
        batch_size=256, concurrency=2, num_cpus=1)
    protected.write_datasink(ChromaDatasink("notes", host="chroma.internal", port=8000))

**The key never travels through Ray.** :class:`ProtectDocuments` gets the embedding's JSON
configuration and a :class:`SecretRef` — the *name* of an environment variable set outside Ray
(in the shell or service that runs ``ray start`` on each node) or the *path* of a file readable
on the workers — and reads the key itself when its actor starts. Nothing that holds key
material, not even a derived subkey, is a task argument, an actor argument, an object in Ray's
object store or part of a ``runtime_env`` (which Ray keeps in its control store and shows on its
dashboard): pass a key through ``runtime_env={"env_vars": ...}`` and it is in all three places.

Per worker: one ``PrivateEmbedding`` per actor (model, text stage, keyed index of the batches
it protected), built once from the configuration. Global: the store, and its keyed entity index,
which only the sink's driver-side ``on_write_complete`` writes (one writer), merging the batches'
index entries in an order-free way (an entry a batch dropped as an ordinary word stays dropped;
a strong entry beats a weak one; ties go to the first label in sorted order).

What is per worker also means: the text stage's second pass (an entity detected in one document
is replaced wherever it appears) sees the batches of its own actor only, so which occurrences
of an entity *missed by the detectors* are replaced can depend on partitioning; every detected
span is replaced on every path.

Rows out of :class:`ProtectDocuments`: ``id``, ``document`` (the sanitized text; empty when no
text is stored), ``embedding`` (float32), ``metadata`` (JSON: the row's metadata and its
encrypted restore record under ``pv_restore``) and ``pv_index`` (the keyed index entries the
batch added, JSON, on the batch's first row). Sinks: :class:`ChromaDatasink` (a Chroma server
through ``HttpClient``, upsert by id), :class:`ParquetDatasink` and :class:`FaissShardDatasink`
(one file per block, named by a hash of its ids: a retried task rewrites the same file).
Writes are idempotent, so a failed job is resumed by running it again; ``skip_ids`` (or a sink's
:meth:`stored_ids`) skips the documents already stored.

Raw text passes through Ray's object store (the input blocks) and may be spilled to the local
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

from ..errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError

__all__ = ["ChromaDatasink", "FaissShardDatasink", "FaissShards", "ParquetDatasink", "ProtectDocuments",
           "SecretRef", "merge_index_changes"]

INDEX_COLUMN = "pv_index"
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
            raise InvalidParameterError("secret", "exactly one of env= and file=", f"env={self.env!r}, file={self.file!r}")
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
            raise InvalidParameterError("secret", "a readable key file", str(path), note=type(exc).__name__) from None
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


class ProtectDocuments:
    """Ray Data callable class: raw rows → protected rows (built once per actor).

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
    """

    def __init__(self, config: Mapping[str, Any], secret: SecretRef | None = None, *, id_column: str = "id",
                 text_column: str = "text", metadata_column: str | None = None, store_raw_text: bool = False,
                 index_state: Mapping[str, Any] | None = None) -> None:
        from ..embedding import rebuild
        from ..keys import key_scope

        if not isinstance(config, Mapping):
            raise InvalidTypeError("config", "a PrivateEmbedding.get_config() dict", config)
        ref = secret if secret is not None else SecretRef()
        if not isinstance(ref, SecretRef):
            raise InvalidTypeError("secret", "a SecretRef (an environment variable name or a file path)", "<other>")
        key = ref.read()
        try:
            with key_scope(key):
                self.embedding = rebuild(dict(config), "the Ray job's store", use_cache=False)
        finally:
            key = None
        self.id_column, self.text_column, self.metadata_column = id_column, text_column, metadata_column
        self.store_raw_text = bool(store_raw_text)
        if index_state:
            self.embedding.pipeline.load_query_index_state(dict(index_state))

    def __repr__(self) -> str:
        return f"ProtectDocuments({self.embedding!r})"

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        from ..guard import protected_path
        from ..restore import prepare_with_restore, with_records
        from .chroma import _metadata_text

        ids = [str(i) for i in batch[self.id_column]]
        texts = [str(t) for t in batch[self.text_column]]
        metas: list[Any] | None = None
        if self.metadata_column is not None:
            metas = [m if isinstance(m, Mapping) or m is None else json.loads(m) if m else None
                     for m in batch[self.metadata_column]]
        with protected_path():
            stored, vectors, records = prepare_with_restore(self.embedding, texts, ids,
                                                            store_raw_text=self.store_raw_text)
            if metas is not None:
                metas = _metadata_text(self.embedding, [None if m is None else dict(m) for m in metas], "sanitize")
        metas = with_records(metas, records, len(ids))
        san = self.embedding.sanitizer
        changes = san.take_changes() if san is not None and getattr(san, "keyed", False) else {}
        index = [json.dumps(changes, sort_keys=True) if changes else ""] + [""] * (len(ids) - 1)
        return {
            "id": np.array(ids, dtype=object),
            "document": np.array(stored if stored is not None else [""] * len(ids), dtype=object),
            "embedding": np.asarray(vectors, dtype=np.float32),
            "metadata": np.array([json.dumps(m, sort_keys=True) if m else "" for m in (metas or [None] * len(ids))],
                                 dtype=object),
            INDEX_COLUMN: np.array(index[: len(ids)], dtype=object),
        }


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
        changes = merge_index_changes(r for r in returns if r)
        if not changes:
            return
        col = self.open()
        san = _sanitizer_of(col._embedding_function)
        if san is None:
            raise InvalidParameterError("rows", "no keyed index entries for a collection without a keyed text stage",
                                        f"{len(changes)} entries")
        write_query_index(col, san, changes)


class ParquetDatasink(_datasink_base()):  # type: ignore[misc]
    """Protected rows as Parquet files in ``path``, one per block (named by a hash of its ids).

    The index entries are written beside them as ``_index-<hash>.json`` per block (readers of
    the folder as a Parquet dataset skip names starting with ``_``); merge them
    with :meth:`index_changes`. Vectors are a fixed-size list column.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)

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
        """The merged keyed index entries of every block written."""
        return merge_index_changes(json.loads(p.read_text()) for p in sorted(Path(self.path).glob("_index-*.json")))

    def stored_ids(self, ids: Sequence[str] | None = None) -> set[str]:
        """The ids already written (all, or those among ``ids``)."""
        import pyarrow.parquet as pq

        out: set[str] = set()
        for p in Path(self.path).glob("part-*.parquet"):
            out.update(pq.read_table(p, columns=["id"]).column("id").to_pylist())
        return out if ids is None else out & set(ids)


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
        """The merged keyed index entries of every shard."""
        return merge_index_changes(side.get("index") or {} for _, side in self.shards)

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
            raise InvalidParameterError("path", "a folder with shards", str(self.path))
        d = self.shards[0][0].d
        out = faiss.IndexFlatIP(d) if self.metric == "ip" else faiss.IndexFlatL2(d)
        ids: list[str] = []
        for index, side in self.shards:
            out.add(index.reconstruct_n(0, int(index.ntotal)))
            ids += side["ids"]
        return out, ids
