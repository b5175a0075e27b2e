"""Read a persisted store, for :func:`private_vectors.eval.audit.audit`.

One small reader per store kind turns a folder into a :class:`StoreSnapshot` — its ids, stored
vectors, stored texts (document text and string metadata values), space, and, for a store the
library wrote, the PrivateEmbedding configuration it recorded and its keyed query index — so a
change of a store's format is one function here:

* ``"chroma"``: a Chroma persistent folder and one collection: written through a
  PrivateEmbedding (``add_documents``, ``collection.add`` with the function, or the LangChain
  drop-in ``Chroma``), or by plain Chroma or ``langchain_chroma`` (then its recorded embedding
  function, if any, names the encoder; the drop-in's and ``langchain_chroma``'s default
  collection name is ``"langchain"``);
* ``"faiss"``: a :class:`~private_vectors.integrations.faiss.PrivateFaissIndex` folder;
* ``"langchain-faiss"``: a LangChain FAISS folder (``index.faiss`` with ``index.json`` from the
  drop-in, or ``index.pkl`` from ``langchain_community``: that pickle is read with an unpickler
  that builds only inert records of the docstore and its documents and refuses any other
  class, so no code from the file runs);
* ``"llamaindex"``: a LlamaIndex persist folder (``docstore.json`` and the default vector
  store's ``default__vector_store.json``; with ``private_vectors.json`` when
  :func:`~private_vectors.llamaindex.persist_index` wrote it).

The store is never opened in place: its folder is copied into a private temporary folder and
the copy is read and deleted, so the audited folder stays byte-identical (Chroma's SQLite and
FAISS's interrupted-save recovery may otherwise write to it).
"""

from __future__ import annotations

import contextlib
import json
import pickle
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ArtefactError, ConfigMismatchError, Described, InvalidParameterError
from .audit_sealed import sealed_view

__all__ = ["REMOTE_PROVIDERS", "STORE_KINDS", "StoreSnapshot", "detect_kind", "embedding_for", "read_store"]

STORE_KINDS = ("chroma", "langchain", "faiss", "langchain-faiss", "llamaindex")
"""Store kinds :func:`read_store` reads (``"langchain"`` is a ``langchain_chroma`` or drop-in
Chroma folder)."""

REMOTE_PROVIDERS = frozenset({"openai", "cohere", "google_palm", "google_generative_ai", "google_vertex",
                              "huggingface_server", "huggingface", "jina", "voyageai", "mistral", "amazon_bedrock",
                              "ollama", "cloudflare_workers_ai", "together_ai", "baseten", "chroma-cloud-qwen",
                              "chroma_langchain", "roboflow", "nomic", "text2vec", "instructor"})
"""Chroma embedding-function names that run remotely or outside this library (the audit never
calls a remote service)."""


@dataclass
class StoreSnapshot:
    """What a store keeps, read once.

    Attributes:
        kind: the store kind.
        where: a human name of the store (folder, collection) for messages.
        config: the PrivateEmbedding configuration the store recorded.
        ids: stored ids (strings).
        vectors: stored vectors, one row per id, as the store holds them.
        texts: the text kept per id (None where the store keeps none).
        space: the store's distance space (``"cosine"``, ``"ip"`` or ``"l2"``).
        embedding: the store's PrivateEmbedding, rebuilt with the key, its keyed query index
            loaded; None for a store written without one.
        metadata_texts: per id, the string metadata values the store keeps, joined ("" for
            none; the library's own encrypted restore records and markers left out).
        model: the encoder a plain store recorded (a Chroma embedding function's name, with its
            model when it has one), else None.
    """

    kind: str
    where: str
    config: dict[str, Any]
    ids: list[str]
    vectors: np.ndarray
    texts: list[str | None]
    space: str
    embedding: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    metadata_texts: list[str] = field(default_factory=list)
    model: str | None = None

    @property
    def protected(self) -> bool:
        """Whether the store was written through a PrivateEmbedding (it recorded one)."""
        return self.embedding is not None


