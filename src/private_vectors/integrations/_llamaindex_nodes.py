"""The LlamaIndex integration's shared core: sanitizing nodes once, and recognising the ones it sanitized.

:func:`sanitize_nodes` runs each node's text and string metadata through the PrivateEmbedding's
text stage, marks the node (:data:`MARKER`) and drops the unkeyed hashes LlamaIndex keeps of
related nodes (a SHA-256 of the raw text, which a dictionary reverses). The digests of the embed
texts it produced are kept in memory, under a per-process salt, so that
:class:`~private_vectors.integrations.llamaindex_components.PrivateLlamaEmbedding` embeds them as
they are and never sanitizes a text twice.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Any

from ..embedding import PrivateEmbedding
from ..errors import InvalidTypeError, ModelNotAvailableError
from ..guard import protected_path
from ..restore import RESTORE_KEY, sanitize_recorded, seal_records
from ..sealed.stores import document_refs
from ._stored import sanitize_metadatas

try:
    from llama_index.core.schema import BaseNode, MetadataMode
except ImportError as exc:  # pragma: no cover - optional dependency
    raise ModelNotAvailableError("the LlamaIndex components need llama-index-core: "
                                 "pip install 'private-vectors[llamaindex]'") from exc

CONFIG_FILE = "private_vectors.json"
"""The file :func:`persist_index` writes beside LlamaIndex's own: the PrivateEmbedding's config."""
_FORMAT = "private_vectors.llamaindex/1"

MARKER = "private_vectors"
"""Metadata key marking a sanitized node (excluded from the embedded and the LLM text)."""

_SALT = secrets.token_bytes(16)  # in-memory digests of the texts SanitizeNodes produced


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=_SALT, digest_size=16).digest()


def _registry(embedding: PrivateEmbedding) -> set[bytes]:
    """The digests of embed texts :class:`SanitizeNodes` produced for ``embedding`` (this process)."""
    return embedding.__dict__.setdefault("_llamaindex_sanitized", set())


def pending_refs(embedding: PrivateEmbedding) -> dict[str, list[str]]:
    """Each node's keyed query-index entries (HMACs) from its sanitization until
    :func:`~private_vectors.integrations.llamaindex_sealed.seal_nodes` seals them into its record."""
    return embedding.__dict__.setdefault("_llamaindex_refs", {})


def _check_embedding(embedding: Any) -> PrivateEmbedding:
    if not isinstance(embedding, PrivateEmbedding):
        raise InvalidTypeError("embedding", "a PrivateEmbedding", embedding)
    return embedding


def _seals(embedding: PrivateEmbedding) -> bool:
    """Whether ``embedding`` seals (a key, ``seal`` not False): nodes are stored as markers and
    records (:mod:`~private_vectors.integrations.llamaindex_sealed`)."""
    return bool(embedding.pipeline.seal.sealed)


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
            raw = [texts[i] for i in todo_text]
            clean, logs = sanitize_recorded(embedding, raw) if todo_text else ([], [])
            metas = sanitize_metadatas(embedding, [dict(n.metadata or {}) for n in todo], len(todo),
                                       metadata_text=metadata_text)
            for i, value in zip(todo_text, clean, strict=True):
                todo[i].set_content(value)
            if _seals(embedding):  # the record keeps them, so a delete can drop them
                refs = document_refs(embedding, raw, logs) or []
                pending_refs(embedding).update((todo[i].node_id, r) for i, r in zip(todo_text, refs, strict=False))
            records = seal_records(embedding, [todo[i].node_id for i in todo_text], raw,
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
