"""Where a Ray job writes: a Chroma server (:class:`ChromaDatasink`), Parquet files and FAISS shards
(one file per block, named by a hash of its ids, so a retried task rewrites the same file); the
store's entity index is written once, by the sink's driver-side ``on_write_complete``."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Described, InvalidParameterError
from .ray_secrets import SecretRef
from .ray_stages import (
    INDEX_COLUMN,
    _batch_index,
    _blocks_rows,
    job_index_changes,
    merge_index_changes,
)

__all__ = ["ChromaDatasink", "FaissShardDatasink", "FaissShards", "ParquetDatasink"]


_UPSERT_ROWS = 1000


def _datasink_base() -> type:
    try:
        from ray.data import Datasink
    except ImportError:  # pragma: no cover - optional dependency
        return object
    return Datasink


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
        from .chroma_query_index import _read_index, _sanitizer_of

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
        from .chroma_query_index import _sanitizer_of, write_query_index

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


class _FolderSink(_datasink_base()):  # type: ignore[misc]
    """A sink that writes one file per block into the folder ``path`` and, when the write
    completes, the job's index entries beside them (the Parquet and FAISS-shard sinks)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.job: Any = None  # the job's frozen index, set by protect_dataset
        self.stored_entries: dict[str, str] = {}

    def on_write_start(self, schema: Any = None) -> None:
        Path(self.path).mkdir(parents=True, exist_ok=True)

    def on_write_complete(self, write_result: Any) -> None:
        _write_job(self.path, self.job, self.stored_entries)


class ParquetDatasink(_FolderSink):
    """Protected rows as Parquet files in ``path``, one per block (named by a hash of its ids).

    The index entries are written beside them as ``_index-<hash>.json`` per block (readers of
    the folder as a Parquet dataset skip names starting with ``_``); merge them
    with :meth:`index_changes`. Vectors are a fixed-size list column.
    """

    def get_name(self) -> str:
        return "PrivateVectorsParquet"

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        written = 0
        for rows in _blocks_rows(blocks):
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
    from ..text.job_index import JobIndex

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


class FaissShardDatasink(_FolderSink):
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
        super().__init__(path)
        self.metric = metric

    def get_name(self) -> str:
        return "PrivateVectorsFaissShards"

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        from .faiss_build import _faiss

        faiss = _faiss()
        written = 0
        for rows in _blocks_rows(blocks):
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
        from .faiss_build import _faiss

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
        from .faiss_build import _faiss

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