@contextmanager
def _private_copy(path: Path) -> Iterator[Path]:
    """A copy of ``path`` (a folder) in a temporary folder readable only by this user."""
    tmp = Path(tempfile.mkdtemp(prefix="pv-audit-"))
    try:
        target = tmp / "store"
        shutil.copytree(path, target)
        yield target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def detect_kind(path: str | Path) -> str:
    """The store kind by the folder's files: ``docstore.json`` → ``"llamaindex"``, ``index.faiss``
    beside ``index.pkl`` or ``index.json`` → ``"langchain-faiss"``, a PrivateFaissIndex sidecar →
    ``"faiss"``, else ``"chroma"``."""
    from ..integrations.faiss import SIDECAR

    folder = Path(path)
    if (folder / "docstore.json").is_file():
        return "llamaindex"
    if (folder / "index.faiss").is_file() and ((folder / "index.pkl").is_file() or (folder / "index.json").is_file()):
        return "langchain-faiss"
    return "faiss" if (folder / SIDECAR).is_file() else "chroma"


def read_store(path: str | Path, *, kind: str = "auto", collection: str | None = None, key: Any = None
               ) -> StoreSnapshot:
    """Read the store at ``path`` (see the module docstring) without writing to it, and rebuild
    its PrivateEmbedding with ``key`` (:func:`embedding_for`; its keyed query index loaded).

    Args:
        path: the store's folder.
        kind: ``"auto"`` (by the folder's files, :func:`detect_kind`) or one of :data:`STORE_KINDS`.
        collection: the Chroma collection (default: the folder's only collection; the
            LangChain drop-in's default ``"langchain"`` when it exists).

    Raises:
        InvalidParameterError: no such folder, an unknown kind or an ambiguous collection.
        ConfigMismatchError: a store that recorded a PrivateEmbedding, with a wrong or missing key.
        ArtefactError: unreadable or inconsistent files, or an empty store.
    """
    from ..keys import SecretKey

    try:
        secret = SecretKey.resolve(key, min_bytes=1)
    finally:
        del key
    folder = Path(path)
    if not folder.is_dir():
        raise InvalidParameterError("store", "an existing store folder", Described(str(path)))
    if kind == "auto":
        kind = detect_kind(folder)
    if kind not in STORE_KINDS:
        raise InvalidParameterError("kind", f"'auto' or one of {list(STORE_KINDS)}", kind)
    with _private_copy(folder) as copy:
        if kind == "faiss":
            return _read_faiss(copy, str(folder), secret)
        if kind == "langchain-faiss":
            return _read_langchain_faiss(copy, str(folder), secret)
        if kind == "llamaindex":
            return _read_llamaindex(copy, str(folder), secret)
        return _read_chroma(copy, str(folder), collection, kind, secret)


# --------------------------------------------------------------------------- Chroma
def _collection_name(client: Any, collection: str | None, where: str) -> str:
    # the library's own side collections (the keyed query index: "pv-query-index-<id>") are not audited
    names = [n for n in (c if isinstance(c, str) else c.name for c in client.list_collections())
             if not n.startswith("pv-")]
    if collection is not None:
        if collection not in names:
            raise InvalidParameterError("collection", f"one of the store's collections {sorted(names)}", collection)
        return collection
    if len(names) == 1:
        return names[0]
    if "langchain" in names:
        return "langchain"
    raise InvalidParameterError("collection", f"the collection to audit in {where} (it holds {sorted(names)})",
                                None)


def _read_chroma(copy: Path, where: str, collection: str | None, kind: str, secret: Any) -> StoreSnapshot:
    import chromadb

    from ..config import CHROMA_NAME
    from ..integrations.chroma import load_query_index
    from ..integrations.chroma_files import folder_report

    index_files = folder_report(copy)  # before Chroma opens the copy
    client = chromadb.PersistentClient(path=str(copy))
    try:
        name = _collection_name(client, collection, where)
        model = client._server.get_collection(name, tenant=client.tenant, database=client.database)
        conf = dict(model.configuration_json or {})
        ef = conf.get("embedding_function") or {}
        label = f"collection {name!r} in {where}"
        space = (conf.get("hnsw") or {}).get("space") or (conf.get("spann") or {}).get("space") or "l2"
        protected = ef.get("name") == CHROMA_NAME and isinstance(ef.get("config"), dict)
        embedding = embedding_for(dict(ef["config"]), label, secret) if protected else None
        # read the collection without an embedding function (Chroma rebuilds nothing)
        from chromadb.api.models.Collection import Collection

        col = Collection(client=client._server, model=model, embedding_function=None)
        ids, vecs, texts, metas, raw_metas = _chroma_rows(col)
        texts, records, sealed = sealed_view(dict(ef["config"]) if protected else {}, texts, raw_metas)
        if embedding is not None and load_query_index(col, embedding):
            embedding.pipeline.query_index_state()  # load it now, while the copy exists (it loads lazily)
    finally:
        _close(client)
    extra: dict[str, Any] = {"index_files": index_files}
    if sealed is not None:
        extra.update({"sealed": sealed, "records": records})
    return StoreSnapshot(kind, label, dict(ef["config"]) if protected else {}, ids, vecs, texts, str(space),
                         embedding, extra=extra, metadata_texts=metas, model=None if protected else _chroma_model(ef))


