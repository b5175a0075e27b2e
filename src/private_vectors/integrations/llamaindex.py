"""LlamaIndex integration: sanitize nodes before they are embedded and stored.

LlamaIndex's own PII postprocessors run *after* retrieval, so its stores (the docstore, the
default ``SimpleVectorStore``, Chroma through ``llama-index-vector-stores-chroma``) hold the raw
text. Two components put the text stage in front of the store instead:

- :class:`SanitizeNodes`, an ingestion ``TransformComponent``: each node's text and string
  metadata go through the PrivateEmbedding's text stage (once: a sanitized node is marked and
  never sanitized again), and the hashes LlamaIndex keeps of related nodes (an unkeyed SHA-256 of
  the raw text, which a dictionary reverses) are dropped. A node's own ``hash`` is recomputed
  by LlamaIndex from its (now sanitized) content.
- :class:`PrivateLlamaEmbedding`, a ``BaseEmbedding`` over the PrivateEmbedding: the text of a
  node :class:`SanitizeNodes` produced is embedded as it is (``embed_sanitized``: never
  sanitized twice); any other text is sanitized first, once, with a
  :class:`~private_vectors.errors.PrivacyWarning` (the store it is embedded for may keep it raw).
  Queries go through ``embed_query_array`` (the query side of the text stage). Used as a
  transformation it sanitizes the nodes it embeds, so the stored node is the embedded one.

The protected call::

    ef = PrivateEmbedding(concept="PII", eps=10)
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(documents))
    index = VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef))
    persist_index(index, "folder")                 # LlamaIndex's files + private_vectors.json
    index = load_index("folder", key=...)          # the stored PrivateEmbedding, checked key

With ``llama-index-vector-stores-chroma``, create the collection with
``private_vectors.chroma.create_collection(client, name, ef)`` (it records the configuration)
and hand it to :func:`chroma_vector_store` (LlamaIndex's ``ChromaVectorStore``, with the heap
bytes Chroma leaves in its index files zeroed after each write); reopen it with
``private_vectors.chroma.open_collection(client, name, key=...)`` (another configuration or key
is refused) and :func:`index_from_collection`.

LlamaIndex hashes and caches what it is *given*: ``VectorStoreIndex.from_documents`` records an
unkeyed SHA-256 of each input document in the docstore, an ``IngestionPipeline`` keys its cache by
a hash of each step's input nodes and stores each step's output there (``pipeline.persist()``
writes it to ``llama_cache``), and a pipeline with a docstore stores the input documents. So
protect the documents *before* LlamaIndex sees them:

- :class:`PrivateIngestionPipeline`, an ``IngestionPipeline`` that protects its inputs (documents,
  nodes, reader output) before it hashes, caches or stores anything;
- :func:`protect_documents` for ``from_documents`` and your own code: sanitized copies of the
  documents, whose ``hash`` (the key of LlamaIndex's de-duplication) is an HMAC of the raw
  document under a subkey of the key (:mod:`private_vectors.integrations._hashing`): stable
  across runs, so an unchanged document is skipped and a changed one replaced, yet no dictionary
  reverses it. Without a key the hash is LlamaIndex's own, over the sanitized document.

A plain ``IngestionPipeline`` with a cache (the default) or a docstore that reaches
:class:`SanitizeNodes` or :class:`PrivateLlamaEmbedding` with unsanitized nodes, and
``from_documents`` with unsanitized documents, warn once (a
:class:`~private_vectors.errors.PrivacyWarning`): the raw documents are then in the cache, the
docstore or its hashes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import (
    ArtefactError,
    InvalidParameterError,
    InvalidTypeError,
    ModelNotAvailableError,
    PrivacyWarning,
    SealedStoreError,
)
from ..guard import RAW_TEXT_MESSAGE, on_protected_path, protected_path, store_on_stack
from ..restore import RESTORE_KEY, sanitize_recorded, seal_records
from ..sealed.stores import require_key
from ._hashing import record_hasher
from ._stored import check_metadata_text, sanitize_metadatas, stored_embedding

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.schema import (
        BaseNode,
        Document,
        MetadataMode,
        NodeRelationship,
        RelatedNodeInfo,
        TextNode,
        TransformComponent,
    )
except ImportError as exc:  # pragma: no cover - optional dependency
    raise ModelNotAvailableError("the LlamaIndex components need llama-index-core: "
                                 "pip install 'private-vectors[llamaindex]'") from exc

__all__ = ["CONFIG_FILE", "MARKER", "PrivateIngestionPipeline", "PrivateLlamaEmbedding", "SanitizeNodes",
           "chroma_vector_store", "index_from_collection", "load_index", "persist_index", "protect_documents"]

CONFIG_FILE = "private_vectors.json"
"""The file :func:`persist_index` writes beside LlamaIndex's own: the PrivateEmbedding's config."""
_FORMAT = "private_vectors.llamaindex/1"

MARKER = "private_vectors"
"""Metadata key marking a sanitized node (excluded from the embedded and the LLM text)."""

_LLAMA_ADVICE = ("With LlamaIndex, protect the documents before it hashes or stores them: "
                 "PrivateIngestionPipeline, or protect_documents(embedding, documents) before from_documents.")

_SALT = secrets.token_bytes(16)  # in-memory digests of the texts SanitizeNodes produced


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=_SALT, digest_size=16).digest()


def _registry(embedding: PrivateEmbedding) -> set[bytes]:
    """The digests of embed texts :class:`SanitizeNodes` produced for ``embedding`` (this process)."""
    return embedding.__dict__.setdefault("_llamaindex_sanitized", set())


def _check_embedding(embedding: Any) -> PrivateEmbedding:
    if not isinstance(embedding, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    return embedding


def _seals(embedding: PrivateEmbedding) -> bool:
    """Whether ``embedding`` seals (a key, ``seal`` not False): nodes are stored as markers and
    records (:mod:`~private_vectors.integrations.llamaindex_sealed`)."""
    return bool(embedding.pipeline.seal.sealed)


_UNSEALED_STORE = ("key: this PrivateEmbedding seals (it has a key), and LlamaIndex is embedding nodes it has "
                   "not sealed, whose sanitized text it would store in clear. Seal them first: SanitizeNodes("
                   "embedding=ef) as the last step before the index (after splitting), or PrivateLlamaEmbedding as "
                   "the last transformation of a PrivateIngestionPipeline; or build the PrivateEmbedding with "
                   "seal=False to keep the sanitized text in clear")


def _is_marked(node: BaseNode) -> bool:
    return (node.metadata or {}).get(MARKER) == "sanitized"


def sanitize_nodes(embedding: PrivateEmbedding, nodes: Sequence[BaseNode], *,
                   metadata_text: str = "sanitize") -> list[BaseNode]:
    """Sanitize ``nodes`` in place (text, string metadata, related-node metadata; related
    hashes dropped), mark them, and register their embed texts. Marked nodes are left alone."""
    todo = [n for n in nodes if not _is_marked(n)]
    if todo:
        with protected_path():
            texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in todo]
            todo_text = [i for i, t in enumerate(texts) if t.strip()]
            clean, logs = sanitize_recorded(embedding, [texts[i] for i in todo_text]) if todo_text else ([], [])
            metas = sanitize_metadatas(embedding, [dict(n.metadata or {}) for n in todo], len(todo),
                                       metadata_text=metadata_text)
            for i, value in zip(todo_text, clean, strict=True):
                todo[i].set_content(value)
            records = seal_records(embedding, [todo[i].node_id for i in todo_text], [texts[i] for i in todo_text],
                                   clean, logs)  # a keyed text stage: each node's encrypted restore record
            for i, record in zip(todo_text, records or [], strict=False):
                metas[i] = {**(metas[i] or {}), RESTORE_KEY: record}
            for node, meta in zip(todo, metas, strict=True):
                _mark(node, meta or {})
                _scrub_relationships(embedding, node, metadata_text)
    registry = _registry(embedding)
    for node in nodes:
        registry.add(_digest(node.get_content(metadata_mode=MetadataMode.EMBED)))
    return list(nodes)


def _mark(node: BaseNode, metadata: dict[str, Any]) -> None:
    metadata[MARKER] = "sanitized"
    node.metadata = metadata
    for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        for key in (MARKER, RESTORE_KEY):  # neither is embedded nor shown to a model
            if key not in excluded:
                excluded.append(key)


def _scrub_relationships(embedding: PrivateEmbedding, node: BaseNode, metadata_text: str) -> None:
    """Related nodes carry a copy of their metadata and an unkeyed hash of their raw text:
    the metadata is sanitized, the hash dropped."""
    infos = [info for value in node.relationships.values()
             for info in (value if isinstance(value, list) else [value])]
    if not infos:
        return
    metas = sanitize_metadatas(embedding, [dict(i.metadata or {}) for i in infos], len(infos),
                               metadata_text=metadata_text)
    for info, meta in zip(infos, metas, strict=True):
        info.hash = None
        info.metadata = meta or {}


class SanitizeNodes(TransformComponent):
    """An ingestion transformation that runs the PrivateEmbedding's text stage over nodes.

    Args:
        embedding: the PrivateEmbedding (its text stage and key). Without a text stage the
            text is kept and string metadata values are kept with a PrivacyWarning.
        **kwargs: the field ``metadata_text``: ``"sanitize"`` (default) or ``"keep"`` (string
            metadata values as given, for metadata you know holds no personal data).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    embedding: Any = Field(description="the PrivateEmbedding whose text stage sanitizes the nodes")
    metadata_text: str = Field(default="sanitize", description="'sanitize' or 'keep' string metadata values")
    _pipeline_warned: bool = PrivateAttr(default=False)

    def __init__(self, embedding: Any = None, **kwargs: Any) -> None:
        super().__init__(embedding=_check_embedding(embedding if embedding is not None
                                                    else kwargs.pop("embedding", None)), **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "PrivateVectorsSanitizeNodes"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Sanitize ``nodes`` in place and return them (see the module)."""
        self._pipeline_warned = _warn_if_hashed_raw(nodes, self._pipeline_warned)
        out = sanitize_nodes(self.embedding, nodes, metadata_text=check_metadata_text(self.metadata_text))
        if _seals(self.embedding):  # sealed: embedded here, text kept only inside each node's record
            from .llamaindex_sealed import seal_nodes

            return seal_nodes(self.embedding, out)
        return out

    def __repr__(self) -> str:
        return f"SanitizeNodes(embedding={self.embedding!r}, metadata_text={self.metadata_text!r})"


class PrivateLlamaEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` over a :class:`~private_vectors.PrivateEmbedding`.

    Args:
        embedding: the PrivateEmbedding (documents perturbed, queries per its policy).
        **kwargs: LlamaIndex's ``BaseEmbedding`` fields, e.g. ``embed_batch_size`` (texts per
            call).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    embedding: Any = Field(description="the PrivateEmbedding")
    _warned: bool = PrivateAttr(default=False)
    _pipeline_warned: bool = PrivateAttr(default=False)

    def __init__(self, embedding: Any = None, **kwargs: Any) -> None:
        ef = _check_embedding(embedding if embedding is not None else kwargs.pop("embedding", None))
        kwargs.setdefault("model_name", f"private_vectors:{ef.encoder.model_id}")
        super().__init__(embedding=ef, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "PrivateVectorsEmbedding"

    def __repr__(self) -> str:
        return f"PrivateLlamaEmbedding(embedding={self.embedding!r})"

    # -- documents --------------------------------------------------------------------------------
    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        ef: PrivateEmbedding = self.embedding
        items = list(texts)
        if _seals(ef) and store_on_stack():
            raise SealedStoreError(_UNSEALED_STORE)
        registry = _registry(ef)
        fresh = [i for i, t in enumerate(items) if _digest(t) not in registry]
        if fresh:
            if ef.sanitizer is not None and not self._warned and not on_protected_path() and store_on_stack():
                self._warned = True
                warnings.warn(f"{RAW_TEXT_MESSAGE} {_LLAMA_ADVICE}", PrivacyWarning, stacklevel=3)
            with protected_path():
                clean = ef.sanitize_documents([items[i] for i in fresh])
            for i, value in zip(fresh, clean, strict=True):
                items[i] = value
        with protected_path():
            return ef.pipeline.embed_sanitized(items).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """As a transformation: sanitize the nodes not yet sanitized, then embed them."""
        self._pipeline_warned = _warn_if_hashed_raw(nodes, self._pipeline_warned)
        sanitize_nodes(self.embedding, nodes)
        if _seals(self.embedding):
            from .llamaindex_sealed import seal_nodes

            return seal_nodes(self.embedding, nodes)
        return super().__call__(nodes, **kwargs)

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        self._pipeline_warned = _warn_if_hashed_raw(nodes, self._pipeline_warned)
        sanitize_nodes(self.embedding, nodes)
        if _seals(self.embedding):
            from .llamaindex_sealed import seal_nodes

            return seal_nodes(self.embedding, nodes)
        return await super().acall(nodes, **kwargs)

    # -- queries ----------------------------------------------------------------------------------
    def _get_query_embedding(self, query: str) -> list[float]:
        return self.embedding.embed_query_array([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


# -- protecting documents before LlamaIndex hashes, caches or stores them -----------------------------
_HASH_PURPOSE = "llamaindex-document"


class _KeyedHash:
    """A node whose ``hash`` is a keyed HMAC of the raw node it was sanitized from (see the module).
    The hash field is not serialized: LlamaIndex records it in its docstore's hash table."""

    pv_hash: str

    @property
    def hash(self) -> str:
        return self.pv_hash or super().hash  # type: ignore[misc]


class _KeyedDocument(_KeyedHash, Document):
    pv_hash: str = Field(default="", exclude=True, repr=False)

    @classmethod
    def class_name(cls) -> str:
        return "Document"  # stored and reloaded as a plain Document


class _KeyedTextNode(_KeyedHash, TextNode):
    pv_hash: str = Field(default="", exclude=True, repr=False)

    @classmethod
    def class_name(cls) -> str:
        return "TextNode"


_KEYED: dict[type, type] = {Document: _KeyedDocument, TextNode: _KeyedTextNode}


def _with_hash(node: BaseNode, keyed_hash: str) -> BaseNode:
    """``node`` as its keyed-hash type (Documents and TextNodes; other types keep LlamaIndex's hash
    of the sanitized content)."""
    target = _KEYED.get(type(node))
    if target is None:
        return node
    return target(**{name: getattr(node, name) for name in type(node).model_fields}, pv_hash=keyed_hash)


def protect_documents(embedding: Any, documents: Sequence[BaseNode], *,
                      metadata_text: str = "sanitize") -> list[BaseNode]:
    """Sanitized copies of ``documents`` for LlamaIndex to hash, cache and store.

    Each copy's text and string metadata (reader metadata such as ``file_path`` included) went
    through the PrivateEmbedding's text stage once, and it is marked as sanitized. With a key, a
    Document's or TextNode's ``hash`` is an HMAC of the raw document's hash under a subkey of the
    key, so LlamaIndex's de-duplication (docstore strategies, ``refresh_ref_docs``) sees a changed
    document as changed and an unchanged one as unchanged across runs. The inputs are not
    modified; documents already sanitized are copied as they are.

    Args:
        embedding: the PrivateEmbedding.
        documents: LlamaIndex Documents or nodes.
        metadata_text: ``"sanitize"`` (default) or ``"keep"`` string metadata values as given.

    Raises:
        InvalidTypeError: ``embedding`` is not a PrivateEmbedding, or an item is not a LlamaIndex node.
    """
    ef = _check_embedding(embedding)
    metadata_text = check_metadata_text(metadata_text)
    items = list(documents)
    for item in items:
        if not isinstance(item, BaseNode):
            raise InvalidTypeError("documents", "LlamaIndex Documents or nodes", item)
    hasher = record_hasher(ef, _HASH_PURPOSE)
    raw = [None if hasher is None or _is_marked(d) else hasher(d.hash) for d in items]
    copies = [d.model_copy(deep=True) for d in items]
    sanitize_nodes(ef, copies, metadata_text=metadata_text)
    return [c if h is None else _with_hash(c, h) for c, h in zip(copies, raw, strict=True)]


class PrivateIngestionPipeline(IngestionPipeline):
    """An ``IngestionPipeline`` that protects its inputs before it hashes, caches or stores them.

    Its inputs (``run(documents=..., nodes=...)``, the pipeline's own ``documents`` and its
    readers' output) go through :func:`protect_documents` first, so the cache (``llama_cache``),
    the docstore and its hash table, and the vector store hold sanitized text and keyed hashes
    only; the caller's documents are not modified. Everything else is LlamaIndex's
    ``IngestionPipeline``, argument for argument, plus:

    Args:
        embedding: the PrivateEmbedding (default: the one of the first :class:`PrivateLlamaEmbedding`
            or :class:`SanitizeNodes` among the transformations).
        metadata_text: ``"sanitize"`` (default) or ``"keep"`` string metadata values as given.

    Raises:
        InvalidParameterError: no embedding given and none among the transformations.
    """

    embedding: Any = Field(default=None, exclude=True, description="the PrivateEmbedding protecting the inputs")
    metadata_text: str = Field(default="sanitize", description="'sanitize' or 'keep' string metadata values")

    def __init__(self, *args: Any, embedding: Any = None, metadata_text: str = "sanitize", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if embedding is None:
            embedding = next((t.embedding for t in self.transformations
                              if isinstance(t, (PrivateLlamaEmbedding, SanitizeNodes))), None)
        if embedding is None:
            raise InvalidParameterError(
                "embedding", "a PrivateEmbedding (embedding=...), or a PrivateLlamaEmbedding or SanitizeNodes "
                "among the transformations", None)
        self.embedding = _check_embedding(embedding)
        self.metadata_text = check_metadata_text(metadata_text)
        if _seals(self.embedding):  # its cache seals every entry (keyed by an HMAC of LlamaIndex's hash)
            from .llamaindex_sealed import sealed_cache

            self.cache = sealed_cache(self.cache, self.embedding)

    def _update_docstore(self, nodes: Sequence[BaseNode], *args: Any, **kwargs: Any) -> None:
        """LlamaIndex's docstore update; a sealed pipeline's docstore keeps sealed copies."""
        super()._update_docstore(self._for_docstore(nodes), *args, **kwargs)

    async def _aupdate_docstore(self, nodes: Sequence[BaseNode], *args: Any, **kwargs: Any) -> None:
        await super()._aupdate_docstore(self._for_docstore(nodes), *args, **kwargs)

    def _for_docstore(self, nodes: Sequence[BaseNode]) -> Sequence[BaseNode]:
        if not _seals(self.embedding):
            return nodes
        from .llamaindex_sealed import seal_documents

        return seal_documents(self.embedding, nodes)

    def persist(self, persist_dir: str = "./pipeline_storage", *args: Any, **kwargs: Any) -> None:
        """LlamaIndex's ``persist`` plus ``private_vectors.json`` (the PrivateEmbedding's config:
        a sealed pipeline's wrapped data key, which opens its cache and docstore again)."""
        super().persist(persist_dir, *args, **kwargs)
        record = {"format": _FORMAT, "embedding": self.embedding.get_config()}
        (Path(persist_dir) / CONFIG_FILE).write_text(json.dumps(record), encoding="utf-8")

    def load(self, persist_dir: str = "./pipeline_storage", *args: Any, **kwargs: Any) -> None:
        """LlamaIndex's ``load``; the pipeline's PrivateEmbedding is checked against the recorded
        one and adopts its data key (a sealed pipeline's cache stays sealed)."""
        path = Path(persist_dir) / CONFIG_FILE
        if path.is_file():
            stored = json.loads(path.read_text(encoding="utf-8")).get("embedding")
            where = f"LlamaIndex pipeline folder {str(persist_dir)!r}"
            require_key(stored, where, given=bool(self.embedding.pipeline.keying.keyed))
            stored_embedding(stored, where, self.embedding)
        super().load(persist_dir, *args, **kwargs)
        if _seals(self.embedding):
            from .llamaindex_sealed import sealed_cache

            self.cache = sealed_cache(self.cache, self.embedding)

    def _prepare_inputs(self, documents: Any, nodes: Any) -> list[BaseNode]:
        """The pipeline's inputs, protected (the one place LlamaIndex gathers them before hashing).
        An input the docstore already holds unchanged (same id, same keyed hash) becomes a
        stand-in carrying only its id and hash, which LlamaIndex's de-duplication skips: it is
        not sanitized again."""
        inputs = super()._prepare_inputs(documents, nodes)
        if not inputs:
            return []
        held = self._unchanged(inputs)
        fresh = iter(protect_documents(self.embedding, [n for i, n in enumerate(inputs) if i not in held],
                                       metadata_text=self.metadata_text))
        return [held[i] if i in held else next(fresh) for i in range(len(inputs))]

    def _unchanged(self, inputs: Sequence[BaseNode]) -> dict[int, BaseNode]:
        hasher = record_hasher(self.embedding, _HASH_PURPOSE)
        if self.docstore is None or hasher is None:
            return {}
        held: dict[int, BaseNode] = {}
        for i, node in enumerate(inputs):
            target = _KEYED.get(type(node))
            if target is None or _is_marked(node):
                continue
            keyed = hasher(node.hash)
            ref = node.ref_doc_id or node.id_
            if self.docstore.get_document_hash(ref) == keyed:
                stand_in = target(id_=node.id_, text="", pv_hash=keyed, metadata={MARKER: "sanitized"})
                if ref != node.id_:
                    stand_in.relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=ref)}
                held[i] = stand_in
        return held

    def __repr__(self) -> str:
        return (f"PrivateIngestionPipeline(embedding={self.embedding!r}, "
                f"transformations={[type(t).__name__ for t in self.transformations]})")


