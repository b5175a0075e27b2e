"""The two LlamaIndex components that put the text stage in front of the store.

:class:`SanitizeNodes` (an ingestion ``TransformComponent``) and :class:`PrivateLlamaEmbedding`
(a ``BaseEmbedding``), and the warning either gives when the nodes it is handed were hashed,
cached or stored raw before it saw them (see :mod:`private_vectors.integrations.llamaindex`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import BaseNode, TransformComponent

from ..embedding import PrivateEmbedding
from ..errors import PrivacyWarning, SealedStoreError
from ..guard import RAW_TEXT_MESSAGE, on_protected_path, protected_path, store_on_stack
from ._llamaindex_nodes import (
    _check_embedding,
    _digest,
    _is_marked,
    _registry,
    _seals,
    sanitize_nodes,
)
from ._stored import check_metadata_text

_LLAMA_ADVICE = ("With LlamaIndex, protect the documents before it hashes or stores them: "
                 "PrivateIngestionPipeline, or protect_documents(embedding, documents) before from_documents.")

_UNSEALED_STORE = ("key: this PrivateEmbedding seals (it has a key), and LlamaIndex is embedding nodes it has "
                   "not sealed, whose sanitized text it would store in clear. Seal them first: SanitizeNodes("
                   "embedding=ef) as the last step before the index (after splitting), or PrivateLlamaEmbedding as "
                   "the last transformation of a PrivateIngestionPipeline; or build the PrivateEmbedding with "
                   "seal=False to keep the sanitized text in clear")


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
            if getattr(type(owner), "_protects_inputs", False):  # a PrivateIngestionPipeline
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