def _chroma_model(ef: dict[str, Any]) -> str | None:
    """The encoder a plain collection recorded: ``"default"`` (Chroma's all-MiniLM-L6-v2),
    ``"sentence_transformer:<model>"``, another embedding function's name, or None."""
    name = ef.get("name")
    if not name:
        return None
    config = ef.get("config") or {}
    model = config.get("model_name") or config.get("model")
    return f"{name}:{model}" if model else str(name)


def _chroma_rows(col: Any, batch: int = 2000) -> tuple[list[str], np.ndarray, list[str | None], list[str], list[Any]]:
    ids: list[str] = []
    vecs: list[Any] = []
    texts: list[str | None] = []
    metas: list[str] = []
    raw: list[Any] = []
    total = col.count()
    for offset in range(0, total, batch):
        res = col.get(include=["embeddings", "documents", "metadatas"], limit=batch, offset=offset)
        docs = res["documents"] if res["documents"] is not None else [None] * len(res["ids"])
        ids += [str(i) for i in res["ids"]]
        vecs += list(res["embeddings"] if res["embeddings"] is not None else [])
        texts += [d or None for d in docs]
        got = list(res["metadatas"] or [None] * len(res["ids"]))
        metas += [metadata_text(m) for m in got]
        raw += got
    if not ids:
        raise ArtefactError(f"{col.name!r}: the collection is empty")
    return ids, np.asarray(vecs, dtype=np.float32), texts, metas, raw


_OWN_METADATA = ("pv_restore", "private_vectors", "pv_sealed")
"""Metadata the library writes itself: encrypted restore records, the sanitized marker and sealed records."""