if not callable(getattr(IngestionPipeline, "_prepare_inputs", None)):  # pragma: no cover - a future LlamaIndex
    raise ModelNotAvailableError("this llama-index-core has no IngestionPipeline._prepare_inputs, where "
                                 "PrivateIngestionPipeline protects the inputs: pip install 'llama-index-core>=0.12,<0.15'")

UNPROTECTED_MESSAGE = (
    "LlamaIndex hashed, cached or stored these documents before they were sanitized ({where}): the raw "
    "documents, or unkeyed hashes of them that a dictionary of guesses reverses, are kept beside the protected "
    "vectors. Protect the documents first: private_vectors.llamaindex.PrivateIngestionPipeline instead of "
    "IngestionPipeline, or protect_documents(embedding, documents) before from_documents."
)
_STACK_DEPTH = 40


def _hashing_caller() -> str | None:
    """What, up the call stack, hashed or cached the nodes a component is given: a plain
    ``IngestionPipeline`` with a cache or a docstore, or ``from_documents``; else None.

    LlamaIndex passes a transformation only the nodes, so the caller is found on the stack.
    """
    frame: Any = sys._getframe(2)
    for _ in range(_STACK_DEPTH):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if isinstance(owner, IngestionPipeline):
            if isinstance(owner, PrivateIngestionPipeline):
                return None
            parts = [p for p, on in (("cache (pipeline.persist() writes it to llama_cache)", not owner.disable_cache),
                                     ("docstore", owner.docstore is not None)) if on]
            return f"this IngestionPipeline's {' and '.join(parts)}" if parts else None
        if frame.f_code.co_name == "from_documents" and str(frame.f_globals.get("__name__", "")).startswith(
                "llama_index."):
            return "from_documents records their hashes in the docstore"
        frame = frame.f_back
    return None


