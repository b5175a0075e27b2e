"""Read a persisted store the library wrote, for :func:`private_vectors.eval.audit.audit`.

One small reader per store kind turns a folder into a :class:`StoreSnapshot` — the
PrivateEmbedding configuration it recorded, its ids, stored vectors, stored texts, space and
keyed query index — so a change of a store's format is one function here:

* ``"chroma"``: a Chroma persistent folder and a collection written through a PrivateEmbedding
  (``add_documents``, ``collection.add`` with the function, or the LangChain drop-in ``Chroma``:
  the same format; its default collection name is ``"langchain"``);
* ``"faiss"``: a :class:`~private_vectors.integrations.faiss.PrivateFaissIndex` folder.

The store is never opened in place: its folder is copied into a private temporary folder and
the copy is read and deleted, so the audited folder stays byte-identical (Chroma's SQLite and
FAISS's interrupted-save recovery may otherwise write to it).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ArtefactError, ConfigMismatchError, InvalidParameterError

__all__ = ["STORE_KINDS", "StoreSnapshot", "detect_kind", "embedding_for", "read_store"]

STORE_KINDS = ("chroma", "langchain", "faiss")
"""Store kinds :func:`read_store` reads (``"langchain"`` is the drop-in Chroma's folder)."""


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
        embedding: the store's PrivateEmbedding, rebuilt with the key, its keyed query index loaded.
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
    """``"faiss"`` for a folder with a PrivateFaissIndex sidecar, else ``"chroma"``."""
    from ..integrations.faiss import SIDECAR

    return "faiss" if (Path(path) / SIDECAR).is_file() else "chroma"


def read_store(path: str | Path, *, kind: str = "auto", collection: str | None = None, key: Any = None
               ) -> StoreSnapshot:
    """Read the store at ``path`` (see the module docstring) without writing to it, and rebuild
    its PrivateEmbedding with ``key`` (:func:`embedding_for`; its keyed query index loaded).

    Args:
        path: the store's folder.
        kind: ``"auto"`` (by the folder's files), ``"chroma"``, ``"langchain"`` or ``"faiss"``.
        collection: the Chroma collection (default: the folder's only collection; the
            LangChain drop-in's default ``"langchain"`` when it exists).

    Raises:
        InvalidParameterError: no such folder, an unknown kind or an ambiguous collection.
        ConfigMismatchError: the store recorded no PrivateEmbedding configuration, or a wrong or
            missing key.
    """
    from ..keys import SecretKey

    try:
        secret = SecretKey.resolve(key, min_bytes=1)
    finally:
        del key
    folder = Path(path)
    if not folder.is_dir():
        raise InvalidParameterError("store", "an existing store folder", str(path))
    if kind == "auto":
        kind = detect_kind(folder)
    if kind not in STORE_KINDS:
        raise InvalidParameterError("kind", f"'auto' or one of {list(STORE_KINDS)}", kind)
    with _private_copy(folder) as copy:
        if kind == "faiss":
            return _read_faiss(copy, str(folder), secret)
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
        if ef.get("name") != CHROMA_NAME or not isinstance(ef.get("config"), dict):
            raise ConfigMismatchError(
                f"{label} has no recorded PrivateEmbedding configuration (found {ef.get('name')!r}); "
                "only stores written through a PrivateEmbedding can be audited")
        space = (conf.get("hnsw") or {}).get("space") or (conf.get("spann") or {}).get("space") or "l2"
        embedding = embedding_for(dict(ef["config"]), label, secret)
        # read the collection without an embedding function (Chroma rebuilds nothing)
        from chromadb.api.models.Collection import Collection

        col = Collection(client=client._server, model=model, embedding_function=None)
        ids, vecs, texts = _chroma_rows(col)
        if load_query_index(col, embedding):
            embedding.pipeline.query_index_state()  # load it now, while the copy exists (it loads lazily)
    finally:
        _close(client)
    return StoreSnapshot(kind, label, dict(ef["config"]), ids, vecs, texts, str(space), embedding,
                         extra={"index_files": index_files})


def _chroma_rows(col: Any, batch: int = 2000) -> tuple[list[str], np.ndarray, list[str | None]]:
    ids: list[str] = []
    vecs: list[Any] = []
    texts: list[str | None] = []
    total = col.count()
    for offset in range(0, total, batch):
        res = col.get(include=["embeddings", "documents"], limit=batch, offset=offset)
        docs = res["documents"] if res["documents"] is not None else [None] * len(res["ids"])
        ids += [str(i) for i in res["ids"]]
        vecs += list(res["embeddings"] if res["embeddings"] is not None else [])
        texts += [d or None for d in docs]
    if not ids:
        raise ArtefactError(f"{col.name!r}: the collection is empty")
    return ids, np.asarray(vecs, dtype=np.float32), texts


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

    from ..integrations.faiss import FORMAT, INDEX_FILE, SIDECAR

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
    embedding = embedding_for(dict(sidecar["embedding"]), label, secret)
    if sidecar.get("query_index"):
        embedding.pipeline.load_query_index_state(sidecar["query_index"])
    return StoreSnapshot("faiss", label, dict(sidecar["embedding"]), [str(i) for i in raw_ids], vecs, texts,
                         str(sidecar.get("space", "ip")), embedding, {"metric": sidecar.get("metric")})


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
    from ..keys import Keying

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