def metadata_text(metadata: Any) -> str:
    """A document's string metadata values, in order, joined by newlines (the library's own
    records and markers left out; nested dicts and lists walked)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if value.strip() and not value.startswith(("pvr1.", "pvs1.")):
                out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                if k not in _OWN_METADATA:
                    walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(metadata or {})
    return "\n".join(out)


def _close(client: Any) -> None:
    """Release this client's Chroma system on the copy (only its own: other clients in the
    process are untouched), so the copy can be deleted."""
    close = getattr(client, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):  # best effort: the copy is deleted anyway
            close()
        return
    from chromadb.api.shared_system_client import SharedSystemClient

    with contextlib.suppress(Exception):  # older chromadb: stop and forget this path's system only
        system = SharedSystemClient._identifier_to_system.pop(client._identifier, None)
        if system is not None:
            system.stop()


# --------------------------------------------------------------------------- FAISS
def _read_faiss(copy: Path, where: str, secret: Any) -> StoreSnapshot:
    import faiss  # the `faiss` extra (the command line names it when missing)

    from ..integrations.faiss_files import FORMAT, INDEX_FILE, SIDECAR

    try:
        sidecar = json.loads((copy / SIDECAR).read_text())
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"{where}: no readable {SIDECAR} ({exc})") from exc
    label = f"FAISS index {where!r}"
    if sidecar.get("format") != FORMAT or not isinstance(sidecar.get("embedding"), dict):
        raise ConfigMismatchError(f"{label} has no recorded PrivateEmbedding configuration "
                                  f"(format {sidecar.get('format')!r}, expected {FORMAT!r})")
    index = faiss.read_index(str(copy / INDEX_FILE))
    raw_ids = list(sidecar.get("ids", []))
    stored = sidecar.get("texts", {})
    vecs = np.vstack([index.reconstruct(int(i)) for i in raw_ids]).astype(np.float32) if raw_ids \
        else np.zeros((0, index.d), np.float32)
    texts = [stored.get(str(i)) or None for i in raw_ids]
    meta = sidecar.get("metadata") or {}
    texts, records, sealed = sealed_view(dict(sidecar["embedding"]), texts, [meta.get(str(i)) for i in raw_ids])
    embedding = embedding_for(dict(sidecar["embedding"]), label, secret)
    if sidecar.get("query_index"):
        embedding.pipeline.load_query_index_state(sidecar["query_index"])
    extra: dict[str, Any] = {"metric": sidecar.get("metric")}
    if sealed is not None:  # records bound to the ids the index holds (string ids through its map)
        held = sidecar.get("string_ids") or {}
        extra.update({"sealed": sealed, "records": records, "record_ids": [str(held.get(str(i), i)) for i in raw_ids]})
    return StoreSnapshot("faiss", label, dict(sidecar["embedding"]), [str(i) for i in raw_ids], vecs, texts,
                         str(sidecar.get("space", "ip")), embedding, extra,
                         metadata_texts=[metadata_text(meta.get(str(i))) for i in raw_ids])


# --------------------------------------------------------------------------- LangChain FAISS
class _Record:
    """An inert stand-in for a pickled object: it keeps the state it is given, nothing more."""

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _RecordUnpickler(pickle.Unpickler):
    """Reads ``langchain_community``'s ``index.pkl`` (its docstore and id map) without running
    code from the file: the docstore and document classes become :class:`_Record`, any other
    class is refused (Python's "Restricting Globals", the ``pickle`` module documentation)."""

    ALLOWED = frozenset({("langchain_community.docstore.in_memory", "InMemoryDocstore"),
                         ("langchain_core.documents.base", "Document")})

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.ALLOWED:
            return _Record
        raise ArtefactError(f"index.pkl names {module}.{name}: not a LangChain FAISS docstore (refused unread)")


def _fields(record: Any) -> dict[str, Any]:
    """A pickled pydantic or plain object's fields, from a :class:`_Record`'s state."""
    state = getattr(record, "state", None)
    if isinstance(state, tuple):  # (dict, slots) from __reduce_ex__ without __getstate__
        state = state[0]
    if isinstance(state, dict) and isinstance(state.get("__dict__"), dict):
        return dict(state["__dict__"])
    return dict(state or {}) if isinstance(state, dict) else {}


def _read_langchain_faiss(copy: Path, where: str, secret: Any) -> StoreSnapshot:
    import faiss  # the `faiss` extra (the command line names it when missing)

    label = f"LangChain FAISS folder {where!r}"
    index = faiss.read_index(str(copy / "index.faiss"))
    sidecar_file = copy / "index.json"
    if sidecar_file.is_file():  # the private_vectors drop-in: JSON, its PrivateEmbedding recorded
        sidecar = json.loads(sidecar_file.read_text(encoding="utf-8"))
        docs = sidecar.get("documents") or []
        ids = [str(d["id"]) for d in docs]
        texts = [d.get("page_content") or None for d in docs]
        metas = [metadata_text(d.get("metadata")) for d in docs]
        config = sidecar.get("embedding")
        texts, records, sealed = sealed_view(dict(config) if isinstance(config, dict) else {}, texts,
                                             [d.get("metadata") for d in docs])
        embedding = embedding_for(dict(config), label, secret) if isinstance(config, dict) else None
        if embedding is not None and sidecar.get("query_index"):
            embedding.pipeline.load_query_index_state(sidecar["query_index"])
        space = "ip" if "INNER" in str(sidecar.get("distance_strategy", "")).upper() else "l2"
    else:
        with (copy / "index.pkl").open("rb") as fh:
            try:
                docstore, positions = _RecordUnpickler(fh).load()
            except ArtefactError as exc:  # a class outside the docstore's: refused, nothing of it ran
                raise ArtefactError(f"{label}: {exc}") from None
            except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
                raise ArtefactError(f"{label}: index.pkl is not a LangChain FAISS docstore "
                                    f"({type(exc).__name__})") from None
        by_id = {str(k): _fields(v) for k, v in (_fields(docstore).get("_dict") or {}).items()}
        order = sorted(positions)
        ids = [str(positions[n]) for n in order]
        texts = [by_id.get(i, {}).get("page_content") or None for i in ids]
        metas = [metadata_text(by_id.get(i, {}).get("metadata")) for i in ids]
        config, embedding = {}, None
        space = "ip" if index.metric_type == faiss.METRIC_INNER_PRODUCT else "l2"
        sealed = None
    if not ids:
        raise ArtefactError(f"{label}: the store is empty")
    if index.ntotal != len(ids):
        raise ArtefactError(f"{label}: index.faiss holds {index.ntotal} vectors for {len(ids)} documents")
    vecs = np.vstack([index.reconstruct(n) for n in range(index.ntotal)]).astype(np.float32)
    extra = {"sealed": sealed, "records": records} if sealed is not None else {}
    return StoreSnapshot("langchain-faiss", label, dict(config or {}), ids, vecs, texts, space, embedding,
                         extra, metadata_texts=metas)


# --------------------------------------------------------------------------- LlamaIndex
def _node_text(data: dict[str, Any]) -> str | None:
    text = data.get("text")
    if text is None and isinstance(data.get("text_resource"), dict):
        text = data["text_resource"].get("text")
    return text or None


def _read_llamaindex(copy: Path, where: str, secret: Any) -> StoreSnapshot:
    label = f"LlamaIndex folder {where!r}"
    try:
        docstore = json.loads((copy / "docstore.json").read_text(encoding="utf-8"))
        vector_file = copy / "default__vector_store.json"
        vectors = json.loads(vector_file.read_text(encoding="utf-8")) if vector_file.is_file() else {}
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"{label}: unreadable docstore.json or default__vector_store.json "
                            f"({type(exc).__name__})") from None
    nodes = {k: (v.get("__data__") or {}) for k, v in (docstore.get("docstore/data") or {}).items()}
    embedded = vectors.get("embedding_dict") or {}
    ids = [i for i in nodes if i in embedded]
    if not ids:
        raise ArtefactError(f"{label}: no node with a vector in default__vector_store.json (an index over "
                            "another vector store: audit that store's folder)")
    config: dict[str, Any] = {}
    embedding = None
    recorded = copy / "private_vectors.json"
    if recorded.is_file():  # written by private_vectors.llamaindex.persist_index
        record = json.loads(recorded.read_text(encoding="utf-8"))
        config = dict(record.get("embedding") or {})
        embedding = embedding_for(config, label, secret) if config else None
        if embedding is not None and record.get("query_index"):
            embedding.pipeline.load_query_index_state(record["query_index"])
    return StoreSnapshot("llamaindex", label, config, ids, np.asarray([embedded[i] for i in ids], dtype=np.float32),
                         [_node_text(nodes[i]) for i in ids], "cosine", embedding,
                         metadata_texts=[metadata_text(nodes[i].get("metadata")) for i in ids])


# --------------------------------------------------------------------------- the embedding
def embedding_for(config: dict[str, Any], where: str, secret: Any = None) -> Any:
    """The store's PrivateEmbedding rebuilt from its recorded configuration with ``secret``
    (a :class:`~private_vectors.keys.SecretKey`, checked against the store's check value). A
    keyed store needs it: its text stage maps query names through the key.

    Raises:
        ConfigMismatchError: a wrong key, or no key for a keyed store (naming ``where``).
    """
    import warnings

    from ..config import rebuild_arguments
    from ..embedding import PrivateEmbedding
    from ..errors import PrivacyWarning
    from ..keying import Keying

    stored = Keying.stored_fields(config)
    if stored["keyed"] and secret is None:
        raise ConfigMismatchError(f"{where} was written with a key: give the same key (key=..., the variable "
                                  "named by --key-env, or PRIVATE_VECTORS_KEY) to audit it")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        ef = PrivateEmbedding(**rebuild_arguments(config), key=secret if stored["keyed"] else None)
    ef.pipeline.bind(config, where)  # a wrong key raises ConfigMismatchError here
    return ef