def _warn_if_hashed_raw(nodes: Sequence[BaseNode], warned: bool) -> bool:
    """Warn (once per component) when unsanitized ``nodes`` arrive from a caller that hashed or
    cached them; returns whether the component has warned."""
    if warned or all(_is_marked(n) for n in nodes if isinstance(n, BaseNode)):
        return warned
    where = _hashing_caller()
    if where is None:
        return False
    warnings.warn(UNPROTECTED_MESSAGE.format(where=where), PrivacyWarning, stacklevel=3)
    return True


# -- a persisted default index ----------------------------------------------------------------------
def persist_index(index: Any, folder: str | Path) -> Path:
    """``index.storage_context.persist(folder)`` plus ``private_vectors.json`` recording the
    index's PrivateEmbedding (its config and key check), which :func:`load_index` checks.

    Raises:
        InvalidTypeError: the index's ``embed_model`` is not a :class:`PrivateLlamaEmbedding`.
    """
    model = getattr(index, "_embed_model", None)
    if not isinstance(model, PrivateLlamaEmbedding):
        raise InvalidTypeError("index", "an index whose embed_model is a PrivateLlamaEmbedding", model)
    path = Path(folder)
    index.storage_context.persist(persist_dir=str(path))
    ef: PrivateEmbedding = model.embedding
    record = {"format": _FORMAT, "embedding": ef.get_config(), "query_index": ef.pipeline.query_index_state()}
    (path / CONFIG_FILE).write_text(json.dumps(record), encoding="utf-8")
    return path


