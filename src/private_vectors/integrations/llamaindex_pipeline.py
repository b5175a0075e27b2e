"""Protecting documents before LlamaIndex hashes, caches or stores them.

:func:`protect_documents` (sanitized copies whose ``hash`` is keyed) and
:class:`PrivateIngestionPipeline` (an ``IngestionPipeline`` that protects its inputs first); see
:mod:`private_vectors.integrations.llamaindex`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from llama_index.core.bridge.pydantic import Field
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import BaseNode, Document, NodeRelationship, RelatedNodeInfo, TextNode

from ..errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from ._hashing import record_hasher
from ._llamaindex_nodes import (
    _FORMAT,
    CONFIG_FILE,
    MARKER,
    _check_embedding,
    _is_marked,
    _seals,
    sanitize_nodes,
)
from ._stored import check_metadata_text, stored_embedding
from .llamaindex_components import PrivateLlamaEmbedding, SanitizeNodes

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
    _protects_inputs: ClassVar[bool] = True  # its components do not warn of raw inputs (_hashing_caller)

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