def load_index(folder: str | Path, *, embedding: Any = None, key: Any = None, index_id: str | None = None) -> Any:
    """Load an index written by :func:`persist_index`, with its PrivateEmbedding as ``embed_model``.

    Args:
        folder: the folder.
        embedding: a PrivateEmbedding to check against the recorded one (default: the recorded
            one is rebuilt, its key from ``key`` or env ``PRIVATE_VECTORS_KEY``; both given and
            different: an error).
        key: the key of a keyed index when ``embedding`` is None.
        index_id: as ``load_index_from_storage``.

    Raises:
        ArtefactError: no readable ``private_vectors.json``.
        ConfigMismatchError: another configuration or key than the index was written with.
    """
    from llama_index.core import StorageContext, load_index_from_storage

    path = Path(folder)
    try:
        record = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"{path}: no readable {CONFIG_FILE} ({type(exc).__name__}); write the index with "
                            "persist_index") from None
    if not isinstance(record, dict) or record.get("format") != _FORMAT:
        raise ArtefactError(f"{path / CONFIG_FILE}: not written by persist_index")
    where = f"LlamaIndex folder {str(path)!r}"
    if embedding is not None:
        _check_embedding(embedding)
    keyed = embedding is not None and bool(embedding.pipeline.keying.keyed)
    require_key(record["embedding"], where, given=key is not None or keyed)
    embedding = stored_embedding(record["embedding"], where, embedding, key)
    embedding.pipeline.load_query_index_state(record.get("query_index"))
    storage = StorageContext.from_defaults(persist_dir=str(path))
    return load_index_from_storage(storage, index_id=index_id, embed_model=PrivateLlamaEmbedding(embedding=embedding))


def index_from_collection(collection: Any, embedding: Any = None) -> Any:
    """A ``VectorStoreIndex`` over a Chroma collection written by a PrivateEmbedding
    (``llama-index-vector-stores-chroma``), its ``embed_model`` the collection's PrivateEmbedding.

    Args:
        collection: a collection from ``private_vectors.chroma.open_collection`` or
            ``create_collection`` (its configuration records the PrivateEmbedding).
        embedding: the PrivateEmbedding to use (default: the one the collection was opened with).

    Raises:
        InvalidTypeError: no PrivateEmbedding given or attached to the collection.
    """
    from llama_index.core import VectorStoreIndex

    ef = embedding if embedding is not None else getattr(collection, "_embedding_function", None)
    return VectorStoreIndex.from_vector_store(chroma_vector_store(collection),
                                              embed_model=PrivateLlamaEmbedding(embedding=_check_embedding(ef)))


def chroma_vector_store(collection: Any) -> Any:
    """LlamaIndex's ``ChromaVectorStore`` over ``collection`` that zeroes the heap bytes Chroma
    leaves in its index files after each write (``private_vectors.chroma.scrub_index_files``).

    Use it where you would write ``ChromaVectorStore(chroma_collection=collection)``; queries
    and everything else are LlamaIndex's own.
    """
    return _scrubbing_store_class()(chroma_collection=collection)


@functools.cache
def _scrubbing_store_class() -> type:
    """The ``ChromaVectorStore`` subclass, made once (llama-index-vector-stores-chroma is optional)."""
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from .chroma import protected_write

    class ScrubbingChromaVectorStore(ChromaVectorStore):
        """``ChromaVectorStore`` whose writes run under :func:`~private_vectors.chroma.protected_write`."""

        @classmethod
        def class_name(cls) -> str:
            return "ChromaVectorStore"

        def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
            with protected_write(self._collection):
                return super().add(list(nodes), **add_kwargs)

    return ScrubbingChromaVectorStore
